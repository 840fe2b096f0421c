//! Where work runs: the process's one tokio runtime, and the caller's scope a launch carries
//! into every task it spawns.

use std::cell::Cell;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// What the code that started a launch leaves for its model calls to find (for the Python
/// binding: the caller's event loop and `contextvars` context). Opaque to the core, which only
/// carries it from the launch into every task the launch spawns.
#[derive(Clone)]
pub struct CallerScope(pub Arc<dyn std::any::Any + Send + Sync>);

tokio::task_local! {
    static CALLER: CallerScope;
}

/// Run `fut` with `scope` as its [`CallerScope`].
pub async fn with_caller<F: Future>(scope: CallerScope, fut: F) -> F::Output {
    CALLER.scope(scope, fut).await
}

/// The [`CallerScope`] of the task running now, if its launch was given one.
pub fn current_caller() -> Option<CallerScope> {
    CALLER.try_with(Clone::clone).ok()
}

/// `fut`, keeping the current task's [`CallerScope`] (for a task about to be spawned).
pub(crate) fn inherit_caller<F: Future>(fut: F) -> impl Future<Output = F::Output> {
    let scope = current_caller();
    async move {
        match scope {
            Some(s) => with_caller(s, fut).await,
            None => fut.await,
        }
    }
}

/// `f`, keeping the current task's [`CallerScope`] (for a blocking closure about to be handed to
/// another thread, such as a tool that launches children).
pub(crate) fn inherit_caller_sync<R>(f: impl FnOnce() -> R) -> impl FnOnce() -> R {
    let scope = current_caller();
    move || match scope {
        Some(s) => CALLER.sync_scope(s, f),
        None => f(),
    }
}

/// One per process: a child made by `fork()` has none of its parent's worker threads, so it gets
/// a runtime of its own on first use (the parent's is leaked there: dropping it would wait for
/// threads that do not exist).
#[allow(unsafe_code)] // the leaked runtime, read back through its pointer
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static CURRENT: AtomicPtr<tokio::runtime::Runtime> = AtomicPtr::new(std::ptr::null_mut());
    static OWNER: AtomicU32 = AtomicU32::new(0);
    static BUILD: Mutex<()> = Mutex::new(());
    let pid = std::process::id();
    let current = CURRENT.load(Ordering::Acquire);
    if !current.is_null() && OWNER.load(Ordering::Acquire) == pid {
        // SAFETY: the pointer comes from Box::leak below and is never freed.
        return unsafe { &*current };
    }
    let _building = BUILD.lock().unwrap_or_else(|p| p.into_inner());
    let current = CURRENT.load(Ordering::Acquire);
    if !current.is_null() && OWNER.load(Ordering::Acquire) == pid {
        // SAFETY: as above.
        return unsafe { &*current };
    }
    let rt: &'static mut tokio::runtime::Runtime = Box::leak(Box::new(
        tokio::runtime::Builder::new_multi_thread()
            .thread_name("outrider")
            .max_blocking_threads(256)
            .enable_all()
            .build()
            .expect("the outrider runtime could not start"),
    ));
    CURRENT.store(rt, Ordering::Release);
    OWNER.store(pid, Ordering::Release);
    rt
}

/// Jobs handed from one thread to a set of waiting ones, for hand-offs that happen many times a
/// second (a model call of a running explore loop). A futex wake and a cross-CPU schedule cost
/// 0.1-0.2 ms each way on a small VM, which dominates a scripted launch: so one waiting thread at
/// a time spins for a short while before sleeping, and [`put`](Inbox::put) wakes a sleeper only
/// when no thread is spinning.
pub struct Inbox<T> {
    queue: Mutex<VecDeque<T>>,
    ready: Condvar,
    /// Jobs queued: lets the spinner look without taking the lock.
    queued: AtomicUsize,
    /// A thread is spinning for the next job (only changed to false under the lock).
    spinning: AtomicBool,
    /// Threads asleep on `ready` (only changed under the lock).
    sleepers: AtomicUsize,
}

impl<T> Default for Inbox<T> {
    fn default() -> Self {
        Inbox {
            queue: Mutex::new(VecDeque::new()),
            ready: Condvar::new(),
            queued: AtomicUsize::new(0),
            spinning: AtomicBool::new(false),
            sleepers: AtomicUsize::new(0),
        }
    }
}

/// How long an idle worker spins in [`Inbox::take_idle`] before it sleeps: the next call of a
/// running loop usually comes within a millisecond.
pub(crate) const IDLE_SPIN: Duration = Duration::from_millis(2);

