//! Grep's search: a parallel walk of the tree, one searcher per thread, that stops early once
//! no later file can change the first `limit` results.

use std::collections::{BTreeMap, BinaryHeap};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use grep_matcher::LineTerminator;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};

use crate::tools::context::{Interrupt, ToolContext};
use crate::tools::grep::args::{OutputMode, Request};
use crate::tools::grep::engine::Engine;
use crate::tools::walk::{self, Kind, Visit, Walk};
use crate::tools::workspace::Resolved;

/// A single line longer than this makes the searcher give up on the rest of that file; such files
/// are counted in `skipped_long_lines`. (Smaller in unit tests, so they need not write 64 MiB.)
pub(crate) const HEAP_LIMIT: usize = if cfg!(test) { 1 << 20 } else { 64 << 20 };

/// What a finished search found.
pub(crate) struct Found {
    /// The files with hits, sorted by path.
    pub(crate) files: Vec<FileHits>,
    /// Files searched.
    pub(crate) searched: u64,
    /// Files and directories that could not be read (permission denied, gone mid-walk, a path
    /// too long to open).
    pub(crate) unreadable: u64,
    /// Files whose search stopped at a line longer than the line limit ([`HEAP_LIMIT`]), by
    /// path, sorted, each with the number of that line.
    pub(crate) long_line_files: Vec<(String, u64)>,
    /// Ignore files not read (symlinks, special files, too big): their rules were not applied.
    pub(crate) refused_ignore_files: u64,
}

/// Why a search stopped before the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stopped {
    /// The deadline passed or the call was cancelled.
    Interrupted(Interrupt),
    /// The fallback engine hit its backtrack limit on some line.
    BacktrackLimit,
}

/// Search the files under `search_dir` with `engine`.
pub(crate) fn search(
    ctx: &ToolContext,
    req: &Request,
    engine: &Engine,
    start: &Resolved,
) -> Result<Found, Stopped> {
    let search_dir: &Path = &start.path;
    let ws = &ctx.workspace;
    // Content results are chosen from a pool a few times the limit (definitions and a few
    // matches per file first), so the walk may stop only once the pool is full.
    let shared = Shared {
        limit: req.pool(),
        best: Mutex::new(BinaryHeap::new()),
        cutoff: Mutex::new(None),
        files: Mutex::new(Vec::new()),
        searched: AtomicU64::new(0),
        interrupted: Mutex::new(None),
        io_errors: AtomicU64::new(0),
        long_lines: Mutex::new(Vec::new()),
        gave_up: AtomicBool::new(false),
    };
    let searcher_builder = searcher_for(req);
    let ws_root: PathBuf = ws.root().to_path_buf();

    let walker = Walk::new(ws, &req.rules, None);
    walker.run(start, &mut || -> walk::Visitor<'_> {
        let mut searcher = searcher_builder.build();
        let (shared, ws_root) = (&shared, &ws_root);
        Box::new(move |entry| {
            if let Some(why) = ctx.interrupted() {
                *shared.interrupted.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
                return Visit::Quit;
            }
            let Ok(entry) = entry else {
                // A directory that cannot be opened or listed.
                shared.io_errors.fetch_add(1, Ordering::Relaxed);
                return Visit::Continue;
            };
            let rel = walk::rel_str(entry.path(), ws_root);
            if entry.kind() == Kind::Dir {
                if shared.beyond_cutoff(&rel) {
                    return Visit::Skip;
                }
                return Visit::Continue;
            }
            if entry.kind() != Kind::File {
                return Visit::Continue;
            }
            if let Some(glob) = &req.glob {
                let under = entry
                    .path()
                    .strip_prefix(search_dir)
                    .unwrap_or(entry.path());
                if !glob.is_match(under) {
                    return Visit::Continue;
                }
            }
            if shared.beyond_cutoff(&rel) {
                return Visit::Continue;
            }
            let Ok(file) = entry.open_file() else {
                shared.io_errors.fetch_add(1, Ordering::Relaxed);
                return Visit::Continue;
            };
            search_file(ctx, req, engine, shared, &mut searcher, file, rel)
        })
    });

    if shared.gave_up.load(Ordering::Relaxed) {
        return Err(Stopped::BacktrackLimit);
    }
    let interrupted = *shared.interrupted.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(why) = interrupted.or_else(|| ctx.interrupted()) {
        return Err(Stopped::Interrupted(why));
    }
    let mut files = shared.files.into_inner().unwrap_or_else(|e| e.into_inner());
    files.sort_by(|a, b| a.rel.cmp(&b.rel));
    let mut long_line_files = shared
        .long_lines
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    long_line_files.sort();
    Ok(Found {
        files,
        searched: shared.searched.load(Ordering::Relaxed),
        unreadable: shared.io_errors.load(Ordering::Relaxed),
        long_line_files,
        refused_ignore_files: walker.refused_ignore_files(),
    })
}

