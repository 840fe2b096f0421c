//! The built-in OpenAI-compatible chat-completions client.
//!
//! One [`OpenAICompatible`] holds one HTTP client (connection pool, timeouts) and POSTs
//! `{base_url}/chat/completions` with bearer auth. Transient failures (408, 409, 429, 5xx, timeouts,
//! failed connections) are retried with exponential backoff and full jitter, honouring
//! `Retry-After`; every other failure is returned at once, classified as a [`ModelErrorKind`].
//! The API key never appears in a message or in `Debug` output.
//!
//! ```
//! use outrider::llm::openai::{OpenAICompatible, OpenAICompatibleConfig};
//! use outrider::llm::ChatModel;
//!
//! let mut config = OpenAICompatibleConfig::new("gpt-4o-mini", "https://api.openai.com/v1/chat/completions");
//! config.api_key = Some("sk-not-a-real-key".into());
//! let model = OpenAICompatible::new(config).unwrap();
//! assert_eq!(model.endpoint(), "https://api.openai.com/v1/chat/completions");
//! assert_eq!(model.describe(), "openai-compatible gpt-4o-mini at https://api.openai.com/v1");
//! ```

use std::fmt;
use std::net::IpAddr;
use std::sync::Once;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use reqwest::{StatusCode, Url};
use serde_json::Value;

use crate::error::Error;
use crate::llm::{BoxFuture, ChatModel, ChatRequest, ChatResponse, ModelError, ModelErrorKind};

/// The default read/total timeout of one attempt.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// The default time allowed to open a connection.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The default number of extra attempts after a transient failure (2 means 3 attempts).
pub const DEFAULT_MAX_RETRIES: u32 = 2;
/// The base URL used when none is configured.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// The first backoff delay; doubled per retry, capped at [`BACKOFF_CAP`].
const BACKOFF_BASE: Duration = Duration::from_millis(500);
/// The longest backoff delay drawn from.
const BACKOFF_CAP: Duration = Duration::from_secs(8);
/// The most retries a client may be configured with.
pub const MAX_RETRIES_LIMIT: u32 = 10;

/// The longest `Retry-After` honoured: a provider asking for more is waited on for this long.
const RETRY_AFTER_CAP: Duration = Duration::from_secs(60);
/// How much of a body goes into an error message.
const BODY_SNIPPET_CHARS: usize = 300;
/// Phrases providers use when the prompt does not fit the context window (lower case).
const CONTEXT_PHRASES: &[&str] = &[
    "context length",
    "context_length",
    "maximum context",
    "too many tokens",
    "prompt too long",
    "prompt is too long",
    "request too large",
];

/// How to reach one OpenAI-compatible endpoint. Build with [`OpenAICompatibleConfig::new`], set
/// what differs from the defaults, then pass to [`OpenAICompatible::new`], which validates it.
#[derive(Clone, PartialEq)]
pub struct OpenAICompatibleConfig {
    /// The model id sent when a request names none.
    pub model: String,
    /// The API root, e.g. `https://api.openai.com/v1`; a trailing `/chat/completions`,
    /// `/completions` or `/` is stripped.
    pub base_url: String,
    /// Sent as `Authorization: Bearer <key>` when set (local servers often need none).
    pub api_key: Option<String>,
    /// The longest one attempt may take, from connecting to the end of the body.
    pub timeout: Duration,
    /// The longest opening a connection may take.
    pub connect_timeout: Duration,
    /// Extra attempts after a transient failure.
    pub max_retries: u32,
    /// Sent as `temperature` when set.
    pub temperature: Option<f64>,
    /// Sent as `max_tokens` when set.
    pub max_tokens: Option<u64>,
    /// Headers added to every request (e.g. an organisation or gateway header).
    pub extra_headers: Vec<(String, String)>,
}

impl OpenAICompatibleConfig {
    /// A config with the default timeouts and retries, no key, temperature or token limit.
    pub fn new(model: impl Into<String>, base_url: impl Into<String>) -> Self {
        OpenAICompatibleConfig {
            model: model.into(),
            base_url: base_url.into(),
            api_key: None,
            timeout: DEFAULT_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            max_retries: DEFAULT_MAX_RETRIES,
            temperature: None,
            max_tokens: None,
            extra_headers: Vec::new(),
        }
    }

