//! The core's reports in Python: `tracing` events as `logging` records of the `outrider` logger,
//! trace events to an `on_event` callable, finished children to a tqdm bar.
//!
//! Records are cheap when the logger would drop them: the logger's effective level is read once
//! per call into the core (on the calling thread, which holds the GIL anyway) and becomes the
//! `log` crate's maximum level, so a disabled `tracing` event costs two atomic loads and no GIL.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

use crate::api::{EventSink, LaunchObserver, OnFinished};
use crate::py::convert::{dump, wrong_type};
use crate::py::runtime::attach;

/// The Python logger every record goes to.
const LOGGER_NAME: &str = "outrider";

static LOGGER: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Forwards the core's records (targets `outrider::...`) to `logging.getLogger("outrider")`.
struct PyLogging;

static PY_LOGGING: PyLogging = PyLogging;

impl log::Log for PyLogging {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        // Span lines (`tracing::span`, `outrider::span`) and other crates' records are not
        // forwarded: the events carry what a reader needs.
        let target = metadata.target();
        metadata.level() <= log::max_level()
            && target.starts_with("outrider::")
            && target != crate::api::SPAN_TARGET
    }

    fn log(&self, record: &log::Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let level: u8 = match record.level() {
            log::Level::Error => 40,
            log::Level::Warn => 30,
            log::Level::Info => 20,
            log::Level::Debug => 10,
            log::Level::Trace => 5,
        };
        let message = record.args().to_string();
        // Records come from runtime worker threads too: enter Python only while it is not
        // shutting down.
        attach(|py| {
            if let Some(logger) = LOGGER.get(py) {
                let _ = logger.bind(py).call_method1("log", (level, message));
            }
        });
    }

    fn flush(&self) {}
}

/// Route the core's `log` records to Python (once per process) and read the level.
pub fn install(py: Python<'_>) -> PyResult<()> {
    LOGGER.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
        Ok(py
            .import("logging")?
            .call_method1("getLogger", (LOGGER_NAME,))?
            .unbind())
    })?;
    let _ = log::set_logger(&PY_LOGGING);
    refresh_level(py);
    Ok(())
}

/// Read the `outrider` logger's effective level into the cache (call before each launch, so
/// that `logger.setLevel` and pytest's `caplog.set_level` take effect from the next launch).
pub fn refresh_level(py: Python<'_>) {
    let Some(logger) = LOGGER.get(py) else {
        return;
    };
    let level: i64 = logger
        .bind(py)
        .call_method0("getEffectiveLevel")
        .and_then(|l| l.extract())
        .unwrap_or(30);
    log::set_max_level(match level {
        i64::MIN..=5 => log::LevelFilter::Trace,
        6..=10 => log::LevelFilter::Debug,
        11..=20 => log::LevelFilter::Info,
        21..=30 => log::LevelFilter::Warn,
        31..=40 => log::LevelFilter::Error,
        _ => log::LevelFilter::Off,
    });
}

/// An `on_event` argument: None, or a callable that receives each trace event as a dict (on a
/// runtime thread; an exception it raises is logged as a warning and the run goes on).
pub fn event_sink(on_event: Option<&Bound<'_, PyAny>>) -> PyResult<Option<EventSink>> {
    let Some(callback) = on_event.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    if !callback.is_callable() {
        return Err(wrong_type(
            "on_event",
            "a callable taking one event dict, or None",
            callback,
        ));
    }
    let py = callback.py();
    let deliver = py.import("outrider._observe")?.getattr("deliver")?.unbind();
    let callback = callback.clone().unbind();
    // Only the first exception of a callback is logged with its traceback (see `deliver`).
    let raised = std::sync::atomic::AtomicBool::new(false);
    Ok(Some(EventSink::new(move |event| {
        attach(|py| {
            let Ok(event) = dump(py, event) else { return };
            let first = !raised.load(std::sync::atomic::Ordering::Relaxed);
            let call = deliver.bind(py).call1((callback.bind(py), event, first));
            if call.is_ok_and(|r| r.is_truthy().unwrap_or(false)) {
                raised.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        });
    })))
}

/// The observer of a `launch_many` call: its `on_event` and, with `progress`, a tqdm bar of
/// `total` children (returned too, to be closed when the call ends).
pub fn many_observer(
    py: Python<'_>,
    on_event: Option<&Bound<'_, PyAny>>,
    progress: bool,
    total: usize,
) -> PyResult<(LaunchObserver, Option<Py<PyAny>>)> {
    let mut observer = LaunchObserver::events(event_sink(on_event)?);
    let mut bar = None;
    if progress {
        let made = py
            .import("outrider._observe")?
            .call_method1("progress_bar", (total,))?
            .unbind();
        let tick = made.clone_ref(py);
        let on_finished: OnFinished = Arc::new(move |_| {
            attach(|py| {
                let _ = tick.bind(py).call_method1("update", (1,));
            });
        });
        observer.on_finished = Some(on_finished);
        bar = Some(made);
    }
    Ok((observer, bar))
}
