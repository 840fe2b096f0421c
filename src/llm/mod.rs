//! The model side: OpenAI chat-completions shaped requests and responses, and the normalisation
//! of whatever a model backend returns into one [`ChatResponse`].
//!
//! A backend may return an OpenAI `ChatCompletion` (`choices[0].message`, `finish_reason`,
//! `usage`), a short dict `{content, tool_calls: [{id?, name, arguments}], usage?,
//! finish_reason?}`, or a plain string (a final answer). [`ChatResponse::from_value`] accepts all
//! three and says exactly what was wrong with anything else.

pub mod env;
pub mod openai;
pub mod scout;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

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

/// One chat message, in OpenAI form when serialised with [`Message::to_openai`].
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
    },
}

impl Message {
    /// The OpenAI chat-completions form of this message.
    pub fn to_openai(&self) -> Value {
        match self {
            Message::System { content } => json!({"role": "system", "content": content}),
            Message::User { content } => json!({"role": "user", "content": content}),
            Message::Assistant {
                content,
                tool_calls,
            } if tool_calls.is_empty() => {
                json!({"role": "assistant", "content": content})
            }
            Message::Assistant {
                content,
                tool_calls,
            } => json!({
                "role": "assistant",
                "content": content,
                "tool_calls": tool_calls.iter().map(|c| json!({
                    "id": c.id, "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                })).collect::<Vec<_>>(),
            }),
            Message::Tool {
                tool_call_id,
                name,
                content,
            } => {
                json!({"role": "tool", "tool_call_id": tool_call_id, "name": name, "content": content})
            }
        }
    }

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
}

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
}

impl ChatRequest {
    /// The chat-completions keyword arguments: `{model, messages, tools?, tool_choice?}`.
    pub fn to_openai(&self) -> Value {
        let mut body = Map::new();
        body.insert(
            "model".into(),
            self.model.clone().map(Value::String).unwrap_or(Value::Null),
        );
        body.insert(
            "messages".into(),
            Value::Array(self.messages.iter().map(Message::to_openai).collect()),
        );
        if !self.tools.is_empty() {
            body.insert("tools".into(), Value::Array(self.tools.as_ref().clone()));
        }
        if let Some(choice) = &self.tool_choice {
            body.insert("tool_choice".into(), Value::String(choice.clone()));
        }
        Value::Object(body)
    }

    /// Read a chat-completions request (`{model?, messages, tools?, tool_choice?}`), the inverse
    /// of [`ChatRequest::to_openai`]. The error names the offending field.
    pub fn from_openai(v: &Value) -> Result<ChatRequest, BadResponse> {
        let messages = v.get("messages").and_then(Value::as_array).ok_or_else(|| {
            BadResponse("request['messages'] must be a list of chat messages".into())
        })?;
        let text = |m: &Value, key: &str| {
            m.get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let mut out = Vec::with_capacity(messages.len());
        for (i, m) in messages.iter().enumerate() {
            let content = content_text(m.get("content"))?;
            out.push(match m.get("role").and_then(Value::as_str).unwrap_or_default() {
                "system" | "developer" => Message::System { content },
                "user" => Message::User { content },
                "assistant" => Message::Assistant { content, tool_calls: parse_tool_calls(m.get("tool_calls"))? },
                "tool" => Message::Tool { tool_call_id: text(m, "tool_call_id"), name: text(m, "name"), content },
                other => {
                    return Err(BadResponse(format!(
                        "request['messages'][{i}]['role'] must be system, user, assistant or tool, got {other:?}"
                    )))
                }
            });
        }
        Ok(ChatRequest {
            model: v.get("model").and_then(Value::as_str).map(str::to_owned),
            messages: out,
            tools: std::sync::Arc::new(
                v.get("tools")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default(),
            ),
            tool_choice: v
                .get("tool_choice")
                .and_then(Value::as_str)
                .map(str::to_owned),
        })
    }

    /// The same JSON as [`ChatRequest::to_openai`], written straight to text without building a
    /// value tree first (the request is re-sent on every call, schemas and history included).
    pub fn to_openai_string(&self) -> String {
        let body = WireRequest {
            model: self.model.as_deref(),
            messages: self.messages.iter().map(WireMessage::from).collect(),
            tools: &self.tools,
            tool_choice: self.tool_choice.as_deref(),
        };
        serde_json::to_string(&body).unwrap_or_default()
    }

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

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    arguments: &'a str,
}

#[derive(Serialize)]
struct WireCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum WireMessage<'a> {
    Text {
        role: &'static str,
        content: &'a str,
    },
    Calls {
        role: &'static str,
        content: &'a str,
        tool_calls: Vec<WireCall<'a>>,
    },
    Tool {
        role: &'static str,
        tool_call_id: &'a str,
        name: &'a str,
        content: &'a str,
    },
}

impl<'a> From<&'a Message> for WireMessage<'a> {
    fn from(m: &'a Message) -> Self {
        match m {
            Message::System { content } => WireMessage::Text {
                role: "system",
                content,
            },
            Message::User { content } => WireMessage::Text {
                role: "user",
                content,
            },
            Message::Assistant {
                content,
                tool_calls,
            } if tool_calls.is_empty() => WireMessage::Text {
                role: "assistant",
                content,
            },
            Message::Assistant {
                content,
                tool_calls,
            } => WireMessage::Calls {
                role: "assistant",
                content,
                tool_calls: tool_calls
                    .iter()
                    .map(|c| WireCall {
                        id: &c.id,
                        kind: "function",
                        function: WireFunction {
                            name: &c.name,
                            arguments: &c.arguments,
                        },
                    })
                    .collect(),
            },
            Message::Tool {
                tool_call_id,
                name,
                content,
            } => WireMessage::Tool {
                role: "tool",
                tool_call_id,
                name,
                content,
            },
        }
    }
}

#[derive(Serialize)]
struct WireRequest<'a> {
    model: Option<&'a str>,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: &'a Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'a str>,
}

