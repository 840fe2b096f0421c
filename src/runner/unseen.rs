//! Lines a final answer cites that the child never saw, opened for it once: a small model
//! often names the right lines of a function it saw only part of, and insists on them when told
//! to Read first. The runtime makes that Read for it (confined, like every Read), shows the lines
//! in the gate's feedback, and records them as seen: the child then cites them again, having
//! seen them, or drops them. Nothing is taken as grounded before the child was shown it.

use std::time::Instant;

use serde_json::Value;

use crate::evidence::EvidenceCheck;
use crate::runner::observed::Observed;
use crate::runner::RuntimeRunner;
use crate::tools::context::ToolContext;

/// The most unseen items opened, and the most lines of each (an item citing more is left to
/// the child's own Read).
const MOST_ITEMS: usize = 3;
const MOST_LINES: u64 = 40;
/// Lines shown around a cited range, so that the child sees where it sits.
const AROUND: u64 = 2;
/// How near a line the child saw of the same file an unseen range must lie to be opened: the
/// rest of a function it saw part of, not a guess in a file it never looked at.
const NEAR_SEEN: u64 = 40;

/// One cited range opened: the item as cited, and the Read result that showed it.
pub(super) struct OpenedItem {
    pub(super) evidence: String,
    pub(super) path: String,
    pub(super) shown: Value,
}

/// The unobserved items of `ungrounded` (the lines exist, the child never saw them) short
/// enough to open and within [`NEAR_SEEN`] lines of lines it saw of the same file, the first
/// [`MOST_ITEMS`] of them: (item, path, first line, last line).
pub(super) fn openable(
    ungrounded: &[EvidenceCheck],
    observed: &Observed,
) -> Vec<(String, String, u64, u64)> {
    let mut items: Vec<(String, String, u64, u64)> = Vec::new();
    for c in ungrounded.iter().filter(|c| c.reason == Some("unobserved")) {
        let (Some(path), Some(start), Some(end)) = (&c.path, c.start_line, c.end_line) else {
            continue;
        };
        let open = end >= start
            && end - start < MOST_LINES
            && observed.saw_near(path, start, end, NEAR_SEEN)
            && !items.iter().any(|(e, ..)| *e == c.evidence);
        if open && items.len() < MOST_ITEMS {
            items.push((c.evidence.clone(), path.clone(), start, end));
        }
    }
    items
}

impl RuntimeRunner {
    /// Read `items` for the child (each range and [`AROUND`] lines either side, through the
    /// workspace's confinement and the Read tool's own limits, before `deadline`); the items
    /// whose Read succeeded. Nothing when the profile does not allow Read.
    pub(super) async fn open_unseen(
        &self,
        items: Vec<(String, String, u64, u64)>,
        deadline: Instant,
    ) -> Vec<OpenedItem> {
        if items.is_empty() || !self.registry.names().contains(&"Read") {
            return Vec::new();
        }
        let registry = self.registry.clone();
        let permissions = self.permissions.clone();
        let ctx = ToolContext::new(self.workspace.clone())
            .with_deadline(deadline)
            .with_cancel(self.cancel.flag());
        let reading = tokio::task::spawn_blocking(crate::exec::inherit_caller_sync(move || {
            items
                .into_iter()
                .filter_map(|(evidence, path, start, end)| {
                    let from = start.saturating_sub(AROUND).max(1);
                    let limit = end + AROUND - from + 1;
                    let shown =
                        super::read_window(&registry, &ctx, &permissions, &path, from, limit)?;
                    Some(OpenedItem {
                        evidence,
                        path,
                        shown,
                    })
                })
                .collect::<Vec<_>>()
        }));
        tokio::time::timeout_at(deadline.into(), crate::exec::spin_first(reading))
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default()
    }
}

/// The gate's feedback once `opened` are shown: what the rest of the evidence still lacks
/// (`rest`, the gate's own feedback on it), then the opened lines and what to do with them.
pub(super) fn feedback(opened: &[OpenedItem], rest: Option<String>) -> String {
    let cited: Vec<String> = opened.iter().map(|o| format!("{:?}", o.evidence)).collect();
    let windows: Vec<String> = opened
        .iter()
        .map(|o| {
            let content = o.shown["data"]["content"].as_str().unwrap_or_default();
            format!("{}:\n{}", o.path, content.trim_end())
        })
        .collect();
    let opened_part = format!(
        "Your evidence {} cites lines you had not seen, so they are opened for you below (line number | text). If they show what the task asks, reply with the final JSON object again citing them; if they do not, drop them and cite only lines you saw.\n\n{}",
        cited.join(", "),
        windows.join("\n\n")
    );
    match rest {
        Some(rest) => format!("{rest}\n\n{opened_part}"),
        None => opened_part,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unseen(item: &str, path: &str, start: u64, end: u64) -> EvidenceCheck {
        EvidenceCheck {
            evidence: item.into(),
            path: Some(path.into()),
            start_line: Some(start),
            end_line: Some(end),
            total_lines: None,
            grounded: false,
            reason: Some("unobserved"),
            message: String::new(),
        }
    }

    #[test]
    fn only_short_ranges_near_seen_lines_of_the_same_file_are_opened_three_at_most() {
        let mut seen = Observed::default();
        let content: String = (100..=110).map(|n| format!("{n:>4} | x\n")).collect();
        seen.record(
            "Read",
            &serde_json::json!({"status": "ok", "context": {"path_resolved": "a.py"}, "data": {"content": content}}),
        );
        let near = unseen("a.py:60-65", "a.py", 60, 65);
        let far = unseen("a.py:20-25", "a.py", 20, 25);
        let long = unseen("a.py:111-160", "a.py", 111, 160);
        let other = unseen("b.py:100", "b.py", 100, 100);
        let mut missing = unseen("a.py:999", "a.py", 999, 999);
        missing.reason = Some("line_out_of_range");
        let got = openable(
            &[near.clone(), far, long, other, missing, near.clone()],
            &seen,
        );
        assert_eq!(got, [("a.py:60-65".into(), "a.py".into(), 60, 65)]);
        let many: Vec<EvidenceCheck> = (0..5)
            .map(|i| unseen(&format!("a.py:{}", 120 + i), "a.py", 120 + i, 120 + i))
            .collect();
        assert_eq!(openable(&many, &seen).len(), 3);
    }
}
