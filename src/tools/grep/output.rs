//! Grep's result: the envelope the model reads, cut to the limits.

use crate::tools::shown::{GrepMatch, Shown};
use std::collections::HashSet;
use std::time::Instant;

use serde_json::{json, Map, Value};

use crate::tools::envelope::{elapsed_ms, ToolResult};
use crate::tools::grep::args::{OutputMode, Request};
use crate::tools::grep::engine::EngineKind;
use crate::tools::grep::search::{FileHits, Found, HEAP_LIMIT};

/// Characters of one line kept in a result; longer lines are cut and marked.
pub(super) const MAX_LINE_CHARS: usize = 2000;
/// Files named at most in a result's list of files searched only in part.
const MAX_NAMED_FILES: usize = 20;
/// The marker that ends a cut line (1 987 kept characters + this = 2 000).
pub(super) const LINE_TRUNCATION_MARKER: &str = "… [truncated]";
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

/// Matches per file shown before any file gets more (when not all can be shown).
pub(super) const PER_FILE: usize = 3;

/// Whether a matched line looks like a definition (of what the pattern named).
fn is_definition(text: &str) -> bool {
    static DEF: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    DEF.get_or_init(|| {
        regex::Regex::new(
            r"^\s*(?:(?:export|pub(?:\([^)]*\))?|public|private|protected|internal|static|async|abstract|final|default|declare|unsafe|extern|override|open|data|sealed|inline)\s+)*(?:def|class|fn|func|function|struct|enum|trait|interface|type|impl|module|mod|object|protocol|record|const|let|var|val|macro_rules!)\b",
        )
        .expect("definition regex")
    })
    .is_match(text)
}

/// Which matches (file index, hit index) are shown when at most `limit` can be: all when they
/// fit; else definitions first, then up to [`PER_FILE`] per file, then the rest, each pass in
/// path order.
fn chosen(files: &[FileHits], limit: usize) -> HashSet<(usize, usize)> {
    let all = files
        .iter()
        .enumerate()
        .flat_map(|(fi, f)| (0..f.hits.len()).map(move |hi| (fi, hi)));
    let mut shown: HashSet<(usize, usize)> = HashSet::new();
    if files.iter().map(|f| f.hits.len()).sum::<usize>() <= limit {
        shown.extend(all);
        return shown;
    }
    let mut per_file = vec![0usize; files.len()];
    let take = |fi: usize, hi: usize, shown: &mut HashSet<(usize, usize)>, per: &mut [usize]| {
        if shown.len() < limit && shown.insert((fi, hi)) {
            per[fi] += 1;
        }
    };
    for (fi, hi) in all.clone() {
        if is_definition(&files[fi].hits[hi].text) {
            take(fi, hi, &mut shown, &mut per_file);
        }
    }
    for (fi, hi) in all.clone() {
        if per_file[fi] < PER_FILE {
            take(fi, hi, &mut shown, &mut per_file);
        }
    }
    for (fi, hi) in all {
        take(fi, hi, &mut shown, &mut per_file);
    }
    shown
}

