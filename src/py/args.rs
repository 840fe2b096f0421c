//! Argument binding, for every native entry point: a call's positional and keyword arguments
//! are bound to the entry point's parameters ([`Params`], declared beside its `#[pymethods]`
//! and shown by its `text_signature`), then each is read as the Rust type the core's typed
//! constructor takes (`LauncherOptions`, `OpenAICompatibleConfig`, `RequestInit`, ...). A wrong
//! count, name or type is an `ArgumentTypeError` naming the entry point and the argument; the
//! core validates the typed values (ranges, enums, combinations).

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::api::{py_repr_str, unknown_option};
use crate::api::{ChatRequest, ClientSettings, EnvFile, Error, Json};
use crate::api::{EnvelopeFormat, LauncherOptions, MainAgentOptions, OpenAICompatibleConfig};
use crate::api::{ModelSettings, RequestInit, RouteSettings, TraceDirSetting, TraceRetention};
use crate::api::{ToolUsage, VerificationMeta, ENV_FILE, UNKNOWN_REASON};
use crate::py::convert::{json_at, req_str, type_name};

/// The keyword arguments given to `owner` (a null value counts as not given).
#[derive(Debug, Clone, Default)]
pub(super) struct Kwargs {
    items: Vec<(String, Json)>,
    /// Arguments given as values with no JSON form: reading one is refused as the wrong type,
    /// saying what the reader expected, unless it is a path object read as a path.
    opaque: Vec<(String, Opaque)>,
}

/// An argument with no JSON form, as Python describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Opaque {
    /// Its Python type's name (`PosixPath`, `URL`).
    pub type_name: String,
    /// Its text when it is a path object (`os.PathLike`); only [`Kwargs::path`] reads it.
    pub path: Option<String>,
}

#[cfg(test)]
impl From<&str> for Opaque {
    fn from(type_name: &str) -> Self {
        Opaque {
            type_name: type_name.into(),
            path: None,
        }
    }
}

/// What [`Kwargs::path`] expects.
const PATH: &str = "a str or os.PathLike";

/// What [`Kwargs::json`] expects.
const ANY_JSON: &str = "a JSON value (dict, list, tuple, str, int, float, bool or None)";

/// A native entry point's parameters: their names in order, how many may be given by position,
/// and how many (the first ones) are required; the same its `text_signature` shows
/// (`tests/test_errors.py` checks each against `inspect.signature`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Params {
    /// Who takes them, for messages (`ExploreResult`).
    pub owner: &'static str,
    /// Every parameter, in order.
    pub names: &'static [&'static str],
    /// How many of `names` may come by position.
    pub positional: usize,
    /// How many of `names`, from the first, must be given.
    pub required: usize,
}

impl Params {
    /// Bind a call's arguments (JSON, or Python objects) as Python would, by position then by
    /// name: too many positional arguments, a name given twice, an unknown name or a missing
    /// required one is refused, naming it. An optional argument that `is_null` counts as not
    /// given. Returns `(name, value)` in the order given.
    pub(super) fn bind<T>(
        &self,
        positional: Vec<T>,
        named: Vec<(String, T)>,
        is_null: impl Fn(&T) -> bool,
    ) -> Result<Vec<(String, T)>, Error> {
        let refuse = |message: String| Error::Type {
            field: self.owner.to_string(),
            message,
        };
        if positional.len() > self.positional {
            let (most, n) = (self.positional, positional.len());
            return Err(refuse(format!(
                "takes at most {most} positional argument{} ({n} given)",
                if most == 1 { "" } else { "s" }
            )));
        }
        let by_position = &self.names[..positional.len()];
        if let Some((k, _)) = named
            .iter()
            .find(|(k, _)| by_position.contains(&k.as_str()))
        {
            return Err(refuse(format!(
                "got multiple values for argument {}",
                py_repr_str(k)
            )));
        }
        if let Some((bad, _)) = named
            .iter()
            .find(|(k, _)| !self.names.contains(&k.as_str()))
        {
            return Err(unknown_option(self.owner, bad, self.names));
        }
        let items: Vec<_> = by_position
            .iter()
            .map(|k| k.to_string())
            .zip(positional)
            .chain(named)
            .collect();
        let required = &self.names[..self.required];
        if let Some(missing) = required
            .iter()
            .find(|k| !items.iter().any(|(g, _)| g == *k))
        {
            return Err(refuse(format!(
                "missing required argument {}",
                py_repr_str(missing)
            )));
        }
        let keep = |(k, v): &(String, T)| !is_null(v) || required.contains(&k.as_str());
        Ok(items.into_iter().filter(keep).collect())
    }

