//! Configuration of the built-in client from the environment, with the reference's variables.
//!
//! | variable | meaning |
//! |---|---|
//! | `{PREFIX}_MODEL_ID` | the model; unset means "no such route" (`Ok(None)`) |
//! | `{PREFIX}_API_KEY` | the key; for a prefix other than `LLM`, falls back to `LLM_API_KEY` |
//! | `{PREFIX}_BASE_URL` | the API root; falls back to `LLM_BASE_URL`, then [`DEFAULT_BASE_URL`] |
//! | `{PREFIX}_TEMPERATURE` | sent when set; `LIGHT_LLM` defaults to 0.5 |
//! | `LLM_TIMEOUT` | seconds per attempt (120) |
//! | `LLM_MAX_RETRIES` | extra attempts after a transient failure (2) |
//!
//! A `.env` file in the working directory fills in what the environment does not set; it never
//! overrides it. Blank values count as unset.
//!
//! ```
//! use outrider::llm::env::{config_from_lookup, parse_dotenv};
//! let dotenv = parse_dotenv("LLM_MODEL_ID=gpt-4o-mini\nexport LLM_API_KEY='sk-test' # main key\n");
//! let lookup = |name: &str| dotenv.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.clone());
//! let config = config_from_lookup("LLM", &lookup).unwrap().unwrap();
//! assert_eq!((config.model.as_str(), config.api_key.as_deref()), ("gpt-4o-mini", Some("sk-test")));
//! assert_eq!(config.base_url, "https://api.openai.com/v1");
//! assert!(config_from_lookup("LIGHT_LLM", &lookup).unwrap().is_none());
//! ```

use std::path::Path;

use crate::error::Error;
use crate::llm::openai::config::{
    check_model, check_temperature, duration_from_secs, normalize_base_url, OpenAICompatibleConfig,
    DEFAULT_BASE_URL, DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT,
};

/// The prefix of the main model's variables.
pub const MAIN_PREFIX: &str = "LLM";
/// The prefix of the light model's variables (the cheaper route for sub-agents).
pub const LIGHT_PREFIX: &str = "LIGHT_LLM";
/// The temperature of the light route when `LIGHT_LLM_TEMPERATURE` is unset (as the reference).
pub const LIGHT_DEFAULT_TEMPERATURE: f64 = 0.5;

/// The config for `prefix` (`"LLM"`, `"LIGHT_LLM"`, ...) from the process environment and a
/// `.env` file in the working directory; `Ok(None)` when `{prefix}_MODEL_ID` is unset.
pub fn from_env(prefix: &str) -> Result<Option<OpenAICompatibleConfig>, Error> {
    let dotenv = load_dotenv(Path::new(".env"));
    config_from_lookup(prefix, &|name| env_or_dotenv(name, &dotenv))
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

/// The config for `prefix` with every variable read through `lookup` (so tests need not touch
/// the process environment); `Ok(None)` when `{prefix}_MODEL_ID` is unset. A bad value is an
/// error naming the variable and the value.
pub fn config_from_lookup(
    prefix: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
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
    // Blank counts as unset, as `os.getenv(...) or default` does in the reference.
    let get = |name: &str| {
        lookup(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    // The first of `names` that is set, with the name it came from.
    let first = |names: &[String]| names.iter().find_map(|n| get(n).map(|v| (n.clone(), v)));
    let own = |suffix: &str| format!("{prefix}_{suffix}");
    let with_fallback = |suffix: &str| {
        let mut names = vec![own(suffix)];
        if prefix != MAIN_PREFIX {
            names.push(format!("{MAIN_PREFIX}_{suffix}"));
        }
        names
    };

    let model_var = own("MODEL_ID");
    let Some(model) = get(&model_var) else {
        return Ok(None);
    };
    check_model(&model).map_err(|m| invalid(&model_var, m))?;

    let mut config = OpenAICompatibleConfig::new(model, DEFAULT_BASE_URL);
    if let Some((var, url)) = first(&with_fallback("BASE_URL")) {
        config.base_url = normalize_base_url(&url).map_err(|e| rename(e, &var))?;
    }
    config.api_key = first(&with_fallback("API_KEY")).map(|(_, key)| key);

    let timeout_var = format!("{MAIN_PREFIX}_TIMEOUT");
    config.timeout = match get(&timeout_var) {
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
    config.max_retries = match get(&retries_var) {
        None => DEFAULT_MAX_RETRIES,
        Some(raw) => raw.parse::<u32>().map_err(|_| {
            invalid(
                &retries_var,
                format!("'{raw}' is not a whole number >= 0; set it to the number of retries, such as 2"),
            )
        })?,
    };

    let temperature_var = own("TEMPERATURE");
    config.temperature = match get(&temperature_var) {
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
    Ok(Some(config))
}

/// The assignments of a `.env` file, in file order; a missing or unreadable file gives none.
pub fn load_dotenv(path: &Path) -> Vec<(String, String)> {
    std::fs::read_to_string(path)
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
