//! Path confinement: every path a tool touches is resolved under one root, and every open is
//! confined by the kernel beneath a handle of the root taken once, when the workspace is built.
//!
//! Resolution walks the requested path one component at a time, following symlinks itself
//! (so a loop is detected and reported, not looped on), and only then checks that the final
//! target is inside the root. Every look-up it makes (`lstat`, `readlink`) and every open that
//! follows is made relative to the root handle, with `openat2(RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)` where the kernel has it (Linux >= 5.6) and
//! `openat(O_NOFOLLOW)` one component at a time elsewhere. The resolved path has no symlink left
//! in it, so a directory swapped for a symlink after resolution makes the open fail instead of
//! leaving the root, and a root replaced by a symlink after the workspace was built is never
//! followed: the handle still names the original directory. Special files are recognised from
//! metadata, never by opening them, and files are opened with `O_NONBLOCK | O_NOCTTY` and checked
//! again with `fstat` after opening, so a file swapped for a FIFO between the check and the open
//! cannot block.

use std::ffi::OsStr;
use std::fs::{File, Metadata};
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags, Stat};
use rustix::io::Errno;

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

/// The identity of a file when it was resolved, to check that an open found the same file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileId {
    /// Device number.
    pub dev: u64,
    /// Inode number.
    pub ino: u64,
    /// Size in bytes.
    pub len: u64,
}

impl FileId {
    fn of(st: &Stat) -> Self {
        FileId {
            dev: st.st_dev,
            ino: st.st_ino,
            len: st.st_size as u64,
        }
    }
}

/// A path that has been resolved and confined under the root.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The absolute resolved path (symlinks followed), for display and as a key; never opened.
    pub path: PathBuf,
    /// The path relative to the root, `/`-separated, `.` for the root itself.
    pub relative: String,
    /// What is there.
    pub kind: EntryKind,
    /// The identity of the target, when it exists.
    pub id: Option<FileId>,
    /// The exact path below the root, without symlinks or `..` (empty for the root): what is
    /// opened beneath the root handle.
    beneath: PathBuf,
}

impl Resolved {
    /// The path below the root that opens go through (empty for the root itself).
    pub(crate) fn beneath(&self) -> &Path {
        &self.beneath
    }
}

/// Whether `openat2` works here: unknown until first tried, then remembered.
static OPENAT2: AtomicU8 = AtomicU8::new(OPENAT2_UNKNOWN);
const OPENAT2_UNKNOWN: u8 = 0;
const OPENAT2_YES: u8 = 1;
const OPENAT2_NO: u8 = 2;

/// One confined directory tree: its canonical path (for display and for placing traces
/// elsewhere) and a handle of the directory taken when the workspace was built, which every open
/// is made beneath.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    handle: Arc<OwnedFd>,
}

