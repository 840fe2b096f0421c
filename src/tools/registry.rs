//! The tool registry: tools by name, allow-list filtering, model-facing schemas, and the one
//! entry point that runs a call ([`ToolRegistry::execute`]): parse, permission, allow-list, run.
//!
//! A tool never returns a Rust error: every failure, including a panic inside a tool, becomes an
//! error envelope the model can read.
//!
//! ```
//! use outrider::api::ToolRegistry;
//! let child = ToolRegistry::readonly().filtered(["Read", "Grep"]);
//! assert_eq!(child.names(), ["Grep", "Read"]);
//! assert_eq!(child.openai_tools()[0]["function"]["name"], "Grep");
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Instant;

use serde_json::{json, Map, Value};

use super::context::ToolContext;
use super::envelope::{ErrorCode, ToolResult};
use super::glob::GlobTool;
use super::grep::GrepTool;
use super::params::json_type_name;
use super::permissions::{
    classify, PermissionAction, PermissionContext, PermissionDecision, RiskLevel,
    POLICY_RUNTIME_ALLOWLIST,
};
use super::read::ReadTool;

pub use super::tool::Tool;

/// Tool arguments as they arrive: a JSON text from a model (possibly empty or missing), or a
/// value already parsed.
#[derive(Debug, Clone, Copy)]
pub enum RawArguments<'a> {
    /// JSON text; `None` and `""` mean `{}`.
    Text(Option<&'a str>),
    /// A parsed value; `null` means `{}`.
    Value(&'a Value),
}

impl<'a> From<&'a str> for RawArguments<'a> {
    fn from(s: &'a str) -> Self {
        RawArguments::Text(Some(s))
    }
}

impl<'a> From<Option<&'a str>> for RawArguments<'a> {
    fn from(s: Option<&'a str>) -> Self {
        RawArguments::Text(s)
    }
}

impl<'a> From<&'a String> for RawArguments<'a> {
    fn from(s: &'a String) -> Self {
        RawArguments::Text(Some(s.as_str()))
    }
}

impl<'a> From<&'a Value> for RawArguments<'a> {
    fn from(v: &'a Value) -> Self {
        RawArguments::Value(v)
    }
}

/// Parse tool arguments: missing or empty → `{}`; otherwise the JSON value (any type), or the
/// parser's message.
pub(crate) fn parse_tool_arguments(raw: RawArguments<'_>) -> Result<Value, String> {
    match raw {
        RawArguments::Text(None) => Ok(json!({})),
        RawArguments::Text(Some(s)) if s.trim().is_empty() => Ok(json!({})),
        RawArguments::Text(Some(s)) => serde_json::from_str(s).map_err(|e| e.to_string()),
        RawArguments::Value(Value::Null) => Ok(json!({})),
        RawArguments::Value(v) => Ok(v.clone()),
    }
}

