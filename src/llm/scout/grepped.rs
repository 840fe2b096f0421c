//! The scout without the Search tool (a profile that offers Grep alone): it Greps for the
//! index's query terms — definitions named after each term, lines holding any of them, lines
//! naming an identifier the question gives — and ranks the lines Grep returned with the index's
//! own ranking ([`crate::index::scratch`], [`crate::index::rank`]), so there is one ranker
//! whichever tool found the lines. The places it cites are lines Grep returned or windows a Read
//! showed.

use serde_json::{json, Value};

use super::place::{Found, Place};
use crate::index::rank::{self, Query};
use crate::index::scratch;
use crate::llm::{ChatRequest, Message, ToolCall};
use crate::tools::shown::Shown;

/// Source files, by extension: definitions and lines are searched only here unless the
/// question asks about documentation (prose repeats the question's words without doing the
/// thing).
const CODE_GLOB: &str = "*.{py,pyi,rs,go,js,jsx,mjs,ts,tsx,java,kt,kts,scala,sc,c,h,cc,cpp,hpp,cs,rb,php,swift,m,lua,ex,exs,hs,ml,dart,zig,sh,bash,vue,svelte}";

/// Declaration modifiers that may precede a definition keyword.
const MODS: &str =
    r"(?:pub\S*|export|default|async|static|public|private|protected|unsafe|abstract)";

/// Definition keywords of Python, Rust, Go, JavaScript/TypeScript and their relatives. Go's
/// method receiver and Rust's `impl<..> Trait for` are part of the keyword so the name follows.
const KINDS: &str = r"(?:def|class|fn|struct|enum|trait|type|interface|func(?:\s*\([^)]*\))?|function|mod|macro_rules!|const|let|var|static|impl(?:<[^>]*>)?(?:\s+[\w:<>, ']+?\s+for)?)";

/// Terms searched for, at most (the question's key terms, in its order).
const MAX_TERMS: usize = 5;
/// Definitions asked of each term's search.
const DEFS_LIMIT: u64 = 8;
/// Lines holding any term.
const LINES_LIMIT: u64 = 30;
/// Lines naming an identifier from the question.
const NAMED_LIMIT: u64 = 15;
/// Places ranked.
const PLACES: usize = 12;
/// Lines a place is read to, at most, from its first line (Grep does not show its extent).
pub(crate) const PLACE_LINES: u64 = 60;
/// How the places were found, for the summary.
pub(crate) const HOW: &str = "Grep searches for the question's words, the lines they returned ranked by the code index's scoring (definitions found by parsers, BM25 over definition-sized chunks)";
/// The call ids of the scout's searches start so.
const ID: &str = "scout_grep";

/// Whether the request offers the Grep tool.
pub(crate) fn offered(request: &ChatRequest) -> bool {
    request
        .tools
        .iter()
        .any(|t| t["function"]["name"].as_str() == Some("Grep"))
}

/// The terms to Grep for: the question's key terms (stems and whole identifiers, as the index
/// keeps them), in its order.
fn key_terms(q: &Query) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for t in q.terms.iter().filter(|t| t.weight >= 1.0) {
        if t.term.len() >= 3 && !out.contains(&t.term.as_str()) {
            out.push(&t.term);
        }
    }
    out.truncate(MAX_TERMS);
    out
}

fn grep(id: String, args: Value) -> ToolCall {
    ToolCall {
        id,
        name: "Grep".into(),
        arguments: args.to_string(),
    }
}

/// Lines each search asks for when it runs again because its first result was too big for the
/// context (minified code: every line thousands of characters).
const RETRY_LIMIT: u64 = 3;
/// The call ids of a second, smaller round end so.
const RETRY: &str = "_small";

/// The first turn's searches, all independent (they run concurrently).
pub(crate) fn calls(q: &Query) -> Vec<ToolCall> {
    searches(q, false)
}

