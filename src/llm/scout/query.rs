//! What the scout searches for: the identifiers a question names, and its keywords (sub-words of
//! identifiers and plain words, lightly stemmed, with the abbreviations a code reader would try).

pub(crate) use crate::index::text::stem;
pub(crate) use crate::index::words::split_words;
use crate::index::words::{aliases, has_word, is_identifier, words, PHRASES, STOPWORDS};

/// Words of a task the scout's keyword searches skip beside the shared stop words
/// ([`crate::index::words::STOPWORDS`]): code words too common in tasks to search for.
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

/// Stopwords that are commands at the start of a task ("Find the parser") but content later
/// ("how does the CLI find the app", "where is the file read").
const IMPERATIVES: &[&str] = &[
    "find", "read", "search", "show", "list", "look", "load", "describe", "explain",
];

/// Words too common in code to rank by on their own (they still count, at half weight).
const GENERIC: &[&str] = &[
    "get", "set", "new", "add", "make", "build", "built", "create", "value", "values", "data",
    "type", "types", "object", "call", "called", "run", "check", "name", "line", "lines", "path",
    "time", "string", "number", "default", "handle", "handler", "item", "items", "result",
    "results", "error", "errors", "option", "options", "config", "test", "tests", "util", "utils",
    "base", "core", "common", "info", "state", "list", "map", "one", "first", "last",
    // Verbs that say something happens, not what.
    "determin", "perform", "honour", "honor", "decid", "happen", "occur", "done", "need",
];

/// Most terms [`terms`] returns.
const MAX_TERMS: usize = 5;
/// Most keywords one search uses.
pub(crate) const MAX_KEYWORDS: usize = 6;

/// One keyword of a question.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Keyword {
    /// The word as asked, lowercased.
    pub(crate) word: String,
    /// What a name must start with (or contain) to match: the stem and its aliases.
    pub(crate) forms: Vec<String>,
    /// How much a match counts (rare, named words more; generic words less).
    pub(crate) weight: f64,
}

impl Keyword {
    /// The regex alternation of the forms (they are `[a-z0-9]` only, so no escaping).
    pub(crate) fn regex(&self) -> String {
        if self.forms.len() == 1 {
            self.forms[0].clone()
        } else {
            format!("(?:{})", self.forms.join("|"))
        }
    }

    /// Whether one lowercase sub-word of a name matches: it is a form plus an inflection
    /// (`rout` → route, router, routing; not `glob` → global), or holds a long form.
    pub(crate) fn matches_part(&self, part: &str) -> bool {
        self.forms.iter().any(|f| {
            part.strip_prefix(f.as_str())
                .is_some_and(|rest| inflection(f, rest))
                || (f.len() >= 6 && part.contains(f.as_str()))
                || (part.len() >= 3 && f.starts_with(part) && f.len() <= part.len() + 2)
        })
    }

    /// Whether a name (split into sub-words) matches.
    pub(crate) fn matches_name(&self, name: &str) -> bool {
        let parts = split_words(name);
        parts.iter().any(|p| self.matches_part(p))
            || self
                .forms
                .iter()
                .any(|f| f.len() >= 4 && name.to_lowercase().contains(f.as_str()))
    }

    /// Whether a line of text mentions it (case-insensitive substring of any form).
    pub(crate) fn in_text(&self, lowered: &str) -> bool {
        self.forms.iter().any(|f| lowered.contains(f.as_str()))
    }
}

/// Endings that inflect or derive a word without changing what it names.
const INFLECTIONS: &[&str] = &[
    "", "s", "es", "e", "ed", "d", "er", "ers", "r", "or", "ors", "ing", "ings", "ion", "ions",
    "ation", "ations", "y", "ies", "ied", "ment", "ments", "able", "ize", "izer", "ise", "iser",
    "ly", "ity", "ive",
];

fn inflection(form: &str, rest: &str) -> bool {
    if INFLECTIONS.contains(&rest) {
        return true;
    }
    // A doubled final consonant: run → running, map → mapped.
    let last = form.chars().last();
    let mut chars = rest.chars();
    chars.next() == last && INFLECTIONS.contains(&chars.as_str()) && !rest.is_empty()
}

