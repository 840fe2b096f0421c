//! The mutable state of one run, why a step stopped the loop, and how the run ends.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::contract::Repair;
use crate::evidence::EvidenceCheck;
use crate::llm::Message;
use crate::runner::outcome::{ParsedResult, TerminalReason};

/// Why the loop stops: at once, or after a wrap-up call when the profile allows one.
pub(crate) enum Stop {
    /// Stop now with this reason and error.
    Terminal(TerminalReason, String),
    /// A budget ran out: ask for a partial answer first.
    Exhausted(TerminalReason, String),
    /// The provider refused the request as invalid (so a call with `tool_choice: "required"`
    /// can be made again with `auto`).
    Refused(String),
}

/// The most successful calls a run remembers for spotting a repeat (a run makes a few dozen).
pub(crate) const MAX_SUCCEEDED: usize = 256;

/// What a run accumulates from step to step.
pub(crate) struct State {
    /// The conversation so far.
    pub(crate) messages: Vec<Message>,
    /// Tokens used.
    pub(crate) tokens: u64,
    /// Of those, prompt tokens.
    pub(crate) input_tokens: u64,
    /// Of those, completion tokens.
    pub(crate) output_tokens: u64,
    /// Of the prompt tokens, those read from the provider's prompt cache.
    pub(crate) cached_tokens: u64,
    /// Whether any call's usage was estimated.
    pub(crate) estimated: bool,
    /// Model calls made.
    pub(crate) calls: u64,
    /// Requested tool calls by name.
    pub(crate) tool_usage: BTreeMap<String, u64>,
    /// What this run's Reads have seen, so a file changed between two of them is reported.
    pub(crate) read_memory: crate::tools::context::ReadMemory,
    /// The lines the child was shown (Read windows, Grep matches and context).
    pub(crate) observed: crate::runner::observed::Observed,
    /// Tool calls that did not fail.
    pub(crate) successful_tools: u64,
    /// The last call that failed: (tool, arguments as canonical JSON, step, error message).
    pub(crate) last_failure: Option<(String, String, u64, String)>,
    /// The calls that succeeded: (tool, arguments as canonical JSON, step), at most
    /// [`MAX_SUCCEEDED`], so that the same search is not run (and its result sent) again.
    pub(crate) succeeded: Vec<(String, String, u64)>,
    /// The run's small-model assists, hooked in at a few points (see `runner::assist`).
    pub(crate) assists: crate::runner::assist::Assists,
    /// The Read results in `messages`, which later requests shorten once used (see `resend`).
    pub(crate) reads: Vec<crate::runner::resend::ShownRead>,
}

impl State {
    /// A run's state before its first call: the system prompt and the first user message.
    pub(crate) fn new(system: String, first: String) -> Self {
        Self {
            messages: vec![
                Message::System { content: system },
                Message::User { content: first },
            ],
            tokens: 0,
            input_tokens: 0,
            output_tokens: 0,
            cached_tokens: 0,
            estimated: false,
            calls: 0,
            tool_usage: BTreeMap::new(),
            read_memory: crate::tools::context::ReadMemory::new(),
            observed: crate::runner::observed::Observed::default(),
            successful_tools: 0,
            last_failure: None,
            succeeded: Vec::new(),
            assists: crate::runner::assist::Assists::default(),
            reads: Vec::new(),
        }
    }
}

/// `ExploreResult` is a few hundred tokens, a tool-call turn fewer.
pub const ANSWER_RESERVE_TOKENS: u64 = 1_000;

/// What one model call is: its tools, a hint for this call only, and how it may spend.
pub(crate) struct CallSpec<'a> {
    /// The tool schemas sent (none for the wrap-up).
    pub(crate) tools: &'a Arc<Vec<Value>>,
    /// Their size in characters.
    pub(crate) schema_chars: usize,
    /// A user message added to this request only.
    pub(crate) hint: Option<&'a str>,
    /// Tokens that must stay unspent after this call (the wrap-up's share).
    pub(crate) reserve: u64,
    /// The wrap-up: its request is compacted into whatever the total budget has left.
    pub(crate) wrap_up: bool,
    /// `tool_choice` for a call with tools: `auto`, or `required` while the child must still
    /// make tool calls.
    pub(crate) tool_choice: &'a str,
}

/// The largest model answer (content plus tool-call names and arguments) a run accepts. A real
/// answer is a few kilobytes; a model returning megabytes would make every later phase (trace,
/// redaction, the gate's repair, the next request) slow past the wall-clock limit.
pub const MAX_ANSWER_BYTES: usize = 1 << 20;

/// How a run ends: why, and what the outcome carries (the answer, its repair, the error, the
/// evidence that could not be grounded).
pub(crate) struct Ending {
    pub(crate) reason: TerminalReason,
    pub(crate) final_text: Option<String>,
    pub(crate) result: Option<ParsedResult>,
    pub(crate) repair: Option<Repair>,
    pub(crate) error: Option<String>,
    pub(crate) ungrounded: Vec<EvidenceCheck>,
}

impl Ending {
    /// A run that stopped for `reason` without an answer; `error` says why.
    pub(crate) fn stopped(reason: TerminalReason, error: String) -> Self {
        Self {
            reason,
            final_text: None,
            result: None,
            repair: None,
            error: Some(error),
            ungrounded: Vec::new(),
        }
    }

    /// A run that ends with the model's answer `text`, parsed as `result`.
    pub(crate) fn answered(
        reason: TerminalReason,
        text: String,
        result: ParsedResult,
        repair: Option<Repair>,
    ) -> Self {
        Self {
            reason,
            final_text: Some(text),
            result: Some(result),
            repair,
            error: None,
            ungrounded: Vec::new(),
        }
    }

    /// The same ending, with `error` saying why the answer is not a completed one.
    pub(crate) fn with_error(self, error: String) -> Self {
        Self {
            error: Some(error),
            ..self
        }
    }

    /// The same ending, with the cited evidence the child was not shown.
    pub(crate) fn with_ungrounded(self, ungrounded: Vec<EvidenceCheck>) -> Self {
        Self { ungrounded, ..self }
    }

    /// The same ending, with an answer built without the model's text.
    pub(crate) fn with_result(self, result: ParsedResult) -> Self {
        Self {
            result: Some(result),
            ..self
        }
    }
}
