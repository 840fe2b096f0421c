//! The sub-agent launcher: profile lookup, model routing, a child trace, parent events, the
//! runner, metrics and the validated result, for one request or many at once.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use serde_json::{json, Map, Value};
use tokio::sync::Semaphore;

use crate::contract::{SubagentStatus, ToolUsage, VerificationVerdict};
use crate::llm::ChatModel;
use crate::profile::{explore_profile, verification_profile, RuntimeProfile};
use crate::pyjson::py_dumps;
use crate::runner::{CancelToken, ParsedResult, RunOutcome, RuntimeRunner, TerminalReason};
use crate::tools::permissions::PermissionContext;
use crate::tools::registry::ToolRegistry;
use crate::tools::workspace::Workspace;
use crate::trace::{new_child_id, prepare_trace_dir, EventKind, Trace};

/// The run id of every child (one run per child session, as in the reference).
pub const CHILD_RUN_ID: &str = "run-1";

/// A request for one child.
#[derive(Debug, Clone, PartialEq)]
pub struct SubagentRequest {
    /// Which profile (`explore`, `verification`, or a registered one).
    pub profile_name: String,
    /// The self-contained task.
    pub task: String,
    /// `light` or `main`; None uses the profile's default.
    pub model_choice: Option<String>,
    /// Extra context, rendered as sorted JSON after the task.
    pub structured_context: Map<String, Value>,
    /// The parent's session id, for parent events.
    pub parent_session_id: Option<String>,
    /// The parent's run id, for parent events.
    pub parent_run_id: Option<String>,
}

impl SubagentRequest {
    /// An explore request with no context.
    pub fn explore(task: impl Into<String>) -> Self {
        SubagentRequest {
            profile_name: "explore".into(),
            task: task.into(),
            model_choice: None,
            structured_context: Map::new(),
            parent_session_id: None,
            parent_run_id: None,
        }
    }

    /// The child's first user message: `<task>\n\nStructured context:\n<sorted JSON>`.
    pub fn render(&self) -> String {
        format!(
            "{}\n\nStructured context:\n{}",
            self.task.trim(),
            py_dumps(&Value::Object(self.structured_context.clone()), true)
        )
    }
}

/// What a launch produced.
#[derive(Debug, Clone)]
pub struct SubagentLaunchResult {
    /// completed | partial | failed | unverified.
    pub status: SubagentStatus,
    /// The profile used.
    pub profile_name: String,
    /// `child-<32 hex>`.
    pub child_session_id: String,
    /// Always `run-1`.
    pub child_run_id: String,
    /// The validated result, when there is one.
    pub result: Option<ParsedResult>,
    /// The route used: `light` or `main`.
    pub model_used: String,
    /// The real terminal reason (also on failure).
    pub terminal_reason: String,
    /// What went wrong, on failure.
    pub error: Option<String>,
    /// Wall time of the launch.
    pub elapsed_ms: u64,
    /// Requested tool calls by name.
    pub tool_usage: ToolUsage,
    /// Tokens used (reported or estimated).
    pub token_usage: u64,
    /// Whether some usage was estimated.
    pub usage_estimated: bool,
    /// The repair the gate made to the final answer, if any.
    pub repair: Option<String>,
    /// Model calls made.
    pub model_calls: u64,
    /// The child's JSONL trace, when written.
    pub trace_path: Option<PathBuf>,
}

/// A request the launcher refuses before starting a child.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LaunchError {
    /// No profile of that name is registered.
    #[error("unsupported runtime profile: {0}")]
    UnknownProfile(String),
    /// The model choice is not light or main.
    #[error("unsupported subagent model choice: {0}")]
    BadModelChoice(String),
}

/// The main model when none is given: `LLM_*` from the environment (and `.env`), else the
/// offline scout.
pub fn default_main_model() -> Result<Arc<dyn ChatModel>, crate::error::Error> {
    Ok(
        match crate::llm::openai::OpenAICompatible::from_env("LLM")? {
            Some(m) => Arc::new(m),
            None => Arc::new(crate::llm::scout::OfflineScout),
        },
    )
}

/// The light model when none is given: `LIGHT_LLM_*` when `LIGHT_LLM_MODEL_ID` is set, as in the
/// reference; otherwise there is no light route and light requests fall back to main.
pub fn default_light_model() -> Result<Option<Arc<dyn ChatModel>>, crate::error::Error> {
    Ok(crate::llm::openai::OpenAICompatible::from_env("LIGHT_LLM")?
        .map(|m| Arc::new(m) as Arc<dyn ChatModel>))
}

/// How the launcher is set up.
pub struct LauncherConfig {
    /// The explored root.
    pub workspace: Workspace,
    /// The main model.
    pub main_model: Arc<dyn ChatModel>,
    /// The light model, when one is configured.
    pub light_model: Option<Arc<dyn ChatModel>>,
    /// Where child traces go (checked to be outside the root); None keeps traces in memory.
    pub trace_dir: Option<PathBuf>,
    /// The parent's trace, for `subagent_*` events.
    pub parent_trace: Option<Arc<Trace>>,
    /// Profiles by name.
    pub profiles: BTreeMap<String, RuntimeProfile>,
    /// Children running at once, at most.
    pub max_concurrency: usize,
}

