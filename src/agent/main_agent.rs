//! A main agent: the same runner as a child, in `main_agent` mode, with Read, Grep, Glob and the
//! Task tool (no write tools), so a whole parent → child exploration can be watched in one call.
//! The parent's trace links to each child's (`subagent_*` events carry the child's trace path).

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::agent::launcher::{
    prune_traces, LaunchObserver, LauncherOptions, SubagentLauncher, TraceDirSetting,
};
use crate::agent::result::SubagentLaunchResult;
use crate::agent::task_tool::{TaskTool, TASK_TOOL_NAME};
use crate::contract::ToolUsage;
use crate::error::Error;
use crate::llm::ChatModel;
use crate::profile::{explore_profile, BudgetPolicy, ModelChoice, RuntimeProfile};
use crate::pyjson::Json;
use crate::runner::{CancelToken, ParsedResult, RunOutcome, RuntimeRunner, TerminalReason};
use crate::tools::context::ToolContext;
use crate::tools::envelope::{ErrorCode, ToolResult};
use crate::tools::permissions::PermissionContext;
use crate::tools::registry::{Tool, ToolRegistry};
use crate::tools::run::ToolArgs;
use crate::tools::workspace::Workspace;
use crate::trace::{new_child_id, EventSink, Trace, TraceRetention};

/// A main agent's model turns, unless configured.
pub(crate) const MAIN_MAX_STEPS: i64 = 50;
/// A main agent's tokens for the whole run, unless configured.
pub(crate) const MAIN_TOTAL_TOKEN_BUDGET: i64 = 200_000;
/// A main agent's tokens per request, unless configured.
pub(crate) const MAIN_CONTEXT_TOKEN_BUDGET: i64 = 64_000;
/// A main agent's wall-clock limit in seconds, unless configured.
pub(crate) const MAIN_TIMEOUT_SECONDS: f64 = 1800.0;

/// The main agent's system prompt (a template, like a profile's).
pub(crate) const MAIN_SYSTEM_PROMPT: &str = "You are a coding assistant working in one repository, with read-only tools: Glob, Grep, Read, and Task, which delegates a self-contained exploration to an isolated read-only sub-agent and returns its validated findings. Use Task for broad or noisy explorations; use Glob, Grep and Read directly for quick look-ups. You have at most {max_steps} turns and {total_token_budget} tokens. When you are done, answer the user in plain text, citing files as relative/path:line.";

/// How a main agent is set up; None fields take the defaults above.
#[derive(Clone, Default)]
pub struct MainAgentOptions {
    /// The light model for children (None: the launcher's default, `LIGHT_LLM_*`).
    pub light_model: Option<Arc<dyn ChatModel>>,
    /// A launcher to use for every run instead of one built per run (linked to its trace).
    pub launcher: Option<Arc<SubagentLauncher>>,
    /// Where the main agent's and its children's traces go.
    pub trace_dir: TraceDirSetting,
    /// Profiles the Task tool reaches (None: `explore`).
    pub subagent_types: Option<Vec<String>>,
    /// Model turns.
    pub max_steps: Option<i64>,
    /// Tokens for the whole run.
    pub total_token_budget: Option<i64>,
    /// Tokens per request.
    pub context_token_budget: Option<i64>,
    /// Wall-clock limit in seconds.
    pub timeout_seconds: Option<f64>,
    /// Model names per route and the settings every request carries (children's too).
    pub routes: crate::llm::settings::RouteSettings,
    /// Which old traces are deleted from the trace directory when the agent is built (None:
    /// `OUTRIDER_TRACE_KEEP`, else the default; see [`TraceRetention`]).
    pub trace_retention: Option<TraceRetention>,
}

/// The main agent's profile: no result contract (a plain-text answer), Task allowed.
pub(crate) fn main_profile(
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
        model_choice: ModelChoice::Main,
        result_contract: None,
        on_budget_exhausted: BudgetPolicy::Partial,
        timeout_seconds,
        ..explore_profile()
    }
}