/// The kinds of definition a question asks for ("which class ...").
pub(crate) const TYPE_KINDS: &[&str] = &[
    "class",
    "struct",
    "enum",
    "trait",
    "type",
    "interface",
    "impl",
];
/// Function kinds.
pub(crate) const FN_KINDS: &[&str] = &["def", "fn", "func", "function"];

/// A question, read for searching.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Query {
    /// Identifiers the question names (back-ticked, quoted, snake_case, CamelCase, UPPER_CASE).
    pub(crate) named: Vec<String>,
    /// Keywords, best first.
    pub(crate) keywords: Vec<Keyword>,
    /// The question is about tests.
    pub(crate) wants_tests: bool,
    /// The question is about documentation or the changelog.
    pub(crate) wants_docs: bool,
    /// The question is about examples.
    pub(crate) wants_examples: bool,
    /// The kinds of definition the question asks for, if it says.
    pub(crate) kinds: Option<&'static [&'static str]>,
}

impl Query {
    /// The keywords the searches use.
    pub(crate) fn search_keywords(&self) -> &[Keyword] {
        &self.keywords[..self.keywords.len().min(MAX_KEYWORDS)]
    }
}

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

/// Read a question.
pub(crate) fn parse(task: &str) -> Query {
    let body = task_body(task);
    let lowered = body.to_lowercase();
    let mut q = Query {
        wants_tests: ["test", "tests", "testing", "spec", "fixture"]
            .iter()
            .any(|w| has_word(&lowered, w)),
        wants_docs: ["doc", "docs", "documentation", "changelog", "readme"]
            .iter()
            .any(|w| has_word(&lowered, w)),
        wants_examples: ["example", "examples", "sample"]
            .iter()
            .any(|w| has_word(&lowered, w)),
        kinds: if ["class", "struct", "type", "enum", "trait", "interface"]
            .iter()
            .any(|w| has_word(&lowered, w))
        {
            Some(TYPE_KINDS)
        } else if ["function", "method", "func"]
            .iter()
            .any(|w| has_word(&lowered, w))
        {
            Some(FN_KINDS)
        } else {
            None
        },
        ..Default::default()
    };
    // Named identifiers: quoted words and identifier-shaped words.
    for (i, part) in body.split(['`', '"']).enumerate() {
        let part = part.trim().trim_end_matches("()");
        if i % 2 == 1 && !part.is_empty() && !part.contains(char::is_whitespace) {
            let clean = part.trim_start_matches(['-', '.', '@', '$']);
            if clean.len() >= 2 && !q.named.iter().any(|n| n == clean) {
                q.named.push(clean.to_string());
            }
        }
    }
    let raw: Vec<&str> = words(body).collect();
    for w in &raw {
        if is_identifier(w) && !q.named.iter().any(|n| n == w) {
            q.named.push(w.to_string());
        }
    }
    let raw_lower: Vec<String> = raw.iter().map(|w| w.to_lowercase()).collect();
    // Keywords in question order, with their weights.
    let mut kws: Vec<(Keyword, usize)> = Vec::new();
    let add =
        |word: &str, named: bool, acronym: bool, pos: usize, kws: &mut Vec<(Keyword, usize)>| {
            let lw = word.to_lowercase();
            let command = pos == 0 || ["please", "you"].contains(&raw_lower[pos - 1].as_str());
            let content_verb = IMPERATIVES.contains(&lw.as_str()) && !command;
            if (is_stopword(&lw) && !content_verb) || lw.chars().all(|c| c.is_ascii_digit()) {
                return;
            }
            if lw.len() < 3 && !(acronym && lw.len() == 2) {
                return;
            }
            let st = stem(&lw);
            if kws.iter().any(|(k, _)| k.forms[0] == st) {
                return;
            }
            let mut forms = vec![st.clone()];
            for a in aliases(&[st.as_str(), lw.as_str()]) {
                if !forms.iter().any(|f| f == a) {
                    forms.push(a.to_string());
                }
            }
            let mut weight = 1.0 + (lw.len().min(10) as f64 - 3.0).max(0.0) * 0.05;
            if named {
                weight += 0.5;
            }
            if GENERIC.contains(&lw.as_str()) || GENERIC.contains(&st.as_str()) {
                weight *= 0.5;
            }
            kws.push((
                Keyword {
                    word: lw,
                    forms,
                    weight,
                },
                pos,
            ));
        };
    for (pos, w) in raw.iter().enumerate() {
        let named = q.named.iter().any(|n| n.contains(w));
        let parts = split_words(w);
        let acronym = w.len() == 2 && w.chars().all(|c| c.is_ascii_uppercase());
        if parts.len() > 1 {
            for p in &parts {
                add(p, true, false, pos, &mut kws);
            }
        } else {
            add(w, named, acronym, pos, &mut kws);
        }
    }
    for (a, b, joined) in PHRASES {
        let words: Vec<String> = raw.iter().map(|w| w.to_lowercase()).collect();
        if let Some(i) = words.windows(2).position(|p| p[0] == *a && p[1] == *b) {
            for (k, _) in &mut kws {
                if k.word == *a && !k.forms.iter().any(|f| f == joined) {
                    k.forms.push(joined.to_string());
                    k.weight += 0.3;
                }
            }
            if !kws.iter().any(|(k, _)| k.word == *a) {
                add(joined, false, false, i, &mut kws);
            }
        }
    }
    // Best first: weight, then question order.
    kws.sort_by(|(a, pa), (b, pb)| b.weight.total_cmp(&a.weight).then(pa.cmp(pb)));
    q.keywords = kws.into_iter().map(|(k, _)| k).collect();
    q
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

    #[test]
    fn stems_cover_inflections() {
        let cases = [
            ("parsing", "pars"),
            ("parsed", "pars"),
            ("parser", "pars"),
            ("proxies", "prox"),
            ("configuration", "configur"),
            ("router", "rout"),
            ("routes", "rout"),
            ("matches", "match"),
            ("files", "file"),
            ("running", "run"),
            ("saved", "sav"),
            ("url", "url"),
            ("cleaned", "clean"),
            ("replacement", "replac"),
        ];
        for (word, want) in cases {
            assert_eq!(stem(word), want, "stem of {word}");
        }
    }

    #[test]
    fn question_keywords_weights_and_aliases() {
        let q = parse("Where is the `GREPPER_CONFIG_PATH` configuration file read?\n\nStructured context:\n{\"x\": \"ignored words\"}");
        assert_eq!(q.named, vec!["GREPPER_CONFIG_PATH"]);
        let words: Vec<&str> = q.keywords.iter().map(|k| k.word.as_str()).collect();
        // "read" ends the question: content, not a command.
        assert_eq!(
            words,
            vec!["grepper", "configuration", "read", "config", "path"]
        );
        let q2 = parse("Find the parser and read it");
        let words2: Vec<&str> = q2.keywords.iter().map(|k| k.word.as_str()).collect();
        assert_eq!(words2, vec!["parser", "read"]);
        assert_eq!(
            q.keywords[1].forms,
            vec!["configur", "config", "conf", "cfg", "setting"]
        );
        assert!(!q.wants_tests && !q.wants_docs);
        let q = parse("Which tests cover the client IP?");
        assert!(q.wants_tests);
        assert!(q.keywords.iter().any(|k| k.word == "ip"));
        let q = parse("When does the searcher use a memory map?");
        let memory = q.keywords.iter().find(|k| k.word == "memory").unwrap();
        assert!(memory.forms.contains(&"mmap".to_string()));
    }

    #[test]
    fn keyword_matching_of_names() {
        let q = parse("Where is the router implemented?");
        let k = &q.keywords[0];
        assert_eq!(k.word, "router");
        assert!(k.matches_name("RouterGroup"));
        assert!(k.matches_name("add_route"));
        assert!(!k.matches_name("parse_request"));
    }
}