/// Tokens for a number of characters: a deliberately pessimistic 3 characters per token, so that
/// budgets hold even for providers that report no usage.
pub fn estimate_tokens(chars: usize) -> u64 {
    chars.div_ceil(3) as u64
}

/// A normalised model answer.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChatResponse {
    /// The text (empty when none).
    pub content: String,
    /// Requested tool calls.
    pub tool_calls: Vec<ToolCall>,
    /// Why the model stopped (`stop`, `tool_calls`, `length`, ...).
    pub finish_reason: Option<String>,
    /// Reported usage, if any.
    pub usage: Option<Usage>,
}

/// A response that cannot be understood; the message says what was returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadResponse(pub String);

fn describe(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() > 200 {
        format!("{}…", text.chars().take(200).collect::<String>())
    } else {
        text
    }
}

fn content_text(v: Option<&Value>) -> Result<String, BadResponse> {
    match v {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        // Content parts: join the text of each part.
        Some(Value::Array(parts)) => Ok(parts
            .iter()
            .filter_map(|p| match p {
                Value::String(s) => Some(s.clone()),
                Value::Object(o) => o.get("text").and_then(Value::as_str).map(str::to_owned),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("")),
        Some(other) => Err(BadResponse(format!(
            "model response content must be a string or a list of text parts, got {}",
            describe(other)
        ))),
    }
}

fn parse_usage(v: Option<&Value>) -> Result<Option<Usage>, BadResponse> {
    let Some(obj) = v.filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let Value::Object(map) = obj else {
        return Err(BadResponse(format!(
            "model response usage must be an object, got {}",
            describe(obj)
        )));
    };
    let num = |k: &str| -> Result<Option<u64>, BadResponse> {
        match map.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => n
                .as_u64()
                .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
                .map(Some)
                .ok_or_else(|| {
                    BadResponse(format!(
                        "model response usage.{k} must be a non-negative number, got {n}"
                    ))
                }),
            Some(other) => Err(BadResponse(format!(
                "model response usage.{k} must be a number, got {}",
                describe(other)
            ))),
        }
    };
    let prompt = num("prompt_tokens")?.or(num("input_tokens")?).unwrap_or(0);
    let completion = num("completion_tokens")?
        .or(num("output_tokens")?)
        .unwrap_or(0);
    let total = num("total_tokens")?.unwrap_or(prompt + completion);
    Ok(Some(Usage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: total,
    }))
}

fn arguments_text(v: Option<&Value>, idx: usize) -> Result<String, BadResponse> {
    match v {
        None | Some(Value::Null) => Ok("{}".into()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(obj @ Value::Object(_)) => Ok(obj.to_string()),
        Some(other) => Err(BadResponse(format!(
            "tool_calls[{idx}].arguments must be a JSON object or a JSON string, got {}",
            describe(other)
        ))),
    }
}

fn parse_tool_calls(v: Option<&Value>) -> Result<Vec<ToolCall>, BadResponse> {
    let items = match v {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(BadResponse(format!(
                "tool_calls must be a list, got {}",
                describe(other)
            )))
        }
    };
    let mut calls = Vec::with_capacity(items.len());
    for (idx, item) in items.iter().enumerate() {
        let Value::Object(call) = item else {
            return Err(BadResponse(format!(
                "tool_calls[{idx}] must be an object, got {}",
                describe(item)
            )));
        };
        // OpenAI form nests name/arguments under "function"; the short form has them on top.
        let func = match call.get("function") {
            Some(Value::Object(f)) => f,
            _ => call,
        };
        let name = match func.get("name") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
            other => {
                return Err(BadResponse(format!(
                    "tool_calls[{idx}] needs a non-empty string name, got {}",
                    other.map(describe).unwrap_or_else(|| "nothing".into())
                )))
            }
        };
        let id = match call.get("id") {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            _ => format!("call_{}", uuid::Uuid::new_v4().simple()),
        };
        calls.push(ToolCall {
            id,
            name,
            arguments: arguments_text(func.get("arguments"), idx)?,
        });
    }
    Ok(calls)
}

