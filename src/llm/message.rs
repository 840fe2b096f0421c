//! The conversation's parts: messages, the tool calls a model requests, and reported usage.

use serde::{Deserialize, Serialize};

/// A tool call requested by the model. `arguments` is the raw JSON text, parsed by the tool layer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call id (generated when the model gave none).
    pub id: String,
    /// The tool name.
    pub name: String,
    /// The arguments as JSON text.
    pub arguments: String,
}

/// One chat message; [`Message::to_openai`] gives its OpenAI form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// System instructions.
    System {
        /// The text.
        content: String,
    },
    /// User (or harness) input.
    User {
        /// The text.
        content: String,
    },
    /// A model turn: text and/or tool calls.
    Assistant {
        /// The text (may be empty when there are tool calls).
        content: String,
        /// Tool calls requested in this turn.
        tool_calls: Vec<ToolCall>,
    },
    /// A tool result.
    Tool {
        /// The call this answers.
        tool_call_id: String,
        /// The tool name.
        name: String,
        /// The serialised envelope.
        content: String,
        /// What the result showed, as values kept beside `content` (never sent, never
        /// serialised): what the scout reads back instead of parsing the text. None when the
        /// message did not come from a tool run here, or its content was cut.
        #[serde(skip)]
        shown: Option<std::sync::Arc<crate::tools::shown::Shown>>,
    },
}

impl Message {
    /// Characters this message adds to a request (for token estimates).
    pub fn char_len(&self) -> usize {
        match self {
            Message::System { content } | Message::User { content } => content.chars().count(),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                content.chars().count()
                    + tool_calls
                        .iter()
                        .map(|c| c.name.len() + c.arguments.chars().count() + c.id.len() + 40)
                        .sum::<usize>()
            }
            Message::Tool {
                content,
                tool_call_id,
                ..
            } => content.chars().count() + tool_call_id.len() + 20,
        }
    }
}

/// Token usage as providers report it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens in the request.
    pub prompt_tokens: u64,
    /// Tokens in the answer.
    pub completion_tokens: u64,
    /// Their sum (as reported, or computed).
    pub total_tokens: u64,
    /// Of the prompt tokens, those the provider read from its prompt cache
    /// (`prompt_tokens_details.cached_tokens`, Anthropic's `cache_read_input_tokens`); they
    /// are in `prompt_tokens` too, as the budget counts them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
