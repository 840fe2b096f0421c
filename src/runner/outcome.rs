//! What a run produced: why it stopped, the parsed answer, and its counts.

use crate::contract::{ExploreResult, Repair, ToolUsage, VerificationResult};
use crate::evidence::EvidenceCheck;
use crate::llm::Message;

pub use crate::trace::TerminalReason;

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
