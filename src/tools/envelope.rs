//! The standard tool result envelope `{status, data, text, stats, context[, error]}`.
//!
//! Every tool answers with a [`ToolResult`]; the model sees [`ToolResult::to_json`], which is
//! byte-for-byte what the reference's `json.dumps(payload, indent=2, ensure_ascii=False)` gives.
//!
//! ```
//! use outrider::api::{ErrorCode, ToolResult};
//! use serde_json::json;
//! let params = json!({"path": "missing.py"});
//! let r = ToolResult::error(&params, ErrorCode::NotFound, "File 'missing.py' does not exist.", 0);
//! assert_eq!(
//!     r.to_value(),
//!     json!({
//!         "status": "error", "data": {}, "text": "File 'missing.py' does not exist.",
//!         "stats": {"time_ms": 0}, "context": {"cwd": ".", "params_input": {"path": "missing.py"}},
//!         "error": {"code": "NOT_FOUND", "message": "File 'missing.py' does not exist."}
//!     })
//! );
//! ```

use std::time::Instant;

use serde_json::{Map, Value};

use super::shown::Shown;

wire_enum! {
    /// How a tool call ended.
    pub enum ToolStatus {
        /// The whole answer.
        Success = "success",
        /// A usable but incomplete answer (truncated, or decoded with replacement characters).
        Partial = "partial",
        /// No answer; `error` says why.
        Error = "error",
        /// An answer whose evidence could not be found in the files (only the Task tool gives it):
        /// usable as a lead, not as a verified finding.
        Unverified = "unverified",
    }
}

wire_enum! {
    /// The machine-readable error codes of the reference (the ones the read-only tools can produce).
    pub enum ErrorCode {
        /// The file or directory does not exist.
        NotFound = "NOT_FOUND",
        /// The path is absolute or leaves the root.
        AccessDenied = "ACCESS_DENIED",
        /// The permission core or the allow-list refused the tool.
        PermissionDenied = "PERMISSION_DENIED",
        /// An argument is missing, of the wrong type, or out of range.
        InvalidParam = "INVALID_PARAM",
        /// The deadline passed or the call was cancelled.
        Timeout = "TIMEOUT",
        /// A bug or an unexpected I/O failure.
        InternalError = "INTERNAL_ERROR",
        /// The tool ran but failed.
        ExecutionError = "EXECUTION_ERROR",
        /// A directory where a file was wanted.
        IsDirectory = "IS_DIRECTORY",
        /// A binary file where text was wanted.
        BinaryFile = "BINARY_FILE",
        /// The file changed while it was being read.
        Conflict = "CONFLICT",
    }
}

/// The `error` object of an error envelope: `{code, message, ...details}`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolError {
    /// The machine code.
    pub code: ErrorCode,
    /// What was wrong, with the offending value, and what to do.
    pub message: String,
    /// Extra keys merged into the `error` object after `code` and `message`.
    pub details: Map<String, Value>,
}

/// One tool result, as the model sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// success, partial or error.
    pub status: ToolStatus,
    /// The structured answer; `{}` on error.
    pub data: Map<String, Value>,
    /// A short human/model-readable summary.
    pub text: String,
    /// Counters; always has `time_ms`.
    pub stats: Map<String, Value>,
    /// `{cwd, params_input[, path_resolved][, ...]}`.
    pub context: Map<String, Value>,
    /// Set exactly when `status` is error.
    pub error: Option<ToolError>,
    /// The compact form (the Task tool's default for the parent): no `context` (so no echo of
    /// the arguments) and JSON without indentation.
    pub compact: bool,
    /// What it showed, as values beside the text (never serialised): what the runtime reads
    /// back instead of parsing the text.
    pub(crate) shown: Shown,
}

/// Milliseconds since `started`, at least 1 (success and partial results never report 0).
pub(crate) fn elapsed_ms(started: Instant) -> u64 {
    (started.elapsed().as_millis() as u64).max(1)
}

/// Characters of one string kept in `params_input`; longer strings end in a marker that says how
/// many were left out.
pub(crate) const MAX_ECHOED_CHARS: usize = 1000;
/// Items of one list or object kept in `params_input`.
pub(crate) const MAX_ECHOED_ITEMS: usize = 100;
/// Levels of nesting kept in `params_input`.
pub(crate) const MAX_ECHOED_DEPTH: usize = 16;

