//! outrider: sandboxed, read-only explore sub-agents for LLM agents.
//!
//! The core is plain Rust and builds without Python (`cargo test --no-default-features`); the
//! `python` feature adds the PyO3 bindings in `py/`, the only module that knows about Python.
//!
//! ```
//! use outrider::{ExploreResult, ToolUsage};
//! let raw = r#"{"status": "completed", "summary": "Auth lives in src/auth.py", "evidence": ["src/auth.py:12"]}"#;
//! let result = ExploreResult::from_json(raw, ToolUsage::new(), "completed").unwrap();
//! assert_eq!(result.evidence, vec!["src/auth.py:12".to_string()]);
//! ```
#![deny(missing_docs)]
#![deny(unsafe_code)]

/// `Debug` shown as the type's `Display` (its Python repr), which is what a person debugging
/// wants to see of these objects.
macro_rules! debug_as_display {
    ($($t:ty),+ $(,)?) => {$(
        impl std::fmt::Debug for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Display::fmt(self, f)
            }
        }
    )+};
}

/// Declares an enum whose values have fixed wire names, each written once: `ALL` and
/// `WIRE_NAMES` (declaration order), `as_str`, `from_wire` (exact match), `Display`, and serde
/// under the same names. `parse_error: |s| -> Error { ... }` after the variants adds `FromStr`,
/// whose error is built from the unknown string `s`; `enum Name as "what"` is the short form
/// whose error is a [`profile::UnknownValue`] for `what`.
macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident as $what:literal { $($body:tt)* }
    ) => {
        wire_enum! {
            $(#[$meta])*
            $vis enum $name { $($body)* }
            parse_error: |s| -> $crate::profile::UnknownValue {
                $crate::profile::UnknownValue {
                    what: $what,
                    value: s.to_string(),
                    expected: $name::WIRE_NAMES,
                }
            }
        }
    };
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $($(#[$vmeta:meta])* $variant:ident = $wire:literal),+ $(,)?
        }
        $(parse_error: |$s:ident| -> $err:ty $make:block)?
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        $vis enum $name {
            $($(#[$vmeta])* #[serde(rename = $wire)] $variant,)+
        }

        // Not every enum uses every item generated here.
        #[allow(dead_code)]
        impl $name {
            /// Every value, in declaration order.
            pub const ALL: [$name; <[&str]>::len(&[$($wire),+])] = [$($name::$variant),+];
            /// Every wire name, in declaration order.
            pub const WIRE_NAMES: &'static [&'static str] = &[$($wire),+];

            /// The wire name.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $wire,)+
                }
            }

            /// The value whose wire name is `s` (exact match).
            pub fn from_wire(s: &str) -> Option<Self> {
                match s {
                    $($wire => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        $(
            impl std::str::FromStr for $name {
                type Err = $err;

                fn from_str($s: &str) -> Result<Self, $err> {
                    Self::from_wire($s).ok_or_else(|| $make)
                }
            }
        )?
    };
}

// Only `api` is public: it names everything an embedder, the tests and the fuzz targets use,
// so the modules can change shape without changing what users see.
pub(crate) mod agent;
pub mod api;
pub(crate) mod args;
pub(crate) mod cancel;
pub(crate) mod contract;
pub(crate) mod error;
pub(crate) mod evidence;
pub(crate) mod exec;
pub(crate) mod fspath;
pub(crate) mod host;
pub(crate) mod index;
pub(crate) mod llm;
pub(crate) mod profile;
pub(crate) mod pyjson;
pub(crate) mod redact;
// The loop's module stays public while it is being rewritten (#34): its mod.rs re-exports
// names nothing else uses, which a crate-private module would refuse as unused.
pub(crate) mod runner;
pub(crate) mod schema;
pub(crate) mod tools;
pub(crate) mod trace;
pub(crate) mod tuning;

// The names a user reaches for first, at the crate root too (all from the front door).
pub use api::{
    check_evidence, explore_profile, verification_profile, BudgetPolicy, CancelToken, ChatModel,
    CompletionVerdict, ContractError, Error, EvidenceCheck, ExploreResult, LaunchError,
    LauncherOptions, MainAgent, MainAgentOptions, MainRun, ModelChoice, ModelError, ModelRoute,
    OfflineScout, OpenAICompatible, OpenAICompatibleConfig, PathError, ProfileError, Repair,
    RequestInit, Result, ResultContract, RuntimeProfile, SubagentLaunchResult, SubagentLauncher,
    SubagentRequest, SubagentStatus, TaskTool, TerminalReason, ToolUsage, TraceDirSetting,
    Verification, VerificationResult, Workspace, READONLY_TOOLS,
};

#[cfg(feature = "python")]
mod py;

// The loop allocates many small strings and JSON values per step; mimalloc's thread-local
// free lists keep that cheap on every thread the runtime uses.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The package version, from Cargo.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
