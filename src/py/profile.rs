//! `outrider.RuntimeProfile`: a frozen view of the core profile.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFrozenSet, PyString, PyTuple, PyType};

use crate::json::Json;
use crate::profile::{RuntimeProfile, PROFILE_FIELDS};
use crate::py::convert::to_json;
use crate::py::errors::wrong_type;

/// A sub-agent profile (frozen). See the stub for field docs.
#[pyclass(frozen, module = "outrider._core", name = "RuntimeProfile")]
pub struct PyRuntimeProfile {
    pub inner: RuntimeProfile,
}

/// Keyword values → `(field, JSON)` pairs for the core. The allow-list may be any iterable.
fn fields(d: &Bound<'_, PyDict>) -> PyResult<Vec<(String, Json)>> {
    d.iter()
        .map(|(k, v)| {
            let key: String = k.extract()?;
            let what = format!("RuntimeProfile.{key}");
            let iterable = key == "tool_allowlist" && !v.is_instance_of::<PyString>();
            let value = match v.try_iter() {
                Ok(items) if iterable => Json::Array(
                    items
                        .map(|t| to_json(&t?, &format!("{what} item")))
                        .collect::<PyResult<_>>()?,
                ),
                _ => to_json(&v, &what)?,
            };
            Ok((key, value))
        })
        .collect()
}

#[pymethods]
impl PyRuntimeProfile {
    #[new]
    #[pyo3(signature = (name, system_prompt, tool_allowlist=None, max_steps=None, context_token_budget=None,
        total_token_budget=None, model_choice=None, context_source_policy=None, completion_policy=None,
        result_contract=None, recursive_subagents=None, *, gate_retries=None, on_budget_exhausted=None,
        timeout_seconds=None))]
    #[allow(clippy::too_many_arguments, unused_variables)]
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
        let given = [
            Some(name),
            Some(system_prompt),
            tool_allowlist,
            max_steps,
            context_token_budget,
            total_token_budget,
            model_choice,
            context_source_policy,
            completion_policy,
            result_contract,
            recursive_subagents,
            gate_retries,
            on_budget_exhausted,
            timeout_seconds,
        ];
        let d = PyDict::new(py);
        for (field, value) in PROFILE_FIELDS.iter().zip(given) {
            if let Some(v) = value {
                d.set_item(field, v)?;
            }
        }
        Ok(PyRuntimeProfile {
            inner: RuntimeProfile::from_fields(&fields(&d)?)?,
        })
    }

    /// A copy with some fields changed, validated again.
    #[pyo3(signature = (**changes))]
    fn replace(&self, changes: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let changes = changes.map(fields).transpose()?.unwrap_or_default();
        Ok(PyRuntimeProfile {
            inner: self.inner.clone().with_fields(&changes)?,
        })
    }

    /// All fields as a dict (the allow-list as a frozenset).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = crate::py::convert::dump(py, &self.inner)?.cast_into::<PyDict>()?;
        d.set_item("tool_allowlist", self.tool_allowlist(py)?)?;
        Ok(d)
    }

    /// Build (and validate) a profile from `to_dict()` output.
    #[classmethod]
    fn from_dict(_cls: &Bound<'_, PyType>, data: &Bound<'_, PyAny>) -> PyResult<Self> {
        let d = data
            .cast::<PyDict>()
            .map_err(|_| wrong_type("RuntimeProfile.from_dict data", "a dict", data))?;
        Ok(PyRuntimeProfile {
            inner: RuntimeProfile::from_fields(&fields(d)?)?,
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
        PyFrozenSet::new(py, &self.inner.tool_allowlist)
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
        other
            .cast::<PyRuntimeProfile>()
            .is_ok_and(|o| o.get().inner == self.inner)
    }
    fn __hash__(&self) -> u64 {
        crate::py::hash_of(&self.inner)
    }
    fn __repr__(&self) -> String {
        self.inner.to_string()
    }
    fn __copy__(slf: Py<Self>) -> Py<Self> {
        slf
    }
    fn __deepcopy__(slf: Py<Self>, _memo: &Bound<'_, PyAny>) -> Py<Self> {
        slf
    }
    fn __reduce__<'py>(slf: &Bound<'py, Self>, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let d = slf.get().to_dict(py)?;
        (slf.get_type().getattr("from_dict")?, (d,)).into_pyobject(py)
    }
}
