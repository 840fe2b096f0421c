//! The sub-agent launcher: profile lookup, model routing, a child trace, parent events, the
//! runner, metrics and the validated result, for one request or many at once.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use serde_json::{json, Value};
use tokio::sync::Semaphore;
use tracing::Instrument;

use crate::agent::request::SubagentRequest;
use crate::agent::result::{ModelRoute, SubagentLaunchResult, CHILD_RUN_ID};
use crate::contract::{SubagentStatus, VerificationVerdict};
use crate::error::{Error, LaunchError};
use crate::evidence::EvidenceCheck;
use crate::llm::env::EnvFile;
use crate::llm::ChatModel;
use crate::profile::{explore_profile, verification_profile, ModelChoice, RuntimeProfile};
use crate::redact::redact_str;
use crate::runner::{CancelToken, ParsedResult, RunOutcome, RuntimeRunner, TerminalReason};
use crate::tools::permissions::PermissionContext;
use crate::tools::registry::ToolRegistry;
use crate::tools::workspace::Workspace;
use crate::trace::{
    default_trace_dir, new_child_id, prepare_trace_dir, EventKind, EventSink, Trace, TraceDir,
    TraceDirError, TraceRetention,
};

/// Children running at once through one launcher, unless configured otherwise.
pub(crate) const DEFAULT_MAX_CONCURRENCY: usize = 8;

/// Where traces go: the default directory, nowhere (in memory only), or a given directory.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum TraceDirSetting {
    /// `$OUTRIDER_TRACE_DIR`, else the user's state directory (see [`default_trace_dir`]).
    #[default]
    Default,
    /// Keep traces in memory only.
    Off,
    /// This directory (created; refused when inside the explored root).
    Dir(PathBuf),
    /// A directory already prepared and held open (a main agent passes its own to its launcher).
    Held(TraceDir),
}

impl TraceDirSetting {
    /// The checked, created directory for a launcher exploring `root`; None keeps traces in
    /// memory.
    ///
    /// The default directory is the user's: when the explored root contains it (exploring the
    /// home directory, say), traces go to a directory under the system temp dir instead, or stay
    /// in memory when that is inside the root too. A directory the caller named (here or in
    /// `OUTRIDER_TRACE_DIR`) is never replaced: inside the root it is an error.
    pub fn prepare(&self, root: &Path) -> Result<Option<TraceDir>, TraceDirError> {
        let dir = match self {
            TraceDirSetting::Off => return Ok(None),
            TraceDirSetting::Default => default_trace_dir(),
            TraceDirSetting::Dir(d) if d.as_os_str().is_empty() => {
                return Err(TraceDirError::Create {
                    dir: String::new(),
                    reason: "the path is empty: name a directory, or pass False to keep traces in memory".into(),
                })
            }
            TraceDirSetting::Dir(d) => d.clone(),
            TraceDirSetting::Held(held) => return Ok(Some(held.clone())),
        };
        match prepare_trace_dir(&dir, root) {
            Err(TraceDirError::InsideRoot { .. })
                if matches!(self, TraceDirSetting::Default)
                    && std::env::var_os("OUTRIDER_TRACE_DIR").is_none_or(|d| d.is_empty()) =>
            {
                let fallback = std::env::temp_dir().join("outrider-traces");
                match prepare_trace_dir(&fallback, root) {
                    Ok(dir) => Ok(Some(dir)),
                    Err(TraceDirError::InsideRoot { .. }) => Ok(None),
                    Err(other) => Err(other),
                }
            }
            other => other.map(Some),
        }
    }
}

/// Delete old traces from a directory this launcher or main agent prepared (a held directory is
/// its owner's to prune). `retention` None reads `OUTRIDER_TRACE_KEEP`, else keeps the default.
/// A directory that cannot be pruned does not stop anything: it is reported as a warning.
pub(crate) fn prune_traces(
    dir: Option<&TraceDir>,
    setting: &TraceDirSetting,
    retention: Option<TraceRetention>,
) -> Result<(), Error> {
    let (Some(dir), false) = (dir, matches!(setting, TraceDirSetting::Held(_))) else {
        return Ok(());
    };
    let retention = match retention {
        Some(r) => r,
        None => TraceRetention::from_env()
            .map_err(|e| Error::config(crate::trace::TRACE_KEEP_ENV, e))?,
    };
    match dir.prune(&retention) {
        Ok(0) => {}
        Ok(n) => tracing::debug!(dir = %dir.path().display(), deleted = n, "old traces pruned"),
        Err(e) => tracing::warn!(
            dir = %dir.path().display(),
            error = %e,
            "old traces could not be pruned"
        ),
    }
    Ok(())
}

/// Called once per finished child with its result (a progress bar's tick).
pub type OnFinished = Arc<dyn Fn(&SubagentLaunchResult) + Send + Sync>;

