//! What a caller asks for: one child's request, validated once, here.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::args::{Kwargs, Params};
use crate::error::Error;
use crate::profile::ModelChoice;
use crate::pyjson::{py_dumps, Json};
use crate::schema::OutputSchema;

/// The profile a request uses when it names none.
pub const DEFAULT_PROFILE: &str = "explore";

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

/// `SubagentRequest(...)`'s parameters, each of which may come by position or by name.
pub const REQUEST_PARAMS: Params = Params {
    owner: "SubagentRequest",
    names: &[
        "task",
        "profile_name",
        "structured_context",
        "model_choice",
        "parent_session_id",
        "parent_run_id",
        "output_schema",
    ],
    positional: 6,
    required: 0,
};

impl crate::args::Record for SubagentRequest {
    /// A request from `to_dict()` output, validated as the constructor validates.
    fn from_record(data: &Json) -> Result<Self, Error> {
        const WHAT: &str = "SubagentRequest.from_dict data";
        let Json::Object(items) = data else {
            return Err(Error::wrong_type(WHAT, "a dict", data.type_name()));
        };
        let k = Kwargs::new(WHAT, REQUEST_PARAMS.names, items.clone())?;
        RequestInit::from_kwargs(&k)?.build()
    }
}

impl RequestInit {
    /// From a constructor call's arguments ([`REQUEST_PARAMS`]); a value of the wrong type is
    /// refused naming its field (`SubagentRequest.task`).
    pub fn from_kwargs(k: &Kwargs) -> Result<Self, Error> {
        let read = || -> Result<Self, Error> {
            Ok(RequestInit {
                task: k.str("task")?,
                profile_name: k.str("profile_name")?,
                structured_context: Some(k.json("structured_context")?.clone()),
                model_choice: k.str("model_choice")?,
                parent_session_id: k.str("parent_session_id")?,
                parent_run_id: k.str("parent_run_id")?,
                output_schema: Some(k.json("output_schema")?.clone()),
            })
        };
        read().map_err(|e| e.within(REQUEST_PARAMS.owner))
    }

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
    fn from_a_call_by_position_and_by_name() {
        let call = |pos: Vec<Json>, named: Vec<(&str, Json)>| {
            let named = named.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
            Kwargs::bind(&REQUEST_PARAMS, pos, named)
                .and_then(|k| RequestInit::from_kwargs(&k))
                .and_then(RequestInit::build)
        };
        let by_position = call(
            vec![Json::Str("t".into()), Json::Str("verification".into())],
            vec![],
        );
        assert_eq!(by_position.unwrap().profile_name, "verification");
        let by_name = call(
            vec![],
            vec![
                ("task", Json::Str("t".into())),
                ("parent_run_id", Json::Str("r".into())),
            ],
        );
        assert_eq!(by_name.unwrap().parent_run_id.as_deref(), Some("r"));
        let msg = |r: Result<SubagentRequest, Error>| r.unwrap_err().to_string();
        assert_eq!(
            msg(call(vec![Json::Int(3)], vec![])),
            "SubagentRequest.task: must be str, got int"
        );
        assert_eq!(
            msg(call(vec![], vec![("model_choice", Json::Bool(true))])),
            "SubagentRequest.model_choice: must be str, got bool"
        );
        assert_eq!(
            msg(call(vec![], vec![])),
            "SubagentRequest.task: missing; pass the self-contained instructions for the child"
        );
        assert!(msg(call(vec![], vec![("tsk", Json::Str("t".into()))]))
            .starts_with("SubagentRequest: has no option 'tsk'; options are: task, profile_name"));
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