    /// Check every field; the error names the field and the offending value.
    pub fn validate(&self) -> Result<(), Error> {
        check_model(&self.model).map_err(|m| invalid("model", m))?;
        normalize_base_url(&self.base_url)?;
        check_duration(self.timeout).map_err(|m| invalid("timeout", m))?;
        check_duration(self.connect_timeout).map_err(|m| invalid("connect_timeout", m))?;
        if let Some(t) = self.temperature {
            check_temperature(t).map_err(|m| invalid("temperature", m))?;
        }
        if self.max_retries > MAX_RETRIES_LIMIT {
            return Err(invalid(
                "max_retries",
                format!("{} is more than {MAX_RETRIES_LIMIT}; each retry waits longer, so use at most {MAX_RETRIES_LIMIT}", self.max_retries),
            ));
        }
        if self.max_tokens == Some(0) {
            return Err(invalid(
                "max_tokens",
                "0 leaves no room for an answer; use a positive number or leave it unset",
            ));
        }
        build_headers(self)?;
        Ok(())
    }
}

impl fmt::Debug for OpenAICompatibleConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Header values may be credentials too: show only their names.
        let header_names: Vec<&str> = self.extra_headers.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("OpenAICompatibleConfig")
            .field("model", &self.model)
            .field(
                "base_url",
                &Url::parse(self.base_url.trim())
                    .map(|u| display_url(&u))
                    .unwrap_or_else(|_| self.base_url.clone()),
            )
            .field("api_key", &self.api_key.as_ref().map(|_| "***"))
            .field("timeout", &self.timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("max_retries", &self.max_retries)
            .field("temperature", &self.temperature)
            .field("max_tokens", &self.max_tokens)
            .field("extra_headers", &header_names)
            .finish()
    }
}

/// Seconds as a [`Duration`] for a timeout setting: positive and finite, or an error naming
/// `field` and the value.
pub fn duration_from_secs(field: &str, secs: f64) -> Result<Duration, Error> {
    if !secs.is_finite() || secs <= 0.0 {
        return Err(invalid(
            field,
            format!("{secs} is not a positive number of seconds; use e.g. 120"),
        ));
    }
    Duration::try_from_secs_f64(secs)
        .map_err(|_| invalid(field, format!("{secs} seconds is too long; use e.g. 120")))
}

/// The API root of `raw` with a trailing `/chat/completions`, `/completions` or `/` removed.
/// Fails, naming the value, unless it is an http(s) URL with a host.
pub fn normalize_base_url(raw: &str) -> Result<String, Error> {
    parse_base_url(raw).map(|u| u.to_string().trim_end_matches('/').to_owned())
}

fn invalid(field: &str, message: impl Into<String>) -> Error {
    Error::InvalidArgument {
        field: field.to_owned(),
        message: message.into(),
    }
}

pub(crate) fn check_model(model: &str) -> Result<(), String> {
    if model.trim().is_empty() {
        Err("the model id is empty; name the model to call, e.g. gpt-4o-mini".into())
    } else {
        Ok(())
    }
}

pub(crate) fn check_temperature(t: f64) -> Result<(), String> {
    if t.is_finite() && t >= 0.0 {
        Ok(())
    } else {
        Err(format!(
            "{t} is not a temperature; use a number >= 0 such as 0.5"
        ))
    }
}

fn check_duration(d: Duration) -> Result<(), String> {
    if d.is_zero() {
        Err("0 s would fail every request; use a positive number of seconds".into())
    } else {
        Ok(())
    }
}

