//! `outrider.ExploreResult`, `outrider.VerificationResult` and `outrider.check_evidence`.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString, PyTuple, PyType};

use crate::contract::{
    ContractError, ExploreResult, Repair, ToolUsage, VerificationMeta, VerificationResult,
    Violation,
};
use crate::py::convert::{req_str, str_tuple, to_json, type_name, value_to_py};
use crate::py::errors::contract_error;
use crate::pyjson::Json;

/// The text of a model answer: str, bytes (UTF-8) or None (treated as empty, as the reference).
fn answer_text(py: Python<'_>, raw: &Bound<'_, PyAny>, contract: &'static str) -> PyResult<String> {
    if raw.is_none() {
        return Ok(String::new());
    }
    if let Ok(s) = raw.cast::<PyString>() {
        return s.to_str().map(str::to_owned).map_err(|_| {
            PyValueError::new_err(format!(
                "{contract} text is not valid Unicode (lone surrogate)"
            ))
        });
    }
    if let Ok(b) = raw.cast::<PyBytes>() {
        return String::from_utf8(b.as_bytes().to_vec()).map_err(|e| {
            let pos = e.utf8_error().valid_up_to();
            contract_error(
                py,
                &ContractError {
                    contract,
                    violations: vec![Violation {
                        loc: vec![],
                        msg: format!(
                            "structured child result is not valid UTF-8: invalid byte at offset {pos}"
                        ),
                        kind: "utf8_invalid",
                        input: Json::Str(String::from_utf8_lossy(b.as_bytes()).into_owned()),
                    }],
                },
            )
        });
    }
    Err(PyTypeError::new_err(format!(
        "{contract}.from_json expects the model's answer as str or bytes, got {}",
        type_name(raw)
    )))
}

fn tool_usage_arg(obj: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<ToolUsage> {
    let mut usage = ToolUsage::new();
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(usage);
    };
    let d = obj.cast::<PyDict>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{what} must be a dict of tool name to call count, got {}",
            type_name(obj)
        ))
    })?;
    for (k, v) in d.iter() {
        let name = req_str(&k, &format!("{what} key"))?;
        let count = crate::py::convert::req_int(
            &v,
            &format!("{what}[{}]", crate::pyjson::py_repr_str(&name)),
        )?;
        if count < 0 {
            return Err(PyValueError::new_err(format!(
                "{what}[{}] must be >= 0, got {count}",
                crate::pyjson::py_repr_str(&name)
            )));
        }
        usage.insert(name, count as u64);
    }
    Ok(usage)
}

fn usage_dict<'py>(py: Python<'py>, usage: &ToolUsage) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in usage {
        d.set_item(k, v)?;
    }
    Ok(d)
}

fn repair_name(r: Option<Repair>) -> Option<&'static str> {
    r.map(Repair::as_str)
}

fn short(s: &str) -> String {
    const MAX: usize = 80;
    let text: String = if s.chars().count() > MAX {
        let head: String = s.chars().take(MAX - 1).collect();
        format!("{head}…")
    } else {
        s.to_string()
    };
    crate::pyjson::py_repr_str(&text)
}

fn list_repr(items: &[String]) -> String {
    let parts: Vec<String> = items.iter().map(|s| short(s)).collect();
    match parts.len() {
        0 => "()".into(),
        1 => format!("({},)", parts[0]),
        _ => format!("({})", parts.join(", ")),
    }
}

/// The validated result of an explore child (frozen).
#[pyclass(frozen, module = "outrider._core", name = "ExploreResult")]
pub struct PyExploreResult {
    pub inner: ExploreResult,
}

#[pymethods]
impl PyExploreResult {
    #[new]
    #[pyo3(signature = (status, summary, findings=None, evidence=None, unresolved_questions=None, tool_usage=None, terminal_reason="unknown"))]
    #[allow(clippy::too_many_arguments)]
    fn py_new(
        py: Python<'_>,
        status: &Bound<'_, PyAny>,
        summary: &Bound<'_, PyAny>,
        findings: Option<&Bound<'_, PyAny>>,
        evidence: Option<&Bound<'_, PyAny>>,
        unresolved_questions: Option<&Bound<'_, PyAny>>,
        tool_usage: Option<&Bound<'_, PyAny>>,
        terminal_reason: &str,
    ) -> PyResult<Self> {
        let mut obj = vec![
            ("status".to_string(), to_json(status, "status")?),
            ("summary".to_string(), to_json(summary, "summary")?),
        ];
        for (k, v) in [
            ("findings", findings),
            ("evidence", evidence),
            ("unresolved_questions", unresolved_questions),
        ] {
            if let Some(v) = v {
                obj.push((k.to_string(), to_json(v, k)?));
            }
        }
        let usage = tool_usage_arg(tool_usage, "tool_usage")?;
        ExploreResult::from_object(&Json::Object(obj), usage, terminal_reason)
            .map(|inner| PyExploreResult { inner })
            .map_err(|e| contract_error(py, &e))
    }

