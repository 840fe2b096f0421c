//! Runtime profiles: what a child may use (tools, budgets, model route) and what it must return.
//!
//! ```
//! use outrider::api::{RuntimeProfile, explore_profile};
//! let p = RuntimeProfile { max_steps: 20, ..explore_profile() };
//! p.validate().unwrap();
//! assert!(p.rendered_system_prompt().contains("20 model turns"));
//! ```

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::pyjson::Json;
use crate::schema::OutputSchema;

/// The fields of a profile, in the constructor's order.
pub const PROFILE_FIELDS: [&str; 21] = [
    "name",
    "system_prompt",
    "tool_allowlist",
    "max_steps",
    "context_token_budget",
    "total_token_budget",
    "model_choice",
    "context_source_policy",
    "completion_policy",
    "result_contract",
    "recursive_subagents",
    "gate_retries",
    "on_budget_exhausted",
    "timeout_seconds",
    "min_tool_calls",
    "repo_map_hint",
    "tool_result_format",
    "scout_fallback",
    "output_schema",
    "max_summary_chars",
    "tuning",
];

/// The tools a formal sub-agent is given by default (the reference's read-only set).
pub const READONLY_TOOLS: [&str; 3] = ["Glob", "Grep", "Read"];
/// Read-only tools a profile may add to [`READONLY_TOOLS`]: `Search`, ranked search of the
/// code index (the offline scout has it wherever Grep is allowed).
pub(crate) const OPTIONAL_TOOLS: [&str; 1] = ["Search"];

pub use crate::error::ProfileError;

/// A string that is not one of a domain enum's wire names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{what} must be one of {}, got {}",
    quoted(expected),
    crate::pyjson::py_repr_str(value)
)]
pub struct UnknownValue {
    /// What the value was for.
    pub what: &'static str,
    /// The value given.
    pub value: String,
    /// The accepted values.
    pub expected: &'static [&'static str],
}

fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("'{n}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

wire_enum! {
    /// The model route a profile or request asks for.
    pub enum ModelChoice as "model choice" {
        /// The cheaper model (falls back to main when none is configured).
        Light = "light",
        /// The main model.
        Main = "main",
    }
}

wire_enum! {
    /// The contract a child's final answer must meet.
    pub enum ResultContract as "result contract" {
        /// `ExploreResult`: status, summary, findings, evidence, unresolved questions.
        Explore = "ExploreResult",
        /// `VerificationResult`: verdict, reasons, findings, evidence.
        Verification = "VerificationResult",
    }
}

wire_enum! {
    /// What a child does when its step or token budget runs out.
    pub enum BudgetPolicy as "on_budget_exhausted" {
        /// One last tool-less call asks for the result, which comes back `partial`.
        Partial = "partial",
        /// Stop without a result, as the reference does.
        Fail = "fail",
    }
}

wire_enum! {
    /// How tool results are rendered for the model.
    pub enum ToolResultFormat as "tool_result_format" {
        /// The reference's JSON envelope `{status, data, text, stats, context[, error]}`.
        Json = "json",
        /// Plain text: `path:line:text` lines for Grep, numbered lines for Read, one path per
        /// line for Glob, `error CODE: message` for an error (fewer tokens per call).
        Compact = "compact",
    }
}

/// The most successful tool calls a profile may require before a final answer.
pub(crate) const MAX_MIN_TOOL_CALLS: i64 = 20;

/// A sub-agent profile. Validated by [`RuntimeProfile::validate`]; immutable once built.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuntimeProfile {
    /// Name used to select the profile (`explore`).
    pub name: String,
    /// The system prompt; `{max_steps}`, `{context_token_budget}` and `{total_token_budget}` are
    /// filled in from the profile when the child starts.
    pub system_prompt: String,
    /// Tools the child may call.
    pub tool_allowlist: BTreeSet<String>,
    /// Model calls per run.
    pub max_steps: i64,
    /// Tokens one request may hold (system prompt and tool schemas included).
    pub context_token_budget: i64,
    /// Tokens all calls of one run may use together (each call's prompt and answer, summed): a
    /// call is made only if its estimate, and the wrap-up's reserve, still fit.
    pub total_token_budget: i64,
    /// Default model route: `light` or `main`.
    pub model_choice: ModelChoice,
    /// Label: where the child's context comes from.
    pub context_source_policy: String,
    /// Label: how the child finishes.
    pub completion_policy: String,
    /// `ExploreResult` or `VerificationResult`.
    pub result_contract: Option<ResultContract>,
    /// Always false: formal sub-agents cannot launch sub-agents.
    pub recursive_subagents: bool,
    /// Corrective retries after an invalid final answer (the reference allows 1).
    pub gate_retries: i64,
    /// `partial`: one last tool-less call asks for the JSON result when budgets run out;
    /// `fail`: stop as the reference does.
    pub on_budget_exhausted: BudgetPolicy,
    /// Wall-clock limit for one child, in seconds: model calls and their retries, tools and the
    /// completion gate all stop at it.
    pub timeout_seconds: f64,
    /// Successful tool calls the child must make before its final answer is accepted (explore:
    /// 1); an earlier answer is refused with feedback that says so. The places the repo-map
    /// hint opens for the child count as one.
    #[serde(default)]
    pub min_tool_calls: i64,
    /// Before the first model call, let the offline scout search the code index; give the child,
    /// in its first message, its first ranked places as leads (`path:lines` and what each
    /// defines, no code: `tuning.leads` of them), and rank the leads with the model's citations
    /// at the end (see `runner::assist::hint`). Explore: on.
    #[serde(default)]
    pub repo_map_hint: bool,
    /// How tool results are shown to the model: `json` (the envelope, default) or `compact`.
    #[serde(default = "default_format")]
    pub tool_result_format: ToolResultFormat,
    /// When the model gives no verified, completed answer, return the offline scout's answer
    /// to the task instead if it has one, saying so in its summary (not after a model error).
    /// The scout searches before the model's first call (a tenth of `timeout_seconds` at most),
    /// so a timeout leaves it its answer. Off by default.
    #[serde(default)]
    pub scout_fallback: bool,
    /// The caller's own result shape, in place of `result_contract`: the child is told the
    /// schema, the gate checks its answer against it, `evidence` stays required and grounded.
    /// None: the contract's own shape.
    #[serde(default)]
    pub output_schema: Option<OutputSchema>,
    /// The most characters of the answer's summary the result keeps (the child is told the
    /// limit; a longer summary is cut, ending in a marker that says so). None: no limit.
    #[serde(default)]
    pub max_summary_chars: Option<i64>,
    /// The knobs of the small-model assists (see [`crate::tuning`]): the defaults unless an
    /// experiment changes them (`tuning={"leads": 5}`).
    #[serde(default)]
    pub tuning: crate::tuning::Tuning,
}

/// The smallest `max_summary_chars`: room for a sentence and the marker that says it was cut.
pub(crate) const MIN_SUMMARY_CHARS: i64 = 100;
/// The largest `max_summary_chars`.
pub(crate) const MAX_SUMMARY_CHARS: i64 = 1_000_000;

/// `summary` cut to at most `cap` characters (the cut one ending in a marker that says how much
/// was left out), or None when it already fits.
pub(crate) fn cap_summary(summary: &str, cap: i64) -> Option<String> {
    let cap = cap.max(MIN_SUMMARY_CHARS) as usize;
    let total = summary.chars().count();
    if total <= cap {
        return None;
    }
    // The marker's length depends on the number it shows; both are at most `total`'s digits.
    let marker = |kept: usize| {
        format!(" … [summary cut by max_summary_chars={cap}: {kept} of {total} characters shown]")
    };
    let room = cap.saturating_sub(marker(total).chars().count());
    let kept: String = summary.chars().take(room).collect();
    let kept = kept.trim_end();
    Some(format!("{kept}{}", marker(kept.chars().count())))
}

fn default_format() -> ToolResultFormat {
    ToolResultFormat::Json
}

/// The longest wall-clock limit a profile may set: a year, far past any real run, and short
/// enough that every deadline computed from it is representable.
pub(crate) const MAX_TIMEOUT_SECONDS: f64 = 365.0 * 24.0 * 3600.0;

fn check_timeout(seconds: f64) -> Result<(), ProfileError> {
    if !(seconds.is_finite() && seconds > 0.0) {
        return Err(ProfileError(format!(
            "runtime profile timeout_seconds must be a positive number of seconds, got {}",
            Json::Float(seconds).py_repr()
        )));
    }
    if seconds > MAX_TIMEOUT_SECONDS {
        return Err(ProfileError(format!(
            "runtime profile timeout_seconds must be at most {MAX_TIMEOUT_SECONDS:.0} seconds (a year), got {}",
            Json::Float(seconds).py_repr()
        )));
    }
    Ok(())
}

