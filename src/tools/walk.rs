//! The rules Grep and Glob share: which entries a walk visits, how a search root resolves, and
//! the walk itself.
//!
//! Skipped unless asked: hidden names (starting with "."), the reference's
//! [`DEFAULT_IGNORED_NAMES`] at any depth, and `.gitignore`/`.ignore`/`.git/info/exclude` rules,
//! also outside a git repository. Symlinks are never followed and never listed. Ignore files are
//! read only inside the workspace: those of the directories between the root and the search
//! directory are applied as well, but nothing above the root is consulted (no global git config).
//!
//! The walk never opens anything by a plain path. Every directory is opened beneath the
//! workspace's root handle (`openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, or `openat` with
//! `O_NOFOLLOW` name by name) and listed (`getdents`) through that descriptor, and every file and
//! ignore file in it is opened by its single name relative to that descriptor with `O_NOFOLLOW`.
//! A directory swapped for a symlink mid-walk then fails to open (and is counted unreadable)
//! instead of taking the walk outside the root. Directories
//! are worked off a shared stack: by the calling thread alone for a small tree, by a few threads
//! once the tree turns out big.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::types::Types;
use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir};
use rustix::io::Errno;
use serde_json::Value;

use super::envelope::{ErrorCode, ToolResult};
use super::workspace::{EntryKind, PathError, Resolved, Workspace};

/// Names skipped at any depth, for files and directories alike, unless `include_ignored`.
pub(crate) const DEFAULT_IGNORED_NAMES: [&str; 16] = [
    ".git",
    ".hg",
    ".svn",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".tox",
    ".venv",
    ".idea",
    ".vscode",
    "__pycache__",
    "build",
    "dist",
    "node_modules",
    "target",
    "venv",
];

/// Results returned when `limit` is not given.
pub(crate) const DEFAULT_RESULT_LIMIT: i64 = 100;
/// The largest `limit` Grep and Glob accept.
pub(crate) const MAX_RESULT_LIMIT: i64 = 200;

/// Which entries a walk visits.
#[derive(Debug, Clone, Default)]
pub(crate) struct WalkRules {
    /// Visit names starting with ".".
    pub include_hidden: bool,
    /// Visit [`DEFAULT_IGNORED_NAMES`] and entries matched by ignore files.
    pub include_ignored: bool,
    /// Only files of these ripgrep types (directories are unaffected).
    pub types: Option<Types>,
}

/// Ignore files bigger than this are not read (and are counted as refused).
const MAX_IGNORE_FILE_BYTES: u64 = 1 << 20;

/// The rules for entries directly inside a directory: those of every directory from the root
/// down to it, outermost first.
type Chain = Arc<Vec<Arc<Gitignore>>>;

/// Reads the ignore files of the directories a walk enters, through their descriptors (never
/// through a symlink, never a FIFO or device, at most [`MAX_IGNORE_FILE_BYTES`]), and counts the
/// ones it refused.
#[derive(Default)]
pub(crate) struct IgnoreFiles {
    refused: AtomicU64,
}

impl IgnoreFiles {
    /// Ignore files that were not read because they were symlinks, special files, too big or
    /// unreadable.
    pub(crate) fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// `parent` with the rules of the directory open at `dir` (labelled `label`) added: its
    /// `.gitignore`, `.ignore` and (when `.git` is a directory) `.git/info/exclude`.
    fn extend(&self, parent: &Chain, dir: BorrowedFd<'_>, label: &Path) -> Chain {
        let mut builder = GitignoreBuilder::new(label);
        let mut any = false;
        for name in [".git/info/exclude", ".gitignore", ".ignore"] {
            if let Some(text) = self.read(dir, Path::new(name)) {
                for line in text.lines() {
                    any |= builder.add_line(Some(label.join(name)), line).is_ok();
                }
            }
        }
        match any.then(|| builder.build().ok()).flatten() {
            Some(own) => {
                let mut rules = parent.as_ref().clone();
                rules.push(Arc::new(own));
                Arc::new(rules)
            }
            None => parent.clone(),
        }
    }

