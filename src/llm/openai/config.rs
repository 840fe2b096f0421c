//! How to reach one OpenAI-compatible endpoint, and the checks that say what is wrong with it.

use std::fmt;
use std::net::IpAddr;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use reqwest::Url;

use crate::error::Error;

/// The default read/total timeout of one attempt.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// The default timeout of one attempt to a server on this machine (a loopback address): a
/// model on a CPU reads a prompt of a few thousand tokens at tens of tokens a second, so a
/// first call can take minutes; the run's own wall-clock limit still bounds it, and a run that
/// reaches that limit returns what it has as `partial`.
pub(crate) const LOCAL_TIMEOUT: Duration = Duration::from_secs(600);
/// The default time allowed to open a connection.
pub(crate) const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The default number of extra attempts after a transient failure (2 means 3 attempts).
pub(crate) const DEFAULT_MAX_RETRIES: u32 = 2;
/// The base URL used when none is configured.
pub(crate) const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// The most retries a client may be configured with.
pub(crate) const MAX_RETRIES_LIMIT: u32 = 10;

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
    /// The `.env` file some of these settings were read from, when built from the environment.
    pub env_file: Option<std::path::PathBuf>,
}

/// The optional settings of a client as a caller gives them (see
/// [`OpenAICompatibleConfig::from_settings`]).
#[derive(Debug, Clone, Default)]
pub struct ClientSettings {
    /// The API root; None is the OpenAI API.
    pub base_url: Option<String>,
    /// The key; None or empty sends none.
    pub api_key: Option<String>,
    /// Seconds one attempt may take.
    pub timeout: Option<f64>,
    /// Seconds opening a connection may take.
    pub connect_timeout: Option<f64>,
    /// Extra attempts after a transient failure (0..=10).
    pub max_retries: Option<i64>,
    /// Sent as `temperature`.
    pub temperature: Option<f64>,
    /// Sent as `max_tokens` (at least 1).
    pub max_tokens: Option<i64>,
    /// Headers added to every request.
    pub headers: Vec<(String, String)>,
}

