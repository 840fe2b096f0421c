//! The scout's searches: the patterns it sends to Grep and Glob, and the results it reads back
//! from the conversation.

use std::sync::OnceLock;

use regex::Regex;
use serde_json::{json, Value};

use super::query::{Keyword, Query};
use crate::llm::{Message, ToolCall};

/// Source files, by extension: definitions and co-occurring terms are searched only here unless
/// the question asks about documentation (prose repeats the question's words without doing the
/// thing).
pub(crate) const CODE_GLOB: &str = "*.{py,pyi,rs,go,js,jsx,mjs,ts,tsx,java,kt,scala,c,h,cc,cpp,hpp,cs,rb,php,swift,m,lua,ex,exs,hs,ml,dart,zig,sh,vue,svelte}";

/// Whether a path is a source file by [`CODE_GLOB`].
pub(crate) fn is_source(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let Some((_, ext)) = name.rsplit_once('.') else {
        return false;
    };
    CODE_GLOB
        .trim_start_matches("*.{")
        .trim_end_matches('}')
        .split(',')
        .any(|e| e == ext)
}

/// Declaration modifiers that may precede a definition keyword (kept short: the pattern is
/// echoed in every result the model-to-be reads).
const MODS: &str =
    r"(?:pub\S*|export|default|async|static|public|private|protected|unsafe|abstract)";

/// Definition keywords of Python, Rust, Go, JavaScript/TypeScript and their relatives. Go's
/// method receiver and Rust's `impl<..> Trait for` are part of the keyword so the name follows.
const KINDS: &str = r"(?:def|class|fn|struct|enum|trait|type|interface|func(?:\s*\([^)]*\))?|function|mod|macro_rules!|const|let|var|static|impl(?:<[^>]*>)?(?:\s+[\w:<>, ']+?\s+for)?)";

/// Most definitions asked of each keyword's search.
pub(crate) const DEFS_LIMIT: u64 = 8;
/// Most definitions whose name holds two keywords.
pub(crate) const PAIR_DEFS_LIMIT: u64 = 10;
/// Most lines naming an identifier from the question.
pub(crate) const NAMED_LIMIT: u64 = 10;
/// Most file paths.
pub(crate) const PATHS_LIMIT: u64 = 30;
/// Most lines of each search within the likeliest files.
pub(crate) const FOCUS_LIMIT: u64 = 16;
/// Most files the focused searches look in.
pub(crate) const FOCUS_FILES: usize = 6;

/// What a search was for (its tool call id says it).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Purpose {
    /// Definitions whose name holds one keyword (one search per keyword).
    Defs,
    /// Definitions whose name holds two keywords.
    PairDefs,
    /// Lines holding two keywords.
    Pairs,
    /// Lines naming an identifier from the question.
    Named,
    /// File names holding a keyword.
    Paths,
    /// Definitions named after a keyword, in the likeliest files.
    FocusDefs,
    /// Lines holding two keywords, in the likeliest files.
    FocusPairs,
}

const PURPOSES: [Purpose; 7] = [
    Purpose::Defs,
    Purpose::PairDefs,
    Purpose::Pairs,
    Purpose::Named,
    Purpose::Paths,
    Purpose::FocusDefs,
    Purpose::FocusPairs,
];

impl Purpose {
    /// The tool call id (a per-keyword search adds `_<n>`).
    pub(crate) fn id(self) -> &'static str {
        match self {
            Purpose::Defs => "scout_defs",
            Purpose::PairDefs => "scout_pair_defs",
            Purpose::Pairs => "scout_pairs",
            Purpose::Named => "scout_named",
            Purpose::Paths => "scout_paths",
            Purpose::FocusDefs => "scout_focus_defs",
            Purpose::FocusPairs => "scout_focus_pairs",
        }
    }

    fn from_id(id: &str) -> Option<Self> {
        let base = id.trim_end_matches(|c: char| c.is_ascii_digit());
        let base = if base.len() < id.len() {
            base.strip_suffix('_')?
        } else {
            base
        };
        PURPOSES.into_iter().find(|p| p.id() == base)
    }

    /// Whether it returns lines holding two keywords.
    pub(crate) fn is_pairs(self) -> bool {
        matches!(self, Purpose::Pairs | Purpose::FocusPairs)
    }

    /// What the search looked for, for a sentence.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Purpose::Defs => "definitions named after a keyword",
            Purpose::PairDefs => "definitions named after two keywords",
            Purpose::Pairs => "lines holding two keywords",
            Purpose::Named => "lines naming an identifier from the question",
            Purpose::Paths => "file names holding a keyword",
            Purpose::FocusDefs => "definitions named after a keyword in the likeliest files",
            Purpose::FocusPairs => "lines holding two keywords in the likeliest files",
        }
    }
}

