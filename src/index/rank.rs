//! Ranking chunks for a question: BM25 over every chunk of the index (no cut before ranking),
//! then a ranking layer — a definition whose name is a word of the question or the exact
//! identifier asked for rises, so does a file named after it; tests, docs, examples, benchmarks
//! and vendored code sink unless the question asks for them; a file's second and third chunks
//! count less than another file's first.

use std::collections::{BinaryHeap, HashMap};

use super::facts::{file_stem, is_module_file, joined_name, path_terms};
use super::facts::{FileFacts, KeySet, PathClass};
use super::paths::version_key;
use super::text::{ident_terms, index_stem};
use super::words::{aliases, has_word, is_identifier, split_words, word_spans, PHRASES, STOPWORDS};
use super::Index;
use crate::tuning::Tuning;

/// Characters of a question read at most: the words after them are left out (and
/// [`Query::left_out`] says how many), so that reading a question costs time in proportion to
/// its length, whatever it holds.
pub const MAX_QUERY_CHARS: usize = 4_000;
/// Distinct terms of a question kept at most: the words after the one that reached this many are
/// left out. A word adds at most a few dozen terms and a phrase a few, so every kept term fits
/// the ranking's one-byte slots (254).
pub const MAX_QUERY_TERMS: usize = 200;

/// One term of a question.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryTerm {
    /// As indexed (lowercased; stemmed unless a whole identifier).
    pub term: String,
    /// How much it counts.
    pub weight: f64,
}

/// A question, read for the index.
#[allow(clippy::struct_excessive_bools)] // what the question asks about, one flag each
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Query {
    /// Its terms.
    pub terms: Vec<QueryTerm>,
    /// Identifiers it names (lowercased): a definition of that name is what it asks for.
    pub names: Vec<String>,
    /// Identifier compounds of adjacent words it holds, joined and lowercased (`jsonobject`
    /// for "JSON object"): a definition or a file of that name is likely what it asks for.
    pub compounds: Vec<String>,
    /// Qualified names it gives (`Codec.getAdapter`, `Foo::bar`, `Klass#meth`), as (outer, inner)
    /// lowercased: a definition `inner` inside `outer` is what it asks for.
    pub qualified: Vec<(String, String)>,
    /// It asks about tests.
    pub wants_tests: bool,
    /// It asks about docs, the changelog or the README.
    pub wants_docs: bool,
    /// It asks about examples.
    pub wants_examples: bool,
    /// It asks about benchmarks.
    pub wants_bench: bool,
    /// It asks for a type ("which class").
    pub wants_type: bool,
    /// It asks for a function ("which function").
    pub wants_function: bool,
    /// It asks what the code does ("where does ...", "how do ..."): behaviour, which lives in
    /// functions more often than in type definitions.
    pub asks_how: bool,
    /// Words of the question that were not read: past [`MAX_QUERY_CHARS`] or after the terms
    /// reached [`MAX_QUERY_TERMS`].
    pub left_out: usize,
    /// The first word left out, if any (where a shorter question would have to end).
    pub first_left_out: Option<String>,
    /// The last word read, when words were left out.
    pub last_read: Option<String>,
    /// The knobs it is ranked with.
    pub tuning: Tuning,
}

/// The first [`MAX_QUERY_CHARS`] characters of `body` (never cutting a word) and the rest.
fn cut_query(body: &str) -> (&str, &str) {
    let Some((at, _)) = body.char_indices().nth(MAX_QUERY_CHARS) else {
        return (body, "");
    };
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let end = body[..at].trim_end_matches(word).len();
    let end = if end == 0 { at } else { end };
    body.split_at(end)
}

/// Read a question with the default knobs (see [`parse_with`]).
pub fn parse(question: &str) -> Query {
    parse_with(question, &Tuning::default())
}

/// Read a question: quoted and code-shaped words are identifiers (their whole and their
/// parts), other words are stemmed, words that only frame the question are dropped (code words
/// such as `Context` or `Repo` are kept), and adjacent words are also read as the one name code
/// would spell them with (`jsonobject`, `json_object` for "JSON object"). The query keeps
/// `tuning`, the knobs it is ranked with.
pub fn parse_with(question: &str, tuning: &Tuning) -> Query {
    let body = question
        .split("\n\nStructured context:")
        .next()
        .unwrap_or(question);
    let (body, rest) = cut_query(body);
    let mut q = what_it_asks(body);
    q.tuning = tuning.clone();
    q.qualified = qualified_names(body);
    let quoted = quoted_words(body);
    let spans = word_spans(body);
    let mut terms = TermSet::default();
    let read = read_words(&mut q, &mut terms, body, &spans, &quoted);
    let words: Vec<&str> = spans.iter().map(|&(_, w)| w).collect();
    let left = word_spans(rest);
    q.left_out = words.len() - read + left.len();
    if q.left_out > 0 {
        q.first_left_out = words
            .get(read)
            .or(left.first().map(|(_, w)| w))
            .map(|w| (*w).to_string());
        q.last_read = read.checked_sub(1).map(|i| words[i].to_string());
    }
    let lowered: Vec<String> = words[..read].iter().map(|w| w.to_lowercase()).collect();
    for pair in lowered.windows(2) {
        for (a, b, joined) in PHRASES {
            if pair[0] == *a && pair[1].starts_with(b) {
                terms.add(&mut q, index_stem(joined), 1.0);
            }
        }
    }
    add_compounds(&mut q, &mut terms, body, &spans[..read]);
    q
}

/// The terms of a query being read, by their text, so that adding one costs the same however
/// many there are.
#[derive(Default)]
struct TermSet {
    at: super::text::FxMap<String, usize>,
}

impl TermSet {
    /// Add `term` to `q` at `weight`, or raise its weight to `weight` if it is there.
    fn add(&mut self, q: &mut Query, term: String, weight: f64) {
        match self.at.get(&term) {
            Some(&i) => q.terms[i].weight = q.terms[i].weight.max(weight),
            None => {
                self.at.insert(term.clone(), q.terms.len());
                q.terms.push(QueryTerm { term, weight });
            }
        }
    }
}

