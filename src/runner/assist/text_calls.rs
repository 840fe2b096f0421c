//! Tool calls a model wrote as text. Small and local models (llama.cpp, Ollama, vLLM without a
//! tool parser) often put a call in `content` instead of `tool_calls`: a bare or fenced JSON
//! object `{"name": "Grep", "arguments": {...}}`, a list of them, or one or more
//! `<tool_call>...</tool_call>` blocks. Such content is taken as the call(s) when, and only
//! when, the whole of it is calls that each name an offered tool with an object of arguments; a
//! final answer never names a tool, so no answer is mistaken for a call.

use serde_json::{Map, Value};

use crate::llm::ToolCall;

/// The most calls taken from one text answer (a model that writes more is not calling tools).
const MAX_TEXT_CALLS: usize = 16;

/// The assist that takes tool calls written as text (always on: a model that calls tools
/// natively never writes a whole answer of calls).
pub(crate) struct TextCalls;

impl crate::runner::assist::hooks::Assist for TextCalls {
    fn model_output(
        &self,
        content: &str,
        offered: &[&str],
        step: u64,
        cut: bool,
    ) -> Option<Vec<ToolCall>> {
        parse(content, offered, step, cut)
    }

    /// A tool call written inside other text: told how to call it.
    fn answer_refused(&self, text: &str, offered: &[&str]) -> Option<String> {
        let call = embedded(text, offered)?;
        Some(format!(
            "Your reply wrote a tool call inside other text, so no tool ran. To call a tool, reply with nothing but the call, for example:\n{call}"
        ))
    }
}

/// The calls `content` consists of, when it is nothing but calls to tools in `offered`; `step`
/// makes the ids unique within a run. `cut` says the answer stopped at its token cap: a last
/// block that was begun but not closed is then dropped instead of spoiling the rest.
pub(crate) fn parse(
    content: &str,
    offered: &[&str],
    step: u64,
    cut: bool,
) -> Option<Vec<ToolCall>> {
    let text = content.trim();
    if text.is_empty() || offered.is_empty() {
        return None;
    }
    let values = if text.starts_with("<tool_call>") {
        blocks(text, "<tool_call>", "</tool_call>", cut)?
    } else if text.starts_with("```") && text.matches("```").count() > 2 {
        blocks(text, "```", "```", cut)?
    } else {
        let body = unfenced(text).or_else(|| stray_close(text)).unwrap_or(text);
        // Braces doubled as in a format string (`{{"name": ...}}`), a small model's copy slip.
        let parsed = serde_json::from_str::<Value>(body).ok().or_else(|| {
            let inner = body.strip_prefix('{')?.strip_suffix('}')?.trim();
            (inner.starts_with('{') && inner.ends_with('}'))
                .then(|| serde_json::from_str::<Value>(inner).ok())
                .flatten()
        });
        match parsed? {
            Value::Array(items) => items,
            one @ Value::Object(_) => vec![one],
            _ => return None,
        }
    };
    if values.is_empty() || values.len() > MAX_TEXT_CALLS {
        return None;
    }
    values
        .into_iter()
        .enumerate()
        .map(|(i, v)| call(v, offered, format!("text_call_{step}_{i}")))
        .collect()
}

/// The first tool call written inside other text (a fenced or tagged JSON block naming an
/// offered tool, amid prose), as the JSON a model should have replied with alone.
pub(crate) fn embedded(content: &str, offered: &[&str]) -> Option<String> {
    for (open, close) in [
        ("<tool_call>", "</tool_call>"),
        ("```json", "```"),
        ("```", "```"),
    ] {
        let mut rest = content;
        while let Some(at) = rest.find(open) {
            let after = &rest[at + open.len()..];
            let Some((body, tail)) = after.split_once(close) else {
                break;
            };
            if let Ok(v) = serde_json::from_str::<Value>(body.trim()) {
                if let Some(c) = call(v, offered, String::new()) {
                    let args: Value = serde_json::from_str(&c.arguments).unwrap_or_default();
                    return Some(
                        serde_json::json!({"name": c.name, "arguments": args}).to_string(),
                    );
                }
            }
            rest = tail;
        }
    }
    None
}

/// A bare call followed by a closing fence that was never opened (a small model's slip): the
/// text before it.
fn stray_close(text: &str) -> Option<&str> {
    let body = text.strip_suffix("```")?;
    (!body.contains("```")).then(|| body.trim_end())
}

/// The JSON inside one ```` ``` ```` or ```` ```json ```` fence that is the whole text.
fn unfenced(text: &str) -> Option<&str> {
    let inner = text.strip_prefix("```")?.strip_suffix("```")?;
    let (lang, body) = inner.split_once('\n')?;
    let lang = lang.trim();
    (lang.is_empty() || lang.eq_ignore_ascii_case("json")).then_some(body.trim())
}

