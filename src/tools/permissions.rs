//! The permission core: which tool calls run, which are refused, and which need a person.
//!
//! A rule table, not an OS sandbox: the sandbox is [`super::workspace::Workspace`] plus a
//! registry that only holds read-only tools. In `readonly_subagent` mode only Read, Grep, Glob
//! (and the internal TodoWrite and Skill) are allowed; every unknown name fails closed.
//!
//! ```
//! use outrider::api::{classify, PermissionAction, PermissionContext, RuntimeMode};
//! use serde_json::json;
//! let child = PermissionContext::new(RuntimeMode::ReadonlySubagent);
//! assert_eq!(classify("Grep", &json!({"pattern": "x"}), &child).action, PermissionAction::Allow);
//! assert_eq!(classify("Bash", &json!({"command": "ls"}), &child).action, PermissionAction::Deny);
//! assert_eq!(classify("mcp__web", &json!({}), &child).action, PermissionAction::Deny);
//! ```

use std::sync::OnceLock;

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

wire_enum! {
    /// Where a tool call comes from: the main agent, or a read-only child.
    #[derive(Default)]
    pub enum RuntimeMode {
        /// The main agent: Edit and Bash are classified by rule, Task is allowed.
        #[default]
        MainAgent = "main_agent",
        /// A sub-agent: only read-only tools; Edit, Bash, Task and unknown names are denied.
        ReadonlySubagent = "readonly_subagent",
    }
    parse_error: |s| -> UnknownRuntimeMode { UnknownRuntimeMode(s.to_string()) }
}

/// A runtime mode name that is not `main_agent` or `readonly_subagent`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown runtime_mode {}; expected 'main_agent' or 'readonly_subagent'", crate::pyjson::py_repr_str(.0))]
pub struct UnknownRuntimeMode(pub String);

/// What to do with an ASK decision when nobody can be asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AskPolicy {
    /// Treat ASK as DENY (the reference's only policy).
    #[default]
    Deny,
    /// Treat ASK as ALLOW (for a caller that already confirmed with a person).
    Allow,
}

/// The mode a call is classified in.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct PermissionContext {
    /// Main agent or read-only child.
    pub runtime_mode: RuntimeMode,
    /// What an ASK decision becomes.
    pub ask_policy: AskPolicy,
}

impl PermissionContext {
    /// A context in `mode` with the default ask policy (deny).
    pub fn new(runtime_mode: RuntimeMode) -> Self {
        PermissionContext {
            runtime_mode,
            ask_policy: AskPolicy::Deny,
        }
    }

    /// The context of a read-only sub-agent.
    pub fn readonly_subagent() -> Self {
        Self::new(RuntimeMode::ReadonlySubagent)
    }

    /// The context of the main agent.
    pub fn main_agent() -> Self {
        Self::new(RuntimeMode::MainAgent)
    }
}

wire_enum! {
    /// The classifier's verdict.
    pub enum PermissionAction {
        /// Run it.
        Allow = "allow",
        /// Refuse it.
        Deny = "deny",
        /// Needs a person; becomes allow or deny through [`AskPolicy`].
        Ask = "ask",
    }
}

wire_enum! {
    /// How much harm a call could do.
    pub enum RiskLevel {
        /// Reads only.
        Low = "low",
        /// Changes files in a way a person can review.
        Medium = "medium",
        /// Could destroy data or cross a trust boundary.
        High = "high",
        /// Could not be judged (missing input, unknown tool).
        Unknown = "unknown",
    }
}

/// The source of classifier decisions in trace payloads.
pub(crate) const POLICY_RISK_CLASSIFIER: &str = "risk_classifier";
/// The source of decisions made by a registry's allow-list.
pub(crate) const POLICY_RUNTIME_ALLOWLIST: &str = "runtime_allowlist";

/// One decision, with the reason a person or model can read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionDecision {
    /// allow, deny or ask.
    pub action: PermissionAction,
    /// The assessed risk.
    pub risk: RiskLevel,
    /// Why, in a few words.
    pub reason: String,
    /// Which policy decided (`risk_classifier`, `runtime_allowlist`).
    pub policy_source: String,
    /// `Tool(<compact sorted JSON>)`, cut to 240 characters.
    pub input_summary: String,
}

impl PermissionDecision {
    fn new(
        action: PermissionAction,
        risk: RiskLevel,
        reason: impl Into<String>,
        summary: &str,
    ) -> Self {
        PermissionDecision {
            action,
            risk,
            reason: reason.into(),
            policy_source: POLICY_RISK_CLASSIFIER.to_string(),
            input_summary: summary.to_string(),
        }
    }

