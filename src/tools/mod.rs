//! The read-only tools. Everything a tool may touch goes through [`workspace::Workspace`].
//!
//! ```
//! use outrider::api::{ToolContext, PermissionContext};
//! use outrider::api::{ToolRegistry, Workspace};
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(dir.path().join("notes.txt"), "hello\n").unwrap();
//! let ctx = ToolContext::new(Workspace::new(dir.path()).unwrap());
//! let registry = ToolRegistry::readonly();
//! let result = registry.execute("Grep", r#"{"pattern": "HELLO"}"#, &ctx, &PermissionContext::readonly_subagent());
//! assert_eq!(result.text, "Found 1 matching line(s) in '.'.");
//! ```

pub(crate) mod budget;
pub(crate) mod context;
pub(crate) mod envelope;
pub(crate) mod glob;
pub(crate) mod globs;
pub(crate) mod grep;
mod memo;
mod params;
pub(crate) mod permissions;
pub(crate) mod read;
pub(crate) mod registry;
pub(crate) mod run;
pub(crate) mod search;
pub(crate) mod shown;
pub(crate) mod tool;
pub(crate) mod walk;
pub(crate) mod workspace;
