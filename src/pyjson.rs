//! A JSON reader that accepts what Python's `json.loads` accepts and fails with its messages.
//!
//! The result contracts must parse model answers exactly as the reference system does, including
//! its leniencies (duplicate keys, last one wins; `NaN`, `Infinity`, `-Infinity`) and its error
//! wording (`Expecting value: line 1 column 1 (char 0)`), because that wording is fed back to the
//! model by the completion gate. Positions count characters, as Python does, not bytes.

use std::fmt;

/// Nesting deeper than this is refused instead of recursing without bound.
pub(crate) const MAX_DEPTH: usize = 256;

/// A parsed JSON value. Objects keep key order; a repeated key keeps its first position and the
/// last value, as a Python dict built by `json.loads` does.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    /// `null`
    Null,
    /// `true` / `false`
    Bool(bool),
    /// An integer literal that fits in an i64.
    Int(i64),
    /// Any other number, including `NaN` and the infinities.
    Float(f64),
    /// An integer literal too large for i64, kept as written.
    BigInt(String),
    /// A string.
    Str(String),
    /// An array.
    Array(Vec<Json>),
    /// An object, in key order.
    Object(Vec<(String, Json)>),
}

impl Json {
    /// The value of `key` when this is an object.
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(items) => items.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The Python type name of this value, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Json::Null => "None",
            Json::Bool(_) => "bool",
            Json::Int(_) | Json::BigInt(_) => "int",
            Json::Float(_) => "float",
            Json::Str(_) => "str",
            Json::Array(_) => "list",
            Json::Object(_) => "dict",
        }
    }

    /// `str(value)` as Python prints it.
    pub fn py_str(&self) -> String {
        match self {
            Json::Str(s) => s.clone(),
            other => other.py_repr(),
        }
    }

    /// `repr(value)` as Python prints it.
    pub fn py_repr(&self) -> String {
        match self {
            Json::Null => "None".into(),
            Json::Bool(true) => "True".into(),
            Json::Bool(false) => "False".into(),
            Json::Int(i) => i.to_string(),
            Json::BigInt(s) => s.clone(),
            Json::Float(f) => py_float_repr(*f),
            Json::Str(s) => py_repr_str(s),
            Json::Array(items) => {
                let parts: Vec<String> = items.iter().map(Json::py_repr).collect();
                format!("[{}]", parts.join(", "))
            }
            Json::Object(items) => {
                let parts: Vec<String> = items
                    .iter()
                    .map(|(k, v)| format!("{}: {}", py_repr_str(k), v.py_repr()))
                    .collect();
                format!("{{{}}}", parts.join(", "))
            }
        }
    }

    /// Convert to a `serde_json::Value`; non-finite floats become strings (`"NaN"`), which JSON
    /// cannot carry.
    pub fn to_value(&self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Int(i) => Value::from(*i),
            Json::BigInt(s) => s
                .parse::<serde_json::Number>()
                .map(Value::Number)
                .unwrap_or_else(|_| Value::String(s.clone())),
            Json::Float(f) => serde_json::Number::from_f64(*f)
                .map(Value::Number)
                .unwrap_or_else(|| Value::String(py_float_repr(*f))),
            Json::Str(s) => Value::String(s.clone()),
            Json::Array(items) => Value::Array(items.iter().map(Json::to_value).collect()),
            Json::Object(items) => Value::Object(
                items
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_value()))
                    .collect(),
            ),
        }
    }

    /// Convert from a `serde_json::Value`.
    pub fn from_value(value: &serde_json::Value) -> Json {
        use serde_json::Value;
        match value {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    Json::Int(i)
                } else if n.is_u64() {
                    Json::BigInt(n.to_string())
                } else {
                    Json::Float(n.as_f64().unwrap_or(f64::NAN))
                }
            }
            Value::String(s) => Json::Str(s.clone()),
            Value::Array(items) => Json::Array(items.iter().map(Json::from_value).collect()),
            Value::Object(map) => Json::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), Json::from_value(v)))
                    .collect(),
            ),
        }
    }
}

