//! `outrider.TaskTool`: the tool the main agent calls to delegate a read-only exploration.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyString;
use serde_json::{json, Value};

use crate::launcher::SubagentLauncher;
use crate::py::convert::{str_iterable, to_json, type_name, value_to_py};
use crate::py::launcher::PySubagentLauncher;
use crate::py::runtime::{block_on, spawn_awaitable};
use crate::pyjson::Json;
use crate::runner::CancelToken;
use crate::task::{self, TASK_TOOL_NAME};
use crate::tools::envelope::{to_pretty_json, ErrorCode, ToolResult};

/// The Task tool (see the stub for documentation).
#[pyclass(frozen, module = "outrider._core", name = "TaskTool")]
pub struct PyTaskTool {
    launcher: Mutex<Option<Arc<SubagentLauncher>>>,
    factory: Option<Py<PyAny>>,
    reachable: Vec<String>,
}

enum Prepared {
    Ready(
        Arc<SubagentLauncher>,
        crate::launcher::SubagentRequest,
        Value,
    ),
    Done(ToolResult),
}

impl PyTaskTool {
    /// Validate, launch (blocking, GIL released) and build the envelope.
    fn envelope(&self, py: Python<'_>, args: &Bound<'_, PyAny>) -> PyResult<ToolResult> {
        match self.prepare(py, args) {
            Prepared::Done(r) => Ok(r),
            Prepared::Ready(l, req, params) => {
                let cancel = CancelToken::new();
                block_on(py, run_launch(l, req, params, cancel.clone()), Some(cancel))
            }
        }
    }

    fn check_reachable(&self, launcher: &SubagentLauncher) -> Result<(), String> {
        task::check_reachable(launcher, &self.reachable)
    }

    /// The launcher, building it from the factory on first use.
    fn launcher(&self, py: Python<'_>) -> Result<Arc<SubagentLauncher>, String> {
        if let Some(l) = self.launcher.lock().map_err(|e| e.to_string())?.as_ref() {
            return Ok(l.clone());
        }
        let factory = self.factory.as_ref().ok_or("TaskTool has no launcher")?;
        let built = factory.bind(py).call0().map_err(|e| {
            format!(
                "the launcher factory raised {}: {}",
                e.get_type(py)
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default(),
                e.value(py)
            )
        })?;
        let launcher = built
            .cast::<PySubagentLauncher>()
            .map_err(|_| {
                format!(
                    "the launcher factory returned {}, not an outrider.SubagentLauncher",
                    type_name(&built)
                )
            })?
            .get()
            .inner
            .clone();
        self.check_reachable(&launcher)?;
        *self.launcher.lock().map_err(|e| e.to_string())? = Some(launcher.clone());
        Ok(launcher)
    }

    fn prepare(&self, py: Python<'_>, args: &Bound<'_, PyAny>) -> Prepared {
        let (raw, parsed) = match args.cast::<PyString>() {
            Ok(s) => {
                let text = s.to_string();
                match crate::pyjson::parse(&text) {
                    Ok(j) => (Value::String(text), j),
                    Err(e) => {
                        return Prepared::Done(task::error_envelope(
                            ErrorCode::InvalidParam,
                            &format!("Task arguments must be a JSON object: {e}"),
                            &Value::String(text),
                        ))
                    }
                }
            }
            Err(_) => match to_json(args, "arguments") {
                Ok(j) => (j.to_value(), j),
                Err(e) => {
                    return Prepared::Done(task::error_envelope(
                        ErrorCode::InvalidParam,
                        &format!("Task arguments must be a JSON object: {}", e.value(py)),
                        &Value::String(args.repr().map(|r| r.to_string()).unwrap_or_default()),
                    ))
                }
            },
        };
        let params_input = if matches!(parsed, Json::Object(_)) {
            parsed.to_value()
        } else {
            raw
        };
        let valid = match task::validate(&parsed, &self.reachable) {
            Ok(v) => v,
            Err(msg) => {
                return Prepared::Done(task::error_envelope(
                    ErrorCode::InvalidParam,
                    &msg,
                    &params_input,
                ))
            }
        };
        match self.launcher(py) {
            Ok(l) => Prepared::Ready(l, valid.to_request(), params_input),
            Err(msg) => Prepared::Done(task::error_envelope(
                ErrorCode::InternalError,
                &format!("Task could not start: {msg}"),
                &params_input,
            )),
        }
    }
}