/// What a question asks about, by its words: tests, docs, examples, a type, a function, what
/// the code does.
fn what_it_asks(body: &str) -> Query {
    let lower = body.to_lowercase();
    let has = |w: &str| has_word(&lower, w);
    Query {
        wants_tests: ["test", "tests", "testing", "spec", "specs", "fixture"]
            .iter()
            .any(|w| has(w)),
        wants_docs: ["doc", "docs", "documentation", "changelog", "readme"]
            .iter()
            .any(|w| has(w)),
        wants_examples: ["example", "examples", "sample", "samples", "demo"]
            .iter()
            .any(|w| has(w)),
        wants_bench: ["bench", "benchmark", "benchmarks"].iter().any(|w| has(w)),
        wants_type: ["class", "struct", "type", "enum", "trait", "interface"]
            .iter()
            .any(|w| has(w)),
        wants_function: ["function", "method", "func", "fn"].iter().any(|w| has(w)),
        asks_how: {
            let mut words = lower.split_whitespace();
            matches!(
                (words.next(), words.next()),
                (Some("where" | "how" | "when"), Some("does" | "do"))
            )
        },
        ..Query::default()
    }
}

/// The words written between backticks or double quotes, without spaces.
fn quoted_words(body: &str) -> Vec<String> {
    let mut quoted: Vec<String> = Vec::new();
    for (i, part) in body.split(['`', '"']).enumerate() {
        if i % 2 == 1 && !part.trim().is_empty() && !part.contains(char::is_whitespace) {
            quoted.push(part.to_string());
        }
    }
    quoted
}

/// `Outer.inner`, `Outer::inner`, `Outer#inner` as written (quoted or not), lowercased.
fn qualified_names(body: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for token in body
        .split(|c: char| c.is_whitespace() || matches!(c, '`' | '"' | '\'' | '(' | ')' | ',' | '?'))
    {
        let token = token.trim_end_matches(['.', ':', ';']);
        let parts: Vec<&str> = token
            .split(['.', '#'])
            .flat_map(|p| p.split("::"))
            .filter(|p| !p.is_empty())
            .collect();
        if parts.len() >= 2
            && parts
                .iter()
                .all(|p| p.chars().all(|c| c.is_alphanumeric() || c == '_'))
            && parts
                .iter()
                .any(|p| p.chars().next().is_some_and(char::is_uppercase) || is_identifier(p))
        {
            let outer = parts[parts.len() - 2].to_lowercase();
            let inner = parts[parts.len() - 1].to_lowercase();
            if !out.contains(&(outer.clone(), inner.clone())) {
                out.push((outer, inner));
            }
        }
    }
    out
}

/// Whether the word at `spans[i]` is read as a name: not first in its sentence, capitalised,
/// and not an acronym or a constant's value in capitals (`POST`, `JSON`, `HTTP`: words of the
/// question rather than the name of a definition; `def post` does not answer "turn a POST into
/// a GET").
fn capitalised_name(body: &str, spans: &[(usize, &str)], i: usize) -> bool {
    let w = spans[i].1;
    let acronym = w.len() >= 2
        && w.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        && w.chars().any(|c| c.is_ascii_uppercase());
    // The first word of a sentence is capitalised whatever it is ("... redirects? Cite the
    // code.").
    let starts_sentence = body[..spans[i].0]
        .trim_end_matches(|c: char| c.is_whitespace() || matches!(c, '(' | '"' | '\'' | '`'))
        .chars()
        .last()
        .is_none_or(|c| matches!(c, '.' | '?' | '!'));
    !starts_sentence && !acronym && w.chars().next().is_some_and(char::is_uppercase)
}

/// Read the words of the question into `q`'s terms and names, until the terms reach
/// [`MAX_QUERY_TERMS`]; how many words were read.
fn read_words(
    q: &mut Query,
    terms: &mut TermSet,
    body: &str,
    spans: &[(usize, &str)],
    quoted: &[String],
) -> usize {
    for (i, &(_, w)) in spans.iter().enumerate() {
        if q.terms.len() >= MAX_QUERY_TERMS {
            return i;
        }
        let named = quoted.iter().any(|qd| qd.contains(w));
        let lw = w.to_lowercase();
        if !named && STOPWORDS.contains(&lw.as_str()) {
            continue;
        }
        if lw.len() < 2 || lw.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if named || is_identifier(w) || capitalised_name(body, spans, i) {
            let mut parts = Vec::new();
            ident_terms(w, &mut parts);
            let whole = w.trim_matches('_').to_lowercase();
            for p in parts {
                let weight = if p == whole || parts_len(w) == 1 {
                    1.5
                } else {
                    0.6
                };
                terms.add(q, p, weight);
            }
            if !q.names.contains(&whole) {
                q.names.push(whole);
            }
        } else {
            terms.add(q, index_stem(&lw), 1.0);
            for o in aliases(&[lw.as_str()]) {
                terms.add(q, index_stem(o), 0.5);
            }
        }
    }
    spans.len()
}

/// Words at most in one identifier compound read from adjacent words of a question.
const MAX_COMPOUND_WORDS: usize = 3;

