//! The OpenAI chat-completions JSON of a request: the one encoder every path uses (the HTTP
//! client, a Python model callable, the `to_openai` value form), and its inverse.
//!
//! The encoder writes straight to text through borrowed `Wire*` structs instead of building a
//! value tree first: a request is re-sent on every call, schemas and history included.

use serde::Serialize;
use serde_json::Value;

use crate::llm::error::BadResponse;
use crate::llm::message::Message;
use crate::llm::request::ChatRequest;
use crate::llm::response::{content_text, parse_tool_calls};

/// What a sender adds to or removes from the plain request JSON.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WireOptions<'a> {
    /// The model id sent when the request names none.
    pub default_model: Option<&'a str>,
    /// Sent as `temperature` when set.
    pub temperature: Option<f64>,
    /// Sent as `max_tokens` when set.
    pub max_tokens: Option<u64>,
    /// Sent as `stop` when set (and `extra_body` gives none).
    pub stop: Option<&'a [&'a str]>,
    /// Leave `tool_choice` out when there are no tools (several providers reject it then).
    pub omit_tool_choice_without_tools: bool,
    /// Merge the settings' `extra_body` into the body (an HTTP client) instead of sending it as
    /// the `extra_body` key (what `client.chat.completions.create(**request)` takes).
    pub flatten_extra_body: bool,
}

static NO_EXTRA: std::sync::LazyLock<serde_json::Map<String, Value>> =
    std::sync::LazyLock::new(serde_json::Map::new);

impl Message {
    /// The OpenAI chat-completions form of this message.
    pub fn to_openai(&self) -> Value {
        serde_json::to_value(WireMessage::from(self)).unwrap_or(Value::Null)
    }
}

impl ChatRequest {
    /// The chat-completions keyword arguments: `{model, messages, tools?, tool_choice?}`.
    pub fn to_openai(&self) -> Value {
        serde_json::to_value(self.wire(&WireOptions::default())).unwrap_or(Value::Null)
    }

    /// The same JSON as [`ChatRequest::to_openai`], as text.
    pub fn to_openai_string(&self) -> String {
        self.encode(&WireOptions::default())
    }

    /// The request body as text, with what `options` adds: `{model, messages, tools?,
    /// tool_choice?, temperature?, max_tokens?}`.
    pub fn encode(&self, options: &WireOptions<'_>) -> String {
        // Serialising borrowed strings and `Value`s cannot fail.
        serde_json::to_string(&self.wire(options)).unwrap_or_default()
    }

