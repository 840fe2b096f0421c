//! One request to a model, and how large it is.

use serde_json::Value;

use crate::llm::message::Message;

/// One request to a model.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    /// The model id, when known (None lets the backend choose).
    pub model: Option<String>,
    /// The conversation.
    pub messages: Vec<Message>,
    /// Function schemas, OpenAI form; empty means no tools. Shared: a run sends the same ones
    /// on every call.
    pub tools: std::sync::Arc<Vec<Value>>,
    /// `auto` with tools, `none` without.
    pub tool_choice: Option<String>,
    /// The caller's model settings (temperature, `extra_body`, ...), when it gave any.
    pub settings: Option<std::sync::Arc<crate::llm::ModelSettings>>,
    /// When the run that makes this call must be over; a backend that retries does not wait
    /// past it. Never sent on the wire.
    pub deadline: Option<std::time::Instant>,
}

impl ChatRequest {
    /// Characters in the request, schemas included.
    pub fn char_len(&self) -> usize {
        self.messages.iter().map(Message::char_len).sum::<usize>()
            + self
                .tools
                .iter()
                .map(|t| t.to_string().len())
                .sum::<usize>()
    }
}

/// Tokens for a number of characters: a deliberately pessimistic 3 characters per token, so that
/// budgets hold even for providers that report no usage.
pub fn estimate_tokens(chars: usize) -> u64 {
    chars.div_ceil(3) as u64
}
