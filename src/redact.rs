//! Secret redaction, one pattern set for every boundary where text leaves the core: error
//! messages, launch results, tool envelopes, reprs and traces. It removes the credentials a
//! caller configured (see [`register_secret`]) and anything shaped like a common credential
//! (provider API keys, bearer and Basic credentials, passwords in URLs, `password=`-style
//! assignments, PEM private keys). Ids (`tool_call_id`, `call_...`), uuids and hex hashes are
//! kept: traces must correlate, and git SHAs are evidence.

use std::borrow::Cow;
use std::sync::{OnceLock, RwLock};

use base64::Engine as _;
use regex::{Captures, Regex, RegexSet};
use serde_json::Value;

/// What a redacted secret is replaced by.
pub const MASK: &str = "***";

/// What a registered (configured) secret is replaced by: the word the HTTP client has always used.
pub const REGISTERED_MASK: &str = "[REDACTED]";

/// Payload keys whose values are always replaced by `***` (compared lower-cased, exactly).
/// Unlike the reference, ids (`session_id`, `tool_call_id`, `call_id`) are kept: traces must
/// correlate.
pub const SECRET_KEYS: [&str; 14] = [
    "api_key",
    "apikey",
    "api-key",
    "secret",
    "secret_key",
    "secretkey",
    "token",
    "access_token",
    "refresh_token",
    "password",
    "passwd",
    "pwd",
    "authorization",
    "auth",
];

/// Configured secrets shorter than this are not registered: replacing a short word everywhere
/// would mangle ordinary text, and no real key is that short.
pub const MIN_REGISTERED_LEN: usize = 8;
/// Registered secrets kept at most (a process configures a handful of clients).
const MAX_REGISTERED: usize = 256;

