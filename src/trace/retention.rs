//! How many old trace files a trace directory keeps: the newest `max_files`, none older than
//! `max_age`. Only names outrider gives its traces (`trace-child-<32 hex>.jsonl`,
//! `trace-main-<32 hex>.jsonl`) are ever candidates; anything else in the directory is left alone.

use std::time::{Duration, SystemTime};

/// The environment variable that sets the retention when the caller gives none.
pub(crate) const TRACE_KEEP_ENV: &str = "OUTRIDER_TRACE_KEEP";
/// Trace files kept by default.
pub(super) const DEFAULT_KEEP_FILES: usize = 1000;
/// Days a trace file is kept by default.
pub(super) const DEFAULT_KEEP_DAYS: u64 = 30;

/// Which old trace files are deleted when a launcher or main agent prepares its directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceRetention {
    /// Keep at most this many trace files (the newest); None: no limit.
    pub max_files: Option<usize>,
    /// Delete trace files last written longer ago than this; None: no limit.
    pub max_age: Option<Duration>,
}

impl Default for TraceRetention {
    /// The newest 1000 files, none older than 30 days.
    fn default() -> Self {
        TraceRetention {
            max_files: Some(DEFAULT_KEEP_FILES),
            max_age: Some(Duration::from_secs(DEFAULT_KEEP_DAYS * 86_400)),
        }
    }
}

impl TraceRetention {
    /// Never delete anything.
    pub const KEEP_ALL: TraceRetention = TraceRetention {
        max_files: None,
        max_age: None,
    };

    /// Parse a retention spec: comma-separated parts, each a file count (`1000`), an age
    /// (`30d`, `12h`, `90min`: a humantime duration), or `off` (keep everything). A part left
    /// out has no limit: `500` keeps the newest 500 files whatever their age.
    pub fn parse(spec: &str) -> Result<TraceRetention, String> {
        let bad = |why: String| {
            format!(
                "trace retention {spec:?} {why}; expected a file count, an age such as 30d or 12h, both (\"1000,30d\"), or \"off\""
            )
        };
        let spec_trim = spec.trim();
        if spec_trim.eq_ignore_ascii_case("off") {
            return Ok(TraceRetention::KEEP_ALL);
        }
        let mut out = TraceRetention::KEEP_ALL;
        for part in spec_trim.split(',').map(str::trim) {
            if part.is_empty() {
                return Err(bad("has an empty part".into()));
            }
            if part.bytes().all(|b| b.is_ascii_digit()) {
                let n: usize = part
                    .parse()
                    .map_err(|_| bad(format!("has a count {part:?} that is too large")))?;
                if out.max_files.replace(n).is_some() {
                    return Err(bad("gives a file count twice".into()));
                }
                continue;
            }
            if part.starts_with('-') {
                return Err(bad(format!("has a negative part {part:?}")));
            }
            let age = humantime::parse_duration(part).map_err(|e| {
                bad(format!(
                    "has a part {part:?} that is neither a count nor an age ({e})"
                ))
            })?;
            if out.max_age.replace(age).is_some() {
                return Err(bad("gives an age twice".into()));
            }
        }
        Ok(out)
    }

    /// A caller's `trace_retention` argument: None (the default: `OUTRIDER_TRACE_KEEP`, else
    /// [`TraceRetention::default`]), false (keep everything), a file count, or a spec for
    /// [`TraceRetention::parse`]. Errors name `trace_retention`.
    pub fn from_arg(value: &crate::pyjson::Json) -> Result<Option<TraceRetention>, crate::Error> {
        use crate::pyjson::Json;
        const FIELD: &str = "trace_retention";
        let spec = match value {
            Json::Null => return Ok(None),
            Json::Bool(false) => return Ok(Some(TraceRetention::KEEP_ALL)),
            Json::Int(n) => n.to_string(),
            Json::Str(s) | Json::BigInt(s) => s.clone(),
            other => {
                return Err(crate::Error::wrong_type(
                    FIELD,
                    "an int, a str such as \"1000,30d\", False or None",
                    other.type_name(),
                ))
            }
        };
        TraceRetention::parse(&spec)
            .map(Some)
            .map_err(|e| crate::Error::config(FIELD, e))
    }

    /// The retention from `OUTRIDER_TRACE_KEEP`, else the default (an unreadable value is an
    /// error naming the variable).
    pub fn from_env() -> Result<TraceRetention, String> {
        match std::env::var(TRACE_KEEP_ENV) {
            Ok(v) if !v.trim().is_empty() => TraceRetention::parse(&v),
            _ => Ok(TraceRetention::default()),
        }
    }

    /// Of `files` (name, last written), the names to delete at `now`: those past `max_age`, and
    /// those beyond the newest `max_files`. Files not named like an outrider trace never are.
    pub fn expired(&self, files: &[(String, SystemTime)], now: SystemTime) -> Vec<String> {
        let mut ours: Vec<&(String, SystemTime)> =
            files.iter().filter(|(n, _)| is_trace_name(n)).collect();
        // Newest first; equal times by name so the choice does not depend on readdir order.
        ours.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
        ours.into_iter()
            .enumerate()
            .filter(|(i, (_, written))| {
                let too_many = self.max_files.is_some_and(|max| *i >= max);
                let too_old = self.max_age.is_some_and(|age| {
                    now.duration_since(*written)
                        .is_ok_and(|elapsed| elapsed > age)
                });
                too_many || too_old
            })
            .map(|(_, (name, _))| name.clone())
            .collect()
    }
}

