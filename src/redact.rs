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
pub(crate) const MASK: &str = "***";

/// What a registered (configured) secret is replaced by: the word the HTTP client has always used.
pub(crate) const REGISTERED_MASK: &str = "[REDACTED]";

/// Payload keys whose values are always replaced by `***` (compared lower-cased, exactly).
/// Unlike the reference, ids (`session_id`, `tool_call_id`, `call_id`) are kept: traces must
/// correlate.
pub(crate) const SECRET_KEYS: [&str; 14] = [
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
pub(crate) const MIN_REGISTERED_LEN: usize = 8;
/// Registered secrets kept at most (a process configures a handful of clients).
const MAX_REGISTERED: usize = 256;

/// The words that make a name a secret's (matched case-insensitively at the END of a name, so
/// `DB_PASSWORD`, `githubToken` and `MY_SECRET_TOKEN` are secrets and `prompt_tokens` is not).
macro_rules! secret_names {
    () => {
        r"secret[_-]?access[_-]?key|secret[_-]?key|api[_-]?key|access[_-]?token|refresh[_-]?token|auth[_-]?token|client[_-]?secret|private[_-]?key|password|passwd|passphrase|secret|token"
    };
}

/// A secret's value after its separator: double-, single- or back-quoted (to the closing quote,
/// `\"` escapes, or to the end of the line when it is cut off), else unquoted (to the first
/// space or delimiter). Groups `dq`/`dqe`, `sq`/`sqe`, `bq`/`bqe`, `value` (see [`assignment`]).
macro_rules! secret_value {
    () => {
        r#"(?:"(?P<dq>(?:[^"\\\r\n]|\\.)+)(?P<dqe>"?)|'(?P<sq>(?:[^'\\\r\n]|\\.)+)(?P<sqe>'?)|`(?P<bq>[^`\r\n]+)(?P<bqe>`?)|(?P<value>[^\s"'`&,;}=][^\s"'&,;}]*))"#
    };
}

/// A secret's name, then its separator, then the value (see [`assignment`]): a quoted value
/// runs to its closing quote (spaces, `;` and `&` included; `\"` escapes; a value cut off at
/// the end of its line is masked to there), an unquoted one to the first space or delimiter.
/// Separators stay on one line: `if not password:` then a newline assigns nothing.
const ASSIGNMENT: &str = concat!(
    r#"(?i)\b((?P<name>[A-Za-z0-9_\-]*?(?:"#,
    secret_names!(),
    r#")|pwd)["']?[ \t]*(?P<sep>=>|:=|=|:)[ \t]*)"#,
    secret_value!()
);

/// The same with a type annotation between the name and `=` (Python, TypeScript, Rust, Kotlin):
/// `password: str = "x"`, `const apiToken: string = 'x'`, `let token: &str = "x"`. The name and
/// its annotation stay; the value is masked as [`ASSIGNMENT`]'s is, `None` or a reference kept.
const ANNOTATED: &str = concat!(
    r#"(?i)\b((?P<name>[A-Za-z0-9_\-]*?(?:"#,
    secret_names!(),
    r#")|pwd)[ \t]*:[ \t]*[A-Za-z_&*][A-Za-z0-9_.&*\[\]<>|, ]*?[ \t]*(?P<sep>=)[ \t]*)"#,
    secret_value!()
);

/// How one pattern's match is replaced.
enum Replace {
    /// A fixed replacement (may use `${1}`).
    With(&'static str),
    /// The first `n` characters kept (they say which kind of key it was), the rest masked.
    KeepPrefix(usize),
    /// `Basic <base64>` only when it decodes to `user:password` (so `Basic authentication`
    /// stays).
    Basic,
    /// A secret's assignment: the value masked unless it is code (see [`assignment`]).
    Assignment,
}

/// The credential shapes, each with why its near misses are safe.
const PATTERNS: &[(&str, Replace)] = &[
    // PEM private keys, also when the END line was cut off by a snippet.
    (
        r"-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----(?:[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----|[\s\S]*)",
        Replace::With("-----BEGIN ${1}PRIVATE KEY-----***-----END ${1}PRIVATE KEY-----"),
    ),
    // A PEM private key's body whose BEGIN line was cut off (a Read window that starts inside
    // it): base64 lines, bare or with Read's `  12 | ` numbers, up to the END line.
    (
        r"(?m)(?:^[ \t]*(?:\d+ \| )?[A-Za-z0-9+/=]{16,}[ \t]*\r?\n)+([ \t]*(?:\d+ \| )?)-----END ([A-Z0-9 ]*)PRIVATE KEY-----",
        Replace::With("***\n${1}-----END ${2}PRIVATE KEY-----"),
    ),
    // A PEM private key's first body line, known by its DER header (RSA and PKCS#8
    // `MII..IBA`, encrypted PKCS#8, EC `MHcCAQEE`/`MIG.AgEB`, Ed25519 `MC4CAQAw`, OpenSSH
    // `b3BlbnNzaC1rZXktdjE`), with the base64 lines that follow: a Read window that starts on
    // the key's second line and ends before END, or a Grep match on that line. Certificates
    // (`MII..CCA`) and public keys (`MII..ANBg`) have other headers and stay.
    (
        r"(?m)^([ \t]*(?:\d+ \| )?)(?:MII[A-Za-z0-9+/]{3}IBA[AD]|MII[A-Za-z0-9+/]{3}DBOBgkqhkiG9w0BBQ0|MHcCAQEE|MI[GH][A-Za-z0-9+/]AgEB|MIG[A-Za-z0-9+/]AgEAM|MC4CAQAw|b3BlbnNzaC1rZXktdjE)[A-Za-z0-9+/=]*[ \t]*(?:\r?\n[ \t]*(?:\d+ \| )?[A-Za-z0-9+/=]{16,}[ \t]*$)*",
        Replace::With("${1}***"),
    ),
    // An AWS secret key (40 base64 characters) written next to its access key id, as in the
    // console's credentials.csv or `AKIA... wJalr...`; before the key-id pattern, which would
    // hide the pair.
    (
        r#"\b(AKIA|ASIA)[A-Z0-9]{16}([\s,;:|='"]{1,8}(?:[A-Za-z_]{1,40}["']?[ \t]*[=:][ \t]*["']?)?)[A-Za-z0-9/+]{40}([^A-Za-z0-9/+]|$)"#,
        Replace::With("${1}***${2}***${3}"),
    ),
    // An AWS secret key (40 base64 characters) after its own name, whatever separates them:
    // `aws configure set aws_secret_access_key <key>`, `Secret access key: <key>`,
    // `SecretAccessKey <key>` (the assignment pattern below needs `=` or `:`).
    (
        r#"(?i)\b((?:aws[ _\-]?)?secret[ _\-]?access[ _\-]?key["']?(?:[ \t]+is)?[\s=:,|>"'`]{1,8})[A-Za-z0-9/+]{40}([^A-Za-z0-9/+=]|$)"#,
        Replace::With("${1}***${2}"),
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
    // Assignments of secrets, in any language's spelling: `DB_PASSWORD=`, `export GITHUB_TOKEN=`,
    // `secret: 's3cr3t'`, `"api_key": "..."`, `'password' => 'x'`, `password := "x"`. The name
    // ends at the keyword, so `prompt_tokens:` and `token_budget=` stay; [`assignment`] keeps
    // what is code rather than a value (`password: str`, `token=self.token`, `max_token=9`).
    (ANNOTATED, Replace::Assignment),
    (ASSIGNMENT, Replace::Assignment),
    // The same in XML: `<password>x</password>`, `<db_password>x</db_password>`.
    (
        concat!(
            r"(?i)<([A-Za-z0-9_\-]*?(?:",
            secret_names!(),
            r"))>([^<\s][^<]*)</"
        ),
        Replace::With("<${1}>***</"),
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
pub(crate) fn register_secrets<S: AsRef<str>>(secrets: &[S]) {
    for s in secrets {
        register_secret(s.as_ref());
    }
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

/// A secret's assignment with its value masked, or kept whole when the "value" is code: a type
/// (`password: str`, `token: &str`), a reference or call (`password=self.password`,
/// `token := os.Getenv("T")`, `password=password`), a literal such as `None`, or a count
/// (`max_token=9`). A quoted value is always a value.
fn assignment(caps: &Captures<'_>) -> String {
    for (quote, close, q) in [("dq", "dqe", '"'), ("sq", "sqe", '\''), ("bq", "bqe", '`')] {
        if caps.name(quote).is_some() {
            return format!("{}{q}{MASK}{}", &caps[1], &caps[close]);
        }
    }
    let (name, value) = (&caps["name"], &caps["value"]);
    let lower = name.to_ascii_lowercase();
    let count = lower.ends_with("token") && value.bytes().all(|b| b.is_ascii_digit());
    // `secret:12` and `etc/passwd:3-9` are citations of a file named like a secret (a line or
    // a range right after the colon), not a secret: YAML needs a space after a key's colon.
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let citation = &caps["sep"] == ":"
        && caps[1].ends_with(':')
        && match value.split_once('-') {
            Some((a, b)) => digits(a) && digits(b),
            None => digits(value),
        };
    if citation {
        return caps[0].to_string();
    }
    if count || is_code(&lower, &caps["sep"], value) {
        caps[0].to_string()
    } else {
        format!("{}{MASK}", &caps[1])
    }
}

/// Whether an unquoted assignment's value is code rather than a secret (see [`assignment`]).
fn is_code(name: &str, sep: &str, value: &str) -> bool {
    static CODE: OnceLock<(Regex, Regex)> = OnceLock::new();
    let (reference, type_name) = CODE.get_or_init(|| {
        (
            // `self.password`, `config.db.token`, `$DB_PASSWORD`, `${TOKEN}`, or a call or index.
            Regex::new(r"^(?:[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+|\$\{?[A-Z_][A-Z0-9_]*\}?|[A-Za-z_][A-Za-z0-9_.:]*[(\[<].*)$")
                .expect("valid code pattern"),
            // A type annotation after `:` (`str`, `Optional[str]`, `&`, `String)`, `typing.Any,`).
            Regex::new(r"^(?:[&*]+(?:mut)?|(?:[A-Za-z_][A-Za-z0-9_]*\.)*(?:str|String|string|bytes|bytearray|int|bool|float|Any|None|Optional|Option|Union|SecretStr|SecretBytes|SecretString|Secret|char|number|object|unknown|any|Vec|Box|Arc|Rc|Cow|List|list|Dict|dict|Mapping|Sequence|Path|PathLike|impl|dyn|u8|i32|i64|u32|u64|usize|Token|Credentials))(?:[\[<(|].*)?[),\]]*$")
                .expect("valid type pattern"),
        )
    });
    // A literal closing a call or a list is the literal: `f(token: str = None)`.
    let word = value.trim_end_matches([')', ']', ':']).to_ascii_lowercase();
    matches!(
        word.as_str(),
        "none" | "null" | "nil" | "true" | "false" | "undefined"
    ) || word == name
        || reference.is_match(value)
        || (sep == ":" && type_name.is_match(value))
}

/// Whether a payload key names a secret whose string value is masked: one of [`SECRET_KEYS`],
/// or a name that ends in a secret's word (`DB_PASSWORD`, `githubToken`).
fn is_secret_key(key: &str) -> bool {
    static NAME: OnceLock<Regex> = OnceLock::new();
    let name = NAME.get_or_init(|| {
        Regex::new(concat!(r"(?i)^[A-Za-z0-9_\-]*?(?:", secret_names!(), r")$"))
            .expect("valid secret name pattern")
    });
    name.is_match(key)
}

/// Redact secrets in one string (see the module docs for what counts as one).
pub fn redact_str(text: &str) -> String {
    redact_cow(text).into_owned()
}

/// [`redact_str`], borrowing when nothing was found.
pub(crate) fn redact_cow(text: &str) -> Cow<'_, str> {
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
    for i in &hits {
        let (re, rep) = &c.each[i];
        let replaced = match rep {
            Replace::KeepPrefix(n) => re.replace_all(&out, |caps: &Captures<'_>| {
                format!("{}{MASK}", &caps[0][..*n])
            }),
            Replace::With(r) => re.replace_all(&out, *r),
            Replace::Basic => re.replace_all(&out, basic_credential),
            Replace::Assignment => re.replace_all(&out, assignment),
        };
        if let Cow::Owned(s) = replaced {
            out = Cow::Owned(s);
        }
    }
    out
}

/// Redact a JSON value in place: secret keys get `***`, every string is scrubbed, object keys
/// included.
pub(crate) fn redact_in_place(value: &mut Value) {
    match value {
        Value::String(s) => {
            if let Cow::Owned(r) = redact_cow(s) {
                *s = r;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_in_place),
        Value::Object(map) => {
            redact_keys(map);
            for (k, v) in map.iter_mut() {
                let named = SECRET_KEYS.iter().any(|s| k.eq_ignore_ascii_case(s));
                if (named && !v.is_null()) || (v.is_string() && is_secret_key(k)) {
                    *v = Value::String(MASK.into());
                } else {
                    redact_in_place(v);
                }
            }
        }
        _ => {}
    }
}

/// Redact every string of a JSON value in place, object keys included, without masking values
/// by their key's name: an answer object whose schema has a `token` field keeps its count.
pub fn redact_strings_in_place(value: &mut Value) {
    match value {
        Value::String(s) => {
            if let Cow::Owned(r) = redact_cow(s) {
                *s = r;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_strings_in_place),
        Value::Object(map) => redact_map_strings(map),
        _ => {}
    }
}

/// [`redact_strings_in_place`] over an object's keys and values.
pub fn redact_map_strings(map: &mut serde_json::Map<String, Value>) {
    redact_keys(map);
    map.values_mut().for_each(redact_strings_in_place);
}

/// An object's keys with their secrets redacted, in their order; a key that redacts to one
/// already there gets ` (2)`, ` (3)`, ... so no value is lost.
fn redact_keys(map: &mut serde_json::Map<String, Value>) {
    if !map.keys().any(|k| matches!(redact_cow(k), Cow::Owned(_))) {
        return;
    }
    let old = std::mem::take(map);
    for (k, v) in old {
        let mut key = redact_str(&k);
        let base = key.clone();
        let mut n = 2;
        while map.contains_key(&key) {
            key = format!("{base} ({n})");
            n += 1;
        }
        map.insert(key, v);
    }
}

/// How much of a line's start [`PrivateKeyLines`] keeps to tell a BEGIN or END line.
const PEM_HEAD: usize = 80;

/// The lines of a file that lie inside a PEM private key (after its BEGIN line, before its END
/// line; to the end of what was read when no END came), found in one pass over the bytes as a
/// tool reads them. A text pattern cannot tell a key's third base64 line from any other: the
/// file can, so Read and Grep show `***` for those lines.
#[derive(Debug, Default)]
pub struct PrivateKeyLines {
    /// Newlines seen: the current line is `newlines + 1`.
    newlines: u64,
    head: Vec<u8>,
    open: Option<u64>,
    /// Inclusive ranges of body lines.
    bodies: Vec<(u64, u64)>,
}

impl PrivateKeyLines {
    /// Take the file's next bytes.
    pub fn feed(&mut self, buf: &[u8]) {
        // The line begun in the previous chunk first: a BEGIN line may straddle the two.
        let Some(first) = memchr::memchr(b'\n', buf) else {
            self.keep(buf);
            return;
        };
        self.keep(&buf[..first]);
        self.end_line();
        let rest = &buf[first + 1..];
        if self.open.is_none() && memchr::memmem::find(rest, b"PRIVATE KEY").is_none() {
            // No key here (the common case): count lines, keep the unfinished one's head.
            let last = memchr::memrchr(b'\n', rest);
            self.newlines += memchr::memchr_iter(b'\n', rest).count() as u64;
            self.keep(&rest[last.map_or(0, |i| i + 1)..]);
            return;
        }
        let mut pos = 0;
        while let Some(i) = memchr::memchr(b'\n', &rest[pos..]) {
            self.keep(&rest[pos..pos + i]);
            self.end_line();
            pos += i + 1;
        }
        self.keep(&rest[pos..]);
    }

    /// The end of what was read: a last line without a newline counts, a key without its END
    /// line runs to the end.
    pub fn finish(&mut self) {
        if !self.head.is_empty() {
            self.end_line();
        }
        if let Some(start) = self.open.take() {
            self.bodies.push((start, u64::MAX));
        }
    }

    /// Whether line `n` (1-based) is inside a private key.
    pub fn contains(&self, n: u64) -> bool {
        self.bodies.iter().any(|&(a, b)| a <= n && n <= b)
    }

    /// Whether no private key was seen.
    pub fn is_empty(&self) -> bool {
        self.bodies.is_empty() && self.open.is_none()
    }

    fn keep(&mut self, piece: &[u8]) {
        let room = PEM_HEAD.saturating_sub(self.head.len());
        self.head.extend_from_slice(&piece[..piece.len().min(room)]);
    }

    fn end_line(&mut self) {
        let line = self.newlines + 1;
        let text = self.head.trim_ascii();
        let key = memchr::memmem::find(text, b"PRIVATE KEY-----").is_some();
        if key && text.starts_with(b"-----BEGIN ") && self.open.is_none() {
            self.open = Some(line + 1);
        } else if key && text.starts_with(b"-----END ") {
            if let Some(start) = self.open.take() {
                if line > start {
                    self.bodies.push((start, line - 1));
                }
            }
        }
        self.head.clear();
        self.newlines += 1;
    }
}

/// Redact a JSON value: secret keys get `***`, every string is scrubbed (the tests' view of
/// [`redact_in_place`]).
#[cfg(test)]
pub(crate) fn redact(value: &Value) -> Value {
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
        // Names that end in a secret's word, in each language's assignment.
        ("DB_PASSWORD=hunter2hunter2", "DB_PASSWORD=***"),
        ("LLM_API_KEY=plain-key-0001", "LLM_API_KEY=***"),
        ("MY_SECRET_TOKEN=abcdef", "MY_SECRET_TOKEN=***"),
        ("export GITHUB_TOKEN=abc123def", "export GITHUB_TOKEN=***"),
        ("$db = ['password' => 'x', 'user' => 'u'];", "$db = ['password' => '***', 'user' => 'u'];"),
        (r#"password := "x""#, r#"password := "***""#),
        (r#"DB_PASSWORD = "x""#, r#"DB_PASSWORD = "***""#),
        (r#"const dbPassword = "x";"#, r#"const dbPassword = "***";"#),
        ("<password>x</password>", "<password>***</password>"),
        ("<db_password>hunter2</db_password>", "<db_password>***</db_password>"),
        ("password: hunter2", "password: ***"),
        (r#"{"DB_PASSWORD": "x"}"#, r#"{"DB_PASSWORD": "***"}"#),
        (r#"password: "str""#, r#"password: "***""#),
        ("password=None1", "password=***"),
        // With a type annotation before the `=`.
        (r#"password: str = "x""#, r#"password: str = "***""#),
        ("const apiToken: string = 'abc123';", "const apiToken: string = '***';"),
        (r#"let db_password: &str = "hunter2";"#, r#"let db_password: &str = "***";"#),
        ("secret: Optional[str] = plainvalue1", "secret: Optional[str] = ***"),
        // A line number after a colon with no space is a citation; with a space, a value.
        ("password: 123456", "password: ***"),
        // A PEM body read without its BEGIN line, bare and in Read's numbered lines.
        (
            "MIIEowIBAAKCAQEA7secretsecret\nAAAABBBBCCCCDDDDEEEE\n-----END RSA PRIVATE KEY-----\n",
            "***\n-----END RSA PRIVATE KEY-----\n",
        ),
        (
            "  12 | MIIEowIBAAKCAQEA7secretsecret\n  13 | AAAABBBBCCCCDDDDEEEE\n  14 | -----END PRIVATE KEY-----",
            "***\n  14 | -----END PRIVATE KEY-----",
        ),
        // A PEM body whose first line is in view but neither BEGIN nor END is (Read from
        // line 2 with a limit, a Grep match on that line).
        (
            "   2 | MIIEowIBAAKCAQEA7bodybodybodybodybody\n   3 | Kx3fQ0nZcY8mR2l5TtA9bodybody\n",
            "   2 | ***\n",
        ),
        ("MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7", "***"),
        ("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW", "***"),
        ("MHcCAQEEIIrYSSNQFaA2Hwf1duRSxKtLYX5CB04fSeQ6tF1aY/PuoAoGCCqGSM49", "***"),
        // An AWS secret key after its name with no `=` or `:`.
        (
            "aws configure set aws_secret_access_key wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "aws configure set aws_secret_access_key ***",
        ),
        (
            "my AWS secret access key is wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY.",
            "my AWS secret access key is ***.",
        ),
        (
            "SecretAccessKey\twJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
            "SecretAccessKey\t***\n",
        ),
        // A quoted value runs to its closing quote, whatever it holds.
        (
            r#"password := "correct horse; battery & staple""#,
            r#"password := "***""#,
        ),
        (r#"password := "hun\"ter2" // x"#, r#"password := "***" // x"#),
        ("password := `hunter 2`", "password := `***`"),
        ("secret: 'two words'", "secret: '***'"),
        ("password = \"cut off at the line's end\nnext", "password = \"***\nnext"),
        // An AWS secret key next to its access key id.
        (
            "bob,,AKIAIOSFODNN7EXAMPLE,wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY,https://x",
            "bob,,AKIA***,***,https://x",
        ),
        (
            "AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "AKIA*** ***",
        ),
        (
            r#""AccessKeyId": "ASIAY34FZKBOKMUTVV7A", "SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY""#,
            r#""AccessKeyId": "ASIA***", "SecretAccessKey": "***""#,
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
        // Citations of files named like a secret.
        "secret:1",
        "../../etc/passwd:3-9",
        "api_key:12 sets x",
        // Ordinary source that names a secret without holding one.
        "def f(password: str) -> None:",
        "def f(password: str, token: Optional[str] = None):",
        "fn login(password: &str, token: String) {}",
        "interface Login { password: string; apiKey: string }",
        "self.password = password",
        "password = getpass.getpass()",
        "token := os.Getenv(\"TOKEN\")",
        "if not password:\n    raise ValueError(\"no password\")",
        "token = self._token",
        "password=None",
        "DB_PASSWORD=${DB_PASSWORD}",
        "if password == \"\":",
        "<maxTokens>5</maxTokens> total_token_budget=3 max_token=9",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY alone",
        // Certificates and public keys have other DER headers.
        "MIIDdzCCAl+gAwIBAgIJAKZ7D9l8Y1pFMA0GCSqGSIb3DQEBCwUAMFIxCzAJBgNV",
        "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1LfVLPHCozMxH2Mo",
        "the secret access key rotates daily",
        r#"if password == "": pass"#,
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
    fn private_key_lines_are_found_in_any_chunking() {
        let file = "a\n-----BEGIN RSA PRIVATE KEY-----\nAAAA\nBBBB\n-----END RSA PRIVATE KEY-----\nb\n-----BEGIN CERTIFICATE-----\nCCCC\n-----END CERTIFICATE-----\n  -----BEGIN OPENSSH PRIVATE KEY-----\nDDDD\nEEEE";
        for size in 1..=file.len() {
            let mut keys = PrivateKeyLines::default();
            for chunk in file.as_bytes().chunks(size) {
                keys.feed(chunk);
            }
            keys.finish();
            let inside: Vec<u64> = (1..=16).filter(|&n| keys.contains(n)).collect();
            assert_eq!(inside, [3, 4, 11, 12, 13, 14, 15, 16], "chunks of {size}");
        }
        let mut none = PrivateKeyLines::default();
        none.feed(b"-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----\n");
        none.finish();
        assert!(none.is_empty());
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
    fn a_secret_used_as_an_object_key_is_redacted() {
        register_secret("plain-key-as-a-key-0042");
        let v = serde_json::json!({
            "sk-abcdefghijklmnopqrstuvwx": 1, "sk-ABCDEFGHIJKLMNOPQRSTUVWX": 2,
            "nested": {"plain-key-as-a-key-0042": "v", "ok": "sk-abcdefghijklmnopqrstuvwx"},
            "token": 3
        });
        let expected = serde_json::json!({
            "sk-***": 1, "sk-*** (2)": 2,
            "nested": {"[REDACTED]": "v", "ok": "sk-***"},
            "token": 3
        });
        let mut strings = v.clone();
        redact_strings_in_place(&mut strings);
        assert_eq!(strings, expected);
        let keys: Vec<_> = strings.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["sk-***", "sk-*** (2)", "nested", "token"]);
        assert_eq!(
            redact(&v),
            serde_json::json!({
                "sk-***": 1, "sk-*** (2)": 2,
                "nested": {"[REDACTED]": "v", "ok": "sk-***"},
                "token": "***"
            })
        );
    }

    #[test]
    fn json_keys_and_strings() {
        let v = serde_json::json!({
            "api_key": "abc", "Authorization": "Bearer abcdefghijklmnop",
            "tool_call_id": "call_1", "session_id": "child-1",
            "note": "use sk-abcdefghijklmnopqrstuvwx and bearer xyz.abc-def_123 at https://h/x?api_key=zzz&q=1",
            "list": ["sk-AAAAAAAAAAAAAAAAAAAAAAAA"], "n": 3,
            "DB_PASSWORD": "x", "githubToken": "abc", "max_token": 9, "prompt_tokens": "7"
        });
        assert_eq!(
            redact(&v),
            serde_json::json!({
                "api_key": "***", "Authorization": "***",
                "tool_call_id": "call_1", "session_id": "child-1",
                "note": "use sk-*** and Bearer *** at https://h/x?api_key=***&q=1",
                "list": ["sk-***"], "n": 3,
                "DB_PASSWORD": "***", "githubToken": "***", "max_token": 9, "prompt_tokens": "7"
            })
        );
    }
}
