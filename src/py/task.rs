//! `outrider.TaskTool`: the tool the main agent calls to delegate a read-only exploration.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::api::CancelToken;
use crate::api::{FactoryError, LauncherFactory, TaskTool, TASK_TOOL_NAME, TASK_TOOL_PARAMS};
use crate::py::convert::{dump, tool_args, type_name, wrong_type, Args};
use crate::py::launcher::PySubagentLauncher;
use crate::py::runtime::{finish, Plain};

/// The Task tool (see the stub for documentation).
#[pyclass(frozen, module = "outrider._core", name = "TaskTool")]
pub struct PyTaskTool {
    inner: Arc<TaskTool>,
}

/// A Python factory as the core's launcher factory (called with the GIL, on first use).
fn factory(callable: Py<PyAny>) -> LauncherFactory {
    Box::new(move || {
        Python::attach(|py| {
            let built = callable
                .bind(py)
                .call0()
                .map_err(|e| FactoryError::Raised {
                    kind: type_name(e.value(py).as_any()),
                    message: e.value(py).to_string(),
                })?;
            let launcher = built.cast::<PySubagentLauncher>();
            launcher
                .map(|l| l.get().inner.clone())
                .map_err(|_| FactoryError::WrongType(type_name(&built)))
        })
    })
}

#[pymethods]
impl PyTaskTool {
    #[new]
    #[pyo3(signature = (*args, **kwargs), text_signature = "(launcher, *, subagent_types=None)")]
    fn py_new(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let a = Args::bind(&TASK_TOOL_PARAMS, Some(args), kwargs)?;
        let launcher = a.req("launcher")?;
        let types = a.plain(&["launcher"])?.str_list("subagent_types")?;
        let inner = if let Ok(l) = launcher.cast::<PySubagentLauncher>() {
            TaskTool::new(l.get().inner.clone(), types)?
        } else if launcher.is_callable() {
            TaskTool::with_factory(factory(launcher.clone().unbind()), types)?
        } else {
            return Err(wrong_type(
                "TaskTool launcher",
                "an outrider.SubagentLauncher or a zero-argument factory returning one",
                launcher,
            ));
        };
        Ok(PyTaskTool {
            inner: Arc::new(inner),
        })
    }

    /// "Task".
    #[getter]
    fn name(&self) -> &'static str {
        TASK_TOOL_NAME
    }
    /// What the parent model reads: when to delegate and the boundaries.
    #[getter]
    fn description(&self) -> String {
        self.inner.description()
    }
    /// JSON schema of the arguments.
    #[getter]
    fn parameters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        dump(py, &self.inner.parameters())
    }
    /// The profiles reachable through this tool.
    #[getter]
    fn subagent_types(&self) -> Vec<String> {
        self.inner.reachable().to_vec()
    }
    /// `{"type": "function", "function": {name, description, parameters}}`.
    fn openai_schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        dump(py, &self.inner.openai_schema())
    }
    /// `{name, description, input_schema}`.
    fn anthropic_schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        dump(py, &self.inner.anthropic_schema())
    }
    /// `run`, `run_json` and `run_async` (`outrider._aio`): validate, launch, and return the
    /// envelope dict (never raises for bad arguments), blocking or as an asyncio future.
    fn _run(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyAny>,
        awaitable: bool,
    ) -> PyResult<Py<PyAny>> {
        let prepared = self.inner.prepare(tool_args(Some(args)));
        let run = |c| async move { Ok(Plain(prepared.run(c).await.to_value())) };
        finish(py, &CancelToken::new(), awaitable, run)
    }
    fn __repr__(&self) -> String {
        format!("{:?}", self.inner)
    }
}
