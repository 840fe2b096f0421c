//! One tool call from outside a run (`outrider.run_tool`), and the tools' schemas for a caller's
//! own agent (`outrider.tool_schemas`): the envelope the model would see, under the same output
//! budget.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::cancel::CancelToken;
use crate::error::Error;
use crate::tools::budget::OutputBudget;
use crate::tools::context::ToolContext;
use crate::tools::envelope::{ErrorCode, ToolResult};
use crate::tools::permissions::{PermissionContext, RuntimeMode};
use crate::tools::registry::ToolRegistry;
use crate::tools::workspace::Workspace;

/// Tool (or Task) arguments as a caller gives them.
#[derive(Debug, Clone)]
pub enum ToolArgs {
    /// JSON text (what a model's tool call carries).
    Text(String),
    /// Already-parsed arguments; null means none.
    Json(crate::pyjson::Json),
    /// A value with no JSON form.
    Unusable {
        /// The value as the caller's language shows it.
        shown: String,
        /// Why it is not JSON.
        reason: String,
    },
}

/// Run one tool under `root` and return its envelope. Bad arguments give an error envelope;
/// only a bad root, runtime mode or timeout is an error. The runtime mode defaults to
/// `readonly_subagent` (a child's permissions).
pub fn run_tool(
    root: &Path,
    name: &str,
    args: ToolArgs,
    runtime_mode: Option<&str>,
    timeout: Option<f64>,
) -> Result<Value, Error> {
    run_tool_until(root, name, args, runtime_mode, timeout, &CancelToken::new())
}

/// [`run_tool_until`] on the runtime's blocking threads, for a caller that awaits it (and so
/// can listen for an interrupt meanwhile, and cancel).
pub async fn run_tool_blocking(
    root: std::path::PathBuf,
    name: String,
    args: ToolArgs,
    runtime_mode: Option<String>,
    timeout: Option<f64>,
    cancel: CancelToken,
) -> Result<Value, Error> {
    let mode = runtime_mode;
    let work = move || run_tool_until(&root, &name, args, mode.as_deref(), timeout, &cancel);
    let done = tokio::task::spawn_blocking(work).await;
    done.unwrap_or_else(|e| Err(Error::Internal(format!("the tool did not finish: {e}"))))
}

/// [`run_tool`] that stops at its next check once `cancel` is cancelled (Ctrl-C in Python).
pub(crate) fn run_tool_until(
    root: &Path,
    name: &str,
    args: ToolArgs,
    runtime_mode: Option<&str>,
    timeout: Option<f64>,
    cancel: &CancelToken,
) -> Result<Value, Error> {
    let workspace = Workspace::new(root)?;
    let mode: RuntimeMode = runtime_mode
        .unwrap_or("readonly_subagent")
        .parse()
        .map_err(|e: crate::tools::permissions::UnknownRuntimeMode| {
            Error::config(
                "runtime_mode",
                format!(
                    "must be 'main_agent' or 'readonly_subagent', got {}",
                    crate::pyjson::py_repr_str(&e.0)
                ),
            )
        })?;
    let mut ctx = ToolContext::new(workspace).with_cancel(cancel.flag());
    if let Some(t) = timeout {
        let max = crate::profile::MAX_TIMEOUT_SECONDS;
        if !(t.is_finite() && t > 0.0 && t <= max) {
            return Err(Error::config(
                "timeout",
                format!(
                    "must be a positive number of seconds up to {max:.0}, got {}",
                    crate::pyjson::Json::Float(t).py_repr()
                ),
            ));
        }
        ctx = ctx.with_timeout(Duration::from_secs_f64(t));
    }
    // Search too: a user may ask the code index directly.
    let registry = ToolRegistry::readonly().with_search();
    let permissions = PermissionContext::new(mode);
    let mut result = match ctx.deadline {
        None => execute(&registry, name, &args, &ctx, &permissions),
        Some(deadline) => execute_until(&registry, name, args, ctx, permissions, deadline),
    };
    if let (Some(err), Some(known)) = (&mut result.error, suggestion(&registry, name)) {
        let hint = format!(" Did you mean '{known}'? Tool names are case-sensitive.");
        err.message.push_str(&hint);
        result.text.push_str(&hint);
    }
    Ok(OutputBudget::default().apply(name, result).to_value())
}

