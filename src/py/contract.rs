//! `outrider.ExploreResult`, `outrider.VerificationResult` and `outrider.check_evidence`.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString, PyTuple, PyType};

use crate::api::{answer_text, evidence_arg, Answer, Error, ExploreResult, Repair, ToolUsage};
use crate::api::{VerificationResult, CHECK_EVIDENCE_PARAMS, EXPLORE_PARAMS, VERIFICATION_PARAMS};
use crate::py::convert::{bind, dump, kwargs, wrong_type};
use crate::py::enter::detach_waiting;
use crate::py::frozen_class;

/// The text of a model answer: a str as it is; bytes or None as the core reads them.
fn text_arg(raw: &Bound<'_, PyAny>, contract: &'static str) -> PyResult<String> {
    if let Ok(s) = raw.cast::<PyString>() {
        return crate::py::convert::py_str(s, "text");
    }
    let bytes = match raw.cast::<PyBytes>() {
        Ok(b) => Some(b.as_bytes()),
        Err(_) if raw.is_none() => None,
        Err(_) => return Err(wrong_type(&format!("{contract} text"), "str or bytes", raw)),
    };
    Ok(answer_text(bytes, contract).map_err(Error::from)?)
}

/// The two result classes: value semantics and the dict round trip from the core type, and its
/// parsers ([`Answer`]), whose keyword metadata `$sig` shows.
macro_rules! result_class {
    ($py:ident, $core:ty, $name:literal, $params:expr, $new_sig:literal, $sig:literal, getters { $($getters:tt)* } $($methods:tt)*) => {
        frozen_class! {
            #[doc = concat!("The validated `", $name, "` of a child (frozen).")]
            $py($core) as $name, value, views, record,
            getters {
                tool_usage: ToolUsage = |r| r.tool_usage.clone(),
                terminal_reason: String = |r| r.terminal_reason.clone(),
                $($getters)*
            }
            #[new]
            #[pyo3(signature = (*args, **kwargs), text_signature = $new_sig)]
            fn py_new(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
                Ok($py { inner: <$core>::from_kwargs(&bind(&$params, Some(args), kwargs)?)? })
            }
            /// Strict parse of a final answer, exactly as the reference parses it.
            #[classmethod]
            #[pyo3(signature = (text, **meta), text_signature = $sig)]
            fn from_json(_cls: &Bound<'_, PyType>, text: &Bound<'_, PyAny>, meta: Option<&Bound<'_, PyDict>>) -> PyResult<$core> {
                Ok(parse::<$core>(text, meta, [$name, concat!($name, ".from_json")], false)?.0)
            }
            /// Lenient parse: also a fenced or prose-wrapped answer. Returns `(result, repair)`.
            #[classmethod]
            #[pyo3(signature = (text, **meta), text_signature = $sig)]
            fn repair(_cls: &Bound<'_, PyType>, text: &Bound<'_, PyAny>, meta: Option<&Bound<'_, PyDict>>) -> PyResult<($core, Option<&'static str>)> {
                let (inner, repair) = parse::<$core>(text, meta, [$name, concat!($name, ".repair")], true)?;
                Ok((inner, repair.map(|r| r.as_str())))
            }
            #[getter]
            fn findings<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
                PyTuple::new(py, &self.inner.findings)
            }
            #[getter]
            fn evidence<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
                PyTuple::new(py, &self.inner.evidence)
            }
            $($methods)*
        }
    };
}

/// A model answer parsed by the core (without the GIL), with the metadata given by name.
fn parse<T: Answer + Send>(
    text: &Bound<'_, PyAny>,
    meta: Option<&Bound<'_, PyDict>>,
    [contract, owner]: [&'static str; 2],
    lenient: bool,
) -> PyResult<(T, Option<Repair>)> {
    let (raw, meta) = (text_arg(text, contract)?, kwargs(owner, T::META, meta)?);
    Ok(text.py().detach(|| T::parse(&raw, &meta, lenient))?)
}

result_class!(PyExploreResult, ExploreResult, "ExploreResult", EXPLORE_PARAMS,
    "(status, summary, findings=None, evidence=None, unresolved_questions=None, tool_usage=None, terminal_reason=None)",
    "($cls, text, *, tool_usage=None, terminal_reason=None)",
    getters {
        status: &'static str = |r| r.status.as_str(),
        summary: String = |r| r.summary.clone(),
    }
    #[getter]
    fn unresolved_questions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.inner.unresolved_questions)
    }
);

result_class!(PyVerificationResult, VerificationResult, "VerificationResult", VERIFICATION_PARAMS,
    "(verdict, reasons=None, findings=None, evidence=None, child_session_id=None, child_run_id=None, terminal_reason=None, tool_usage=None, token_usage=None)",
    "($cls, text, *, child_session_id=None, child_run_id=None, terminal_reason=None, tool_usage=None, token_usage=None)",
    getters {
        verdict: &'static str = |r| r.verdict.as_str(),
        child_session_id: Option<String> = |r| r.child_session_id.clone(),
        child_run_id: Option<String> = |r| r.child_run_id.clone(),
        token_usage: u64 = |r| r.token_usage,
    }
    #[getter]
    fn reasons<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.inner.reasons)
    }
);

/// Check `path:line` / `path:start-end` evidence items against the files under `root`.
#[pyfunction]
#[pyo3(signature = (*args, **kwargs), text_signature = "(root, evidence)")]
pub fn check_evidence<'py>(
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let k = bind(&CHECK_EVIDENCE_PARAMS, Some(args), kwargs)?;
    let (root, items) = (k.req_path("root")?, evidence_arg(&k)?);
    let ws = crate::api::Workspace::new(&root).map_err(crate::api::Error::from)?;
    let checks = detach_waiting(args.py(), || crate::api::check_evidence(&ws, &items));
    dump(args.py(), &checks)
}
