//! What a child saw in this run: the lines of each file that a Read window showed, a Grep
//! returned (a match or a context line) or a Search showed of a place. Evidence counts as grounded only for lines seen here:
//! a line that exists but was never shown to the child is `unobserved`.

use std::collections::BTreeMap;

use crate::tools::envelope::{ToolResult, ToolStatus};
use crate::tools::shown::Shown;

/// The most places kept for a partial answer built without the model.
const MAX_HITS: usize = 64;
/// The most distinct words kept of the lines seen (a run reads a few thousand lines; this
/// bounds a hostile tree's).
const MAX_WORDS: usize = 200_000;

/// Lines seen per file (merged inclusive ranges), the Grep matches in the order seen, and the
/// words of the lines seen (identifiers, numbers, the parts of the paths seen).
#[derive(Debug, Clone, Default)]
pub struct Observed {
    lines: BTreeMap<String, Vec<(u64, u64)>>,
    /// The lines a Read window or a Search place showed (a subset of `lines`): code read in
    /// context, not only matched.
    read: BTreeMap<String, Vec<(u64, u64)>>,
    hits: Vec<(String, u64, String)>,
    words: std::collections::HashSet<String>,
}

/// The words of `text`: runs of letters, digits and `_`.
pub(crate) fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
}

/// A path as the child may write it, reduced to one spelling: no `./`, no empty or `.`
/// components, `/` separators.
pub fn normalize(path: &str) -> String {
    path.split(['/', '\\'])
        .filter(|p| !p.is_empty() && *p != ".")
        .collect::<Vec<_>>()
        .join("/")
}

impl Observed {
    /// Record what one tool result showed (as it went to the model, after output budgets),
    /// from the values kept beside its text: a Read window's lines, Grep's matches and their
    /// context, the lines a Search showed of each place. An error or a result cut to fit
    /// shows nothing.
    pub fn record(&mut self, result: &ToolResult) {
        if result.status == ToolStatus::Error {
            return;
        }
        match &result.shown {
            Shown::Lines { path, lines } => {
                let path = normalize(path);
                for (n, text) in lines {
                    self.add(&path, *n, *n);
                    self.add_words(text);
                }
                if let (Some((first, _)), Some((last, _))) = (lines.first(), lines.last()) {
                    merge_into(self.read.entry(path).or_default(), *first, *last);
                }
            }
            Shown::Matches(matches) => {
                for m in matches {
                    let path = normalize(&m.file);
                    let (before, after) = (m.before.len() as u64, m.after.len() as u64);
                    self.add(&path, m.line.saturating_sub(before).max(1), m.line + after);
                    for text in m.before.iter().chain(&m.after) {
                        self.add_words(text);
                    }
                    self.add_words(&m.text);
                    if self.hits.len() < MAX_HITS {
                        let text = m.text.chars().take(200).collect();
                        self.hits.push((path, m.line, text));
                    }
                }
            }
            Shown::Places(places) => {
                // A place's lines are its code in context (a definition or a block), like a
                // Read window's.
                for place in places {
                    let path = normalize(&place.file);
                    for (n, text) in &place.lines {
                        self.add(&path, *n, *n);
                        self.add_words(text);
                    }
                    if let (Some((first, _)), Some((last, _))) =
                        (place.lines.first(), place.lines.last())
                    {
                        merge_into(self.read.entry(path).or_default(), *first, *last);
                    }
                }
            }
            Shown::Paths(_) | Shown::Nothing => {}
        }
    }

    fn add_words(&mut self, text: &str) {
        for w in words(text) {
            if self.words.len() >= MAX_WORDS {
                return;
            }
            if !self.words.contains(w) {
                self.words.insert(w.to_string());
            }
        }
    }

    /// Whether `word` is a word of a line the child saw, or a part of a path it saw (a file
    /// name, a directory).
    pub fn saw_word(&self, word: &str) -> bool {
        self.words.contains(word)
            || self
                .lines
                .keys()
                .any(|p| p.split('/').any(|part| part == word) || words(p).any(|w| w == word))
    }