/// Whether `name` is a trace file outrider writes: `trace-child-<32 hex>.jsonl` or
/// `trace-main-<32 hex>.jsonl`.
pub(super) fn is_trace_name(name: &str) -> bool {
    let Some(rest) = name
        .strip_prefix("trace-child-")
        .or_else(|| name.strip_prefix("trace-main-"))
    else {
        return false;
    };
    let Some(hex) = rest.strip_suffix(".jsonl") else {
        return false;
    };
    hex.len() == 32 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: Duration = Duration::from_secs(86_400);

    fn name(i: usize) -> String {
        format!("trace-child-{i:032x}.jsonl")
    }

    #[test]
    fn specs_parse_into_counts_and_ages() {
        let cases = [
            ("1000", Some(1000), None),
            ("30d", None, Some(30 * DAY)),
            ("1000, 30d", Some(1000), Some(30 * DAY)),
            ("12h,5", Some(5), Some(Duration::from_secs(12 * 3600))),
            ("0", Some(0), None),
            ("off", None, None),
            ("OFF", None, None),
        ];
        for (spec, files, age) in cases {
            assert_eq!(
                TraceRetention::parse(spec),
                Ok(TraceRetention {
                    max_files: files,
                    max_age: age
                }),
                "{spec}"
            );
        }
    }

    #[test]
    fn bad_specs_say_what_was_wrong_and_what_is_expected() {
        let tail =
            "; expected a file count, an age such as 30d or 12h, both (\"1000,30d\"), or \"off\"";
        assert_eq!(
            TraceRetention::parse("-3").unwrap_err(),
            format!("trace retention \"-3\" has a negative part \"-3\"{tail}")
        );
        assert_eq!(
            TraceRetention::parse("5,6").unwrap_err(),
            format!("trace retention \"5,6\" gives a file count twice{tail}")
        );
        assert_eq!(
            TraceRetention::parse("1d,2d").unwrap_err(),
            format!("trace retention \"1d,2d\" gives an age twice{tail}")
        );
        assert_eq!(
            TraceRetention::parse("5,").unwrap_err(),
            format!("trace retention \"5,\" has an empty part{tail}")
        );
        let err = TraceRetention::parse("lots").unwrap_err();
        assert!(
            err.starts_with(
                "trace retention \"lots\" has a part \"lots\" that is neither a count nor an age ("
            ),
            "{err}"
        );
        assert!(err.ends_with(tail), "{err}");
    }

    #[test]
    fn a_callers_argument_is_none_false_a_count_or_a_spec() {
        use crate::pyjson::Json;
        assert_eq!(TraceRetention::from_arg(&Json::Null).unwrap(), None);
        assert_eq!(
            TraceRetention::from_arg(&Json::Bool(false)).unwrap(),
            Some(TraceRetention::KEEP_ALL)
        );
        assert_eq!(
            TraceRetention::from_arg(&Json::Int(7)).unwrap(),
            Some(TraceRetention {
                max_files: Some(7),
                max_age: None
            })
        );
        assert_eq!(
            TraceRetention::from_arg(&Json::Str("2h".into())).unwrap(),
            TraceRetention::parse("2h").ok()
        );
        let msg = |j: Json| TraceRetention::from_arg(&j).unwrap_err().to_string();
        assert_eq!(
            msg(Json::Bool(true)),
            "trace_retention: must be an int, a str such as \"1000,30d\", False or None, got bool"
        );
        assert_eq!(
            msg(Json::BigInt("99999999999999999999999".into())),
            "trace_retention: trace retention \"99999999999999999999999\" has a count \"99999999999999999999999\" that is too large; expected a file count, an age such as 30d or 12h, both (\"1000,30d\"), or \"off\""
        );
    }

    #[test]
    fn the_default_keeps_1000_files_for_30_days() {
        assert_eq!(
            TraceRetention::default(),
            TraceRetention::parse("1000,30d").unwrap()
        );
    }

    #[test]
    fn only_outrider_trace_names_are_candidates() {
        assert!(is_trace_name(&name(7)));
        assert!(is_trace_name(&format!("trace-main-{:032x}.jsonl", 9)));
        for other in [
            "notes.txt",
            "trace-child-1.jsonl",
            "parent.jsonl",
            &format!("trace-child-{:032X}.jsonl", 0xabc),
            &format!("trace-child-{:032x}.jsonl.bak", 1),
            &format!("x-trace-child-{:032x}.jsonl", 1),
        ] {
            assert!(!is_trace_name(other), "{other}");
        }
    }

    #[test]
    fn expired_files_are_the_oldest_beyond_the_count_and_those_past_the_age() {
        let now = SystemTime::UNIX_EPOCH + 1000 * DAY;
        // name(i) was written i days ago.
        let mut files: Vec<(String, SystemTime)> =
            (0..6).map(|i| (name(i), now - i as u32 * DAY)).collect();
        files.push(("notes.txt".into(), now - 900 * DAY));
        let count = TraceRetention {
            max_files: Some(4),
            max_age: None,
        };
        assert_eq!(count.expired(&files, now), vec![name(4), name(5)]);
        let age = TraceRetention {
            max_files: None,
            max_age: Some(2 * DAY + Duration::from_secs(1)),
        };
        assert_eq!(age.expired(&files, now), vec![name(3), name(4), name(5)]);
        let both = TraceRetention {
            max_files: Some(2),
            max_age: Some(4 * DAY + Duration::from_secs(1)),
        };
        assert_eq!(
            both.expired(&files, now),
            vec![name(2), name(3), name(4), name(5)]
        );
        assert_eq!(
            TraceRetention::KEEP_ALL.expired(&files, now),
            Vec::<String>::new()
        );
    }
}
