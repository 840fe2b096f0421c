//! The Task tool: what the main agent calls to delegate a read-only exploration. Argument
//! normalisation, validation order and messages, and both envelopes follow the reference (§1);
//! the reachable profiles are configurable instead of only `explore`.

use serde_json::{json, Map, Value};

use crate::contract::SubagentStatus;
use crate::launcher::{SubagentLaunchResult, SubagentRequest};
use crate::pyjson::Json;
use crate::runner::ParsedResult;
use crate::tools::envelope::{ErrorCode, ToolResult};

/// The tool's name.
pub const TASK_TOOL_NAME: &str = "Task";

/// Validated Task arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskArgs {
    /// Short summary of the delegated search.
    pub description: String,
    /// Self-contained instructions.
    pub prompt: String,
    /// The profile (normalised: trimmed, lower case).
    pub subagent_type: String,
    /// `main` or `light` (normalised; `light` when missing or empty).
    pub model: String,
}

impl TaskArgs {
    /// The child request: `description.strip() + "\n\n" + prompt.strip()`.
    pub fn to_request(&self) -> SubagentRequest {
        SubagentRequest {
            profile_name: self.subagent_type.clone(),
            task: format!("{}\n\n{}", self.description.trim(), self.prompt.trim()),
            model_choice: Some(self.model.clone()),
            structured_context: Map::new(),
            parent_session_id: None,
            parent_run_id: None,
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

/// Check that every reachable profile is registered in the launcher.
pub fn check_reachable(
    launcher: &crate::launcher::SubagentLauncher,
    reachable: &[String],
) -> Result<(), String> {
    let missing: Vec<&String> = reachable
        .iter()
        .filter(|p| launcher.profile(p).is_none())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(format!(
        "subagent_types {:?} are not registered in the launcher (its profiles: {:?})",
        missing,
        launcher.config().profiles.keys().collect::<Vec<_>>()
    ))
}

/// The message for an unreachable `subagent_type`.
pub fn subagent_type_message(reachable: &[String]) -> String {
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
pub fn validate(args: &Json, reachable: &[String]) -> Result<TaskArgs, String> {
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
    if model != "main" && model != "light" {
        return Err("Parameter 'model' must be 'main' or 'light'.".into());
    }
    Ok(TaskArgs {
        description,
        prompt,
        subagent_type,
        model,
    })
}

/// The INVALID_PARAM (or other) error envelope: `stats.time_ms` 0, `data` {}.
pub fn error_envelope(code: ErrorCode, message: &str, params_input: &Value) -> ToolResult {
    ToolResult::error(params_input, code, message, 0)
}

fn capitalised(name: &str) -> String {
    let mut c = name.chars();
    match c.next() {
        Some(first) => first.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

/// The envelope the parent model receives for a finished launch.
pub fn launch_envelope(
    launched: &SubagentLaunchResult,
    params_input: &Value,
    elapsed_ms: u64,
) -> ToolResult {
    let (result_value, text, tool_calls) = match &launched.result {
        Some(ParsedResult::Explore(r)) => (
            r.to_value(),
            r.summary.clone(),
            r.tool_usage.values().sum::<u64>(),
        ),
        Some(ParsedResult::Verification(v)) => {
            let mut text = format!("Verdict: {}.", v.verdict.as_str());
            if !v.reasons.is_empty() {
                text.push(' ');
                text.push_str(&v.reasons.join("; "));
            }
            (v.to_value(), text, v.tool_usage.values().sum::<u64>())
        }
        Some(ParsedResult::Text(t)) => (
            json!(t),
            t.clone(),
            launched.tool_usage.values().sum::<u64>(),
        ),
        None => (Value::Null, String::new(), 0),
    };
    if launched.status == SubagentStatus::Failed || launched.result.is_none() {
        let why = launched
            .error
            .clone()
            .unwrap_or_else(|| launched.terminal_reason.clone());
        return ToolResult::error(
            params_input,
            ErrorCode::InternalError,
            format!(
                "{} subagent failed: {why}",
                capitalised(&launched.profile_name)
            ),
            0,
        );
    }
    let mut data = Map::new();
    data.insert("status".into(), json!(launched.status.as_str()));
    data.insert("profile".into(), json!(launched.profile_name));
    data.insert("child_session_id".into(), json!(launched.child_session_id));
    data.insert("child_run_id".into(), json!(launched.child_run_id));
    data.insert("result".into(), result_value);
    let mut out = ToolResult::success(params_input, data, text, elapsed_ms.max(1));
    out.stats.insert("tool_calls".into(), json!(tool_calls));
    out.stats
        .insert("token_usage".into(), json!(launched.token_usage));
    out.stats.insert("model".into(), json!(launched.model_used));
    out
}

/// The tool description the parent model reads: when to delegate, and the boundaries.
pub fn description(reachable: &[String]) -> String {
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

How it works: the sub-agent starts with a fresh context (it cannot see this conversation), may use only Glob, Grep and Read, cannot edit files, run commands, ask the user or launch sub-agents, and has hard step and token budgets. It returns status (completed or partial), summary, findings, evidence (relative/path:line) and unresolved_questions. A partial result is still useful: it says what is missing.

Arguments:
- description: a short summary of the delegated search (3-10 words).
- prompt: self-contained instructions. Say exactly what to find and what to return; include names, paths and anything already known, since the sub-agent sees nothing else.
- subagent_type: one of {types}.
- model: \"light\" (default; cheaper, for simple searches) or \"main\" (for complex or accuracy-critical analysis). Choose by complexity.

Example: {{\"description\": \"Explore auth flow\", \"prompt\": \"Find the files that implement login and session handling. Return each file's path and purpose, and the function where the session token is created.\", \"subagent_type\": \"explore\", \"model\": \"light\"}}"
    )
}

/// The JSON schema of the arguments (order pinned: description, prompt, subagent_type, model).
pub fn parameters(reachable: &[String]) -> Value {
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
            (ok.subagent_type.as_str(), ok.model.as_str()),
            ("explore", "main")
        );
        assert_eq!(ok.to_request().task, "d\n\np");
        for falsy in [json!(null), json!(""), json!(0), json!(false)] {
            let a = check(json!({"description": "d", "prompt": "p", "subagent_type": "explore", "model": falsy})).unwrap();
            assert_eq!(a.model, "light");
        }
        let many = ["explore".to_string(), "deep".to_string()];
        assert_eq!(
            subagent_type_message(&many),
            "Parameter 'subagent_type' must be one of 'explore', 'deep'."
        );
    }
}
