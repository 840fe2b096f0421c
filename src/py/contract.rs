//! `outrider.ExploreResult`, `outrider.VerificationResult` and `outrider.check_evidence`.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString, PyTuple, PyType};

use crate::api::{answer_text, explore_meta, Error, ExploreResult, ToolUsage};
use crate::api::{VerificationMeta, VerificationResult, EXPLORE_META, EXPLORE_PARAMS};
use crate::api::{VERIFICATION_META, VERIFICATION_PARAMS};
use crate::py::convert::{bind, dump, kwargs, path_arg, str_list, to_json, wrong_type};
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

/// The methods both result classes share (dict round trip; value semantics come with `value`).
macro_rules! result_class {
    ($py:ident, $core:ty, $name:literal, getters { $($getters:tt)* } $($methods:tt)*) => {
        frozen_class! {
            #[doc = concat!("The validated `", $name, "` of a child (frozen).")]
            $py($core) as $name, value,
            getters {
                tool_usage: ToolUsage = |r| r.tool_usage.clone(),
                terminal_reason: String = |r| r.terminal_reason.clone(),
                $($getters)*
            }
            /// Rebuild from `to_dict()` output (validated).
            #[classmethod]
            fn from_dict(_cls: &Bound<'_, PyType>, data: &Bound<'_, PyAny>) -> PyResult<Self> {
                if data.cast::<PyDict>().is_err() {
                    return Err(wrong_type(concat!($name, ".from_dict data"), "a dict", data));
                }
                let inner = <$core>::from_dict(&to_json(data, "data")?).map_err(crate::api::Error::from)?;
                Ok($py { inner })
            }
            /// The result as plain JSON-ready data (lists, not tuples).
            fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                dump(py, &self.inner)
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

result_class!(PyExploreResult, ExploreResult, "ExploreResult",
    getters {
        status: &'static str = |r| r.status.as_str(),
        summary: String = |r| r.summary.clone(),
    }
    #[new]
    #[pyo3(signature = (*args, **kwargs), text_signature = "(status, summary, findings=None, evidence=None, unresolved_questions=None, tool_usage=None, terminal_reason=None)")]
    fn py_new(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        Ok(PyExploreResult { inner: ExploreResult::from_kwargs(&bind(&EXPLORE_PARAMS, Some(args), kwargs)?)? })
    }
    /// Strict parse of a final answer, exactly as the reference parses it.
    #[classmethod]
    #[pyo3(signature = (text, **meta), text_signature = "($cls, text, *, tool_usage=None, terminal_reason=None)")]
    fn from_json(_cls: &Bound<'_, PyType>, py: Python<'_>, text: &Bound<'_, PyAny>, meta: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let (raw, (usage, reason)) = (text_arg(text, "ExploreResult")?, explore_meta(&kwargs("ExploreResult.from_json", EXPLORE_META, meta)?)?);
        let inner = py.detach(|| ExploreResult::from_json(&raw, usage, &reason)).map_err(Error::from)?;
        Ok(PyExploreResult { inner })
    }
    /// Lenient parse: also a fenced or prose-wrapped answer. Returns `(result, repair)`.
    #[classmethod]
    #[pyo3(signature = (text, **meta), text_signature = "($cls, text, *, tool_usage=None, terminal_reason=None)")]
    fn repair(_cls: &Bound<'_, PyType>, py: Python<'_>, text: &Bound<'_, PyAny>, meta: Option<&Bound<'_, PyDict>>) -> PyResult<(Self, Option<&'static str>)> {
        let (raw, (usage, reason)) = (text_arg(text, "ExploreResult")?, explore_meta(&kwargs("ExploreResult.repair", EXPLORE_META, meta)?)?);
        let (inner, r) = py.detach(|| ExploreResult::repair(&raw, usage, &reason)).map_err(Error::from)?;
        Ok((PyExploreResult { inner }, r.map(|r| r.as_str())))
    }
    #[getter]
    fn unresolved_questions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.inner.unresolved_questions)
    }
);

result_class!(PyVerificationResult, VerificationResult, "VerificationResult",
    getters {
        verdict: &'static str = |r| r.verdict.as_str(),
        child_session_id: Option<String> = |r| r.child_session_id.clone(),
        child_run_id: Option<String> = |r| r.child_run_id.clone(),
        token_usage: u64 = |r| r.token_usage,
    }
    #[new]
    #[pyo3(signature = (*args, **kwargs), text_signature = "(verdict, reasons=None, findings=None, evidence=None, child_session_id=None, child_run_id=None, terminal_reason=None, tool_usage=None, token_usage=None)")]
    fn py_new(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        Ok(PyVerificationResult { inner: VerificationResult::from_kwargs(&bind(&VERIFICATION_PARAMS, Some(args), kwargs)?)? })
    }
    /// Strict parse of a final answer, exactly as the reference parses it.
    #[classmethod]
    #[pyo3(signature = (text, **meta), text_signature = "($cls, text, *, child_session_id=None, child_run_id=None, terminal_reason=None, tool_usage=None, token_usage=None)")]
    fn from_json(_cls: &Bound<'_, PyType>, py: Python<'_>, text: &Bound<'_, PyAny>, meta: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let (raw, meta) = (text_arg(text, "VerificationResult")?, kwargs("VerificationResult.from_json", VERIFICATION_META, meta)?);
        let inner = py.detach(|| VerificationResult::from_json(&raw, VerificationMeta::from_kwargs(&meta)?).map_err(Error::from))?;
        Ok(PyVerificationResult { inner })
    }
    /// Lenient parse; returns `(result, repair)`.
    #[classmethod]
    #[pyo3(signature = (text, **meta), text_signature = "($cls, text, *, child_session_id=None, child_run_id=None, terminal_reason=None, tool_usage=None, token_usage=None)")]
    fn repair(_cls: &Bound<'_, PyType>, py: Python<'_>, text: &Bound<'_, PyAny>, meta: Option<&Bound<'_, PyDict>>) -> PyResult<(Self, Option<&'static str>)> {
        let (raw, meta) = (text_arg(text, "VerificationResult")?, kwargs("VerificationResult.repair", VERIFICATION_META, meta)?);
        let (inner, r) = py.detach(|| VerificationResult::repair(&raw, VerificationMeta::from_kwargs(&meta)?).map_err(Error::from))?;
        Ok((PyVerificationResult { inner }, r.map(|r| r.as_str())))
    }
    #[getter]
    fn reasons<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.inner.reasons)
    }
);

/// Check `path:line` / `path:start-end` evidence items against the files under `root`.
#[pyfunction]
pub fn check_evidence<'py>(
    py: Python<'py>,
    root: &Bound<'py, PyAny>,
    evidence: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let root = path_arg(root, "root")?;
    let items = match evidence.cast::<PyString>() {
        Ok(one) => vec![crate::py::convert::py_str(one, "evidence")?],
        Err(_) => str_list(evidence, "evidence")?,
    };
    let ws = crate::api::Workspace::new(&root).map_err(crate::api::Error::from)?;
    let checks = py.detach(|| crate::api::check_evidence(&ws, &items));
    dump(py, &checks)
}