/// Adjacent words of the question (two or three, nothing but spaces or a hyphen between them,
/// none a framing word or a name already in parts) also read as the one identifier code would
/// spell them with: `jsonobject` (`JsonObject`, `jsonobject`) and `json_object` as terms at
/// [`Tuning::rank_compound`], and the joined spelling as a compound a definition or a file may
/// be named.
fn add_compounds(q: &mut Query, terms: &mut TermSet, body: &str, spans: &[(usize, &str)]) {
    let weight = q.tuning.rank_compound;
    if weight <= 0.0 || q.terms.len() >= MAX_QUERY_TERMS {
        return;
    }
    let usable = |w: &str| {
        let lw = w.to_lowercase();
        lw.len() >= 2
            && w.chars().all(char::is_alphanumeric)
            && !lw.bytes().all(|b| b.is_ascii_digit())
            && !STOPWORDS.contains(&lw.as_str())
            && !is_identifier(w)
    };
    let joined_to_next = |i: usize| {
        let (at, w) = spans[i];
        let gap = &body[at + w.len()..spans[i + 1].0];
        !gap.is_empty() && gap.chars().all(|c| c == ' ' || c == '-')
    };
    for i in 0..spans.len() {
        let mut run = vec![spans[i].1];
        if !usable(run[0]) {
            continue;
        }
        for (j, &(_, next)) in spans
            .iter()
            .enumerate()
            .take(i + MAX_COMPOUND_WORDS)
            .skip(i + 1)
        {
            if !joined_to_next(j - 1) || !usable(next) {
                break;
            }
            run.push(next);
            let lower: Vec<String> = run.iter().map(|w| w.to_lowercase()).collect();
            let joined = lower.concat();
            if q.compounds.contains(&joined) || q.names.contains(&joined) {
                continue;
            }
            if q.terms.len() + 2 > MAX_QUERY_TERMS {
                return;
            }
            terms.add(q, lower.join("_"), weight);
            terms.add(q, joined.clone(), weight);
            q.compounds.push(joined);
        }
    }
}

fn parts_len(w: &str) -> usize {
    split_words(w).len()
}

/// One ranked chunk.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// Index of the file in [`Index::files`].
    pub file: usize,
    /// Index of the chunk in the file.
    pub chunk: usize,
    /// Its score (higher is better; comparable within one search only).
    pub score: f64,
    /// The query terms it matched (by position in [`Query::terms`]).
    pub matched: Vec<usize>,
}

/// How a file's path weighs: tests, docs, examples, benchmarks, vendored and generated code
/// sink unless the question asks for them.
#[cfg(test)]
pub fn path_prior(path: &str, q: &Query) -> f64 {
    class_prior(PathClass::of(path), q)
}

/// [`path_prior`] of a path of class `c`.
pub(crate) fn class_prior(c: PathClass, q: &Query) -> f64 {
    if c.has(PathClass::NOTES) {
        return if q.wants_docs { 1.0 } else { 0.15 };
    }
    let mut prior = 1.0f64;
    if c.has(PathClass::TEST) && !q.wants_tests {
        prior *= q.tuning.rank_test_weight;
    }
    if c.has(PathClass::DOC) && !q.wants_docs {
        prior *= 0.35;
    }
    if c.has(PathClass::EXAMPLE) && !q.wants_examples {
        prior *= 0.5;
    }
    if c.has(PathClass::BENCH) && !q.wants_bench {
        prior *= 0.5;
    }
    if c.has(PathClass::COPY) {
        prior *= q.tuning.rank_copy_weight;
    }
    // Declarations only (`typings/index.d.ts`, `mod.pyi`): their doc comments repeat the
    // question's words, but what the code does ("where does ... read ...") is in the
    // implementation they declare.
    if c.has(PathClass::DECLARATIONS) && q.asks_how {
        prior *= 0.5;
    }
    if c.has(PathClass::DATA) {
        prior *= 0.6;
    } else if c.has(PathClass::NOT_CODE) {
        // Man pages, prebuilt output, data: text, but not the code.
        prior *= 0.5;
    }
    prior
}

/// The `limit` best chunks for `q`, only in files under `under` when given (a relative
/// directory, `/`-separated).
#[cfg(test)]
pub fn search(index: &Index, q: &Query, limit: usize, under: Option<&str>) -> Vec<Hit> {
    search_until(index, q, limit, under, None).unwrap_or_default()
}

/// Chunks looked at between two looks at the clock.
pub(crate) const CLOCK_EVERY: usize = 4096;

/// A chunk scored, before the best are picked: its file, its chunk, its score, and where the
/// query terms it covers lie in the search's list of them.
#[derive(Debug, Clone, Copy)]
struct Scored {
    file: u32,
    chunk: u32,
    score: f64,
    covered: (u32, u32),
}

