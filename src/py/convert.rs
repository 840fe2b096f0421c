//! Conversions between Python objects and the core's values. Type mismatches become
//! `ArgumentTypeError`s naming the field; nothing here decides a domain rule.

use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyBytes, PyDict, PyDictKeys, PyDictValues, PyFloat, PyFrozenSet, PyInt, PyIterator,
    PyList, PySet, PyString, PyTuple,
};
use serde::Serialize;

use crate::api::Error;
use crate::api::{Json, Kwargs, Params};

/// An iterator yielding more items than this is refused (it may never end).
const MAX_ITEMS: usize = 1 << 20;

/// Nesting deeper than this in a Python value is refused (it would be a cycle or an attack).
const MAX_DEPTH: usize = 256;

/// Python value → JSON value (sets and tuples become arrays). `what` names the argument.
pub fn to_json(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Json> {
    to_json_at(obj, what, 0)
}

fn to_json_at(obj: &Bound<'_, PyAny>, what: &str, depth: usize) -> PyResult<Json> {
    if depth > MAX_DEPTH {
        return Err(Error::config(
            what,
            format!("is nested more than {MAX_DEPTH} levels deep (or contains itself)"),
        )
        .into());
    }
    if obj.is_none() {
        return Ok(Json::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Json::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        return Ok(match obj.extract::<i64>() {
            Ok(i) => Json::Int(i),
            Err(_) => Json::BigInt(obj.str()?.to_string()),
        });
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Ok(Json::Float(f.value()));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Json::Str(py_str(s, what)?));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut items = Vec::with_capacity(d.len());
        for (k, v) in d.iter() {
            let key = k
                .cast::<PyString>()
                .map_err(|_| wrong_type(&format!("{what} key"), "str", &k))?;
            let key = py_str(key, what)?;
            let at = format!("{what}[{}]", crate::api::py_repr_str(&key));
            items.push((key, to_json_at(&v, &at, depth + 1)?));
        }
        return Ok(Json::Object(items));
    }
    // Lists, tuples, sets, dict views, and iterators such as generators (up to MAX_ITEMS).
    let listlike = obj.is_instance_of::<PyList>()
        || obj.is_instance_of::<PyTuple>()
        || obj.is_instance_of::<PySet>()
        || obj.is_instance_of::<PyFrozenSet>()
        || obj.is_instance_of::<PyDictKeys>()
        || obj.is_instance_of::<PyDictValues>()
        || obj.is_instance_of::<PyIterator>();
    if listlike {
        let mut items = Vec::new();
        for (i, item) in obj.try_iter()?.enumerate() {
            if i == MAX_ITEMS {
                let more = format!("has more than {MAX_ITEMS} items");
                return Err(Error::config(what, more).into());
            }
            items.push(to_json_at(&item?, &format!("{what}[{i}]"), depth + 1)?);
        }
        return Ok(Json::Array(items));
    }
    // outrider's own values (a launch result's `result`, a verdict's `launch`, a result given as
    // context) stand for their `to_dict()`.
    if obj.get_type().module().is_ok_and(|m| m == "outrider._core") && obj.hasattr("to_dict")? {
        return to_json_at(&obj.call_method0("to_dict")?, what, depth + 1);
    }
    Err(wrong_type(
        what,
        "JSON values only (dict, list, tuple, set, str, int, float, bool, None)",
        obj,
    ))
}

/// Tool or Task arguments as given: JSON text (a str), or a value converted to JSON, or one that
/// cannot be (the tool answers with an error envelope saying why). None means no arguments.
pub fn tool_args(args: Option<&Bound<'_, PyAny>>) -> crate::api::ToolArgs {
    use crate::api::ToolArgs;
    let Some(args) = args.filter(|a| !a.is_none()) else {
        return ToolArgs::Json(Json::Null);
    };
    if let Ok(s) = args.cast::<PyString>() {
        return ToolArgs::Text(s.to_string());
    }
    to_json(args, "arguments").map_or_else(
        |e| ToolArgs::Unusable {
            shown: args.repr().map(|r| r.to_string()).unwrap_or_default(),
            reason: e.value(args.py()).to_string(),
        },
        ToolArgs::Json,
    )
}

/// A call's arguments bound to the core's parameters ([`Params::bind`]), as the objects given
/// (None counts as not given for an optional one).
pub struct Args<'py>(Vec<(String, Bound<'py, PyAny>)>);