impl Workspace {
    /// Confine to `root`, which must be an existing directory. The root is canonicalised and a
    /// handle of it is held from here on.
    pub fn new(root: impl AsRef<Path>) -> Result<Self, PathError> {
        let given = root.as_ref();
        let root = std::fs::canonicalize(given).map_err(|e| {
            PathError::InvalidPath(format!(
                "Project root '{}' cannot be used: {e}.",
                given.display()
            ))
        })?;
        // O_NOFOLLOW: the canonical path has no symlink at its end, unless one was swapped in
        // since; then this fails rather than holding whatever the link points at.
        let handle = rustix::fs::open(
            &root,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| {
            if e == Errno::NOTDIR || e == Errno::LOOP {
                PathError::InvalidPath(format!(
                    "Project root '{}' is not a directory.",
                    given.display()
                ))
            } else {
                PathError::InvalidPath(format!(
                    "Project root '{}' cannot be used: {}.",
                    given.display(),
                    io::Error::from(e)
                ))
            }
        })?;
        Ok(Workspace {
            root,
            handle: Arc::new(handle),
        })
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
        let Ok(beneath) = path.strip_prefix(&self.root).map(Path::to_path_buf) else {
            return Err(PathError::Outside);
        };
        let relative = self.relative(&path);
        let (kind, id) = match self.lstat_beneath(&beneath) {
            Ok(st) => {
                let kind = match FileType::from_raw_mode(st.st_mode) {
                    FileType::RegularFile => EntryKind::File,
                    FileType::Directory => EntryKind::Directory,
                    // Resolution followed every link on the way; one here was swapped in since.
                    FileType::Symlink => return Err(changed(&relative)),
                    _ => EntryKind::Special,
                };
                (kind, Some(FileId::of(&st)))
            }
            Err(e) if is_missing(e) => (EntryKind::Missing, None),
            Err(Errno::NAMETOOLONG) => {
                return Err(PathError::InvalidPath(
                    "Path is too long for the file system; use a shorter relative path.".into(),
                ))
            }
            Err(e) if is_swapped(e) => return Err(changed(&relative)),
            Err(e) => return Err(PathError::Io(io::Error::from(e).to_string())),
        };
        Ok(Resolved {
            path,
            relative,
            kind,
            id,
            beneath,
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

    /// Open a resolved regular file for reading beneath the root handle, without ever blocking
    /// or following a symlink, and check that it is still the same regular file that was
    /// resolved.
    pub fn open(&self, resolved: &Resolved) -> Result<(File, Metadata), PathError> {
        let fd = self
            .open_beneath(&resolved.beneath, OFlags::RDONLY | OFlags::NONBLOCK)
            .map_err(|e| {
                if is_missing(e) {
                    PathError::NotFound(resolved.relative.clone())
                } else if is_swapped(e) {
                    PathError::Conflict
                } else if e == Errno::NXIO {
                    // A socket.
                    PathError::NotRegular(resolved.relative.clone())
                } else {
                    PathError::Io(io::Error::from(e).to_string())
                }
            })?;
        let file = File::from(fd);
        let meta = file.metadata().map_err(|e| PathError::Io(e.to_string()))?;
        if !meta.file_type().is_file() {
            return Err(PathError::NotRegular(resolved.relative.clone()));
        }
        if let Some(before) = &resolved.id {
            if before.dev != meta.dev() || before.ino != meta.ino() {
                return Err(PathError::Conflict);
            }
        }
        Ok((file, meta))
    }

    /// Open `beneath` (a path below the root made of plain names only; empty for the root) with
    /// `flags`, never following a symlink and never leaving the root: `openat2` with
    /// `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS` where the kernel has it,
    /// `openat(O_NOFOLLOW)` one component at a time elsewhere. `O_CLOEXEC | O_NOFOLLOW` (and
    /// `O_NOCTTY` unless `O_PATH`) are always added.
    pub(crate) fn open_beneath(&self, beneath: &Path, flags: OFlags) -> Result<OwnedFd, Errno> {
        let mut flags = flags | OFlags::CLOEXEC | OFlags::NOFOLLOW;
        if !flags.contains(OFlags::PATH) {
            // openat2 refuses O_NOCTTY with O_PATH (EINVAL); an O_PATH descriptor takes no
            // terminal anyway.
            flags |= OFlags::NOCTTY;
        }
        let mut names = Vec::new();
        for c in beneath.components() {
            match c {
                Component::Normal(n) => names.push(n),
                Component::CurDir => {}
                // Resolution never hands these over; refuse rather than trust a caller.
                _ => return Err(Errno::XDEV),
            }
        }
        if OPENAT2.load(Ordering::Relaxed) != OPENAT2_NO {
            let path: &Path = if names.is_empty() {
                Path::new(".")
            } else {
                beneath
            };
            let resolve =
                ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
            let mut tries = 0;
            loop {
                match rustix::fs::openat2(self.handle.as_fd(), path, flags, Mode::empty(), resolve)
                {
                    Err(Errno::NOSYS) => {
                        OPENAT2.store(OPENAT2_NO, Ordering::Relaxed);
                        break;
                    }
                    // The kernel saw a rename it could not rule out; the answer may differ.
                    Err(Errno::AGAIN) if tries < 8 => tries += 1,
                    other => {
                        OPENAT2.store(OPENAT2_YES, Ordering::Relaxed);
                        return other;
                    }
                }
            }
        }
        self.open_by_names(&names, flags)
    }

    /// The fallback of [`Workspace::open_beneath`] for kernels without `openat2`: `names` opened
    /// one at a time from the root handle, each directory with `O_PATH | O_DIRECTORY |
    /// O_NOFOLLOW` (a symlink there is `ENOTDIR`), the last with `flags` (which hold
    /// `O_NOFOLLOW`).
    fn open_by_names(&self, names: &[&OsStr], flags: OFlags) -> Result<OwnedFd, Errno> {
        let Some((last, dirs)) = names.split_last() else {
            return rustix::fs::openat(self.handle.as_fd(), ".", flags, Mode::empty());
        };
        let mut dir: Option<OwnedFd> = None;
        for name in dirs {
            let at = dir.as_ref().map_or(self.handle.as_fd(), |d| d.as_fd());
            dir = Some(rustix::fs::openat(
                at,
                *name,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )?);
        }
        let at = dir.as_ref().map_or(self.handle.as_fd(), |d| d.as_fd());
        rustix::fs::openat(at, *last, flags, Mode::empty())
    }

    /// `lstat` of `beneath` through the root handle (the root itself when empty).
    fn lstat_beneath(&self, beneath: &Path) -> Result<Stat, Errno> {
        match split(beneath) {
            None => rustix::fs::fstat(self.handle.as_fd()),
            Some((parent, name)) => {
                let dir = self.open_beneath(parent, OFlags::PATH | OFlags::DIRECTORY)?;
                rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW)
            }
        }
    }

    /// The target of the symlink at `beneath`, read through the root handle.
    fn readlink_beneath(&self, beneath: &Path) -> Result<PathBuf, Errno> {
        let Some((parent, name)) = split(beneath) else {
            return Err(Errno::INVAL);
        };
        let dir = self.open_beneath(parent, OFlags::PATH | OFlags::DIRECTORY)?;
        let target = rustix::fs::readlinkat(&dir, name, Vec::new())?;
        Ok(PathBuf::from(OsStr::from_bytes(target.as_bytes())))
    }

    /// Follow `req` component by component from the root, resolving symlinks as they come.
    /// Inside the root every look-up goes through the root handle; a path that leaves the root
    /// is followed by name only (nothing outside is looked at), so it resolves inside only if
    /// it names its way back in.
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
            let Ok(beneath) = candidate.strip_prefix(&self.root) else {
                out = candidate;
                continue;
            };
            match self.lstat_beneath(beneath) {
                Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Symlink => {
                    hops += 1;
                    if hops > MAX_SYMLINK_HOPS {
                        return Err(PathError::Io(format!(
                            "symlink loop or too many levels of symbolic links at '{}'",
                            self.relative(&candidate)
                        )));
                    }
                    let target = self
                        .readlink_beneath(beneath)
                        .map_err(|e| PathError::Io(io::Error::from(e).to_string()))?;
                    push_components(&mut pending, &target);
                }
                _ => out = candidate,
            }
        }
        Ok(out)
    }
}

