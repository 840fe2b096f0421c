//! The hooks a small-model assist has into the loop (see the parent module).

use crate::contract::ExploreResult;
use crate::evidence::EvidenceCheck;
use crate::llm::ToolCall;
use crate::runner::outcome::{ParsedResult, TerminalReason};

/// A small-model assist's hooks into the loop. Each has a default that changes nothing, so an
/// assist implements only its own.
pub(crate) trait Assist: Send + Sync {
    /// Text for the first message, after the task.
    fn first_message(&self) -> Option<String> {
        None
    }

    /// The tool call to quote when the gate asks a child to explore before it answers.
    fn example_call(&self) -> Option<String> {
        None
    }

    /// Model output: the tool calls a model that made none wrote in its `content` (`offered`
    /// tools, `step` for unique ids, `cut` when the answer stopped at its token cap).
    fn model_output(
        &self,
        _content: &str,
        _offered: &[&str],
        _step: u64,
        _cut: bool,
    ) -> Option<Vec<ToolCall>> {
        None
    }

    /// An answer's evidence items that could not be grounded (after the gate's last refusal,
    /// or in a wrap-up answer): those the assist accounts for leave the model's evidence;
    /// returns the rest.
    fn ungrounded_items(
        &self,
        _result: &mut ParsedResult,
        ungrounded: Vec<EvidenceCheck>,
    ) -> Vec<EvidenceCheck> {
        ungrounded
    }

    /// Finish: an explore answer as it ends (each item's source already set), `verified` when
    /// its evidence is grounded.
    fn finish(&self, answer: ExploreResult, _verified: bool) -> ExploreResult {
        answer
    }

    /// Finish without an answer (`reason`, `error`): a partial answer the assist can give.
    fn no_answer(&self, _reason: TerminalReason, _error: &str) -> Option<ExploreResult> {
        None
    }
}
