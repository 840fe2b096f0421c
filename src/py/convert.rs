//! Conversions between Python objects and the core's JSON values, with errors that name the field.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyFrozenSet, PyInt, PyList, PyString, PyTuple};

use crate::pyjson::Json;

/// Nesting deeper than this in a Python value is refused (it would be a cycle or an attack).
const MAX_DEPTH: usize = 256;

/// Python value → JSON value. `what` names the argument for error messages.
pub fn to_json(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Json> {
    to_json_at(obj, what, 0)
}

fn to_json_at(obj: &Bound<'_, PyAny>, what: &str, depth: usize) -> PyResult<Json> {
    if depth > MAX_DEPTH {
        return Err(PyValueError::new_err(format!(
            "{what} is nested more than {MAX_DEPTH} levels deep (or contains itself)"
        )));
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
            let key = k.cast::<PyString>().map_err(|_| {
                PyTypeError::new_err(format!(
                    "{what} keys must be str, got {} key {}",
                    type_name(&k),
                    k.repr().map(|r| r.to_string()).unwrap_or_default()
                ))
            })?;
            let key = py_str(key, what)?;
            let value = to_json_at(
                &v,
                &format!("{what}[{}]", crate::pyjson::py_repr_str(&key)),
                depth + 1,
            )?;
            items.push((key, value));
        }
        return Ok(Json::Object(items));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let mut items = Vec::new();
        for (i, item) in obj.try_iter()?.enumerate() {
            items.push(to_json_at(&item?, &format!("{what}[{i}]"), depth + 1)?);
        }
        return Ok(Json::Array(items));
    }
    Err(PyTypeError::new_err(format!(
        "{what} must hold only JSON values (dict, list, tuple, str, int, float, bool, None), got {}",
        type_name(obj)
    )))
}

/// A Python str as a Rust String; lone surrogates are refused with a message naming the field.
pub fn py_str(s: &Bound<'_, PyString>, what: &str) -> PyResult<String> {
    s.to_str().map(str::to_owned).map_err(|_| {
        PyValueError::new_err(format!(
            "{what} is not valid Unicode text (it contains a lone surrogate)"
        ))
    })
}

/// JSON value → Python value (objects become dicts, arrays lists).
pub fn to_py<'py>(py: Python<'py>, value: &Json) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Json::Null => py.None().into_bound(py),
        Json::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Json::Int(i) => i.into_pyobject(py)?.into_any(),
        Json::BigInt(s) => py.get_type::<PyInt>().call1((s.as_str(),))?,
        Json::Float(f) => PyFloat::new(py, *f).into_any(),
        Json::Str(s) => PyString::new(py, s).into_any(),
        Json::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_py(py, item)?)?;
            }
            list.into_any()
        }
        Json::Object(items) => {
            let dict = PyDict::new(py);
            for (k, v) in items {
                dict.set_item(k, to_py(py, v)?)?;
            }
            dict.into_any()
        }
    })
}

/// serde_json value → Python value.
pub fn value_to_py<'py>(py: Python<'py>, value: &serde_json::Value) -> PyResult<Bound<'py, PyAny>> {
    to_py(py, &Json::from_value(value))
}

/// The Python type name of an object, for messages.
pub fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".into())
}

/// Extract a str argument or raise `TypeError: <what> must be str, got <type>`.
pub fn req_str(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    match obj.cast::<PyString>() {
        Ok(s) => py_str(s, what),
        Err(_) => Err(PyTypeError::new_err(format!(
            "{what} must be str, got {}",
            type_name(obj)
        ))),
    }
}

/// Extract an int argument (not a bool) or raise a TypeError / ValueError naming it.
pub fn req_int(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<i64> {
    if obj.is_instance_of::<PyBool>() || !obj.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!(
            "{what} must be int, got {}",
            type_name(obj)
        )));
    }
    obj.extract::<i64>().map_err(|_| {
        PyValueError::new_err(format!(
            "{what} is out of range: {}",
            obj.str().map(|s| s.to_string()).unwrap_or_default()
        ))
    })
}

/// Extract a bool argument or raise a TypeError naming it.
pub fn req_bool(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<bool> {
    obj.cast::<PyBool>()
        .map(|b| b.is_true())
        .map_err(|_| PyTypeError::new_err(format!("{what} must be bool, got {}", type_name(obj))))
}

/// Extract a real number (int or float, not bool) or raise a TypeError naming it.
pub fn req_float(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<f64> {
    if obj.is_instance_of::<PyBool>()
        || !(obj.is_instance_of::<PyInt>() || obj.is_instance_of::<PyFloat>())
    {
        return Err(PyTypeError::new_err(format!(
            "{what} must be a number, got {}",
            type_name(obj)
        )));
    }
    obj.extract::<f64>()
}

/// Any iterable of str (but not a str itself) → names.
pub fn str_iterable(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<String>> {
    if obj.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(format!(
            "{what} must be an iterable of tool names such as {{'Read', 'Grep', 'Glob'}}, not a single str"
        )));
    }
    let iter = obj.try_iter().map_err(|_| {
        PyTypeError::new_err(format!(
            "{what} must be an iterable of str, got {}",
            type_name(obj)
        ))
    })?;
    let mut out = Vec::new();
    for item in iter {
        let item = item?;
        out.push(req_str(&item, &format!("{what} item"))?);
    }
    Ok(out)
}

/// A frozenset of names.
pub fn frozenset<'py>(
    py: Python<'py>,
    names: impl IntoIterator<Item = String>,
) -> PyResult<Bound<'py, PyFrozenSet>> {
    PyFrozenSet::new(py, names.into_iter().collect::<Vec<_>>())
}

/// A tuple of str.
pub fn str_tuple<'py>(py: Python<'py>, items: &[String]) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(py, items)
}

/// `repr()` of a `{str: int}` dict as Python prints it.
pub fn usage_repr(usage: &std::collections::BTreeMap<String, u64>) -> String {
    let parts: Vec<String> = usage
        .iter()
        .map(|(k, v)| format!("{}: {v}", crate::pyjson::py_repr_str(k)))
        .collect();
    format!("{{{}}}", parts.join(", "))
}
