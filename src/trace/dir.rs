//! A trace directory held open: resolved once (no `..` spelling or symlink reaches the explored
//! root), created `0700`, opened with `O_DIRECTORY|O_NOFOLLOW`, and checked again through the
//! handle each time a file is created in it, so that renaming the directory into the root or
//! swapping its path for a symlink afterwards never puts a byte inside the root.

use std::ffi::CString;
use std::fs::File;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{AtFlags, FileType, FlockOperation, Mode, OFlags};

use crate::error::TraceDirError;
use crate::fspath::{is_within, resolve, Identity};

/// A prepared trace directory: its resolved path, an open handle, and the explored root it must
/// stay out of.
#[derive(Debug, Clone)]
pub struct TraceDir {
    path: PathBuf,
    fd: Arc<OwnedFd>,
    root: Option<Identity>,
    root_path: PathBuf,
}

fn c_path(path: &Path) -> Result<CString, std::io::Error> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "a NUL byte in the path")
    })
}

/// `openat(dir, name, flags | O_CLOEXEC, mode)`, from the working directory without `dir`.
fn open_at(
    dir: Option<&OwnedFd>,
    name: &CString,
    flags: OFlags,
    mode: Mode,
) -> std::io::Result<OwnedFd> {
    let flags = flags | OFlags::CLOEXEC;
    Ok(match dir {
        Some(dir) => rustix::fs::openat(dir, name.as_c_str(), flags, mode)?,
        None => rustix::fs::openat(rustix::fs::CWD, name.as_c_str(), flags, mode)?,
    })
}

/// `flock(file, operation)`: the lock lives as long as the open file.
fn lock(file: &File, operation: FlockOperation) -> std::io::Result<()> {
    Ok(rustix::fs::flock(file, operation)?)
}

