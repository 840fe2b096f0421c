//! What the scout's own Reads showed, read back from the values kept beside each result (never
//! from its text), and how the scout quotes a line.

use crate::llm::Message;
use crate::tools::shown::Shown;

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

/// One Read the scout made: the lines it saw, by number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReadWindow {
    /// Path relative to the root.
    pub(crate) file: String,
    /// (line number, text) in order.
    pub(crate) lines: Vec<(u64, String)>,
}

/// The scout's Reads in the conversation whose lines are still there (a result cut to fit
/// the context keeps no lines), from the values kept beside each result's text.
pub(crate) fn reads(messages: &[Message]) -> Vec<ReadWindow> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool {
                tool_call_id,
                shown: Some(shown),
                ..
            } if tool_call_id.starts_with("scout_read") => match shown.as_ref() {
                Shown::Lines { path, lines } => Some(ReadWindow {
                    file: path.clone(),
                    lines: lines.clone(),
                }),
                _ => None,
            },
            _ => None,
        })
        .collect()
}
