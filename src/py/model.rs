//! Any Python callable as a [`ChatModel`]. `outrider._aio.call` runs it (sync callables on
//! outrider's own Python threads, coroutines on the caller's loop or a private one, both with the
//! caller's `contextvars`) and reports back through [`Done`]; this side only waits.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use tokio::sync::oneshot;

use crate::api::Inbox;
use crate::api::ModelErrorKind;
use crate::api::{current_caller, BoxFuture, ChatModel, ChatRequest, ChatResponse, ModelError};
use crate::py::runtime::{attach, detach_waiting, Caller};

/// A Python callable taking the chat-completions request dict.
pub struct PyCallableModel {
    callable: Arc<Py<PyAny>>,
    name: String,
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
        }
    }
}

/// How a call ended, as `outrider._aio` reports it.
type Answer = Result<String, ModelError>;

/// The callback `outrider._aio.call` reports to, once: `("ok", json_text)`, `("raised",
/// exception)`, `("unusable", (type_name, repr))` for a value of no accepted type, or
/// `("value", dict)` for one that is not plain JSON.
#[pyclass(frozen, module = "outrider._core")]
pub struct Done {
    tx: Mutex<Option<oneshot::Sender<Answer>>>,
    what: String,
}

#[pymethods]
impl Done {
    fn __call__(&self, kind: &str, payload: &Bound<'_, PyAny>) -> PyResult<()> {
        let answer = match kind {
            "ok" => Ok(payload.extract::<String>()?),
            // Not plain JSON (NaN, a set, a non-str key): converted as Python's json would.
            "value" => crate::py::convert::to_json(payload, "model response")
                .map(|j| j.to_value().to_string())
                .map_err(|e| {
                    let why = e.value(payload.py()).to_string();
                    ModelError::new(
                        ModelErrorKind::Callback,
                        format!("{} returned an unusable value: {why}", self.what),
                    )
                }),
            "raised" => {
                let (kind, message) = (
                    payload.get_type().name()?.to_string(),
                    payload.str()?.to_string(),
                );
                // An SDK's HTTP error (openai/anthropic `APIStatusError`, litellm's) has its status.
                let status = payload
                    .getattr("status_code")
                    .and_then(|s| s.extract::<u16>())
                    .ok();
                Err(match status {
                    Some(code) => {
                        ModelError::callback_raised_status(&self.what, &kind, &message, code)
                    }
                    None => ModelError::callback_raised(&self.what, &kind, &message),
                })
            }
            "invalid" => Err(ModelError::new(
                ModelErrorKind::Callback,
                format!(
                    "{} returned an unusable value: {}",
                    self.what,
                    payload.str()?
                ),
            )),
            _ => {
                let (type_name, shown): (String, String) = payload.extract()?;
                Err(ModelError::unusable_return(&self.what, &type_name, &shown))
            }
        };
        if let Some(tx) = self.tx.lock().ok().and_then(|mut t| t.take()) {
            let _ = tx.send(answer);
        }
        Ok(())
    }
}

/// Cancels the Python side of a call that was abandoned (the child timed out or was cancelled).
struct CancelOnDrop(Option<Py<PyAny>>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(handle) = self.0.take() {
            attach(|py| handle.bind(py).call_method0("cancel").map(drop));
        }
    }
}

/// Where outrider's model threads (Python daemon threads, see `outrider._aio`) wait for jobs:
/// without the GIL, the first of them spinning for a moment after each job, because the next
/// call of a running loop usually comes within a millisecond.
#[pyclass(frozen, module = "outrider._core", name = "_ModelInbox")]
pub struct ModelInbox(Arc<Inbox<Py<PyAny>>>);

/// How long an idle model thread spins for the next job before it sleeps.
const IDLE_SPIN: Duration = Duration::from_millis(2);

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
        let timeout = Duration::try_from_secs_f64(timeout).map_err(|_| {
            pyo3::exceptions::PyValueError::new_err(format!(
                "timeout must be a finite number of seconds >= 0, got {timeout}"
            ))
        })?;
        let inbox = self.0.clone();
        Ok(detach_waiting(py, move || inbox.take(IDLE_SPIN, timeout)))
    }
}

/// A call handed to `outrider._aio`: its cancel handle, and the job that runs it with the inbox
/// it goes to (put there once the GIL is released, so the thread that takes it does not wait
/// for the GIL).
struct Started {
    handle: Py<PyAny>,
    inbox: Arc<Inbox<Py<PyAny>>>,
    job: Py<PyAny>,
}

fn start_call(py: Python<'_>, callable: &Py<PyAny>, body: String, done: Done) -> PyResult<Started> {
    static CALL: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let call = CALL.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
        Ok(py.import("outrider._aio")?.getattr("call")?.unbind())
    })?;
    let scope = current_caller();
    let caller = scope.as_ref().and_then(|s| s.0.downcast_ref::<Caller>());
    let (context, event_loop) = match caller {
        Some(c) => (
            Some(c.context.clone_ref(py)),
            c.event_loop.as_ref().map(|l| l.clone_ref(py)),
        ),
        None => (None, None),
    };
    let args = (callable.clone_ref(py), body, context, event_loop, done);
    let (handle, inbox, job): (Py<PyAny>, Bound<'_, ModelInbox>, Py<PyAny>) =
        call.bind(py).call1(args)?.extract()?;
    Ok(Started {
        handle,
        inbox: inbox.get().0.clone(),
        job,
    })
}

impl ChatModel for PyCallableModel {
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ModelError>> {
        let body = request.to_openai_string();
        let what = format!("model callable {}", self.name);
        Box::pin(async move {
            let (tx, rx) = oneshot::channel();
            let done = Done {
                tx: Mutex::new(Some(tx)),
                what: what.clone(),
            };
            let started = attach(|py| {
                start_call(py, &self.callable, body, done).map_err(|e| {
                    let kind = e
                        .get_type(py)
                        .name()
                        .map(|n| n.to_string())
                        .unwrap_or_default();
                    ModelError::callback_raised(&what, &kind, &e.value(py).to_string())
                })
            });
            let Some(started) = started else {
                return Err(ModelError::new(
                    ModelErrorKind::Cancelled,
                    "the Python interpreter is exiting",
                ));
            };
            let started = started?;
            started.inbox.put(started.job);
            let mut guard = CancelOnDrop(Some(started.handle));
            let answer = crate::api::spin_first(rx).await;
            guard.0 = None;
            let text = answer.map_err(|_| {
                ModelError::new(
                    ModelErrorKind::Callback,
                    format!("{what} ended without an answer"),
                )
            })??;
            let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
                ModelError::new(
                    ModelErrorKind::Callback,
                    format!("{what} returned an unusable value: {e}"),
                )
            })?;
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
