//! Entering Python from threads Python did not start, which must stop before the interpreter
//! finalizes (the core's [`ExitBarrier`]).

use std::time::Duration;

use pyo3::prelude::*;

use crate::api::ExitBarrier;

/// Closed by the interpreter's `atexit` hook: then no thread Python did not start enters Python.
static BARRIER: ExitBarrier = ExitBarrier::new();

/// Run `f` with the GIL on a thread Python did not start (a runtime worker); None, touching
/// nothing, once the interpreter is exiting. Only short sections come here (see [`ExitBarrier`]).
pub fn attach<R>(f: impl for<'py> FnOnce(Python<'py>) -> R) -> Option<R> {
    BARRIER.pass(|| Python::try_attach(f)).flatten()
}

/// The `atexit` hook: no new entries into Python from other threads, and two seconds for the
/// ones inside (resolving an awaitable, handing over a model call) to leave.
#[pyfunction]
pub fn _at_exit(py: Python<'_>) {
    py.detach(|| BARRIER.close(Duration::from_secs(2)));
}