/// The arguments as echoed back in `context.params_input`: whole when small, else cut (long
/// strings, long lists, deep nesting), so a 30 MB argument is not sent back whole.
pub(crate) fn echoed_input(value: &Value) -> Value {
    fn cut(value: &Value, depth: usize) -> Value {
        match value {
            Value::String(s) => match s.char_indices().nth(MAX_ECHOED_CHARS) {
                Some((at, _)) => {
                    let left = s[at..].chars().count();
                    Value::String(format!("{}… [{left} more characters]", &s[..at]))
                }
                None => value.clone(),
            },
            Value::Array(_) | Value::Object(_) if depth >= MAX_ECHOED_DEPTH => {
                Value::String("… [nested deeper]".into())
            }
            Value::Array(items) => {
                let mut out: Vec<Value> = items
                    .iter()
                    .take(MAX_ECHOED_ITEMS)
                    .map(|v| cut(v, depth + 1))
                    .collect();
                if items.len() > MAX_ECHOED_ITEMS {
                    let left = items.len() - MAX_ECHOED_ITEMS;
                    out.push(Value::String(format!("… [{left} more items]")));
                }
                Value::Array(out)
            }
            Value::Object(map) => {
                let mut out: Map<String, Value> = map
                    .iter()
                    .take(MAX_ECHOED_ITEMS)
                    .map(|(k, v)| (cut_key(k), cut(v, depth + 1)))
                    .collect();
                if map.len() > MAX_ECHOED_ITEMS {
                    let left = map.len() - MAX_ECHOED_ITEMS;
                    out.insert("…".into(), Value::String(format!("[{left} more keys]")));
                }
                Value::Object(out)
            }
            _ => value.clone(),
        }
    }
    fn cut_key(key: &str) -> String {
        match key.char_indices().nth(MAX_ECHOED_CHARS) {
            Some((at, _)) => format!("{}…", &key[..at]),
            None => key.to_string(),
        }
    }
    cut(value, 0)
}

fn base_context(params_input: &Value) -> Map<String, Value> {
    let mut context = Map::new();
    context.insert("cwd".into(), Value::from("."));
    context.insert("params_input".into(), echoed_input(params_input));
    context
}

fn time_stats(time_ms: u64) -> Map<String, Value> {
    let mut stats = Map::new();
    stats.insert("time_ms".into(), Value::from(time_ms));
    stats
}

impl ToolResult {
    fn ok(
        status: ToolStatus,
        params_input: &Value,
        data: Map<String, Value>,
        text: impl Into<String>,
        time_ms: u64,
    ) -> Self {
        ToolResult {
            status,
            data,
            text: text.into(),
            stats: time_stats(time_ms.max(1)),
            context: base_context(params_input),
            error: None,
            compact: false,
            shown: Shown::Nothing,
        }
    }

    /// A complete answer. `time_ms` is raised to at least 1.
    pub fn success(
        params_input: &Value,
        data: Map<String, Value>,
        text: impl Into<String>,
        time_ms: u64,
    ) -> Self {
        Self::ok(ToolStatus::Success, params_input, data, text, time_ms)
    }

    /// An answer whose evidence could not be verified. `time_ms` is raised to at least 1.
    pub fn unverified(
        params_input: &Value,
        data: Map<String, Value>,
        text: impl Into<String>,
        time_ms: u64,
    ) -> Self {
        Self::ok(ToolStatus::Unverified, params_input, data, text, time_ms)
    }

    /// A usable but incomplete answer. `time_ms` is raised to at least 1.
    pub fn partial(
        params_input: &Value,
        data: Map<String, Value>,
        text: impl Into<String>,
        time_ms: u64,
    ) -> Self {
        Self::ok(ToolStatus::Partial, params_input, data, text, time_ms)
    }

    /// An error: `data` is `{}` and `text` repeats the message.
    pub fn error(
        params_input: &Value,
        code: ErrorCode,
        message: impl Into<String>,
        time_ms: u64,
    ) -> Self {
        let message = crate::redact::redact_str(&message.into());
        ToolResult {
            status: ToolStatus::Error,
            data: Map::new(),
            text: message.clone(),
            stats: time_stats(time_ms),
            context: base_context(params_input),
            error: Some(ToolError {
                code,
                message,
                details: Map::new(),
            }),
            compact: false,
            shown: Shown::Nothing,
        }
    }

