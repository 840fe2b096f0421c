//! The Task tool: what a main agent calls to delegate a read-only exploration. Argument
//! normalisation, validation order and messages, and the envelopes follow the reference (§1); the
//! reachable profiles are configurable instead of only `explore`. The Python `TaskTool` and the
//! built-in main agent both use this one type.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{json, Map, Value};

use crate::agent::launcher::{LaunchObserver, SubagentLauncher};
use crate::agent::request::SubagentRequest;
use crate::agent::result::{parsed_value, SubagentLaunchResult, CHILD_RUN_ID};
use crate::contract::SubagentStatus;
use crate::error::Error;
use crate::profile::ModelChoice;
use crate::pyjson::Json;
use crate::runner::{CancelToken, ParsedResult};
use crate::schema::OutputSchema;
use crate::tools::envelope::{ErrorCode, ToolResult};
use crate::tools::run::ToolArgs;

/// The tool's name.
pub const TASK_TOOL_NAME: &str = "Task";

/// Builds the launcher on first use (a factory the caller gave instead of a launcher).
pub type LauncherFactory =
    Box<dyn Fn() -> Result<Arc<SubagentLauncher>, FactoryError> + Send + Sync>;

/// Why a launcher factory gave no launcher.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FactoryError {
    /// It raised an exception of type `kind`.
    #[error("the launcher factory raised {kind}: {message}")]
    Raised {
        /// The exception's type name.
        kind: String,
        /// Its message.
        message: String,
    },
    /// It returned a value of this type instead of a launcher.
    #[error("the launcher factory returned {0}, not an outrider.SubagentLauncher")]
    WrongType(String),
}

/// Validated Task arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TaskArgs {
    /// Short summary of the delegated search.
    pub description: String,
    /// Self-contained instructions.
    pub prompt: String,
    /// The profile (normalised: trimmed, lower case).
    pub subagent_type: String,
    /// The route (`light` when missing or empty).
    pub model: ModelChoice,
}

impl TaskArgs {
    /// The child request: `description.strip() + "\n\n" + prompt.strip()`.
    pub(crate) fn to_request(&self) -> SubagentRequest {
        SubagentRequest {
            profile_name: self.subagent_type.clone(),
            task: format!("{}\n\n{}", self.description.trim(), self.prompt.trim()),
            structured_context: Map::new(),
            model_choice: Some(self.model),
            parent_session_id: None,
            parent_run_id: None,
            parent_tool_call_id: None,
            output_schema: None,
        }
    }
}

/// Python truthiness of a JSON value.
fn truthy(v: &Json) -> bool {
    match v {
        Json::Null => false,
        Json::Bool(b) => *b,
        Json::Int(i) => *i != 0,
        Json::Float(f) => *f != 0.0,
        Json::BigInt(_) => true,
        Json::Str(s) => !s.is_empty(),
        Json::Array(a) => !a.is_empty(),
        Json::Object(o) => !o.is_empty(),
    }
}

/// `str(value or default).strip().lower()`.
fn normalise(v: Option<&Json>, default: &str) -> String {
    match v.filter(|v| truthy(v)) {
        Some(v) => v.py_str().trim().to_lowercase(),
        None => default.to_string(),
    }
}

fn required_text(args: &Json, key: &str) -> Result<String, String> {
    match args.get(key) {
        Some(Json::Str(s)) if !s.trim().is_empty() => Ok(s.clone()),
        _ => Err(format!(
            "Parameter '{key}' is required and must be non-empty."
        )),
    }
}

