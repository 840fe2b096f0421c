//! The one vocabulary of questions about code, shared by the index's ranking
//! ([`super::rank`]) and the offline scout: how text splits into words and identifiers into
//! sub-words, the words that only frame a question, the abbreviations and near-synonyms code
//! spells a word with, and the two-word phrases code spells as one name.
//!
//! Every entry here is a general fact of English or of naming in code, not a fit to any one
//! question.

/// Words that frame a question rather than name what it is about.
pub(crate) const STOPWORDS: &[&str] = &[
    "a",
    "about",
    "actually",
    "after",
    "all",
    "also",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "been",
    "before",
    "being",
    "between",
    "both",
    "but",
    "by",
    "can",
    "class",
    "classes",
    "code",
    "codebase",
    "could",
    "define",
    "defined",
    "definition",
    "definitions",
    "describe",
    "did",
    "do",
    "does",
    "done",
    "each",
    "every",
    "exactly",
    "explain",
    "explore",
    "file",
    "files",
    "find",
    "for",
    "from",
    "function",
    "functions",
    "get",
    "gets",
    "give",
    "happen",
    "happens",
    "has",
    "have",
    "here",
    "how",
    "i",
    "if",
    "implement",
    "implementation",
    "implemented",
    "implements",
    "in",
    "into",
    "is",
    "it",
    "it's",
    "its",
    "kept",
    "let",
    "lives",
    "located",
    "location",
    "logic",
    "look",
    "looks",
    "many",
    "me",
    "method",
    "methods",
    "much",
    "my",
    "of",
    "on",
    "one",
    "onto",
    "or",
    "other",
    "our",
    "out",
    "place",
    "places",
    "please",
    "project",
    "relevant",
    "repository",
    "responsible",
    "should",
    "show",
    "so",
    "some",
    "such",
    "summarize",
    "summary",
    "tell",
    "than",
    "that",
    "the",
    "their",
    "them",
    "then",
    "there",
    "these",
    "they",
    "thing",
    "things",
    "this",
    "those",
    "through",
    "to",
    "up",
    "use",
    "used",
    "uses",
    "using",
    "via",
    "was",
    "way",
    "ways",
    "we",
    "were",
    "what",
    "when",
    "where",
    "whether",
    "which",
    "while",
    "who",
    "whose",
    "why",
    "will",
    "with",
    "within",
    "work",
    "works",
    "would",
    "you",
    "your",
];

/// Words a question uses and the shorter or other words code spells them with: an entry
/// applies to a lowercase word that starts with its first element.
pub(crate) const ALIASES: &[(&str, &[&str])] = &[
    ("config", &["config", "conf", "cfg", "setting"]),
    ("setting", &["config", "conf"]),
    ("authentic", &["auth"]),
    ("authoriz", &["auth"]),
    ("credential", &["auth", "password", "token"]),
    ("director", &["dir"]),
    ("folder", &["dir"]),
    ("initializ", &["init"]),
    ("initialis", &["init"]),
    ("argument", &["arg", "args"]),
    ("paramet", &["param", "params"]),
    ("request", &["req"]),
    ("respons", &["resp", "res"]),
    ("messag", &["msg"]),
    ("error", &["err"]),
    ("exception", &["exc", "error", "err"]),
    ("databas", &["db"]),
    ("connect", &["conn"]),
    ("environ", &["env", "environ"]),
    ("variabl", &["var"]),
    ("value", &["val"]),
    ("temporar", &["tmp", "temp"]),
    ("attribut", &["attr"]),
    ("referenc", &["ref"]),
    ("informat", &["info"]),
    ("statistic", &["stats", "stat"]),
    ("document", &["doc"]),
    ("applicat", &["app"]),
    ("serializ", &["encode", "marshal", "dump"]),
    ("deserializ", &["decode", "unmarshal", "load"]),
    ("delet", &["remove", "del"]),
    ("remov", &["delete", "del"]),
    ("start", &["run", "launch"]),
    ("regular", &["regex"]),
    ("expression", &["expr"]),
    ("command", &["cmd"]),
    ("templat", &["tmpl", "tpl"]),
    ("function", &["func", "fn"]),
    ("librar", &["lib"]),
    ("execut", &["exec", "run"]),
    ("generat", &["gen"]),
    ("calculat", &["calc", "compute"]),
    ("position", &["pos"]),
    ("index", &["idx"]),
    ("buffer", &["buf"]),
    ("memor", &["mem"]),
    ("certificat", &["cert"]),
    ("password", &["passwd", "pwd"]),
    ("synchron", &["sync"]),
    ("asynchron", &["async"]),
    ("compar", &["equal", "cmp", "eq"]),
    ("number", &["num"]),
    ("string", &["str"]),
    ("character", &["char"]),
    ("length", &["len"]),
    ("maximum", &["max"]),
    ("minimum", &["min"]),
    ("previous", &["prev"]),
    ("current", &["cur"]),
    ("destination", &["dst", "dest"]),
    ("source", &["src"]),
    ("address", &["addr"]),
    ("transaction", &["tx", "txn"]),
    ("specification", &["spec"]),
    ("dictionary", &["dict", "map"]),
    ("callback", &["hook"]),
    ("hook", &["callback"]),
];

