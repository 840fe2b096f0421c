//! The ranking as it was before the index kept what the ranking needs of each file (#35): one
//! straightforward pass over every chunk, each chunk's path weighed from its string, each
//! scored chunk kept whole. The tests below rank the same trees and questions with it and with
//! [`rank::search`], which must find the same places in the same order with the same scores.

use std::collections::{BinaryHeap, HashMap};

use super::facts::{is_code_name, is_script_name};
use super::paths::{is_copy_path, is_test_path, version_key, BENCH_DIRS, EXAMPLE_DIRS};
use super::rank::{
    self, files_named, is_under, name_bonus, path_bonus, Hit, Lookup, Query, CLOCK_EVERY,
};
use super::Index;

/// A chunk that holds query terms: its file, its index, and (query term, count) pairs.
type Found = (usize, usize, Vec<(usize, u32)>);

/// The `limit` best chunks for `q` by one pass over every chunk (None once `deadline` passes).
pub(super) fn search_until(
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
    } = one_pass(index, q.terms.len(), &ids, &in_scope, &late)?;
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

/// How a file's path weighs: tests, docs, examples, benchmarks, vendored and generated code
/// sink unless the question asks for them.
pub(super) fn path_prior(path: &str, q: &Query) -> f64 {
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
    use std::path::Path;
    use std::sync::atomic::AtomicBool;

    use super::*;
    use crate::tools::workspace::Workspace;
    use crate::tuning::Tuning;

    /// An index of `root`, as a Search builds it.
    fn index_of(root: &Path) -> Index {
        let ws = Workspace::new(root).expect("workspace");
        let mut index = Index::default();
        index.refresh(&ws, None, &AtomicBool::new(false));
        assert!(index.postings().is_some());
        index
    }

    /// Rank `question` under `under` with both rankings; they must give the same places, in the
    /// same order, with the same matched terms and the same scores.
    fn same(index: &Index, question: &str, tuning: &Tuning, under: Option<&str>) -> usize {
        let q = rank::parse_with(question, tuning);
        for limit in [1, 10, 30] {
            let fast = rank::search(index, &q, limit, under);
            let slow = search_until(index, &q, limit, under, None).expect("no deadline");
            let show = |hits: &[Hit]| -> Vec<(String, usize, Vec<usize>, f64)> {
                hits.iter()
                    .map(|h| {
                        let p = index.files[h.file].path.clone();
                        (p, h.chunk, h.matched.clone(), h.score)
                    })
                    .collect()
            };
            assert_eq!(
                show(&fast),
                show(&slow),
                "{question:?} under {under:?}, limit {limit}"
            );
        }
        rank::search(index, &q, 30, under).len()
    }

    const QUESTIONS: &[&str] = &[
        "Where is the completion gate feedback built?",
        "how does the workspace confine symlinks",
        "`Index::refresh` deadline pending",
        "parse tree sitter chunk definitions",
        "cache directory prune",
        "zzqqxx nothing matches this",
        "Workspace",
        "which tests cover the session store",
        "Where does the JSON object with named fields get its Codec.getAdapter?",
        "where is the session saved, see the docs and the changelog",
        "example of a benchmark for the router",
        "which class holds the session store",
        "which function reads the option value from the environment",
        "Router",
        "JsonObject session",
    ];

    #[test]
    fn the_ranking_finds_what_the_pass_over_every_chunk_found_on_this_crate() {
        let index = index_of(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
        let mut ranked = 0;
        for question in QUESTIONS {
            for under in [None, Some("index"), Some("tools"), Some("llm/scout")] {
                ranked += same(&index, question, &Tuning::default(), under);
            }
        }
        assert!(ranked > 100, "{ranked}");
    }

    /// A tree with a file of every class the ranking weighs: tests beside the code and in test
    /// folders, Rust test modules, docs, notes, examples, benchmarks, copies, versions, module
    /// files, declarations, data, scripts.
    fn classes_tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        let session = "pub struct SessionStore { cookie: String }\nimpl SessionStore {\n    pub fn save(&self) -> bool { true }\n}\npub fn save_session(store: &SessionStore) {}\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn session_saves() { super::save_session(); }\n}\n";
        let files: Vec<(String, String)> = vec![
            ("src/session.rs".into(), session.into()),
            ("src/session/mod.rs".into(), "pub mod store;\npub use store::SessionStore;\n".into()),
            ("src/session/tests.rs".into(), "fn session_store_saves() { let s = SessionStore::new(); s.save(); }\n".into()),
            ("src/router_test.go".into(), "package router\nfunc TestRouterSession(t *testing.T) { session := NewSession() }\n".into()),
            ("tests/test_session.py".into(), "def test_session_saved():\n    store = SessionStore()\n    store.save()\n".into()),
            ("docs/session.md".into(), "# Session\n\nThe session store is saved by `save_session`.\n".into()),
            ("CHANGELOG.md".into(), "## 1.0\n\n- The session store saves its cookie.\n".into()),
            ("examples/session_demo.py".into(), "def demo_session():\n    store = SessionStore()\n    store.save()\n".into()),
            ("benches/router_bench.rs".into(), "fn bench_router_session() { let r = Router::new(); }\n".into()),
            ("vendor/session/session.go".into(), "package session\nfunc SaveSession(s *Store) error { return nil }\n".into()),
            ("compat/session.py".into(), "def save_session(store):\n    return store.save()\n".into()),
            ("api/v1/session.go".into(), "package api\nfunc SaveSession(s *SessionStore) error { return nil }\n".into()),
            ("api/v2/session.go".into(), "package api\nfunc SaveSession(s *SessionStore) error { return nil }\n".into()),
            ("typings/index.d.ts".into(), "export interface SessionStore { save(): boolean }\nexport function readOption(env: string): string;\n".into()),
            ("src/options.ts".into(), "export function readOption(env: string): string {\n  return process.env[env] ?? '';\n}\n".into()),
            ("config/session.json".into(), "{\"session\": {\"store\": \"cookie\"}}\n".into()),
            ("bin/save-session".into(), "#!/bin/sh\necho save session store\n".into()),
            ("man/session.1".into(), ".TH SESSION 1\nsession store save\n".into()),
            ("src/json_object.py".into(), "class JsonObject:\n    def __init__(self, fields):\n        self.fields = fields\n".into()),
            ("src/codec.py".into(), "class Codec:\n    def getAdapter(self, kind):\n        return JsonObject({})\n".into()),
            ("src/router/mod.rs".into(), "pub struct Router;\nimpl Router {\n    pub fn route(&self) {}\n}\n".into()),
            ("src/env.py".into(), "import os\n\ndef read_option_value(name):\n    return os.environ.get(name)\n".into()),
        ];
        for (path, text) in &files {
            let p = dir.path().join(path);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, text).expect("write");
        }
        // Common words in many files, so that idf and the file share matter.
        for i in 0..30 {
            let p = dir.path().join(format!("src/filler/unit{i}.rs"));
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            let text = format!("pub fn unit_{i}() -> u32 {{ session(); store(); {i} }}\npub fn other_{i}() {{ save(); }}\n");
            std::fs::write(p, text).expect("write");
        }
        dir
    }

    #[test]
    fn the_ranking_finds_what_the_pass_over_every_chunk_found_on_every_class_of_path() {
        let dir = classes_tree();
        let mut index = index_of(dir.path());
        let tunings = [
            Tuning::default(),
            Tuning {
                rank_test_weight: 1.0,
                rank_copy_weight: 1.0,
                rank_compound: 0.0,
                rank_common_idf: 0.0,
                ..Tuning::default()
            },
        ];
        let mut ranked = 0;
        for tuning in &tunings {
            for question in QUESTIONS {
                for under in [None, Some("src"), Some("api")] {
                    ranked += same(&index, question, tuning, under);
                }
            }
        }
        assert!(ranked > 100, "{ranked}");
        // Without the facts (an index put together by hand) and with them worked out again
        // (after a load from the disk cache), the same.
        for f in &mut index.files {
            f.facts = None;
        }
        for question in QUESTIONS {
            same(&index, question, &tunings[0], None);
        }
        index.derive();
        assert!(index.files.iter().all(|f| f.facts.is_some()));
        for question in QUESTIONS {
            same(&index, question, &tunings[0], None);
        }
    }

    #[test]
    fn a_path_s_class_weighs_as_its_string_did() {
        let paths = [
            "src/session.rs",
            "src/session/tests.rs",
            "src/router_test.go",
            "tests/test_session.py",
            "docs/session.md",
            "README.md",
            "CHANGELOG.md",
            "CHANGES",
            "release-notes.txt",
            "src/changeset.ex",
            "src/history.py",
            "examples/demo.py",
            "benches/router_bench.rs",
            "vendor/x/y.go",
            "compat/session.py",
            "api/v1/session.go",
            "typings/index.d.ts",
            "src/_core.pyi",
            "config/session.json",
            "Cargo.lock",
            "bin/save-session",
            "man/session.1",
            "Makefile",
            ".gitignore",
            "site/index.html",
            "docs/conf.py",
            "tests/fixtures/data.yaml",
            "src/Formatter`1.cs",
            "src/RouterTests.swift",
        ];
        let questions = [
            "where is the session saved",
            "which tests cover the session",
            "where are the docs and the changelog of the session",
            "show an example of the session",
            "the benchmark of the router",
            "Where does the library read an option's value from the environment?",
            "Which interface declares the option's env method?",
        ];
        let tuning = Tuning {
            rank_test_weight: 0.3,
            rank_copy_weight: 0.7,
            ..Tuning::default()
        };
        for question in questions {
            for q in [rank::parse(question), rank::parse_with(question, &tuning)] {
                for path in paths {
                    assert_eq!(
                        rank::path_prior(path, &q),
                        path_prior(path, &q),
                        "{path} for {question:?}"
                    );
                }
            }
        }
    }
}