/// What a caller watches launches through: each trace event as it is recorded, and each child
/// as it finishes (a progress bar's tick).
#[derive(Clone, Default)]
pub struct LaunchObserver {
    /// Receives every event of each child's trace.
    pub on_event: Option<EventSink>,
    /// Called once per finished child, with its result.
    pub on_finished: Option<OnFinished>,
}

impl LaunchObserver {
    /// An observer of trace events only.
    pub fn events(sink: Option<EventSink>) -> Self {
        LaunchObserver {
            on_event: sink,
            on_finished: None,
        }
    }
}

/// The main model when none is given: `LLM_*` from the environment (and the `.env` that
/// `env_file` names, never one inside `root` unless named), else the offline scout.
pub(crate) fn default_main_model(
    env_file: &EnvFile,
    root: &Path,
) -> Result<Arc<dyn ChatModel>, Error> {
    Ok(
        match crate::llm::openai::OpenAICompatible::from_env(None, env_file, Some(root))? {
            Some(m) => Arc::new(m),
            None => Arc::new(crate::llm::scout::OfflineScout),
        },
    )
}

/// The light model when none is given: `LIGHT_LLM_*` when `LIGHT_LLM_MODEL_ID` is set, as in the
/// reference; otherwise there is no light route and light requests fall back to main.
pub(crate) fn default_light_model(
    env_file: &EnvFile,
    root: &Path,
) -> Result<Option<Arc<dyn ChatModel>>, Error> {
    let light = Some(crate::llm::env::LIGHT_PREFIX);
    Ok(
        crate::llm::openai::OpenAICompatible::from_env(light, env_file, Some(root))?
            .map(|m| Arc::new(m) as Arc<dyn ChatModel>),
    )
}

/// A model named for a route (`main_model`, `light_model`) that only the offline scout would
/// serve (no model given for it and none configured, or the scout itself) is refused: the
/// scout calls no model, and a result would name a model that never ran.
fn check_named_models(
    routes: &crate::llm::settings::RouteSettings,
    main: &Arc<dyn ChatModel>,
    light: Option<&Arc<dyn ChatModel>>,
) -> Result<(), Error> {
    let scout = |m: &Arc<dyn ChatModel>| m.route_label() == Some("offline");
    let refuse = |field: &str, name: &str, whose: &str| {
        Error::config(
            field,
            format!(
                "names the model {}, but the {whose} route would be served by the offline scout, which calls no model (no {whose} model was given and LLM_MODEL_ID is not set): pass the model itself (main_llm=/light_llm=: an SDK client, a callable, or a 'provider:model' string such as 'openai:gpt-4.1'), or set LLM_MODEL_ID",
                crate::pyjson::py_repr_str(name)
            ),
        )
    };
    if let Some(name) = &routes.main_model {
        if scout(main) {
            return Err(refuse("main_model", name, "main"));
        }
    }
    if let Some(name) = &routes.light_model {
        if light.map_or(scout(main), scout) {
            return Err(refuse("light_model", name, "light"));
        }
    }
    Ok(())
}

/// How a launcher is set up, as a caller gives it. [`Default`] is what the Python constructor's
/// defaults mean.
#[derive(Clone, Default)]
pub struct LauncherOptions {
    /// The main model; None reads `LLM_*` (and `.env`), else uses the offline scout.
    pub main_model: Option<Arc<dyn ChatModel>>,
    /// The light model; None reads `LIGHT_LLM_*`, else light requests use the main model.
    pub light_model: Option<Arc<dyn ChatModel>>,
    /// Where child traces go.
    pub trace_dir: TraceDirSetting,
    /// A JSONL file that receives the parent's `subagent_*` events.
    pub parent_trace: Option<PathBuf>,
    /// An already open parent trace (a main agent's); wins over `parent_trace`.
    pub parent_trace_handle: Option<Arc<Trace>>,
    /// Extra profiles; one named like a built-in replaces it.
    pub profiles: Vec<RuntimeProfile>,
    /// Children running at once, at least 1; None means [`DEFAULT_MAX_CONCURRENCY`].
    pub max_concurrency: Option<i64>,
    /// Model names per route and the settings every request carries.
    pub routes: crate::llm::settings::RouteSettings,
    /// Which old traces are deleted from the trace directory when the launcher is built; None
    /// reads `OUTRIDER_TRACE_KEEP`, else keeps the newest 1000 files of at most 30 days.
    pub trace_retention: Option<TraceRetention>,
    /// Which `.env` the default models read (when `main_model`/`light_model` are None).
    pub env_file: EnvFile,
}

