//! What a failed attempt was: an HTTP status or a transport error becomes a [`ModelError`] of
//! the right [`ModelErrorKind`], in words that name the endpoint and what to do, and whether
//! retrying may help.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;

use crate::llm::{ModelError, ModelErrorKind};

/// How much of a body goes into an error message.
const BODY_SNIPPET_CHARS: usize = 300;
/// Phrases providers use when the prompt does not fit the context window (lower case).
const CONTEXT_PHRASES: &[&str] = &[
    "context length",
    "context_length",
    "maximum context",
    "too many tokens",
    "prompt too long",
    "prompt is too long",
    "request too large",
];

/// One failed attempt, and whether another may help.
pub(crate) struct Failure {
    pub(crate) error: ModelError,
    pub(crate) retryable: bool,
    pub(crate) retry_after: Option<Duration>,
}

impl Failure {
    pub(crate) fn fatal(error: ModelError) -> Self {
        Failure {
            error,
            retryable: false,
            retry_after: None,
        }
    }
}

/// The failure an HTTP error status means; `url` and `model` name what was called.
pub(crate) fn status_failure(
    url: &str,
    model: &str,
    status: StatusCode,
    text: &str,
    location: Option<String>,
    retry_after: Option<Duration>,
) -> Failure {
    let code = status.as_u16();
    let said = serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|json| provider_message(&json))
        .unwrap_or_else(|| snippet(text));
    let lowered = text.to_lowercase();
    let (kind, message) = match code {
            401 | 403 => (
                ModelErrorKind::Auth,
                format!("{url} answered HTTP {code}: {said}; check the API key and that it may use model '{model}'"),
            ),
            429 => (
                ModelErrorKind::RateLimit,
                format!("{url} answered HTTP 429 (rate limited): {said}"),
            ),
            400 | 413 | 422 if CONTEXT_PHRASES.iter().any(|p| lowered.contains(p)) => (
                ModelErrorKind::ContextTooLong,
                format!("{url} answered HTTP {code}: the prompt does not fit the model's context window: {said}"),
            ),
            404 => (
                ModelErrorKind::InvalidRequest,
                format!("{url} answered HTTP 404: {said}; check the base URL and the model id '{model}'"),
            ),
            408 | 409 | 500..=599 => (
                ModelErrorKind::Server,
                format!("{url} answered HTTP {code}: {said}"),
            ),
            300..=399 => (
                ModelErrorKind::InvalidRequest,
                format!(
                    "{url} answered HTTP {code}, a redirect to {}; set the base URL to where it points",
                    location.as_deref().unwrap_or("an unnamed location")
                ),
            ),
            400..=499 => (
                ModelErrorKind::InvalidRequest,
                format!("{url} refused the request with HTTP {code}: {said}"),
            ),
            _ => (
                ModelErrorKind::BadResponse,
                format!("{url} answered with unexpected HTTP status {code}: {said}"),
            ),
        };
    Failure {
        error: ModelError {
            kind,
            // The body may echo the key that was refused.
            message: crate::redact::redact_str(&message),
            status: Some(code),
        },
        retryable: matches!(code, 408 | 409 | 429 | 500..=599),
        retry_after,
    }
}

/// The failure a transport error means; `timeout` is the configured limit it may have hit.
pub(crate) fn transport_failure(url: &str, timeout: Duration, err: reqwest::Error) -> Failure {
    let (kind, message) = if err.is_connect() {
        (
            ModelErrorKind::Connection,
            format!(
                "could not connect to {url}: {}",
                // The innermost cause says why (refused, DNS, TLS); the rest is wrapping.
                error_chain(err).pop().unwrap_or_default()
            ),
        )
    } else if err.is_timeout() {
        (
                ModelErrorKind::Timeout,
                format!(
                    "no complete answer from {url} within {} s (the timeout); raise it if the model is slow",
                    timeout.as_secs_f64()
                ),
            )
    } else {
        (
            ModelErrorKind::Connection,
            format!(
                "the request to {url} failed: {}",
                error_chain(err).join(": ")
            ),
        )
    };
    Failure {
        error: ModelError::new(kind, message),
        retryable: true,
        retry_after: None,
    }
}

/// The provider's own words: `error.message`, `error` as text, `message` or `detail`.
pub(crate) fn provider_message(json: &Value) -> Option<String> {
    let text = match json.get("error") {
        Some(Value::Object(e)) => e.get("message").and_then(Value::as_str).map(str::to_owned),
        Some(Value::String(s)) => Some(s.clone()),
        _ => None,
    }
    .or_else(|| {
        json.get("message")
            .and_then(Value::as_str)
            .map(str::to_owned)
    })
    .or_else(|| match json.get("detail") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) if !other.is_null() => Some(other.to_string()),
        _ => None,
    })?;
    Some(snippet(&text))
}

/// The first [`BODY_SNIPPET_CHARS`] characters of a body, trimmed, with its secrets redacted
/// BEFORE the cut: a key the cut splits is no longer a whole key, and its first characters
/// would pass every pattern.
pub(crate) fn snippet(text: &str) -> String {
    let text = crate::redact::redact_cow(text.trim());
    let text = text.trim();
    if text.is_empty() {
        return "(empty body)".into();
    }
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(BODY_SNIPPET_CHARS).collect();
    if chars.next().is_some() {
        format!("{head}…")
    } else {
        head
    }
}

/// The error and its causes, outermost first, e.g. `error sending request`, `client error
/// (Connect)`, `tcp connect error`, `Connection refused (os error 111)`.
fn error_chain(err: reqwest::Error) -> Vec<String> {
    let err = err.without_url();
    let mut parts = vec![err.to_string()];
    let mut source = std::error::Error::source(&err);
    while let Some(cause) = source {
        let text = cause.to_string();
        if parts.last() != Some(&text) {
            parts.push(text);
        }
        source = cause.source();
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_messages_are_found() {
        let msg = |v: Value| provider_message(&v);
        assert_eq!(
            msg(serde_json::json!({"error": {"message": "bad key", "type": "x"}})),
            Some("bad key".into())
        );
        assert_eq!(
            msg(serde_json::json!({"error": "nope"})),
            Some("nope".into())
        );
        assert_eq!(
            msg(serde_json::json!({"detail": [{"loc": ["body"]}]})),
            Some(r#"[{"loc":["body"]}]"#.into())
        );
        assert_eq!(msg(serde_json::json!({"choices": []})), None);
        assert_eq!(snippet(&"x".repeat(301)), format!("{}…", "x".repeat(300)));
    }

    #[test]
    fn a_key_the_snippet_cut_splits_leaves_no_prefix() {
        let key = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789";
        crate::redact::register_secret("plain-echoed-key-0123456789");
        for (secret, shown) in [
            (key, "sk-***"),
            ("plain-echoed-key-0123456789", "[REDACTED]"),
        ] {
            for pad in [285, 290, 295, 299] {
                let body = format!("{} {secret} was refused", "x".repeat(pad));
                let cut = snippet(&body);
                assert_eq!(
                    cut,
                    format!("{} {shown} was refused", "x".repeat(pad))
                        .chars()
                        .take(300)
                        .collect::<String>()
                        + "…",
                    "pad {pad}"
                );
                assert!(!cut.contains(&secret[..12]), "{cut}");
                let said = provider_message(&serde_json::json!({"error": {"message": body}}));
                assert_eq!(said, Some(cut));
            }
        }
    }
}
