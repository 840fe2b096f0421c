//! Read: one window of a text file, with line numbers.
//!
//! The file is streamed: only the requested window is kept, and the remaining lines are counted
//! with `memchr`, so paging through a multi-gigabyte log costs memory for one window only. Lines
//! are split on `\n` alone (a trailing `\r` of CRLF is dropped), the rule Grep and the evidence
//! check use too, so line numbers agree everywhere.
//!
//! The same pass checks that the whole file is UTF-8, so the encoding warning covers bytes outside
//! the window too; the check rides on the line count, which already reads every byte, so it needs
//! no extra I/O and no more memory. Read also tells the agent when a file it read before has
//! changed since (`modified_externally`), remembering per run, never per process.
//!
//! ```
//! use outrider::api::{ToolContext, ReadTool, Tool, Workspace};
//! use serde_json::json;
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
//! let ctx = ToolContext::new(Workspace::new(dir.path()).unwrap());
//! let r = ReadTool.run(&ctx, &json!({"path": "a.txt"}));
//! assert_eq!(r.data["content"], "   1 | one\n   2 | two\n");
//! ```

use std::borrow::Cow;
use std::io::{BufRead, BufReader, Cursor, Read};
use std::os::unix::fs::MetadataExt;
use std::time::Instant;

use serde_json::{json, Map, Value};

use super::context::{FileStamp, Interrupt, ToolContext};
use super::envelope::{elapsed_ms, ErrorCode, ToolResult};
use super::params;
use super::tool::Tool;
use super::workspace::{EntryKind, PathError, Resolved};

/// Lines returned when `limit` is not given.
pub(crate) const READ_DEFAULT_LIMIT: i64 = 500;
/// The largest `limit` Read accepts.
pub(crate) const READ_MAX_LIMIT: i64 = 2000;
/// A NUL byte in this many leading bytes makes a file binary.
pub(crate) const BINARY_SNIFF_BYTES: usize = 8192;
/// Bytes of one line that are kept; the rest of a longer line is dropped, and the result names
/// the line and its length. Small enough that a cut line always fits one result (see
/// `OutputBudget`): a longer one would be replaced by a preview that cannot show it.
pub(crate) const MAX_LINE_BYTES: usize = 16 << 10;
/// Cut lines named one by one in a result (the others are counted).
const NAMED_CUT_LINES: usize = 10;
/// Bytes one window may hold; a window that would hold more ends early (as a truncation).
pub(crate) const MAX_WINDOW_BYTES: usize = 8 << 20;

const ACCEPTED: [&str; 3] = ["path", "start_line", "limit"];

/// The Read tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadTool;

/// What one pass over the file found.
struct Window {
    lines: Vec<Vec<u8>>,
    total_lines: u64,
    /// The first lines of the window that were cut, with their whole length in bytes.
    cut_lines: Vec<(u64, u64)>,
    /// How many lines of the window were cut.
    cut_count: u64,
    /// The line of the first byte that is not UTF-8, anywhere in the file.
    invalid_utf8_line: Option<u64>,
}

impl Tool for ReadTool {
    fn name(&self) -> &'static str {
        "Read"
    }

    fn description(&self) -> std::borrow::Cow<'static, str> {
        "Read a text file under the project root, with line numbers (`   12 | text`). Returns \
         `limit` lines (default 500, max 2000) starting at `start_line` (1-based, default 1). \
         When more lines remain the result is partial and the text says which start_line to use \
         next. Paths are relative to the project root; directories are refused (use Glob to list \
         them) and binary files are refused. Read a large file in pages, or use Grep to find the \
         lines you need first."
            .into()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "Path to the file (relative to project root). Required."
                },
                "start_line": {
                    "type": "integer",
                    "description": "First line to return, 1-based.",
                    "default": 1,
                    "minimum": 1
                },
                "limit": {
                    "type": "integer",
                    "description": "How many lines to return.",
                    "default": READ_DEFAULT_LIMIT,
                    "minimum": 1,
                    "maximum": READ_MAX_LIMIT
                }
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }

    fn run(&self, ctx: &ToolContext, args: &Value) -> ToolResult {
        read(ctx, args)
    }
}

/// Read's arguments, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReadArgs<'a> {
    /// The file, as the model wrote it.
    pub(crate) path: &'a str,
    /// The first line to show, 1-based.
    pub(crate) start_line: u64,
    /// How many lines to show.
    pub(crate) limit: u64,
}

