//! The index's disk cache: one file per root under the user's cache directory, never inside the
//! explored root. `OUTRIDER_CACHE_DIR` names the directory (empty: no disk cache); otherwise
//! `$XDG_CACHE_HOME/outrider`, else `~/.cache/outrider`. The directory is made private (0700),
//! each file is written to a private temporary (0600) and renamed into place, and a file is
//! read back only when it is a regular file (no symlink) owned by this user and names the same
//! root. A cache that is missing, old, foreign or damaged is ignored and rebuilt.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;

/// Bumped whenever what the index stores or how it chunks changes.
const FORMAT: &[u8] = b"outrider-index-v3\n";
/// Cached indexes kept; past this the least recently written are deleted.
pub(crate) const MAX_CACHED: usize = 32;
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

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The cache file of `root`, or None when there is no cache directory or it lies inside the
/// root (the read-only child never writes inside the tree it explores).
pub(crate) fn cache_file(root: &Path) -> Option<PathBuf> {
    cache_file_in(cache_dir()?, root)
}

/// The cache file of `root` in the cache directory `dir` (see [`cache_file`]).
pub(crate) fn cache_file_in(dir: PathBuf, root: &Path) -> Option<PathBuf> {
    let dir = if dir.is_absolute() {
        dir
    } else {
        std::env::current_dir().ok()?.join(dir)
    };
    let canonical = fs::canonicalize(&dir).unwrap_or_else(|_| dir.clone());
    if canonical.starts_with(root) || dir.starts_with(root) {
        return None;
    }
    let key = fnv1a(root.as_os_str().as_encoded_bytes());
    Some(dir.join("index").join(format!("{key:016x}.idx")))
}

// What is stored knows nothing of the index's shape (the index module owns that, and rebuilds
// what it does not store after a load), so the cache stays below the index.
#[derive(serde::Deserialize)]
struct Stored<T> {
    root: String,
    index: T,
}

/// The cached index of `root`, if there is a usable one.
pub(crate) fn load<T: DeserializeOwned>(root: &Path) -> Option<T> {
    load_from(&cache_file(root)?, root)
}

/// The index of `root` cached in the file `path`, if usable.
pub(crate) fn load_from<T: DeserializeOwned>(path: &Path, root: &Path) -> Option<T> {
    let mut file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    let me = rustix::process::geteuid().as_raw();
    if !meta.is_file() || meta.uid() != me || meta.len() > MAX_CACHE_BYTES {
        return None;
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.read_to_end(&mut bytes).ok()?;
    let body = bytes.strip_prefix(FORMAT)?;
    let stored: Stored<T> = postcard::from_bytes(body).ok()?;
    if stored.root != root.to_string_lossy() {
        return None;
    }
    Some(stored.index)
}

/// Save `index` as `root`'s cache; failures are ignored (the cache is an optimisation).
pub(crate) fn save<T: Serialize>(root: &Path, index: &T) {
    if let Some(path) = cache_file(root) {
        save_to(&path, root, index);
    }
}

/// Save `index` of `root` in the file `path` (its directory made private when created).
pub(crate) fn save_to<T: Serialize>(path: &Path, root: &Path, index: &T) {
    let Some(dir) = path.parent() else {
        return;
    };
    if fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .is_err()
    {
        return;
    }
    #[derive(serde::Serialize)]
    struct StoredRef<'a, T> {
        root: String,
        index: &'a T,
    }
    let Ok(body) = postcard::to_stdvec(&StoredRef {
        root: root.to_string_lossy().into_owned(),
        index,
    }) else {
        return;
    };
    let tmp = dir.join(format!(
        ".{}.{}.{}.tmp",
        path.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default(),
        std::process::id(),
        fastrand::u64(..)
    ));
    let written = (|| -> std::io::Result<()> {
        let mut f: File = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp)?;
        f.write_all(FORMAT)?;
        f.write_all(&body)?;
        f.sync_data().ok();
        fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    prune(dir);
}

/// Delete all but the [`MAX_CACHED`] most recently written index files of `dir` (and temporary
/// files an interrupted save left behind an hour ago or more).
pub(crate) fn prune(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut kept: Vec<(std::time::SystemTime, PathBuf)> = Vec::new();
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for e in entries.flatten() {
        let path = e.path();
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        let Ok(modified) = meta.modified() else {
            continue;
        };
        let name = e.file_name().to_string_lossy().into_owned();
        if !meta.is_file() {
            continue;
        }
        let ext = Path::new(&name).extension().and_then(|e| e.to_str());
        if ext == Some("tmp") && name.starts_with('.') {
            if modified < hour_ago {
                let _ = fs::remove_file(&path);
            }
        } else if ext == Some("idx") {
            kept.push((modified, path));
        }
    }
    if kept.len() > MAX_CACHED {
        kept.sort_by_key(|k| std::cmp::Reverse(k.0));
        for (_, path) in kept.drain(MAX_CACHED..) {
            let _ = fs::remove_file(path);
        }
    }
}
