//! What a child saw in this run: the lines of each file that a Read window showed, a Grep
//! returned (a match or a context line) or a Search showed of a place. Evidence counts as grounded only for lines seen here:
//! a line that exists but was never shown to the child is `unobserved`.

use std::collections::BTreeMap;

use serde_json::Value;

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
    /// Record what one tool result showed (as it went to the model, after output budgets).
    pub fn record(&mut self, tool: &str, result: &Value) {
        if result["status"].as_str() == Some("error") {
            return;
        }
        let data = &result["data"];
        match tool {
            "Read" => {
                let Some(path) = result["context"]["path_resolved"].as_str() else {
                    return;
                };
                let Some(content) = data["content"].as_str() else {
                    return;
                };
                let path = normalize(path);
                for line in content.lines() {
                    if let Some((n, text)) = line
                        .split_once(" | ")
                        .and_then(|(n, t)| Some((n.trim().parse::<u64>().ok()?, t)))
                    {
                        self.add(&path, n, n);
                        self.add_words(text);
                    }
                }
            }
            "Grep" => {
                for m in data["matches"].as_array().into_iter().flatten() {
                    let (Some(file), Some(line)) = (m["file"].as_str(), m["line"].as_u64()) else {
                        continue;
                    };
                    let path = normalize(file);
                    let before = m["before"].as_array().map_or(0, Vec::len) as u64;
                    let after = m["after"].as_array().map_or(0, Vec::len) as u64;
                    self.add(&path, line.saturating_sub(before).max(1), line + after);
                    for context in ["before", "after"] {
                        for c in m[context].as_array().into_iter().flatten() {
                            let text = c.as_str().or_else(|| c["text"].as_str());
                            self.add_words(text.unwrap_or_default());
                        }
                    }
                    self.add_words(m["text"].as_str().unwrap_or_default());
                    if self.hits.len() < MAX_HITS {
                        let text = m["text"].as_str().unwrap_or_default();
                        self.hits
                            .push((path, line, text.chars().take(200).collect()));
                    }
                }
            }
            "Search" => {
                for h in data["hits"].as_array().into_iter().flatten() {
                    let Some(file) = h["file"].as_str() else {
                        continue;
                    };
                    let path = normalize(file);
                    for l in h["lines"].as_array().into_iter().flatten() {
                        if let Some(n) = l["line"].as_u64() {
                            self.add(&path, n, n);
                            self.add_words(l["text"].as_str().unwrap_or_default());
                        }
                    }
                }
            }
            _ => {}
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
        let ranges = self.lines.entry(path.to_string()).or_default();
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn read_windows_and_grep_matches_with_context_are_seen() {
        let mut o = Observed::default();
        o.record(
            "Read",
            &json!({"status": "success", "data": {"content": "  10 | a\n  11 | b\n  12 | c\n"},
                    "context": {"path_resolved": "./src/lib.rs"}}),
        );
        o.record(
            "Grep",
            &json!({"status": "success", "data": {"matches": [
                {"file": "src/main.rs", "line": 40, "text": "fn main() {", "before": ["x", "y"], "after": ["z"]}]}}),
        );
        o.record(
            "Read",
            &json!({"status": "error", "data": {"content": "   1 | secret\n"},
                    "context": {"path_resolved": "src/err.rs"}}),
        );
        assert!(o.saw("src/lib.rs", 11) && o.saw("./src//lib.rs", 12));
        assert!(!o.saw("src/lib.rs", 9) && !o.saw("src/lib.rs", 13));
        assert!(o.saw_range("src/main.rs", 38, 41));
        assert!(!o.saw_range("src/main.rs", 38, 42));
        assert!(!o.saw("src/err.rs", 1), "an error result shows nothing");
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
    fn adjacent_windows_merge() {
        let mut o = Observed::default();
        o.add("a", 1, 5);
        o.add("a", 6, 9);
        o.add("a", 20, 30);
        o.add("a", 3, 4);
        assert_eq!(o.lines["a"], [(1, 9), (20, 30)]);
    }
}
