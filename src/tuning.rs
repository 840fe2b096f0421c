//! Every knob of the small-model assists, in one place: a struct with a `Default` (the values a
//! run uses unless its profile says otherwise), carried by [`crate::profile::RuntimeProfile`]
//! as its `tuning` field so that an experiment changes a knob without changing code:
//!
//! ```python
//! profile = outrider.explore_profile().replace(tuning={"leads": 5})
//! ```
//!
//! None of these values is fitted to a named benchmark question; each says why it is what it
//! is. A knob that does not pay on questions it was not chosen on is removed, not kept at a
//! neutral value.

use serde::{Deserialize, Serialize};

use crate::pyjson::Json;

/// The knobs of the assists (see the module's documentation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Tuning {
    /// Ranked places of the code index the repo-map hint lists as leads (0 lists none).
    pub leads: u64,
    /// The `k` of reciprocal-rank fusion (`1 / (k + rank)`) of the model's citations with the
    /// leads: 60, the usual value, so that a place both lists rank beats any place only one
    /// does.
    pub fusion_k: f64,
    /// Lines the hint suggests reading of a lead (from two lines above its first).
    pub lead_read_lines: u64,
    /// The share of `timeout_seconds` the offline scout may spend before the first call.
    pub scout_time_share: f64,
    /// The most seconds the offline scout may spend before the first call.
    pub scout_time_cap_seconds: f64,
    /// The shortest name a summary may use without it being checked against what the child
    /// saw (shorter words are English as often as code).
    pub min_checked_name: u64,
    /// 1 (the default) re-sends a Read result the model has used (cited in a later reply, or
    /// shown again by a later Read) as its cited lines and a note of what was cut; 0 re-sends
    /// every result whole (each request repeats the whole history, so a result kept whole is
    /// paid for again at every later call).
    pub shrink_used_results: u64,
    /// How much an identifier compound of adjacent question words counts (`jsonobject`,
    /// `json_object` for "JSON object"): as a term, beside a word's 1, and as a definition's
    /// or a file's name, beside the exact-name bonus of a name the question writes as code. Half:
    /// code spells one thing as one name far more often than a sentence does by chance, but
    /// adjacent words are not always one thing ("long help lines" is not about `long_help`).
    pub rank_compound: f64,
    /// The bonus of a file whose name is a name the question gives (`changeset.ex` for
    /// "Changeset", a module's `mod.rs` or `__init__.py` for its folder's name), in units of
    /// the exact-name bonus a definition gets: a third of it, so the file rises but its right
    /// definition still leads it.
    pub rank_file_named: f64,
    /// The weight of a file in a copy kept beside the live code (`vendor/`, `third_party/`,
    /// `legacy/`, `deprecated/`, `compat/`, or an older `vN/` of a file that also has a newer
    /// one): the same words as the live code, so it must rank below it.
    pub rank_copy_weight: f64,
    /// The weight of a test (a test folder or file, and a `#[cfg(test)] mod tests` block inside
    /// a source file) when the question does not ask about tests: tests repeat the words of
    /// the code they test.
    pub rank_test_weight: f64,
    /// The idf over files (`ln(files / files holding it)`) below which a name the question
    /// gives counts in proportion for the exact-name and file-name bonuses: a name in a large
    /// share of the tree ("bash" in a bash project) tells little about where to look. 1.4 is a
    /// name in a quarter of the files; one in every file counts nothing; 0 turns it off.
    pub rank_common_idf: f64,
    /// BM25's term-frequency saturation (`k1`).
    pub rank_bm25_k1: f64,
    /// BM25's length normalisation (`b`, 0 to 1).
    pub rank_bm25_b: f64,
    /// A question word that is a definition's name (or one of its parts), per idf.
    pub rank_name: f64,
    /// The bonus of a definition named exactly as an identifier the question names.
    pub rank_exact: f64,
    /// A question word in the file's name, per idf.
    pub rank_path_file: f64,
    /// A question word in a folder of the path, per idf.
    pub rank_path_dir: f64,
    /// A question word in the name of the definition that encloses a chunk (its class), per idf.
    pub rank_parent: f64,
    /// The share of a file's next best chunks (up to three) its best chunk gains.
    pub rank_file_share: f64,
    /// Each further chunk of a file already ranked counts this much of the one before, so that a long file does not fill the list.
    pub rank_same_file_decay: f64,
}

/// The knobs' names, in declaration order (the keys `tuning` takes).
pub const TUNING_FIELDS: [&str; 21] = [
    "leads",
    "fusion_k",
    "lead_read_lines",
    "scout_time_share",
    "scout_time_cap_seconds",
    "min_checked_name",
    "shrink_used_results",
    "rank_compound",
    "rank_file_named",
    "rank_copy_weight",
    "rank_test_weight",
    "rank_common_idf",
    "rank_bm25_k1",
    "rank_bm25_b",
    "rank_name",
    "rank_exact",
    "rank_path_file",
    "rank_path_dir",
    "rank_parent",
    "rank_file_share",
    "rank_same_file_decay",
];