/// Two words (lowercase) code spells as one name.
pub(crate) const PHRASES: &[(&str, &str, &str)] = &[
    ("command", "line", "cli"),
    ("regular", "expression", "regex"),
    ("look", "up", "lookup"),
    ("set", "up", "setup"),
    ("shut", "down", "shutdown"),
    ("memory", "map", "mmap"),
    ("not", "found", "notfound"),
];

/// The aliases of a lowercase word (of any of `words`: a word and its stem), in table order,
/// repeats included.
pub(crate) fn aliases<'w>(words: &'w [&'w str]) -> impl Iterator<Item = &'static str> + 'w {
    ALIASES
        .iter()
        .filter(move |(prefix, _)| words.iter().any(|w| w.starts_with(prefix)))
        .flat_map(|(_, others)| others.iter().copied())
}

/// The words of `text` (runs of letters, digits and `_`), each with its byte offset.
pub(crate) fn word_spans(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    for (at, c) in text.char_indices().chain([(text.len(), ' ')]) {
        let inside = c.is_alphanumeric() || c == '_';
        match (inside, start) {
            (true, None) => start = Some(at),
            (false, Some(from)) => {
                out.push((from, &text[from..at]));
                start = None;
            }
            _ => {}
        }
    }
    out
}

/// The words of `text` (runs of letters, digits and `_`), in order.
pub(crate) fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
}

/// Whether lowercase `text` holds `word` as a whole alphanumeric word.
pub(crate) fn has_word(text: &str, word: &str) -> bool {
    text.split(|c: char| !c.is_alphanumeric())
        .any(|w| w == word)
}

/// snake_case, camelCase, CamelCase, UPPER_CASE: a name, not a word.
pub(crate) fn is_identifier(w: &str) -> bool {
    w.chars().any(char::is_alphabetic)
        && (w.trim_matches('_').contains('_')
            || w.chars().skip(1).any(char::is_uppercase) && w.chars().any(char::is_lowercase))
}

/// Split a name into lowercase sub-words at camelCase, snake_case and letter-after-digits
/// boundaries: `parseHTTPRequest_v2` → parse, http, request, v2.
pub(crate) fn split_words(name: &str) -> Vec<String> {
    if name.is_ascii() {
        return split_ascii_words(name.as_bytes());
    }
    split_words_by_char(name)
}

/// [`split_words`] of an ASCII name, byte by byte (the same boundaries, no `char` buffer):
/// identifiers are ASCII in most code, and splitting them is a large share of a cold build.
fn split_ascii_words(name: &[u8]) -> Vec<String> {
    let lower = |part: &[u8]| -> String {
        part.iter()
            .map(|b| char::from(b.to_ascii_lowercase()))
            .collect()
    };
    let mut out = Vec::new();
    for chunk in name.split(|b| !b.is_ascii_alphanumeric()) {
        let mut start = 0;
        for i in 1..chunk.len() {
            let (p, c) = (chunk[i - 1], chunk[i]);
            let next = chunk.get(i + 1);
            let boundary = (c.is_ascii_uppercase() && p.is_ascii_lowercase())
                || (c.is_ascii_uppercase()
                    && p.is_ascii_uppercase()
                    && next.is_some_and(u8::is_ascii_lowercase))
                || (c.is_ascii_alphabetic() && p.is_ascii_digit() && i - start > 1);
            if boundary {
                out.push(lower(&chunk[start..i]));
                start = i;
            }
        }
        if start < chunk.len() {
            out.push(lower(&chunk[start..]));
        }
    }
    out
}