/// What one main-agent run produced.
#[derive(Debug, Clone, Serialize)]
pub struct MainRun {
    /// `main-<32 hex>`.
    pub session_id: String,
    /// The answer, when there is one.
    pub final_text: Option<String>,
    /// Why it stopped.
    pub terminal_reason: TerminalReason,
    /// What went wrong, if anything.
    pub error: Option<String>,
    /// Steps used.
    pub steps: u64,
    /// Model calls made.
    pub model_calls: u64,
    /// Tool calls by name (Task included).
    pub tool_usage: ToolUsage,
    /// Tokens used.
    pub token_usage: u64,
    /// Of those, prompt (input) tokens.
    pub input_tokens: u64,
    /// Of those, completion (output) tokens.
    pub output_tokens: u64,
    /// The main agent's trace, when written.
    pub trace_path: Option<PathBuf>,
    /// Why the main agent's trace file is incomplete (a write failed), when it is.
    pub trace_error: Option<String>,
    /// The task the main agent was given.
    pub task: String,
    /// The main model: the id sent in requests, or the backend's description.
    pub model_name: String,
    /// The children its Task calls launched, in the order they finished.
    pub children: Vec<SubagentLaunchResult>,
    /// Tokens of the whole run: the main agent's and every child's.
    pub total_token_usage: u64,
    /// Of those, prompt (input) tokens.
    pub total_input_tokens: u64,
    /// Of those, completion (output) tokens.
    pub total_output_tokens: u64,
}

/// The Task tool as a registry tool: launches block their runtime thread (tools run on the
/// blocking pool) and return the envelope the parent model reads.
struct TaskToolAdapter {
    task: TaskTool,
    cancel: CancelToken,
}

impl Tool for TaskToolAdapter {
    fn name(&self) -> &'static str {
        TASK_TOOL_NAME
    }

    fn description(&self) -> Cow<'static, str> {
        self.task.description().into()
    }

    fn parameters(&self) -> Value {
        self.task.parameters()
    }

    fn run(&self, ctx: &ToolContext, args: &Value) -> ToolResult {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return ToolResult::error(
                args,
                ErrorCode::InternalError,
                "Task needs the outrider runtime",
                0,
            );
        };
        let prepared = self.task.prepare(ToolArgs::Json(Json::from_value(args)));
        handle.block_on(
            prepared
                .for_call(ctx.call_id.clone())
                .run(self.cancel.clone()),
        )
    }
}

/// A main agent over one root (see the module docs).
pub struct MainAgent {
    model: Arc<dyn ChatModel>,
    workspace: Workspace,
    options: MainAgentOptions,
    trace_dir: Option<crate::trace::TraceDir>,
    reachable: Vec<String>,
    profile: RuntimeProfile,
}

