//! When to try a failed call again: exponential backoff with full jitter, and `Retry-After`.

use std::time::{Duration, SystemTime};

/// The first backoff delay; doubled per retry, capped at [`BACKOFF_CAP`].
const BACKOFF_BASE: Duration = Duration::from_millis(500);
/// The longest backoff delay drawn from.
const BACKOFF_CAP: Duration = Duration::from_secs(8);

/// The longest `Retry-After` honoured (the OpenAI SDK's): a provider asking for more ends the
/// call as rate limited instead of being waited on.
pub(crate) const RETRY_AFTER_CAP: Duration = Duration::from_secs(60);

/// Full jitter: a uniform draw from `[0, min(cap, base × 2^retry)]`, so that many children
/// throttled together do not retry in step.
pub(crate) fn backoff_delay(retry: u32) -> Duration {
    let ceiling = BACKOFF_BASE
        .saturating_mul(1u32 << retry.min(16))
        .min(BACKOFF_CAP);
    ceiling.mul_f64(fastrand::f64())
}

/// `Retry-After` as delta-seconds or an HTTP-date: the wait the provider asked for, uncapped
/// (the caller compares it with the time left before capping it at [`RETRY_AFTER_CAP`]).
pub(crate) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        if secs.is_nan() || secs < 0.0 {
            return None;
        }
        // `1e30` or `inf` seconds is "never": saturate instead of overflowing.
        return Some(Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX));
    }
    // An HTTP-date in the past means "now".
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        let now = UNIX_EPOCH + Duration::from_secs(784_111_770); // Sun, 06 Nov 1994 08:49:30 GMT
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("2", now), Some(Duration::from_secs(2)));
        assert_eq!(
            parse_retry_after("0.25", now),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            parse_retry_after("3600", now),
            Some(Duration::from_secs(3600))
        );
        assert_eq!(parse_retry_after("1e30", now), Some(Duration::MAX));
        assert_eq!(parse_retry_after("inf", now), Some(Duration::MAX));
        assert_eq!(parse_retry_after("NaN", now), None);
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-1", now), None);
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 25:49:37 GMT", now),
            None
        );
        assert_eq!(
            parse_retry_after("Mon, 07 Nov 1994 08:49:30 GMT", now),
            Some(Duration::from_secs(86_400))
        );
    }

    #[test]
    fn backoff_stays_under_its_ceiling() {
        for retry in 0..40 {
            let ceiling = (0.5 * 2f64.powi(retry.min(16) as i32)).min(8.0);
            let d = backoff_delay(retry).as_secs_f64();
            assert!((0.0..=ceiling).contains(&d), "retry {retry}: {d}");
        }
    }
}
