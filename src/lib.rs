//! outrider: sandboxed, read-only explore sub-agents for LLM agents.
//!
//! The core is plain Rust and builds without Python (`cargo test --no-default-features`); the
//! `python` feature adds the PyO3 bindings in `py/`, the only module that knows about Python.
//!
//! ```
//! use outrider::contract::{ExploreResult, ToolUsage};
//! let raw = r#"{"status": "completed", "summary": "Auth lives in src/auth.py", "evidence": ["src/auth.py:12"]}"#;
//! let result = ExploreResult::from_json(raw, ToolUsage::new(), "completed").unwrap();
//! assert_eq!(result.evidence, vec!["src/auth.py:12".to_string()]);
//! ```
#![deny(missing_docs)]

pub mod contract;
pub mod error;
pub mod evidence;
pub mod launcher;
pub mod llm;
pub mod main_agent;
pub mod profile;
pub mod pyjson;
pub mod runner;
pub mod task;
pub mod tools;
pub mod trace;
pub mod verify;

#[cfg(feature = "python")]
mod py;

// The loop allocates many small strings and JSON values per step; mimalloc's thread-local
// free lists keep that cheap on every thread the runtime uses.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The package version, from Cargo.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
