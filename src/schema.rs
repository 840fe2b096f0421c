//! A caller's own result shape (`output_schema`): a JSON schema the child's final answer must
//! validate against, in place of `ExploreResult`.
//!
//! The schema is told to the child (in its system prompt), the completion gate checks each final
//! answer against it (after the same repairs, with the same bounded retries), and `evidence`
//! stays required and grounded by the same rules as an `ExploreResult`'s. Validation goes
//! through an [`AnswerValidator`]: the core's own [`JsonSchemaValidator`] (a full JSON-schema
//! validator, no Python needed) for a schema given as a dict, or a validator an embedding host
//! supplies (the Python binding's calls the user's pydantic class, so its own validators and
//! coercions are the rule).
//!
//! ```
//! use outrider::api::OutputSchema;
//! use serde_json::json;
//! let schema = OutputSchema::from_json_schema(&json!({
//!     "title": "Endpoints", "type": "object",
//!     "properties": {"routes": {"type": "array", "items": {"type": "string"}},
//!                    "evidence": {"type": "array", "items": {"type": "string"}}},
//!     "required": ["routes", "evidence"]
//! })).unwrap();
//! assert_eq!(schema.name(), "Endpoints");
//! let bad = schema.check(&json!({"routes": "GET /", "evidence": ["app.py:3"]})).unwrap_err();
//! assert_eq!(bad[0].to_string(), "routes: \"GET /\" is not of type \"array\"");
//! ```

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::contract::SubagentStatus;
use crate::error::Error;
use crate::pyjson::Json;

/// What an `output_schema` may be, for error messages.
pub const EXPECTED: &str = "a pydantic model class or a JSON-schema dict";

/// The name a schema without a `title` goes by in messages.
pub(crate) const UNTITLED: &str = "output_schema";

/// One way an answer does not fit the schema: where (`routes.0`, empty for the whole answer)
/// and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaViolation {
    /// Where in the answer, as dotted keys and indexes; empty for the whole object.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for SchemaViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.path.as_str() {
            "" => f.write_str(&self.message),
            path => write!(f, "{path}: {}", self.message),
        }
    }
}

/// Checks one answer object against a caller's schema.
pub trait AnswerValidator: Send + Sync {
    /// Nothing when `answer` fits; else every violation found (at least one).
    fn validate(&self, answer: &Value) -> Result<(), Vec<SchemaViolation>>;
    /// The validator itself, for a host that needs its own type back (the Python binding
    /// rebuilds the user's pydantic instance from its class).
    fn as_any(&self) -> &dyn Any;
    /// Whether `other` checks answers the same way (the same host class, say), so that two
    /// schemas built from the same class compare equal.
    fn same_as(&self, other: &dyn AnswerValidator) -> bool;
}

/// The core's validator: the JSON schema itself (draft 2020-12 unless `$schema` says otherwise;
/// formats are not asserted, as the specification's default is; no remote `$ref` is fetched).
pub(crate) struct JsonSchemaValidator {
    validator: jsonschema::Validator,
}

impl JsonSchemaValidator {
    /// Compile `schema`; an invalid schema is refused with the validator's reason.
    pub(crate) fn new(schema: &Value) -> Result<Self, Error> {
        let validator = jsonschema::options()
            .build(schema)
            .map_err(|e| Error::config(UNTITLED, format!("is not a valid JSON schema: {e}")))?;
        Ok(JsonSchemaValidator { validator })
    }
}

/// A JSON pointer (`/routes/0`) as dotted keys (`routes.0`).
fn dotted(pointer: &str) -> String {
    pointer
        .trim_start_matches('/')
        .split('/')
        .map(|p| p.replace("~1", "/").replace("~0", "~"))
        .collect::<Vec<_>>()
        .join(".")
}

