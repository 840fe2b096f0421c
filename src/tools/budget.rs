//! Output budgets: a tool result too large for the model's context is replaced by its head.
//!
//! One result whose serialised JSON is over [`MAX_TOOL_RESULT_BYTES`], or the largest results of
//! a batch over [`MAX_TOOL_BATCH_BYTES`] until the batch fits, become a stub with
//! `data {truncated: true, truncation {...}, preview}`: the preview is the head of the envelope's
//! JSON (with `\n` escapes shown as line breaks, so a Read shows real lines), as many whole lines
//! as fit in [`PREVIEW_BYTES`]. Nothing is written anywhere: the full output is simply not kept,
//! and the text tells the model how to ask for less.
//!
//! ```
//! use outrider::api::OutputBudget;
//! use outrider::api::ToolResult;
//! use serde_json::json;
//! let big = json!({"content": "x\n".repeat(40_000)}).as_object().unwrap().clone();
//! let r = ToolResult::success(&json!({"path": "big.txt"}), big, "Read 40000 lines", 5);
//! let cut = OutputBudget::default().apply("Read", r);
//! assert_eq!(cut.data["truncated"], true);
//! assert!(cut.to_json().len() < 12_000);
//! ```

use serde_json::{json, Map, Value};

use super::envelope::{ToolResult, ToolStatus};

/// Largest serialised result passed through unchanged.
pub(crate) const MAX_TOOL_RESULT_BYTES: usize = 50_000;
/// Largest serialised total of the results of one batch (one model turn).
pub const MAX_TOOL_BATCH_BYTES: usize = 200_000;
/// Bytes of the preview kept from a replaced result.
pub(crate) const PREVIEW_BYTES: usize = 8_192;

/// The limits in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputBudget {
    /// Per result, in bytes of `to_json()`.
    pub max_result_bytes: usize,
    /// Per batch, in bytes of the sum of `to_json()`.
    pub max_batch_bytes: usize,
    /// Preview size of a replaced result.
    pub preview_bytes: usize,
}

impl Default for OutputBudget {
    fn default() -> Self {
        OutputBudget {
            max_result_bytes: MAX_TOOL_RESULT_BYTES,
            max_batch_bytes: MAX_TOOL_BATCH_BYTES,
            preview_bytes: PREVIEW_BYTES,
        }
    }
}

wire_enum! {
    /// Why a result was replaced.
    pub(crate) enum TruncationReason {
        /// It alone was over the per-result limit.
        ResultBytes = "result_bytes",
        /// It was among the largest of a batch over the batch limit.
        BatchBytes = "batch_bytes",
    }
}

impl OutputBudget {
    /// The result itself, or its stub when its JSON is over the per-result limit.
    pub fn apply(&self, tool: &str, result: ToolResult) -> ToolResult {
        let json = result.to_json();
        if json.len() <= self.max_result_bytes {
            return result;
        }
        truncate(
            tool,
            result,
            &json,
            TruncationReason::ResultBytes,
            self.preview_bytes,
        )
    }

    /// Apply the per-result limit to each `(tool, result)`, then replace the largest remaining
    /// results until the batch fits. Order is kept.
    pub fn apply_batch(&self, results: Vec<(String, ToolResult)>) -> Vec<ToolResult> {
        let mut out: Vec<(String, ToolResult, bool)> = results
            .into_iter()
            .map(|(tool, r)| {
                let json_len = r.to_json().len();
                if json_len > self.max_result_bytes {
                    let json = r.to_json();
                    let cut = truncate(
                        &tool,
                        r,
                        &json,
                        TruncationReason::ResultBytes,
                        self.preview_bytes,
                    );
                    (tool, cut, true)
                } else {
                    (tool, r, false)
                }
            })
            .collect();
        let mut sizes: Vec<usize> = out.iter().map(|(_, r, _)| r.to_json().len()).collect();
        while sizes.iter().sum::<usize>() > self.max_batch_bytes {
            let largest = (0..out.len())
                .filter(|&i| !out[i].2)
                .max_by_key(|&i| (sizes[i], std::cmp::Reverse(i)));
            let Some(i) = largest else { break };
            let (tool, r, _) = &out[i];
            let json = r.to_json();
            let cut = truncate(
                tool,
                r.clone(),
                &json,
                TruncationReason::BatchBytes,
                self.preview_bytes,
            );
            sizes[i] = cut.to_json().len();
            out[i].1 = cut;
            out[i].2 = true;
        }
        out.into_iter().map(|(_, r, _)| r).collect()
    }
}

