//! Configuration of the built-in client from the environment, with the reference's variables.
//!
//! | variable | meaning |
//! |---|---|
//! | `{PREFIX}_MODEL_ID` | the model; unset means "no such route" (`Ok(None)`) |
//! | `{PREFIX}_API_KEY` | the key; for a prefix other than `LLM`, falls back to `LLM_API_KEY` only when both routes reach the same base URL |
//! | `{PREFIX}_BASE_URL` | the API root; falls back to `LLM_BASE_URL`, then [`DEFAULT_BASE_URL`] |
//! | `{PREFIX}_TEMPERATURE` | sent when set; `LIGHT_LLM` defaults to 0.5 |
//! | `LLM_TIMEOUT` | seconds per attempt (120) |
//! | `LLM_MAX_RETRIES` | extra attempts after a transient failure (2) |
//!
//! A `.env` file fills in what the environment does not set; it never overrides it. Blank values
//! count as unset. Which file is read is an [`EnvFile`]: by default `.env` in the working
//! directory, but never one inside the explored root unless it is named ([`read_env_file`]).
//!
//! A key is only sent to the base URL configured beside it: a key from the environment with a
//! base URL from a `.env` (or the other way round) is refused, so a checkout's `.env` cannot
//! redirect the user's key to a host it chooses.
//!
//! ```
//! use outrider::api::{config_from_lookup, parse_dotenv};
//! let dotenv = parse_dotenv("LLM_MODEL_ID=gpt-4o-mini\nexport LLM_API_KEY='sk-test' # main key\n");
//! let lookup = |name: &str| dotenv.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.clone());
//! let config = config_from_lookup("LLM", &lookup).unwrap().unwrap();
//! assert_eq!((config.model.as_str(), config.api_key.as_deref()), ("gpt-4o-mini", Some("sk-test")));
//! assert_eq!(config.base_url, "https://api.openai.com/v1");
//! assert!(config_from_lookup("LIGHT_LLM", &lookup).unwrap().is_none());
//! ```

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::llm::openai::config::{
    check_model, check_temperature, display_url, duration_from_secs, missing_key,
    normalize_base_url, parse_base_url, OpenAICompatibleConfig, DEFAULT_BASE_URL,
    DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT,
};

/// The prefix of the main model's variables.
pub const MAIN_PREFIX: &str = "LLM";
/// The prefix of the light model's variables (the cheaper route for sub-agents).
pub(crate) const LIGHT_PREFIX: &str = "LIGHT_LLM";
/// The temperature of the light route when `LIGHT_LLM_TEMPERATURE` is unset (as the reference).
pub(crate) const LIGHT_DEFAULT_TEMPERATURE: f64 = 0.5;
/// The largest `.env` file read; a larger one is refused, never read in part.
pub const MAX_DOTENV_BYTES: u64 = 1 << 20;

/// Which `.env` file configuration reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum EnvFile {
    /// `.env` in the working directory when it is there, is a readable regular file of at most
    /// [`MAX_DOTENV_BYTES`], and does not lie inside the explored root; otherwise none (logged).
    #[default]
    WorkingDirectory,
    /// This file, wherever it is: the caller asked for it by name, so it must be readable.
    Path(PathBuf),
    /// No file: the process environment alone.
    Off,
}

/// What `env_file=` expects.
pub const ENV_FILE: &str =
    "a path, None (./.env unless inside the explored root) or False (no .env)";

/// A `.env` file as read: where it is and its assignments in file order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DotEnv {
    /// The file, absolute.
    pub path: PathBuf,
    /// Its assignments; a later one for the same key wins.
    pub pairs: Vec<(String, String)>,
}

