//! The rules Grep and Glob share: which entries a walk visits, and how a search root resolves.
//!
//! Skipped unless asked: hidden names (starting with "."), the reference's
//! [`DEFAULT_IGNORED_NAMES`] at any depth, and `.gitignore`/`.ignore`/`.git/info/exclude` rules,
//! also outside a git repository. Symlinks are never followed and never listed. Ignore files are
//! read only inside the workspace: those of the directories between the root and the search
//! directory are applied as well, but nothing above the root is consulted (no global git config).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::types::Types;
use ignore::{DirEntry, ParallelVisitorBuilder, WalkBuilder, WalkState};
use serde_json::Value;

use super::envelope::{ErrorCode, ToolResult};
use super::workspace::{EntryKind, PathError, Resolved, Workspace};

/// Names skipped at any depth, for files and directories alike, unless `include_ignored`.
pub const DEFAULT_IGNORED_NAMES: [&str; 16] = [
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
pub const DEFAULT_RESULT_LIMIT: i64 = 100;
/// The largest `limit` Grep and Glob accept.
pub const MAX_RESULT_LIMIT: i64 = 200;

/// Which entries a walk visits.
#[derive(Debug, Clone, Default)]
pub struct WalkRules {
    /// Visit names starting with ".".
    pub include_hidden: bool,
    /// Visit [`DEFAULT_IGNORED_NAMES`] and entries matched by ignore files.
    pub include_ignored: bool,
    /// Only files of these ripgrep types (directories are unaffected).
    pub types: Option<Types>,
}

/// Ignore files bigger than this are not read (and are counted as refused).
const MAX_IGNORE_FILE_BYTES: u64 = 1 << 20;

/// The ignore files of the directories a walk enters, read through the workspace's confinement
/// (never through a symlink, never a FIFO or device, at most [`MAX_IGNORE_FILE_BYTES`]), each
/// directory once. The `ignore` crate's own reading is off: it opens them with a plain open.
pub(crate) struct IgnoreFiles {
    ws: Workspace,
    loaded: std::sync::RwLock<std::collections::HashMap<PathBuf, Option<Arc<Gitignore>>>>,
    /// Per directory of the walk, the rules that apply to its entries, outermost first.
    chains: std::sync::RwLock<std::collections::HashMap<PathBuf, Chain>>,
    refused: AtomicU64,
}

type Chain = Arc<Vec<Arc<Gitignore>>>;

impl IgnoreFiles {
    fn new(ws: &Workspace) -> Self {
        IgnoreFiles {
            ws: ws.clone(),
            loaded: Default::default(),
            chains: Default::default(),
            refused: AtomicU64::new(0),
        }
    }

    /// Ignore files that were not read because they were symlinks, special files, too big or
    /// outside the root.
    pub(crate) fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// The rules of `dir`'s `.gitignore`, `.ignore` and (when `dir/.git` is a directory)
    /// `.git/info/exclude`.
    fn of(&self, dir: &Path) -> Option<Arc<Gitignore>> {
        if let Some(found) = self.loaded.read().ok().and_then(|m| m.get(dir).cloned()) {
            return found;
        }
        let mut builder = GitignoreBuilder::new(dir);
        let mut any = false;
        for name in [".git/info/exclude", ".gitignore", ".ignore"] {
            if name.starts_with(".git/")
                && !std::fs::symlink_metadata(dir.join(".git")).is_ok_and(|m| m.is_dir())
            {
                continue;
            }
            if let Some(text) = self.read(&dir.join(name)) {
                for line in text.lines() {
                    any |= builder.add_line(Some(dir.join(name)), line).is_ok();
                }
            }
        }
        let rules = any.then(|| builder.build().ok()).flatten().map(Arc::new);
        if let Ok(mut m) = self.loaded.write() {
            m.insert(dir.to_path_buf(), rules.clone());
        }
        rules
    }

    /// The rules for entries directly inside `dir`: those of every directory from the root down
    /// to `dir`, outermost first. Each directory's chain is built once, from its parent's.
    fn chain(&self, dir: &Path) -> Chain {
        if !dir.starts_with(self.ws.root()) {
            // Nothing above the root is consulted.
            return Chain::default();
        }
        if let Some(found) = self.chains.read().ok().and_then(|m| m.get(dir).cloned()) {
            return found;
        }
        let mut rules: Vec<Arc<Gitignore>> = match dir.parent() {
            Some(parent) if dir != self.ws.root() => self.chain(parent).as_ref().clone(),
            _ => Vec::new(),
        };
        if let Some(own) = self.of(dir) {
            rules.push(own);
        }
        let rules = Arc::new(rules);
        if let Ok(mut m) = self.chains.write() {
            m.insert(dir.to_path_buf(), rules.clone());
        }
        rules
    }

    /// An ignore file's text, through the workspace: None when there is none, and None (counted)
    /// when it may not be read.
    fn read(&self, path: &Path) -> Option<String> {
        let meta = std::fs::symlink_metadata(path).ok()?;
        let refuse = || {
            self.refused.fetch_add(1, Ordering::Relaxed);
            None
        };
        if !meta.file_type().is_file() || meta.len() > MAX_IGNORE_FILE_BYTES {
            return refuse();
        }
        let rel = self.ws.relative(path);
        let Ok(resolved) = self.ws.resolve_file(&rel) else {
            return refuse();
        };
        let Ok((file, _)) = self.ws.open(&resolved) else {
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

/// A walker over `dir` (an absolute directory inside the workspace) with the shared rules, and
/// the ignore files it reads (to report the ones it refused).
pub(crate) fn walker(
    ws: &Workspace,
    dir: &Path,
    rules: &WalkRules,
) -> (WalkBuilder, Arc<IgnoreFiles>) {
    let mut b = WalkBuilder::new(dir);
    b.hidden(!rules.include_hidden)
        .parents(false)
        .ignore(false)
        .git_ignore(false)
        .git_exclude(false)
        .git_global(false)
        .require_git(false)
        .follow_links(false)
        .same_file_system(false);
    if let Some(types) = &rules.types {
        b.types(types.clone());
    }
    let ignores = Arc::new(IgnoreFiles::new(ws));
    if rules.include_ignored {
        return (b, ignores);
    }
    let files = ignores.clone();
    b.filter_entry(move |entry: &DirEntry| {
        if let Some(name) = entry.file_name().to_str() {
            if DEFAULT_IGNORED_NAMES.contains(&name) {
                return false;
            }
        }
        let Some(parent) = entry.path().parent() else {
            return true;
        };
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        // The deepest directory whose rules match decides, as git does.
        for gi in files.chain(parent).iter().rev() {
            let m = gi.matched(entry.path(), is_dir);
            if m.is_ignore() {
                return false;
            }
            if m.is_whitelist() {
                return true;
            }
        }
        true
    });
    (b, ignores)
}

/// Trees with at most this many entries are walked in the calling thread: the parallel walker
/// costs about a millisecond per call in thread start-up and idle sleeps, which dominates on
/// small trees, while on big ones its parallelism wins.
pub(crate) const SMALL_TREE_ENTRIES: usize = 2_000;

/// Visit every entry of the walk: in this thread for a small tree, in parallel otherwise. The
/// first [`SMALL_TREE_ENTRIES`] entries are collected sequentially; a tree that has more is
/// walked again by the parallel walker.
pub(crate) fn visit_walk<'s>(builder: &WalkBuilder, visitors: &mut dyn ParallelVisitorBuilder<'s>) {
    let mut entries = Vec::new();
    for entry in builder.build() {
        if entries.len() == SMALL_TREE_ENTRIES {
            builder.build_parallel().visit(visitors);
            return;
        }
        entries.push(entry);
    }
    let mut visitor = visitors.build();
    // A skipped directory's entries were already collected: pass over them.
    let mut skipped: Option<PathBuf> = None;
    for entry in entries {
        if let (Some(dir), Ok(e)) = (&skipped, &entry) {
            if e.path().starts_with(dir) {
                continue;
            }
        }
        let path = entry.as_ref().ok().map(|e| e.path().to_path_buf());
        match visitor.visit(entry) {
            WalkState::Quit => break,
            WalkState::Skip => skipped = path,
            WalkState::Continue => {}
        }
    }
}

/// A [`ParallelVisitorBuilder`] from a closure factory, as `WalkParallel::run` takes.
pub(crate) struct FnVisitors<F>(pub F);

/// One visitor made by [`FnVisitors`].
type EntryFn<'s> = Box<dyn FnMut(Result<DirEntry, ignore::Error>) -> WalkState + Send + 's>;

struct FnVisitor<'s>(EntryFn<'s>);

impl ignore::ParallelVisitor for FnVisitor<'_> {
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        (self.0)(entry)
    }
}

