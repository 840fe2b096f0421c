//! Where work runs: the process's one tokio runtime, and a low-latency hand-off for blocking
//! callbacks (a sync Python model callable, for one).
//!
//! A sync model callable must run off the thread that waits for it, so that the child's
//! wall-clock limit and cancellation still hold if it hangs. On small VMs a thread hand-off costs
//! 0.1-0.2 ms each way (a futex wake and a cross-CPU schedule), which dominates a scripted launch.
//! A [`HotCaller`] is one persistent thread that keeps spinning for a short while after each job,
//! so the next call of a running loop is picked up at once; and [`SpinJoin`] lets a Python
//! caller's own thread (never a runtime worker) spin briefly for the answer before parking.
//! When the hot thread is busy (many children at once), callers fall back to the blocking pool.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::thread::Thread;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

/// How long the hot thread spins for its next job before parking.
const IDLE_SPIN: Duration = Duration::from_millis(2);
/// How long a Python caller's thread spins for an answer before parking.
const WAIT_SPIN: Duration = Duration::from_micros(300);

type Job = Box<dyn FnOnce() + Send>;

thread_local! {
    /// Set on a thread that blocks on the runtime for Python (it has nothing else to do).
    static MAY_SPIN: Cell<bool> = const { Cell::new(false) };
}

/// Mark the current thread as one that may spin while waiting (see [`SpinJoin`]).
pub fn allow_spin(on: bool) {
    MAY_SPIN.with(|c| c.set(on));
}

/// One persistent caller thread.
pub struct HotCaller {
    /// The process the thread runs in: after `fork()` the child has no such thread.
    pid: u32,
    slot: Mutex<Option<Job>>,
    has_job: AtomicBool,
    busy: AtomicBool,
    thread: Thread,
}

impl HotCaller {
    /// Start the thread.
    pub fn start(name: &str) -> Arc<HotCaller> {
        let (tx, rx) = std::sync::mpsc::channel::<Weak<HotCaller>>();
        let handle = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let Ok(weak) = rx.recv() else { return };
                let mut last = Instant::now();
                // The thread ends once its model is dropped (checked after each park).
                while let Some(me) = weak.upgrade() {
                    loop {
                        if me.has_job.swap(false, Ordering::AcqRel) {
                            let job = me.slot.lock().ok().and_then(|mut s| s.take());
                            if let Some(job) = job {
                                job();
                            }
                            me.busy.store(false, Ordering::Release);
                            last = Instant::now();
                        } else if last.elapsed() < IDLE_SPIN {
                            std::hint::spin_loop();
                        } else {
                            break;
                        }
                    }
                    drop(me);
                    std::thread::park_timeout(Duration::from_millis(200));
                }
            })
            .expect("the outrider caller thread could not start");
        let caller = Arc::new(HotCaller {
            pid: std::process::id(),
            slot: Mutex::new(None),
            has_job: AtomicBool::new(false),
            busy: AtomicBool::new(false),
            thread: handle.thread().clone(),
        });
        let _ = tx.send(Arc::downgrade(&caller));
        caller
    }

    /// Run `f` on the hot thread if it is free; otherwise give `f` back.
    pub fn try_run<F>(&self, f: F) -> Result<(), F>
    where
        F: FnOnce() + Send + 'static,
    {
        if self.pid != std::process::id()
            || self
                .busy
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
        {
            return Err(f);
        }
        if let Ok(mut slot) = self.slot.lock() {
            *slot = Some(Box::new(f));
        }
        self.has_job.store(true, Ordering::Release);
        self.thread.unpark();
        Ok(())
    }
}

/// Run `f` off this thread (on the hot thread when free, else the blocking pool) and await it,
/// spinning briefly first when the current thread may spin.
pub async fn run_off_thread<T, F>(hot: &HotCaller, f: F) -> Result<T, String>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let (tx, rx) = oneshot::channel();
    let job = move || {
        let _ = tx.send(f());
    };
    if let Err(job) = hot.try_run(job) {
        tokio::task::spawn_blocking(job);
    }
    SpinJoin {
        rx,
        started: Instant::now(),
    }
    .await
    .map_err(|_| "the caller thread stopped without an answer".to_string())
}

/// A oneshot receiver that spins for [`WAIT_SPIN`] before parking, on threads that may spin.
struct SpinJoin<T> {
    rx: oneshot::Receiver<T>,
    started: Instant,
}

impl<T> Future for SpinJoin<T> {
    type Output = Result<T, oneshot::error::RecvError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let may_spin = MAY_SPIN.with(Cell::get);
        loop {
            match Pin::new(&mut self.rx).poll(cx) {
                Poll::Ready(v) => return Poll::Ready(v),
                Poll::Pending if may_spin && self.started.elapsed() < WAIT_SPIN => {
                    std::hint::spin_loop()
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

/// The runtime (multi-threaded; tools and sync Python callables run on its blocking pool).
///
/// One per process: a child made by `fork()` has none of its parent's worker threads, so it gets
/// a runtime of its own on first use (the parent's is leaked there: dropping it would wait for
/// threads that do not exist).
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