impl Default for Tuning {
    fn default() -> Self {
        Self {
            leads: 3,
            fusion_k: 60.0,
            lead_read_lines: 40,
            scout_time_share: 0.1,
            scout_time_cap_seconds: 30.0,
            min_checked_name: 3,
            shrink_used_results: 1,
            rank_compound: 0.5,
            rank_file_named: 1.0 / 3.0,
            rank_copy_weight: 0.4,
            rank_test_weight: 0.4,
            rank_common_idf: 1.4,
            rank_bm25_k1: 1.2,
            rank_bm25_b: 0.75,
            rank_name: 2.0,
            rank_exact: 6.0,
            rank_path_file: 1.5,
            rank_path_dir: 0.5,
            rank_parent: 0.5,
            rank_file_share: 0.25,
            rank_same_file_decay: 0.55,
        }
    }
}

/// The largest count a count knob takes (more leads or lines than this is not a hint).
const MAX_COUNT: i64 = 1_000;

impl Tuning {
    /// A copy with the knobs in `value` (a dict of knob names to numbers) changed; `field`
    /// names the whole value in errors (`RuntimeProfile.tuning`). An unknown knob, a value of
    /// the wrong type or out of its range is refused naming the knob and what it takes.
    pub fn with_json(mut self, field: &str, value: &Json) -> Result<Self, crate::Error> {
        let Json::Object(items) = value else {
            return Err(crate::Error::wrong_type(
                field,
                "a dict of knob names to numbers",
                value.type_name(),
            ));
        };
        for (key, v) in items {
            let name = format!("{field}[{}]", crate::pyjson::py_repr_str(key));
            let count = || count_knob(&name, v);
            let number = |lo: f64, hi: f64| number_knob(&name, v, lo, hi);
            match key.as_str() {
                "leads" => self.leads = count()?,
                "lead_read_lines" => self.lead_read_lines = count()?.max(1),
                "min_checked_name" => self.min_checked_name = count()?,
                "shrink_used_results" => self.shrink_used_results = flag_knob(&name, v)?,
                "fusion_k" => self.fusion_k = number(0.0, 1e6)?,
                "scout_time_share" => self.scout_time_share = number(0.0, 1.0)?,
                "scout_time_cap_seconds" => self.scout_time_cap_seconds = number(0.0, 3600.0)?,
                "rank_compound" => self.rank_compound = number(0.0, 10.0)?,
                "rank_file_named" => self.rank_file_named = number(0.0, 10.0)?,
                "rank_copy_weight" => self.rank_copy_weight = number(0.0, 1.0)?,
                "rank_test_weight" => self.rank_test_weight = number(0.0, 1.0)?,
                "rank_common_idf" => self.rank_common_idf = number(0.0, 20.0)?,
                "rank_bm25_k1" => self.rank_bm25_k1 = number(0.0, 10.0)?,
                "rank_bm25_b" => self.rank_bm25_b = number(0.0, 1.0)?,
                "rank_name" => self.rank_name = number(0.0, 100.0)?,
                "rank_exact" => self.rank_exact = number(0.0, 100.0)?,
                "rank_path_file" => self.rank_path_file = number(0.0, 100.0)?,
                "rank_path_dir" => self.rank_path_dir = number(0.0, 100.0)?,
                "rank_parent" => self.rank_parent = number(0.0, 100.0)?,
                "rank_file_share" => self.rank_file_share = number(0.0, 1.0)?,
                "rank_same_file_decay" => self.rank_same_file_decay = number(0.0, 1.0)?,
                other => {
                    return Err(crate::args::unknown_option(field, other, &TUNING_FIELDS));
                }
            }
        }
        Ok(self)
    }

    /// The Python repr: a dict of every knob.
    pub fn py_repr(&self) -> String {
        let count = |n: u64| Json::Int(i64::try_from(n).unwrap_or(i64::MAX)).py_repr();
        let number = |x: f64| Json::Float(x).py_repr();
        let values = [
            count(self.leads),
            number(self.fusion_k),
            count(self.lead_read_lines),
            number(self.scout_time_share),
            number(self.scout_time_cap_seconds),
            count(self.min_checked_name),
            count(self.shrink_used_results),
            number(self.rank_compound),
            number(self.rank_file_named),
            number(self.rank_copy_weight),
            number(self.rank_test_weight),
            number(self.rank_common_idf),
            number(self.rank_bm25_k1),
            number(self.rank_bm25_b),
            number(self.rank_name),
            number(self.rank_exact),
            number(self.rank_path_file),
            number(self.rank_path_dir),
            number(self.rank_parent),
            number(self.rank_file_share),
            number(self.rank_same_file_decay),
        ];
        let items: Vec<String> = TUNING_FIELDS
            .iter()
            .zip(values)
            .map(|(k, v)| format!("'{k}': {v}"))
            .collect();
        format!("{{{}}}", items.join(", "))
    }