impl<'a> ReadArgs<'a> {
    /// Read and check Read's arguments; the error is the message the model gets.
    pub(crate) fn parse(params: &'a Value) -> Result<Self, String> {
        let args = params.as_object().ok_or_else(|| {
            format!(
                "Read arguments must be a JSON object; got {}.",
                params::json_type_name(params)
            )
        })?;
        let required = || Err("Parameter 'path' is required.".to_string());
        let path = match params::get(args, "path") {
            None | Some(Value::Bool(false)) => return required(),
            Some(Value::String(s)) if s.is_empty() => return required(),
            Some(Value::Number(n)) if n.as_f64() == Some(0.0) => return required(),
            Some(Value::Array(a)) if a.is_empty() => return required(),
            Some(Value::Object(o)) if o.is_empty() => return required(),
            Some(Value::String(s)) => s.as_str(),
            Some(_) => return Err("Path must be a non-empty relative string.".into()),
        };
        let Ok(start_line) = params::int_in(args, "start_line", 1, 1, i64::MAX) else {
            return Err("start_line must be a positive integer (>= 1).".into());
        };
        let Ok(limit) = params::int_in(args, "limit", READ_DEFAULT_LIMIT, 1, READ_MAX_LIMIT) else {
            return Err("limit must be an integer between 1 and 2000.".into());
        };
        if let Some(msg) = params::unknown_arguments("Read", args, &ACCEPTED) {
            return Err(msg);
        }
        Ok(Self {
            path,
            start_line: start_line as u64,
            limit: limit as u64,
        })
    }
}

/// The lines of a window as shown: numbered, CRLF's `\r` dropped, bytes that are not UTF-8
/// replaced.
struct Shown {
    content: String,
    /// The lines in `content`, with their numbers.
    lines: Vec<(u64, String)>,
    /// Lines shown.
    n: u64,
    /// The last line shown.
    end: u64,
    /// More lines follow the window.
    truncated: bool,
    /// Some byte anywhere in the file is not UTF-8 (those shown were replaced).
    replaced: bool,
}

fn read(ctx: &ToolContext, params: &Value) -> ToolResult {
    let started = Instant::now();
    let args = match ReadArgs::parse(params) {
        Ok(a) => a,
        Err(msg) => return ToolResult::error(params, ErrorCode::InvalidParam, msg, 0),
    };
    let (resolved, file, meta) = match open(ctx, &args, params) {
        Ok(opened) => opened,
        Err(e) => return *e,
    };
    let fail_at = |code, msg: String| {
        ToolResult::error(params, code, msg, 0).with_path_resolved(resolved.relative.clone())
    };
    let window = match window(ctx, file, &args) {
        Ok(w) => w,
        Err((code, msg, total)) => {
            let failed = fail_at(code, msg);
            return match total {
                Some(total) => failed.with_context("total_lines", total),
                None => failed,
            };
        }
    };
    let mut shown = show(&window, args.start_line);
    // Only reads that showed content set the baseline, so a failed read never hides a change.
    let modified = ctx
        .read_memory
        .observe(&resolved.path, FileStamp::of(&meta));
    let time_ms = elapsed_ms(started);
    let text = summary(&args, &window, &shown, modified, time_ms);
    let lines = std::mem::take(&mut shown.lines);
    envelope(params, &window, shown, modified, &meta, text, time_ms)
        .with_shown(crate::tools::shown::Shown::Lines {
            path: resolved.relative.clone(),
            lines,
        })
        .with_path_resolved(resolved.relative)
}

/// The file `args.path` names, resolved inside the workspace and opened, with its metadata; or
/// the error envelope that says why it cannot be read (outside the root, missing, a directory,
/// not a regular file).
fn open(
    ctx: &ToolContext,
    args: &ReadArgs<'_>,
    params: &Value,
) -> Result<(Resolved, std::fs::File, std::fs::Metadata), Box<ToolResult>> {
    let path = args.path;
    let fail = |code, msg: String| Box::new(ToolResult::error(params, code, msg, 0));
    let resolved = ctx.workspace.resolve(path).map_err(|e| match e {
        PathError::Absolute | PathError::Outside => fail(
            ErrorCode::AccessDenied,
            format!("Access denied. Path '{path}' is outside project root."),
        ),
        PathError::InvalidPath(m) => fail(ErrorCode::InvalidParam, m),
        PathError::NotFound(_) => fail(
            ErrorCode::NotFound,
            format!("File '{path}' does not exist."),
        ),
        other => fail(ErrorCode::InternalError, other.to_string()),
    })?;
    let fail_at = |code, msg: String| {
        Box::new(
            ToolResult::error(params, code, msg, 0).with_path_resolved(resolved.relative.clone()),
        )
    };
    match resolved.kind {
        EntryKind::File => {}
        EntryKind::Missing => {
            return Err(fail_at(ErrorCode::NotFound, format!("File '{path}' does not exist.")))
        }
        EntryKind::Directory => {
            return Err(fail_at(
                ErrorCode::IsDirectory,
                format!("Path '{path}' is a directory. Use Glob to explore it."),
            ))
        }
        EntryKind::Special => {
            return Err(fail_at(
                ErrorCode::InvalidParam,
                format!("Path '{path}' is not a regular file (a FIFO, socket or device); only regular files can be read."),
            ))
        }
    }
    match ctx.workspace.open(&resolved) {
        Ok((file, meta)) => Ok((resolved, file, meta)),
        Err(e) => {
            let code = match e {
                PathError::NotFound(_) => ErrorCode::NotFound,
                PathError::NotRegular(_) => ErrorCode::InvalidParam,
                _ => ErrorCode::InternalError,
            };
            let msg = match e {
                PathError::NotFound(_) => format!("File '{path}' does not exist."),
                other => other.to_string(),
            };
            Err(fail_at(code, msg))
        }
    }
}

