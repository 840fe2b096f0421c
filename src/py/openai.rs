//! `outrider.OpenAICompatible`: the built-in HTTP client as a Python object. Passing it to a
//! launcher runs every call natively, without a Python callback per call.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple, PyType};

use crate::api::CancelToken;
use crate::api::ChatModel;
use crate::api::OpenAICompatible;
use crate::py::args::{bind, chat_request, client_config, env_file, one, Params};
use crate::py::frozen_class;
use crate::py::runtime::{finish, Plain};

/// `OpenAICompatible(...)`'s parameters.
const CLIENT_PARAMS: Params = Params {
    owner: "OpenAICompatible",
    names: &[
        "model",
        "base_url",
        "api_key",
        "timeout",
        "connect_timeout",
        "max_retries",
        "temperature",
        "max_tokens",
        "headers",
    ],
    positional: 3,
    required: 1,
};

/// `OpenAICompatible.from_env(...)`'s parameters.
const FROM_ENV_PARAMS: Params = Params {
    owner: "OpenAICompatible.from_env",
    names: &["prefix", "env_file", "root", "required"],
    positional: 1,
    required: 0,
};

frozen_class! {
    /// The built-in OpenAI-compatible chat-completions client.
    PyOpenAICompatible(shared Arc<OpenAICompatible>) as "OpenAICompatible",
    getters {
        model: String = |c| c.config().model.clone(),
        /// The base URL, without any credentials it carried.
        base_url: String = |c| c.display_base_url().to_string(),
        timeout: f64 = |c| c.config().timeout.as_secs_f64(),
        max_retries: u32 = |c| c.config().max_retries,
        /// The `.env` file some settings came from (built by `from_env`), else None.
        env_file: Option<String> = |c| c.config().env_file.as_ref().map(|p| p.display().to_string()),
    }
    #[new]
    #[pyo3(
        signature = (*args, **kwargs),
        text_signature = "(model, base_url=None, api_key=None, *, timeout=None, connect_timeout=None, max_retries=None, temperature=None, max_tokens=None, headers=None)"
    )]
    fn py_new(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let config = client_config(&bind(&CLIENT_PARAMS, Some(args), kwargs)?)?;
        Ok(PyOpenAICompatible {
            inner: Arc::new(OpenAICompatible::new(config)?),
        })
    }

    /// Build from `{prefix}_MODEL_ID`, `{prefix}_API_KEY`, `{prefix}_BASE_URL` (and `LLM_TIMEOUT`,
    /// `LLM_MAX_RETRIES`; a `.env` fills in what the environment leaves unset). `ConfigError`
    /// naming `{prefix}_MODEL_ID` when it is unset; with `required=False`, None instead when
    /// none of the three is set. `env_file`: None reads `./.env` (not when it lies inside
    /// `root`), False reads none, a path reads that file. A key is sent only to the base URL
    /// configured in the same place.
    #[classmethod]
    #[pyo3(signature = (*args, **kwargs), text_signature = "($cls, prefix=None, *, env_file=None, root=None, required=True)")]
    fn from_env(
        _cls: &Bound<'_, PyType>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Option<Self>> {
        let k = bind(&FROM_ENV_PARAMS, Some(args), kwargs)?;
        let (prefix, env_file, root) = (k.str("prefix")?, env_file(&k)?, k.path("root")?);
        let (env_file, root) = (&env_file, root.as_deref());
        let client = if k.bool("required")?.unwrap_or(true) {
            Some(OpenAICompatible::from_env_required(prefix.as_deref(), env_file, root)?)
        } else {
            OpenAICompatible::from_env(prefix.as_deref(), env_file, root)?
        };
        Ok(client.map(|c| PyOpenAICompatible { inner: Arc::new(c) }))
    }

    /// Make one call with a chat-completions request dict; returns the normalised answer
    /// `{content, tool_calls, finish_reason, usage}`. A failed call raises `ModelError`.
    fn __call__(&self, py: Python<'_>, request: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let req = chat_request(&one(request, "request")?)?;
        let client = self.inner.clone();
        let call = |_| async move { Ok(Plain(client.complete(&req).await?.to_short_value())) };
        finish(py, &CancelToken::new(), false, call)
    }
}