/// Launches children. Cheap to share: one semaphore bounds all launches through it.
pub struct SubagentLauncher {
    workspace: Workspace,
    main_model: Arc<dyn ChatModel>,
    light_model: Option<Arc<dyn ChatModel>>,
    /// The main route has no model (see [`SubagentLauncher::child_profile`]).
    main_unset: bool,
    parent_trace: Option<Arc<Trace>>,
    profiles: BTreeMap<String, RuntimeProfile>,
    /// Per profile: the filtered registry and its schemas, built once.
    tools: BTreeMap<String, ProfileTools>,
    trace_dir: Option<TraceDir>,
    max_concurrency: usize,
    /// Whether `max_concurrency` was given (not the default): only then does it also bound a
    /// `launch_many` call that gives its own limit.
    limit_given: bool,
    semaphore: Arc<Semaphore>,
}

/// A profile's tools, built once per launcher: its registry and schemas for a model, and for the
/// offline scout the same with Search added wherever Grep is allowed (the scout searches the code
/// index; a model gets Search only when the profile names it).
struct ProfileTools {
    model: (Arc<ToolRegistry>, Arc<Vec<Value>>),
    scout: (Arc<ToolRegistry>, Arc<Vec<Value>>),
}

impl ProfileTools {
    fn of(profile: &RuntimeProfile) -> Self {
        let model = ToolRegistry::readonly()
            .with_search()
            .filtered(profile.tool_allowlist.iter().cloned());
        let scout = model.with_search();
        let pair = |r: ToolRegistry| {
            let schemas = Arc::new(r.openai_tools());
            (Arc::new(r), schemas)
        };
        ProfileTools {
            model: pair(model),
            scout: pair(scout),
        }
    }
}

/// Profiles a caller gave as a mapping: each key must be its profile's name.
pub fn profiles_by_key(pairs: Vec<(String, RuntimeProfile)>) -> Result<Vec<RuntimeProfile>, Error> {
    pairs
        .into_iter()
        .map(|(key, p)| {
            if key != p.name {
                return Err(Error::config(
                    "profiles",
                    format!(
                        "key {} names a profile called {}",
                        crate::pyjson::py_repr_str(&key),
                        crate::pyjson::py_repr_str(&p.name)
                    ),
                ));
            }
            Ok(p)
        })
        .collect()
}

/// A concurrency limit given by a caller: at least 1.
pub(crate) fn concurrency_limit(field: &str, value: i64) -> Result<usize, Error> {
    if value < 1 {
        return Err(Error::config(
            field,
            format!("must be at least 1, got {value}"),
        ));
    }
    Ok(value as usize)
}

impl SubagentLauncher {
    /// Check the options (a usable root, trace dir outside it, valid profiles, concurrency >= 1),
    /// fill in the defaults, and build the launcher.
    pub fn new(root: &Path, options: LauncherOptions) -> Result<Self, Error> {
        Self::with_workspace(Workspace::new(root)?, options)
    }

    /// [`SubagentLauncher::new`] over an already confined root.
    pub fn with_workspace(workspace: Workspace, options: LauncherOptions) -> Result<Self, Error> {
        let max_concurrency = concurrency_limit(
            "max_concurrency",
            options
                .max_concurrency
                .unwrap_or(DEFAULT_MAX_CONCURRENCY as i64),
        )?;
        let mut profiles: BTreeMap<String, RuntimeProfile> =
            [explore_profile(), verification_profile()]
                .into_iter()
                .map(|p| (p.name.clone(), p))
                .collect();
        let mut given = std::collections::BTreeSet::new();
        for p in options.profiles {
            if !given.insert(p.name.clone()) {
                return Err(Error::config(
                    "profiles",
                    format!(
                        "{} is given twice; give each profile once",
                        crate::pyjson::py_repr_str(&p.name)
                    ),
                ));
            }
            p.validate().map_err(|e| {
                crate::profile::ProfileError(format!("profile '{}': {}", p.name, e.0))
            })?;
            profiles.insert(p.name.clone(), p);
        }
        let trace_dir = options.trace_dir.prepare(workspace.root())?;
        prune_traces(
            trace_dir.as_ref(),
            &options.trace_dir,
            options.trace_retention,
        )?;
        let parent_trace = match (options.parent_trace_handle, options.parent_trace) {
            (Some(handle), _) => Some(handle),
            (None, Some(path)) => Some(Arc::new(open_parent_trace(&path, workspace.root())?)),
            (None, None) => None,
        };
        let main_given = options.main_model.is_some();
        let main_model = match options.main_model {
            Some(m) => m,
            None => default_main_model(&options.env_file, workspace.root())?,
        };
        let light_model = match options.light_model {
            Some(m) => Some(m),
            None => default_light_model(&options.env_file, workspace.root())?,
        };
        check_named_models(&options.routes, &main_model, light_model.as_ref())?;
        // Given a light model alone, with nothing configuring the main one, the main route has
        // no model: a request for it is refused rather than run by the offline scout.
        let main_unset =
            !main_given && main_model.route_label() == Some("offline") && light_model.is_some();
        let light_model = options.routes.light(&main_model, light_model);
        let main_model = options.routes.main(&main_model);
        let tools = profiles
            .iter()
            .map(|(name, p)| (name.clone(), ProfileTools::of(p)))
            .collect();
        Ok(SubagentLauncher {
            workspace,
            main_model,
            light_model,
            main_unset,
            parent_trace,
            profiles,
            tools,
            trace_dir,
            max_concurrency,
            limit_given: options.max_concurrency.is_some(),
            semaphore: Arc::new(Semaphore::new(max_concurrency)),
        })
    }

