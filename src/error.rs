//! The core error type: one tree for everything a caller of the core can be refused. Each
//! variant says who returns it and whether a retry can help. The Python binding maps it with one
//! exhaustive `From` (every variant becomes a subclass of `outrider.OutriderError`).

use std::fmt;

use crate::llm::error::ModelError;
use crate::pyjson::Json;
use crate::tools::workspace::PathError;

/// A profile that failed validation; the message is the reference's where it has one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ProfileError(pub String);

/// One step of a violation's location: an object key or an array index.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(untagged)]
pub enum LocItem {
    /// An object key.
    Key(String),
    /// An array index.
    Index(usize),
}

/// One contract violation, shaped like a pydantic error (`{type, loc, msg, input}`): a stable
/// type, where, what, the input.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Violation {
    /// A stable machine name for the kind of violation.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Where in the answer (empty for the whole answer).
    pub loc: Vec<LocItem>,
    /// The human message (the reference's wording where it has one).
    pub msg: String,
    /// The offending value.
    pub input: Json,
}

/// A rejected result: one or more violations. Displays as the first violation's message, which
/// is the reference's message for the same input.
#[derive(Debug, Clone, PartialEq)]
pub struct ContractError {
    /// Which contract was being checked (`ExploreResult` or `VerificationResult`).
    pub contract: &'static str,
    /// The violations, in the order the reference checks them.
    pub violations: Vec<Violation>,
}

impl fmt::Display for ContractError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.violations.first() {
            Some(v) => f.write_str(&v.msg),
            None => write!(f, "invalid {}", self.contract),
        }
    }
}

impl std::error::Error for ContractError {}

impl ContractError {
    pub(crate) fn single(
        contract: &'static str,
        msg: impl Into<String>,
        kind: &'static str,
        input: Json,
    ) -> Self {
        ContractError {
            contract,
            violations: vec![Violation {
                loc: vec![],
                msg: msg.into(),
                kind,
                input,
            }],
        }
    }
}

/// A request the launcher refuses before starting a child.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LaunchError {
    /// No profile of that name is registered.
    #[error(
        "unsupported runtime profile: {name} (registered profiles: {})",
        quoted(known)
    )]
    UnknownProfile {
        /// The name asked for.
        name: String,
        /// The registered names.
        known: Vec<String>,
    },
    /// The model choice is not light or main.
    #[error("unsupported subagent model choice: {0} (expected 'light' or 'main')")]
    BadModelChoice(String),
    /// The `output_schema` cannot be used for this child (its profile or its model).
    #[error("output_schema: {0}")]
    OutputSchema(String),
    /// The route the request asks for has no model of its own (the launcher was given a light
    /// model only, and nothing configures the main one).
    #[error("{0}")]
    RouteUnset(String),
    /// One request of a batch was refused.
    #[error("{index}: {source}")]
    InBatch {
        /// Which one (`requests[2]`).
        index: String,
        /// Why.
        source: Box<LaunchError>,
    },
}

fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| crate::pyjson::py_repr_str(n))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why a trace directory was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TraceDirError {
    /// The directory is inside the explored root, where a read-only child must not write.
    #[error("trace_dir '{dir}' is inside the explored root '{root}'; a read-only child never writes there: choose a directory outside it, or trace_dir=False to keep traces in memory")]
    InsideRoot {
        /// The refused directory.
        dir: String,
        /// The explored root.
        root: String,
    },
    /// The directory could not be created.
    #[error("trace_dir '{dir}' cannot be created: {reason}")]
    Create {
        /// The directory.
        dir: String,
        /// The OS error.
        reason: String,
    },
}

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
