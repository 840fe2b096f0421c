//! Whether a tree may have changed since the index last walked it, known without walking it
//! again: on Linux, an inotify watch on every directory the walk entered.
//!
//! The freshness guarantee: a Search sees every change the kernel reports for the tree, made
//! before the Search began: a file written, truncated or touched in place (`IN_MODIFY`,
//! `IN_ATTRIB`, `IN_CLOSE_WRITE`), made, deleted or renamed in or out of a walked directory
//! (`IN_CREATE`, `IN_DELETE`, `IN_MOVED_*`), a walked directory itself deleted or moved, and an
//! ignore file (`.gitignore`, `.ignore`, `.git/info/exclude`: their directories are watched)
//! changed. Any reported change, and a lost event queue (`IN_Q_OVERFLOW`), makes the next
//! Search walk the whole tree as before (re-reading only files whose size or modification time
//! changed, or whose modification time was too recent to trust when they were read) and watch
//! it anew. The kernel does not report writes through a shared memory map,
//! a write to a file through a hard link outside the tree, or changes made by another machine
//! to a network file system: those are seen by the next walk, which is made at the latest
//! [`MAX_TRUST`] after the last one. Where watches cannot be
//! had (not Linux, no inotify, the user's watch limit reached) every Search walks the tree.
//!
//! Confinement: a watch reads nothing and opens nothing in the tree; each directory is named to
//! the kernel by the walk's own open descriptor of its parent (`/proc/self/fd/N/name`, the last
//! part never followed as a link), so the watched directories are the ones the confined walk
//! listed. Every file the index reads is still opened through the workspace.

use std::time::{Duration, Instant};

#[cfg(target_os = "linux")]
use std::sync::atomic::{AtomicBool, Ordering};

#[cfg(not(target_os = "linux"))]
use crate::tools::workspace::Workspace;

/// The most directories one tree's watches cover: each holds one of the user's inotify watches
/// (`fs.inotify.max_user_watches`, shared with every other program of the user, 8192 on older
/// kernels), so a bigger tree is walked at every Search instead of taking them all.
pub(crate) const MAX_WATCHES: usize = 16_384;

/// The longest a walk is trusted for when no change was reported.
pub(crate) const MAX_TRUST: Duration = Duration::from_secs(30);

/// The watches of one walk of one tree.
#[derive(Debug)]
pub(crate) struct Watch {
    #[cfg(target_os = "linux")]
    fd: std::os::fd::OwnedFd,
    /// A directory could not be watched: changes in it would go unseen.
    #[cfg(target_os = "linux")]
    broken: AtomicBool,
    /// Watches added (at most [`MAX_WATCHES`]).
    #[cfg(target_os = "linux")]
    count: std::sync::atomic::AtomicUsize,
    since: Instant,
}

#[cfg(target_os = "linux")]
mod imp {
    use super::{Ordering, Watch};
    use rustix::fs::inotify::{self, CreateFlags, WatchFlags};
    use rustix::fs::OFlags;
    use std::ffi::OsStr;
    use std::os::fd::{AsRawFd, BorrowedFd};
    use std::os::unix::ffi::OsStrExt;

    fn flags() -> WatchFlags {
        WatchFlags::MODIFY
            | WatchFlags::ATTRIB
            | WatchFlags::CLOSE_WRITE
            | WatchFlags::CREATE
            | WatchFlags::DELETE
            | WatchFlags::DELETE_SELF
            | WatchFlags::MOVED_FROM
            | WatchFlags::MOVED_TO
            | WatchFlags::MOVE_SELF
            | WatchFlags::ONLYDIR
    }

    impl Watch {
        /// Watches for `ws`, its root (and `.git`, `.git/info`, where an ignore file lives)
        /// already watched; None where inotify cannot be had.
        pub(crate) fn start(ws: &crate::tools::workspace::Workspace) -> Option<Watch> {
            let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK).ok()?;
            let w = Watch {
                fd,
                broken: std::sync::atomic::AtomicBool::new(false),
                count: std::sync::atomic::AtomicUsize::new(0),
                since: std::time::Instant::now(),
            };
            let dir = OFlags::PATH | OFlags::DIRECTORY;
            let root = ws.open_beneath(std::path::Path::new(""), dir).ok()?;
            w.add_path(format!("/proc/self/fd/{}", root.as_raw_fd()), false);
            for sub in [".git", ".git/info"] {
                // Absent (no git, or a `.git` file of a worktree): nothing to watch there.
                if let Ok(d) = ws.open_beneath(std::path::Path::new(sub), dir) {
                    w.add_path(format!("/proc/self/fd/{}", d.as_raw_fd()), false);
                }
            }
            (!w.broken.load(Ordering::Relaxed)).then_some(w)
        }

        fn add_path<P: rustix::path::Arg>(&self, path: P, no_follow: bool) {
            if self.broken.load(Ordering::Relaxed)
                || self.count.fetch_add(1, Ordering::Relaxed) >= super::MAX_WATCHES
            {
                // Already incomplete, or too many: this walk's watches are let go after it.
                self.broken.store(true, Ordering::Relaxed);
                return;
            }
            let mut f = flags();
            if no_follow {
                f |= WatchFlags::DONT_FOLLOW;
            }
            if inotify::add_watch(&self.fd, path, f).is_err() {
                self.broken.store(true, Ordering::Relaxed);
            }
        }

        /// Watch the directory `name` in the open directory `parent` (a link is not followed).
        pub(crate) fn add(&self, parent: BorrowedFd<'_>, name: &OsStr) {
            let mut path = format!("/proc/self/fd/{}/", parent.as_raw_fd()).into_bytes();
            path.extend_from_slice(name.as_bytes());
            self.add_path(OsStr::from_bytes(&path), true);
        }

        /// Every directory asked for is watched.
        pub(crate) fn whole(&self) -> bool {
            !self.broken.load(Ordering::Relaxed)
        }

        /// Whether the kernel reported nothing since the watches were made (the queue is
        /// drained: any event, an overflow or a failed read counts as a change).
        pub(crate) fn quiet(&self) -> bool {
            let mut buf = [0u8; 4096];
            let mut quiet = true;
            loop {
                match rustix::io::read(&self.fd, &mut buf) {
                    Ok(0) => return quiet,
                    Ok(_) => quiet = false,
                    Err(rustix::io::Errno::AGAIN) => return quiet,
                    Err(rustix::io::Errno::INTR) => {}
                    Err(_) => return false,
                }
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
impl Watch {
    /// No watches here: every Search walks the tree.
    pub(crate) fn start(_ws: &Workspace) -> Option<Watch> {
        None
    }

    pub(crate) fn add(&self, _parent: std::os::fd::BorrowedFd<'_>, _name: &std::ffi::OsStr) {}

    pub(crate) fn whole(&self) -> bool {
        false
    }

    pub(crate) fn quiet(&self) -> bool {
        false
    }
}

impl Watch {
    /// Whether the tree is as the walk that made these watches left it, as far as the kernel
    /// says, and that walk is recent enough to trust ([`MAX_TRUST`]).
    pub(crate) fn unchanged(&self) -> bool {
        self.quiet() && self.since.elapsed() < MAX_TRUST
    }
}
