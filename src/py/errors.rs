//! Raising the Python exception classes (defined in `outrider/exceptions.py`) from Rust.
//!
//! With abi3 below 3.12 a Rust exception class cannot carry fields, so the rich classes live in
//! Python and are instantiated here.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::contract::{ContractError, LocItem};
use crate::py::convert::to_py;

fn exception_class<'py>(
    py: Python<'py>,
    cell: &'static PyOnceLock<Py<PyAny>>,
    name: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let cls = cell.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
        Ok(py.import("outrider.exceptions")?.getattr(name)?.unbind())
    })?;
    Ok(cls.bind(py).clone())
}

/// A core `ContractError` as `outrider.ContractError` (a ValueError with `.errors()`).
pub fn contract_error(py: Python<'_>, err: &ContractError) -> PyErr {
    static CLS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let build = || -> PyResult<PyErr> {
        let errors = PyList::empty(py);
        for v in &err.violations {
            let loc: Vec<Bound<'_, PyAny>> = v
                .loc
                .iter()
                .map(|l| -> PyResult<Bound<'_, PyAny>> {
                    Ok(match l {
                        LocItem::Key(k) => k.into_pyobject(py)?.into_any(),
                        LocItem::Index(i) => i.into_pyobject(py)?.into_any(),
                    })
                })
                .collect::<PyResult<_>>()?;
            let d = PyDict::new(py);
            d.set_item("type", v.kind)?;
            d.set_item("loc", PyTuple::new(py, loc)?)?;
            d.set_item("msg", &v.msg)?;
            d.set_item("input", to_py(py, &v.input)?)?;
            errors.append(d)?;
        }
        let cls = exception_class(py, &CLS, "ContractError")?;
        let exc = cls.call1((err.to_string(), errors, err.contract))?;
        Ok(PyErr::from_value(exc))
    };
    build().unwrap_or_else(|e| e)
}

/// A profile validation failure as `outrider.ProfileError` (a ValueError).
pub fn profile_error(py: Python<'_>, message: &str) -> PyErr {
    static CLS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    match exception_class(py, &CLS, "ProfileError").and_then(|c| c.call1((message,))) {
        Ok(exc) => PyErr::from_value(exc),
        Err(e) => e,
    }
}
