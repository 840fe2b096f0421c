//! Grep: a regex search over the files under a directory, in process (ripgrep's crates).
//!
//! The walk is parallel (one [`Searcher`] per thread, reused for every file). Results are sorted
//! by (file, line) and cut to `limit`; to stop early, each file stops after the matches it could
//! contribute, and once `limit + 1` matches are known, files and directories whose path sorts
//! after the last one that could still matter are skipped. Lines are split on `\n` only, matched
//! line text that is not UTF-8 is decoded with replacement characters, and files with a NUL byte
//! are skipped as binary.
//!
//! ```
//! use outrider::tools::{context::ToolContext, grep::GrepTool, registry::Tool, workspace::Workspace};
//! use serde_json::json;
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(dir.path().join("a.py"), "import os\ndef main():\n    pass\n").unwrap();
//! let ctx = ToolContext::new(Workspace::new(dir.path()).unwrap());
//! let r = GrepTool.run(&ctx, &json!({"pattern": "DEF MAIN"}));
//! assert_eq!(r.data["matches"], json!([{"file": "a.py", "line": 2, "text": "def main():"}]));
//! ```

use std::collections::{BTreeMap, BinaryHeap};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use globset::{GlobBuilder, GlobMatcher};
use grep_matcher::LineTerminator;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::WalkState;
use serde_json::{json, Map, Value};

use super::context::{Interrupt, ToolContext};
use super::envelope::{elapsed_ms, ErrorCode, ToolResult};
use super::params;
use super::registry::Tool;
use super::walk::{self, WalkRules, DEFAULT_RESULT_LIMIT, MAX_RESULT_LIMIT};

/// Characters of one line kept in a result; longer lines are cut and marked.
pub const MAX_LINE_CHARS: usize = 2000;
/// The marker that ends a cut line (1 987 kept characters + this = 2 000).
pub const LINE_TRUNCATION_MARKER: &str = "… [truncated]";
/// The most context lines before or after a match.
pub const MAX_CONTEXT_LINES: i64 = 20;
/// A single line longer than this makes the searcher give up on that file.
const HEAP_LIMIT: usize = 64 << 20;

const ACCEPTED: [&str; 12] = [
    "pattern",
    "path",
    "glob",
    "case_sensitive",
    "limit",
    "output_mode",
    "context",
    "before",
    "after",
    "type",
    "include_hidden",
    "include_ignored",
];

/// The Grep tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct GrepTool;

/// What Grep returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputMode {
    /// Matching lines: `data.matches[{file, line, text[, before, after]}]`.
    Content,
    /// Files with at least one match: `data.files[...]`.
    FilesWithMatches,
    /// Matching lines per file: `data.counts[{file, count}]`.
    Count,
}

impl OutputMode {
    fn parse(s: &str) -> Option<Self> {
        match s {
            "content" => Some(OutputMode::Content),
            "files_with_matches" => Some(OutputMode::FilesWithMatches),
            "count" => Some(OutputMode::Count),
            _ => None,
        }
    }
}

