//! Why a run stopped: the terminal reasons a trace's `terminal` event and a launch result name.

wire_enum! {
    /// Why a run stopped. The first seven are the reference's; `timeout`, `cancelled`,
    /// `context_budget` and `rate_limited` are ours.
    pub enum TerminalReason {
        /// A valid final answer.
        Completed = "completed",
        /// A final answer whose evidence could not all be grounded after the gate's retries.
        CompletedUnverified = "completed_unverified",
        /// Two empty answers.
        EmptyResponseFailed = "empty_response_failed",
        /// Invalid final answers beyond the gate's retries.
        CompletionGateBlocked = "completion_gate_blocked",
        /// The step budget ran out.
        MaxSteps = "max_steps",
        /// The next call would not fit the token budget (with the wrap-up's reserve), or a
        /// provider reported more than it.
        TokenBudget = "token_budget",
        /// The model failed (error, refusal, unusable answer).
        ModelError = "model_error",
        /// The wall-clock limit passed.
        Timeout = "timeout",
        /// Someone cancelled the run.
        Cancelled = "cancelled",
        /// Even a fully compacted request does not fit the context budget.
        ContextBudget = "context_budget",
        /// The provider kept refusing for load (429) or asked to wait past the run's deadline.
        RateLimited = "rate_limited",
        /// The reference's name for every failed child; the launch result's `failure_reason` says
        /// which of the reasons above it was.
        RuntimeError = "runtime_error",
    }
    parse_error: |s| -> UnknownTerminalReason { UnknownTerminalReason(s.to_owned()) }
}

impl TerminalReason {
    /// Whether the run ended with a final answer the gate accepted.
    pub fn is_success(self) -> bool {
        matches!(
            self,
            TerminalReason::Completed | TerminalReason::CompletedUnverified
        )
    }
}

/// A terminal reason name that is not one of [`TerminalReason::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not a terminal reason; expected one of completed, completed_unverified, empty_response_failed, completion_gate_blocked, max_steps, token_budget, model_error, timeout, cancelled, context_budget, rate_limited, runtime_error")]
pub struct UnknownTerminalReason(pub String);
