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

#[cfg(test)]
mod tests {
    use super::{count, plural};

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
