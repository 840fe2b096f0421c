//! Ranking chunks for a question: BM25 over every chunk of the index (no cut before ranking),
//! then a ranking layer — a definition whose name is a word of the question or the exact
//! identifier asked for rises, so does a file named after it; tests, docs, examples, benchmarks
//! and vendored code sink unless the question asks for them; a file's second and third chunks
//! count less than another file's first.

use std::collections::{BinaryHeap, HashMap};

pub use super::paths::is_test_path;
use super::paths::{is_copy_path, version_key};
use super::paths::{BENCH_DIRS, EXAMPLE_DIRS};
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

/// A name as compared across spellings: lowercase, without `_` and `-` (`JsonObject`,
/// `json_object` and `json-object` are one name).
pub(crate) fn joined_name(name: &str) -> String {
    name.chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect()
}

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

/// A chunk that holds query terms: its file, its index, and (query term, count) pairs.
type Found = (usize, usize, Vec<(usize, u32)>);

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
pub fn path_prior(path: &str, q: &Query) -> f64 {
    let lower = path.to_ascii_lowercase();
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    let dirs: Vec<&str> = lower.split('/').collect();
    let dirs = &dirs[..dirs.len().saturating_sub(1)];
    let in_dir = |names: &[&str]| dirs.iter().any(|d| names.contains(d));
    let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
    let stem_name = name.split('.').next().unwrap_or(name);
    // The project's history and notes (`CHANGELOG.md`, `CHANGES`, `release-notes.txt`), not a
    // source file whose name starts alike (`changeset.ex`, `history.py`).
    let lead: &str = stem_name
        .split(|c: char| !c.is_ascii_alphabetic())
        .next()
        .unwrap_or(stem_name);
    if !is_code_name(name, ext)
        && [
            "changelog",
            "changes",
            "history",
            "news",
            "release",
            "releases",
            "authors",
            "contributing",
        ]
        .contains(&lead)
    {
        return if q.wants_docs { 1.0 } else { 0.15 };
    }
    let mut prior = 1.0f64;
    if is_test_path(path) && !q.wants_tests {
        prior *= q.tuning.rank_test_weight;
    }
    let doc = ["md", "rst", "txt", "adoc", "markdown", "html", "tex"].contains(&ext)
        || in_dir(&["docs", "doc", "documentation", "site"]);
    if doc && !q.wants_docs {
        prior *= 0.35;
    }
    if in_dir(EXAMPLE_DIRS) && !q.wants_examples {
        prior *= 0.5;
    }
    if in_dir(BENCH_DIRS) && !q.wants_bench {
        prior *= 0.5;
    }
    if is_copy_path(path) {
        prior *= q.tuning.rank_copy_weight;
    }
    // Declarations only (`typings/index.d.ts`, `mod.pyi`): their doc comments repeat the
    // question's words, but what the code does ("where does ... read ...") is in the
    // implementation they declare.
    let declarations = [".d.ts", ".d.mts", ".d.cts"]
        .iter()
        .any(|d| name.ends_with(d))
        || ext == "pyi";
    if declarations && q.asks_how {
        prior *= 0.5;
    }
    if [
        "json", "yaml", "yml", "toml", "xml", "csv", "lock", "cfg", "ini",
    ]
    .contains(&ext)
    {
        prior *= 0.6;
    } else if !doc && !is_code_name(name, ext) && !is_script_name(name, ext) {
        // Man pages, prebuilt output, data: text, but not the code.
        prior *= 0.5;
    }
    prior
}

/// Whether a file name without an extension is likely a script (`libexec/tool-rehash`,
/// `bin/deploy`): not one of the usual extension-less notes of a project.
fn is_script_name(name: &str, ext: &str) -> bool {
    const NOTES: &[&str] = &[
        "readme",
        "license",
        "licence",
        "copying",
        "notice",
        "authors",
        "contributors",
        "install",
        "version",
        "todo",
        "changelog",
        "changes",
        "news",
        "codeowners",
    ];
    ext.is_empty() && !name.starts_with('.') && !NOTES.contains(&name)
}