impl ChatResponse {
    /// The short form `{content, tool_calls: [{id, name, arguments}], finish_reason, usage}`.
    pub fn to_short_value(&self) -> Value {
        json!({
            "content": self.content,
            "tool_calls": self.tool_calls.iter().map(|c| json!({"id": c.id, "name": c.name, "arguments": c.arguments})).collect::<Vec<_>>(),
            "finish_reason": self.finish_reason,
            "usage": self.usage,
        })
    }

    /// Normalise a backend's answer: a ChatCompletion, a short dict, or a string.
    pub fn from_value(v: &Value) -> Result<Self, BadResponse> {
        match v {
            Value::String(s) => Ok(ChatResponse { content: s.clone(), ..Default::default() }),
            Value::Object(map) if map.contains_key("choices") => {
                let choice = match map.get("choices") {
                    Some(Value::Array(c)) if !c.is_empty() => &c[0],
                    other => {
                        return Err(BadResponse(format!(
                            "model response has no choices: choices = {}",
                            other.map(describe).unwrap_or_default()
                        )))
                    }
                };
                let message = match choice.get("message") {
                    Some(m @ Value::Object(_)) => m,
                    other => {
                        return Err(BadResponse(format!(
                            "model response choices[0].message must be an object, got {}",
                            other.map(describe).unwrap_or_else(|| "nothing".into())
                        )))
                    }
                };
                let mut tool_calls = parse_tool_calls(message.get("tool_calls"))?;
                if tool_calls.is_empty() {
                    // The legacy single function_call.
                    if let Some(fc @ Value::Object(_)) = message.get("function_call") {
                        tool_calls = parse_tool_calls(Some(&Value::Array(vec![fc.clone()])))?;
                    }
                }
                Ok(ChatResponse {
                    content: content_text(message.get("content"))?,
                    tool_calls,
                    finish_reason: choice.get("finish_reason").and_then(Value::as_str).map(str::to_owned),
                    usage: parse_usage(map.get("usage"))?,
                })
            }
            Value::Object(map) if map.contains_key("content") || map.contains_key("tool_calls") => {
                let known = ["content", "tool_calls", "usage", "finish_reason", "role", "reasoning_content"];
                if let Some(extra) = map.keys().find(|k| !known.contains(&k.as_str())) {
                    return Err(BadResponse(format!(
                        "model response dict has an unknown key '{extra}'; a short response has content, tool_calls, usage and finish_reason"
                    )));
                }
                Ok(ChatResponse {
                    content: content_text(map.get("content"))?,
                    tool_calls: parse_tool_calls(map.get("tool_calls"))?,
                    finish_reason: map.get("finish_reason").and_then(Value::as_str).map(str::to_owned),
                    usage: parse_usage(map.get("usage"))?,
                })
            }
            other => Err(BadResponse(format!(
                "a model must return a ChatCompletion-shaped dict (with 'choices'), a dict with 'content' and/or 'tool_calls', or a str; got {}",
                describe(other)
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_shapes_normalise_alike() {
        let full = json!({"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "Read", "arguments": "{\"path\": \"a\"}"}}]},
            "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}});
        let short = json!({"tool_calls": [{"id": "c1", "name": "Read", "arguments": {"path": "a"}}],
            "finish_reason": "tool_calls", "usage": {"prompt_tokens": 3, "completion_tokens": 2}});
        let a = ChatResponse::from_value(&full).unwrap();
        let b = ChatResponse::from_value(&short).unwrap();
        let args =
            |r: &ChatResponse| serde_json::from_str::<Value>(&r.tool_calls[0].arguments).unwrap();
        assert_eq!(args(&a), json!({"path": "a"}));
        assert_eq!(args(&a), args(&b));
        assert_eq!(
            (
                a.usage,
                a.finish_reason.as_deref(),
                a.tool_calls[0].id.as_str()
            ),
            (b.usage, Some("tool_calls"), "c1")
        );
        assert_eq!(
            a.usage,
            Some(Usage {
                prompt_tokens: 3,
                completion_tokens: 2,
                total_tokens: 5
            })
        );
        let req = ChatRequest {
            model: None,
            messages: vec![
                Message::System {
                    content: "s".into(),
                },
                Message::Assistant {
                    content: String::new(),
                    tool_calls: a.tool_calls.clone(),
                },
                Message::Tool {
                    tool_call_id: "c1".into(),
                    name: "Read".into(),
                    content: "é".into(),
                },
            ],
            tools: std::sync::Arc::new(vec![json!({"type": "function"})]),
            tool_choice: Some("auto".into()),
        };
        let text = req.to_openai_string();
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            req.to_openai()
        );
        let s = ChatResponse::from_value(&json!("done")).unwrap();
        assert_eq!(
            (s.content.as_str(), s.tool_calls.len(), s.usage),
            ("done", 0, None)
        );
    }

    #[test]
    fn bad_shapes_are_named() {
        let err = |v: Value| ChatResponse::from_value(&v).unwrap_err().0;
        assert!(err(json!(42)).ends_with("got 42"));
        assert_eq!(
            err(json!({"choices": []})),
            "model response has no choices: choices = []"
        );
        assert_eq!(err(json!({"content": "x", "extra": 1})), "model response dict has an unknown key 'extra'; a short response has content, tool_calls, usage and finish_reason");
        assert_eq!(
            err(json!({"tool_calls": [{"arguments": "{}"}]})),
            "tool_calls[0] needs a non-empty string name, got nothing"
        );
        assert_eq!(
            err(json!({"tool_calls": [{"name": "Read", "arguments": 3}]})),
            "tool_calls[0].arguments must be a JSON object or a JSON string, got 3"
        );
        assert_eq!(
            err(json!({"content": "x", "usage": {"total_tokens": "many"}})),
            "model response usage.total_tokens must be a number, got \"many\""
        );
    }

    #[test]
    fn missing_ids_are_generated_and_parts_joined() {
        let r = ChatResponse::from_value(&json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "tool_calls": [{"name": "Glob"}]})).unwrap();
        assert_eq!(r.content, "ab");
        assert!(r.tool_calls[0].id.starts_with("call_"));
        assert_eq!(r.tool_calls[0].arguments, "{}");
    }
}

/// What kind of failure a model call had; decides retries and the message the user sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelErrorKind {
    /// 401/403: the key is wrong or lacks access. Not retried.
    Auth,
    /// 429: slow down. Retried with backoff, honouring Retry-After.
    RateLimit,
    /// The prompt is larger than the model's context window. Not retried.
    ContextTooLong,
    /// 5xx (and 408/409): the provider failed. Retried.
    Server,
    /// No answer in time. Retried.
    Timeout,
    /// The connection failed. Retried.
    Connection,
    /// Another 4xx: the request was refused. Not retried.
    InvalidRequest,
    /// The answer could not be understood. Not retried.
    BadResponse,
    /// A user-supplied model (a Python callable) raised or returned something unusable.
    Callback,
    /// The call was cancelled.
    Cancelled,
}