    /// An ignore file's text, opened name by name beneath `dir`: None when there is none, and
    /// None (counted) when it may not be read.
    fn read(&self, dir: BorrowedFd<'_>, path: &Path) -> Option<String> {
        let refuse = || {
            self.refused.fetch_add(1, Ordering::Relaxed);
            None
        };
        let names: Vec<&OsStr> = path.iter().collect();
        let (last, dirs) = names.split_last()?;
        let mut at: Option<OwnedFd> = None;
        for name in dirs {
            let from = at.as_ref().map_or(dir, |d| d.as_fd());
            match rustix::fs::statat(from, *name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Directory => {}
                // `.git` as a file (a worktree's `gitdir:` pointer) has no rules for us.
                _ => return None,
            }
            at = Some(
                rustix::fs::openat(
                    from,
                    *name,
                    OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                )
                .ok()?,
            );
        }
        let from = at.as_ref().map_or(dir, |d| d.as_fd());
        let st = match rustix::fs::statat(from, *last, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(e) if e == Errno::NOENT || e == Errno::NOTDIR => return None,
            Err(_) => return refuse(),
        };
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile
            || st.st_size as u64 > MAX_IGNORE_FILE_BYTES
        {
            return refuse();
        }
        let Ok(file) = open_file_at(from, last) else {
            return refuse();
        };
        let mut bytes = Vec::new();
        if file
            .take(MAX_IGNORE_FILE_BYTES)
            .read_to_end(&mut bytes)
            .is_err()
        {
            return refuse();
        }
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }
}

/// Open `name` in `dir` for reading: never following a symlink, never blocking on a FIFO or
/// taking a terminal, and only if `fstat` on the opened descriptor says it is a regular file.
pub(crate) fn open_file_at(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<File> {
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let file = File::from(fd);
    if !file.metadata()?.file_type().is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    Ok(file)
}

/// The `include_hidden` and `include_ignored` arguments Grep and Glob share (both default false).
pub(crate) fn visibility_args(
    args: &serde_json::Map<String, Value>,
) -> Result<(bool, bool), String> {
    match (
        super::params::bool_or(args, "include_hidden", false),
        super::params::bool_or(args, "include_ignored", false),
    ) {
        (Ok(hidden), Ok(ignored)) => Ok((hidden, ignored)),
        _ => Err("include_hidden and include_ignored must be booleans.".into()),
    }
}

/// The directory a search starts from: `.` when none (or an empty one) is given.
pub(crate) fn search_path(path: Option<&str>) -> String {
    match path {
        None | Some("") => ".".to_string(),
        Some(p) => p.to_string(),
    }
}

/// What a walked entry is (symlinks are never listed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A FIFO, socket or device: listed, never opened.
    Special,
}

/// One entry of a walk: its name in its (open) parent directory, and its path, which is a label
/// for matching and display only and is never opened.
pub(crate) struct Entry {
    dir: Arc<OwnedFd>,
    path: PathBuf,
    kind: Kind,
}

impl Entry {
    /// The absolute path under the root, as a label (never opened).
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// What the entry is.
    pub(crate) fn kind(&self) -> Kind {
        self.kind
    }

    /// The open directory the entry is listed in (its name is the last part of [`Entry::path`]).
    pub(crate) fn parent_fd(&self) -> BorrowedFd<'_> {
        self.dir.as_fd()
    }

    /// Open the entry, a regular file, by its name relative to its parent's descriptor.
    pub(crate) fn open_file(&self) -> io::Result<File> {
        let name = self.path.file_name().unwrap_or_default();
        open_file_at(self.dir.as_fd(), name)
    }

    /// The entry's size and modification time (nanoseconds since the epoch), asked of its
    /// parent's descriptor without following a link or opening it.
    pub(crate) fn stat(&self) -> io::Result<(u64, i128)> {
        let name = self.path.file_name().unwrap_or_default();
        let st = rustix::fs::statat(self.dir.as_fd(), name, AtFlags::SYMLINK_NOFOLLOW)?;
        let mtime = i128::from(st.st_mtime) * 1_000_000_000 + i128::from(st.st_mtime_nsec);
        Ok((st.st_size.max(0) as u64, mtime))
    }
}

/// What a visitor wants next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Visit {
    /// Go on (into the entry, if a directory).
    Continue,
    /// Do not enter this directory.
    Skip,
    /// Stop the whole walk.
    Quit,
}

/// One visitor: gets every entry, or the error of a directory that could not be opened or listed.
pub(crate) type Visitor<'s> = Box<dyn FnMut(Result<Entry, io::Error>) -> Visit + Send + 's>;

/// Trees with at most this many entries are walked in the calling thread alone: starting threads
/// costs more than it saves on small trees, while on big ones the parallelism wins.
pub(crate) const SMALL_TREE_ENTRIES: usize = 2_000;

