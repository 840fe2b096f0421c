//! Cancellation shared by a run, its tools and whoever may cancel it.

use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

/// A cancellation signal shared by a run, its tools and whoever may cancel it.
#[derive(Debug, Clone, Default)]
pub struct CancelToken {
    flag: Arc<AtomicBool>,
    notify: Arc<Notify>,
    /// Tokens made by [`CancelToken::child`] that are still held somewhere.
    children: Arc<std::sync::Mutex<Vec<CancelToken>>>,
}

impl CancelToken {
    /// A fresh, uncancelled token.
    pub fn new() -> Self {
        Self::default()
    }

    /// A token cancelled with this one (and on its own).
    pub fn child(&self) -> CancelToken {
        let child = CancelToken::new();
        let mut children = self.children.lock().unwrap_or_else(|p| p.into_inner());
        // Forget the children nobody holds any more (finished runs).
        children.retain(|c| Arc::strong_count(&c.flag) > 1);
        children.push(child.clone());
        drop(children);
        if self.is_cancelled() {
            child.cancel();
        }
        child
    }

    /// Cancel: running model calls are abandoned and tools stop at their next check; so are
    /// those of every child token.
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
        let children =
            std::mem::take(&mut *self.children.lock().unwrap_or_else(|p| p.into_inner()));
        for c in children {
            c.cancel();
        }
    }

    /// Whether `cancel` was called.
    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// The flag tools poll.
    pub fn flag(&self) -> Arc<AtomicBool> {
        self.flag.clone()
    }

    /// Resolves once cancelled.
    pub async fn cancelled(&self) {
        loop {
            let mut notified = pin!(self.notify.notified());
            notified.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

/// A shared object and the token its owner cancels when dropped: work started through it runs
/// under a child of [`Owner::cancel`], so dropping the owner (a front end's object collected
/// mid-run) stops that work, while the work itself may keep clones of the object.
pub struct Owner<T> {
    /// The object.
    pub inner: Arc<T>,
    /// The parent of every token of work started through this owner.
    pub cancel: CancelToken,
}

impl<T> Owner<T> {
    /// `inner`, owned.
    pub fn new(inner: T) -> Self {
        Self::shared(Arc::new(inner))
    }

    /// An owner of an object shared already.
    pub fn shared(inner: Arc<T>) -> Self {
        Owner {
            inner,
            cancel: CancelToken::new(),
        }
    }
}

impl<T> std::ops::Deref for Owner<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T> Drop for Owner<T> {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

impl<T: std::fmt::Display> std::fmt::Display for Owner<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropping_an_owner_cancels_the_work_started_through_it_but_not_the_object() {
        let owner = Owner::new(String::from("launcher"));
        let (work, kept) = (owner.cancel.child(), owner.inner.clone());
        assert!(!work.is_cancelled());
        assert_eq!(
            (owner.len(), owner.to_string()),
            (8, "launcher".to_string())
        );
        drop(owner);
        assert!(work.is_cancelled());
        assert_eq!(*kept, "launcher");
    }

    #[tokio::test]
    async fn cancelled_resolves_for_a_waiter_and_after_the_fact() {
        let token = CancelToken::new();
        let waiter = tokio::spawn({
            let token = token.clone();
            async move { token.cancelled().await }
        });
        tokio::task::yield_now().await;
        assert!(!token.is_cancelled());
        token.cancel();
        waiter.await.unwrap();
        token.cancelled().await;
        assert!(token.is_cancelled() && token.flag().load(Ordering::SeqCst));
    }

    #[test]
    fn cancelling_a_parent_cancels_its_live_children_only_downwards() {
        let parent = CancelToken::new();
        let (a, b) = (parent.child(), parent.child());
        drop(parent.child()); // finished: forgotten at the next child()
        b.cancel();
        assert!(!parent.is_cancelled() && !a.is_cancelled());
        let c = parent.child();
        assert_eq!(parent.children.lock().unwrap().len(), 3);
        parent.cancel();
        assert!(a.is_cancelled() && c.is_cancelled());
        assert!(parent.child().is_cancelled());
    }
}
