//! What the history re-sends: a Read result the model has used shrinks in every later request
//! to the lines it cited, with a one-line note of what was cut; a Read whose lines a later Read
//! of the same file showed again shrinks to that note alone. Each request of a run re-sends the
//! whole history, so a result kept whole is paid for at every later call; once the model has
//! cited what it needed from it (in a later reply, a tool-call turn's text or a refused
//! answer), the rest of it buys nothing.
//!
//! Only the requests change: the run's history (the trace, `RunOutcome::messages`) keeps every
//! result as it was shown. The first messages (system prompt, task) and the tool schemas are
//! never touched, so that a provider's prompt cache keeps hitting on them.

use std::borrow::Cow;

use serde_json::Value;

use crate::llm::Message;
use crate::profile::ToolResultFormat;
use crate::runner::observed::normalize;
use crate::tools::envelope::ToolResult;
use crate::tools::shown::Shown;

/// One Read result as it was shown: where in the history, which file, and its numbered lines.
#[derive(Debug, Clone)]
pub(crate) struct ShownRead {
    /// The index of its tool message in the history.
    at: usize,
    /// The file, normalized.
    path: String,
    /// Its lines: the number and the line as shown (`  12 | text`).
    lines: Vec<(u64, String)>,
    /// The result as the model saw it (`ToolResult::to_value`), to render shortened.
    value: Value,
    /// Whether it was rendered as compact JSON (`to_json` of a compact result).
    compact_json: bool,
}

impl ShownRead {
    /// The Read result `result` (as it went to the model) at history index `at`, from the
    /// lines it keeps beside its text; None for an error or a result without lines.
    pub(crate) fn of(at: usize, result: &ToolResult, compact_json: bool) -> Option<Self> {
        let Shown::Lines { path, lines } = &result.shown else {
            return None;
        };
        let lines: Vec<(u64, String)> = lines
            .iter()
            .map(|(n, text)| (*n, crate::tools::read::numbered(*n, text)))
            .collect();
        (!lines.is_empty()).then(|| Self {
            at,
            path: normalize(path),
            lines,
            value: result.to_value(),
            compact_json,
        })
    }

    fn first(&self) -> u64 {
        self.lines.first().map_or(0, |l| l.0)
    }

    fn last(&self) -> u64 {
        self.lines.last().map_or(0, |l| l.0)
    }
}

/// The citations (`path:line` or `path:start-end`) written in `text`.
fn citations(text: &str) -> Vec<(String, u64, u64)> {
    text.split(|c: char| c.is_whitespace() || "\"'`,;()[]{}<>".contains(c))
        .map(|t| t.trim_end_matches(['.', ':']))
        .filter(|t| t.contains(':'))
        .filter_map(crate::evidence::parse_citation)
        .map(|(p, a, b)| (normalize(&p), a, b))
        .collect()
}

/// `messages` as the next request sends them: each read in `reads` that a later assistant
/// message cites, or a later read of its file shows again, shortened (see the module). Borrowed
/// when nothing shrinks.
pub(crate) fn shrink<'a>(
    messages: &'a [Message],
    reads: &[ShownRead],
    format: ToolResultFormat,
) -> Cow<'a, [Message]> {
    let mut out: Option<Vec<Message>> = None;
    for (i, read) in reads.iter().enumerate() {
        let again = reads[i + 1..]
            .iter()
            .any(|r| r.path == read.path && r.first() <= read.first() && r.last() >= read.last());
        let cited: Vec<(u64, u64)> = messages
            .get(read.at + 1..)
            .unwrap_or_default()
            .iter()
            .filter_map(|m| match m {
                Message::Assistant { content, .. } => Some(citations(content)),
                _ => None,
            })
            .flatten()
            .filter(|(p, _, _)| *p == read.path)
            .map(|(_, a, b)| (a, b))
            .collect();
        if !again && cited.is_empty() {
            continue;
        }
        let keep = |n: u64| !again && cited.iter().any(|&(a, b)| a <= n && n <= b);
        let kept: Vec<&str> = read
            .lines
            .iter()
            .filter(|(n, _)| keep(*n))
            .map(|(_, l)| l.as_str())
            .collect();
        if kept.len() == read.lines.len() {
            continue;
        }
        let note = if again {
            format!(
                "[outrider: lines {}-{} of {} cut here: a later Read showed them again]",
                read.first(),
                read.last(),
                read.path
            )
        } else {
            format!(
                "[outrider: {} of the {} lines read ({}-{}) cut here, kept only the lines you cited; Read again for the rest]",
                read.lines.len() - kept.len(),
                read.lines.len(),
                read.first(),
                read.last()
            )
        };
        let Some(content) = render(read, &kept, &note, format) else {
            continue;
        };
        let out = out.get_or_insert_with(|| messages.to_vec());
        if let Some(Message::Tool { content: c, .. }) = out.get_mut(read.at) {
            *c = content;
        }
    }
    out.map_or(Cow::Borrowed(messages), Cow::Owned)
}

