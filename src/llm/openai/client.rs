//! The built-in OpenAI-compatible chat-completions backend: one HTTP client, the request, the
//! retry loop, and the answer.

use std::fmt;
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant, SystemTime};

use base64::Engine as _;
use reqwest::header::HeaderMap;
use reqwest::{StatusCode, Url};
use serde_json::Value;

use crate::error::Error;
use crate::llm::openai::classify::{
    provider_message, snippet, status_failure, transport_failure, Failure,
};
use crate::llm::openai::config::{
    api_key, build_headers, display_url, invalid, is_loopback, missing_key, parse_base_url,
    OpenAICompatibleConfig,
};
use crate::llm::openai::retry::{backoff_delay, parse_retry_after, RETRY_AFTER_CAP};
use crate::llm::{
    BoxFuture, ChatModel, ChatRequest, ChatResponse, ModelError, ModelErrorKind, WireOptions,
};

fn install_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Another library may have installed one first; any provider will do.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The largest successful response body read: a run refuses answers over
/// the runner's `MAX_ANSWER_BYTES` (1 MiB) anyway, and a body past this is refused as it
/// streams in rather than held in memory.
pub const MAX_RESPONSE_BYTES: usize = 8 << 20;
/// How much of an error response's body is read: enough for the provider's message.
pub(crate) const MAX_ERROR_BODY_BYTES: usize = 64 << 10;

/// The built-in OpenAI-compatible chat-completions backend.
pub struct OpenAICompatible {
    config: OpenAICompatibleConfig,
    endpoint: Url,
    shown_endpoint: String,
    shown_base: String,
    headers: HeaderMap,
    /// Strings that must never appear in a message (the key, credential-like header values).
    secrets: Vec<String>,
    /// The client of the process that built this one.
    client: reqwest::Client,
    pid: u32,
    /// A client of this process's own, after `fork()`: the parent's pooled connections are
    /// driven by tasks of a runtime whose threads the child does not have, so a request sent on
    /// one would wait for its timeout.
    forked: Mutex<Option<(u32, reqwest::Client)>>,
    /// `max_tokens` sent when a request's settings give none: the configured one, else
    /// [`LOCAL_MAX_TOKENS`] for a server on this machine.
    max_tokens: Option<u64>,
    /// Whether the server is on this machine (it gets [`LOCAL_STOP`] and, unless configured,
    /// [`LOCAL_TEMPERATURE`]).
    local: bool,
}

/// The answer cap sent to a server on a loopback address when none is configured: local
/// servers (llama.cpp, Ollama) generate until their context is full by default, and a small
/// model that keeps writing newlines after its answer would hold a step for minutes. An explore
/// answer or a tool call is a few hundred tokens at most (with a real 1.5B model on 2 cores:
/// 100-250); a small model that starts repeating a list wrote to the old cap of 1024 in 7 runs
/// of 30, two to three minutes each, and the run's clock ran out before it could answer again;
/// one cut at 512 is asked again, short, in half the time. Remote APIs get none (several reject
/// `max_tokens` for some models), unless configured.
pub const LOCAL_MAX_TOKENS: u64 = 512;

/// The sampling temperature sent to a server on a loopback address when none is configured:
/// local servers (llama.cpp, Ollama) sample at 0.8 by default, and a child's tool calls and
/// JSON answer want the likeliest tokens (with a real 1.5B model, 0 about doubled the right
/// answers of `bench/real_model.py` at the time it was chosen).
pub const LOCAL_TEMPERATURE: f64 = 0.0;

/// The stop sequence sent to a server on a loopback address: a small model served by llama.cpp
/// often writes an answer, then newline after newline until its token cap. Three blank lines
/// end it; neither a JSON answer nor a tool call holds them.
pub(crate) const LOCAL_STOP: &[&str] = &["\n\n\n\n"];