/// [`search`], given up (None) once `deadline` passes. Only the chunks holding a word of the
/// question are touched (read from the index's postings), and each costs a few multiplications
/// and hash probes: what a file's path and a chunk's name are (their class, the hashes of their
/// words) was worked out when the file was read ([`FileFacts`]), and a name or path bonus is
/// worked out from strings only for a chunk or file whose hashes meet the question's.
pub fn search_until(
    index: &Index,
    q: &Query,
    limit: usize,
    under: Option<&str>,
    deadline: Option<std::time::Instant>,
) -> Option<Vec<Hit>> {
    let late = || deadline.is_some_and(|d| std::time::Instant::now() >= d);
    let ids: Vec<Option<u32>> = q.terms.iter().map(|t| index.term_id(&t.term)).collect();
    if ids.iter().all(Option::is_none) && q.names.is_empty() {
        return Some(Vec::new());
    }
    // Every refresh builds the postings; an index put together otherwise gets them now (an
    // index too big to number in 32 bits would have none, which the bound on its bytes rules
    // out).
    let built;
    let postings = match index.postings() {
        Some(p) => p,
        None => match super::Postings::build(&index.files, index.vocab.len()) {
            Some(p) => {
                built = p;
                &built
            }
            None => return Some(Vec::new()),
        },
    };
    let mut look = Lookup::of(q);
    let in_scope = |path: &str| is_under(path, under);
    let found = gather(index, postings, &ids, &in_scope, &late)?;
    let n = postings.n_chunks().max(1) as f64;
    let avg_len = (postings.total_len() as f64 / n).max(1.0);
    // A term no chunk holds still counts as rare when it names a file.
    let idf: Vec<f64> = found
        .df
        .iter()
        .map(|&d| match d {
            0 => (1.0 + n).ln(),
            d => (1.0 + (n - d as f64 + 0.5) / (d as f64 + 0.5)).ln(),
        })
        .collect();
    let idf_of = |qi: usize| idf[qi];
    look.weigh_names(q, &file_idf(&found, q.terms.len(), index.files.len()));
    let look = look;
    let mut s = Scoring {
        index,
        q,
        keys: KeySet::of(
            q.terms
                .iter()
                .map(|t| t.term.as_str())
                .chain(q.names.iter().map(String::as_str))
                .chain(look.joined.keys().map(String::as_str)),
        ),
        look: &look,
        idf_of: &idf_of,
        total_weight: q
            .terms
            .iter()
            .enumerate()
            .map(|(i, t)| t.weight * idf_of(i))
            .sum::<f64>()
            .max(1e-9),
        kinds: std::array::from_fn(|k| kind_weight(super::chunk::KINDS[k], q)),
        covered: Vec::new(),
        kept: Vec::new(),
        scored: Vec::with_capacity(found.chunks.len()),
    };
    let mut seen_files: Vec<bool> = vec![false; index.files.len()];
    let mut path = (0.0, Vec::new());
    let mut last_file = usize::MAX;
    for (n, &(fi, ci, at)) in found.chunks.iter().enumerate() {
        if n % CLOCK_EVERY == CLOCK_EVERY - 1 && late() {
            return None;
        }
        let (fi, ci) = (fi as usize, ci as usize);
        if fi != last_file {
            // A file's chunks come one after another: its path is weighed once.
            last_file = fi;
            seen_files[fi] = true;
            path = s.path_bonus(fi);
        }
        let to = found
            .chunks
            .get(n + 1)
            .map_or(found.pairs.len(), |c| c.2 as usize);
        let matched = &found.pairs[at as usize..to];
        s.chunk(fi, ci, matched, avg_len, &path);
    }
    // Files named after the question whose chunks hold none of its words: the files whose
    // path holds a term of the question (the others score nothing by their path).
    for (n, fi) in files_named(index, q).into_iter().enumerate() {
        if n % CLOCK_EVERY == CLOCK_EVERY - 1 && late() {
            return None;
        }
        if seen_files[fi] || !in_scope(&index.files[fi].path) {
            continue;
        }
        let (ps, phit) = s.path_bonus(fi);
        if ps <= 0.0 {
            continue;
        }
        let f = &index.files[fi];
        let Some(ci) = f
            .chunks
            .chunks
            .iter()
            .position(|c| c.is_definition())
            .or((!f.chunks.chunks.is_empty()).then_some(0))
        else {
            continue;
        };
        s.covered.clear();
        s.covered.extend_from_slice(&phit);
        s.finish(fi, ci, ps);
    }
    let Scoring { scored, kept, .. } = s;
    Some(best_hits(index, q, scored, &kept, limit))
}

/// The best `limit` of the chunks `scored` (their covered terms in `kept`): older versions
/// weighed down, each file's best raised by its next ones, a file's further chunks decayed.
fn best_hits(
    index: &Index,
    q: &Query,
    mut scored: Vec<Scored>,
    kept: &[usize],
    limit: usize,
) -> Vec<Hit> {
    weigh_older_versions(index, &mut scored, q.tuning.rank_copy_weight);
    accumulate(&mut scored, q.tuning.rank_file_share);
    let best = diversify(&scored, limit, q.tuning.rank_same_file_decay);
    best.into_iter()
        .map(|(i, score)| {
            let h = &scored[i];
            let (a, b) = h.covered;
            Hit {
                file: h.file as usize,
                chunk: h.chunk as usize,
                score,
                matched: kept[a as usize..b as usize].to_vec(),
            }
        })
        .collect()
}

/// What a search scores chunks with, and the chunks scored so far.
struct Scoring<'a, 'q> {
    index: &'a Index,
    q: &'q Query,
    /// The hashes of the question's terms, names and joined names.
    keys: KeySet,
    look: &'a Lookup<'q>,
    idf_of: &'a dyn Fn(usize) -> f64,
    /// The question's terms' weights times their idf, summed.
    total_weight: f64,
    /// The weight of each chunk kind ([`kind_weight`]).
    kinds: [f64; super::chunk::KINDS.len()],
    /// The query terms the chunk being scored covers.
    covered: Vec<usize>,
    /// The query terms each scored chunk covers, chunk after chunk ([`Scored::covered`]).
    kept: Vec<usize>,
    /// The chunks scored.
    scored: Vec<Scored>,
}

impl Scoring<'_, '_> {
    /// The facts of file `fi` (worked out now for an index put together without them).
    fn facts(&self, fi: usize) -> std::borrow::Cow<'_, FileFacts> {
        let f = &self.index.files[fi];
        match &f.facts {
            Some(facts) => std::borrow::Cow::Borrowed(facts),
            None => std::borrow::Cow::Owned(FileFacts::of(&f.path, &f.chunks)),
        }
    }

    /// [`path_bonus`] of file `fi`, worked out only when its path's words meet the question's.
    fn path_bonus(&self, fi: usize) -> (f64, Vec<usize>) {
        if self.keys.meets(&self.facts(fi).path_keys) {
            path_bonus(&self.index.files[fi].path, self.q, self.look, self.idf_of)
        } else {
            (0.0, Vec::new())
        }
    }

    /// Score chunk `ci` of file `fi`, which holds the query terms `matched` (query position,
    /// count; in the order of their ids) and whose file's path bonus is `path`.
    fn chunk(
        &mut self,
        fi: usize,
        ci: usize,
        matched: &[(u32, u32)],
        avg_len: f64,
        path: &(f64, Vec<usize>),
    ) {
        let (q, idf_of) = (self.q, self.idf_of);
        let f = &self.index.files[fi];
        let c = &f.chunks.chunks[ci];
        let len = f64::from(c.len.max(1));
        let (k1, b) = (q.tuning.rank_bm25_k1, q.tuning.rank_bm25_b);
        let mut score = 0.0;
        self.covered.clear();
        for &(qi, tf) in matched {
            let (qi, tf) = (qi as usize, f64::from(tf));
            score += q.terms[qi].weight * idf_of(qi) * tf * (k1 + 1.0)
                / (tf + k1 * (1.0 - b + b * len / avg_len));
            self.covered.push(qi);
        }
        let named = match &f.facts {
            Some(facts) => self.keys.meets(facts.name_keys(ci)),
            None => true,
        };
        if named {
            score += name_bonus(c, q, self.look, idf_of, &mut self.covered);
        }
        score += path.0;
        self.covered.extend_from_slice(&path.1);
        self.covered.sort_unstable();
        self.covered.dedup();
        self.finish(fi, ci, score);
    }

    /// Weigh the chunk's `score` by how much of the question it covers ([`Scoring::covered`]),
    /// its kind, its path and whether it is in a test module, and keep it.
    fn finish(&mut self, fi: usize, ci: usize, score: f64) {
        let (q, idf_of) = (self.q, self.idf_of);
        let f = &self.index.files[fi];
        let c = &f.chunks.chunks[ci];
        let got: f64 = self
            .covered
            .iter()
            .map(|&qi| q.terms[qi].weight * idf_of(qi))
            .sum();
        // Chunks that hold more of the question count more than ones that repeat one word.
        let coverage = 0.4 + 0.6 * (got / self.total_weight).min(1.0);
        let kind = self.kinds[usize::from(c.kind).min(self.kinds.len() - 1)];
        let (prior, test_module) = {
            let facts = self.facts(fi);
            let in_tests = !q.wants_tests && facts.in_test_module.get(ci) == Some(&true);
            (
                class_prior(facts.class, q),
                if in_tests {
                    q.tuning.rank_test_weight
                } else {
                    1.0
                },
            )
        };
        let score = score * coverage * kind * prior * test_module;
        let at = self.kept.len() as u32;
        self.kept.extend_from_slice(&self.covered);
        self.scored.push(Scored {
            file: fi as u32,
            chunk: ci as u32,
            score,
            covered: (at, self.kept.len() as u32),
        });
    }
}