    fn add(&mut self, path: &str, start: u64, end: u64) {
        merge_into(self.lines.entry(path.to_string()).or_default(), start, end);
    }

    /// Whether a Read window or a Search place showed any line of `start..=end` of `path` (the
    /// child read code there in context, not only Grep's matched lines).
    pub fn read_any(&self, path: &str, start: u64, end: u64) -> bool {
        self.read
            .get(&normalize(path))
            .is_some_and(|r| r.iter().any(|&(s, e)| s <= end && start <= e))
    }

    /// Whether the child saw line `line` of `path`.
    #[cfg(test)]
    pub fn saw(&self, path: &str, line: u64) -> bool {
        self.lines
            .get(&normalize(path))
            .is_some_and(|r| r.iter().any(|&(s, e)| s <= line && line <= e))
    }

    /// Whether the child saw every line of the cited range `start..=end` of `path`.
    pub fn saw_range(&self, path: &str, start: u64, end: u64) -> bool {
        self.lines
            .get(&normalize(path))
            .is_some_and(|r| r.iter().any(|&(s, e)| s <= start && end <= e))
    }

    /// The part of `start..=end` of `path` the child saw, when it saw some (the first seen
    /// stretch that overlaps it, cut to it).
    pub fn seen_part(&self, path: &str, start: u64, end: u64) -> Option<(u64, u64)> {
        self.lines
            .get(&normalize(path))?
            .iter()
            .find_map(|&(s, e)| (s <= end && start <= e).then_some((s.max(start), e.min(end))))
    }

    /// The stretches of `path` the child saw, as `path:start-end` (`path:line` for one line),
    /// at most `n`, in line order.
    pub fn seen_of(&self, path: &str, n: usize) -> Vec<String> {
        let path = normalize(path);
        self.lines
            .get(&path)
            .into_iter()
            .flatten()
            .take(n)
            .map(|&(s, e)| crate::evidence::citation(&path, s, e))
            .collect()
    }

    /// Whether the child saw anything at all.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The Grep matches seen, in order (path, line, text), at most a few dozen.
    pub fn hits(&self) -> &[(String, u64, String)] {
        &self.hits
    }

    /// What was seen, as `path:start-end` ranges (`path:line` for one line), at most `n`, the
    /// largest first.
    pub fn ranges(&self, n: usize) -> Vec<String> {
        let mut all: Vec<(&String, u64, u64)> = self
            .lines
            .iter()
            .flat_map(|(p, r)| r.iter().map(move |&(s, e)| (p, s, e)))
            .collect();
        all.sort_by_key(|&(p, s, e)| (std::cmp::Reverse(e - s), p.clone(), s));
        all.into_iter()
            .take(n)
            .map(|(p, s, e)| crate::evidence::citation(p, s, e))
            .collect()
    }

    /// The files seen, each with its first seen line, in path order.
    pub fn files(&self) -> Vec<(String, u64)> {
        self.lines
            .iter()
            .filter_map(|(p, r)| r.first().map(|&(s, _)| (p.clone(), s)))
            .collect()
    }
}