impl<'s, F> ParallelVisitorBuilder<'s> for FnVisitors<F>
where
    F: FnMut() -> EntryFn<'s>,
{
    fn build(&mut self) -> Box<dyn ignore::ParallelVisitor + 's> {
        Box::new(FnVisitor((self.0)()))
    }
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
pub const COMMON_TYPES: &str =
    "py, rust, js, ts, go, java, c, cpp, cs, rb, php, sh, md, json, yaml, toml, html, css";

/// Build a type filter selecting `name`, or the INVALID_PARAM message.
pub(crate) fn select_type(name: &str) -> Result<Types, String> {
    let mut b = ignore::types::TypesBuilder::new();
    b.add_defaults();
    let known = b.definitions().iter().any(|d| d.name() == name);
    if !known {
        return Err(format!(
            "Unknown file type '{name}' for type; use a ripgrep type name such as {COMMON_TYPES}, or use glob instead."
        ));
    }
    b.select(name);
    b.build()
        .map_err(|e| format!("Invalid file type '{name}': {e}"))
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
        let mut seen: Vec<String> = walker(&ws, &root.join("src"), &WalkRules::default())
            .0
            .build()
            .filter_map(Result::ok)
            .map(|e| rel_str(e.path(), &root))
            .collect();
        seen.sort();
        assert_eq!(seen, ["src", "src/a.rs"]);
    }
}