/// `path` split into its parent and last name; None for an empty path.
fn split(path: &Path) -> Option<(&Path, &OsStr)> {
    let name = path.file_name()?;
    Some((path.parent().unwrap_or(Path::new("")), name))
}

/// Something on the path became a symlink (or moved) after it was resolved.
fn changed(relative: &str) -> PathError {
    PathError::Io(format!(
        "'{relative}' changed while it was being resolved (a symlink appeared on its path); try again."
    ))
}

/// A symlink met where resolution saw none (`ELOOP` from `O_NOFOLLOW`/`RESOLVE_NO_SYMLINKS`,
/// `ENOTDIR` on an `O_DIRECTORY` component), or a path that left the root (`EXDEV`).
fn is_swapped(e: Errno) -> bool {
    e == Errno::LOOP || e == Errno::XDEV
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

fn is_missing(e: Errno) -> bool {
    e == Errno::NOENT || e == Errno::NOTDIR
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

    /// Both ways of opening beneath the root: openat2 (when the kernel has it) and the
    /// name-by-name fallback refuse a symlink anywhere on the path and open plain paths.
    #[test]
    fn opens_beneath_the_root_refuse_symlinks_both_ways() {
        let (d, ws) = tree();
        let root = ws.root().to_path_buf();
        std::fs::write(root.join("src/a.txt"), "a\n").unwrap();
        symlink(d.path(), root.join("outdir")).unwrap();
        symlink("src", root.join("insrc")).unwrap();
        symlink("notes.txt", root.join("in")).unwrap();
        let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOFOLLOW;
        let names = |p: &'static str| -> Vec<&'static OsStr> { Path::new(p).iter().collect() };
        for (path, ok) in [
            ("src/a.txt", true),
            ("notes.txt", true),
            ("outdir/secret.txt", false),
            ("insrc/a.txt", false),
            ("in", false),
        ] {
            let fallback = ws.open_by_names(&names(path), flags);
            let either = ws.open_beneath(Path::new(path), flags);
            assert_eq!(fallback.is_ok(), ok, "fallback {path}: {fallback:?}");
            assert_eq!(either.is_ok(), ok, "open_beneath {path}: {either:?}");
        }
        assert!(ws
            .open_by_names(&[], OFlags::PATH | OFlags::DIRECTORY)
            .is_ok());
        assert_eq!(
            ws.open_beneath(Path::new("../secret.txt"), flags)
                .unwrap_err(),
            Errno::XDEV
        );
    }

    /// The root handle is taken once: a root renamed away and replaced by a symlink to outside
    /// still resolves and reads the original directory.
    #[test]
    fn the_root_handle_outlives_a_swapped_root() {
        let (d, ws) = tree();
        let root = ws.root().to_path_buf();
        std::fs::rename(&root, d.path().join("moved")).unwrap();
        std::fs::create_dir(d.path().join("elsewhere")).unwrap();
        std::fs::write(d.path().join("elsewhere/notes.txt"), "outside\n").unwrap();
        symlink(d.path().join("elsewhere"), &root).unwrap();
        let r = ws.resolve_file("notes.txt").unwrap();
        let (mut file, _) = ws.open(&r).unwrap();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut file, &mut text).unwrap();
        assert_eq!(text, "hi\n");
    }
}
