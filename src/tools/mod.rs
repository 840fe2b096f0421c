//! The read-only tools. Everything a tool may touch goes through [`workspace::Workspace`].
//!
//! ```
//! use outrider::tools::{context::ToolContext, permissions::PermissionContext};
//! use outrider::tools::{registry::ToolRegistry, workspace::Workspace};
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(dir.path().join("notes.txt"), "hello\n").unwrap();
//! let ctx = ToolContext::new(Workspace::new(dir.path()).unwrap());
//! let registry = ToolRegistry::readonly();
//! let result = registry.execute("Grep", r#"{"pattern": "HELLO"}"#, &ctx, &PermissionContext::readonly_subagent());
//! assert_eq!(result.text, "Found 1 matching line(s) in '.'.");
//! ```

pub mod budget;
pub mod context;
pub mod envelope;
pub mod glob;
pub mod globs;
pub mod grep;
mod memo;
mod params;
pub mod permissions;
pub mod read;
pub mod registry;
pub mod run;
pub mod search;
pub mod tool;
pub mod walk;
pub mod workspace;
