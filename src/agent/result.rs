//! What a launch produced: the result a caller keeps, in one serialisable shape.

use std::path::PathBuf;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::Error;
use serde_json::{json, Value};

use crate::contract::{Repair, SubagentStatus, ToolUsage};
use crate::evidence::EvidenceCheck;
use crate::runner::{ParsedResult, TerminalReason};
use crate::schema::{CustomResult, OutputSchema};

/// The run id of every child (one run per child session, as in the reference).
pub(crate) const CHILD_RUN_ID: &str = "run-1";

wire_enum! {
    /// The model route a child actually used.
    pub enum ModelRoute as "model route" {
        /// The light model.
        Light = "light",
        /// The main model (also when light was asked for but none is configured).
        Main = "main",
        /// The offline scout (no model).
        Offline = "offline",
    }
}

/// What a launch produced.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
    #[serde(
        serialize_with = "serialize_parsed",
        deserialize_with = "deserialize_parsed"
    )]
    pub result: Option<ParsedResult>,
    /// The route used.
    pub model_used: ModelRoute,
    /// The model behind the route: the id sent in requests (`gpt-4.1-mini`), or, for a backend
    /// that sends none (a callable choosing its own model), its description
    /// (`python callable my_llm`).
    #[serde(default)]
    pub model_name: String,
    /// The task the child was given (the question asked).
    #[serde(default)]
    pub task: String,
    /// Why the child stopped: the reference's names; every failure is `runtime_error`, with the
    /// precise cause in `failure_reason`.
    pub terminal_reason: TerminalReason,
    /// What went wrong, on failure.
    pub error: Option<String>,
    /// Wall time of the launch.
    pub elapsed_ms: u64,
    /// Requested tool calls by name.
    pub tool_usage: ToolUsage,
    /// Tokens used (reported or estimated).
    pub token_usage: u64,
    /// Of those, prompt (input) tokens, summed over the model calls.
    pub input_tokens: u64,
    /// Of those, completion (output) tokens, summed over the model calls.
    pub output_tokens: u64,
    /// Of the input tokens, those the provider read from its prompt cache (billed at a
    /// discount), summed over the model calls; 0 when the provider does not say.
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// Whether some usage was estimated.
    pub usage_estimated: bool,
    /// The repair the gate made to the final answer, if any.
    pub repair: Option<Repair>,
    /// Model calls made.
    pub model_calls: u64,
    /// The child's JSONL trace, when written.
    pub trace_path: Option<PathBuf>,
    /// Why the child's trace file is missing or incomplete (it could not be created, or a write
    /// failed), when it is.
    pub trace_error: Option<String>,
    /// The precise terminal reason of a failed child (`timeout`, `model_error`, ...).
    pub failure_reason: Option<TerminalReason>,
    /// Evidence items that could not be grounded in the files (status `unverified`).
    pub ungrounded_evidence: Vec<EvidenceCheck>,
    /// The name of the caller's `output_schema` the result follows (its `title`, a pydantic
    /// class's name), when one was used; `result` is then the answer object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<String>,
    /// With an `output_schema`: the evidence the answer cited, kept beside the caller's object
    /// (which need not hold it), grounded like an `ExploreResult`'s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Vec<String>>,
    /// With an `output_schema`: how the answer did not fit it after the gate's retries (`result`
    /// is then the object as the child wrote it, not validated; the status is not `completed`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub schema_errors: Vec<String>,
    /// The schema itself, for a host that rebuilds the caller's type (not data: not kept by
    /// `to_dict()`).
    #[serde(skip)]
    pub schema: Option<OutputSchema>,
}

fn serialize_parsed<S: Serializer>(r: &Option<ParsedResult>, s: S) -> Result<S::Ok, S::Error> {
    parsed_value(r.as_ref()).serialize(s)
}

fn deserialize_parsed<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ParsedResult>, D::Error> {
    use serde::de::Error as _;
    let v = Value::deserialize(d)?;
    let json = crate::pyjson::Json::from_value(&v);
    Ok(Some(match &v {
        Value::Null => return Ok(None),
        Value::String(t) => ParsedResult::Text(t.clone()),
        Value::Object(m) if m.contains_key("verdict") => ParsedResult::Verification(
            crate::contract::VerificationResult::from_dict(&json).map_err(D::Error::custom)?,
        ),
        Value::Object(_) => ParsedResult::Explore(
            crate::contract::ExploreResult::from_dict(&json).map_err(D::Error::custom)?,
        ),
        other => {
            return Err(D::Error::custom(format!(
                "result must be a dict, a str or None, got {other}"
            )))
        }
    }))
}

