//! What a new password must be, after NIST SP 800-63B: long enough, not absurdly long, not
//! one of the passwords attackers try first, not the username; no composition rules
//! (ADR 0068).

use std::collections::HashSet;
use std::sync::OnceLock;

use crate::CaseloadError;

/// The shortest password accepted: NIST's minimum where a password is the only factor.
pub const MIN_PASSWORD_LEN: usize = 15;
/// The longest password accepted; long passphrases are welcome, megabytes to hash are not.
pub const MAX_PASSWORD_LEN: usize = 256;

/// The 30,000 most common passwords, lower-cased, one a line, most common first (zxcvbn's
/// frequency list of leaked passwords).
const COMMON_PASSWORDS: &str = include_str!("common_passwords.txt");
/// A common password padded with digits or symbols to reach the length is still refused;
/// shorter words inside are not worth an attacker's guess.
const MIN_COMMON_CORE_LEN: usize = 4;

/// Why `password` may not be `username`'s new password, if it may not.
pub fn check(password: &str, username: &str) -> Result<(), CaseloadError> {
    let length = password.chars().count();
    let lowered = password.to_lowercase();
    let problem = if length < MIN_PASSWORD_LEN {
        format!("a password must have at least {MIN_PASSWORD_LEN} characters")
    } else if length > MAX_PASSWORD_LEN {
        format!("a password must have at most {MAX_PASSWORD_LEN} characters")
    } else if username.trim().chars().count() >= MIN_COMMON_CORE_LEN
        && lowered.contains(&username.trim().to_lowercase())
    {
        "a password may not contain the username".to_owned()
    } else if is_common_or_padded(&lowered) {
        "that password is a common one (perhaps with digits or symbols added); choose another"
            .to_owned()
    } else if password
        .chars()
        .all(|c| c == password.chars().next().unwrap_or(c))
    {
        "a password may not repeat one character".to_owned()
    } else {
        return Ok(());
    };
    Err(CaseloadError::Invalid(problem))
}

/// Whether the lower-cased `password` is on the common list, alone or between digits and
/// symbols.
fn is_common_or_padded(lowered: &str) -> bool {
    static COMMON: OnceLock<HashSet<&'static str>> = OnceLock::new();
    let common = COMMON.get_or_init(|| COMMON_PASSWORDS.lines().collect());
    let core = lowered.trim_matches(|c: char| !c.is_alphabetic());
    common.contains(lowered)
        || (core.chars().count() >= MIN_COMMON_CORE_LEN && common.contains(core))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(password: &str) -> String {
        match check(password, "robin") {
            Err(CaseloadError::Invalid(message)) => message,
            other => panic!("{password:?} was not refused: {other:?}"),
        }
    }

    #[test]
    fn length_counts_and_composition_does_not() {
        assert!(check("correct horse battery", "kim").is_ok());
        assert!(check("all lower case words here", "kim").is_ok());
        assert!(
            check(
                &"é".repeat(14).chars().chain(['x']).collect::<String>(),
                "kim"
            )
            .is_ok()
        );
        assert!(refused("short one").contains("at least 15"));
        assert!(refused(&"ab".repeat(129)).contains("at most 256"));
    }

    #[test]
    fn common_passwords_and_the_username_are_refused() {
        assert!(refused("1qaz2wsx3edc4rfv").contains("common"));
        assert!(refused("PASSWORD1234567").contains("common"));
        assert!(refused("2026!!iloveyou!!").contains("common"));
        assert!(refused("my name is ROBIN, really").contains("username"));
        assert!(refused("aaaaaaaaaaaaaaaa").contains("repeat"));
    }

    #[test]
    fn the_common_list_is_lower_case_and_long_enough_to_matter() {
        let lines: Vec<&str> = COMMON_PASSWORDS.lines().collect();
        assert!(lines.len() > 10_000);
        assert!(lines.iter().all(|line| *line == line.to_lowercase()));
        assert!(is_common_or_padded("password1"));
        assert!(!is_common_or_padded("correct horse battery"));
    }
}
