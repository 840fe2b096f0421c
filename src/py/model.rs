//! Any Python callable as a [`ChatModel`]: sync callables run on the blocking pool (so many
//! children can wait on slow callables at once), coroutines on a private asyncio loop.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString};
use serde_json::Value;

use crate::api::{BoxFuture, ChatModel, ChatRequest, ChatResponse, ModelError, ModelErrorKind};
use crate::py::convert::{to_json, type_name};

/// A Python callable taking the chat-completions request dict.
pub struct PyCallableModel {
    callable: Arc<Py<PyAny>>,
    name: String,
    hot: Arc<crate::api::HotCaller>,
}

impl PyCallableModel {
    /// Wrap `callable` (checked to be callable).
    pub fn new(callable: &Bound<'_, PyAny>) -> Self {
        let name = callable
            .getattr("__qualname__")
            .or_else(|_| callable.get_type().getattr("__qualname__"))
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "callable".into());
        PyCallableModel {
            callable: Arc::new(callable.clone().unbind()),
            name,
            hot: crate::api::HotCaller::start("outrider-model"),
        }
    }
}

fn is_awaitable(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    static ISAWAITABLE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let f = ISAWAITABLE.get_or_try_init(obj.py(), || -> PyResult<Py<PyAny>> {
        Ok(obj.py().import("inspect")?.getattr("isawaitable")?.unbind())
    })?;
    f.bind(obj.py()).call1((obj,))?.is_truthy()
}

fn callback_error(py: Python<'_>, err: PyErr, what: &str) -> ModelError {
    let kind = err
        .get_type(py)
        .name()
        .map(|n| n.to_string())
        .unwrap_or_default();
    ModelError::callback_raised(what, &kind, &err.value(py).to_string())
}

/// Turn what a callable returned into JSON: a str, a dict, or an object with `model_dump()`.
fn returned_value(out: &Bound<'_, PyAny>, what: &str) -> Result<Value, ModelError> {
    let py = out.py();
    if let Ok(s) = out.cast::<PyString>() {
        return Ok(Value::String(s.to_string()));
    }
    let dict = if out.cast::<PyDict>().is_ok() {
        out.clone()
    } else if out.hasattr("model_dump").unwrap_or(false) {
        out.call_method0("model_dump")
            .map_err(|e| callback_error(py, e, &format!("{what}'s result .model_dump()")))?
    } else {
        let shown = out.repr().map(|r| r.to_string()).unwrap_or_default();
        return Err(ModelError::unusable_return(what, &type_name(out), &shown));
    };
    to_json(&dict, "model response")
        .map(|j| j.to_value())
        .map_err(|e| {
            ModelError::new(
                ModelErrorKind::Callback,
                format!("{what} returned an unusable value: {}", e.value(py)),
            )
        })
}

fn json_loads<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    static LOADS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let loads = LOADS.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
        Ok(py.import("json")?.getattr("loads")?.unbind())
    })?;
    loads.bind(py).call1((text,))
}

/// Call `callable(request)` (awaiting a coroutine on the private loop) and return its value.
fn call_blocking(callable: &Py<PyAny>, request: &str, what: &str) -> Result<Value, ModelError> {
    crate::py::runtime::attach(false, |py| {
        // json.loads builds the request dict faster than converting node by node.
        let req =
            json_loads(py, request).map_err(|e| callback_error(py, e, "building the request"))?;
        let mut out = callable
            .bind(py)
            .call1((req,))
            .map_err(|e| callback_error(py, e, what))?;
        if is_awaitable(&out).unwrap_or(false) {
            let aio = py
                .import("outrider._aio")
                .map_err(|e| callback_error(py, e, "outrider._aio"))?;
            out = aio
                .call_method1("run", (out,))
                .map_err(|e| callback_error(py, e, what))?;
        }
        returned_value(&out, what)
    })
    .unwrap_or_else(|| {
        Err(ModelError::new(
            ModelErrorKind::Cancelled,
            "the Python interpreter is exiting",
        ))
    })
}

impl ChatModel for PyCallableModel {
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ModelError>> {
        let callable = self.callable.clone();
        let hot = self.hot.clone();
        let body = request.to_openai_string();
        let what = format!("model callable {}", self.name);
        Box::pin(async move {
            let value =
                crate::api::run_off_thread(&hot, move || call_blocking(&callable, &body, &what))
                    .await
                    .map_err(|e| {
                        ModelError::new(
                            ModelErrorKind::Callback,
                            format!("model callable thread failed: {e}"),
                        )
                    })??;
            ChatResponse::from_value(&value).map_err(ModelError::from)
        })
    }

    fn describe(&self) -> String {
        format!("python callable {}", self.name)
    }
}

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
    fn terms(task: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
        Ok(crate::api::scout_terms(&crate::py::convert::req_str(
            task, "task",
        )?))
    }
    fn __repr__(&self) -> &'static str {
        "OfflineScout()"
    }
}