/// The chunks in scope that hold query terms, in the order of their numbers (so a file's
/// chunks come one after another), with the query terms each holds.
struct Found {
    /// (file, chunk in it, where its (query term, count) pairs start in `pairs`).
    chunks: Vec<(u32, u32, u32)>,
    /// (query term, count), chunk after chunk, each chunk's in the order of the terms' ids.
    pairs: Vec<(u32, u32)>,
    /// Per query term, the chunks of the whole index that hold it.
    df: Vec<u64>,
}

/// The chunks holding the terms of `ids` (the question's terms' ids in the index), merged from
/// the terms' postings; None once `late`. A term listed twice in the query counts at its last
/// position.
fn gather(
    index: &Index,
    postings: &super::Postings,
    ids: &[Option<u32>],
    in_scope: &dyn Fn(&str) -> bool,
    late: &dyn Fn() -> bool,
) -> Option<Found> {
    use std::cmp::Reverse;
    let mut df = vec![0u64; ids.len()];
    // (term id, query position, its postings) of each term the index has.
    let mut lists: Vec<(u32, u32, &[u32], &[u8])> = Vec::new();
    for (qi, id) in ids.iter().enumerate() {
        let Some(id) = id.filter(|id| qi < u8::MAX as usize && !ids[qi + 1..].contains(&Some(*id)))
        else {
            continue;
        };
        let (chunks, counts) = postings.of(id);
        df[qi] = chunks.len() as u64;
        if !chunks.is_empty() {
            lists.push((id, qi as u32, chunks, counts));
        }
    }
    // The lists merged by (chunk, term id): the smallest next posting first.
    let mut heap: BinaryHeap<Reverse<(u32, u32, usize)>> = lists
        .iter()
        .enumerate()
        .map(|(l, &(id, _, chunks, _))| Reverse((chunks[0], id, l)))
        .collect();
    let mut at = vec![0usize; lists.len()];
    let mut found = Found {
        chunks: Vec::new(),
        pairs: Vec::new(),
        df,
    };
    // The file of the chunk at hand (chunk numbers only grow), and whether it is in scope.
    let (mut fi, mut inside) = (usize::MAX, false);
    let mut next_file_at = 0u32;
    let mut n = 0usize;
    while let Some(Reverse((chunk, _, _))) = heap.peek().copied() {
        n += 1;
        if n.is_multiple_of(CLOCK_EVERY) && late() {
            return None;
        }
        if fi == usize::MAX || chunk >= next_file_at {
            fi = if fi == usize::MAX { 0 } else { fi };
            while postings.first_chunk(fi + 1) <= chunk {
                fi += 1;
            }
            next_file_at = postings.first_chunk(fi + 1);
            inside = in_scope(&index.files[fi].path);
        }
        if inside {
            let first = postings.first_chunk(fi);
            found
                .chunks
                .push((fi as u32, chunk - first, found.pairs.len() as u32));
        }
        while let Some(mut top) = heap.peek_mut() {
            let Reverse((c, _, l)) = *top;
            if c != chunk {
                break;
            }
            let (_, qi, chunks, counts) = lists[l];
            if inside {
                found.pairs.push((qi, u32::from(counts[at[l]])));
            }
            at[l] += 1;
            match chunks.get(at[l]) {
                Some(&next) => *top = Reverse((next, lists[l].0, l)),
                None => {
                    std::collections::binary_heap::PeekMut::pop(top);
                }
            }
        }
    }
    Some(found)
}

/// Per query term, `ln(files / files holding it)` over the chunks found (infinite for a term
/// no file holds): how rare it is among files, not chunks, so that a word in every file of the
/// tree ("bash" in a bash project) is told from a word in one long file's every chunk.
fn file_idf(found: &Found, n_terms: usize, n_files: usize) -> Vec<f64> {
    let mut files = vec![0u64; n_terms];
    let mut last = vec![u32::MAX; n_terms];
    for (i, &(fi, _, at)) in found.chunks.iter().enumerate() {
        let to = found
            .chunks
            .get(i + 1)
            .map_or(found.pairs.len(), |c| c.2 as usize);
        for &(qi, _) in &found.pairs[at as usize..to] {
            let qi = qi as usize;
            if last[qi] != fi {
                last[qi] = fi;
                files[qi] += 1;
            }
        }
    }
    let n = n_files.max(1) as f64;
    files
        .iter()
        .map(|&d| {
            if d == 0 {
                f64::INFINITY
            } else {
                (n / d as f64).ln()
            }
        })
        .collect()
}

