//! Numbers and user text as people read them in a sentence, the same in the browser's
//! lists and the server's summaries.

use crate::state::TaskStatus;

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

/// The most characters of user text a one-line summary quotes.
pub const QUOTE_MAX_CHARS: usize = 60;

/// User text quoted on one line: `'Hello'`, its whitespace runs as one space, cut at
/// [`QUOTE_MAX_CHARS`] with an ellipsis.
pub fn quoted(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let line = words.join(" ");
    let mut chars = line.chars();
    let shown: String = chars.by_ref().take(QUOTE_MAX_CHARS).collect();
    let ellipsis = if chars.next().is_some() { "…" } else { "" };
    format!("'{shown}{ellipsis}'")
}

/// A task's progress in words: `"1,200 of 5,000 done"`, or `"Stopped after 1,200 of 5,000"`
/// once it was cancelled; empty before anything is done or counted.
pub fn progress_words(status: TaskStatus, done: i64, total: Option<i64>) -> String {
    let done = count(done.max(0) as u64);
    let stopped = status == TaskStatus::Abandoned;
    match total.map(|total| count(total.max(0) as u64)) {
        Some(total) if stopped => format!("Stopped after {done} of {total}"),
        Some(total) => format!("{done} of {total} done"),
        None if done == "0" => String::new(),
        None if stopped => format!("Stopped after {done}"),
        None => format!("{done} done"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_says_where_a_cancelled_task_stopped() {
        let words = |status, done, total| progress_words(status, done, total);
        assert_eq!(
            words(TaskStatus::Executing, 1200, Some(5000)),
            "1,200 of 5,000 done"
        );
        assert_eq!(
            words(TaskStatus::Abandoned, 1200, Some(5000)),
            "Stopped after 1,200 of 5,000"
        );
        assert_eq!(words(TaskStatus::Abandoned, 40, None), "Stopped after 40");
        assert_eq!(words(TaskStatus::Executing, 40, None), "40 done");
        assert_eq!(words(TaskStatus::Queued, 0, None), "");
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

    #[test]
    fn quotes_fit_one_line() {
        assert_eq!(quoted("Hello"), "'Hello'");
        assert_eq!(quoted("  Term\n\tdates  "), "'Term dates'");
        let long = "é".repeat(QUOTE_MAX_CHARS + 1);
        assert_eq!(quoted(&long), format!("'{}…'", "é".repeat(QUOTE_MAX_CHARS)));
        assert_eq!(
            quoted(&long[..2 * QUOTE_MAX_CHARS]),
            format!("'{}'", "é".repeat(QUOTE_MAX_CHARS))
        );
    }
}
