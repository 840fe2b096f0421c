//! What every front end shares when it hands values to the core: durations in seconds, the
//! bounds on a converted value, the one error for a name nobody takes, and [`Record`] (a value
//! handed out as plain data and taken back). Binding a call's arguments is the front end's
//! (the Python binding's: `src/py/args.rs`); the core takes typed values.

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
pub(crate) const MAX_DEPTH: usize = 256;
/// How many items an iterator a front end converts may yield: it may never end.
pub(crate) const MAX_ITEMS: usize = 1 << 20;

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

#[cfg(test)]
mod tests {
    use super::*;

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
        let err = unknown_option("Thing", "nn", &["n", "x"]);
        assert!(matches!(err, Error::Type { .. }));
        assert_eq!(
            err.to_string(),
            "Thing: has no option 'nn'; options are: n, x"
        );
    }
}
