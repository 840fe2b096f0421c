//! `outrider.run_tool` and `outrider.tool_schemas`.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::api::{run_tool_blocking, CancelToken};
use crate::py::args::{bind, Args, Params};
use crate::py::convert::{dump, tool_args};

/// `run_tool(...)`'s parameters.
const RUN_TOOL_PARAMS: Params = Params {
    owner: "run_tool",
    names: &["root", "name", "arguments", "runtime_mode", "timeout"],
    positional: 3,
    required: 2,
};

/// `tool_schemas(...)`'s parameters.
const TOOL_SCHEMAS_PARAMS: Params = Params {
    owner: "tool_schemas",
    names: &["format", "names"],
    positional: 2,
    required: 0,
};
use crate::py::runtime::{finish, Plain};

/// Run one tool under `root` and return its envelope dict. Bad arguments give an error envelope.
#[pyfunction]
#[pyo3(
    signature = (*args, **kwargs),
    text_signature = "(root, name, arguments=None, *, runtime_mode=None, timeout=None)"
)]
pub(super) fn run_tool(
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Py<PyAny>> {
    let a = Args::bind(&RUN_TOOL_PARAMS, Some(args), kwargs)?;
    let k = a.plain(&["arguments"])?;
    let (root, name) = (k.req_path("root")?, k.req_str("name")?);
    let (mode, timeout) = (k.str("runtime_mode")?, k.number("timeout")?);
    let (py, args) = (args.py(), tool_args(a.get("arguments")));
    // On a blocking thread, so that Ctrl-C is heard while the tool runs (it stops the tool).
    let run = |cancel| async move {
        let envelope = run_tool_blocking(root, name, args, mode, timeout, cancel).await;
        envelope.map(Plain)
    };
    finish(py, &CancelToken::new(), false, run)
}

/// The JSON schemas of the read-only tools, in OpenAI or Anthropic tool format.
#[pyfunction]
#[pyo3(signature = (*args, **kwargs), text_signature = "(format=None, names=None)")]
pub(super) fn tool_schemas<'py>(
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let k = bind(&TOOL_SCHEMAS_PARAMS, Some(args), kwargs)?;
    let (format, names) = (k.str("format")?, k.str_list("names")?);
    dump(
        args.py(),
        &crate::api::tool_schemas(format.as_deref(), names)?,
    )
}
