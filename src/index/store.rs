//! The index's disk cache: one file per root in the `index` folder of the user's cache directory,
//! never inside the explored root. `OUTRIDER_CACHE_DIR` names the directory (empty: no disk
//! cache); otherwise `$XDG_CACHE_HOME/outrider`, else `~/.cache/outrider`. The directory's
//! spelling is resolved before it is checked (a `..` or a symlink that leads into the root is
//! refused, even when the directory does not exist yet), the `index` folder is made private
//! (0700), never followed as a symlink, and checked through its handle to lie outside the root;
//! each file is written to a private temporary (0600) and renamed into place, relative to that
//! handle, and a file is read back only when it is a regular file (no symlink) owned by this
//! user and names the same root. A cache that is missing, old, foreign or damaged is ignored and
//! rebuilt (the index checks what it loads: see `Index::damage`).
//!
//! The folder is bounded by size, not by a count of roots: its index files take at most
//! `OUTRIDER_CACHE_MAX_MB` MiB together ([`DEFAULT_MAX_TOTAL_BYTES`], 1 GiB, when unset). After
//! each save the least recently used go (a save or a load marks a file used, by its
//! modification time) until the rest fit; an index bigger than the whole bound is not cached.

use std::ffi::CString;
use std::fs::{self, File};
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use serde::de::DeserializeOwned;
use serde::Serialize;

/// Bumped whenever what the index stores or how it chunks changes.
const FORMAT: &[u8] = b"outrider-index-v4\n";
/// The most bytes the cached indexes take together by default; past this the least recently
/// used are deleted. `OUTRIDER_CACHE_MAX_MB` sets another bound, in MiB.
pub(crate) const DEFAULT_MAX_TOTAL_BYTES: u64 = 1 << 30;
/// Cache files bigger than this are not read.
const MAX_CACHE_BYTES: u64 = 2 << 30;

/// The cache directory, if any.
pub(crate) fn cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("OUTRIDER_CACHE_DIR") {
        return (!dir.is_empty()).then(|| PathBuf::from(dir));
    }
    if let Some(xdg) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(xdg).join("outrider"));
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".cache").join("outrider"))
}

/// The bound on the bytes the cached indexes take together: `OUTRIDER_CACHE_MAX_MB` (a whole
/// number of MiB, at least 1; one too big for 64 bits is no bound) when set, else
/// [`DEFAULT_MAX_TOTAL_BYTES`]. A value that is not such a number is reported (naming it), once
/// per process and value rather than at every Search, and the default used.
pub(crate) fn max_total_bytes() -> u64 {
    let v = match std::env::var("OUTRIDER_CACHE_MAX_MB") {
        Err(std::env::VarError::NotPresent) => return DEFAULT_MAX_TOTAL_BYTES,
        Ok(v) => v,
        Err(std::env::VarError::NotUnicode(v)) => v.to_string_lossy().into_owned(),
    };
    let t = v.trim();
    match t.parse::<u64>() {
        Ok(mb) if mb >= 1 => return mb.saturating_mul(1 << 20),
        Err(e) if *e.kind() == std::num::IntErrorKind::PosOverflow => return u64::MAX,
        _ => {}
    }
    static WARNED: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);
    let mut warned = WARNED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if warned.as_deref() != Some(v.as_str()) {
        tracing::warn!(value = %v, "OUTRIDER_CACHE_MAX_MB must be a whole number of MiB, at least 1; the default of {} MiB is used", DEFAULT_MAX_TOTAL_BYTES >> 20);
        *warned = Some(v);
    }
    DEFAULT_MAX_TOTAL_BYTES
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

// What is stored knows nothing of the index's shape (the index module owns that, and rebuilds
// what it does not store after a load), so the cache stays below the index.
#[derive(serde::Deserialize)]
struct Stored<T> {
    root: String,
    index: T,
}