fn execute(
    registry: &ToolRegistry,
    name: &str,
    args: &ToolArgs,
    ctx: &ToolContext,
    permissions: &PermissionContext,
) -> ToolResult {
    match args {
        ToolArgs::Text(t) => registry.execute(name, t.as_str(), ctx, permissions),
        ToolArgs::Json(j) => registry.execute(name, &j.to_value(), ctx, permissions),
        ToolArgs::Unusable { shown, reason: why } => ToolResult::error(
            &Value::String(shown.clone()),
            ErrorCode::InvalidParam,
            format!("Tool arguments must be a JSON object: {why}"),
            0,
        ),
    }
}

/// How long past its deadline a tool's own answer is awaited before the caller gets a timeout
/// envelope: tools stop themselves at the deadline, but one step of work (a regex over a 64 MiB
/// line) can run for seconds before the next check.
const DEADLINE_GRACE: Duration = Duration::from_millis(250);

/// [`execute`] on its own thread, answered by the deadline (plus [`DEADLINE_GRACE`]) whether or
/// not the tool has finished; a tool still running is left to stop at its next check.
fn execute_until(
    registry: &ToolRegistry,
    name: &str,
    args: ToolArgs,
    ctx: ToolContext,
    permissions: PermissionContext,
    deadline: std::time::Instant,
) -> ToolResult {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let (registry, owned_name) = (registry.clone(), name.to_string());
    let shown = match &args {
        ToolArgs::Text(t) => Value::String(t.clone()),
        ToolArgs::Json(j) => j.to_value(),
        ToolArgs::Unusable { shown, .. } => Value::String(shown.clone()),
    };
    let spawned = std::thread::Builder::new()
        .name("outrider-run-tool".into())
        .spawn(move || {
            let _ = tx.send(execute(&registry, &owned_name, &args, &ctx, &permissions));
        });
    if let Err(e) = spawned {
        return ToolResult::error(
            &shown,
            ErrorCode::InternalError,
            format!("Tool '{name}' could not start a thread: {e}"),
            0,
        );
    }
    let wait = deadline.saturating_duration_since(std::time::Instant::now()) + DEADLINE_GRACE;
    match rx.recv_timeout(wait) {
        Ok(result) => result,
        Err(_) => ToolResult::error(
            &shown,
            ErrorCode::Timeout,
            format!("Tool '{name}' did not finish within its timeout"),
            0,
        ),
    }
}

/// A registered tool whose name differs from `name` only in case.
fn suggestion(registry: &ToolRegistry, name: &str) -> Option<String> {
    let names = registry.names();
    if names.contains(&name) {
        return None;
    }
    names
        .into_iter()
        .find(|n| n.eq_ignore_ascii_case(name))
        .map(str::to_string)
}

