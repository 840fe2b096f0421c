//! The code index the scout searches: every file of a workspace cut into definition-sized chunks
//! (definitions found by tree-sitter parsers), ranked for a question by BM25 over those chunks
//! with a ranking layer on top (exact identifier and definition-name boosts, file-name and path
//! matches, test/doc/example penalties, at most a few chunks per file before others).
//!
//! The index is built on first use, kept in memory per root, and cached on disk outside the root
//! ([`store`]); before a search it is brought up to date by walking the tree and re-reading
//! only files whose size or modification time changed, unless the watches the last walk made
//! report no change since ([`watch`] states the exact guarantee). A search reads the postings of
//! the question's terms ([`Postings`]), not every chunk. Every file it reads is listed by the
//! workspace's confined walk (ignore files included) and opened through the workspace, so the
//! index sees exactly what Grep and Read may see.

pub(crate) mod chunk;
pub(crate) mod facts;
pub(crate) mod lang;
pub(crate) mod paths;
pub(crate) mod rank;
pub(crate) mod scratch;
pub(crate) mod shape;
pub(crate) mod store;
pub(crate) mod text;
pub(crate) mod watch;
pub(crate) mod words;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::tools::walk::{Kind, Visit, Walk, WalkRules};
use crate::tools::workspace::Workspace;
use chunk::FileChunks;
use text::Terms;

/// Files bigger than this are not indexed.
pub(crate) const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// The most files one index holds; a bigger tree is indexed in part (and says so).
pub(crate) const MAX_FILES: usize = 200_000;
/// The most bytes of text one index reads (its memory grows with them); past this, files are
/// left out as over the limit (and the result says so).
pub(crate) const MAX_TOTAL_BYTES: u64 = 1 << 30;
const _: () = assert!(MAX_TOTAL_BYTES < u32::MAX as u64);
/// File names that are never worth searching (lock files, minified bundles, source maps).
const NOISE_SUFFIXES: [&str; 12] = [
    ".lock",
    "-lock.json",
    "-lock.yaml",
    ".min.js",
    ".min.css",
    ".map",
    ".svg",
    ".sum",
    ".snap",
    ".pb.go",
    "_pb2.py",
    ".ipynb",
];

/// One indexed file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct IndexedFile {
    /// Relative to the root, `/`-separated.
    pub path: String,
    /// Size in bytes when it was read.
    pub size: u64,
    /// Modification time when it was read (nanoseconds since the epoch).
    pub mtime: i128,
    /// Its chunks (term ids in the index's vocabulary).
    pub chunks: FileChunks,
    /// What the ranking needs of it, worked out when it was read (or the index loaded).
    #[serde(skip)]
    pub facts: Option<facts::FileFacts>,
}

/// Why an index is not the whole tree.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct Coverage {
    /// Files the walk listed that are indexed.
    pub files: usize,
    /// Files left out as binary, too big or noise.
    pub skipped: usize,
    /// Files that changed or were new but were not read before the deadline (not indexed).
    pub pending: usize,
    /// Files left out beyond [`MAX_FILES`].
    pub over_limit: usize,
    /// Directories or files the walk could not read.
    pub unreadable: usize,
}

impl Coverage {
    /// Whether every searchable file is indexed.
    pub(crate) fn complete(&self) -> bool {
        self.pending == 0 && self.over_limit == 0
    }
}

/// An index of one workspace.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct Index {
    /// Indexed files, in path order.
    pub files: Vec<IndexedFile>,
    /// Term id → term.
    pub vocab: Vec<String>,
    /// What the last refresh covered.
    pub coverage: Coverage,
    /// Term → id (rebuilt from `vocab` after loading).
    #[serde(skip)]
    ids: text::TermIds,
    /// The chunks of every term (rebuilt from `files` after each refresh that changed them).
    #[serde(skip)]
    postings: Postings,
    /// Path term → the files whose path holds it, built by the ranking on its first search
    /// after a change (the ranking owns what a path's terms are).
    #[serde(skip)]
    path_terms: OnceLock<text::FxMap<String, Vec<u32>>>,
    /// What tells a later search that the tree did not change since the last walk.
    #[serde(skip)]
    watch: Option<watch::Watch>,
    /// Whole walks of the tree made by this index (in memory).
    #[serde(skip)]
    walks: u64,
}