/// The same searches again, asking for a few lines each, when the first round's results were
/// all cut to fit the context and none was run again yet.
pub(crate) fn retry(messages: &[Message], q: &Query) -> Option<Vec<ToolCall>> {
    let mut ours = messages.iter().filter_map(|m| match m {
        Message::Tool { tool_call_id, .. } if tool_call_id.starts_with(ID) => Some(tool_call_id),
        _ => None,
    });
    if ours.any(|id| id.ends_with(RETRY)) {
        return None;
    }
    let found = grepped(messages, q);
    (found.lines.is_empty() && found.cut).then(|| searches(q, true))
}

fn searches(q: &Query, small: bool) -> Vec<ToolCall> {
    let limit = |n: u64| if small { RETRY_LIMIT.min(n) } else { n };
    let grep = |id: String, mut args: Value| {
        args["limit"] = json!(limit(args["limit"].as_u64().unwrap_or(1)));
        grep(if small { format!("{id}{RETRY}") } else { id }, args)
    };
    let terms: Vec<String> = key_terms(q).into_iter().map(regex::escape).collect();
    let mut calls = Vec::new();
    let def_prefix = format!(r"^\s*(?:{MODS}\s+)*{KINDS}\s+[\w$:]*?");
    for (i, t) in terms.iter().enumerate() {
        calls.push(grep(
            format!("{ID}_defs_{i}"),
            json!({"pattern": format!("{def_prefix}{t}"), "glob": CODE_GLOB, "limit": DEFS_LIMIT}),
        ));
    }
    if !terms.is_empty() {
        let mut args = json!({"pattern": terms.join("|"), "limit": LINES_LIMIT});
        if !q.wants_docs {
            args["glob"] = json!(CODE_GLOB);
        }
        calls.push(grep(format!("{ID}_lines"), args));
    }
    let named: Vec<String> = q
        .names
        .iter()
        .filter(|n| n.len() >= 3)
        .map(|n| regex::escape(n))
        .collect();
    if !named.is_empty() {
        calls.push(grep(
            format!("{ID}_named"),
            json!({"pattern": format!(r"\b(?:{})\b", named.join("|")), "limit": NAMED_LIMIT}),
        ));
    }
    calls
}

/// What the scout's Grep calls returned: the lines by file (number, text), and the open
/// questions about what they could not show (a search that stopped at its limit or failed).
#[derive(Default)]
struct Grepped {
    lines: std::collections::BTreeMap<String, std::collections::BTreeMap<u64, String>>,
    notes: Vec<String>,
    /// A result was cut to fit the context.
    cut: bool,
}

/// What the search with call id `id` looked for, for a sentence.
fn described(id: &str, terms: &[&str], q: &Query) -> String {
    let rest = id.strip_prefix(ID).unwrap_or(id);
    let rest = rest.strip_suffix(RETRY).unwrap_or(rest);
    if let Some(i) = rest.strip_prefix("_defs_") {
        let term = i
            .parse::<usize>()
            .ok()
            .and_then(|i| terms.get(i))
            .unwrap_or(&"");
        format!("the search for definitions whose name holds `{term}`")
    } else if rest == "_named" {
        format!("the search for lines naming `{}`", q.names.join("`, `"))
    } else {
        format!("the search for lines holding `{}`", terms.join("`, `"))
    }
}