    /// The action after applying the ask policy: ASK becomes DENY or ALLOW.
    pub fn effective_action(&self, ctx: &PermissionContext) -> PermissionAction {
        match (self.action, ctx.ask_policy) {
            (PermissionAction::Ask, AskPolicy::Deny) => PermissionAction::Deny,
            (PermissionAction::Ask, AskPolicy::Allow) => PermissionAction::Allow,
            (action, _) => action,
        }
    }

    /// `{risk, action, reason, policy_source, input_summary[, tool_name][, effective_action]}`.
    pub fn as_trace_payload(
        &self,
        tool_name: Option<&str>,
        effective_action: Option<PermissionAction>,
    ) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("risk".into(), self.risk.as_str().into());
        m.insert("action".into(), self.action.as_str().into());
        m.insert("reason".into(), self.reason.clone().into());
        m.insert("policy_source".into(), self.policy_source.clone().into());
        m.insert("input_summary".into(), self.input_summary.clone().into());
        if let Some(name) = tool_name {
            m.insert("tool_name".into(), name.into());
        }
        if let Some(action) = effective_action {
            m.insert("effective_action".into(), action.as_str().into());
        }
        m
    }
}

/// Longest `input_summary` JSON part before it is cut to 237 characters plus "...".
const SUMMARY_MAX_CHARS: usize = 240;

/// `Tool(<compact JSON with sorted keys>)`; the JSON is cut to 237 characters plus "..." when it is
/// longer than 240.
pub(crate) fn input_summary(tool: &str, input: &Value) -> String {
    let json = serde_json::to_string(&sorted(input)).unwrap_or_default();
    let json = if json.chars().count() > SUMMARY_MAX_CHARS {
        let head: String = json.chars().take(SUMMARY_MAX_CHARS - 3).collect();
        format!("{head}...")
    } else {
        json
    };
    format!("{tool}({json})")
}

/// `v` with every object's keys in order: one spelling for equal arguments.
pub(crate) fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&m[k])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

fn regex_list(patterns: &[&str]) -> Vec<Regex> {
    patterns
        .iter()
        .map(|p| Regex::new(p).expect("valid permission regex"))
        .collect()
}

/// Commands that are refused outright (destructive, privilege, or arbitrary code).
fn bash_deny() -> &'static [Regex] {
    static RE: OnceLock<Vec<Regex>> = OnceLock::new();
    RE.get_or_init(|| {
        regex_list(&[
            r"(^|[\s;&|(])sudo(\s|$)",
            r"(^|[\s;&|(])rm(\s|$)",
            r"(^|[\s;&|(])git\s+(checkout|reset|clean)(\s|$)",
            r"(^|[\s;&|(])(sh|bash|zsh)\s+-c(\s|$)",
            r"(^|[\s;&|(])python[0-9.]*\s+-c(\s|$)",
            r"\|\s*(sh|bash|zsh)(\s|$)",
            r"`",
            r"\$\(",
        ])
    })
}

/// Commands that change files or install software: a person decides.
fn bash_ask() -> &'static [Regex] {
    static RE: OnceLock<Vec<Regex>> = OnceLock::new();
    RE.get_or_init(|| {
        regex_list(&[
            r"(^|[\s;&|(])mv(\s|$)",
            r"(^|[\s;&|(])cp(\s|$)",
            r">",
            r"(^|[\s;&|(])(npm|pip|pip3)\s+install(\s|$)",
            r"(^|[\s;&|(])chmod(\s|$)",
            r"curl\s.*\|\s*\w*sh",
        ])
    })
}

fn bash_allowed(command: &str) -> bool {
    if command == "pwd" {
        return true;
    }
    let read_only_prefix = ["sed -n", "git status", "git diff", "git log"]
        .iter()
        .any(|p| command.starts_with(p));
    read_only_prefix && !command.contains([';', '&', '|', '<', '>'])
}

fn string_field<'a>(input: &'a Value, keys: &[&str]) -> Option<&'a str> {
    keys.iter()
        .find_map(|k| input.get(*k).and_then(Value::as_str))
        .filter(|s| !s.trim().is_empty())
}

