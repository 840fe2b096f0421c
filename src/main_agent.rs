//! A main agent: the same runner as a child, in `main_agent` mode, with Read, Grep, Glob and the
//! Task tool (no write tools), so a whole parent → child exploration can be watched in one call.
//! The parent's trace links to each child's (`subagent_*` events carry the child's trace path).

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use crate::launcher::SubagentLauncher;
use crate::llm::ChatModel;
use crate::profile::{explore_profile, RuntimeProfile};
use crate::pyjson::Json;
use crate::runner::{CancelToken, RunOutcome, RuntimeRunner};
use crate::task;
use crate::tools::context::ToolContext;
use crate::tools::envelope::{ErrorCode, ToolResult};
use crate::tools::permissions::PermissionContext;
use crate::tools::registry::{Tool, ToolRegistry};
use crate::tools::workspace::Workspace;
use crate::trace::Trace;

/// The Task tool as a registry tool: validates, launches (blocking its thread), and returns the
/// envelope the parent model reads.
pub struct TaskToolAdapter {
    launcher: Arc<SubagentLauncher>,
    reachable: Vec<String>,
    parent_session_id: String,
    cancel: CancelToken,
}

impl TaskToolAdapter {
    /// A Task tool over `launcher` reaching `reachable` profiles.
    pub fn new(
        launcher: Arc<SubagentLauncher>,
        reachable: Vec<String>,
        parent_session_id: String,
        cancel: CancelToken,
    ) -> Self {
        TaskToolAdapter {
            launcher,
            reachable,
            parent_session_id,
            cancel,
        }
    }
}

impl Tool for TaskToolAdapter {
    fn name(&self) -> &'static str {
        task::TASK_TOOL_NAME
    }

    fn description(&self) -> Cow<'static, str> {
        task::description(&self.reachable).into()
    }

    fn parameters(&self) -> Value {
        task::parameters(&self.reachable)
    }

    fn run(&self, _ctx: &ToolContext, args: &Value) -> ToolResult {
        let started = Instant::now();
        let valid = match task::validate(&Json::from_value(args), &self.reachable) {
            Ok(v) => v,
            Err(msg) => return task::error_envelope(ErrorCode::InvalidParam, &msg, args),
        };
        let mut request = valid.to_request();
        request.parent_session_id = Some(self.parent_session_id.clone());
        request.parent_run_id = Some("run-1".into());
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return task::error_envelope(
                ErrorCode::InternalError,
                "Task needs the outrider runtime",
                args,
            );
        };
        match handle.block_on(self.launcher.launch(request, self.cancel.clone())) {
            Ok(r) => task::launch_envelope(&r, args, started.elapsed().as_millis() as u64),
            Err(e) => task::error_envelope(ErrorCode::InvalidParam, &e.to_string(), args),
        }
    }
}

/// The main agent's system prompt (a template, like a profile's).
pub const MAIN_SYSTEM_PROMPT: &str = "You are a coding assistant working in one repository, with read-only tools: Glob, Grep, Read, and Task, which delegates a self-contained exploration to an isolated read-only sub-agent and returns its validated findings. Use Task for broad or noisy explorations; use Glob, Grep and Read directly for quick look-ups. You have at most {max_steps} turns and {total_token_budget} tokens. When you are done, answer the user in plain text, citing files as relative/path:line.";

/// The main agent's profile: no result contract (a plain-text answer), Task allowed.
pub fn main_profile(
    max_steps: i64,
    total_token_budget: i64,
    context_token_budget: i64,
    timeout_seconds: f64,
) -> RuntimeProfile {
    RuntimeProfile {
        name: "main".into(),
        system_prompt: MAIN_SYSTEM_PROMPT.into(),
        tool_allowlist: ["Glob", "Grep", "Read", "Task"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        max_steps,
        context_token_budget,
        total_token_budget,
        model_choice: "main".into(),
        result_contract: String::new(),
        on_budget_exhausted: "partial".into(),
        timeout_seconds,
        ..explore_profile()
    }
}

/// Run a main agent on `task` with its own trace; Task launches children through `launcher`.
#[allow(clippy::too_many_arguments)]
pub async fn run_main_agent(
    model: Arc<dyn ChatModel>,
    workspace: Workspace,
    launcher: Arc<SubagentLauncher>,
    profile: RuntimeProfile,
    reachable: Vec<String>,
    trace: Arc<Trace>,
    cancel: CancelToken,
    task_text: &str,
) -> RunOutcome {
    let mut registry = ToolRegistry::readonly();
    registry.register(Arc::new(TaskToolAdapter::new(
        launcher,
        reachable,
        trace.session_id().to_string(),
        cancel.clone(),
    )));
    let schemas = Arc::new(registry.openai_tools());
    let runner = RuntimeRunner {
        model,
        profile,
        registry: Arc::new(registry),
        tool_schemas: schemas,
        workspace,
        permissions: PermissionContext::main_agent(),
        trace: trace.clone(),
        cancel,
        extra_system: None,
    };
    let out = runner.run(task_text).await;
    trace.finalize();
    out
}