fn grepped(messages: &[Message], q: &Query) -> Grepped {
    let mut out = Grepped::default();
    let terms: Vec<&str> = key_terms(q);
    for m in messages {
        let Message::Tool {
            tool_call_id,
            content,
            shown,
            ..
        } = m
        else {
            continue;
        };
        if !tool_call_id.starts_with(ID) {
            continue;
        }
        let what = described(tool_call_id, &terms, q);
        // The envelope's fields say how the search ended; its lines are read from the values
        // kept beside the text.
        let env = serde_json::from_str::<Value>(content).unwrap_or(Value::Null);
        if env["status"].as_str() == Some("error") {
            out.notes.push(format!(
                "{} failed: {}",
                capitalized(&what),
                env["error"]["message"].as_str().unwrap_or("unknown error")
            ));
            continue;
        }
        let Some(Shown::Matches(matches)) = shown.as_deref() else {
            out.cut = true;
            out.notes.push(format!(
                "The result of {what} was cut to fit the context; its lines were not used."
            ));
            continue;
        };
        if matches.is_empty() && tool_call_id.trim_end_matches(RETRY).ends_with("_named") {
            out.notes.push(format!(
                "{} found no line, so what the question names may not exist in this tree.",
                capitalized(&what)
            ));
        }
        if env["data"]["truncated"].as_bool() == Some(true) {
            out.notes.push(format!(
                "{} stopped at its limit, so lines past it (in path order) were not seen.",
                capitalized(&what)
            ));
        }
        for hit in matches {
            out.lines
                .entry(hit.file.clone())
                .or_default()
                .insert(hit.line, hit.text.clone());
        }
    }
    out
}

/// The places the scout's Grep calls found, ranked by the index's scoring over the lines they
/// returned (each file as its matching lines at their numbers), or why there are none.
pub(crate) fn places(messages: &[Message], q: &Query) -> Found {
    let found = grepped(messages, q);
    let texts: Vec<(String, String)> = found
        .lines
        .iter()
        .map(|(file, lines)| {
            (
                file.clone(),
                at_their_numbers(lines.iter().map(|(&n, l)| (n, l.as_str()))),
            )
        })
        .collect();
    let index = scratch::of_texts(&texts);
    let hits = rank::search_until(&index, q, PLACES, None, None).unwrap_or_default();
    let mut places = Vec::new();
    for h in &hits {
        let f = &index.files[h.file];
        let c = &f.chunks.chunks[h.chunk];
        let seen: Vec<(u64, String)> = found.lines[&f.path]
            .range(u64::from(c.start)..=u64::from(c.end))
            .map(|(&n, t)| (n, t.clone()))
            .collect();
        let Some((first, first_text)) = seen.first() else {
            continue;
        };
        let short = c.name.rsplit([':', '.']).next().unwrap_or(&c.name);
        let defines = c.is_definition()
            && *first == u64::from(c.start)
            && !short.is_empty()
            && first_text.contains(short);
        places.push(Place {
            file: f.path.clone(),
            start: *first,
            end: first + PLACE_LINES - 1,
            kind: if defines { c.kind_name() } else { "lines" }.to_string(),
            name: defines.then(|| c.name.clone()),
            lines: seen,
            extent_known: false,
        });
    }
    Found {
        places,
        how: HOW,
        nothing: "The searches returned no line matching the question's words.".to_string(),
        notes: found.notes,
    }
}

/// A text holding `lines` (number, text; in order) at their numbers, blank elsewhere.
fn at_their_numbers<'a>(lines: impl Iterator<Item = (u64, &'a str)>) -> String {
    let mut text: Vec<&str> = Vec::new();
    for (n, l) in lines {
        let at = (n.max(1) - 1) as usize;
        if text.len() <= at {
            text.resize(at + 1, "");
        }
        text[at] = l;
    }
    text.join("\n")
}

/// Where a place Grep found ends in a Read `window` of its file: a definition's last line as
/// the index's parser finds it in the window's text; else the last line Grep showed of it.
pub(crate) fn extent(place: &Place, window: &[(u64, String)]) -> u64 {
    let shown = place.lines.last().map_or(place.start, |(n, _)| *n);
    if place.name.is_none() {
        return shown;
    }
    let text = at_their_numbers(window.iter().map(|(n, l)| (*n, l.as_str())));
    let index = scratch::of_texts(&[(place.file.clone(), text)]);
    index
        .files
        .first()
        .and_then(|f| {
            f.chunks
                .chunks
                .iter()
                .find(|c| c.is_definition() && u64::from(c.start) == place.start)
        })
        .map_or(shown, |c| u64::from(c.end))
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}
