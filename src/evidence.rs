//! Evidence check: is each `path:line` / `path:start-end` item grounded in a real file under the
//! root, with the lines in range? The runner sends ungrounded evidence back to the child.
//!
//! A hostile tree can cite a huge (or sparse) file many times over, so a check reads each file
//! once, stops as soon as the highest cited line is seen, reads at most
//! [`EVIDENCE_BYTE_BUDGET`] bytes in all, and stops at a deadline. An item it could not finish
//! is not grounded, with reason `timeout` or `too_large`.

use std::collections::HashMap;
use std::io::Read;
use std::sync::OnceLock;
use std::time::Instant;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::tools::workspace::{PathError, Workspace};

/// The stable names of [`EvidenceCheck::reason`].
pub(crate) const EVIDENCE_REASONS: [&str; 13] = [
    "format",
    "invalid_range",
    "absolute",
    "outside",
    "invalid_path",
    "not_found",
    "directory",
    "not_regular",
    "io",
    "line_out_of_range",
    "timeout",
    "too_large",
    "unobserved",
];

/// The verdict on one evidence item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EvidenceCheck {
    /// The item as given.
    pub evidence: String,
    /// The path part, when the item could be parsed.
    pub path: Option<String>,
    /// First line cited.
    pub start_line: Option<u64>,
    /// Last line cited (equal to `start_line` for a single line).
    pub end_line: Option<u64>,
    /// The file's line count, when the check read the whole file (it stops reading once the
    /// cited lines are seen).
    pub total_lines: Option<u64>,
    /// True when the file exists under the root and the lines are in range.
    pub grounded: bool,
    /// Why not, as a stable name: `format`, `invalid_range`, `absolute`, `outside`,
    /// `invalid_path`, `not_found`, `directory`, `not_regular`, `io`, `line_out_of_range`, or,
    /// for an item that could not be checked, `timeout` (the deadline passed) or `too_large`
    /// (the byte budget ran out); `unobserved` when the lines exist but the child never saw
    /// them in its run (no Read window or Grep match showed them).
    pub reason: Option<&'static str>,
    /// A sentence for the model or the user.
    pub message: String,
}

/// [`EvidenceCheck`] as it is read back (its reason checked against [`EVIDENCE_REASONS`]).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CheckData {
    evidence: String,
    path: Option<String>,
    start_line: Option<u64>,
    end_line: Option<u64>,
    total_lines: Option<u64>,
    grounded: bool,
    reason: Option<String>,
    message: String,
}

impl<'de> Deserialize<'de> for EvidenceCheck {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let c = CheckData::deserialize(d)?;
        let reason = match c.reason {
            None => None,
            Some(name) => Some(*EVIDENCE_REASONS.iter().find(|r| **r == name).ok_or_else(
                || {
                    D::Error::custom(format!(
                        "unknown evidence reason {name:?}; expected one of {}",
                        EVIDENCE_REASONS.join(", ")
                    ))
                },
            )?),
        };
        Ok(EvidenceCheck {
            evidence: c.evidence,
            path: c.path,
            start_line: c.start_line,
            end_line: c.end_line,
            total_lines: c.total_lines,
            grounded: c.grounded,
            reason,
            message: c.message,
        })
    }
}

fn evidence_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"^(.+):(\d+)(?:-(\d+))?$").expect("valid evidence regex"))
}

/// `path:line` or `path:start-end` followed by a note: whitespace or a colon (and blanks), then
/// text (a small model copies a hint or Grep line whole: `src/a.py:14  class A`,
/// `src/a.py:14:class A`, `config.go:404-411: // For backward ...`).
fn noted_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^([^\s:][^:\s]*:\d+(?:-\d+)?)(?:\s+|:\s*)(?:\S.*)?$")
            .expect("valid noted-evidence regex")
    })
}