impl AnswerValidator for JsonSchemaValidator {
    fn validate(&self, answer: &Value) -> Result<(), Vec<SchemaViolation>> {
        let found: Vec<SchemaViolation> = self
            .validator
            .iter_errors(answer)
            .map(|e| SchemaViolation {
                path: dotted(e.instance_path().as_str()),
                message: e.to_string(),
            })
            .collect();
        if found.is_empty() {
            Ok(())
        } else {
            Err(found)
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    /// Two schema validators agree when their schemas do (compared by [`OutputSchema`]).
    fn same_as(&self, other: &dyn AnswerValidator) -> bool {
        other.as_any().is::<JsonSchemaValidator>()
    }
}

/// A caller's result shape: the JSON schema (told to the child, shown in reprs, kept when
/// pickled), its name, and the validator the gate uses.
#[derive(Clone)]
pub struct OutputSchema {
    name: String,
    schema: Arc<Value>,
    validator: Arc<dyn AnswerValidator>,
}

impl OutputSchema {
    /// A schema given as a JSON-schema dict, validated by the core.
    pub fn from_json_schema(schema: &Value) -> Result<Self, Error> {
        check_shape(schema)?;
        let validator = Arc::new(JsonSchemaValidator::new(schema)?);
        Ok(Self::build(schema, validator))
    }

    /// [`OutputSchema::from_json_schema`] from a caller's value: a dict, or an error naming
    /// what was given instead.
    pub fn from_json(value: &Json) -> Result<Self, Error> {
        match value {
            Json::Object(_) => Self::from_json_schema(&value.to_value()),
            other => Err(Error::wrong_type(UNTITLED, EXPECTED, other.type_name())),
        }
    }

    /// A schema whose answers a host's `validator` checks (the schema is what the child is
    /// told; it must still describe an object with `evidence`).
    pub fn with_validator(
        schema: &Value,
        name: Option<&str>,
        validator: Arc<dyn AnswerValidator>,
    ) -> Result<Self, Error> {
        check_shape(schema)?;
        let mut out = Self::build(schema, validator);
        if let Some(n) = name.filter(|n| !n.trim().is_empty()) {
            out.name = n.to_string();
        }
        Ok(out)
    }

    fn build(schema: &Value, validator: Arc<dyn AnswerValidator>) -> Self {
        let name = schema
            .get("title")
            .and_then(Value::as_str)
            .filter(|t| !t.trim().is_empty())
            .unwrap_or(UNTITLED)
            .to_string();
        OutputSchema {
            name,
            schema: Arc::new(schema.clone()),
            validator,
        }
    }

    /// The schema's name: its `title` (a pydantic class's name), else `output_schema`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The JSON schema.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// The validator the gate uses.
    pub fn validator(&self) -> &Arc<dyn AnswerValidator> {
        &self.validator
    }

    /// Check one answer object: the schema, then outrider's own rule that `evidence` is a list
    /// of strings (required even when the schema gives it a default).
    pub fn check(&self, answer: &Value) -> Result<(), Vec<SchemaViolation>> {
        let mut found = match self.validator.validate(answer) {
            Ok(()) => Vec::new(),
            Err(v) => v,
        };
        let evidence_ok = matches!(answer.get("evidence"), Some(Value::Array(items)) if items.iter().all(Value::is_string));
        if !evidence_ok && !found.iter().any(|v| v.path.starts_with("evidence")) {
            found.push(SchemaViolation {
                path: "evidence".into(),
                message: "is required: a list of \"relative/path:line\" strings, each a line you saw in this run".into(),
            });
        }
        if found.is_empty() {
            Ok(())
        } else {
            Err(found)
        }
    }

    /// The answer section of the child's system prompt.
    pub fn prompt(&self) -> String {
        let schema = serde_json::to_string(&*self.schema).unwrap_or_default();
        format!(
            "Answer: exactly one JSON object, no fences, no other text, that validates against this JSON schema ({}):\n{schema}\nIts \"evidence\" is a list of \"<path>:<line>\" or \"<path>:<first>-<last>\" items, each a line a Read or Grep result showed you in this run; an answer that settles the task needs at least one.",
            self.name
        )
    }
}

/// An `output_schema` must describe an object with an `evidence` list.
fn check_shape(schema: &Value) -> Result<(), Error> {
    let Value::Object(map) = schema else {
        return Err(Error::wrong_type(
            UNTITLED,
            EXPECTED,
            Json::from_value(schema).type_name(),
        ));
    };
    match map.get("type") {
        None => {}
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => {
            return Err(Error::config(
                UNTITLED,
                format!(
                    "must describe a JSON object (\"type\": \"object\"), got \"type\": {other}"
                ),
            ))
        }
    }
    let evidence = map
        .get("properties")
        .and_then(Value::as_object)
        .and_then(|p| p.get("evidence"));
    let Some(evidence) = evidence else {
        return Err(Error::config(
            UNTITLED,
            "has no 'evidence' property; the child must cite what it saw: add \"evidence\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}} to \"properties\" (in pydantic: evidence: list[str])",
        ));
    };
    match evidence.get("type") {
        None => Ok(()),
        Some(Value::String(t)) if t == "array" => Ok(()),
        Some(other) => Err(Error::config(
            UNTITLED,
            format!("its 'evidence' property must be an array of \"path:line\" strings, got \"type\": {other}"),
        )),
    }
}

impl fmt::Debug for OutputSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OutputSchema({})", self.name)
    }
}

impl PartialEq for OutputSchema {
    /// The same schema checked by the same validator.
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.schema == other.schema
            && (Arc::ptr_eq(&self.validator, &other.validator)
                || self.validator.same_as(other.validator.as_ref()))
    }
}

impl std::hash::Hash for OutputSchema {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.name.hash(h);
        self.schema.to_string().hash(h);
    }
}

impl serde::Serialize for OutputSchema {
    /// The JSON schema (a host validator is not data: it is rebuilt as the schema's own).
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.schema.serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for OutputSchema {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let v = Value::deserialize(d)?;
        OutputSchema::from_json_schema(&v).map_err(D::Error::custom)
    }
}

