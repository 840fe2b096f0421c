//! Evidence check: is each `path:line` / `path:start-end` item grounded in a real file under the
//! root, with the lines in range? The runner sends ungrounded evidence back to the child.

use std::collections::HashMap;
use std::io::Read;
use std::sync::OnceLock;

use regex::Regex;
use serde::Serialize;

use crate::tools::workspace::{PathError, Workspace};

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
    /// The file's line count, when it could be read.
    pub total_lines: Option<u64>,
    /// True when the file exists under the root and the lines are in range.
    pub grounded: bool,
    /// Why not, as a stable name: `format`, `invalid_range`, `absolute`, `outside`,
    /// `invalid_path`, `not_found`, `directory`, `not_regular`, `io`, `line_out_of_range`.
    pub reason: Option<&'static str>,
    /// A sentence for the model or the user.
    pub message: String,
}

fn evidence_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"^(.+):(\d+)(?:-(\d+))?$").expect("valid evidence regex"))
}

/// Check every item; items citing the same file read it once.
pub fn check_evidence(ws: &Workspace, items: &[String]) -> Vec<EvidenceCheck> {
    let mut line_counts: HashMap<String, Result<u64, PathError>> = HashMap::new();
    items
        .iter()
        .map(|item| check_one(ws, item, &mut line_counts))
        .collect()
}

fn check_one(
    ws: &Workspace,
    item: &str,
    cache: &mut HashMap<String, Result<u64, PathError>>,
) -> EvidenceCheck {
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
        return check;
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
        return check;
    };
    if start == 0 || end < start {
        check.reason = Some("invalid_range");
        check.message = format!(
            "Evidence {item:?} has an invalid line range: lines start at 1 and a range is start-end with end >= start."
        );
        return check;
    }
    let total = cache
        .entry(path.clone())
        .or_insert_with(|| count_lines(ws, &path))
        .clone();
    match total {
        Err(e) => {
            check.reason = Some(e.kind());
            check.message =
                format!("Evidence {item:?} does not point at a readable file under the root: {e}");
        }
        Ok(total) => {
            check.total_lines = Some(total);
            if end > total {
                check.reason = Some("line_out_of_range");
                check.message =
                    format!("Evidence {item:?} cites line {end}, but '{path}' has {total} lines.");
            } else {
                check.grounded = true;
                check.message = format!("Lines {start}-{end} of '{path}' ({total} lines) exist.");
            }
        }
    }
    check
}

/// Lines as Read and Grep count them: split on `\n` only; a last line without `\n` counts.
pub fn count_lines(ws: &Workspace, path: &str) -> Result<u64, PathError> {
    let resolved = ws.resolve_file(path)?;
    let (mut file, _) = ws.open(&resolved)?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut lines = 0u64;
    let mut last = b'\n';
    loop {
        let n = file
            .read(&mut buf)
            .map_err(|e| PathError::Io(e.to_string()))?;
        if n == 0 {
            break;
        }
        lines += memchr::memchr_iter(b'\n', &buf[..n]).count() as u64;
        last = buf[n - 1];
    }
    if last != b'\n' {
        lines += 1;
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