    /// Parameters that may only be given by name, none required.
    pub(super) const fn keywords(owner: &'static str, names: &'static [&'static str]) -> Self {
        Params {
            owner,
            names,
            positional: 0,
            required: 0,
        }
    }
}

impl Kwargs {
    /// Bind a call's JSON arguments to `params` ([`Params::bind`]; null counts as not given).
    #[cfg(test)]
    pub fn bind(
        params: &Params,
        positional: Vec<Json>,
        named: Vec<(String, Json)>,
    ) -> Result<Self, Error> {
        let items = params.bind(positional, named, |v| *v == Json::Null)?;
        Ok(Kwargs {
            items,
            ..Self::default()
        })
    }

    /// The arguments given, in the order given; refused when one has no JSON form.
    pub(super) fn items(&self) -> Result<&[(String, Json)], Error> {
        if let Some((key, opaque)) = self.opaque.first() {
            return Err(Error::wrong_type(key, ANY_JSON, &opaque.type_name));
        }
        Ok(&self.items)
    }

    /// The given arguments among `names`, as one JSON object in the order given.
    pub(super) fn object(&self, names: &[&str]) -> Result<Json, Error> {
        for name in names {
            self.given(name, ANY_JSON)?;
        }
        let picked = self
            .items
            .iter()
            .filter(|(k, _)| names.contains(&k.as_str()));
        Ok(Json::Object(picked.cloned().collect()))
    }

    /// With `key` given as `value` (the accessors read null as not given), or as a value with
    /// no JSON form (its type's name), which the accessors refuse as the wrong type.
    pub(super) fn with(mut self, key: &str, value: Result<Json, Opaque>) -> Self {
        match value {
            Ok(json) => self.items.push((key.into(), json)),
            Err(opaque) => self.opaque.push((key.into(), opaque)),
        }
        self
    }

    /// The value given for `key` (null when it was not given), refused as not `expected` when it
    /// was given as a value with no JSON form.
    pub(super) fn given(&self, key: &str, expected: &str) -> Result<&Json, Error> {
        if let Some((_, opaque)) = self.opaque.iter().find(|(k, _)| k == key) {
            return Err(Error::wrong_type(key, expected, &opaque.type_name));
        }
        let given = self.items.iter().find(|(k, _)| k == key);
        Ok(given.map_or(&Json::Null, |(_, v)| v))
    }

    /// The value given for `key`, any JSON; null when it was not given.
    pub(super) fn json(&self, key: &str) -> Result<&Json, Error> {
        self.given(key, ANY_JSON)
    }

    /// A required str (given, and not None).
    pub(super) fn req_str(&self, key: &str) -> Result<String, Error> {
        let given = self.str(key)?;
        given.ok_or_else(|| Error::wrong_type(key, "str", "NoneType"))
    }

    /// An optional path: a str or a path object.
    pub(super) fn path(&self, key: &str) -> Result<Option<std::path::PathBuf>, Error> {
        let object = self.opaque.iter().find(|(k, _)| k == key);
        if let Some(path) = object.and_then(|(_, o)| o.path.as_ref()) {
            return Ok(Some(path.into()));
        }
        match self.given(key, PATH)? {
            Json::Null => Ok(None),
            Json::Str(s) => Ok(Some(s.into())),
            other => Err(Error::wrong_type(key, PATH, other.type_name())),
        }
    }

    /// A required path.
    pub(super) fn req_path(&self, key: &str) -> Result<std::path::PathBuf, Error> {
        let given = self.path(key)?;
        given.ok_or_else(|| Error::wrong_type(key, PATH, "NoneType"))
    }

    /// An optional str.
    pub(super) fn str(&self, key: &str) -> Result<Option<String>, Error> {
        match self.given(key, "str")? {
            Json::Null => Ok(None),
            Json::Str(s) => Ok(Some(s.clone())),
            other => Err(Error::wrong_type(key, "str", other.type_name())),
        }
    }

