//! `SubagentRequest`, `SubagentLaunchResult` and `SubagentLauncher` for Python.

use std::collections::BTreeMap;
use std::sync::Arc;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList};
use serde_json::{json, Map, Value};

use crate::launcher::{LauncherConfig, SubagentLaunchResult, SubagentLauncher, SubagentRequest};
use crate::llm::ChatModel;
use crate::profile::RuntimeProfile;
use crate::py::contract::{PyExploreResult, PyVerificationResult};
use crate::py::convert::{req_str, to_json, type_name, value_to_py};
use crate::py::model::PyCallableModel;
use crate::py::profile::PyRuntimeProfile;
use crate::py::runtime::{block_on, spawn_awaitable};
use crate::py::tools::workspace_arg;
use crate::runner::{CancelToken, ParsedResult};
use crate::trace::{default_trace_dir, Trace};

/// A request for one child (frozen).
#[pyclass(frozen, module = "outrider._core", name = "SubagentRequest")]
pub struct PySubagentRequest {
    pub inner: SubagentRequest,
}

fn opt_str(obj: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<String>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => req_str(o, what).map(Some),
    }
}

#[pymethods]
impl PySubagentRequest {
    #[new]
    #[pyo3(signature = (profile_name=None, task=None, structured_context=None, model_choice=None, parent_session_id=None, parent_run_id=None))]
    fn py_new(
        profile_name: Option<&Bound<'_, PyAny>>,
        task: Option<&Bound<'_, PyAny>>,
        structured_context: Option<&Bound<'_, PyAny>>,
        model_choice: Option<&Bound<'_, PyAny>>,
        parent_session_id: Option<&Bound<'_, PyAny>>,
        parent_run_id: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let profile_name = opt_str(profile_name, "SubagentRequest.profile_name")?
            .unwrap_or_else(|| "explore".into());
        let task = match task {
            Some(t) => req_str(t, "SubagentRequest.task")?,
            None => return Err(PyTypeError::new_err(
                "SubagentRequest.task is required: the self-contained instructions for the child",
            )),
        };
        if task.trim().is_empty() {
            return Err(PyValueError::new_err(
                "SubagentRequest.task must be a non-empty string",
            ));
        }
        let structured_context = match structured_context {
            None => Map::new(),
            Some(c) if c.is_none() => Map::new(),
            Some(c) => {
                if c.cast::<PyDict>().is_err() {
                    return Err(PyTypeError::new_err(format!(
                        "SubagentRequest.structured_context must be a dict, got {}",
                        type_name(c)
                    )));
                }
                match to_json(c, "SubagentRequest.structured_context")?.to_value() {
                    Value::Object(m) => m,
                    _ => Map::new(),
                }
            }
        };
        Ok(PySubagentRequest {
            inner: SubagentRequest {
                profile_name,
                task,
                model_choice: opt_str(model_choice, "SubagentRequest.model_choice")?,
                structured_context,
                parent_session_id: opt_str(parent_session_id, "SubagentRequest.parent_session_id")?,
                parent_run_id: opt_str(parent_run_id, "SubagentRequest.parent_run_id")?,
            },
        })
    }

    #[getter]
    fn profile_name(&self) -> &str {
        &self.inner.profile_name
    }
    #[getter]
    fn task(&self) -> &str {
        &self.inner.task
    }
    #[getter]
    fn model_choice(&self) -> Option<&str> {
        self.inner.model_choice.as_deref()
    }
    #[getter]
    fn structured_context<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        value_to_py(py, &Value::Object(self.inner.structured_context.clone()))
    }
    #[getter]
    fn parent_session_id(&self) -> Option<&str> {
        self.inner.parent_session_id.as_deref()
    }
    #[getter]
    fn parent_run_id(&self) -> Option<&str> {
        self.inner.parent_run_id.as_deref()
    }

    /// The child's first user message.
    fn render(&self) -> String {
        self.inner.render()
    }

    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let r = &self.inner;
        value_to_py(
            py,
            &json!({"profile_name": r.profile_name, "task": r.task, "structured_context": r.structured_context,
                    "model_choice": r.model_choice, "parent_session_id": r.parent_session_id, "parent_run_id": r.parent_run_id}),
        )
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<PySubagentRequest>()
            .is_ok_and(|o| o.get().inner == self.inner)
    }

    fn __repr__(&self) -> String {
        let task: String = self.inner.task.chars().take(60).collect();
        format!(
            "SubagentRequest(profile_name={:?}, task={:?}{}, model_choice={:?})",
            self.inner.profile_name,
            task,
            if self.inner.task.chars().count() > 60 {
                "…"
            } else {
                ""
            },
            self.inner.model_choice
        )
    }
}

