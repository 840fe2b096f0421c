//! The launch layer: everything a launch does, one file per job.
//!
//! - [`request`]: what a caller asks for ([`SubagentRequest`], validated by [`RequestInit`]).
//! - [`launcher`]: [`SubagentLauncher`] — profile lookup, model routing, the child's trace,
//!   parent events, the runner, `launch` and `launch_many`.
//! - [`result`]: what a launch produced ([`SubagentLaunchResult`], one serialisable shape).
//! - [`task_tool`]: the Task tool a main agent calls ([`TaskTool`]: arguments, envelopes).
//! - [`main_agent`]: a main agent with Read/Grep/Glob and Task ([`MainAgent`]).
//! - [`verify`]: the completion gate ([`SubagentLauncher::verify`]).
//!
//! ```
//! use std::sync::Arc;
//! use outrider::api::{LauncherOptions, SubagentLauncher, SubagentRequest, TraceDirSetting};
//! use outrider::api::OfflineScout;
//! use outrider::api::CancelToken;
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(dir.path().join("auth.py"), "def login(user):\n    return token(user)\n").unwrap();
//! let launcher = SubagentLauncher::new(dir.path(), LauncherOptions {
//!     main_model: Some(Arc::new(OfflineScout)),
//!     trace_dir: TraceDirSetting::Off,
//!     ..LauncherOptions::default()
//! }).unwrap();
//! let rt = tokio::runtime::Runtime::new().unwrap();
//! let result = rt.block_on(launcher.launch(SubagentRequest::explore("Where is login defined?"), CancelToken::new())).unwrap();
//! assert_eq!(result.child_run_id, "run-1");
//! ```

pub(crate) mod launcher;
pub(crate) mod main_agent;
pub(crate) mod request;
pub(crate) mod result;
pub(crate) mod task_tool;
pub(crate) mod verify;

pub use crate::error::LaunchError;
pub use launcher::{
    profiles_by_key, LaunchObserver, LauncherOptions, OnFinished, SubagentLauncher, TraceDirSetting,
};
pub use main_agent::{MainAgent, MainAgentOptions, MainRun};
pub use request::{RequestInit, SubagentRequest, REQUEST_FIELDS};
pub use result::{ModelRoute, SubagentLaunchResult};
pub use verify::{CompletionVerdict, Verification};

#[cfg(test)]
mod tests;
