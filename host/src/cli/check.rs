//! `wasmgate check <plugin.yaml | plugin.json> [--json]` — validates a
//! manifest and reports **every** problem at once (`docs/declarations.md`
//! §2, §2a): one line per error on stderr, `<where>: <field path> <what>`,
//! where `where` names the server (`plugin.yaml server 'git'`). A valid
//! manifest is printed normalized on stdout (YAML, or JSON with `--json`).
//!
//! Exit codes: 0 valid, 1 invalid, 2 usage (unknown file type, unreadable path).

use crate::manifest::output::manifest_out;
use crate::manifest::{ManifestResult, load_plugin_json, load_plugin_yaml};
use std::io::Write;
use std::path::Path;

/// Exit code: the manifest is valid.
pub const EXIT_VALID: i32 = 0;
/// Exit code: the manifest has at least one error.
pub const EXIT_INVALID: i32 = 1;
/// Exit code: the command was used wrongly (file type, missing file).
pub const EXIT_USAGE: i32 = 2;

/// Runs `wasmgate check PATH [--json]` for a `.yaml` / `.yml` (plugin.yaml)
/// or `.json` (Hermes plugin.json) file. Returns the exit code. A `.wasm`
/// component goes through [`super::component::run_check_any`].
pub fn run_check(path: &Path, json: bool) -> i32 {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    if !path.is_file() {
        let what = if path.is_dir() {
            "is a folder; give the plugin.yaml, plugin.json or .wasm file"
        } else {
            "no such file"
        };
        let _ = writeln!(
            std::io::stderr(),
            "wasmgate check: {}: {what}",
            path.display()
        );
        return EXIT_USAGE;
    }
    let res = match ext.as_deref() {
        Some("yaml" | "yml") => load_plugin_yaml(path),
        Some("json") => load_plugin_json(path),
        _ => {
            let _ = writeln!(
                std::io::stderr(),
                "wasmgate check: {}: expected a plugin.yaml (.yaml/.yml) or plugin.json (.json) file",
                path.display()
            );
            return EXIT_USAGE;
        }
    };
    report(&res, json)
}

/// Prints a result as `check` does and returns the exit code.
pub fn report(res: &ManifestResult, json: bool) -> i32 {
    let mut err = std::io::stderr().lock();
    for w in &res.warnings {
        let _ = writeln!(err, "warning: {w}");
    }
    if !res.errors.is_empty() || res.manifest.is_none() {
        for e in &res.errors {
            let _ = writeln!(err, "{e}");
        }
        return EXIT_INVALID;
    }
    let Some(m) = &res.manifest else {
        return EXIT_INVALID;
    };
    let doc = manifest_out(m);
    let text = if json {
        serde_json::to_string_pretty(&doc).unwrap_or_default()
    } else {
        yaml_serde::to_string(&doc).unwrap_or_default()
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", text.trim_end());
    EXIT_VALID
}