/// What a launch produced (frozen).
#[pyclass(frozen, module = "outrider._core", name = "SubagentLaunchResult")]
pub struct PySubagentLaunchResult {
    pub inner: SubagentLaunchResult,
}

impl PySubagentLaunchResult {
    /// The JSON form.
    pub fn to_value(&self) -> Value {
        let r = &self.inner;
        json!({
            "status": r.status.as_str(), "profile_name": r.profile_name,
            "child_session_id": r.child_session_id, "child_run_id": r.child_run_id,
            "result": match &r.result {
                Some(ParsedResult::Explore(e)) => e.to_value(),
                Some(ParsedResult::Verification(v)) => v.to_value(),
                Some(ParsedResult::Text(t)) => json!(t),
                None => Value::Null,
            },
            "model_used": r.model_used, "terminal_reason": r.terminal_reason, "error": r.error,
            "elapsed_ms": r.elapsed_ms, "tool_usage": r.tool_usage, "token_usage": r.token_usage,
            "usage_estimated": r.usage_estimated, "repair": r.repair, "model_calls": r.model_calls,
            "trace_path": r.trace_path.as_ref().map(|p| p.display().to_string()),
        })
    }
}

#[pymethods]
impl PySubagentLaunchResult {
    #[getter]
    fn status(&self) -> &'static str {
        self.inner.status.as_str()
    }
    #[getter]
    fn profile_name(&self) -> &str {
        &self.inner.profile_name
    }
    #[getter]
    fn child_session_id(&self) -> &str {
        &self.inner.child_session_id
    }
    #[getter]
    fn child_run_id(&self) -> &str {
        &self.inner.child_run_id
    }
    #[getter]
    fn result(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        Ok(match &self.inner.result {
            Some(ParsedResult::Explore(r)) => {
                Some(Py::new(py, PyExploreResult { inner: r.clone() })?.into_any())
            }
            Some(ParsedResult::Verification(r)) => {
                Some(Py::new(py, PyVerificationResult { inner: r.clone() })?.into_any())
            }
            Some(ParsedResult::Text(t)) => {
                Some(pyo3::types::PyString::new(py, t).into_any().unbind())
            }
            None => None,
        })
    }
    #[getter]
    fn model_used(&self) -> &str {
        &self.inner.model_used
    }
    #[getter]
    fn terminal_reason(&self) -> &str {
        &self.inner.terminal_reason
    }
    #[getter]
    fn error(&self) -> Option<&str> {
        self.inner.error.as_deref()
    }
    #[getter]
    fn elapsed_ms(&self) -> u64 {
        self.inner.elapsed_ms
    }
    #[getter]
    fn tool_usage<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        value_to_py(py, &json!(self.inner.tool_usage))
    }
    #[getter]
    fn token_usage(&self) -> u64 {
        self.inner.token_usage
    }
    #[getter]
    fn usage_estimated(&self) -> bool {
        self.inner.usage_estimated
    }
    #[getter]
    fn repair(&self) -> Option<&str> {
        self.inner.repair.as_deref()
    }
    #[getter]
    fn model_calls(&self) -> u64 {
        self.inner.model_calls
    }
    #[getter]
    fn trace_path(&self) -> Option<String> {
        self.inner
            .trace_path
            .as_ref()
            .map(|p| p.display().to_string())
    }

    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        value_to_py(py, &self.to_value())
    }

    fn __repr__(&self) -> String {
        let r = &self.inner;
        format!(
            "SubagentLaunchResult(status='{}', profile_name='{}', terminal_reason='{}', model_used='{}', tool_usage={}, token_usage={}, elapsed_ms={}{})",
            r.status.as_str(),
            r.profile_name,
            r.terminal_reason,
            r.model_used,
            crate::py::convert::usage_repr(&r.tool_usage),
            r.token_usage,
            r.elapsed_ms,
            r.error.as_ref().map(|e| format!(", error={e:?}")).unwrap_or_default()
        )
    }
}