/// A citation of lines `start..=end` of `path`: `path:start`, or `path:start-end` for more than
/// one line (the form [`parse_citation`] reads).
pub(crate) fn citation(path: &str, start: u64, end: u64) -> String {
    if end > start {
        format!("{path}:{start}-{end}")
    } else {
        format!("{path}:{start}")
    }
}

/// An evidence item's `(path, start, end)` when it is a well-formed citation
/// (`path:line` or `path:start-end`, lines from 1, end not before start).
pub(crate) fn parse_citation(item: &str) -> Option<(String, u64, u64)> {
    let caps = evidence_re().captures(item.trim())?;
    let start = caps[2].parse::<u64>().ok()?;
    let end = match caps.get(3) {
        Some(m) => m.as_str().parse::<u64>().ok()?,
        None => start,
    };
    (start >= 1 && end >= start).then(|| (caps[1].trim().to_string(), start, end))
}

/// The citation of an evidence item written with a note after it (`src/a.py:14  class A` gives
/// `src/a.py:14`); None when the item is a bare citation or no citation at all.
pub(crate) fn citation_of_noted(item: &str) -> Option<String> {
    let trimmed = item.trim();
    if evidence_re().is_match(trimmed) {
        return None;
    }
    let caps = noted_re().captures(trimmed)?;
    Some(caps[1].to_string())
}

/// The most bytes one check reads over all the files it looks at.
pub(crate) const EVIDENCE_BYTE_BUDGET: u64 = 64 * 1024 * 1024;

/// How far scanning a cited file got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stopped {
    /// At the end of the file: the count is exact.
    End,
    /// At the highest line cited: the file has at least that many.
    Enough,
    /// At the deadline.
    Timeout,
    /// When the byte budget ran out, after reading `read` bytes of this file.
    TooLarge { read: u64 },
}

/// What scanning a cited file found: the lines begun so far and why it stopped, or why the file
/// cannot be read.
type Scan = Result<(u64, Stopped), PathError>;

/// Check every item with no deadline (the byte budget still applies).
pub fn check_evidence(ws: &Workspace, items: &[String]) -> Vec<EvidenceCheck> {
    check_evidence_until(ws, items, None)
}

/// Check every item, giving up on what is left at `deadline`; items citing the same file read
/// it once, up to the highest line any of them cites.
pub(crate) fn check_evidence_until(
    ws: &Workspace,
    items: &[String],
    deadline: Option<Instant>,
) -> Vec<EvidenceCheck> {
    let parsed: Vec<Parsed> = items.iter().map(|i| parse_item(i)).collect();
    // Files in the order first cited, each with the highest line any item cites in it.
    let mut wanted: Vec<(String, u64)> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for cited in parsed.iter().filter_map(|p| match p {
        Parsed::Cited(c) => Some(c),
        Parsed::Done(_) => None,
    }) {
        match index.get(cited.path.as_str()) {
            Some(&i) => wanted[i].1 = wanted[i].1.max(cited.end),
            None => {
                index.insert(&cited.path, wanted.len());
                wanted.push((cited.path.clone(), cited.end));
            }
        }
    }
    let mut budget = EVIDENCE_BYTE_BUDGET;
    let scans: HashMap<String, Scan> = wanted
        .into_iter()
        .map(|(path, end)| {
            let scan = scan_lines(ws, &path, end, &mut budget, deadline);
            (path, scan)
        })
        .collect();
    parsed
        .into_iter()
        .map(|p| match p {
            Parsed::Cited(cited) => {
                let scan = scans
                    .get(&cited.path)
                    .cloned()
                    .unwrap_or(Ok((0, Stopped::Timeout)));
                judge(cited, &scan)
            }
            Parsed::Done(check) => check,
        })
        .collect()
}

/// An item that parsed: the check so far, and the file and last line it cites.
struct Cited {
    check: EvidenceCheck,
    path: String,
    start: u64,
    end: u64,
}

/// An item parsed: a citation to look up, or a malformed item's final (ungrounded) check.
enum Parsed {
    Cited(Cited),
    Done(EvidenceCheck),
}