impl Tool for GrepTool {
    fn name(&self) -> &'static str {
        "Grep"
    }

    fn description(&self) -> std::borrow::Cow<'static, str> {
        "Search file contents with a regular expression (Rust regex syntax: no look-around or \
         backreferences) under a directory of the project. Case-insensitive unless \
         case_sensitive is true. Returns matching lines as {file, line, text}, sorted by file \
         and line, at most `limit` (default 100, max 200); more matches make the result partial, \
         so narrow `path`, `glob`, `type` or the pattern. Skips binary files, hidden files, \
         .gitignore'd files and build/dependency folders (node_modules, target, .venv, ...) \
         unless include_hidden / include_ignored. Use output_mode \"files_with_matches\" to find \
         files, \"count\" for counts per file, and context/before/after for surrounding lines. \
         Follow up with Read on the lines you need."
            .into()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "description": "Regular expression to search for (Rust regex syntax), matched within one line. Escape literal metacharacters, e.g. 'foo\\(' to find 'foo('."
                },
                "path": {
                    "type": "string",
                    "description": "Directory to search, relative to the project root.",
                    "default": "."
                },
                "glob": {
                    "type": "string",
                    "description": "Only search files matching this glob. Without '/', it matches the file name at any depth ('*.py', '*.{ts,tsx}'); with '/', the path relative to `path` ('src/**/*.rs'). Supports *, ?, [a-z], {a,b} and **."
                },
                "type": {
                    "type": "string",
                    "description": format!("Only search files of this ripgrep file type, e.g. {}.", walk::COMMON_TYPES)
                },
                "case_sensitive": {
                    "type": "boolean",
                    "description": "Match case exactly. By default the search ignores case.",
                    "default": false
                },
                "output_mode": {
                    "type": "string",
                    "enum": ["content", "files_with_matches", "count"],
                    "description": "content: matching lines; files_with_matches: file paths only; count: matching lines per file.",
                    "default": "content"
                },
                "context": {
                    "type": "integer",
                    "description": "Lines of context before and after each match (content mode).",
                    "default": 0,
                    "minimum": 0,
                    "maximum": MAX_CONTEXT_LINES
                },
                "before": {
                    "type": "integer",
                    "description": "Lines of context before each match; overrides context.",
                    "minimum": 0,
                    "maximum": MAX_CONTEXT_LINES
                },
                "after": {
                    "type": "integer",
                    "description": "Lines of context after each match; overrides context.",
                    "minimum": 0,
                    "maximum": MAX_CONTEXT_LINES
                },
                "limit": {
                    "type": "integer",
                    "description": "Most results to return (lines, files or counts, by output_mode).",
                    "default": DEFAULT_RESULT_LIMIT,
                    "minimum": 1,
                    "maximum": MAX_RESULT_LIMIT
                },
                "include_hidden": {
                    "type": "boolean",
                    "description": "Also search files and folders whose name starts with '.'.",
                    "default": false
                },
                "include_ignored": {
                    "type": "boolean",
                    "description": "Also search .gitignore'd files and build/dependency folders (node_modules, target, dist, .venv, ...).",
                    "default": false
                }
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }

    fn run(&self, ctx: &ToolContext, args: &Value) -> ToolResult {
        grep(ctx, args)
    }
}

/// Validated arguments.
struct Request {
    pattern: String,
    path: String,
    glob: Option<FileGlob>,
    case_sensitive: bool,
    limit: usize,
    mode: OutputMode,
    before: usize,
    after: usize,
    rules: WalkRules,
}

/// A glob filter: on the file name when the glob has no `/`, else on the path under the root.
struct FileGlob {
    matcher: GlobMatcher,
    on_name: bool,
}

impl FileGlob {
    fn is_match(&self, rel_to_search: &Path) -> bool {
        if self.on_name {
            rel_to_search
                .file_name()
                .is_some_and(|n| self.matcher.is_match(n))
        } else {
            self.matcher.is_match(rel_to_search)
        }
    }
}

/// Build a `*`-does-not-cross-`/` glob; leading `./` and `/` are dropped.
pub(crate) fn build_glob(pattern: &str) -> Result<GlobMatcher, String> {
    static GLOBS: super::memo::Memo<GlobMatcher> = super::memo::Memo::new();
    GLOBS.get_or_try(pattern, || {
        let normalized = normalize_glob(pattern);
        GlobBuilder::new(&normalized)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map(|g| g.compile_matcher())
            .map_err(|e| format!("Invalid glob pattern '{pattern}': {}", e.kind()))
    })
}

/// The reference's normalisation: leading "/" and "./" are stripped.
pub(crate) fn normalize_glob(pattern: &str) -> String {
    let mut p = pattern;
    loop {
        if let Some(rest) = p.strip_prefix("./") {
            p = rest;
        } else if let Some(rest) = p.strip_prefix('/') {
            p = rest;
        } else {
            return p.to_string();
        }
    }
}

