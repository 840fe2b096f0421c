//! `SubagentRequest`, `SubagentLaunchResult` and `SubagentLauncher` for Python.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::api::ChatModel;
use crate::api::{EvidenceCheck, Owner, ParsedResult};
use crate::api::{SubagentLaunchResult, SubagentLauncher, SubagentRequest, Verification};
use crate::py::args::{bind, launcher_options, one, request_init, verify_args, Args, Params};
use crate::py::contract::{PyExploreResult, PyVerificationResult};
use crate::py::convert::{bounded, req_str, wrong_type};
use crate::py::frozen_class;
use crate::py::in_python;
use crate::py::model::callable_model;
use crate::py::observe::{observer, refresh_level};
use crate::py::profile::PyRuntimeProfile;
use crate::py::runtime::{finish, Plain};
use crate::py::schema::{answer_object, output_schema_arg, output_schema_value};

type JsonMap = serde_json::Map<String, serde_json::Value>;

/// `SubagentRequest(...)`'s parameters, each of which may come by position or by name.
const REQUEST_PARAMS: Params = Params {
    owner: "SubagentRequest",
    names: &crate::api::REQUEST_FIELDS,
    positional: 6,
    required: 0,
};

frozen_class! {
    /// A request for one child (frozen).
    PySubagentRequest(SubagentRequest) as "SubagentRequest", record,
    getters {
        profile_name: String = |r| r.profile_name.clone(),
        task: String = |r| r.task.clone(),
        model_choice: Option<&'static str> = |r| r.model_choice.map(|m| m.as_str()),
        parent_session_id: Option<String> = |r| r.parent_session_id.clone(),
        parent_run_id: Option<String> = |r| r.parent_run_id.clone(),
        structured_context: Plain<JsonMap> = |r| Plain(r.structured_context.clone()),
    }
    #[new]
    #[pyo3(signature = (*args, **kwargs), text_signature = "(task, profile_name=None, structured_context=None, model_choice=None, parent_session_id=None, parent_run_id=None, *, output_schema=None)")]
    fn py_new(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let a = Args::bind(&REQUEST_PARAMS, Some(args), kwargs)?;
        let schema = output_schema_arg(a.get("output_schema"), "SubagentRequest.output_schema")?;
        let mut inner = request_init(&a.plain(&["output_schema"])?)?.build()?;
        inner.output_schema = schema;
        Ok(PySubagentRequest { inner })
    }
    /// The schema the child answers in (the pydantic class or the JSON-schema dict), when the
    /// request names one.
    #[getter]
    fn output_schema<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        output_schema_value(py, self.inner.output_schema.as_ref())
    }
    /// The child's first user message.
    fn render(&self) -> String {
        self.inner.render()
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<PySubagentRequest>().is_ok_and(|o| o.get().inner == self.inner)
    }
}