    /// Strict parse of a final answer, exactly as the reference parses it.
    #[classmethod]
    #[pyo3(signature = (text, *, tool_usage=None, terminal_reason="unknown"))]
    fn from_json(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        text: &Bound<'_, PyAny>,
        tool_usage: Option<&Bound<'_, PyAny>>,
        terminal_reason: &str,
    ) -> PyResult<Self> {
        let raw = answer_text(py, text, "ExploreResult")?;
        let usage = tool_usage_arg(tool_usage, "tool_usage")?;
        let reason = terminal_reason.to_string();
        py.detach(|| ExploreResult::from_json(&raw, usage, &reason))
            .map(|inner| PyExploreResult { inner })
            .map_err(|e| contract_error(py, &e))
    }

    /// Lenient parse: also takes a fenced or prose-wrapped answer. Returns `(result, repair)`
    /// where repair is None, "fence" or "extract".
    #[classmethod]
    #[pyo3(signature = (text, *, tool_usage=None, terminal_reason="unknown"))]
    fn repair(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        text: &Bound<'_, PyAny>,
        tool_usage: Option<&Bound<'_, PyAny>>,
        terminal_reason: &str,
    ) -> PyResult<(Self, Option<&'static str>)> {
        let raw = answer_text(py, text, "ExploreResult")?;
        let usage = tool_usage_arg(tool_usage, "tool_usage")?;
        let reason = terminal_reason.to_string();
        py.detach(|| ExploreResult::repair(&raw, usage, &reason))
            .map(|(inner, r)| (PyExploreResult { inner }, repair_name(r)))
            .map_err(|e| contract_error(py, &e))
    }

    /// Rebuild from `to_dict()` output (validated).
    #[classmethod]
    fn from_dict(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        if data.cast::<PyDict>().is_err() {
            return Err(PyTypeError::new_err(format!(
                "ExploreResult.from_dict expects a dict, got {}",
                type_name(data)
            )));
        }
        let obj = to_json(data, "data")?;
        ExploreResult::from_dict(&obj)
            .map(|inner| PyExploreResult { inner })
            .map_err(|e| contract_error(py, &e))
    }

    /// The result as plain JSON-ready data (lists, not tuples).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        value_to_py(py, &self.inner.to_value())
    }

    #[getter]
    fn status(&self) -> &'static str {
        self.inner.status.as_str()
    }
    #[getter]
    fn summary(&self) -> &str {
        &self.inner.summary
    }
    #[getter]
    fn findings<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        str_tuple(py, &self.inner.findings)
    }
    #[getter]
    fn evidence<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        str_tuple(py, &self.inner.evidence)
    }
    #[getter]
    fn unresolved_questions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        str_tuple(py, &self.inner.unresolved_questions)
    }
    #[getter]
    fn tool_usage<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        usage_dict(py, &self.inner.tool_usage)
    }
    #[getter]
    fn terminal_reason(&self) -> &str {
        &self.inner.terminal_reason
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<PyExploreResult>()
            .is_ok_and(|o| o.get().inner == self.inner)
    }

    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        let r = &self.inner;
        (
            r.status,
            &r.summary,
            &r.findings,
            &r.evidence,
            &r.unresolved_questions,
            &r.tool_usage,
            &r.terminal_reason,
        )
            .hash(&mut h);
        h.finish()
    }

    fn __repr__(&self) -> String {
        let r = &self.inner;
        format!(
            "ExploreResult(status='{}', summary={}, findings={}, evidence={}, unresolved_questions={}, tool_usage={}, terminal_reason={})",
            r.status.as_str(),
            short(&r.summary),
            list_repr(&r.findings),
            list_repr(&r.evidence),
            list_repr(&r.unresolved_questions),
            crate::py::convert::usage_repr(&r.tool_usage),
            short(&r.terminal_reason)
        )
    }

    fn __copy__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __deepcopy__(slf: Py<Self>, _memo: &Bound<'_, PyAny>) -> Py<Self> {
        slf
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let from_dict = slf.get_type().getattr("from_dict")?;
        let d = slf.get().to_dict(py)?;
        PyTuple::new(
            py,
            [from_dict.into_any(), PyTuple::new(py, [d])?.into_any()],
        )
    }
}

