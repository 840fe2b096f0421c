//! Any Python callable as a model: the core's [`CallbackModel`] with Python as its host.
//! `outrider._aio.call` runs the callable (sync ones on outrider's own Python threads, coroutines
//! on the caller's loop or a private one, both with the caller's `contextvars`) and reports to
//! [`Done`]. The whole Python <-> Rust sequence of one model call, sync and async, is written
//! down once, in the docstring of `python/outrider/_aio.py`.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple};

use crate::api::{current_caller, Abandon, CallbackModel, Host, ModelError, ModelErrorKind};
use crate::api::{Inbox, Outcome, Reply};
use crate::py::args::{Args, Params};
use crate::py::convert::{to_json, type_name};
use crate::py::enter::{attach, detach_waiting};
use crate::py::runtime::Caller;

/// A Python callable taking the chat-completions request dict.
pub(super) struct PyCallable {
    callable: Py<PyAny>,
    name: String,
    /// The `outrider._aio.Home` its coroutines run on, shared by one launcher's models.
    home: Py<PyAny>,
}

/// A new `outrider._aio.Home`: one per launcher or main agent, given to each of its models.
pub(super) fn new_home(py: Python<'_>) -> PyResult<Py<PyAny>> {
    Ok(py
        .import("outrider._aio")?
        .getattr("Home")?
        .call0()?
        .unbind())
}

/// `callable` (checked to be callable) as a model whose coroutines run on `home`.
pub(super) fn callable_model(
    callable: &Bound<'_, PyAny>,
    home: &Py<PyAny>,
) -> CallbackModel<PyCallable> {
    let name = callable
        .getattr("__qualname__")
        .or_else(|_| callable.get_type().getattr("__qualname__"))
        .map_or_else(|_| "callable".into(), |n| n.to_string());
    CallbackModel(PyCallable {
        callable: callable.clone().unbind(),
        name,
        home: home.clone_ref(callable.py()),
    })
}

/// The callback `outrider._aio.call` reports to, once: `("ok", json_text)`, `("value", value)`
/// for an answer that is not plain JSON, `("raised", (type_name, message, status))`, or
/// `("unusable", (type_name, repr))` for a value of no accepted type.
#[pyclass(frozen, module = "outrider._core")]
pub struct Done(Reply);

#[pymethods]
impl Done {
    fn __call__(&self, kind: &str, payload: &Bound<'_, PyAny>) -> PyResult<()> {
        let outcome = match kind {
            "ok" => Outcome::Json(payload.extract()?),
            // NaN, a set, a non-str key: converted as Python's json would, or refused saying why.
            "value" => match to_json(payload, "model response") {
                Ok(j) => Outcome::Json(j.to_value().to_string()),
                Err(e) => Outcome::Unusable(e.value(payload.py()).to_string()),
            },
            "raised" => {
                let (kind, message, status) = payload.extract()?;
                Outcome::Raised {
                    kind,
                    message,
                    status,
                }
            }
            _ => {
                let (type_name, shown) = payload.extract()?;
                Outcome::WrongType { type_name, shown }
            }
        };
        self.0.send(outcome);
        Ok(())
    }
}

/// Where outrider's model threads (Python daemon threads, see `outrider._aio`) wait for jobs:
/// without the GIL, the first of them spinning for a moment after each job, because the next
/// call of a running loop usually comes within a millisecond.
#[pyclass(frozen, module = "outrider._core", name = "_ModelInbox")]
pub struct ModelInbox(Arc<Inbox<Py<PyAny>>>);

#[pymethods]
impl ModelInbox {
    #[new]
    fn py_new() -> Self {
        ModelInbox(Arc::new(Inbox::default()))
    }

    /// Queue `job` (a callable taking no arguments) for one waiting thread.
    fn put(&self, job: Py<PyAny>) {
        self.0.put(job);
    }

    /// The next job, or None after `timeout` seconds.
    fn get(&self, py: Python<'_>, timeout: f64) -> PyResult<Option<Py<PyAny>>> {
        let (inbox, timeout) = (self.0.clone(), crate::api::seconds("timeout", timeout)?);
        Ok(detach_waiting(py, move || inbox.take_idle(timeout)))
    }
}

impl Host for PyCallable {
    fn start(&self, body: String, reply: Reply) -> Result<Abandon, ModelError> {
        static CALL: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
        let started = attach(|py| {
            let scope = current_caller();
            let caller = scope.as_ref().and_then(|s| s.0.downcast_ref::<Caller>());
            let context = caller.map(|c| c.context.clone_ref(py));
            let event_loop = caller
                .and_then(|c| c.event_loop.as_ref())
                .map(|l| l.clone_ref(py));
            let blocked = caller
                .and_then(|c| c.blocked.as_ref())
                .map(|b| b.clone_ref(py));
            let args = (
                self.callable.clone_ref(py),
                body,
                context,
                event_loop,
                blocked,
                self.home.clone_ref(py),
                Done(reply),
            );
            CALL.import(py, "outrider._aio", "call")
                .and_then(|call| call.call1(args))
                .and_then(|started| {
                    let (handle, inbox, job): (Py<PyAny>, Bound<'_, ModelInbox>, Py<PyAny>) =
                        started.extract()?;
                    Ok((handle, inbox.get().0.clone(), job))
                })
                .map_err(|e| {
                    let kind = type_name(e.value(py).as_any());
                    ModelError::callback_raised(&self.what(), &kind, &e.value(py).to_string())
                })
        });
        let exiting = || {
            ModelError::new(
                ModelErrorKind::Cancelled,
                "the Python interpreter is exiting",
            )
        };
        let (handle, inbox, job) = started.ok_or_else(exiting)??;
        // Put once the GIL is released, so that the thread taking the job does not wait for it.
        inbox.put(job);
        Ok(Box::new(move || {
            attach(|py| handle.bind(py).call_method0("cancel").map(drop));
        }))
    }

    fn what(&self) -> String {
        format!("model callable {}", self.name)
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
    #[pyo3(signature = (*args, **kwargs), text_signature = "()")]
    fn py_new(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        Args::bind(&Params::keywords("OfflineScout", &[]), Some(args), kwargs)?;
        Ok(PyOfflineScout)
    }
    /// The search terms the scout would use for `task`.
    #[staticmethod]
    fn terms(task: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
        Ok(crate::api::scout_terms(&crate::py::convert::req_str(
            task, "task",
        )?))
    }
    #[allow(clippy::unused_self)] // Python's repr protocol takes the instance
    fn __repr__(&self) -> &'static str {
        "OfflineScout()"
    }
}
