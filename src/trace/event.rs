//! What a trace records: the event names, and a typed payload for each event the runner writes.
//!
//! Each payload serialises to exactly the JSON the trace has always held (field order included),
//! so traces read by other tools do not change.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::contract::Repair;
use crate::llm::error::ModelErrorKind;
use crate::llm::message::{ToolCall, Usage};
use crate::trace::terminal::TerminalReason;

wire_enum! {
    /// The name of a trace event, written as `event` on every line.
    pub enum EventKind {
        /// A run began: profile, budgets, tools, model.
        RunStart = "run_start",
        /// The task the run was given.
        UserInput = "user_input",
        /// The history was compacted to fit the context budget.
        ContextCompaction = "context_compaction",
        /// A model answer, with usage.
        ModelOutput = "model_output",
        /// A model call failed.
        ModelError = "model_error",
        /// The model answered with nothing; the step is retried once with a hint.
        EmptyResponseRetry = "empty_response_retry",
        /// The model asked for a tool.
        ToolCall = "tool_call",
        /// A tool's result envelope.
        ToolResult = "tool_result",
        /// The completion gate accepted or refused a final answer.
        CompletionGateVerdict = "completion_gate_verdict",
        /// A budget ran out; one tool-less call asks for the result.
        WrapUp = "wrap_up",
        /// Why the run stopped.
        Terminal = "terminal",
        /// The run is over.
        RunEnd = "run_end",
        /// The totals of a session, written when its trace is finalised.
        SessionSummary = "session_summary",
        /// (Parent trace) a child was asked for.
        SubagentRequested = "subagent_requested",
        /// (Parent trace) a child started running.
        SubagentStarted = "subagent_started",
        /// (Parent trace) a child finished with a result.
        SubagentCompleted = "subagent_completed",
        /// (Parent trace) a child finished without one.
        SubagentFailed = "subagent_failed",
    }
    parse_error: |s| -> UnknownEvent { UnknownEvent(s.to_owned()) }
}

impl PartialEq<&str> for EventKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// A name that is not a trace event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "'{0}' is not a trace event name; expected one such as model_output, tool_call or terminal"
)]
pub struct UnknownEvent(pub String);

/// A payload that knows which event it is.
pub trait EventPayload: Serialize {
    /// The event this payload is written under.
    const KIND: EventKind;
}

macro_rules! payload {
    ($ty:ident, $kind:ident) => {
        impl EventPayload for $ty<'_> {
            const KIND: EventKind = EventKind::$kind;
        }
    };
}

/// `run_start`: what the run is about to do.
#[derive(Debug, Serialize)]
pub(crate) struct RunStart<'a> {
    /// The profile name.
    pub profile: &'a str,
    /// The step budget.
    pub max_steps: i64,
    /// Tokens one request may hold.
    pub context_token_budget: i64,
    /// Tokens the whole run may use.
    pub total_token_budget: i64,
    /// The tools offered.
    pub tools: Vec<&'a str>,
    /// The model's description.
    pub model: &'a str,
    /// The model id sent in requests, when the backend has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_id: Option<String>,
}
payload!(RunStart, RunStart);

/// `user_input`: the task.
#[derive(Debug, Serialize)]
pub(crate) struct UserInput<'a> {
    /// The rendered task.
    pub content: &'a str,
}
payload!(UserInput, UserInput);

/// `context_compaction`: what fitting the context budget changed.
#[derive(Debug, Serialize)]
pub(crate) struct ContextCompaction {
    /// Tool observations shortened.
    pub shortened: usize,
    /// Messages folded into the summary.
    pub summarised: usize,
    /// Estimated tokens before.
    pub before_tokens: u64,
    /// Estimated tokens after.
    pub after_tokens: u64,
}

impl EventPayload for ContextCompaction {
    const KIND: EventKind = EventKind::ContextCompaction;
}

/// `model_error`: a failed model call.
#[derive(Debug, Serialize)]
pub(crate) struct ModelErrorEvent<'a> {
    /// The classification.
    pub kind: ModelErrorKind,
    /// What happened.
    pub message: &'a str,
    /// The HTTP status, when there was one.
    pub status: Option<u16>,
}
payload!(ModelErrorEvent, ModelError);

