//! Light or dark: the system's choice (`prefers-color-scheme`) unless the person picked one
//! with the top bar's toggle. The pick is a cookie, so the server renders `<html
//! data-theme>` with it and no page ever flashes the other theme; the stylesheet does the
//! rest (`light-dark()` colours under `color-scheme`).

/// The cookie that remembers the pick.
pub const COOKIE: &str = "bulkq_theme";

/// How long the pick is remembered: a year, renewed at every change.
const REMEMBER_SECONDS: u32 = 365 * 24 * 3600;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Theme {
    System,
    Light,
    Dark,
}

impl Theme {
    /// The value of `<html data-theme>`; none follows the system.
    pub fn attribute(self) -> Option<&'static str> {
        match self {
            Self::System => None,
            Self::Light => Some("light"),
            Self::Dark => Some("dark"),
        }
    }

    fn from_attribute(value: &str) -> Self {
        match value {
            "light" => Self::Light,
            "dark" => Self::Dark,
            _ => Self::System,
        }
    }

    /// The pick in a `Cookie` header's value.
    pub fn from_cookie_header(header: &str) -> Self {
        header
            .split(';')
            .filter_map(|pair| pair.trim().split_once('='))
            .find(|(name, _)| *name == COOKIE)
            .map_or(Self::System, |(_, value)| Self::from_attribute(value))
    }

    /// The toggle's next pick: system, light, dark, and round again.
    pub fn next(self) -> Self {
        match self {
            Self::System => Self::Light,
            Self::Light => Self::Dark,
            Self::Dark => Self::System,
        }
    }

    /// The toggle's words.
    pub fn label(self) -> &'static str {
        match self {
            Self::System => "Theme: system",
            Self::Light => "Theme: light",
            Self::Dark => "Theme: dark",
        }
    }

    /// The `Set-Cookie`-style text `document.cookie` takes to remember this pick.
    pub fn cookie(self) -> String {
        match self.attribute() {
            Some(value) => {
                format!("{COOKIE}={value}; Path=/; Max-Age={REMEMBER_SECONDS}; SameSite=Lax")
            }
            None => format!("{COOKIE}=; Path=/; Max-Age=0; SameSite=Lax"),
        }
    }
}

/// The pick this page is rendered with: from the request's cookie on the server, from
/// `<html data-theme>` (which the server set) in the browser.
pub fn current() -> Theme {
    #[cfg(feature = "ssr")]
    {
        use leptos::prelude::use_context;
        use_context::<http::request::Parts>()
            .and_then(|parts| {
                let header = parts.headers.get(http::header::COOKIE)?.to_str().ok()?;
                Some(Theme::from_cookie_header(header))
            })
            .unwrap_or(Theme::System)
    }
    #[cfg(all(feature = "hydrate", not(feature = "ssr")))]
    {
        leptos::prelude::document()
            .document_element()
            .and_then(|html| html.get_attribute("data-theme"))
            .map_or(Theme::System, |value| Theme::from_attribute(&value))
    }
    #[cfg(not(any(feature = "ssr", feature = "hydrate")))]
    Theme::System
}

/// Shows `theme` at once and remembers it for the next pages.
pub fn apply(theme: Theme) {
    #[cfg(feature = "hydrate")]
    {
        use web_sys::wasm_bindgen::JsCast;
        let document = leptos::prelude::document();
        if let Some(html) = document.document_element() {
            let _ = match theme.attribute() {
                Some(value) => html.set_attribute("data-theme", value),
                None => html.remove_attribute("data-theme"),
            };
        }
        if let Ok(document) = document.dyn_into::<web_sys::HtmlDocument>() {
            let _ = document.set_cookie(&theme.cookie());
        }
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = theme;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cookie_names_the_pick_among_others() {
        assert_eq!(
            Theme::from_cookie_header("id=abc; bulkq_theme=dark; x=y"),
            Theme::Dark
        );
        assert_eq!(Theme::from_cookie_header("bulkq_theme=light"), Theme::Light);
        assert_eq!(Theme::from_cookie_header("bulkq_theme=pink"), Theme::System);
        assert_eq!(Theme::from_cookie_header(""), Theme::System);
    }

    #[test]
    fn the_toggle_goes_round_and_forgets_at_system() {
        assert_eq!(Theme::System.next().next().next(), Theme::System);
        assert!(Theme::Dark.cookie().starts_with("bulkq_theme=dark;"));
        assert!(Theme::System.cookie().contains("Max-Age=0"));
    }
}
