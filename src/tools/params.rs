//! Argument checks shared by the tools. Types are strict: a bool is not an integer, a float is not
//! an integer, a number is not a string. An explicit `null` counts as "not given".

use serde_json::{Map, Value};

use super::envelope::{ErrorCode, ToolResult};

/// The argument object of one call, or the INVALID_PARAM envelope for a non-object.
pub(crate) fn object<'a>(
    tool: &str,
    args: &'a Value,
) -> Result<&'a Map<String, Value>, Box<ToolResult>> {
    args.as_object().ok_or_else(|| {
        Box::new(ToolResult::error(
            args,
            ErrorCode::InvalidParam,
            format!(
                "{tool} arguments must be a JSON object; got {}.",
                json_type_name(args)
            ),
            0,
        ))
    })
}

/// The JSON type of a value, as the model knows it.
pub(crate) fn json_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The value under `key`, with `null` treated as absent.
pub(crate) fn get<'a>(args: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    args.get(key).filter(|v| !v.is_null())
}

/// A strict integer: JSON integers only (no bools, floats or strings).
pub(crate) fn as_int(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        _ => None,
    }
}

/// An optional integer in `lo..=hi`; `Err(())` when present but wrong.
pub(crate) fn int_in(
    args: &Map<String, Value>,
    key: &str,
    default: i64,
    lo: i64,
    hi: i64,
) -> Result<i64, ()> {
    match get(args, key) {
        None => Ok(default),
        Some(v) => as_int(v).filter(|n| (lo..=hi).contains(n)).ok_or(()),
    }
}

/// An optional bool; `Err(())` when present but not a bool.
pub(crate) fn bool_or(args: &Map<String, Value>, key: &str, default: bool) -> Result<bool, ()> {
    match get(args, key) {
        None => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(()),
    }
}

/// An optional string; `Err(())` when present but not a string.
pub(crate) fn str_opt<'a>(args: &'a Map<String, Value>, key: &str) -> Result<Option<&'a str>, ()> {
    match get(args, key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(()),
    }
}

/// The message for arguments the tool does not know, or None when all are known.
pub(crate) fn unknown_arguments(
    tool: &str,
    args: &Map<String, Value>,
    accepted: &[&str],
) -> Option<String> {
    let unknown: Vec<String> = args
        .keys()
        .filter(|k| !accepted.contains(&k.as_str()))
        .map(|k| format!("'{k}'"))
        .collect();
    if unknown.is_empty() {
        return None;
    }
    let noun = if unknown.len() == 1 {
        "argument"
    } else {
        "arguments"
    };
    Some(format!(
        "Unknown {noun} {} for {tool}; accepted arguments: {}.",
        unknown.join(", "),
        accepted.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strict_types() {
        let args = json!({"a": 3, "b": true, "c": 2.0, "d": "4", "e": null});
        let m = args.as_object().unwrap();
        assert_eq!(int_in(m, "a", 1, 1, 5), Ok(3));
        assert_eq!(int_in(m, "b", 1, 1, 5), Err(()));
        assert_eq!(int_in(m, "c", 1, 1, 5), Err(()));
        assert_eq!(int_in(m, "d", 1, 1, 5), Err(()));
        assert_eq!(int_in(m, "e", 1, 1, 5), Ok(1));
        assert_eq!(int_in(m, "a", 1, 4, 5), Err(()));
        assert_eq!(bool_or(m, "b", false), Ok(true));
        assert_eq!(bool_or(m, "a", false), Err(()));
        assert_eq!(str_opt(m, "d"), Ok(Some("4")));
        assert_eq!(str_opt(m, "a"), Err(()));
    }

    #[test]
    fn unknown_names_listed() {
        let args = json!({"path": ".", "regex": "x", "pattren": 1});
        assert_eq!(
            unknown_arguments("Grep", args.as_object().unwrap(), &["pattern", "path"]),
            Some(
                "Unknown arguments 'regex', 'pattren' for Grep; accepted arguments: pattern, path."
                    .into()
            )
        );
        let ok = json!({"path": "."});
        assert_eq!(
            unknown_arguments("Grep", ok.as_object().unwrap(), &["path"]),
            None
        );
    }

    #[test]
    fn non_object_is_invalid() {
        let r = object("Read", &json!([1])).unwrap_err();
        assert_eq!(
            r.error.unwrap().message,
            "Read arguments must be a JSON object; got array."
        );
    }
}