async fn run_launch(
    launcher: Arc<SubagentLauncher>,
    req: crate::launcher::SubagentRequest,
    params: Value,
    cancel: CancelToken,
) -> ToolResult {
    let started = Instant::now();
    match launcher.launch(req, cancel).await {
        Ok(r) => task::launch_envelope(&r, &params, started.elapsed().as_millis() as u64),
        Err(e) => task::error_envelope(ErrorCode::InvalidParam, &e.to_string(), &params),
    }
}

#[pymethods]
impl PyTaskTool {
    #[new]
    #[pyo3(signature = (launcher, *, subagent_types=None))]
    fn py_new(
        launcher: &Bound<'_, PyAny>,
        subagent_types: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let reachable = match subagent_types {
            Some(t) if !t.is_none() => {
                let mut names: Vec<String> = Vec::new();
                for n in str_iterable(t, "subagent_types")? {
                    let n = n.trim().to_lowercase();
                    if !names.contains(&n) {
                        names.push(n);
                    }
                }
                if names.is_empty() {
                    return Err(PyValueError::new_err(
                        "subagent_types must name at least one profile, e.g. ['explore']",
                    ));
                }
                names
            }
            _ => vec!["explore".to_string()],
        };
        let mut tool = PyTaskTool {
            launcher: Mutex::new(None),
            factory: None,
            reachable,
        };
        if let Ok(l) = launcher.cast::<PySubagentLauncher>() {
            let inner = l.get().inner.clone();
            tool.check_reachable(&inner)
                .map_err(PyValueError::new_err)?;
            tool.launcher = Mutex::new(Some(inner));
        } else if launcher.is_callable() {
            tool.factory = Some(launcher.clone().unbind());
        } else {
            return Err(PyTypeError::new_err(format!(
                "TaskTool needs an outrider.SubagentLauncher or a zero-argument factory returning one, got {}",
                type_name(launcher)
            )));
        }
        Ok(tool)
    }

    /// "Task".
    #[getter]
    fn name(&self) -> &'static str {
        TASK_TOOL_NAME
    }

    /// What the parent model reads: when to delegate and the boundaries.
    #[getter]
    fn description(&self) -> String {
        task::description(&self.reachable)
    }

    /// JSON schema of the arguments.
    #[getter]
    fn parameters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        value_to_py(py, &task::parameters(&self.reachable))
    }

    /// The profiles reachable through this tool.
    #[getter]
    fn subagent_types(&self) -> Vec<String> {
        self.reachable.clone()
    }

    /// `{"type": "function", "function": {name, description, parameters}}`.
    fn openai_schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        value_to_py(
            py,
            &json!({"type": "function", "function": {"name": TASK_TOOL_NAME, "description": task::description(&self.reachable), "parameters": task::parameters(&self.reachable)}}),
        )
    }

    /// `{name, description, input_schema}`.
    fn anthropic_schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        value_to_py(
            py,
            &json!({"name": TASK_TOOL_NAME, "description": task::description(&self.reachable), "input_schema": task::parameters(&self.reachable)}),
        )
    }

    /// Validate, launch, and return the envelope dict (never raises for bad arguments).
    fn run<'py>(&self, py: Python<'py>, args: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        value_to_py(py, &self.envelope(py, args)?.to_value())
    }

    /// `run`, serialised as the tool message content (JSON, indent 2, non-ASCII kept).
    fn run_json(&self, py: Python<'_>, args: &Bound<'_, PyAny>) -> PyResult<String> {
        Ok(to_pretty_json(&self.envelope(py, args)?.to_value()))
    }

    /// `run` from async code: an awaitable of the envelope dict.
    fn run_async<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let cancel = CancelToken::new();
        let fut = match self.prepare(py, args) {
            Prepared::Done(r) => {
                let v = r.to_value();
                return spawn_awaitable(py, async move { v }, cancel, |py, v| {
                    Ok(value_to_py(py, &v)?.unbind())
                });
            }
            Prepared::Ready(l, req, params) => run_launch(l, req, params, cancel.clone()),
        };
        spawn_awaitable(py, fut, cancel, |py, r| {
            Ok(value_to_py(py, &r.to_value())?.unbind())
        })
    }

    fn __repr__(&self) -> String {
        format!("TaskTool(subagent_types={:?})", self.reachable)
    }
}