fn parse_base_url(raw: &str) -> Result<Url, Error> {
    let bad = |why: &str| {
        invalid(
            "base_url",
            format!("'{raw}' {why}; use an http(s) URL such as {DEFAULT_BASE_URL}"),
        )
    };
    let trimmed = raw.trim();
    let mut url = Url::parse(trimmed).map_err(|e| bad(&format!("is not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad("is not an http(s) URL"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad("has no host"));
    }
    if url.fragment().is_some() {
        return Err(bad("has a #fragment"));
    }
    let mut path = url.path().trim_end_matches('/');
    for suffix in ["/chat/completions", "/completions"] {
        if let Some(stripped) = path.strip_suffix(suffix) {
            path = stripped.trim_end_matches('/');
            break;
        }
    }
    let path = path.to_owned();
    url.set_path(&path);
    Ok(url)
}

/// Standard base64 (for recognising a Basic credential echoed back in an error body).
fn base64_encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The URL as shown in messages: no user, password or query (where keys may hide).
fn display_url(url: &Url) -> String {
    let mut shown = url.clone();
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.set_query(None);
    shown.to_string()
}

fn is_loopback(url: &Url) -> bool {
    match url.host_str() {
        Some(host) => {
            let host = host.trim_start_matches('[').trim_end_matches(']');
            host.eq_ignore_ascii_case("localhost")
                || host.to_ascii_lowercase().ends_with(".localhost")
                || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
        }
        None => false,
    }
}

fn build_headers(config: &OpenAICompatibleConfig) -> Result<HeaderMap, Error> {
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    for (name, value) in &config.extra_headers {
        let header = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| {
            invalid(
                "extra_headers",
                format!("'{name}' is not a valid HTTP header name"),
            )
        })?;
        // The value is not echoed: it may be a credential.
        let mut value = HeaderValue::from_str(value.trim()).map_err(|_| {
            invalid(
                "extra_headers",
                format!("the value of header '{name}' has characters an HTTP header cannot carry"),
            )
        })?;
        value.set_sensitive(true);
        headers.insert(header, value);
    }
    if let Some(key) = api_key(config) {
        let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
            invalid(
                "api_key",
                "the key has characters an HTTP header cannot carry (a newline or a control character?)",
            )
        })?;
        value.set_sensitive(true);
        headers.insert(AUTHORIZATION, value);
    }
    Ok(headers)
}

/// The key to send: trimmed, and none when blank.
fn api_key(config: &OpenAICompatibleConfig) -> Option<&str> {
    config
        .api_key
        .as_deref()
        .map(str::trim)
        .filter(|k| !k.is_empty())
}

fn install_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Another library may have installed one first; any provider will do.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The built-in OpenAI-compatible chat-completions backend.
pub struct OpenAICompatible {
    config: OpenAICompatibleConfig,
    endpoint: Url,
    shown_endpoint: String,
    shown_base: String,
    headers: HeaderMap,
    /// Strings that must never appear in a message (the key, credential-like header values).
    secrets: Vec<String>,
    client: reqwest::Client,
}

impl fmt::Debug for OpenAICompatible {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAICompatible")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl OpenAICompatible {
    /// Validate `config` and build the HTTP client (once; it is shared by every call).
    pub fn new(mut config: OpenAICompatibleConfig) -> Result<Self, Error> {
        config.validate()?;
        let base = parse_base_url(&config.base_url)?;
        config.base_url = base.to_string().trim_end_matches('/').to_owned();
        config.model = config.model.trim().to_owned();
        let mut endpoint = base.clone();
        let path = format!("{}/chat/completions", base.path().trim_end_matches('/'));
        endpoint.set_path(&path);

        install_crypto_provider();
        let mut builder = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .timeout(config.timeout)
            // A redirected POST turns into a GET; report the redirect instead.
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("outrider/", env!("CARGO_PKG_VERSION")));
        if is_loopback(&base) {
            // A proxy from the environment must not intercept a local server.
            builder = builder.no_proxy();
        }
        let client = builder.build().map_err(|e| {
            invalid(
                "base_url",
                format!("could not build an HTTP client for it: {e}"),
            )
        })?;

        let headers = build_headers(&config)?;
        let mut secrets: Vec<String> = api_key(&config).map(str::to_owned).into_iter().collect();
        // Credentials in the URL itself (user:password@, ?api-key=) and the Basic header they
        // turn into must not come back in messages either.
        if let Some(password) = base.password().filter(|p| !p.is_empty()) {
            secrets.push(password.to_owned());
            let pair = format!("{}:{password}", base.username());
            secrets.push(base64_encode(pair.as_bytes()));
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
        Ok(OpenAICompatible {
            shown_endpoint: display_url(&endpoint),
            shown_base: display_url(&base).trim_end_matches('/').to_owned(),
            endpoint,
            headers,
            secrets,
            client,
            config,
        })
    }