/// Add `start..=end` to sorted, merged `ranges`, keeping them sorted and merged.
fn merge_into(ranges: &mut Vec<(u64, u64)>, start: u64, end: u64) {
    ranges.push((start, end));
    ranges.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
    for &(s, e) in ranges.iter() {
        match merged.last_mut() {
            Some(last) if s <= last.1.saturating_add(1) => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    *ranges = merged;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::shown::GrepMatch;

    fn result(shown: Shown) -> ToolResult {
        ToolResult::success(&serde_json::json!({}), serde_json::Map::new(), "", 1).with_shown(shown)
    }

    fn window(path: &str, lines: &[(u64, &str)]) -> Shown {
        Shown::Lines {
            path: path.into(),
            lines: lines.iter().map(|(n, t)| (*n, (*t).to_string())).collect(),
        }
    }

    #[test]
    fn read_windows_and_grep_matches_with_context_are_seen() {
        let mut o = Observed::default();
        o.record(&result(window(
            "./src/lib.rs",
            &[(10, "a"), (11, "b"), (12, "c")],
        )));
        o.record(&result(Shown::Matches(vec![GrepMatch {
            file: "src/main.rs".into(),
            line: 40,
            text: "fn main() {".into(),
            before: vec!["x".into(), "y".into()],
            after: vec!["z".into()],
        }])));
        let mut failed = ToolResult::error(
            &serde_json::json!({}),
            crate::tools::envelope::ErrorCode::NotFound,
            "gone",
            0,
        );
        failed.shown = window("src/err.rs", &[(1, "secret")]);
        o.record(&failed);
        assert!(o.saw("src/lib.rs", 11) && o.saw("./src//lib.rs", 12));
        assert!(!o.saw("src/lib.rs", 9) && !o.saw("src/lib.rs", 13));
        assert!(o.saw_range("src/main.rs", 38, 41));
        assert!(!o.saw_range("src/main.rs", 38, 42));
        assert!(!o.saw("src/err.rs", 1), "an error result shows nothing");
        // Only a Read window counts as code read in context, not a match with its context.
        assert!(o.read_any("./src/lib.rs", 12, 30) && !o.read_any("src/lib.rs", 13, 30));
        assert!(!o.read_any("src/main.rs", 38, 41));
        assert!(o.saw_word("main") && o.saw_word("z") && !o.saw_word("secret"));
        assert_eq!(
            o.hits(),
            [("src/main.rs".to_string(), 40, "fn main() {".to_string())]
        );
        assert_eq!(o.ranges(2), ["src/main.rs:38-41", "src/lib.rs:10-12"]);
        assert_eq!(
            o.files(),
            [
                ("src/lib.rs".to_string(), 10),
                ("src/main.rs".to_string(), 38)
            ]
        );
    }

    #[test]
    fn what_the_tools_return_is_read_back_as_values_never_from_the_text() {
        use crate::tools::context::ToolContext;
        use crate::tools::permissions::PermissionContext;
        use crate::tools::registry::ToolRegistry;
        use crate::tools::workspace::Workspace;
        let dir = tempfile::tempdir().unwrap();
        // A line that looks like a Read line inside the file, and one over Read's line limit.
        std::fs::write(
            dir.path().join("a.py"),
            "x = 1\n  99 | fake\ndef f():\n    return 2\n",
        )
        .unwrap();
        let ctx = ToolContext::new(Workspace::new(dir.path()).unwrap());
        let perms = PermissionContext::readonly_subagent();
        let registry = ToolRegistry::readonly();
        let mut o = Observed::default();
        let read = registry.execute(
            "Read",
            r#"{"path": "a.py", "start_line": 2, "limit": 2}"#,
            &ctx,
            &perms,
        );
        assert_eq!(
            read.shown,
            window("a.py", &[(2, "  99 | fake"), (3, "def f():")])
        );
        o.record(&read);
        assert!(o.saw("a.py", 2) && o.saw("a.py", 3) && !o.saw("a.py", 99) && !o.saw("a.py", 4));
        let grep = registry.execute("Grep", r#"{"pattern": "return"}"#, &ctx, &perms);
        o.record(&grep);
        assert!(o.saw("a.py", 4));
        // A result cut to fit the output budget shows nothing: the model saw only a preview.
        let cut = crate::tools::budget::OutputBudget {
            max_result_bytes: 10,
            ..Default::default()
        }
        .apply("Read", read);
        assert_eq!(cut.shown, Shown::Nothing);
        let glob = registry.execute("Glob", r#"{"pattern": "*.py"}"#, &ctx, &perms);
        assert_eq!(glob.shown, Shown::Paths(vec!["a.py".into()]));
    }

    #[test]
    fn adjacent_windows_merge() {
        let mut o = Observed::default();
        o.add("a", 1, 5);
        o.add("a", 6, 9);
        o.add("a", 20, 30);
        o.add("a", 3, 4);
        assert_eq!(o.lines["a"], [(1, 9), (20, 30)]);
    }
}
