//! Grep's result: the envelope the model reads, cut to the limits.

use std::time::Instant;

use serde_json::{json, Map, Value};

use crate::tools::envelope::{elapsed_ms, ToolResult};
use crate::tools::grep::args::{OutputMode, Request};
use crate::tools::grep::engine::EngineKind;
use crate::tools::grep::search::{FileHits, Found, HEAP_LIMIT};

/// Characters of one line kept in a result; longer lines are cut and marked.
pub const MAX_LINE_CHARS: usize = 2000;
/// Files named at most in a result's list of files searched only in part.
const MAX_NAMED_FILES: usize = 20;
/// The marker that ends a cut line (1 987 kept characters + this = 2 000).
pub const LINE_TRUNCATION_MARKER: &str = "… [truncated]";
fn cut_line(text: String, reasons: &mut Vec<&'static str>) -> String {
    if text.chars().count() <= MAX_LINE_CHARS {
        return text;
    }
    if !reasons.contains(&"line_length") {
        reasons.push("line_length");
    }
    let keep = MAX_LINE_CHARS - LINE_TRUNCATION_MARKER.chars().count();
    let mut out: String = text.chars().take(keep).collect();
    out.push_str(LINE_TRUNCATION_MARKER);
    out
}

/// The result envelope: matches, files or counts cut to the limit, with truncation reasons.
pub(crate) fn finish(
    params: &Value,
    req: &Request,
    found: Found,
    rel_root: String,
    started: Instant,
    engine: EngineKind,
) -> ToolResult {
    let Found {
        files,
        searched,
        unreadable,
        long_line_files,
        refused_ignore_files,
    } = found;
    let mut reasons: Vec<&'static str> = Vec::new();
    let mut data = Map::new();
    let (returned, matched_lines, summary) = match req.mode {
        OutputMode::Content => {
            let total: usize = files.iter().map(|f| f.hits.len()).sum();
            let more = total > req.limit || files.iter().any(|f| f.more);
            let mut matches = Vec::new();
            for f in &files {
                for h in &f.hits {
                    if matches.len() == req.limit {
                        break;
                    }
                    let mut m = Map::new();
                    m.insert("file".into(), Value::from(f.rel.clone()));
                    m.insert("line".into(), Value::from(h.line));
                    m.insert(
                        "text".into(),
                        Value::from(cut_line(h.text.clone(), &mut reasons)),
                    );
                    if req.before > 0 {
                        let b: Vec<String> = h
                            .before
                            .iter()
                            .map(|t| cut_line(t.clone(), &mut reasons))
                            .collect();
                        m.insert("before".into(), json!(b));
                    }
                    if req.after > 0 {
                        let a: Vec<String> = h
                            .after
                            .iter()
                            .map(|t| cut_line(t.clone(), &mut reasons))
                            .collect();
                        m.insert("after".into(), json!(a));
                    }
                    matches.push(Value::Object(m));
                }
            }
            if more {
                reasons.insert(0, "match_limit");
            }
            let n = matches.len();
            data.insert("matches".into(), Value::Array(matches));
            (
                n,
                n as u64,
                format!("Found {n} matching line(s) in '{rel_root}'."),
            )
        }
        OutputMode::FilesWithMatches => {
            let names: Vec<Value> = files
                .iter()
                .take(req.limit)
                .map(|f| Value::from(f.rel.clone()))
                .collect();
            if files.len() > req.limit {
                reasons.push("match_limit");
            }
            let n = names.len();
            data.insert("files".into(), Value::Array(names));
            (
                n,
                n as u64,
                format!("Found {n} file(s) with matches in '{rel_root}'."),
            )
        }
        OutputMode::Count => {
            let kept: Vec<&FileHits> = files.iter().take(req.limit).collect();
            let lines: u64 = kept.iter().map(|f| f.count).sum();
            let counts: Vec<Value> = kept
                .iter()
                .map(|f| json!({"file": f.rel, "count": f.count}))
                .collect();
            if files.len() > req.limit {
                reasons.push("match_limit");
            }
            let n = counts.len();
            data.insert("counts".into(), Value::Array(counts));
            (
                n,
                lines,
                format!("Found {lines} matching line(s) in {n} file(s) in '{rel_root}'."),
            )
        }
    };
    let truncated = !reasons.is_empty();
    data.insert("truncated".into(), Value::from(truncated));
    if truncated {
        data.insert("truncation_reasons".into(), json!(reasons));
    }
    if engine == EngineKind::Fancy {
        // Only the fallback is named, so results from the plain engine stay as they were.
        data.insert("engine".into(), Value::from(engine.as_str()));
    }
    let mut text = summary;
    // Only when non-zero, so ordinary results stay as they were; the text tells the model too.
    // A file searched only in part is an incomplete answer: `partial`, the files named, so a
    // "0 matches" over a one-line 64 MiB file is not taken for "not there".
    let skipped_long_lines = long_line_files.len();
    if skipped_long_lines > 0 {
        data.insert("skipped_long_lines".into(), Value::from(skipped_long_lines));
        let named: Vec<&String> = long_line_files.iter().take(MAX_NAMED_FILES).collect();
        data.insert("long_line_files".into(), json!(named));
        let mut shown = named
            .iter()
            .map(|f| format!("'{f}'"))
            .collect::<Vec<_>>()
            .join(", ");
        if skipped_long_lines > named.len() {
            shown.push_str(&format!(" and {} more", skipped_long_lines - named.len()));
        }
        text.push_str(&format!(
            " {skipped_long_lines} file(s) were searched only up to a line longer than {} MiB ({shown}); matches from that line on were not looked for (the rest of the file was skipped).",
            HEAP_LIMIT >> 20
        ));
    }
    if unreadable > 0 {
        data.insert("unreadable".into(), Value::from(unreadable));
        text.push_str(&format!(
            " {unreadable} file(s) or director(ies) could not be read and were skipped."
        ));
    }
    if refused_ignore_files > 0 {
        data.insert(
            "refused_ignore_files".into(),
            Value::from(refused_ignore_files),
        );
        text.push_str(&format!(
            " {refused_ignore_files} ignore file(s) were not read (a symlink, a special file or over 1 MiB); their rules were not applied."
        ));
    }
    if truncated {
        text.push_str(
            " Results were truncated; narrow the path, glob, pattern, or matching lines.",
        );
    }
    let time_ms = elapsed_ms(started);
    let result = if truncated || skipped_long_lines > 0 {
        ToolResult::partial(params, data, text, time_ms)
    } else {
        ToolResult::success(params, data, text, time_ms)
    };
    let result = result
        .with_stat("matched_lines", matched_lines)
        .with_stat("searched_files", searched);
    let result = if req.mode == OutputMode::Content {
        result
    } else {
        result.with_stat("matched_files", returned)
    };
    result.with_path_resolved(rel_root)
}