/// A `trace_dir` argument: None means the default directory, False keeps traces in memory.
pub fn trace_dir_arg(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<std::path::PathBuf>> {
    match obj {
        None => Ok(Some(default_trace_dir())),
        Some(t) if t.is_none() => Ok(Some(default_trace_dir())),
        Some(t) if t.cast::<PyBool>().is_ok_and(|b| !b.is_true()) => Ok(None),
        Some(t) => t.extract::<std::path::PathBuf>().map(Some).map_err(|_| {
            PyTypeError::new_err(format!(
                "trace_dir must be a str, os.PathLike, None or False, got {}",
                type_name(t)
            ))
        }),
    }
}

/// A Python model argument: an `OpenAICompatible`, or any callable.
pub fn model_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Arc<dyn ChatModel>> {
    if let Ok(m) = obj.cast::<crate::py::openai::PyOpenAICompatible>() {
        return Ok(m.get().model.clone());
    }
    if obj.cast::<crate::py::agent::PyOfflineScout>().is_ok() {
        return Ok(crate::py::agent::scout());
    }
    if obj.is_callable() {
        return Ok(Arc::new(PyCallableModel::new(obj)));
    }
    Err(PyTypeError::new_err(format!(
        "{what} must be a callable taking the chat-completions request dict, or an outrider.OpenAICompatible; got {}",
        type_name(obj)
    )))
}

fn profiles_arg(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<RuntimeProfile>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(vec![]);
    };
    let items: Vec<Bound<'_, PyAny>> = if let Ok(d) = obj.cast::<PyDict>() {
        d.values().iter().collect()
    } else {
        obj.try_iter()
            .map_err(|_| {
                PyTypeError::new_err(format!(
                    "profiles must be an iterable of RuntimeProfile, got {}",
                    type_name(obj)
                ))
            })?
            .collect::<PyResult<_>>()?
    };
    items
        .iter()
        .map(|p| {
            p.cast::<PyRuntimeProfile>()
                .map(|p| p.get().inner.clone())
                .map_err(|_| {
                    PyTypeError::new_err(format!(
                        "profiles must hold RuntimeProfile objects, got {}",
                        type_name(p)
                    ))
                })
        })
        .collect()
}

/// Launches read-only children (see the stub for the full documentation).
#[pyclass(frozen, module = "outrider._core", name = "SubagentLauncher")]
pub struct PySubagentLauncher {
    pub inner: Arc<SubagentLauncher>,
}

fn request_arg(obj: &Bound<'_, PyAny>) -> PyResult<SubagentRequest> {
    obj.cast::<PySubagentRequest>()
        .map(|r| r.get().inner.clone())
        .map_err(|_| {
            PyTypeError::new_err(format!(
                "expected an outrider.SubagentRequest, got {}",
                type_name(obj)
            ))
        })
}

impl PySubagentLauncher {
    fn check(&self, req: &SubagentRequest) -> PyResult<()> {
        self.inner
            .check(req)
            .map(|_| ())
            .map_err(|e| PyValueError::new_err(e.to_string()))
    }
}

