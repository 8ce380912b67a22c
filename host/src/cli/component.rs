//! `check` and `availability` on a single `.wasm` component: load it in the
//! sandbox, call `manifest()`, and hand the value to the one validator.

use crate::declaration::OsFamily;
use crate::plugin::{HostConfig, LoadedPlugin, PluginHost};
use std::path::Path;

/// Loads one component file for `os`. Errors: the engine cannot start, or
/// the file fails to load (not a component, other contract version, trap,
/// limit hit) — the text names the file and the reason.
pub fn load_one(path: &Path, os: OsFamily) -> Result<LoadedPlugin, String> {
    let host = PluginHost::new(HostConfig {
        os,
        ..HostConfig::default()
    })
    .map_err(|e| format!("wasmgate: cannot start the component engine: {e:#}"))?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    host.load_file(path, &dir).map_err(|e| e.to_string())
}

/// `wasmgate check PATH`: a `.wasm` component, else a `plugin.yaml` /
/// `plugin.json` (see [`super::check::run_check`]). Exit 0 valid, 1 invalid, 2 usage.
pub fn run_check_any(path: &Path, json: bool) -> i32 {
    let is_wasm = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("wasm"));
    if !is_wasm {
        return super::check::run_check(path, json);
    }
    if !path.is_file() {
        eprintln!("wasmgate check: {}: no such file", path.display());
        return super::check::EXIT_USAGE;
    }
    match load_one(path, OsFamily::current()) {
        Ok(p) => super::check::check_component_value(
            &p.manifest,
            &path.display().to_string(),
            &p.dir,
            json,
        ),
        Err(e) => {
            eprintln!("{e}");
            super::check::EXIT_INVALID
        }
    }
}

/// `wasmgate availability PATH [--host DIR]`: loads a `plugin.yaml`,
/// `plugin.json` or `.wasm` component and evaluates each server's
/// declaration on this machine or the simulated host in `host_dir`
/// (`spec/simulated-host.md`, "Output of `wasmgate availability`").
/// Exit 0 evaluated, 1 invalid input, 2 usage.
pub fn run_availability_any(path: &Path, host_dir: Option<&Path>, json: bool) -> i32 {
    use crate::manifest::{ManifestContext, load_plugin_json, load_plugin_yaml, manifest_from_value};
    use super::availability::{EXIT_INVALID, EXIT_USAGE, run_availability_for};
    if !path.is_file() {
        eprintln!("wasmgate availability: {}: no such file", path.display());
        return EXIT_USAGE;
    }
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let res = match ext.as_deref() {
        Some("yaml" | "yml") => load_plugin_yaml(path),
        Some("json") => load_plugin_json(path),
        Some("wasm") => {
            // The component reports the OS family being evaluated.
            let os = match host_dir.map(|d| super::availability::open_platform(Some(d))) {
                Some(Ok(p)) => p.os_family(),
                Some(Err(e)) => {
                    eprintln!("{e}");
                    return EXIT_INVALID;
                }
                None => OsFamily::current(),
            };
            match load_one(path, os) {
                Ok(p) => {
                    let mut ctx = ManifestContext::new(path.display().to_string(), &p.dir);
                    ctx.allow_custom_version = true;
                    manifest_from_value(&p.manifest, &ctx)
                }
                Err(e) => {
                    eprintln!("{e}");
                    return EXIT_INVALID;
                }
            }
        }
        _ => {
            eprintln!(
                "wasmgate availability: {}: expected a plugin.yaml, plugin.json or .wasm component",
                path.display()
            );
            return EXIT_USAGE;
        }
    };
    let errors: Vec<String> = res.errors.iter().map(ToString::to_string).collect();
    let servers: Vec<(String, crate::declaration::Declaration)> = res
        .manifest
        .iter()
        .flat_map(|m| &m.servers)
        .map(|s| {
            // A server without a declaration evaluates as no_requirements.
            let decl = s.declaration.clone().unwrap_or_else(|| crate::declaration::Declaration {
                name: s.name.clone(),
                app: None,
                requires: Default::default(),
            });
            (s.name.clone(), decl)
        })
        .collect();
    let errors = if res.manifest.is_none() && errors.is_empty() {
        vec![format!("{}: not a valid manifest", path.display())]
    } else {
        errors
    };
    run_availability_for(
        &servers,
        &errors,
        host_dir,
        json,
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    )
}
