//! The context budget, enforced for real: every request (system prompt and tool schemas
//! included) is cut down until its estimate fits `context_token_budget`.
//!
//! Cutting happens in stages, each stopping as soon as the request fits:
//! 1. older tool observations (before the latest assistant turn) are shortened to a head of
//!    1 200 characters with a note, oldest first;
//! 2. older turns are replaced by one `[Compacted child history]` summary (a line per message,
//!    1 200 characters each, 8 000 in all), shrinking the summary as needed;
//! 3. the latest turn's tool observations are shortened as far as needed.
//!
//! If even the system prompt, the task and the latest turn's calls cannot fit, the request
//! cannot be made within budget and the caller stops with `context_budget`.

use crate::llm::{estimate_tokens, Message};

/// Characters kept of one compacted observation or summary line.
pub const KEEP_CHARS: usize = 1_200;
/// Characters of the whole compacted-history summary.
pub const SUMMARY_CHARS: usize = 8_000;

/// What fitting did to the history.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Compaction {
    /// Tool observations shortened.
    pub shortened: usize,
    /// Messages folded into the summary.
    pub summarised: usize,
    /// Estimated tokens before.
    pub before_tokens: u64,
    /// Estimated tokens after.
    pub after_tokens: u64,
}

fn estimate(messages: &[Message], schema_chars: usize) -> u64 {
    estimate_tokens(messages.iter().map(Message::char_len).sum::<usize>() + schema_chars)
}

fn head(text: &str, keep: usize) -> String {
    let total = text.chars().count();
    if total <= keep {
        return text.to_string();
    }
    let kept: String = text.chars().take(keep).collect();
    format!(
        "{kept}\n[compacted: {} of {total} characters omitted to stay within the context budget; run the tool again with a narrower query for the rest]",
        total - keep
    )
}

fn label(m: &Message) -> String {
    match m {
        Message::System { .. } => "system".into(),
        Message::User { .. } => "user".into(),
        Message::Assistant { .. } => "assistant".into(),
        Message::Tool { name, .. } => format!("tool:{name}"),
    }
}

fn summary_line(m: &Message) -> String {
    let body = match m {
        Message::Assistant {
            content,
            tool_calls,
        } => {
            let calls: Vec<String> = tool_calls
                .iter()
                .map(|c| format!("{}({})", c.name, c.arguments))
                .collect();
            if calls.is_empty() {
                content.clone()
            } else {
                format!("{content} calls: {}", calls.join(", "))
            }
        }
        Message::System { content } | Message::User { content } | Message::Tool { content, .. } => {
            content.clone()
        }
    };
    let body: String = body.chars().take(KEEP_CHARS).collect();
    format!("[{}] {}", label(m), body)
}

/// The summary of `messages`, at most `limit` characters.
pub fn summarise(messages: &[Message], limit: usize) -> String {
    let mut out = String::from("[Compacted child history]");
    for m in messages {
        let remaining = limit.saturating_sub(out.chars().count() + 1);
        if remaining == 0 {
            break;
        }
        out.push('\n');
        out.extend(summary_line(m).chars().take(remaining));
    }
    out
}

/// Index of the first message of the latest turn (the last assistant message), if any.
fn latest_turn(messages: &[Message]) -> Option<usize> {
    messages
        .iter()
        .rposition(|m| matches!(m, Message::Assistant { .. }))
}

