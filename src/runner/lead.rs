//! The offline scout's search before the model's first call: its ranked places become the
//! repo-map hint (the best of them opened for the child), and its answer the fallback when the
//! model gives no verified, completed one.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::contract::{ExploreResult, SubagentStatus};
use crate::profile::ResultContract;
use crate::runner::observed::Observed;
use crate::runner::outcome::{ParsedResult, RunOutcome, TerminalReason};
use crate::runner::{RuntimeRunner, REPO_MAP_LINES, SCOUT_TIME_CAP, SCOUT_TIME_SHARE};
use crate::tools::context::ToolContext;
use crate::tools::permissions::PermissionContext;
use crate::tools::registry::ToolRegistry;

/// The places the repo-map hint opens for the child, and the fewest and most lines of each.
const OPENED_PLACES: usize = 3;
const OPENED_LINES: (u64, u64) = (8, 16);
/// Most lines shown of the first place.
const FIRST_OPENED_LINES: u64 = 32;

/// The offline scout's search made before the model's first call.
pub(super) struct ScoutRun {
    /// Its final text.
    text: String,
    /// Its answer (every cited line one it saw).
    answer: ExploreResult,
    /// Its tool calls by name.
    tool_usage: BTreeMap<String, u64>,
    /// Its first places opened for the child.
    opened: Vec<Opened>,
}

/// One place opened for the child: a Read of `path` from line `from` to `to`, its result as
/// shown, for the place the scout cites from line `place`.
struct Opened {
    path: String,
    place: u64,
    from: u64,
    to: u64,
    shown: Value,
}

impl Opened {
    /// Whether `path:line` lies near this place (it would show the same lines again).
    fn near(&self, path: &str, line: u64) -> bool {
        self.path == path && self.place.abs_diff(line) < OPENED_LINES.1
    }

    /// The numbered lines shown.
    fn content(&self) -> &str {
        self.shown["data"]["content"].as_str().unwrap_or_default()
    }
}

/// The repo-map hint: the first message's text, a next call to suggest, and the Read results
/// of the places opened for the child.
pub(super) struct Lead {
    pub(super) hint: String,
    pub(super) example: Option<String>,
    pub(super) opened: Vec<Value>,
    /// The place ranked first, when it and at least one other were opened: an answer from the
    /// hint alone that passes it over gets one second look (see [`SecondLook`]).
    pub(super) first: Option<SecondLook>,
}

/// The index's first place, opened beside others: a child that answers from the opened lines
/// alone, citing others but not it, is asked once to weigh it (a small model tends to pick the
/// place whose words echo the task's, which is less often right than the ranking's first).
#[derive(Debug, Clone)]
pub(super) struct SecondLook {
    /// The place's file, relative.
    pub(super) path: String,
    /// Its lines.
    pub(super) start: u64,
    pub(super) end: u64,
    /// How the hint listed it (`routergroup.go:197 (\`Static\` is defined at ...)`).
    pub(super) listed: String,
}

impl SecondLook {
    /// Whether an answer citing `evidence` passes this place over: it cites nothing in or
    /// within a few lines of it.
    pub(super) fn passed_over(&self, evidence: &[String]) -> bool {
        !evidence.is_empty()
            && !evidence.iter().any(|e| {
                crate::evidence::parse_citation(e).is_some_and(|(path, a, b)| {
                    path.trim_start_matches("./") == self.path
                        && a <= self.end + 3
                        && b + 3 >= self.start
                })
            })
    }

    /// What the child is told.
    pub(super) fn feedback(&self, evidence: &[String]) -> String {
        format!(
            "Before this answer stands: it cites {} but not the place the index ranked first, {}, whose lines are shown above. If that place answers the task too, add it to the evidence (the best first); if it does not, reply with the same JSON object again.",
            evidence.join(", "),
            self.listed
        )
    }
}

/// What the scout's blocking search needs: the tools (confined, deadline-bound) and the task.
struct ScoutSearch {
    registry: Arc<ToolRegistry>,
    permissions: PermissionContext,
    ctx: ToolContext,
    task: String,
    system: String,
    tools: Arc<Vec<Value>>,
    /// Whether the best places are opened for the child (`repo_map_hint` with Read allowed).
    open: bool,
}

impl RuntimeRunner {
    /// Whether this child lets the scout search first: an explore child asking for the hint or
    /// the fallback, with Grep allowed, not already run by the offline model, not cancelled.
    fn wants_scout(&self) -> bool {
        (self.profile.repo_map_hint || self.profile.scout_fallback)
            && self.profile.result_contract == Some(ResultContract::Explore)
            && self.model.route_label() != Some("offline")
            && self.registry.names().contains(&"Grep")
            && !self.cancel.is_cancelled()
    }

