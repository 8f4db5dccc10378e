//! Where the built site (WASM, JS, CSS, favicon) is, and the Leptos options that point at it.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use leptos::config::LeptosOptions;

/// The bundle name: `pkg/bulkq.js`, `pkg/bulkq.wasm`, `pkg/bulkq.css`. Must match
/// `output-name` in the workspace metadata and `LEPTOS_OUTPUT_NAME` in `.cargo/config.toml`.
pub const OUTPUT_NAME: &str = "bulkq";

/// The site root: the flag/env value, else `site/` beside the binary's build directory
/// (cargo-leptos puts the binary in `target/<profile>/` and the site in `target/site/`), else
/// `target/site` under the working directory.
pub fn site_root(configured: Option<&Path>) -> PathBuf {
    if let Some(path) = configured {
        return path.to_path_buf();
    }
    let beside_binary = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("site")));
    match beside_binary {
        Some(path) if path.join("pkg").is_dir() => path,
        _ => PathBuf::from("target/site"),
    }
}

/// Leptos options for serving the site from `site_root` on `listen`.
pub fn leptos_options(site_root: &Path, listen: SocketAddr) -> LeptosOptions {
    LeptosOptions::builder()
        .output_name(OUTPUT_NAME)
        .site_root(site_root.to_string_lossy().into_owned())
        .site_pkg_dir("pkg")
        .site_addr(listen)
        .build()
}
