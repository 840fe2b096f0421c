//! Paths and directories as the kernel sees them, for the places outrider writes outside the
//! explored root (trace directories, the index cache): a spelling resolved before it is
//! checked, and a held directory checked for where it is now, by its `..` links.

use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use rustix::fs::AtFlags;

/// Parent links followed at most when checking where a directory is (deeper trees are refused).
pub(crate) const MAX_DEPTH: usize = 4096;

/// A device and inode: what a directory is, whatever it is called.
pub(crate) type Identity = (u64, u64);

/// `path` made absolute with its longest existing prefix resolved as the kernel sees it
/// (symlinks and `..`), and the rest, which does not exist yet, normalised lexically, so that
/// `<out>/missing/../../root/x` and `<link to root>/x` are both seen as `<root>/x`.
pub(crate) fn resolve(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    let mut out = PathBuf::from("/");
    let mut exists = true;
    for comp in absolute.components() {
        match comp {
            Component::Prefix(_) | Component::RootDir | Component::CurDir => {}
            // While `out` exists it is canonical (no symlinks), so its parent is lexical.
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => {
                out.push(name);
                if exists {
                    match std::fs::canonicalize(&out) {
                        Ok(c) => out = c,
                        Err(_) => exists = false,
                    }
                }
            }
        }
    }
    out
}

/// The identity of `rel` (`.`, `..`, `../..`, ...) resolved from the directory behind `fd`.
fn identity_at(fd: &OwnedFd, rel: &str) -> std::io::Result<Identity> {
    let c_rel = CString::new(rel).map_err(|_| std::io::Error::other("a NUL byte in a path"))?;
    let st = rustix::fs::statat(fd, c_rel.as_c_str(), AtFlags::empty())?;
    Ok((st.st_dev as u64, st.st_ino as u64))
}

/// Whether the directory behind `fd` is `root` or below it, following `..` links from the
/// handle (so the answer holds for where the directory is now, not where its path pointed).
/// One `fstatat` per level, relative to the handle; a tree deeper than [`MAX_DEPTH`] is an
/// error.
pub(crate) fn is_within(fd: &OwnedFd, root: Identity) -> std::io::Result<bool> {
    let mut rel = String::from(".");
    let mut id = identity_at(fd, &rel)?;
    for _ in 0..MAX_DEPTH {
        if id == root {
            return Ok(true);
        }
        rel = if rel == "." {
            "..".to_string()
        } else {
            format!("{rel}/..")
        };
        let parent = identity_at(fd, &rel)?;
        if parent == id {
            return Ok(false);
        }
        id = parent;
    }
    Err(std::io::Error::other(
        "the directory is nested too deeply to check",
    ))
}
