//! What a caller asks for: one child's request, validated once, here.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::Error;
use crate::profile::ModelChoice;
use crate::pyjson::{py_dumps, Json};
use crate::schema::OutputSchema;

/// The profile a request uses when it names none.
pub(crate) const DEFAULT_PROFILE: &str = "explore";

/// A request for one child (validated: a non-empty task, a known model choice).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SubagentRequest {
    /// Which profile (`explore`, `verification`, or a registered one).
    pub profile_name: String,
    /// The self-contained task.
    pub task: String,
    /// Extra context, rendered as sorted JSON after the task.
    pub structured_context: Map<String, Value>,
    /// The model route; None uses the profile's default.
    pub model_choice: Option<ModelChoice>,
    /// The parent's session id, for parent events.
    pub parent_session_id: Option<String>,
    /// The parent's run id, for parent events.
    pub parent_run_id: Option<String>,
    /// The parent model's tool call that asked for this child (a Task call), for parent events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<String>,
    /// The caller's own result shape for this child, in place of the profile's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<OutputSchema>,
}

/// The fields of a request as a caller gives them, before validation. Every field is optional
/// so that a missing one gets the same message from every front end.
#[derive(Debug, Clone, Default)]
pub struct RequestInit {
    /// Defaults to `explore`.
    pub profile_name: Option<String>,
    /// Required, non-blank.
    pub task: Option<String>,
    /// A JSON object, or None for no context.
    pub structured_context: Option<Json>,
    /// `light`, `main`, or None/empty for the profile's default.
    pub model_choice: Option<String>,
    /// The parent's session id.
    pub parent_session_id: Option<String>,
    /// The parent's run id.
    pub parent_run_id: Option<String>,
    /// A JSON-schema dict, or None for the profile's shape.
    pub output_schema: Option<Json>,
}

/// A request's fields as `to_dict()` gives them, in the constructor's order.
pub const REQUEST_FIELDS: [&str; 7] = [
    "task",
    "profile_name",
    "structured_context",
    "model_choice",
    "parent_session_id",
    "parent_run_id",
    "output_schema",
];

impl crate::args::Record for SubagentRequest {
    /// A request from `to_dict()` output, validated as the constructor validates.
    fn from_record(data: &Json) -> Result<Self, Error> {
        const WHAT: &str = "SubagentRequest.from_dict data";
        let Json::Object(items) = data else {
            return Err(Error::wrong_type(WHAT, "a dict", data.type_name()));
        };
        if let Some((bad, _)) = items
            .iter()
            .find(|(k, _)| !REQUEST_FIELDS.contains(&k.as_str()))
        {
            return Err(crate::args::unknown_option(WHAT, bad, &REQUEST_FIELDS));
        }
        let get = |key: &str| {
            items
                .iter()
                .find(|(k, _)| k == key)
                .map_or(&Json::Null, |(_, v)| v)
        };
        let text = |key: &str| match get(key) {
            Json::Null => Ok(None),
            Json::Str(s) => Ok(Some(s.clone())),
            other => Err(Error::wrong_type(
                format!("SubagentRequest.{key}"),
                "str",
                other.type_name(),
            )),
        };
        RequestInit {
            task: text("task")?,
            profile_name: text("profile_name")?,
            structured_context: Some(get("structured_context").clone()),
            model_choice: text("model_choice")?,
            parent_session_id: text("parent_session_id")?,
            parent_run_id: text("parent_run_id")?,
            output_schema: Some(get("output_schema").clone()),
        }
        .build()
    }
}

impl RequestInit {
    /// Validate into a request.
    pub fn build(self) -> Result<SubagentRequest, Error> {
        let task = self.task.ok_or_else(|| Error::Type {
            field: "SubagentRequest.task".into(),
            message: "missing; pass the self-contained instructions for the child".into(),
        })?;
        if task.trim().is_empty() {
            return Err(Error::config(
                "SubagentRequest.task",
                "must be a non-empty string: the self-contained instructions for the child",
            ));
        }
        let structured_context = match self.structured_context {
            None | Some(Json::Null) => Map::new(),
            Some(obj @ Json::Object(_)) => match obj.to_value() {
                Value::Object(m) => m,
                _ => Map::new(),
            },
            Some(other) => {
                return Err(Error::wrong_type(
                    "SubagentRequest.structured_context",
                    "a dict",
                    other.type_name(),
                ))
            }
        };
        let model_choice = match self.model_choice.as_deref() {
            None | Some("") => None,
            Some(m) => Some(
                m.parse()
                    .map_err(|_| crate::error::LaunchError::BadModelChoice(m.to_string()))?,
            ),
        };
        let profile_name = self
            .profile_name
            .unwrap_or_else(|| DEFAULT_PROFILE.to_string());
        if profile_name.trim().is_empty() {
            return Err(Error::config(
                "SubagentRequest.profile_name",
                "must name a profile, e.g. 'explore' (or be left out)",
            ));
        }
        let output_schema = match self.output_schema {
            None | Some(Json::Null) => None,
            Some(schema) => {
                Some(OutputSchema::from_json(&schema).map_err(|e| e.within("SubagentRequest"))?)
            }
        };
        Ok(SubagentRequest {
            profile_name,
            task,
            structured_context,
            model_choice,
            parent_session_id: self.parent_session_id,
            parent_run_id: self.parent_run_id,
            parent_tool_call_id: None,
            output_schema,
        })
    }
}

