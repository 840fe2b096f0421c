//! The core's reports in Python: log records to the `outrider` logger (through the core's
//! `host::log`), trace events to an `on_event` callable, finished children to a tqdm bar.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

use crate::api::{host_log, EventSink, LaunchObserver, OnFinished};
use crate::py::convert::{dump, wrong_type};
use crate::py::enter::attach;

/// `logging.getLogger("outrider")`, which every record goes to.
static LOGGER: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Route the core's log records to the `outrider` logger (once per process) and read its level.
pub(super) fn install(py: Python<'_>) -> PyResult<()> {
    let logging = py.import("logging")?;
    LOGGER.get_or_try_init(py, || {
        logging
            .call_method1("getLogger", ("outrider",))
            .map(Bound::unbind)
    })?;
    // Records come from runtime threads too: enter Python only while it is not shutting down.
    host_log::forward_to(|level, message| {
        attach(|py| {
            LOGGER
                .get(py)
                .map(|l| l.bind(py).call_method1("log", (level, message)).map(drop))
        });
    });
    refresh_level(py);
    Ok(())
}

/// Read the logger's effective level into the core's filter (before each call into the core,
/// so that `logger.setLevel` and pytest's `caplog.set_level` take effect from the next one).
pub(super) fn refresh_level(py: Python<'_>) {
    if let Some(logger) = LOGGER.get(py) {
        let level = logger
            .bind(py)
            .call_method0("getEffectiveLevel")
            .and_then(|l| l.extract());
        host_log::set_host_level(level.ok());
    }
}

/// `_core._redact(text)`: `text` with every secret the core knows of removed (what the core's own
/// messages go through), for Python-side text such as a callback's traceback.
#[pyfunction]
pub(super) fn _redact(text: &str) -> String {
    crate::api::redact_str(text)
}

/// `_core._register_secret(value)`: remove `value` from everything the core reports from now on
/// (an adapter's API key). Anything but a str is ignored, as is a str the core deems too short.
#[pyfunction]
pub(super) fn _register_secret(value: &Bound<'_, PyAny>) {
    if let Ok(secret) = value.extract::<&str>() {
        crate::api::register_secret(secret);
    }
}

/// An `on_event` argument: None, or a callable that receives each trace event as a dict (on a
/// runtime thread; an exception it raises is logged as a warning and the run goes on).
pub(super) fn event_sink(on_event: Option<&Bound<'_, PyAny>>) -> PyResult<Option<EventSink>> {
    let Some(callback) = on_event.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    if !callback.is_callable() {
        let expected = "a callable taking one event dict, or None";
        return Err(wrong_type("on_event", expected, callback));
    }
    static DELIVER: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let deliver = DELIVER
        .import(callback.py(), "outrider._observe", "deliver")?
        .clone()
        .unbind();
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

/// A launch's observer: `on_event` (see [`event_sink`]) and `on_finished`, a callable of
/// `outrider._aio` called once per finished child (a progress bar's tick).
pub(super) fn observer(
    on_event: Option<&Bound<'_, PyAny>>,
    on_finished: Option<&Bound<'_, PyAny>>,
) -> PyResult<LaunchObserver> {
    let mut observer = LaunchObserver::events(event_sink(on_event)?);
    if let Some(tick) = on_finished
        .filter(|t| !t.is_none())
        .map(|t| t.clone().unbind())
    {
        let tick: OnFinished = Arc::new(move |_| {
            attach(|py| tick.bind(py).call0().map(drop));
        });
        observer.on_finished = Some(tick);
    }
    Ok(observer)
}
