//! Path confinement: every path a tool touches is resolved under one root.
//!
//! Resolution walks the requested path one component at a time, following symlinks itself
//! (so a loop is detected and reported, not looped on), and only then checks that the final
//! target is inside the root. Special files are recognised from metadata, never by opening them,
//! and files are opened with `O_NONBLOCK | O_NOFOLLOW` and checked again after opening, so a file
//! swapped for a FIFO or a symlink between the check and the open cannot block or escape.

use std::fs::{File, Metadata};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

/// How many symlinks one resolution may follow before it is called a loop (Linux's limit).
const MAX_SYMLINK_HOPS: usize = 40;

/// Why a path was refused or could not be used. `kind()` is the reference's workspace error kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// Empty, not a string, or containing a NUL byte.
    #[error("{0}")]
    InvalidPath(String),
    /// An absolute path.
    #[error("Absolute paths are not allowed.")]
    Absolute,
    /// The resolved target is outside the root.
    #[error("Path is outside project root.")]
    Outside,
    /// Nothing exists at the path.
    #[error("File '{0}' does not exist.")]
    NotFound(String),
    /// A directory where a file was wanted.
    #[error("Path '{0}' is a directory.")]
    Directory(String),
    /// A FIFO, socket or device: refused without being opened.
    #[error("Path '{0}' is not a regular file.")]
    NotRegular(String),
    /// A symlink loop or an I/O failure while resolving or opening.
    #[error("Path resolution failed: {0}")]
    Io(String),
    /// The file changed between the check and the open.
    #[error("File was modified while being read.")]
    Conflict,
}

impl PathError {
    /// The reference's short kind name (`invalid_path`, `absolute`, `outside`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            PathError::InvalidPath(_) => "invalid_path",
            PathError::Absolute => "absolute",
            PathError::Outside => "outside",
            PathError::NotFound(_) => "not_found",
            PathError::Directory(_) => "directory",
            PathError::NotRegular(_) => "not_regular",
            PathError::Io(_) => "io",
            PathError::Conflict => "conflict",
        }
    }
}

/// What a resolved path points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Directory,
    /// A FIFO, socket, or device.
    Special,
    /// Nothing exists there.
    Missing,
}

/// A path that has been resolved and confined under the root.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The absolute resolved path (symlinks followed).
    pub path: PathBuf,
    /// The path relative to the root, `/`-separated, `.` for the root itself.
    pub relative: String,
    /// What is there.
    pub kind: EntryKind,
    /// Metadata of the target, when it exists.
    pub metadata: Option<Metadata>,
}

/// One confined directory tree.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// Confine to `root`, which must be an existing directory. The root is canonicalised.
    pub fn new(root: impl AsRef<Path>) -> Result<Self, PathError> {
        let given = root.as_ref();
        let root = std::fs::canonicalize(given).map_err(|e| {
            PathError::InvalidPath(format!(
                "Project root '{}' cannot be used: {e}.",
                given.display()
            ))
        })?;
        if !root.is_dir() {
            return Err(PathError::InvalidPath(format!(
                "Project root '{}' is not a directory.",
                given.display()
            )));
        }
        Ok(Workspace { root })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The root-relative `/`-separated form of an absolute path under the root.
    pub fn relative(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
            // A backslash is an ordinary file-name character here: turned into `/`, a file
            // named `..\\x` would be shown as `../x`, a path outside the root.
            Ok(rel) => rel.to_string_lossy().into_owned(),
            Err(_) => path.to_string_lossy().into_owned(),
        }
    }

    /// Resolve `requested` (relative to the root) and require the target to be inside the root.
    pub fn resolve(&self, requested: &str) -> Result<Resolved, PathError> {
        if requested.is_empty() {
            return Err(PathError::InvalidPath(
                "Path must be a non-empty relative string.".into(),
            ));
        }
        if requested.contains('\0') {
            return Err(PathError::InvalidPath(
                "Path must not contain NUL bytes.".into(),
            ));
        }
        let req = Path::new(requested);
        if req.is_absolute() || requested.starts_with('\\') {
            return Err(PathError::Absolute);
        }
        let path = self.walk(req)?;
        if !path.starts_with(&self.root) {
            return Err(PathError::Outside);
        }
        let (kind, metadata) = match std::fs::metadata(&path) {
            Ok(m) => {
                let ft = m.file_type();
                let kind = if ft.is_file() {
                    EntryKind::File
                } else if ft.is_dir() {
                    EntryKind::Directory
                } else {
                    EntryKind::Special
                };
                (kind, Some(m))
            }
            Err(e) if is_missing(&e) => (EntryKind::Missing, None),
            Err(e) if e.raw_os_error() == Some(libc::ENAMETOOLONG) => {
                return Err(PathError::InvalidPath(
                    "Path is too long for the file system; use a shorter relative path.".into(),
                ))
            }
            Err(e) => return Err(PathError::Io(e.to_string())),
        };
        let relative = self.relative(&path);
        Ok(Resolved {
            path,
            relative,
            kind,
            metadata,
        })
    }

    /// Resolve `requested` and require an existing regular file.
    pub fn resolve_file(&self, requested: &str) -> Result<Resolved, PathError> {
        let r = self.resolve(requested)?;
        match r.kind {
            EntryKind::File => Ok(r),
            EntryKind::Directory => Err(PathError::Directory(requested.to_string())),
            EntryKind::Special => Err(PathError::NotRegular(requested.to_string())),
            EntryKind::Missing => Err(PathError::NotFound(requested.to_string())),
        }
    }

    /// Open a resolved regular file for reading without ever blocking or following a symlink,
    /// and check that it is still the same regular file that was resolved.
    pub fn open(&self, resolved: &Resolved) -> Result<(File, Metadata), PathError> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&resolved.path)
            .map_err(|e| {
                if is_missing(&e) {
                    PathError::NotFound(resolved.relative.clone())
                } else if e.raw_os_error() == Some(libc::ELOOP) {
                    PathError::Conflict
                } else {
                    PathError::Io(e.to_string())
                }
            })?;
        let meta = file.metadata().map_err(|e| PathError::Io(e.to_string()))?;
        if !meta.file_type().is_file() {
            return Err(PathError::NotRegular(resolved.relative.clone()));
        }
        if let Some(before) = &resolved.metadata {
            if before.dev() != meta.dev() || before.ino() != meta.ino() {
                return Err(PathError::Conflict);
            }
        }
        Ok((file, meta))
    }

    /// Open a file a directory walk under the root found, for reading: without blocking on a
    /// FIFO or following a symlink swapped in since the walk, and only if it is a regular file.
    pub fn open_walked(path: &Path) -> std::io::Result<File> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)?;
        if !file.metadata()?.file_type().is_file() {
            return Err(std::io::Error::other("not a regular file"));
        }
        Ok(file)
    }

    /// Follow `req` component by component from the root, resolving symlinks as they come.
    fn walk(&self, req: &Path) -> Result<PathBuf, PathError> {
        let mut out = self.root.clone();
        let mut pending: Vec<PathBuf> = Vec::new();
        push_components(&mut pending, req);
        let mut hops = 0usize;
        while let Some(part) = pending.pop() {
            if part.as_os_str() == "/" {
                out = PathBuf::from("/");
                continue;
            }
            if part.as_os_str() == ".." {
                out.pop();
                continue;
            }
            let candidate = out.join(&part);
            match std::fs::symlink_metadata(&candidate) {
                Ok(m) if m.file_type().is_symlink() => {
                    hops += 1;
                    if hops > MAX_SYMLINK_HOPS {
                        return Err(PathError::Io(format!(
                            "symlink loop or too many levels of symbolic links at '{}'",
                            self.relative(&candidate)
                        )));
                    }
                    let target =
                        std::fs::read_link(&candidate).map_err(|e| PathError::Io(e.to_string()))?;
                    push_components(&mut pending, &target);
                }
                _ => out = candidate,
            }
        }
        Ok(out)
    }
}

