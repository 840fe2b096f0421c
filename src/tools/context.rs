//! What every tool call gets: the workspace it is confined to, a deadline and a cancel flag.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
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
}

impl ToolContext {
    /// A context without deadline and with a fresh cancel flag.
    pub fn new(workspace: Workspace) -> Self {
        ToolContext {
            workspace,
            deadline: None,
            cancel: Arc::new(AtomicBool::new(false)),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadline_and_cancel() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(Workspace::new(dir.path()).unwrap());
        assert_eq!(ctx.interrupted(), None);
        let late = ctx
            .clone()
            .with_deadline(Instant::now() - Duration::from_millis(1));
        assert_eq!(late.interrupted(), Some(Interrupt::Deadline));
        let shared = ctx.clone();
        ctx.cancel.store(true, Ordering::Relaxed);
        assert_eq!(shared.interrupted(), Some(Interrupt::Cancelled));
    }
}