    fn wire<'a>(&'a self, options: &WireOptions<'a>) -> WireRequest<'a> {
        let omit_choice = options.omit_tool_choice_without_tools && self.tools.is_empty();
        let settings = self.settings.as_deref();
        let extra = settings.map(|s| &s.extra_body).filter(|e| !e.is_empty());
        WireRequest {
            model: self.model.as_deref().or(options.default_model),
            messages: self.messages.iter().map(WireMessage::from).collect(),
            tools: &self.tools,
            tool_choice: self.tool_choice.as_deref().filter(|_| !omit_choice),
            temperature: settings.and_then(|s| s.temperature).or(options.temperature),
            top_p: settings.and_then(|s| s.top_p),
            max_tokens: settings.and_then(|s| s.max_tokens).or(options.max_tokens),
            seed: settings.and_then(|s| s.seed),
            stop: options
                .stop
                .filter(|_| extra.is_none_or(|e| !e.contains_key("stop"))),
            extra_body: extra.filter(|_| !options.flatten_extra_body),
            flat: extra
                .filter(|_| options.flatten_extra_body)
                .unwrap_or(&NO_EXTRA),
        }
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
                "tool" => Message::Tool { tool_call_id: text(m, "tool_call_id"), name: text(m, "name"), content, shown: None },
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
            deadline: None,
            run: None,
            settings: None,
        })
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
                ..
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
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stop: Option<&'a [&'a str]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    extra_body: Option<&'a serde_json::Map<String, Value>>,
    #[serde(flatten)]
    flat: &'a serde_json::Map<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::message::ToolCall;
    use serde_json::json;

    fn request(tools: Vec<Value>, choice: &str) -> ChatRequest {
        ChatRequest {
            model: None,
            messages: vec![
                Message::System {
                    content: "s".into(),
                },
                Message::Assistant {
                    content: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "c1".into(),
                        name: "Read".into(),
                        arguments: "{}".into(),
                    }],
                },
                Message::Tool {
                    tool_call_id: "c1".into(),
                    name: "Read".into(),
                    content: "é".into(),
                    shown: None,
                },
            ],
            tools: std::sync::Arc::new(tools),
            tool_choice: Some(choice.into()),
            deadline: None,
            run: None,
            settings: None,
        }
    }

    #[test]
    fn a_direct_request_is_a_dict_of_chat_completions_arguments() {
        let req =
            ChatRequest::from_openai(&json!({"messages": [{"role": "user", "content": "hi"}]}));
        assert_eq!(req.unwrap().messages.len(), 1);
        let err = ChatRequest::from_openai(&json!({})).unwrap_err().0;
        assert!(
            err.starts_with("request['messages'] must be a list"),
            "{err}"
        );
    }

    #[test]
    fn one_encoder_serves_plain_and_client_forms() {
        let req = request(vec![json!({"type": "function"})], "auto");
        let messages = json!([
            {"role": "system", "content": "s"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "Read", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "name": "Read", "content": "é"},
        ]);
        assert_eq!(
            req.to_openai(),
            json!({"model": null, "messages": messages, "tools": [{"type": "function"}], "tool_choice": "auto"})
        );
        assert_eq!(
            serde_json::from_str::<Value>(&req.to_openai_string()).unwrap(),
            req.to_openai()
        );
        let options = WireOptions {
            default_model: Some("m"),
            temperature: Some(0.5),
            max_tokens: Some(9),
            stop: None,
            omit_tool_choice_without_tools: true,
            flatten_extra_body: false,
        };
        assert_eq!(
            req.encode(&options),
            serde_json::to_string(
                &json!({"model": "m", "messages": messages, "tools": [{"type": "function"}],
                "tool_choice": "auto", "temperature": 0.5, "max_tokens": 9})
            )
            .unwrap()
        );
        let bare = request(vec![], "none");
        assert_eq!(
            serde_json::from_str::<Value>(&bare.encode(&options)).unwrap(),
            json!({"model": "m", "messages": messages, "temperature": 0.5, "max_tokens": 9})
        );
        assert_eq!(bare.to_openai()["tool_choice"], json!("none"));
    }

    #[test]
    fn settings_win_over_the_clients_and_extra_body_goes_where_the_sender_wants_it() {
        let mut req = request(vec![], "none");
        req.settings = Some(std::sync::Arc::new(crate::llm::ModelSettings {
            temperature: Some(0.0),
            seed: Some(3),
            extra_body: json!({"reasoning": {"effort": "low"}})
                .as_object()
                .unwrap()
                .clone(),
            ..Default::default()
        }));
        let v = req.to_openai();
        assert_eq!(
            (&v["temperature"], &v["seed"], &v["extra_body"]),
            (
                &json!(0.0),
                &json!(3),
                &json!({"reasoning": {"effort": "low"}})
            )
        );
        let client = WireOptions {
            temperature: Some(0.7),
            flatten_extra_body: true,
            ..Default::default()
        };
        let body: Value = serde_json::from_str(&req.encode(&client)).unwrap();
        assert_eq!(body["temperature"], json!(0.0));
        assert_eq!(body["reasoning"], json!({"effort": "low"}));
        assert!(body.get("extra_body").is_none());
    }

    #[test]
    fn decoding_inverts_encoding() {
        let req = request(vec![json!({"type": "function"})], "auto");
        assert_eq!(ChatRequest::from_openai(&req.to_openai()).unwrap(), req);
        assert_eq!(
            ChatRequest::from_openai(&json!({"messages": [{"role": "robot", "content": "x"}]}))
                .unwrap_err()
                .0,
            "request['messages'][0]['role'] must be system, user, assistant or tool, got \"robot\""
        );
    }
}