    /// The offline scout's answer on `task` and the first place it cites opened, when this
    /// child will use them (see [`Self::run`]): every file access a confined tool call, no
    /// trace or span of its own, at most a tenth of the child's time (30 s at most). None when
    /// the scout has no answer whose evidence it saw.
    pub(super) async fn scout_first(&self, task: &str) -> Option<ScoutRun> {
        if !self.wants_scout() {
            return None;
        }
        let share = Duration::from_secs_f64(self.profile.timeout_seconds * SCOUT_TIME_SHARE);
        let deadline = Instant::now() + share.min(SCOUT_TIME_CAP);
        // The scout searches the code index (Search), which reads no more than Grep may.
        let registry = Arc::new(self.registry.with_search());
        let tools = Arc::new(registry.openai_tools());
        let search = ScoutSearch {
            registry,
            permissions: self.permissions.clone(),
            ctx: ToolContext::new(self.workspace.clone())
                .with_deadline(deadline)
                .with_cancel(self.cancel.flag()),
            task: task.to_string(),
            system: self.profile.rendered_system_prompt(),
            tools,
            open: self.profile.repo_map_hint && self.registry.names().contains(&"Read"),
        };
        let searching =
            tokio::task::spawn_blocking(crate::exec::inherit_caller_sync(move || search.run()));
        tokio::time::timeout_at(deadline.into(), crate::exec::spin_first(searching))
            .await
            .ok()
            .and_then(Result::ok)
            .flatten()
    }

    /// The model's outcome, or, with the profile's `scout_fallback`, the offline scout's answer
    /// in its place when the model gave no verified, completed answer (a completed scout answer
    /// in place of any other; a partial one in place of none, an unverified one, or one without
    /// evidence). The summary says so; the counts stay the model's, the scout's tool calls
    /// added.
    pub(super) fn with_scout_fallback(&self, out: RunOutcome, found: ScoutRun) -> RunOutcome {
        let model_answer = match &out.result {
            Some(ParsedResult::Explore(r)) if out.ungrounded_evidence.is_empty() => Some(r),
            _ => None,
        };
        if !self.profile.scout_fallback
            || self.profile.output_schema.is_some()
            // Only after the model answered or ran out: a model error (a bad key, a throttled
            // provider) must stay visible, never be covered by the scout.
            || !matches!(
                out.terminal_reason,
                TerminalReason::Completed
                    | TerminalReason::CompletedUnverified
                    | TerminalReason::CompletionGateBlocked
                    | TerminalReason::MaxSteps
                    | TerminalReason::TokenBudget
                    | TerminalReason::Timeout
            )
            || self.cancel.is_cancelled()
            || model_answer.is_some_and(|r| r.status == SubagentStatus::Completed)
        {
            return out;
        }
        let mut answer = found.answer;
        let better = answer.status == SubagentStatus::Completed
            || model_answer.is_none_or(|r| r.evidence.is_empty());
        if !better {
            return out;
        }
        let what = match (&out.result, out.ungrounded_evidence.is_empty()) {
            (Some(_), false) => "its evidence was not in what it saw".to_string(),
            (Some(_), true) => "its answer was partial".to_string(),
            (None, _) => format!("it stopped: {}", out.terminal_reason.as_str()),
        };
        tracing::info!(
            session_id = %self.trace.session_id(),
            model_outcome = %what,
            "the model gave no verified answer; the offline scout's answer is returned instead"
        );
        answer.summary = format!(
            "The model gave no verified answer ({what}); this is the offline scout's answer (a keyword search, no model). {}",
            answer.summary
        );
        let mut tool_usage = out.tool_usage;
        for (name, n) in found.tool_usage {
            *tool_usage.entry(name).or_insert(0) += n;
        }
        RunOutcome {
            terminal_reason: TerminalReason::Completed,
            final_text: Some(found.text),
            result: Some(ParsedResult::Explore(answer)),
            repair: None,
            error: None,
            tool_usage,
            ungrounded_evidence: Vec::new(),
            ..out
        }
    }

