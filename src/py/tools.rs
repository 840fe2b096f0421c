//! `outrider.run_tool`: one read-only tool call, the envelope the model would see.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyString;
use serde_json::Value;

use crate::py::convert::{to_json, type_name, value_to_py};
use crate::tools::budget::OutputBudget;
use crate::tools::context::ToolContext;
use crate::tools::envelope::{ErrorCode, ToolResult};
use crate::tools::permissions::{PermissionContext, RuntimeMode};
use crate::tools::registry::ToolRegistry;
use crate::tools::workspace::Workspace;

/// Parse a root argument (str or os.PathLike) into a workspace, or raise a clear error.
pub fn workspace_arg(root: &Bound<'_, PyAny>) -> PyResult<Workspace> {
    let path: std::path::PathBuf = root.extract().map_err(|_| {
        PyTypeError::new_err(format!(
            "root must be a str or os.PathLike, got {}",
            type_name(root)
        ))
    })?;
    Workspace::new(&path).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Run one tool under `root` and return its envelope dict. Bad arguments give an error envelope.
#[pyfunction]
#[pyo3(signature = (root, name, arguments=None, *, runtime_mode="readonly_subagent", timeout=None))]
pub fn run_tool<'py>(
    py: Python<'py>,
    root: &Bound<'py, PyAny>,
    name: &Bound<'py, PyAny>,
    arguments: Option<&Bound<'py, PyAny>>,
    runtime_mode: &str,
    timeout: Option<f64>,
) -> PyResult<Bound<'py, PyAny>> {
    let workspace = workspace_arg(root)?;
    let name: String = name
        .cast::<PyString>()
        .map_err(|_| {
            PyTypeError::new_err(format!(
                "name must be a tool name (str), got {}",
                type_name(name)
            ))
        })?
        .to_string();
    let mode: RuntimeMode =
        runtime_mode
            .parse()
            .map_err(|e: crate::tools::permissions::UnknownRuntimeMode| {
                PyValueError::new_err(e.to_string())
            })?;
    let mut ctx = ToolContext::new(workspace);
    if let Some(t) = timeout {
        if !(t.is_finite() && t > 0.0) {
            return Err(PyValueError::new_err(format!(
                "timeout must be a positive number of seconds, got {t}"
            )));
        }
        ctx = ctx.with_timeout(std::time::Duration::from_secs_f64(t));
    }
    enum Args {
        Text(String),
        Value(Value),
        Bad(Value, String),
    }
    let args = match arguments {
        None => Args::Value(Value::Null),
        Some(a) if a.is_none() => Args::Value(Value::Null),
        Some(a) => match a.cast::<PyString>() {
            Ok(s) => Args::Text(s.to_string()),
            Err(_) => match to_json(a, "arguments") {
                Ok(j) => Args::Value(j.to_value()),
                Err(e) => Args::Bad(
                    Value::String(a.repr().map(|r| r.to_string()).unwrap_or_default()),
                    e.value(py).to_string(),
                ),
            },
        },
    };
    let permissions = PermissionContext::new(mode);
    let envelope = py.detach(move || {
        let registry = ToolRegistry::readonly();
        let result = match &args {
            Args::Text(t) => registry.execute(&name, t, &ctx, &permissions),
            Args::Value(v) => registry.execute(&name, v, &ctx, &permissions),
            Args::Bad(echo, msg) => ToolResult::error(
                echo,
                ErrorCode::InvalidParam,
                format!("Tool arguments must be a JSON object: {msg}"),
                0,
            ),
        };
        OutputBudget::default().apply(&name, result).to_value()
    });
    value_to_py(py, &envelope)
}

/// The JSON schemas of the read-only tools, in OpenAI or Anthropic tool format.
#[pyfunction]
#[pyo3(signature = (format="openai", names=None))]
pub fn tool_schemas<'py>(
    py: Python<'py>,
    format: &str,
    names: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let mut registry = ToolRegistry::readonly();
    if let Some(n) = names.filter(|n| !n.is_none()) {
        let wanted = crate::py::convert::str_iterable(n, "names")?;
        let known = registry
            .names()
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>();
        if let Some(bad) = wanted.iter().find(|w| !known.contains(w)) {
            return Err(PyValueError::new_err(format!(
                "unknown tool {}; the read-only tools are {}",
                crate::pyjson::py_repr_str(bad),
                known.join(", ")
            )));
        }
        registry = registry.filtered(wanted);
    }
    let schemas = match format {
        "openai" => registry.openai_tools(),
        "anthropic" => registry.anthropic_tools(),
        other => {
            return Err(PyValueError::new_err(format!(
                "format must be 'openai' or 'anthropic', got {}",
                crate::pyjson::py_repr_str(other)
            )))
        }
    };
    value_to_py(py, &Value::Array(schemas))
}