impl MainAgent {
    /// Check the options (budgets positive, trace dir outside the root, reachable profiles) and
    /// build the agent.
    pub fn new(
        root: &Path,
        model: Arc<dyn ChatModel>,
        options: MainAgentOptions,
    ) -> Result<Self, Error> {
        let workspace = Workspace::new(root)?;
        let profile = main_profile(
            options.max_steps.unwrap_or(MAIN_MAX_STEPS),
            options
                .total_token_budget
                .unwrap_or(MAIN_TOTAL_TOKEN_BUDGET),
            options
                .context_token_budget
                .unwrap_or(MAIN_CONTEXT_TOKEN_BUDGET),
            options.timeout_seconds.unwrap_or(MAIN_TIMEOUT_SECONDS),
        );
        profile.validate_budgets()?;
        let trace_dir = options.trace_dir.prepare(workspace.root())?;
        prune_traces(
            trace_dir.as_ref(),
            &options.trace_dir,
            options.trace_retention,
        )?;
        let reachable =
            crate::agent::task_tool::reachable_profiles(options.subagent_types.clone())?;
        match &options.launcher {
            Some(l) => {
                if l.workspace().root() != workspace.root() {
                    return Err(Error::config(
                        "launcher",
                        format!(
                            "explores '{}' but the main agent explores '{}'; give it a launcher over the same root",
                            l.workspace().root().display(),
                            workspace.root().display()
                        ),
                    ));
                }
                crate::agent::task_tool::check_reachable(l, &reachable)?;
            }
            None => {
                // The launcher built for each run has the built-in profiles only.
                let builtin = [
                    explore_profile().name,
                    crate::profile::verification_profile().name,
                ];
                let missing = crate::agent::task_tool::unknown_profiles(&builtin, &reachable);
                if !missing.is_empty() {
                    return Err(Error::config(
                        "subagent_types",
                        format!(
                            "{} are not built-in profiles (explore, verification); pass a launcher that registers them",
                            crate::pyjson::py_repr_list(&missing)
                        ),
                    ));
                }
            }
        }
        Ok(MainAgent {
            model,
            workspace,
            options,
            trace_dir,
            reachable,
            profile,
        })
    }

    /// The confined root.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// The main model.
    pub fn model(&self) -> &Arc<dyn ChatModel> {
        &self.model
    }

    /// The profiles its Task tool reaches.
    pub fn reachable(&self) -> &[String] {
        &self.reachable
    }

    /// Run on `task` with a fresh trace; Task launches children through the configured launcher
    /// or one built for this run (linked to the run's trace).
    pub async fn run(&self, task: &str, cancel: CancelToken) -> Result<MainRun, Error> {
        self.run_observed(task, cancel, None).await
    }

    /// [`MainAgent::run`], handing every event of the main agent's trace and of its children's
    /// traces to `on_event` as it is recorded.
    pub async fn run_observed(
        &self,
        task: &str,
        cancel: CancelToken,
        on_event: Option<EventSink>,
    ) -> Result<MainRun, Error> {
        if task.trim().is_empty() {
            return Err(Error::config("task", "must be a non-empty string"));
        }
        let session = format!("main-{}", new_child_id().trim_start_matches("child-"));
        let trace = self.main_trace(&session, on_event.clone())?;
        let children: Children = Arc::new(std::sync::Mutex::new(Vec::new()));
        let registry = self.registry(&trace, on_event, &children, &cancel)?;
        let schemas = Arc::new(registry.openai_tools());
        let model = self.options.routes.main(&self.model);
        let model_name =
            crate::redact::redact_str(&model.model_id().unwrap_or_else(|| model.describe()));
        let runner = RuntimeRunner {
            model,
            profile: self.profile.clone(),
            registry: Arc::new(registry),
            tool_schemas: schemas,
            workspace: self.workspace.clone(),
            permissions: PermissionContext::main_agent(),
            trace: trace.clone(),
            cancel,
            extra_system: None,
        };
        let span = tracing::info_span!(target: crate::trace::SPAN_TARGET, "main_agent", session_id = %session);
        tracing::info!(session_id = %session, "main agent started");
        let out = tracing::Instrument::instrument(runner.run(task), span).await;
        tracing::info!(
            session_id = %session,
            terminal_reason = out.terminal_reason.as_str(),
            tokens = out.token_usage,
            input_tokens = out.input_tokens,
            output_tokens = out.output_tokens,
            steps = out.steps,
            "main agent finished"
        );
        trace.finalize();
        let children = std::mem::take(&mut *children.lock().unwrap_or_else(|p| p.into_inner()));
        Ok(main_run(task, session, model_name, out, children, &trace))
    }

    /// The main agent's own trace: a file in the trace directory (an error when it cannot be
    /// written), or in memory without one.
    fn main_trace(&self, session: &str, on_event: Option<EventSink>) -> Result<Arc<Trace>, Error> {
        let trace = match &self.trace_dir {
            Some(dir) => Trace::to_file(session.to_string(), dir)
                .map_err(|e| Error::config("trace_dir", format!("cannot write the trace: {e}")))?,
            None => Trace::in_memory(session.to_string()),
        };
        Ok(Arc::new(trace.observed(on_event)))
    }

