//! One request to a model, and how large it is.

use serde_json::{Map, Value};

use crate::error::Error;

use crate::llm::message::Message;

/// What the runtime knows of the run a request belongs to, as values, for a model that plans
/// by them (the offline scout sizes its reads by the budgets and does not judge a
/// verification). Never sent on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunFacts {
    /// Tokens all calls of the run may use together.
    pub total_token_budget: u64,
    /// Tokens one request may hold.
    pub context_token_budget: u64,
    /// The run answers a verification (a verdict), not an exploration.
    pub verification: bool,
}

impl Default for RunFacts {
    /// The explore profile's budgets.
    fn default() -> Self {
        Self {
            total_token_budget: 32_000,
            context_token_budget: 16_000,
            verification: false,
        }
    }
}

impl RunFacts {
    /// The facts of a run under `profile`.
    pub fn of(profile: &crate::profile::RuntimeProfile) -> Self {
        Self {
            total_token_budget: u64::try_from(profile.total_token_budget).unwrap_or(0),
            context_token_budget: u64::try_from(profile.context_token_budget).unwrap_or(0),
            verification: profile.result_contract
                == Some(crate::profile::ResultContract::Verification),
        }
    }
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
    /// The caller's model settings (temperature, `extra_body`, ...), when it gave any.
    pub settings: Option<std::sync::Arc<ModelSettings>>,
    /// When the run that makes this call must be over; a backend that retries does not wait
    /// past it. Never sent on the wire.
    pub deadline: Option<std::time::Instant>,
    /// The run's budgets and kind, when a runner made the request (None: a caller's own
    /// request). Never sent on the wire.
    pub run: Option<RunFacts>,
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
pub(crate) fn estimate_tokens(chars: usize) -> u64 {
    chars.div_ceil(3) as u64
}

/// Keys a `model_settings` mapping may hold.
pub(crate) const SETTINGS_KEYS: [&str; 6] = [
    "model",
    "temperature",
    "top_p",
    "max_tokens",
    "seed",
    "extra_body",
];

/// The model name and settings sent with each request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelSettings {
    /// The model id (`"gpt-4o-mini"`); wins over the backend's own.
    pub model: Option<String>,
    /// Sampling temperature, 0 to 2.
    pub temperature: Option<f64>,
    /// Nucleus sampling, 0 to 1.
    pub top_p: Option<f64>,
    /// The answer's token limit, at least 1.
    pub max_tokens: Option<u64>,
    /// A sampling seed.
    pub seed: Option<i64>,
    /// Provider-specific fields.
    pub extra_body: Map<String, Value>,
}

impl ModelSettings {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        *self == ModelSettings::default()
    }

    /// Read a `{model?, temperature?, top_p?, max_tokens?, seed?, extra_body?}` mapping given as
    /// the argument `field`; every bad key or value is refused by name.
    pub fn from_json(field: &str, v: &Value) -> Result<ModelSettings, Error> {
        let map = match v {
            Value::Null => return Ok(ModelSettings::default()),
            Value::Object(m) => m,
            other => {
                return Err(Error::config(
                    field,
                    format!("must be a mapping, got {other}"),
                ))
            }
        };
        let mut s = ModelSettings::default();
        for (key, value) in map {
            let at = format!("{field}[{}]", crate::pyjson::py_repr_str(key));
            let bad =
                |expected: &str| Error::config(&at, format!("must be {expected}, got {value}"));
            match key.as_str() {
                _ if value.is_null() => {}
                "model" => {
                    s.model = Some(
                        value
                            .as_str()
                            .filter(|m| !m.trim().is_empty())
                            .ok_or_else(|| bad("a non-empty str"))?
                            .to_owned(),
                    );
                }
                "temperature" => {
                    s.temperature = Some(
                        value
                            .as_f64()
                            .filter(|t| (0.0..=2.0).contains(t))
                            .ok_or_else(|| bad("a number from 0 to 2"))?,
                    );
                }
                "top_p" => {
                    s.top_p = Some(
                        value
                            .as_f64()
                            .filter(|t| (0.0..=1.0).contains(t))
                            .ok_or_else(|| bad("a number from 0 to 1"))?,
                    );
                }
                "max_tokens" => {
                    s.max_tokens = Some(
                        value
                            .as_u64()
                            .filter(|n| *n >= 1)
                            .ok_or_else(|| bad("an int of at least 1"))?,
                    );
                }
                "seed" => s.seed = Some(value.as_i64().ok_or_else(|| bad("an int"))?),
                "extra_body" => {
                    s.extra_body = value.as_object().cloned().ok_or_else(|| bad("a mapping"))?;
                }
                _ => {
                    return Err(Error::config(
                        field,
                        format!(
                            "unknown key {}; expected one of {}",
                            crate::pyjson::py_repr_str(key),
                            SETTINGS_KEYS.join(", ")
                        ),
                    ))
                }
            }
        }
        Ok(s)
    }

    /// These settings with `model` set when given.
    pub fn with_model(mut self, model: Option<String>) -> Self {
        if model.is_some() {
            self.model = model;
        }
        self
    }
}
