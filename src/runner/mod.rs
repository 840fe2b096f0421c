//! The ReAct loop that drives one agent: native tool calling, budgets that hold, a completion
//! gate, and a trace.
//!
//! One step is one model call (plus at most one in-step retry after an empty answer). Tool calls
//! of a turn run concurrently on the blocking pool and go back in call order. The loop stops on
//! a valid final answer or on one of the [`TerminalReason`]s; when steps or tokens run out and the
//! profile says `on_budget_exhausted = "partial"`, one last tool-less call asks for the result.
//!
//! Budgets are checked before a call, not after: a call is made only if its estimated cost (the
//! request plus [`ANSWER_RESERVE_TOKENS`]) and the wrap-up's reserve fit what is left of
//! `total_token_budget`, and the wrap-up is compacted into what is left. The wall-clock deadline
//! goes into every request, bounds every tool call, and stops the evidence check.
//!
//! The parts, in the order a run meets them: `steps` (the loop, top to bottom), `turn` (one
//! model call), `tool_calls` (the tool calls of a turn), `answer` (reading the final answer),
//! `gate` (the completion gate), `ending` (how a run ends), with `state` (what a run
//! accumulates), [`outcome`] (what it produced) and [`compaction`] (fitting the history into
//! the context budget). The gate's and the end's rules for evidence are in `grounding`, and
//! every change to an answer's evidence goes through `provenance`, which records each item's
//! source. Small-model assists (the hint, text tool calls, the summary's claims, the places
//! seen) live behind one seam in [`assist`]; the loop calls them only through it.

mod answer;
pub mod assist;
mod budget;
pub(crate) mod compaction;
mod ending;
mod gate;
mod grounding;
pub(crate) mod observed;
pub(crate) mod outcome;
mod plan;
mod provenance;
mod render;
mod resend;
mod state;
mod steps;
mod tool_calls;
mod turn;

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

pub(crate) use crate::cancel::CancelToken;
pub(crate) use outcome::{ParsedResult, RunOutcome, TerminalReason};

use crate::llm::ChatModel;
use crate::profile::RuntimeProfile;
use crate::tools::permissions::PermissionContext;
use crate::tools::registry::ToolRegistry;
use crate::tools::workspace::Workspace;
use crate::trace::Trace;

/// The hint added (not stored) when the model answered with nothing.
pub const EMPTY_RESPONSE_HINT: &str =
    "Your last reply had no content and no tool calls. Reply with the final answer in content, or call a tool.";

/// The share of `timeout_seconds` kept for the wrap-up answer (policy `partial`), at most
/// [`WRAP_UP_TIME_CAP`]: exploring stops that much before the limit.
pub const WRAP_UP_TIME_SHARE: f64 = 0.2;
/// The most time kept for the wrap-up answer.
pub const WRAP_UP_TIME_CAP: Duration = Duration::from_secs(60);

/// Characters kept for the wrap-up's instruction when reserving its tokens.
pub(crate) const WRAP_UP_NOTE_CHARS: usize = 600;
/// Characters of history a wrap-up may carry when it has to be compacted hard: the compacted
/// summary and one shortened observation.
pub(crate) const WRAP_UP_HISTORY_CHARS: usize = compaction::SUMMARY_CHARS + compaction::KEEP_CHARS;

/// What one run needs.
pub struct RuntimeRunner {
    /// The model.
    pub model: Arc<dyn ChatModel>,
    /// Budgets, prompt and contract.
    pub profile: RuntimeProfile,
    /// Tools, already filtered to the profile's allow-list.
    pub registry: Arc<ToolRegistry>,
    /// The registry's OpenAI schemas (computed once, shared by every call).
    pub tool_schemas: Arc<Vec<Value>>,
    /// The confined root.
    pub workspace: Workspace,
    /// `readonly_subagent` for a child.
    pub permissions: PermissionContext,
    /// Where events go.
    pub trace: Arc<Trace>,
    /// Cancellation.
    pub cancel: CancelToken,
    /// Extra system text (e.g. a tool catalogue for a main agent), appended to the prompt.
    pub extra_system: Option<String>,
}

impl RuntimeRunner {
    /// Run the loop on `task` (the rendered user message) until it stops. An explore child
    /// with `repo_map_hint` or `scout_fallback` first lets the offline scout search (a few
    /// milliseconds to a second): its ranked places are the hint's leads, fused with the
    /// model's citations at the end, and its answer is the fallback (`scout_fallback`) when the
    /// model gives no verified, completed one.
    pub async fn run(&self, task: &str) -> RunOutcome {
        let scout = self.scout_first(task).await;
        let (leads, fallback) = scout.map_or((Vec::new(), None), |s| (s.leads, s.fallback));
        let out = self.run_model(task, self.assists(leads)).await;
        match fallback {
            Some(answer) => self.with_scout_fallback(out, answer),
            None => out,
        }
    }
}

#[cfg(test)]
mod tests;