/// The validated result of a verification child (frozen).
#[pyclass(frozen, module = "outrider._core", name = "VerificationResult")]
pub struct PyVerificationResult {
    pub inner: VerificationResult,
}

#[allow(clippy::too_many_arguments)]
fn verification_meta(
    child_session_id: Option<String>,
    child_run_id: Option<String>,
    terminal_reason: &str,
    tool_usage: Option<&Bound<'_, PyAny>>,
    token_usage: Option<&Bound<'_, PyAny>>,
) -> PyResult<VerificationMeta> {
    let tokens = match token_usage.filter(|t| !t.is_none()) {
        Some(t) => crate::py::convert::req_int(t, "token_usage")?,
        None => 0,
    };
    if tokens < 0 {
        return Err(PyValueError::new_err(format!(
            "token_usage must be >= 0, got {tokens}"
        )));
    }
    Ok(VerificationMeta {
        child_session_id,
        child_run_id,
        terminal_reason: terminal_reason.to_string(),
        tool_usage: tool_usage_arg(tool_usage, "tool_usage")?,
        token_usage: tokens as u64,
    })
}

#[pymethods]
impl PyVerificationResult {
    #[new]
    #[pyo3(signature = (verdict, reasons=None, findings=None, evidence=None, child_session_id=None, child_run_id=None, terminal_reason="unknown", tool_usage=None, token_usage=None))]
    #[allow(clippy::too_many_arguments)]
    fn py_new(
        py: Python<'_>,
        verdict: &Bound<'_, PyAny>,
        reasons: Option<&Bound<'_, PyAny>>,
        findings: Option<&Bound<'_, PyAny>>,
        evidence: Option<&Bound<'_, PyAny>>,
        child_session_id: Option<String>,
        child_run_id: Option<String>,
        terminal_reason: &str,
        tool_usage: Option<&Bound<'_, PyAny>>,
        token_usage: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut obj = vec![("verdict".to_string(), to_json(verdict, "verdict")?)];
        for (k, v) in [
            ("reasons", reasons),
            ("findings", findings),
            ("evidence", evidence),
        ] {
            if let Some(v) = v {
                obj.push((k.to_string(), to_json(v, k)?));
            }
        }
        let meta = verification_meta(
            child_session_id,
            child_run_id,
            terminal_reason,
            tool_usage,
            token_usage,
        )?;
        VerificationResult::from_object(&Json::Object(obj), meta)
            .map(|inner| PyVerificationResult { inner })
            .map_err(|e| contract_error(py, &e))
    }

    /// Strict parse of a final answer, exactly as the reference parses it.
    #[classmethod]
    #[pyo3(signature = (text, *, child_session_id=None, child_run_id=None, terminal_reason="unknown", tool_usage=None, token_usage=None))]
    #[allow(clippy::too_many_arguments)]
    fn from_json(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        text: &Bound<'_, PyAny>,
        child_session_id: Option<String>,
        child_run_id: Option<String>,
        terminal_reason: &str,
        tool_usage: Option<&Bound<'_, PyAny>>,
        token_usage: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let raw = answer_text(py, text, "VerificationResult")?;
        let meta = verification_meta(
            child_session_id,
            child_run_id,
            terminal_reason,
            tool_usage,
            token_usage,
        )?;
        py.detach(|| VerificationResult::from_json(&raw, meta))
            .map(|inner| PyVerificationResult { inner })
            .map_err(|e| contract_error(py, &e))
    }