/// [`split_words`] of any name, char by char.
fn split_words_by_char(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    for chunk in name.split(|c: char| !c.is_alphanumeric()) {
        let chars: Vec<char> = chunk.chars().collect();
        let mut cur = String::new();
        for (i, &c) in chars.iter().enumerate() {
            let prev = if i > 0 { Some(chars[i - 1]) } else { None };
            let next = chars.get(i + 1).copied();
            let boundary = match prev {
                None => false,
                Some(p) => {
                    (c.is_uppercase() && p.is_lowercase())
                        || (c.is_uppercase()
                            && p.is_uppercase()
                            && next.is_some_and(char::is_lowercase))
                        || (c.is_alphabetic() && p.is_ascii_digit() && cur.len() > 1)
                }
            };
            if boundary && !cur.is_empty() {
                out.push(std::mem::take(&mut cur).to_lowercase());
            }
            cur.push(c);
        }
        if !cur.is_empty() {
            out.push(cur.to_lowercase());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_names_split_as_any_name_does() {
        let fixed = [
            "parseHTTPRequest_v2",
            "getAdapter",
            "HTTP2Server",
            "x86_64",
            "0x1234abcd",
            "__init__",
            "ABCdef",
            "a1b2c3",
            "v1beta2",
            "IMessagePackFormatter",
            "",
            "_",
            "a",
            "Ab",
            "aB",
            "AB",
            "99bottles",
            "set_join_waker",
        ];
        let alphabet = b"aAzZbB09_-.:xX";
        let mut rng = fastrand::Rng::with_seed(35);
        let random = (0..20_000).map(|_| {
            let n = rng.usize(0..12);
            (0..n)
                .map(|_| char::from(alphabet[rng.usize(0..alphabet.len())]))
                .collect::<String>()
        });
        for name in fixed.iter().map(|s| (*s).to_string()).chain(random) {
            assert_eq!(
                split_ascii_words(name.as_bytes()),
                split_words_by_char(&name),
                "{name:?}"
            );
        }
    }

    #[test]
    fn names_split_into_sub_words() {
        assert_eq!(
            split_words("parseHTTPRequest_v2"),
            vec!["parse", "http", "request", "v2"]
        );
        assert_eq!(
            split_words("GREPPER_CONFIG_PATH"),
            vec!["grepper", "config", "path"]
        );
        assert_eq!(split_words("JSONSink"), vec!["json", "sink"]);
        assert_eq!(split_words("add_url_rule"), vec!["add", "url", "rule"]);
    }

    #[test]
    fn identifiers_are_told_from_words() {
        for name in [
            "load_config",
            "ConfigLoader",
            "getAdapter",
            "MAX_SIZE",
            "_private_x",
        ] {
            assert!(is_identifier(name), "{name}");
        }
        for word in ["config", "Config", "HTTP", "_x_", "42"] {
            assert!(!is_identifier(word), "{word}");
        }
    }

    #[test]
    fn one_alias_table_without_repeats() {
        let mut prefixes: Vec<&str> = ALIASES.iter().map(|(p, _)| *p).collect();
        prefixes.sort_unstable();
        let n = prefixes.len();
        prefixes.dedup();
        assert_eq!(prefixes.len(), n, "a prefix appears twice");
        let got: Vec<&str> = aliases(&["configuration"]).collect();
        assert_eq!(got, ["config", "conf", "cfg", "setting"]);
        assert_eq!(aliases(&["proxies", "prox"]).count(), 0);
        let spans = word_spans("a `getX`, b_c!");
        assert_eq!(spans, [(0, "a"), (3, "getX"), (10, "b_c")]);
        assert_eq!(
            words("a `getX`, b_c!").collect::<Vec<_>>(),
            ["a", "getX", "b_c"]
        );
        assert!(has_word("where is the cli?", "cli") && !has_word("clients", "cli"));
    }
}