/// The regex start of a definition line, up to where its name begins.
pub(crate) fn def_prefix() -> String {
    format!(r"^\s*(?:{MODS}\s+)*{KINDS}\s+[\w$:]*?")
}

fn name_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(&format!(
            r"^\s*(?:{MODS}\s+)*(?P<kind>macro_rules!|(?:def|class|fn|struct|enum|trait|type|interface|func|function|mod|const|let|var|static|impl)\b)\*?(?:\s*\([^)]*\))?(?:<[^>]*>)?(?:\s+mut)?(?:\s+[\w:<>,' ]+?\s+for)?\s+(?:mut\s+)?(?:[\w$]+::)*(?P<name>[\w$]+)"
        ))
        .expect("valid definition regex")
    })
}

/// Names a definition line qualifies its name with: a Go method's receiver type, the trait of a
/// Rust `impl Trait for Type`.
pub(crate) fn qualifiers(line: &str) -> Vec<String> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"^\s*(?:func\s*\(\s*(?:\w+\s+)?\*?(?P<recv>\w+)|(?:pub\S*\s+)?(?:unsafe\s+)?impl(?:<[^>]*>)?\s+(?:[\w]+::)*(?P<tr>\w+)(?:<[^>]*>)?\s+for\b)")
            .expect("valid qualifier regex")
    });
    re.captures(line)
        .map(|c| {
            ["recv", "tr"]
                .iter()
                .filter_map(|g| c.name(g).map(|m| m.as_str().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// The kind and name a line defines, if it is a definition line.
pub(crate) fn definition(line: &str) -> Option<(String, String)> {
    let c = name_re().captures(line)?;
    Some((c["kind"].to_string(), c["name"].to_string()))
}

/// [`definition`], for a line of `file`: only the keywords that language defines with count, so
/// prose such as "function differently" in a Python docstring is not called a definition.
pub(crate) fn definition_in(file: &str, line: &str) -> Option<(String, String)> {
    let (kind, name) = definition(line)?;
    let ext = file.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    let kinds: &[&str] = match ext {
        "py" | "pyi" => &["def", "class"],
        "rs" => &[
            "fn",
            "struct",
            "enum",
            "trait",
            "type",
            "mod",
            "const",
            "static",
            "impl",
            "macro_rules!",
            "let",
        ],
        "go" => &["func", "type", "const", "var"],
        "js" | "jsx" | "mjs" | "cjs" | "ts" | "tsx" | "mts" | "cts" => &[
            "function",
            "class",
            "const",
            "let",
            "var",
            "interface",
            "type",
            "enum",
        ],
        _ => return Some((kind, name)),
    };
    kinds.contains(&kind.as_str()).then_some((kind, name))
}

fn alternation(kws: &[&Keyword]) -> String {
    kws.iter().map(|k| k.regex()).collect::<Vec<_>>().join("|")
}

/// Ordered pairs `A.*B|B.*A` of the first `n` keywords, joined by `sep` (`.*` for a line,
/// `[\w$]*` within a name).
fn pairs(kws: &[Keyword], n: usize, sep: &str) -> Option<String> {
    let top: Vec<&Keyword> = kws.iter().take(n).collect();
    let mut alts = Vec::new();
    for i in 0..top.len() {
        for j in 0..top.len() {
            if i != j {
                alts.push(format!("{}{sep}{}", top[i].regex(), top[j].regex()));
            }
        }
    }
    (!alts.is_empty()).then(|| alts.join("|"))
}

fn grep(purpose: Purpose, args: Value) -> ToolCall {
    grep_n(purpose, None, args)
}

fn grep_n(purpose: Purpose, n: Option<usize>, args: Value) -> ToolCall {
    ToolCall {
        id: match n {
            Some(n) => format!("{}_{n}", purpose.id()),
            None => purpose.id().into(),
        },
        name: if purpose == Purpose::Paths {
            "Glob".into()
        } else {
            "Grep".into()
        },
        arguments: args.to_string(),
    }
}

/// Escape a literal for a regex.
pub(crate) fn escape(term: &str) -> String {
    regex::escape(term)
}

/// The first turn's searches, all independent (they run concurrently).
pub(crate) fn first_calls(q: &Query) -> Vec<ToolCall> {
    let kws = q.search_keywords();
    let mut calls = Vec::new();
    if kws.is_empty() && q.named.is_empty() {
        return calls;
    }
    let code_only = !q.wants_docs;
    let with_glob = |mut v: Value| {
        if code_only {
            v["glob"] = json!(CODE_GLOB);
        }
        v
    };
    // One definition search per keyword, so a common keyword's many definitions (cut at the
    // limit in path order) cannot crowd out a rare one's.
    for (i, k) in kws.iter().enumerate().take(4) {
        calls.push(grep_n(
            Purpose::Defs,
            Some(i),
            json!({"pattern": format!("{}{}", def_prefix(), k.regex()),
                   "glob": CODE_GLOB, "limit": DEFS_LIMIT}),
        ));
    }
    // The remaining keywords share one search.
    if kws.len() > 4 {
        let rest: Vec<&Keyword> = kws[4..].iter().collect();
        calls.push(grep(
            Purpose::Defs,
            json!({"pattern": format!("{}(?:{})", def_prefix(), alternation(&rest)),
                   "glob": CODE_GLOB, "limit": DEFS_LIMIT}),
        ));
    }
    if let Some(p) = pairs(kws, 4, r"[\w$]*") {
        calls.push(grep(
            Purpose::PairDefs,
            json!({"pattern": format!("{}(?:{p})", def_prefix()), "glob": CODE_GLOB,
                   "limit": PAIR_DEFS_LIMIT}),
        ));
    }
    let named: Vec<String> = q
        .named
        .iter()
        .filter(|n| n.len() >= 3)
        .map(|n| escape(n))
        .collect();
    if !named.is_empty() {
        calls.push(grep(
            Purpose::Named,
            with_glob(
                json!({"pattern": format!(r"\b(?:{})\b", named.join("|")), "limit": NAMED_LIMIT}),
            ),
        ));
    }
    if !kws.is_empty() {
        let mut forms: Vec<String> = Vec::new();
        for k in kws {
            for f in &k.forms {
                let cap = capitalize(f);
                for v in [f.clone(), cap] {
                    if !forms.contains(&v) {
                        forms.push(v);
                    }
                }
            }
        }
        calls.push(grep(
            Purpose::Paths,
            json!({"pattern": format!("**/*{{{}}}*", forms.join(",")), "limit": PATHS_LIMIT}),
        ));
    }
    calls
}

/// Whether a path can go into a glob alternation as a literal.
fn glob_safe(path: &str) -> bool {
    !path.contains(['{', '}', '[', ']', '*', '?', ',', '\\', '!'])
}

/// The second turn's searches: definitions and two-keyword lines within the likeliest files,
/// where the first turn's searches may have stopped (in path order) before reaching them.
pub(crate) fn focus_calls(q: &Query, files: &[String], with_defs: bool) -> Vec<ToolCall> {
    let kws = q.search_keywords();
    let files: Vec<&String> = files
        .iter()
        .filter(|f| glob_safe(f))
        .take(FOCUS_FILES)
        .collect();
    if kws.is_empty() || files.is_empty() {
        return Vec::new();
    }
    // Search from the files' deepest common folder: a smaller walk on a big tree.
    let dirs: Vec<Vec<&str>> = files
        .iter()
        .map(|f| {
            let mut parts: Vec<&str> = f.split('/').collect();
            parts.pop();
            parts
        })
        .collect();
    let mut common: Vec<&str> = dirs[0].clone();
    for d in &dirs[1..] {
        let n = common.iter().zip(d).take_while(|(a, b)| a == b).count();
        common.truncate(n);
    }
    let base = common.join("/");
    let rel: Vec<&str> = files
        .iter()
        .map(|f| {
            if base.is_empty() {
                f.as_str()
            } else {
                &f[base.len() + 1..]
            }
        })
        .collect();
    let glob = if rel.len() == 1 {
        rel[0].to_string()
    } else {
        format!("{{{}}}", rel.join(","))
    };
    let with_scope = |mut v: Value| {
        v["glob"] = json!(glob);
        if !base.is_empty() {
            v["path"] = json!(base);
        }
        v
    };
    let all: Vec<&Keyword> = kws.iter().collect();
    let mut calls = Vec::new();
    if with_defs {
        calls.push(grep(
            Purpose::FocusDefs,
            with_scope(
                json!({"pattern": format!("{}(?:{})", def_prefix(), alternation(&all)),
                              "limit": FOCUS_LIMIT}),
            ),
        ));
    }
    if let Some(p) = pairs(kws, 4, ".*") {
        calls.push(grep(
            Purpose::FocusPairs,
            with_scope(json!({"pattern": p, "limit": FOCUS_LIMIT})),
        ));
    }
    calls
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// One matching line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LineHit {
    /// Path relative to the root.
    pub(crate) file: String,
    /// 1-based line.
    pub(crate) line: u64,
    /// The line as Grep returned it.
    pub(crate) text: String,
}

/// What one search returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SearchResult {
    /// What it was for.
    pub(crate) purpose: Purpose,
    /// The keyword it searched for, for a per-keyword search.
    pub(crate) keyword: Option<usize>,
    /// The pattern it used.
    pub(crate) pattern: String,
    /// Whether it had a glob.
    pub(crate) glob: Option<String>,
    /// Its matching lines (Grep).
    pub(crate) lines: Vec<LineHit>,
    /// Its paths (Glob).
    pub(crate) paths: Vec<String>,
    /// More matched than it returned.
    pub(crate) truncated: bool,
    /// The tool failed (the result says nothing about the tree).
    pub(crate) failed: bool,
}

/// The arguments of the scout's own calls, by id.
fn call_args(messages: &[Message], id: &str) -> Option<Value> {
    messages.iter().find_map(|m| match m {
        Message::Assistant { tool_calls, .. } => tool_calls
            .iter()
            .find(|c| c.id == id)
            .and_then(|c| serde_json::from_str(&c.arguments).ok()),
        _ => None,
    })
}

/// The search results in the conversation (a result whose text was cut to fit the context is
/// treated as failed: its JSON no longer parses).
pub(crate) fn results(messages: &[Message]) -> Vec<SearchResult> {
    let mut out = Vec::new();
    for m in messages {
        let Message::Tool {
            tool_call_id,
            content,
            ..
        } = m
        else {
            continue;
        };
        let Some(purpose) = Purpose::from_id(tool_call_id) else {
            continue;
        };
        let args = call_args(messages, tool_call_id).unwrap_or(Value::Null);
        let mut r = SearchResult {
            purpose,
            keyword: tool_call_id
                .rsplit_once('_')
                .and_then(|(_, n)| n.parse().ok()),
            pattern: args["pattern"].as_str().unwrap_or_default().to_string(),
            glob: args["glob"].as_str().map(str::to_string),
            lines: Vec::new(),
            paths: Vec::new(),
            truncated: false,
            failed: true,
        };
        if let Ok(env) = serde_json::from_str::<Value>(content) {
            let status = env["status"].as_str().unwrap_or("error");
            r.failed = status == "error" || env["data"]["preview"].is_string();
            r.truncated = env["data"]["truncated"].as_bool().unwrap_or(false);
            for m in env["data"]["matches"].as_array().into_iter().flatten() {
                if let (Some(file), Some(line), Some(text)) =
                    (m["file"].as_str(), m["line"].as_u64(), m["text"].as_str())
                {
                    r.lines.push(LineHit {
                        file: file.into(),
                        line,
                        text: text.into(),
                    });
                }
            }
            let dirs = env["data"]["directories"].as_array();
            for p in env["data"]["paths"].as_array().into_iter().flatten() {
                if dirs.is_some_and(|d| d.contains(p)) {
                    continue;
                }
                if let Some(p) = p.as_str() {
                    r.paths.push(p.into());
                }
            }
        }
        out.push(r);
    }
    out
}

/// One Read the scout made: the lines it saw, by number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReadWindow {
    /// Path relative to the root.
    pub(crate) file: String,
    /// (line number, text) in order.
    pub(crate) lines: Vec<(u64, String)>,
    /// The file's line count, when reported.
    pub(crate) total_lines: Option<u64>,
}

/// The Read results in the conversation whose content still parses.
pub(crate) fn reads(messages: &[Message]) -> Vec<ReadWindow> {
    let mut out = Vec::new();
    for m in messages {
        let Message::Tool {
            tool_call_id,
            name,
            content,
        } = m
        else {
            continue;
        };
        if name != "Read" || !tool_call_id.starts_with("scout_read") {
            continue;
        }
        let Ok(env) = serde_json::from_str::<Value>(content) else {
            continue;
        };
        let (Some(text), Some(file)) = (
            env["data"]["content"].as_str(),
            call_args(messages, tool_call_id).and_then(|a| a["path"].as_str().map(str::to_string)),
        ) else {
            continue;
        };
        let lines = text
            .lines()
            .filter_map(|l| {
                let (num, rest) = l.split_once(" | ")?;
                Some((num.trim().parse::<u64>().ok()?, rest.to_string()))
            })
            .collect();
        out.push(ReadWindow {
            file,
            lines,
            total_lines: env["stats"]["total_lines"].as_u64(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::scout::query::parse;

    #[test]
    fn definitions_of_each_language() {
        let cases = [
            ("    def add_url_rule(", ("def", "add_url_rule")),
            ("class FlaskClient(Client):", ("class", "FlaskClient")),
            ("    async def handle(self):", ("def", "handle")),
            ("pub(crate) fn detect_binary(", ("fn", "detect_binary")),
            ("pub struct JSON<W> {", ("struct", "JSON")),
            ("impl<W: io::Write> JSON<W> {", ("impl", "JSON")),
            (
                "impl std::str::FromStr for HyperlinkFormat {",
                ("impl", "HyperlinkFormat"),
            ),
            (
                "impl<'p, M: Matcher> Sink for JSONSink<'p, M> {",
                ("impl", "JSONSink"),
            ),
            (
                "func (engine *Engine) addRoute(method string) {",
                ("func", "addRoute"),
            ),
            ("func cleanPath(p string) string {", ("func", "cleanPath")),
            (
                "var defaultLogFormatter = func(p LogFormatterParams) string {",
                ("var", "defaultLogFormatter"),
            ),
            ("type responseWriter struct {", ("type", "responseWriter")),
            (
                "export default async function loadConfig() {",
                ("function", "loadConfig"),
            ),
            ("export const router = createRouter()", ("const", "router")),
            (
                "        let threads = if low.sort.is_some() {",
                ("let", "threads"),
            ),
            (
                "macro_rules! define_flag {",
                ("macro_rules!", "define_flag"),
            ),
        ];
        for (line, (kind, name)) in cases {
            assert_eq!(
                definition(line),
                Some((kind.to_string(), name.to_string())),
                "{line}"
            );
        }
        assert_eq!(definition("    return session_token(user)"), None);
        assert_eq!(
            qualifiers("func (w *responseWriter) WriteHeader(code int) {"),
            vec!["responseWriter"]
        );
        assert_eq!(
            qualifiers("impl std::str::FromStr for HyperlinkFormat {"),
            vec!["FromStr"]
        );
        assert!(qualifiers("fn parse() {}").is_empty());
        assert_eq!(definition("// the default types are defined here"), None);
    }

    #[test]
    fn the_definition_search_matches_what_definition_parses() {
        let q = parse("Where is the gate feedback built?");
        let calls = first_calls(&q);
        // The second keyword is "gate" (after "feedback").
        let defs: Value = serde_json::from_str(&calls[1].arguments).unwrap();
        let re = regex::RegexBuilder::new(defs["pattern"].as_str().unwrap())
            .case_insensitive(true)
            .build()
            .unwrap();
        assert!(re.is_match("    async fn gate(&self, text: &str) -> Gate {"));
        assert!(re.is_match("pub const GATE_RETRIES: u8 = 1;"));
        assert!(!re.is_match("    let x = gate(&text);"));
        assert!(!re.is_match("The gate feedback is built here."));
        let ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(
            ids,
            vec![
                "scout_defs_0",
                "scout_defs_1",
                "scout_defs_2",
                "scout_pair_defs",
                "scout_paths"
            ]
        );
        assert_eq!(Purpose::from_id("scout_defs_2"), Some(Purpose::Defs));
        assert_eq!(
            Purpose::from_id("scout_focus_pairs"),
            Some(Purpose::FocusPairs)
        );
        assert_eq!(Purpose::from_id("scout_read_0"), None);
        let focus = focus_calls(
            &q,
            &[
                "src/run/gate.rs".to_string(),
                "src/run/mod.rs".to_string(),
                "src/lib.rs".to_string(),
            ],
            true,
        );
        let args: Value = serde_json::from_str(&focus[0].arguments).unwrap();
        assert_eq!(
            (&args["path"], &args["glob"]),
            (&json!("src"), &json!("{run/gate.rs,run/mod.rs,lib.rs}"))
        );
        let paths: Value = serde_json::from_str(&calls[4].arguments).unwrap();
        assert_eq!(
            paths["pattern"],
            "**/*{feedback,Feedback,gate,Gate,built,Built}*"
        );
    }
}