/// Marks each grounded check whose lines the child did not see (`saw(path, start, end)` is
/// false) as not grounded, with reason `unobserved`.
pub(crate) fn require_observed(checks: &mut [EvidenceCheck], saw: impl Fn(&str, u64, u64) -> bool) {
    for check in checks.iter_mut().filter(|c| c.grounded) {
        let (Some(path), Some(start), Some(end)) = (&check.path, check.start_line, check.end_line)
        else {
            continue;
        };
        if saw(path, start, end) {
            continue;
        }
        let lines = if start == end {
            format!("line {start}")
        } else {
            format!("all of lines {start}-{end}")
        };
        check.grounded = false;
        check.reason = Some("unobserved");
        check.message = format!(
            "Evidence {:?} exists, but you did not see {lines} of '{path}' in this run (no Read window or Grep match showed it): Read or Grep it first, or cite only lines you saw.",
            check.evidence
        );
    }
}

/// Parse an item.
fn parse_item(item: &str) -> Parsed {
    let mut check = EvidenceCheck {
        evidence: item.to_string(),
        path: None,
        start_line: None,
        end_line: None,
        total_lines: None,
        grounded: false,
        reason: None,
        message: String::new(),
    };
    let trimmed = item.trim();
    let Some(caps) = evidence_re().captures(trimmed) else {
        check.reason = Some("format");
        check.message =
            format!("Evidence {item:?} is not 'relative/path:line' or 'relative/path:start-end'.");
        return Parsed::Done(check);
    };
    let path = caps[1].trim().to_string();
    let start = caps[2].parse::<u64>().ok();
    let end = match caps.get(3) {
        Some(m) => m.as_str().parse::<u64>().ok(),
        None => start,
    };
    check.path = Some(path.clone());
    check.start_line = start;
    check.end_line = end;
    let (Some(start), Some(end)) = (start, end) else {
        check.reason = Some("invalid_range");
        check.message = format!("Evidence {item:?} has a line number that is too large.");
        return Parsed::Done(check);
    };
    if start == 0 || end < start {
        check.reason = Some("invalid_range");
        check.message = format!(
            "Evidence {item:?} has an invalid line range: lines start at 1 and a range is start-end with end >= start."
        );
        return Parsed::Done(check);
    }
    Parsed::Cited(Cited {
        check,
        path,
        start,
        end,
    })
}

/// The verdict on a parsed item, given what scanning its file found.
fn judge(cited: Cited, scan: &Scan) -> EvidenceCheck {
    let Cited {
        mut check,
        path,
        start,
        end,
    } = cited;
    let item = &check.evidence;
    match *scan {
        Err(ref e) => {
            check.reason = Some(e.kind());
            check.message =
                format!("Evidence {item:?} does not point at a readable file under the root: {e}");
        }
        Ok((lines, Stopped::End)) => {
            check.total_lines = Some(lines);
            if end > lines {
                check.reason = Some("line_out_of_range");
                check.message =
                    format!("Evidence {item:?} cites line {end}, but '{path}' has {lines} lines.");
            } else {
                check.grounded = true;
                check.message = format!("Lines {start}-{end} of '{path}' ({lines} lines) exist.");
            }
        }
        Ok((lines, _)) if end <= lines => {
            check.grounded = true;
            check.message = format!("Lines {start}-{end} of '{path}' exist.");
        }
        Ok((lines, Stopped::TooLarge { read })) => {
            check.reason = Some("too_large");
            check.message = format!(
                "Evidence {item:?} could not be checked: the check may read {} MiB in all, and after {read} bytes of '{path}' it had seen {lines} lines, not {end}.",
                EVIDENCE_BYTE_BUDGET / (1024 * 1024)
            );
        }
        Ok((lines, _)) => {
            check.reason = Some("timeout");
            check.message = format!(
                "Evidence {item:?} could not be checked in time: the run's deadline passed after {lines} lines of '{path}', before line {end}."
            );
        }
    }
    check
}

