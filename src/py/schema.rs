//! `output_schema` arguments: a JSON-schema dict (checked by the core) or a pydantic model class
//! (its answers checked by pydantic itself, so the class's own validators are the rule), and
//! the answers given back as the class's instances.

use std::any::Any;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyType};

use crate::api::{
    AnswerValidator, CustomResult, Error, HostObject, OutputSchema, SchemaViolation, Validated,
    OUTPUT_SCHEMA_EXPECTED,
};
use crate::py::convert::{to_json, type_name, wrong_type};
use crate::py::enter::attach;

/// Answers checked by a pydantic model class (`model_validate_json` on the answer's JSON).
pub(super) struct PydanticValidator {
    /// The class.
    pub class: Py<PyAny>,
}

impl PydanticValidator {
    /// An instance of the class from an answer that met it.
    pub(super) fn instance<'py>(
        &self,
        py: Python<'py>,
        answer: &serde_json::Value,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.class
            .bind(py)
            .call_method1("model_validate_json", (answer.to_string(),))
    }
}

/// A pydantic `ValidationError`'s errors as violations (`loc` dotted, `msg`).
fn violations(py: Python<'_>, err: &PyErr) -> Vec<SchemaViolation> {
    let value = err.value(py);
    let listed = value
        .call_method0("errors")
        .ok()
        .and_then(|e| e.extract::<Vec<Bound<'_, PyDict>>>().ok());
    let Some(items) = listed.filter(|l| !l.is_empty()) else {
        return vec![SchemaViolation {
            path: String::new(),
            message: format!(
                "the model's validation raised {}: {value}",
                type_name(value.as_any())
            ),
        }];
    };
    items
        .iter()
        .map(|e| {
            let path = e
                .get_item("loc")
                .ok()
                .flatten()
                .and_then(|l| l.extract::<Vec<Bound<'_, PyAny>>>().ok())
                .unwrap_or_default()
                .iter()
                .map(|p| p.str().map(|s| s.to_string()).unwrap_or_default())
                .collect::<Vec<_>>()
                .join(".");
            let message = e
                .get_item("msg")
                .ok()
                .flatten()
                .and_then(|m| m.extract::<String>().ok())
                .unwrap_or_else(|| "is not valid".into());
            SchemaViolation { path, message }
        })
        .collect()
}

/// The instance that passed, and its JSON form (`model_dump(mode="json", by_alias=True)`): what
/// the gate checks is what the caller gets.
fn validated(
    py: Python<'_>,
    instance: Bound<'_, PyAny>,
) -> Result<Validated, Vec<SchemaViolation>> {
    let kwargs = PyDict::new(py);
    // By alias, as the schema the child was told names the fields.
    let dumped = kwargs
        .set_item("mode", "json")
        .and_then(|()| kwargs.set_item("by_alias", true))
        .and_then(|()| instance.call_method("model_dump", (), Some(&kwargs)))
        .and_then(|d| to_json(&d, "model_dump()"));
    match dumped {
        Ok(value) => Ok(Validated {
            value: value.to_value(),
            object: Some(HostObject::new(instance.unbind())),
        }),
        Err(e) => Err(vec![SchemaViolation {
            path: String::new(),
            message: format!(
                "the validated object cannot be written as JSON (model_dump(mode=\"json\") raised {}: {})",
                type_name(e.value(py).as_any()),
                e.value(py)
            ),
        }]),
    }
}

impl AnswerValidator for PydanticValidator {
    fn validate(&self, answer: &serde_json::Value) -> Result<Validated, Vec<SchemaViolation>> {
        let checked = attach(|py| match self.instance(py, answer) {
            Ok(instance) => validated(py, instance),
            Err(e) => Err(violations(py, &e)),
        });
        checked.unwrap_or_else(|| {
            Err(vec![SchemaViolation {
                path: String::new(),
                message: "cannot be checked: the Python interpreter is exiting".into(),
            }])
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    /// The same class (compared by identity; no GIL needed).
    fn same_as(&self, other: &dyn AnswerValidator) -> bool {
        other
            .as_any()
            .downcast_ref::<PydanticValidator>()
            .is_some_and(|o| o.class.as_ptr() == self.class.as_ptr())
    }
}

/// Whether `obj` is a pydantic model class (a class with `model_json_schema` and
/// `model_validate_json`).
fn is_model_class(obj: &Bound<'_, PyAny>) -> bool {
    obj.is_instance_of::<PyType>()
        && obj.hasattr("model_json_schema").unwrap_or(false)
        && obj.hasattr("model_validate_json").unwrap_or(false)
}

/// An `output_schema` argument (`what` names it: `SubagentRequest.output_schema`); None or
/// Python None for none.
pub(super) fn output_schema_arg(
    obj: Option<&Bound<'_, PyAny>>,
    what: &str,
) -> PyResult<Option<OutputSchema>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    let owner = what.rsplit_once('.').map_or("", |(o, _)| o);
    let named = |e: Error| -> PyErr {
        if owner.is_empty() {
            e.into()
        } else {
            e.within(owner).into()
        }
    };
    if obj.is_instance_of::<PyDict>() {
        let schema = to_json(obj, what)?;
        return OutputSchema::from_json(&schema).map(Some).map_err(named);
    }
    if is_model_class(obj) {
        let schema = obj.call_method0("model_json_schema").map_err(|e| {
            Error::config(
                what,
                format!(
                    "{}.model_json_schema() raised {}: {}",
                    obj.getattr("__name__")
                        .map(|n| n.to_string())
                        .unwrap_or_default(),
                    type_name(e.value(obj.py()).as_any()),
                    e.value(obj.py())
                ),
            )
        })?;
        let schema = to_json(&schema, what)?.to_value();
        let name = obj.getattr("__name__")?.extract::<String>().ok();
        let validator = Arc::new(PydanticValidator {
            class: obj.clone().unbind(),
        });
        return OutputSchema::with_validator(&schema, name.as_deref(), validator)
            .map(Some)
            .map_err(named);
    }
    if obj.hasattr("model_json_schema").unwrap_or(false) && !obj.is_instance_of::<PyType>() {
        return Err(Error::wrong_type(
            what,
            &format!("{OUTPUT_SCHEMA_EXPECTED} (pass the class itself, not an instance of it)"),
            &type_name(obj),
        )
        .into());
    }
    Err(wrong_type(what, OUTPUT_SCHEMA_EXPECTED, obj))
}

/// The schema as the caller gave it: the pydantic class, or the JSON-schema dict.
pub(super) fn output_schema_value<'py>(
    py: Python<'py>,
    schema: Option<&OutputSchema>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let Some(schema) = schema else {
        return Ok(None);
    };
    if let Some(p) = schema
        .validator()
        .as_any()
        .downcast_ref::<PydanticValidator>()
    {
        return Ok(Some(p.class.bind(py).clone()));
    }
    crate::py::convert::dump(py, schema.schema()).map(Some)
}

/// A schema answer as the caller's type: the very instance of its pydantic class that passed
/// the gate (never validated again), else the object as a dict (a JSON schema's, one that did
/// not fit, or one rebuilt by `from_dict` or a pickle).
pub(super) fn answer_object<'py>(
    py: Python<'py>,
    answer: &CustomResult,
) -> PyResult<Bound<'py, PyAny>> {
    if let Some(instance) = answer.object.as_ref().and_then(|o| o.get::<Py<PyAny>>()) {
        return Ok(instance.bind(py).clone());
    }
    crate::py::convert::dump(py, &serde_json::Value::Object(answer.value.clone()))
}