    /// The tools of a profile's children: its registry and schemas, with Search added for the
    /// offline scout wherever Grep is allowed (the scout searches the code index).
    fn tools_for(
        &self,
        profile: &str,
        model: &dyn ChatModel,
    ) -> (Arc<ToolRegistry>, Arc<Vec<Value>>) {
        let tools = &self.tools[profile];
        if model.route_label() == Some("offline") {
            tools.scout.clone()
        } else {
            tools.model.clone()
        }
    }

    /// The confined root.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// The main model.
    pub fn main_model(&self) -> &Arc<dyn ChatModel> {
        &self.main_model
    }

    /// The light model, when one is configured.
    pub fn light_model(&self) -> Option<&Arc<dyn ChatModel>> {
        self.light_model.as_ref()
    }

    /// Registered profile names, sorted.
    pub fn profile_names(&self) -> Vec<String> {
        self.profiles.keys().cloned().collect()
    }

    /// The profile registered under `name`.
    pub fn profile(&self, name: &str) -> Option<&RuntimeProfile> {
        self.profiles.get(name)
    }

    /// Children running at once, at most.
    pub fn max_concurrency(&self) -> usize {
        self.max_concurrency
    }

    /// The directory child traces go to, when they are written.
    pub fn trace_dir(&self) -> Option<&Path> {
        self.trace_dir.as_ref().map(TraceDir::path)
    }

    /// The profile a request names and the model route it asks for (its own, else the
    /// profile's), or why the launcher refuses it before starting a child.
    pub fn check(
        &self,
        request: &SubagentRequest,
    ) -> Result<(&RuntimeProfile, ModelChoice), LaunchError> {
        let profile = self.profiles.get(&request.profile_name).ok_or_else(|| {
            LaunchError::UnknownProfile {
                name: request.profile_name.clone(),
                known: self.profile_names(),
            }
        })?;
        let route = request.model_choice.unwrap_or(profile.model_choice);
        Ok((profile, route))
    }

    /// The profile a child of `request` runs with (the request's `output_schema` in place of
    /// the profile's) and its model route, or why the launcher refuses it: a schema with a
    /// profile whose `scout_fallback` answers only `ExploreResult`, or a schema for the offline
    /// scout (no model: it can only answer `ExploreResult`).
    pub fn child_profile(
        &self,
        request: &SubagentRequest,
    ) -> Result<(RuntimeProfile, ModelChoice), LaunchError> {
        let (profile, route) = self.check(request)?;
        if self.main_unset && self.select(route).1 == ModelRoute::Main {
            return Err(LaunchError::RouteUnset(
                "the main route has no model: the launcher was given a light_llm only and LLM_MODEL_ID is not set; pass main_llm= (an SDK client, a callable, or a 'provider:model' string), set LLM_MODEL_ID, or ask for model_choice='light'".into(),
            ));
        }
        let mut profile = profile.clone();
        if let Some(schema) = &request.output_schema {
            profile = profile
                .with_output_schema(Some(schema.clone()))
                .map_err(|e| LaunchError::OutputSchema(e.0))?;
        }
        if let Some(schema) = &profile.output_schema {
            let (model, _) = self.select(route);
            if model.route_label() == Some("offline") {
                return Err(LaunchError::OutputSchema(format!(
                    "{} needs a model: the offline scout (used when no LLM is configured) answers only ExploreResult; give the launcher a main_llm (or set LLM_MODEL_ID)",
                    crate::pyjson::py_repr_str(schema.name())
                )));
            }
        }
        Ok((profile, route))
    }

    /// Pick the model for a route: light when configured, else main. Returns the route used.
    fn select(&self, requested: ModelChoice) -> (Arc<dyn ChatModel>, ModelRoute) {
        match (&self.light_model, requested) {
            (Some(light), ModelChoice::Light) => (light.clone(), ModelRoute::Light),
            _ => (self.main_model.clone(), ModelRoute::Main),
        }
    }

    fn parent_event(&self, event: EventKind, payload: Value) {
        if let Some(parent) = &self.parent_trace {
            parent.log(event, 0, payload);
            parent.flush();
        }
    }

    /// The parent trace's session id, when there is a parent trace.
    pub fn parent_session_id(&self) -> Option<&str> {
        self.parent_trace.as_ref().map(|t| t.session_id())
    }