/// The index turned inside out: for every term id, the chunks that hold it (by their number in
/// the whole index, ascending) and how often, so that a search touches the chunks holding a
/// word of the question and no other. Derived from [`Index::files`], never stored.
#[derive(Debug, Default)]
pub(crate) struct Postings {
    /// Term id → where its chunks start in `chunks` and `counts` (one entry more than terms).
    starts: Vec<u32>,
    /// Chunk numbers, term after term.
    chunks: Vec<u32>,
    /// The term's count in each of those chunks.
    counts: Vec<u8>,
    /// File → the number of its first chunk (one entry more than files).
    first_chunk: Vec<u32>,
    /// The words of every chunk.
    total_len: u64,
}

impl Postings {
    /// The postings of `files`, whose terms are ids below `vocab`; None when the index is too
    /// big to number its chunks or postings in 32 bits, which [`MAX_TOTAL_BYTES`] rules out
    /// (every chunk and every posting takes at least a byte of text).
    fn build(files: &[IndexedFile], vocab: usize) -> Option<Postings> {
        let mut first_chunk = Vec::with_capacity(files.len() + 1);
        let mut n_chunks = 0u64;
        let mut total_len = 0u64;
        let mut per_term = vec![0u32; vocab + 1];
        for f in files {
            first_chunk.push(u32::try_from(n_chunks).ok()?);
            n_chunks += f.chunks.chunks.len() as u64;
            total_len += f
                .chunks
                .chunks
                .iter()
                .map(|c| u64::from(c.len))
                .sum::<u64>();
            for &p in &f.chunks.terms {
                let slot = per_term.get_mut((p >> 8) as usize + 1)?;
                *slot = slot.checked_add(1)?;
            }
        }
        first_chunk.push(u32::try_from(n_chunks).ok()?);
        let mut at = 0u32;
        for n in &mut per_term {
            at = at.checked_add(*n)?;
            *n = at;
        }
        let starts = per_term;
        let total = *starts.last().unwrap_or(&0) as usize;
        let mut fill: Vec<u32> = starts.clone();
        let (mut chunks, mut counts) = (vec![0u32; total], vec![0u8; total]);
        for (fi, f) in files.iter().enumerate() {
            for ci in 0..f.chunks.chunks.len() {
                let number = first_chunk[fi] + ci as u32;
                for &p in f.chunks.chunk_terms(ci) {
                    let slot = &mut fill[(p >> 8) as usize];
                    chunks[*slot as usize] = number;
                    counts[*slot as usize] = (p & 0xff) as u8;
                    *slot += 1;
                }
            }
        }
        Some(Postings {
            starts,
            chunks,
            counts,
            first_chunk,
            total_len,
        })
    }

    /// Whether these are the postings of `files` (built since they last changed).
    fn covers(&self, files: &[IndexedFile]) -> bool {
        self.first_chunk.len() == files.len() + 1
    }

    /// The chunks holding term `id` (by number, ascending) and its count in each.
    pub(crate) fn of(&self, id: u32) -> (&[u32], &[u8]) {
        let id = id as usize;
        match (self.starts.get(id), self.starts.get(id + 1)) {
            (Some(&a), Some(&b)) => (
                &self.chunks[a as usize..b as usize],
                &self.counts[a as usize..b as usize],
            ),
            _ => (&[], &[]),
        }
    }

    /// The number of file `fi`'s first chunk (of every chunk when `fi` is the number of files).
    pub(crate) fn first_chunk(&self, fi: usize) -> u32 {
        self.first_chunk[fi]
    }

    /// Every chunk of the index.
    pub(crate) fn n_chunks(&self) -> u64 {
        u64::from(*self.first_chunk.last().unwrap_or(&0))
    }

    /// The words of every chunk.
    pub(crate) fn total_len(&self) -> u64 {
        self.total_len
    }
}

/// What one refresh did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Refresh {
    /// Files read and cut into chunks now (new or changed).
    pub read: usize,
    /// Files dropped (gone from the tree).
    pub dropped: usize,
    /// Where the index came from: `memory`, `disk` or `built`.
    pub source: &'static str,
    /// Milliseconds the refresh took.
    pub ms: u64,
    /// The walk of the tree stopped at the deadline (or a cancel): files it did not reach are
    /// left out as pending, and the disk cache is not rewritten from this part of the tree.
    pub walk_cut: bool,
}

