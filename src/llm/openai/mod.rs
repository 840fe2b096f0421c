//! The built-in OpenAI-compatible chat-completions client.
//!
//! One [`OpenAICompatible`] holds one HTTP client (connection pool, timeouts) and POSTs
//! `{base_url}/chat/completions` with bearer auth. Transient failures (408, 409, 429, 5xx, timeouts,
//! failed connections) are retried with exponential backoff and full jitter, honouring
//! `Retry-After`; every other failure is returned at once, classified as a
//! [`ModelErrorKind`](crate::llm::ModelErrorKind). The API key never appears in a message or in
//! `Debug` output.
//!
//! The parts: [`config`] (settings and their validation), [`client`] (the HTTP calls and the retry
//! loop), `classify` (what a failure was), `retry` (how long to wait before the next attempt).
//!
//! ```
//! use outrider::api::{OpenAICompatible, OpenAICompatibleConfig};
//! use outrider::api::ChatModel;
//!
//! let mut config = OpenAICompatibleConfig::new("gpt-4o-mini", "https://api.openai.com/v1/chat/completions");
//! config.api_key = Some("sk-not-a-real-key".into());
//! let model = OpenAICompatible::new(config).unwrap();
//! assert_eq!(model.endpoint(), "https://api.openai.com/v1/chat/completions");
//! assert_eq!(model.describe(), "openai-compatible gpt-4o-mini at https://api.openai.com/v1");
//! ```

mod classify;
pub(crate) mod client;
pub(crate) mod config;
mod retry;

pub use client::{OpenAICompatible, LOCAL_MAX_TOKENS, LOCAL_TEMPERATURE, MAX_RESPONSE_BYTES};
pub use config::{duration_from_secs, OpenAICompatibleConfig};
