//! `outrider.MainAgent`.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::api::CancelToken;
use crate::api::{MainAgent, MainAgentOptions};
use crate::py::convert::{kwargs, path_arg, req_str, wrong_type};
use crate::py::launcher::{model_arg, trace_dir_arg, PySubagentLauncher};
use crate::py::observe::{event_sink, refresh_level};
use crate::py::runtime::{finish, Plain};

/// A main agent with Read/Grep/Glob and the Task tool (see the stub).
#[pyclass(frozen, module = "outrider._core", name = "MainAgent")]
pub struct PyMainAgent {
    inner: std::sync::Arc<MainAgent>,
}

#[pymethods]
impl PyMainAgent {
    #[new]
    #[pyo3(
        signature = (project_root, llm, light_llm=None, *, launcher=None, trace_dir=None, **options),
        text_signature = "(project_root, llm, light_llm=None, *, launcher=None, trace_dir=None, subagent_types=None, max_steps=None, total_token_budget=None, context_token_budget=None, timeout_seconds=None, model=None, light_model=None, model_settings=None, trace_retention=None)"
    )]
    fn py_new(
        project_root: &Bound<'_, PyAny>,
        llm: &Bound<'_, PyAny>,
        light_llm: Option<&Bound<'_, PyAny>>,
        launcher: Option<&Bound<'_, PyAny>>,
        trace_dir: Option<&Bound<'_, PyAny>>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        refresh_level(project_root.py());
        let mut options = MainAgentOptions::from_kwargs(&kwargs(
            "MainAgent",
            &MainAgentOptions::KWARGS,
            options,
        )?)?;
        let expected = "a model callable or an outrider.OpenAICompatible";
        let model = model_arg(Some(llm), "llm")?.ok_or_else(|| wrong_type("llm", expected, llm))?;
        options.light_model = model_arg(light_llm, "light_llm")?;
        options.trace_dir = trace_dir_arg(trace_dir)?;
        if let Some(l) = launcher.filter(|l| !l.is_none()) {
            let cast = l.cast::<PySubagentLauncher>();
            let cast =
                cast.map_err(|_| wrong_type("launcher", "an outrider.SubagentLauncher", l))?;
            options.launcher = Some(cast.get().inner.clone());
        }
        let root = path_arg(project_root, "project_root")?;
        Ok(PyMainAgent {
            inner: std::sync::Arc::new(MainAgent::new(&root, model, options)?),
        })
    }

    /// `run` and `run_async` (`outrider._aio`): the run's dict, blocking or as an asyncio future.
    fn _run(
        &self,
        py: Python<'_>,
        task: &Bound<'_, PyAny>,
        on_event: Option<&Bound<'_, PyAny>>,
        awaitable: bool,
    ) -> PyResult<Py<PyAny>> {
        let (task, agent, sink) = (
            req_str(task, "task")?,
            self.inner.clone(),
            event_sink(on_event)?,
        );
        let run = |c| async move { agent.run_observed(&task, c, sink).await.map(Plain) };
        finish(py, &CancelToken::new(), awaitable, run)
    }

    fn __repr__(&self) -> String {
        format!("{:?}", self.inner)
    }
}