/// Entries whose path below the root is longer than this (`PATH_MAX` less its NUL) are counted
/// as unreadable: no tool could open them by that path.
const MAX_PATH_BYTES: usize = libc::PATH_MAX as usize - 1;

/// The most threads a walk uses.
const MAX_WALK_THREADS: usize = 12;

/// A directory still to list, by its label. It is opened when its turn comes, by its path
/// beneath the root handle with no symlink allowed anywhere on it, rather than through a held
/// descriptor of its parent: a deep tree with many pending siblings then cannot use up the
/// process's descriptors.
struct Pending {
    path: PathBuf,
    depth: usize,
    chain: Chain,
}

/// The directories still to list, shared by the walking threads.
struct Stack {
    state: Mutex<(Vec<Pending>, usize)>,
    wake: Condvar,
    quit: AtomicBool,
}

impl Stack {
    /// The next directory to list, waiting while others may still add some; None when done.
    fn next(&self) -> Option<Pending> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if self.quit.load(Ordering::Relaxed) {
                return None;
            }
            if let Some(p) = state.0.pop() {
                state.1 += 1;
                return Some(p);
            }
            if state.1 == 0 {
                return None;
            }
            state = self.wake.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// A directory was listed; `found` are its subdirectories to list, in walk order.
    fn done(&self, found: Vec<Pending>) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.1 -= 1;
        let wake = state.1 == 0 || !found.is_empty() || self.quit.load(Ordering::Relaxed);
        // Reversed, so the first name is listed next.
        state.0.extend(found.into_iter().rev());
        drop(state);
        if wake {
            self.wake.notify_all();
        }
    }

    fn has_work(&self) -> bool {
        !self
            .state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .0
            .is_empty()
    }
}

/// A walk of one search directory with the shared rules.
pub(crate) struct Walk<'w> {
    ws: &'w Workspace,
    rules: &'w WalkRules,
    max_depth: Option<usize>,
    ignores: IgnoreFiles,
}

impl<'w> Walk<'w> {
    /// A walk under `ws` with `rules`, down to `max_depth` (1: the search directory's entries
    /// only; None: no limit).
    pub(crate) fn new(ws: &'w Workspace, rules: &'w WalkRules, max_depth: Option<usize>) -> Self {
        Walk {
            ws,
            rules,
            max_depth,
            ignores: IgnoreFiles::default(),
        }
    }

    /// Ignore files that were not read; their rules were not applied.
    pub(crate) fn refused_ignore_files(&self) -> u64 {
        self.ignores.refused()
    }

