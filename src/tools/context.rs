//! What every tool call gets: the workspace it is confined to, a deadline, a cancel flag, and
//! the memory of what this agent has already read.

use std::collections::HashMap;
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::workspace::Workspace;

/// Why a call was stopped before it finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interrupt {
    /// The deadline passed.
    Deadline,
    /// The cancel flag was set.
    Cancelled,
}

/// The environment of one tool call. Cheap to clone; clones share the cancel flag.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// Every path the tool touches is resolved under this root.
    pub workspace: Workspace,
    /// When set, a tool stops with a TIMEOUT error once this instant has passed.
    pub deadline: Option<Instant>,
    /// When set to true (by anyone holding a clone), a tool stops with a TIMEOUT error.
    pub cancel: Arc<AtomicBool>,
    /// The files this agent has read; one per run, shared by the contexts of all its turns.
    pub read_memory: ReadMemory,
    /// The id of the model's tool call being run, when there is one (the Task tool links the
    /// child it launches to it).
    pub call_id: Option<String>,
    /// The profile's knobs (the code index's ranking reads its own).
    pub tuning: crate::tuning::Tuning,
}

impl ToolContext {
    /// A context without deadline and with a fresh cancel flag.
    pub fn new(workspace: Workspace) -> Self {
        ToolContext {
            workspace,
            deadline: None,
            cancel: Arc::new(AtomicBool::new(false)),
            read_memory: ReadMemory::new(),
            call_id: None,
            tuning: crate::tuning::Tuning::default(),
        }
    }

    /// The same context with the profile's knobs.
    pub fn with_tuning(mut self, tuning: crate::tuning::Tuning) -> Self {
        self.tuning = tuning;
        self
    }

    /// The same context with an absolute deadline.
    pub fn with_deadline(mut self, deadline: Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// The same context with a deadline `timeout` from now.
    pub fn with_timeout(self, timeout: Duration) -> Self {
        self.with_deadline(Instant::now() + timeout)
    }

    /// The same context sharing `cancel` with its owner.
    pub fn with_cancel(mut self, cancel: Arc<AtomicBool>) -> Self {
        self.cancel = cancel;
        self
    }

    /// The same context sharing `memory` with the other turns of its run.
    pub fn with_read_memory(mut self, memory: ReadMemory) -> Self {
        self.read_memory = memory;
        self
    }

    /// Whether the call must stop now, and why.
    pub fn interrupted(&self) -> Option<Interrupt> {
        if self.cancel.load(Ordering::Relaxed) {
            return Some(Interrupt::Cancelled);
        }
        match self.deadline {
            Some(d) if Instant::now() >= d => Some(Interrupt::Deadline),
            _ => None,
        }
    }
}

/// Files one [`ReadMemory`] remembers; past this the least recently read is forgotten, so a
/// run that reads very many files costs bounded memory (and may miss a change to a forgotten one).
pub(crate) const READ_MEMORY_CAPACITY: usize = 1024;

/// What Read saw of a file: enough to tell a rewrite from an untouched file. The size is kept
/// because a quick rewrite can land within the file system's mtime granularity; the inode because
/// an editor's save-by-rename may keep both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    /// Modification time in nanoseconds since the epoch.
    pub mtime_ns: i128,
    /// Length in bytes.
    pub size: u64,
    /// Device and inode number.
    pub file_id: (u64, u64),
}

impl FileStamp {
    /// The stamp of an opened file's metadata.
    pub fn of(meta: &Metadata) -> Self {
        FileStamp {
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            size: meta.len(),
            file_id: (meta.dev(), meta.ino()),
        }
    }
}

/// The files one agent run has read, by resolved path, so Read can say when a file changed
/// since this agent last read it. Clones share the memory; two runs never do (unlike the
/// reference's process-wide cache, where one agent's read hid or invented another's change).
#[derive(Debug, Clone, Default)]
pub struct ReadMemory {
    inner: Arc<Mutex<Seen>>,
}