    /// The scout's time cap as a duration.
    pub fn scout_time_cap(&self) -> std::time::Duration {
        std::time::Duration::from_secs_f64(self.scout_time_cap_seconds)
    }
}

/// A count knob: an int from 0 to [`MAX_COUNT`].
fn count_knob(name: &str, v: &Json) -> Result<u64, crate::Error> {
    match v {
        Json::Int(i) if (0..=MAX_COUNT).contains(i) => Ok(*i as u64),
        Json::Int(i) => Err(crate::Error::config(
            name,
            format!("must be between 0 and {MAX_COUNT}, got {i}"),
        )),
        other => Err(crate::Error::wrong_type(name, "int", other.type_name())),
    }
}

/// An on/off knob: 0 or 1.
fn flag_knob(name: &str, v: &Json) -> Result<u64, crate::Error> {
    match v {
        Json::Int(i @ (0 | 1)) => Ok(*i as u64),
        Json::Bool(b) => Ok(u64::from(*b)),
        Json::Int(i) => Err(crate::Error::config(
            name,
            format!("must be 0 (off) or 1 (on), got {i}"),
        )),
        other => Err(crate::Error::wrong_type(name, "0 or 1", other.type_name())),
    }
}

/// A number knob: finite, from `lo` to `hi`.
fn number_knob(name: &str, v: &Json, lo: f64, hi: f64) -> Result<f64, crate::Error> {
    let x = match v {
        Json::Int(i) => *i as f64,
        Json::Float(f) => *f,
        other => {
            return Err(crate::Error::wrong_type(
                name,
                "a number",
                other.type_name(),
            ))
        }
    };
    if x.is_finite() && (lo..=hi).contains(&x) {
        Ok(x)
    } else {
        Err(crate::Error::config(
            name,
            format!(
                "must be a number between {lo} and {hi}, got {}",
                Json::Float(x).py_repr()
            ),
        ))
    }
}

impl std::hash::Hash for Tuning {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        (
            self.leads,
            self.lead_read_lines,
            self.min_checked_name,
            self.shrink_used_results,
        )
            .hash(h);
        for x in [
            self.fusion_k,
            self.scout_time_share,
            self.scout_time_cap_seconds,
            self.rank_compound,
            self.rank_file_named,
            self.rank_copy_weight,
            self.rank_test_weight,
            self.rank_common_idf,
            self.rank_bm25_k1,
            self.rank_bm25_b,
            self.rank_name,
            self.rank_exact,
            self.rank_path_file,
            self.rank_path_dir,
            self.rank_parent,
            self.rank_file_share,
            self.rank_same_file_decay,
        ] {
            x.to_bits().hash(h);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dict(items: &[(&str, Json)]) -> Json {
        Json::Object(
            items
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        )
    }

    #[test]
    fn knobs_change_by_name_and_bad_ones_are_refused_naming_the_knob() {
        let t = Tuning::default()
            .with_json(
                "T",
                &dict(&[("leads", Json::Int(5)), ("fusion_k", Json::Int(10))]),
            )
            .unwrap();
        assert_eq!((t.leads, t.fusion_k), (5, 10.0));
        assert_eq!(t.lead_read_lines, Tuning::default().lead_read_lines);
        let err = |v: Json| {
            Tuning::default()
                .with_json("T", &v)
                .unwrap_err()
                .to_string()
        };
        assert!(err(dict(&[("lead", Json::Int(1))]))
            .contains("has no option 'lead'; options are: leads, fusion_k"));
        assert!(err(dict(&[("leads", Json::Str("5".into()))])).contains("T['leads']"));
        assert!(
            err(dict(&[("leads", Json::Int(-1))])).contains("must be between 0 and 1000, got -1")
        );
        assert!(
            err(dict(&[("scout_time_share", Json::Float(f64::NAN))])).contains("between 0 and 1")
        );
        assert!(err(Json::Int(3)).contains("must be a dict of knob names to numbers, got int"));
        let e = err(dict(&[("rank_test_weight", Json::Float(1.5))]));
        assert!(
            e.contains("T['rank_test_weight']") && e.contains("between 0 and 1, got 1.5"),
            "{e}"
        );
        let t = Tuning::default()
            .with_json("T", &dict(&[("rank_compound", Json::Float(0.5))]))
            .unwrap();
        assert_eq!(t.rank_compound, 0.5);
    }

    #[test]
    fn a_tuning_round_trips_through_serde_and_a_partial_one_takes_the_defaults() {
        let t: Tuning = serde_json::from_str(r#"{"leads": 1}"#).unwrap();
        assert_eq!(
            t,
            Tuning {
                leads: 1,
                ..Tuning::default()
            }
        );
        let back: Tuning = serde_json::from_str(&serde_json::to_string(&t).unwrap()).unwrap();
        assert_eq!(back, t);
        assert!(serde_json::from_str::<Tuning>(r#"{"nope": 1}"#).is_err());
    }
}
