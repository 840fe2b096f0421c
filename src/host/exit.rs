//! A barrier threads the host did not start pass through to enter the host (e.g. the Python
//! interpreter), which may be shutting down: a thread inside a finalizing interpreter brings the
//! process down, so once the barrier closes nobody enters, and closing waits for those inside.
//! The thread that closed it (the host's finalizing thread) may still return to the host from a
//! wait of its own ([`ExitBarrier::come_back`]); nothing else is let in.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::thread::ThreadId;
use std::time::{Duration, Instant};

/// How long interpreter exit waits for the threads inside to leave.
pub const EXIT_GRACE: Duration = Duration::from_secs(2);

/// See the module documentation. `const`-constructible, for a `static`.
#[derive(Debug, Default)]
pub struct ExitBarrier {
    closed: AtomicBool,
    inside: AtomicUsize,
    closer: OnceLock<ThreadId>,
}

/// A thread inside an [`ExitBarrier`] (see [`ExitBarrier::enter`]); it leaves when this drops.
pub struct Inside<'a>(&'a AtomicUsize);

impl Drop for Inside<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl ExitBarrier {
    /// An open barrier.
    pub const fn new() -> Self {
        ExitBarrier {
            closed: AtomicBool::new(false),
            inside: AtomicUsize::new(0),
            closer: OnceLock::new(),
        }
    }

    /// Run `f` inside the barrier; None, without running it, once the barrier is closed. Only short
    /// sections belong here: closing waits for them.
    pub fn pass<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        self.enter().map(|_inside| f())
    }

    /// Enter the barrier until the returned guard drops (for a section that cannot be one
    /// closure); None once the barrier is closed.
    pub fn enter(&self) -> Option<Inside<'_>> {
        // Counted before the check, so that `close` either sees this thread or it sees `closed`.
        self.inside.fetch_add(1, Ordering::SeqCst);
        let inside = Inside(&self.inside);
        if self.closed.load(Ordering::SeqCst) {
            return None;
        }
        Some(inside)
    }

    /// For a thread coming back to the host after a wait: inside (closing waits for it until the
    /// guard drops) while the barrier is open; once it is closed, None on the thread that closed it
    /// (the host's own finalizing thread), and any other thread parks for good, never returning.
    pub fn come_back(&self) -> Option<Inside<'_>> {
        let inside = self.enter();
        if inside.is_none() && !self.closed_by_this_thread() {
            loop {
                std::thread::park();
            }
        }
        inside
    }

    /// Whether the barrier was closed by the calling thread: the host's finalizing thread, which
    /// may return to its own host after a wait (an exit hook that launches), where any other
    /// thread must stay out.
    fn closed_by_this_thread(&self) -> bool {
        self.closer.get() == Some(&std::thread::current().id())
    }

    /// Close the barrier and wait up to `grace` for the threads inside to leave; whether they all
    /// did.
    pub fn close(&self, grace: Duration) -> bool {
        // The first closer is the host's finalizing thread; a later close changes nothing.
        let _ = self.closer.set(std::thread::current().id());
        self.closed.store(true, Ordering::SeqCst);
        let until = Instant::now() + grace;
        while self.inside.load(Ordering::SeqCst) > 0 {
            if Instant::now() >= until {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_thread_entered_by_guard_is_waited_for_and_none_enter_after_close() {
        let barrier = ExitBarrier::new();
        let inside = barrier.enter();
        assert!(inside.is_some());
        assert!(!barrier.close(Duration::from_millis(20)));
        drop(inside);
        assert!(barrier.close(Duration::from_millis(20)));
        assert!(barrier.enter().is_none());
        assert_eq!(barrier.inside.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn coming_back_after_close_parks_every_thread_but_the_closer() {
        let barrier: &'static ExitBarrier = Box::leak(Box::new(ExitBarrier::new()));
        assert!(barrier.come_back().is_some());
        assert!(barrier.close(Duration::from_millis(20)));
        assert!(barrier.come_back().is_none(), "the closer comes back");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _back = barrier.come_back();
            tx.send(()).ok();
        });
        // The other thread stays parked (it is left so when the test process ends).
        assert!(rx.recv_timeout(Duration::from_millis(200)).is_err());
    }

    #[test]
    fn only_the_thread_that_closed_is_told_it_did() {
        let barrier = ExitBarrier::new();
        assert!(!barrier.closed_by_this_thread());
        std::thread::scope(|s| {
            s.spawn(|| assert!(barrier.close(Duration::from_millis(20))));
        });
        assert!(!barrier.closed_by_this_thread());
        assert!(barrier.close(Duration::from_millis(20)));
        assert!(
            !barrier.closed_by_this_thread(),
            "a later close is not the closer"
        );
        let own = ExitBarrier::new();
        assert!(own.close(Duration::from_millis(20)));
        assert!(own.closed_by_this_thread());
        // Closed by this thread or not, nobody enters.
        assert!(own.enter().is_none());
    }

    #[test]
    fn close_waits_for_the_threads_inside_and_then_lets_nobody_in() {
        let barrier = Arc::new(ExitBarrier::new());
        assert_eq!(barrier.pass(|| 1), Some(1));
        let (entered_tx, entered_rx) = std::sync::mpsc::channel();
        let inside = {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.pass(|| {
                    entered_tx.send(()).unwrap();
                    std::thread::sleep(Duration::from_millis(100));
                    Instant::now()
                })
            })
        };
        entered_rx.recv().unwrap();
        assert!(barrier.close(Duration::from_secs(5)));
        let closed_at = Instant::now();
        let left_at = inside.join().unwrap().expect("it entered before the close");
        assert!(
            left_at <= closed_at,
            "close returned before the thread inside left"
        );
        assert_eq!(barrier.pass(|| 2), None);
    }

    #[test]
    fn close_gives_up_after_the_grace_period() {
        let barrier = Arc::new(ExitBarrier::new());
        let (entered_tx, entered_rx) = std::sync::mpsc::channel();
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let stuck = {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.pass(|| {
                    entered_tx.send(()).unwrap();
                    release_rx.recv().ok();
                })
            })
        };
        entered_rx.recv().unwrap();
        let started = Instant::now();
        assert!(!barrier.close(Duration::from_millis(50)));
        assert!(started.elapsed() >= Duration::from_millis(50));
        release_tx.send(()).unwrap();
        stuck.join().unwrap();
    }
}
