//! `outrider.OfflineScout`, `outrider.MainAgent`, and the completion verdict.

use std::sync::Arc;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use serde_json::{json, Value};

use crate::launcher::{LauncherConfig, SubagentLauncher};
use crate::llm::scout::OfflineScout;
use crate::llm::ChatModel;
use crate::main_agent::{main_profile, run_main_agent};
use crate::py::convert::{req_float, req_int, str_iterable, type_name, value_to_py};
use crate::py::launcher::{model_arg, trace_dir_arg, PySubagentLauncher};
use crate::py::runtime::block_on;
use crate::py::tools::workspace_arg;
use crate::runner::{CancelToken, ParsedResult};
use crate::trace::{new_child_id, prepare_trace_dir, Trace};
use crate::verify::CompletionVerdict;

/// The deterministic, model-free explorer (no LLM, no network).
#[pyclass(frozen, module = "outrider._core", name = "OfflineScout")]
pub struct PyOfflineScout;

#[pymethods]
impl PyOfflineScout {
    #[new]
    fn py_new() -> Self {
        PyOfflineScout
    }

    /// The search terms the scout would use for `task`.
    #[staticmethod]
    fn terms(task: &str) -> Vec<String> {
        crate::llm::scout::terms(task)
    }

    fn __repr__(&self) -> &'static str {
        "OfflineScout()"
    }
}

/// The scout as a model.
pub fn scout() -> Arc<dyn ChatModel> {
    Arc::new(OfflineScout)
}

/// The verdict of `SubagentLauncher.verify` (frozen).
#[pyclass(frozen, module = "outrider._core", name = "CompletionVerdict")]
pub struct PyCompletionVerdict {
    pub inner: CompletionVerdict,
    pub launch: Py<PyAny>,
}

#[pymethods]
impl PyCompletionVerdict {
    #[getter]
    fn verdict(&self) -> &'static str {
        self.inner.verdict
    }
    #[getter]
    fn reasons(&self) -> Vec<String> {
        self.inner.reasons.clone()
    }
    #[getter]
    fn feedback(&self) -> Option<String> {
        self.inner.feedback.clone()
    }
    /// The verification child's launch result.
    #[getter]
    fn launch(&self, py: Python<'_>) -> Py<PyAny> {
        self.launch.clone_ref(py)
    }
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        value_to_py(
            py,
            &serde_json::to_value(&self.inner).unwrap_or(Value::Null),
        )
    }
    fn __repr__(&self) -> String {
        format!(
            "CompletionVerdict(verdict='{}', reasons={:?}, feedback={:?})",
            self.inner.verdict, self.inner.reasons, self.inner.feedback
        )
    }
}

/// A main agent with Read/Grep/Glob and the Task tool (see the stub).
#[pyclass(frozen, module = "outrider._core", name = "MainAgent")]
pub struct PyMainAgent {
    model: Arc<dyn ChatModel>,
    light: Option<Arc<dyn ChatModel>>,
    workspace: crate::tools::workspace::Workspace,
    launcher: Option<Arc<SubagentLauncher>>,
    trace_dir: Option<std::path::PathBuf>,
    reachable: Vec<String>,
    max_steps: i64,
    total_token_budget: i64,
    context_token_budget: i64,
    timeout_seconds: f64,
}

