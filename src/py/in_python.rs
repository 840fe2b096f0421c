//! Methods of the native classes whose bodies are written in Python.
//!
//! Every Python-facing method of a native result class is declared in that class's
//! `#[pymethods]` block (and documented in `_core.pyi`): nothing is attached to a class when
//! `outrider` is imported. Where a body needs Python (`json`, pydantic, the Jupyter views), the
//! method calls one named function of one module of the `outrider` package through [`call`].
//! (The entry-point classes, whose `async def` methods must be coroutine functions, are Python
//! subclasses instead: `outrider/_entry.py`.) `outrider/_views.py` says which class lives where,
//! and why.

use pyo3::call::PyCallArgs;
use pyo3::prelude::*;

/// `module.function(*args)`: the Python body of a native method.
pub(super) fn call<'py>(
    py: Python<'py>,
    (module, function): (&str, &str),
    args: impl PyCallArgs<'py>,
) -> PyResult<Bound<'py, PyAny>> {
    py.import(module)?.getattr(function)?.call1(args)
}
