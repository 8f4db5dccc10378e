//! The rule every piece of user text obeys before it is stored, searched for or mailed: no
//! control characters. PostgreSQL cannot store NUL at all (so it would fail there and pass on
//! SQLite), and the other controls have no business in a name, a search, a subject or a cc.

/// How much whitespace a field may hold beyond spaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lines {
    /// One line: no control character at all (names, searches, subjects, addresses).
    One,
    /// Free text: tabs and line breaks are allowed (message bodies, reasons).
    Many,
}

/// The problem with `text`'s characters, if any, as a message that names the first bad one.
pub fn control_character_problem(text: &str, lines: Lines) -> Option<String> {
    let bad = text
        .chars()
        .find(|&c| c.is_control() && !(lines == Lines::Many && matches!(c, '\t' | '\n' | '\r')))?;
    Some(format!(
        "must not contain control characters (found U+{:04X})",
        u32::from(bad)
    ))
}

/// `text` with LIKE's wildcards (`%`, `_`) and the escape character `\\` escaped by `\\`, so
/// user input in a pattern (`LIKE … ESCAPE '\\'`) matches literally.
pub fn escape_like(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_in_user_input_match_literally() {
        assert_eq!(escape_like("50%_a\\b"), "50\\%\\_a\\\\b");
        assert_eq!(escape_like("o'brien"), "o'brien");
    }

    #[test]
    fn nul_and_other_controls_are_named() {
        assert_eq!(
            control_character_problem("a\0b", Lines::Many).as_deref(),
            Some("must not contain control characters (found U+0000)")
        );
        assert!(control_character_problem("a\u{1b}[2J", Lines::Many).is_some());
        assert!(control_character_problem("a\u{85}", Lines::Many).is_some());
    }

    #[test]
    fn line_breaks_only_where_text_spans_lines() {
        assert!(control_character_problem("Dear all,\r\n\tsee you", Lines::Many).is_none());
        assert!(control_character_problem("one\nline", Lines::One).is_some());
        assert!(control_character_problem("Ünïcödé naïve café 名前", Lines::One).is_none());
    }
}
