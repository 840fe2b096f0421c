//! How a model call fails: the classification that decides retries, and the errors themselves.

/// A response that cannot be understood; the message says what was returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadResponse(pub String);

wire_enum! {
    /// What kind of failure a model call had; decides retries and the message the user sees.
    pub enum ModelErrorKind {
        /// 401/403: the key is wrong or lacks access. Not retried.
        Auth = "auth",
        /// 429: slow down. Retried with backoff, honouring Retry-After.
        RateLimit = "rate_limit",
        /// The prompt is larger than the model's context window. Not retried.
        ContextTooLong = "context_too_long",
        /// 5xx (and 408/409): the provider failed. Retried.
        Server = "server",
        /// No answer in time. Retried.
        Timeout = "timeout",
        /// The connection failed. Retried.
        Connection = "connection",
        /// Another 4xx: the request was refused. Not retried.
        InvalidRequest = "invalid_request",
        /// The answer could not be understood. Not retried.
        BadResponse = "bad_response",
        /// A user-supplied model (a Python callable) raised or returned something unusable.
        Callback = "callback",
        /// The call was cancelled.
        Cancelled = "cancelled",
    }
}

/// A failed model call. Its message is redacted when built with [`ModelError::new`] and again
/// when displayed, so a key echoed by a server or a callable never reaches a result or a trace.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind_name} error: {shown}", kind_name = .kind.as_str(), shown = crate::redact::redact_cow(.message))]
pub struct ModelError {
    /// The classification.
    pub kind: ModelErrorKind,
    /// What happened, with the offending value or status.
    pub message: String,
    /// The HTTP status, when there was one.
    pub status: Option<u16>,
}

impl ModelError {
    /// A user-supplied model (`what`, e.g. `model callable f`) raised an exception of type
    /// `kind` with `message`; an interrupt cancels the run instead.
    pub fn callback_raised(what: &str, kind: &str, message: &str) -> Self {
        if kind == "KeyboardInterrupt" {
            return ModelError::new(ModelErrorKind::Cancelled, "interrupted (KeyboardInterrupt)");
        }
        ModelError::new(
            ModelErrorKind::Callback,
            format!("{what} raised {kind}: {message}"),
        )
    }

    /// [`ModelError::callback_raised`] for an exception that carries an HTTP status (an SDK's
    /// `APIStatusError`): classified like the built-in client's answers, so an SDK's 429 ends a
    /// run as `rate_limited` and a 401 as an auth error.
    pub fn callback_raised_status(what: &str, kind: &str, message: &str, status: u16) -> Self {
        let mut e = ModelError::callback_raised(what, kind, message);
        e.kind = match status {
            401 | 403 => ModelErrorKind::Auth,
            429 => ModelErrorKind::RateLimit,
            408 | 409 | 500..=599 => ModelErrorKind::Server,
            400..=499 => ModelErrorKind::InvalidRequest,
            _ => e.kind,
        };
        e.status = Some(status);
        e
    }

    /// A user-supplied model returned a value of type `type_name` (shown as `shown`) that is
    /// none of the accepted answer shapes.
    pub fn unusable_return(what: &str, type_name: &str, shown: &str) -> Self {
        let shown: String = shown.chars().take(200).collect();
        ModelError::new(
            ModelErrorKind::Callback,
            format!(
                "{what} returned {type_name} {shown}; a model callable must return a ChatCompletion-shaped dict, an object with model_dump() (e.g. an OpenAI SDK response), a dict with 'content'/'tool_calls', or a str"
            ),
        )
    }

    /// A new error, its message redacted.
    pub fn new(kind: ModelErrorKind, message: impl Into<String>) -> Self {
        ModelError {
            kind,
            message: crate::redact::redact_str(&message.into()),
            status: None,
        }
    }
}

impl From<BadResponse> for ModelError {
    fn from(e: BadResponse) -> Self {
        ModelError::new(ModelErrorKind::BadResponse, e.0)
    }
}

#[cfg(test)]
mod callback_tests {
    use super::*;

    #[test]
    fn a_callback_error_names_the_callable_and_an_interrupt_cancels() {
        let e = ModelError::callback_raised(
            "model callable f",
            "ZeroDivisionError",
            "division by zero",
        );
        assert_eq!(
            (e.kind, e.message.as_str()),
            (
                ModelErrorKind::Callback,
                "model callable f raised ZeroDivisionError: division by zero"
            )
        );
        let stop = ModelError::callback_raised("model callable f", "KeyboardInterrupt", "");
        assert_eq!(stop.kind, ModelErrorKind::Cancelled);
        let odd = ModelError::unusable_return("model callable f", "int", &"9".repeat(500));
        assert!(odd.message.starts_with(&format!(
            "model callable f returned int {}; a model callable must return",
            "9".repeat(200)
        )));
    }
}