frozen_class! {
    /// What a launch produced (frozen).
    PySubagentLaunchResult(SubagentLaunchResult) as "SubagentLaunchResult", views_eq, record,
    getters {
        status: &'static str = |r| r.status.as_str(),
        profile_name: String = |r| r.profile_name.clone(),
        child_session_id: String = |r| r.child_session_id.clone(),
        child_run_id: String = |r| r.child_run_id.clone(),
        model_used: &'static str = |r| r.model_used.as_str(),
        model_name: String = |r| r.model_name.clone(),
        task: String = |r| r.task.clone(),
        terminal_reason: &'static str = |r| r.terminal_reason.as_str(),
        failure_reason: Option<&'static str> = |r| r.failure_reason.map(|t| t.as_str()),
        error: Option<String> = |r| r.error.clone(),
        elapsed_ms: u64 = |r| r.elapsed_ms,
        tool_usage: crate::api::ToolUsage = |r| r.tool_usage.clone(),
        token_usage: u64 = |r| r.token_usage,
        input_tokens: u64 = |r| r.input_tokens,
        cached_input_tokens: u64 = |r| r.cached_input_tokens,
        output_tokens: u64 = |r| r.output_tokens,
        usage_estimated: bool = |r| r.usage_estimated,
        repair: Option<&'static str> = |r| r.repair.map(|x| x.as_str()),
        model_calls: u64 = |r| r.model_calls,
        trace_path: Option<String> = |r| r.trace_path.as_ref().map(|p| p.display().to_string()),
        trace_error: Option<String> = |r| r.trace_error.clone(),
        ungrounded_evidence: Plain<Vec<EvidenceCheck>> = |r| Plain(r.ungrounded_evidence.clone()),
    }
    #[getter]
    fn result(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        Ok(match &self.inner.result {
            Some(ParsedResult::Explore(r)) => Some(Py::new(py, PyExploreResult { inner: r.clone() })?.into_any()),
            Some(ParsedResult::Verification(r)) => Some(Py::new(py, PyVerificationResult { inner: r.clone() })?.into_any()),
            Some(ParsedResult::Custom(c)) => Some(answer_object(py, c)?.unbind()),
            Some(ParsedResult::Text(t)) => Some(t.into_pyobject(py)?.into_any().unbind()),
            None => None,
        })
    }
    /// The name of the `output_schema` the result follows, when one was used.
    #[getter]
    fn output_schema(&self) -> Option<String> {
        self.inner.output_schema.clone()
    }
    /// The evidence the answer cites (`path:line` items the gate checked), whatever its shape:
    /// with an `output_schema`, kept beside the caller's object, which need not hold it.
    #[getter]
    fn evidence(&self) -> Vec<String> {
        self.inner.result.as_ref().map(|r| r.evidence().to_vec()).unwrap_or_default()
    }
    /// With an `output_schema`: how the answer did not fit it after the gate's retries (`result`
    /// is then the object as written, a dict); empty when it fits.
    #[getter]
    fn schema_errors(&self) -> Vec<String> {
        self.inner.schema_errors.clone()
    }
    /// `result` as an `ExploreResult`; `outrider.ResultError` when the child failed (no
    /// result) or returned a verification verdict.
    #[getter]
    fn explore<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        in_python::call(slf.py(), ("outrider._accessors", "explore"), (slf,))
    }
    /// `result` as a `VerificationResult`; `outrider.ResultError` otherwise.
    #[getter]
    fn verification<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        in_python::call(slf.py(), ("outrider._accessors", "verification"), (slf,))
    }
    /// `result` as an instance of `cls` (the pydantic class given as `output_schema`, or
    /// `dict` for a JSON-schema dict), typed as such. A result held as a dict (a JSON-schema
    /// child's, or one rebuilt by `from_dict` or a pickle) is validated into a pydantic `cls`.
    /// `outrider.ResultError` otherwise.
    fn output<'py>(slf: &Bound<'py, Self>, cls: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        in_python::call(slf.py(), ("outrider._accessors", "output"), (slf, cls))
    }
}

/// A `launcher` argument: an `outrider.SubagentLauncher`.
pub(super) fn launcher_arg(obj: &Bound<'_, PyAny>) -> PyResult<Arc<SubagentLauncher>> {
    let launcher = obj.cast::<PySubagentLauncher>();
    let expected = "an outrider.SubagentLauncher";
    let launcher = launcher.map_err(|_| wrong_type("launcher", expected, obj))?;
    Ok(launcher.get().inner.inner.clone())
}

