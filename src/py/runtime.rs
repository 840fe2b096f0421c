//! The process's one tokio runtime, and blocking on it from Python without holding the GIL and
//! without going deaf to Ctrl-C.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::PyAny;

use crate::api::{with_caller, CallerScope, CancelToken};

/// Set by the interpreter's `atexit` hook: from then on no thread Python did not start touches
/// Python again.
static EXITING: AtomicBool = AtomicBool::new(false);
/// Threads Python did not start that are inside Python right now (see [`attach`]).
static IN_PYTHON: AtomicUsize = AtomicUsize::new(0);
/// How long interpreter exit waits for those threads to leave Python.
const EXIT_GRACE: Duration = Duration::from_secs(2);

struct LeavePython;

impl Drop for LeavePython {
    fn drop(&mut self) {
        IN_PYTHON.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Run `f` with the GIL on a thread Python did not start (a runtime worker). Returns None,
/// touching nothing, once the interpreter is exiting: a thread that enters Python during
/// finalization brings the process down. Only short sections come here (handing a model call to
/// Python, resolving an awaitable); exit waits for them.
pub fn attach<R>(f: impl for<'py> FnOnce(Python<'py>) -> R) -> Option<R> {
    IN_PYTHON.fetch_add(1, Ordering::SeqCst);
    let _leave = LeavePython;
    if EXITING.load(Ordering::SeqCst) {
        return None;
    }
    Python::try_attach(f)
}

/// Run `f` without the GIL on a thread Python started (as `py.detach` does), for a wait that may
/// outlast the interpreter: once it is exiting, the thread does not come back into Python but
/// parks for good (a daemon thread resuming during finalization with native frames on its stack
/// would bring the process down). Exit waits for a thread on its way back in.
pub fn detach_waiting<T, F>(py: Python<'_>, f: F) -> T
where
    T: Send,
    F: Send + FnOnce() -> T,
{
    let (out, _leave) = py.detach(|| {
        let out = f();
        IN_PYTHON.fetch_add(1, Ordering::SeqCst);
        let leave = LeavePython;
        if EXITING.load(Ordering::SeqCst) {
            drop(leave);
            loop {
                std::thread::park();
            }
        }
        (out, leave)
    });
    out
}

/// The caller a launch started from: its `contextvars` context, and its running event loop when
/// it came through an async entry point. Model callables run with both (see `outrider._aio`).
pub struct Caller {
    pub context: Py<PyAny>,
    pub event_loop: Option<Py<PyAny>>,
}

fn caller_scope(py: Python<'_>, event_loop: Option<&Bound<'_, PyAny>>) -> PyResult<CallerScope> {
    let context = py.import("contextvars")?.call_method0("copy_context")?;
    Ok(CallerScope(std::sync::Arc::new(Caller {
        context: context.unbind(),
        event_loop: event_loop.map(|l| l.clone().unbind()),
    })))
}

/// The `atexit` hook: stop new entries into Python from other threads, and give the ones inside
/// (resolving an awaitable, finishing a model call) a moment to leave before finalization.
#[pyfunction]
pub fn _at_exit(py: Python<'_>) {
    EXITING.store(true, Ordering::SeqCst);
    py.detach(|| {
        let until = std::time::Instant::now() + EXIT_GRACE;
        while IN_PYTHON.load(Ordering::SeqCst) > 0 && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(2));
        }
    });
}

/// How often a blocked call looks for a pending signal (Ctrl-C).
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// Run `fut` to completion with the GIL released, driving it on the calling thread (no hand-off
/// to a worker and back). A pending signal (Ctrl-C) is checked every 50 ms: it cancels `cancel`,
/// gives the work half a second to wind down, and is raised (KeyboardInterrupt).
pub fn block_on<F, T>(py: Python<'_>, fut: F, cancel: Option<CancelToken>) -> PyResult<T>
where
    F: Future<Output = T> + Send,
    T: Send,
{
    if tokio::runtime::Handle::try_current().is_ok() {
        // Called from a thread of the runtime itself (e.g. a model callable that launches a
        // child): it cannot block on the runtime, so a scoped thread does.
        return std::thread::scope(|scope| {
            let worker = scope.spawn(|| Python::attach(|py| block_on(py, fut, cancel)));
            py.detach(|| worker.join()).unwrap_or_else(|_| {
                Err(crate::api::Error::Internal("the blocking call panicked".into()).into())
            })
        });
    }
    py.detach(|| {
        // This thread only waits for `fut`: it may spin briefly for a model's answer.
        let _spin = crate::api::allow_spin();
        crate::api::runtime().block_on(async {
            let mut fut = std::pin::pin!(fut);
            let mut tick = tokio::time::interval(SIGNAL_POLL);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    biased;
                    out = &mut fut => return Ok(out),
                    _ = tick.tick() => {
                        if let Err(interrupt) = Python::attach(|py| py.check_signals()) {
                            if let Some(c) = &cancel {
                                c.cancel();
                                let _ = tokio::time::timeout(Duration::from_millis(500), &mut fut).await;
                            }
                            return Err(interrupt);
                        }
                    }
                }
            }
        })
    })
}

/// Run the work `start` builds (given a fresh cancel token) with the GIL released, as
/// [`block_on`] does; a core error becomes its Python exception.
pub fn run<T, F, Fut>(py: Python<'_>, start: F) -> PyResult<T>
where
    F: FnOnce(CancelToken) -> Fut,
    Fut: Future<Output = Result<T, crate::api::Error>> + Send,
    T: Send,
{
    run_under(py, &CancelToken::new(), start)
}

/// [`run`] with a token that `parent` cancels too.
pub fn run_under<T, F, Fut>(py: Python<'_>, parent: &CancelToken, start: F) -> PyResult<T>
where
    F: FnOnce(CancelToken) -> Fut,
    Fut: Future<Output = Result<T, crate::api::Error>> + Send,
    T: Send,
{
    let cancel = parent.child();
    let work = with_caller(caller_scope(py, None)?, start(cancel.clone()));
    Ok(block_on(py, work, Some(cancel))??)
}

/// Done-callback of an asyncio future made by [`spawn_awaitable`]: cancels the work when the
/// future was cancelled.
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

/// Run `fut` on the runtime and return an asyncio future of the running loop that resolves to
/// `convert(output)`. Cancelling the asyncio future cancels `cancel`.
pub fn spawn_awaitable<'py, F, T, C>(
    py: Python<'py>,
    fut: F,
    cancel: CancelToken,
    convert: C,
) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
    C: FnOnce(Python<'_>, T) -> PyResult<Py<PyAny>> + Send + 'static,
{
    let event_loop = py.import("asyncio")?.call_method0("get_running_loop")?;
    let fut = with_caller(caller_scope(py, Some(&event_loop))?, fut);
    let future = event_loop.call_method0("create_future")?;
    future.call_method1(
        "add_done_callback",
        (Py::new(py, CancelOnDone { cancel })?,),
    )?;
    let (fut_ref, loop_ref) = (future.clone().unbind(), event_loop.unbind());
    crate::api::runtime().spawn(async move {
        let out = fut.await;
        attach(|py| {
            let Ok(resolve) = py
                .import("outrider._aio")
                .and_then(|m| m.getattr("resolve"))
            else {
                return;
            };
            let (value, error) = match convert(py, out) {
                Ok(v) => (v, py.None()),
                Err(e) => (py.None(), e.into_value(py).into_any()),
            };
            let _ = loop_ref.bind(py).call_method1(
                "call_soon_threadsafe",
                (resolve, fut_ref.bind(py), value, error),
            );
        });
    });
    Ok(future)
}