/// The `index` folder of a cache directory, held open: found by resolving the directory's
/// spelling first (the longest existing prefix, symlinks and `..` included), refused when that
/// is inside the explored root, the folder itself opened without following a symlink, owned by
/// this user, and checked through its handle to lie outside the root. Every file in it is then
/// opened, renamed and deleted relative to the handle, never by path.
pub(crate) struct CacheDir {
    fd: OwnedFd,
    /// The most bytes its index files may take together.
    max_total: u64,
}

impl CacheDir {
    /// The `index` folder of `dir` for the explored `root` (created, private, when `create`),
    /// or None when it is, or would be, inside the root, is a link, is not this user's, or
    /// cannot be made or opened.
    pub(crate) fn open(dir: &Path, root: &Path, create: bool) -> Option<CacheDir> {
        let resolved = crate::fspath::resolve(dir);
        let root = crate::fspath::resolve(root);
        if resolved.starts_with(&root) || resolved.join("index").starts_with(&root) {
            return None;
        }
        if create {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&resolved)
                .ok()?;
        }
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let c_dir = CString::new(resolved.as_os_str().as_bytes()).ok()?;
        let base =
            rustix::fs::openat(rustix::fs::CWD, c_dir.as_c_str(), flags, Mode::empty()).ok()?;
        if create {
            // An existing folder (or anything else by that name) is checked below.
            let _ = rustix::fs::mkdirat(&base, c"index", Mode::RWXU);
        }
        let fd = rustix::fs::openat(&base, c"index", flags, Mode::empty()).ok()?;
        let st = rustix::fs::fstat(&fd).ok()?;
        if st.st_uid != rustix::process::geteuid().as_raw() {
            return None;
        }
        if let Ok(meta) = fs::metadata(&root) {
            // Unknown (a level that cannot be looked at, a tree too deep) counts as inside.
            if crate::fspath::is_within(&fd, (meta.dev(), meta.ino())).unwrap_or(true) {
                return None;
            }
        }
        Some(CacheDir {
            fd,
            max_total: max_total_bytes(),
        })
    }

    /// The same folder bounded to `bytes` of index files.
    #[cfg(test)]
    pub(crate) fn with_max_total(self, bytes: u64) -> CacheDir {
        CacheDir {
            max_total: bytes,
            ..self
        }
    }

    /// The name of `root`'s cache file.
    pub(crate) fn file_name(root: &Path) -> String {
        format!("{:016x}.idx", fnv1a(root.as_os_str().as_encoded_bytes()))
    }

    /// `name` in the folder, opened with `flags` (never through a symlink; never blocking on a
    /// FIFO).
    fn open_file(&self, name: &str, flags: OFlags, mode: Mode) -> std::io::Result<File> {
        let c_name = CString::new(name).map_err(std::io::Error::other)?;
        let flags = flags | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
        Ok(File::from(rustix::fs::openat(
            &self.fd,
            c_name.as_c_str(),
            flags,
            mode,
        )?))
    }

    /// The index of `root` cached here, if usable: a regular file of this user's, not too big,
    /// of this format, naming the same root.
    pub(crate) fn load<T: DeserializeOwned>(&self, root: &Path) -> Option<T> {
        let mut file = self
            .open_file(&Self::file_name(root), OFlags::RDONLY, Mode::empty())
            .ok()?;
        let meta = file.metadata().ok()?;
        let me = rustix::process::geteuid().as_raw();
        if !meta.is_file() || meta.uid() != me || meta.len() > MAX_CACHE_BYTES {
            return None;
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        (&mut file)
            .take(MAX_CACHE_BYTES)
            .read_to_end(&mut bytes)
            .ok()?;
        let body = bytes.strip_prefix(FORMAT)?;
        let stored: Stored<T> = postcard::from_bytes(body).ok()?;
        if stored.root != root.to_string_lossy() {
            return None;
        }
        // Used now: the last to go when the cache is over its bound.
        touch(&file);
        Some(stored.index)
    }

    /// Save `index` as `root`'s cache: a private temporary renamed into place.
    pub(crate) fn save<T: Serialize>(&self, root: &Path, index: &T) {
        #[derive(serde::Serialize)]
        struct StoredRef<'a, T> {
            root: String,
            index: &'a T,
        }
        let stored = StoredRef {
            root: root.to_string_lossy().into_owned(),
            index,
        };
        let name = Self::file_name(root);
        let tmp = format!(".{name}.{}.{}.tmp", std::process::id(), fastrand::u64(..));
        let written = (|| -> std::io::Result<()> {
            let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL;
            let f = self.open_file(&tmp, flags, Mode::RUSR | Mode::WUSR)?;
            // Streamed to the file: no second copy of the index in memory.
            let mut out = std::io::BufWriter::with_capacity(1 << 16, f);
            out.write_all(FORMAT)?;
            let out = postcard::to_io(&stored, out).map_err(std::io::Error::other)?;
            let f = out.into_inner().map_err(|e| e.into_error())?;
            let bytes = f.metadata()?.len();
            if bytes > self.max_total {
                tracing::warn!(root = %root.display(), bytes, bound = self.max_total, "the index is bigger than the disk cache's bound (OUTRIDER_CACHE_MAX_MB): it is not cached");
                return Err(std::io::ErrorKind::FileTooLarge.into());
            }
            f.sync_data().ok();
            // By the clock `load` marks a use with, so that the two order alike.
            touch(&f);
            let (from, to) = (CString::new(tmp.as_str())?, CString::new(name.as_str())?);
            Ok(rustix::fs::renameat(
                &self.fd,
                from.as_c_str(),
                &self.fd,
                to.as_c_str(),
            )?)
        })();
        if written.is_err() {
            self.remove(&tmp);
            // An index over the whole bound leaves no older copy of itself behind either.
            if written.is_err_and(|e| e.kind() == std::io::ErrorKind::FileTooLarge) {
                self.remove(&name);
                return;
            }
        }
        self.prune();
    }

    fn remove(&self, name: &str) {
        if let Ok(c_name) = CString::new(name) {
            let _ = rustix::fs::unlinkat(&self.fd, c_name.as_c_str(), AtFlags::empty());
        }
    }

    /// Delete the least recently used index files (by modification time: a save writes it, a
    /// load touches it) until the rest take at most the bound's bytes, and temporary files an
    /// interrupted save left behind an hour ago or more: regular files only, by name relative
    /// to the held folder.
    pub(crate) fn prune(&self) {
        let Ok(entries) = rustix::fs::Dir::read_from(&self.fd) else {
            return;
        };
        let mut kept: Vec<((i64, i64), u64, String)> = Vec::new();
        let hour_ago = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64 - 3600);
        for entry in entries.flatten() {
            let c_name = entry.file_name();
            let Ok(name) = c_name.to_str() else { continue };
            let Ok(st) = rustix::fs::statat(&self.fd, c_name, AtFlags::SYMLINK_NOFOLLOW) else {
                continue;
            };
            if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
                continue;
            }
            let modified = st.st_mtime;
            let ext = Path::new(name).extension().and_then(|e| e.to_str());
            if ext == Some("tmp") && name.starts_with('.') {
                if modified < hour_ago {
                    self.remove(name);
                }
            } else if ext == Some("idx") {
                let used = (modified, st.st_mtime_nsec as i64);
                kept.push((used, st.st_size.max(0) as u64, name.to_string()));
            }
        }
        // Most recently used first; what no longer fits goes.
        kept.sort_by(|a, b| b.cmp(a));
        let mut total = 0u64;
        for (_, size, name) in kept {
            total = total.saturating_add(size);
            if total > self.max_total {
                self.remove(&name);
            }
        }
    }
}

/// Mark an index file used now (its modification time), for the least-recently-used order.
fn touch(file: &File) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let at = rustix::fs::Timespec {
        tv_sec: now.as_secs() as i64,
        tv_nsec: i64::from(now.subsec_nanos()),
    };
    let _ = rustix::fs::futimens(
        file,
        &rustix::fs::Timestamps {
            last_access: at,
            last_modification: at,
        },
    );
}