/// The JSON values of `open ... close` blocks (`<tool_call>` tags, or ```` ```json ```` fences)
/// that make up the whole text, separated by whitespace only. With `cut`, a last block that was
/// opened but never closed is left out.
fn blocks(text: &str, open: &str, close: &str, cut: bool) -> Option<Vec<Value>> {
    let mut rest = text;
    let mut values = Vec::new();
    while !rest.is_empty() {
        let after = rest.strip_prefix(open)?;
        let Some((body, tail)) = after.split_once(close) else {
            return (cut && !values.is_empty()).then_some(values);
        };
        let mut body = body.trim();
        if open == "```" {
            // A fence's first line names its language: json, or none.
            let (lang, json) = body.split_once('\n').unwrap_or(("", body));
            if lang.trim().is_empty() || lang.trim().eq_ignore_ascii_case("json") {
                body = json.trim();
            } else if lang.trim_start().starts_with(['{', '[']) {
                body = body.trim();
            } else {
                return None;
            }
        }
        let body = unfenced(body).unwrap_or(body);
        match serde_json::from_str::<Value>(body).ok()? {
            Value::Array(items) => values.extend(items),
            one => values.push(one),
        }
        rest = tail.trim_start();
        if values.len() > MAX_TEXT_CALLS {
            return None;
        }
    }
    Some(values)
}

