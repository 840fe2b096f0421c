//! What a run produced: why it stopped, the parsed answer, and its counts.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::contract::{ExploreResult, Repair, ToolUsage, VerificationResult};
use crate::evidence::EvidenceCheck;
use crate::llm::Message;

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

/// A parsed final answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParsedResult {
    /// An explore answer.
    Explore(ExploreResult),
    /// A verification answer.
    Verification(VerificationResult),
    /// An answer that met a caller's `output_schema`.
    Custom(crate::schema::CustomResult),
    /// Free text, for a profile without a result contract (a main agent).
    Text(String),
}

impl ParsedResult {
    /// Whether the answer follows a contract (not free text).
    pub fn is_structured(&self) -> bool {
        !matches!(self, ParsedResult::Text(_))
    }

    /// The evidence the answer cites (none for free text).
    pub fn evidence(&self) -> &[String] {
        match self {
            ParsedResult::Explore(r) => &r.evidence,
            ParsedResult::Verification(r) => &r.evidence,
            ParsedResult::Custom(r) => &r.evidence,
            ParsedResult::Text(_) => &[],
        }
    }
}

/// Everything a run produced.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// Why it stopped.
    pub terminal_reason: TerminalReason,
    /// The accepted final text, if any.
    pub final_text: Option<String>,
    /// The parsed result: the accepted answer, or the wrap-up answer after a budget ran out.
    pub result: Option<ParsedResult>,
    /// The repair the gate made to accept the answer, if any.
    pub repair: Option<Repair>,
    /// What went wrong, for runs without a result.
    pub error: Option<String>,
    /// Model calls made (in-step retries and the wrap-up included).
    pub model_calls: u64,
    /// Steps used.
    pub steps: u64,
    /// Requested tool calls by name (denied and unknown ones included).
    pub tool_usage: ToolUsage,
    /// Tokens used: provider-reported where given, estimated otherwise.
    pub token_usage: u64,
    /// Of those, prompt (input) tokens.
    pub input_tokens: u64,
    /// Of those, completion (output) tokens.
    pub output_tokens: u64,
    /// Of the input tokens, those the provider read from its prompt cache.
    pub cached_input_tokens: u64,
    /// Whether any call's usage had to be estimated.
    pub usage_estimated: bool,
    /// Evidence items the gate could not ground (kept on a `completed_unverified` result).
    pub ungrounded_evidence: Vec<EvidenceCheck>,
    /// The whole conversation of the run.
    pub messages: Vec<Message>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_reasons_round_trip_through_text_and_serde() {
        for reason in TerminalReason::ALL {
            let text = reason.to_string();
            assert_eq!(text.parse::<TerminalReason>(), Ok(reason));
            assert_eq!(
                serde_json::to_value(reason).unwrap(),
                serde_json::json!(text)
            );
            assert_eq!(
                serde_json::from_value::<TerminalReason>(serde_json::json!(text)).unwrap(),
                reason
            );
        }
        assert_eq!(
            TerminalReason::CompletedUnverified.to_string(),
            "completed_unverified"
        );
        assert_eq!(
            "done".parse::<TerminalReason>().unwrap_err().to_string(),
            "'done' is not a terminal reason; expected one of completed, completed_unverified, empty_response_failed, completion_gate_blocked, max_steps, token_budget, model_error, timeout, cancelled, context_budget, rate_limited, runtime_error"
        );
    }
}