/// The window `args` asks for, from one pass over `file`; or why there is none (its code,
/// message, and the file's line count when the window starts past its end): a binary file, an
/// interrupted or failed read, a `start_line` past the end.
fn window(
    ctx: &ToolContext,
    file: std::fs::File,
    args: &ReadArgs<'_>,
) -> Result<Window, (ErrorCode, String, Option<u64>)> {
    let (path, start_line) = (args.path, args.start_line);
    let window = match scan(ctx, file, start_line, args.limit) {
        Ok(Some(w)) => w,
        Ok(None) => {
            return Err((
                ErrorCode::BinaryFile,
                format!("File '{path}' appears to be binary. Cannot read as text."),
                None,
            ))
        }
        Err(Scan::Interrupted(why)) => {
            let msg = match why {
                Interrupt::Deadline => {
                    format!("Read of '{path}' timed out; read a smaller window (start_line/limit).")
                }
                Interrupt::Cancelled => format!("Read of '{path}' was cancelled."),
            };
            return Err((ErrorCode::Timeout, msg, None));
        }
        Err(Scan::Io(e)) => {
            return Err((
                ErrorCode::InternalError,
                format!("Could not read '{path}': {e}"),
                None,
            ))
        }
    };
    let total = window.total_lines;
    if total == 0 && start_line > 1 {
        return Err((
            ErrorCode::InvalidParam,
            "start_line exceeds file length (file is empty). Valid start_line is 1.".into(),
            Some(0),
        ));
    }
    if total > 0 && start_line > total {
        return Err((
            ErrorCode::InvalidParam,
            format!(
                "start_line ({start_line}) exceeds file length ({total} lines). Valid range: 1 to {total}."
            ),
            Some(total),
        ));
    }
    Ok(window)
}

/// One line as Read shows it: its number right-aligned, ` | `, its text (`  12 | text`).
pub(crate) fn numbered(n: u64, text: &str) -> String {
    format!("{n:>4} | {text}")
}

/// The window's lines numbered from `start_line`.
fn show(window: &Window, start_line: u64) -> Shown {
    let mut content = String::new();
    let mut lines = Vec::with_capacity(window.lines.len());
    let mut replaced = window.invalid_utf8_line.is_some();
    for (i, raw) in window.lines.iter().enumerate() {
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let text = String::from_utf8_lossy(raw);
        replaced |= matches!(text, Cow::Owned(_));
        let n = start_line + i as u64;
        content.push_str(&numbered(n, &text));
        content.push('\n');
        lines.push((n, text.into_owned()));
    }
    let n = window.lines.len() as u64;
    let end = start_line + n.saturating_sub(1);
    Shown {
        content,
        lines,
        n,
        end,
        truncated: window.total_lines > 0 && end < window.total_lines,
        replaced,
    }
}

/// The result's text: what was read, how to continue, and notes on a change since the last
/// read, bytes that are not UTF-8 and lines cut for length.
fn summary(
    args: &ReadArgs<'_>,
    window: &Window,
    shown: &Shown,
    modified: bool,
    time_ms: u64,
) -> String {
    let (path, start_line) = (args.path, args.start_line);
    let (n, end, total) = (shown.n, shown.end, window.total_lines);
    let mut text = Vec::new();
    if modified {
        text.push(format!("Note: '{path}' was modified externally."));
    }
    if total == 0 {
        text.push(format!("Read 0 lines from '{path}' (file is empty)."));
    } else {
        text.push(format!(
            "Read {n} lines from '{path}' (Lines {start_line}-{end})."
        ));
    }
    text.push(format!("(Took {time_ms}ms)"));
    if shown.truncated {
        text.push(format!(
            "[Truncated: Showing {n} of {total} lines. Use start_line={} to continue ({} lines remaining).]",
            end + 1,
            total - end
        ));
    }
    if shown.replaced {
        text.push(
            "[Warning: Encoding issues detected. Some characters may be corrupted (using replacement).]"
                .into(),
        );
    }
    if let Some(line) = window.invalid_utf8_line {
        if n == 0 || line < start_line || line > end {
            text.push(format!(
                "[Note: the first bytes that are not UTF-8 are on line {line}, outside the lines shown.]"
            ));
        }
    }
    if let Some(note) = cut_note(window) {
        text.push(note);
    }
    text.join("\n")
}

/// What the result says of lines cut for length: which ones, how long they are, what is shown.
fn cut_note(window: &Window) -> Option<String> {
    let (first, first_len) = *window.cut_lines.first()?;
    if window.cut_count == 1 {
        return Some(format!(
            "[Note: line {first} is {first_len} bytes long, longer than the {MAX_LINE_BYTES} bytes Read shows of a line: only its first {MAX_LINE_BYTES} bytes are shown, the rest of it is not. Grep can find text further along it.]"
        ));
    }
    let named: Vec<String> = window
        .cut_lines
        .iter()
        .map(|(n, len)| format!("{n} ({len} bytes)"))
        .collect();
    let more = window.cut_count - window.cut_lines.len() as u64;
    Some(format!(
        "[Note: {} lines are longer than the {MAX_LINE_BYTES} bytes Read shows of a line: lines {}{}; only the first {MAX_LINE_BYTES} bytes of each are shown, the rest of them is not.]",
        window.cut_count,
        named.join(", "),
        if more > 0 { format!(" and {more} more") } else { String::new() }
    ))
}

