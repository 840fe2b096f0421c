//! Keyword arguments a front end passes through as JSON (the options of `SubagentLauncher`,
//! `MainAgent`, `OpenAICompatible`), read by name: each accessor checks the type and names the
//! argument when it is wrong, and a name nobody accepts is refused with the accepted ones listed.
//! Which options exist, and what each takes, is decided here in the core, once.

use crate::error::Error;
use crate::pyjson::{py_repr_str, Json};

/// A duration argument given in seconds: a finite number >= 0, else an error naming `field`.
pub fn seconds(field: &str, secs: f64) -> Result<std::time::Duration, Error> {
    std::time::Duration::try_from_secs_f64(secs).map_err(|_| {
        Error::config(
            field,
            format!("must be a finite number of seconds >= 0, got {secs}"),
        )
    })
}

/// How deep a value a front end converts for the core may nest: deeper is a cycle or an attack.
pub const MAX_DEPTH: usize = 256;
/// How many items an iterator a front end converts may yield: it may never end.
pub const MAX_ITEMS: usize = 1 << 20;

/// Refuse a value being converted for the core (named `what`) once it is `depth` levels deep
/// or has yielded `items` items, beyond [`MAX_DEPTH`] or [`MAX_ITEMS`].
pub fn within_bounds(what: &str, depth: usize, items: usize) -> Result<(), Error> {
    if depth > MAX_DEPTH {
        let deep = format!("is nested more than {MAX_DEPTH} levels deep (or contains itself)");
        return Err(Error::config(what.split('[').next().unwrap_or(what), deep));
    }
    if items > MAX_ITEMS {
        return Err(Error::config(
            what,
            format!("has more than {MAX_ITEMS} items"),
        ));
    }
    Ok(())
}

/// The one error for a name `owner` does not take (a keyword argument, a profile field).
pub fn unknown_option(owner: &str, bad: &str, accepted: &[&str]) -> Error {
    let message = format!(
        "has no option {}; options are: {}",
        py_repr_str(bad),
        accepted.join(", ")
    );
    Error::Type {
        field: owner.to_string(),
        message,
    }
}

/// A core value a front end hands out as plain data and takes back: `to_dict()`, `from_dict()`,
/// `repr()` and pickling in Python.
pub trait Record: serde::Serialize + std::fmt::Display + Sized {
    /// Rebuild from the plain data (`to_dict()` output), validated; a bad or unknown key is
    /// refused naming it.
    fn from_record(data: &Json) -> Result<Self, Error>;

