//! A caller's own result shape (`output_schema`): a JSON schema the child's final answer must
//! validate against, in place of `ExploreResult`.
//!
//! **The wire shape.** The child answers one flat JSON object: the caller's object, with
//! outrider's own two fields beside its fields. `evidence` (required: the `"path:line"` lines
//! the child saw, grounded by the same rules as an `ExploreResult`'s) and `status` (optional:
//! `completed`, `partial`, `not_found` or `failed`). A schema that declares a property of that
//! name at its top level shares it (its own validators then decide its value, and the value
//! they produce is the one the gate checks); a schema that does not has the field added to what
//! the child is told, and outrider takes it out of the object before the caller's validator
//! sees it (so `additionalProperties: false` or pydantic's `extra="forbid"` hold). The object
//! handed back is the caller's, as validated; the evidence is kept beside it.
//!
//! Validation goes through an [`AnswerValidator`]: the core's own [`JsonSchemaValidator`] (a
//! full JSON-schema validator, no Python needed) for a schema given as a dict, or a validator
//! an embedding host supplies (the Python binding's calls the user's pydantic class, so its
//! own validators and coercions are the rule, and keeps the instance that passed). The runner
//! calls [`OutputSchema::check`] on a thread of its own, bounded by the run's deadline (a
//! caller's validator may be slow, or never return); [`validator_running`] says, on that
//! thread, which schema it is checking, so that a host can refuse to launch from inside one.
//!
//! ```
//! use outrider::api::OutputSchema;
//! use serde_json::json;
//! let schema = OutputSchema::from_json_schema(&json!({
//!     "title": "Endpoints", "type": "object",
//!     "properties": {"routes": {"type": "array", "items": {"type": "string"}}},
//!     "required": ["routes"], "additionalProperties": false
//! })).unwrap();
//! assert_eq!(schema.name(), "Endpoints");
//! let answer = json!({"routes": ["GET /"], "evidence": ["app.py:3"], "status": "not_found"});
//! let checked = schema.check(answer.as_object().unwrap());
//! assert!(checked.fits());
//! assert_eq!(checked.value, *json!({"routes": ["GET /"]}).as_object().unwrap());
//! assert_eq!(checked.evidence, ["app.py:3"]);
//! assert_eq!(checked.status.as_str(), "partial");
//! let bad = schema.check(json!({"routes": "GET /", "evidence": ["app.py:3"]}).as_object().unwrap());
//! assert_eq!(bad.violations[0].to_string(), "routes: \"GET /\" is not of type \"array\"");
//! ```

use std::any::Any;
use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::contract::SubagentStatus;
use crate::error::Error;
use crate::pyjson::Json;

/// What an `output_schema` may be, for error messages.
pub const EXPECTED: &str = "a pydantic model class or a JSON-schema dict";

/// The name a schema without a `title` goes by in messages.
pub(crate) const UNTITLED: &str = "output_schema";

/// outrider's field for the lines the child cites.
pub const EVIDENCE_FIELD: &str = "evidence";
/// outrider's field for how far the answer got.
pub const STATUS_FIELD: &str = "status";

/// The statuses an answer may give in outrider's `status` field.
pub const ANSWER_STATUSES: [&str; 4] = ["completed", "partial", "not_found", "failed"];

/// The most violations of one answer that are listed (the rest are counted).
const MAX_VIOLATIONS: usize = 20;

/// What an `evidence` field must hold, as the child and the caller are told.
const EVIDENCE_RULE: &str =
    "is required: a list of \"relative/path:line\" strings, each a line you saw in this run";

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

/// A host's own object for a validated answer (the Python binding's pydantic instance), kept
/// so that the caller gets the very object that passed, never one validated again.
#[derive(Clone)]
pub struct HostObject(Arc<dyn Any + Send + Sync>);

impl HostObject {
    /// Wrap a host's object.
    pub fn new<T: Any + Send + Sync>(object: T) -> Self {
        HostObject(Arc::new(object))
    }

