//! Conversions between Python objects and the core's values. Type mismatches become
//! `ArgumentTypeError`s naming the field; nothing here decides a domain rule.

use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyDict, PyDictKeys, PyDictValues, PyFloat, PyFrozenSet, PyInt, PyIterator, PyList,
    PySet, PyString, PyTuple,
};
use serde::Serialize;

use crate::api::Error;
use crate::api::{within_bounds, Json};

/// What a value with no JSON form was expected to be.
const JSON_ONLY: &str = "JSON values only (dict, list, tuple, set, str, int, float, bool, None)";

/// Python value → JSON value (sets and tuples become arrays). `what` names the argument.
pub(super) fn to_json(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Json> {
    json_at(obj, what, 0)?.ok_or_else(|| wrong_type(what, JSON_ONLY, obj))
}

/// [`to_json`] at `depth`; None when `obj` itself has no JSON form.
pub(crate) fn json_at(obj: &Bound<'_, PyAny>, what: &str, depth: usize) -> PyResult<Option<Json>> {
    within_bounds(what, depth, 0)?;
    let within = |item: &Bound<'_, PyAny>, at: &str| {
        json_at(item, at, depth + 1)?.ok_or_else(|| wrong_type(at, JSON_ONLY, item))
    };
    if obj.is_none() {
        return Ok(Some(Json::Null));
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Some(Json::Bool(b.is_true())));
    }
    if obj.is_instance_of::<PyInt>() {
        return Ok(Some(match obj.extract::<i64>() {
            Ok(i) => Json::Int(i),
            Err(_) => Json::BigInt(obj.str()?.to_string()),
        }));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Ok(Some(Json::Float(f.value())));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Some(Json::Str(py_str(s, what)?)));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut items = Vec::with_capacity(d.len());
        for (k, v) in d.iter() {
            let key = k
                .cast::<PyString>()
                .map_err(|_| wrong_type(&format!("{what} key"), "str", &k))?;
            let key = py_str(key, what)?;
            let at = format!("{what}[{}]", crate::api::py_repr_str(&key));
            items.push((key, within(&v, &at)?));
        }
        return Ok(Some(Json::Object(items)));
    }
    // Lists, tuples, sets, dict views, and iterators such as generators (bounded by the core).
    let listlike = obj.is_instance_of::<PyList>()
        || obj.is_instance_of::<PyTuple>()
        || obj.is_instance_of::<PySet>()
        || obj.is_instance_of::<PyFrozenSet>()
        || obj.is_instance_of::<PyDictKeys>()
        || obj.is_instance_of::<PyDictValues>()
        || obj.is_instance_of::<PyIterator>();
    if listlike {
        let mut items = Vec::new();
        for (i, item) in bounded(obj, (what, JSON_ONLY, depth))?.enumerate() {
            items.push(within(&item?, &format!("{what}[{i}]"))?);
        }
        return Ok(Some(Json::Array(items)));
    }
    // outrider's own values (a launch result's `result`, a verdict's `launch`, a result given as
    // context) stand for their `to_dict()`.
    let own = obj.get_type().module().is_ok_and(|m| m == "outrider._core");
    if !(own && obj.hasattr("to_dict")?) {
        return Ok(None);
    }
    json_at(&obj.call_method0("to_dict")?, what, depth + 1)
}

/// The items of `obj` (the value `what`, `depth` levels deep; not iterable: not `expected`),
/// refused past the core's bound ([`within_bounds`]): an iterator may never end.
pub(super) fn bounded<'a, 'py: 'a>(
    obj: &Bound<'py, PyAny>,
    (what, expected, depth): (&'a str, &str, usize),
) -> PyResult<impl Iterator<Item = PyResult<Bound<'py, PyAny>>> + 'a> {
    let iter = obj
        .try_iter()
        .map_err(|_| wrong_type(what, expected, obj))?;
    Ok(iter.enumerate().map(move |(i, item)| {
        within_bounds(what, depth, i + 1)?;
        item
    }))
}

/// Tool or Task arguments as given: JSON text (a str), or a value converted to JSON, or one that
/// cannot be (the tool answers with an error envelope saying why). None means no arguments.
pub(super) fn tool_args(args: Option<&Bound<'_, PyAny>>) -> crate::api::ToolArgs {
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

/// A Python str as a Rust String; lone surrogates are refused naming the field.
pub(super) fn py_str(s: &Bound<'_, PyString>, what: &str) -> PyResult<String> {
    s.to_str().map(str::to_owned).map_err(|_| {
        Error::config(
            what,
            "is not valid Unicode text (it contains a lone surrogate)",
        )
        .into()
    })
}

/// A str argument, or an `ArgumentTypeError` naming it.
pub(super) fn req_str(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    match obj.cast::<PyString>() {
        Ok(s) => py_str(s, what),
        Err(_) => Err(wrong_type(what, "str", obj)),
    }
}

/// Any serialisable core value → plain Python data (dicts, lists, str, int, float, None).
pub(super) fn dump<'py>(py: Python<'py>, value: &impl Serialize) -> PyResult<Bound<'py, PyAny>> {
    pythonize::pythonize(py, value)
        .map_err(|e| Error::Internal(format!("cannot convert a result to Python: {e}")).into())
}

/// The `ArgumentTypeError` for an argument that is not of the expected type.
pub(super) fn wrong_type(field: &str, expected: &str, obj: &Bound<'_, PyAny>) -> PyErr {
    Error::wrong_type(field, expected, &type_name(obj)).into()
}

/// The Python type name of an object, for messages.
pub(super) fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".into())
}
