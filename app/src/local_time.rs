//! Times in the browser's own time zone. Tasks are scheduled and stored in UTC; people pick
//! and read times in their local time, which only the browser knows, so these run there (in
//! event handlers and effects; the server renders UTC until the page hydrates).

use chrono::{DateTime, Duration, NaiveDateTime, Utc};
use leptos::wasm_bindgen::JsValue;
use leptos::web_sys::js_sys::Date;

/// The browser's clock.
pub fn now() -> DateTime<Utc> {
    DateTime::from_timestamp_millis(Date::now() as i64).unwrap_or_default()
}

/// A `datetime-local` input's value (`2026-11-25T14:30`, local time) as UTC; `None` when it
/// is empty or not a time.
pub fn from_local_input(value: &str) -> Option<DateTime<Utc>> {
    NaiveDateTime::parse_from_str(value, "%Y-%m-%dT%H:%M").ok()?;
    // Date parses a date-time without an offset as local time, daylight saving included.
    let millis = Date::new(&JsValue::from_str(value)).get_time();
    if millis.is_nan() {
        return None;
    }
    DateTime::from_timestamp_millis(millis as i64)
}

/// `at` in local time to the minute: `2026-11-25 15:30`.
pub fn local_minute(at: DateTime<Utc>) -> String {
    let offset_minutes =
        Date::new(&JsValue::from_f64(at.timestamp_millis() as f64)).get_timezone_offset();
    let local = at.naive_utc() - Duration::minutes(offset_minutes as i64);
    local.format("%Y-%m-%d %H:%M").to_string()
}
