//! The core's log records forwarded to the host's logging (Python's `logging`): which records
//! go, their level in the host's numbering, and the host's level as the `log` crate's filter, so
//! a record the host would drop costs two atomic loads and never enters the host.

use std::sync::OnceLock;

/// Where a host takes one record: its level in Python's numbering (ERROR 40, WARNING 30, INFO
/// 20, DEBUG 10, TRACE 5) and its message.
pub type Sink = fn(u8, String);

static SINK: OnceLock<Sink> = OnceLock::new();

struct Forward;

static FORWARD: Forward = Forward;

impl log::Log for Forward {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        // Span lines and other crates' records stay out: the core's events carry what a reader
        // needs.
        let target = metadata.target();
        metadata.level() <= log::max_level()
            && target.starts_with("outrider::")
            && target != crate::trace::SPAN_TARGET
    }

    fn log(&self, record: &log::Record<'_>) {
        if let Some(sink) = SINK.get().filter(|_| self.enabled(record.metadata())) {
            sink(host_level(record.level()), record.args().to_string());
        }
    }

    fn flush(&self) {}
}

/// Forward the core's records to `sink`. Once per process: the first sink stays, and another
/// `log` logger installed before it wins.
pub fn forward_to(sink: Sink) {
    let _ = SINK.set(sink);
    let _ = log::set_logger(&FORWARD);
}

/// A record's level in Python's numbering.
pub fn host_level(level: log::Level) -> u8 {
    match level {
        log::Level::Error => 40,
        log::Level::Warn => 30,
        log::Level::Info => 20,
        log::Level::Debug => 10,
        log::Level::Trace => 5,
    }
}

/// Forward only records at or above the host's level (Python's numbering; above 40, none).
/// None (the host could not say) is Python's default, warnings and errors.
pub fn set_host_level(level: Option<i64>) {
    log::set_max_level(match level.unwrap_or(30) {
        i64::MIN..=5 => log::LevelFilter::Trace,
        6..=10 => log::LevelFilter::Debug,
        11..=20 => log::LevelFilter::Info,
        21..=30 => log::LevelFilter::Warn,
        31..=40 => log::LevelFilter::Error,
        _ => log::LevelFilter::Off,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    static SEEN: Mutex<Vec<(u8, String)>> = Mutex::new(Vec::new());

    #[test]
    fn records_of_the_core_at_the_hosts_level_reach_the_sink() {
        forward_to(|level, message| SEEN.lock().unwrap().push((level, message)));
        set_host_level(Some(20));
        log::info!(target: "outrider::launch", "child {} finished", 1);
        log::debug!(target: "outrider::launch", "below the level");
        log::warn!(target: "other_crate", "not ours");
        log::info!(target: crate::trace::SPAN_TARGET, "a span line");
        set_host_level(Some(5));
        log::trace!(target: "outrider::tool", "now visible");
        set_host_level(Some(50));
        log::error!(target: "outrider::launch", "logging is off");
        set_host_level(None);
        log::info!(target: "outrider::launch", "below the default level");
        log::warn!(target: "outrider::launch", "a warning by default");
        let seen = std::mem::take(&mut *SEEN.lock().unwrap());
        assert_eq!(
            seen,
            vec![
                (20, "child 1 finished".to_string()),
                (5, "now visible".to_string()),
                (30, "a warning by default".to_string())
            ]
        );
    }

    #[test]
    fn levels_in_pythons_numbering() {
        let levels = [
            log::Level::Error,
            log::Level::Warn,
            log::Level::Info,
            log::Level::Debug,
            log::Level::Trace,
        ];
        let numbers: Vec<u8> = levels.iter().map(|l| host_level(*l)).collect();
        assert_eq!(numbers, [40, 30, 20, 10, 5]);
    }
}