    /// The backend configured by `{prefix}_MODEL_ID` and friends (see [`crate::llm::env`]), or
    /// `None` when the model id is unset.
    pub fn from_env(prefix: &str) -> Result<Option<Self>, Error> {
        crate::llm::env::from_env(prefix)?
            .map(OpenAICompatible::new)
            .transpose()
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
        let mut body = request.to_openai();
        if let Value::Object(map) = &mut body {
            if map.get("model").is_none_or(Value::is_null) {
                map.insert("model".into(), Value::String(self.config.model.clone()));
            }
            if request.tools.is_empty() {
                // Several providers reject tool_choice without tools.
                map.remove("tools");
                map.remove("tool_choice");
            }
            if let Some(t) = self.config.temperature {
                map.insert("temperature".into(), Value::from(t));
            }
            if let Some(n) = self.config.max_tokens {
                map.insert("max_tokens".into(), Value::from(n));
            }
        }
        body
    }

    async fn call(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let body = serde_json::to_vec(&self.request_body(request)).map_err(|e| {
            ModelError::new(
                ModelErrorKind::InvalidRequest,
                format!("the request could not be serialised to JSON: {e}"),
            )
        })?;
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
            let delay = failure
                .retry_after
                .unwrap_or_else(|| backoff_delay(attempt - 1));
            tokio::time::sleep(delay).await;
        }
    }

    async fn attempt(&self, body: &[u8]) -> Result<ChatResponse, Failure> {
        let response = self
            .client
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .body(body.to_vec())
            .send()
            .await
            .map_err(|e| self.transport_failure(e))?;
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
        let bytes = response
            .bytes()
            .await
            .map_err(|e| self.transport_failure(e))?;
        let text = String::from_utf8_lossy(&bytes);
        if status.is_success() {
            return self.parse_success(status, &text).map_err(Failure::fatal);
        }
        Err(self.status_failure(status, &text, location, retry_after))
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

    fn status_failure(
        &self,
        status: StatusCode,
        text: &str,
        location: Option<String>,
        retry_after: Option<Duration>,
    ) -> Failure {
        let code = status.as_u16();
        let said = serde_json::from_str::<Value>(text)
            .ok()
            .and_then(|json| provider_message(&json))
            .unwrap_or_else(|| snippet(text));
        let url = &self.shown_endpoint;
        let lowered = text.to_lowercase();
        let (kind, message) = match code {
            401 | 403 => (
                ModelErrorKind::Auth,
                format!("{url} answered HTTP {code}: {said}; check the API key and that it may use model '{}'", self.config.model),
            ),
            429 => (
                ModelErrorKind::RateLimit,
                format!("{url} answered HTTP 429 (rate limited): {said}"),
            ),
            400 | 413 | 422 if CONTEXT_PHRASES.iter().any(|p| lowered.contains(p)) => (
                ModelErrorKind::ContextTooLong,
                format!("{url} answered HTTP {code}: the prompt does not fit the model's context window: {said}"),
            ),
            404 => (
                ModelErrorKind::InvalidRequest,
                format!("{url} answered HTTP 404: {said}; check the base URL and the model id '{}'", self.config.model),
            ),
            408 | 409 | 500..=599 => (
                ModelErrorKind::Server,
                format!("{url} answered HTTP {code}: {said}"),
            ),
            300..=399 => (
                ModelErrorKind::InvalidRequest,
                format!(
                    "{url} answered HTTP {code}, a redirect to {}; set the base URL to where it points",
                    location.as_deref().unwrap_or("an unnamed location")
                ),
            ),
            400..=499 => (
                ModelErrorKind::InvalidRequest,
                format!("{url} refused the request with HTTP {code}: {said}"),
            ),
            _ => (
                ModelErrorKind::BadResponse,
                format!("{url} answered with unexpected HTTP status {code}: {said}"),
            ),
        };
        Failure {
            error: ModelError {
                kind,
                message,
                status: Some(code),
            },
            retryable: matches!(code, 408 | 409 | 429 | 500..=599),
            retry_after,
        }
    }

    fn transport_failure(&self, err: reqwest::Error) -> Failure {
        let url = &self.shown_endpoint;
        let (kind, message) = if err.is_connect() {
            (
                ModelErrorKind::Connection,
                format!(
                    "could not connect to {url}: {}",
                    // The innermost cause says why (refused, DNS, TLS); the rest is wrapping.
                    error_chain(err).pop().unwrap_or_default()
                ),
            )
        } else if err.is_timeout() {
            (
                ModelErrorKind::Timeout,
                format!(
                    "no complete answer from {url} within {} s (the timeout); raise it if the model is slow",
                    self.config.timeout.as_secs_f64()
                ),
            )
        } else {
            (
                ModelErrorKind::Connection,
                format!(
                    "the request to {url} failed: {}",
                    error_chain(err).join(": ")
                ),
            )
        };
        Failure {
            error: ModelError::new(kind, message),
            retryable: true,
            retry_after: None,
        }
    }

    /// The error returned to the caller: the attempt count when it was retried, secrets removed.
    fn finish(&self, mut error: ModelError, attempts: u32) -> ModelError {
        if attempts > 1 {
            error.message = format!("{} (gave up after {attempts} attempts)", error.message);
        }
        for secret in &self.secrets {
            error.message = error.message.replace(secret.as_str(), "[REDACTED]");
        }
        error.message = crate::trace::redact_str(&error.message);
        error
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

/// One failed attempt, and whether another may help.
struct Failure {
    error: ModelError,
    retryable: bool,
    retry_after: Option<Duration>,
}

impl Failure {
    fn fatal(error: ModelError) -> Self {
        Failure {
            error,
            retryable: false,
            retry_after: None,
        }
    }
}

/// Full jitter: a uniform draw from `[0, min(cap, base × 2^retry)]`, so that many children
/// throttled together do not retry in step.
fn backoff_delay(retry: u32) -> Duration {
    let ceiling = BACKOFF_BASE
        .saturating_mul(1u32 << retry.min(16))
        .min(BACKOFF_CAP);
    ceiling.mul_f64(fastrand::f64())
}

/// `Retry-After` as delta-seconds or an HTTP-date, capped at [`RETRY_AFTER_CAP`].
fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    let wait = if let Ok(secs) = value.parse::<f64>() {
        if !secs.is_finite() || secs < 0.0 {
            return None;
        }
        Duration::from_secs_f64(secs.min(RETRY_AFTER_CAP.as_secs_f64()))
    } else {
        let at = parse_http_date(value)?;
        let now = now.duration_since(UNIX_EPOCH).ok()?.as_secs();
        Duration::from_secs(at.saturating_sub(now))
    };
    Some(wait.min(RETRY_AFTER_CAP))
}

/// Seconds since the Unix epoch of an IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`.
fn parse_http_date(value: &str) -> Option<u64> {
    let parts: Vec<&str> = value.split_whitespace().collect();
    let [_weekday, day, month, year, time, zone] = parts.as_slice() else {
        return None;
    };
    if !zone.eq_ignore_ascii_case("GMT") && !zone.eq_ignore_ascii_case("UTC") {
        return None;
    }
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let month = MONTHS.iter().position(|m| m.eq_ignore_ascii_case(month))? as u32 + 1;
    let day: u32 = day.parse().ok()?;
    let year: i64 = year.parse().ok()?;
    let mut hms = time.split(':').map(|p| p.parse::<u64>().ok());
    let (h, m, s) = (hms.next()??, hms.next()??, hms.next()??);
    if hms.next().is_some() || !(1..=31).contains(&day) || h > 23 || m > 59 || s > 60 {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + (h * 3600 + m * 60 + s) as i64;
    u64::try_from(secs).ok()
}

/// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The provider's own words: `error.message`, `error` as text, `message` or `detail`.
fn provider_message(json: &Value) -> Option<String> {
    let text = match json.get("error") {
        Some(Value::Object(e)) => e.get("message").and_then(Value::as_str).map(str::to_owned),
        Some(Value::String(s)) => Some(s.clone()),
        _ => None,
    }
    .or_else(|| {
        json.get("message")
            .and_then(Value::as_str)
            .map(str::to_owned)
    })
    .or_else(|| match json.get("detail") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) if !other.is_null() => Some(other.to_string()),
        _ => None,
    })?;
    Some(snippet(&text))
}