impl<T> Inbox<T> {
    /// [`Inbox::take`] for an idle worker: spin [`IDLE_SPIN`], then sleep up to `timeout`.
    pub fn take_idle(&self, timeout: Duration) -> Option<T> {
        self.take(IDLE_SPIN, timeout)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<T>> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queue `job` for one waiting thread.
    pub fn put(&self, job: T) {
        let mut queue = self.lock();
        queue.push_back(job);
        self.queued.fetch_add(1, Ordering::SeqCst);
        // A spinner takes one job (it re-checks the queue under the lock before it sleeps, so it
        // cannot miss it); each job beyond that needs a sleeper.
        let spinners = usize::from(self.spinning.load(Ordering::SeqCst));
        let wake = queue.len() > spinners && self.sleepers.load(Ordering::SeqCst) > 0;
        drop(queue);
        if wake {
            self.ready.notify_one();
        }
    }

    /// The first job, waking another sleeper when more are left (a burst of puts may have
    /// counted on a spinner that took only one).
    fn pop(&self, queue: &mut VecDeque<T>) -> Option<T> {
        let job = queue.pop_front()?;
        self.queued.fetch_sub(1, Ordering::SeqCst);
        if !queue.is_empty() && self.sleepers.load(Ordering::SeqCst) > 0 {
            self.ready.notify_one();
        }
        Some(job)
    }

    /// The next job: spin up to `spin` for it when no other thread is spinning, then sleep; None
    /// after `timeout` without one.
    pub fn take(&self, spin: Duration, timeout: Duration) -> Option<T> {
        let started = Instant::now();
        let spinner = !spin.is_zero() && !self.spinning.swap(true, Ordering::SeqCst);
        if spinner {
            let job = spin_for(started, spin.min(timeout), 64, || {
                if self.queued.load(Ordering::SeqCst) == 0 {
                    return None;
                }
                let mut queue = self.lock();
                let job = self.pop(&mut queue)?;
                // Still under the lock: a `put` that saw the spinner has been seen by it.
                self.spinning.store(false, Ordering::SeqCst);
                Some(job)
            });
            if job.is_some() {
                return job;
            }
        }
        let mut queue = self.lock();
        if spinner {
            self.spinning.store(false, Ordering::SeqCst);
        }
        loop {
            if let Some(job) = self.pop(&mut queue) {
                return Some(job);
            }
            let left = timeout.saturating_sub(started.elapsed());
            if left.is_zero() {
                return None;
            }
            self.sleepers.fetch_add(1, Ordering::SeqCst);
            queue = match self.ready.wait_timeout(queue, left) {
                Ok((q, _)) => q,
                Err(p) => p.into_inner().0,
            };
            self.sleepers.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

thread_local! {
    /// Set while this thread blocks on the runtime for a caller that has nothing else to do.
    static MAY_SPIN: Cell<bool> = const { Cell::new(false) };
}

/// Mark the current thread as one that only waits (see [`spin_first`]) until the guard drops.
pub fn allow_spin() -> impl Drop {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            MAY_SPIN.with(|c| c.set(self.0));
        }
    }
    Reset(MAY_SPIN.with(|c| c.replace(true)))
}

/// How long [`spin_first`] spins before it parks.
const WAIT_SPIN: Duration = Duration::from_micros(300);

/// `fut`, polled in a tight loop for a short while before it parks, on a thread marked by
/// [`allow_spin`] (elsewhere it is `fut`): an answer that comes from another thread within
/// microseconds is then taken without the wake-up of a parked thread.
pub fn spin_first<F: Future + Unpin>(fut: F) -> impl Future<Output = F::Output> {
    SpinFirst {
        // Out of tokio's cooperative budget, which a spinning poll would use up in 128 turns
        // (then every poll says Pending, answer or not).
        fut: tokio::task::unconstrained(fut),
        started: None,
    }
}

struct SpinFirst<F> {
    fut: tokio::task::Unconstrained<F>,
    started: Option<Instant>,
}

impl<F: Future + Unpin> Future for SpinFirst<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        if !MAY_SPIN.with(Cell::get) {
            return Pin::new(&mut self.fut).poll(cx);
        }
        let started = *self.started.get_or_insert_with(Instant::now);
        let ready = spin_for(started, WAIT_SPIN, 16, || {
            match Pin::new(&mut self.fut).poll(cx) {
                Poll::Ready(out) => Some(out),
                Poll::Pending => None,
            }
        });
        ready.map_or(Poll::Pending, Poll::Ready)
    }
}