/// A Python model argument: an `OpenAICompatible`, the `OfflineScout`, an SDK client, its bound
/// `create`, a `"provider:model"` string, or any callable. None (or missing) means "the
/// default". `route` is the model name of the argument's route (`(name, value)`: `main_model`
/// for a launcher's `main_llm`, ...): an SDK client needs it, and a `"provider:model"` string
/// fills it in. `home` is the `outrider._aio.Home` a callable's coroutines run on (one per
/// launcher).
pub(super) fn model_arg(
    obj: Option<&Bound<'_, PyAny>>,
    what: &str,
    route: (&str, &mut Option<String>),
    home: &Py<PyAny>,
) -> PyResult<Option<Arc<dyn ChatModel>>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    if let Ok(m) = obj.cast::<crate::py::openai::PyOpenAICompatible>() {
        return Ok(Some(m.get().inner.clone()));
    }
    // The scout, or its class given for it (it takes no arguments, so both mean the same).
    let scout = obj.py().get_type::<crate::py::model::PyOfflineScout>();
    if obj.cast::<crate::py::model::PyOfflineScout>().is_ok() || obj.is(&scout) {
        return Ok(Some(Arc::new(crate::api::OfflineScout)));
    }
    // SDK clients, their `create` and model strings become `outrider.adapters` callables there;
    // anything else comes back as it was given.
    let (param, name) = route;
    let args = (obj, what, name.as_deref(), param);
    let (callable, model): (Bound<'_, PyAny>, Option<String>) =
        in_python::call(obj.py(), ("outrider.adapters", "_as_model"), args)?.extract()?;
    if name.is_none() {
        *name = model;
    }
    if callable.is_callable() {
        return Ok(Some(Arc::new(callable_model(&callable, home))));
    }
    Err(wrong_type(
        what,
        "a callable taking the chat-completions request dict, an openai or anthropic client, \
         a 'provider:model' string or an outrider.OpenAICompatible",
        obj,
    ))
}

fn profiles_arg(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<crate::api::RuntimeProfile>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(vec![]);
    };
    let profile = |p: &Bound<'_, PyAny>| {
        p.cast::<PyRuntimeProfile>()
            .map(|p| p.get().inner.clone())
            .map_err(|_| wrong_type("profiles item", "a RuntimeProfile", p))
    };
    if let Ok(d) = obj.cast::<PyDict>() {
        let pairs = d
            .iter()
            .map(|(k, v)| Ok((req_str(&k, "profiles key")?, profile(&v)?)))
            .collect::<PyResult<_>>()?;
        return Ok(crate::api::profiles_by_key(pairs)?);
    }
    let items = bounded(obj, ("profiles", "an iterable of RuntimeProfile", 0))?;
    items.map(|p| profile(&p?)).collect()
}

fn request_arg(obj: &Bound<'_, PyAny>) -> PyResult<SubagentRequest> {
    obj.cast::<PySubagentRequest>()
        .map(|r| r.get().inner.clone())
        .map_err(|_| wrong_type("request", "an outrider.SubagentRequest", obj))
}

fn requests_arg(requests: &Bound<'_, PyAny>) -> PyResult<Vec<SubagentRequest>> {
    let items = bounded(requests, ("requests", "an iterable of SubagentRequest", 0))?;
    items.map(|r| request_arg(&r?)).collect()
}

/// `SubagentLauncher(...)`'s parameters.
const LAUNCHER_PARAMS: Params = Params {
    owner: "SubagentLauncher",
    names: &[
        "project_root",
        "main_llm",
        "light_llm",
        "trace_dir",
        "parent_trace",
        "profiles",
        "max_concurrency",
        "main_model",
        "light_model",
        "model_settings",
        "trace_retention",
        "env_file",
    ],
    positional: 3,
    required: 1,
};

/// `SubagentLauncher.verify(...)`'s parameters.
const VERIFY_PARAMS: Params = Params {
    owner: "SubagentLauncher.verify",
    names: &["candidate", "requirements", "evidence"],
    positional: 3,
    required: 1,
};