/// The envelope of a window read: partial when it is truncated or bytes were replaced.
fn envelope(
    params: &Value,
    window: &Window,
    shown: Shown,
    modified: bool,
    meta: &std::fs::Metadata,
    text: String,
    time_ms: u64,
) -> ToolResult {
    let chars_read = shown.content.chars().count();
    let (truncated, replaced, n) = (shown.truncated, shown.replaced, shown.n);
    let mut data = Map::new();
    data.insert("content".into(), Value::from(shown.content));
    data.insert("truncated".into(), Value::from(truncated));
    if replaced {
        data.insert("fallback_encoding".into(), Value::from("replace"));
    }
    if modified {
        data.insert("modified_externally".into(), Value::from(true));
    }
    let mtime_ms = meta.mtime() * 1000 + meta.mtime_nsec() / 1_000_000;
    if window.cut_count > 0 {
        let cut: Vec<Value> = window
            .cut_lines
            .iter()
            .map(|(line, bytes)| json!({"line": line, "bytes": bytes}))
            .collect();
        data.insert("cut_lines".into(), Value::from(cut));
    }
    let result = if truncated || replaced || window.cut_count > 0 {
        ToolResult::partial(params, data, text, time_ms)
    } else {
        ToolResult::success(params, data, text, time_ms)
    };
    let result = match window.invalid_utf8_line {
        Some(line) => result.with_stat("first_invalid_utf8_line", line),
        None => result,
    };
    result
        .with_stat("lines_read", n)
        .with_stat("chars_read", chars_read)
        .with_stat("total_lines", window.total_lines)
        .with_stat("file_size_bytes", meta.len())
        .with_stat("file_mtime_ms", mtime_ms)
        .with_stat(
            "encoding",
            if replaced { "utf-8 (replace)" } else { "utf-8" },
        )
}

enum Scan {
    Interrupted(Interrupt),
    Io(std::io::Error),
}

