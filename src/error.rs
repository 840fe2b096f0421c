//! The core error type. Each variant says who returns it and whether a retry can help.

use crate::contract::ContractError;
use crate::profile::ProfileError;
use crate::tools::workspace::PathError;

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
    #[error(transparent)]
    Path(#[from] PathError),
    /// An argument from the caller was invalid (any API; not retryable). Names the field.
    #[error("{field}: {message}")]
    InvalidArgument {
        /// The offending field.
        field: String,
        /// What was wrong and what was expected.
        message: String,
    },
}

/// Result alias for the core.
pub type Result<T, E = Error> = std::result::Result<T, E>;
