//! JSONL traces: one file per session, `{ts, session_id, step, event, payload}` per line, secrets
//! redacted, never inside the explored root. Events are also kept in memory for metrics.
//!
//! The parts: [`event`] (event names and typed payloads); secret removal is [`crate::redact`].

pub mod event;

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use serde::Serialize;
use serde_json::{Map, Value};

pub use crate::redact::{redact, redact_in_place, redact_str, SECRET_KEYS};
pub use event::{EventKind, EventPayload, SessionSummary, UnknownEvent};

/// A UTC timestamp in ISO 8601 with milliseconds and a `Z`.
pub fn utc_now_iso() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// A new child session id: `child-<32 hex>`.
pub fn new_child_id() -> String {
    format!("child-{}", uuid::Uuid::new_v4().simple())
}

/// One recorded event.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceEvent {
    /// UTC ISO timestamp.
    pub ts: String,
    /// The session the event belongs to.
    pub session_id: String,
    /// The step (0 outside the loop).
    pub step: u64,
    /// The event name (`model_output`, `tool_call`, `terminal`, ...).
    pub event: EventKind,
    /// The redacted payload.
    pub payload: Value,
}

pub use crate::error::TraceDirError;

/// The default trace directory: `$OUTRIDER_TRACE_DIR`, else `$XDG_STATE_HOME/outrider/traces`,
/// else `~/.local/state/outrider/traces`, else the system temp dir.
pub fn default_trace_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("OUTRIDER_TRACE_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_STATE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("outrider").join("traces");
    }
    if let Some(home) = std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(home).join(".local/state/outrider/traces");
    }
    std::env::temp_dir().join("outrider-traces")
}

/// Canonical form of `path`, resolving the longest existing ancestor (the rest may not exist yet).
fn canonical_prefix(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    let mut existing = absolute.clone();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (
            existing.file_name().map(|n| n.to_os_string()),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => break,
        }
    }
    let mut out = std::fs::canonicalize(&existing).unwrap_or(existing);
    for name in rest.into_iter().rev() {
        out.push(name);
    }
    out
}

/// Check that `dir` is outside `root` and create it.
pub fn prepare_trace_dir(dir: &Path, root: &Path) -> Result<PathBuf, TraceDirError> {
    let dir_c = canonical_prefix(dir);
    let root_c = canonical_prefix(root);
    if dir_c.starts_with(&root_c) {
        return Err(TraceDirError::InsideRoot {
            dir: dir.display().to_string(),
            root: root.display().to_string(),
        });
    }
    std::fs::create_dir_all(&dir_c).map_err(|e| TraceDirError::Create {
        dir: dir.display().to_string(),
        reason: e.to_string(),
    })?;
    Ok(dir_c)
}

/// A session's trace: events in memory, and (when a directory is given) a JSONL file
/// `trace-<session_id>.jsonl`. Writes are buffered and flushed at step boundaries and at the end.
#[derive(Debug)]
pub struct Trace {
    session_id: String,
    path: Option<PathBuf>,
    file: Mutex<Option<BufWriter<File>>>,
    events: Mutex<Vec<TraceEvent>>,
}

impl Trace {
    /// A trace that only records in memory.
    pub fn in_memory(session_id: impl Into<String>) -> Self {
        Trace {
            session_id: session_id.into(),
            path: None,
            file: Mutex::new(None),
            events: Mutex::new(Vec::new()),
        }
    }

    /// A trace that also writes `<dir>/trace-<session_id>.jsonl` (dir must already be prepared).
    pub fn to_file(session_id: impl Into<String>, dir: &Path) -> std::io::Result<Self> {
        let session_id = session_id.into();
        let path = dir.join(format!("trace-{session_id}.jsonl"));
        let file = OpenOptions::new().create(true).append(true).open(&path)?;
        Ok(Trace {
            session_id,
            path: Some(path),
            file: Mutex::new(Some(BufWriter::new(file))),
            events: Mutex::new(Vec::new()),
        })
    }