    /// The compact form: `context` (with its echo of the arguments) left out, JSON written
    /// without indentation.
    pub fn compacted(mut self) -> Self {
        self.context.clear();
        self.compact = true;
        self
    }

    /// Keep `shown` beside the text: what the result showed, as values.
    pub(crate) fn with_shown(mut self, shown: Shown) -> Self {
        self.shown = shown;
        self
    }

    /// Set `context.path_resolved` (the project-relative path the tool worked on).
    pub fn with_path_resolved(self, path: impl Into<String>) -> Self {
        self.with_context("path_resolved", path.into())
    }

    /// Add one key to `context`.
    pub fn with_context(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.context.insert(key.to_string(), value.into());
        self
    }

    /// Add one key to `stats`.
    pub fn with_stat(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.stats.insert(key.to_string(), value.into());
        self
    }

    /// Add one key to `error` (after `code` and `message`); no effect on a non-error result.
    pub fn with_detail(mut self, key: &str, value: impl Into<Value>) -> Self {
        if let Some(error) = &mut self.error {
            error.details.insert(key.to_string(), value.into());
        }
        self
    }

    /// True when the status is error.
    pub fn is_error(&self) -> bool {
        self.status == ToolStatus::Error
    }

    /// The error code, when this is an error.
    pub fn error_code(&self) -> Option<ErrorCode> {
        self.error.as_ref().map(|e| e.code)
    }

    /// The envelope as JSON: keys `status, data, text, stats, context` in that order (no
    /// `context` in the compact form), plus `error {code, message, ...details}` only on error.
    pub fn to_value(&self) -> Value {
        let mut out = Map::new();
        out.insert("status".into(), Value::from(self.status.as_str()));
        out.insert("data".into(), Value::Object(self.data.clone()));
        out.insert("text".into(), Value::from(self.text.clone()));
        out.insert("stats".into(), Value::Object(self.stats.clone()));
        if !self.compact {
            out.insert("context".into(), Value::Object(self.context.clone()));
        }
        if self.status == ToolStatus::Error {
            let mut error = Map::new();
            let (code, message, details) = match &self.error {
                Some(e) => (e.code, e.message.clone(), Some(&e.details)),
                None => (ErrorCode::InternalError, self.fallback_message(), None),
            };
            error.insert("code".into(), Value::from(code.as_str()));
            error.insert("message".into(), Value::from(message));
            for (k, v) in details.into_iter().flatten() {
                if k != "code" && k != "message" {
                    error.insert(k.clone(), v.clone());
                }
            }
            out.insert("error".into(), Value::Object(error));
        }
        Value::Object(out)
    }

    fn fallback_message(&self) -> String {
        if self.text.is_empty() {
            "Tool execution error".to_string()
        } else {
            self.text.clone()
        }
    }

    /// The tool message content: pretty JSON, 2-space indent, non-ASCII kept (the compact form:
    /// no whitespace between tokens).
    pub fn to_json(&self) -> String {
        if self.compact {
            serde_json::to_string(&self.to_value()).unwrap_or_else(|_| "{}".to_string())
        } else {
            to_pretty_json(&self.to_value())
        }
    }
}

