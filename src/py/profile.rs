//! `outrider.RuntimeProfile`: a frozen view of the core profile.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFrozenSet, PyTuple, PyType};

use crate::profile::{explore_profile, RuntimeProfile};
use crate::py::convert::{frozenset, req_bool, req_float, req_int, req_str, str_iterable};
use crate::py::errors::profile_error;

const FIELDS: [&str; 14] = [
    "name",
    "system_prompt",
    "tool_allowlist",
    "max_steps",
    "context_token_budget",
    "total_token_budget",
    "model_choice",
    "context_source_policy",
    "completion_policy",
    "result_contract",
    "recursive_subagents",
    "gate_retries",
    "on_budget_exhausted",
    "timeout_seconds",
];

/// A sub-agent profile (frozen). See the stub for field docs.
#[pyclass(frozen, module = "outrider._core", name = "RuntimeProfile")]
pub struct PyRuntimeProfile {
    pub inner: RuntimeProfile,
}

fn apply(
    py: Python<'_>,
    mut p: RuntimeProfile,
    changes: &Bound<'_, PyDict>,
) -> PyResult<RuntimeProfile> {
    for (key, value) in changes.iter() {
        let key: String = key.extract()?;
        let what = format!("RuntimeProfile.{key}");
        match key.as_str() {
            "name" => p.name = req_str(&value, &what)?,
            "system_prompt" => p.system_prompt = req_str(&value, &what)?,
            "tool_allowlist" => {
                p.tool_allowlist = str_iterable(&value, &what)?.into_iter().collect()
            }
            "max_steps" => p.max_steps = req_int(&value, &what)?,
            "context_token_budget" => p.context_token_budget = req_int(&value, &what)?,
            "total_token_budget" => p.total_token_budget = req_int(&value, &what)?,
            "model_choice" => p.model_choice = req_str(&value, &what)?,
            "context_source_policy" => p.context_source_policy = req_str(&value, &what)?,
            "completion_policy" => p.completion_policy = req_str(&value, &what)?,
            "result_contract" => p.result_contract = req_str(&value, &what)?,
            "recursive_subagents" => p.recursive_subagents = req_bool(&value, &what)?,
            "gate_retries" => p.gate_retries = req_int(&value, &what)?,
            "on_budget_exhausted" => p.on_budget_exhausted = req_str(&value, &what)?,
            "timeout_seconds" => p.timeout_seconds = req_float(&value, &what)?,
            other => {
                return Err(PyTypeError::new_err(format!(
                    "RuntimeProfile has no field '{other}'; fields are: {}",
                    FIELDS.join(", ")
                )))
            }
        }
    }
    p.validate().map_err(|e| profile_error(py, &e.0))?;
    Ok(p)
}

impl PyRuntimeProfile {
    /// Wrap a core profile (already validated).
    pub fn new(inner: RuntimeProfile) -> Self {
        PyRuntimeProfile { inner }
    }

    fn to_dict_bound<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let p = &self.inner;
        let d = PyDict::new(py);
        d.set_item("name", &p.name)?;
        d.set_item("system_prompt", &p.system_prompt)?;
        d.set_item(
            "tool_allowlist",
            frozenset(py, p.tool_allowlist.iter().cloned())?,
        )?;
        d.set_item("max_steps", p.max_steps)?;
        d.set_item("context_token_budget", p.context_token_budget)?;
        d.set_item("total_token_budget", p.total_token_budget)?;
        d.set_item("model_choice", &p.model_choice)?;
        d.set_item("context_source_policy", &p.context_source_policy)?;
        d.set_item("completion_policy", &p.completion_policy)?;
        d.set_item("result_contract", &p.result_contract)?;
        d.set_item("recursive_subagents", p.recursive_subagents)?;
        d.set_item("gate_retries", p.gate_retries)?;
        d.set_item("on_budget_exhausted", &p.on_budget_exhausted)?;
        d.set_item("timeout_seconds", p.timeout_seconds)?;
        Ok(d)
    }
}

