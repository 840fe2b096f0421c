//! Entering Python from threads Python did not start, which must stop before the interpreter
//! finalizes (the core's [`ExitBarrier`]).

use pyo3::prelude::*;

use crate::api::{ExitBarrier, EXIT_GRACE};

/// Closed by the interpreter's `atexit` hook: then no thread Python did not start enters Python.
static BARRIER: ExitBarrier = ExitBarrier::new();

/// Run `f` with the GIL on a thread Python did not start (a runtime worker); None, touching
/// nothing, once the interpreter is exiting. Only short sections come here (see [`ExitBarrier`]).
pub(super) fn attach<R>(f: impl for<'py> FnOnce(Python<'py>) -> R) -> Option<R> {
    BARRIER.pass(|| Python::try_attach(f)).flatten()
}

/// Run `f` without the GIL on a thread Python started (as `py.detach` does), for a wait that may
/// outlast the interpreter: once it is exiting, the thread does not come back into Python but
/// parks for good (a daemon thread resuming during finalization with native frames on its stack
/// would bring the process down). Exit waits for a thread on its way back in. The thread that is
/// finalizing (a launch from an exit hook) comes back: the interpreter is its own.
pub(super) fn detach_waiting<T, F>(py: Python<'_>, f: F) -> T
where
    T: Send,
    F: Send + FnOnce() -> T,
{
    let (out, _inside) = py.detach(|| (f(), BARRIER.come_back()));
    out
}

/// The `atexit` hook: no new entries into Python from other threads, and two seconds for the
/// ones inside (resolving an awaitable, handing over a model call) to leave.
#[pyfunction]
pub(super) fn _at_exit(py: Python<'_>) {
    py.detach(|| BARRIER.close(EXIT_GRACE));
}