/// Stream the file once: keep lines `start..start+limit`, count all lines, check all bytes are
/// UTF-8. `None` = binary.
fn scan(
    ctx: &ToolContext,
    mut file: std::fs::File,
    start: u64,
    limit: u64,
) -> Result<Option<Window>, Scan> {
    let mut head = Vec::with_capacity(BINARY_SNIFF_BYTES);
    (&mut file)
        .take(BINARY_SNIFF_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(Scan::Io)?;
    if memchr::memchr(0, &head).is_some() {
        return Ok(None);
    }
    let mut reader = BufReader::with_capacity(64 * 1024, Cursor::new(head).chain(file));
    let mut lines = LineCollector::new(start, limit);
    let mut last: Option<u8> = None;
    let mut utf8 = Utf8Check::default();
    let mut keys = crate::redact::PrivateKeyLines::default();
    loop {
        if let Some(why) = ctx.interrupted() {
            return Err(Scan::Interrupted(why));
        }
        let buf = reader.fill_buf().map_err(Scan::Io)?;
        if buf.is_empty() {
            break;
        }
        utf8.feed(buf, lines.line_no);
        keys.feed(buf);
        let n = buf.len();
        last = Some(buf[n - 1]);
        lines.feed(buf);
        reader.consume(n);
    }
    let unterminated = last.is_some_and(|b| b != b'\n');
    let mut window = lines.finish(unterminated, utf8.finish());
    keys.finish();
    if !keys.is_empty() {
        // A private key's body lines, wherever the window starts: no text pattern knows them.
        for (n, line) in (start..).zip(window.lines.iter_mut()) {
            if keys.contains(n) {
                *line = crate::redact::MASK.as_bytes().to_vec();
            }
        }
    }
    Ok(Some(window))
}

/// The lines of one window, collected from a stream of chunks, and the count of all lines.
struct LineCollector {
    start: u64,
    /// The last line of the window (earlier when the window reached [`MAX_WINDOW_BYTES`]).
    window_end: u64,
    lines: Vec<Vec<u8>>,
    current: Vec<u8>,
    /// The current line reached [`MAX_LINE_BYTES`].
    cut: bool,
    /// The whole length of the current line so far.
    current_len: u64,
    kept_bytes: usize,
    cut_lines: Vec<(u64, u64)>,
    cut_count: u64,
    /// The line the next byte belongs to.
    line_no: u64,
    newlines: u64,
}

impl LineCollector {
    /// A collector of lines `start..start+limit`.
    fn new(start: u64, limit: u64) -> Self {
        Self {
            start,
            window_end: start.saturating_add(limit - 1),
            lines: Vec::new(),
            current: Vec::new(),
            cut: false,
            current_len: 0,
            kept_bytes: 0,
            cut_lines: Vec::new(),
            cut_count: 0,
            line_no: 1,
            newlines: 0,
        }
    }

    /// Take the next chunk: keep what falls in the window (each line cut at
    /// [`MAX_LINE_BYTES`]), count the newlines past it.
    fn feed(&mut self, buf: &[u8]) {
        let n = buf.len();
        let mut pos = 0;
        while pos < n {
            if self.line_no > self.window_end {
                let c = memchr::memchr_iter(b'\n', &buf[pos..]).count() as u64;
                self.newlines += c;
                self.line_no += c;
                break;
            }
            let in_window = self.line_no >= self.start;
            let (piece, ended) = match memchr::memchr(b'\n', &buf[pos..]) {
                Some(i) => (&buf[pos..pos + i], true),
                None => (&buf[pos..], false),
            };
            if in_window && !self.cut {
                self.keep(piece);
            }
            if in_window {
                self.current_len += piece.len() as u64;
            }
            pos += piece.len();
            if ended {
                pos += 1;
                self.newlines += 1;
                if in_window {
                    self.end_line();
                    if self.kept_bytes >= MAX_WINDOW_BYTES {
                        self.window_end = self.line_no;
                    }
                }
                self.line_no += 1;
            }
        }
    }

    /// The current line of the window is whole: keep it, and its length when it was cut.
    fn end_line(&mut self) {
        if self.cut {
            self.cut_count += 1;
            if self.cut_lines.len() < NAMED_CUT_LINES {
                self.cut_lines.push((self.line_no, self.current_len));
            }
        }
        self.kept_bytes += self.current.len();
        self.lines.push(std::mem::take(&mut self.current));
        self.cut = false;
        self.current_len = 0;
    }

    /// Add `piece` to the current line, up to [`MAX_LINE_BYTES`] (a cut never splits a
    /// character).
    fn keep(&mut self, piece: &[u8]) {
        let room = MAX_LINE_BYTES - self.current.len();
        if piece.len() > room {
            self.cut = true;
            self.current.extend_from_slice(&piece[..room]);
            if is_continuation(piece[room]) {
                drop_partial_char(&mut self.current);
            }
        } else {
            self.current.extend_from_slice(piece);
        }
    }

    /// The window, once the stream ended (`unterminated`: its last byte was not a newline).
    fn finish(mut self, unterminated: bool, invalid_utf8_line: Option<u64>) -> Window {
        if unterminated && self.line_no >= self.start && self.line_no <= self.window_end {
            self.end_line();
        }
        Window {
            lines: self.lines,
            total_lines: self.newlines + u64::from(unterminated),
            cut_lines: self.cut_lines,
            cut_count: self.cut_count,
            invalid_utf8_line,
        }
    }
}

fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

/// Drop the start of a character whose rest was cut off, so a cut long line of valid UTF-8 does
/// not show a replacement character (and so raise a false encoding warning).
fn drop_partial_char(line: &mut Vec<u8>) {
    for _ in 0..3 {
        match line.last() {
            Some(&b) if is_continuation(b) => {
                line.pop();
            }
            _ => break,
        }
    }
    if line.last().is_some_and(|&b| b >= 0xC0) {
        line.pop();
    }
}

/// UTF-8 validation of a byte stream fed in chunks that may split a character.
#[derive(Default)]
struct Utf8Check {
    /// The start of a character cut by the chunk end (at most 3 bytes) and its line.
    pending: Vec<u8>,
    pending_line: u64,
    /// The line of the first invalid byte; once set, the rest is not checked.
    invalid: Option<u64>,
}

impl Utf8Check {
    /// Check `buf`, whose first byte is on line `line`.
    fn feed(&mut self, buf: &[u8], line: u64) {
        if self.invalid.is_some() {
            return;
        }
        let mut from = 0;
        if !self.pending.is_empty() {
            // Complete the split character one byte at a time (it needs at most 3 more).
            while from < buf.len() && self.pending.len() < 4 {
                self.pending.push(buf[from]);
                from += 1;
                match std::str::from_utf8(&self.pending) {
                    Ok(_) => break,
                    Err(e) if e.error_len().is_some() => {
                        self.invalid = Some(self.pending_line);
                        return;
                    }
                    Err(_) => {}
                }
            }
            if std::str::from_utf8(&self.pending).is_err() {
                return; // still incomplete: the chunk was tiny
            }
            self.pending.clear();
        }
        let rest = &buf[from..];
        if let Err(e) = std::str::from_utf8(rest) {
            let at = e.valid_up_to();
            let line_at = line + memchr::memchr_iter(b'\n', &buf[..from + at]).count() as u64;
            match e.error_len() {
                Some(_) => self.invalid = Some(line_at),
                None => {
                    self.pending.extend_from_slice(&rest[at..]);
                    self.pending_line = line_at;
                }
            }
        }
    }

    /// The line of the first invalid byte; a character cut by the end of the file is invalid.
    fn finish(self) -> Option<u64> {
        match self.invalid {
            Some(line) => Some(line),
            None if !self.pending.is_empty() => Some(self.pending_line),
            None => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::workspace::Workspace;

    fn setup(files: &[(&str, &[u8])]) -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        for (name, body) in files {
            std::fs::write(dir.path().join(name), body).unwrap();
        }
        let ctx = ToolContext::new(Workspace::new(dir.path()).unwrap());
        (dir, ctx)
    }

    /// The result with the clock-dependent parts blanked, for whole-object comparison.
    fn stable(r: &ToolResult) -> Value {
        let mut v = r.to_value();
        v["stats"]["time_ms"] = json!(0);
        if v["stats"].get("file_mtime_ms").is_some() {
            v["stats"]["file_mtime_ms"] = json!(0);
        }
        if let Some(t) = v["text"].as_str() {
            let t = regex::Regex::new(r"\(Took \d+ms\)")
                .unwrap()
                .replace(t, "(Took Nms)");
            v["text"] = json!(t);
        }
        v
    }

    #[test]
    fn a_private_keys_body_is_masked_wherever_the_window_starts() {
        let pem = b"x = 1\n-----BEGIN PRIVATE KEY-----\nAAAAsecretline1\nBBBBsecretline2\nCCCCsecretline3\n-----END PRIVATE KEY-----\ny = 2\n";
        let (_dir, ctx) = setup(&[("k.pem", pem)]);
        let read = |start: u64, limit: u64| {
            ReadTool
                .run(
                    &ctx,
                    &json!({"path": "k.pem", "start_line": start, "limit": limit}),
                )
                .to_value()["data"]["content"]
                .as_str()
                .unwrap()
                .to_string()
        };
        assert_eq!(read(4, 1), "   4 | ***\n");
        assert_eq!(
            read(1, 10),
            "   1 | x = 1\n   2 | -----BEGIN PRIVATE KEY-----\n   3 | ***\n   4 | ***\n   5 | ***\n   6 | -----END PRIVATE KEY-----\n   7 | y = 2\n"
        );
    }

    #[test]
    fn window_and_continuation() {
        let (_d, ctx) = setup(&[("a.txt", b"l1\nl2\nl3\nl4\nl5\n")]);
        let args = json!({"path": "a.txt", "start_line": 2, "limit": 2});
        assert_eq!(
            stable(&ReadTool.run(&ctx, &args)),
            json!({
                "status": "partial",
                "data": {"content": "   2 | l2\n   3 | l3\n", "truncated": true},
                "text": "Read 2 lines from 'a.txt' (Lines 2-3).\n(Took Nms)\n[Truncated: Showing 2 of 5 lines. Use start_line=4 to continue (2 lines remaining).]",
                "stats": {"time_ms": 0, "lines_read": 2, "chars_read": 20, "total_lines": 5,
                          "file_size_bytes": 15, "file_mtime_ms": 0, "encoding": "utf-8"},
                "context": {"cwd": ".", "params_input": args, "path_resolved": "a.txt"}
            })
        );
    }

    #[test]
    fn crlf_u2028_and_unterminated_last_line() {
        let (_d, ctx) = setup(&[("w.txt", "a\r\nb\u{2028}c\x0cd\r\ne".as_bytes())]);
        let r = ReadTool.run(&ctx, &json!({"path": "w.txt"}));
        assert_eq!(r.status, crate::tools::envelope::ToolStatus::Success);
        assert_eq!(
            r.data["content"],
            json!("   1 | a\n   2 | b\u{2028}c\x0cd\n   3 | e\n")
        );
        assert_eq!(r.stats["total_lines"], json!(3));
    }

    #[test]
    fn invalid_utf8_is_replaced_and_flagged() {
        let (_d, ctx) = setup(&[("l.txt", b"caf\xe9\nok\n")]);
        let r = ReadTool.run(&ctx, &json!({"path": "l.txt"}));
        let v = stable(&r);
        assert_eq!(v["status"], "partial");
        assert_eq!(
            v["data"],
            json!({"content": "   1 | caf\u{FFFD}\n   2 | ok\n", "truncated": false, "fallback_encoding": "replace"})
        );
        assert_eq!(v["stats"]["encoding"], "utf-8 (replace)");
        assert_eq!(
            v["text"],
            "Read 2 lines from 'l.txt' (Lines 1-2).\n(Took Nms)\n[Warning: Encoding issues detected. Some characters may be corrupted (using replacement).]"
        );
    }

    #[test]
    fn long_line_is_cut() {
        let mut body = vec![b'x'; MAX_LINE_BYTES + 10];
        body.push(b'\n');
        let (_d, ctx) = setup(&[("big.txt", &body)]);
        let r = ReadTool.run(&ctx, &json!({"path": "big.txt"}));
        assert_eq!(
            r.data["content"].as_str().unwrap().len(),
            MAX_LINE_BYTES + "   1 | \n".len()
        );
        assert_eq!(r.status, crate::tools::envelope::ToolStatus::Partial);
        let len = MAX_LINE_BYTES + 10;
        assert!(
            r.text.contains(&format!("line 1 is {len} bytes long, longer than the {MAX_LINE_BYTES} bytes Read shows of a line: only its first {MAX_LINE_BYTES} bytes are shown")),
            "{}",
            r.text
        );
        assert_eq!(r.data["cut_lines"], json!([{"line": 1, "bytes": len}]));
    }

    #[test]
    fn a_line_far_over_the_limit_is_shown_cut_within_the_result_budget_and_named() {
        // Lines 2 and 4 are long (4 unterminated): each is shown cut, named with its length, and
        // the whole result still fits one result's budget (so it is never replaced by a preview
        // that cannot show the line).
        let long = vec![b'y'; 3 << 20];
        let mut body = b"short\n".to_vec();
        body.extend_from_slice(&long);
        body.extend_from_slice(b" NEEDLE\nthree\n");
        body.extend_from_slice(&long);
        let (_d, ctx) = setup(&[("one.txt", &body)]);
        let r = ReadTool.run(&ctx, &json!({"path": "one.txt"}));
        let budgeted = crate::tools::budget::OutputBudget::default().apply("Read", r.clone());
        assert_eq!(
            budgeted.data.get("truncated"),
            Some(&json!(false)),
            "{}",
            budgeted.text
        );
        let content = r.data["content"].as_str().unwrap();
        assert!(
            content.starts_with("   1 | short\n   2 | yyyy"),
            "{}",
            &content[..40]
        );
        assert!(content.contains("\n   3 | three\n   4 | yyy"));
        let (two, four) = ((3 << 20) + 7, 3 << 20);
        assert!(
            r.text.contains(&format!("2 lines are longer than the {MAX_LINE_BYTES} bytes Read shows of a line: lines 2 ({two} bytes), 4 ({four} bytes)")),
            "{}",
            r.text
        );
    }

    #[test]
    fn window_byte_cap_ends_window_early() {
        let line = "y".repeat(MAX_LINE_BYTES - 1) + "\n";
        let per_window = MAX_WINDOW_BYTES.div_ceil(MAX_LINE_BYTES - 1);
        let body = line.repeat(per_window + 3);
        let (_d, ctx) = setup(&[("w.txt", body.as_bytes())]);
        let r = ReadTool.run(&ctx, &json!({"path": "w.txt", "limit": 2000}));
        assert_eq!(r.stats["lines_read"], json!(per_window));
        assert_eq!(r.stats["total_lines"], json!(per_window + 3));
        assert_eq!(r.data["truncated"], json!(true));
    }

    #[test]
    fn binary_and_empty() {
        let (_d, ctx) = setup(&[("b.bin", b"ab\0cd"), ("e.txt", b"")]);
        let r = ReadTool.run(&ctx, &json!({"path": "b.bin"}));
        assert_eq!(
            r.error.unwrap().message,
            "File 'b.bin' appears to be binary. Cannot read as text."
        );
        let e = stable(&ReadTool.run(&ctx, &json!({"path": "e.txt"})));
        assert_eq!(e["status"], "success");
        assert_eq!(e["data"], json!({"content": "", "truncated": false}));
        assert_eq!(
            e["text"],
            "Read 0 lines from 'e.txt' (file is empty).\n(Took Nms)"
        );
        let past = ReadTool.run(&ctx, &json!({"path": "e.txt", "start_line": 2}));
        assert_eq!(
            past.to_value()["error"],
            json!({"code": "INVALID_PARAM", "message": "start_line exceeds file length (file is empty). Valid start_line is 1."})
        );
        assert_eq!(past.context["total_lines"], json!(0));
    }

    #[test]
    fn numbering_widens_past_9999() {
        let body: String = (1..=10001).map(|i| format!("{i}\n")).collect();
        let (_d, ctx) = setup(&[("n.txt", body.as_bytes())]);
        let r = ReadTool.run(
            &ctx,
            &json!({"path": "n.txt", "start_line": 9999, "limit": 3}),
        );
        assert_eq!(
            r.data["content"],
            json!("9999 | 9999\n10000 | 10000\n10001 | 10001\n")
        );
        assert_eq!(r.status, crate::tools::envelope::ToolStatus::Success);
    }

    #[test]
    fn utf8_check_holds_for_every_chunk_split() {
        let valid = "a\u{e9}\n\u{20ac}\u{1F600}z\n".as_bytes();
        // (bytes, line of the first invalid byte)
        let cases: Vec<(Vec<u8>, Option<u64>)> = vec![
            (valid.to_vec(), None),
            ([valid, b"\xff\n"].concat(), Some(3)),
            ([valid, b"ok\xe2\x82"].concat(), Some(3)), // cut by the end of the file
            ([b"x\n", &valid[..5], b"\n"].concat(), Some(3)), // a split euro sign, then \n
            (b"\xed\xa0\x80\n".to_vec(), Some(1)),      // a surrogate
        ];
        for (bytes, want) in cases {
            for size in 1..=bytes.len() {
                let mut check = Utf8Check::default();
                let mut line = 1;
                for chunk in bytes.chunks(size) {
                    check.feed(chunk, line);
                    line += memchr::memchr_iter(b'\n', chunk).count() as u64;
                }
                assert_eq!(check.finish(), want, "{bytes:?} in chunks of {size}");
            }
        }
    }

    #[test]
    fn invalid_utf8_outside_the_window_is_still_reported() {
        // The bad byte sits past the first 64 KiB read, far from the lines shown.
        let mut body = "clean\n".repeat(20_000).into_bytes();
        body.extend_from_slice(b"caf\xe9\n");
        let (_d, ctx) = setup(&[("l.txt", &body)]);
        let args = json!({"path": "l.txt", "limit": 2});
        assert_eq!(
            stable(&ReadTool.run(&ctx, &args)),
            json!({
                "status": "partial",
                "data": {"content": "   1 | clean\n   2 | clean\n", "truncated": true,
                         "fallback_encoding": "replace"},
                "text": "Read 2 lines from 'l.txt' (Lines 1-2).\n(Took Nms)\n[Truncated: Showing 2 of 20001 lines. Use start_line=3 to continue (19999 lines remaining).]\n[Warning: Encoding issues detected. Some characters may be corrupted (using replacement).]\n[Note: the first bytes that are not UTF-8 are on line 20001, outside the lines shown.]",
                "stats": {"time_ms": 0, "lines_read": 2, "chars_read": 26, "total_lines": 20001,
                          "file_size_bytes": body.len(), "file_mtime_ms": 0,
                          "encoding": "utf-8 (replace)", "first_invalid_utf8_line": 20001},
                "context": {"cwd": ".", "params_input": args, "path_resolved": "l.txt"}
            })
        );
        // A window on the bad line itself needs no pointer to it.
        let at = ReadTool.run(&ctx, &json!({"path": "l.txt", "start_line": 20001}));
        assert_eq!(at.data["content"], json!("20001 | caf\u{FFFD}\n"));
        assert!(!at.text.contains("[Note"), "{}", at.text);
    }

    #[test]
    fn a_cut_long_line_of_valid_utf8_raises_no_encoding_warning() {
        // "é" is 2 bytes: with one leading "x" the cut at MAX_LINE_BYTES splits one of them.
        let body = format!("x{}\n", "\u{e9}".repeat(MAX_LINE_BYTES / 2 + 4));
        let (_d, ctx) = setup(&[("u.txt", body.as_bytes())]);
        let r = ReadTool.run(&ctx, &json!({"path": "u.txt"}));
        assert_eq!(r.status, crate::tools::envelope::ToolStatus::Partial);
        assert_eq!(r.data.get("fallback_encoding"), None);
        assert_eq!(r.stats["encoding"], json!("utf-8"));
        let content = r.data["content"].as_str().unwrap();
        assert!(!content.contains('\u{FFFD}'));
        assert_eq!(content.len(), "   1 | \n".len() + MAX_LINE_BYTES - 1);
    }

    /// Rewrite `path` keeping its mtime, so only the size (or nothing) tells the change.
    fn rewrite_keeping_mtime(path: &std::path::Path, body: &[u8]) {
        let mtime = std::fs::metadata(path).unwrap().modified().unwrap();
        std::fs::write(path, body).unwrap();
        let f = std::fs::File::options().write(true).open(path).unwrap();
        f.set_modified(mtime).unwrap();
    }

    #[test]
    fn modified_externally_is_per_context_and_sees_size() {
        let (dir, ctx) = setup(&[("m.txt", b"one\n")]);
        let path = dir.path().join("m.txt");
        let args = json!({"path": "m.txt"});
        let first = stable(&ReadTool.run(&ctx, &args));
        assert_eq!(
            first["data"],
            json!({"content": "   1 | one\n", "truncated": false})
        );
        let again = stable(&ReadTool.run(&ctx, &args));
        assert_eq!(again, first, "an unchanged file is not flagged");

        rewrite_keeping_mtime(&path, b"three\n");
        let other_child = ToolContext::new(ctx.workspace.clone());
        let changed = stable(&ReadTool.run(&ctx, &args));
        assert_eq!(
            changed,
            json!({
                "status": "success",
                "data": {"content": "   1 | three\n", "truncated": false, "modified_externally": true},
                "text": "Note: 'm.txt' was modified externally.\nRead 1 lines from 'm.txt' (Lines 1-1).\n(Took Nms)",
                "stats": {"time_ms": 0, "lines_read": 1, "chars_read": 13, "total_lines": 1,
                          "file_size_bytes": 6, "file_mtime_ms": 0, "encoding": "utf-8"},
                "context": {"cwd": ".", "params_input": args, "path_resolved": "m.txt"}
            })
        );
        assert_eq!(
            ReadTool.run(&ctx, &args).data.get("modified_externally"),
            None,
            "the flag is for the read right after the change only"
        );
        assert_eq!(
            ReadTool
                .run(&other_child, &args)
                .data
                .get("modified_externally"),
            None,
            "another child never read the file before"
        );
    }

    #[test]
    fn a_failed_read_sets_no_baseline() {
        let (dir, ctx) = setup(&[("f.txt", b"a\n")]);
        let refused = ReadTool.run(&ctx, &json!({"path": "f.txt", "start_line": 5}));
        assert_eq!(refused.status, crate::tools::envelope::ToolStatus::Error);
        assert!(ctx.read_memory.is_empty());
        std::fs::write(dir.path().join("f.txt"), b"a\nb\n").unwrap();
        let r = ReadTool.run(&ctx, &json!({"path": "f.txt"}));
        assert_eq!(r.data.get("modified_externally"), None);
        assert_eq!(ctx.read_memory.len(), 1);
    }
}
