//! Builds the site `bulkq serve` hands to browsers from the frontend's wasm32 build:
//! `pkg/bulkq.js` and `pkg/bulkq.wasm` (wasm-bindgen's glue and module), `pkg/bulkq.css`
//! and the static assets, in a staging directory that then replaces the old site whole, so
//! a running server never sees half a site.
//!
//! Usage: `site-builder WASM OUT [--wasm-opt PATH]`, run from the workspace root by
//! `scripts/build.sh`. With `--wasm-opt`, the module is shrunk with `wasm-opt -Oz`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use wasm_bindgen_cli_support::Bindgen;

/// The bundle's name; the server's `site::OUTPUT_NAME` and `LEPTOS_OUTPUT_NAME` in
/// `.cargo/config.toml` say the same.
const OUTPUT_NAME: &str = "bulkq";
/// The stylesheet and the static assets, relative to the workspace root.
const STYLE_FILE: &str = "style/main.css";
const ASSETS_DIR: &str = "public";

struct Arguments {
    wasm: PathBuf,
    out: PathBuf,
    wasm_opt: Option<PathBuf>,
}

fn main() -> Result<()> {
    let arguments = parse_arguments(std::env::args().skip(1))?;
    let staging = sibling(&arguments.out, "new");
    if staging.exists() {
        fs::remove_dir_all(&staging).context("remove a staging site left by an earlier build")?;
    }
    let pkg = staging.join("pkg");
    generate_bindings(&arguments.wasm, &pkg)?;
    if let Some(wasm_opt) = &arguments.wasm_opt {
        shrink(wasm_opt, &pkg.join(format!("{OUTPUT_NAME}.wasm")))?;
    }
    fs::copy(STYLE_FILE, pkg.join(format!("{OUTPUT_NAME}.css")))
        .with_context(|| format!("copy {STYLE_FILE}"))?;
    copy_dir(Path::new(ASSETS_DIR), &staging)?;
    replace_dir(&staging, &arguments.out)
}

fn parse_arguments(mut arguments: impl Iterator<Item = String>) -> Result<Arguments> {
    let usage = "usage: site-builder WASM OUT [--wasm-opt PATH]";
    let wasm = arguments.next().context(usage)?.into();
    let out = arguments.next().context(usage)?.into();
    let wasm_opt = match (arguments.next().as_deref(), arguments.next()) {
        (None, _) => None,
        (Some("--wasm-opt"), Some(path)) => Some(path.into()),
        _ => bail!(usage),
    };
    Ok(Arguments {
        wasm,
        out,
        wasm_opt,
    })
}

/// wasm-bindgen for `--target web`: the glue loads the module from the path the page's
/// hydration script gives it, which leptos names `bulkq.wasm` (not wasm-bindgen's
/// `bulkq_bg.wasm`) when `LEPTOS_OUTPUT_NAME` is set at compile time.
fn generate_bindings(wasm: &Path, pkg: &Path) -> Result<()> {
    Bindgen::new()
        .input_path(wasm)
        .out_name(OUTPUT_NAME)
        .web(true)?
        .typescript(false)
        .generate(pkg)
        .with_context(|| format!("wasm-bindgen {}", wasm.display()))?;
    fs::rename(
        pkg.join(format!("{OUTPUT_NAME}_bg.wasm")),
        pkg.join(format!("{OUTPUT_NAME}.wasm")),
    )
    .context("rename the generated module")
}

fn shrink(wasm_opt: &Path, module: &Path) -> Result<()> {
    let status = Command::new(wasm_opt)
        .arg("-Oz")
        .arg(module)
        .arg("-o")
        .arg(module)
        .status()
        .with_context(|| format!("run {}", wasm_opt.display()))?;
    if !status.success() {
        bail!("{} failed: {status}", wasm_opt.display());
    }
    Ok(())
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from).with_context(|| format!("read {}", from.display()))? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            fs::copy(entry.path(), &target)
                .with_context(|| format!("copy {}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// Puts `staging` where `out` was with two renames, so the old site is whole until the new
/// one takes its place.
fn replace_dir(staging: &Path, out: &Path) -> Result<()> {
    let old = sibling(out, "old");
    if old.exists() {
        fs::remove_dir_all(&old)?;
    }
    if out.exists() {
        fs::rename(out, &old).with_context(|| format!("move {} aside", out.display()))?;
    }
    fs::rename(staging, out).with_context(|| format!("move the new site to {}", out.display()))?;
    if old.exists() {
        fs::remove_dir_all(&old)?;
    }
    Ok(())
}

/// `target/site` → `target/site.new` (or `.old`).
fn sibling(dir: &Path, suffix: &str) -> PathBuf {
    let mut name = dir.file_name().unwrap_or_default().to_os_string();
    name.push(".");
    name.push(suffix);
    dir.with_file_name(name)
}