/// The schemas of the read-only tools (all, or the `names` given) in `openai` (the default) or
/// `anthropic` tool format.
pub fn tool_schemas(format: Option<&str>, names: Option<Vec<String>>) -> Result<Vec<Value>, Error> {
    let mut registry = ToolRegistry::readonly();
    if let Some(wanted) = names {
        let known: Vec<String> = registry.names().iter().map(|s| s.to_string()).collect();
        if let Some(bad) = wanted.iter().find(|w| !known.contains(w)) {
            return Err(Error::config(
                "names",
                format!(
                    "unknown tool {}; the read-only tools are {}",
                    crate::pyjson::py_repr_str(bad),
                    known.join(", ")
                ),
            ));
        }
        registry = registry.filtered(wanted);
    }
    match format.unwrap_or("openai") {
        "openai" => Ok(registry.openai_tools()),
        "anthropic" => Ok(registry.anthropic_tools()),
        other => Err(Error::config(
            "format",
            format!(
                "must be 'openai' or 'anthropic', got {}",
                crate::pyjson::py_repr_str(other)
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn run_tool_checks_its_settings_and_suggests_names() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "hello\n").unwrap();
        let ok = run_tool(
            dir.path(),
            "Grep",
            ToolArgs::Json(crate::pyjson::Json::from_value(
                &json!({"pattern": "hello"}),
            )),
            Some("readonly_subagent"),
            None,
        )
        .unwrap();
        assert_eq!(ok["data"]["matches"][0]["file"], json!("a.txt"));
        let err = |mode: &str, timeout: Option<f64>| {
            run_tool(
                dir.path(),
                "Read",
                ToolArgs::Json(crate::pyjson::Json::Null),
                Some(mode),
                timeout,
            )
            .unwrap_err()
            .to_string()
        };
        assert_eq!(
            err("root", None),
            "runtime_mode: must be 'main_agent' or 'readonly_subagent', got 'root'"
        );
        assert_eq!(
            err("main_agent", Some(1e300)),
            "timeout: must be a positive number of seconds up to 31536000, got 1e+300"
        );
        assert_eq!(
            err("main_agent", Some(0.0)),
            "timeout: must be a positive number of seconds up to 31536000, got 0.0"
        );
        let lower = run_tool(dir.path(), "grep", ToolArgs::Text("{}".into()), None, None).unwrap();
        assert!(lower["error"]["message"]
            .as_str()
            .unwrap()
            .ends_with("Did you mean 'Grep'? Tool names are case-sensitive."));
    }

    #[tokio::test]
    async fn run_tool_blocking_answers_and_a_cancelled_one_stops() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "hello\n").unwrap();
        let root = dir.path().to_path_buf();
        let grep = |cancel| {
            let args = ToolArgs::Text(r#"{"pattern": "hello"}"#.into());
            run_tool_blocking(root.clone(), "Grep".into(), args, None, None, cancel)
        };
        let ok = grep(CancelToken::new()).await.unwrap();
        assert_eq!(ok["data"]["matches"][0]["file"], json!("a.txt"));
        let cancelled = CancelToken::new();
        cancelled.cancel();
        let stopped = grep(cancelled).await.unwrap();
        assert_eq!(stopped["status"], json!("error"), "{stopped}");
        assert_eq!(stopped["text"], json!("Grep of '.' was cancelled."));
        let bad_mode = run_tool_blocking(
            root,
            "Read".into(),
            ToolArgs::Json(crate::pyjson::Json::Null),
            Some("x".into()),
            None,
            CancelToken::new(),
        );
        assert!(bad_mode
            .await
            .unwrap_err()
            .to_string()
            .starts_with("runtime_mode: must be"));
    }

    /// A Read that ignores its deadline, as one long step of a real tool does.
    struct Stubborn;

    impl crate::tools::tool::Tool for Stubborn {
        fn name(&self) -> &'static str {
            "Read"
        }
        fn description(&self) -> std::borrow::Cow<'static, str> {
            "sleeps".into()
        }
        fn parameters(&self) -> Value {
            json!({"type": "object"})
        }
        fn run(&self, _ctx: &ToolContext, args: &Value) -> ToolResult {
            std::thread::sleep(Duration::from_secs(3));
            ToolResult::error(args, ErrorCode::InternalError, "too late", 0)
        }
    }

    #[test]
    fn a_tool_past_its_deadline_is_answered_by_the_deadline() {
        // Found by the attack suite: a Grep over a 70 MB single line answered 1.1 s past a 3 s
        // timeout, because the search checks the clock only between reads.
        let dir = tempfile::tempdir().unwrap();
        let mut registry = ToolRegistry::readonly();
        registry.register(std::sync::Arc::new(Stubborn));
        let ctx = ToolContext::new(Workspace::new(dir.path()).unwrap());
        let started = std::time::Instant::now();
        let deadline = started + Duration::from_millis(100);
        let result = execute_until(
            &registry,
            "Read",
            ToolArgs::Json(crate::pyjson::Json::from_value(&json!({"path": "a.txt"}))),
            ctx,
            PermissionContext::new(RuntimeMode::ReadonlySubagent),
            deadline,
        );
        let took = started.elapsed();
        assert!(took < Duration::from_millis(100) + DEADLINE_GRACE + Duration::from_millis(150));
        assert_eq!(result.error_code(), Some(ErrorCode::Timeout));
        assert_eq!(
            result.error.map(|e| e.message),
            Some("Tool 'Read' did not finish within its timeout".to_string())
        );
    }

    #[test]
    fn schemas_by_format_and_name() {
        assert_eq!(tool_schemas(None, None).unwrap().len(), 3);
        let one = tool_schemas(Some("anthropic"), Some(vec!["Read".into()])).unwrap();
        assert_eq!(one[0]["name"], json!("Read"));
        assert_eq!(
            tool_schemas(Some("xml"), None).unwrap_err().to_string(),
            "format: must be 'openai' or 'anthropic', got 'xml'"
        );
        assert_eq!(
            tool_schemas(Some("openai"), Some(vec!["Bash".into()]))
                .unwrap_err()
                .to_string(),
            "names: unknown tool 'Bash'; the read-only tools are Glob, Grep, Read"
        );
    }
}