/// Pretty JSON with a 2-space indent and non-ASCII kept, as Python's
/// `json.dumps(value, indent=2, ensure_ascii=False)` writes it.
pub fn to_pretty_json(value: &Value) -> String {
    // serde_json's pretty printer already uses 2 spaces, ": " and ",\n", escapes only `"`, `\`
    // and control characters, and prints `{}`/`[]` for empty containers, as Python does.
    serde_json::to_string_pretty(value).unwrap_or_else(|_| "{}".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn data(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn success_shape_and_min_time() {
        let r = ToolResult::success(&json!({"a": 1}), data(json!({"x": [1]})), "done", 0)
            .with_path_resolved("src");
        assert_eq!(
            r.to_value(),
            json!({"status": "success", "data": {"x": [1]}, "text": "done", "stats": {"time_ms": 1},
                   "context": {"cwd": ".", "params_input": {"a": 1}, "path_resolved": "src"}})
        );
        let keys: Vec<_> = r.to_value().as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["status", "data", "text", "stats", "context"]);
    }

    #[test]
    fn partial_shape() {
        let r = ToolResult::partial(&json!({}), data(json!({"truncated": true})), "cut", 7);
        assert_eq!(
            r.to_value(),
            json!({"status": "partial", "data": {"truncated": true}, "text": "cut",
                   "stats": {"time_ms": 7}, "context": {"cwd": ".", "params_input": {}}})
        );
    }

    #[test]
    fn error_shape_with_details_in_order() {
        let r = ToolResult::error(&json!({"p": "x"}), ErrorCode::PermissionDenied, "no", 0)
            .with_detail("permission", json!({"action": "deny"}));
        let v = r.to_value();
        assert_eq!(
            v,
            json!({"status": "error", "data": {}, "text": "no", "stats": {"time_ms": 0},
                   "context": {"cwd": ".", "params_input": {"p": "x"}},
                   "error": {"code": "PERMISSION_DENIED", "message": "no", "permission": {"action": "deny"}}})
        );
        let keys: Vec<_> = v["error"].as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["code", "message", "permission"]);
        assert_eq!(r.error_code(), Some(ErrorCode::PermissionDenied));
    }

    #[test]
    fn json_matches_python_dumps() {
        let r = ToolResult::success(
            &json!({"q": "é\n"}),
            data(json!({"e": [], "o": {}})),
            "ü",
            3,
        );
        let expected = "{\n  \"status\": \"success\",\n  \"data\": {\n    \"e\": [],\n    \"o\": {}\n  },\n  \"text\": \"ü\",\n  \"stats\": {\n    \"time_ms\": 3\n  },\n  \"context\": {\n    \"cwd\": \".\",\n    \"params_input\": {\n      \"q\": \"é\\n\"\n    }\n  }\n}";
        assert_eq!(r.to_json(), expected);
    }

    #[test]
    fn error_codes_are_screaming() {
        let all = [
            ErrorCode::NotFound,
            ErrorCode::AccessDenied,
            ErrorCode::PermissionDenied,
            ErrorCode::InvalidParam,
            ErrorCode::Timeout,
            ErrorCode::InternalError,
            ErrorCode::ExecutionError,
            ErrorCode::IsDirectory,
            ErrorCode::BinaryFile,
            ErrorCode::Conflict,
        ];
        let names: Vec<String> = all
            .iter()
            .map(|c| {
                serde_json::to_value(c)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        let direct: Vec<&str> = all.iter().map(|c| c.as_str()).collect();
        assert_eq!(names, direct);
        assert_eq!(
            direct,
            [
                "NOT_FOUND",
                "ACCESS_DENIED",
                "PERMISSION_DENIED",
                "INVALID_PARAM",
                "TIMEOUT",
                "INTERNAL_ERROR",
                "EXECUTION_ERROR",
                "IS_DIRECTORY",
                "BINARY_FILE",
                "CONFLICT"
            ]
        );
    }

    #[test]
    fn a_huge_argument_is_not_echoed_back_whole() {
        let huge = "a".repeat(30 << 20);
        let params = json!({"pattern": huge, "list": vec![1; 500], "path": "src"});
        let r = ToolResult::error(&params, ErrorCode::InvalidParam, "bad", 1);
        let echoed = &r.context["params_input"];
        let pattern = echoed["pattern"].as_str().unwrap();
        assert_eq!(
            pattern,
            format!(
                "{}… [{} more characters]",
                "a".repeat(1000),
                (30 << 20) - 1000
            )
        );
        let list = echoed["list"].as_array().unwrap();
        assert_eq!(list.len(), MAX_ECHOED_ITEMS + 1);
        assert_eq!(list[MAX_ECHOED_ITEMS], json!("… [400 more items]"));
        assert_eq!(echoed["path"], json!("src"));
        assert!(serde_json::to_string(&r.to_value()).unwrap().len() < 10_000);
        // Deep nesting is cut too; small arguments are echoed as they are.
        let mut deep = json!(1);
        for _ in 0..50 {
            deep = json!([deep]);
        }
        let r = ToolResult::error(&json!({"x": deep}), ErrorCode::InvalidParam, "bad", 1);
        assert!(r.to_value().to_string().contains("… [nested deeper]"));
        let small = json!({"path": "é", "n": [1, 2]});
        let r = ToolResult::success(&small, Map::new(), "ok", 1);
        assert_eq!(r.context["params_input"], small);
    }
}