    /// Launch one child and wait for it. Only a request the launcher refuses (unknown profile,
    /// bad model choice) is an error; everything that happens in the child is in the result.
    pub async fn launch(
        &self,
        request: SubagentRequest,
        cancel: CancelToken,
    ) -> Result<SubagentLaunchResult, Error> {
        self.launch_observed(request, cancel, &LaunchObserver::default())
            .await
    }

    /// [`SubagentLauncher::launch`], handing the child's trace events and its result to
    /// `observer` as they happen.
    pub async fn launch_observed(
        &self,
        request: SubagentRequest,
        cancel: CancelToken,
        observer: &LaunchObserver,
    ) -> Result<SubagentLaunchResult, Error> {
        self.launch_limited(request, cancel, observer, true).await
    }

    /// [`SubagentLauncher::launch_observed`]; `launcher_limit` says whether the child also
    /// waits for the launcher's own concurrency limit (a `launch_many` call with its own limit
    /// bounds its children itself).
    async fn launch_limited(
        &self,
        request: SubagentRequest,
        cancel: CancelToken,
        observer: &LaunchObserver,
        launcher_limit: bool,
    ) -> Result<SubagentLaunchResult, Error> {
        let started = Instant::now();
        let (profile, requested) = self.child_profile(&request)?;
        let (model, chosen) = self.select(requested);
        let route = ModelRoute::reported(model.route_label(), chosen);
        let model_name = redact_str(&model.model_id().unwrap_or_else(|| model.describe()));
        let child_session_id = new_child_id();
        let span = tracing::info_span!(target: crate::trace::SPAN_TARGET,
            "launch",
            session_id = %child_session_id,
            profile = %profile.name,
            route = %route,
            status = tracing::field::Empty,
            terminal_reason = tracing::field::Empty,
            tokens = tracing::field::Empty,
            elapsed_ms = tracing::field::Empty,
        );
        let run = async {
            let trace = self.child_trace(&child_session_id, observer);
            tracing::info!(
                session_id = %child_session_id,
                profile = %profile.name,
                route = %route,
                "child started"
            );
            let mut common =
                self.parent_payload(&request, &profile, &child_session_id, route, &trace);
            self.parent_event(EventKind::SubagentRequested, common.clone());
            let _permit = if launcher_limit {
                self.semaphore.acquire().await.ok()
            } else {
                None
            };
            self.parent_event(EventKind::SubagentStarted, common.clone());

            let (registry, tool_schemas) = self.tools_for(&profile.name, model.as_ref());
            let runner = RuntimeRunner {
                model,
                profile: profile.clone(),
                registry,
                tool_schemas,
                workspace: self.workspace.clone(),
                permissions: PermissionContext::readonly_subagent(),
                trace: trace.clone(),
                cancel,
                extra_system: None,
            };
            let outcome = runner.run(&request.render()).await;
            let what = (route, model_name.clone(), redact_str(&request.task));
            let mut result = assemble(&profile, what, &child_session_id, outcome, started, &trace);
            let (event, extra) = finished_payload(&result);
            if let (Some(c), Value::Object(e)) = (common.as_object_mut(), extra) {
                c.extend(e);
            }
            self.parent_event(event, common);
            trace.finalize();
            result.trace_error = trace.write_error();
            record_finished(&result, &child_session_id);
            if let Some(done) = &observer.on_finished {
                done(&result);
            }
            result
        };
        Ok(run.instrument(span).await)
    }

    /// The child's trace: a file in the trace directory, or in memory without one. A trace
    /// file that cannot be created does not stop the child: it runs with an in-memory trace
    /// and the result says why nothing was written.
    fn child_trace(&self, child_session_id: &str, observer: &LaunchObserver) -> Arc<Trace> {
        let id = child_session_id.to_string();
        let trace = match &self.trace_dir {
            Some(dir) => Trace::to_file(id.clone(), dir).unwrap_or_else(|e| {
                Trace::unwritten(
                    id,
                    format!(
                        "the trace file in '{}' cannot be created: {e}",
                        dir.path().display()
                    ),
                )
            }),
            None => Trace::in_memory(id),
        };
        Arc::new(trace.observed(observer.on_event.clone()))
    }

    /// What every parent event about this child says: who asked, the profile and its
    /// budgets, the child's ids, its model route and trace file.
    fn parent_payload(
        &self,
        request: &SubagentRequest,
        profile: &RuntimeProfile,
        child_session_id: &str,
        route: ModelRoute,
        trace: &Trace,
    ) -> Value {
        let parent_session = request
            .parent_session_id
            .clone()
            .or_else(|| self.parent_session_id().map(str::to_string));
        let mut common = json!({
            "parent_session_id": parent_session,
            "parent_run_id": request.parent_run_id.clone().unwrap_or_default(),
            "profile": profile.name, "max_steps": profile.max_steps,
            "context_token_budget": profile.context_token_budget,
            "total_token_budget": profile.total_token_budget,
            "child_session_id": child_session_id, "child_run_id": CHILD_RUN_ID,
            "model": route.as_str(),
            "trace_path": trace.path().map(|p| p.display().to_string()),
        });
        if let (Some(id), Some(c)) = (&request.parent_tool_call_id, common.as_object_mut()) {
            c.insert("parent_tool_call_id".into(), json!(id));
        }
        common
    }

