//! `outrider.MainAgent`.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::api::CancelToken;
use crate::api::MainAgent;
use crate::py::args::{main_agent_options, Args, Params};
use crate::py::convert::{req_str, wrong_type};
use crate::py::frozen_class;
use crate::py::launcher::{launcher_arg, model_arg};
use crate::py::observe::{event_sink, refresh_level};
use crate::py::runtime::{finish, Plain};

/// `MainAgent(...)`'s parameters.
const MAIN_AGENT_PARAMS: Params = Params {
    owner: "MainAgent",
    names: &[
        "project_root",
        "llm",
        "light_llm",
        "launcher",
        "trace_dir",
        "subagent_types",
        "max_steps",
        "total_token_budget",
        "context_token_budget",
        "timeout_seconds",
        "model",
        "light_model",
        "model_settings",
        "trace_retention",
    ],
    positional: 3,
    required: 2,
};

frozen_class! {
    /// A main agent with Read/Grep/Glob and the Task tool (see the stub).
    PyMainAgent(subclassed std::sync::Arc<MainAgent>) as "MainAgent",
    getters {}
    #[new]
    #[pyo3(
        signature = (*args, **kwargs),
        text_signature = "(project_root, llm, light_llm=None, *, launcher=None, trace_dir=None, subagent_types=None, max_steps=None, total_token_budget=None, context_token_budget=None, timeout_seconds=None, model=None, light_model=None, model_settings=None, trace_retention=None)"
    )]
    fn py_new(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        refresh_level(args.py());
        let a = Args::bind(&MAIN_AGENT_PARAMS, Some(args), kwargs)?;
        let plain = a.plain(&["llm", "light_llm", "launcher"])?;
        let mut options = main_agent_options(&plain)?;
        let (expected, llm) = (
            "a model callable or an outrider.OpenAICompatible",
            a.req("llm")?,
        );
        let home = crate::py::model::new_home(args.py())?;
        let main = ("model", &mut options.routes.main_model);
        let model = model_arg(Some(llm), "llm", main, &home)?.ok_or_else(|| wrong_type("llm", expected, llm))?;
        let light = ("light_model", &mut options.routes.light_model);
        options.light_model = model_arg(a.get("light_llm"), "light_llm", light, &home)?;
        options.launcher = a.get("launcher").map(launcher_arg).transpose()?;
        let root = plain.req_path("project_root")?;
        Ok(PyMainAgent {
            inner: std::sync::Arc::new(MainAgent::new(&root, model, options)?),
        })
    }

    /// The native half of `run` and `run_async` (`outrider._entry`): the run's dict, blocking or
    /// as an asyncio future.
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
}