/// The text of `read` shortened to its `kept` lines, `note` after them, as `format` shows a
/// tool result.
fn render(read: &ShownRead, kept: &[&str], note: &str, format: ToolResultFormat) -> Option<String> {
    let mut content: String = kept.iter().map(|l| format!("{l}\n")).collect();
    content.push_str(note);
    content.push('\n');
    match format {
        ToolResultFormat::Compact => {
            let header = read.value["text"].as_str().unwrap_or_default().trim();
            Some(format!("{header}\n{content}"))
        }
        ToolResultFormat::Json => {
            let mut v = read.value.clone();
            *v.get_mut("data")?.get_mut("content")? = Value::String(content);
            if read.compact_json {
                serde_json::to_string(&v).ok()
            } else {
                serde_json::to_string_pretty(&v).ok()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;
    use serde_json::json;

    fn read_value(path: &str, from: u64, to: u64) -> ToolResult {
        let content: String = (from..=to)
            .map(|n| format!("{n:>4} | line {n}\n"))
            .collect();
        let data = json!({"content": content}).as_object().unwrap().clone();
        ToolResult::success(&json!({}), data, format!("Read {path}"), 1)
            .with_shown(Shown::Lines {
                path: path.into(),
                lines: (from..=to).map(|n| (n, format!("line {n}"))).collect(),
            })
            .with_path_resolved(path)
    }

    fn history(reads: &[(&str, u64, u64)], replies: &[&str]) -> (Vec<Message>, Vec<ShownRead>) {
        let mut m = vec![
            Message::System {
                content: "sys".into(),
            },
            Message::User {
                content: "task".into(),
            },
        ];
        let mut shown = Vec::new();
        for (i, (path, a, b)) in reads.iter().enumerate() {
            m.push(Message::Assistant {
                content: replies.get(i).copied().unwrap_or_default().to_string(),
                tool_calls: vec![ToolCall {
                    id: format!("c{i}"),
                    name: "Read".into(),
                    arguments: "{}".into(),
                }],
            });
            let r = read_value(path, *a, *b);
            shown.push(ShownRead::of(m.len(), &r, false).unwrap());
            let v = r.to_value();
            m.push(Message::Tool {
                tool_call_id: format!("c{i}"),
                name: "Read".into(),
                shown: None,
                content: format!(
                    "{}\n{}",
                    v["text"].as_str().unwrap(),
                    v["data"]["content"].as_str().unwrap()
                ),
            });
        }
        (m, shown)
    }

    fn tool_text(m: &[Message], at: usize) -> &str {
        match &m[at] {
            Message::Tool { content, .. } => content,
            _ => panic!("not a tool message"),
        }
    }

    #[test]
    fn a_read_the_model_cited_later_shrinks_to_the_cited_lines_and_says_what_was_cut() {
        // The second turn's text cites lines 3-4 of the first read.
        let (m, reads) = history(&[("a.py", 1, 10), ("b.py", 1, 5)], &["", "a.py:3-4 is it"]);
        let out = shrink(&m, &reads, ToolResultFormat::Compact);
        assert_eq!(
            tool_text(&out, 3),
            "Read a.py\n   3 | line 3\n   4 | line 4\n[outrider: 8 of the 10 lines read (1-10) cut here, kept only the lines you cited; Read again for the rest]\n"
        );
        // The read nothing cites yet is sent whole, and the prefix is the same bytes.
        assert_eq!(tool_text(&out, 5), tool_text(&m, 5));
        assert_eq!(&out[..2], &m[..2]);
    }

    #[test]
    fn a_read_shown_again_by_a_later_read_shrinks_to_a_note() {
        let (m, reads) = history(&[("a.py", 5, 8), ("a.py", 1, 20)], &[]);
        let out = shrink(&m, &reads, ToolResultFormat::Compact);
        assert_eq!(
            tool_text(&out, 3),
            "Read a.py\n[outrider: lines 5-8 of a.py cut here: a later Read showed them again]\n"
        );
        assert_eq!(tool_text(&out, 5), tool_text(&m, 5));
    }

    #[test]
    fn nothing_used_is_nothing_shrunk() {
        let (m, reads) = history(&[("a.py", 1, 10), ("b.py", 1, 5)], &["reading b.py next"]);
        assert!(matches!(
            shrink(&m, &reads, ToolResultFormat::Json),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn json_results_keep_their_envelope() {
        let (m, reads) = history(&[("a.py", 1, 10), ("b.py", 1, 5)], &["", "see a.py:2"]);
        let out = shrink(&m, &reads, ToolResultFormat::Json);
        let v: Value = serde_json::from_str(tool_text(&out, 3)).unwrap();
        assert_eq!(v["status"], "success");
        assert!(v["data"]["content"]
            .as_str()
            .unwrap()
            .starts_with("   2 | line 2\n[outrider: 9 of the 10 lines"));
    }
}