/// How a chunk of kind `k` weighs for `q`: windows and parts less than definitions, a type or
/// a function more when the question asks for one, a type less when it asks what code does.
pub(crate) fn kind_weight(k: &str, q: &Query) -> f64 {
    match k {
        "lines" => 0.7,
        "part" => 0.85,
        k if q.wants_type
            && [
                "class",
                "struct",
                "enum",
                "trait",
                "interface",
                "type",
                "record",
            ]
            .contains(&k) =>
        {
            1.15
        }
        k if q.wants_function && ["function", "method", "constructor"].contains(&k) => 1.15,
        k if q.asks_how
            && !q.wants_type
            && [
                "class",
                "struct",
                "interface",
                "type",
                "record",
                "trait",
                "enum",
            ]
            .contains(&k) =>
        {
            0.8
        }
        _ => 1.0,
    }
}

/// Hits in an older version of a file that also has a newer one among the hits (`api/v1/x.go`
/// beside `api/v2/x.go`) weigh `weight`: the old copy holds the same words as the live code.
fn weigh_older_versions(index: &Index, scored: &mut [Scored], weight: f64) {
    let mut keys: HashMap<u32, (std::borrow::Cow<'_, str>, u32)> = HashMap::new();
    for h in scored.iter() {
        if keys.contains_key(&h.file) {
            continue;
        }
        let f = &index.files[h.file as usize];
        let version = match &f.facts {
            Some(facts) => facts
                .version
                .as_ref()
                .map(|(k, v)| (std::borrow::Cow::Borrowed(&**k), *v)),
            None => match version_key(&f.path) {
                (key, Some(v)) => Some((std::borrow::Cow::Owned(key), v)),
                (_, None) => None,
            },
        };
        if let Some(kv) = version {
            keys.insert(h.file, kv);
        }
    }
    if keys.len() < 2 {
        return;
    }
    let mut newest: HashMap<&str, u32> = HashMap::new();
    for (key, v) in keys.values() {
        let slot = newest.entry(&**key).or_insert(0);
        *slot = (*slot).max(*v);
    }
    for h in scored.iter_mut() {
        if let Some((key, v)) = keys.get(&h.file) {
            if newest.get(&**key).is_some_and(|n| n > v) {
                h.score *= weight;
            }
        }
    }
}

/// Each file's best chunk gains a share of the file's next best ones: a file where several
/// places match parts of the question beats a file where one place matches one striking word.
/// A file's chunks lie one after another in `scored`.
fn accumulate(scored: &mut [Scored], file_share: f64) {
    let mut order: Vec<usize> = Vec::new();
    let mut start = 0;
    while start < scored.len() {
        let file = scored[start].file;
        let end = start
            + scored[start..]
                .iter()
                .position(|h| h.file != file)
                .unwrap_or(scored.len() - start);
        if end - start >= 2 {
            order.clear();
            order.extend(start..end);
            order.sort_by(|&a, &b| scored[b].score.total_cmp(&scored[a].score));
            let extra: f64 = order[1..]
                .iter()
                .take(3)
                .map(|&i| scored[i].score)
                .sum::<f64>()
                * file_share;
            scored[order[0]].score += extra;
        }
        start = end;
    }
}

/// The best `limit` of `scored` (by position, with the score each is shown with), a file's
/// further chunks each counting `decay` times the one before (`Tuning::rank_same_file_decay`),
/// so that a long file does not fill the list. Only the best `20 * limit` (at least 200) by
/// score are candidates; equal scores keep their order in `scored`.
fn diversify(scored: &[Scored], limit: usize, decay: f64) -> Vec<(usize, f64)> {
    #[derive(PartialEq)]
    struct Entry(f64, usize, usize);
    impl Eq for Entry {}
    impl PartialOrd for Entry {
        fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
            Some(self.cmp(other))
        }
    }
    impl Ord for Entry {
        fn cmp(&self, other: &Self) -> std::cmp::Ordering {
            self.0
                .total_cmp(&other.0)
                .then_with(|| other.1.cmp(&self.1))
        }
    }
    // Best first, an earlier one first among equals: a stable sort's order, found by a
    // selection of the candidates rather than a sort of every chunk.
    let better = |&a: &usize, &b: &usize| {
        scored[b]
            .score
            .total_cmp(&scored[a].score)
            .then_with(|| a.cmp(&b))
    };
    let keep = limit.saturating_mul(20).max(200);
    let mut order: Vec<usize> = (0..scored.len()).collect();
    if order.len() > keep {
        order.select_nth_unstable_by(keep - 1, better);
        order.truncate(keep);
    }
    order.sort_unstable_by(better);
    let mut heap: BinaryHeap<Entry> = order
        .iter()
        .enumerate()
        .map(|(rank, &i)| Entry(scored[i].score, rank, 0))
        .collect();
    let mut per_file: HashMap<u32, usize> = HashMap::new();
    let mut out = Vec::new();
    while let Some(Entry(s, rank, seen)) = heap.pop() {
        if out.len() >= limit {
            break;
        }
        let h = &scored[order[rank]];
        let count = per_file.get(&h.file).copied().unwrap_or(0);
        if count != seen {
            heap.push(Entry(h.score * decay.powi(count as i32), rank, count));
            continue;
        }
        *per_file.entry(h.file).or_insert(0) += 1;
        out.push((order[rank], s));
    }
    out
}

