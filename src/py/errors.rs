//! The core's one error tree as Python exceptions, with one exhaustive mapping. The classes live
//! in `outrider/exceptions.py` (with abi3 below 3.12 a Rust exception class cannot carry fields);
//! every one derives from `outrider.OutriderError`.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

use crate::api::Error;
use crate::py::convert::dump;

/// An instance of `outrider.exceptions.<name>(*args)` as the error to raise.
fn raise<'py>(
    py: Python<'py>,
    name: &str,
    args: impl pyo3::call::PyCallArgs<'py>,
) -> PyResult<PyErr> {
    static MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
    let module =
        MODULE.get_or_try_init(py, || py.import("outrider.exceptions").map(Bound::unbind))?;
    Ok(PyErr::from_value(
        module.bind(py).getattr(name)?.call1(args)?,
    ))
}

impl From<Error> for PyErr {
    fn from(err: Error) -> PyErr {
        Python::attach(|py| {
            let msg = crate::api::redact_str(&err.to_string());
            let class = match &err {
                Error::Contract(c) => {
                    let errors = dump(py, &c.violations);
                    return errors.and_then(|e| raise(py, "ContractError", (msg, e, c.contract)));
                }
                Error::Model(m) => {
                    return raise(py, "ModelError", (msg, m.kind.as_str(), m.status))
                }
                Error::Profile(_) => "ProfileError",
                Error::Path(_) => "PathError",
                Error::Launch(_) => "LaunchError",
                Error::InvalidArgument { .. } => "ConfigError",
                Error::Type { .. } => "ArgumentTypeError",
                Error::TraceDir(_) => "TraceDirError",
                Error::Internal(_) => "InternalError",
            };
            raise(py, class, (msg,))
        })
        .unwrap_or_else(|e| e)
    }
}