    /// A trace that appends to the JSONL file `path` (its directory must exist).
    pub fn at_path(session_id: impl Into<String>, path: &Path) -> std::io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Trace {
            session_id: session_id.into(),
            path: Some(path.to_path_buf()),
            file: Mutex::new(Some(BufWriter::new(file))),
            events: Mutex::new(Vec::new()),
        })
    }

    /// The session id.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The JSONL file, when there is one.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Record a typed event (see [`event`]).
    pub fn emit<P: EventPayload>(&self, step: u64, payload: &P) {
        // The payload types hold strings, numbers and `Value`s only: serialising cannot fail.
        let value = serde_json::to_value(payload).unwrap_or(Value::Null);
        self.log(P::KIND, step, value);
    }

    /// Record an event (payload redacted before it is kept or written).
    pub fn log(&self, event: EventKind, step: u64, mut payload: Value) {
        redact_in_place(&mut payload);
        let ev = TraceEvent {
            ts: utc_now_iso(),
            session_id: self.session_id.clone(),
            step,
            event,
            payload,
        };
        if let Ok(mut guard) = self.file.lock() {
            if let Some(w) = guard.as_mut() {
                let line = serde_json::to_string(&ev).unwrap_or_default();
                // A full disk must not stop a child; the in-memory events still hold.
                if writeln!(w, "{line}").is_err() {
                    *guard = None;
                }
            }
        }
        if let Ok(mut events) = self.events.lock() {
            events.push(ev);
        }
    }

    /// Push buffered lines to the file.
    pub fn flush(&self) {
        if let Ok(mut guard) = self.file.lock() {
            if let Some(w) = guard.as_mut() {
                let _ = w.flush();
            }
        }
    }

    /// A copy of the events recorded so far.
    pub fn events(&self) -> Vec<TraceEvent> {
        self.events.lock().map(|e| e.clone()).unwrap_or_default()
    }

    /// Append `session_summary {steps, tools_used, total_usage}` and close the file.
    pub fn finalize(&self) {
        let events = self.events();
        let steps = events.iter().map(|e| e.step).max().unwrap_or(0);
        let tools_used = events
            .iter()
            .filter(|e| e.event == EventKind::ToolCall)
            .count();
        let mut usage = Map::new();
        for key in ["prompt_tokens", "completion_tokens", "total_tokens"] {
            let sum: u64 = events
                .iter()
                .filter(|e| e.event == EventKind::ModelOutput)
                .filter_map(|e| {
                    e.payload
                        .get("usage")
                        .and_then(|u| u.get(key))
                        .and_then(Value::as_u64)
                })
                .sum();
            usage.insert(key.into(), Value::from(sum));
        }
        self.emit(
            steps,
            &SessionSummary {
                steps,
                tools_used,
                total_usage: usage,
            },
        );
        if let Ok(mut guard) = self.file.lock() {
            if let Some(mut w) = guard.take() {
                let _ = w.flush();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use regex::Regex;
    use serde_json::json;

    #[test]
    fn redaction_covers_keys_bearer_and_sk() {
        let v = json!({
            "api_key": "abc", "Authorization": "Bearer abcdefghijklmnop",
            "tool_call_id": "call_1", "session_id": "child-1",
            "note": "use sk-abcdefghijklmnopqrstuvwx and bearer xyz.abc-def_123 at https://h/x?api_key=zzz&q=1",
            "list": ["sk-AAAAAAAAAAAAAAAAAAAAAAAA"], "n": 3
        });
        assert_eq!(
            redact(&v),
            json!({
                "api_key": "***", "Authorization": "***",
                "tool_call_id": "call_1", "session_id": "child-1",
                "note": "use sk-*** and Bearer *** at https://h/x?api_key=***&q=1",
                "list": ["sk-***"], "n": 3
            })
        );
    }

    #[test]
    fn timestamps_are_iso_utc() {
        let ts = utc_now_iso();
        assert!(
            Regex::new(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
                .unwrap()
                .is_match(&ts),
            "{ts}"
        );
        assert!(ts.starts_with("20"));
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_millis(951_782_400_007);
        assert_eq!(
            humantime::format_rfc3339_millis(at).to_string(),
            "2000-02-29T00:00:00.007Z"
        );
    }

    #[test]
    fn file_trace_round_trip_and_summary() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir(&root).unwrap();
        assert!(matches!(
            prepare_trace_dir(&root.join("traces"), &root),
            Err(TraceDirError::InsideRoot { .. })
        ));
        let tdir = prepare_trace_dir(&dir.path().join("traces"), &root).unwrap();
        let id = new_child_id();
        assert_eq!(id.len(), "child-".len() + 32);
        let t = Trace::to_file(id.clone(), &tdir).unwrap();
        t.log(EventKind::ToolCall, 1, json!({"tool": "Read"}));
        t.log(
            EventKind::ModelOutput,
            1,
            json!({"usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}),
        );
        t.finalize();
        let text = std::fs::read_to_string(t.path().unwrap()).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[2]["event"], "session_summary");
        assert_eq!(
            lines[2]["payload"],
            json!({"steps": 1, "tools_used": 1, "total_usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}})
        );
        assert_eq!(lines[0]["session_id"], id);
    }
}