    /// Lenient parse; returns `(result, repair)`.
    #[classmethod]
    #[pyo3(signature = (text, *, child_session_id=None, child_run_id=None, terminal_reason="unknown", tool_usage=None, token_usage=None))]
    #[allow(clippy::too_many_arguments)]
    fn repair(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        text: &Bound<'_, PyAny>,
        child_session_id: Option<String>,
        child_run_id: Option<String>,
        terminal_reason: &str,
        tool_usage: Option<&Bound<'_, PyAny>>,
        token_usage: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<(Self, Option<&'static str>)> {
        let raw = answer_text(py, text, "VerificationResult")?;
        let meta = verification_meta(
            child_session_id,
            child_run_id,
            terminal_reason,
            tool_usage,
            token_usage,
        )?;
        py.detach(|| VerificationResult::repair(&raw, meta))
            .map(|(inner, r)| (PyVerificationResult { inner }, repair_name(r)))
            .map_err(|e| contract_error(py, &e))
    }

    /// Rebuild from `to_dict()` output (validated).
    #[classmethod]
    fn from_dict(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        if data.cast::<PyDict>().is_err() {
            return Err(PyTypeError::new_err(format!(
                "VerificationResult.from_dict expects a dict, got {}",
                type_name(data)
            )));
        }
        let obj = to_json(data, "data")?;
        VerificationResult::from_dict(&obj)
            .map(|inner| PyVerificationResult { inner })
            .map_err(|e| contract_error(py, &e))
    }

    /// The result as plain JSON-ready data.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        value_to_py(py, &self.inner.to_value())
    }

    #[getter]
    fn verdict(&self) -> &'static str {
        self.inner.verdict.as_str()
    }
    #[getter]
    fn reasons<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        str_tuple(py, &self.inner.reasons)
    }
    #[getter]
    fn findings<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        str_tuple(py, &self.inner.findings)
    }
    #[getter]
    fn evidence<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        str_tuple(py, &self.inner.evidence)
    }
    #[getter]
    fn child_session_id(&self) -> Option<&str> {
        self.inner.child_session_id.as_deref()
    }
    #[getter]
    fn child_run_id(&self) -> Option<&str> {
        self.inner.child_run_id.as_deref()
    }
    #[getter]
    fn terminal_reason(&self) -> &str {
        &self.inner.terminal_reason
    }
    #[getter]
    fn tool_usage<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        usage_dict(py, &self.inner.tool_usage)
    }
    #[getter]
    fn token_usage(&self) -> u64 {
        self.inner.token_usage
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<PyVerificationResult>()
            .is_ok_and(|o| o.get().inner == self.inner)
    }

    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        let r = &self.inner;
        (
            r.verdict,
            &r.reasons,
            &r.findings,
            &r.evidence,
            &r.child_session_id,
            &r.child_run_id,
        )
            .hash(&mut h);
        (&r.terminal_reason, &r.tool_usage, r.token_usage).hash(&mut h);
        h.finish()
    }

    fn __repr__(&self) -> String {
        let r = &self.inner;
        format!(
            "VerificationResult(verdict='{}', reasons={}, findings={}, evidence={}, child_session_id={:?}, terminal_reason={}, tool_usage={}, token_usage={})",
            r.verdict.as_str(),
            list_repr(&r.reasons),
            list_repr(&r.findings),
            list_repr(&r.evidence),
            r.child_session_id,
            short(&r.terminal_reason),
            crate::py::convert::usage_repr(&r.tool_usage),
            r.token_usage
        )
    }

    fn __copy__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __deepcopy__(slf: Py<Self>, _memo: &Bound<'_, PyAny>) -> Py<Self> {
        slf
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let from_dict = slf.get_type().getattr("from_dict")?;
        let d = slf.get().to_dict(py)?;
        PyTuple::new(
            py,
            [from_dict.into_any(), PyTuple::new(py, [d])?.into_any()],
        )
    }
}

/// Check `path:line` / `path:start-end` evidence items against the files under `root`.
#[pyfunction]
pub fn check_evidence<'py>(
    py: Python<'py>,
    root: &Bound<'py, PyAny>,
    evidence: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let root_path: std::path::PathBuf = root.extract().map_err(|_| {
        PyTypeError::new_err(format!(
            "root must be a str or os.PathLike, got {}",
            type_name(root)
        ))
    })?;
    let items = if evidence.is_instance_of::<PyString>() {
        vec![req_str(evidence, "evidence")?]
    } else {
        crate::py::convert::str_iterable(evidence, "evidence")?
    };
    let ws = crate::tools::workspace::Workspace::new(&root_path)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let checks = py.detach(|| crate::evidence::check_evidence(&ws, &items));
    let value = serde_json::to_value(&checks).map_err(|e| PyValueError::new_err(e.to_string()))?;
    value_to_py(py, &value)
}
