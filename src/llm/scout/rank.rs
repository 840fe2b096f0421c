//! Ranking what the searches found: definitions named after the question's keywords first, in
//! files whose path holds them too, in source rather than tests, docs or changelogs.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::query::{split_words, Query};
use super::search::{definition, Purpose, SearchResult};

/// A place worth citing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// Path relative to the root.
    pub file: String,
    /// 1-based line (1 for a file found by name only).
    pub line: u64,
    /// The line's text, when a search returned it.
    pub text: String,
    /// `(kind, name)` when the line is a definition.
    pub def: Option<(String, String)>,
    /// The keywords (their words) the name, or else the line, matched.
    pub matched: Vec<String>,
    /// Higher is better.
    pub score: f64,
}

/// How a file's path sets its weight: tests, docs, changelogs and examples rank below source
/// unless the question asks for them.
pub fn prior(path: &str, q: &Query) -> f64 {
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
    let code = super::search::CODE_GLOB
        .trim_start_matches("*.{")
        .trim_end_matches('}')
        .split(',')
        .any(|e| e == ext);
    if code {
        1.0
    } else {
        0.5
    }
}

/// Keyword indices that a path's folders and file name match.
fn path_keywords(path: &str, q: &Query) -> BTreeSet<usize> {
    let parts: Vec<String> = path
        .split('/')
        .flat_map(|seg| {
            let stem = seg.split('.').next().unwrap_or(seg);
            split_words(stem)
        })
        .collect();
    q.search_keywords()
        .iter()
        .enumerate()
        .filter(|(_, k)| parts.iter().any(|p| k.matches_part(p)))
        .map(|(i, _)| i)
        .collect()
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

fn normalized(name: &str) -> String {
    name.chars()
        .filter(|c| *c != '_' && *c != '$')
        .flat_map(char::to_lowercase)
        .collect()
}

fn kind_weight(kind: &str) -> f64 {
    match kind {
        "let" | "var" | "val" | "const" | "static" => 0.3,
        "mod" | "module" => 0.5,
        _ => 1.0,
    }
}

/// Candidates from the searches, best first.
pub fn rank(results: &[SearchResult], q: &Query) -> Vec<Candidate> {
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
        if purposes.contains(&Purpose::Pairs) {
            pair_lines.entry(file.clone()).or_default().push(*line);
        }
    }
    let mut out = Vec::new();
    for ((file, line), (text, _)) in &lines {
        let pk = path_keywords(file, q);
        let fk = file_kws.get(file).cloned().unwrap_or_default();
        let lk = line_keywords(text, q);
        let def = definition(text);
        let (score, matched) = match &def {
            Some((kind, name)) => {
                let nk: BTreeSet<usize> = kws
                    .iter()
                    .enumerate()
                    .filter(|(_, k)| k.matches_name(name))
                    .map(|(i, _)| i)
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
                let rest_path: BTreeSet<usize> = pk.difference(&nk).copied().collect();
                let rest_file: BTreeSet<usize> = fk
                    .difference(&nk)
                    .filter(|i| !pk.contains(i))
                    .copied()
                    .collect();
                let s = 3.0 * weight(&nk, q)
                    + if all { 2.0 } else { 0.0 }
                    + if exact { 6.0 } else { 0.0 }
                    + focus
                    + kind_weight(kind)
                    + 0.8 * weight(&rest_path, q)
                    + 0.4 * weight(&rest_file, q)
                    + 0.6 * body_pairs;
                let s = if nk.is_empty() { s * 0.4 } else { s };
                (s, nk)
            }
            None => {
                let exact = q.named.iter().any(|n| text.contains(n.as_str()));
                let rest_path: BTreeSet<usize> = pk.difference(&lk).copied().collect();
                let rest_file: BTreeSet<usize> = fk
                    .difference(&lk)
                    .filter(|i| !pk.contains(i))
                    .copied()
                    .collect();
                let s = 1.6 * weight(&lk, q)
                    + if exact { 2.5 } else { 0.0 }
                    + 0.8 * weight(&rest_path, q)
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
        let pk = path_keywords(p, q);
        if pk.is_empty() {
            continue;
        }
        out.push(Candidate {
            file: p.clone(),
            line: 1,
            text: String::new(),
            def: None,
            matched: pk.iter().map(|&i| kws[i].word.clone()).collect(),
            score: 1.2 * weight(&pk, q) * prior(p, q),
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

/// The candidates to cite, in order: the best of each of the first `spread` files, then the
/// rest by score; at most `n`.
pub fn picks(ranked: &[Candidate], spread: usize, n: usize) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = Vec::new();
    for c in ranked {
        if out.len() >= spread {
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
        if !out.iter().any(|o| o.file == c.file && o.line == c.line) {
            out.push(c.clone());
        }
    }
    out.truncate(n);
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
                        ("gin.go", 364, "func (engine *Engine) addRoute(method, path string, handlers HandlersChain) {"),
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
        assert_eq!(order[1], ("gin.go", 364));
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
        let q = parse("which tests cover the parser");
        assert_eq!(prior("tests/test_parser.py", &q), 1.0);
    }
}
