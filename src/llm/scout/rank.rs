//! Ranking what the searches found: definitions named after the question's keywords first, in
//! files whose path holds them too, in source rather than tests, docs or changelogs.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::query::{split_words, Query};
use super::search::{definition_in, Purpose, SearchResult};

/// A place worth citing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Candidate {
    /// Path relative to the root.
    pub(crate) file: String,
    /// 1-based line (1 for a file found by name only).
    pub(crate) line: u64,
    /// The line's text, when a search returned it.
    pub(crate) text: String,
    /// `(kind, name)` when the line is a definition.
    pub(crate) def: Option<(String, String)>,
    /// The keywords (their words) the name, or else the line, matched.
    pub(crate) matched: Vec<String>,
    /// Higher is better.
    pub(crate) score: f64,
}

/// How a file's path sets its weight: tests, docs, changelogs and examples rank below source
/// unless the question asks for them.
pub(crate) fn prior(path: &str, q: &Query) -> f64 {
    let lower = path.to_lowercase();
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    let dirs: Vec<&str> = lower.split('/').collect();
    let dirs = &dirs[..dirs.len().saturating_sub(1)];
    let ext = name.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    let in_dir = |names: &[&str]| dirs.iter().any(|d| names.contains(d));
    if ["changelog", "changes", "history", "news", "release"]
        .iter()
        .any(|p| name.starts_with(p))
    {
        return if q.wants_docs { 1.0 } else { 0.1 };
    }
    if ["md", "rst", "txt", "adoc", "markdown"].contains(&ext) || in_dir(&["docs", "doc"]) {
        return if q.wants_docs { 1.0 } else { 0.25 };
    }
    let test = in_dir(&[
        "test",
        "tests",
        "testing",
        "__tests__",
        "spec",
        "specs",
        "testdata",
    ]) || name.starts_with("test_")
        || name.starts_with("tests.")
        || [
            "_test.go",
            "_test.py",
            "_tests.rs",
            "_spec.rb",
            ".test.ts",
            ".test.js",
            ".spec.ts",
            ".spec.js",
            ".test.tsx",
        ]
        .iter()
        .any(|s| name.ends_with(s))
        || name == "tests.rs"
        || name == "conftest.py";
    if test {
        return if q.wants_tests { 1.0 } else { 0.35 };
    }
    if in_dir(&[
        "examples",
        "example",
        "samples",
        "bench",
        "benches",
        "benchmarks",
        "fixtures",
        "vendor",
        "third_party",
        "thirdparty",
        "demo",
    ]) {
        return if q.wants_examples { 1.0 } else { 0.5 };
    }
    // Type stubs and declaration files declare what is implemented elsewhere.
    if name.rsplit_once('.').is_some_and(|(_, ext)| ext == "pyi") || name.ends_with(".d.ts") {
        return 0.6;
    }
    if super::search::is_source(path) {
        1.0
    } else {
        0.5
    }
}

/// The sub-words of a path's file name (without extension) and of its folders.
fn path_words(path: &str) -> (Vec<String>, Vec<String>) {
    let mut segs: Vec<&str> = path.split('/').collect();
    let name = segs.pop().unwrap_or("");
    let stem = name.split('.').next().unwrap_or(name);
    let mut file = split_words(stem);
    // `mod.rs`, `__init__.py`, `index.ts` are named by their folder.
    if ["mod", "init", "index", "lib", "main"].contains(&stem.trim_matches('_')) {
        if let Some(dir) = segs.pop() {
            file = split_words(dir);
        }
    }
    let dirs = segs.iter().flat_map(|s| split_words(s)).collect();
    (file, dirs)
}

/// Keyword indices that a path's file name, and its folders, match.
fn path_keywords(path: &str, q: &Query) -> (BTreeSet<usize>, BTreeSet<usize>) {
    let (file, dirs) = path_words(path);
    let hits = |parts: &[String]| -> BTreeSet<usize> {
        q.search_keywords()
            .iter()
            .enumerate()
            .filter(|(_, k)| parts.iter().any(|p| k.matches_part(p)))
            .map(|(i, _)| i)
            .collect()
    };
    let in_file = hits(&file);
    let in_dirs = hits(&dirs).difference(&in_file).copied().collect();
    (in_file, in_dirs)
}

