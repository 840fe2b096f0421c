//! The mutable state of one run, and why a step stopped the loop.

use std::collections::BTreeMap;

use crate::llm::Message;
use crate::runner::outcome::TerminalReason;

/// Why the loop stops: at once, or after a wrap-up call when the profile allows one.
pub(crate) enum Stop {
    /// Stop now with this reason and error.
    Terminal(TerminalReason, String),
    /// A budget ran out: ask for a partial answer first.
    Exhausted(TerminalReason, String),
}

/// What a run accumulates from step to step.
pub(crate) struct State {
    /// The conversation so far.
    pub(crate) messages: Vec<Message>,
    /// Tokens used.
    pub(crate) tokens: u64,
    /// Whether any call's usage was estimated.
    pub(crate) estimated: bool,
    /// Model calls made.
    pub(crate) calls: u64,
    /// Requested tool calls by name.
    pub(crate) tool_usage: BTreeMap<String, u64>,
    /// What this run's Reads have seen, so a file changed between two of them is reported.
    pub(crate) read_memory: crate::tools::context::ReadMemory,
}
