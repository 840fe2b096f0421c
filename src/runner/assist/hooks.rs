//! The hooks a small-model assist has into the loop (see the parent module).

use crate::contract::ExploreResult;
use crate::evidence::EvidenceCheck;
use crate::llm::ToolCall;
use crate::runner::observed::Observed;
use crate::runner::outcome::{ParsedResult, TerminalReason};

/// An assist's objection to an answer the gate would accept.
pub(crate) struct Objection {
    /// What the model is told.
    pub(crate) feedback: String,
    /// What the answer says in its open questions if it stands (as `partial`) after all.
    pub(crate) note: String,
    /// Refuse the answer (the model is told `feedback` and answers again); false: it stands
    /// at once as `partial` with `note`, no model call spent.
    pub(crate) ask_again: bool,
}

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

    /// Answer refused: the feedback for a final answer that did not parse, from a child that
    /// still owes tool calls (`offered` tools), in place of the contract's; None to leave it.
    fn answer_refused(&self, _text: &str, _offered: &[&str]) -> Option<String> {
        None
    }

    /// Answer accepted: an objection to an answer the gate would take (its evidence grounded),
    /// given the lines the child saw (`observed`) and its first message (`task`).
    fn answer_accepted(
        &self,
        _result: &ParsedResult,
        _observed: &Observed,
        _task: &str,
    ) -> Option<Objection> {
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

    /// Finish without an answer (`reason`, `error`, the lines the child saw): a partial answer
    /// the assist can give.
    fn no_answer(
        &self,
        _reason: TerminalReason,
        _error: &str,
        _observed: &Observed,
    ) -> Option<ExploreResult> {
        None
    }
}
