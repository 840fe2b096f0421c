//! Secret redaction for everything a trace keeps: secret-named keys, `sk-` keys, bearer tokens
//! and key/token URL parameters.

use std::sync::OnceLock;

use regex::Regex;
use serde_json::Value;

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

fn secret_patterns() -> &'static [(Regex, &'static str)] {
    static PATTERNS: OnceLock<Vec<(Regex, &'static str)>> = OnceLock::new();
    PATTERNS.get_or_init(|| {
        [
            (r"sk-[A-Za-z0-9_\-]{20,}", "sk-***"),
            (r"(?i)\bbearer\s+[A-Za-z0-9._~+/=\-]{8,}", "Bearer ***"),
            (
                r"(?i)([?&](?:api[_-]?key|key|token|access_token)=)[^&\s]+",
                "${1}***",
            ),
        ]
        .into_iter()
        .map(|(re, rep)| (Regex::new(re).expect("valid secret pattern"), rep))
        .collect()
    })
}

/// Whether `text` could hold a secret at all (cheap checks before any regex runs).
fn may_hold_secret(text: &str) -> bool {
    let b = text.as_bytes();
    memchr::memmem::find(b, b"sk-").is_some()
        || memchr::memchr(b'=', b).is_some()
        || memchr::memmem::find(b, b"earer").is_some()
        || memchr::memmem::find(b, b"EARER").is_some()
}

/// Redact secrets in one string: `sk-` keys, bearer tokens, key/token URL parameters.
pub fn redact_str(text: &str) -> String {
    if !may_hold_secret(text) {
        return text.to_string();
    }
    let mut out = std::borrow::Cow::Borrowed(text);
    for (re, rep) in secret_patterns() {
        if re.is_match(&out) {
            out = std::borrow::Cow::Owned(re.replace_all(&out, *rep).into_owned());
        }
    }
    out.into_owned()
}

/// Redact a JSON value in place: secret keys get `***`, every string is scrubbed.
pub fn redact_in_place(value: &mut Value) {
    match value {
        Value::String(s) if may_hold_secret(s) => *s = redact_str(s),
        Value::Array(items) => items.iter_mut().for_each(redact_in_place),
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if !v.is_null() && SECRET_KEYS.iter().any(|s| k.eq_ignore_ascii_case(s)) {
                    *v = Value::String("***".into());
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