    /// Launch many children at once, at most `max_concurrency` of them at a time; results come
    /// back in input order. The call's limit governs: the launcher's own limit bounds these
    /// children too only when the launcher was built with one (or the call gives none). Every
    /// request is checked before any child starts, so a bad one launches nothing.
    pub async fn launch_many(
        self: &Arc<Self>,
        requests: Vec<SubagentRequest>,
        max_concurrency: Option<i64>,
        cancel: CancelToken,
    ) -> Result<Vec<SubagentLaunchResult>, Error> {
        self.launch_many_observed(requests, max_concurrency, cancel, LaunchObserver::default())
            .await
    }

    /// [`SubagentLauncher::launch_many`], handing every child's trace events and each finished
    /// child's result to `observer` as they happen.
    pub async fn launch_many_observed(
        self: &Arc<Self>,
        requests: Vec<SubagentRequest>,
        max_concurrency: Option<i64>,
        cancel: CancelToken,
        observer: LaunchObserver,
    ) -> Result<Vec<SubagentLaunchResult>, Error> {
        for (i, r) in requests.iter().enumerate() {
            self.child_profile(r)
                .map_err(|e| Error::from(e).within(&format!("requests[{i}]")))?;
        }
        // Without a limit of its own, the call waits for the launcher's limit here, before a
        // child exists: children waiting inside the launch already held their trace file and
        // its 64 KiB buffer (5000 children peaked at 479 MiB, 5000 open files).
        let limit = match max_concurrency {
            None => self.max_concurrency,
            Some(n) => concurrency_limit("max_concurrency", n)?,
        };
        // A call's own limit is not capped by the launcher's default (16 children asked for
        // ran 8 at a time); a limit the launcher was given still holds across all its launches.
        let launcher_limit = max_concurrency.is_none() || self.limit_given;
        let sem = Arc::new(Semaphore::new(limit));
        let handles: Vec<_> = requests
            .into_iter()
            .map(|req| {
                let (launcher, sem, c) = (self.clone(), sem.clone(), cancel.clone());
                let observer = observer.clone();
                tokio::spawn(
                    crate::exec::inherit_caller(async move {
                        let _permit = sem.acquire_owned().await.ok();
                        launcher
                            .launch_limited(req, c, &observer, launcher_limit)
                            .await
                    })
                    .in_current_span(),
                )
            })
            .collect();
        let mut out = Vec::with_capacity(handles.len());
        for (i, h) in handles.into_iter().enumerate() {
            let r = h
                .await
                .map_err(|e| Error::Internal(format!("child requests[{i}] did not finish: {e}")))?;
            out.push(r?);
        }
        Ok(out)
    }
}

debug_as_display!(SubagentLauncher);

impl std::fmt::Display for SubagentLauncher {
    /// A Python-style repr.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use crate::pyjson::py_repr_str as q;
        write!(
            f,
            "SubagentLauncher(project_root={}, main_llm={}, light_llm={}, profiles={}, max_concurrency={})",
            q(&self.workspace.root().display().to_string()),
            q(&crate::redact::redact_str(&self.main_model.describe())),
            self.light_model
                .as_ref()
                .map_or("None".into(), |m| q(&crate::redact::redact_str(&m.describe()))),
            crate::pyjson::py_repr_list(&self.profile_names()),
            self.max_concurrency
        )
    }
}

/// The parent event for a finished child (`subagent_failed` or `subagent_completed`) and what
/// it adds to the common payload: how the child ended, what it used, and its verdict (or error).
fn finished_payload(result: &SubagentLaunchResult) -> (EventKind, Value) {
    let reason = result.failure_reason.unwrap_or(result.terminal_reason);
    if result.status == SubagentStatus::Failed {
        let extra = json!({"terminal_reason": result.terminal_reason.as_str(),
               "failure_reason": reason.as_str(), "tool_usage": result.tool_usage,
               "token_usage": result.token_usage, "elapsed_ms": result.elapsed_ms,
               "error": result.error});
        (EventKind::SubagentFailed, extra)
    } else {
        let extra = json!({"terminal_reason": reason.as_str(), "tool_usage": result.tool_usage,
               "token_usage": result.token_usage, "verdict": result.answer_verdict(),
               "elapsed_ms": result.elapsed_ms});
        (EventKind::SubagentCompleted, extra)
    }
}