/// What one output mode put in `data`: entries returned, matched lines, the summary sentence.
struct Listed {
    returned: usize,
    matched_lines: u64,
    summary: String,
    /// The matches or files listed, as values.
    shown: Shown,
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
    let listed = match req.mode {
        OutputMode::Content => content(&files, req, &rel_root, &mut data, &mut reasons),
        OutputMode::FilesWithMatches => {
            files_with_matches(&files, req, &rel_root, &mut data, &mut reasons)
        }
        OutputMode::Count => counts(&files, req, &rel_root, &mut data, &mut reasons),
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
    let mut text = listed.summary;
    let skipped_long_lines = long_line_files.len();
    skipped_notes(
        &mut data,
        &mut text,
        &long_line_files,
        unreadable,
        refused_ignore_files,
    );
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
        .with_shown(listed.shown)
        .with_stat("matched_lines", listed.matched_lines)
        .with_stat("searched_files", searched);
    let result = if req.mode == OutputMode::Content {
        result
    } else {
        result.with_stat("matched_files", listed.returned)
    };
    result.with_path_resolved(rel_root)
}

/// `content` mode: the chosen matching lines (each cut to [`MAX_LINE_CHARS`], with the context
/// lines asked for) under `matches`, and how many were left out.
fn content(
    files: &[FileHits],
    req: &Request,
    rel_root: &str,
    data: &mut Map<String, Value>,
    reasons: &mut Vec<&'static str>,
) -> Listed {
    let total: usize = files.iter().map(|f| f.hits.len()).sum();
    let pool_cut = total >= req.pool() || files.iter().any(|f| f.more);
    let more = total > req.limit || pool_cut;
    let shown = chosen(files, req.limit);
    let mut matches = Vec::new();
    let mut typed = Vec::new();
    for (fi, f) in files.iter().enumerate() {
        for (hi, h) in f.hits.iter().enumerate() {
            if !shown.contains(&(fi, hi)) {
                continue;
            }
            let mut m = Map::new();
            let text = cut_line(h.text.clone(), reasons);
            m.insert("file".into(), Value::from(f.rel.clone()));
            m.insert("line".into(), Value::from(h.line));
            m.insert("text".into(), Value::from(text.clone()));
            let mut before = Vec::new();
            if req.before > 0 {
                before = h
                    .before
                    .iter()
                    .map(|t| cut_line(t.clone(), reasons))
                    .collect();
                m.insert("before".into(), json!(before));
            }
            let mut after = Vec::new();
            if req.after > 0 {
                after = h
                    .after
                    .iter()
                    .map(|t| cut_line(t.clone(), reasons))
                    .collect();
                m.insert("after".into(), json!(after));
            }
            matches.push(Value::Object(m));
            typed.push(GrepMatch {
                file: f.rel.clone(),
                line: h.line,
                text,
                before,
                after,
            });
        }
    }
    if more {
        reasons.insert(0, "match_limit");
    }
    let n = matches.len();
    data.insert("matches".into(), Value::Array(matches));
    let mut summary = format!("Found {n} matching line(s) in '{rel_root}'.");
    if more {
        let left = total.saturating_sub(n);
        let plus = if pool_cut { " or more" } else { "" };
        data.insert("omitted".into(), Value::from(left));
        summary.push_str(&format!(
            " {left}{plus} more not shown: definitions first, then at most {PER_FILE} per file, then the rest in path order."
        ));
    }
    Listed {
        shown: Shown::Matches(typed),
        returned: n,
        matched_lines: n as u64,
        summary,
    }
}

/// `files_with_matches` mode: the first `limit` files with a match, under `files`.
fn files_with_matches(
    files: &[FileHits],
    req: &Request,
    rel_root: &str,
    data: &mut Map<String, Value>,
    reasons: &mut Vec<&'static str>,
) -> Listed {
    let names: Vec<Value> = files
        .iter()
        .take(req.limit)
        .map(|f| Value::from(f.rel.clone()))
        .collect();
    if files.len() > req.limit {
        reasons.push("match_limit");
    }
    let n = names.len();
    let paths = names
        .iter()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    data.insert("files".into(), Value::Array(names));
    Listed {
        shown: Shown::Paths(paths),
        returned: n,
        matched_lines: n as u64,
        summary: format!("Found {n} file(s) with matches in '{rel_root}'."),
    }
}

/// `count` mode: the matching lines of the first `limit` files, under `counts`.
fn counts(
    files: &[FileHits],
    req: &Request,
    rel_root: &str,
    data: &mut Map<String, Value>,
    reasons: &mut Vec<&'static str>,
) -> Listed {
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
    Listed {
        shown: Shown::Nothing,
        returned: n,
        matched_lines: lines,
        summary: format!("Found {lines} matching line(s) in {n} file(s) in '{rel_root}'."),
    }
}

/// What the search skipped, in `data` and in `text`: files searched only up to an over-long
/// line, unreadable entries, ignore files not read. Each only when non-zero, so ordinary results
/// stay as they were; the text tells the model too.
fn skipped_notes(
    data: &mut Map<String, Value>,
    text: &mut String,
    long_line_files: &[(String, u64)],
    unreadable: u64,
    refused_ignore_files: u64,
) {
    // A file searched only in part is an incomplete answer (the result is `partial`, the files
    // named), so a "0 matches" over a one-line 64 MiB file is not taken for "not there".
    let skipped_long_lines = long_line_files.len();
    if skipped_long_lines > 0 {
        data.insert("skipped_long_lines".into(), Value::from(skipped_long_lines));
        let named = &long_line_files[..skipped_long_lines.min(MAX_NAMED_FILES)];
        let files: Vec<&String> = named.iter().map(|(f, _)| f).collect();
        data.insert("long_line_files".into(), json!(files));
        let lines: Vec<Value> = named
            .iter()
            .map(|(f, line)| json!({"file": f, "line": line}))
            .collect();
        data.insert("long_lines".into(), Value::from(lines));
        let mut shown = named
            .iter()
            .map(|(f, line)| format!("'{f}' line {line}"))
            .collect::<Vec<_>>()
            .join(", ");
        if skipped_long_lines > named.len() {
            shown.push_str(&format!(" and {} more", skipped_long_lines - named.len()));
        }
        text.push_str(&format!(
            " {skipped_long_lines} file(s) were searched only up to a line longer than {} MiB ({shown}); that line and the rest of the file were not searched, so matches there are not listed.",
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
}