    /// An optional bool.
    pub(super) fn bool(&self, key: &str) -> Result<Option<bool>, Error> {
        match self.given(key, "a bool")? {
            Json::Null => Ok(None),
            Json::Bool(b) => Ok(Some(*b)),
            other => Err(Error::wrong_type(key, "a bool", other.type_name())),
        }
    }

    /// An optional int (not a bool).
    pub(super) fn int(&self, key: &str) -> Result<Option<i64>, Error> {
        match self.given(key, "int")? {
            Json::Null => Ok(None),
            Json::Int(i) => Ok(Some(*i)),
            Json::BigInt(digits) => Err(Error::config(key, format!("is out of range: {digits}"))),
            other => Err(Error::wrong_type(key, "int", other.type_name())),
        }
    }

    /// An optional real number: an int or a float, not a bool.
    pub(super) fn number(&self, key: &str) -> Result<Option<f64>, Error> {
        match self.given(key, "a number")? {
            Json::Null => Ok(None),
            Json::Int(i) => Ok(Some(*i as f64)),
            Json::Float(f) => Ok(Some(*f)),
            Json::BigInt(digits) => Ok(digits.parse().ok()),
            other => Err(Error::wrong_type(key, "a number", other.type_name())),
        }
    }

    /// An optional list of str (a single str is refused: it is not a list of names).
    pub(super) fn str_list(&self, key: &str) -> Result<Option<Vec<String>>, Error> {
        let items = match self.given(key, "an iterable of str")? {
            Json::Null => return Ok(None),
            Json::Array(items) => items,
            Json::Str(_) => {
                return Err(Error::wrong_type(
                    key,
                    "an iterable of str, not a single str",
                    "str",
                ))
            }
            other => {
                return Err(Error::wrong_type(
                    key,
                    "an iterable of str",
                    other.type_name(),
                ))
            }
        };
        let item = |j: &Json| match j {
            Json::Str(s) => Ok(s.clone()),
            other => Err(Error::wrong_type(
                format!("{key} item"),
                "str",
                other.type_name(),
            )),
        };
        items.iter().map(item).collect::<Result<_, _>>().map(Some)
    }

    /// An optional dict of str to str, in the order given.
    pub(super) fn str_map(&self, key: &str) -> Result<Vec<(String, String)>, Error> {
        match self.given(key, "a dict of str to str")? {
            Json::Null => Ok(vec![]),
            Json::Object(items) => items
                .iter()
                .map(|(k, v)| match v {
                    Json::Str(s) => Ok((k.clone(), s.clone())),
                    other => Err(Error::wrong_type(
                        format!("{key} value"),
                        "str",
                        other.type_name(),
                    )),
                })
                .collect(),
            other => Err(Error::wrong_type(
                key,
                "a dict of str to str",
                other.type_name(),
            )),
        }
    }
}

/// An argument for a reader: its JSON, or what it is when it has none (its type, and
/// its text when it is a path object, which only a path argument takes).
fn arg_value(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Result<Json, Opaque>> {
    if let Some(json) = json_at(obj, name, 0)? {
        return Ok(Ok(json));
    }
    // Looked up on the type, as `os.fspath` does (an instance's `__getattr__` is not asked).
    let fspath = obj.get_type().hasattr("__fspath__")?;
    let fspath = fspath.then(|| obj.call_method0("__fspath__"));
    let text = fspath.transpose()?.and_then(|p| p.extract::<String>().ok());
    let type_name = type_name(obj);
    Ok(Err(Opaque {
        type_name,
        path: text,
    }))
}

/// A call's arguments bound to an entry point's parameters ([`Params::bind`]), as the objects
/// given (None counts as not given for an optional one).
pub(super) struct Args<'py>(Vec<(String, Bound<'py, PyAny>)>);

impl<'py> Args<'py> {
    /// Bind `args` and `kwargs` to `params`; a wrong count, name or repetition is refused by it.
    pub(super) fn bind(
        params: &Params,
        args: Option<&Bound<'py, PyTuple>>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Self> {
        let named = kwargs.into_iter().flat_map(|d| d.iter());
        let named = named.map(|(k, v)| Ok((req_str(&k, "keyword")?, v)));
        let named = named.collect::<PyResult<_>>()?;
        let positional = args.into_iter().flat_map(|a| a.iter()).collect();
        Ok(Args(params.bind(positional, named, |v| v.is_none())?))
    }