/// The first [`BODY_SNIPPET_CHARS`] characters of a body, trimmed.
fn snippet(text: &str) -> String {
    let text = text.trim();
    if text.is_empty() {
        return "(empty body)".into();
    }
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(BODY_SNIPPET_CHARS).collect();
    if chars.next().is_some() {
        format!("{head}…")
    } else {
        head
    }
}

/// The error and its causes, outermost first, e.g. `error sending request`, `client error
/// (Connect)`, `tcp connect error`, `Connection refused (os error 111)`.
fn error_chain(err: reqwest::Error) -> Vec<String> {
    let err = err.without_url();
    let mut parts = vec![err.to_string()];
    let mut source = std::error::Error::source(&err);
    while let Some(cause) = source {
        let text = cause.to_string();
        if parts.last() != Some(&text) {
            parts.push(text);
        }
        source = cause.source();
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        let now = UNIX_EPOCH + Duration::from_secs(784_111_770); // Sun, 06 Nov 1994 08:49:30 GMT
        assert_eq!(
            parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(784_111_777)
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("2", now), Some(Duration::from_secs(2)));
        assert_eq!(
            parse_retry_after("0.25", now),
            Some(Duration::from_millis(250))
        );
        assert_eq!(parse_retry_after("3600", now), Some(RETRY_AFTER_CAP));
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-1", now), None);
        assert_eq!(parse_http_date("Sun, 06 Nov 1994 25:49:37 GMT"), None);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
    }

    #[test]
    fn backoff_stays_under_its_ceiling() {
        for retry in 0..40 {
            let ceiling = (0.5 * 2f64.powi(retry.min(16) as i32)).min(8.0);
            let d = backoff_delay(retry).as_secs_f64();
            assert!((0.0..=ceiling).contains(&d), "retry {retry}: {d}");
        }
    }

    #[test]
    fn base_urls_are_normalised() {
        let norm = |s: &str| normalize_base_url(s).unwrap();
        assert_eq!(
            norm("https://api.openai.com/v1/chat/completions"),
            "https://api.openai.com/v1"
        );
        assert_eq!(
            norm("http://localhost:8000/v1/"),
            "http://localhost:8000/v1"
        );
        assert_eq!(
            norm("http://localhost:8000/v1/completions"),
            "http://localhost:8000/v1"
        );
        assert_eq!(norm("http://127.0.0.1:11434"), "http://127.0.0.1:11434");
        assert!(is_loopback(&Url::parse("http://[::1]:80/").unwrap()));
        assert!(is_loopback(&Url::parse("http://127.0.0.2/").unwrap()));
        assert!(!is_loopback(
            &Url::parse("https://api.openai.com/").unwrap()
        ));
    }

    #[test]
    fn messages_show_no_credentials_in_urls() {
        let url = Url::parse("https://user:pw@example.com/v1/chat/completions?key=abc").unwrap();
        assert_eq!(display_url(&url), "https://example.com/v1/chat/completions");
    }

    #[test]
    fn provider_messages_are_found() {
        let msg = |v: Value| provider_message(&v);
        assert_eq!(
            msg(serde_json::json!({"error": {"message": "bad key", "type": "x"}})),
            Some("bad key".into())
        );
        assert_eq!(
            msg(serde_json::json!({"error": "nope"})),
            Some("nope".into())
        );
        assert_eq!(
            msg(serde_json::json!({"detail": [{"loc": ["body"]}]})),
            Some(r#"[{"loc":["body"]}]"#.into())
        );
        assert_eq!(msg(serde_json::json!({"choices": []})), None);
        assert_eq!(snippet(&"x".repeat(301)), format!("{}…", "x".repeat(300)));
    }
}