impl crate::args::Record for RuntimeProfile {
    /// A profile from `to_dict()` output ([`RuntimeProfile::from_fields`]).
    fn from_record(data: &Json) -> Result<Self, crate::Error> {
        match data {
            Json::Object(fields) => Self::from_fields(fields),
            other => Err(crate::Error::wrong_type(
                "RuntimeProfile.from_dict data",
                "a dict",
                other.type_name(),
            )),
        }
    }
}

impl RuntimeProfile {
    /// Check the profile: the reference's five rules in its order, then ours.
    pub fn validate(&self) -> Result<(), ProfileError> {
        let contract = self.result_contract.map_or("", |c| c.as_str());
        self.check_in_order(
            self.model_choice.as_str(),
            contract,
            self.on_budget_exhausted.as_str(),
        )
    }

    /// The rules in the reference's order, with the three enum fields given as the caller wrote
    /// them (so that a bad model choice is reported after a bad budget, as the reference does).
    fn check_in_order(
        &self,
        model_choice: &str,
        result_contract: &str,
        on_budget_exhausted: &str,
    ) -> Result<(), ProfileError> {
        let fail = |m: &str| Err(ProfileError(m.to_string()));
        if self.name.trim().is_empty() || self.system_prompt.trim().is_empty() {
            return fail("runtime profile requires name and system prompt");
        }
        if self.max_steps <= 0 || self.context_token_budget <= 0 || self.total_token_budget <= 0 {
            return fail("runtime profile budgets must be positive");
        }
        if model_choice.parse::<ModelChoice>().is_err() {
            return fail("runtime profile model choice must be main or light");
        }
        if self.recursive_subagents || self.tool_allowlist.contains("Task") {
            return fail("formal subagent profiles cannot recurse");
        }
        if self.tool_allowlist.contains("Edit") || self.tool_allowlist.contains("Bash") {
            return fail("formal subagent profiles must be strictly read-only");
        }
        let unknown: Vec<&str> = self
            .tool_allowlist
            .iter()
            .map(String::as_str)
            .filter(|t| !READONLY_TOOLS.contains(t) && !OPTIONAL_TOOLS.contains(t))
            .collect();
        if !unknown.is_empty() {
            return Err(ProfileError(format!(
                "formal subagent profiles may only use Glob, Grep, Read and Search; got {}",
                unknown
                    .iter()
                    .map(|t| format!("'{t}'"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        if result_contract.parse::<ResultContract>().is_err() {
            return Err(ProfileError(format!(
                "runtime profile result contract must be ExploreResult or VerificationResult, got '{result_contract}'"
            )));
        }
        if self.gate_retries < 0 || self.gate_retries > 10 {
            return Err(ProfileError(format!(
                "runtime profile gate_retries must be between 0 and 10, got {}",
                self.gate_retries
            )));
        }
        if on_budget_exhausted.parse::<BudgetPolicy>().is_err() {
            return Err(ProfileError(format!(
                "runtime profile on_budget_exhausted must be 'partial' or 'fail', got '{on_budget_exhausted}'"
            )));
        }
        check_timeout(self.timeout_seconds)?;
        if !(0..=MAX_MIN_TOOL_CALLS).contains(&self.min_tool_calls) {
            return Err(ProfileError(format!(
                "runtime profile min_tool_calls must be between 0 and {MAX_MIN_TOOL_CALLS}, got {}",
                self.min_tool_calls
            )));
        }
        if let Some(cap) = self.max_summary_chars {
            if !(MIN_SUMMARY_CHARS..=MAX_SUMMARY_CHARS).contains(&cap) {
                return Err(ProfileError(format!(
                    "runtime profile max_summary_chars must be None or between {MIN_SUMMARY_CHARS} and {MAX_SUMMARY_CHARS}, got {cap}"
                )));
            }
        }
        if self.output_schema.is_some() && self.scout_fallback {
            return Err(ProfileError(
                "runtime profile scout_fallback cannot be used with output_schema: the offline scout answers only ExploreResult".into(),
            ));
        }
        if self.min_tool_calls > 0 && self.tool_allowlist.is_empty() {
            return Err(ProfileError(format!(
                "runtime profile min_tool_calls is {} but tool_allowlist is empty; give it tools or set min_tool_calls=0",
                self.min_tool_calls
            )));
        }
        Ok(())
    }

    /// Check only the budgets (for profiles that are not formal sub-agents, like a main agent).
    pub fn validate_budgets(&self) -> Result<(), ProfileError> {
        if self.max_steps <= 0 || self.context_token_budget <= 0 || self.total_token_budget <= 0 {
            return Err(ProfileError(
                "runtime profile budgets must be positive".into(),
            ));
        }
        check_timeout(self.timeout_seconds)?;
        Ok(())
    }

    /// A copy with `fields` changed (names as in [`PROFILE_FIELDS`], values as a caller gives
    /// them), then validated. A value of the wrong type is refused naming the field.
    pub fn with_fields(mut self, fields: &[(String, Json)]) -> Result<Self, crate::Error> {
        let mut model_choice = self.model_choice.as_str().to_string();
        let mut result_contract = self
            .result_contract
            .map_or(String::new(), |c| c.as_str().to_string());
        let mut on_budget_exhausted = self.on_budget_exhausted.as_str().to_string();
        for (key, value) in fields {
            let field = format!("RuntimeProfile.{key}");
            let field = field.as_str();
            let text = || field_text(field, value);
            let int = || field_int(field, value);
            let flag = || field_bool(field, value);
            match key.as_str() {
                "name" => self.name = text()?,
                "system_prompt" => self.system_prompt = text()?,
                "tool_allowlist" => self.tool_allowlist = field_tool_names(field, value)?,
                "max_steps" => self.max_steps = int()?,
                "context_token_budget" => self.context_token_budget = int()?,
                "total_token_budget" => self.total_token_budget = int()?,
                "model_choice" => model_choice = text()?,
                "context_source_policy" => self.context_source_policy = text()?,
                "completion_policy" => self.completion_policy = text()?,
                "result_contract" => result_contract = text()?,
                "recursive_subagents" => self.recursive_subagents = flag()?,
                "gate_retries" => self.gate_retries = int()?,
                "min_tool_calls" => self.min_tool_calls = int()?,
                "scout_fallback" => self.scout_fallback = flag()?,
                "repo_map_hint" => self.repo_map_hint = flag()?,
                "tool_result_format" => {
                    let raw = text()?;
                    self.tool_result_format = raw.parse().map_err(|_| {
                        crate::Error::config(
                            field,
                            format!("'{raw}' is not a format; expected 'json' or 'compact'"),
                        )
                    })?;
                }
                "on_budget_exhausted" => on_budget_exhausted = text()?,
                "output_schema" => {
                    self.output_schema = match value {
                        Json::Null => None,
                        other => Some(
                            OutputSchema::from_json(other)
                                .map_err(|e| e.within("RuntimeProfile"))?,
                        ),
                    }
                }
                "tuning" => self.tuning = self.tuning.clone().with_json(field, value)?,
                "max_summary_chars" => {
                    self.max_summary_chars = match value {
                        Json::Null => None,
                        _ => Some(int()?),
                    }
                }
                "timeout_seconds" => {
                    self.timeout_seconds = match value {
                        Json::Int(i) => *i as f64,
                        Json::Float(f) => *f,
                        other => {
                            return Err(crate::Error::wrong_type(
                                field,
                                "a number",
                                other.type_name(),
                            ))
                        }
                    }
                }
                other => {
                    return Err(crate::args::unknown_option(
                        "RuntimeProfile",
                        other,
                        &PROFILE_FIELDS,
                    ))
                }
            }
        }
        self.check_in_order(&model_choice, &result_contract, &on_budget_exhausted)?;
        // The checks above accepted each value.
        self.model_choice = model_choice.parse().unwrap_or(ModelChoice::Light);
        self.result_contract = result_contract.parse().ok();
        self.on_budget_exhausted = on_budget_exhausted.parse().unwrap_or(BudgetPolicy::Partial);
        Ok(self)
    }

    /// A new profile from `fields` (which must include `name` and `system_prompt`); the other
    /// fields default to the explore profile's.
    pub fn from_fields(fields: &[(String, Json)]) -> Result<Self, crate::Error> {
        for required in ["name", "system_prompt"] {
            if !fields.iter().any(|(k, _)| k == required) {
                return Err(crate::Error::Type {
                    field: format!("RuntimeProfile.{required}"),
                    message: "missing; a profile needs a name and a system prompt".into(),
                });
            }
        }
        explore_profile().with_fields(fields)
    }

    /// A copy with `schema` as its `output_schema`, validated again.
    pub fn with_output_schema(
        mut self,
        schema: Option<OutputSchema>,
    ) -> Result<Self, ProfileError> {
        self.output_schema = schema;
        self.validate()?;
        Ok(self)
    }

    /// The name of the shape the child's answer must have: the `output_schema`'s, else the
    /// contract's (empty for none).
    pub fn answer_shape(&self) -> &str {
        match &self.output_schema {
            Some(s) => s.name(),
            None => self.result_contract.map_or("", |c| c.as_str()),
        }
    }

    /// The system prompt with the profile's budgets filled in; with an `output_schema`, its
    /// answer section (from a paragraph starting `Answer:` on) is replaced by the schema's, and
    /// with `max_summary_chars` the child is told the limit.
    pub fn rendered_system_prompt(&self) -> String {
        let mut prompt = self
            .system_prompt
            .replace("{max_steps}", &self.max_steps.to_string())
            .replace(
                "{context_token_budget}",
                &self.context_token_budget.to_string(),
            )
            .replace("{total_token_budget}", &self.total_token_budget.to_string());
        if let Some(schema) = &self.output_schema {
            if let Some(at) = prompt.find("\n\nAnswer:") {
                prompt.truncate(at);
            }
            prompt.push_str("\n\n");
            prompt.push_str(&schema.prompt());
        }
        if let Some(cap) = self.max_summary_chars {
            prompt.push_str(&format!(
                "\nKeep the summary to at most {cap} characters: a longer one is cut."
            ));
        }
        prompt
    }
}

impl std::hash::Hash for RuntimeProfile {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        (&self.name, &self.system_prompt, &self.tool_allowlist).hash(h);
        (
            self.max_steps,
            self.context_token_budget,
            self.total_token_budget,
        )
            .hash(h);
        (self.model_choice, self.result_contract, self.gate_retries).hash(h);
        (self.on_budget_exhausted, self.timeout_seconds.to_bits()).hash(h);
        (
            self.min_tool_calls,
            self.repo_map_hint,
            self.tool_result_format,
            self.scout_fallback,
        )
            .hash(h);
        (&self.output_schema, self.max_summary_chars, &self.tuning).hash(h);
    }
}

impl std::fmt::Display for RuntimeProfile {
    /// The Python repr.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use crate::pyjson::py_repr_str as q;
        let tools: Vec<String> = self.tool_allowlist.iter().map(|t| q(t)).collect();
        write!(
            f,
            "RuntimeProfile(name={}, tool_allowlist={{{}}}, max_steps={}, context_token_budget={}, total_token_budget={}, model_choice={}, result_contract={}, gate_retries={}, on_budget_exhausted={}, timeout_seconds={}, min_tool_calls={}, repo_map_hint={}, tool_result_format={}, scout_fallback={}",
            q(&self.name), tools.join(", "), self.max_steps, self.context_token_budget,
            self.total_token_budget, q(self.model_choice.as_str()),
            q(self.result_contract.map_or("", |c| c.as_str())),
            self.gate_retries, q(self.on_budget_exhausted.as_str()), Json::Float(self.timeout_seconds).py_repr(),
            self.min_tool_calls, if self.repo_map_hint { "True" } else { "False" }, q(self.tool_result_format.as_str()),
            if self.scout_fallback { "True" } else { "False" }
        )?;
        if let Some(schema) = &self.output_schema {
            write!(f, ", output_schema={}", q(schema.name()))?;
        }
        if let Some(cap) = self.max_summary_chars {
            write!(f, ", max_summary_chars={cap}")?;
        }
        if self.tuning != crate::tuning::Tuning::default() {
            write!(f, ", tuning={}", self.tuning.py_repr())?;
        }
        f.write_str(")")
    }
}

/// The explore system prompt (a template; see [`RuntimeProfile::system_prompt`]).
pub(crate) const EXPLORE_SYSTEM_PROMPT: &str = r#"You are an Explore agent: a read-only investigator of one repository, working for another agent that needs a short, reliable answer.

Tools: Glob finds files by name pattern, Grep searches file contents with a regular expression, Read shows a file with line numbers (at most `limit` lines, default 500, from `start_line`; page with start_line). You cannot change files, run commands or ask anyone.

Work: you know nothing of this repository until a tool shows it to you, so first call a tool (Read a place you were pointed to, Grep a name from the task, or Glob likely file names), never answer first. Read the code you will cite: a Grep match shows where a name occurs, not what the code does. Read only the lines you need; put independent calls in one turn; stop once the lines you saw answer the task.

Budget: at most {max_steps} model turns and {total_token_budget} tokens for the whole run; each request must fit in {context_token_budget} tokens, so older tool output may be shortened. If it runs short, answer with status "partial".

Answer: exactly one JSON object, no fences, no other text; replace every <...> with your own words:
{"status": "completed", "summary": "<the answer, one paragraph>", "findings": ["<one fact each>"], "evidence": ["<path>:<line>", "<path>:<first>-<last>"], "unresolved_questions": []}
status is "completed" when answered, "partial" when something remains open. Evidence is a path relative to the root with a line or range that a Read or Grep result showed you in this run; a "completed" answer needs at least one."#;

/// The verification system prompt (a template).
pub(crate) const VERIFICATION_SYSTEM_PROMPT: &str = r#"You are a Verification agent: you independently check a completion candidate against its requirements by reading the repository. Trust nothing you have not seen yourself.

Tools: Glob finds files by name pattern, Grep searches file contents with a regular expression, Read shows a file with line numbers. Read returns at most `limit` lines (default 500) from `start_line`; page through a long file with start_line. You cannot change files, run commands, ask the user, or delegate to another agent.

Budget: at most {max_steps} model turns and {total_token_budget} tokens for the whole run; each request must fit in {context_token_budget} tokens. Check the claims that matter most first. If the budget runs short, answer with what you could check.

Answer: reply with exactly one JSON object and nothing else: no markdown fences, no text before or after it.
{"verdict": "PASS", "reasons": ["why, one per item"], "findings": ["what you saw"], "evidence": ["relative/path.py:42", "relative/path.py:10-20"]}
verdict is PASS (every requirement is met), FAIL (one is not), PARTIAL (some are), or UNVERIFIED (you could not tell). Each evidence item is a path relative to the repository root, a colon, and a line number or line range that you actually read."#;

fn readonly_set() -> BTreeSet<String> {
    READONLY_TOOLS.iter().map(|s| s.to_string()).collect()
}

/// The built-in `explore` profile (the reference's numbers).
pub fn explore_profile() -> RuntimeProfile {
    RuntimeProfile {
        name: "explore".into(),
        system_prompt: EXPLORE_SYSTEM_PROMPT.into(),
        tool_allowlist: readonly_set(),
        max_steps: 12,
        context_token_budget: 16_000,
        total_token_budget: 32_000,
        model_choice: ModelChoice::Light,
        context_source_policy: "self_contained_task_and_structured_context".into(),
        completion_policy: "structured_result".into(),
        result_contract: Some(ResultContract::Explore),
        recursive_subagents: false,
        gate_retries: 1,
        on_budget_exhausted: BudgetPolicy::Partial,
        timeout_seconds: 300.0,
        min_tool_calls: 1,
        repo_map_hint: true,
        tool_result_format: ToolResultFormat::Json,
        scout_fallback: false,
        output_schema: None,
        max_summary_chars: None,
        tuning: crate::tuning::Tuning::default(),
    }
}

/// The built-in `verification` profile (the reference's numbers).
pub fn verification_profile() -> RuntimeProfile {
    RuntimeProfile {
        name: "verification".into(),
        system_prompt: VERIFICATION_SYSTEM_PROMPT.into(),
        max_steps: 10,
        context_token_budget: 20_000,
        total_token_budget: 40_000,
        model_choice: ModelChoice::Main,
        context_source_policy: "completion_candidate_requirements_evidence".into(),
        result_contract: Some(ResultContract::Verification),
        repo_map_hint: false,
        ..explore_profile()
    }
}

/// A profile field's value as a str, or an error naming `field`.
fn field_text(field: &str, value: &Json) -> Result<String, crate::Error> {
    match value {
        Json::Str(s) => Ok(s.clone()),
        other => Err(crate::Error::wrong_type(field, "str", other.type_name())),
    }
}

/// A profile field's value as an int, or an error naming `field`.
fn field_int(field: &str, value: &Json) -> Result<i64, crate::Error> {
    match value {
        Json::Int(i) => Ok(*i),
        Json::BigInt(digits) => Err(crate::Error::config(
            field,
            format!("is out of range: {digits}"),
        )),
        other => Err(crate::Error::wrong_type(field, "int", other.type_name())),
    }
}

/// A profile field's value as a bool, or an error naming `field`.
fn field_bool(field: &str, value: &Json) -> Result<bool, crate::Error> {
    match value {
        Json::Bool(b) => Ok(*b),
        other => Err(crate::Error::wrong_type(field, "bool", other.type_name())),
    }
}

/// `tool_allowlist`'s value: tool names from a list of str. A single str is refused (it is
/// not a list of its letters).
fn field_tool_names<T: FromIterator<String>>(field: &str, value: &Json) -> Result<T, crate::Error> {
    match value {
        Json::Array(items) => items
            .iter()
            .map(|t| match t {
                Json::Str(s) => Ok(s.clone()),
                other => Err(crate::Error::wrong_type(
                    format!("{field} item"),
                    "str",
                    other.type_name(),
                )),
            })
            .collect(),
        Json::Str(_) => Err(crate::Error::Type {
            field: field.to_string(),
            message: "must be an iterable of tool names such as {'Read', 'Grep', 'Glob'}, not a single str".into(),
        }),
        other => Err(crate::Error::wrong_type(
            field,
            "an iterable of str",
            other.type_name(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(fields: serde_json::Value) -> Result<RuntimeProfile, String> {
        let Json::Object(items) = Json::from_value(&fields) else {
            panic!("fields must be an object")
        };
        explore_profile()
            .with_fields(&items)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_profile_is_rebuilt_from_its_pickled_state_and_only_from_a_dict() {
        use crate::args::Record;
        let p = explore_profile();
        let back = RuntimeProfile::from_record(&Json::from_value(&p.state())).unwrap();
        assert_eq!(back, p);
        assert_eq!(
            RuntimeProfile::from_record(&Json::Int(3))
                .unwrap_err()
                .to_string(),
            "RuntimeProfile.from_dict data: must be a dict, got int"
        );
    }

    #[test]
    fn min_tool_calls_needs_tools_and_a_bound() {
        assert_eq!(
            with(serde_json::json!({"tool_allowlist": [], "min_tool_calls": 1})).unwrap_err(),
            "runtime profile min_tool_calls is 1 but tool_allowlist is empty; give it tools or set min_tool_calls=0"
        );
        assert_eq!(
            with(serde_json::json!({"min_tool_calls": 21})).unwrap_err(),
            "runtime profile min_tool_calls must be between 0 and 20, got 21"
        );
        let p = with(serde_json::json!({"tool_allowlist": [], "min_tool_calls": 0})).unwrap();
        assert!(p.tool_allowlist.is_empty());
    }

    #[test]
    fn a_new_profile_is_built_from_its_fields() {
        let s = |v: &str| Json::Str(v.into());
        let fields = |items: Vec<(&str, Json)>| {
            let items: Vec<_> = items.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
            RuntimeProfile::from_fields(&items)
        };
        let p = fields(vec![
            ("name", s("scout")),
            ("system_prompt", s("Look.")),
            ("max_steps", Json::Int(3)),
            ("gate_retries", Json::Int(0)),
        ])
        .unwrap();
        assert_eq!(
            (p.name.as_str(), p.max_steps, p.gate_retries),
            ("scout", 3, 0)
        );
        assert_eq!(p.tool_allowlist, explore_profile().tool_allowlist);
        assert_eq!(
            fields(vec![("name", s("a"))]).unwrap_err().to_string(),
            "RuntimeProfile.system_prompt: missing; a profile needs a name and a system prompt"
        );
    }

    fn err(fields: serde_json::Value) -> String {
        with(fields).unwrap_err()
    }

    #[test]
    fn builtins_are_valid() {
        explore_profile().validate().unwrap();
        verification_profile().validate().unwrap();
        let rendered = explore_profile().rendered_system_prompt();
        assert!(rendered.contains("12 model turns") && rendered.contains("32000 tokens"));
        assert!(!rendered.contains("{max_steps}"));
    }

    #[test]
    fn reference_rules_in_order() {
        use serde_json::json;
        assert_eq!(
            err(json!({"name": "", "max_steps": 0})),
            "runtime profile requires name and system prompt"
        );
        assert_eq!(
            err(json!({"total_token_budget": 0, "model_choice": "x"})),
            "runtime profile budgets must be positive"
        );
        assert_eq!(
            err(json!({"model_choice": "heavy", "recursive_subagents": true})),
            "runtime profile model choice must be main or light"
        );
        assert_eq!(
            err(json!({"tool_allowlist": ["Task", "Edit"]})),
            "formal subagent profiles cannot recurse"
        );
        assert_eq!(
            err(json!({"tool_allowlist": ["Read", "Bash"]})),
            "formal subagent profiles must be strictly read-only"
        );
        assert_eq!(
            err(json!({"tool_allowlist": ["TodoWrite"], "result_contract": "Other"})),
            "formal subagent profiles may only use Glob, Grep, Read and Search; got 'TodoWrite'"
        );
        assert_eq!(
            err(json!({"result_contract": "Other", "gate_retries": 11})),
            "runtime profile result contract must be ExploreResult or VerificationResult, got 'Other'"
        );
        assert_eq!(
            err(json!({"gate_retries": 11, "on_budget_exhausted": "wait"})),
            "runtime profile gate_retries must be between 0 and 10, got 11"
        );
        assert_eq!(
            err(json!({"on_budget_exhausted": "wait"})),
            "runtime profile on_budget_exhausted must be 'partial' or 'fail', got 'wait'"
        );
        let nan =
            explore_profile().with_fields(&[("timeout_seconds".into(), Json::Float(f64::NAN))]);
        assert_eq!(
            nan.unwrap_err().to_string(),
            "runtime profile timeout_seconds must be a positive number of seconds, got nan"
        );
    }

    #[test]
    fn fields_are_typed_and_named() {
        use serde_json::json;
        let p = with(
            json!({"model_choice": "main", "result_contract": "VerificationResult",
                            "on_budget_exhausted": "fail", "timeout_seconds": 5}),
        )
        .unwrap();
        assert_eq!(
            (
                p.model_choice,
                p.result_contract,
                p.on_budget_exhausted,
                p.timeout_seconds
            ),
            (
                ModelChoice::Main,
                Some(ResultContract::Verification),
                BudgetPolicy::Fail,
                5.0
            )
        );
        assert_eq!(
            err(json!({"max_steps": "12"})),
            "RuntimeProfile.max_steps: must be int, got str"
        );
        assert_eq!(
            err(json!({"max_steps": true})),
            "RuntimeProfile.max_steps: must be int, got bool"
        );
        assert_eq!(
            err(json!({"name": 5})),
            "RuntimeProfile.name: must be str, got int"
        );
        assert_eq!(
            err(json!({"tool_allowlist": "Read"})),
            "RuntimeProfile.tool_allowlist: must be an iterable of tool names such as {'Read', 'Grep', 'Glob'}, not a single str"
        );
        assert_eq!(
            err(json!({"tool_allowlist": [1]})),
            "RuntimeProfile.tool_allowlist item: must be str, got int"
        );
        assert_eq!(
            err(json!({"recursive_subagents": 0})),
            "RuntimeProfile.recursive_subagents: must be bool, got int"
        );
        assert!(err(json!({"max_step": 3})).starts_with(
            "RuntimeProfile: has no option 'max_step'; options are: name, system_prompt,"
        ));
        let huge =
            explore_profile().with_fields(&[("max_steps".into(), Json::BigInt("1".repeat(30)))]);
        assert_eq!(
            huge.unwrap_err().to_string(),
            format!(
                "RuntimeProfile.max_steps: is out of range: {}",
                "1".repeat(30)
            )
        );
        assert_eq!(
            RuntimeProfile::from_fields(&[("name".into(), Json::Str("x".into()))])
                .unwrap_err()
                .to_string(),
            "RuntimeProfile.system_prompt: missing; a profile needs a name and a system prompt"
        );
        assert_eq!(
            format!("{}", explore_profile()),
            "RuntimeProfile(name='explore', tool_allowlist={'Glob', 'Grep', 'Read'}, max_steps=12, context_token_budget=16000, total_token_budget=32000, model_choice='light', result_contract='ExploreResult', gate_retries=1, on_budget_exhausted='partial', timeout_seconds=300.0, min_tool_calls=1, repo_map_hint=True, tool_result_format='json', scout_fallback=False)"
        );
    }
}