/// The error for more retries than [`MAX_RETRIES_LIMIT`].
fn too_many_retries(n: i64) -> Error {
    let message = format!(
        "{n} is more than {MAX_RETRIES_LIMIT}; each retry waits longer, so use at most {MAX_RETRIES_LIMIT}"
    );
    invalid("max_retries", message)
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
            env_file: None,
        }
    }

    /// A config from the settings a caller gives, each optional (None keeps the default: the
    /// OpenAI API, no key, the default timeouts and retries). An empty key means no key. The
    /// result is not validated yet ([`OpenAICompatible::new`](super::OpenAICompatible::new)
    /// does that).
    pub fn from_settings(model: String, settings: ClientSettings) -> Result<Self, Error> {
        let mut config = Self::new(
            model,
            settings.base_url.as_deref().unwrap_or(DEFAULT_BASE_URL),
        );
        config.api_key = settings.api_key.filter(|k| !k.is_empty());
        if let Some(t) = settings.timeout {
            config.timeout = duration_from_secs("timeout", t)?;
        } else if parse_base_url(&config.base_url).is_ok_and(|u| is_loopback(&u)) {
            config.timeout = LOCAL_TIMEOUT;
        }
        if let Some(t) = settings.connect_timeout {
            config.connect_timeout = duration_from_secs("connect_timeout", t)?;
        }
        if let Some(n) = settings.max_retries {
            config.max_retries = match u32::try_from(n) {
                Ok(n) => n,
                Err(_) if n < 0 => {
                    return Err(invalid(
                        "max_retries",
                        format!("{n} is negative; use e.g. 2"),
                    ))
                }
                Err(_) => return Err(too_many_retries(n)),
            };
        }
        config.temperature = settings.temperature;
        if let Some(n) = settings.max_tokens {
            config.max_tokens = Some(u64::try_from(n).map_err(|_| {
                invalid(
                    "max_tokens",
                    format!(
                        "{n} leaves no room for an answer; use a positive number or leave it unset"
                    ),
                )
            })?);
        }
        config.extra_headers = settings.headers;
        Ok(config)
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
            return Err(too_many_retries(self.max_retries.into()));
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
            .field("env_file", &self.env_file)
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
pub(crate) fn normalize_base_url(raw: &str) -> Result<String, Error> {
    parse_base_url(raw).map(|u| u.to_string().trim_end_matches('/').to_owned())
}

pub(crate) fn invalid(field: &str, message: impl Into<String>) -> Error {
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

pub(crate) fn parse_base_url(raw: &str) -> Result<Url, Error> {
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

/// The URL as shown in messages: no user, password or query (where keys may hide).
pub(crate) fn display_url(url: &Url) -> String {
    let mut shown = url.clone();
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.set_query(None);
    shown.to_string()
}

pub(crate) fn is_loopback(url: &Url) -> bool {
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

/// Whether a server at `url` may be called without a key: one on this machine (a loopback
/// address or `localhost`) or at a private-network, link-local or unique-local address, where
/// local servers (llama.cpp, Ollama, vLLM) run without authentication.
pub(crate) fn may_run_without_key(url: &Url) -> bool {
    if is_loopback(url) {
        return true;
    }
    let host = url.host_str().unwrap_or("");
    match host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
    {
        Ok(IpAddr::V4(ip)) => ip.is_private() || ip.is_link_local(),
        Ok(IpAddr::V6(ip)) => {
            let first = ip.segments()[0];
            (first & 0xfe00) == 0xfc00 || (first & 0xffc0) == 0xfe80
        }
        Err(_) => false,
    }
}

/// Whether `config` carries a credential somewhere: the key, a user or password in the base
/// URL, a credential-like query parameter (`?api-key=`) or header (`api-key`, `X-Auth-Token`).
fn has_credentials(config: &OpenAICompatibleConfig, url: &Url) -> bool {
    let credential = |name: &str| {
        let name = name.to_ascii_lowercase();
        ["key", "token", "auth", "secret", "sig", "cookie"]
            .iter()
            .any(|w| name.contains(w))
    };
    api_key(config).is_some()
        || !url.username().is_empty()
        || url.password().is_some()
        || url
            .query_pairs()
            .any(|(k, v)| credential(&k) && !v.is_empty())
        || config
            .extra_headers
            .iter()
            .any(|(k, v)| credential(k) && !v.trim().is_empty())
}

/// The refusal of a config with no key for a server that needs one, before any request is sent
/// (else the request goes out without a key and comes back as an HTTP 401). `key_var` is the
/// setting or variable the key was looked for in (`api_key`, `LLM_API_KEY`); `also` says more
/// about where it was looked for. None when the config may be used. (The message never puts
/// the key's name before a `:` or `=`, which redaction would take for a key's value.)
pub(crate) fn missing_key(
    config: &OpenAICompatibleConfig,
    key_var: &str,
    also: &str,
) -> Option<Error> {
    let url = parse_base_url(&config.base_url).ok()?;
    if has_credentials(config, &url) || may_run_without_key(&url) {
        return None;
    }
    let (field, missing) = if key_var == "api_key" {
        (
            "OpenAICompatible".to_owned(),
            "api_key is not given".to_owned(),
        )
    } else {
        let prefix = key_var.strip_suffix("_API_KEY").unwrap_or(key_var);
        (
            format!("{prefix} settings"),
            format!("{key_var} is not set"),
        )
    };
    Some(invalid(
        &field,
        format!(
            "{missing}{also}, and the server at {} is not on this machine, so every request \
             would be refused (HTTP 401); set {key_var} to the provider's key (for a server that \
             takes none, to any value, such as none)",
            display_url(&url).trim_end_matches('/')
        ),
    ))
}

pub(crate) fn build_headers(config: &OpenAICompatibleConfig) -> Result<HeaderMap, Error> {
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
pub(crate) fn api_key(config: &OpenAICompatibleConfig) -> Option<&str> {
    config
        .api_key
        .as_deref()
        .map(str::trim)
        .filter(|k| !k.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_is_built_from_the_settings_given() {
        let settings = ClientSettings {
            base_url: Some("http://127.0.0.1:9/v1".into()),
            max_retries: Some(4),
            ..ClientSettings::default()
        };
        let config = OpenAICompatibleConfig::from_settings("m".into(), settings).unwrap();
        assert_eq!(config.model, "m");
        assert_eq!(config.base_url, "http://127.0.0.1:9/v1");
        assert_eq!(config.max_retries, 4);
        let default = OpenAICompatibleConfig::from_settings("m".into(), ClientSettings::default());
        assert_eq!(default.unwrap().base_url, DEFAULT_BASE_URL);
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
}

#[cfg(test)]
mod settings_tests {
    use super::*;

    #[test]
    fn settings_fill_defaults_and_refuse_impossible_numbers() {
        let c = OpenAICompatibleConfig::from_settings(
            "m".into(),
            ClientSettings {
                api_key: Some(String::new()),
                timeout: Some(5.0),
                ..ClientSettings::default()
            },
        )
        .unwrap();
        assert_eq!(
            (c.base_url.as_str(), c.api_key, c.timeout, c.max_retries),
            (
                DEFAULT_BASE_URL,
                None,
                Duration::from_secs(5),
                DEFAULT_MAX_RETRIES
            )
        );
        let err = |s: ClientSettings| {
            OpenAICompatibleConfig::from_settings("m".into(), s)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err(ClientSettings {
                max_retries: Some(-1),
                ..ClientSettings::default()
            }),
            "max_retries: -1 is negative; use e.g. 2"
        );
        assert!(OpenAICompatibleConfig::from_settings(
            "m".into(),
            ClientSettings {
                max_retries: Some(1 << 40),
                ..ClientSettings::default()
            }
        )
        .unwrap_err()
        .to_string()
        .starts_with("max_retries: 1099511627776 is more than 10"));
        assert_eq!(
            err(ClientSettings {
                max_tokens: Some(-5),
                ..ClientSettings::default()
            }),
            "max_tokens: -5 leaves no room for an answer; use a positive number or leave it unset"
        );
        assert!(err(ClientSettings {
            timeout: Some(1e300),
            ..ClientSettings::default()
        })
        .starts_with("timeout: "));
    }
}