/// Whether a file name is source code of some language (parsed or not).
fn is_code_name(name: &str, ext: &str) -> bool {
    const CODE: &[&str] = &[
        "py", "pyi", "rs", "go", "js", "mjs", "cjs", "jsx", "ts", "mts", "cts", "tsx", "java", "c",
        "h", "cc", "cpp", "cxx", "hpp", "hh", "hxx", "rb", "rake", "gemspec", "php", "cs", "kt",
        "kts", "swift", "scala", "sh", "bash", "zsh", "fish", "ps1", "lua", "ex", "exs", "erl",
        "hrl", "hs", "ml", "mli", "clj", "cljs", "m", "mm", "r", "jl", "dart", "zig", "nim", "sql",
        "y", "l", "yy", "ll", "jq", "proto", "vue", "svelte", "pl", "pm", "groovy", "gradle",
        "cmake", "mk", "el", "vim", "v", "sv", "vhd", "asm", "s", "f90", "pas", "ada", "cr", "elm",
        "fs", "fsx", "gleam", "odin", "sol", "tf", "nix", "hcl", "graphql", "gql", "wat",
    ];
    CODE.contains(&ext)
        || matches!(
            name,
            "makefile" | "dockerfile" | "rakefile" | "gemfile" | "justfile"
        )
}

/// Files that stand for their folder: a module's re-exports and docs (`extract/mod.rs`,
/// `pkg/__init__.py`, `lib/index.ts`, `plugin/init.lua`).
const MODULE_FILES: &[&str] = &["mod", "__init__", "index", "init"];

/// Whether a path is a module file ([`MODULE_FILES`]) inside a folder.
fn is_module_file(path: &str) -> bool {
    let mut parts = path.rsplit('/');
    let name = parts.next().unwrap_or(path);
    let stem = name.split('.').next().unwrap_or(name);
    MODULE_FILES.contains(&stem) && parts.next().is_some_and(|d| !d.is_empty())
}

/// A file's name as it names what it holds: the identifier it starts with (`Formatter` for
/// ``Formatter`1.cs`` or `Formatter.generated.cs`), or its folder's name for a module file
/// ([`MODULE_FILES`]).
fn file_stem(path: &str) -> &str {
    let mut parts = path.rsplit('/');
    let name = parts.next().unwrap_or(path);
    let end = name
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
        .unwrap_or(name.len());
    let stem = &name[..end];
    match parts.next() {
        Some(dir) if MODULE_FILES.contains(&stem) && !dir.is_empty() => dir,
        _ => stem,
    }
}

/// The terms of a path's file name (a module file's: its folder's) and of its directories.
fn path_terms(path: &str) -> (Vec<String>, Vec<String>) {
    let mut parts = path.split('/').collect::<Vec<_>>();
    parts.pop();
    let stem_name = file_stem(path);
    let mut file = Vec::new();
    ident_terms(stem_name, &mut file);
    if !file.contains(&stem_name.to_lowercase()) {
        file.push(stem_name.to_lowercase());
    }
    let mut dirs = Vec::new();
    for d in parts {
        ident_terms(d, &mut dirs);
    }
    (file, dirs)
}

/// The `limit` best chunks for `q`, only in files under `under` when given (a relative
/// directory, `/`-separated).
#[cfg(test)]
pub fn search(index: &Index, q: &Query, limit: usize, under: Option<&str>) -> Vec<Hit> {
    search_until(index, q, limit, under, None).unwrap_or_default()
}

/// Chunks looked at between two looks at the clock.
const CLOCK_EVERY: usize = 4096;