/// The mtime kept for a file whose own mtime was too recent to tell a later same-size write
/// apart ("racily clean"): it equals no real mtime, so the next walk reads the file again.
/// Without it, a file rewritten with the same size within one tick of the filesystem's clock
/// (or given back its old mtime, as `tar`, `rsync -t` and `cp -p` do) would be served stale.
const RACY: i128 = i128::MIN;
/// How recent (before the walk began) an mtime is racy: a coarse filesystem clock ticks at
/// most this slowly (2 s on FAT).
const RACY_WINDOW_NS: i128 = 2_000_000_000;

fn now_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

/// A walked file: relative path, size, mtime.
struct Listed {
    path: String,
    size: u64,
    mtime: i128,
}

fn is_noise(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    NOISE_SUFFIXES.iter().any(|s| lower.ends_with(s))
}

impl Index {
    /// The id of a term, if the index has it.
    pub(crate) fn term_id(&self, term: &str) -> Option<u32> {
        self.ids.get(&self.vocab, term)
    }

    /// Rebuild the term → id map (after loading).
    pub(crate) fn rebuild_ids(&mut self) {
        let mut ids = text::TermIds::default();
        for id in 0..self.vocab.len() {
            ids.insert(&self.vocab, id as u32);
        }
        self.ids = ids;
    }

    /// Why this index (just loaded from the disk cache) cannot be what the index wrote, if so:
    /// every id, offset and path is checked before anything is looked up by it, so a damaged
    /// cache is rebuilt, never trusted.
    pub(crate) fn damage(&self) -> Option<String> {
        if self.ids.len() != self.vocab.len() {
            return Some("a term appears twice in the vocabulary".into());
        }
        let mut last: Option<&str> = None;
        for f in &self.files {
            let p = f.path.as_str();
            let bad_path = p.is_empty()
                || p.starts_with('/')
                || p.split('/').any(|c| c.is_empty() || c == "." || c == "..")
                || last.is_some_and(|l| l >= p);
            if bad_path {
                return Some(format!(
                    "the file path {p:?} is not a relative path in order"
                ));
            }
            last = Some(p);
            if let Some(why) = f.chunks.damage(self.vocab.len()) {
                return Some(format!("{p}: {why}"));
            }
        }
        None
    }

    /// Number of chunks.
    pub(crate) fn chunk_count(&self) -> usize {
        match self.postings() {
            Some(p) => p.n_chunks() as usize,
            None => self.files.iter().map(|f| f.chunks.chunks.len()).sum(),
        }
    }

    /// The postings of the index as it is, if built (every refresh builds them).
    pub(crate) fn postings(&self) -> Option<&Postings> {
        self.postings.covers(&self.files).then_some(&self.postings)
    }

    /// Path term → the files (ascending) whose path holds it, as `terms_of` reads a path: made
    /// on the first call after the files changed, then kept.
    pub(crate) fn files_by_path_term(
        &self,
        terms_of: &dyn Fn(&str) -> Vec<String>,
    ) -> &text::FxMap<String, Vec<u32>> {
        self.path_terms.get_or_init(|| {
            let mut map: text::FxMap<String, Vec<u32>> = text::FxMap::default();
            for (fi, f) in self.files.iter().enumerate() {
                for t in terms_of(&f.path) {
                    let files = map.entry(t).or_default();
                    if files.last() != Some(&(fi as u32)) {
                        files.push(fi as u32);
                    }
                }
            }
            map
        })
    }

    /// Rebuild what is derived from the files, after they changed: the postings, and the
    /// ranking's facts of files that have none yet (those loaded from the disk cache).
    pub(crate) fn derive(&mut self) {
        fill_facts(&mut self.files);
        self.postings = Postings::build(&self.files, self.vocab.len()).unwrap_or_default();
        self.path_terms = OnceLock::new();
    }

