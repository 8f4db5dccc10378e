//! Log lines as an operator's collector reads them: with `--log-format json` one JSON object
//! a line, and no colour codes when not writing to a terminal.

use crate::nodes::{ScratchDir, bulkq};

#[tokio::test]
async fn json_logs_are_one_object_a_line_and_text_logs_have_no_colour_in_a_pipe() {
    let scratch = ScratchDir::new();
    // Each run migrates a new database, which logs at `info`.
    let url = |name: &str| format!("sqlite://{}?mode=rwc", scratch.path(name).display());
    let (json_url, text_url) = (url("json.db"), url("text.db"));
    let logged = |url| ["--log-level", "info", "--database-url", url];

    let (ok, said) =
        bulkq(&[&["--log-format", "json", "migrate"][..], &logged(&json_url)].concat()).await;
    assert!(ok, "{said}");
    let objects: Vec<serde_json::Value> = said
        .lines()
        .filter(|line| line.starts_with('{'))
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    assert!(!objects.is_empty(), "the migrations are logged: {said}");
    for object in &objects {
        assert!(
            object["level"].is_string() && object["fields"].is_object(),
            "a log object has a level and fields: {object}"
        );
    }
    assert!(!said.contains('\u{1b}'), "no colour codes: {said:?}");

    let (ok, said) = bulkq(&[&["migrate"][..], &logged(&text_url)].concat()).await;
    assert!(ok && said.contains("INFO"), "{said}");
    assert!(
        !said.contains('\u{1b}'),
        "no colour codes in a pipe: {said:?}"
    );
}