impl LauncherConfig {
    /// A config with the built-in profiles, no light model, traces in memory, 8 at once.
    pub fn new(workspace: Workspace, main_model: Arc<dyn ChatModel>) -> Self {
        let profiles = [explore_profile(), verification_profile()]
            .into_iter()
            .map(|p| (p.name.clone(), p))
            .collect();
        LauncherConfig {
            workspace,
            main_model,
            light_model: None,
            trace_dir: None,
            parent_trace: None,
            profiles,
            max_concurrency: 8,
        }
    }
}

/// Launches children. Cheap to share: one semaphore bounds all launches through it.
pub struct SubagentLauncher {
    config: LauncherConfig,
    /// Per profile: the filtered registry and its schemas, built once.
    tools: BTreeMap<String, (Arc<ToolRegistry>, Arc<Vec<Value>>)>,
    trace_dir: Option<PathBuf>,
    semaphore: Arc<Semaphore>,
}

impl SubagentLauncher {
    /// Check the config (trace dir outside the root, concurrency >= 1) and build the launcher.
    pub fn new(config: LauncherConfig) -> Result<Self, String> {
        if config.max_concurrency == 0 {
            return Err("max_concurrency must be at least 1, got 0".into());
        }
        for (name, p) in &config.profiles {
            p.validate().map_err(|e| format!("profile '{name}': {e}"))?;
        }
        let trace_dir = match &config.trace_dir {
            Some(dir) => {
                Some(prepare_trace_dir(dir, config.workspace.root()).map_err(|e| e.to_string())?)
            }
            None => None,
        };
        let semaphore = Arc::new(Semaphore::new(config.max_concurrency));
        let tools = config
            .profiles
            .iter()
            .map(|(name, p)| {
                let registry = ToolRegistry::readonly().filtered(p.tool_allowlist.iter().cloned());
                let schemas = Arc::new(registry.openai_tools());
                (name.clone(), (Arc::new(registry), schemas))
            })
            .collect();
        Ok(SubagentLauncher {
            config,
            tools,
            trace_dir,
            semaphore,
        })
    }

    /// The config.
    pub fn config(&self) -> &LauncherConfig {
        &self.config
    }

    /// The profile registered under `name`.
    pub fn profile(&self, name: &str) -> Option<&RuntimeProfile> {
        self.config.profiles.get(name)
    }