#[pymethods]
impl PyMainAgent {
    #[new]
    #[pyo3(signature = (project_root, llm, light_llm=None, *, launcher=None, trace_dir=None, subagent_types=None, max_steps=None, total_token_budget=None, context_token_budget=None, timeout_seconds=None))]
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
    ) -> PyResult<Self> {
        let workspace = workspace_arg(project_root)?;
        let model = model_arg(llm, "llm")?;
        let light = match light_llm {
            Some(l) if !l.is_none() => Some(model_arg(l, "light_llm")?),
            _ => None,
        };
        let launcher = match launcher {
            Some(l) if !l.is_none() => Some(
                l.cast::<PySubagentLauncher>()
                    .map_err(|_| {
                        PyTypeError::new_err(format!(
                            "launcher must be an outrider.SubagentLauncher, got {}",
                            type_name(l)
                        ))
                    })?
                    .get()
                    .inner
                    .clone(),
            ),
            _ => None,
        };
        let trace_dir = trace_dir_arg(trace_dir)?;
        let trace_dir = match trace_dir {
            Some(d) => Some(
                prepare_trace_dir(&d, workspace.root())
                    .map_err(|e| PyValueError::new_err(e.to_string()))?,
            ),
            None => None,
        };
        let reachable = match subagent_types {
            Some(t) if !t.is_none() => str_iterable(t, "subagent_types")?,
            _ => vec!["explore".to_string()],
        };
        let agent = PyMainAgent {
            model,
            light,
            workspace,
            launcher,
            trace_dir,
            reachable,
            max_steps: max_steps
                .map(|v| req_int(v, "max_steps"))
                .transpose()?
                .unwrap_or(50),
            total_token_budget: total_token_budget
                .map(|v| req_int(v, "total_token_budget"))
                .transpose()?
                .unwrap_or(200_000),
            context_token_budget: context_token_budget
                .map(|v| req_int(v, "context_token_budget"))
                .transpose()?
                .unwrap_or(64_000),
            timeout_seconds: timeout_seconds
                .map(|v| req_float(v, "timeout_seconds"))
                .transpose()?
                .unwrap_or(1800.0),
        };
        main_profile(
            agent.max_steps,
            agent.total_token_budget,
            agent.context_token_budget,
            agent.timeout_seconds,
        )
        .validate_budgets()
        .map_err(|e| PyValueError::new_err(e.0))?;
        Ok(agent)
    }

    /// Run the main agent on `task` (GIL released; Ctrl-C cancels it and its children) and return
    /// `{final_text, terminal_reason, error, steps, model_calls, tool_usage, token_usage, trace_path}`.
    fn run<'py>(&self, py: Python<'py>, task: &str) -> PyResult<Bound<'py, PyAny>> {
        if task.trim().is_empty() {
            return Err(PyValueError::new_err("task must be a non-empty string"));
        }
        let session = format!("main-{}", new_child_id().trim_start_matches("child-"));
        let trace = Arc::new(match &self.trace_dir {
            Some(dir) => Trace::to_file(session.clone(), dir)
                .map_err(|e| PyValueError::new_err(format!("cannot write the trace: {e}")))?,
            None => Trace::in_memory(session.clone()),
        });
        let launcher = match &self.launcher {
            Some(l) => l.clone(),
            None => {
                let mut config = LauncherConfig::new(self.workspace.clone(), self.model.clone());
                config.light_model = self.light.clone();
                config.trace_dir = self.trace_dir.clone();
                config.parent_trace = Some(trace.clone());
                Arc::new(SubagentLauncher::new(config).map_err(PyValueError::new_err)?)
            }
        };
        let profile = main_profile(
            self.max_steps,
            self.total_token_budget,
            self.context_token_budget,
            self.timeout_seconds,
        );
        let cancel = CancelToken::new();
        let (model, ws, reachable, text) = (
            self.model.clone(),
            self.workspace.clone(),
            self.reachable.clone(),
            task.to_string(),
        );
        let t = trace.clone();
        let c = cancel.clone();
        let out = block_on(
            py,
            async move { run_main_agent(model, ws, launcher, profile, reachable, t, c, &text).await },
            Some(cancel),
        )?;
        let final_text = match &out.result {
            Some(ParsedResult::Text(t)) => Some(t.clone()),
            _ => out.final_text.clone(),
        };
        value_to_py(
            py,
            &json!({
                "session_id": session,
                "final_text": final_text,
                "terminal_reason": out.terminal_reason.as_str(),
                "error": out.error,
                "steps": out.steps,
                "model_calls": out.model_calls,
                "tool_usage": out.tool_usage,
                "token_usage": out.token_usage,
                "trace_path": trace.path().map(|p| p.display().to_string()),
            }),
        )
    }

    fn __repr__(&self) -> String {
        format!(
            "MainAgent(project_root='{}', llm={}, subagent_types={:?})",
            self.workspace.root().display(),
            self.model.describe(),
            self.reachable
        )
    }
}