/// `model_output`: one model answer.
#[derive(Debug, Serialize)]
pub(crate) struct ModelOutput<'a> {
    /// The answer text.
    pub raw: &'a str,
    /// Usage, reported or estimated.
    pub usage: Usage,
    /// Whether `usage` is an estimate.
    pub usage_estimated: bool,
    /// Facts about the answer.
    pub meta: ModelOutputMeta<'a>,
    /// The tool calls requested.
    pub tool_calls: &'a [ToolCall],
}
payload!(ModelOutput, ModelOutput);

/// The `meta` of a `model_output` event.
#[derive(Debug, Serialize)]
pub(crate) struct ModelOutputMeta<'a> {
    /// Why the model stopped.
    pub finish_reason: Option<&'a str>,
    /// Characters in the answer text.
    pub content_len: usize,
    /// Tool calls requested.
    pub tool_calls_count: usize,
    /// The estimated prompt tokens of the request.
    pub prompt_estimate: u64,
    /// `"text"` when the tool calls were written as text in the content and taken from it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_format: Option<&'a str>,
}

/// `empty_response_retry`: the model answered with nothing.
#[derive(Debug, Serialize)]
pub(crate) struct EmptyResponseRetry<'a> {
    /// Why the model stopped.
    pub finish_reason: Option<&'a str>,
}
payload!(EmptyResponseRetry, EmptyResponseRetry);

/// `tool_call`: a requested tool call.
#[derive(Debug, Serialize)]
pub(crate) struct ToolCallEvent<'a> {
    /// The tool name.
    pub tool: &'a str,
    /// The arguments (parsed when they are JSON, else the raw text).
    pub args: Value,
    /// The call id.
    pub tool_call_id: &'a str,
}
payload!(ToolCallEvent, ToolCall);

/// `tool_result`: a tool call's envelope.
#[derive(Debug, Serialize)]
pub(crate) struct ToolResultEvent<'a> {
    /// The tool name.
    pub tool: &'a str,
    /// The call id.
    pub tool_call_id: &'a str,
    /// `success`, `partial` or `error`.
    pub status: &'a str,
    /// The error code, for an error.
    pub error_code: Option<&'a str>,
    /// The whole envelope.
    pub result: Value,
}
payload!(ToolResultEvent, ToolResult);

/// `completion_gate_verdict`: the gate's decision on a final answer.
#[derive(Debug, Serialize)]
#[serde(tag = "verdict")]
pub(crate) enum GateVerdict<'a> {
    /// Accepted.
    #[serde(rename = "PASS")]
    Pass {
        /// The repair that was needed, if any.
        repair: Option<Repair>,
    },
    /// Refused.
    #[serde(rename = "FAIL")]
    Fail {
        /// What the model is told.
        feedback: &'a str,
        /// Refusals so far in this run.
        blocks: i64,
    },
}
payload!(GateVerdict, CompletionGateVerdict);

/// `wrap_up`: a budget ran out and the run asks for its result.
#[derive(Debug, Serialize)]
pub(crate) struct WrapUp {
    /// The budget that ran out.
    pub reason: TerminalReason,
}

impl EventPayload for WrapUp {
    const KIND: EventKind = EventKind::WrapUp;
}

/// `terminal`: why the run stopped.
#[derive(Debug, Serialize)]
pub(crate) struct Terminal<'a> {
    /// The reason.
    pub reason: TerminalReason,
    /// The details.
    pub details: TerminalDetails<'a>,
}
payload!(Terminal, Terminal);

/// The `details` of a `terminal` event.
#[derive(Debug, Serialize)]
pub(crate) struct TerminalDetails<'a> {
    /// What went wrong, for runs without a result.
    pub error: Option<&'a str>,
    /// Whether there is a parsed result.
    pub has_result: bool,
    /// The repair the gate made, if any.
    pub repair: Option<Repair>,
    /// The result's evidence, item for item with its source (`model`, `index`, `both`,
    /// `seen`); absent when the result has none.
    #[serde(skip_serializing_if = "<[(String, String)]>::is_empty")]
    pub evidence: &'a [(String, String)],
    /// Tokens used.
    pub total_tokens: u64,
    /// Whether any usage was estimated.
    pub usage_estimated: bool,
}