/// Record how the child ended on the current (`launch`) span and in the log.
fn record_finished(result: &SubagentLaunchResult, child_session_id: &str) {
    let reason = result.failure_reason.unwrap_or(result.terminal_reason);
    let span = tracing::Span::current();
    span.record("status", result.status.as_str());
    span.record("terminal_reason", reason.as_str());
    span.record("tokens", result.token_usage);
    span.record("elapsed_ms", result.elapsed_ms);
    tracing::info!(
        session_id = %child_session_id,
        status = result.status.as_str(),
        terminal_reason = reason.as_str(),
        tokens = result.token_usage,
        input_tokens = result.input_tokens,
        output_tokens = result.output_tokens,
        elapsed_ms = result.elapsed_ms,
        "child finished"
    );
}

/// Open (append) the parent trace file, refusing one inside the explored root, however spelled.
fn open_parent_trace(path: &Path, root: &Path) -> Result<Trace, Error> {
    let resolved = crate::fspath::resolve(path);
    let (Some(dir), Some(name)) = (resolved.parent(), resolved.file_name()) else {
        return Err(Error::config(
            "parent_trace",
            format!("'{}' does not name a file", path.display()),
        ));
    };
    let name = name.to_string_lossy().into_owned();
    let held = prepare_trace_dir(dir, root).map_err(|e| match e {
        TraceDirError::InsideRoot { .. } => Error::config(
            "parent_trace",
            format!(
                "'{}' is inside the explored root '{}'; a read-only child never writes there: choose a file outside it",
                path.display(),
                root.display()
            ),
        ),
        other => Error::TraceDir(other),
    })?;
    let session = format!("parent-{}", uuid::Uuid::new_v4().simple());
    Trace::appending(session, &held, &name).map_err(|e| {
        Error::config(
            "parent_trace",
            format!("'{}' cannot be opened: {e}", path.display()),
        )
    })
}

/// Turn a run's outcome into the launch result: the status from the answer and the way the run
/// ended, the reference's terminal reason with the precise cause beside it, and the metrics.
fn assemble(
    profile: &RuntimeProfile,
    (route, model_name, task): (ModelRoute, String, String),
    child_session_id: &str,
    mut outcome: RunOutcome,
    started: Instant,
    trace: &Trace,
) -> SubagentLaunchResult {
    let reason = outcome.terminal_reason;
    let mut result = outcome.result.take();
    scrub_answer(&mut result, &outcome, child_session_id);
    // The summary the parent reads is held to the profile's cap, saying so when cut.
    if let (Some(cap), Some(ParsedResult::Explore(r))) = (profile.max_summary_chars, &mut result) {
        if let Some(cut) = crate::profile::cap_summary(&r.summary, cap) {
            r.summary = cut;
        }
    }
    let status = launch_status(result.as_ref(), reason, &outcome);
    let failed = status == SubagentStatus::Failed;
    let error = launch_error(result.as_ref(), status, &outcome);
    let kept = if failed { None } else { result };
    let (evidence, schema_errors) = match &kept {
        Some(ParsedResult::Custom(c)) => (Some(c.evidence.clone()), c.schema_errors()),
        _ => (None, Vec::new()),
    };
    SubagentLaunchResult {
        status,
        profile_name: profile.name.clone(),
        child_session_id: child_session_id.into(),
        child_run_id: CHILD_RUN_ID.into(),
        result: kept,
        model_used: route,
        model_name,
        task,
        terminal_reason: if failed {
            TerminalReason::RuntimeError
        } else {
            reason
        },
        error,
        elapsed_ms: started.elapsed().as_millis().max(1) as u64,
        tool_usage: outcome.tool_usage,
        token_usage: outcome.token_usage,
        input_tokens: outcome.input_tokens,
        output_tokens: outcome.output_tokens,
        cached_input_tokens: outcome.cached_input_tokens,
        usage_estimated: outcome.usage_estimated,
        repair: outcome.repair,
        model_calls: outcome.model_calls,
        trace_path: trace.path().map(PathBuf::from),
        trace_error: None,
        failure_reason: failed.then_some(reason),
        ungrounded_evidence: scrub_checks(outcome.ungrounded_evidence),
        output_schema: profile.output_schema.as_ref().map(|s| s.name().to_string()),
        evidence,
        schema_errors,
        schema: profile.output_schema.clone(),
    }
}