fn parse(params: &Value) -> Result<Request, String> {
    let args = params
        .as_object()
        .ok_or("Grep arguments must be a JSON object.")?;
    let pattern = match params::get(args, "pattern") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => return Err("pattern must be a non-empty string.".into()),
    };
    let (Ok(path), Ok(glob)) = (params::str_opt(args, "path"), params::str_opt(args, "glob"))
    else {
        return Err("path and glob must be strings.".into());
    };
    if glob == Some("") {
        return Err("glob must not be empty when supplied.".into());
    }
    let Ok(case_sensitive) = params::bool_or(args, "case_sensitive", false) else {
        return Err("case_sensitive must be a boolean.".into());
    };
    let Ok(limit) = params::int_in(args, "limit", DEFAULT_RESULT_LIMIT, 1, MAX_RESULT_LIMIT) else {
        return Err("limit must be an integer between 1 and 200.".into());
    };
    let mode = match params::get(args, "output_mode") {
        None => OutputMode::Content,
        Some(v) => v.as_str().and_then(OutputMode::parse).ok_or_else(|| {
            format!("output_mode must be one of 'content', 'files_with_matches', 'count'; got {v}.")
        })?,
    };
    let mut context = [0usize; 3];
    for (slot, key) in context.iter_mut().zip(["context", "before", "after"]) {
        *slot = params::int_in(args, key, 0, 0, MAX_CONTEXT_LINES)
            .map_err(|_| format!("{key} must be an integer between 0 and {MAX_CONTEXT_LINES}."))?
            as usize;
    }
    let before = if params::get(args, "before").is_some() {
        context[1]
    } else {
        context[0]
    };
    let after = if params::get(args, "after").is_some() {
        context[2]
    } else {
        context[0]
    };
    let (Ok(include_hidden), Ok(include_ignored)) = (
        params::bool_or(args, "include_hidden", false),
        params::bool_or(args, "include_ignored", false),
    ) else {
        return Err("include_hidden and include_ignored must be booleans.".into());
    };
    let types = match params::str_opt(args, "type") {
        Err(()) => return Err("type must be a string naming a ripgrep file type.".into()),
        Ok(None) => None,
        Ok(Some(name)) => Some(walk::select_type(name)?),
    };
    if let Some(msg) = params::unknown_arguments("Grep", args, &ACCEPTED) {
        return Err(msg);
    }
    let glob = match glob {
        None => None,
        Some(g) => {
            let normalized = normalize_glob(g);
            Some(FileGlob {
                matcher: build_glob(g)?,
                on_name: !normalized.contains('/'),
            })
        }
    };
    let path = match path {
        None | Some("") => ".".to_string(),
        Some(p) => p.to_string(),
    };
    Ok(Request {
        pattern,
        path,
        glob,
        case_sensitive,
        limit: limit as usize,
        mode,
        before,
        after,
        rules: WalkRules {
            include_hidden,
            include_ignored,
            types,
        },
    })
}

fn build_matcher(req: &Request) -> Result<RegexMatcher, String> {
    static REGEXES: super::memo::Memo<RegexMatcher> = super::memo::Memo::new();
    let key = format!("{}\0{}", req.case_sensitive, req.pattern);
    REGEXES.get_or_try(&key, || {
        RegexMatcherBuilder::new()
            .case_insensitive(!req.case_sensitive)
            // (?m): ^ and $ match at line boundaries inside the searcher's buffer, as in ripgrep.
            .multi_line(true)
            .crlf(true)
            .ban_byte(Some(0))
            .build(&req.pattern)
            .map_err(|e| format!("Invalid regex pattern: {e}"))
    })
}

/// One match, or one file, as collected from a file.
#[derive(Debug, Clone)]
struct Hit {
    line: u64,
    text: String,
    before: Vec<String>,
    after: Vec<String>,
}

/// What one file contributed.
#[derive(Debug)]
struct FileHits {
    rel: String,
    hits: Vec<Hit>,
    count: u64,
    more: bool,
}

/// State shared by the walker threads.
struct Shared {
    limit: usize,
    /// The smallest `limit + 1` keys seen so far (a max-heap): past that, nothing can matter.
    best: Mutex<BinaryHeap<(String, u64)>>,
    /// Path after which files and directories are skipped (set once `best` is full).
    cutoff: Mutex<Option<Arc<str>>>,
    files: Mutex<Vec<FileHits>>,
    searched: AtomicU64,
    interrupted: Mutex<Option<Interrupt>>,
    io_errors: AtomicU64,
}

impl Shared {
    fn beyond_cutoff(&self, rel: &str) -> bool {
        let cutoff = self.cutoff.lock().unwrap_or_else(|e| e.into_inner());
        cutoff.as_deref().is_some_and(|c| rel > c)
    }