    /// Walk the directory `start` (resolved in the workspace), giving every entry to a visitor
    /// made by `make`: one in the calling thread, and one per extra thread once the tree turns
    /// out to hold more than [`SMALL_TREE_ENTRIES`] entries. The search directory itself is not
    /// given to the visitor.
    pub(crate) fn run<'s>(&self, start: &Resolved, make: &mut dyn FnMut() -> Visitor<'s>) {
        let mut first = make();
        let stack = Stack {
            state: Mutex::new((Vec::new(), 1)),
            wake: Condvar::new(),
            quit: AtomicBool::new(false),
        };
        let mut buf = Vec::with_capacity(32 * 1024);
        let found = match self.open_start(start) {
            Ok((dir, chain)) => {
                let dir = Arc::new(dir);
                let chain = self.own_chain(&chain, dir.as_fd(), &start.path);
                self.list(&dir, &start.path, 0, &chain, &mut first, &stack, &mut buf)
                    .0
            }
            Err(e) => {
                let e = io::Error::new(
                    io::Error::from(e).kind(),
                    format!("cannot open '{}': {}", start.relative, io::Error::from(e)),
                );
                if first(Err(e)) == Visit::Quit {
                    stack.quit.store(true, Ordering::Relaxed);
                }
                Vec::new()
            }
        };
        stack.done(found);
        let threads = walk_threads();
        std::thread::scope(|scope| {
            let mut seen = 0usize;
            let mut spread = threads <= 1;
            while let Some(p) = stack.next() {
                seen += self.work(p, &mut first, &stack, &mut buf);
                if !spread && seen > SMALL_TREE_ENTRIES && stack.has_work() {
                    spread = true;
                    for _ in 1..threads {
                        let mut visitor = make();
                        let stack = &stack;
                        scope.spawn(move || {
                            let mut buf = Vec::with_capacity(32 * 1024);
                            while let Some(p) = stack.next() {
                                self.work(p, &mut visitor, stack, &mut buf);
                            }
                        });
                    }
                }
            }
        });
    }

    /// The search directory, opened beneath the root handle, and the rules of the directories
    /// above it (from the root down, each opened beneath the root handle).
    fn open_start(&self, start: &Resolved) -> Result<(OwnedFd, Chain), Errno> {
        let dir = self
            .ws
            .open_beneath(start.beneath(), OFlags::RDONLY | OFlags::DIRECTORY)?;
        let mut chain = Chain::default();
        if !self.rules.include_ignored {
            let mut above = PathBuf::new();
            let mut label = self.ws.root().to_path_buf();
            for name in start.beneath() {
                let at = self
                    .ws
                    .open_beneath(&above, OFlags::PATH | OFlags::DIRECTORY)?;
                chain = self.ignores.extend(&chain, at.as_fd(), &label);
                above.push(name);
                label.push(name);
            }
        }
        Ok((dir, chain))
    }

    /// `parent` extended by the rules of the open directory `dir`, unless ignore rules are off.
    fn own_chain(&self, parent: &Chain, dir: BorrowedFd<'_>, label: &Path) -> Chain {
        if self.rules.include_ignored {
            parent.clone()
        } else {
            self.ignores.extend(parent, dir, label)
        }
    }

    /// Open and list one pending directory; the number of entries it had.
    fn work(
        &self,
        p: Pending,
        visitor: &mut Visitor<'_>,
        stack: &Stack,
        buf: &mut Vec<u8>,
    ) -> usize {
        let beneath = p.path.strip_prefix(self.ws.root()).unwrap_or(&p.path);
        let opened = self
            .ws
            .open_beneath(beneath, OFlags::RDONLY | OFlags::DIRECTORY);
        let (found, seen) = match opened {
            Ok(dir) => {
                let dir = Arc::new(dir);
                let chain = self.own_chain(&p.chain, dir.as_fd(), &p.path);
                self.list(&dir, &p.path, p.depth, &chain, visitor, stack, buf)
            }
            Err(e) => {
                let e = io::Error::from(e);
                let e =
                    io::Error::new(e.kind(), format!("cannot open '{}': {e}", p.path.display()));
                if visitor(Err(e)) == Visit::Quit {
                    stack.quit.store(true, Ordering::Relaxed);
                }
                (Vec::new(), 0)
            }
        };
        stack.done(found);
        seen
    }

    /// List the open directory `dir` (labelled `path`, at `depth`), give its entries to the
    /// visitor, and return the subdirectories to list next and the number of entries.
    #[allow(clippy::too_many_arguments)]
    fn list(
        &self,
        dir: &Arc<OwnedFd>,
        path: &Path,
        depth: usize,
        chain: &Chain,
        visitor: &mut Visitor<'_>,
        stack: &Stack,
        buf: &mut Vec<u8>,
    ) -> (Vec<Pending>, usize) {
        let names = match read_names(dir.as_fd(), buf) {
            Ok(names) => names,
            Err(e) => {
                let e = io::Error::new(e.kind(), format!("cannot list '{}': {e}", path.display()));
                if visitor(Err(e)) == Visit::Quit {
                    stack.quit.store(true, Ordering::Relaxed);
                }
                return (Vec::new(), 0);
            }
        };
        let seen = names.len();
        let mut found = Vec::new();
        let deeper = self.max_depth.is_none_or(|m| depth + 1 < m);
        for (name, kind) in names {
            if stack.quit.load(Ordering::Relaxed) {
                break;
            }
            let kind = match kind {
                Some(k) => k,
                // The file system did not say; ask it, without following a link.
                None => match rustix::fs::statat(dir.as_fd(), &name, AtFlags::SYMLINK_NOFOLLOW)
                    .map(|st| FileType::from_raw_mode(st.st_mode))
                {
                    Ok(FileType::Symlink) | Err(_) => continue,
                    Ok(ft) => kind_of(ft).unwrap_or(Kind::Special),
                },
            };
            let entry_path = path.join(&name);
            if !self.visible(&name, &entry_path, kind, chain) {
                continue;
            }
            let below = entry_path.as_os_str().len() - self.ws.root().as_os_str().len();
            if below > MAX_PATH_BYTES {
                // Walking by descriptor could go deeper, but Read could not open what it found.
                let e = io::Error::new(
                    io::ErrorKind::InvalidFilename,
                    format!(
                        "'{}' is more than {MAX_PATH_BYTES} bytes below the root",
                        rel_str(&entry_path, self.ws.root())
                    ),
                );
                if visitor(Err(e)) == Visit::Quit {
                    stack.quit.store(true, Ordering::Relaxed);
                    break;
                }
                continue;
            }
            let entry = Entry {
                dir: dir.clone(),
                path: entry_path,
                kind,
            };
            match visitor(Ok(entry)) {
                Visit::Quit => {
                    stack.quit.store(true, Ordering::Relaxed);
                    break;
                }
                Visit::Skip => {}
                Visit::Continue if kind == Kind::Dir && deeper => found.push(Pending {
                    path: path.join(&name),
                    depth: depth + 1,
                    chain: chain.clone(),
                }),
                Visit::Continue => {}
            }
        }
        (found, seen)
    }

    /// Whether the rules let the walk see the entry `name` at `path`.
    fn visible(&self, name: &OsStr, path: &Path, kind: Kind, chain: &Chain) -> bool {
        let is_dir = kind == Kind::Dir;
        if let Some(types) = &self.rules.types {
            if !is_dir && types.matched(path, false).is_ignore() {
                return false;
            }
        }
        if !self.rules.include_hidden && name.as_bytes().first() == Some(&b'.') {
            return false;
        }
        if self.rules.include_ignored {
            return true;
        }
        if let Some(name) = name.to_str() {
            if DEFAULT_IGNORED_NAMES.contains(&name) {
                return false;
            }
        }
        // The deepest directory whose rules match decides, as git does.
        for gi in chain.iter().rev() {
            let m = gi.matched(path, is_dir);
            if m.is_ignore() {
                return false;
            }
            if m.is_whitelist() {
                return true;
            }
        }
        true
    }
}