    /// Bring the index up to date with the tree: walk it (confined, with the ignore rules),
    /// drop files that are gone, read and chunk files that are new or changed, in a few
    /// threads, until `deadline` or `cancel`. What was not read in time is counted pending and
    /// left out (never kept stale).
    pub(crate) fn refresh(
        &mut self,
        ws: &Workspace,
        deadline: Option<Instant>,
        cancel: &AtomicBool,
    ) -> Refresh {
        let started = Instant::now();
        // A file modified this recently may be written again within the same timestamp tick
        // and keep its size: it is re-read at the next walk (see [`RACY`]).
        let racy_after = now_ns() - RACY_WINDOW_NS;
        // Watched before the walk lists anything, so that no change made after a directory
        // was listed goes unreported.
        let watch = watch::Watch::start(ws);
        self.watch = None;
        self.walks += 1;
        let (listed, unreadable, walk_cut) = list_files(ws, deadline, cancel, watch.as_ref());
        let mut old: HashMap<String, IndexedFile> = std::mem::take(&mut self.files)
            .into_iter()
            .map(|f| (f.path.clone(), f))
            .collect();
        let mut keep: Vec<IndexedFile> = Vec::with_capacity(listed.len());
        let mut todo: Vec<Listed> = Vec::new();
        let mut skipped = 0usize;
        let mut over_limit = 0usize;
        let mut total = 0u64;
        for l in listed {
            if l.size > MAX_FILE_BYTES || is_noise(&l.path) {
                skipped += 1;
                continue;
            }
            if keep.len() + todo.len() >= MAX_FILES || total + l.size > MAX_TOTAL_BYTES {
                over_limit += 1;
                continue;
            }
            total += l.size;
            match old.remove(&l.path) {
                Some(f) if f.size == l.size && f.mtime == l.mtime => keep.push(f),
                _ => todo.push(l),
            }
        }
        // Files the walk did not reach before it was cut are not known to be gone: pending.
        let (dropped, unreached) = if walk_cut {
            (0, old.len())
        } else {
            (old.len(), 0)
        };
        let (mut read, binary, pending) = self.read_files(ws, todo, deadline, cancel);
        for f in &mut read {
            if f.mtime >= racy_after {
                f.mtime = RACY;
            }
        }
        let n_read = read.len();
        let changed = n_read > 0 || dropped + unreached > 0;
        keep.extend(read);
        keep.sort_by(|a, b| a.path.cmp(&b.path));
        self.files = keep;
        if changed || self.postings().is_none() {
            self.derive();
        }
        self.coverage = Coverage {
            files: self.files.len(),
            skipped: skipped + binary,
            pending: pending + unreached + usize::from(walk_cut && unreached == 0),
            over_limit,
            unreadable,
        };
        // Trusted only after a whole walk that left nothing pending.
        self.watch = watch.filter(|w| !walk_cut && self.coverage.pending == 0 && w.whole());
        Refresh {
            read: n_read,
            dropped,
            source: "built",
            ms: started.elapsed().as_millis() as u64,
            walk_cut,
        }
    }

    /// Read and chunk `todo` in a few threads; returns the files read (terms in this index's
    /// vocabulary), the number found binary or unreadable, and the number left pending.
    fn read_files(
        &mut self,
        ws: &Workspace,
        todo: Vec<Listed>,
        deadline: Option<Instant>,
        cancel: &AtomicBool,
    ) -> (Vec<IndexedFile>, usize, usize) {
        if todo.is_empty() {
            return (Vec::new(), 0, 0);
        }
        let threads = std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .clamp(1, 8)
            .min(todo.len().div_ceil(16).max(1));
        let next = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        let todo = &todo;
        // One vocabulary for every thread: the index's own, handed back after.
        let shared: text::Shared = Mutex::new((
            std::mem::take(&mut self.vocab),
            std::mem::take(&mut self.ids),
        ));
        let results: Vec<(Vec<IndexedFile>, usize)> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    let (next, stop, shared) = (&next, &stop, &shared);
                    scope.spawn(move || {
                        let mut parser = tree_sitter::Parser::new();
                        let mut terms = Terms::sharing(shared);
                        let mut out = Vec::new();
                        let mut unusable = 0usize;
                        loop {
                            if stop.load(Ordering::Relaxed)
                                || cancel.load(Ordering::Relaxed)
                                || deadline.is_some_and(|d| Instant::now() >= d)
                            {
                                stop.store(true, Ordering::Relaxed);
                                break;
                            }
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            let Some(l) = todo.get(i) else { break };
                            match read_text(ws, &l.path) {
                                Some(text) => {
                                    let chunks =
                                        chunk::chunk_file(&l.path, &text, &mut parser, &mut terms);
                                    drop(text);
                                    let facts = facts::FileFacts::of(&l.path, &chunks);
                                    out.push(IndexedFile {
                                        path: l.path.clone(),
                                        size: l.size,
                                        mtime: l.mtime,
                                        chunks,
                                        facts: Some(facts),
                                    });
                                }
                                None => unusable += 1,
                            }
                        }
                        (out, unusable)
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|w| w.join().unwrap_or_default())
                .collect()
        });
        (self.vocab, self.ids) = shared
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut all = Vec::new();
        let mut unusable = 0;
        for (files, bad) in results {
            unusable += bad;
            all.extend(files);
        }
        let pending = todo.len().saturating_sub(all.len() + unusable);
        (all, unusable, pending)
    }
}

