//! `outrider.RuntimeProfile`: a frozen view of the core profile.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFrozenSet, PyTuple};

use crate::api::{Json, RuntimeProfile, PROFILE_FIELDS};
use crate::py::args::{Args, Params};
use crate::py::convert::to_json;
use crate::py::frozen_class;
use crate::py::schema::{output_schema_arg, output_schema_value};

/// One keyword value as the core takes it, named `RuntimeProfile.<key>`.
fn field(key: &str, v: &Bound<'_, PyAny>) -> PyResult<(String, Json)> {
    Ok((key.into(), to_json(v, &format!("RuntimeProfile.{key}"))?))
}

/// Keyword values → `(field, JSON)` pairs for the core.
fn fields(d: &Bound<'_, PyDict>) -> PyResult<Vec<(String, Json)>> {
    d.iter()
        .map(|(k, v)| field(&k.extract::<String>()?, &v))
        .collect()
}

/// `RuntimeProfile(...)`'s parameters: the first 11 fields may come in [`PROFILE_FIELDS`]
/// order, any by name.
const PROFILE_PARAMS: Params = Params {
    owner: "RuntimeProfile",
    names: &PROFILE_FIELDS,
    positional: 11,
    required: 0,
};

frozen_class! {
    /// A sub-agent profile (frozen). See the stub for field docs.
    PyRuntimeProfile(RuntimeProfile) as "RuntimeProfile", value, record_from,
    getters {
        rendered_system_prompt: String = |p| p.rendered_system_prompt(),
        name: String = |p| p.name.clone(),
        system_prompt: String = |p| p.system_prompt.clone(),
        max_steps: i64 = |p| p.max_steps,
        context_token_budget: i64 = |p| p.context_token_budget,
        total_token_budget: i64 = |p| p.total_token_budget,
        model_choice: &'static str = |p| p.model_choice.as_str(),
        context_source_policy: String = |p| p.context_source_policy.clone(),
        completion_policy: String = |p| p.completion_policy.clone(),
        result_contract: &'static str = |p| p.result_contract.map_or("", |c| c.as_str()),
        recursive_subagents: bool = |p| p.recursive_subagents,
        gate_retries: i64 = |p| p.gate_retries,
        on_budget_exhausted: &'static str = |p| p.on_budget_exhausted.as_str(),
        timeout_seconds: f64 = |p| p.timeout_seconds,
        min_tool_calls: i64 = |p| p.min_tool_calls,
        repo_map_hint: bool = |p| p.repo_map_hint,
        tool_result_format: &'static str = |p| p.tool_result_format.as_str(),
        scout_fallback: bool = |p| p.scout_fallback,
        max_summary_chars: Option<i64> = |p| p.max_summary_chars,
    }
    #[new]
    #[pyo3(
        signature = (*args, **kwargs),
        text_signature = "(name, system_prompt, tool_allowlist=None, max_steps=None, context_token_budget=None, total_token_budget=None, model_choice=None, context_source_policy=None, completion_policy=None, result_contract=None, recursive_subagents=None, *, gate_retries=None, on_budget_exhausted=None, timeout_seconds=None, min_tool_calls=None, repo_map_hint=None, tool_result_format=None, scout_fallback=None, output_schema=None, max_summary_chars=None, tuning=None)"
    )]
    fn py_new(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let a = Args::bind(&PROFILE_PARAMS, Some(args), kwargs)?;
        let schema = output_schema_arg(a.get("output_schema"), "RuntimeProfile.output_schema")?;
        let plain = a.plain(&["output_schema"])?;
        let inner = RuntimeProfile::from_fields(plain.items().map_err(|e| e.within("RuntimeProfile"))?)?;
        let inner = match schema {
            Some(s) => inner.with_output_schema(Some(s)).map_err(crate::api::Error::from)?,
            None => inner,
        };
        Ok(PyRuntimeProfile { inner })
    }

    /// The schema the child answers in: the pydantic class or the JSON-schema dict it was
    /// given, or None (the result contract's shape).
    #[getter]
    fn output_schema<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        output_schema_value(py, self.inner.output_schema.as_ref())
    }

    /// A copy with some fields changed, validated again.
    #[pyo3(signature = (*args, **changes), text_signature = "($self, **changes)")]
    fn replace(&self, args: &Bound<'_, PyTuple>, changes: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        Args::bind(&Params::keywords("RuntimeProfile.replace", &[]), Some(args), None)?;
        // A schema is converted here (a pydantic class has no JSON form); the rest by the core.
        let schema = match changes.map(|c| c.get_item("output_schema")).transpose()?.flatten() {
            Some(given) => Some(output_schema_arg(Some(&given), "RuntimeProfile.output_schema")?),
            None => None,
        };
        let rest = match (changes, &schema) {
            (Some(c), Some(_)) => {
                let c = c.copy()?;
                c.del_item("output_schema")?;
                fields(&c)?
            }
            (c, _) => c.map(fields).transpose()?.unwrap_or_default(),
        };
        let inner = self.inner.clone().with_fields(&rest)?;
        let inner = match schema {
            Some(s) => inner.with_output_schema(s).map_err(crate::api::Error::from)?,
            None => inner,
        };
        Ok(PyRuntimeProfile { inner })
    }

    /// The knobs of the small-model assists, as a dict (a copy: change them with
    /// `replace(tuning={...})`).
    #[getter]
    fn tuning<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        crate::py::convert::dump(py, &self.inner.tuning)
    }

    /// All fields as a dict (the allow-list as a frozenset).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = crate::py::convert::dump(py, &self.inner)?.cast_into::<PyDict>()?;
        d.set_item("tool_allowlist", self.tool_allowlist(py)?)?;
        Ok(d)
    }

    #[getter]
    fn tool_allowlist<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyFrozenSet>> {
        PyFrozenSet::new(py, &self.inner.tool_allowlist)
    }
}