impl TraceDir {
    /// Resolve `dir`, refuse it when inside `root`, create it (`0700`, like its missing parents),
    /// open it without following a final symlink and check the opened directory again.
    pub fn prepare(dir: &Path, root: &Path) -> Result<TraceDir, TraceDirError> {
        let resolved = resolve(dir);
        let root_path = resolve(root);
        let inside = || TraceDirError::InsideRoot {
            dir: dir.display().to_string(),
            root: root.display().to_string(),
        };
        let create = |reason: String| TraceDirError::Create {
            dir: dir.display().to_string(),
            reason,
        };
        if resolved.starts_with(&root_path) {
            return Err(inside());
        }
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&resolved)
            .map_err(|e| create(e.to_string()))?;
        let fd = c_path(&resolved)
            .and_then(|p| {
                open_at(
                    None,
                    &p,
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW,
                    Mode::empty(),
                )
            })
            .map_err(|e| {
                create(format!(
                    "cannot open it as a directory (not following a symlink): {e}"
                ))
            })?;
        let root_id = std::fs::metadata(&root_path)
            .ok()
            .map(|m| (m.dev(), m.ino()));
        let held = TraceDir {
            path: resolved,
            fd: Arc::new(fd),
            root: root_id,
            root_path,
        };
        match held.check() {
            Ok(()) => Ok(held),
            Err(CheckError::Inside) => Err(inside()),
            Err(CheckError::Io(e)) => Err(create(e.to_string())),
        }
    }

    /// The resolved path the directory had when it was prepared.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn check(&self) -> Result<(), CheckError> {
        match self.root {
            Some(root) if is_within(&self.fd, root).map_err(CheckError::Io)? => {
                Err(CheckError::Inside)
            }
            _ => Ok(()),
        }
    }

    fn open(&self, name: &str, flags: OFlags) -> std::io::Result<File> {
        if name.is_empty() || name == "." || name == ".." || name.contains('/') {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("'{name}' is not a plain file name"),
            ));
        }
        self.ensure_outside()?;
        let c_name = CString::new(name).map_err(|_| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "a NUL byte in the name")
        })?;
        open_at(
            Some(&self.fd),
            &c_name,
            OFlags::WRONLY | OFlags::NOFOLLOW | flags,
            Mode::RUSR | Mode::WUSR,
        )
        .map(File::from)
    }

    /// Check, through the handle, that the directory is still outside the root (wherever it has
    /// been moved since); an error says where it is not.
    pub fn ensure_outside(&self) -> std::io::Result<()> {
        match self.check() {
            Ok(()) => Ok(()),
            Err(CheckError::Inside) => Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!(
                    "the trace directory '{}' is now inside the explored root '{}'; nothing is written there",
                    self.path.display(),
                    self.root_path.display()
                ),
            )),
            Err(CheckError::Io(e)) => Err(e),
        }
    }

    /// Create the new file `name` (`0600`, never an existing file or a symlink) in the held
    /// directory, after checking the directory is still outside the root. The file holds a
    /// shared lock while it is open (see [`TraceDir::prune`]): it is created under a hidden name,
    /// locked, and only then linked under `name`, so no pruner ever sees it unlocked.
    pub fn create_new(&self, name: &str) -> std::io::Result<File> {
        let hidden = format!(".{name}.{}.new", std::process::id());
        let file = self.open(&hidden, OFlags::CREATE | OFlags::EXCL)?;
        let c_hidden = CString::new(hidden).map_err(std::io::Error::other)?;
        let dir: &OwnedFd = &self.fd;
        let linked = lock(&file, FlockOperation::LockShared).and_then(|()| {
            let c_name = CString::new(name).map_err(std::io::Error::other)?;
            // Both names relative to the open directory; linkat refuses an existing `name`
            // (EEXIST), as O_EXCL did.
            let (from, to) = (c_hidden.as_c_str(), c_name.as_c_str());
            Ok(rustix::fs::linkat(dir, from, dir, to, AtFlags::empty())?)
        });
        let _ = rustix::fs::unlinkat(dir, c_hidden.as_c_str(), AtFlags::empty());
        linked.map(|()| file)
    }

    /// Delete the trace files `retention` lets go (only outrider's own trace names, only regular
    /// files, only in this directory, through the held handle, after checking it is still outside
    /// the explored root). A trace still being written (by this process or another: its writer
    /// holds a shared lock) is never deleted, whatever the retention. Returns how many were.
    pub fn prune(&self, retention: &super::TraceRetention) -> std::io::Result<usize> {
        if *retention == super::TraceRetention::KEEP_ALL {
            return Ok(0);
        }
        self.ensure_outside()?;
        let files = self.trace_files()?;
        let mut deleted = 0;
        for name in retention.expired(&files, std::time::SystemTime::now()) {
            let c_name =
                CString::new(name).map_err(|_| std::io::Error::other("a NUL byte in a name"))?;
            let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK;
            let opened = open_at(Some(&self.fd), &c_name, flags, Mode::empty());
            let Ok(held) = opened.map(File::from) else {
                continue;
            };
            let regular = held.metadata().is_ok_and(|m| m.is_file());
            // Held until the unlink is done, so a writer cannot start on it in between.
            if !regular || lock(&held, FlockOperation::NonBlockingLockExclusive).is_err() {
                continue;
            }
            // unlinkat does not follow a symlink in the last component, and the names come from
            // this directory's listing.
            if rustix::fs::unlinkat(&*self.fd, c_name.as_c_str(), AtFlags::empty()).is_ok() {
                deleted += 1;
            }
        }
        Ok(deleted)
    }

    /// The regular files in the directory named like outrider traces, with their modification
    /// times, listed through the held handle.
    fn trace_files(&self) -> std::io::Result<Vec<(String, std::time::SystemTime)>> {
        // A fresh descriptor for "." of the held directory, so the listing starts at its top.
        let dir = rustix::fs::Dir::read_from(&*self.fd)?;
        let mut out = Vec::new();
        for entry in dir {
            let Ok(entry) = entry else { break };
            let c_name = entry.file_name();
            let Ok(name) = c_name.to_str() else { continue };
            if !super::retention::is_trace_name(name) {
                continue;
            }
            let Ok(st) = rustix::fs::statat(&*self.fd, c_name, AtFlags::SYMLINK_NOFOLLOW) else {
                continue;
            };
            if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
                continue;
            }
            let written = std::time::UNIX_EPOCH
                + std::time::Duration::new(
                    st.st_mtime.max(0) as u64,
                    st.st_mtime_nsec.clamp(0, 999_999_999) as u32,
                );
            out.push((name.to_string(), written));
        }
        Ok(out)
    }

    /// Open `name` for appending (created `0600` when missing; a symlink is refused), after
    /// checking the directory is still outside the root.
    /// While open, it holds a shared lock when it can, so that [`TraceDir::prune`] leaves it.
    pub fn open_append(&self, name: &str) -> std::io::Result<File> {
        let file = self.open(name, OFlags::CREATE | OFlags::APPEND)?;
        // Best effort: a file some pruner holds this instant is appended to all the same.
        let _ = lock(&file, FlockOperation::NonBlockingLockShared);
        Ok(file)
    }
}

impl PartialEq for TraceDir {
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path && self.root_path == other.root_path
    }
}

impl Eq for TraceDir {}

enum CheckError {
    Inside,
    Io(std::io::Error),
}