/// How much a path's keywords count: the file name more than its folders.
fn path_weight(
    fk: &BTreeSet<usize>,
    dk: &BTreeSet<usize>,
    skip: &BTreeSet<usize>,
    q: &Query,
) -> f64 {
    let f: BTreeSet<usize> = fk.difference(skip).copied().collect();
    let d: BTreeSet<usize> = dk.difference(skip).copied().collect();
    1.5 * weight(&f, q) + 0.8 * weight(&d, q)
}

/// The files the second turn searches within: the best-ranked files, and the files whose
/// names hold the most keywords.
pub(crate) fn focus_files(
    ranked: &[Candidate],
    results: &[SearchResult],
    q: &Query,
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in ranked {
        if out.len() >= 4 {
            break;
        }
        if !out.contains(&c.file) {
            out.push(c.file.clone());
        }
    }
    let mut by_path: Vec<(f64, String)> = results
        .iter()
        .filter(|r| !r.failed)
        .flat_map(|r| r.paths.iter().chain(r.lines.iter().map(|h| &h.file)))
        .collect::<BTreeSet<&String>>()
        .into_iter()
        .map(|p| {
            let (fk, dk) = path_keywords(p, q);
            (
                path_weight(&fk, &dk, &BTreeSet::new(), q) * prior(p, q),
                p.clone(),
            )
        })
        .filter(|(w, _)| *w > 0.0)
        .collect();
    by_path.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    for (_, p) in by_path {
        if out.len() >= super::search::FOCUS_FILES {
            break;
        }
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

fn line_keywords(text: &str, q: &Query) -> BTreeSet<usize> {
    let lowered = text.to_lowercase();
    q.search_keywords()
        .iter()
        .enumerate()
        .filter(|(_, k)| k.in_text(&lowered))
        .map(|(i, _)| i)
        .collect()
}

fn weight(set: &BTreeSet<usize>, q: &Query) -> f64 {
    let kws = q.search_keywords();
    set.iter().map(|&i| kws[i].weight).sum()
}

/// The keywords' weights corrected by what the searches saw: a keyword whose definition search
/// stopped at its limit is common in this tree, one whose search finished is rare.
pub(crate) fn reweighted(q: &Query, results: &[SearchResult]) -> Query {
    let mut q = q.clone();
    for r in results
        .iter()
        .filter(|r| r.purpose == Purpose::Defs && !r.failed)
    {
        if let Some(k) = r.keyword.and_then(|i| q.keywords.get_mut(i)) {
            k.weight *= if r.truncated { 0.85 } else { 1.2 };
        }
    }
    q
}

fn normalized(name: &str) -> String {
    name.chars()
        .filter(|c| *c != '_' && *c != '$')
        .flat_map(char::to_lowercase)
        .collect()
}

fn kind_weight(kind: &str) -> f64 {
    match kind {
        // Locals are often named after what they hold; constants and statics are definitions.
        "let" | "var" | "val" => 0.3,
        "const" | "static" => 0.8,
        "mod" | "module" => 0.5,
        _ => 1.0,
    }
}

/// Candidates from the searches, best first.
pub(crate) fn rank(results: &[SearchResult], q: &Query) -> Vec<Candidate> {
    let reweighted = reweighted(q, results);
    let q = &reweighted;
    let kws = q.search_keywords();
    let named: BTreeSet<String> = q.named.iter().map(|n| normalized(n)).collect();
    // Every line seen, once, with the searches that returned it.
    let mut lines: BTreeMap<(String, u64), (String, BTreeSet<Purpose>)> = BTreeMap::new();
    let mut paths: BTreeSet<String> = BTreeSet::new();
    for r in results.iter().filter(|r| !r.failed) {
        for h in &r.lines {
            lines
                .entry((h.file.clone(), h.line))
                .or_insert_with(|| (h.text.clone(), BTreeSet::new()))
                .1
                .insert(r.purpose);
        }
        paths.extend(r.paths.iter().cloned());
    }
    // What each file is known to mention: keywords of its path and of its lines.
    let mut file_kws: BTreeMap<String, BTreeSet<usize>> = BTreeMap::new();
    let mut pair_lines: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for ((file, line), (text, purposes)) in &lines {
        file_kws
            .entry(file.clone())
            .or_default()
            .extend(line_keywords(text, q));
        if purposes.iter().any(|p| p.is_pairs()) {
            pair_lines.entry(file.clone()).or_default().push(*line);
        }
    }
    let mut out = Vec::new();
    for ((file, line), (text, _)) in &lines {
        let (pfk, pdk) = path_keywords(file, q);
        let pk: BTreeSet<usize> = pfk.union(&pdk).copied().collect();
        let (file_words, _) = path_words(file);
        let fk = file_kws.get(file).cloned().unwrap_or_default();
        let lk = line_keywords(text, q);
        let def = definition_in(file, text);
        let (score, matched) = match &def {
            Some((kind, name)) => {
                let nk: BTreeSet<usize> = kws
                    .iter()
                    .enumerate()
                    .filter(|(_, k)| k.matches_name(name))
                    .map(|(i, _)| i)
                    .collect();
                // Keywords only a qualifier matches (receiver type, implemented trait).
                let qk: BTreeSet<usize> = super::search::qualifiers(text)
                    .iter()
                    .flat_map(|qn| {
                        kws.iter()
                            .enumerate()
                            .filter(|(_, k)| k.matches_name(qn))
                            .map(|(i, _)| i)
                    })
                    .filter(|i| !nk.contains(i))
                    .collect();
                let parts = split_words(name);
                let focus = parts
                    .iter()
                    .filter(|p| kws.iter().any(|k| k.matches_part(p)))
                    .count() as f64
                    / parts.len().max(1) as f64;
                let body_pairs = pair_lines
                    .get(file)
                    .map(|ls| {
                        ls.iter()
                            .filter(|l| **l > *line && **l <= line + 60)
                            .count()
                    })
                    .unwrap_or(0)
                    .min(3) as f64;
                let all = nk.len() == kws.len() && kws.len() > 1;
                let exact = named.contains(&normalized(name));
                // A definition the file is named after (`Glob` in glob.rs) is what it is about.
                let eponym = parts
                    .iter()
                    .any(|p| file_words.contains(p) && kws.iter().any(|k| k.matches_part(p)));
                let rest_file: BTreeSet<usize> = fk
                    .difference(&nk)
                    .filter(|i| !pk.contains(i))
                    .copied()
                    .collect();
                let asked = q.kinds.is_some_and(|k| k.contains(&kind.as_str()));
                let s = 3.0 * weight(&nk, q)
                    + 1.5 * weight(&qk, q)
                    + if all { 2.0 } else { 0.0 }
                    + if asked && !nk.is_empty() { 1.5 } else { 0.0 }
                    + if exact { 6.0 } else { 0.0 }
                    + focus
                    + kind_weight(kind)
                    + path_weight(&pfk, &pdk, &nk.union(&qk).copied().collect(), q)
                    + if eponym { 1.0 } else { 0.0 }
                    + 0.4 * weight(&rest_file, q)
                    + 0.6 * body_pairs;
                let s = if nk.is_empty() && qk.is_empty() {
                    s * 0.4
                } else {
                    s
                };
                (s, nk)
            }
            None => {
                let exact = q.named.iter().any(|n| text.contains(n.as_str()));
                let rest_file: BTreeSet<usize> = fk
                    .difference(&lk)
                    .filter(|i| !pk.contains(i))
                    .copied()
                    .collect();
                let s = 1.6 * weight(&lk, q)
                    + if exact { 2.5 } else { 0.0 }
                    + path_weight(&pfk, &pdk, &lk, q)
                    + 0.4 * weight(&rest_file, q);
                (s, lk)
            }
        };
        out.push(Candidate {
            file: file.clone(),
            line: *line,
            text: text.clone(),
            def: def.clone(),
            matched: matched.iter().map(|&i| kws[i].word.clone()).collect(),
            score: score * prior(file, q),
        });
    }
    // Files found by name only: their first lines.
    let seen: BTreeSet<&String> = lines.keys().map(|(f, _)| f).collect();
    for p in paths.iter().filter(|p| !seen.contains(p)) {
        let (pfk, pdk) = path_keywords(p, q);
        let pk: BTreeSet<usize> = pfk.union(&pdk).copied().collect();
        if pfk.is_empty() {
            continue;
        }
        out.push(Candidate {
            file: p.clone(),
            line: 1,
            text: String::new(),
            def: None,
            matched: pk.iter().map(|&i| kws[i].word.clone()).collect(),
            // Nothing inside it matched: its name alone is weak evidence.
            score: 0.7 * path_weight(&pfk, &pdk, &BTreeSet::new(), q) * prior(p, q),
        });
    }
    out.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.file.cmp(&b.file))
            .then(a.line.cmp(&b.line))
    });
    out
}