frozen_class! {
    /// Launches read-only children (see the stub for the full documentation). Dropping it
    /// cancels the children still running.
    PySubagentLauncher(subclassed Owner<SubagentLauncher>) as "SubagentLauncher",
    getters {
        /// Names of the registered profiles.
        profiles: Vec<String> = |l| l.profile_names(),
        /// Whether a light model is configured.
        has_light_model: bool = |l| l.light_model().is_some(),
    }
    #[new]
    #[pyo3(
        signature = (*args, **kwargs),
        text_signature = "(project_root, main_llm=None, light_llm=None, *, trace_dir=None, parent_trace=None, profiles=None, max_concurrency=None, main_model=None, light_model=None, model_settings=None, trace_retention=None, env_file=None)"
    )]
    fn py_new(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        refresh_level(args.py());
        let a = Args::bind(&LAUNCHER_PARAMS, Some(args), kwargs)?;
        let plain = a.plain(&["main_llm", "light_llm", "profiles"])?;
        let mut options = launcher_options(&plain)?;
        let home = crate::py::model::new_home(args.py())?;
        let main = ("main_model", &mut options.routes.main_model);
        options.main_model = model_arg(a.get("main_llm"), "main_llm", main, &home)?;
        let light = ("light_model", &mut options.routes.light_model);
        options.light_model = model_arg(a.get("light_llm"), "light_llm", light, &home)?;
        options.profiles = profiles_arg(a.get("profiles"))?;
        let root = plain.req_path("project_root")?;
        let inner = Owner::new(SubagentLauncher::new(&root, options)?);
        Ok(PySubagentLauncher { inner })
    }

    /// The native half of `launch` and `launch_async` (`outrider._entry`): one child, blocking
    /// or as an asyncio future.
    #[pyo3(signature = (request, on_event, awaitable, output_schema=None))]
    fn _launch(
        &self,
        py: Python<'_>,
        request: &Bound<'_, PyAny>,
        on_event: Option<&Bound<'_, PyAny>>,
        awaitable: bool,
        output_schema: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let (mut req, launcher) = (request_arg(request)?, self.inner.inner.clone());
        if let Some(schema) = output_schema_arg(output_schema, "output_schema")? {
            req.output_schema = Some(schema);
        }
        let observer = observer(on_event, None)?;
        let launch = |c| async move { launcher.launch_observed(req, c, &observer).await };
        finish(py, &self.inner.cancel, awaitable, launch)
    }

    /// The native half of `launch_many` and `launch_many_async`: results in input order, at most
    /// `max_concurrency` children at a time; `on_finished` is called once per finished child.
    fn _launch_many(
        &self,
        py: Python<'_>,
        requests: &Bound<'_, PyAny>,
        max_concurrency: &Bound<'_, PyAny>,
        on_event: Option<&Bound<'_, PyAny>>,
        on_finished: Option<&Bound<'_, PyAny>>,
        awaitable: bool,
    ) -> PyResult<Py<PyAny>> {
        let (reqs, observer) = (requests_arg(requests)?, observer(on_event, on_finished)?);
        let limit = one(max_concurrency, "max_concurrency")?.int("max_concurrency")?;
        let launcher = self.inner.inner.clone();
        let launch = |c| async move {
            launcher
                .launch_many_observed(reqs, limit, c, observer)
                .await
        };
        finish(py, &self.inner.cancel, awaitable, launch)
    }

    /// Verify a completion candidate: the deterministic checks, then a verification child.
    #[pyo3(signature = (*args, **kwargs), text_signature = "($self, candidate, requirements=None, evidence=None)")]
    fn verify(
        &self,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let k = bind(&VERIFY_PARAMS, Some(args), kwargs)?;
        let (candidate, requirements, evidence) = verify_args(&k)?;
        let (py, launcher) = (args.py(), self.inner.inner.clone());
        let verify =
            |c| async move { launcher.verify(&candidate, requirements, evidence, c).await };
        finish(py, &self.inner.cancel, false, verify)
    }
}

frozen_class! {
    /// The verdict of `SubagentLauncher.verify` (frozen); pickled with its launch.
    PyCompletionVerdict(Verification) as "CompletionVerdict", views_eq, record,
    getters {
        verdict: &'static str = |v| v.verdict.verdict,
        reasons: Vec<String> = |v| v.verdict.reasons.clone(),
        feedback: Option<String> = |v| v.verdict.feedback.clone(),
        launch: Option<SubagentLaunchResult> = |v| v.launch.clone(),
    }
}