/// Work out the ranking's facts of every file in `files` that has none, in a few threads when
/// there are many (after a load from the disk cache, which does not store them).
fn fill_facts(files: &mut [IndexedFile]) {
    let missing = files.iter().filter(|f| f.facts.is_none()).count();
    let fill = |files: &mut [IndexedFile]| {
        for f in files.iter_mut().filter(|f| f.facts.is_none()) {
            f.facts = Some(facts::FileFacts::of(&f.path, &f.chunks));
        }
    };
    if missing < 2_000 {
        fill(files);
        return;
    }
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(1, 8);
    let per = files.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        for part in files.chunks_mut(per) {
            scope.spawn(move || fill(part));
        }
    });
}

/// The files of the tree, by the confined walk with the default rules (no hidden files, ignore
/// files applied), with their size and mtime; the number of entries it could not read; and
/// whether the walk stopped early, at `deadline` or on `cancel`.
fn list_files(
    ws: &Workspace,
    deadline: Option<Instant>,
    cancel: &AtomicBool,
    watch: Option<&watch::Watch>,
) -> (Vec<Listed>, usize, bool) {
    let rules = WalkRules::default();
    let walk = Walk::new(ws, &rules, None);
    let found: Mutex<Vec<Listed>> = Mutex::new(Vec::new());
    let unreadable = AtomicUsize::new(0);
    let cut = AtomicBool::new(false);
    let Ok(start) = ws.resolve(".") else {
        return (Vec::new(), 1, false);
    };
    let root = ws.root().to_path_buf();
    walk.run(&start, &mut || {
        let (unreadable, root, cut) = (&unreadable, &root, &cut);
        let mut mine = Collector {
            found: &found,
            mine: Vec::new(),
        };
        Box::new(move |entry| {
            if cancel.load(Ordering::Relaxed) || deadline.is_some_and(|d| Instant::now() >= d) {
                cut.store(true, Ordering::Relaxed);
                return Visit::Quit;
            }
            match entry {
                Ok(e) if e.kind() == Kind::File => match e.stat() {
                    Ok((size, mtime)) => {
                        let rel = e.path().strip_prefix(root).unwrap_or(e.path());
                        mine.mine.push(Listed {
                            path: rel.to_string_lossy().into_owned(),
                            size,
                            mtime,
                        });
                    }
                    Err(_) => {
                        unreadable.fetch_add(1, Ordering::Relaxed);
                    }
                },
                Ok(e) if e.kind() == Kind::Dir => {
                    if let Some(w) = watch {
                        w.add(e.parent_fd(), e.path().file_name().unwrap_or_default());
                    }
                }
                Ok(_) => {}
                Err(_) => {
                    unreadable.fetch_add(1, Ordering::Relaxed);
                }
            }
            Visit::Continue
        })
    });
    let mut files = found.into_inner().unwrap_or_default();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    (
        files,
        unreadable.load(Ordering::Relaxed) + walk.refused_ignore_files() as usize,
        cut.load(Ordering::Relaxed),
    )
}

/// One walking thread's files, handed over when its visitor is dropped (the walk's end).
struct Collector<'a> {
    found: &'a Mutex<Vec<Listed>>,
    mine: Vec<Listed>,
}

impl Drop for Collector<'_> {
    fn drop(&mut self) {
        if let Ok(mut f) = self.found.lock() {
            f.append(&mut self.mine);
        }
    }
}

/// A file's text, read through the workspace (confined, no symlink, regular files only), or
/// None when it is binary (a NUL byte in its first 8 KiB), not UTF-8 enough, or unreadable.
pub(crate) fn read_text(ws: &Workspace, rel: &str) -> Option<String> {
    use std::io::Read;
    let resolved = ws.resolve_file(rel).ok()?;
    let (file, _) = ws.open(&resolved).ok()?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES).read_to_end(&mut bytes).ok()?;
    if bytes[..bytes.len().min(8192)].contains(&0) {
        return None;
    }
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The index behind `handle`, locked, or None when `deadline` passes or `cancel` is set first:
/// a caller never waits on another search past its own limit.
pub(crate) fn lock_until<'a>(
    handle: &'a Mutex<Index>,
    deadline: Option<Instant>,
    cancel: &AtomicBool,
) -> Option<std::sync::MutexGuard<'a, Index>> {
    let mut pause = std::time::Duration::from_millis(1);
    loop {
        match handle.try_lock() {
            Ok(guard) => return Some(guard),
            Err(std::sync::TryLockError::Poisoned(p)) => return Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => {}
        }
        let now = Instant::now();
        if cancel.load(Ordering::Relaxed) || deadline.is_some_and(|d| now >= d) {
            return None;
        }
        let left = deadline.map_or(pause, |d| d - now);
        std::thread::sleep(pause.min(left));
        pause = (pause * 2).min(std::time::Duration::from_millis(20));
    }
}

