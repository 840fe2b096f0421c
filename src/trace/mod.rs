//! JSONL traces: one file per session, `{ts, session_id, step, event, payload}` per line, secrets
//! redacted, never inside the explored root. Events are also kept in memory for metrics.
//!
//! The parts: [`event`] (event names and typed payloads), `dir` (the held, confined trace
//! directory, [`TraceDir`]); secret removal is [`crate::redact`].

mod dir;
pub(crate) mod event;
pub(crate) mod retention;
mod terminal;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::redact::redact_in_place;
pub(crate) use dir::TraceDir;
pub(crate) use event::{EventKind, EventPayload, SessionSummary};
pub(crate) use retention::{TraceRetention, TRACE_KEEP_ENV};
pub use terminal::TerminalReason;

/// The `tracing` target of every span the core opens (launch, step, model_call, tool_call,
/// completion_gate, wrap_up, main_agent). Events keep their module's target, so a log bridge
/// can forward events and leave out the span lifecycle lines `tracing`'s `log` feature writes.
pub const SPAN_TARGET: &str = "outrider::span";

/// A UTC timestamp in ISO 8601 with milliseconds and a `Z`.
pub(crate) fn utc_now_iso() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// A new child session id: `child-<32 hex>`.
pub(crate) fn new_child_id() -> String {
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

pub(crate) use crate::error::TraceDirError;

/// Receives each event of a trace as it is recorded (a caller's `on_event`): called on the
/// thread that records it, after the event is written, with no lock held.
#[derive(Clone)]
pub struct EventSink(pub Arc<dyn Fn(&TraceEvent) + Send + Sync>);

impl EventSink {
    /// A sink calling `f` for each event.
    pub fn new(f: impl Fn(&TraceEvent) + Send + Sync + 'static) -> Self {
        EventSink(Arc::new(f))
    }
}

impl std::fmt::Debug for EventSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EventSink")
    }
}