/// One call: `{"name", "arguments"}` (also `parameters`, `args` or `input` for the arguments,
/// and `function`, `tool` or `tool_name` for the name) or `{"type": "function", "function":
/// {...}}`, naming an offered tool, with arguments as an object or a JSON string of one.
fn call(value: Value, offered: &[&str], id: String) -> Option<ToolCall> {
    let Value::Object(mut obj) = value else {
        return None;
    };
    if let Some(Value::Object(function)) = obj.get("function").cloned() {
        obj = function;
    }
    let name = ["name", "function", "tool", "tool_name"]
        .iter()
        .find_map(|k| obj.get(*k).and_then(Value::as_str))?
        .trim()
        .to_string();
    if !offered.contains(&name.as_str()) {
        return None;
    }
    let known = [
        "name",
        "function",
        "tool",
        "tool_name",
        "arguments",
        "parameters",
        "args",
        "input",
        "type",
        "id",
    ];
    if obj.keys().any(|k| !known.contains(&k.as_str())) {
        return None;
    }
    let given = ["arguments", "parameters", "args", "input"]
        .iter()
        .find_map(|k| obj.get(*k));
    let args = match given {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s).ok()? {
            Value::Object(m) => m,
            _ => return None,
        },
        Some(_) => return None,
    };
    Some(ToolCall {
        id,
        name,
        arguments: Value::Object(args).to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOLS: [&str; 3] = ["Glob", "Grep", "Read"];

    fn names(content: &str) -> Option<Vec<(String, Value)>> {
        parse(content, &TOOLS, 3, false).map(|calls| {
            calls
                .into_iter()
                .map(|c| (c.name, serde_json::from_str(&c.arguments).unwrap()))
                .collect()
        })
    }

    #[test]
    fn every_accepted_shape_is_taken() {
        let grep = || {
            Some(vec![(
                "Grep".to_string(),
                serde_json::json!({"pattern": "fn main"}),
            )])
        };
        for text in [
            r#"{"name": "Grep", "arguments": {"pattern": "fn main"}}"#,
            "```json\n{\"name\": \"Grep\", \"arguments\": {\"pattern\": \"fn main\"}}\n```",
            r#"{{"name": "Grep", "arguments": {"pattern": "fn main"}}}"#,
            "```\n{\"name\": \"Grep\", \"arguments\": {\"pattern\": \"fn main\"}}\n```\n\n\n",
            r#"<tool_call>{"name": "Grep", "arguments": {"pattern": "fn main"}}</tool_call>"#,
            "<tool_call>\n{\"name\": \"Grep\", \"arguments\": \"{\\\"pattern\\\": \\\"fn main\\\"}\"}\n</tool_call>",
            r#"{"type": "function", "function": {"name": "Grep", "arguments": {"pattern": "fn main"}}}"#,
            r#"{"name": "Grep", "parameters": {"pattern": "fn main"}}"#,
            r#"{"function": "Grep", "arguments": {"pattern": "fn main"}}"#,
            r#"{"tool": "Grep", "args": {"pattern": "fn main"}}"#,
            r#"[{"name": "Grep", "arguments": {"pattern": "fn main"}}]"#,
            "{\"name\": \"Grep\", \"arguments\": {\"pattern\": \"fn main\"}}\n```",
        ] {
            assert_eq!(names(text), grep(), "{text}");
        }
        let two = names(
            "<tool_call>{\"name\": \"Glob\", \"arguments\": {\"pattern\": \"*.rs\"}}</tool_call>\n<tool_call>{\"name\": \"Read\", \"arguments\": {\"path\": \"a.rs\"}}</tool_call>",
        )
        .unwrap();
        assert_eq!(
            two.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
            ["Glob", "Read"]
        );
        let ids: Vec<String> = parse(
            r#"[{"name": "Glob", "arguments": {}}, {"name": "Glob"}]"#,
            &TOOLS,
            7,
            false,
        )
        .unwrap()
        .into_iter()
        .map(|c| c.id)
        .collect();
        assert_eq!(ids, ["text_call_7_0", "text_call_7_1"]);
    }

    #[test]
    fn fenced_blocks_one_after_another_are_calls_and_a_cut_last_one_is_dropped() {
        let block = |p: &str| {
            format!(
                "```json\n{{\"function\": \"Glob\", \"arguments\": {{\"pattern\": \"{p}\"}}}}\n```"
            )
        };
        let two = format!("{}\n\n\n{}", block("a.py"), block("b.py"));
        let calls = parse(&two, &TOOLS, 1, false).unwrap();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[1].arguments, r#"{"pattern":"b.py"}"#);
        // Cut by the token cap in the middle of a third block.
        let cut = format!("{two}\n\n```json\n{{\"function\": \"Glob\", \"argu");
        assert_eq!(parse(&cut, &TOOLS, 1, true).unwrap().len(), 2);
        assert_eq!(parse(&cut, &TOOLS, 1, false), None);
        // An answer after a call is not a call.
        let mixed = format!(
            "{}\n{}",
            block("a.py"),
            "```json\n{\"status\": \"completed\"}\n```"
        );
        assert_eq!(parse(&mixed, &TOOLS, 1, false), None);
    }

    #[test]
    fn a_call_inside_prose_is_found_to_quote_back() {
        let prose = "To find it:\n\n1. Search.\n```json\n{\"name\": \"Grep\", \"arguments\": {\"pattern\": \"Config\"}}\n```\nThen read.";
        assert_eq!(parse(prose, &TOOLS, 1, false), None);
        assert_eq!(
            embedded(prose, &TOOLS).as_deref(),
            Some(r#"{"name":"Grep","arguments":{"pattern":"Config"}}"#)
        );
        assert_eq!(embedded("no call here", &TOOLS), None);
        assert_eq!(embedded("```json\n{\"name\": \"Bash\"}\n```", &TOOLS), None);
    }

    #[test]
    fn shapes_that_are_not_wholly_calls_to_offered_tools_are_answers() {
        for text in [
            // A final answer: no tool named.
            r#"{"status": "completed", "summary": "x", "findings": [], "evidence": ["a.rs:1"], "unresolved_questions": []}"#,
            // A tool that is not offered.
            r#"{"name": "Bash", "arguments": {"command": "ls"}}"#,
            // Text around the call.
            "I will search. {\"name\": \"Grep\", \"arguments\": {\"pattern\": \"x\"}}",
            "<tool_call>{\"name\": \"Grep\", \"arguments\": {\"pattern\": \"x\"}}</tool_call> then I answer",
            // One good call and one bad one.
            r#"[{"name": "Grep", "arguments": {"pattern": "x"}}, {"name": "Edit", "arguments": {}}]"#,
            // Arguments that are not an object.
            r#"{"name": "Grep", "arguments": ["x"]}"#,
            r#"{"name": "Grep", "arguments": "pattern=x"}"#,
            // Extra keys: an answer that happens to have a name.
            r#"{"name": "Grep", "summary": "Grep is the search tool", "arguments": {}}"#,
            // Not JSON, empty, an unclosed tag, a python fence.
            "Grep(pattern='x')",
            "",
            "[]",
            "<tool_call>{\"name\": \"Grep\", \"arguments\": {}}",
            "```python\n{\"name\": \"Grep\", \"arguments\": {}}\n```",
        ] {
            assert_eq!(names(text), None, "{text}");
        }
        assert_eq!(
            parse(r#"{"name": "Grep", "arguments": {}}"#, &[], 1, false),
            None,
            "no tool offered (the wrap-up)"
        );
        let many = format!("[{}]", vec![r#"{"name": "Glob"}"#; 17].join(","));
        assert_eq!(names(&many), None);
    }
}