/// The child's answer as the parent gets it: every credential it read reported by where it
/// is, never by its value; the run's metrics and terminal reason written into it.
fn scrub_answer(result: &mut Option<ParsedResult>, outcome: &RunOutcome, child_session_id: &str) {
    let reason = outcome.terminal_reason;
    let scrub = |items: &mut Vec<String>| {
        for s in items.iter_mut() {
            *s = redact_str(s);
        }
    };
    match result {
        Some(ParsedResult::Explore(r)) => {
            r.summary = redact_str(&r.summary);
            scrub(&mut r.findings);
            scrub(&mut r.evidence);
            scrub(&mut r.unresolved_questions);
            // The same open question said twice (the scout notes a capped search per keyword)
            // is read once.
            let mut seen = std::collections::HashSet::new();
            r.unresolved_questions.retain(|q| seen.insert(q.clone()));
            r.tool_usage = outcome.tool_usage.clone();
            r.terminal_reason = reason.as_str().into();
        }
        Some(ParsedResult::Verification(r)) => {
            scrub(&mut r.reasons);
            scrub(&mut r.findings);
            scrub(&mut r.evidence);
            r.tool_usage = outcome.tool_usage.clone();
            r.terminal_reason = reason.as_str().into();
            r.child_session_id = Some(child_session_id.into());
            r.child_run_id = Some(CHILD_RUN_ID.into());
            r.token_usage = outcome.token_usage;
        }
        Some(ParsedResult::Custom(r)) => {
            // Keys too: an answer may use what it read as an object's key.
            crate::redact::redact_map_strings(&mut r.value);
            scrub(&mut r.evidence);
        }
        Some(ParsedResult::Text(t)) => *t = redact_str(t),
        None => {}
    }
}

/// The ungrounded evidence as the parent gets it: an item is the model's own text, which may
/// quote a credential it read (and the check's path and message repeat it).
fn scrub_checks(mut checks: Vec<EvidenceCheck>) -> Vec<EvidenceCheck> {
    for c in &mut checks {
        c.evidence = redact_str(&c.evidence);
        c.path = c.path.as_deref().map(redact_str);
        c.message = redact_str(&c.message);
    }
    checks
}

/// The launch's status: the answer's own, partial when a budget ran out, unverified when its
/// evidence could not be grounded, failed without an answer or after an error.
fn launch_status(
    result: Option<&ParsedResult>,
    reason: TerminalReason,
    outcome: &RunOutcome,
) -> SubagentStatus {
    // A run that ran out of steps, tokens or time still answers (the wrap-up): partial.
    // So does a child whose answers the gate kept refusing, when it saw something: its result
    // lists those places as leads (`completion_gate_blocked` says why).
    let budget_ran_out = matches!(
        reason,
        TerminalReason::MaxSteps
            | TerminalReason::TokenBudget
            | TerminalReason::Timeout
            | TerminalReason::CompletionGateBlocked
    );
    let status = match (result, reason.is_success() || budget_ran_out) {
        (Some(ParsedResult::Explore(r)), true) => r.status,
        (Some(ParsedResult::Verification(v)), true) => match v.verdict {
            VerificationVerdict::Pass => SubagentStatus::Completed,
            VerificationVerdict::Unverified => SubagentStatus::Unverified,
            VerificationVerdict::Fail | VerificationVerdict::Partial => SubagentStatus::Partial,
        },
        (Some(ParsedResult::Custom(c)), true) => c.status,
        (Some(ParsedResult::Text(_)), true) => SubagentStatus::Completed,
        _ => SubagentStatus::Failed,
    };
    match status {
        SubagentStatus::Completed if budget_ran_out => SubagentStatus::Partial,
        // An answer whose evidence could not be grounded is never reported as a success.
        SubagentStatus::Completed | SubagentStatus::Partial
            if reason == TerminalReason::CompletedUnverified
                || !outcome.ungrounded_evidence.is_empty() =>
        {
            SubagentStatus::Unverified
        }
        other => other,
    }
}

/// The launch's error: for a failed child, its terminal reason and cause; for a caller's own
/// answer object that is not completed, why (it has no place for outrider's notes, which an
/// ExploreResult keeps in its open questions).
fn launch_error(
    result: Option<&ParsedResult>,
    status: SubagentStatus,
    outcome: &RunOutcome,
) -> Option<String> {
    let reason = outcome.terminal_reason;
    if status == SubagentStatus::Failed {
        return Some(match &outcome.error {
            Some(detail) => format!(
                "child terminal reason: {}: {}",
                reason.as_str(),
                crate::redact::redact_cow(detail)
            ),
            None => format!("child terminal reason: {}", reason.as_str()),
        });
    }
    let Some(ParsedResult::Custom(c)) = result else {
        return None;
    };
    if status == SubagentStatus::Completed {
        return None;
    }
    let mut why = c.notes.clone();
    if let Some(detail) = &outcome.error {
        why.push(format!(
            "the child stopped ({}): {}",
            reason.as_str(),
            crate::redact::redact_cow(detail)
        ));
    }
    if !outcome.ungrounded_evidence.is_empty() {
        why.push("outrider: some evidence is not grounded in what the child saw (see ungrounded_evidence)".into());
    }
    (!why.is_empty()).then(|| why.join("; "))
}