    fn add(&self, file: FileHits, keys: impl Iterator<Item = u64>) {
        {
            let mut best = self.best.lock().unwrap_or_else(|e| e.into_inner());
            for line in keys {
                let key = (file.rel.clone(), line);
                if best.len() <= self.limit {
                    best.push(key);
                } else if best.peek().is_some_and(|top| key < *top) {
                    best.pop();
                    best.push(key);
                } else {
                    break;
                }
            }
            if best.len() > self.limit {
                if let Some((path, _)) = best.peek() {
                    *self.cutoff.lock().unwrap_or_else(|e| e.into_inner()) =
                        Some(Arc::from(path.as_str()));
                }
            }
        }
        self.files
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(file);
    }
}

/// A reader that fails once the call's deadline passes or it is cancelled.
struct Guarded<'a, R> {
    inner: R,
    ctx: &'a ToolContext,
}

impl<R: Read> Read for Guarded<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(why) = self.ctx.interrupted() {
            return Err(io::Error::new(io::ErrorKind::TimedOut, format!("{why:?}")));
        }
        self.inner.read(buf)
    }
}

/// Collects one file's lines for the searcher.
struct FileSink {
    mode: OutputMode,
    limit: usize,
    after: usize,
    hits: Vec<u64>,
    count: u64,
    more: bool,
    binary: bool,
    /// Text of every matched and context line seen, by line number.
    lines: BTreeMap<u64, String>,
    /// After the `limit`-th match: the last line whose text is still needed as context.
    need_until: Option<u64>,
}

impl FileSink {
    fn new(mode: OutputMode, limit: usize, after: usize) -> Self {
        FileSink {
            mode,
            limit,
            after,
            hits: Vec::new(),
            count: 0,
            more: false,
            binary: false,
            lines: BTreeMap::new(),
            need_until: None,
        }
    }
}

fn line_text(bytes: &[u8]) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    String::from_utf8_lossy(bytes).into_owned()
}