    /// What pickling keeps and [`Self::from_record`] takes back: the plain data, or more.
    fn state(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

/// The keyword arguments given to `owner` (a null value counts as not given).
#[derive(Debug, Clone, Default)]
pub struct Kwargs {
    items: Vec<(String, Json)>,
    /// Arguments given as values with no JSON form: reading one is refused as the wrong type,
    /// saying what the reader expected, unless it is a path object read as a path.
    opaque: Vec<(String, Opaque)>,
}

/// An argument with no JSON form, as the front end describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opaque {
    /// The front end's name for its type (`PosixPath`, `URL`).
    pub type_name: String,
    /// Its text when it is a path object (`os.PathLike`); only [`Kwargs::path`] reads it.
    pub path: Option<String>,
}

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

/// The parameters of a call a front end passes through: their names in order, how many may be
/// given by position, and how many (the first ones) are required.
#[derive(Debug, Clone, Copy)]
pub struct Params {
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
    /// Bind a call's arguments (any value: JSON, or the front end's own objects) as the front
    /// end's language would, by position then by name: too many positional arguments, a name
    /// given twice, an unknown name or a missing required one is refused, naming it. An optional
    /// argument that `is_null` counts as not given. Returns `(name, value)` in the order given.
    pub fn bind<T>(
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
    pub const fn keywords(owner: &'static str, names: &'static [&'static str]) -> Self {
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
    pub fn items(&self) -> Result<&[(String, Json)], Error> {
        if let Some((key, opaque)) = self.opaque.first() {
            return Err(Error::wrong_type(key, ANY_JSON, &opaque.type_name));
        }
        Ok(&self.items)
    }

    /// The given arguments among `names`, as one JSON object in the order given.
    pub fn object(&self, names: &[&str]) -> Result<Json, Error> {
        for name in names {
            self.given(name, ANY_JSON)?;
        }
        let picked = self
            .items
            .iter()
            .filter(|(k, _)| names.contains(&k.as_str()));
        Ok(Json::Object(picked.cloned().collect()))
    }

    /// `items` given to `owner` (e.g. `SubagentLauncher`); a name not in `accepted` is refused.
    pub fn new(owner: &str, accepted: &[&str], items: Vec<(String, Json)>) -> Result<Self, Error> {
        if let Some((bad, _)) = items.iter().find(|(k, _)| !accepted.contains(&k.as_str())) {
            return Err(unknown_option(owner, bad, accepted));
        }
        Ok(Kwargs {
            items,
            ..Self::default()
        })
    }

    /// With `key` given as `value` (the accessors read null as not given), or as a value with
    /// no JSON form (its type's name), which the accessors refuse as the wrong type.
    pub fn with(mut self, key: &str, value: Result<Json, Opaque>) -> Self {
        match value {
            Ok(json) => self.items.push((key.into(), json)),
            Err(opaque) => self.opaque.push((key.into(), opaque)),
        }
        self
    }

    /// One value, given as `key` (to read it with an accessor).
    pub fn one(key: &str, value: Json) -> Self {
        Self::default().with(key, Ok(value))
    }

    /// The value given for `key` (null when it was not given), refused as not `expected` when it
    /// was given as a value with no JSON form.
    pub fn given(&self, key: &str, expected: &str) -> Result<&Json, Error> {
        if let Some((_, opaque)) = self.opaque.iter().find(|(k, _)| k == key) {
            return Err(Error::wrong_type(key, expected, &opaque.type_name));
        }
        let given = self.items.iter().find(|(k, _)| k == key);
        Ok(given.map_or(&Json::Null, |(_, v)| v))
    }

    /// The value given for `key`, any JSON; null when it was not given.
    pub fn json(&self, key: &str) -> Result<&Json, Error> {
        self.given(key, ANY_JSON)
    }

    /// A required str (given, and not None).
    pub fn req_str(&self, key: &str) -> Result<String, Error> {
        let given = self.str(key)?;
        given.ok_or_else(|| Error::wrong_type(key, "str", "NoneType"))
    }

    /// An optional path: a str or a path object.
    pub fn path(&self, key: &str) -> Result<Option<std::path::PathBuf>, Error> {
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
    pub fn req_path(&self, key: &str) -> Result<std::path::PathBuf, Error> {
        let given = self.path(key)?;
        given.ok_or_else(|| Error::wrong_type(key, PATH, "NoneType"))
    }

    /// An optional str.
    pub fn str(&self, key: &str) -> Result<Option<String>, Error> {
        match self.given(key, "str")? {
            Json::Null => Ok(None),
            Json::Str(s) => Ok(Some(s.clone())),
            other => Err(Error::wrong_type(key, "str", other.type_name())),
        }
    }

    /// An optional int (not a bool).
    pub fn int(&self, key: &str) -> Result<Option<i64>, Error> {
        match self.given(key, "int")? {
            Json::Null => Ok(None),
            Json::Int(i) => Ok(Some(*i)),
            Json::BigInt(digits) => Err(Error::config(key, format!("is out of range: {digits}"))),
            other => Err(Error::wrong_type(key, "int", other.type_name())),
        }
    }

    /// An optional real number: an int or a float, not a bool.
    pub fn number(&self, key: &str) -> Result<Option<f64>, Error> {
        match self.given(key, "a number")? {
            Json::Null => Ok(None),
            Json::Int(i) => Ok(Some(*i as f64)),
            Json::Float(f) => Ok(Some(*f)),
            Json::BigInt(digits) => Ok(digits.parse().ok()),
            other => Err(Error::wrong_type(key, "a number", other.type_name())),
        }
    }

    /// An optional list of str (a single str is refused: it is not a list of names).
    pub fn str_list(&self, key: &str) -> Result<Option<Vec<String>>, Error> {
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
    pub fn str_map(&self, key: &str) -> Result<Vec<(String, String)>, Error> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn kwargs(items: &[(&str, Json)]) -> Result<Kwargs, Error> {
        let items = items
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        Kwargs::new("Thing", &["n", "x", "names", "headers", "s"], items)
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
    fn a_converted_value_is_bounded_in_depth_and_length() {
        assert!(within_bounds("v", MAX_DEPTH, MAX_ITEMS).is_ok());
        assert_eq!(
            within_bounds("v[0][0]", MAX_DEPTH + 1, 0)
                .unwrap_err()
                .to_string(),
            "v: is nested more than 256 levels deep (or contains itself)"
        );
        assert_eq!(
            within_bounds("v[0]", 1, MAX_ITEMS + 1)
                .unwrap_err()
                .to_string(),
            "v[0]: has more than 1048576 items"
        );
    }

    #[test]
    fn seconds_are_a_finite_number_not_below_zero() {
        assert_eq!(
            seconds("timeout", 0.5).unwrap(),
            std::time::Duration::from_millis(500)
        );
        for (bad, shown) in [(-1.0, "-1"), (f64::NAN, "NaN"), (f64::INFINITY, "inf")] {
            assert_eq!(
                seconds("timeout", bad).unwrap_err().to_string(),
                format!("timeout: must be a finite number of seconds >= 0, got {shown}")
            );
        }
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
}
