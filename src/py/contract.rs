//! `outrider.ExploreResult`, `outrider.VerificationResult` and `outrider.check_evidence`.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString, PyTuple, PyType};

use crate::api::VerificationResult;
use crate::api::{answer_text, Answer, Error, ExploreResult, Repair, ToolUsage};
use crate::py::args::{bind, evidence, explore_meta, kwargs, verification_meta};
use crate::py::args::{Kwargs, Params};
use crate::py::convert::{dump, wrong_type};
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
                Ok($py { inner: <$core as Parsed>::new(&bind(&$params, Some(args), kwargs)?)? })
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

/// An answer class's arguments: its fields, then the metadata its parsers also take by name.
trait Parsed: Answer + Sized {
    /// The constructor's parameters.
    const PARAMS: Params;
    /// How many of them are the answer's own fields (the rest is metadata).
    const FIELDS: usize;
    /// The metadata, given by name.
    fn meta(k: &Kwargs) -> Result<Self::Meta, Error>;
    /// A result from a constructor call's arguments.
    fn new(k: &Kwargs) -> Result<Self, Error>;
    /// The metadata keywords the parsers take.
    fn meta_names() -> &'static [&'static str] {
        Self::PARAMS.names.split_at(Self::FIELDS).1
    }
    /// The answer's own fields given, as one JSON object.
    fn fields(k: &Kwargs) -> Result<crate::api::Json, Error> {
        k.object(&Self::PARAMS.names[..Self::FIELDS])
    }
}

impl Parsed for ExploreResult {
    const PARAMS: Params = Params {
        owner: "ExploreResult",
        names: &[
            "status",
            "summary",
            "findings",
            "evidence",
            "unresolved_questions",
            "tool_usage",
            "terminal_reason",
        ],
        positional: 7,
        required: 2,
    };
    const FIELDS: usize = 5;
    fn meta(k: &Kwargs) -> Result<Self::Meta, Error> {
        explore_meta(k)
    }
    fn new(k: &Kwargs) -> Result<Self, Error> {
        let (usage, reason) = explore_meta(k)?;
        Ok(Self::from_object(&Self::fields(k)?, usage, &reason)?)
    }
}

impl Parsed for VerificationResult {
    const PARAMS: Params = Params {
        owner: "VerificationResult",
        names: &[
            "verdict",
            "reasons",
            "findings",
            "evidence",
            "child_session_id",
            "child_run_id",
            "terminal_reason",
            "tool_usage",
            "token_usage",
        ],
        positional: 9,
        required: 1,
    };
    const FIELDS: usize = 4;
    fn meta(k: &Kwargs) -> Result<Self::Meta, Error> {
        verification_meta(k)
    }
    fn new(k: &Kwargs) -> Result<Self, Error> {
        Ok(Self::from_object(&Self::fields(k)?, verification_meta(k)?)?)
    }
}

/// A model answer parsed by the core (without the GIL), with the metadata given by name.
fn parse<T: Parsed + Send>(
    text: &Bound<'_, PyAny>,
    meta: Option<&Bound<'_, PyDict>>,
    [contract, owner]: [&'static str; 2],
    lenient: bool,
) -> PyResult<(T, Option<Repair>)> {
    let (raw, meta) = (
        text_arg(text, contract)?,
        kwargs(owner, T::meta_names(), meta)?,
    );
    let meta = T::meta(&meta)?;
    Ok(text.py().detach(|| T::parse(&raw, meta, lenient))?)
}

result_class!(PyExploreResult, ExploreResult, "ExploreResult", <ExploreResult as Parsed>::PARAMS,
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
    /// Where each evidence item came from (`model`, `index`, `both` or `seen`), item for item;
    /// empty when unknown.
    #[getter]
    fn evidence_sources<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.inner.evidence_sources)
    }
);

result_class!(PyVerificationResult, VerificationResult, "VerificationResult", <VerificationResult as Parsed>::PARAMS,
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

/// `check_evidence(...)`'s parameters.
const CHECK_EVIDENCE_PARAMS: Params = Params {
    owner: "check_evidence",
    names: &["root", "evidence"],
    positional: 2,
    required: 2,
};

/// Check `path:line` / `path:start-end` evidence items against the files under `root`.
#[pyfunction]
#[pyo3(signature = (*args, **kwargs), text_signature = "(root, evidence)")]
pub(super) fn check_evidence<'py>(
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let k = bind(&CHECK_EVIDENCE_PARAMS, Some(args), kwargs)?;
    let (root, items) = (k.req_path("root")?, evidence(&k)?);
    let ws = crate::api::Workspace::new(&root).map_err(crate::api::Error::from)?;
    let checks = detach_waiting(args.py(), || crate::api::check_evidence(&ws, &items));
    dump(args.py(), &checks)
}