/// The JSON form of a parsed result (a text answer is a string).
pub(crate) fn parsed_value(r: Option<&ParsedResult>) -> Value {
    match r {
        Some(ParsedResult::Explore(e)) => e.to_value(),
        Some(ParsedResult::Verification(v)) => v.to_value(),
        Some(ParsedResult::Custom(c)) => Value::Object(c.value.clone()),
        Some(ParsedResult::Text(t)) => json!(t),
        None => Value::Null,
    }
}

impl SubagentLaunchResult {
    /// Rebuild a result from its JSON form ([`SubagentLaunchResult::to_value`]); a bad or
    /// unknown key is refused by name.
    pub fn from_value(v: &Value) -> Result<Self, Error> {
        let bad = |e: String| Error::config("SubagentLaunchResult.from_dict data", e);
        // A result that followed a caller's schema holds that schema's object, which the
        // contracts' parse would refuse: it is rebuilt as the answer object it was.
        if let (Some(Value::String(name)), Some(Value::Object(answer))) =
            (v.get("output_schema"), v.get("result"))
        {
            let mut rest = v.clone();
            rest["result"] = Value::Null;
            let mut out = Self::deserialize(&rest).map_err(|e| bad(e.to_string()))?;
            let status = match out.status {
                SubagentStatus::Completed => SubagentStatus::Completed,
                _ => SubagentStatus::Partial,
            };
            out.result = Some(ParsedResult::Custom(CustomResult::restored(
                name,
                answer.clone(),
                out.evidence.clone().unwrap_or_default(),
                &out.schema_errors,
                status,
            )));
            return Ok(out);
        }
        Self::deserialize(v).map_err(|e| bad(e.to_string()))
    }

    /// The JSON form (`to_dict()` in Python).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// Tool calls the child requested, all tools together.
    pub fn tool_calls(&self) -> u64 {
        self.tool_usage.values().sum()
    }

    /// The verdict or status the child's own answer gave (`completed`, `PASS`, ...), for the
    /// parent's `subagent_completed` event.
    pub fn answer_verdict(&self) -> Value {
        match &self.result {
            Some(ParsedResult::Explore(r)) => json!(r.status.as_str()),
            Some(ParsedResult::Verification(v)) => json!(v.verdict.as_str()),
            Some(ParsedResult::Custom(c)) => json!(c.status.as_str()),
            Some(ParsedResult::Text(_)) => json!("completed"),
            None => Value::Null,
        }
    }
}

impl crate::args::Record for SubagentLaunchResult {
    fn from_record(data: &crate::pyjson::Json) -> Result<Self, Error> {
        Self::from_value(&data.to_value())
    }
}

impl std::fmt::Display for SubagentLaunchResult {
    /// A Python-style repr: `SubagentLaunchResult(status='completed', ...)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use crate::pyjson::py_repr_str as q;
        write!(
            f,
            "SubagentLaunchResult(status={}, profile_name={}, terminal_reason={}, model_used={}, model_name={}, tool_usage={}, token_usage={}, elapsed_ms={}",
            q(self.status.as_str()),
            q(&self.profile_name),
            q(self.terminal_reason.as_str()),
            q(self.model_used.as_str()),
            q(&self.model_name),
            crate::pyjson::py_repr_counts(&self.tool_usage),
            self.token_usage,
            self.elapsed_ms
        )?;
        if let Some(reason) = self.failure_reason {
            write!(f, ", failure_reason={}", q(reason.as_str()))?;
        }
        if let Some(e) = &self.error {
            write!(f, ", error={}", q(e))?;
        }
        f.write_str(")")
    }
}

impl ModelRoute {
    /// The route a backend reports for itself (`offline` for the scout), else the one chosen.
    pub fn reported(label: Option<&str>, chosen: ModelRoute) -> ModelRoute {
        label
            .and_then(|l| l.parse::<ModelRoute>().ok())
            .unwrap_or(chosen)
    }
}