/// The default trace directory: `$OUTRIDER_TRACE_DIR`, else `$XDG_STATE_HOME/outrider/traces`,
/// else `~/.local/state/outrider/traces`, else the system temp dir.
pub(crate) fn default_trace_dir() -> PathBuf {
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

/// Resolve `dir`, refuse it when inside `root`, create it (`0700`) and hold it open (see
/// [`TraceDir`]).
pub(crate) fn prepare_trace_dir(dir: &Path, root: &Path) -> Result<TraceDir, TraceDirError> {
    TraceDir::prepare(dir, root)
}

/// A session's trace: events in memory, and (when a directory is given) a JSONL file
/// `trace-<session_id>.jsonl`. Writes are buffered and flushed at step boundaries and at the end.
/// The first write that fails (a full disk, a vanished directory) is kept ([`Trace::write_error`])
/// and stops further writes, so a short file is never mistaken for a complete one.
#[derive(Debug)]
pub struct Trace {
    session_id: String,
    path: Option<PathBuf>,
    file: Mutex<Option<BufWriter<Confined>>>,
    events: Mutex<Vec<TraceEvent>>,
    write_error: OnceLock<String>,
    sink: Option<EventSink>,
}

/// A trace file whose directory is checked to be outside the explored root before every write
/// that reaches the file (the buffer in front makes that a few checks per step, not per line).
#[derive(Debug)]
struct Confined {
    file: File,
    dir: TraceDir,
}

impl Write for Confined {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.dir.ensure_outside()?;
        self.file.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

impl Trace {
    /// A trace that only records in memory.
    pub fn in_memory(session_id: impl Into<String>) -> Self {
        Trace {
            session_id: session_id.into(),
            path: None,
            file: Mutex::new(None),
            events: Mutex::new(Vec::new()),
            write_error: OnceLock::new(),
            sink: None,
        }
    }

    /// A trace kept in memory because its file could not be created: `why` is reported as its
    /// [`Trace::write_error`].
    pub fn unwritten(session_id: impl Into<String>, why: impl Into<String>) -> Self {
        let t = Trace::in_memory(session_id);
        let _ = t.write_error.set(why.into());
        t
    }

    fn with_file(session_id: String, dir: &TraceDir, name: &str, file: File) -> Self {
        let confined = Confined {
            file,
            dir: dir.clone(),
        };
        Trace {
            session_id,
            path: Some(dir.path().join(name)),
            file: Mutex::new(Some(BufWriter::with_capacity(64 << 10, confined))),
            events: Mutex::new(Vec::new()),
            write_error: OnceLock::new(),
            sink: None,
        }
    }

    /// A trace that also writes the new file `<dir>/trace-<session_id>.jsonl` (`0600`, created
    /// through the held directory, refused if the directory has moved inside the root).
    pub fn to_file(session_id: impl Into<String>, dir: &TraceDir) -> std::io::Result<Self> {
        let session_id = session_id.into();
        let name = format!("trace-{session_id}.jsonl");
        let file = dir.create_new(&name)?;
        Ok(Trace::with_file(session_id, dir, &name, file))
    }

    /// A trace that appends to the file `name` in `dir` (created `0600` when missing).
    pub fn appending(
        session_id: impl Into<String>,
        dir: &TraceDir,
        name: &str,
    ) -> std::io::Result<Self> {
        let file = dir.open_append(name)?;
        Ok(Trace::with_file(session_id.into(), dir, name, file))
    }

    /// The same trace, also handing each event to `sink` as it is recorded.
    pub fn observed(mut self, sink: Option<EventSink>) -> Self {
        self.sink = sink;
        self
    }

    /// The first write to the file that failed (or why the file could not be created): the file
    /// is incomplete from that point on.
    pub fn write_error(&self) -> Option<String> {
        self.write_error.get().cloned()
    }

    fn failed(&self, e: &std::io::Error) {
        let shown = self
            .path
            .as_ref()
            .map_or_else(String::new, |p| format!(" to '{}'", p.display()));
        let _ = self
            .write_error
            .set(format!("writing the trace{shown} failed: {e}"));
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
                // A full disk must not stop a child; the in-memory events still hold, and the
                // failure is reported rather than leaving a short file that looks complete.
                if let Err(e) = writeln!(w, "{line}") {
                    self.failed(&e);
                    *guard = None;
                }
            }
        }
        if let Some(sink) = &self.sink {
            (sink.0)(&ev);
        }
        if let Ok(mut events) = self.events.lock() {
            events.push(ev);
        }
    }

    /// Push buffered lines to the file.
    pub fn flush(&self) {
        if let Ok(mut guard) = self.file.lock() {
            if let Some(w) = guard.as_mut() {
                if let Err(e) = w.flush() {
                    self.failed(&e);
                    *guard = None;
                }
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
                if let Err(e) = w.flush() {
                    self.failed(&e);
                }
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

    /// An explored root and an outside directory, side by side in a temp dir.
    fn root_and_out() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        let out = tmp.path().join("out");
        std::fs::create_dir(&root).unwrap();
        std::fs::create_dir(&out).unwrap();
        (tmp, root, out)
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::symlink_metadata(path)
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    }

    #[test]
    fn trace_files_are_0600_in_a_new_0700_directory() {
        let (_tmp, root, out) = root_and_out();
        let dir = prepare_trace_dir(&out.join("a/b"), &root).unwrap();
        let t = Trace::to_file("child-1", &dir).unwrap();
        t.finalize();
        assert_eq!(
            (
                mode(&out.join("a")),
                mode(&out.join("a/b")),
                mode(t.path().unwrap())
            ),
            (0o700, 0o700, 0o600)
        );
        assert_eq!(t.write_error(), None);
        // A second file of the same name is refused rather than appended to.
        assert!(Trace::to_file("child-1", &dir).is_err());
    }

    #[test]
    fn a_dotdot_spelling_into_the_root_is_refused_and_creates_nothing() {
        let (tmp, root, out) = root_and_out();
        let spelled = out.join("missing/../../root/x");
        assert_eq!(
            crate::fspath::resolve(&spelled),
            crate::fspath::resolve(&root).join("x")
        );
        assert!(matches!(
            prepare_trace_dir(&spelled, &root),
            Err(TraceDirError::InsideRoot { .. })
        ));
        assert_eq!(entries(&root), Vec::<String>::new());
        assert_eq!(entries(&out), Vec::<String>::new());
        // Through a symlink to the root, too.
        std::os::unix::fs::symlink(&root, tmp.path().join("link")).unwrap();
        assert!(matches!(
            prepare_trace_dir(&tmp.path().join("link/t"), &root),
            Err(TraceDirError::InsideRoot { .. })
        ));
        assert_eq!(entries(&root), Vec::<String>::new());
    }

    #[test]
    fn swapping_the_directory_for_a_symlink_after_preparing_writes_nothing_in_the_root() {
        let (tmp, root, out) = root_and_out();
        let dir = prepare_trace_dir(&out.join("traces"), &root).unwrap();
        std::fs::rename(out.join("traces"), tmp.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(&root, out.join("traces")).unwrap();
        let t = Trace::to_file("child-2", &dir).unwrap();
        t.log(EventKind::ToolCall, 1, json!({"tool": "Read"}));
        t.finalize();
        assert_eq!(t.write_error(), None);
        assert_eq!(entries(&root), Vec::<String>::new());
        assert_eq!(
            entries(&tmp.path().join("moved")),
            vec!["trace-child-2.jsonl".to_string()]
        );
    }

    #[test]
    fn a_directory_moved_into_the_root_after_preparing_is_refused_at_write_time() {
        let (_tmp, root, out) = root_and_out();
        let dir = prepare_trace_dir(&out.join("traces"), &root).unwrap();
        std::fs::rename(out.join("traces"), root.join("traces")).unwrap();
        let err = Trace::to_file("child-3", &dir).unwrap_err();
        assert!(
            err.to_string().contains("is now inside the explored root"),
            "{err}"
        );
        let err = Trace::appending("parent-1", &dir, "parent.jsonl").unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::PermissionDenied);
        assert_eq!(entries(&root.join("traces")), Vec::<String>::new());
    }

    #[test]
    fn an_open_trace_stops_writing_once_its_directory_is_moved_into_the_root() {
        let (_tmp, root, out) = root_and_out();
        let dir = prepare_trace_dir(&out.join("traces"), &root).unwrap();
        let t = Trace::appending("parent-1", &dir, "parent.jsonl").unwrap();
        t.log(EventKind::ToolCall, 1, json!({"tool": "Read"}));
        t.flush();
        let written = std::fs::read_to_string(out.join("traces/parent.jsonl")).unwrap();
        assert_eq!(written.lines().count(), 1);
        std::fs::rename(out.join("traces"), root.join("traces")).unwrap();
        t.log(EventKind::ToolCall, 2, json!({"tool": "Grep"}));
        t.finalize();
        assert_eq!(
            std::fs::read_to_string(root.join("traces/parent.jsonl")).unwrap(),
            written
        );
        let err = t.write_error().unwrap();
        assert!(err.contains("is now inside the explored root"), "{err}");
    }

    #[test]
    fn a_symlinked_trace_file_is_not_followed() {
        let (_tmp, root, out) = root_and_out();
        let dir = prepare_trace_dir(&out, &root).unwrap();
        std::os::unix::fs::symlink(root.join("victim"), out.join("parent.jsonl")).unwrap();
        assert!(Trace::appending("parent-1", &dir, "parent.jsonl").is_err());
        assert!(Trace::appending("parent-1", &dir, "../x").is_err());
        assert_eq!(entries(&root), Vec::<String>::new());
    }

    #[test]
    fn a_failed_write_is_reported_not_hidden() {
        let (_tmp, root, _out) = root_and_out();
        // /dev/full stands in for a full disk: every write fails with ENOSPC.
        if !Path::new("/dev/full").exists() {
            return;
        }
        let dev = prepare_trace_dir(Path::new("/dev"), &root).unwrap();
        let t = Trace::appending("parent-1", &dev, "full").unwrap();
        t.log(EventKind::ToolCall, 1, json!({"tool": "Read"}));
        t.flush();
        let err = t.write_error().expect("the failed write is recorded");
        assert!(
            err.starts_with("writing the trace to '/dev/full' failed: No space left on device"),
            "{err}"
        );
        // The events are still kept in memory, and the first error stays the one reported.
        t.finalize();
        assert_eq!(t.events().len(), 2);
        assert_eq!(t.write_error(), Some(err));
        let unwritten = Trace::unwritten("child-4", "cannot create");
        assert_eq!(unwritten.write_error().as_deref(), Some("cannot create"));
    }

    fn trace_name(i: u32) -> String {
        format!("trace-child-{i:032x}.jsonl")
    }

    /// `count` trace files in `dir`, the i-th last written i hours ago.
    fn aged_traces(dir: &Path, count: u32) {
        let now = SystemTime::now();
        for i in 0..count {
            let f = File::create(dir.join(trace_name(i))).unwrap();
            f.set_modified(now - std::time::Duration::from_secs(3600 * u64::from(i)))
                .unwrap();
        }
    }

    #[test]
    fn pruning_deletes_only_the_oldest_outrider_traces_in_the_directory() {
        let (_tmp, root, out) = root_and_out();
        let dir = prepare_trace_dir(&out, &root).unwrap();
        aged_traces(&out, 5);
        std::fs::write(out.join("notes.txt"), "mine").unwrap();
        std::fs::write(out.join("parent.jsonl"), "{}").unwrap();
        // Named like a trace but a symlink into the root, and a directory named like one.
        std::fs::write(root.join("keep.txt"), "root").unwrap();
        std::os::unix::fs::symlink(
            root.join("keep.txt"),
            out.join(format!("trace-main-{:032x}.jsonl", 99)),
        )
        .unwrap();
        std::fs::create_dir(out.join(trace_name(98))).unwrap();
        let keep_two = TraceRetention::parse("2").unwrap();
        assert_eq!(dir.prune(&keep_two).unwrap(), 3);
        let mut expected = vec![
            "notes.txt".to_string(),
            "parent.jsonl".to_string(),
            trace_name(0),
            trace_name(1),
            trace_name(98),
            format!("trace-main-{:032x}.jsonl", 99),
        ];
        expected.sort();
        assert_eq!(entries(&out), expected);
        assert_eq!(entries(&root), vec!["keep.txt".to_string()]);
        assert_eq!(
            std::fs::read_to_string(root.join("keep.txt")).unwrap(),
            "root"
        );
        // By age: the one-hour-old file goes, the new one stays.
        let by_age = TraceRetention::parse("30min").unwrap();
        assert_eq!(dir.prune(&by_age).unwrap(), 1);
        assert!(out.join(trace_name(0)).exists());
        assert!(!out.join(trace_name(1)).exists());
        assert_eq!(dir.prune(&TraceRetention::KEEP_ALL).unwrap(), 0);
    }

    #[test]
    fn pruning_a_directory_moved_into_the_root_deletes_nothing() {
        let (_tmp, root, out) = root_and_out();
        let dir = prepare_trace_dir(&out.join("traces"), &root).unwrap();
        aged_traces(&out.join("traces"), 3);
        std::fs::rename(out.join("traces"), root.join("traces")).unwrap();
        let err = dir.prune(&TraceRetention::parse("0").unwrap()).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::PermissionDenied);
        assert_eq!(entries(&root.join("traces")).len(), 3);
    }

    #[test]
    fn pruning_never_deletes_a_trace_still_being_written() {
        let (_tmp, root, out) = root_and_out();
        let dir = prepare_trace_dir(&out, &root).unwrap();
        aged_traces(&out, 2);
        let running = Trace::to_file(format!("child-{:032x}", 7), &dir).unwrap();
        running.log(EventKind::RunStart, 0, json!({}));
        // Another pruner of the same directory (a second launcher, or another process: the lock
        // is the file's) with a retention of 0 deletes the finished traces, not the running one.
        let other = prepare_trace_dir(&out, &root).unwrap();
        let nothing = TraceRetention::parse("0").unwrap();
        assert_eq!(other.prune(&nothing).unwrap(), 2);
        let name = format!("trace-child-{:032x}.jsonl", 7);
        assert_eq!(entries(&out), vec![name.clone()]);
        running.finalize();
        let lines = std::fs::read_to_string(out.join(&name)).unwrap();
        assert_eq!(lines.lines().count(), 2, "{lines}");
        // Finished, it is an old trace like any other.
        assert_eq!(other.prune(&nothing).unwrap(), 1);
        assert!(entries(&out).is_empty());
    }
}