/// `run_end`: the run is over.
#[derive(Debug, Serialize)]
pub(crate) struct RunEnd {
    /// Model calls made.
    pub model_calls: u64,
}

impl EventPayload for RunEnd {
    const KIND: EventKind = EventKind::RunEnd;
}

/// `session_summary`: the totals of a session.
#[derive(Debug, Serialize)]
pub(crate) struct SessionSummary {
    /// The highest step recorded.
    pub steps: u64,
    /// `tool_call` events recorded.
    pub tools_used: usize,
    /// Summed `prompt_tokens`, `completion_tokens` and `total_tokens` of every `model_output`.
    pub total_usage: Map<String, Value>,
}

impl EventPayload for SessionSummary {
    const KIND: EventKind = EventKind::SessionSummary;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_round_trip_through_text_and_serde() {
        for kind in EventKind::ALL {
            let name = kind.to_string();
            assert_eq!(name.parse::<EventKind>(), Ok(kind));
            assert_eq!(serde_json::to_value(kind).unwrap(), json!(name));
        }
        assert_eq!(
            "subagent_failed".parse::<EventKind>(),
            Ok(EventKind::SubagentFailed)
        );
        assert_eq!(
            "model_call".parse::<EventKind>().unwrap_err().to_string(),
            "'model_call' is not a trace event name; expected one such as model_output, tool_call or terminal"
        );
    }

    #[test]
    fn payloads_serialise_to_the_historic_json() {
        let text = |v: &dyn erased::Ser| v.text();
        assert_eq!(
            text(&GateVerdict::Pass {
                repair: Some(Repair::Fence)
            }),
            r#"{"verdict":"PASS","repair":"fence"}"#
        );
        assert_eq!(
            text(&GateVerdict::Fail {
                feedback: "no",
                blocks: 2
            }),
            r#"{"verdict":"FAIL","feedback":"no","blocks":2}"#
        );
        assert_eq!(
            text(&Terminal {
                reason: TerminalReason::MaxSteps,
                details: TerminalDetails {
                    error: Some("used all 3 steps"),
                    has_result: false,
                    repair: None,
                    evidence: &[],
                    total_tokens: 9,
                    usage_estimated: true,
                },
            }),
            r#"{"reason":"max_steps","details":{"error":"used all 3 steps","has_result":false,"repair":null,"total_tokens":9,"usage_estimated":true}}"#
        );
        assert_eq!(
            text(&Terminal {
                reason: TerminalReason::Completed,
                details: TerminalDetails {
                    error: None,
                    has_result: true,
                    repair: None,
                    evidence: &[
                        ("a.py:3-18".to_string(), "both".to_string()),
                        ("b.py:40".to_string(), "index".to_string()),
                    ],
                    total_tokens: 9,
                    usage_estimated: false,
                },
            }),
            r#"{"reason":"completed","details":{"error":null,"has_result":true,"repair":null,"evidence":[["a.py:3-18","both"],["b.py:40","index"]],"total_tokens":9,"usage_estimated":false}}"#
        );
        assert_eq!(
            text(&ModelErrorEvent {
                kind: ModelErrorKind::RateLimit,
                message: "429",
                status: Some(429)
            }),
            r#"{"kind":"rate_limit","message":"429","status":429}"#
        );
        assert_eq!(
            text(&WrapUp {
                reason: TerminalReason::TokenBudget
            }),
            r#"{"reason":"token_budget"}"#
        );
    }

    /// Serialising through a trait object, so one helper takes every payload type.
    mod erased {
        pub trait Ser {
            fn text(&self) -> String;
        }
        impl<T: serde::Serialize> Ser for T {
            fn text(&self) -> String {
                serde_json::to_string(self).unwrap()
            }
        }
    }
}
