//! `check` and `availability` on a single `.wasm` component: load it in the
//! sandbox, call `manifest()`, and hand the value to the one validator.

use crate::declaration::OsFamily;
use crate::plugin::{SandboxConfig, LoadedPlugin, PluginRuntime};
use std::path::Path;

/// Loads one component file for `os`, through the compile cache of
/// `status` (`WASMGATE_CACHE`, else the user's cache folder), so an author
/// re-checking an unchanged component does not compile it again. Errors:
/// the engine cannot start, or the file fails to load (not a component,
/// other contract version, trap, limit hit) — the text names the file and
/// the reason.
pub fn load_one(path: &Path, os: OsFamily) -> Result<LoadedPlugin, String> {
    let host = PluginRuntime::new(SandboxConfig {
        os,
        cache_dir: super::default_cache_dir(),
        ..SandboxConfig::default()
    })
    .map_err(|e| format!("wasmgate: cannot start the component engine: {e:#}"))?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    host.load_file(path, &dir).map_err(|e| e.to_string())
}

/// `wasmgate check PATH`: a `.wasm` component, else a `plugin.yaml` /
/// `plugin.json` (see [`super::check::run_check`]). `config_servers` are
/// the config file's server names (a skill may require them). Exit 0
/// valid, 1 invalid, 2 usage.
pub fn run_check_any(path: &Path, json: bool, config_servers: Vec<String>) -> i32 {
    use super::check::{CheckContext, EXIT_INVALID, EXIT_USAGE, fail, report};
    let is_wasm = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("wasm"));
    if !is_wasm {
        return super::check::run_check(path, json, config_servers);
    }
    let where_ = path.display().to_string();
    if !path.is_file() {
        let msg = format!("wasmgate check: {where_}: no such file");
        return fail(&where_, &msg, json, EXIT_USAGE);
    }
    match component_manifest(path, OsFamily::current()) {
        Ok(r) => report(r, &CheckContext::for_file(path, config_servers), json),
        Err(e) => fail(&where_, &e, json, EXIT_INVALID),
    }
}

/// The validated manifest of one component file, evaluated for `os`
/// (`version.kind: custom` allowed). Errors: the load failure, naming the file.
pub fn component_manifest(
    path: &Path,
    os: OsFamily,
) -> Result<crate::manifest::ManifestResult, String> {
    let p = load_one(path, os)?;
    // A component is a plugin: no host environment unless granted (and
    // `check` / `availability` grant nothing).
    let mut ctx = crate::manifest::ManifestContext::for_plugin(
        path.display().to_string(),
        &p.dir,
        std::sync::Arc::default(),
    );
    ctx.allow_custom_version = true;
    Ok(crate::manifest::manifest_from_value(&p.manifest, &ctx))
}
