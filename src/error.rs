//! The core error type: one tree for everything a caller of the core can be refused. Each
//! variant says who returns it and whether a retry can help. The Python binding maps it with one
//! exhaustive `From` (every variant becomes a subclass of `outrider.OutriderError`).

use crate::agent::LaunchError;
use crate::contract::ContractError;
use crate::llm::ModelError;
use crate::profile::ProfileError;
use crate::tools::workspace::PathError;
use crate::trace::TraceDirError;

/// Errors the core returns to its callers (not tool errors, which go back to the model).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A profile failed validation (profile construction; not retryable).
    #[error(transparent)]
    Profile(#[from] ProfileError),
    /// A result did not meet its contract (contract parsing; retryable by asking the model again).
    #[error(transparent)]
    Contract(#[from] ContractError),
    /// A path could not be used as a root or was refused (workspace; not retryable).
    #[error("{0}")]
    Path(#[from] PathError),
    /// The launcher refused a request before starting a child (launch; not retryable).
    #[error(transparent)]
    Launch(#[from] LaunchError),
    /// A setting or argument has a value outside what is accepted (any constructor; not
    /// retryable). Names the field; the message says what was expected.
    #[error("{field}: {message}")]
    InvalidArgument {
        /// The offending field or argument.
        field: String,
        /// What was wrong and what was expected.
        message: String,
    },
    /// A setting or argument has the wrong type (any constructor; not retryable).
    #[error("{field}: {message}")]
    Type {
        /// The offending field or argument.
        field: String,
        /// The type expected and the type given.
        message: String,
    },
    /// A trace directory or file cannot be used (launcher construction; not retryable).
    #[error(transparent)]
    TraceDir(#[from] TraceDirError),
    /// A model call failed (a direct call of a model; retryable when its kind is transient).
    #[error(transparent)]
    Model(#[from] ModelError),
    /// Something inside the core failed that the caller could not have caused (a child task
    /// that panicked). Retrying may help; please report it.
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    /// A configuration error ([`Error::InvalidArgument`]) naming `field`.
    pub fn config(field: impl Into<String>, message: impl Into<String>) -> Self {
        Error::InvalidArgument {
            field: field.into(),
            message: message.into(),
        }
    }

    /// A [`Error::Type`] naming `field`: `expected` is what it must be, `got` the type given.
    pub fn wrong_type(field: impl Into<String>, expected: &str, got: &str) -> Self {
        Error::Type {
            field: field.into(),
            message: format!("must be {expected}, got {got}"),
        }
    }

    /// The same error with its field prefixed by `prefix` (e.g. `requests[2]`), for errors that
    /// come from one item of a batch.
    pub fn within(self, prefix: &str) -> Self {
        match self {
            Error::InvalidArgument { field, message } => Error::InvalidArgument {
                field: format!("{prefix}.{field}"),
                message,
            },
            Error::Type { field, message } => Error::Type {
                field: format!("{prefix}.{field}"),
                message,
            },
            Error::Launch(e) => Error::Launch(LaunchError::InBatch {
                index: prefix.to_string(),
                source: Box::new(e),
            }),
            other => other,
        }
    }
}

/// Result alias for the core.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_field_and_the_expectation() {
        assert_eq!(
            Error::config("max_concurrency", "must be at least 1, got 0").to_string(),
            "max_concurrency: must be at least 1, got 0"
        );
        assert_eq!(
            Error::wrong_type("trace_dir", "a path, None or False", "int").to_string(),
            "trace_dir: must be a path, None or False, got int"
        );
        let batch = Error::Launch(LaunchError::UnknownProfile {
            name: "x".into(),
            known: vec!["explore".into()],
        })
        .within("requests[1]");
        assert_eq!(
            batch.to_string(),
            "requests[1]: unsupported runtime profile: x (registered profiles: 'explore')"
        );
    }
}