#[pymethods]
impl PySubagentLauncher {
    #[new]
    #[pyo3(signature = (project_root, main_llm=None, light_llm=None, *, trace_dir=None, parent_trace=None, profiles=None, max_concurrency=8))]
    #[allow(clippy::too_many_arguments)]
    fn py_new(
        project_root: &Bound<'_, PyAny>,
        main_llm: Option<&Bound<'_, PyAny>>,
        light_llm: Option<&Bound<'_, PyAny>>,
        trace_dir: Option<&Bound<'_, PyAny>>,
        parent_trace: Option<&Bound<'_, PyAny>>,
        profiles: Option<&Bound<'_, PyAny>>,
        max_concurrency: i64,
    ) -> PyResult<Self> {
        let workspace = workspace_arg(project_root)?;
        let main = match main_llm {
            Some(m) if !m.is_none() => model_arg(m, "main_llm")?,
            _ => crate::launcher::default_main_model()
                .map_err(|e| PyValueError::new_err(e.to_string()))?,
        };
        let mut config = LauncherConfig::new(workspace, main);
        config.light_model = match light_llm {
            Some(l) if !l.is_none() => Some(model_arg(l, "light_llm")?),
            _ => crate::launcher::default_light_model()
                .map_err(|e| PyValueError::new_err(e.to_string()))?,
        };
        config.trace_dir = trace_dir_arg(trace_dir)?;
        config.parent_trace = match parent_trace {
            Some(p) if !p.is_none() => {
                let path: std::path::PathBuf = p.extract().map_err(|_| {
                    PyTypeError::new_err(format!(
                        "parent_trace must be the path of a JSONL file, got {}",
                        type_name(p)
                    ))
                })?;
                let session = format!("parent-{}", uuid::Uuid::new_v4().simple());
                Some(Arc::new(Trace::at_path(session, &path).map_err(|e| {
                    PyValueError::new_err(format!(
                        "parent_trace '{}' cannot be opened: {e}",
                        path.display()
                    ))
                })?))
            }
            _ => None,
        };
        let mut by_name: BTreeMap<String, RuntimeProfile> = config.profiles.clone();
        for p in profiles_arg(profiles)? {
            by_name.insert(p.name.clone(), p);
        }
        config.profiles = by_name;
        if max_concurrency < 1 {
            return Err(PyValueError::new_err(format!(
                "max_concurrency must be at least 1, got {max_concurrency}"
            )));
        }
        config.max_concurrency = max_concurrency as usize;
        let inner = SubagentLauncher::new(config).map_err(PyValueError::new_err)?;
        Ok(PySubagentLauncher {
            inner: Arc::new(inner),
        })
    }