/// An answer that met a caller's schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomResult {
    /// The schema's name.
    pub schema: String,
    /// The answer object, as validated.
    pub value: Map<String, Value>,
    /// Its `evidence` items.
    pub evidence: Vec<String>,
    /// `partial` when the answer says so in a `status` field, or outrider made it partial (see
    /// `notes`); else `completed`.
    pub status: SubagentStatus,
    /// Why outrider did not take the answer as completed, when it did not (the answer object
    /// itself is never changed).
    pub notes: Vec<String>,
}

impl CustomResult {
    /// From an answer object that passed [`OutputSchema::check`].
    pub fn new(schema: &OutputSchema, value: Map<String, Value>) -> Self {
        let evidence = match value.get("evidence") {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
            _ => Vec::new(),
        };
        let partial = value
            .get("status")
            .and_then(Value::as_str)
            .is_some_and(|s| s.trim().eq_ignore_ascii_case("partial"));
        CustomResult {
            schema: schema.name().to_string(),
            value,
            evidence,
            status: if partial {
                SubagentStatus::Partial
            } else {
                SubagentStatus::Completed
            },
            notes: Vec::new(),
        }
    }

    /// Rebuilt from a launch result's stored form (`to_dict()`), without a validator.
    pub fn restored(schema: &str, value: Map<String, Value>, status: SubagentStatus) -> Self {
        let evidence = match value.get("evidence") {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            _ => Vec::new(),
        };
        CustomResult {
            schema: schema.to_string(),
            value,
            evidence,
            status,
            notes: Vec::new(),
        }
    }

    /// The `summary` string of the answer, when it has one.
    pub fn summary(&self) -> Option<&str> {
        self.value.get("summary").and_then(Value::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"title": "Routes", "type": "object",
               "properties": {"routes": {"type": "array", "items": {"$ref": "#/$defs/Route"}},
                              "evidence": {"type": "array", "items": {"type": "string"}}},
               "required": ["routes"],
               "$defs": {"Route": {"type": "object", "properties": {"path": {"type": "string"}},
                                   "required": ["path"]}}})
    }

    #[test]
    fn answers_are_checked_with_refs_and_evidence_is_required() {
        let s = OutputSchema::from_json_schema(&schema()).unwrap();
        s.check(&json!({"routes": [{"path": "/"}], "evidence": ["a.py:1"]}))
            .unwrap();
        let bad = s.check(&json!({"routes": [{"p": 1}]})).unwrap_err();
        let shown: Vec<String> = bad.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "routes.0: \"path\" is a required property",
                "evidence: is required: a list of \"relative/path:line\" strings, each a line you saw in this run"
            ]
        );
        let not_strings = s
            .check(&json!({"routes": [], "evidence": [3]}))
            .unwrap_err();
        assert_eq!(not_strings.len(), 1, "{not_strings:?}");
        assert_eq!(not_strings[0].path, "evidence.0");
    }

    #[test]
    fn bad_schemas_are_refused_naming_what_was_expected() {
        let err = |v: Value| OutputSchema::from_json_schema(&v).unwrap_err().to_string();
        assert_eq!(
            OutputSchema::from_json(&Json::Str("x".into()))
                .unwrap_err()
                .to_string(),
            "output_schema: must be a pydantic model class or a JSON-schema dict, got str"
        );
        assert!(
            err(json!({"type": "object", "properties": {"summary": {"type": "string"}}}))
                .starts_with("output_schema: has no 'evidence' property")
        );
        assert_eq!(
            err(json!({"type": "array", "properties": {"evidence": {}}})),
            "output_schema: must describe a JSON object (\"type\": \"object\"), got \"type\": \"array\""
        );
        assert_eq!(
            err(json!({"properties": {"evidence": {"type": "string"}}})),
            "output_schema: its 'evidence' property must be an array of \"path:line\" strings, got \"type\": \"string\""
        );
        let invalid = err(json!({"properties": {"evidence": {"type": "array"}, "n": {"type": 5}}}));
        assert!(
            invalid.starts_with("output_schema: is not a valid JSON schema: "),
            "{invalid}"
        );
    }

    #[test]
    fn status_comes_from_the_answer_and_the_schema_round_trips() {
        let s = OutputSchema::from_json_schema(&schema()).unwrap();
        let Value::Object(m) =
            json!({"routes": [], "evidence": [" a.py:2 ", ""], "status": "Partial"})
        else {
            unreachable!()
        };
        let r = CustomResult::new(&s, m);
        assert_eq!(
            (r.status, r.evidence.clone()),
            (SubagentStatus::Partial, vec!["a.py:2".to_string()])
        );
        let back: OutputSchema = serde_json::from_value(serde_json::to_value(&s).unwrap()).unwrap();
        assert_eq!(back, s);
        assert!(s.prompt().contains("(Routes)") && s.prompt().contains("\"$defs\""));
    }
}