#[derive(Debug, Default)]
struct Seen {
    /// Path -> (stamp, tick of its last read).
    files: HashMap<PathBuf, (FileStamp, u64)>,
    tick: u64,
}

impl ReadMemory {
    /// An empty memory.
    pub fn new() -> Self {
        Self::default()
    }

    /// Remember `stamp` as the latest read of `path`; true when an earlier read saw another stamp.
    pub fn observe(&self, path: &Path, stamp: FileStamp) -> bool {
        // A panic elsewhere while holding the lock leaves the map usable, so poisoning is ignored.
        let mut seen = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        seen.tick += 1;
        let tick = seen.tick;
        if let Some(entry) = seen.files.get_mut(path) {
            let changed = entry.0 != stamp;
            *entry = (stamp, tick);
            return changed;
        }
        if seen.files.len() >= READ_MEMORY_CAPACITY {
            // A linear scan, but only when full, and far cheaper than the read it follows.
            let oldest = seen
                .files
                .iter()
                .min_by_key(|(_, (_, t))| *t)
                .map(|(p, _)| p.clone());
            if let Some(p) = oldest {
                seen.files.remove(&p);
            }
        }
        seen.files.insert(path.to_path_buf(), (stamp, tick));
        false
    }

    /// How many files are remembered.
    pub fn len(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .files
            .len()
    }

    /// Whether no file is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadline_and_cancel() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(Workspace::new(dir.path()).unwrap());
        assert_eq!(ctx.interrupted(), None);
        let late = ctx.clone().with_deadline(
            Instant::now()
                .checked_sub(Duration::from_millis(1))
                .unwrap(),
        );
        assert_eq!(late.interrupted(), Some(Interrupt::Deadline));
        let shared = ctx.clone();
        ctx.cancel.store(true, Ordering::Relaxed);
        assert_eq!(shared.interrupted(), Some(Interrupt::Cancelled));
    }

    fn stamp(mtime_ns: i128, size: u64) -> FileStamp {
        FileStamp {
            mtime_ns,
            size,
            file_id: (1, 2),
        }
    }

    #[test]
    fn read_memory_flags_changes_per_memory() {
        let (a, b) = (ReadMemory::new(), ReadMemory::new());
        let p = Path::new("/r/f.txt");
        assert!(!a.observe(p, stamp(1, 10)), "a first read is no change");
        assert!(
            !a.observe(p, stamp(1, 10)),
            "an unchanged file is no change"
        );
        assert!(a.observe(p, stamp(1, 11)), "same mtime, other size");
        assert!(
            !a.observe(p, stamp(1, 11)),
            "the new stamp is now the baseline"
        );
        assert!(
            a.clone().observe(p, stamp(2, 11)),
            "clones share the memory"
        );
        assert!(
            !b.observe(p, stamp(3, 12)),
            "another memory never saw the file"
        );
        let renamed = FileStamp {
            file_id: (1, 3),
            ..stamp(3, 12)
        };
        assert!(b.observe(p, renamed), "replaced by another inode");
    }

    #[test]
    fn read_memory_is_bounded_and_forgets_the_least_recently_read() {
        let m = ReadMemory::new();
        let path = |i: usize| PathBuf::from(format!("/r/{i}"));
        for i in 0..READ_MEMORY_CAPACITY {
            m.observe(&path(i), stamp(0, 0));
        }
        m.observe(&path(0), stamp(0, 0)); // 0 is now the most recent, 1 the oldest
        m.observe(&path(READ_MEMORY_CAPACITY), stamp(0, 0));
        assert_eq!(m.len(), READ_MEMORY_CAPACITY);
        assert!(m.observe(&path(0), stamp(1, 0)), "0 was kept");
        assert!(!m.observe(&path(1), stamp(1, 0)), "1 was forgotten");
    }
}