/// Count the lines of `path` until line `want` has begun or the file ends, spending at most
/// `budget` bytes and stopping at `deadline`.
fn scan_lines(
    ws: &Workspace,
    path: &str,
    want: u64,
    budget: &mut u64,
    deadline: Option<Instant>,
) -> Scan {
    let past = |d: Option<Instant>| d.is_some_and(|d| Instant::now() >= d);
    if past(deadline) {
        return Ok((0, Stopped::Timeout));
    }
    let (mut file, size) = ws
        .resolve_file(path)
        .and_then(|r| ws.open(&r))
        .map(|(file, meta)| (file, meta.len()))?;
    let mut buf = vec![0u8; 64 * 1024];
    let (mut newlines, mut read, mut last) = (0u64, 0u64, b'\n');
    // Lines begun so far: a last line without `\n` counts, as Read and Grep count it.
    let begun = |newlines: u64, last: u8| newlines + u64::from(last != b'\n');
    loop {
        if *budget == 0 {
            return Ok((begun(newlines, last), Stopped::TooLarge { read }));
        }
        let room = buf
            .len()
            .min(usize::try_from(*budget).unwrap_or(usize::MAX));
        let n = file
            .read(&mut buf[..room])
            .map_err(|e| PathError::Io(e.to_string()))?;
        if n == 0 {
            return Ok((begun(newlines, last), Stopped::End));
        }
        *budget -= n as u64;
        read += n as u64;
        newlines += memchr::memchr_iter(b'\n', &buf[..n]).count() as u64;
        last = buf[n - 1];
        // A file read to its end gets its exact count (so a small one always does).
        if begun(newlines, last) >= want && read < size {
            return Ok((begun(newlines, last), Stopped::Enough));
        }
        if past(deadline) {
            return Ok((begun(newlines, last), Stopped::Timeout));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_citation_with_a_note_gives_the_citation() {
        for (item, want) in [
            ("src/a.py:14  class A", Some("src/a.py:14")),
            ("src/a.py:14:class A:", Some("src/a.py:14")),
            ("src/a.py:14-20 the loader", Some("src/a.py:14-20")),
            ("src/a.py:14:", Some("src/a.py:14")),
            (
                "config.go:404-411: // For backward compatibility",
                Some("config.go:404-411"),
            ),
            ("src/a.py:14", None),
            ("src/a.py:14-20", None),
            ("src/a.py", None),
            ("the loader in src/a.py:14", None),
            ("the loader in src/a.py:14 here", None),
            ("handler:next_handler", None),
        ] {
            assert_eq!(citation_of_noted(item).as_deref(), want, "{item:?}");
        }
    }

    #[test]
    fn grounded_and_not() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/a.py"), "1\n2\n3").unwrap();
        std::fs::write(dir.path().join("empty.txt"), "").unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        let items: Vec<String> = [
            "src/a.py:3",
            "src/a.py:1-3",
            "src/a.py:4",
            "src/a.py:3-2",
            "src/a.py:0",
            "src/a.py",
            "missing.py:1",
            "../x.py:1",
            "/etc/passwd:1",
            "src:1",
            "empty.txt:1",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let reasons: Vec<_> = check_evidence(&ws, &items)
            .into_iter()
            .map(|c| c.reason)
            .collect();
        assert_eq!(
            reasons,
            vec![
                None,
                None,
                Some("line_out_of_range"),
                Some("invalid_range"),
                Some("invalid_range"),
                Some("format"),
                Some("not_found"),
                Some("outside"),
                Some("absolute"),
                Some("directory"),
                Some("line_out_of_range"),
            ]
        );
    }

    /// 2 GiB of zeros that take no disk: one line with no newline.
    fn sparse(dir: &std::path::Path) {
        let file = std::fs::File::create(dir.join("big.bin")).unwrap();
        file.set_len(2 << 30).unwrap();
        std::fs::write(dir.join("small.txt"), "a\nb\n").unwrap();
    }

    fn items() -> Vec<String> {
        let mut items: Vec<String> = (0..38).map(|i| format!("big.bin:{}", 2 + i)).collect();
        items.push("big.bin:1".into());
        items.push("small.txt:2".into());
        items
    }

    #[test]
    fn a_huge_sparse_file_cited_forty_times_is_read_once_within_the_byte_budget() {
        let dir = tempfile::tempdir().unwrap();
        sparse(dir.path());
        let ws = Workspace::new(dir.path()).unwrap();
        // The work is bounded by the byte budget each message names, not timed (a time
        // assertion fails on a loaded machine).
        let checks = check_evidence(&ws, &items());
        assert_eq!(
            checks[0],
            EvidenceCheck {
                evidence: "big.bin:2".into(),
                path: Some("big.bin".into()),
                start_line: Some(2),
                end_line: Some(2),
                total_lines: None,
                grounded: false,
                reason: Some("too_large"),
                message: format!(
                    "Evidence \"big.bin:2\" could not be checked: the check may read 64 MiB in all, and after {EVIDENCE_BYTE_BUDGET} bytes of 'big.bin' it had seen 1 lines, not 2."
                ),
            }
        );
        let reasons: Vec<_> = checks.iter().map(|c| c.reason).collect();
        let mut expected = vec![Some("too_large"); 38];
        // Line 1 was seen before the budget ran out; the small file comes after the budget is
        // spent, so it cannot be read either.
        expected.extend([None, Some("too_large")]);
        assert_eq!(reasons, expected);
        assert_eq!(checks[38].message, "Lines 1-1 of 'big.bin' exist.");
    }

    #[test]
    fn a_check_stops_at_its_deadline_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        sparse(dir.path());
        let ws = Workspace::new(dir.path()).unwrap();
        let deadline = Instant::now() + std::time::Duration::from_millis(20);
        let checks = check_evidence_until(&ws, &items(), Some(deadline));
        let late = Instant::now().saturating_duration_since(deadline);
        assert!(late < std::time::Duration::from_millis(500), "{late:?}");
        for c in &checks[..38] {
            assert!(
                !c.grounded && matches!(c.reason, Some("timeout" | "too_large")),
                "{c:?}"
            );
        }

        let passed = Instant::now();
        let checks = check_evidence_until(&ws, &items(), Some(passed));
        assert_eq!(
            checks[39],
            EvidenceCheck {
                evidence: "small.txt:2".into(),
                path: Some("small.txt".into()),
                start_line: Some(2),
                end_line: Some(2),
                total_lines: None,
                grounded: false,
                reason: Some("timeout"),
                message: "Evidence \"small.txt:2\" could not be checked in time: the run's deadline passed after 0 lines of 'small.txt', before line 2.".into(),
            }
        );
        assert!(checks.iter().all(|c| c.reason == Some("timeout")));
    }

    #[test]
    fn a_long_file_is_read_only_up_to_the_line_cited() {
        let dir = tempfile::tempdir().unwrap();
        let long: String = (0..100_000).map(|i| format!("line {i}\n")).collect();
        std::fs::write(dir.path().join("long.txt"), &long).unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        let items = vec!["long.txt:5".to_string(), "long.txt:100000".to_string()];
        let checks = check_evidence(&ws, &items[..1]);
        assert_eq!(
            (
                checks[0].grounded,
                checks[0].total_lines,
                checks[0].message.as_str()
            ),
            (true, None, "Lines 5-5 of 'long.txt' exist.")
        );
        // Cited together, the file is read to the higher line once, here to its end.
        let checks = check_evidence(&ws, &items);
        let totals: Vec<_> = checks.iter().map(|c| (c.grounded, c.total_lines)).collect();
        assert_eq!(totals, vec![(true, Some(100_000)); 2]);
    }
}