impl fmt::Debug for OpenAICompatible {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAICompatible")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl fmt::Display for OpenAICompatible {
    /// The Python repr: the key masked, the base URL without credentials.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::pyjson::{py_repr_str as q, Json};
        let c = &self.config;
        write!(
            f,
            "OpenAICompatible(model={}, base_url={}, api_key={}, timeout={}, max_retries={})",
            q(&c.model),
            q(&self.shown_base),
            if c.api_key.is_some() { "'***'" } else { "None" },
            Json::Float(c.timeout.as_secs_f64()).py_repr(),
            c.max_retries
        )
    }
}

impl OpenAICompatible {
    /// Validate `config` and build the HTTP client (once; it is shared by every call).
    pub fn new(mut config: OpenAICompatibleConfig) -> Result<Self, Error> {
        config.validate()?;
        if let Some(err) = missing_key(&config, "api_key", "") {
            return Err(err);
        }
        let base = parse_base_url(&config.base_url)?;
        config.base_url = base.to_string().trim_end_matches('/').to_string();
        config.model = config.model.trim().to_string();
        let mut endpoint = base.clone();
        let path = format!("{}/chat/completions", base.path().trim_end_matches('/'));
        endpoint.set_path(&path);

        let client = build_client(&config)?;

        let headers = build_headers(&config)?;
        let mut secrets: Vec<String> = api_key(&config).map(str::to_owned).into_iter().collect();
        // Credentials in the URL itself (user:password@, ?api-key=) and the Basic header they
        // turn into must not come back in messages either.
        if let Some(password) = base.password().filter(|p| !p.is_empty()) {
            secrets.push(password.to_owned());
            let pair = format!("{}:{password}", base.username());
            secrets.push(base64::engine::general_purpose::STANDARD.encode(pair.as_bytes()));
        }
        for (_, value) in base.query_pairs() {
            if value.len() >= 8 {
                secrets.push(value.into_owned());
            }
        }
        for (name, value) in &config.extra_headers {
            let name = name.to_ascii_lowercase();
            let credential = ["key", "token", "auth", "secret", "cookie"]
                .iter()
                .any(|w| name.contains(w));
            if credential && !value.trim().is_empty() {
                secrets.push(value.trim().to_owned());
            }
        }
        crate::redact::register_secrets(&secrets);
        let max_tokens = config
            .max_tokens
            .or(is_loopback(&base).then_some(LOCAL_MAX_TOKENS));
        Ok(OpenAICompatible {
            max_tokens,
            local: is_loopback(&base),
            shown_endpoint: display_url(&endpoint),
            shown_base: display_url(&base).trim_end_matches('/').to_owned(),
            endpoint,
            headers,
            secrets,
            client,
            pid: std::process::id(),
            forked: Mutex::new(None),
            config,
        })
    }

    /// The HTTP client for this process: the shared one, or a fresh one in a forked child.
    fn http(&self) -> Result<reqwest::Client, Failure> {
        let pid = std::process::id();
        if pid == self.pid {
            return Ok(self.client.clone());
        }
        let mut forked = self.forked.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((owner, client)) = forked.as_ref() {
            if *owner == pid {
                return Ok(client.clone());
            }
        }
        let client = build_client(&self.config).map_err(|e| {
            Failure::fatal(ModelError::new(
                ModelErrorKind::Connection,
                format!("after fork(), {e}"),
            ))
        })?;
        // The parent's client (or a grandparent's) is leaked here: dropping it would touch
        // connection tasks of a runtime this process does not run.
        if let Some(old) = forked.replace((pid, client.clone())) {
            std::mem::forget(old);
        }
        Ok(client)
    }

    /// The backend configured by `{prefix}_MODEL_ID` and friends (see [`crate::llm::env`]), or
    /// `None` when the model id is unset. No prefix means the main model's (`LLM`). `env_file`
    /// says which `.env` fills in what the environment leaves unset; `root` is the explored root,
    /// inside which the default `.env` is not read.
    pub fn from_env(
        prefix: Option<&str>,
        env_file: &crate::llm::env::EnvFile,
        root: Option<&std::path::Path>,
    ) -> Result<Option<Self>, Error> {
        let prefix = prefix.unwrap_or(crate::llm::env::MAIN_PREFIX);
        crate::llm::env::from_env_file(prefix, env_file, root)?
            .map(OpenAICompatible::new)
            .transpose()
    }