/// Classify one call; the first matching rule wins (§4.1 of the reference, with Task allowed
/// for the main agent).
pub fn classify(tool: &str, input: &Value, ctx: &PermissionContext) -> PermissionDecision {
    use PermissionAction::{Allow, Ask, Deny};
    let summary = input_summary(tool, input);
    let readonly = ctx.runtime_mode == RuntimeMode::ReadonlySubagent;
    let d = |action, risk, reason: &str| PermissionDecision::new(action, risk, reason, &summary);
    match tool {
        "Read" | "Grep" | "Glob" | "Search" => d(Allow, RiskLevel::Low, "read-only tool"),
        "Edit" if readonly => d(Deny, RiskLevel::High, "readonly_subagent blocks Edit"),
        "Edit" => match string_field(input, &["path", "file_path"]) {
            None => d(Deny, RiskLevel::Unknown, "Edit requires a target path"),
            Some(_) => d(Allow, RiskLevel::Medium, "file edit inside the workspace"),
        },
        "TodoWrite" => d(Allow, RiskLevel::Low, "internal planning state tool"),
        "Bash" if readonly => d(Deny, RiskLevel::High, "readonly_subagent blocks Bash"),
        "Bash" => {
            let Some(command) = string_field(input, &["command"]) else {
                return d(Deny, RiskLevel::Unknown, "Bash requires a command");
            };
            let command = command.trim();
            if bash_deny().iter().any(|re| re.is_match(command)) {
                d(Deny, RiskLevel::High, "dangerous shell command")
            } else if bash_ask().iter().any(|re| re.is_match(command)) {
                // The reference rates these (moves, copies, redirection, installs) high.
                d(
                    Ask,
                    RiskLevel::High,
                    "shell command changes files or installs software",
                )
            } else if bash_allowed(command) {
                d(Allow, RiskLevel::Low, "read-only shell command")
            } else {
                d(Ask, RiskLevel::Medium, "shell command needs confirmation")
            }
        }
        "Task" if readonly => d(
            Deny,
            RiskLevel::High,
            "readonly_subagent blocks recursive task execution",
        ),
        "Task" => d(
            Allow,
            RiskLevel::High,
            "task delegation to a read-only sub-agent",
        ),
        "Skill" => d(Allow, RiskLevel::Low, "skill instructions are read-only"),
        other => d(
            Deny,
            RiskLevel::Unknown,
            &format!("unknown tool '{other}' fails closed"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(tool: &str, input: Value, mode: RuntimeMode) -> (PermissionAction, RiskLevel, String) {
        let d = classify(tool, &input, &PermissionContext::new(mode));
        (d.action, d.risk, d.reason)
    }

    type Case = (
        &'static str,
        Value,
        RuntimeMode,
        (PermissionAction, RiskLevel, &'static str),
    );

    #[test]
    fn table() {
        use PermissionAction::*;
        use RiskLevel::*;
        use RuntimeMode::*;
        let cases: Vec<Case> = vec![
            (
                "Read",
                json!({"path": "a"}),
                ReadonlySubagent,
                (Allow, Low, "read-only tool"),
            ),
            ("Grep", json!({}), MainAgent, (Allow, Low, "read-only tool")),
            (
                "Glob",
                json!({}),
                ReadonlySubagent,
                (Allow, Low, "read-only tool"),
            ),
            (
                "Edit",
                json!({"path": "a"}),
                ReadonlySubagent,
                (Deny, High, "readonly_subagent blocks Edit"),
            ),
            (
                "Edit",
                json!({"path": " "}),
                MainAgent,
                (Deny, Unknown, "Edit requires a target path"),
            ),
            (
                "Edit",
                json!({"file_path": "a"}),
                MainAgent,
                (Allow, Medium, "file edit inside the workspace"),
            ),
            (
                "TodoWrite",
                json!({}),
                ReadonlySubagent,
                (Allow, Low, "internal planning state tool"),
            ),
            (
                "Bash",
                json!({"command": "pwd"}),
                ReadonlySubagent,
                (Deny, High, "readonly_subagent blocks Bash"),
            ),
            (
                "Bash",
                json!({"command": ""}),
                MainAgent,
                (Deny, Unknown, "Bash requires a command"),
            ),
            (
                "Bash",
                json!({"command": "pwd"}),
                MainAgent,
                (Allow, Low, "read-only shell command"),
            ),
            (
                "Bash",
                json!({"command": "git status -s"}),
                MainAgent,
                (Allow, Low, "read-only shell command"),
            ),
            (
                "Bash",
                json!({"command": "sed -n 1,5p a.txt"}),
                MainAgent,
                (Allow, Low, "read-only shell command"),
            ),
            (
                "Bash",
                json!({"command": "git log | head"}),
                MainAgent,
                (Ask, Medium, "shell command needs confirmation"),
            ),
            (
                "Bash",
                json!({"command": "ls"}),
                MainAgent,
                (Ask, Medium, "shell command needs confirmation"),
            ),
            (
                "Bash",
                json!({"command": "sudo ls"}),
                MainAgent,
                (Deny, High, "dangerous shell command"),
            ),
            (
                "Bash",
                json!({"command": "rm -rf x"}),
                MainAgent,
                (Deny, High, "dangerous shell command"),
            ),
            (
                "Bash",
                json!({"command": "git reset --hard"}),
                MainAgent,
                (Deny, High, "dangerous shell command"),
            ),
            (
                "Bash",
                json!({"command": "bash -c 'x'"}),
                MainAgent,
                (Deny, High, "dangerous shell command"),
            ),
            (
                "Bash",
                json!({"command": "python3 -c 1"}),
                MainAgent,
                (Deny, High, "dangerous shell command"),
            ),
            (
                "Bash",
                json!({"command": "curl x | sh"}),
                MainAgent,
                (Deny, High, "dangerous shell command"),
            ),
            (
                "Bash",
                json!({"command": "echo `id`"}),
                MainAgent,
                (Deny, High, "dangerous shell command"),
            ),
            (
                "Bash",
                json!({"command": "echo $(id)"}),
                MainAgent,
                (Deny, High, "dangerous shell command"),
            ),
            (
                "Bash",
                json!({"command": "mv a b"}),
                MainAgent,
                (
                    Ask,
                    High,
                    "shell command changes files or installs software",
                ),
            ),
            (
                "Bash",
                json!({"command": "echo a > b"}),
                MainAgent,
                (
                    Ask,
                    High,
                    "shell command changes files or installs software",
                ),
            ),
            (
                "Bash",
                json!({"command": "pip install x"}),
                MainAgent,
                (
                    Ask,
                    High,
                    "shell command changes files or installs software",
                ),
            ),
            (
                "Bash",
                json!({"command": "chmod +x a"}),
                MainAgent,
                (
                    Ask,
                    High,
                    "shell command changes files or installs software",
                ),
            ),
            (
                "Bash",
                json!({"command": "firmware"}),
                MainAgent,
                (Ask, Medium, "shell command needs confirmation"),
            ),
            (
                "Task",
                json!({}),
                ReadonlySubagent,
                (
                    Deny,
                    High,
                    "readonly_subagent blocks recursive task execution",
                ),
            ),
            (
                "Task",
                json!({}),
                MainAgent,
                (Allow, High, "task delegation to a read-only sub-agent"),
            ),
            (
                "Skill",
                json!({}),
                ReadonlySubagent,
                (Allow, Low, "skill instructions are read-only"),
            ),
            (
                "mcp__x",
                json!({}),
                MainAgent,
                (Deny, Unknown, "unknown tool 'mcp__x' fails closed"),
            ),
            (
                "read",
                json!({}),
                ReadonlySubagent,
                (Deny, Unknown, "unknown tool 'read' fails closed"),
            ),
        ];
        for (tool, input, mode, (action, risk, reason)) in cases {
            assert_eq!(
                row(tool, input.clone(), mode),
                (action, risk, reason.to_string()),
                "{tool} {input} {mode}"
            );
        }
    }

    #[test]
    fn summary_sorted_and_cut() {
        assert_eq!(
            input_summary("Grep", &json!({"b": 1, "a": {"d": 2, "c": 3}})),
            r#"Grep({"a":{"c":3,"d":2},"b":1})"#
        );
        let long = input_summary("Read", &json!({"path": "x".repeat(300)}));
        assert_eq!(long.len(), "Read(".len() + 240 + 1);
        assert!(long.ends_with("...)"));
        let exact = json!({"p": "y".repeat(240 - 8)});
        assert_eq!(serde_json::to_string(&exact).unwrap().len(), 240);
        assert!(!input_summary("Read", &exact).contains("..."));
    }

    #[test]
    fn modes_parse_with_clear_error() {
        assert_eq!(
            "main_agent".parse::<RuntimeMode>().unwrap(),
            RuntimeMode::MainAgent
        );
        assert_eq!(
            "readonly_subagent".parse::<RuntimeMode>().unwrap(),
            RuntimeMode::ReadonlySubagent
        );
        assert_eq!(
            "root".parse::<RuntimeMode>().unwrap_err().to_string(),
            "unknown runtime_mode 'root'; expected 'main_agent' or 'readonly_subagent'"
        );
    }

    #[test]
    fn trace_payload_and_ask_policy() {
        let d = classify(
            "Bash",
            &json!({"command": "ls"}),
            &PermissionContext::main_agent(),
        );
        assert_eq!(
            d.effective_action(&PermissionContext::main_agent()),
            PermissionAction::Deny
        );
        let allow = PermissionContext {
            ask_policy: AskPolicy::Allow,
            ..PermissionContext::main_agent()
        };
        assert_eq!(d.effective_action(&allow), PermissionAction::Allow);
        assert_eq!(
            Value::Object(d.as_trace_payload(Some("Bash"), Some(PermissionAction::Deny))),
            json!({"risk": "medium", "action": "ask", "reason": "shell command needs confirmation",
                   "policy_source": "risk_classifier", "input_summary": "Bash({\"command\":\"ls\"})",
                   "tool_name": "Bash", "effective_action": "deny"})
        );
    }
}