/// How one pattern's match is replaced.
enum Replace {
    /// A fixed replacement (may use `${1}`).
    With(&'static str),
    /// The first `n` characters kept (they say which kind of key it was), the rest masked.
    KeepPrefix(usize),
    /// `Basic <base64>` only when it decodes to `user:password` (so `Basic authentication`
    /// stays).
    Basic,
}

/// The credential shapes, each with why its near misses are safe.
const PATTERNS: &[(&str, Replace)] = &[
    // PEM private keys, also when the END line was cut off by a snippet.
    (
        r"-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----(?:[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----|[\s\S]*)",
        Replace::With("-----BEGIN ${1}PRIVATE KEY-----***-----END ${1}PRIVATE KEY-----"),
    ),
    // OpenAI (`sk-`, `sk-proj-`) and Anthropic (`sk-ant-`); `\b` keeps `task-...` intact.
    (r"\bsk-[A-Za-z0-9_\-]{20,}", Replace::With("sk-***")),
    // AWS access key ids.
    (r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b", Replace::KeepPrefix(4)),
    // GitHub tokens (classic and fine-grained).
    (r"\bgh[pousr]_[A-Za-z0-9]{30,}", Replace::With("gh*_***")),
    (
        r"\bgithub_pat_[A-Za-z0-9_]{20,}",
        Replace::With("github_pat_***"),
    ),
    // Slack tokens.
    (r"\bxox[abpr]-[A-Za-z0-9\-]{10,}", Replace::With("xox*-***")),
    // Google API keys.
    (r"\bAIza[0-9A-Za-z_\-]{35}", Replace::With("AIza***")),
    // Bearer tokens.
    (
        r"(?i)\bbearer\s+[A-Za-z0-9._~+/=\-]{8,}",
        Replace::With("Bearer ***"),
    ),
    // Basic credentials (checked to decode to `user:password`).
    (r"(?i)\bbasic\s+([A-Za-z0-9+/]{6,}={0,2})", Replace::Basic),
    // A password in a URL: `scheme://user:password@host`.
    (
        r"\b([A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]*:)[^\s/@]+@",
        Replace::With("${1}***@"),
    ),
    // Assignments of secrets (`password=`, `secret: `, `"api_key": "..."`, AWS secret keys); the
    // `\b` keeps `max_token=` and `prompt_tokens:` intact.
    (
        r#"(?i)\b((?:aws_)?(?:secret_access_key|secret_key|api[_-]?key|apikey|access[_-]?token|refresh[_-]?token|auth[_-]?token|client[_-]?secret|password|passwd|pwd|secret|token)["']?\s*[=:]\s*["']?)([^\s"'&,;}]+)"#,
        Replace::With("${1}***"),
    ),
    // Key/token URL parameters.
    (
        r"(?i)([?&](?:key|sig|signature|access_token|token)=)[^&\s]+",
        Replace::With("${1}***"),
    ),
];

struct Compiled {
    set: RegexSet,
    each: Vec<(Regex, &'static Replace)>,
}

fn compiled() -> &'static Compiled {
    static C: OnceLock<Compiled> = OnceLock::new();
    C.get_or_init(|| Compiled {
        set: RegexSet::new(PATTERNS.iter().map(|(re, _)| *re)).expect("valid secret patterns"),
        each: PATTERNS
            .iter()
            .map(|(re, rep)| (Regex::new(re).expect("valid secret pattern"), rep))
            .collect(),
    })
}

fn registered() -> &'static RwLock<Vec<String>> {
    static R: OnceLock<RwLock<Vec<String>>> = OnceLock::new();
    R.get_or_init(|| RwLock::new(Vec::new()))
}

/// Register a configured credential (an API key, a URL password): every later redaction removes
/// it verbatim, whatever its shape. Values shorter than 8 characters are ignored.
pub fn register_secret(secret: &str) {
    let secret = secret.trim();
    if secret.len() < MIN_REGISTERED_LEN {
        return;
    }
    if let Ok(mut list) = registered().write() {
        if list.iter().any(|s| s == secret) {
            return;
        }
        if list.len() >= MAX_REGISTERED {
            list.remove(0);
        }
        list.push(secret.to_string());
        // Longest first, so a secret that contains another is removed whole.
        list.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }
}

/// [`register_secret`] for each of `secrets`.
pub fn register_secrets<S: AsRef<str>>(secrets: &[S]) {
    secrets.iter().for_each(|s| register_secret(s.as_ref()));
}

fn basic_credential(caps: &Captures<'_>) -> String {
    let whole = &caps[0];
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(caps[1].as_bytes())
        .ok()
        .and_then(|b| String::from_utf8(b).ok());
    match decoded {
        Some(pair) if pair.contains(':') => format!("{}***", &whole[..whole.len() - caps[1].len()]),
        _ => whole.to_string(),
    }
}

/// Redact secrets in one string (see the module docs for what counts as one).
pub fn redact_str(text: &str) -> String {
    redact_cow(text).into_owned()
}

/// [`redact_str`], borrowing when nothing was found.
pub fn redact_cow(text: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(text);
    if let Ok(list) = registered().read() {
        for secret in list.iter() {
            if out.contains(secret.as_str()) {
                out = Cow::Owned(out.replace(secret.as_str(), REGISTERED_MASK));
            }
        }
    }
    let c = compiled();
    let hits = c.set.matches(&out);
    if !hits.matched_any() {
        return out;
    }
    for i in hits.iter() {
        let (re, rep) = &c.each[i];
        let replaced = match rep {
            Replace::KeepPrefix(n) => re.replace_all(&out, |caps: &Captures<'_>| {
                format!("{}{MASK}", &caps[0][..*n])
            }),
            Replace::With(r) => re.replace_all(&out, *r),
            Replace::Basic => re.replace_all(&out, basic_credential),
        };
        if let Cow::Owned(s) = replaced {
            out = Cow::Owned(s);
        }
    }
    out
}

/// Redact a JSON value in place: secret keys get `***`, every string is scrubbed.
pub fn redact_in_place(value: &mut Value) {
    match value {
        Value::String(s) => {
            if let Cow::Owned(r) = redact_cow(s) {
                *s = r;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_in_place),
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if !v.is_null() && SECRET_KEYS.iter().any(|s| k.eq_ignore_ascii_case(s)) {
                    *v = Value::String(MASK.into());
                } else {
                    redact_in_place(v);
                }
            }
        }
        _ => {}
    }
}