    /// [`OpenAICompatible::from_env`] for a model that was asked for: an error naming
    /// `{prefix}_MODEL_ID` (and what else to set) when it is unset, never `None`.
    pub fn from_env_required(
        prefix: Option<&str>,
        env_file: &crate::llm::env::EnvFile,
        root: Option<&std::path::Path>,
    ) -> Result<Self, Error> {
        let name = prefix.unwrap_or(crate::llm::env::MAIN_PREFIX);
        Self::from_env(prefix, env_file, root)?
            .ok_or_else(|| crate::llm::env::not_configured(name.trim().trim_end_matches('_')))
    }

    /// The base URL without credentials (user, password and query removed).
    pub fn display_base_url(&self) -> &str {
        &self.shown_base
    }

    /// The validated config (base URL normalised).
    pub fn config(&self) -> &OpenAICompatibleConfig {
        &self.config
    }

    /// The URL requests go to, `{base_url}/chat/completions`, without credentials.
    pub fn endpoint(&self) -> &str {
        &self.shown_endpoint
    }

    /// The JSON body sent for `request`: the request's model or the configured one, the
    /// messages, `tools`/`tool_choice` only when there are tools, and the configured
    /// `temperature` and `max_tokens`.
    pub fn request_body(&self, request: &ChatRequest) -> Value {
        serde_json::from_str(&request.encode(&self.wire_options())).unwrap_or(Value::Null)
    }