/// The candidates to cite, at most `n`: the first `top` by score with at most two from one
/// file, then the best of files not cited yet, then the rest by score.
pub(crate) fn picks(ranked: &[Candidate], top: usize, n: usize) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = Vec::new();
    let has =
        |out: &[Candidate], c: &Candidate| out.iter().any(|o| o.file == c.file && o.line == c.line);
    for c in ranked {
        if out.len() >= top.min(n) {
            break;
        }
        if out.iter().filter(|o| o.file == c.file).count() < 2 {
            out.push(c.clone());
        }
    }
    for c in ranked {
        if out.len() >= n {
            break;
        }
        if !out.iter().any(|o| o.file == c.file) {
            out.push(c.clone());
        }
    }
    for c in ranked {
        if out.len() >= n {
            break;
        }
        if !has(&out, c) {
            out.push(c.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::scout::query::parse;
    use crate::llm::scout::search::LineHit;

    fn result(purpose: Purpose, hits: &[(&str, u64, &str)]) -> SearchResult {
        SearchResult {
            purpose,
            keyword: None,
            pattern: String::new(),
            glob: None,
            lines: hits
                .iter()
                .map(|(f, l, t)| LineHit {
                    file: f.to_string(),
                    line: *l,
                    text: t.to_string(),
                })
                .collect(),
            paths: Vec::new(),
            truncated: false,
            failed: false,
        }
    }

    #[test]
    fn source_definitions_beat_mentions_tests_and_changelogs() {
        let q = parse("Where is the route added to the router tree?");
        let r = rank(
            &[
                result(
                    Purpose::Defs,
                    &[
                        ("CHANGELOG.md", 3, "func addRoute is now faster"),
                        ("tree.go", 135, "func (n *node) addRoute(path string, handlers HandlersChain) {"),
                        ("tree_test.go", 20, "func TestTreeAddRoute(t *testing.T) {"),
                        ("engine.go", 364, "func (engine *Engine) addRoute(method, path string, handlers HandlersChain) {"),
                    ],
                ),
                result(
                    Purpose::Pairs,
                    &[("docs/doc.md", 9, "add a route to the router tree"), ("tree.go", 140, "\t// add route to tree")],
                ),
            ],
            &q,
        );
        let order: Vec<(&str, u64)> = r.iter().map(|c| (c.file.as_str(), c.line)).collect();
        assert_eq!(order[0], ("tree.go", 135));
        assert_eq!(order[1], ("engine.go", 364));
        let test_pos = order.iter().position(|o| o.0 == "tree_test.go").unwrap();
        let log_pos = order.iter().position(|o| o.0 == "CHANGELOG.md").unwrap();
        assert!(test_pos > 1 && log_pos > test_pos, "{order:?}");
        assert_eq!(r[0].def, Some(("func".into(), "addRoute".into())));
        assert_eq!(r[0].matched, vec!["route".to_string(), "added".to_string()]);
    }

    #[test]
    fn a_named_definition_wins_and_picks_spread_over_files() {
        let q = parse("Where is `url_for` implemented?");
        let r = rank(
            &[result(
                Purpose::Defs,
                &[
                    ("src/app.py", 1102, "    def url_for("),
                    ("src/app.py", 90, "    url_for_helper = None"),
                    ("src/helpers.py", 200, "def url_for("),
                    ("src/routing.py", 5, "def build_url(endpoint):"),
                ],
            )],
            &q,
        );
        let p = picks(&r, 3, 5);
        let files: Vec<&str> = p.iter().map(|c| c.file.as_str()).collect();
        assert_eq!(
            files[..3],
            ["src/app.py", "src/helpers.py", "src/routing.py"]
        );
        assert_eq!((p[0].line, p[1].line), (1102, 200));
    }

    #[test]
    fn priors() {
        let q = parse("where is the parser");
        assert_eq!(prior("src/parser.rs", &q), 1.0);
        assert_eq!(prior("tests/test_parser.py", &q), 0.35);
        assert_eq!(prior("CHANGES.rst", &q), 0.1);
        assert_eq!(prior("docs/parser.md", &q), 0.25);
        assert_eq!(prior("examples/parse.go", &q), 0.5);
        assert_eq!(prior("python/pkg/_core.pyi", &q), 0.6);
        let q = parse("which tests cover the parser");
        assert_eq!(prior("tests/test_parser.py", &q), 1.0);
    }
}
