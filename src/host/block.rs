//! Blocking a host thread on the runtime without going deaf to the host's interrupts (Ctrl-C).

use std::future::Future;
use std::time::Duration;

use crate::cancel::CancelToken;
use crate::error::Error;

/// How often [`block_on_interruptible`] asks whether the host was interrupted.
pub(crate) const INTERRUPT_POLL: Duration = Duration::from_millis(50);
/// How long interrupted work gets to wind down once its token is cancelled.
pub(crate) const WIND_DOWN: Duration = Duration::from_millis(500);

/// Run `fut` to completion on the calling thread (no hand-off to a worker and back), asking
/// `interrupted` every [`INTERRUPT_POLL`]: its error cancels `cancel`, gives the work
/// [`WIND_DOWN`] to finish, and is returned. From a thread of the runtime itself (which cannot
/// block on the runtime, e.g. a model callable that launches a child), a scoped thread blocks.
pub fn block_on_interruptible<T, E, F>(
    fut: F,
    interrupted: &(dyn Fn() -> Result<(), E> + Sync),
    cancel: Option<&CancelToken>,
) -> Result<T, E>
where
    F: Future<Output = T> + Send,
    T: Send,
    E: Send + From<Error>,
{
    if tokio::runtime::Handle::try_current().is_ok() {
        return std::thread::scope(|scope| {
            let worker = scope.spawn(|| block_on_interruptible(fut, interrupted, cancel));
            worker.join().unwrap_or_else(|_| {
                Err(Error::Internal("the blocking call panicked".into()).into())
            })
        });
    }
    // This thread only waits for `fut`: it may spin briefly for a model's answer.
    let _spin = crate::exec::allow_spin();
    crate::exec::runtime().block_on(async {
        let mut fut = std::pin::pin!(fut);
        let mut tick = tokio::time::interval(INTERRUPT_POLL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                biased;
                out = &mut fut => return Ok(out),
                _ = tick.tick() => {
                    if let Err(interrupt) = interrupted() {
                        if let Some(c) = cancel {
                            c.cancel();
                            let _ = tokio::time::timeout(WIND_DOWN, &mut fut).await;
                        }
                        return Err(interrupt);
                    }
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Instant;

    #[test]
    fn finished_work_is_returned_without_an_interrupt() {
        let out: Result<u32, Error> = block_on_interruptible(async { 7 }, &|| Ok(()), None);
        assert_eq!(out.unwrap(), 7);
    }

    #[test]
    fn an_interrupt_cancels_the_work_lets_it_wind_down_and_is_returned() {
        let cancel = CancelToken::new();
        let asked = AtomicUsize::new(0);
        let wound_down = std::sync::Arc::new(AtomicUsize::new(0));
        let seen = wound_down.clone();
        let token = cancel.clone();
        let work = async move {
            token.cancelled().await;
            seen.fetch_add(1, Ordering::SeqCst);
        };
        let started = Instant::now();
        let interrupted = || -> Result<(), Error> {
            if asked.fetch_add(1, Ordering::SeqCst) >= 2 {
                Err(Error::Internal("interrupted".into()))
            } else {
                Ok(())
            }
        };
        let out = block_on_interruptible(work, &interrupted, Some(&cancel));
        assert!(matches!(out, Err(Error::Internal(m)) if m == "interrupted"));
        assert!(cancel.is_cancelled());
        assert_eq!(
            wound_down.load(Ordering::SeqCst),
            1,
            "the work saw its cancellation"
        );
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn work_that_ignores_cancellation_is_left_after_the_wind_down() {
        let cancel = CancelToken::new();
        let started = Instant::now();
        let out: Result<(), Error> = block_on_interruptible(
            std::future::pending(),
            &|| Err(Error::Internal("stop".into())),
            Some(&cancel),
        );
        assert!(out.is_err());
        let took = started.elapsed();
        assert!(
            took >= WIND_DOWN && took < Duration::from_secs(3),
            "took {took:?}"
        );
    }

    #[test]
    fn a_runtime_thread_blocks_through_a_scoped_thread() {
        let out = crate::exec::runtime().block_on(async {
            tokio::spawn(async {
                block_on_interruptible::<_, Error, _>(async { 3 }, &|| Ok(()), None)
            })
            .await
            .unwrap()
        });
        assert_eq!(out.unwrap(), 3);
    }
}