    fn wire_options(&self) -> WireOptions<'_> {
        WireOptions {
            default_model: Some(&self.config.model),
            temperature: self
                .config
                .temperature
                .or(self.local.then_some(LOCAL_TEMPERATURE)),
            max_tokens: self.max_tokens,
            stop: self.local.then_some(LOCAL_STOP),
            omit_tool_choice_without_tools: true,
            flatten_extra_body: true,
        }
    }

    async fn call(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let body = request.encode(&self.wire_options()).into_bytes();
        let attempts = self.config.max_retries.saturating_add(1);
        let mut attempt = 0u32;
        loop {
            let failure = match self.attempt(&body).await {
                Ok(response) => return Ok(response),
                Err(failure) => failure,
            };
            attempt += 1;
            if !failure.retryable || attempt >= attempts {
                return Err(self.finish(failure.error, attempt));
            }
            let delay = match wait_within(&failure, attempt, request.deadline) {
                Ok(delay) => delay,
                Err(error) => return Err(self.finish(error, attempt)),
            };
            // INFO, not WARN: a retry is the client doing its job, and a call that still
            // fails is reported by the run's result (a batch of many tasks printed a warning
            // per retry of every task).
            tracing::event!(
                name: "retry",
                tracing::Level::INFO,
                attempt,
                wait_ms = delay.as_millis() as u64,
                status = failure.error.status,
                kind = failure.error.kind.as_str(),
                retry_after = failure.retry_after.is_some(),
                "model call failed; retrying"
            );
            tokio::time::sleep(delay).await;
        }
    }

    async fn attempt(&self, body: &[u8]) -> Result<ChatResponse, Failure> {
        let response = self
            .http()?
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .body(body.to_vec())
            .send()
            .await
            .map_err(|e| transport_failure(&self.shown_endpoint, self.config.timeout, e))?;
        let status = response.status();
        // Honoured on every retryable status that sends it (providers send it on 504 too).
        let retry_after = match status.as_u16() {
            408 | 409 | 429 | 500..=599 => response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| parse_retry_after(v, SystemTime::now())),
            _ => None,
        };
        let location = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if status.is_success() {
            let bytes = self.read_success_body(status, response).await?;
            let text = String::from_utf8_lossy(&bytes);
            return self.parse_success(status, &text).map_err(Failure::fatal);
        }
        let bytes = self
            .read_body_prefix(response, MAX_ERROR_BODY_BYTES)
            .await?;
        let text = String::from_utf8_lossy(&bytes);
        Err(status_failure(
            &self.shown_endpoint,
            &self.config.model,
            status,
            &text,
            location,
            retry_after,
        ))
    }

    /// A successful answer's body, refused (not buffered) when it is encoded (outrider asks for
    /// no compression, so a gzip body is either a misconfigured proxy or a bomb) or larger than
    /// [`MAX_RESPONSE_BYTES`], by its `Content-Length` or as it streams in.
    async fn read_success_body(
        &self,
        status: StatusCode,
        mut response: reqwest::Response,
    ) -> Result<Vec<u8>, Failure> {
        let refuse = |what: String| {
            Failure::fatal(ModelError {
                kind: ModelErrorKind::BadResponse,
                message: format!(
                    "{} answered HTTP {} {what}",
                    self.shown_endpoint,
                    status.as_u16()
                ),
                status: Some(status.as_u16()),
            })
        };
        let encoding = response
            .headers()
            .get(reqwest::header::CONTENT_ENCODING)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).trim().to_owned())
            .filter(|v| !v.is_empty() && !v.eq_ignore_ascii_case("identity"));
        if let Some(encoding) = encoding {
            return Err(refuse(format!(
                "with a body in Content-Encoding '{}', which outrider does not ask for or decode; refused without reading it",
                snippet(&encoding)
            )));
        }
        let limit = MAX_RESPONSE_BYTES;
        if let Some(length) = response.content_length().filter(|&n| n > limit as u64) {
            return Err(refuse(format!(
                "with a {length}-byte body (Content-Length), over the {} MiB limit; refused without reading it",
                limit >> 20
            )));
        }
        // Sized once when the length is known: doubling a buffer up to the cap would hold
        // about twice the cap at its peak.
        let mut body = Vec::with_capacity(response.content_length().unwrap_or(0) as usize);
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| transport_failure(&self.shown_endpoint, self.config.timeout, e))?
        {
            if body.len() + chunk.len() > limit {
                return Err(refuse(format!(
                    "with a body over the {} MiB limit; stopped reading it there",
                    limit >> 20
                )));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    /// At most `limit` bytes of an error answer's body (enough for the provider's message).
    async fn read_body_prefix(
        &self,
        mut response: reqwest::Response,
        limit: usize,
    ) -> Result<Vec<u8>, Failure> {
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| transport_failure(&self.shown_endpoint, self.config.timeout, e))?
        {
            let room = limit - body.len();
            body.extend_from_slice(&chunk[..chunk.len().min(room)]);
            if body.len() >= limit {
                break;
            }
        }
        Ok(body)
    }

    fn parse_success(&self, status: StatusCode, text: &str) -> Result<ChatResponse, ModelError> {
        let bad = |what: String| ModelError {
            kind: ModelErrorKind::BadResponse,
            message: what,
            status: Some(status.as_u16()),
        };
        let json: Value = serde_json::from_str(text).map_err(|e| {
            bad(format!(
                "{} answered HTTP {} with a body that is not JSON ({e}): {}",
                self.shown_endpoint,
                status.as_u16(),
                snippet(text)
            ))
        })?;
        ChatResponse::from_value(&json).map_err(|e| match provider_message(&json) {
            Some(msg) => bad(format!(
                "{} answered HTTP {} with an error instead of a completion: {msg}",
                self.shown_endpoint,
                status.as_u16()
            )),
            None => bad(format!(
                "{} answered HTTP {} with JSON that is not a chat completion ({}): {}",
                self.shown_endpoint,
                status.as_u16(),
                e.0,
                snippet(text)
            )),
        })
    }

    /// The error returned to the caller: the attempt count when it was retried, secrets removed.
    fn finish(&self, mut error: ModelError, attempts: u32) -> ModelError {
        if attempts > 1 {
            error.message = format!("{} (gave up after {attempts} attempts)", error.message);
        }
        // A key shorter than a real one cannot be told from ordinary words (a key `k` would
        // mangle every `k`); the shape patterns still catch real credentials.
        for secret in self
            .secrets
            .iter()
            .filter(|s| s.len() >= crate::redact::MIN_REGISTERED_LEN)
        {
            error.message = error.message.replace(secret.as_str(), "[REDACTED]");
        }
        error.message = crate::redact::redact_str(&error.message);
        error
    }
}