impl DotEnv {
    /// The last value the file assigns to `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The `.env` file `setting` names, read, or None. `root` is the explored root, when there is
/// one: the default file is not read when it lies inside it (a checkout's `.env` is the
/// checkout's, not the user's configuration). The default file is skipped, with a log record
/// saying why, when it is missing, not a regular file, too large or unreadable; a file named by
/// the caller is an error in those cases. Never blocks: FIFOs and devices are refused unopened
/// for reading.
pub fn read_env_file(setting: &EnvFile, root: Option<&Path>) -> Result<Option<DotEnv>, Error> {
    match setting {
        EnvFile::Off => Ok(None),
        EnvFile::Path(path) => {
            let path = absolute(path);
            let text = read_regular(&path).map_err(|why| {
                Error::config(
                    "env_file",
                    format!(
                        "{}: {why}; expected a readable .env text file",
                        path.display()
                    ),
                )
            })?;
            tracing::info!("read .env file {}", path.display());
            Ok(Some(DotEnv {
                pairs: parse_dotenv(&text),
                path,
            }))
        }
        EnvFile::WorkingDirectory => {
            let path = absolute(Path::new(".env"));
            if std::fs::symlink_metadata(&path).is_err() {
                return Ok(None);
            }
            if let Some(root) = root.filter(|root| inside(&path, root)) {
                tracing::info!(
                    "not reading {}: it is inside the explored root {}; name it (env_file=, --env-file) to read it",
                    path.display(),
                    root.display()
                );
                return Ok(None);
            }
            match read_regular(&path) {
                Ok(text) => {
                    tracing::info!("read .env file {}", path.display());
                    Ok(Some(DotEnv {
                        pairs: parse_dotenv(&text),
                        path,
                    }))
                }
                Err(why) => {
                    tracing::warn!("not reading {}: {why}", path.display());
                    Ok(None)
                }
            }
        }
    }
}

/// Whether `path` (or the file it links to) lies inside `root`.
fn inside(path: &Path, root: &Path) -> bool {
    let real_root = std::fs::canonicalize(root).unwrap_or_else(|_| absolute(root));
    let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    path.starts_with(&real_root) || real.starts_with(&real_root) || path.starts_with(absolute(root))
}

/// `path` made absolute against the working directory (not resolved: a symlink stays).
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The text of `path` when it is a regular file of at most [`MAX_DOTENV_BYTES`] in UTF-8,
/// opened without blocking (a FIFO, a device or a terminal is refused by `fstat`), else why not.
fn read_regular(path: &Path) -> Result<String, String> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| format!("cannot be opened ({e})"))?;
    let file = std::fs::File::from(fd);
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot be examined ({e})"))?;
    if !meta.file_type().is_file() {
        return Err("it is not a regular file".into());
    }
    if meta.len() > MAX_DOTENV_BYTES {
        return Err(format!(
            "it is {} bytes, over the {MAX_DOTENV_BYTES}-byte limit for a .env file",
            meta.len()
        ));
    }
    let mut bytes = Vec::new();
    file.take(MAX_DOTENV_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot be read ({e})"))?;
    if bytes.len() as u64 > MAX_DOTENV_BYTES {
        return Err(format!(
            "it grew past the {MAX_DOTENV_BYTES}-byte limit for a .env file while being read"
        ));
    }
    String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".into())
}

/// Where a setting came from: the process environment, or a `.env` file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    /// The process environment.
    Environment,
    /// The `.env` file at this path.
    File(PathBuf),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Environment => f.write_str("the environment"),
            Origin::File(p) => write!(f, "{}", p.display()),
        }
    }
}

/// The config for `prefix` from the process environment and the `.env` file `env_file` names
/// (see [`read_env_file`] for `root`).
pub(crate) fn from_env_file(
    prefix: &str,
    env_file: &EnvFile,
    root: Option<&Path>,
) -> Result<Option<OpenAICompatibleConfig>, Error> {
    let dotenv = read_env_file(env_file, root)?;
    config_from_sources(prefix, &process_env, dotenv.as_ref())
}

fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The value of `name`: the process environment when it sets a non-blank value, else the last
/// assignment in `dotenv`.
pub fn env_or_dotenv(name: &str, dotenv: &[(String, String)]) -> Option<String> {
    std::env::var(name)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .or_else(|| {
            dotenv
                .iter()
                .rev()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        })
}