/// The kind of a file type; None for a symlink.
fn kind_of(ft: FileType) -> Option<Kind> {
    match ft {
        FileType::RegularFile => Some(Kind::File),
        FileType::Directory => Some(Kind::Dir),
        FileType::Symlink => None,
        _ => Some(Kind::Special),
    }
}

/// The names in the open directory `dir`, sorted, with their kinds where the file system gave
/// them (None: unknown); symlinks, `.` and `..` left out.
fn read_names(dir: BorrowedFd<'_>, buf: &mut Vec<u8>) -> io::Result<Vec<(OsString, Option<Kind>)>> {
    let mut names = Vec::new();
    // Room for many entries of the longest name, so one always fits.
    buf.reserve(32 * 1024);
    let mut raw = RawDir::new(dir, spare(buf));
    while let Some(entry) = raw.next() {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        let kind = match entry.file_type() {
            FileType::Unknown => None,
            ft => match kind_of(ft) {
                Some(k) => Some(k),
                None => continue,
            },
        };
        names.push((OsStr::from_bytes(name).to_os_string(), kind));
    }
    names.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Ok(names)
}

fn spare(buf: &mut Vec<u8>) -> &mut [MaybeUninit<u8>] {
    buf.clear();
    buf.spare_capacity_mut()
}

/// The `/`-separated path of `path` relative to `base`.
pub(crate) fn rel_str(path: &Path, base: &Path) -> String {
    let rel = path.strip_prefix(base).unwrap_or(path);
    rel.to_string_lossy().into_owned()
}

/// Resolve the directory a search starts from; the error envelopes of reference §5.3.
pub(crate) fn search_root(
    ws: &Workspace,
    requested: &str,
    params: &Value,
    time_ms: u64,
) -> Result<Resolved, Box<ToolResult>> {
    let err = |code, msg: String| ToolResult::error(params, code, msg, time_ms);
    let resolved = ws.resolve(requested).map_err(|e| {
        Box::new(match e {
            PathError::Absolute | PathError::Outside => err(ErrorCode::AccessDenied, e.to_string()),
            PathError::InvalidPath(m) => err(ErrorCode::InvalidParam, m),
            PathError::NotFound(_) => err(
                ErrorCode::NotFound,
                format!("Search path '{requested}' does not exist."),
            ),
            other => err(ErrorCode::InternalError, other.to_string()),
        })
    })?;
    match resolved.kind {
        EntryKind::Directory => Ok(resolved),
        EntryKind::Missing => Err(Box::new(
            err(
                ErrorCode::NotFound,
                format!("Search path '{requested}' does not exist."),
            )
            .with_path_resolved(resolved.relative.clone()),
        )),
        EntryKind::File | EntryKind::Special => Err(Box::new(
            err(
                ErrorCode::InvalidParam,
                format!("Search path '{requested}' is not a directory."),
            )
            .with_path_resolved(resolved.relative.clone()),
        )),
    }
}