    /// The object, when it is a `T`.
    pub fn get<T: Any>(&self) -> Option<&T> {
        self.0.downcast_ref::<T>()
    }
}

impl fmt::Debug for HostObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HostObject(..)")
    }
}

/// What a validator hands back for an answer that fits.
#[derive(Debug, Clone)]
pub struct Validated {
    /// The object as validated, as JSON (a pydantic instance's `model_dump(mode="json")`): what
    /// the gate checks, and what `to_dict()` keeps.
    pub value: Value,
    /// The host's own object for it, handed back as is.
    pub object: Option<HostObject>,
}

/// Checks one answer object against a caller's schema.
pub trait AnswerValidator: Send + Sync {
    /// The object as validated when `answer` fits; else every violation found (at least one).
    fn validate(&self, answer: &Value) -> Result<Validated, Vec<SchemaViolation>>;
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
    /// Its `pattern`s run on the linear-time `regex` engine when they can (an answer cannot
    /// drive one into backtracking); a pattern that needs more (look-around, back-references)
    /// runs on `fancy-regex`, whose backtracking is bounded per match.
    pub(crate) fn new(schema: &Value) -> Result<Self, Error> {
        let linear = jsonschema::options()
            .with_pattern_options(jsonschema::PatternOptions::regex())
            .build(schema);
        let validator = match linear {
            Ok(v) => v,
            Err(_) => jsonschema::options()
                .build(schema)
                .map_err(|e| Error::config(UNTITLED, format!("is not a valid JSON schema: {e}")))?,
        };
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
    /// Stops at the first violations past those listed, or when the run's time is up (each
    /// `pattern` match is bounded by the regex engine's backtracking limit, but an answer of
    /// thousands of strings would still take minutes).
    fn validate(&self, answer: &Value) -> Result<Validated, Vec<SchemaViolation>> {
        let give_up = VALIDATING.with(|v| v.borrow().as_ref().and_then(|(_, by)| *by));
        let mut found = Vec::new();
        for e in self.validator.iter_errors(answer) {
            found.push(SchemaViolation {
                path: dotted(e.instance_path().as_str()),
                message: e.to_string(),
            });
            if found.len() > MAX_VIOLATIONS {
                break;
            }
            if give_up.is_some_and(|by| std::time::Instant::now() >= by) {
                found.push(SchemaViolation {
                    path: String::new(),
                    message: "the rest was not checked: the run's time ran out".into(),
                });
                break;
            }
        }
        if found.is_empty() {
            Ok(Validated {
                value: answer.clone(),
                object: None,
            })
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

thread_local! {
    /// The schema this thread is checking an answer against, while it does, and when the
    /// run's time is up.
    static VALIDATING: RefCell<Option<(String, Option<std::time::Instant>)>> = const { RefCell::new(None) };
}

/// Marks the current thread as checking an answer against `name` until dropped.
struct Validating;

impl Validating {
    fn start(name: &str, by: Option<std::time::Instant>) -> Self {
        VALIDATING.with(|v| *v.borrow_mut() = Some((name.to_string(), by)));
        Validating
    }
}

impl Drop for Validating {
    fn drop(&mut self) {
        VALIDATING.with(|v| *v.borrow_mut() = None);
    }
}

/// The name of the schema the current thread is checking an answer against, when it is inside
/// a caller's validator (which runs while its child waits for it).
pub fn validator_running() -> Option<String> {
    VALIDATING.with(|v| v.borrow().as_ref().map(|(name, _)| name.clone()))
}

/// The refusal of a launch from inside a caller's validator: the child that waits for the
/// validator holds its launcher's slot, so a launch from it would wait for itself.
pub fn refuse_inside_validator() -> Result<(), Error> {
    match validator_running() {
        None => Ok(()),
        Some(name) => Err(crate::error::LaunchError::OutputSchema(format!(
            "outrider was called from inside the validator of {} while it checks a child's answer; the child waits for its validator (and holds its launcher's slot), so a launch from there would wait for itself: validate the object without calling outrider",
            crate::pyjson::py_repr_str(&name)
        ))
        .into()),
    }
}

/// A caller's result shape: the JSON schema (shown in reprs, kept when pickled), its name, the
/// validator the gate uses, and which of outrider's fields it declares itself.
#[derive(Clone)]
pub struct OutputSchema {
    name: String,
    schema: Arc<Value>,
    validator: Arc<dyn AnswerValidator>,
    declares_evidence: bool,
    declares_status: bool,
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
    /// told, with outrider's fields added).
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
        let declared = |field: &str| root_properties(schema).is_some_and(|p| p.contains_key(field));
        OutputSchema {
            name,
            declares_evidence: declared(EVIDENCE_FIELD),
            declares_status: declared(STATUS_FIELD),
            schema: Arc::new(schema.clone()),
            validator,
        }
    }

    /// The schema's name: its `title` (a pydantic class's name), else `output_schema`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The JSON schema, as the caller gave it.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// The validator the gate uses.
    pub fn validator(&self) -> &Arc<dyn AnswerValidator> {
        &self.validator
    }

    /// Whether the caller's schema declares outrider's `evidence` field itself.
    pub fn declares_evidence(&self) -> bool {
        self.declares_evidence
    }

    /// The schema the child is told: the caller's, with outrider's `evidence` (required) and
    /// `status` (optional) among its top-level properties when it does not declare them.
    pub fn told(&self) -> Value {
        let mut told = (*self.schema).clone();
        let Value::Object(map) = &mut told else {
            return told;
        };
        let mut added = Map::new();
        if !self.declares_evidence {
            added.insert(
                EVIDENCE_FIELD.into(),
                json!({"type": "array", "items": {"type": "string"},
                       "description": "outrider's: the relative/path:line lines you saw that support the answer"}),
            );
        }
        if !self.declares_status {
            added.insert(
                STATUS_FIELD.into(),
                json!({"enum": ANSWER_STATUSES,
                       "description": "outrider's: completed (the default), partial, not_found or failed"}),
            );
        }
        if added.is_empty() {
            return told;
        }
        let properties = map
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(p) = properties {
            p.extend(added);
        }
        if !self.declares_evidence {
            match map.entry("required").or_insert_with(|| json!([])) {
                Value::Array(r) => r.push(json!(EVIDENCE_FIELD)),
                other => *other = json!([EVIDENCE_FIELD]),
            }
        }
        told
    }

    /// Check one answer object (its secrets already redacted): outrider's fields, then the
    /// caller's object (the answer without outrider's fields the schema does not declare)
    /// against the schema. Every violation is listed; the result fits when there is none. The
    /// evidence and status of a field the schema declares are the validated object's (what its
    /// validators made of them), else the answer's. Slow or hanging validators are the caller's
    /// to bound: the runner calls this on a thread of its own.
    pub fn check(&self, answer: &Map<String, Value>) -> CustomResult {
        self.check_until(answer, None)
    }

    /// [`OutputSchema::check`], the core's own validator giving up at `by` (a host's validator
    /// is the host's to bound).
    pub fn check_until(
        &self,
        answer: &Map<String, Value>,
        by: Option<std::time::Instant>,
    ) -> CustomResult {
        let _marked = Validating::start(&self.name, by);
        let mut found = Vec::new();
        let mut object = answer.clone();
        let own_evidence = if self.declares_evidence {
            answer.get(EVIDENCE_FIELD).cloned()
        } else {
            object.shift_remove(EVIDENCE_FIELD)
        };
        let own_status = if self.declares_status {
            answer.get(STATUS_FIELD).cloned()
        } else {
            object.shift_remove(STATUS_FIELD)
        };
        let validated = match self.validator.validate(&Value::Object(object.clone())) {
            Ok(v) => match v.value {
                Value::Object(map) => Some((map, v.object)),
                other => {
                    found.push(SchemaViolation {
                        path: String::new(),
                        message: format!(
                            "the validated object is not a JSON object: {}",
                            crate::pyjson::Json::from_value(&other).type_name()
                        ),
                    });
                    None
                }
            },
            Err(v) => {
                found.extend(v);
                None
            }
        };
        // A declared field is what the caller's validators made of it.
        let field = |name: &str, own: Option<Value>, declared: bool| match (&validated, declared) {
            (Some((map, _)), true) => map.get(name).cloned(),
            _ => own,
        };
        // The answer must give it (even when the schema has a default for it), as a list of
        // strings, before and after the caller's validators.
        let strings = |v: &Option<Value>| match v {
            Some(Value::Array(items)) if items.iter().all(Value::is_string) => Some(
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect::<Vec<_>>(),
            ),
            _ => None,
        };
        let given = strings(&own_evidence).is_some();
        let evidence = strings(&field(EVIDENCE_FIELD, own_evidence, self.declares_evidence));
        let evidence = match evidence {
            Some(items) if given => items,
            _ => {
                if !found.iter().any(|v| v.path.starts_with(EVIDENCE_FIELD)) {
                    found.push(SchemaViolation {
                        path: EVIDENCE_FIELD.into(),
                        message: EVIDENCE_RULE.into(),
                    });
                }
                Vec::new()
            }
        };
        let status = field(STATUS_FIELD, own_status, self.declares_status);
        let (status, note) = match answer_status(status.as_ref(), self.declares_status) {
            Ok(s) => s,
            Err(v) => {
                found.push(v);
                (SubagentStatus::Partial, None)
            }
        };
        // An answer with thousands of bad items is told (and kept) the first few of them.
        if found.len() > MAX_VIOLATIONS {
            found.truncate(MAX_VIOLATIONS);
            found.push(SchemaViolation {
                path: String::new(),
                message: format!(
                    "and more violations like these (only the first {MAX_VIOLATIONS} are listed)"
                ),
            });
        }
        let (value, host) = match validated {
            Some((map, host)) if found.is_empty() => (map, host),
            _ => (object, None),
        };
        let mut notes: Vec<String> = note.into_iter().collect();
        let status = if found.is_empty() {
            status
        } else {
            notes.push(format!(
                "outrider: the answer does not fit {}: {}",
                self.name,
                found
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
            SubagentStatus::Partial
        };
        CustomResult {
            schema: self.name.clone(),
            value,
            object: host,
            evidence,
            status,
            notes,
            violations: found,
        }
    }

    /// An answer that could not be checked (its validator did not finish, `why`), as written:
    /// the caller's fields, the evidence it cites, partial.
    pub fn unchecked(&self, answer: &Map<String, Value>, why: &str) -> CustomResult {
        let mut value = answer.clone();
        for (field, declared) in [
            (EVIDENCE_FIELD, self.declares_evidence),
            (STATUS_FIELD, self.declares_status),
        ] {
            if !declared {
                value.shift_remove(field);
            }
        }
        let evidence = match answer.get(EVIDENCE_FIELD) {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
            _ => Vec::new(),
        };
        CustomResult {
            schema: self.name.clone(),
            value,
            object: None,
            evidence,
            status: SubagentStatus::Partial,
            notes: Vec::new(),
            violations: vec![SchemaViolation {
                path: String::new(),
                message: why.to_string(),
            }],
        }
    }

    /// The answer section of the child's system prompt.
    pub fn prompt(&self) -> String {
        let schema = serde_json::to_string(&self.told()).unwrap_or_default();
        format!(
            "Answer: exactly one JSON object, no fences, no other text, that validates against this JSON schema ({}):\n{schema}\nIts \"evidence\" is a list of \"<path>:<line>\" or \"<path>:<first>-<last>\" items, each a line a Read or Grep result showed you in this run; an answer that settles the task needs at least one. Its \"status\" is \"completed\" when the object answers the task, else \"partial\", \"not_found\" or \"failed\".",
            self.name
        )
    }
}

/// The status an answer gives: outrider's field (`completed`, `partial`, `not_found` or
/// `failed`, any case; missing is `completed`), or the schema's own field of that name, whose
/// other values are the caller's vocabulary (taken as `completed`). `not_found` and `failed`
/// are honoured as `partial`, with a note saying so.
fn answer_status(
    status: Option<&Value>,
    declared: bool,
) -> Result<(SubagentStatus, Option<String>), SchemaViolation> {
    let word = match status {
        None | Some(Value::Null) => return Ok((SubagentStatus::Completed, None)),
        Some(Value::String(s)) => s.trim().to_lowercase().replace([' ', '-'], "_"),
        Some(_) if declared => return Ok((SubagentStatus::Completed, None)),
        Some(other) => String::from(match other {
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::Array(_) => "a list",
            _ => "an object",
        }),
    };
    match word.as_str() {
        "completed" | "complete" => Ok((SubagentStatus::Completed, None)),
        "partial" => Ok((SubagentStatus::Partial, None)),
        "not_found" | "notfound" | "failed" | "failure" | "error" => Ok((
            SubagentStatus::Partial,
            Some(format!(
                "outrider: the answer's own status is {}, so it is partial, not completed",
                crate::pyjson::py_repr_str(&word)
            )),
        )),
        _ if declared => Ok((SubagentStatus::Completed, None)),
        _ => Err(SchemaViolation {
            path: STATUS_FIELD.into(),
            message: format!(
                "must be one of \"completed\", \"partial\", \"not_found\" or \"failed\", got {}",
                match status {
                    Some(Value::String(s)) => format!("{s:?}"),
                    _ => word,
                }
            ),
        }),
    }
}

/// The top-level properties of a schema: its own `properties`, or, for a schema that is a local
/// reference (a recursive pydantic model: `{"$ref": "#/$defs/Node", "$defs": ...}`), those of
/// the definition it names.
fn root_properties(schema: &Value) -> Option<&Map<String, Value>> {
    let mut at = schema;
    for _ in 0..8 {
        if let Some(p) = at.get("properties").and_then(Value::as_object) {
            return Some(p);
        }
        let target = at.get("$ref")?.as_str()?.strip_prefix("#/")?;
        at = target.split('/').try_fold(schema, |v, part| {
            v.get(part.replace("~1", "/").replace("~0", "~"))
        })?;
    }
    None
}

/// An `output_schema` must describe an object; a top-level `evidence` property it declares is
/// outrider's list of citations, so it must be a list.
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
    let evidence = root_properties(schema).and_then(|p| p.get(EVIDENCE_FIELD));
    match evidence.and_then(|e| e.get("type")) {
        None => Ok(()),
        Some(Value::String(t)) if t == "array" => Ok(()),
        Some(other) => Err(Error::config(
            UNTITLED,
            format!("its 'evidence' property is outrider's list of \"path:line\" citations (leave it out, and outrider adds it), so it must be an array of strings, got \"type\": {other}"),
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

/// A child's answer checked against a caller's schema: the caller's object (as validated when
/// it fits, as written otherwise), and outrider's evidence and status beside it.
#[derive(Debug, Clone)]
pub struct CustomResult {
    /// The schema's name.
    pub schema: String,
    /// The caller's object: the validated one when the answer fits, else the answer as written
    /// (without outrider's fields the schema does not declare).
    pub value: Map<String, Value>,
    /// The host's own object that passed (the pydantic instance), when there is one.
    pub object: Option<HostObject>,
    /// The evidence items the answer cites.
    pub evidence: Vec<String>,
    /// `partial` when the answer says so (or `not_found`, `failed`), when it does not fit, or
    /// when outrider made it partial (see `notes`); else `completed`.
    pub status: SubagentStatus,
    /// Why outrider did not take the answer as completed, when it did not (the answer object
    /// itself is never changed).
    pub notes: Vec<String>,
    /// How the answer does not fit the schema (empty when it fits).
    pub violations: Vec<SchemaViolation>,
}

impl PartialEq for CustomResult {
    /// The same answer (a host object is compared by what it validated to).
    fn eq(&self, other: &Self) -> bool {
        self.schema == other.schema
            && self.value == other.value
            && self.evidence == other.evidence
            && self.status == other.status
            && self.notes == other.notes
            && self.violations == other.violations
    }
}

impl Eq for CustomResult {}

impl CustomResult {
    /// Whether the answer met the schema.
    pub fn fits(&self) -> bool {
        self.violations.is_empty()
    }

    /// How the answer does not fit, one line each (`routes: "GET /" is not of type "array"`).
    pub fn schema_errors(&self) -> Vec<String> {
        self.violations.iter().map(ToString::to_string).collect()
    }

    /// Rebuilt from a launch result's stored form (`to_dict()`), without a validator: the
    /// object, the evidence kept beside it, and the schema errors of an answer that did not fit.
    pub fn restored(
        schema: &str,
        value: Map<String, Value>,
        evidence: Vec<String>,
        schema_errors: &[String],
        status: SubagentStatus,
    ) -> Self {
        CustomResult {
            schema: schema.to_string(),
            value,
            object: None,
            evidence,
            status,
            notes: Vec::new(),
            violations: schema_errors
                .iter()
                .map(|e| SchemaViolation {
                    path: String::new(),
                    message: e.clone(),
                })
                .collect(),
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

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn answers_are_checked_with_refs_and_evidence_is_required() {
        let s = OutputSchema::from_json_schema(&schema()).unwrap();
        assert!(s
            .check(&obj(
                json!({"routes": [{"path": "/"}], "evidence": ["a.py:1"]})
            ))
            .fits());
        let bad = s.check(&obj(json!({"routes": [{"p": 1}]})));
        assert_eq!(
            bad.schema_errors(),
            [
                "routes.0: \"path\" is a required property",
                "evidence: is required: a list of \"relative/path:line\" strings, each a line you saw in this run"
            ]
        );
        // The raw object is kept, as partial, saying why.
        assert_eq!(bad.value, obj(json!({"routes": [{"p": 1}]})));
        assert_eq!(bad.status, SubagentStatus::Partial);
        assert!(bad.notes[0].starts_with("outrider: the answer does not fit Routes: routes.0"));
        let many = s.check(&obj(
            json!({"routes": vec![json!({}); 500], "evidence": []}),
        ));
        assert_eq!(many.violations.len(), MAX_VIOLATIONS + 1);
        assert_eq!(
            many.schema_errors().last().unwrap(),
            "and more violations like these (only the first 20 are listed)"
        );
        let not_strings = s.check(&obj(json!({"routes": [], "evidence": [3]})));
        assert_eq!(not_strings.violations.len(), 1, "{not_strings:?}");
        assert_eq!(not_strings.violations[0].path, "evidence.0");
    }

    #[test]
    fn a_schema_need_not_declare_evidence_or_status_and_forbidding_extras_still_holds() {
        let s = OutputSchema::from_json_schema(&json!({
            "title": "Summary", "type": "object",
            "properties": {"summary": {"type": "string"}},
            "required": ["summary"], "additionalProperties": false
        }))
        .unwrap();
        let told = s.told();
        assert_eq!(told["required"], json!(["summary", "evidence"]));
        assert_eq!(told["properties"]["status"]["enum"], json!(ANSWER_STATUSES));
        assert!(s.prompt().contains("\"evidence\":{\"type\":\"array\""));
        let r = s.check(&obj(
            json!({"summary": "s", "evidence": [" a.py:2 ", ""], "status": "Not Found"}),
        ));
        assert!(r.fits(), "{r:?}");
        assert_eq!(r.value, obj(json!({"summary": "s"})));
        assert_eq!(
            (r.status, r.evidence.clone()),
            (SubagentStatus::Partial, vec!["a.py:2".to_string()])
        );
        assert_eq!(
            r.notes,
            ["outrider: the answer's own status is 'not_found', so it is partial, not completed"]
        );
        // outrider's status takes its own words only; the evidence stays required.
        let bad = s.check(&obj(json!({"summary": "s", "status": "done"})));
        assert_eq!(
            bad.schema_errors(),
            [
                "evidence: is required: a list of \"relative/path:line\" strings, each a line you saw in this run",
                "status: must be one of \"completed\", \"partial\", \"not_found\" or \"failed\", got \"done\""
            ]
        );
    }

    #[test]
    fn a_declared_status_is_the_callers_and_failed_or_not_found_are_honoured() {
        let s = OutputSchema::from_json_schema(&json!({
            "type": "object",
            "properties": {"status": {"type": "string"}, "evidence": {"type": "array"}}
        }))
        .unwrap();
        let status = |word: &str| {
            let r = s.check(&obj(json!({"status": word, "evidence": ["a.py:1"]})));
            assert!(r.fits());
            assert_eq!(r.value["status"], json!(word), "the caller's field is kept");
            r.status
        };
        assert_eq!(status("failed"), SubagentStatus::Partial);
        assert_eq!(status("NOT_FOUND"), SubagentStatus::Partial);
        assert_eq!(status("partial"), SubagentStatus::Partial);
        assert_eq!(status("completed"), SubagentStatus::Completed);
        assert_eq!(status("open"), SubagentStatus::Completed);
    }

    #[test]
    fn patterns_run_linear_when_they_can_and_look_around_still_works() {
        let s = |pattern: &str| {
            OutputSchema::from_json_schema(&json!({
                "type": "object",
                "properties": {"names": {"type": "array", "items": {"type": "string", "pattern": pattern}}}
            }))
            .unwrap()
        };
        let names = |v: Value| obj(json!({"names": v, "evidence": []}));
        // Look-around needs the backtracking engine: it is still honoured.
        let ahead = s("^a+(?=b)");
        assert!(ahead.check(&names(json!(["aab"]))).fits());
        assert!(!ahead.check(&names(json!(["aa!"]))).fits());
        // A nested quantifier on a long non-match is linear, not exponential: a budget of
        // thousands of such strings is checked at once.
        let nested = s("^(a+)+$");
        let many: Vec<String> = (0..2000)
            .map(|i| format!("{}!{i}", "a".repeat(40)))
            .collect();
        let r = nested.check(&names(json!(many)));
        assert_eq!(r.violations.len(), MAX_VIOLATIONS + 1);
    }

    #[test]
    fn a_root_reference_is_followed_for_the_declared_fields() {
        let s = OutputSchema::from_json_schema(&json!({
            "$ref": "#/$defs/Node",
            "$defs": {"Node": {"type": "object", "properties": {"evidence": {"type": "array"}}}}
        }))
        .unwrap();
        assert!(s.declares_evidence());
        assert!(!s.told()["properties"]
            .as_object()
            .unwrap()
            .contains_key("evidence"));
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
            OutputSchema::from_json_schema(&json!({"type": "object"})).is_ok(),
            "no evidence property is needed"
        );
        assert_eq!(
            err(json!({"type": "array", "properties": {"evidence": {}}})),
            "output_schema: must describe a JSON object (\"type\": \"object\"), got \"type\": \"array\""
        );
        assert!(err(json!({"properties": {"evidence": {"type": "string"}}})).starts_with(
            "output_schema: its 'evidence' property is outrider's list of \"path:line\" citations"
        ));
        let invalid = err(json!({"properties": {"evidence": {"type": "array"}, "n": {"type": 5}}}));
        assert!(
            invalid.starts_with("output_schema: is not a valid JSON schema: "),
            "{invalid}"
        );
    }

    #[test]
    fn the_schema_round_trips_and_a_validator_thread_is_marked() {
        let s = OutputSchema::from_json_schema(&schema()).unwrap();
        let back: OutputSchema = serde_json::from_value(serde_json::to_value(&s).unwrap()).unwrap();
        assert_eq!(back, s);
        assert!(s.prompt().contains("(Routes)") && s.prompt().contains("\"$defs\""));
        assert!(refuse_inside_validator().is_ok());
        {
            let _marked = Validating::start("Routes", None);
            let e = refuse_inside_validator().unwrap_err().to_string();
            assert!(
                e.starts_with(
                    "output_schema: outrider was called from inside the validator of 'Routes'"
                ),
                "{e}"
            );
        }
        assert_eq!(validator_running(), None);
    }
}