impl Sink for FileSink {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        let line = mat.line_number().unwrap_or(0);
        match self.mode {
            OutputMode::FilesWithMatches => {
                self.count = 1;
                return Ok(false);
            }
            OutputMode::Count => {
                self.count += 1;
                return Ok(true);
            }
            OutputMode::Content => {}
        }
        if self.hits.len() < self.limit {
            self.hits.push(line);
            self.lines.insert(line, line_text(mat.bytes()));
            if self.hits.len() == self.limit {
                self.need_until = Some(line + self.after as u64);
            }
            return Ok(true);
        }
        self.more = true;
        match self.need_until {
            Some(until) if line <= until => {
                self.lines.insert(line, line_text(mat.bytes()));
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, io::Error> {
        let line = ctx.line_number().unwrap_or(0);
        if self.need_until.is_none_or(|until| line <= until) {
            self.lines.insert(line, line_text(ctx.bytes()));
        }
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }
}

impl FileSink {
    fn into_hits(self, rel: String, before: usize) -> FileHits {
        let lines = &self.lines;
        let around = |from: u64, to: u64| -> Vec<String> {
            lines.range(from..=to).map(|(_, t)| t.clone()).collect()
        };
        let hits = self
            .hits
            .iter()
            .map(|&n| Hit {
                line: n,
                text: lines.get(&n).cloned().unwrap_or_default(),
                before: if before > 0 && n > 1 {
                    around(n.saturating_sub(before as u64).max(1), n - 1)
                } else {
                    Vec::new()
                },
                after: if self.after > 0 {
                    around(n + 1, n + self.after as u64)
                } else {
                    Vec::new()
                },
            })
            .collect();
        FileHits {
            rel,
            hits,
            count: self.count,
            more: self.more,
        }
    }
}

fn open_walked(path: &Path) -> io::Result<std::fs::File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    if !file.metadata()?.file_type().is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    Ok(file)
}

fn grep(ctx: &ToolContext, params: &Value) -> ToolResult {
    let started = Instant::now();
    if let Err(e) = params::object("Grep", params) {
        return *e;
    }
    let invalid = |msg: String| ToolResult::error(params, ErrorCode::InvalidParam, msg, 0);
    let req = match parse(params) {
        Ok(r) => r,
        Err(msg) => return invalid(msg),
    };
    let matcher = match build_matcher(&req) {
        Ok(m) => m,
        Err(msg) => return invalid(msg),
    };
    let ws = &ctx.workspace;
    let root = match walk::search_root(ws, &req.path, params, 0) {
        Ok(r) => r,
        Err(e) => return *e,
    };
    let rel_root = root.relative.clone();
    let search_dir = root.path.clone();

    let shared = Shared {
        limit: req.limit,
        best: Mutex::new(BinaryHeap::new()),
        cutoff: Mutex::new(None),
        files: Mutex::new(Vec::new()),
        searched: AtomicU64::new(0),
        interrupted: Mutex::new(None),
        io_errors: AtomicU64::new(0),
    };
    let mut searcher_builder = SearcherBuilder::new();
    searcher_builder
        .line_number(true)
        .line_terminator(LineTerminator::crlf())
        .binary_detection(BinaryDetection::quit(0))
        .heap_limit(Some(HEAP_LIMIT))
        // No UTF-16 transcoding: a file Read calls binary is binary here too.
        .bom_sniffing(false);
    if req.mode == OutputMode::Content {
        searcher_builder
            .before_context(req.before)
            .after_context(req.after);
    }
    let ws_root: PathBuf = ws.root().to_path_buf();

    let builder = walk::walker(ws, &search_dir, &req.rules);
    walk::visit_walk(
        &builder,
        &mut walk::FnVisitors(|| -> Box<dyn FnMut(Result<ignore::DirEntry, ignore::Error>) -> WalkState + Send + '_> {
            let mut searcher = searcher_builder.build();
            let (shared, matcher, req, ws_root, search_dir) =
                (&shared, &matcher, &req, &ws_root, &search_dir);
            Box::new(move |entry| {
                if let Some(why) = ctx.interrupted() {
                    *shared.interrupted.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
                    return WalkState::Quit;
                }
                let Ok(entry) = entry else {
                    return WalkState::Continue;
                };
                let Some(ft) = entry.file_type() else {
                    return WalkState::Continue;
                };
                let rel = walk::rel_str(entry.path(), ws_root);
                if ft.is_dir() {
                    if entry.depth() > 0 && shared.beyond_cutoff(&rel) {
                        return WalkState::Skip;
                    }
                    return WalkState::Continue;
                }
                if !ft.is_file() {
                    return WalkState::Continue;
                }
                if let Some(glob) = &req.glob {
                    let under = entry
                        .path()
                        .strip_prefix(search_dir)
                        .unwrap_or(entry.path());
                    if !glob.is_match(under) {
                        return WalkState::Continue;
                    }
                }
                if shared.beyond_cutoff(&rel) {
                    return WalkState::Continue;
                }
                let file = match open_walked(entry.path()) {
                    Ok(f) => f,
                    Err(_) => {
                        shared.io_errors.fetch_add(1, Ordering::Relaxed);
                        return WalkState::Continue;
                    }
                };
                shared.searched.fetch_add(1, Ordering::Relaxed);
                let mut sink = FileSink::new(req.mode, req.limit, req.after);
                let outcome =
                    searcher.search_reader(matcher, Guarded { inner: file, ctx }, &mut sink);
                if let Err(e) = outcome {
                    if e.kind() == io::ErrorKind::TimedOut {
                        let why = ctx.interrupted().unwrap_or(Interrupt::Deadline);
                        *shared.interrupted.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
                        return WalkState::Quit;
                    }
                    shared.io_errors.fetch_add(1, Ordering::Relaxed);
                    return WalkState::Continue;
                }
                if sink.binary || sink.count == 0 && sink.hits.is_empty() {
                    return WalkState::Continue;
                }
                let hits = sink.into_hits(rel, req.before);
                match req.mode {
                    OutputMode::Content => {
                        let keys: Vec<u64> = hits.hits.iter().map(|h| h.line).collect();
                        shared.add(hits, keys.into_iter());
                    }
                    _ => shared.add(hits, std::iter::once(0)),
                }
                WalkState::Continue
            })
        }),
    );

    let interrupted = *shared.interrupted.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(why) = interrupted.or_else(|| ctx.interrupted()) {
        let msg = match why {
            Interrupt::Deadline => format!(
                "Grep timed out searching '{rel_root}'; narrow the path, glob, type or pattern."
            ),
            Interrupt::Cancelled => format!("Grep of '{rel_root}' was cancelled."),
        };
        return ToolResult::error(
            params,
            ErrorCode::Timeout,
            msg,
            started.elapsed().as_millis() as u64,
        )
        .with_path_resolved(rel_root);
    }
    let mut files = shared.files.into_inner().unwrap_or_else(|e| e.into_inner());
    files.sort_by(|a, b| a.rel.cmp(&b.rel));
    let searched = shared.searched.load(Ordering::Relaxed);
    finish(params, &req, files, searched, rel_root, started)
}

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