/// The bonus of a file's path: the question's words in its name and folders (per idf), and a
/// name of the question that is the file's name; with the query terms it covers.
pub(crate) fn path_bonus(
    path: &str,
    q: &Query,
    look: &Lookup<'_>,
    idf_of: &dyn Fn(usize) -> f64,
) -> (f64, Vec<usize>) {
    let (file, dirs) = path_terms(path);
    let in_file = positions(&look.at, &file);
    let mut in_path = in_file.clone();
    in_path.extend(positions(&look.at, &dirs));
    in_path.sort_unstable();
    in_path.dedup();
    let mut s = 0.0;
    for &qi in &in_path {
        let w = if in_file.contains(&qi) {
            q.tuning.rank_path_file
        } else {
            q.tuning.rank_path_dir
        };
        s += w * q.terms[qi].weight * idf_of(qi);
    }
    // A file named as the question's name (`changeset.ex` for "Changeset"). A module file
    // (`extract/mod.rs`) is its folder's module: named as the question's name, it is the
    // definition asked for, and counts as one.
    let named = if is_module_file(path) {
        exact_bonus(q)
    } else {
        q.tuning.rank_file_named * exact_bonus(q)
    };
    s += named * look.joined_weight(file_stem(path));
    (s, in_path)
}

/// The files (ascending) whose path holds a term of `q`: the only ones a path can score.
pub(crate) fn files_named(index: &Index, q: &Query) -> Vec<usize> {
    let by_path = index.files_by_path_term(&|path| {
        let (mut file, dirs) = path_terms(path);
        file.extend(dirs);
        file
    });
    let mut named: Vec<usize> = q
        .terms
        .iter()
        .filter_map(|t| by_path.get(&t.term))
        .flatten()
        .map(|&fi| fi as usize)
        .collect();
    named.sort_unstable();
    named.dedup();
    named
}

/// Whether `path` lies in the directory `under` (anywhere when None, `""` or `.`).
pub(crate) fn is_under(path: &str, under: Option<&str>) -> bool {
    match under {
        None | Some("" | ".") => true,
        Some(dir) => {
            let dir = dir.trim_end_matches('/');
            path.starts_with(dir) && path[dir.len()..].starts_with('/')
        }
    }
}

/// A question's terms and names by their text, so that a chunk's bonuses cost a few lookups
/// however long the question is.
pub(crate) struct Lookup<'q> {
    /// Term → its position in [`Query::terms`].
    at: super::text::FxMap<&'q str, usize>,
    /// The names of [`Query::names`].
    names: std::collections::HashSet<&'q str, super::text::FxBuild>,
    /// The names and compounds of the question in their joined spelling ([`joined_name`]),
    /// each with how much its bonuses count: 1, less for a name in a large share of the tree
    /// (see [`Tuning::rank_common_idf`]).
    joined: super::text::FxMap<String, f64>,
}

impl<'q> Lookup<'q> {
    pub(crate) fn of(q: &'q Query) -> Self {
        Lookup {
            at: q
                .terms
                .iter()
                .enumerate()
                .map(|(i, t)| (t.term.as_str(), i))
                .collect(),
            names: q.names.iter().map(String::as_str).collect(),
            joined: super::text::FxMap::default(),
        }
    }

    /// Fill [`Lookup::joined`]: a name counts in proportion to its rarest term's idf over
    /// files (`file_idf`) below [`Tuning::rank_common_idf`].
    pub(crate) fn weigh_names(&mut self, q: &Query, file_idf: &[f64]) {
        let common = q.tuning.rank_common_idf;
        let compound = q.tuning.rank_compound;
        let names = q.names.iter().map(|n| (n, 1.0));
        for (name, share) in names.chain(q.compounds.iter().map(|c| (c, compound))) {
            let mut own = Vec::new();
            ident_terms(name, &mut own);
            own.push(name.clone());
            let idf = own
                .iter()
                .filter_map(|t| self.at.get(t.as_str()))
                .map(|&qi| file_idf[qi])
                .fold(f64::NAN, f64::max);
            // The outer of a qualified name (`Codec` of `Codec.adapterFor`) is a type the
            // question names, however common its word is in the tree.
            let qualifier = q.qualified.iter().any(|(outer, _)| outer == name);
            let weight = if common > 0.0 && idf.is_finite() && !qualifier {
                (idf / common).min(1.0)
            } else {
                1.0
            };
            let key = joined_name(name);
            let slot = self.joined.entry(key).or_insert(0.0);
            *slot = slot.max(weight * share);
        }
    }

    /// How much a name's bonus counts (0 when the question gives no such name).
    fn name_weight(&self, name: &str) -> f64 {
        if self.names.contains(name) {
            self.joined.get(&joined_name(name)).copied().unwrap_or(1.0)
        } else {
            0.0
        }
    }

    /// How much a file or definition named `name` in any spelling counts as named by the
    /// question (0 when it is not).
    fn joined_weight(&self, name: &str) -> f64 {
        self.joined.get(&joined_name(name)).copied().unwrap_or(0.0)
    }

    fn named(&self, name: &str) -> bool {
        self.names.contains(name)
    }
}