/// The searcher every thread of a search builds its own from.
fn searcher_for(req: &Request) -> SearcherBuilder {
    let mut builder = SearcherBuilder::new();
    builder
        .line_number(true)
        .line_terminator(LineTerminator::crlf())
        .binary_detection(BinaryDetection::quit(0))
        .heap_limit(Some(HEAP_LIMIT))
        // No UTF-16 transcoding: a file Read calls binary is binary here too.
        .bom_sniffing(false);
    if req.mode == OutputMode::Content {
        builder.before_context(req.before).after_context(req.after);
    }
    builder
}

/// Search one opened file (`rel` from the root) and add its hits to `shared`; whether the walk
/// goes on.
fn search_file(
    ctx: &ToolContext,
    req: &Request,
    engine: &Engine,
    shared: &Shared,
    searcher: &mut Searcher,
    file: std::fs::File,
    rel: String,
) -> Visit {
    shared.searched.fetch_add(1, Ordering::Relaxed);
    let mut sink = FileSink::new(req.mode, shared.limit, req.after);
    let mut keys = crate::redact::PrivateKeyLines::default();
    let mut reader = Guarded {
        inner: file,
        ctx,
        keys: &mut keys,
        newlines: 0,
    };
    let outcome = match engine {
        Engine::Plain(m) => searcher.search_reader(m, &mut reader, &mut sink),
        Engine::Fancy(m) => searcher.search_reader(m, &mut reader, &mut sink),
    };
    // The searcher reads on only while the line it holds has no end: every newline it was given
    // ends a line before the one it gave up on.
    let stopped_at = reader.newlines + 1;
    if let Err(e) = outcome {
        if e.kind() == io::ErrorKind::TimedOut {
            let why = ctx.interrupted().unwrap_or(Interrupt::Deadline);
            *shared.interrupted.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
            return Visit::Quit;
        }
        if engine.gave_up() {
            shared.gave_up.store(true, Ordering::Relaxed);
            return Visit::Quit;
        }
        if !is_line_limit(&e) {
            shared.io_errors.fetch_add(1, Ordering::Relaxed);
            return Visit::Continue;
        }
        // The hits before the long line still count.
        let mut long = shared.long_lines.lock().unwrap_or_else(|e| e.into_inner());
        long.push((rel.clone(), stopped_at));
    }
    if sink.binary || sink.count == 0 && sink.hits.is_empty() {
        return Visit::Continue;
    }
    keys.finish();
    if !keys.is_empty() {
        // A private key's body lines, matched or shown as context: no text pattern knows a
        // key's middle line, the file does.
        for (n, text) in &mut sink.lines {
            if keys.contains(*n) {
                *text = crate::redact::MASK.into();
            }
        }
    }
    let hits = sink.into_hits(rel, req.before);
    match req.mode {
        OutputMode::Content => {
            let keys: Vec<u64> = hits.hits.iter().map(|h| h.line).collect();
            shared.add(hits, keys.into_iter());
        }
        _ => shared.add(hits, std::iter::once(0)),
    }
    Visit::Continue
}

/// Whether the searcher stopped because a line outgrew its buffer limit.
fn is_line_limit(e: &io::Error) -> bool {
    e.to_string().contains("allocation limit")
}

/// One match, or one file, as collected from a file.
#[derive(Debug, Clone)]
pub(crate) struct Hit {
    pub(crate) line: u64,
    pub(crate) text: String,
    pub(crate) before: Vec<String>,
    pub(crate) after: Vec<String>,
}

/// What one file contributed.
#[derive(Debug)]
pub(crate) struct FileHits {
    pub(crate) rel: String,
    pub(crate) hits: Vec<Hit>,
    pub(crate) count: u64,
    pub(crate) more: bool,
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
    long_lines: Mutex<Vec<(String, u64)>>,
    /// The fallback engine hit its backtrack limit: the search stops.
    gave_up: AtomicBool,
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

/// A reader that fails once the call's deadline passes or it is cancelled, and notes the
/// private keys' lines in what it reads.
struct Guarded<'a, R> {
    inner: R,
    ctx: &'a ToolContext,
    keys: &'a mut crate::redact::PrivateKeyLines,
    /// Newlines handed to the searcher so far.
    newlines: u64,
}

impl<R: Read> Read for Guarded<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(why) = self.ctx.interrupted() {
            return Err(io::Error::new(io::ErrorKind::TimedOut, format!("{why:?}")));
        }
        let n = self.inner.read(buf)?;
        self.keys.feed(&buf[..n]);
        self.newlines += memchr::memchr_iter(b'\n', &buf[..n]).count() as u64;
        Ok(n)
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