    /// The repo-map hint from the scout's run (`repo_map_hint`): its ranked places as a list
    /// marked unverified, and the lines of the first one, opened for the child. None when the
    /// profile does not ask for it or the scout found nothing.
    pub(super) fn lead(&self, scout: Option<&ScoutRun>) -> Option<Lead> {
        if !self.profile.repo_map_hint {
            return None;
        }
        let answer = &scout?.answer;
        let places: Vec<(String, u64, u64)> = answer
            .evidence
            .iter()
            .filter_map(|e| crate::evidence::parse_citation(e))
            .take(REPO_MAP_LINES)
            .collect();
        if places.is_empty() {
            return None;
        }
        let opened: &[Opened] = scout.map_or(&[], |s| &s.opened);
        let read_args = |(path, start, _): &(String, u64, u64)| serde_json::json!({"path": path, "start_line": start.saturating_sub(2).max(1), "limit": 40});
        // The first place not opened, else the first, is the next Read to suggest.
        let next = places
            .iter()
            .find(|(path, start, _)| !opened.iter().any(|o| o.near(path, *start)))
            .or(places.first());
        let example = next.map(|p| format!("Read with {}", read_args(p)));
        let hint = hint_text(answer, &places, opened);
        let first = places
            .first()
            .filter(|_| opened.len() >= 2)
            .and_then(|(path, start, end)| {
                let shown = opened.first().filter(|o| o.near(path, *start))?;
                let listed = hint
                    .lines()
                    .find_map(|l| l.strip_prefix("1. "))
                    .unwrap_or(path)
                    .to_string();
                Some(SecondLook {
                    path: path.clone(),
                    // The place as the scout cited it and as the child was shown it.
                    start: (*start).min(shown.from),
                    end: (*end).max(*start).max(shown.to),
                    listed,
                })
            });
        Some(Lead {
            hint,
            example,
            opened: opened.iter().map(|o| o.shown.clone()).collect(),
            first,
        })
    }
}

/// The hint's text: the ranked places, each by the line it starts at and what the scout found
/// there, then the windows opened (or an invitation to read around them).
fn hint_text(answer: &ExploreResult, places: &[(String, u64, u64)], opened: &[Opened]) -> String {
    // Each place by the lines opened of it, else the line it starts at: a small model copies
    // the listed citation, and a range longer than the window opened would cite lines it did
    // not see; a first line alone misses what the window shows further down.
    let listed: Vec<String> = answer
        .evidence
        .iter()
        .filter(|e| crate::evidence::parse_citation(e).is_some())
        .zip(places)
        .enumerate()
        .map(|(i, (cite, (path, start, _)))| {
            let about = answer
                .findings
                .iter()
                .find_map(|f| f.strip_prefix(cite.as_str())?.strip_prefix(": "))
                .map(|f| f.split(". ").next().unwrap_or(f).trim_end_matches('.'))
                .map(|f| format!(" ({f})"))
                .unwrap_or_default();
            let lines = opened
                .iter()
                .find(|o| o.path == *path && o.place == *start)
                .map_or_else(|| start.to_string(), |o| format!("{}-{}", o.from, o.to));
            format!("{}. {path}:{lines}{about}", i + 1)
        })
        .collect();
    let list = format!(
        "Likely places (an offline search of the code index ranked them, best first; unverified, they may not answer the task):\n{}",
        listed.join("\n")
    );
    if opened.is_empty() {
        return format!("{list}\nRead around them to check before you rely on them.");
    }
    let windows: Vec<String> = opened
        .iter()
        .map(|o| format!("{}:\n{}", o.path, o.content().trim_end()))
        .collect();
    format!(
        "{list}\n\nOpened for you (line number | text):\n{}\n\nIf some of these lines answer the task, reply with the final JSON object citing every one of them that does (relative/path:line), the best first; if none does, Read or Grep further.",
        windows.join("\n\n")
    )
}