    /// The profile a request names and the model route it asks for (its own, else the
    /// profile's), or why the launcher refuses it before starting a child.
    pub fn check(
        &self,
        request: &SubagentRequest,
    ) -> Result<(&RuntimeProfile, String), LaunchError> {
        let profile = self
            .config
            .profiles
            .get(&request.profile_name)
            .ok_or_else(|| LaunchError::UnknownProfile(request.profile_name.clone()))?;
        let route = request
            .model_choice
            .clone()
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| profile.model_choice.clone());
        if route != "light" && route != "main" {
            return Err(LaunchError::BadModelChoice(route));
        }
        Ok((profile, route))
    }

    /// Pick the model for a route: light when configured, else main. Returns the route used.
    fn select(&self, requested: &str) -> (Arc<dyn ChatModel>, &'static str) {
        match (&self.config.light_model, requested) {
            (Some(light), "light") => (light.clone(), "light"),
            _ => (self.config.main_model.clone(), "main"),
        }
    }

    fn parent_event(&self, event: EventKind, payload: Value) {
        if let Some(parent) = &self.config.parent_trace {
            parent.log(event, 0, payload);
            parent.flush();
        }
    }

    /// Launch one child and wait for it. Only a bad profile name or model choice is an error;
    /// everything that happens in the child is in the result.
    pub async fn launch(
        &self,
        request: SubagentRequest,
        cancel: CancelToken,
    ) -> Result<SubagentLaunchResult, LaunchError> {
        let started = Instant::now();
        let (profile, requested) = self.check(&request)?;
        let profile = profile.clone();
        let (model, route) = self.select(&requested);
        let route = model.route_label().unwrap_or(route);
        let child_session_id = new_child_id();
        let trace = Arc::new(
            self.trace_dir
                .as_ref()
                .and_then(|dir| Trace::to_file(child_session_id.clone(), dir).ok())
                .unwrap_or_else(|| Trace::in_memory(child_session_id.clone())),
        );
        let parent_session = request.parent_session_id.clone().or_else(|| {
            self.config
                .parent_trace
                .as_ref()
                .map(|t| t.session_id().to_string())
        });
        let mut common = json!({
            "parent_session_id": parent_session,
            "parent_run_id": request.parent_run_id.clone().unwrap_or_default(),
            "profile": profile.name, "max_steps": profile.max_steps,
            "context_token_budget": profile.context_token_budget,
            "total_token_budget": profile.total_token_budget,
            "child_session_id": child_session_id, "child_run_id": CHILD_RUN_ID, "model": route,
            "trace_path": trace.path().map(|p| p.display().to_string()),
        });
        self.parent_event(EventKind::SubagentRequested, common.clone());
        let _permit = self.semaphore.acquire().await.ok();
        self.parent_event(EventKind::SubagentStarted, common.clone());

        let (registry, tool_schemas) =
            self.tools.get(&profile.name).cloned().unwrap_or_else(|| {
                let registry =
                    ToolRegistry::readonly().filtered(profile.tool_allowlist.iter().cloned());
                let schemas = Arc::new(registry.openai_tools());
                (Arc::new(registry), schemas)
            });
        let runner = RuntimeRunner {
            model,
            profile: profile.clone(),
            registry,
            tool_schemas,
            workspace: self.config.workspace.clone(),
            permissions: PermissionContext::readonly_subagent(),
            trace: trace.clone(),
            cancel,
            extra_system: None,
        };
        let outcome = runner.run(&request.render()).await;
        let result = self.assemble(&profile, route, &child_session_id, outcome, started, &trace);

        let extra = match result.status {
            SubagentStatus::Failed => {
                json!({"terminal_reason": result.terminal_reason, "tool_usage": result.tool_usage,
                "token_usage": result.token_usage, "elapsed_ms": result.elapsed_ms, "error": result.error})
            }
            _ => json!({"terminal_reason": result.terminal_reason, "tool_usage": result.tool_usage,
                "token_usage": result.token_usage, "verdict": verdict_of(&result), "elapsed_ms": result.elapsed_ms}),
        };
        if let (Some(c), Value::Object(e)) = (common.as_object_mut(), extra) {
            c.extend(e);
        }
        let event = if result.status == SubagentStatus::Failed {
            EventKind::SubagentFailed
        } else {
            EventKind::SubagentCompleted
        };
        self.parent_event(event, common);
        trace.finalize();
        Ok(result)
    }

    fn assemble(
        &self,
        profile: &RuntimeProfile,
        route: &str,
        child_session_id: &str,
        outcome: RunOutcome,
        started: Instant,
        trace: &Trace,
    ) -> SubagentLaunchResult {
        let reason = outcome.terminal_reason;
        let mut result = outcome.result;
        match &mut result {
            Some(ParsedResult::Explore(r)) => {
                r.tool_usage = outcome.tool_usage.clone();
                r.terminal_reason = reason.as_str().into();
            }
            Some(ParsedResult::Verification(r)) => {
                r.tool_usage = outcome.tool_usage.clone();
                r.terminal_reason = reason.as_str().into();
                r.child_session_id = Some(child_session_id.into());
                r.child_run_id = Some(CHILD_RUN_ID.into());
                r.token_usage = outcome.token_usage;
            }
            Some(ParsedResult::Text(_)) | None => {}
        }
        let budget_ran_out = matches!(
            reason,
            TerminalReason::MaxSteps | TerminalReason::TokenBudget
        );
        let status = match (&result, reason.is_success() || budget_ran_out) {
            (Some(ParsedResult::Explore(r)), true) => r.status,
            (Some(ParsedResult::Verification(v)), true) => match v.verdict {
                VerificationVerdict::Pass => SubagentStatus::Completed,
                VerificationVerdict::Unverified => SubagentStatus::Unverified,
                VerificationVerdict::Fail | VerificationVerdict::Partial => SubagentStatus::Partial,
            },
            (Some(ParsedResult::Text(_)), true) => SubagentStatus::Completed,
            _ => SubagentStatus::Failed,
        };
        let status = if budget_ran_out && status == SubagentStatus::Completed {
            SubagentStatus::Partial
        } else {
            status
        };
        let error = if status == SubagentStatus::Failed {
            Some(match &outcome.error {
                Some(detail) => format!("child terminal reason: {}: {detail}", reason.as_str()),
                None => format!("child terminal reason: {}", reason.as_str()),
            })
        } else {
            None
        };
        SubagentLaunchResult {
            status,
            profile_name: profile.name.clone(),
            child_session_id: child_session_id.into(),
            child_run_id: CHILD_RUN_ID.into(),
            result: if status == SubagentStatus::Failed {
                None
            } else {
                result
            },
            model_used: route.into(),
            terminal_reason: reason.as_str().into(),
            error,
            elapsed_ms: started.elapsed().as_millis().max(1) as u64,
            tool_usage: outcome.tool_usage,
            token_usage: outcome.token_usage,
            usage_estimated: outcome.usage_estimated,
            repair: outcome.repair.map(|r| r.as_str().to_string()),
            model_calls: outcome.model_calls,
            trace_path: trace.path().map(PathBuf::from),
        }
    }
}

fn verdict_of(result: &SubagentLaunchResult) -> Value {
    match &result.result {
        Some(ParsedResult::Explore(r)) => json!(r.status.as_str()),
        Some(ParsedResult::Verification(v)) => json!(v.verdict.as_str()),
        Some(ParsedResult::Text(_)) => json!("completed"),
        None => Value::Null,
    }
}