impl SubagentRequest {
    /// An explore request with no context.
    pub fn explore(task: impl Into<String>) -> Self {
        SubagentRequest {
            profile_name: DEFAULT_PROFILE.into(),
            task: task.into(),
            structured_context: Map::new(),
            model_choice: None,
            parent_session_id: None,
            parent_run_id: None,
            parent_tool_call_id: None,
            output_schema: None,
        }
    }

    /// The child's first user message: `<task>\n\nStructured context:\n<sorted JSON>`.
    pub fn render(&self) -> String {
        format!(
            "{}\n\nStructured context:\n{}",
            self.task.trim(),
            py_dumps(&Value::Object(self.structured_context.clone()), true)
        )
    }
}

impl std::fmt::Display for SubagentRequest {
    /// The Python repr (the task cut to 60 characters).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use crate::pyjson::py_repr_str as q;
        let mut task: String = self.task.chars().take(60).collect();
        if self.task.chars().count() > 60 {
            task.push('…');
        }
        let choice = self
            .model_choice
            .map_or("None".to_string(), |m| q(m.as_str()));
        write!(
            f,
            "SubagentRequest(profile_name={}, task={}, model_choice={choice}",
            q(&self.profile_name),
            q(&task)
        )?;
        if let Some(schema) = &self.output_schema {
            write!(f, ", output_schema={}", q(schema.name()))?;
        }
        f.write_str(")")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn init(task: &str) -> RequestInit {
        RequestInit {
            task: Some(task.into()),
            ..RequestInit::default()
        }
    }

    #[test]
    fn defaults_and_rendering() {
        let r = init("  Find X ").build().unwrap();
        assert_eq!(r, SubagentRequest::explore("  Find X "));
        assert_eq!(r.render(), "Find X\n\nStructured context:\n{}");
        let with_ctx = RequestInit {
            structured_context: Some(Json::from_value(&json!({"b": 1, "a": [true]}))),
            model_choice: Some("main".into()),
            ..init("t")
        }
        .build()
        .unwrap();
        assert_eq!(with_ctx.model_choice, Some(ModelChoice::Main));
        assert_eq!(
            with_ctx.render(),
            "t\n\nStructured context:\n{\"a\": [true], \"b\": 1}"
        );
        assert_eq!(
            serde_json::to_value(&with_ctx).unwrap(),
            json!({"profile_name": "explore", "task": "t", "structured_context": {"b": 1, "a": [true]},
                   "model_choice": "main", "parent_session_id": null, "parent_run_id": null})
        );
        let empty_choice = RequestInit {
            model_choice: Some(String::new()),
            ..init("t")
        };
        assert_eq!(empty_choice.build().unwrap().model_choice, None);
    }

    #[test]
    fn from_its_dict_each_field_checked_by_name() {
        use crate::args::Record;
        let from = |v: serde_json::Value| SubagentRequest::from_record(&Json::from_value(&v));
        let by_name = from(json!({"task": "t", "parent_run_id": "r"}));
        assert_eq!(by_name.unwrap().parent_run_id.as_deref(), Some("r"));
        let msg = |r: Result<SubagentRequest, Error>| r.unwrap_err().to_string();
        assert_eq!(
            msg(from(json!({"task": 3}))),
            "SubagentRequest.task: must be str, got int"
        );
        assert_eq!(
            msg(from(json!({"task": "t", "model_choice": true}))),
            "SubagentRequest.model_choice: must be str, got bool"
        );
        assert_eq!(
            msg(from(json!({}))),
            "SubagentRequest.task: missing; pass the self-contained instructions for the child"
        );
        assert!(msg(from(json!({"tsk": "t"}))).starts_with(
            "SubagentRequest.from_dict data: has no option 'tsk'; options are: task, profile_name"
        ));
    }

    #[test]
    fn every_refusal_names_the_field() {
        let msg = |i: RequestInit| i.build().unwrap_err().to_string();
        assert_eq!(
            msg(RequestInit::default()),
            "SubagentRequest.task: missing; pass the self-contained instructions for the child"
        );
        assert_eq!(
            msg(init(" \n")),
            "SubagentRequest.task: must be a non-empty string: the self-contained instructions for the child"
        );
        assert_eq!(
            msg(RequestInit {
                structured_context: Some(Json::Array(vec![])),
                ..init("t")
            }),
            "SubagentRequest.structured_context: must be a dict, got list"
        );
        assert_eq!(
            msg(RequestInit {
                model_choice: Some("heavy".into()),
                ..init("t")
            }),
            "unsupported subagent model choice: heavy (expected 'light' or 'main')"
        );
    }
}
