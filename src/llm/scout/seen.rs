//! What the scout's own Reads showed, read back from the conversation, and how it quotes a line.

use serde_json::Value;

use crate::llm::Message;

/// A line as the scout quotes it: «text», cut at 160 characters with an ellipsis.
pub(crate) fn quote(text: &str) -> String {
    let t = text.trim();
    let shown: String = t.chars().take(160).collect();
    if shown.len() < t.len() {
        format!("«{shown}…»")
    } else {
        format!("«{shown}»")
    }
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