    /// The argument given as `name`, if it was.
    pub(super) fn get(&self, name: &str) -> Option<&Bound<'py, PyAny>> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }

    /// A required argument (the binding made sure it was given).
    pub(super) fn req(&self, name: &str) -> PyResult<&Bound<'py, PyAny>> {
        let missing = || Error::Internal(format!("argument {name} was not bound"));
        Ok(self.get(name).ok_or_else(missing)?)
    }

    /// The arguments given, except the `objects` the binding converts itself, as JSON for the
    /// core to read ([`Kwargs`]); a value with no JSON form is read as the wrong type there.
    pub(super) fn plain(&self, objects: &[&str]) -> PyResult<Kwargs> {
        let mut plain = Kwargs::default();
        for (k, v) in self
            .0
            .iter()
            .filter(|(k, _)| !objects.contains(&k.as_str()))
        {
            plain = plain.with(k, arg_value(v, k)?);
        }
        Ok(plain)
    }
}

/// A call's arguments bound to an entry point's parameters, as JSON for the readers.
pub(super) fn bind(
    params: &Params,
    args: Option<&Bound<'_, PyTuple>>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Kwargs> {
    Args::bind(params, args, kwargs)?.plain(&[])
}

/// The keyword options `owner` was given, by name only (None counts as not given).
pub(super) fn kwargs(
    owner: &'static str,
    names: &'static [&'static str],
    given: Option<&Bound<'_, PyDict>>,
) -> PyResult<Kwargs> {
    bind(&Params::keywords(owner, names), None, given)
}

