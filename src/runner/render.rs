//! How a tool result is shown to the model: the reference's JSON envelope, or a compact plain
//! text that says the same in fewer tokens (`tool_result_format = "compact"`).

use serde_json::Value;

use crate::profile::ToolResultFormat;
use crate::tools::envelope::ToolResult;

/// The text of one tool message. `shown` is `result.to_value()`.
pub(crate) fn tool_result(
    format: ToolResultFormat,
    tool: &str,
    result: &ToolResult,
    shown: &Value,
) -> String {
    match format {
        ToolResultFormat::Json => result.to_json(),
        ToolResultFormat::Compact => compact(tool, shown).unwrap_or_else(|| result.to_json()),
    }
}

/// Plain lines: a one-line header (the envelope's `text`), then the payload; None for a shape
/// it does not know (which is shown as JSON instead).
fn compact(tool: &str, v: &Value) -> Option<String> {
    let header = v["text"].as_str().unwrap_or_default().trim();
    if v["status"].as_str() == Some("error") {
        let code = v["error"]["code"].as_str().unwrap_or("ERROR");
        let message = v["error"]["message"].as_str().unwrap_or(header);
        return Some(format!("error {code}: {message}"));
    }
    let data = &v["data"];
    let mut out = String::from(header);
    match tool {
        "Read" => {
            out.push('\n');
            out.push_str(data["content"].as_str()?);
        }
        "Grep" => {
            for m in data["matches"].as_array()? {
                let (file, line) = (m["file"].as_str()?, m["line"].as_u64()?);
                let before = m["before"].as_array().map_or(&[][..], Vec::as_slice);
                let first = line.saturating_sub(before.len() as u64);
                for (i, b) in before.iter().enumerate() {
                    let text = b.as_str().unwrap_or_default();
                    out.push_str(&format!("\n{file}-{}-{text}", first + i as u64));
                }
                let text = m["text"].as_str().unwrap_or_default();
                out.push_str(&format!("\n{file}:{line}:{text}"));
                for (i, a) in m["after"].as_array().into_iter().flatten().enumerate() {
                    let text = a.as_str().unwrap_or_default();
                    out.push_str(&format!("\n{file}-{}-{text}", line + 1 + i as u64));
                }
            }
            if let Some(preview) = data["preview"].as_str() {
                out.push('\n');
                out.push_str(preview);
            }
        }
        "Glob" => {
            // Plain lines have no `directories` field: a listed directory ends with '/' there.
            let dirs = data["directories"].as_array();
            for p in data["paths"].as_array()? {
                out.push('\n');
                out.push_str(p.as_str()?);
                if dirs.is_some_and(|d| d.contains(p)) {
                    out.push('/');
                }
            }
        }
        _ => return None,
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn compact_results_are_plain_lines() {
        let grep = json!({"status": "success", "text": "Found 1 matching line(s) in '.'.",
            "data": {"matches": [{"file": "a.py", "line": 4, "text": "class Foo:", "before": [""], "after": ["    pass"]}]}});
        assert_eq!(
            compact("Grep", &grep).unwrap(),
            "Found 1 matching line(s) in '.'.\na.py-3-\na.py:4:class Foo:\na.py-5-    pass"
        );
        let read = json!({"status": "success", "text": "Read 2 lines from 'a.py' (Lines 1-2).",
            "data": {"content": "   1 | x\n   2 | y\n"}});
        assert_eq!(
            compact("Read", &read).unwrap(),
            "Read 2 lines from 'a.py' (Lines 1-2).\n   1 | x\n   2 | y\n"
        );
        let glob = json!({"status": "success", "text": "Found 2 path(s).", "data": {"paths": ["a.py", "b"], "directories": ["b"]}});
        assert_eq!(
            compact("Glob", &glob).unwrap(),
            "Found 2 path(s).\na.py\nb/"
        );
        let err = json!({"status": "error", "text": "x", "error": {"code": "NOT_FOUND", "message": "No such file 'z'."}});
        assert_eq!(
            compact("Read", &err).unwrap(),
            "error NOT_FOUND: No such file 'z'."
        );
        assert_eq!(compact("Other", &glob), None);
    }
}