/// Push the components of `path` onto a stack so that they pop in order.
fn push_components(stack: &mut Vec<PathBuf>, path: &Path) {
    let mut parts: Vec<PathBuf> = Vec::new();
    for c in path.components() {
        match c {
            Component::RootDir => parts.push(PathBuf::from("/")),
            Component::ParentDir => parts.push(PathBuf::from("..")),
            Component::Normal(n) => parts.push(PathBuf::from(n)),
            Component::CurDir | Component::Prefix(_) => {}
        }
    }
    stack.extend(parts.into_iter().rev());
}

fn is_missing(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    ) || e.raw_os_error() == Some(libc::ENOTDIR)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn tree() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("notes.txt"), "hi\n").unwrap();
        std::fs::write(dir.path().join("secret.txt"), "s\n").unwrap();
        let ws = Workspace::new(&root).unwrap();
        (dir, ws)
    }

    #[test]
    fn relative_paths_resolve_inside() {
        let (_d, ws) = tree();
        assert_eq!(ws.resolve("notes.txt").unwrap().relative, "notes.txt");
        assert_eq!(
            ws.resolve("src/../notes.txt").unwrap().relative,
            "notes.txt"
        );
        assert_eq!(ws.resolve("./src").unwrap().kind, EntryKind::Directory);
        assert_eq!(ws.resolve(".").unwrap().relative, ".");
    }

    #[test]
    fn escapes_are_refused() {
        let (_d, ws) = tree();
        assert_eq!(ws.resolve("").unwrap_err().kind(), "invalid_path");
        assert_eq!(ws.resolve("/etc/passwd").unwrap_err(), PathError::Absolute);
        assert_eq!(ws.resolve("../secret.txt").unwrap_err(), PathError::Outside);
        assert_eq!(ws.resolve("a\0b").unwrap_err().kind(), "invalid_path");
    }

    #[test]
    fn backslashes_in_names_are_kept() {
        // Found by the `paths` fuzz target: a name ending in `\\..` came back with a `..` part.
        let (_d, ws) = tree();
        let name = "x\\..\\..\\secret.txt";
        std::fs::write(ws.root().join(name), "b\n").unwrap();
        let r = ws.resolve(name).unwrap();
        assert_eq!((r.relative.as_str(), r.kind), (name, EntryKind::File));
        let missing = ws.resolve("a\\\\b\\..").unwrap();
        assert_eq!(missing.relative, "a\\\\b\\..");
        assert!(!missing.relative.split('/').any(|c| c == ".."));
    }

    #[test]
    fn symlinks_are_followed_and_confined() {
        let (d, ws) = tree();
        let root = ws.root().to_path_buf();
        symlink(d.path().join("secret.txt"), root.join("out")).unwrap();
        symlink("notes.txt", root.join("in")).unwrap();
        symlink(d.path(), root.join("outdir")).unwrap();
        symlink("loop2", root.join("loop1")).unwrap();
        symlink("loop1", root.join("loop2")).unwrap();
        assert_eq!(ws.resolve("out").unwrap_err(), PathError::Outside);
        assert_eq!(
            ws.resolve("outdir/secret.txt").unwrap_err(),
            PathError::Outside
        );
        assert_eq!(ws.resolve("in").unwrap().relative, "notes.txt");
        assert_eq!(ws.resolve("loop1").unwrap_err().kind(), "io");
    }
}