    /// Launch one child and wait for it (GIL released; Ctrl-C cancels the child).
    fn launch(
        &self,
        py: Python<'_>,
        request: &Bound<'_, PyAny>,
    ) -> PyResult<PySubagentLaunchResult> {
        let req = request_arg(request)?;
        self.check(&req)?;
        let launcher = self.inner.clone();
        let cancel = CancelToken::new();
        let c = cancel.clone();
        let out = block_on(
            py,
            async move { launcher.launch(req, c).await },
            Some(cancel),
        )?;
        out.map(|inner| PySubagentLaunchResult { inner })
            .map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// Launch many children at once, at most `max_concurrency` at a time; results in input order.
    #[pyo3(signature = (requests, max_concurrency=None))]
    fn launch_many(
        &self,
        py: Python<'_>,
        requests: &Bound<'_, PyAny>,
        max_concurrency: Option<i64>,
    ) -> PyResult<Py<PyList>> {
        let reqs: Vec<SubagentRequest> = requests
            .try_iter()
            .map_err(|_| {
                PyTypeError::new_err(format!(
                    "requests must be an iterable of SubagentRequest, got {}",
                    type_name(requests)
                ))
            })?
            .map(|r| r.and_then(|r| request_arg(&r)))
            .collect::<PyResult<_>>()?;
        for (i, r) in reqs.iter().enumerate() {
            self.check(r)
                .map_err(|e| PyValueError::new_err(format!("requests[{i}]: {}", e.value(py))))?;
        }
        let limit = match max_concurrency {
            None => reqs.len().max(1),
            Some(n) if n >= 1 => n as usize,
            Some(n) => {
                return Err(PyValueError::new_err(format!(
                    "max_concurrency must be at least 1, got {n}"
                )))
            }
        };
        let launcher = self.inner.clone();
        let cancel = CancelToken::new();
        let c = cancel.clone();
        let results = block_on(
            py,
            async move {
                let sem = Arc::new(tokio::sync::Semaphore::new(limit));
                let handles: Vec<_> = reqs
                    .into_iter()
                    .map(|req| {
                        let (launcher, sem, c) = (launcher.clone(), sem.clone(), c.clone());
                        tokio::spawn(async move {
                            let _permit = sem.acquire_owned().await.ok();
                            launcher.launch(req, c).await
                        })
                    })
                    .collect();
                let mut out = Vec::with_capacity(handles.len());
                for h in handles {
                    out.push(h.await);
                }
                out
            },
            Some(cancel),
        )?;
        let list = PyList::empty(py);
        for r in results {
            let r = r.map_err(|e| PyValueError::new_err(format!("a child task failed: {e}")))?;
            let r = r.map_err(|e| PyValueError::new_err(e.to_string()))?;
            list.append(Py::new(py, PySubagentLaunchResult { inner: r })?)?;
        }
        Ok(list.unbind())
    }

    /// Launch one child from async code: returns an awaitable (cancelling it cancels the child).
    fn launch_async<'py>(
        &self,
        py: Python<'py>,
        request: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let req = request_arg(request)?;
        self.check(&req)?;
        let launcher = self.inner.clone();
        let cancel = CancelToken::new();
        let c = cancel.clone();
        spawn_awaitable(
            py,
            async move { launcher.launch(req, c).await },
            cancel,
            |py, out| match out {
                Ok(r) => Ok(Py::new(py, PySubagentLaunchResult { inner: r })?.into_any()),
                Err(e) => Err(PyValueError::new_err(e.to_string())),
            },
        )
    }

    /// Run the verification profile on a completion candidate, as the reference's completion
    /// gate does, and return its verdict (PASS, FAIL with feedback, or UNVERIFIED).
    #[pyo3(signature = (candidate, requirements=None, evidence=None))]
    fn verify(
        &self,
        py: Python<'_>,
        candidate: &str,
        requirements: Option<&Bound<'_, PyAny>>,
        evidence: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<crate::py::agent::PyCompletionVerdict> {
        if candidate.trim().is_empty() {
            return Err(PyValueError::new_err(
                "candidate must be the non-empty text of the completion to verify",
            ));
        }
        let requirements = match requirements {
            Some(r) if !r.is_none() => to_json(r, "requirements")?.to_value(),
            _ => Value::Object(Map::new()),
        };
        let evidence = match evidence {
            Some(e) if !e.is_none() => crate::py::convert::str_iterable(e, "evidence")?,
            _ => vec![],
        };
        let req = crate::verify::verification_request(candidate, requirements, evidence);
        self.check(&req)?;
        let launcher = self.inner.clone();
        let cancel = CancelToken::new();
        let c = cancel.clone();
        let out = block_on(
            py,
            async move { launcher.launch(req, c).await },
            Some(cancel),
        )?
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let inner = crate::verify::verdict_of(&out);
        let launch = Py::new(py, PySubagentLaunchResult { inner: out })?.into_any();
        Ok(crate::py::agent::PyCompletionVerdict { inner, launch })
    }

    /// Names of the registered profiles.
    #[getter]
    fn profiles(&self) -> Vec<String> {
        self.inner.config().profiles.keys().cloned().collect()
    }

    /// Whether a light model is configured.
    #[getter]
    fn has_light_model(&self) -> bool {
        self.inner.config().light_model.is_some()
    }

    fn __repr__(&self) -> String {
        let c = self.inner.config();
        format!(
            "SubagentLauncher(project_root='{}', main_llm={}, light_llm={}, profiles={:?}, max_concurrency={})",
            c.workspace.root().display(),
            c.main_model.describe(),
            c.light_model.as_ref().map(|m| m.describe()).unwrap_or_else(|| "None".into()),
            c.profiles.keys().collect::<Vec<_>>(),
            c.max_concurrency
        )
    }
}
