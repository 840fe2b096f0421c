//! Where work runs: the process's one tokio runtime, and the caller's scope a launch carries
//! into every task it spawns.

use std::future::Future;
use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

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
pub fn inherit_caller<F: Future>(fut: F) -> impl Future<Output = F::Output> {
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
pub fn inherit_caller_sync<R>(f: impl FnOnce() -> R) -> impl FnOnce() -> R {
    let scope = current_caller();
    move || match scope {
        Some(s) => CALLER.sync_scope(s, f),
        None => f(),
    }
}

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
}