/// The JSON text as the model would read it: `\n` escapes inside strings shown as line breaks.
fn readable(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let mut chars = json.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some(other) => {
                    out.push('\\');
                    out.push(other);
                }
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Bytes `s` takes inside a JSON string (escapes included, quotes excluded).
fn escaped_len(s: &str) -> usize {
    serde_json::to_string(s)
        .map(|j| j.len() - 2)
        .unwrap_or(s.len())
}

/// The first whole lines of `text` whose JSON-escaped size fits in `max` bytes (at least part of
/// the first line), so the preview costs the model what the budget says.
fn head(text: &str, max: usize) -> String {
    let mut kept = 0usize;
    let mut end = 0usize;
    for line in text.split_inclusive('\n') {
        let body = line.strip_suffix('\n').unwrap_or(line);
        let cost = escaped_len(body) + if line.ends_with('\n') { 2 } else { 0 };
        if kept + cost > max {
            break;
        }
        kept += cost;
        end += line.len();
    }
    if end == 0 {
        let mut out = String::new();
        let mut cost = 0;
        for c in text.chars() {
            let mut buf = [0u8; 4];
            let c_cost = escaped_len(c.encode_utf8(&mut buf));
            if c == '\n' || cost + c_cost > max {
                break;
            }
            cost += c_cost;
            out.push(c);
        }
        return out;
    }
    text[..end].trim_end_matches('\n').to_string()
}

fn line_count(s: &str) -> usize {
    s.matches('\n').count() + 1
}

/// Replace `result` (whose JSON is `json`) by its stub.
pub(crate) fn truncate(
    tool: &str,
    result: ToolResult,
    json: &str,
    reason: TruncationReason,
    preview_bytes: usize,
) -> ToolResult {
    let full = readable(json);
    let preview = head(&full, preview_bytes);
    let original_lines = line_count(&full);
    let kept_lines = line_count(&preview);
    let mut data = Map::new();
    data.insert("truncated".into(), Value::from(true));
    data.insert(
        "truncation".into(),
        json!({
            "original_bytes": json.len(),
            "kept_bytes": preview.len(),
            "original_lines": original_lines,
            "kept_lines": kept_lines,
            "reason": reason.as_str(),
        }),
    );
    data.insert("preview".into(), Value::from(preview));
    let hint = match tool {
        "Read" => "Read a smaller window with start_line and limit.",
        "Grep" => "Narrow the Grep path, glob, type or pattern, or lower its limit (output_mode \"files_with_matches\" lists files only).",
        "Glob" => "Narrow the Glob path or pattern, or lower its limit.",
        _ => "Ask for less output: a narrower path, pattern or page.",
    };
    let why = match reason {
        TruncationReason::ResultBytes => "this result",
        TruncationReason::BatchBytes => "this turn's results together",
    };
    let text = format!(
        "Output too large ({} bytes, {original_lines} lines; {why} may use at most the budget), so only the first {kept_lines} lines are shown in data.preview and the rest was dropped. {hint}",
        json.len()
    );
    let status = if result.status == ToolStatus::Error {
        ToolStatus::Error
    } else {
        ToolStatus::Partial
    };
    ToolResult {
        status,
        data,
        text,
        stats: result.stats,
        context: result.context,
        error: result.error,
        compact: result.compact,
        // The model sees a preview, not the lines: the result shows nothing to read back.
        shown: super::shown::Shown::Nothing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::envelope::ErrorCode;

    fn big(n: usize) -> ToolResult {
        let data = json!({"content": "abcdefghi\n".repeat(n)})
            .as_object()
            .unwrap()
            .clone();
        ToolResult::success(&json!({"path": "f"}), data, "ok", 1)
    }

    #[test]
    fn small_results_pass() {
        let r = big(10);
        assert_eq!(OutputBudget::default().apply("Read", r.clone()), r);
    }

    #[test]
    fn large_result_becomes_head() {
        let r = big(10_000);
        let original = r.to_json().len();
        let cut = OutputBudget::default().apply("Read", r);
        assert_eq!(cut.status, ToolStatus::Partial);
        let t = &cut.data["truncation"];
        assert_eq!(t["original_bytes"], json!(original));
        assert_eq!(t["original_lines"], json!(10_000 + 16));
        assert_eq!(t["reason"], json!("result_bytes"));
        let preview = cut.data["preview"].as_str().unwrap();
        assert!(serde_json::to_string(preview).unwrap().len() <= PREVIEW_BYTES + 2);
        assert!(serde_json::to_string(preview).unwrap().len() > PREVIEW_BYTES - 200);
        assert_eq!(t["kept_bytes"], json!(preview.len()));
        assert_eq!(t["kept_lines"], json!(preview.lines().count()));
        assert!(preview.starts_with("{\n  \"status\": \"success\",\n  \"data\": {\n    \"content\": \"abcdefghi\nabcdefghi\n"));
        assert!(cut.text.contains("start_line and limit"));
        assert!(cut.stats.contains_key("time_ms") && cut.context.contains_key("params_input"));
    }

    #[test]
    fn error_stays_error_and_single_line_is_cut() {
        let mut r = ToolResult::error(&json!({}), ErrorCode::InternalError, "x".repeat(60_000), 0);
        r.text = "y".repeat(60_000);
        let cut = OutputBudget::default().apply("Grep", r);
        assert_eq!(cut.status, ToolStatus::Error);
        assert_eq!(cut.to_value()["error"]["code"], "INTERNAL_ERROR");
        assert!(!cut.data["preview"].as_str().unwrap().is_empty());
    }

    #[test]
    fn escaped_backslash_n_is_not_a_line_break() {
        assert_eq!(readable(r#""a\\n\nb""#), "\"a\\\\n\nb\"");
    }

    #[test]
    fn batch_replaces_largest_first_until_it_fits() {
        let budget = OutputBudget::default();
        let items = vec![
            ("Read".to_string(), big(4_000)),
            ("Read".to_string(), big(4_100)),
            ("Read".to_string(), big(4_400)),
            ("Read".to_string(), big(4_300)),
            ("Read".to_string(), big(4_200)),
            ("Read".to_string(), big(10)),
        ];
        let out = budget.apply_batch(items);
        let cut: Vec<bool> = out.iter().map(|r| r.data.contains_key("preview")).collect();
        assert_eq!(cut, [false, false, true, false, false, false]);
        assert!(out.iter().map(|r| r.to_json().len()).sum::<usize>() <= MAX_TOOL_BATCH_BYTES);
    }
}