fn finish(
    params: &Value,
    req: &Request,
    files: Vec<FileHits>,
    searched: u64,
    rel_root: String,
    started: Instant,
) -> ToolResult {
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
    let mut text = summary;
    if truncated {
        text.push_str(
            " Results were truncated; narrow the path, glob, pattern, or matching lines.",
        );
    }
    let time_ms = elapsed_ms(started);
    let result = if truncated {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::workspace::Workspace;

    fn setup(files: &[(&str, &str)]) -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        for (name, body) in files {
            let p = dir.path().join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, body).unwrap();
        }
        let ctx = ToolContext::new(Workspace::new(dir.path()).unwrap());
        (dir, ctx)
    }

    fn matches(r: &ToolResult) -> Vec<(String, u64)> {
        r.data["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["file"].as_str().unwrap().to_string(),
                    m["line"].as_u64().unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn sorted_and_limited_across_many_files() {
        let files: Vec<(String, String)> = (0..60)
            .map(|i| {
                (
                    format!("d{}/f{:02}.txt", i % 7, i),
                    "hit\nno\nhit\n".to_string(),
                )
            })
            .collect();
        let refs: Vec<(&str, &str)> = files
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let (_d, ctx) = setup(&refs);
        let r = GrepTool.run(&ctx, &json!({"pattern": "hit", "limit": 7}));
        let mut all: Vec<(String, u64)> = files
            .iter()
            .flat_map(|(f, _)| [(f.clone(), 1), (f.clone(), 3)])
            .collect();
        all.sort();
        assert_eq!(matches(&r), all[..7].to_vec());
        assert_eq!(r.data["truncated"], json!(true));
        assert_eq!(r.data["truncation_reasons"], json!(["match_limit"]));
    }

    #[test]
    fn one_file_with_more_than_limit() {
        let body = "x\n".repeat(10);
        let (_d, ctx) = setup(&[("a.txt", &body)]);
        let r = GrepTool.run(&ctx, &json!({"pattern": "x", "limit": 3}));
        assert_eq!(
            matches(&r),
            vec![
                ("a.txt".into(), 1),
                ("a.txt".into(), 2),
                ("a.txt".into(), 3)
            ]
        );
        assert_eq!(r.data["truncated"], json!(true));
        let exact = GrepTool.run(&ctx, &json!({"pattern": "x", "limit": 10}));
        assert_eq!(exact.data["truncated"], json!(false));
    }

    #[test]
    fn context_lines_overlap_per_match() {
        let (_d, ctx) = setup(&[("a.txt", "1\n2 hit\n3\n4 hit\n5\n6\n")]);
        let r = GrepTool.run(&ctx, &json!({"pattern": "hit", "context": 1}));
        assert_eq!(
            r.data["matches"],
            json!([
                {"file": "a.txt", "line": 2, "text": "2 hit", "before": ["1"], "after": ["3"]},
                {"file": "a.txt", "line": 4, "text": "4 hit", "before": ["3"], "after": ["5"]}
            ])
        );
        let r = GrepTool.run(
            &ctx,
            &json!({"pattern": "hit", "before": 2, "after": 0, "limit": 1}),
        );
        assert_eq!(
            r.data["matches"],
            json!([{"file": "a.txt", "line": 2, "text": "2 hit", "before": ["1"]}])
        );
    }

    #[test]
    fn after_context_of_last_kept_match_is_complete() {
        let (_d, ctx) = setup(&[("a.txt", "hit\nhit\nz\n")]);
        let r = GrepTool.run(&ctx, &json!({"pattern": "hit", "after": 2, "limit": 1}));
        assert_eq!(
            r.data["matches"],
            json!([{"file": "a.txt", "line": 1, "text": "hit", "after": ["hit", "z"]}])
        );
        assert_eq!(r.data["truncated"], json!(true));
    }

    #[test]
    fn glob_on_name_or_path() {
        assert_eq!(normalize_glob("./src/*.rs"), "src/*.rs");
        assert_eq!(normalize_glob("/*.rs"), "*.rs");
        let g = build_glob("src/*.rs").unwrap();
        assert!(g.is_match("src/a.rs") && !g.is_match("src/x/a.rs"));
        assert!(build_glob("[z-a]").is_err());
    }
}