/// [`search`], given up (None) once `deadline` passes: its cost is one pass over the index and a
/// few hash lookups per matching chunk, whatever the question's length.
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
    let mut look = Lookup::of(q);
    let in_scope = |path: &str| is_under(path, under);
    let Pass {
        df,
        total_len,
        n_chunks,
        found,
    } = match index.postings() {
        Some(postings) => postings_pass(index, postings, &ids, &in_scope),
        None => one_pass(index, q.terms.len(), &ids, &in_scope, &late)?,
    };
    let n = n_chunks.max(1) as f64;
    let avg_len = (total_len as f64 / n).max(1.0);
    // A term no chunk holds still counts as rare when it names a file.
    let idf: Vec<f64> = df
        .iter()
        .map(|&d| match d {
            0 => (1.0 + n).ln(),
            d => (1.0 + (n - d as f64 + 0.5) / (d as f64 + 0.5)).ln(),
        })
        .collect();
    let idf_of = |qi: usize| idf[qi];
    let total_weight: f64 = q
        .terms
        .iter()
        .enumerate()
        .map(|(i, t)| t.weight * idf_of(i))
        .sum::<f64>()
        .max(1e-9);
    look.weigh_names(q, &file_idf(&found, q.terms.len(), index.files.len()));
    let look = look;
    let mut path_cache: HashMap<usize, (f64, Vec<usize>)> = HashMap::new();
    let mut path_score = |fi: usize| -> (f64, Vec<usize>) {
        path_cache
            .entry(fi)
            .or_insert_with(|| path_bonus(&index.files[fi].path, q, &look, &idf_of))
            .clone()
    };
    let mut scored: Vec<Hit> = Vec::with_capacity(found.len());
    let mut seen_files: Vec<bool> = vec![false; index.files.len()];
    for (n, (fi, ci, matched)) in found.into_iter().enumerate() {
        if n % CLOCK_EVERY == CLOCK_EVERY - 1 && late() {
            return None;
        }
        seen_files[fi] = true;
        let f = &index.files[fi];
        let c = &f.chunks.chunks[ci];
        let len = f64::from(c.len.max(1));
        let mut score = 0.0;
        let mut covered: Vec<usize> = Vec::new();
        for &(qi, tf) in &matched {
            let tf = f64::from(tf);
            score += q.terms[qi].weight * idf[qi] * tf * (q.tuning.rank_bm25_k1 + 1.0)
                / (tf
                    + q.tuning.rank_bm25_k1
                        * (1.0 - q.tuning.rank_bm25_b + q.tuning.rank_bm25_b * len / avg_len));
            covered.push(qi);
        }
        score += name_bonus(c, q, &look, &idf_of, &mut covered);
        let (ps, phit) = path_score(fi);
        score += ps;
        covered.extend(phit);
        covered.sort_unstable();
        covered.dedup();
        scored.push(finish(f, ci, score, covered, q, &idf_of, total_weight, fi));
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
        let (ps, phit) = path_score(fi);
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
        scored.push(finish(f, ci, ps, phit, q, &idf_of, total_weight, fi));
    }
    weigh_older_versions(index, &mut scored, q.tuning.rank_copy_weight);
    accumulate(&mut scored, q.tuning.rank_file_share);
    Some(diversify(scored, limit, q.tuning.rank_same_file_decay))
}

