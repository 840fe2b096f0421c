//! The core's runtime seen from Python: entering Python from its threads, and running the core's
//! work for a blocking or an async entry point.

use std::future::Future;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyAny;
use pyo3::IntoPyObjectExt;

use crate::api::{block_on_interruptible, with_caller, CallerScope, CancelToken, Error};
use crate::py::enter::{attach, detach_waiting};

/// The caller a launch started from: its `contextvars` context, its running event loop when it
/// came through an async entry point, and, for a blocking entry point called in a thread whose
/// event loop runs (a notebook cell), an `outrider._aio.Blocked` naming that stalled loop. Model
/// callables run with them (see `outrider._aio`).
pub(super) struct Caller {
    pub context: Py<PyAny>,
    pub event_loop: Option<Py<PyAny>>,
    pub blocked: Option<Py<PyAny>>,
}

/// A serialisable core value handed to Python as plain data (dicts, lists, str, numbers, None).
pub(super) struct Plain<T>(pub T);

impl<'py, T: serde::Serialize> IntoPyObject<'py> for Plain<T> {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;
    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        crate::py::convert::dump(py, &self.0)
    }
}

/// Run the work `start` builds (given a token that `parent` cancels too) for an entry point.
/// With `awaitable`: an asyncio future of the running loop, resolved with the work's output;
/// cancelling it cancels the work, and async model callables run on that loop. Otherwise it
/// blocks with the GIL released, and Ctrl-C cancels the work and raises KeyboardInterrupt.
pub(super) fn finish<T, F, Fut>(
    py: Python<'_>,
    parent: &CancelToken,
    awaitable: bool,
    start: F,
) -> PyResult<Py<PyAny>>
where
    F: FnOnce(CancelToken) -> Fut,
    Fut: Future<Output = Result<T, Error>> + Send + 'static,
    T: for<'py> IntoPyObject<'py> + Send + 'static,
{
    // Looked up once per process: this runs on every launch.
    static COPY_CONTEXT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    static RUNNING_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    static RESOLVE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    static THREAD_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    static BLOCKED: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    crate::py::observe::refresh_level(py);
    // A caller's output_schema validator runs while its child waits for it.
    crate::api::refuse_inside_validator()?;
    let cancel = parent.child();
    let event_loop = if awaitable {
        Some(
            RUNNING_LOOP
                .import(py, "asyncio", "get_running_loop")?
                .call0()?,
        )
    } else {
        None
    };
    let blocked = if awaitable {
        None
    } else {
        let running = THREAD_LOOP
            .import(py, "asyncio", "_get_running_loop")?
            .call0()?;
        if running.is_none() {
            None
        } else {
            Some(
                BLOCKED
                    .import(py, "outrider._aio", "Blocked")?
                    .call1((running,))?,
            )
        }
    };
    let context = COPY_CONTEXT
        .import(py, "contextvars", "copy_context")?
        .call0()?;
    let caller = Caller {
        context: context.unbind(),
        event_loop: event_loop.as_ref().map(|l| l.clone().unbind()),
        blocked: blocked.as_ref().map(|b| b.clone().unbind()),
    };
    let work = with_caller(
        CallerScope(std::sync::Arc::new(caller)),
        start(cancel.clone()),
    );
    let Some(event_loop) = event_loop else {
        // A daemon thread may wait here past exit: no GIL unless the barrier lets it in.
        let signals = || attach(|py| py.check_signals()).unwrap_or(Ok(()));
        let out = detach_waiting(py, || block_on_interruptible(work, &signals, Some(&cancel)))?;
        if let Some(blocked) = blocked {
            blocked.call_method0("raise_conflict")?;
        }
        return out?.into_py_any(py);
    };
    let future = event_loop.call_method0("create_future")?;
    future.call_method1("add_done_callback", (CancelOnDone { cancel },))?;
    let (fut_ref, loop_ref) = (future.clone().unbind(), event_loop.unbind());
    crate::api::runtime().spawn(async move {
        let out = work.await;
        attach(|py| {
            let Ok(resolve) = RESOLVE.import(py, "outrider._aio", "resolve") else {
                return;
            };
            let (value, error) = match out.map_err(PyErr::from).and_then(|v| v.into_py_any(py)) {
                Ok(v) => (v, py.None()),
                Err(e) => (py.None(), e.into_value(py).into_any()),
            };
            let args = (resolve, fut_ref.bind(py), value, error);
            let _ = loop_ref.bind(py).call_method1("call_soon_threadsafe", args);
        });
    });
    Ok(future.unbind())
}

/// Done-callback of an asyncio future made by [`finish`]: cancels the work when the future was
/// cancelled.
#[pyclass(frozen, module = "outrider._core")]
pub struct CancelOnDone {
    cancel: CancelToken,
}

#[pymethods]
impl CancelOnDone {
    fn __call__(&self, future: &Bound<'_, PyAny>) -> PyResult<()> {
        if future.call_method0("cancelled")?.is_truthy()? {
            self.cancel.cancel();
        }
        Ok(())
    }
}