impl<'py> Args<'py> {
    /// Bind `args` and `kwargs` to `params`; a wrong count, name or repetition is refused by it.
    pub fn bind(
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
    pub fn get(&self, name: &str) -> Option<&Bound<'py, PyAny>> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }

    /// A required argument (the binding made sure it was given).
    pub fn req(&self, name: &str) -> PyResult<&Bound<'py, PyAny>> {
        let missing = || Error::Internal(format!("argument {name} was not bound"));
        Ok(self.get(name).ok_or_else(missing)?)
    }

    /// The argument given as `name` as JSON (null when it was not given).
    pub fn value(&self, name: &str) -> PyResult<Json> {
        self.get(name).map_or(Ok(Json::Null), |v| to_json(v, name))
    }

    /// The arguments among `names` as JSON, for the core to read ([`Kwargs`]).
    pub fn json(&self, names: &[&str]) -> PyResult<Kwargs> {
        let given = self.0.iter().filter(|(k, _)| names.contains(&k.as_str()));
        let items = given.map(|(k, v)| Ok((k.clone(), to_json(v, k)?)));
        Ok(Kwargs::new(
            "arguments",
            names,
            items.collect::<PyResult<_>>()?,
        )?)
    }
}

/// A call's arguments bound to the core's parameters, each converted to JSON naming it.
pub fn bind(
    params: &Params,
    args: Option<&Bound<'_, PyTuple>>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Kwargs> {
    Args::bind(params, args, kwargs)?.json(params.names)
}

/// The keyword options `owner` was given, by name only (None counts as not given).
pub fn kwargs(
    owner: &'static str,
    names: &'static [&'static str],
    given: Option<&Bound<'_, PyDict>>,
) -> PyResult<Kwargs> {
    bind(&Params::keywords(owner, names), None, given)
}

/// An optional argument as JSON (None and missing are both null).
pub fn opt_json(obj: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Json> {
    obj.map_or(Ok(Json::Null), |o| to_json(o, what))
}

/// A Python str as a Rust String; lone surrogates are refused naming the field.
pub fn py_str(s: &Bound<'_, PyString>, what: &str) -> PyResult<String> {
    s.to_str().map(str::to_owned).map_err(|_| {
        Error::config(
            what,
            "is not valid Unicode text (it contains a lone surrogate)",
        )
        .into()
    })
}

/// A str argument, or an `ArgumentTypeError` naming it.
pub fn req_str(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    match obj.cast::<PyString>() {
        Ok(s) => py_str(s, what),
        Err(_) => Err(wrong_type(what, "str", obj)),
    }
}

/// An optional str argument (None means not given).
pub fn opt_str(obj: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<String>> {
    obj.filter(|o| !o.is_none())
        .map(|o| req_str(o, what))
        .transpose()
}

/// An optional int argument (not a bool), read by the core ([`Kwargs::int`]).
pub fn opt_int(obj: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<i64>> {
    Ok(Kwargs::one(what, opt_json(obj, what)?).int(what)?)
}

/// An optional real number (int or float, not bool), read by the core ([`Kwargs::number`]).
pub fn opt_float(obj: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<f64>> {
    Ok(Kwargs::one(what, opt_json(obj, what)?).number(what)?)
}

/// A path argument (str or os.PathLike).
pub fn path_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<std::path::PathBuf> {
    obj.extract()
        .map_err(|_| wrong_type(what, "a str or os.PathLike", obj))
}

/// Any iterable of str (but not a str itself) → names, read by the core ([`Kwargs::str_list`]).
pub fn str_list(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<String>> {
    if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyBytes>() {
        return Err(wrong_type(
            what,
            "an iterable of str, not a single str",
            obj,
        ));
    }
    let iter = obj.try_iter();
    let iter = iter.map_err(|_| wrong_type(what, "an iterable of str", obj))?;
    let names = Kwargs::one(what, to_json(iter.as_any(), what)?).str_list(what)?;
    Ok(names.unwrap_or_default())
}

/// An optional iterable of str.
pub fn opt_str_list(obj: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<Vec<String>>> {
    obj.filter(|o| !o.is_none())
        .map(|o| str_list(o, what))
        .transpose()
}

/// Any serialisable core value → plain Python data (dicts, lists, str, int, float, None).
pub fn dump<'py>(py: Python<'py>, value: &impl Serialize) -> PyResult<Bound<'py, PyAny>> {
    pythonize::pythonize(py, value)
        .map_err(|e| Error::Internal(format!("cannot convert a result to Python: {e}")).into())
}

/// The `ArgumentTypeError` for an argument that is not of the expected type.
pub fn wrong_type(field: &str, expected: &str, obj: &Bound<'_, PyAny>) -> PyErr {
    Error::wrong_type(field, expected, &type_name(obj)).into()
}

/// The Python type name of an object, for messages.
pub fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".into())
}