fn py_float_repr(f: f64) -> String {
    if f.is_nan() {
        "nan".into()
    } else if f.is_infinite() {
        if f > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        }
    } else {
        // Python's repr: the shortest round-trip digits, positional for exponents -4..16,
        // scientific (`1e+300`, `1.5e-07`) outside them.
        let sci = format!("{f:e}");
        let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
        let exp: i32 = exp.parse().unwrap_or(0);
        if (-4..16).contains(&exp) {
            let text = format!("{f}");
            if text.contains('.') {
                text
            } else {
                format!("{text}.0")
            }
        } else {
            let sign = if exp < 0 { '-' } else { '+' };
            format!("{mantissa}e{sign}{:02}", exp.abs())
        }
    }
}

/// `repr(s)` for a Python str: single quotes unless the text has a single quote and no double.
pub fn py_repr_str(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// `json.dumps(value, ensure_ascii=False, sort_keys=sort_keys)`: Python's default separators
/// (`", "` and `": "`), non-ASCII kept.
pub(crate) fn py_dumps(value: &serde_json::Value, sort_keys: bool) -> String {
    use serde_json::Value;
    let mut out = String::new();
    fn go(v: &Value, sort: bool, out: &mut String) {
        match v {
            Value::Object(map) => {
                let mut items: Vec<(&String, &Value)> = map.iter().collect();
                if sort {
                    items.sort_by(|a, b| a.0.cmp(b.0));
                }
                out.push('{');
                for (i, (k, v)) in items.into_iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    out.push_str(&serde_json::to_string(k).unwrap_or_default());
                    out.push_str(": ");
                    go(v, sort, out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    go(v, sort, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    go(value, sort_keys, &mut out);
    out
}

/// Whitespace as Python's `str.strip()` sees it.
pub(crate) fn is_py_whitespace(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `text.strip()` with Python's notion of whitespace.
pub(crate) fn py_strip(text: &str) -> &str {
    text.trim_matches(is_py_whitespace)
}

/// A decode error with Python's message and position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JsonError {
    /// The message without the position, e.g. `Expecting value`.
    pub msg: String,
    /// Character offset of the error.
    pub pos: usize,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: line {} column {} (char {})",
            self.msg, self.line, self.column, self.pos
        )
    }
}

impl std::error::Error for JsonError {}

/// Parse the whole of `text` as one JSON document, as `json.loads` does.
pub(crate) fn parse(text: &str) -> Result<Json, JsonError> {
    let chars: Vec<char> = text.chars().collect();
    let mut p = Parser { s: &chars, i: 0 };
    p.skip_ws();
    let value = p.value(0)?;
    p.skip_ws();
    if p.i != chars.len() {
        return Err(p.error("Extra data", p.i));
    }
    Ok(value)
}

struct Parser<'a> {
    s: &'a [char],
    i: usize,
}

impl Parser<'_> {
    fn error(&self, msg: &str, pos: usize) -> JsonError {
        let before = &self.s[..pos.min(self.s.len())];
        let line = before.iter().filter(|c| **c == '\n').count() + 1;
        let column = match before.iter().rposition(|c| *c == '\n') {
            Some(nl) => pos - nl,
            None => pos + 1,
        };
        JsonError {
            msg: msg.to_string(),
            pos,
            line,
            column,
        }
    }

    fn peek(&self) -> Option<char> {
        self.s.get(self.i).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t' | '\n' | '\r')) {
            self.i += 1;
        }
    }

    fn starts_with(&self, word: &str) -> bool {
        word.chars()
            .enumerate()
            .all(|(k, c)| self.s.get(self.i + k) == Some(&c))
    }

    fn value(&mut self, depth: usize) -> Result<Json, JsonError> {
        if depth > MAX_DEPTH {
            return Err(self.error("Maximum nesting depth exceeded", self.i));
        }
        let start = self.i;
        match self.peek() {
            Some('"') => Ok(Json::Str(self.string()?)),
            Some('{') => self.object(depth),
            Some('[') => self.array(depth),
            Some('n') if self.starts_with("null") => {
                self.i += 4;
                Ok(Json::Null)
            }
            Some('t') if self.starts_with("true") => {
                self.i += 4;
                Ok(Json::Bool(true))
            }
            Some('f') if self.starts_with("false") => {
                self.i += 5;
                Ok(Json::Bool(false))
            }
            Some('N') if self.starts_with("NaN") => {
                self.i += 3;
                Ok(Json::Float(f64::NAN))
            }
            Some('I') if self.starts_with("Infinity") => {
                self.i += 8;
                Ok(Json::Float(f64::INFINITY))
            }
            Some('-') if self.starts_with("-Infinity") => {
                self.i += 9;
                Ok(Json::Float(f64::NEG_INFINITY))
            }
            Some(c) if c == '-' || c.is_ascii_digit() => self.number(start),
            _ => Err(self.error("Expecting value", start)),
        }
    }

    fn number(&mut self, start: usize) -> Result<Json, JsonError> {
        let mut j = self.i;
        if self.s.get(j) == Some(&'-') {
            j += 1;
        }
        match self.s.get(j) {
            Some('0') => j += 1,
            Some(c) if c.is_ascii_digit() => {
                while self.s.get(j).is_some_and(char::is_ascii_digit) {
                    j += 1;
                }
            }
            _ => return Err(self.error("Expecting value", start)),
        }
        let int_end = j;
        let mut is_float = false;
        if self.s.get(j) == Some(&'.') && self.s.get(j + 1).is_some_and(char::is_ascii_digit) {
            j += 1;
            while self.s.get(j).is_some_and(char::is_ascii_digit) {
                j += 1;
            }
            is_float = true;
        }
        if matches!(self.s.get(j), Some('e' | 'E')) {
            let mut k = j + 1;
            if matches!(self.s.get(k), Some('+' | '-')) {
                k += 1;
            }
            if self.s.get(k).is_some_and(char::is_ascii_digit) {
                while self.s.get(k).is_some_and(char::is_ascii_digit) {
                    k += 1;
                }
                j = k;
                is_float = true;
            }
        }
        let literal: String = self.s[start..j].iter().collect();
        self.i = j;
        if is_float {
            Ok(Json::Float(literal.parse().unwrap_or(f64::NAN)))
        } else {
            debug_assert_eq!(int_end, j);
            Ok(literal
                .parse::<i64>()
                .map(Json::Int)
                .unwrap_or(Json::BigInt(literal)))
        }
    }

    fn string(&mut self) -> Result<String, JsonError> {
        let start = self.i;
        self.i += 1;
        let mut out = String::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(self.error("Unterminated string starting at", start));
            };
            match c {
                '"' => {
                    self.i += 1;
                    return Ok(out);
                }
                '\\' => {
                    let esc_pos = self.i;
                    let Some(e) = self.s.get(self.i + 1).copied() else {
                        return Err(self.error("Unterminated string starting at", start));
                    };
                    self.i += 2;
                    match e {
                        '"' => out.push('"'),
                        '\\' => out.push('\\'),
                        '/' => out.push('/'),
                        'b' => out.push('\u{8}'),
                        'f' => out.push('\u{c}'),
                        'n' => out.push('\n'),
                        'r' => out.push('\r'),
                        't' => out.push('\t'),
                        'u' => {
                            let hi = self.hex4(esc_pos)?;
                            if (0xD800..0xDC00).contains(&hi)
                                && self.s.get(self.i) == Some(&'\\')
                                && self.s.get(self.i + 1) == Some(&'u')
                            {
                                let save = self.i;
                                self.i += 2;
                                let lo = self.hex4(save)?;
                                if (0xDC00..0xE000).contains(&lo) {
                                    let code = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                                    out.push(char::from_u32(code).unwrap_or('\u{FFFD}'));
                                } else {
                                    out.push('\u{FFFD}');
                                    out.push(char::from_u32(lo).unwrap_or('\u{FFFD}'));
                                }
                            } else {
                                // A lone surrogate cannot live in a Rust string.
                                out.push(char::from_u32(hi).unwrap_or('\u{FFFD}'));
                            }
                        }
                        _ => return Err(self.error("Invalid \\escape", esc_pos)),
                    }
                }
                c if (c as u32) < 0x20 => {
                    return Err(self.error("Invalid control character at", self.i));
                }
                c => {
                    out.push(c);
                    self.i += 1;
                }
            }
        }
    }

    fn hex4(&mut self, esc_pos: usize) -> Result<u32, JsonError> {
        let digits: String = self
            .s
            .get(self.i..self.i + 4)
            .unwrap_or(&[])
            .iter()
            .collect();
        if digits.len() != 4 || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(self.error("Invalid \\uXXXX escape", esc_pos + 1));
        }
        self.i += 4;
        Ok(u32::from_str_radix(&digits, 16).unwrap_or(0xFFFD))
    }

    fn object(&mut self, depth: usize) -> Result<Json, JsonError> {
        self.i += 1;
        let mut items: Vec<(String, Json)> = Vec::new();
        self.skip_ws();
        if self.peek() == Some('}') {
            self.i += 1;
            return Ok(Json::Object(items));
        }
        loop {
            if self.peek() != Some('"') {
                return Err(self.error("Expecting property name enclosed in double quotes", self.i));
            }
            let key = self.string()?;
            self.skip_ws();
            if self.peek() != Some(':') {
                return Err(self.error("Expecting ':' delimiter", self.i));
            }
            self.i += 1;
            self.skip_ws();
            let value = self.value(depth + 1)?;
            match items.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = value,
                None => items.push((key, value)),
            }
            self.skip_ws();
            match self.peek() {
                Some('}') => {
                    self.i += 1;
                    return Ok(Json::Object(items));
                }
                Some(',') => {
                    self.i += 1;
                    self.skip_ws();
                }
                _ => return Err(self.error("Expecting ',' delimiter", self.i)),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Json, JsonError> {
        self.i += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.peek() == Some(']') {
            self.i += 1;
            return Ok(Json::Array(items));
        }
        loop {
            items.push(self.value(depth + 1)?);
            self.skip_ws();
            match self.peek() {
                Some(']') => {
                    self.i += 1;
                    return Ok(Json::Array(items));
                }
                Some(',') => {
                    self.i += 1;
                    self.skip_ws();
                }
                _ => return Err(self.error("Expecting ',' delimiter", self.i)),
            }
        }
    }
}

impl serde::Serialize for Json {
    /// Plain data: a big integer becomes an i128 when it fits (Python gets an `int`), else its
    /// digits as a string.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        match self {
            Json::Null => s.serialize_unit(),
            Json::Bool(b) => s.serialize_bool(*b),
            Json::Int(i) => s.serialize_i64(*i),
            Json::Float(f) => s.serialize_f64(*f),
            Json::BigInt(digits) => match digits.parse::<i128>() {
                Ok(n) => s.serialize_i128(n),
                Err(_) => s.serialize_str(digits),
            },
            Json::Str(text) => s.serialize_str(text),
            Json::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Json::Object(items) => {
                let mut map = s.serialize_map(Some(items.len()))?;
                for (k, v) in items {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

/// `repr()` of a list of str: `['explore', 'deep']`.
pub(crate) fn py_repr_list(items: &[String]) -> String {
    let parts: Vec<String> = items.iter().map(|s| py_repr_str(s)).collect();
    format!("[{}]", parts.join(", "))
}

/// `repr()` of a `{str: int}` dict (tool usage) as Python prints it.
pub(crate) fn py_repr_counts(counts: &std::collections::BTreeMap<String, u64>) -> String {
    let parts: Vec<String> = counts
        .iter()
        .map(|(k, v)| format!("{}: {v}", py_repr_str(k)))
        .collect();
    format!("{{{}}}", parts.join(", "))
}

#[cfg(test)]
mod float_repr_tests {
    use super::*;

    #[test]
    fn floats_print_as_python_prints_them() {
        for (f, text) in [
            (0.0, "0.0"),
            (300.0, "300.0"),
            (0.5, "0.5"),
            (1e300, "1e+300"),
            (1.5e-7, "1.5e-07"),
            (0.0001, "0.0001"),
            (1e16, "1e+16"),
            (123_456_789_012_345.0, "123456789012345.0"),
            (-2.5e20, "-2.5e+20"),
            (f64::NAN, "nan"),
            (f64::NEG_INFINITY, "-inf"),
        ] {
            assert_eq!(py_float_repr(f), text);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    #[test]
    fn python_error_messages() {
        assert_eq!(err(""), "Expecting value: line 1 column 1 (char 0)");
        assert_eq!(
            err("{\"a\":1,}"),
            "Expecting property name enclosed in double quotes: line 1 column 8 (char 7)"
        );
        assert_eq!(err("[1,]"), "Expecting value: line 1 column 4 (char 3)");
        assert_eq!(
            err("{\"a\" 1}"),
            "Expecting ':' delimiter: line 1 column 6 (char 5)"
        );
        assert_eq!(
            err("\"abc"),
            "Unterminated string starting at: line 1 column 1 (char 0)"
        );
        assert_eq!(
            err("\"a\\x\""),
            "Invalid \\escape: line 1 column 3 (char 2)"
        );
        assert_eq!(
            err("[1 2]"),
            "Expecting ',' delimiter: line 1 column 4 (char 3)"
        );
        assert_eq!(err("01"), "Extra data: line 1 column 2 (char 1)");
        assert_eq!(err("{}\nx"), "Extra data: line 2 column 1 (char 3)");
        assert_eq!(err("-"), "Expecting value: line 1 column 1 (char 0)");
    }

    #[test]
    fn python_leniencies() {
        let v = parse("{\"a\":1,\"b\":2,\"a\":3}").unwrap();
        assert_eq!(
            v,
            Json::Object(vec![("a".into(), Json::Int(3)), ("b".into(), Json::Int(2))])
        );
        let v = parse("[NaN, Infinity, -Infinity]").unwrap();
        let Json::Array(items) = v else { panic!() };
        assert!(matches!(items[0], Json::Float(f) if f.is_nan()));
        assert_eq!(items[1], Json::Float(f64::INFINITY));
        assert_eq!(items[2], Json::Float(f64::NEG_INFINITY));
    }

    #[test]
    fn positions_count_characters() {
        assert_eq!(err("\"é\" x"), "Extra data: line 1 column 5 (char 4)");
    }

    #[test]
    fn deep_nesting_is_refused() {
        let text = "[".repeat(MAX_DEPTH + 10);
        assert!(err(&text).starts_with("Maximum nesting depth exceeded"));
    }

    #[test]
    fn escapes_and_surrogates() {
        assert_eq!(
            parse("\"\\ud83d\\ude00\\n\"").unwrap(),
            Json::Str("😀\n".into())
        );
        assert_eq!(parse("\"\\ud800\"").unwrap(), Json::Str("\u{FFFD}".into()));
    }

    #[test]
    fn dumps_like_python() {
        let v: serde_json::Value =
            serde_json::from_str(r#"{"b": [1, {"d": "é", "c": null}], "a": true}"#).unwrap();
        assert_eq!(
            py_dumps(&v, true),
            r#"{"a": true, "b": [1, {"c": null, "d": "é"}]}"#
        );
        assert_eq!(py_dumps(&serde_json::json!({}), true), "{}");
    }

    #[test]
    fn reprs_match_python() {
        assert_eq!(py_repr_str("done"), "'done'");
        assert_eq!(py_repr_str("it's"), "\"it's\"");
        assert_eq!(Json::Null.py_str(), "None");
        assert_eq!(Json::Float(1.0).py_str(), "1.0");
        assert_eq!(
            parse("[\"a\", {\"b\": true}]").unwrap().py_repr(),
            "['a', {'b': True}]"
        );
    }
}