/// The indexes of the roots this process searched, most recent last (a few at most).
static OPEN: Mutex<Vec<(String, Arc<Mutex<Index>>)>> = Mutex::new(Vec::new());
/// Roots kept in memory.
const MAX_OPEN: usize = 4;

/// The index of `ws`, up to date: from memory, else from the disk cache, else built; then
/// refreshed against the tree and, when anything changed, saved back to the disk cache
/// (outside the root; see [`store`]). Two children on one tree share one refresh: the second
/// waits for the first's lock, but never past its own `deadline` (None then).
pub(crate) fn open(
    ws: &Workspace,
    deadline: Option<Instant>,
    cancel: &AtomicBool,
) -> Option<(Arc<Mutex<Index>>, Refresh)> {
    open_in(ws, store::cache_dir().as_deref(), deadline, cancel)
}

/// [`open`] with the disk cache in `cache` (None: no disk cache).
fn open_in(
    ws: &Workspace,
    cache: Option<&std::path::Path>,
    deadline: Option<Instant>,
    cancel: &AtomicBool,
) -> Option<(Arc<Mutex<Index>>, Refresh)> {
    let key = ws.root().to_string_lossy().into_owned();
    let (handle, from_memory) = {
        let mut open = OPEN.lock().unwrap_or_else(|p| p.into_inner());
        match open.iter().position(|(k, _)| *k == key) {
            Some(i) => {
                let entry = open.remove(i);
                let handle = entry.1.clone();
                open.push(entry);
                (handle, true)
            }
            None => {
                let handle = Arc::new(Mutex::new(Index::default()));
                open.push((key.clone(), handle.clone()));
                if open.len() > MAX_OPEN {
                    open.remove(0);
                }
                (handle, false)
            }
        }
    };
    let started = Instant::now();
    let mut refresh = {
        let mut index = lock_until(&handle, deadline, cancel)?;
        let warm = from_memory && !index.vocab.is_empty();
        up_to_date(&mut index, ws, warm, cache, deadline, cancel)
    };
    refresh.ms = started.elapsed().as_millis() as u64;
    Some((handle, refresh))
}

/// Bring `index` (`warm`: already built in memory) up to date with the tree of `ws`, loading it
/// first from the disk cache in `cache` when it is not warm (a damaged cache is rebuilt, and
/// overwritten), and saving it back there when anything changed.
fn up_to_date(
    index: &mut Index,
    ws: &Workspace,
    warm: bool,
    cache: Option<&std::path::Path>,
    deadline: Option<Instant>,
    cancel: &AtomicBool,
) -> Refresh {
    let root = ws.root();
    let dir = |create: bool| cache.and_then(|d| store::CacheDir::open(d, root, create));
    let mut source = if warm { "memory" } else { "built" };
    let mut damaged = false;
    if !warm {
        if let Some(mut loaded) = dir(false).and_then(|d| d.load::<Index>(root)) {
            loaded.rebuild_ids();
            match loaded.damage() {
                None => {
                    *index = loaded;
                    source = "disk";
                }
                Some(why) => {
                    tracing::warn!(root = %root.display(), damage = %why, "the index's disk cache is damaged; it is rebuilt");
                    *index = Index::default();
                    damaged = true;
                }
            }
        }
    }
    if warm && index.watch.as_ref().is_some_and(watch::Watch::unchanged) {
        // Nothing changed since the last whole walk, as the kernel says: no walk.
        return Refresh {
            source,
            ..Refresh::default()
        };
    }
    let mut refresh = index.refresh(ws, deadline, cancel);
    refresh.source = if source == "built" || refresh.read * 2 > index.files.len().max(1) {
        "built"
    } else {
        source
    };
    if !refresh.walk_cut && (refresh.read > 0 || refresh.dropped > 0) || damaged {
        if let Some(d) = dir(true) {
            d.save(root, &*index);
        }
    }
    refresh
}

#[cfg(test)]
mod rank_reference;
#[cfg(test)]
mod rank_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod warm_tests;
