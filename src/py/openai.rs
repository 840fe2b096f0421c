//! `outrider.OpenAICompatible`: the built-in HTTP client as a Python object. Passing it to a
//! launcher runs every call natively, without a Python callback per call.

use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyType};

use crate::llm::openai::{OpenAICompatible, OpenAICompatibleConfig};
use crate::llm::{ChatModel, ChatRequest};
use crate::py::convert::{py_str, to_json, type_name, value_to_py};
use crate::py::runtime::block_on;

/// The built-in OpenAI-compatible chat-completions client.
#[pyclass(frozen, module = "outrider._core", name = "OpenAICompatible")]
pub struct PyOpenAICompatible {
    pub model: Arc<dyn ChatModel>,
    client: Arc<OpenAICompatible>,
}

fn secs(value: f64, what: &str) -> PyResult<Duration> {
    if !(value.is_finite() && value > 0.0) {
        return Err(PyValueError::new_err(format!(
            "{what} must be a positive number of seconds, got {value}"
        )));
    }
    Ok(Duration::from_secs_f64(value))
}

impl PyOpenAICompatible {
    fn wrap(client: OpenAICompatible) -> Self {
        let client = Arc::new(client);
        PyOpenAICompatible {
            model: client.clone(),
            client,
        }
    }
}

/// A request dict (chat-completions kwargs) → a core request.
fn request_from_py(obj: &Bound<'_, PyAny>) -> PyResult<ChatRequest> {
    if obj.cast::<PyDict>().is_err() {
        return Err(PyTypeError::new_err(format!(
            "request must be a dict of chat-completions arguments, got {}",
            type_name(obj)
        )));
    }
    ChatRequest::from_openai(&to_json(obj, "request")?.to_value())
        .map_err(|e| PyValueError::new_err(e.0))
}

#[pymethods]
impl PyOpenAICompatible {
    #[new]
    #[pyo3(signature = (model, base_url=None, api_key=None, *, timeout=120.0, connect_timeout=10.0, max_retries=2, temperature=None, max_tokens=None, headers=None))]
    #[allow(clippy::too_many_arguments)]
    fn py_new(
        model: &str,
        base_url: Option<&str>,
        api_key: Option<&str>,
        timeout: f64,
        connect_timeout: f64,
        max_retries: i64,
        temperature: Option<f64>,
        max_tokens: Option<i64>,
        headers: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let mut config =
            OpenAICompatibleConfig::new(model, base_url.unwrap_or("https://api.openai.com/v1"));
        config.api_key = api_key.filter(|k| !k.is_empty()).map(str::to_owned);
        config.timeout = secs(timeout, "timeout")?;
        config.connect_timeout = secs(connect_timeout, "connect_timeout")?;
        if !(0..=10).contains(&max_retries) {
            return Err(PyValueError::new_err(format!(
                "max_retries must be between 0 and 10, got {max_retries}"
            )));
        }
        config.max_retries = max_retries as u32;
        config.temperature = temperature;
        config.max_tokens = match max_tokens {
            Some(n) if n < 1 => {
                return Err(PyValueError::new_err(format!(
                    "max_tokens must be at least 1, got {n}"
                )))
            }
            Some(n) => Some(n as u64),
            None => None,
        };
        if let Some(h) = headers {
            for (k, v) in h.iter() {
                let k = k
                    .cast::<pyo3::types::PyString>()
                    .map_err(|_| PyTypeError::new_err("headers keys must be str"))?;
                let v = v
                    .cast::<pyo3::types::PyString>()
                    .map_err(|_| PyTypeError::new_err("headers values must be str"))?;
                config
                    .extra_headers
                    .push((py_str(k, "headers key")?, py_str(v, "headers value")?));
            }
        }
        OpenAICompatible::new(config)
            .map(Self::wrap)
            .map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// Build from `{prefix}_MODEL_ID`, `{prefix}_API_KEY`, `{prefix}_BASE_URL` (and `LLM_TIMEOUT`,
    /// `LLM_MAX_RETRIES`; `.env` read without overriding the environment). None when
    /// `{prefix}_MODEL_ID` is unset.
    #[classmethod]
    #[pyo3(signature = (prefix="LLM"))]
    fn from_env(_cls: &Bound<'_, PyType>, prefix: &str) -> PyResult<Option<Self>> {
        OpenAICompatible::from_env(prefix)
            .map(|o| o.map(Self::wrap))
            .map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// Make one call with a chat-completions request dict; returns the normalised answer
    /// `{content, tool_calls, finish_reason, usage}`. Errors raise `RuntimeError` naming the kind.
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        request: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let req = request_from_py(request)?;
        let client = self.client.clone();
        let out = block_on(py, async move { client.complete(&req).await }, None)?;
        let resp = out.map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        value_to_py(py, &resp.to_short_value())
    }

    #[getter]
    fn model(&self) -> String {
        self.client.config().model.clone()
    }
    /// The base URL, without any credentials it carried.
    #[getter]
    fn base_url(&self) -> String {
        self.client.display_base_url().to_string()
    }
    #[getter]
    fn timeout(&self) -> f64 {
        self.client.config().timeout.as_secs_f64()
    }
    #[getter]
    fn max_retries(&self) -> u32 {
        self.client.config().max_retries
    }

    fn __repr__(&self) -> String {
        let c = self.client.config();
        format!(
            "OpenAICompatible(model={}, base_url={}, api_key={}, timeout={}, max_retries={})",
            crate::pyjson::py_repr_str(&c.model),
            crate::pyjson::py_repr_str(self.client.display_base_url()),
            if c.api_key.is_some() { "'***'" } else { "None" },
            crate::pyjson::Json::Float(c.timeout.as_secs_f64()).py_repr(),
            c.max_retries
        )
    }
}