/// The config for `prefix` with every variable read through `lookup`, all of one origin (so
/// tests need not touch the process environment); `Ok(None)` when `{prefix}_MODEL_ID` is unset.
/// A bad value is an error naming the variable and the value.
pub fn config_from_lookup(
    prefix: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<OpenAICompatibleConfig>, Error> {
    config_from_sources(prefix, lookup, None)
}

/// The config for `prefix` from `env` (the process environment, or a stand-in) and an optional
/// `.env` file that fills what `env` leaves unset. A key is used only with the base URL set in
/// the same place; the light route borrows the main key only for the main route's base URL.
pub fn config_from_sources(
    prefix: &str,
    env: &dyn Fn(&str) -> Option<String>,
    dotenv: Option<&DotEnv>,
) -> Result<Option<OpenAICompatibleConfig>, Error> {
    let prefix = prefix.trim().trim_end_matches('_');
    if prefix.is_empty()
        || !prefix
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
    {
        return Err(invalid(
            "prefix",
            format!("'{prefix}' is not a variable prefix; use upper-case letters, digits and _, such as LLM or LIGHT_LLM"),
        ));
    }
    let used_file = std::cell::Cell::new(false);
    // Blank counts as unset, as `os.getenv(...) or default` does in the reference.
    let get = |name: &str| -> Option<(String, Origin)> {
        let clean = |v: &str| Some(v.trim().to_owned()).filter(|v| !v.is_empty());
        if let Some(v) = env(name).as_deref().and_then(clean) {
            return Some((v, Origin::Environment));
        }
        let file = dotenv?;
        let v = file.get(name).and_then(clean)?;
        used_file.set(true);
        Some((v, Origin::File(file.path.clone())))
    };
    let value = |name: &str| get(name).map(|(v, _)| v);
    let own = |suffix: &str| format!("{prefix}_{suffix}");

    let model_var = own("MODEL_ID");
    let Some(model) = value(&model_var) else {
        return partly_set(prefix, &model_var, &get);
    };
    check_model(&model).map_err(|m| invalid(&model_var, m))?;

    let base = base_url_of(prefix, &get)?;
    let mut config = OpenAICompatibleConfig::new(
        model,
        base.as_ref().map_or(DEFAULT_BASE_URL, |b| b.url.as_str()),
    );
    let key_var = own("API_KEY");
    config.api_key = match get(&key_var) {
        Some((key, origin)) => {
            same_place(&key_var, &origin, base.as_ref())?;
            Some(key)
        }
        None if prefix == MAIN_PREFIX => None,
        None => lent_main_key(prefix, &config.base_url, &get)?,
    };

    let timeout_var = format!("{MAIN_PREFIX}_TIMEOUT");
    config.timeout = match value(&timeout_var) {
        None => DEFAULT_TIMEOUT,
        Some(raw) => {
            let secs = raw.parse::<f64>().map_err(|_| {
                invalid(
                    &timeout_var,
                    format!("'{raw}' is not a number of seconds; set it to a positive number such as 120"),
                )
            })?;
            duration_from_secs(&timeout_var, secs)?
        }
    };

    let retries_var = format!("{MAIN_PREFIX}_MAX_RETRIES");
    config.max_retries = match value(&retries_var) {
        None => DEFAULT_MAX_RETRIES,
        Some(raw) => raw.parse::<u32>().map_err(|_| {
            invalid(
                &retries_var,
                format!("'{raw}' is not a whole number >= 0; set it to the number of retries, such as 2"),
            )
        })?,
    };

    let temperature_var = own("TEMPERATURE");
    config.temperature = match value(&temperature_var) {
        None if prefix == LIGHT_PREFIX => Some(LIGHT_DEFAULT_TEMPERATURE),
        None => None,
        Some(raw) => {
            let t = raw.parse::<f64>().map_err(|_| {
                invalid(
                    &temperature_var,
                    format!("'{raw}' is not a number; use a temperature such as 0.5"),
                )
            })?;
            check_temperature(t).map_err(|m| invalid(&temperature_var, m))?;
            Some(t)
        }
    };
    // Checked last, so that a bad value above is named first.
    let also = if prefix == MAIN_PREFIX {
        String::new()
    } else {
        format!(" (nor {MAIN_PREFIX}_API_KEY for the same base URL)")
    };
    if let Some(err) = missing_key(&config, &key_var, &also) {
        return Err(err);
    }
    if used_file.get() {
        config.env_file = dotenv.map(|d| d.path.clone());
    }
    Ok(Some(config))
}

/// No model for `prefix`: `Ok(None)` (no such route) when none of its variables is set either;
/// an error naming `model_var` when its key or base URL is set, since whoever set them meant a
/// model to be used (running the offline scout instead would go unnoticed).
fn partly_set(
    prefix: &str,
    model_var: &str,
    get: &Get<'_>,
) -> Result<Option<OpenAICompatibleConfig>, Error> {
    let set: Vec<(String, Origin)> = ["API_KEY", "BASE_URL"]
        .iter()
        .map(|suffix| format!("{prefix}_{suffix}"))
        .filter_map(|var| get(&var).map(|(_, origin)| (var, origin)))
        .collect();
    let Some((_, origin)) = set.first() else {
        return Ok(None);
    };
    let names: Vec<&str> = set.iter().map(|(v, _)| v.as_str()).collect();
    Err(invalid(
        model_var,
        format!(
            "not set, but {} {} set (in {origin}), so a model was meant to be used; set \
             {model_var} to the name of the model to call (e.g. {model_var}=gpt-4.1-mini), or \
             unset {} to run without one",
            names.join(" and "),
            if names.len() == 1 { "is" } else { "are" },
            names.join(" and "),
        ),
    ))
}

/// The error for a model that was asked for but is not configured: `{prefix}_MODEL_ID` is unset
/// (in the environment and the `.env` read). It names the variable and, when a provider's own
/// key variable is set (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`), says that outrider does not
/// read it and how to use it instead.
pub(crate) fn not_configured(prefix: &str) -> Error {
    let model_var = format!("{prefix}_MODEL_ID");
    let key_var = format!("{prefix}_API_KEY");
    let mut message = format!(
        "not set, so no model is configured; set {model_var} to the name of the model to call \
         (with {key_var}, and {prefix}_BASE_URL for a provider other than OpenAI)"
    );
    for (var, provider) in [
        ("OPENAI_API_KEY", "openai"),
        ("ANTHROPIC_API_KEY", "anthropic"),
    ] {
        if process_env(var).is_some_and(|v| !v.trim().is_empty()) {
            message.push_str(&format!(
                "; {var} is set, but outrider reads {prefix}_*: set {key_var} to it, or in \
                 Python pass the model as '{provider}:MODEL', which reads {var}"
            ));
        }
    }
    invalid(&model_var, message)
}

/// A configured base URL: the variable that set it, the URL normalised, and where it was set.
struct BaseUrl {
    var: String,
    url: String,
    origin: Origin,
}

type Get<'a> = dyn Fn(&str) -> Option<(String, Origin)> + 'a;

/// The base URL `prefix` configures (its own variable, then `LLM_BASE_URL`), or None for the
/// default.
fn base_url_of(prefix: &str, get: &Get<'_>) -> Result<Option<BaseUrl>, Error> {
    let mut names = vec![format!("{prefix}_BASE_URL")];
    if prefix != MAIN_PREFIX {
        names.push(format!("{MAIN_PREFIX}_BASE_URL"));
    }
    for var in names {
        if let Some((raw, origin)) = get(&var) {
            let url = normalize_base_url(&raw).map_err(|e| rename(e, &var))?;
            return Ok(Some(BaseUrl { var, url, origin }));
        }
    }
    Ok(None)
}

/// Refuses a key set in one place (the environment, a `.env`) for a base URL set in another: a
/// checkout's `.env` must not be able to send the user's key to a host it chooses. The default
/// base URL goes with a key from anywhere.
fn same_place(key_var: &str, key_origin: &Origin, base: Option<&BaseUrl>) -> Result<(), Error> {
    let Some(base) = base else { return Ok(()) };
    if &base.origin == key_origin {
        return Ok(());
    }
    Err(invalid(
        &base.var,
        format!(
            "{} is set in {} but {key_var} in {key_origin}; outrider sends a key only to the base \
             URL configured beside it, so that a .env cannot send your key to a host it chooses. \
             Set {} where {key_var} is set, or read no .env (env_file=False, --env-file none)",
            shown(&base.url),
            base.origin,
            base.var
        ),
    ))
}

/// The main route's key for a route that sets none of its own: only when the route's base URL
/// is the main route's and the main key may go there; otherwise no key (logged).
fn lent_main_key(prefix: &str, url: &str, get: &Get<'_>) -> Result<Option<String>, Error> {
    let main_var = format!("{MAIN_PREFIX}_API_KEY");
    let Some((key, origin)) = get(&main_var) else {
        return Ok(None);
    };
    let main_base = base_url_of(MAIN_PREFIX, get)?;
    let main_url = main_base
        .as_ref()
        .map_or(DEFAULT_BASE_URL, |b| b.url.as_str());
    if main_url == url && same_place(&main_var, &origin, main_base.as_ref()).is_ok() {
        return Ok(Some(key));
    }
    tracing::info!(
        "{prefix}_API_KEY is unset and {main_var} is not lent to the {prefix} route: its base URL {} is not the main route's {}; it sends no key",
        shown(url),
        shown(main_url)
    );
    Ok(None)
}

/// A base URL as it may be shown: without credentials or query.
fn shown(url: &str) -> String {
    parse_base_url(url).map_or_else(
        |_| "<invalid URL>".into(),
        |u| display_url(&u).trim_end_matches('/').to_owned(),
    )
}

/// The assignments of a `.env` file, in file order; a missing, unreadable, non-regular or
/// oversized file gives none.
pub fn load_dotenv(path: &Path) -> Vec<(String, String)> {
    read_regular(path)
        .map(|text| parse_dotenv(&text))
        .unwrap_or_default()
}
/// The assignments in `.env` text, in order (a later one for the same key wins at lookup).
///
/// Understands `KEY=VALUE`, `export KEY=VALUE`, blank lines and `#` comments (whole-line, or after
/// whitespace in an unquoted value). A value in single quotes is literal; in double quotes,
/// `\n`, `\t`, `\r`, `\"` and `\\` are unescaped; both may span lines. Lines that are not an
/// assignment are skipped, as the reference does. Variables (`${X}`) are not expanded.
pub fn parse_dotenv(text: &str) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    let mut pos = 0;
    while pos < text.len() {
        let line_end = text[pos..].find('\n').map_or(text.len(), |i| pos + i);
        let mut next = line_end + 1;
        if let Some((key, value_at)) = assignment(&text[pos..line_end]) {
            let start = pos + value_at;
            let (value, end) = parse_value(text, start, line_end);
            if end > line_end {
                // A quoted value ran over several lines: continue after the line it closes on.
                next = text[end..].find('\n').map_or(text.len(), |i| end + i + 1);
            }
            pairs.push((key, value));
        }
        pos = next;
    }
    pairs
}

