//! `outrider.TaskTool`: the tool the main agent calls to delegate a read-only exploration.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::api::CancelToken;
use crate::api::{EnvelopeFormat, FactoryError, LauncherFactory, TaskTool};
use crate::py::args::{envelope_format, Args, Params};
use crate::py::convert::{tool_args, type_name, wrong_type};
use crate::py::frozen_class;
use crate::py::launcher::PySubagentLauncher;
use crate::py::runtime::{finish, Plain};
use crate::py::schema::{output_schema_arg, output_schema_value};

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
                .map(|l| l.get().inner.inner.clone())
                .map_err(|_| FactoryError::WrongType(type_name(&built)))
        })
    })
}

/// `TaskTool(...)`'s parameters.
const TASK_TOOL_PARAMS: Params = Params {
    owner: "TaskTool",
    names: &[
        "launcher",
        "subagent_types",
        "reference_format",
        "output_schema",
    ],
    positional: 1,
    required: 1,
};

frozen_class! {
    /// The Task tool (see the stub for documentation).
    PyTaskTool(subclassed TaskTool) as "TaskTool",
    getters {
        /// "Task".
        name: &'static str = |t| t.name(),
        /// What the parent model reads: when to delegate and the boundaries.
        description: String = |t| t.description(),
        /// JSON schema of the arguments.
        parameters: Plain<serde_json::Value> = |t| Plain(t.parameters()),
        /// The profiles reachable through this tool.
        subagent_types: Vec<String> = |t| t.reachable().to_vec(),
        /// Whether envelopes follow the reference's format (indented, `context.params_input`).
        reference_format: bool = |t| t.format() == EnvelopeFormat::Reference,
    }
    #[new]
    #[pyo3(signature = (*args, **kwargs), text_signature = "(launcher, *, subagent_types=None, reference_format=False, output_schema=None)")]
    fn py_new(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let a = Args::bind(&TASK_TOOL_PARAMS, Some(args), kwargs)?;
        let launcher = a.req("launcher")?;
        let schema = output_schema_arg(a.get("output_schema"), "TaskTool.output_schema")?;
        let plain = a.plain(&["launcher", "output_schema"])?;
        let types = plain.str_list("subagent_types")?;
        let format = envelope_format(&plain)?;
        let inner = if let Ok(l) = launcher.cast::<PySubagentLauncher>() {
            TaskTool::new(l.get().inner.inner.clone(), types)?
        } else if launcher.is_callable() {
            TaskTool::with_factory(factory(launcher.clone().unbind()), types)?
        } else {
            return Err(wrong_type(
                "TaskTool launcher",
                "an outrider.SubagentLauncher or a zero-argument factory returning one",
                launcher,
            ));
        };
        Ok(PyTaskTool { inner: inner.with_format(format).with_output_schema(schema) })
    }
    /// The schema every child answers in (the pydantic class or the JSON-schema dict), when the
    /// tool names one.
    #[getter]
    fn output_schema<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        output_schema_value(py, self.inner.output_schema())
    }
    /// `{"type": "function", "function": {name, description, parameters}}`.
    fn openai_schema(&self) -> Plain<serde_json::Value> {
        Plain(self.inner.openai_schema())
    }
    /// `{name, description, input_schema}`.
    fn anthropic_schema(&self) -> Plain<serde_json::Value> {
        Plain(self.inner.anthropic_schema())
    }
    /// The native half of `run`, `run_json` and `run_async` (`outrider._entry`): validate,
    /// launch, and return the envelope dict (never raises for bad arguments), blocking or as an
    /// asyncio future.
    #[pyo3(signature = (args, awaitable, output_schema=None))]
    fn _run(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyAny>,
        awaitable: bool,
        output_schema: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let schema = output_schema_arg(output_schema, "output_schema")?;
        let prepared = self.inner.prepare_with(tool_args(Some(args)), schema);
        let run = |c| async move { Ok(Plain(prepared.run(c).await.to_value())) };
        finish(py, &CancelToken::new(), awaitable, run)
    }
}