/// The bonus of a file's path: the question's words in its name and folders (per idf), and a
/// name of the question that is the file's name; with the query terms it covers.
fn path_bonus(
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
fn files_named(index: &Index, q: &Query) -> Vec<usize> {
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
fn is_under(path: &str, under: Option<&str>) -> bool {
    match under {
        None | Some("" | ".") => true,
        Some(dir) => {
            let dir = dir.trim_end_matches('/');
            path.starts_with(dir) && path[dir.len()..].starts_with('/')
        }
    }
}

/// What one pass over every chunk found.
struct Pass {
    /// Per query term, the chunks that hold it.
    df: Vec<u64>,
    /// The words of every chunk.
    total_len: u64,
    /// Every chunk.
    n_chunks: u64,
    /// The chunks in scope that hold query terms.
    found: Vec<Found>,
}

/// One pass over every chunk of `index`: which of the `n_terms` query terms (by their ids in
/// the index, `ids`) each holds, and the document frequencies; None once `late`.
fn one_pass(
    index: &Index,
    n_terms: usize,
    ids: &[Option<u32>],
    in_scope: &dyn Fn(&str) -> bool,
    late: &dyn Fn() -> bool,
) -> Option<Pass> {
    // Each term id's position in the query (one byte: the query keeps fewer terms than that).
    let mut slot = vec![u8::MAX; index.vocab.len()];
    for (qi, id) in ids.iter().enumerate() {
        if let (Some(id), true) = (id, qi < u8::MAX as usize) {
            if let Some(s) = slot.get_mut(*id as usize) {
                *s = qi as u8;
            }
        }
    }
    let mut pass = Pass {
        df: vec![0u64; n_terms],
        total_len: 0,
        n_chunks: 0,
        found: Vec::new(),
    };
    for (fi, f) in index.files.iter().enumerate() {
        for ci in 0..f.chunks.chunks.len() {
            pass.n_chunks += 1;
            if pass.n_chunks.is_multiple_of(CLOCK_EVERY as u64) && late() {
                return None;
            }
            pass.total_len += u64::from(f.chunks.chunks[ci].len);
            let mut matched: Vec<(usize, u32)> = Vec::new();
            for &packed in f.chunks.chunk_terms(ci) {
                let s = slot.get((packed >> 8) as usize).copied().unwrap_or(u8::MAX);
                if s != u8::MAX {
                    matched.push((s as usize, packed & 0xff));
                }
            }
            if matched.is_empty() {
                continue;
            }
            for &(qi, _) in &matched {
                pass.df[qi] += 1;
            }
            if in_scope(&f.path) {
                pass.found.push((fi, ci, matched));
            }
        }
    }
    Some(pass)
}

/// Per query term, `ln(files / files holding it)` over the chunks found (infinite for a term
/// no file holds): how rare it is among files, not chunks, so that a word in every file of the
/// tree ("bash" in a bash project) is told from a word in one long file's every chunk.
fn file_idf(found: &[Found], n_terms: usize, n_files: usize) -> Vec<f64> {
    let mut files = vec![0u64; n_terms];
    let mut last = vec![usize::MAX; n_terms];
    for (fi, _, matched) in found {
        for &(qi, _) in matched {
            if last[qi] != *fi {
                last[qi] = *fi;
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

/// [`one_pass`] read from the index's postings: only the chunks that hold a query term are
/// touched (in the same order, each one's terms in id order, as the pass over every chunk).
fn postings_pass(
    index: &Index,
    postings: &super::Postings,
    ids: &[Option<u32>],
    in_scope: &dyn Fn(&str) -> bool,
) -> Pass {
    let mut df = vec![0u64; ids.len()];
    // (chunk number, term id, query position, count) of every posting of a query term.
    let mut hits: Vec<(u32, u32, usize, u32)> = Vec::new();
    for (qi, id) in ids.iter().enumerate() {
        // A term listed twice in the query counts at its last position, as in `one_pass`.
        let Some(id) = id.filter(|id| qi < u8::MAX as usize && !ids[qi + 1..].contains(&Some(*id)))
        else {
            continue;
        };
        let (chunks, counts) = postings.of(id);
        df[qi] = chunks.len() as u64;
        hits.extend(
            chunks
                .iter()
                .zip(counts)
                .map(|(&c, &n)| (c, id, qi, u32::from(n))),
        );
    }
    hits.sort_unstable_by_key(|&(c, id, _, _)| (c, id));
    let mut found: Vec<Found> = Vec::new();
    let mut scope: Option<(usize, bool)> = None;
    for group in hits.chunk_by(|a, b| a.0 == b.0) {
        let (fi, ci) = postings.locate(group[0].0);
        let inside = match scope {
            Some((f, inside)) if f == fi => inside,
            _ => in_scope(&index.files[fi].path),
        };
        scope = Some((fi, inside));
        if inside {
            found.push((fi, ci, group.iter().map(|&(_, _, qi, n)| (qi, n)).collect()));
        }
    }
    Pass {
        df,
        total_len: postings.total_len(),
        n_chunks: postings.n_chunks(),
        found,
    }
}

/// A question's terms and names by their text, so that a chunk's bonuses cost a few lookups
/// however long the question is.
struct Lookup<'q> {
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
    fn of(q: &'q Query) -> Self {
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
    fn weigh_names(&mut self, q: &Query, file_idf: &[f64]) {
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
/// places match parts of the question beats a file where one place matches one striking word.
fn accumulate(scored: &mut [Hit], file_share: f64) {
    let mut by_file: HashMap<usize, Vec<usize>> = HashMap::new();
    for (i, h) in scored.iter().enumerate() {
        by_file.entry(h.file).or_default().push(i);
    }
    for idx in by_file.values() {
        if idx.len() < 2 {
            continue;
        }
        let mut order = idx.clone();
        order.sort_by(|&a, &b| scored[b].score.total_cmp(&scored[a].score));
        let extra: f64 = order[1..]
            .iter()
            .take(3)
            .map(|&i| scored[i].score)
            .sum::<f64>()
            * file_share;
        scored[order[0]].score += extra;
    }
}

/// The name bonus of a chunk: its definition's name holds query words, or is the identifier
/// the question names.
fn name_bonus(
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

/// The weight of a chunk inside a test module of a source file (Rust's `#[cfg(test)] mod tests
/// { ... }`): [`Tuning::rank_test_weight`] unless the question asks about tests, else 1.
fn in_test_module(f: &super::IndexedFile, ci: usize, q: &Query) -> f64 {
    let rust = std::path::Path::new(&f.path)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("rs"));
    if q.wants_tests || !rust || is_test_path(&f.path) {
        return 1.0;
    }
    let c = &f.chunks.chunks[ci];
    let inside = matches!(c.parent.as_str(), "tests" | "test")
        || f.chunks.chunks.iter().any(|m| {
            m.kind_name() == "module"
                && matches!(m.name.as_str(), "tests" | "test")
                && m.start <= c.start
                && c.end <= m.end
        });
    if inside {
        q.tuning.rank_test_weight
    } else {
        1.0
    }
}

/// Hits in an older version of a file that also has a newer one among the hits (`api/v1/x.go`
/// beside `api/v2/x.go`) weigh `weight`: the old copy holds the same words as the live code.
fn weigh_older_versions(index: &Index, scored: &mut [Hit], weight: f64) {
    let mut keys: HashMap<usize, (String, u32)> = HashMap::new();
    for h in scored.iter() {
        if keys.contains_key(&h.file) {
            continue;
        }
        if let (key, Some(v)) = version_key(&index.files[h.file].path) {
            keys.insert(h.file, (key, v));
        }
    }
    if keys.len() < 2 {
        return;
    }
    let mut newest: HashMap<&str, u32> = HashMap::new();
    for (key, v) in keys.values() {
        let slot = newest.entry(key.as_str()).or_insert(0);
        *slot = (*slot).max(*v);
    }
    for h in scored.iter_mut() {
        if let Some((key, v)) = keys.get(&h.file) {
            if newest.get(key.as_str()).is_some_and(|n| n > v) {
                h.score *= weight;
            }
        }
    }
}

/// The bonus of a definition whose name is the identifier the question names.
fn exact_bonus(q: &Query) -> f64 {
    q.tuning.rank_exact + 2.0 * (1.0 + q.terms.len() as f64).ln()
}

#[allow(clippy::too_many_arguments)]
fn finish(
    f: &super::IndexedFile,
    ci: usize,
    score: f64,
    covered: Vec<usize>,
    q: &Query,
    idf_of: &dyn Fn(usize) -> f64,
    total_weight: f64,
    fi: usize,
) -> Hit {
    let c = &f.chunks.chunks[ci];
    let got: f64 = covered
        .iter()
        .map(|&qi| q.terms[qi].weight * idf_of(qi))
        .sum();
    // Chunks that hold more of the question count more than ones that repeat one word.
    let coverage = 0.4 + 0.6 * (got / total_weight).min(1.0);
    let kind = match c.kind_name() {
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
    };
    Hit {
        file: fi,
        chunk: ci,
        score: score * coverage * kind * path_prior(&f.path, q) * in_test_module(f, ci, q),
        matched: covered,
    }
}

/// The best `limit` hits, a file's further chunks each counting `decay` times the one before
/// (`Tuning::rank_same_file_decay`), so that a long file does not fill the list.
fn diversify(mut scored: Vec<Hit>, limit: usize, decay: f64) -> Vec<Hit> {
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
    scored.sort_by(|a, b| b.score.total_cmp(&a.score));
    scored.truncate(limit.saturating_mul(20).max(200));
    let mut heap: BinaryHeap<Entry> = scored
        .iter()
        .enumerate()
        .map(|(i, h)| Entry(h.score, i, 0))
        .collect();
    let mut per_file: HashMap<usize, usize> = HashMap::new();
    let mut out = Vec::new();
    while let Some(Entry(s, i, seen)) = heap.pop() {
        if out.len() >= limit {
            break;
        }
        let h = &scored[i];
        let count = per_file.get(&h.file).copied().unwrap_or(0);
        if count != seen {
            heap.push(Entry(h.score * decay.powi(count as i32), i, count));
            continue;
        }
        let _ = s;
        *per_file.entry(h.file).or_insert(0) += 1;
        let mut hit = h.clone();
        hit.score = s;
        out.push(hit);
    }
    out
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