/// Fit `messages` (whose first two are the system prompt and the task) into `budget` tokens
/// alongside `schema_chars` of tool schemas. Returns the request's messages and what was done,
/// or the smallest estimate reached when nothing fits.
pub fn fit(
    messages: &[Message],
    schema_chars: usize,
    budget: u64,
) -> Result<(Option<Vec<Message>>, Compaction), u64> {
    let before = estimate(messages, schema_chars);
    let mut done = Compaction {
        before_tokens: before,
        after_tokens: before,
        ..Default::default()
    };
    if before <= budget {
        return Ok((None, done));
    }
    let mut out = messages.to_vec();
    let fixed = out.len().min(2);
    let latest = latest_turn(&out).unwrap_or(out.len()).max(fixed);

    // 1. Shorten older tool observations, oldest first.
    for i in fixed..latest {
        if estimate(&out, schema_chars) <= budget {
            break;
        }
        if let Message::Tool { content, shown, .. } = &mut out[i] {
            if content.chars().count() > KEEP_CHARS {
                *content = head(content, KEEP_CHARS);
                // The lines are no longer in the text: the values beside it go too.
                *shown = None;
                done.shortened += 1;
            }
        }
    }

    // 2. Fold older turns into one summary, shrinking it until the request fits.
    if estimate(&out, schema_chars) > budget && latest > fixed {
        let older: Vec<Message> = out[fixed..latest].to_vec();
        let tail: Vec<Message> = out[latest..].to_vec();
        let mut limit = SUMMARY_CHARS;
        loop {
            let mut candidate: Vec<Message> = out[..fixed].to_vec();
            candidate.push(Message::User {
                content: summarise(&older, limit),
            });
            candidate.extend(tail.iter().cloned());
            if estimate(&candidate, schema_chars) <= budget || limit <= 200 {
                done.summarised = older.len();
                out = candidate;
                break;
            }
            limit /= 2;
        }
    }

    // 3. Shorten the latest observations as far as needed, largest first.
    let mut keep = KEEP_CHARS;
    while estimate(&out, schema_chars) > budget && keep >= 100 {
        let start = latest_turn(&out).unwrap_or(out.len());
        for m in out.iter_mut().skip(start) {
            if let Message::Tool { content, shown, .. } = m {
                if content.chars().count() > keep + 200 {
                    *content = head(content, keep);
                    *shown = None;
                    done.shortened += 1;
                }
            }
        }
        keep /= 2;
    }

    let after = estimate(&out, schema_chars);
    if after > budget {
        return Err(after);
    }
    done.after_tokens = after;
    Ok((Some(out), done))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;

    fn turn(i: usize, size: usize) -> Vec<Message> {
        vec![
            Message::Assistant {
                content: String::new(),
                tool_calls: vec![ToolCall {
                    id: format!("c{i}"),
                    name: "Read".into(),
                    arguments: "{}".into(),
                }],
            },
            Message::Tool {
                tool_call_id: format!("c{i}"),
                name: "Read".into(),
                content: "x".repeat(size),
                shown: None,
            },
        ]
    }

    fn history(turns: usize, size: usize) -> Vec<Message> {
        let mut m = vec![
            Message::System {
                content: "sys".into(),
            },
            Message::User {
                content: "task".into(),
            },
        ];
        for i in 0..turns {
            m.extend(turn(i, size));
        }
        m
    }

    #[test]
    fn small_requests_are_untouched() {
        let h = history(2, 100);
        let (out, c) = fit(&h, 0, 10_000).unwrap();
        assert_eq!(out, None);
        assert_eq!((c.shortened, c.summarised), (0, 0));
    }

    #[test]
    fn every_budget_is_held_or_refused() {
        for budget in [300u64, 600, 1_000, 2_000, 5_000, 16_000] {
            for turns in [1, 3, 8] {
                let h = history(turns, 20_000);
                match fit(&h, 900, budget) {
                    Ok((out, _)) => {
                        let out = out.unwrap_or_else(|| h.clone());
                        assert!(
                            estimate(&out, 900) <= budget,
                            "budget {budget} turns {turns}"
                        );
                        assert_eq!(&out[..2], &h[..2], "system prompt and task are kept");
                        // Every tool message still follows an assistant message with its call.
                        for (i, m) in out.iter().enumerate() {
                            if let Message::Tool { tool_call_id, .. } = m {
                                let owner = out[..i].iter().rev().find_map(|p| match p {
                                    Message::Assistant { tool_calls, .. } => Some(tool_calls),
                                    _ => None,
                                });
                                assert!(owner.is_some_and(|calls| calls
                                    .iter()
                                    .any(|c| &c.id == tool_call_id)));
                            }
                        }
                    }
                    Err(smallest) => assert!(smallest > budget),
                }
            }
        }
    }

    #[test]
    fn summary_is_capped() {
        let h = history(20, 5_000);
        let s = summarise(&h[2..], SUMMARY_CHARS);
        assert!(s.starts_with("[Compacted child history]\n[assistant]"));
        assert!(s.chars().count() <= SUMMARY_CHARS);
    }
}