/// One argument (None: not given) as JSON for the readers, like [`Args::plain`].
pub(super) fn one(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Kwargs> {
    Ok(Kwargs::default().with(name, arg_value(obj, name)?))
}

/// `trace_dir`: None (not given) is the default directory, False keeps traces in memory, a path
/// is that directory.
pub(super) fn trace_dir(k: &Kwargs) -> Result<TraceDirSetting, Error> {
    const EXPECTED: &str = "a str, os.PathLike, None or False";
    if let Ok(Some(dir)) = k.path("trace_dir") {
        return Ok(TraceDirSetting::Dir(dir));
    }
    Ok(match k.given("trace_dir", EXPECTED)? {
        Json::Null => TraceDirSetting::Default,
        Json::Bool(false) => TraceDirSetting::Off,
        other => return Err(Error::wrong_type("trace_dir", EXPECTED, other.type_name())),
    })
}

/// `env_file`: None (the default), False (no file) or a path.
pub(super) fn env_file(k: &Kwargs) -> Result<EnvFile, Error> {
    if let Json::Bool(b) = k.json("env_file").unwrap_or(&Json::Null) {
        return if *b {
            Err(Error::config(
                "env_file",
                format!("True is not a setting; expected {ENV_FILE}"),
            ))
        } else {
            Ok(EnvFile::Off)
        };
    }
    match k.path("env_file") {
        Ok(Some(p)) if p.as_os_str().is_empty() => Err(Error::config(
            "env_file",
            format!("'' names no file; expected {ENV_FILE}"),
        )),
        Ok(Some(p)) => Ok(EnvFile::Path(p)),
        Ok(None) => Ok(EnvFile::WorkingDirectory),
        Err(_) => {
            let given = k
                .json("env_file")
                .map(|j| j.type_name())
                .unwrap_or("object");
            Err(Error::wrong_type("env_file", ENV_FILE, given))
        }
    }
}

/// The model names and settings: the main model's name under `main_field` (`main_model` for a
/// launcher, `model` for a main agent), `light_model`, and `model_settings`.
pub(super) fn routes(k: &Kwargs, main_field: &str) -> Result<RouteSettings, Error> {
    Ok(RouteSettings {
        main_model: k.str(main_field)?,
        light_model: k.str("light_model")?,
        settings: ModelSettings::from_json(
            "model_settings",
            &k.json("model_settings")?.to_value(),
        )?,
    })
}

/// `trace_retention`: None, a `TraceRetention` as its dict, or a count.
fn trace_retention(k: &Kwargs) -> Result<Option<TraceRetention>, Error> {
    TraceRetention::from_arg(k.json("trace_retention")?)
}

/// `SubagentLauncher`'s plain options; models, trace directory and profiles at their defaults.
pub(super) fn launcher_options(k: &Kwargs) -> Result<LauncherOptions, Error> {
    Ok(LauncherOptions {
        trace_dir: trace_dir(k)?,
        parent_trace: k.path("parent_trace")?,
        max_concurrency: k.int("max_concurrency")?,
        routes: routes(k, "main_model")?,
        trace_retention: trace_retention(k)?,
        env_file: env_file(k)?,
        ..LauncherOptions::default()
    })
}

/// `MainAgent`'s plain options; the light model and launcher at their defaults.
pub(super) fn main_agent_options(k: &Kwargs) -> Result<MainAgentOptions, Error> {
    Ok(MainAgentOptions {
        trace_dir: trace_dir(k)?,
        subagent_types: k.str_list("subagent_types")?,
        max_steps: k.int("max_steps")?,
        total_token_budget: k.int("total_token_budget")?,
        context_token_budget: k.int("context_token_budget")?,
        timeout_seconds: k.number("timeout_seconds")?,
        routes: routes(k, "model")?,
        trace_retention: trace_retention(k)?,
        ..MainAgentOptions::default()
    })
}

/// `verify`'s arguments: the candidate, the requirements (null when not given) and the
/// evidence (none when not given).
pub(super) fn verify_args(
    k: &Kwargs,
) -> Result<(String, serde_json::Value, serde_json::Value), Error> {
    Ok((
        k.req_str("candidate")?,
        k.json("requirements")?.to_value(),
        k.json("evidence")?.to_value(),
    ))
}

/// `OpenAICompatible`'s arguments as a config (validated by `OpenAICompatible::new`).
pub(super) fn client_config(k: &Kwargs) -> Result<OpenAICompatibleConfig, Error> {
    let model = k.req_str("model")?;
    let settings = ClientSettings {
        base_url: k.str("base_url")?,
        api_key: k.str("api_key")?,
        timeout: k.number("timeout")?,
        connect_timeout: k.number("connect_timeout")?,
        max_retries: k.int("max_retries")?,
        temperature: k.number("temperature")?,
        max_tokens: k.int("max_tokens")?,
        headers: k.str_map("headers")?,
    };
    OpenAICompatibleConfig::from_settings(model, settings)
}

/// The `request` of a direct call to a client: a dict of chat-completions arguments.
pub(super) fn chat_request(k: &Kwargs) -> Result<ChatRequest, Error> {
    const EXPECTED: &str = "a dict of chat-completions arguments";
    match k.given("request", EXPECTED)? {
        obj @ Json::Object(_) => {
            ChatRequest::from_openai(&obj.to_value()).map_err(|e| Error::config("request", e.0))
        }
        other => Err(Error::wrong_type("request", EXPECTED, other.type_name())),
    }
}

/// `SubagentRequest`'s arguments (not validated yet: [`RequestInit::build`]); a value of the
/// wrong type is refused naming its field (`SubagentRequest.task`).
pub(super) fn request_init(k: &Kwargs) -> Result<RequestInit, Error> {
    let read = || -> Result<RequestInit, Error> {
        Ok(RequestInit {
            task: k.str("task")?,
            profile_name: k.str("profile_name")?,
            structured_context: Some(k.json("structured_context")?.clone()),
            model_choice: k.str("model_choice")?,
            parent_session_id: k.str("parent_session_id")?,
            parent_run_id: k.str("parent_run_id")?,
            output_schema: Some(k.json("output_schema")?.clone()),
        })
    };
    read().map_err(|e| e.within("SubagentRequest"))
}

/// `reference_format`: True for the reference's envelope format; False or not given for the
/// compact default.
pub(super) fn envelope_format(k: &Kwargs) -> Result<EnvelopeFormat, Error> {
    match k.given("reference_format", "bool")? {
        Json::Null | Json::Bool(false) => Ok(EnvelopeFormat::Compact),
        Json::Bool(true) => Ok(EnvelopeFormat::Reference),
        other => Err(Error::wrong_type(
            "reference_format",
            "bool",
            other.type_name(),
        )),
    }
}

/// `evidence`: one `path:line` str, or an iterable of them.
pub(super) fn evidence(k: &Kwargs) -> Result<Vec<String>, Error> {
    match k.given("evidence", "a str or an iterable of str")? {
        Json::Str(one) => Ok(vec![one.clone()]),
        _ => Ok(k.str_list("evidence")?.unwrap_or_default()),
    }
}

/// The metadata given beside an explore answer: `tool_usage` and `terminal_reason`.
pub(super) fn explore_meta(k: &Kwargs) -> Result<(ToolUsage, String), Error> {
    let usage = crate::api::tool_usage_from_json(k.json("tool_usage")?, "tool_usage")?;
    let reason = k.str("terminal_reason")?;
    Ok((usage, reason.unwrap_or_else(|| UNKNOWN_REASON.into())))
}

/// The metadata given beside a verification answer.
pub(super) fn verification_meta(k: &Kwargs) -> Result<VerificationMeta, Error> {
    let reason = k.str("terminal_reason")?;
    let reason = reason.unwrap_or_else(|| UNKNOWN_REASON.into());
    let (session, run) = (k.str("child_session_id")?, k.str("child_run_id")?);
    VerificationMeta::from_parts(
        session,
        run,
        &reason,
        k.json("tool_usage")?,
        k.json("token_usage")?,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kwargs(items: &[(&str, Json)]) -> Result<Kwargs, Error> {
        let items = items
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        const NAMES: &[&str] = &["n", "x", "names", "headers", "s"];
        Kwargs::bind(&Params::keywords("Thing", NAMES), vec![], items)
    }

    #[test]
    fn each_accessor_reads_its_type_and_names_a_bad_value() {
        let k = kwargs(&[
            ("n", Json::Int(3)),
            ("x", Json::Int(2)),
            ("names", Json::Array(vec![Json::Str("a".into())])),
            (
                "headers",
                Json::Object(vec![("H".into(), Json::Str("v".into()))]),
            ),
        ])
        .unwrap();
        assert_eq!(k.int("n").unwrap(), Some(3));
        assert_eq!(k.number("x").unwrap(), Some(2.0));
        assert_eq!(k.str_list("names").unwrap(), Some(vec!["a".to_string()]));
        assert_eq!(
            k.str_map("headers").unwrap(),
            vec![("H".to_string(), "v".to_string())]
        );
        assert_eq!(k.str("s").unwrap(), None);
        let err = |items: &[(&str, Json)], read: fn(&Kwargs) -> Result<(), Error>| {
            read(&kwargs(items).unwrap()).unwrap_err().to_string()
        };
        assert_eq!(
            err(&[("n", Json::Bool(true))], |k| k.int("n").map(drop)),
            "n: must be int, got bool"
        );
        assert_eq!(
            err(&[("n", Json::BigInt("1".repeat(30)))], |k| k
                .int("n")
                .map(drop)),
            format!("n: is out of range: {}", "1".repeat(30))
        );
        assert_eq!(
            err(&[("x", Json::Str("1".into()))], |k| k.number("x").map(drop)),
            "x: must be a number, got str"
        );
        assert_eq!(
            err(&[("names", Json::Str("ab".into()))], |k| k
                .str_list("names")
                .map(drop)),
            "names: must be an iterable of str, not a single str, got str"
        );
        assert_eq!(
            err(&[("names", Json::Array(vec![Json::Int(1)]))], |k| k
                .str_list("names")
                .map(drop)),
            "names item: must be str, got int"
        );
        assert_eq!(
            err(
                &[("headers", Json::Object(vec![("H".into(), Json::Int(1))]))],
                |k| k.str_map("headers").map(drop)
            ),
            "headers value: must be str, got int"
        );
    }

    #[test]
    fn a_call_binds_by_position_then_by_name() {
        const P: Params = Params {
            owner: "Thing",
            names: &["a", "b", "c", "d"],
            positional: 3,
            required: 1,
        };
        let s = |v: &str| Json::Str(v.into());
        let named = |k: &str, v: Json| vec![(k.to_string(), v)];
        let k = Kwargs::bind(&P, vec![s("1"), Json::Null], named("d", s("4"))).unwrap();
        assert_eq!(
            k.items().unwrap(),
            &[("a".to_string(), s("1")), ("d".to_string(), s("4"))]
        );
        assert_eq!(
            k.object(&["a", "b"]).unwrap(),
            Json::Object(vec![("a".into(), s("1"))])
        );
        let required_null = Kwargs::bind(&P, vec![Json::Null], vec![]).unwrap();
        assert_eq!(
            required_null.items().unwrap(),
            &[("a".to_string(), Json::Null)],
            "a required null is kept"
        );
        let err = |pos: Vec<Json>, named: Vec<(String, Json)>| {
            Kwargs::bind(&P, pos, named).unwrap_err().to_string()
        };
        assert_eq!(
            err(vec![Json::Null; 4], vec![]),
            "Thing: takes at most 3 positional arguments (4 given)"
        );
        assert_eq!(
            err(vec![s("1")], named("a", s("2"))),
            "Thing: got multiple values for argument 'a'"
        );
        assert_eq!(
            err(vec![], named("b", s("2"))),
            "Thing: missing required argument 'a'"
        );
        assert_eq!(
            err(vec![], named("e", s("2"))),
            "Thing: has no option 'e'; options are: a, b, c, d"
        );
    }

    #[test]
    fn a_value_with_no_json_form_is_refused_as_what_each_reader_expected() {
        let k = Kwargs::default()
            .with("u", Err("URL".into()))
            .with("p", Ok(Json::Str("/tmp/x".into())))
            .with("n", Ok(Json::Null));
        let err = |r: Result<(), Error>| r.unwrap_err().to_string();
        assert_eq!(err(k.str("u").map(drop)), "u: must be str, got URL");
        assert_eq!(err(k.int("u").map(drop)), "u: must be int, got URL");
        assert_eq!(
            err(k.str_list("u").map(drop)),
            "u: must be an iterable of str, got URL"
        );
        assert_eq!(
            err(k.path("u").map(drop)),
            "u: must be a str or os.PathLike, got URL"
        );
        assert!(err(k.json("u").map(drop)).starts_with("u: must be a JSON value"));
        assert!(k.object(&["p", "u"]).is_err(), "an object never drops one");
        assert_eq!(k.req_path("p").unwrap(), std::path::PathBuf::from("/tmp/x"));
        assert_eq!(k.str("n").unwrap(), None, "null is not given");
        let path = Opaque {
            type_name: "PosixPath".into(),
            path: Some("/srv/x".into()),
        };
        let k = k.with("o", Err(path));
        assert_eq!(k.req_path("o").unwrap(), std::path::PathBuf::from("/srv/x"));
        assert_eq!(err(k.str("o").map(drop)), "o: must be str, got PosixPath");
        assert_eq!(
            err(k.req_str("n").map(drop)),
            "n: must be str, got NoneType"
        );
        assert_eq!(
            err(k.req_path("missing").map(drop)),
            "missing: must be a str or os.PathLike, got NoneType"
        );
    }

    #[test]
    fn an_unknown_name_is_refused_with_the_accepted_ones() {
        let err = kwargs(&[("nn", Json::Int(1))]).unwrap_err();
        assert!(matches!(err, Error::Type { .. }));
        assert_eq!(
            err.to_string(),
            "Thing: has no option 'nn'; options are: n, x, names, headers, s"
        );
    }

    /// One argument, as given.
    fn one_json(key: &str, value: Json) -> Kwargs {
        Kwargs::default().with(key, Ok(value))
    }

    #[test]
    fn launcher_options_read_each_argument_with_one_meaning() {
        let o = launcher_options(&Kwargs::default()).unwrap();
        assert_eq!(o.trace_dir, TraceDirSetting::Default, "None is the default");
        assert_eq!(o.parent_trace, None);
        let k = one_json("trace_dir", Json::Bool(false))
            .with("parent_trace", Ok(Json::Str("/p.jsonl".into())));
        let o = launcher_options(&k).unwrap();
        assert_eq!(
            o.trace_dir,
            TraceDirSetting::Off,
            "False keeps traces in memory"
        );
        assert_eq!(o.parent_trace, Some("/p.jsonl".into()));
        let dir = trace_dir(&one_json("trace_dir", Json::Str("/t".into()))).unwrap();
        assert_eq!(dir, TraceDirSetting::Dir("/t".into()));
        let err = |k: Kwargs| launcher_options(&k).err().unwrap().to_string();
        assert_eq!(
            err(one_json("trace_dir", Json::Bool(true))),
            "trace_dir: must be a str, os.PathLike, None or False, got bool"
        );
        assert_eq!(
            err(Kwargs::default().with("trace_dir", Err("Thing".into()))),
            "trace_dir: must be a str, os.PathLike, None or False, got Thing"
        );
        let main = main_agent_options(&one_json("trace_dir", Json::Bool(false)));
        assert_eq!(main.unwrap().trace_dir, TraceDirSetting::Off);
    }

    #[test]
    fn evidence_is_one_str_or_an_iterable_of_them() {
        let one = one_json("evidence", Json::Str("a.py:1".into()));
        assert_eq!(evidence(&one).unwrap(), vec!["a.py:1".to_string()]);
        let many = one_json("evidence", Json::Array(vec![Json::Str("b.py:2".into())]));
        assert_eq!(evidence(&many).unwrap(), vec!["b.py:2".to_string()]);
        let bad = Kwargs::default().with("evidence", Err("Path".into()));
        assert_eq!(
            evidence(&bad).unwrap_err().to_string(),
            "evidence: must be a str or an iterable of str, got Path"
        );
    }

    #[test]
    fn verify_arguments_default_to_no_requirements_and_no_evidence() {
        let k = one_json("candidate", Json::Str("done".into()));
        let (candidate, requirements, evidence) = verify_args(&k).unwrap();
        assert_eq!(
            (candidate.as_str(), requirements, evidence),
            ("done", serde_json::Value::Null, serde_json::Value::Null)
        );
        assert_eq!(
            verify_args(&one_json("candidate", Json::Null))
                .unwrap_err()
                .to_string(),
            "candidate: must be str, got NoneType"
        );
    }

    #[test]
    fn a_client_config_is_read_from_the_constructor_arguments() {
        let k = one_json("model", Json::Str("m".into()))
            .with("base_url", Ok(Json::Str("http://127.0.0.1:9/v1".into())))
            .with("max_retries", Ok(Json::Int(4)));
        let config = client_config(&k).unwrap();
        assert_eq!(
            (
                config.model.as_str(),
                config.base_url.as_str(),
                config.max_retries
            ),
            ("m", "http://127.0.0.1:9/v1", 4)
        );
        assert_eq!(
            client_config(&one_json("model", Json::Null))
                .unwrap_err()
                .to_string(),
            "model: must be str, got NoneType"
        );
    }

    #[test]
    fn a_direct_request_is_a_dict_of_chat_completions_arguments() {
        let given = |v: serde_json::Value| one_json("request", Json::from_value(&v));
        let messages = serde_json::json!({"messages": [{"role": "user", "content": "hi"}]});
        assert_eq!(chat_request(&given(messages)).unwrap().messages.len(), 1);
        let err = |k: Kwargs| chat_request(&k).unwrap_err().to_string();
        assert_eq!(
            err(given(serde_json::json!([]))),
            "request: must be a dict of chat-completions arguments, got list"
        );
        assert_eq!(
            err(Kwargs::default().with("request", Err("Thing".into()))),
            "request: must be a dict of chat-completions arguments, got Thing"
        );
        assert!(err(given(serde_json::json!({})))
            .starts_with("request: request['messages'] must be a list"));
    }

    #[test]
    fn answer_metadata_is_read_by_name() {
        let (_, reason) =
            explore_meta(&one_json("terminal_reason", Json::Str("done".into()))).unwrap();
        assert_eq!(reason, "done");
        let meta = verification_meta(&one_json("token_usage", Json::Int(7))).unwrap();
        assert_eq!(
            (meta.token_usage, meta.terminal_reason.as_str()),
            (7, UNKNOWN_REASON)
        );
        let bad = Kwargs::default().with("tool_usage", Err("Counter".into()));
        let err = explore_meta(&bad).unwrap_err().to_string();
        assert!(err.starts_with("tool_usage: must be a JSON value"), "{err}");
    }
}