/// The HTTP client for `config`: its timeouts, no redirects, no proxy for a loopback server.
fn build_client(config: &OpenAICompatibleConfig) -> Result<reqwest::Client, Error> {
    install_crypto_provider();
    let base = parse_base_url(&config.base_url)?;
    let mut builder = reqwest::Client::builder()
        .connect_timeout(config.connect_timeout)
        .timeout(config.timeout)
        // Not followed: a redirected POST turns into a GET, and a redirect to another origin
        // would carry the Authorization header there. The error names the target instead.
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("outrider/", env!("CARGO_PKG_VERSION")));
    if is_loopback(&base) {
        // A proxy from the environment must not intercept a local server.
        builder = builder.no_proxy();
    }
    builder.build().map_err(|e| {
        invalid(
            "base_url",
            format!("could not build an HTTP client for it: {e}"),
        )
    })
}

/// How long to wait before the next attempt: the provider's `Retry-After` or a backoff. A
/// `Retry-After` beyond [`RETRY_AFTER_CAP`] ends the call at once as a
/// [`ModelErrorKind::RateLimit`] (a direct call with a 3 s timeout waited 60 s per retry).
/// With a deadline, a wait that would outlast it ends the call now: a `Retry-After` beyond it
/// as a [`ModelErrorKind::RateLimit`] (the provider will not serve us in time), a backoff beyond
/// it with the last error.
fn wait_within(
    failure: &Failure,
    attempt: u32,
    deadline: Option<Instant>,
) -> Result<Duration, ModelError> {
    let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
    if let Some(asked) = failure.retry_after {
        return match left {
            Some(left) if asked >= left && !asked.is_zero() => Err(ModelError {
                kind: ModelErrorKind::RateLimit,
                message: format!(
                    "{}; the provider asked to wait {} (Retry-After) but the run has {:.1} s left",
                    failure.error.message,
                    describe_wait(asked),
                    left.as_secs_f64()
                ),
                status: failure.error.status,
            }),
            // As the OpenAI SDK does, a wait beyond the cap is not honoured; rather than retry
            // sooner than asked (the provider said it will not serve us), the call ends now.
            _ if asked > RETRY_AFTER_CAP => Err(ModelError {
                kind: ModelErrorKind::RateLimit,
                message: format!(
                    "{}; the provider asked to wait {} (Retry-After), more than the {} s a retry waits at most",
                    failure.error.message,
                    describe_wait(asked),
                    RETRY_AFTER_CAP.as_secs()
                ),
                status: failure.error.status,
            }),
            _ => Ok(asked),
        };
    }
    let delay = backoff_delay(attempt - 1);
    match left {
        Some(left) if delay >= left => Err(ModelError {
            message: format!(
                "{} (no time left for another attempt: the run has {:.1} s left)",
                failure.error.message,
                left.as_secs_f64()
            ),
            ..failure.error.clone()
        }),
        _ => Ok(delay),
    }
}

/// A wait in words: seconds, or "forever" for a saturated one.
fn describe_wait(wait: Duration) -> String {
    if wait >= Duration::from_secs(u64::from(u32::MAX)) {
        "practically forever".into()
    } else {
        format!("{} s", wait.as_secs_f64())
    }
}

impl ChatModel for OpenAICompatible {
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ModelError>> {
        Box::pin(self.call(request))
    }

    fn model_id(&self) -> Option<String> {
        Some(self.config.model.clone())
    }

    fn describe(&self) -> String {
        format!(
            "openai-compatible {} at {}",
            self.config.model, self.shown_base
        )
    }
}