impl ScoutSearch {
    /// The scout's search on the blocking pool: its answer, kept only when every place it
    /// cites is one it saw, and its first places opened.
    fn run(self) -> Option<ScoutRun> {
        let mut observed = Observed::default();
        let mut tool_usage: BTreeMap<String, u64> = BTreeMap::new();
        let mut execute = |name: &str, args: &str| -> String {
            *tool_usage.entry(name.to_string()).or_insert(0) += 1;
            let args = serde_json::from_str::<Value>(args).unwrap_or(Value::Null);
            let result = self
                .registry
                .execute(name, &args, &self.ctx, &self.permissions)
                .to_value();
            observed.record(name, &result);
            result.to_string()
        };
        let text = crate::llm::scout::search_quietly(
            &self.task,
            &self.system,
            self.tools.clone(),
            &mut execute,
        );
        // The scout answers ExploreResult whatever the child's own result shape is.
        let Ok((answer, _)) =
            ExploreResult::repair(&text, crate::contract::ToolUsage::new(), "completed")
        else {
            return None;
        };
        let places: Vec<(String, u64, u64)> = answer
            .evidence
            .iter()
            .filter_map(|e| crate::evidence::parse_citation(e))
            .collect();
        // The scout cites only what it saw; a citation it did not see is not offered.
        if places.is_empty()
            || places
                .iter()
                .any(|(path, start, end)| !observed.saw_range(path, *start, *end))
        {
            return None;
        }
        let opened = if self.open {
            // A place's window may be sought over its whole definition, not only the part the
            // scout read.
            let whole: Vec<(String, u64, u64)> = answer
                .evidence
                .iter()
                .filter_map(|cite| {
                    let (path, start, end) = crate::evidence::parse_citation(cite)?;
                    let defined_to = definition_end(&answer.findings, cite).unwrap_or(end);
                    Some((path, start, defined_to.max(end)))
                })
                .collect();
            self.open_places(&whole)
        } else {
            Vec::new()
        };
        Some(ScoutRun {
            text,
            answer,
            tool_usage,
            opened,
        })
    }

    /// The first places, a short window each (distinct places only), so that the model can
    /// weigh them against each other.
    fn open_places(&self, places: &[(String, u64, u64)]) -> Vec<Opened> {
        let q = crate::index::rank::parse(&self.task);
        let mut opened: Vec<Opened> = Vec::new();
        for (path, start, end) in places {
            if opened.len() >= OPENED_PLACES {
                break;
            }
            if opened.iter().any(|o| o.near(path, *start)) {
                continue;
            }
            let first = start.saturating_sub(1).max(1);
            // The best place is shown whole when it is short; the others as a first look.
            let most = if opened.is_empty() {
                FIRST_OPENED_LINES
            } else {
                OPENED_LINES.1
            };
            let span = end.saturating_sub(first) + 1;
            let limit = span.clamp(OPENED_LINES.0, most);
            // A place longer than its window is shown where it holds most of the task's words.
            let from = if span > most {
                self.focus(path, first, *end, &q, most).unwrap_or(first)
            } else {
                first
            };
            let args = serde_json::json!({"path": path, "start_line": from, "limit": limit});
            let shown = self
                .registry
                .execute("Read", &args, &self.ctx, &self.permissions)
                .to_value();
            let Some(content) = shown["data"]["content"].as_str() else {
                continue;
            };
            let to = numbered(content).last().map(|(n, _)| *n);
            if let (Some(to), false) = (to, shown["status"].as_str() == Some("error")) {
                opened.push(Opened {
                    path: path.clone(),
                    place: *start,
                    from,
                    to,
                    shown,
                });
            }
        }
        opened
    }

    /// The first line of the `width`-line window of `path`'s lines `first..=end` (at most 400)
    /// that shows the most of the task's words; None when the file cannot be read or no line
    /// holds one. The file is read through the workspace's confinement (the index's reader, a
    /// Read would stop at its output cap), and only the window chosen is shown to the child.
    fn focus(
        &self,
        path: &str,
        first: u64,
        end: u64,
        q: &crate::index::rank::Query,
        width: u64,
    ) -> Option<u64> {
        let text = crate::index::read_text(&self.ctx.workspace, path)?;
        let last = end.min(first.saturating_add(399));
        let lines: Vec<(u64, &str)> = text
            .lines()
            .zip(1u64..)
            .filter(|(_, n)| (first..=last).contains(n))
            .map(|(l, n)| (n, l))
            .collect();
        crate::index::rank::focus(&lines, q, usize::try_from(width).ok()?)
    }
}

/// The lines of a Read result's content (`  12 | text`), with their numbers.
fn numbered(content: &str) -> Vec<(u64, &str)> {
    content
        .lines()
        .filter_map(|l| {
            let (n, text) = l.split_once('|')?;
            let n = n.trim().parse().ok()?;
            Some((n, text.strip_prefix(' ').unwrap_or(text)))
        })
        .collect()
}

/// Where the definition cited as `cite` ends, when the scout read only part of it: its finding
/// says `(read to line N of END)`.
fn definition_end(findings: &[String], cite: &str) -> Option<u64> {
    let finding = findings
        .iter()
        .find(|f| f.strip_prefix(cite).is_some_and(|r| r.starts_with(": ")))?;
    let tail = finding.rsplit_once("(read to line ")?.1;
    let end = tail.split_once(" of ")?.1;
    end.trim_end_matches(['.', ')']).parse().ok()
}