/// Tools by name, sorted.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
    /// Names removed by an allow-list: calls to them are PERMISSION_DENIED, not "no such tool".
    blocked: BTreeSet<String>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("tools", &self.names())
            .field("blocked", &self.blocked)
            .finish()
    }
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Read, Grep and Glob.
    pub fn readonly() -> Self {
        let mut r = Self::new();
        r.register(Arc::new(ReadTool));
        r.register(Arc::new(GrepTool));
        r.register(Arc::new(GlobTool));
        r
    }

    /// This registry with the Search tool added when Grep is in it (Search reads no more than
    /// Grep may): what the offline scout is given.
    pub fn with_search(&self) -> Self {
        let mut out = self.clone();
        if out.tools.contains_key("Grep") {
            out.register(Arc::new(super::search::SearchTool));
        }
        out
    }

    /// Add (or replace) a tool under its name.
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        self.blocked.remove(tool.name());
        self.tools.insert(tool.name().to_string(), tool);
    }

    /// A registry with only the tools named in `allowlist` (names not registered are ignored).
    pub fn filtered<I, S>(&self, allowlist: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let allowed: BTreeSet<String> = allowlist
            .into_iter()
            .map(|s| s.as_ref().to_string())
            .collect();
        let mut out = Self {
            tools: BTreeMap::new(),
            blocked: self.blocked.clone(),
        };
        for (name, tool) in &self.tools {
            if allowed.contains(name) {
                out.tools.insert(name.clone(), Arc::clone(tool));
            } else {
                out.blocked.insert(name.clone());
            }
        }
        out
    }

    /// The registered names, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.tools.keys().map(String::as_str).collect()
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    /// True when no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// `[{"type": "function", "function": {name, description, parameters}}]`, sorted by name.
    pub fn openai_tools(&self) -> Vec<Value> {
        self.tools
            .values()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name(), "description": t.description(), "parameters": t.parameters()
                }})
            })
            .collect()
    }

    /// `[{name, description, input_schema}]`, sorted by name.
    pub fn anthropic_tools(&self) -> Vec<Value> {
        self.tools
            .values()
            .map(|t| json!({"name": t.name(), "description": t.description(), "input_schema": t.parameters()}))
            .collect()
    }

    /// Run one call: parse the arguments, ask the permission core, check the allow-list, run the
    /// tool (a panic becomes INTERNAL_ERROR). Always an envelope.
    pub fn execute<'a>(
        &self,
        name: &str,
        raw_args: impl Into<RawArguments<'a>>,
        ctx: &ToolContext,
        permissions: &PermissionContext,
    ) -> ToolResult {
        let raw = raw_args.into();
        match parse_tool_arguments(raw) {
            Ok(args) => self.execute_parsed(name, &args, ctx, permissions),
            Err(e) => unparsable_arguments(raw, &e),
        }
    }

    /// [`Self::execute`] on arguments already parsed by [`parse_tool_arguments`].
    pub fn execute_parsed(
        &self,
        name: &str,
        args: &Value,
        ctx: &ToolContext,
        permissions: &PermissionContext,
    ) -> ToolResult {
        let started = Instant::now();
        let ms = || started.elapsed().as_millis() as u64;
        if !args.is_object() {
            return ToolResult::error(
                args,
                ErrorCode::InvalidParam,
                format!(
                    "{name} arguments must be a JSON object; got {}.",
                    json_type_name(args)
                ),
                ms(),
            );
        }
        let mode = permissions.runtime_mode.as_str();
        let decision = classify(name, args, permissions);
        let effective = decision.effective_action(permissions);
        if effective != PermissionAction::Allow {
            let msg = if decision.action == PermissionAction::Ask {
                format!("Tool '{name}' requires confirmation by permission core.")
            } else {
                format!("Tool '{name}' denied by permission core.")
            };
            return denied(args, msg, &decision, effective, mode, ms());
        }
        let Some(tool) = self.tools.get(name) else {
            if self.blocked.contains(name) {
                let decision = PermissionDecision {
                    action: PermissionAction::Deny,
                    risk: RiskLevel::Unknown,
                    reason: "tool blocked by runtime allowlist".into(),
                    policy_source: POLICY_RUNTIME_ALLOWLIST.into(),
                    input_summary: decision.input_summary,
                };
                let msg = format!("Tool '{name}' denied by permission core.");
                return denied(args, msg, &decision, PermissionAction::Deny, mode, ms());
            }
            let available = self.names().join(", ");
            return ToolResult::error(
                args,
                ErrorCode::NotFound,
                format!("No tool named '{name}' is available; available: {available}."),
                ms(),
            );
        };
        match catch_unwind(AssertUnwindSafe(|| tool.run(ctx, args))) {
            Ok(result) => result,
            Err(panic) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".into());
                ToolResult::error(
                    args,
                    ErrorCode::InternalError,
                    format!("Tool '{name}' failed unexpectedly: {what}"),
                    ms(),
                )
            }
        }
    }
}

/// The INVALID_PARAM envelope for arguments that are not JSON (`error` is the parser's
/// message), echoing them as sent.
pub(crate) fn unparsable_arguments(raw: RawArguments<'_>, error: &str) -> ToolResult {
    let echo = match raw {
        RawArguments::Text(s) => Value::from(s.unwrap_or_default()),
        RawArguments::Value(v) => v.clone(),
    };
    ToolResult::error(
        &echo,
        ErrorCode::InvalidParam,
        format!("Tool arguments parse error: {error}"),
        0,
    )
}

fn denied(
    args: &Value,
    message: String,
    decision: &PermissionDecision,
    effective: PermissionAction,
    mode: &str,
    time_ms: u64,
) -> ToolResult {
    let payload: Map<String, Value> = decision.as_trace_payload(None, Some(effective));
    ToolResult::error(args, ErrorCode::PermissionDenied, message, time_ms)
        .with_detail("permission", Value::Object(payload))
        .with_context("runtime_mode", mode)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::workspace::Workspace;

    struct Boom;
    impl Tool for Boom {
        fn name(&self) -> &'static str {
            "Read"
        }
        fn description(&self) -> std::borrow::Cow<'static, str> {
            "panics".into()
        }
        fn parameters(&self) -> Value {
            json!({"type": "object", "properties": {}, "additionalProperties": false})
        }
        fn run(&self, _: &ToolContext, _: &Value) -> ToolResult {
            panic!("kaboom")
        }
    }

    fn ctx() -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(Workspace::new(dir.path()).unwrap());
        (dir, ctx)
    }

    #[test]
    fn panic_becomes_internal_error() {
        let (_d, ctx) = ctx();
        let mut r = ToolRegistry::new();
        r.register(Arc::new(Boom));
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let out = r.execute("Read", "{}", &ctx, &PermissionContext::readonly_subagent());
        std::panic::set_hook(hook);
        assert_eq!(
            out.to_value()["error"],
            json!({"code": "INTERNAL_ERROR", "message": "Tool 'Read' failed unexpectedly: kaboom"})
        );
    }

    #[test]
    fn arguments_parse() {
        assert_eq!(
            parse_tool_arguments(RawArguments::Text(None)),
            Ok(json!({}))
        );
        assert_eq!(parse_tool_arguments("  ".into()), Ok(json!({})));
        assert_eq!(parse_tool_arguments("[1]".into()), Ok(json!([1])));
        assert_eq!(
            parse_tool_arguments("{".into()),
            Err("EOF while parsing an object at line 1 column 1".into())
        );
        assert_eq!(parse_tool_arguments((&Value::Null).into()), Ok(json!({})));
    }
}
