//! Formatting numbers and codes for people to read.

/// `10000` → `"10,000"`.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut grouped = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped
}

/// `1, "task", "tasks"` → `"1 task"`; `2500, …` → `"2,500 tasks"`.
pub fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", count(n), if n == 1 { one } else { many })
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

#[cfg(test)]
mod tests {
    use super::{count, minute, plural, second};

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
    fn picks_the_noun_form() {
        assert_eq!(plural(1, "task", "tasks"), "1 task");
        assert_eq!(plural(0, "task", "tasks"), "0 tasks");
        assert_eq!(plural(2500, "task", "tasks"), "2,500 tasks");
    }

    #[test]
    fn groups_thousands() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1,000");
        assert_eq!(count(1_000_000), "1,000,000");
        assert_eq!(count(12_345_678), "12,345,678");
    }
}