/// The key of an assignment line and where its value starts (an offset into `line`).
fn assignment(line: &str) -> Option<(String, usize)> {
    let body = line.trim_start();
    if body.is_empty() || body.starts_with('#') {
        return None;
    }
    let body = match body.strip_prefix("export") {
        Some(rest) if rest.starts_with([' ', '\t']) => rest.trim_start(),
        _ => body,
    };
    let eq = body.find('=')?;
    let key = body[..eq].trim();
    let mut chars = key.chars();
    let valid = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    if !valid {
        return None;
    }
    let after = &body[eq + 1..];
    let value_at =
        line.len() - after.len() + (after.len() - after.trim_start_matches([' ', '\t']).len());
    Some((key.to_owned(), value_at))
}

/// The value starting at `start`, and the byte offset just past it.
fn parse_value(text: &str, start: usize, line_end: usize) -> (String, usize) {
    let rest = &text[start..];
    let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'');
    if let Some(q) = quote {
        let mut value = String::new();
        let mut chars = rest[1..].char_indices();
        while let Some((i, c)) = chars.next() {
            if c == q {
                return (value, start + 1 + i + 1);
            }
            if c == '\\' && q == '"' {
                match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, 't')) => value.push('\t'),
                    Some((_, 'r')) => value.push('\r'),
                    Some((_, e @ ('"' | '\\'))) => value.push(e),
                    Some((_, other)) => {
                        value.push('\\');
                        value.push(other);
                    }
                    None => value.push('\\'),
                }
            } else {
                value.push(c);
            }
        }
        // No closing quote: read the line as it stands, like an unquoted value.
    }
    let raw = text[start..line_end].trim_end_matches('\r');
    let cut = raw
        .char_indices()
        .find(|&(i, c)| c == '#' && text[..start + i].ends_with([' ', '\t']))
        .map_or(raw.len(), |(i, _)| i);
    (raw[..cut].trim().to_owned(), line_end)
}

fn invalid(field: &str, message: impl Into<String>) -> Error {
    Error::InvalidArgument {
        field: field.to_owned(),
        message: message.into(),
    }
}

/// The same error, naming the variable the value came from instead of the config field.
fn rename(err: Error, var: &str) -> Error {
    match err {
        Error::InvalidArgument { message, .. } => invalid(var, message),
        other => other,
    }
}