/// Redact a JSON value: secret keys get `***`, every string is scrubbed.
pub fn redact(value: &Value) -> Value {
    let mut out = value.clone();
    redact_in_place(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One example of each credential format, and what it becomes.
    const POSITIVE: &[(&str, &str)] = &[
        ("key sk-abcdefghijklmnopqrstuvwx here", "key sk-*** here"),
        ("sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz012345", "sk-***"),
        (
            "x-api-key: sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv_wxyz-0123",
            "x-api-key: ***",
        ),
        ("err sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv_wxyz", "err sk-***"),
        ("id AKIAIOSFODNN7EXAMPLE used", "id AKIA*** used"),
        ("ASIAY34FZKBOKMUTVV7A", "ASIA***"),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "aws_secret_access_key = ***",
        ),
        (
            "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "AWS_SECRET_ACCESS_KEY=***",
        ),
        (
            "token ghp_16C7e42F292c6912E7710c838347Ae178B4a ok",
            "token gh*_*** ok",
        ),
        ("gho_16C7e42F292c6912E7710c838347Ae178B4a", "gh*_***"),
        (
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
            "github_pat_***",
        ),
        ("xoxb-123456789012-abcdefghijkl", "xox*-***"),
        ("xoxp-1234567890-abcdef", "xox*-***"),
        (
            "key=AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY&x=1",
            "key=AIza***&x=1",
        ),
        (
            "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.abc",
            "Authorization: Bearer ***",
        ),
        (
            "Authorization: Basic dXNlcjpodW50ZXIy",
            "Authorization: Basic ***",
        ),
        (
            "fetch https://alice:hunter2@db.example.com/x failed",
            "fetch https://alice:***@db.example.com/x failed",
        ),
        (
            "postgres://u:p%40ss@localhost:5432/db",
            "postgres://u:***@localhost:5432/db",
        ),
        ("password=hunter2 user=bob", "password=*** user=bob"),
        ("secret: 's3cr3t-value'", "secret: '***'"),
        (r#"{"token": "abc123"}"#, r#"{"token": "***"}"#),
        ("API_KEY=abcdef12345", "API_KEY=***"),
        ("https://h/x?api_key=zzz&q=1", "https://h/x?api_key=***&q=1"),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nIBAAK\n-----END RSA PRIVATE KEY-----\nafter",
            "-----BEGIN RSA PRIVATE KEY-----***-----END RSA PRIVATE KEY-----\nafter",
        ),
        (
            "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC (truncated",
            "-----BEGIN PRIVATE KEY-----***-----END PRIVATE KEY-----",
        ),
    ];

    /// Near misses: ids, hashes and ordinary words that must pass unchanged.
    const NEGATIVE: &[&str] = &[
        "tool_call_id call_abc123DEF456ghi789JKL012",
        "session child-0123456789abcdef0123456789abcdef",
        "uuid 123e4567-e89b-12d3-a456-426614174000",
        "commit 2fd4e1c67a2d28fced849ee1bb76e7391b93eb12",
        "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "task-abcdefghijklmnopqrstuvwxyz0123",
        "sk-short",
        "AKIA1234",
        "AKIAIOSFODNN7EXAMPLEXTRA",
        "ghp_short",
        "xoxz-123456789012-abcdef",
        "AIzaShort",
        "the bearer of bad news",
        "Basic authentication is off",
        "https://example.com:8443/path@v2",
        "git@github.com:org/repo.git",
        "http://user@host/path",
        "max_tokens=5 prompt_tokens: 7 max_token=9",
        "tokens: 12",
        "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----",
        "-----BEGIN CERTIFICATE-----\nMIIB",
        "passwords are checked elsewhere",
    ];

    #[test]
    fn every_format_is_redacted() {
        for (input, expected) in POSITIVE {
            assert_eq!(redact_str(input), *expected, "input: {input:?}");
        }
    }

    #[test]
    fn near_misses_are_kept() {
        for input in NEGATIVE {
            assert_eq!(redact_str(input), *input, "input: {input:?}");
        }
    }

    #[test]
    fn redaction_is_idempotent() {
        for (input, _) in POSITIVE {
            let once = redact_str(input);
            assert_eq!(redact_str(&once), once, "input: {input:?}");
        }
    }

    #[test]
    fn registered_secrets_are_removed_whatever_their_shape() {
        register_secret("short");
        register_secret("plain-configured-key-42");
        assert_eq!(
            redact_str("HTTP 401: key plain-configured-key-42 is not valid (short)"),
            "HTTP 401: key [REDACTED] is not valid (short)"
        );
    }

    #[test]
    fn json_keys_and_strings() {
        let v = serde_json::json!({
            "api_key": "abc", "Authorization": "Bearer abcdefghijklmnop",
            "tool_call_id": "call_1", "session_id": "child-1",
            "note": "use sk-abcdefghijklmnopqrstuvwx and bearer xyz.abc-def_123 at https://h/x?api_key=zzz&q=1",
            "list": ["sk-AAAAAAAAAAAAAAAAAAAAAAAA"], "n": 3
        });
        assert_eq!(
            redact(&v),
            serde_json::json!({
                "api_key": "***", "Authorization": "***",
                "tool_call_id": "call_1", "session_id": "child-1",
                "note": "use sk-*** and Bearer *** at https://h/x?api_key=***&q=1",
                "list": ["sk-***"], "n": 3
            })
        );
    }
}