impl ModelErrorKind {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ModelErrorKind::Auth => "auth",
            ModelErrorKind::RateLimit => "rate_limit",
            ModelErrorKind::ContextTooLong => "context_too_long",
            ModelErrorKind::Server => "server",
            ModelErrorKind::Timeout => "timeout",
            ModelErrorKind::Connection => "connection",
            ModelErrorKind::InvalidRequest => "invalid_request",
            ModelErrorKind::BadResponse => "bad_response",
            ModelErrorKind::Callback => "callback",
            ModelErrorKind::Cancelled => "cancelled",
        }
    }
}

/// A failed model call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind_name} error: {message}", kind_name = .kind.as_str())]
pub struct ModelError {
    /// The classification.
    pub kind: ModelErrorKind,
    /// What happened, with the offending value or status.
    pub message: String,
    /// The HTTP status, when there was one.
    pub status: Option<u16>,
}

impl ModelError {
    /// A new error.
    pub fn new(kind: ModelErrorKind, message: impl Into<String>) -> Self {
        ModelError {
            kind,
            message: message.into(),
            status: None,
        }
    }
}

impl From<BadResponse> for ModelError {
    fn from(e: BadResponse) -> Self {
        ModelError::new(ModelErrorKind::BadResponse, e.0)
    }
}

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// A chat model: anything that turns a [`ChatRequest`] into a [`ChatResponse`].
///
/// Implementations must not block the async runtime: blocking work belongs in
/// `tokio::task::spawn_blocking`.
pub trait ChatModel: Send + Sync {
    /// Make one call.
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ModelError>>;

    /// The model id sent in requests, when the backend has one.
    fn model_id(&self) -> Option<String> {
        None
    }

    /// A short description for traces and messages (`openai-compatible gpt-4o-mini`, ...).
    fn describe(&self) -> String;

    /// The route name to report instead of `light`/`main` (the offline scout says `offline`).
    fn route_label(&self) -> Option<&'static str> {
        None
    }
}