    /// The main agent's tools: the read-only ones and Task, whose children go through the
    /// configured launcher or one built for this run (linked to its trace), each finished
    /// child's result kept in `children`.
    fn registry(
        &self,
        trace: &Arc<Trace>,
        on_event: Option<EventSink>,
        children: &Children,
        cancel: &CancelToken,
    ) -> Result<ToolRegistry, Error> {
        let launcher = match &self.options.launcher {
            Some(l) => l.clone(),
            None => Arc::new(SubagentLauncher::with_workspace(
                self.workspace.clone(),
                LauncherOptions {
                    main_model: Some(self.model.clone()),
                    light_model: self.options.light_model.clone(),
                    routes: self.options.routes.clone(),
                    trace_dir: match &self.trace_dir {
                        Some(d) => TraceDirSetting::Held(d.clone()),
                        None => TraceDirSetting::Off,
                    },
                    parent_trace_handle: Some(trace.clone()),
                    ..LauncherOptions::default()
                },
            )?),
        };
        let collected = children.clone();
        let observer = LaunchObserver {
            on_event,
            on_finished: Some(Arc::new(move |r: &SubagentLaunchResult| {
                collected
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(r.clone());
            })),
        };
        let task_tool = TaskTool::new(launcher, Some(self.reachable.clone()))?
            .with_parent(trace.session_id().to_string())
            .with_observer(observer);
        let mut registry = ToolRegistry::readonly();
        registry.register(Arc::new(TaskToolAdapter {
            task: task_tool,
            cancel: cancel.clone(),
        }));
        Ok(registry)
    }
}

/// The results of the children a main agent's Task calls launched, as they finish.
type Children = Arc<std::sync::Mutex<Vec<SubagentLaunchResult>>>;

/// What a main agent's run produced: its answer (redacted), its counts, and its children's
/// results with the token totals over them all.
fn main_run(
    task: &str,
    session: String,
    model_name: String,
    out: RunOutcome,
    children: Vec<SubagentLaunchResult>,
    trace: &Trace,
) -> MainRun {
    let final_text = match &out.result {
        Some(ParsedResult::Text(t)) => Some(t.clone()),
        _ => out.final_text.clone(),
    }
    .map(|t| crate::redact::redact_str(&t));
    let sum = |f: fn(&SubagentLaunchResult) -> u64| children.iter().map(f).sum::<u64>();
    let (child_total, child_in, child_out) = (
        sum(|c| c.token_usage),
        sum(|c| c.input_tokens),
        sum(|c| c.output_tokens),
    );
    MainRun {
        task: crate::redact::redact_str(task),
        model_name,
        total_token_usage: out.token_usage + child_total,
        total_input_tokens: out.input_tokens + child_in,
        total_output_tokens: out.output_tokens + child_out,
        children,
        session_id: session,
        final_text,
        terminal_reason: out.terminal_reason,
        error: out.error.map(|e| crate::redact::redact_str(&e)),
        steps: out.steps,
        model_calls: out.model_calls,
        tool_usage: out.tool_usage,
        token_usage: out.token_usage,
        input_tokens: out.input_tokens,
        output_tokens: out.output_tokens,
        trace_path: trace.path().map(PathBuf::from),
        trace_error: trace.write_error(),
    }
}

debug_as_display!(MainAgent);

impl std::fmt::Display for MainAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "MainAgent(project_root={}, llm={}, subagent_types={})",
            crate::pyjson::py_repr_str(&self.workspace.root().display().to_string()),
            crate::pyjson::py_repr_str(&crate::redact::redact_str(&self.model.describe())),
            crate::pyjson::py_repr_list(&self.reachable)
        )
    }
}
