//! The core's one error tree as Python exceptions, with one exhaustive mapping. The classes live
//! in `outrider/exceptions.py` (with abi3 below 3.12 a Rust exception class cannot carry fields);
//! every one derives from `outrider.OutriderError`.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::api::Error;
use crate::api::{ContractError, LocItem};
use crate::py::convert::dump;

fn class<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    static MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
    let module = MODULE.get_or_try_init(py, || -> PyResult<Py<PyModule>> {
        Ok(py.import("outrider.exceptions")?.unbind())
    })?;
    module.bind(py).getattr(name)
}

fn raise<'py>(py: Python<'py>, name: &str, args: impl pyo3::call::PyCallArgs<'py>) -> PyErr {
    match class(py, name).and_then(|c| c.call1(args)) {
        Ok(exc) => PyErr::from_value(exc),
        Err(e) => e,
    }
}

fn contract_error(py: Python<'_>, err: &ContractError) -> PyResult<PyErr> {
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
        d.set_item("input", dump(py, &v.input)?)?;
        errors.append(d)?;
    }
    Ok(raise(
        py,
        "ContractError",
        (err.to_string(), errors, err.contract),
    ))
}

impl From<Error> for PyErr {
    fn from(err: Error) -> PyErr {
        Python::attach(|py| {
            let msg = crate::api::redact_str(&err.to_string());
            match &err {
                Error::Profile(_) => raise(py, "ProfileError", (msg,)),
                Error::Contract(c) => contract_error(py, c).unwrap_or_else(|e| e),
                Error::Path(_) => raise(py, "PathError", (msg,)),
                Error::Launch(_) => raise(py, "LaunchError", (msg,)),
                Error::InvalidArgument { .. } => raise(py, "ConfigError", (msg,)),
                Error::Type { .. } => raise(py, "ArgumentTypeError", (msg,)),
                Error::TraceDir(_) => raise(py, "TraceDirError", (msg,)),
                Error::Model(m) => raise(py, "ModelError", (msg, m.kind.as_str(), m.status)),
                Error::Internal(_) => raise(py, "InternalError", (msg,)),
            }
        })
    }
}
