//! Formatting numbers and codes for people to read.

pub use bulkq_types::words::{count, plural};

/// Bytes in the largest unit that keeps a number ≥ 1: `1536` → `"1.5 KB"`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["bytes", "KB", "MB", "GB", "TB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} bytes")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// Seconds as people say them: `42 s`, `3 min`, `2 h 5 min`, `3 d 4 h`.
pub fn duration(seconds: i64) -> String {
    let s = seconds.max(0);
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min", s / 60),
        3600..86400 => format!("{} h {} min", s / 3600, s % 3600 / 60),
        _ => format!("{} d {} h", s / 86400, s % 86400 / 3600),
    }
}

/// Time left, to the second under an hour: `42 s`, `3 min 5 s`, else as [`duration`].
pub fn countdown(seconds: i64) -> String {
    match seconds.max(0) {
        s @ 60..3600 => format!("{} min {} s", s / 60, s % 60),
        s => duration(s),
    }
}

/// An RFC 3339 UTC time to the minute: `2026-11-21T18:05:09.123+00:00` → `2026-11-21 18:05 UTC`.
pub fn minute(rfc3339: &str) -> String {
    cut_time(rfc3339, 16)
}

/// An RFC 3339 UTC time to the second: `… 18:05:09 UTC`.
pub fn second(rfc3339: &str) -> String {
    cut_time(rfc3339, 19)
}

fn cut_time(rfc3339: &str, end: usize) -> String {
    match (rfc3339.get(..10), rfc3339.get(11..end)) {
        (Some(date), Some(time)) => format!("{date} {time} UTC"),
        _ => rfc3339.to_owned(),
    }
}

/// A running task's pace and what is left at that pace: `1,250 people/s · about 2 min
/// left`. `None` until there is a pace to speak of (nothing done yet, or under a second in).
pub fn pace(done: i64, total: Option<i64>, elapsed_seconds: f64) -> Option<String> {
    if done <= 0 || elapsed_seconds < 1.0 {
        return None;
    }
    let per_second = done as f64 / elapsed_seconds;
    let rate = if per_second >= 10.0 {
        format!("{} people/s", count(per_second.round() as u64))
    } else {
        format!("{per_second:.1} people/s")
    };
    Some(match total {
        Some(total) if total > done => {
            let left = ((total - done) as f64 / per_second).ceil() as i64;
            format!("{rate} · about {} left", duration(left))
        }
        _ => rate,
    })
}

#[cfg(test)]
mod tests {
    use super::{bytes, countdown, minute, second};

    #[test]
    fn pace_says_the_rate_and_the_time_left() {
        assert_eq!(
            super::pace(5_000, Some(20_000), 4.0).as_deref(),
            Some("1,250 people/s · about 12 s left")
        );
        assert_eq!(
            super::pace(3, Some(100), 2.0).as_deref(),
            Some("1.5 people/s · about 1 min left")
        );
        assert_eq!(super::pace(10, None, 1.0).as_deref(), Some("10 people/s"));
        assert_eq!(super::pace(0, Some(10), 30.0), None);
        assert_eq!(super::pace(10, Some(10), 0.5), None);
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(super::duration(42), "42 s");
        assert_eq!(super::duration(185), "3 min");
        assert_eq!(super::duration(7500), "2 h 5 min");
        assert_eq!(super::duration(273_600), "3 d 4 h");
        assert_eq!(super::duration(-5), "0 s");
    }

    #[test]
    fn times_are_cut_to_the_minute_or_second() {
        assert_eq!(
            minute("2026-11-21T18:05:09.123+00:00"),
            "2026-11-21 18:05 UTC"
        );
        assert_eq!(
            second("2026-11-21T18:05:09.123+00:00"),
            "2026-11-21 18:05:09 UTC"
        );
        assert_eq!(minute("garbage"), "garbage");
    }

    #[test]
    fn countdowns_tick_by_the_second_under_an_hour() {
        assert_eq!(countdown(42), "42 s");
        assert_eq!(countdown(185), "3 min 5 s");
        assert_eq!(countdown(7200), "2 h 0 min");
    }

    #[test]
    fn sizes_use_the_largest_fitting_unit() {
        assert_eq!(bytes(0), "0 bytes");
        assert_eq!(bytes(1023), "1023 bytes");
        assert_eq!(bytes(1536), "1.5 KB");
        assert_eq!(bytes(160 * 1024 * 1024), "160.0 MB");
    }
}