#[pymethods]
impl PyRuntimeProfile {
    #[new]
    #[pyo3(signature = (name, system_prompt, tool_allowlist=None, max_steps=None, context_token_budget=None,
        total_token_budget=None, model_choice=None, context_source_policy=None, completion_policy=None,
        result_contract=None, recursive_subagents=None, *, gate_retries=None, on_budget_exhausted=None,
        timeout_seconds=None))]
    #[allow(clippy::too_many_arguments)]
    fn py_new(
        py: Python<'_>,
        name: Bound<'_, PyAny>,
        system_prompt: Bound<'_, PyAny>,
        tool_allowlist: Option<Bound<'_, PyAny>>,
        max_steps: Option<Bound<'_, PyAny>>,
        context_token_budget: Option<Bound<'_, PyAny>>,
        total_token_budget: Option<Bound<'_, PyAny>>,
        model_choice: Option<Bound<'_, PyAny>>,
        context_source_policy: Option<Bound<'_, PyAny>>,
        completion_policy: Option<Bound<'_, PyAny>>,
        result_contract: Option<Bound<'_, PyAny>>,
        recursive_subagents: Option<Bound<'_, PyAny>>,
        gate_retries: Option<Bound<'_, PyAny>>,
        on_budget_exhausted: Option<Bound<'_, PyAny>>,
        timeout_seconds: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let given = PyDict::new(py);
        given.set_item("name", name)?;
        given.set_item("system_prompt", system_prompt)?;
        let optional = [
            ("tool_allowlist", tool_allowlist),
            ("max_steps", max_steps),
            ("context_token_budget", context_token_budget),
            ("total_token_budget", total_token_budget),
            ("model_choice", model_choice),
            ("context_source_policy", context_source_policy),
            ("completion_policy", completion_policy),
            ("result_contract", result_contract),
            ("recursive_subagents", recursive_subagents),
            ("gate_retries", gate_retries),
            ("on_budget_exhausted", on_budget_exhausted),
            ("timeout_seconds", timeout_seconds),
        ];
        for (k, v) in optional {
            if let Some(v) = v {
                given.set_item(k, v)?;
            }
        }
        Ok(PyRuntimeProfile {
            inner: apply(py, explore_profile(), &given)?,
        })
    }

    /// A copy with some fields changed, validated again.
    #[pyo3(signature = (**changes))]
    fn replace(&self, py: Python<'_>, changes: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let empty = PyDict::new(py);
        let changes = changes.unwrap_or(&empty);
        Ok(PyRuntimeProfile {
            inner: apply(py, self.inner.clone(), changes)?,
        })
    }

    /// All fields as a dict (the allow-list as a frozenset).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.to_dict_bound(py)
    }

    /// Build (and validate) a profile from `to_dict()` output.
    #[classmethod]
    fn from_dict(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let d = data
            .cast::<PyDict>()
            .map_err(|_| PyTypeError::new_err("RuntimeProfile.from_dict expects a dict"))?;
        for req in ["name", "system_prompt"] {
            if !d.contains(req)? {
                return Err(PyTypeError::new_err(format!(
                    "RuntimeProfile.from_dict: missing required field '{req}'"
                )));
            }
        }
        Ok(PyRuntimeProfile {
            inner: apply(py, explore_profile(), d)?,
        })
    }

    /// The system prompt with the budgets filled in: what the child actually receives.
    #[getter]
    fn rendered_system_prompt(&self) -> String {
        self.inner.rendered_system_prompt()
    }

    #[getter]
    fn name(&self) -> &str {
        &self.inner.name
    }
    #[getter]
    fn system_prompt(&self) -> &str {
        &self.inner.system_prompt
    }
    #[getter]
    fn tool_allowlist<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyFrozenSet>> {
        frozenset(py, self.inner.tool_allowlist.iter().cloned())
    }
    #[getter]
    fn max_steps(&self) -> i64 {
        self.inner.max_steps
    }
    #[getter]
    fn context_token_budget(&self) -> i64 {
        self.inner.context_token_budget
    }
    #[getter]
    fn total_token_budget(&self) -> i64 {
        self.inner.total_token_budget
    }
    #[getter]
    fn model_choice(&self) -> &str {
        &self.inner.model_choice
    }
    #[getter]
    fn context_source_policy(&self) -> &str {
        &self.inner.context_source_policy
    }
    #[getter]
    fn completion_policy(&self) -> &str {
        &self.inner.completion_policy
    }
    #[getter]
    fn result_contract(&self) -> &str {
        &self.inner.result_contract
    }
    #[getter]
    fn recursive_subagents(&self) -> bool {
        self.inner.recursive_subagents
    }
    #[getter]
    fn gate_retries(&self) -> i64 {
        self.inner.gate_retries
    }
    #[getter]
    fn on_budget_exhausted(&self) -> &str {
        &self.inner.on_budget_exhausted
    }
    #[getter]
    fn timeout_seconds(&self) -> f64 {
        self.inner.timeout_seconds
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        match other.cast::<PyRuntimeProfile>() {
            Ok(o) => o.get().inner == self.inner,
            Err(_) => false,
        }
    }

    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        let p = &self.inner;
        (
            &p.name,
            &p.system_prompt,
            &p.tool_allowlist,
            p.max_steps,
            p.context_token_budget,
        )
            .hash(&mut h);
        (
            p.total_token_budget,
            &p.model_choice,
            &p.result_contract,
            p.gate_retries,
        )
            .hash(&mut h);
        (&p.on_budget_exhausted, p.timeout_seconds.to_bits()).hash(&mut h);
        h.finish()
    }

    fn __repr__(&self) -> String {
        let p = &self.inner;
        let tools: Vec<String> = p.tool_allowlist.iter().map(|t| format!("'{t}'")).collect();
        format!(
            "RuntimeProfile(name='{}', tool_allowlist={{{}}}, max_steps={}, context_token_budget={}, total_token_budget={}, model_choice='{}', result_contract='{}', gate_retries={}, on_budget_exhausted='{}', timeout_seconds={})",
            p.name, tools.join(", "), p.max_steps, p.context_token_budget, p.total_token_budget,
            p.model_choice, p.result_contract, p.gate_retries, p.on_budget_exhausted, PyFloatRepr(p.timeout_seconds)
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
        let d = slf.get().to_dict_bound(py)?;
        PyTuple::new(
            py,
            [from_dict.into_any(), PyTuple::new(py, [d])?.into_any()],
        )
    }
}

/// Formats an f64 the way Python's repr does for ordinary values (`300.0`, `0.5`).
struct PyFloatRepr(f64);

impl std::fmt::Display for PyFloatRepr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::pyjson::Json::Float(self.0).py_repr())
    }
}