/// `ready()` in a tight loop until it gives a value, or None once `limit` has passed since
/// `started` (checked every `every` turns, when this thread also yields its core: on a busy
/// host the value comes from a thread that may need it).
fn spin_for<T>(
    started: Instant,
    limit: Duration,
    every: u32,
    mut ready: impl FnMut() -> Option<T>,
) -> Option<T> {
    let mut turns = 0u32;
    loop {
        if let Some(out) = ready() {
            return Some(out);
        }
        turns = turns.wrapping_add(1);
        if turns.is_multiple_of(every) {
            if started.elapsed() >= limit {
                return None;
            }
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_spawned_task_keeps_the_launchs_caller_scope() {
        let scope = CallerScope(Arc::new(7u32));
        let seen = with_caller(scope, async {
            tokio::spawn(inherit_caller(async {
                current_caller().and_then(|s| s.0.downcast_ref::<u32>().copied())
            }))
            .await
            .unwrap()
        })
        .await;
        assert_eq!(seen, Some(7));
        assert!(current_caller().is_none());
        let bare = tokio::spawn(inherit_caller(async { current_caller().is_some() }));
        assert!(!bare.await.unwrap());
    }

    #[test]
    fn an_inbox_hands_every_job_to_exactly_one_taker_without_losing_a_wake_up() {
        let inbox = Arc::new(Inbox::<u32>::default());
        let started = Instant::now();
        let takers: Vec<_> = (0..3)
            .map(|_| {
                let inbox = inbox.clone();
                std::thread::spawn(move || {
                    let mut got = Vec::new();
                    // Short spins so that takers also sleep and must be woken by `put`.
                    while let Some(job) =
                        inbox.take(Duration::from_micros(50), Duration::from_secs(10))
                    {
                        if job == u32::MAX {
                            break;
                        }
                        got.push(job);
                    }
                    got
                })
            })
            .collect();
        for job in 0..300 {
            inbox.put(job);
            if job % 50 == 0 {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        for _ in 0..3 {
            inbox.put(u32::MAX);
        }
        let mut all: Vec<u32> = takers.into_iter().flat_map(|t| t.join().unwrap()).collect();
        all.sort_unstable();
        assert_eq!(all, (0..300).collect::<Vec<_>>());
        // A sleeper that `put` failed to wake would only see its job at its 10 s timeout.
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn a_burst_of_jobs_runs_on_as_many_threads_at_once() {
        type Job = Box<dyn FnOnce() -> bool + Send>;
        let inbox = Arc::new(Inbox::<Job>::default());
        let takers: Vec<_> = (0..4)
            .map(|_| {
                let inbox = inbox.clone();
                std::thread::spawn(move || {
                    // One spins all along; the others sleep.
                    let job = inbox.take(Duration::from_secs(10), Duration::from_secs(10));
                    job.is_some_and(|j| j())
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(20));
        let running = Arc::new((Mutex::new(0usize), Condvar::new()));
        for _ in 0..4 {
            let running = running.clone();
            inbox.put(Box::new(move || {
                // Each job waits for all four to be running: jobs left queued behind one busy
                // thread would time out here.
                let (count, changed) = &*running;
                let mut n = count.lock().unwrap();
                *n += 1;
                changed.notify_all();
                let (n, _) = changed
                    .wait_timeout_while(n, Duration::from_secs(5), |n| *n < 4)
                    .unwrap();
                *n == 4
            }));
        }
        let all: Vec<bool> = takers.into_iter().map(|t| t.join().unwrap()).collect();
        assert_eq!(all, [true; 4]);
    }

    #[test]
    fn an_empty_inbox_answers_none_after_its_timeout() {
        let inbox = Inbox::<u8>::default();
        let started = Instant::now();
        assert_eq!(
            inbox.take(Duration::from_millis(1), Duration::from_millis(30)),
            None
        );
        assert!(started.elapsed() >= Duration::from_millis(30));
        inbox.put(7);
        assert_eq!(inbox.take(Duration::ZERO, Duration::ZERO), Some(7));
    }

    #[test]
    fn spin_first_gives_the_answer_on_a_spinning_thread_and_elsewhere() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        for spin in [false, true] {
            let _guard = spin.then(allow_spin);
            let (tx, rx) = tokio::sync::oneshot::channel();
            let sender = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(5));
                tx.send(42u32).unwrap();
            });
            assert_eq!(rt.block_on(spin_first(rx)), Ok(42));
            sender.join().unwrap();
        }
        assert!(!MAY_SPIN.with(Cell::get));
    }
}
