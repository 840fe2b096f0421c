//! `outrider.run_tool` and `outrider.tool_schemas`.

use pyo3::prelude::*;

use crate::api::{run_tool_blocking, CancelToken};
use crate::py::convert::{dump, opt_float, opt_str, opt_str_list, path_arg, req_str, tool_args};
use crate::py::runtime::{finish, Plain};

/// Run one tool under `root` and return its envelope dict. Bad arguments give an error envelope.
#[pyfunction]
#[pyo3(signature = (root, name, arguments=None, *, runtime_mode=None, timeout=None))]
pub fn run_tool(
    py: Python<'_>,
    root: &Bound<'_, PyAny>,
    name: &Bound<'_, PyAny>,
    arguments: Option<&Bound<'_, PyAny>>,
    runtime_mode: Option<&Bound<'_, PyAny>>,
    timeout: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let mode = opt_str(runtime_mode, "runtime_mode")?;
    let timeout = opt_float(timeout, "timeout")?;
    let root = path_arg(root, "root")?;
    let name = req_str(name, "name")?;
    let args = tool_args(arguments);
    // On a blocking thread, so that Ctrl-C is heard while the tool runs (it stops the tool).
    let run = |cancel| async move {
        let envelope = run_tool_blocking(root, name, args, mode, timeout, cancel).await;
        envelope.map(Plain)
    };
    finish(py, &CancelToken::new(), false, run)
}

/// The JSON schemas of the read-only tools, in OpenAI or Anthropic tool format.
#[pyfunction]
#[pyo3(signature = (format=None, names=None))]
pub fn tool_schemas<'py>(
    py: Python<'py>,
    format: Option<&Bound<'py, PyAny>>,
    names: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let (format, names) = (opt_str(format, "format")?, opt_str_list(names, "names")?);
    dump(py, &crate::api::tool_schemas(format.as_deref(), names)?)
}