/// The message for an unreachable `subagent_type`.
pub(crate) fn subagent_type_message(reachable: &[String]) -> String {
    match reachable {
        [one] => format!("Parameter 'subagent_type' must be '{one}'."),
        many => format!(
            "Parameter 'subagent_type' must be one of {}.",
            many.iter()
                .map(|p| format!("'{p}'"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Validate in the reference's order; the first failure is the message.
pub(crate) fn validate(args: &Json, reachable: &[String]) -> Result<TaskArgs, String> {
    let empty = Json::Object(vec![]);
    let args = if matches!(args, Json::Object(_)) {
        args
    } else {
        &empty
    };
    let subagent_type = normalise(args.get("subagent_type"), "");
    let model = normalise(args.get("model"), "light");
    let description = required_text(args, "description")?;
    let prompt = required_text(args, "prompt")?;
    if !reachable.contains(&subagent_type) {
        return Err(subagent_type_message(reachable));
    }
    let model = model
        .parse()
        .map_err(|_| "Parameter 'model' must be 'main' or 'light'.".to_string())?;
    Ok(TaskArgs {
        description,
        prompt,
        subagent_type,
        model,
    })
}

/// The profiles a Task tool reaches: names trimmed, lower-cased, deduplicated, at least one;
/// None means `["explore"]`.
pub(crate) fn reachable_profiles(names: Option<Vec<String>>) -> Result<Vec<String>, Error> {
    let Some(names) = names else {
        return Ok(vec!["explore".to_string()]);
    };
    let mut out: Vec<String> = Vec::new();
    for n in names {
        let n = n.trim().to_lowercase();
        if !out.contains(&n) {
            out.push(n);
        }
    }
    if out.is_empty() || out.iter().any(String::is_empty) {
        return Err(Error::config(
            "subagent_types",
            "must name at least one registered profile, e.g. ['explore'] (no empty names)",
        ));
    }
    Ok(out)
}

/// The reachable names that are not among `known`.
pub(crate) fn unknown_profiles(known: &[String], reachable: &[String]) -> Vec<String> {
    reachable
        .iter()
        .filter(|p| !known.contains(p))
        .cloned()
        .collect()
}

/// Check that every reachable profile is registered in the launcher.
pub(crate) fn check_reachable(
    launcher: &SubagentLauncher,
    reachable: &[String],
) -> Result<(), Error> {
    let known = launcher.profile_names();
    let missing = unknown_profiles(&known, reachable);
    if missing.is_empty() {
        return Ok(());
    }
    Err(Error::config(
        "subagent_types",
        format!(
            "{} are not registered in the launcher (its profiles: {})",
            crate::pyjson::py_repr_list(&missing),
            crate::pyjson::py_repr_list(&known)
        ),
    ))
}

fn capitalised(name: &str) -> String {
    let mut c = name.chars();
    match c.next() {
        Some(first) => first.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

/// How the Task tool's envelope is written for the parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EnvelopeFormat {
    /// The default: JSON without indentation, no `context` (so no echo of the arguments), and
    /// `data.result` without the `summary` that `text` already carries.
    #[default]
    Compact,
    /// The reference's: `{status, data, text, stats, context{cwd, params_input}}`, indented by
    /// 2, `data.result` whole.
    Reference,
}

/// What the envelope's `text` says for a result, and the result key it repeats (left out of
/// the compact envelope's `data.result`).
fn envelope_text(
    launched: &SubagentLaunchResult,
    max_summary_chars: Option<i64>,
) -> (String, Option<&'static str>) {
    match &launched.result {
        Some(ParsedResult::Explore(r)) => (r.summary.clone(), Some("summary")),
        Some(ParsedResult::Verification(v)) => {
            let mut text = format!("Verdict: {}.", v.verdict.as_str());
            if !v.reasons.is_empty() {
                text.push(' ');
                text.push_str(&v.reasons.join("; "));
            }
            (text, None)
        }
        // A caller's own object is never changed: the cap applies to what `text` shows of it.
        Some(ParsedResult::Custom(c)) => {
            let (text, repeats) = match c.summary() {
                Some(summary) => (summary.to_string(), Some("summary")),
                None => (
                    serde_json::to_string(&Value::Object(c.value.clone())).unwrap_or_default(),
                    None,
                ),
            };
            match max_summary_chars.and_then(|cap| crate::profile::cap_summary(&text, cap)) {
                Some(cut) => (cut, None),
                None => (text, repeats),
            }
        }
        Some(ParsedResult::Text(t)) => (t.clone(), None),
        None => (String::new(), None),
    }
}

/// The envelope the parent model receives for a finished launch: `success` for a completed or
/// partial answer, `unverified` (with the ungrounded items listed) for an answer whose evidence
/// is not in the files, and an `INTERNAL_ERROR` error for a failed child; in `format`.
/// `max_summary_chars` caps the `text` shown for a caller's own schema (an `ExploreResult`'s
/// summary was capped when the launch finished).
pub(crate) fn launch_envelope(
    launched: &SubagentLaunchResult,
    params_input: &Value,
    elapsed_ms: u64,
    format: EnvelopeFormat,
    max_summary_chars: Option<i64>,
) -> ToolResult {
    let envelope = reference_envelope(launched, params_input, elapsed_ms, max_summary_chars);
    match format {
        EnvelopeFormat::Reference => envelope,
        EnvelopeFormat::Compact => {
            let mut envelope = envelope.compacted();
            let (_, repeats) = envelope_text(launched, max_summary_chars);
            if let (Some(key), Some(Value::Object(result))) =
                (repeats, envelope.data.get_mut("result"))
            {
                result.shift_remove(key);
            }
            envelope
        }
    }
}

/// The reference's envelope for a launch: an error envelope for a failed child, else the
/// child's result (unverified when its evidence could not be grounded) with its counts.
fn reference_envelope(
    launched: &SubagentLaunchResult,
    params_input: &Value,
    elapsed_ms: u64,
    max_summary_chars: Option<i64>,
) -> ToolResult {
    if launched.status == SubagentStatus::Failed || launched.result.is_none() {
        return failed_envelope(launched, params_input, elapsed_ms);
    }
    let (text, _) = envelope_text(launched, max_summary_chars);
    let mut data = Map::new();
    data.insert("status".into(), json!(launched.status.as_str()));
    data.insert("profile".into(), json!(launched.profile_name));
    data.insert("child_session_id".into(), json!(launched.child_session_id));
    data.insert("child_run_id".into(), json!(launched.child_run_id));
    data.insert("result".into(), parsed_value(launched.result.as_ref()));
    if let Some(schema) = &launched.output_schema {
        data.insert("output_schema".into(), json!(schema));
    }
    // A caller's object need not hold the evidence: it goes beside it, with how the object did
    // not fit when it did not.
    if let Some(evidence) = &launched.evidence {
        data.insert("evidence".into(), json!(evidence));
    }
    if !launched.schema_errors.is_empty() {
        data.insert("schema_errors".into(), json!(launched.schema_errors));
    }
    if let (Some(ParsedResult::Custom(_)), Some(note)) = (&launched.result, &launched.error) {
        data.insert("note".into(), json!(note));
    }
    let mut out = if launched.status == SubagentStatus::Unverified
        && !launched.ungrounded_evidence.is_empty()
    {
        data.insert(
            "ungrounded_evidence".into(),
            json!(launched.ungrounded_evidence),
        );
        let listed: Vec<String> = launched
            .ungrounded_evidence
            .iter()
            .map(|c| c.message.clone())
            .collect();
        let text = format!(
            "UNVERIFIED: the child's evidence could not be found in the files ({}). Treat its answer as a lead, not a finding: {text}",
            listed.join("; ")
        );
        ToolResult::unverified(params_input, data, text, elapsed_ms.max(1))
    } else {
        ToolResult::success(params_input, data, text, elapsed_ms.max(1))
    };
    add_launch_stats(&mut out, launched);
    out
}

/// The error envelope for a failed child. What it did before it failed stays visible to the
/// parent (the reference lost it): its ids, the precise cause, its tools and tokens, its trace.
fn failed_envelope(
    launched: &SubagentLaunchResult,
    params_input: &Value,
    elapsed_ms: u64,
) -> ToolResult {
    let why = launched
        .error
        .clone()
        .unwrap_or_else(|| launched.terminal_reason.as_str().to_string());
    let mut failed = ToolResult::error(
        params_input,
        ErrorCode::InternalError,
        format!(
            "{} subagent failed: {why}",
            capitalised(&launched.profile_name)
        ),
        elapsed_ms.max(1),
    );
    if let Some(err) = &mut failed.error {
        let d = &mut err.details;
        d.insert("child_session_id".into(), json!(launched.child_session_id));
        d.insert("terminal_reason".into(), json!(launched.terminal_reason));
        d.insert("failure_reason".into(), json!(launched.failure_reason));
        d.insert("tool_usage".into(), json!(launched.tool_usage));
        d.insert("token_usage".into(), json!(launched.token_usage));
        d.insert("input_tokens".into(), json!(launched.input_tokens));
        d.insert("output_tokens".into(), json!(launched.output_tokens));
        d.insert("model_calls".into(), json!(launched.model_calls));
        d.insert("trace_path".into(), json!(launched.trace_path));
    }
    failed
}

/// The envelope's `stats` for a launch: the child's tool calls, tokens, model calls and model
/// route.
fn add_launch_stats(out: &mut ToolResult, launched: &SubagentLaunchResult) {
    let tool_calls = match &launched.result {
        Some(ParsedResult::Explore(r)) => r.tool_usage.values().sum::<u64>(),
        Some(ParsedResult::Verification(v)) => v.tool_usage.values().sum::<u64>(),
        Some(ParsedResult::Custom(_) | ParsedResult::Text(_)) => launched.tool_calls(),
        None => 0,
    };
    out.stats.insert("tool_calls".into(), json!(tool_calls));
    out.stats
        .insert("token_usage".into(), json!(launched.token_usage));
    out.stats
        .insert("input_tokens".into(), json!(launched.input_tokens));
    out.stats
        .insert("output_tokens".into(), json!(launched.output_tokens));
    // The child's model calls, so that a framework's request counter (pydantic-ai's
    // `request_limit`, openai-agents' `Usage.requests`) sees them as well as its tokens.
    out.stats
        .insert("model_calls".into(), json!(launched.model_calls));
    if launched.cached_input_tokens > 0 {
        out.stats.insert(
            "cached_input_tokens".into(),
            json!(launched.cached_input_tokens),
        );
    }
    out.stats
        .insert("model".into(), json!(launched.model_used.as_str()));
}

/// The tool description the parent model reads: when to delegate, and the boundaries.
pub(crate) fn description(reachable: &[String]) -> String {
    let types = reachable
        .iter()
        .map(|p| format!("\"{p}\""))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "Launch an isolated, read-only sub-agent that explores the repository and returns a small, validated JSON result instead of its whole search history.

When to use it:
- an exploration that would take many Glob/Grep/Read steps and fill your context with noise (\"how does authentication flow through the code?\", \"find every place that writes to the cache\");
- a focused scan where you want findings with file:line evidence.

When NOT to use it:
- you already know the file: use Read;
- one quick search answers it: use Glob or Grep;
- simple single-step tasks.

How it works: the sub-agent starts with a fresh context (it cannot see this conversation), may use only Glob, Grep and Read, cannot edit files, run commands, ask the user or launch sub-agents, and has hard step and token budgets. It returns status (completed or partial), summary, findings, evidence (relative/path:line) and unresolved_questions. A partial result is still useful: it says what is missing. A result whose evidence could not be found in the files comes back with status \"unverified\": treat it as a lead to check, not a finding.

Arguments:
- description: a short summary of the delegated search (3-10 words).
- prompt: self-contained instructions. Say exactly what to find and what to return; include names, paths and anything already known, since the sub-agent sees nothing else.
- subagent_type: one of {types}.
- model: \"light\" (default; cheaper, for simple searches) or \"main\" (for complex or accuracy-critical analysis). Choose by complexity.

Example: {{\"description\": \"Explore auth flow\", \"prompt\": \"Find the files that implement login and session handling. Return each file's path and purpose, and the function where the session token is created.\", \"subagent_type\": \"explore\", \"model\": \"light\"}}"
    )
}

/// The JSON schema of the arguments (order pinned: description, prompt, subagent_type, model).
pub(crate) fn parameters(reachable: &[String]) -> Value {
    json!({
        "type": "object",
        "properties": {
            "description": {"type": "string", "description": "Short summary of the delegated search task"},
            "prompt": {"type": "string", "description": "Self-contained read-only exploration instructions"},
            "subagent_type": {"type": "string", "enum": reachable, "description": format!("Formal profile; one of: {}", reachable.join(", "))},
            "model": {"type": "string", "enum": ["main", "light"], "default": "light", "description": "Optional model route: main or light"},
        },
        "required": ["description", "prompt", "subagent_type"],
        "additionalProperties": false,
    })
}

/// A validated call, ready to launch.
pub struct PreparedTask {
    launcher: Arc<SubagentLauncher>,
    request: SubagentRequest,
    params: Value,
    observer: LaunchObserver,
    format: EnvelopeFormat,
}

impl PreparedTask {
    /// Launch the child and build the envelope.
    pub async fn run(self, cancel: CancelToken) -> ToolResult {
        let started = Instant::now();
        let cap = self
            .launcher
            .profile(&self.request.profile_name)
            .and_then(|p| p.max_summary_chars);
        let envelope = match self
            .launcher
            .launch_observed(self.request, cancel, &self.observer)
            .await
        {
            Ok(r) => {
                let elapsed = started.elapsed().as_millis() as u64;
                return launch_envelope(&r, &self.params, elapsed, self.format, cap);
            }
            Err(e) => ToolResult::error(&self.params, ErrorCode::InvalidParam, e.to_string(), 0),
        };
        match self.format {
            EnvelopeFormat::Reference => envelope,
            EnvelopeFormat::Compact => envelope.compacted(),
        }
    }
}

/// What preparing a call gave: an envelope already (bad arguments), or a launch to run.
pub enum Prepared {
    /// The answer, without a launch (an error envelope).
    Done(ToolResult),
    /// A launch to run.
    Launch(PreparedTask),
}

impl Prepared {
    /// Link the child to the parent model's tool call `id` (its parent events name it).
    pub fn for_call(mut self, id: Option<String>) -> Self {
        if let Prepared::Launch(p) = &mut self {
            p.request.parent_tool_call_id = id;
        }
        self
    }

    /// The envelope: at once, or after the launch.
    pub async fn run(self, cancel: CancelToken) -> ToolResult {
        match self {
            Prepared::Done(r) => r,
            Prepared::Launch(p) => p.run(cancel).await,
        }
    }
}

/// The Task tool over one launcher (given, or built on first use by a factory).
pub struct TaskTool {
    launcher: Mutex<Option<Arc<SubagentLauncher>>>,
    factory: Option<LauncherFactory>,
    reachable: Vec<String>,
    parent: Option<(String, String)>,
    observer: LaunchObserver,
    format: EnvelopeFormat,
    output_schema: Option<OutputSchema>,
}

impl TaskTool {
    /// A Task tool over `launcher`; `subagent_types` None reaches only `explore`. Every
    /// reachable profile must be registered in the launcher.
    pub fn new(
        launcher: Arc<SubagentLauncher>,
        subagent_types: Option<Vec<String>>,
    ) -> Result<Self, Error> {
        let reachable = reachable_profiles(subagent_types)?;
        check_reachable(&launcher, &reachable)?;
        Ok(TaskTool {
            launcher: Mutex::new(Some(launcher)),
            factory: None,
            reachable,
            parent: None,
            observer: LaunchObserver::default(),
            format: EnvelopeFormat::default(),
            output_schema: None,
        })
    }

    /// A Task tool whose launcher `factory` builds on the first call (checked then).
    pub fn with_factory(
        factory: LauncherFactory,
        subagent_types: Option<Vec<String>>,
    ) -> Result<Self, Error> {
        Ok(TaskTool {
            launcher: Mutex::new(None),
            factory: Some(factory),
            reachable: reachable_profiles(subagent_types)?,
            parent: None,
            observer: LaunchObserver::default(),
            format: EnvelopeFormat::default(),
            output_schema: None,
        })
    }

    /// Children launched through this tool name `session_id` (run `run-1`) as their parent.
    pub fn with_parent(mut self, session_id: impl Into<String>) -> Self {
        self.parent = Some((session_id.into(), CHILD_RUN_ID.to_string()));
        self
    }

    /// Children launched through this tool report to `observer` (their trace events, their
    /// results).
    pub fn with_observer(mut self, observer: LaunchObserver) -> Self {
        self.observer = observer;
        self
    }

    /// Envelopes in `format` (compact unless the reference's is asked for).
    pub fn with_format(mut self, format: EnvelopeFormat) -> Self {
        self.format = format;
        self
    }

    /// Every child answers in `schema` (in place of its profile's shape).
    pub fn with_output_schema(mut self, schema: Option<OutputSchema>) -> Self {
        self.output_schema = schema;
        self
    }

    /// The envelope format.
    pub fn format(&self) -> EnvelopeFormat {
        self.format
    }

    /// The schema every child answers in, when the tool sets one.
    pub fn output_schema(&self) -> Option<&OutputSchema> {
        self.output_schema.as_ref()
    }

    /// The reachable profile names.
    pub fn reachable(&self) -> &[String] {
        &self.reachable
    }

    /// What the parent model reads.
    pub fn description(&self) -> String {
        let text = description(&self.reachable);
        match &self.output_schema {
            // The parent is told the shape its children answer in.
            Some(schema) => text.replace(
                "It returns status (completed or partial), summary, findings, evidence (relative/path:line) and unresolved_questions.",
                &format!(
                    "It returns one JSON object of the {} schema (data.result), with evidence (relative/path:line).",
                    crate::pyjson::py_repr_str(schema.name())
                ),
            ),
            None => text,
        }
    }

    /// The JSON schema of the arguments.
    pub fn parameters(&self) -> Value {
        parameters(&self.reachable)
    }

    /// The tool's name, [`TASK_TOOL_NAME`] (a method, as the binding's getters read).
    #[allow(clippy::unused_self)]
    pub fn name(&self) -> &'static str {
        TASK_TOOL_NAME
    }

    /// `{"type": "function", "function": {name, description, parameters}}`.
    pub fn openai_schema(&self) -> Value {
        json!({"type": "function", "function": {"name": TASK_TOOL_NAME, "description": self.description(), "parameters": self.parameters()}})
    }

    /// `{name, description, input_schema}`.
    pub fn anthropic_schema(&self) -> Value {
        json!({"name": TASK_TOOL_NAME, "description": self.description(), "input_schema": self.parameters()})
    }

    /// The launcher, building it from the factory on first use.
    fn launcher(&self) -> Result<Arc<SubagentLauncher>, String> {
        let mut slot = self.launcher.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(l) = slot.as_ref() {
            return Ok(l.clone());
        }
        let factory = self.factory.as_ref().ok_or("TaskTool has no launcher")?;
        let launcher = factory().map_err(|e| e.to_string())?;
        check_reachable(&launcher, &self.reachable).map_err(|e| e.to_string())?;
        *slot = Some(launcher.clone());
        Ok(launcher)
    }

    /// Parse and validate the arguments and find the launcher: an error envelope, or a launch.
    pub fn prepare(&self, input: ToolArgs) -> Prepared {
        self.prepare_with(input, None)
    }

    /// [`TaskTool::prepare`], the child answering in `schema` when one is given (in place of
    /// the tool's own `output_schema`, as `TaskTool.run(..., output_schema=)` asks).
    pub fn prepare_with(&self, input: ToolArgs, schema: Option<OutputSchema>) -> Prepared {
        let schema = schema.or_else(|| self.output_schema.clone());
        match self.prepare_reference(input, schema) {
            Prepared::Done(r) if self.format == EnvelopeFormat::Compact => {
                Prepared::Done(r.compacted())
            }
            other => other,
        }
    }

    fn prepare_reference(&self, input: ToolArgs, schema: Option<OutputSchema>) -> Prepared {
        let (raw, parsed) = match input {
            ToolArgs::Text(text) => match crate::pyjson::parse(&text) {
                Ok(j) => (Value::String(text), j),
                Err(e) => {
                    return Prepared::Done(ToolResult::error(
                        &Value::String(text),
                        ErrorCode::InvalidParam,
                        format!("Task arguments must be a JSON object: {e}"),
                        0,
                    ))
                }
            },
            ToolArgs::Json(j) => (j.to_value(), j),
            ToolArgs::Unusable { shown, reason } => {
                return Prepared::Done(ToolResult::error(
                    &Value::String(shown),
                    ErrorCode::InvalidParam,
                    format!("Task arguments must be a JSON object: {reason}"),
                    0,
                ))
            }
        };
        let params = if matches!(parsed, Json::Object(_)) {
            parsed.to_value()
        } else {
            raw
        };
        let valid = match validate(&parsed, &self.reachable) {
            Ok(v) => v,
            Err(msg) => {
                return Prepared::Done(ToolResult::error(&params, ErrorCode::InvalidParam, msg, 0))
            }
        };
        let mut request = valid.to_request();
        request.output_schema = schema;
        if let Some((session, run)) = &self.parent {
            request.parent_session_id = Some(session.clone());
            request.parent_run_id = Some(run.clone());
        }
        match self.launcher() {
            Ok(launcher) => Prepared::Launch(PreparedTask {
                launcher,
                request,
                params,
                observer: self.observer.clone(),
                format: self.format,
            }),
            Err(msg) => Prepared::Done(ToolResult::error(
                &params,
                ErrorCode::InternalError,
                format!("Task could not start: {msg}"),
                0,
            )),
        }
    }

    /// Validate, launch and build the envelope. Bad arguments give an error envelope, never an
    /// error.
    pub async fn run(&self, input: ToolArgs, cancel: CancelToken) -> ToolResult {
        self.prepare(input).run(cancel).await
    }
}

debug_as_display!(TaskTool);

impl std::fmt::Display for TaskTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "TaskTool(subagent_types={}",
            crate::pyjson::py_repr_list(&self.reachable)
        )?;
        if self.format == EnvelopeFormat::Reference {
            f.write_str(", reference_format=True")?;
        }
        if let Some(schema) = &self.output_schema {
            write!(
                f,
                ", output_schema={}",
                crate::pyjson::py_repr_str(schema.name())
            )?;
        }
        f.write_str(")")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(v: Value) -> Result<TaskArgs, String> {
        validate(&Json::from_value(&v), &["explore".to_string()])
    }

    #[test]
    fn reference_messages_in_order() {
        assert_eq!(
            check(json!({})).unwrap_err(),
            "Parameter 'description' is required and must be non-empty."
        );
        assert_eq!(
            check(json!({"description": 3, "prompt": ""})).unwrap_err(),
            "Parameter 'description' is required and must be non-empty."
        );
        assert_eq!(
            check(json!({"description": "d", "prompt": "  "})).unwrap_err(),
            "Parameter 'prompt' is required and must be non-empty."
        );
        assert_eq!(
            check(
                json!({"description": "d", "prompt": "p", "subagent_type": "general", "model": "x"})
            )
            .unwrap_err(),
            "Parameter 'subagent_type' must be 'explore'."
        );
        assert_eq!(
            check(
                json!({"description": "d", "prompt": "p", "subagent_type": "explore", "model": 5})
            )
            .unwrap_err(),
            "Parameter 'model' must be 'main' or 'light'."
        );
        let ok = check(json!({"description": " d ", "prompt": " p\n", "subagent_type": " EXPLORE ", "model": "MAIN"})).unwrap();
        assert_eq!(
            (ok.subagent_type.as_str(), ok.model),
            ("explore", ModelChoice::Main)
        );
        assert_eq!(ok.to_request().task, "d\n\np");
        for falsy in [json!(null), json!(""), json!(0), json!(false)] {
            let a = check(json!({"description": "d", "prompt": "p", "subagent_type": "explore", "model": falsy})).unwrap();
            assert_eq!(a.model, ModelChoice::Light);
        }
        let many = ["explore".to_string(), "deep".to_string()];
        assert_eq!(
            subagent_type_message(&many),
            "Parameter 'subagent_type' must be one of 'explore', 'deep'."
        );
    }

    #[test]
    fn reachable_names_are_normalised() {
        assert_eq!(reachable_profiles(None).unwrap(), vec!["explore"]);
        assert_eq!(
            reachable_profiles(Some(vec![
                " Explore".into(),
                "explore".into(),
                "DEEP".into()
            ]))
            .unwrap(),
            vec!["explore", "deep"]
        );
        assert_eq!(
            reachable_profiles(Some(vec![])).unwrap_err().to_string(),
            "subagent_types: must name at least one registered profile, e.g. ['explore'] (no empty names)"
        );
    }
}