/// The positions in the query (ascending, once each) of the terms in `terms`.
fn positions(at: &super::text::FxMap<&str, usize>, terms: &[String]) -> Vec<usize> {
    let mut out: Vec<usize> = terms
        .iter()
        .filter_map(|t| at.get(t.as_str()).copied())
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Each file's best chunk gains a share of the file's next best ones: a file where several
/// The name bonus of a chunk: its definition's name holds query words, or is the identifier
/// the question names.
pub(crate) fn name_bonus(
    c: &super::chunk::Chunk,
    q: &Query,
    look: &Lookup<'_>,
    idf_of: &dyn Fn(usize) -> f64,
    covered: &mut Vec<usize>,
) -> f64 {
    let at = &look.at;
    if c.name.is_empty() || c.kind == 0 {
        return 0.0;
    }
    let short = c
        .name
        .rsplit([':', '.'])
        .next()
        .unwrap_or(&c.name)
        .to_lowercase();
    let mut parts = Vec::new();
    ident_terms(&short, &mut parts);
    let short_parts = parts.len();
    ident_terms(&c.name, &mut parts);
    // Every word of the short name is in the question (`register` for "... register ...").
    let whole_name = short_parts > 0
        && parts[..short_parts]
            .iter()
            .all(|p| at.contains_key(p.as_str()));
    let mut bonus = 0.0;
    let in_name = positions(at, &parts);
    for &qi in &in_name {
        bonus += q.tuning.rank_name * q.terms[qi].weight * idf_of(qi);
        covered.push(qi);
    }
    if !c.parent.is_empty() {
        let mut outer = Vec::new();
        ident_terms(&c.parent, &mut outer);
        let mut parent_hit = false;
        for qi in positions(at, &outer) {
            if !in_name.contains(&qi) {
                bonus += q.tuning.rank_parent * q.terms[qi].weight * idf_of(qi);
                covered.push(qi);
                parent_hit = true;
            }
        }
        // The question names both the type and its member in words ("a blueprint register",
        // "the context ... next"): as good as naming `Blueprint.register`.
        let member = matches!(c.kind_name(), "method" | "function" | "constructor");
        if parent_hit && whole_name && member && !look.named(&short) {
            bonus += q.tuning.rank_exact;
        }
        let parent_short = c
            .parent
            .rsplit([':', '.'])
            .next()
            .unwrap_or(&c.parent)
            .to_lowercase();
        if look.named(&parent_short) {
            bonus += q.tuning.rank_exact / 3.0 * look.name_weight(&parent_short);
        }
    }
    let definition = c.kind != 1;
    let full = c.name.to_lowercase();
    let named = look.name_weight(&short).max(look.name_weight(&full));
    // A definition named as adjacent words of the question (`JsonObject` for "JSON object").
    let compound = if look.named(&short) {
        0.0
    } else {
        look.joined_weight(&short)
    };
    let weight = named.max(compound);
    if definition && weight > 0.0 {
        // An impl block is about the type, but the type's own definition answers "where is".
        let exact = exact_bonus(q) * weight;
        bonus += if c.kind_name() == "impl" {
            exact / 2.0
        } else {
            exact
        };
    }
    bonus
}

/// The bonus of a definition whose name is the identifier the question names.
pub(crate) fn exact_bonus(q: &Query) -> f64 {
    q.tuning.rank_exact + 2.0 * (1.0 + q.terms.len() as f64).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_keep_code_words_and_drop_framing() {
        let q = parse("Where is the `FrameCodec` for a Context picked in Store.Repo?");
        let terms: Vec<&str> = q.terms.iter().map(|t| t.term.as_str()).collect();
        assert!(terms.contains(&"framecodec"), "{terms:?}");
        assert!(terms.contains(&"context"), "{terms:?}");
        assert!(terms.contains(&"repo"), "{terms:?}");
        assert!(terms.contains(&"pick"), "{terms:?}");
        assert!(
            !terms.contains(&"where") && !terms.contains(&"the"),
            "{terms:?}"
        );
        assert!(q.names.contains(&"framecodec".to_string()));
        let q = parse("How does `Codec.getAdapter` work, and Foo::bar?");
        assert_eq!(
            q.qualified,
            vec![
                ("codec".to_string(), "getadapter".to_string()),
                ("foo".to_string(), "bar".to_string())
            ]
        );
    }

    #[test]
    fn the_first_word_of_a_sentence_is_not_a_name() {
        // "Cite" starts a sentence: it is capitalised because of where it stands.
        let q = parse("Where does the client follow a redirect? Cite the code. (See the Router.)");
        assert_eq!(q.names, ["router"], "{:?}", q.terms);
        let cite = q.terms.iter().find(|t| t.term == "cite").map(|t| t.weight);
        assert_eq!(cite, Some(1.0));
        // Inside a sentence, after a comma or a bracket, a capitalised word still is a name.
        let q = parse("Where is it set, Context or (Request)?");
        assert_eq!(q.names, ["context", "request"]);
        assert_eq!(
            word_spans("a.b  c_d é1"),
            [(0, "a"), (2, "b"), (5, "c_d"), (9, "é1")]
        );
    }

    #[test]
    fn words_in_capitals_are_words_not_names() {
        // `POST` and `GET` are values here: no definition named `post` is asked for.
        let q = parse("Where does the client turn a POST into a GET when it follows a redirect?");
        let terms: Vec<&str> = q.terms.iter().map(|t| t.term.as_str()).collect();
        assert!(terms.contains(&"post"), "{terms:?}");
        assert!(q.names.is_empty(), "{:?}", q.names);
        // Quoted, or written as code, it is still a name; capitalised words still are too.
        let q = parse("Where is `POST` handled, and MAX_SIZE set by the Router?");
        assert_eq!(q.names, ["post", "max_size", "router"]);
        // "environment" is also spelt `environ` (Python's `os.environ`, C's `environ`).
        let q = parse("Which environment variables set the log level?");
        assert!(q.terms.iter().any(|t| t.term == "environ"), "{:?}", q.terms);
        // "value" is also spelt `val` (`add_env` reads `Some(ref val)`).
        let q = parse("Where does the parser take a value from the environment?");
        assert!(q.terms.iter().any(|t| t.term == "val"), "{:?}", q.terms);
    }

    /// Sixty lines of filler (`{filler} xN = N`) with `lines` (1-based) set.

    #[test]
    fn tests_and_docs_sink_unless_asked() {
        let q = parse("where is the session saved");
        assert!(path_prior("tests/test_session.py", &q) < 0.5);
        assert!(path_prior("docs/session.md", &q) < 0.5);
        assert_eq!(path_prior("src/session.py", &q), 1.0);
        let q = parse("which tests cover the session");
        assert_eq!(path_prior("tests/test_session.py", &q), 1.0);
    }

    #[test]
    fn declarations_sink_when_the_question_asks_what_the_code_does() {
        let how = parse("Where does the library read an option's value from the environment?");
        assert_eq!(path_prior("lib/option.js", &how), 1.0);
        assert_eq!(path_prior("typings/index.d.ts", &how), 0.5);
        assert_eq!(path_prior("src/_core.pyi", &how), 0.5);
        let what = parse("Which interface declares the option's env method?");
        assert_eq!(path_prior("typings/index.d.ts", &what), 1.0);
    }
}
