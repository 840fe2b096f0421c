//! The words of a task a reader would search for ([`terms`], the public helper): identifiers and
//! quoted strings first, then rarer words. The scout itself searches with the index's reading of
//! the question ([`crate::index::rank::parse`]).

use crate::index::words::{words, STOPWORDS};

/// Words of a task [`terms`] skips beside the shared stop words
/// ([`crate::index::words::STOPWORDS`]): code words too common in tasks to be what one is about.
const TASK_WORDS: &[&str] = &[
    "repo",
    "list",
    "return",
    "returns",
    "not",
    "only",
    "key",
    "main",
    "purpose",
    "paths",
    "structured",
    "context",
    "search",
    "read",
    "per",
    "two",
    "live",
    "part",
    "kind",
    "like",
    "handled",
    "over",
    "under",
    "own",
];

/// Most terms [`terms`] returns.
const MAX_TERMS: usize = 5;
/// The task without the launcher's appended structured context.
pub(crate) fn task_body(task: &str) -> &str {
    task.split("\n\nStructured context:").next().unwrap_or(task)
}

fn is_stopword(w: &str) -> bool {
    let w = w.to_lowercase();
    STOPWORDS.contains(&w.as_str()) || TASK_WORDS.contains(&w.as_str())
}

/// Search terms from a task: identifiers and quoted strings first, then rarer (longer) words.
pub fn terms(task: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |t: &str| {
        let t = t.trim_matches(|c: char| !c.is_alphanumeric() && c != '_');
        if t.len() >= 3 && !is_stopword(t) && !out.iter().any(|o| o.eq_ignore_ascii_case(t)) {
            out.push(t.to_string());
        }
    };
    let body = task_body(task);
    // Quoted or back-ticked words are what the user named explicitly.
    for (i, part) in body.split(['`', '"']).enumerate() {
        if i % 2 == 1 && !part.contains(char::is_whitespace) {
            push(part);
        }
    }
    let mut words: Vec<&str> = words(body).collect();
    // Identifiers (snake_case, CamelCase) before plain words; longer before shorter.
    words.sort_by_key(|w| {
        let ident = w.contains('_') || w.chars().skip(1).any(char::is_uppercase);
        (!ident, std::cmp::Reverse(w.len()))
    });
    for w in words {
        push(w);
    }
    out.truncate(MAX_TERMS);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_prefer_named_identifiers() {
        assert_eq!(
            terms("Find where `load_config` is defined and how the ConfigLoader reads YAML files"),
            vec!["load_config", "ConfigLoader", "YAML", "reads"]
        );
        assert_eq!(
            terms("Find `load_config` in ConfigLoader"),
            vec!["load_config", "ConfigLoader"]
        );
        assert!(terms("where is it?").is_empty());
    }
}
