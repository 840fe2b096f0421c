//! `outrider.MainAgent`.

use pyo3::prelude::*;

use crate::api::CancelToken;
use crate::api::{MainAgent, MainAgentOptions};
use crate::py::convert::{dump, opt_float, opt_int, opt_str_list, path_arg, req_str, wrong_type};
use crate::py::launcher::{
    model_arg, retention_arg, routes_arg, trace_dir_arg, PySubagentLauncher,
};
use crate::py::observe::{event_sink, refresh_level};
use crate::py::runtime::finish;

/// A main agent with Read/Grep/Glob and the Task tool (see the stub).
#[pyclass(frozen, module = "outrider._core", name = "MainAgent")]
pub struct PyMainAgent {
    inner: std::sync::Arc<MainAgent>,
}

#[pymethods]
impl PyMainAgent {
    #[new]
    #[pyo3(signature = (project_root, llm, light_llm=None, *, launcher=None, trace_dir=None, subagent_types=None, max_steps=None, total_token_budget=None, context_token_budget=None, timeout_seconds=None, model=None, light_model=None, model_settings=None, trace_retention=None))]
    #[allow(clippy::too_many_arguments)]
    fn py_new(
        project_root: &Bound<'_, PyAny>,
        llm: &Bound<'_, PyAny>,
        light_llm: Option<&Bound<'_, PyAny>>,
        launcher: Option<&Bound<'_, PyAny>>,
        trace_dir: Option<&Bound<'_, PyAny>>,
        subagent_types: Option<&Bound<'_, PyAny>>,
        max_steps: Option<&Bound<'_, PyAny>>,
        total_token_budget: Option<&Bound<'_, PyAny>>,
        context_token_budget: Option<&Bound<'_, PyAny>>,
        timeout_seconds: Option<&Bound<'_, PyAny>>,
        model: Option<&Bound<'_, PyAny>>,
        light_model: Option<&Bound<'_, PyAny>>,
        model_settings: Option<&Bound<'_, PyAny>>,
        trace_retention: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        refresh_level(project_root.py());
        let launcher = match launcher.filter(|l| !l.is_none()) {
            Some(l) => Some(
                l.cast::<PySubagentLauncher>()
                    .map_err(|_| wrong_type("launcher", "an outrider.SubagentLauncher", l))?
                    .get()
                    .inner
                    .clone(),
            ),
            None => None,
        };
        let routes = routes_arg(model, light_model, model_settings, "model")?;
        let model = model_arg(Some(llm), "llm")?.ok_or_else(|| {
            wrong_type(
                "llm",
                "a model callable or an outrider.OpenAICompatible",
                llm,
            )
        })?;
        let options = MainAgentOptions {
            light_model: model_arg(light_llm, "light_llm")?,
            launcher,
            trace_dir: trace_dir_arg(trace_dir)?,
            subagent_types: opt_str_list(subagent_types, "subagent_types")?,
            max_steps: opt_int(max_steps, "max_steps")?,
            total_token_budget: opt_int(total_token_budget, "total_token_budget")?,
            context_token_budget: opt_int(context_token_budget, "context_token_budget")?,
            timeout_seconds: opt_float(timeout_seconds, "timeout_seconds")?,
            routes,
            trace_retention: retention_arg(trace_retention)?,
        };
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
        let run = |c| async move { agent.run_observed(&task, c, sink).await };
        finish(py, &CancelToken::new(), awaitable, run, |py, out| {
            Ok(dump(py, &out)?.unbind())
        })
    }

    fn __repr__(&self) -> String {
        format!("{:?}", self.inner)
    }
}
