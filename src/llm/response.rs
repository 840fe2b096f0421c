//! The normaliser: whatever a model backend returns becomes one [`ChatResponse`].
//!
//! A backend may return an OpenAI `ChatCompletion` (`choices[0].message`, `finish_reason`,
//! `usage`), a short dict `{content, tool_calls: [{id?, name, arguments}], usage?,
//! finish_reason?}`, or a plain string (a final answer). [`ChatResponse::from_value`] accepts all
//! three and says exactly what was wrong with anything else.

use serde_json::{json, Value};

use crate::llm::error::BadResponse;
use crate::llm::message::{ToolCall, Usage};

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

fn describe(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() > 200 {
        format!("{}…", text.chars().take(200).collect::<String>())
    } else {
        text
    }
}

pub(crate) fn content_text(v: Option<&Value>) -> Result<String, BadResponse> {
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
            .collect::<String>()),
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
    // Anthropic's input_tokens leave out the cache's reads and writes; prompt_tokens (OpenAI,
    // llama.cpp, vLLM) count them, with the reads in prompt_tokens_details.cached_tokens.
    let cache_read = num("cache_read_input_tokens")?.unwrap_or(0);
    let prompt = match num("prompt_tokens")? {
        Some(p) => p,
        None => {
            num("input_tokens")?.unwrap_or(0)
                + num("cache_creation_input_tokens")?.unwrap_or(0)
                + cache_read
        }
    };
    let details = map
        .get("prompt_tokens_details")
        .and_then(|d| d.get("cached_tokens"))
        .and_then(Value::as_u64);
    let cached = details.unwrap_or(cache_read).min(prompt);
    let completion = num("completion_tokens")?
        .or(num("output_tokens")?)
        .unwrap_or(0);
    let total = num("total_tokens")?.unwrap_or(prompt + completion);
    Ok(Some(Usage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: total,
        cached_tokens: cached,
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

pub(crate) fn parse_tool_calls(v: Option<&Value>) -> Result<Vec<ToolCall>, BadResponse> {
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
    use crate::llm::message::Message;
    use crate::llm::request::ChatRequest;
    use serde_json::json;

    #[test]
    fn cached_prompt_tokens_are_counted_apart_as_providers_report_them() {
        let usage = |u: Value| parse_usage(Some(&u)).unwrap().unwrap();
        // OpenAI, llama.cpp, vLLM: prompt_tokens include the cached ones.
        let openai = usage(json!({"prompt_tokens": 2000, "completion_tokens": 50,
            "prompt_tokens_details": {"cached_tokens": 1792}}));
        assert_eq!(
            (
                openai.prompt_tokens,
                openai.cached_tokens,
                openai.total_tokens
            ),
            (2000, 1792, 2050)
        );
        // Anthropic: input_tokens leave out the cache's reads and writes.
        let claude = usage(
            json!({"input_tokens": 20, "cache_creation_input_tokens": 100,
            "cache_read_input_tokens": 1800, "output_tokens": 40}),
        );
        assert_eq!(
            (
                claude.prompt_tokens,
                claude.cached_tokens,
                claude.total_tokens
            ),
            (1920, 1800, 1960)
        );
        let plain = usage(json!({"prompt_tokens": 5, "completion_tokens": 1}));
        assert_eq!(plain.cached_tokens, 0);
        // The trace's usage keeps its old shape when nothing was cached.
        assert_eq!(
            serde_json::to_value(plain).unwrap(),
            json!({"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6})
        );
    }

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
                total_tokens: 5,
                cached_tokens: 0,
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
                    shown: None,
                },
            ],
            tools: std::sync::Arc::new(vec![json!({"type": "function"})]),
            tool_choice: Some("auto".into()),
            deadline: None,
            run: None,
            settings: None,
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