/// The ripgrep file-type names, for error messages and the schema.
pub(crate) const COMMON_TYPES: &str =
    "py, rust, js, ts, go, java, c, cpp, cs, rb, php, sh, md, json, yaml, toml, html, css";

/// Names models often give for a ripgrep type: language names and extensions.
const TYPE_ALIASES: [(&str, &str); 16] = [
    ("rs", "rust"),
    ("python", "py"),
    ("javascript", "js"),
    ("typescript", "ts"),
    ("golang", "go"),
    ("c++", "cpp"),
    ("csharp", "cs"),
    ("c#", "cs"),
    ("ruby", "rb"),
    ("shell", "sh"),
    ("bash", "sh"),
    ("markdown", "md"),
    ("yml", "yaml"),
    ("kt", "kotlin"),
    ("tsx", "ts"),
    ("jsx", "js"),
];

/// The ripgrep type `name` means: a type name, a common alias (`rs`, `python`), or a file
/// extension (`.rs`, `*.py`) that exactly one type's globs name.
pub(crate) fn type_name(name: &str, defs: &[ignore::types::FileTypeDef]) -> Option<String> {
    let lower = name.trim().to_ascii_lowercase();
    if defs.iter().any(|d| d.name() == lower) {
        return Some(lower);
    }
    if let Some((_, to)) = TYPE_ALIASES.iter().find(|(from, _)| *from == lower) {
        return Some((*to).to_string());
    }
    let ext = lower.trim_start_matches('*').trim_start_matches('.');
    if ext.is_empty() {
        return None;
    }
    let glob = format!("*.{ext}");
    let owners: Vec<&str> = defs
        .iter()
        .filter(|d| d.globs().contains(&glob))
        .map(|d| d.name())
        .collect();
    match owners.as_slice() {
        [one] => Some((*one).to_string()),
        _ => None,
    }
}

/// Build a type filter selecting `name` (see [`type_name`] for what it may be), or the
/// INVALID_PARAM message.
pub(crate) fn select_type(name: &str) -> Result<Types, String> {
    let mut b = ignore::types::TypesBuilder::new();
    b.add_defaults();
    let Some(known) = type_name(name, &b.definitions()) else {
        return Err(format!(
            "Unknown file type '{name}' for type; use a ripgrep type name such as {COMMON_TYPES}, or use glob instead."
        ));
    };
    b.select(&known);
    b.build()
        .map_err(|e| format!("Invalid file type '{name}': {e}"))
}

/// Threads a large walk spreads over: the CPUs this process may use, read once (on Linux
/// `available_parallelism` reads cgroup files on every call, which a small walk would notice).
fn walk_threads() -> usize {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .min(MAX_WALK_THREADS)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_are_checked() {
        assert!(select_type("py").is_ok());
        assert!(select_type("rust").is_ok());
        assert_eq!(
            select_type("pyhton").unwrap_err(),
            format!("Unknown file type 'pyhton' for type; use a ripgrep type name such as {COMMON_TYPES}, or use glob instead.")
        );
    }

    #[test]
    fn ancestor_ignores_apply_below_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("src/gen")).unwrap();
        std::fs::write(root.join(".gitignore"), "*.log\n/src/gen/\n").unwrap();
        std::fs::write(root.join("src/a.log"), "").unwrap();
        std::fs::write(root.join("src/a.rs"), "").unwrap();
        std::fs::write(root.join("src/gen/x.rs"), "").unwrap();
        let ws = Workspace::new(&root).unwrap();
        let rules = WalkRules::default();
        let seen = Mutex::new(Vec::new());
        let walk = Walk::new(&ws, &rules, None);
        walk.run(&ws.resolve("src").unwrap(), &mut || {
            Box::new(|e: Result<Entry, io::Error>| {
                let e = e.unwrap();
                seen.lock().unwrap().push(rel_str(e.path(), &root));
                Visit::Continue
            })
        });
        let mut seen = seen.into_inner().unwrap();
        seen.sort();
        assert_eq!(seen, ["src/a.rs"]);
        assert_eq!(walk.refused_ignore_files(), 0);
    }
}
