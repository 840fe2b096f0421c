//! Why a run stopped: the terminal reasons a trace's `terminal` event and a launch result name.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Why a run stopped. The first seven are the reference's; `timeout`, `cancelled`,
/// `context_budget` and `rate_limited` are ours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TerminalReason {
    /// A valid final answer.
    Completed,
    /// A final answer whose evidence could not all be grounded after the gate's retries.
    CompletedUnverified,
    /// Two empty answers.
    EmptyResponseFailed,
    /// Invalid final answers beyond the gate's retries.
    CompletionGateBlocked,
    /// The step budget ran out.
    MaxSteps,
    /// The next call would not fit the token budget (with the wrap-up's reserve), or a
    /// provider reported more than it.
    TokenBudget,
    /// The model failed (error, refusal, unusable answer).
    ModelError,
    /// The wall-clock limit passed.
    Timeout,
    /// Someone cancelled the run.
    Cancelled,
    /// Even a fully compacted request does not fit the context budget.
    ContextBudget,
    /// The provider kept refusing for load (429) or asked to wait past the run's deadline.
    RateLimited,
    /// The reference's name for every failed child; the launch result's `failure_reason` says
    /// which of the reasons above it was.
    RuntimeError,
}

impl TerminalReason {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            TerminalReason::Completed => "completed",
            TerminalReason::CompletedUnverified => "completed_unverified",
            TerminalReason::EmptyResponseFailed => "empty_response_failed",
            TerminalReason::CompletionGateBlocked => "completion_gate_blocked",
            TerminalReason::MaxSteps => "max_steps",
            TerminalReason::TokenBudget => "token_budget",
            TerminalReason::ModelError => "model_error",
            TerminalReason::Timeout => "timeout",
            TerminalReason::Cancelled => "cancelled",
            TerminalReason::ContextBudget => "context_budget",
            TerminalReason::RateLimited => "rate_limited",
            TerminalReason::RuntimeError => "runtime_error",
        }
    }

    /// Every reason, in declaration order.
    pub const ALL: [TerminalReason; 12] = [
        TerminalReason::Completed,
        TerminalReason::CompletedUnverified,
        TerminalReason::EmptyResponseFailed,
        TerminalReason::CompletionGateBlocked,
        TerminalReason::MaxSteps,
        TerminalReason::TokenBudget,
        TerminalReason::ModelError,
        TerminalReason::Timeout,
        TerminalReason::Cancelled,
        TerminalReason::ContextBudget,
        TerminalReason::RateLimited,
        TerminalReason::RuntimeError,
    ];

    /// Whether the run ended with a final answer the gate accepted.
    pub fn is_success(self) -> bool {
        matches!(
            self,
            TerminalReason::Completed | TerminalReason::CompletedUnverified
        )
    }
}

impl fmt::Display for TerminalReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A terminal reason name that is not one of [`TerminalReason::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not a terminal reason; expected one of completed, completed_unverified, empty_response_failed, completion_gate_blocked, max_steps, token_budget, model_error, timeout, cancelled, context_budget, rate_limited, runtime_error")]
pub struct UnknownTerminalReason(pub String);

impl FromStr for TerminalReason {
    type Err = UnknownTerminalReason;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TerminalReason::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| UnknownTerminalReason(s.to_owned()))
    }
}
