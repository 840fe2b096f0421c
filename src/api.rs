//! The one front door to the core for an embedder such as the Python binding: every type and
//! function a front end needs, by name, so it never reaches into the core's modules. The
//! modules themselves are private to the crate; what is public is listed here.

pub use crate::agent::task_tool::{
    EnvelopeFormat, FactoryError, LauncherFactory, TaskTool, TASK_TOOL_NAME,
};
pub use crate::agent::{
    profiles_by_key, CompletionVerdict, LaunchError, LaunchObserver, LauncherOptions, MainAgent,
    MainAgentOptions, MainRun, ModelRoute, OnFinished, RequestInit, SubagentLaunchResult,
    SubagentLauncher, SubagentRequest, TraceDirSetting, Verification, REQUEST_FIELDS,
};
pub use crate::args::{seconds, unknown_option, within_bounds, Record};
pub use crate::cancel::{CancelToken, Owner};
pub use crate::contract::{
    answer_text, tool_usage_from_json, Answer, ExploreResult, Repair, SubagentStatus, ToolUsage,
    VerificationMeta, VerificationResult, UNKNOWN_REASON,
};
pub use crate::error::{ContractError, Error, LocItem, Result};
pub use crate::evidence::{check_evidence, EvidenceCheck};
pub use crate::exec::{
    allow_spin, current_caller, runtime, spin_first, with_caller, CallerScope, Inbox,
};
pub use crate::host::block::block_on_interruptible;
pub use crate::host::callback::{Abandon, CallbackModel, Host, Outcome, Reply};
pub use crate::host::exit::{ExitBarrier, EXIT_GRACE};
pub use crate::host::log as host_log;
pub use crate::llm::env::MAIN_PREFIX;
pub use crate::llm::env::{EnvFile, ENV_FILE};
pub use crate::llm::openai::config::ClientSettings;
pub use crate::llm::openai::{OpenAICompatible, OpenAICompatibleConfig};
pub use crate::llm::request::{ChatRequest, ModelSettings, RunFacts};
pub use crate::llm::scout::{terms as scout_terms, OfflineScout};
pub use crate::llm::settings::RouteSettings;
pub use crate::llm::{BoxFuture, ChatModel, ChatResponse, ModelError, ModelErrorKind};
pub use crate::profile::{
    explore_profile, verification_profile, BudgetPolicy, ModelChoice, ProfileError, ResultContract,
    RuntimeProfile, PROFILE_FIELDS, READONLY_TOOLS,
};
pub use crate::pyjson::{py_repr_str, Json};
pub use crate::redact::{redact_str, register_secret};
pub use crate::runner::outcome::ParsedResult;
pub use crate::schema::{
    refuse_inside_validator, validator_running, AnswerValidator, CustomResult, HostObject,
    OutputSchema, SchemaViolation, Validated, EXPECTED as OUTPUT_SCHEMA_EXPECTED,
};
pub use crate::tools::envelope::{to_pretty_json, ToolResult};
pub use crate::tools::run::{run_tool, run_tool_blocking, tool_schemas, ToolArgs};
pub use crate::tools::workspace::{PathError, Workspace};
pub use crate::trace::retention::TraceRetention;
pub use crate::trace::{EventSink, TraceEvent, SPAN_TARGET};
pub use crate::tuning::{Tuning, TUNING_FIELDS};
// The trace vocabulary a front end checks its own names against.
pub use crate::trace::event::EventKind;
pub use crate::trace::TerminalReason;
pub use crate::VERSION;

// What the integration tests (tests/rust/), the fuzz targets and the doc examples reach below
// the launch layer: the tools, the loop, the model messages, the client's settings.
pub use crate::llm::env::{
    config_from_lookup, config_from_sources, env_or_dotenv, load_dotenv, parse_dotenv,
    read_env_file, DotEnv, MAX_DOTENV_BYTES,
};
pub use crate::llm::openai::{
    duration_from_secs, LOCAL_MAX_TOKENS, LOCAL_TEMPERATURE, MAX_RESPONSE_BYTES,
};
pub use crate::llm::{Message, ToolCall, Usage};
pub use crate::runner::RuntimeRunner;
pub use crate::tools::budget::{OutputBudget, MAX_TOOL_BATCH_BYTES};
pub use crate::tools::context::ToolContext;
pub use crate::tools::envelope::{ErrorCode, ToolStatus};
pub use crate::tools::glob::GlobTool;
pub use crate::tools::grep::GrepTool;
pub use crate::tools::permissions::{classify, PermissionAction, PermissionContext, RuntimeMode};
pub use crate::tools::read::ReadTool;
pub use crate::tools::registry::{Tool, ToolRegistry};
pub use crate::trace::Trace;
