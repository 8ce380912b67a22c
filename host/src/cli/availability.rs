//! `wasmgate availability PATH [--host DIR] [--json]`: evaluates every
//! server's declaration of a plugin on this machine or on a simulated host
//! (`docs/simulated-host.md`, "Output of `wasmgate availability`").
//!
//! With `--json`: one JSON array, one object per server in manifest order:
//! `{"server", "state", "offerable", "version", "path", "min_version",
//! "message"}` (`message` is the user-facing sentence when not offerable, else
//! null). Exit status: 0 when it evaluated (whatever the states), 1 when the
//! input (plugin file or host folder) is invalid — errors on stderr as
//! `<where>: <field path> …` — and 2 for usage errors.

use crate::availability::{Availability, availability, message};
use crate::declaration::Declaration;
use crate::host::AvailabilityLine;
use crate::platform::{Platform, RealPlatform, SimulatedHost};
use serde::Serialize;
use std::io::Write;
use std::path::Path;

/// Exit code: evaluated.
pub const EXIT_OK: i32 = 0;
/// Exit code: the plugin file or the host folder is invalid.
pub const EXIT_INVALID: i32 = 1;
/// Exit code: the command was used wrongly (missing file, unknown type).
pub const EXIT_USAGE: i32 = 2;

/// One server's line of the output: its name, then the fields `status`
/// prints for it (field order is the output's order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerAvailability {
    /// The configured server name.
    pub server: String,
    /// State, offerable, version, path, `min_version`, sentence.
    #[serde(flatten)]
    pub line: AvailabilityLine,
}

/// Evaluates each `(server name, declaration)` on `platform`, in order,
/// with the component whose `probe_version` reads `version.kind: custom`
/// (as `status` does). A probe that fails is told on
/// stderr and reads as no version, as in `status`.
pub fn evaluate_servers_with(
    servers: &[(String, Declaration)],
    platform: &dyn Platform,
    component: Option<&crate::testing::TestPlugin>,
) -> Vec<ServerAvailability> {
    servers
        .iter()
        .map(|(name, decl)| {
            let a: Availability = match component.map(|c| c.availability(name, platform)) {
                Some(Ok(a)) => a,
                Some(Err(e)) => {
                    eprintln!("warning: {e}");
                    availability(decl, platform)
                }
                None => availability(decl, platform),
            };
            ServerAvailability {
                server: name.clone(),
                line: AvailabilityLine::new(&a, message(decl, &a)),
            }
        })
        .collect()
}

/// Renders results: a JSON array (`json`), or one line per server followed
/// by its sentence when not offerable.
pub fn render(results: &[ServerAvailability], json: bool) -> String {
    if json {
        let mut s = crate::terminal::json_text(serde_json::to_string(results).unwrap_or_else(|_| "[]".into()));
        s.push('\n');
        return s;
    }
    let mut out = String::new();
    // Names, paths and versions come from plugin files and from the
    // machine (an installer writes its DisplayVersion): escaped as
    // `status` escapes them, so none can drive the terminal or forge a line.
    use crate::terminal::line as esc;
    for ServerAvailability { server, line: r } in results {
        out.push_str(&format!("{}: {}", esc(server), r.state));
        if let Some(v) = &r.version {
            out.push_str(&format!(", version {}", esc(v)));
        }
        if let Some(p) = &r.path {
            out.push_str(&format!(", path {}", esc(p)));
        }
        if let Some(m) = &r.min_version {
            out.push_str(&format!(", min_version {}", esc(m)));
        }
        out.push('\n');
        if let Some(m) = &r.message {
            out.push_str(&format!("  {}\n", esc(m)));
        }
    }
    out
}

/// Opens the platform to evaluate on: the simulated host in `host_dir`, or
/// this machine. A bad host folder is an error naming `host.yaml` and the field.
pub fn open_platform(host_dir: Option<&Path>) -> Result<Box<dyn Platform>, String> {
    match host_dir {
        None => Ok(Box::new(RealPlatform::new())),
        Some(dir) => SimulatedHost::load(dir)
            .map(|h| Box::new(h) as Box<dyn Platform>)
            .map_err(|e| e.to_string()),
    }
}

/// Runs the command for declarations already loaded (manifest order) and
/// writes to `out` / `err`; returns the exit code. `load_errors` are the
/// manifest's errors (`<where>: <field path> …`): when any, they are printed
/// and the exit code is 1 without evaluating.
/// With `component` (the `.wasm` file the declarations came from), a server
/// whose declaration reads its version with `custom` gets the component's
/// `probe_version`, as in `status`.
pub fn run_availability_of(
    servers: &[(String, Declaration)],
    load_errors: &[String],
    host_dir: Option<&Path>,
    component: Option<&Path>,
    json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    if !load_errors.is_empty() {
        for e in crate::terminal::listed(load_errors, " (`wasmgate check --json` lists all)") {
            let _ = writeln!(err, "{}", crate::terminal::line(&e));
        }
        return EXIT_INVALID;
    }
    if let Some(dir) = host_dir
        && !dir.is_dir()
    {
        let _ = writeln!(
            err,
            "wasmgate availability: --host {}: no such folder",
            dir.display()
        );
        return EXIT_USAGE;
    }
    let platform = match open_platform(host_dir) {
        Ok(p) => p,
        Err(e) => {
            let _ = writeln!(err, "{}", crate::terminal::line(&e.to_string()));
            return EXIT_INVALID;
        }
    };
    // A component whose declaration for this OS reads its version with
    // `custom` is loaded again for that OS, so its probe can run.
    let os = platform.os_family();
    let custom = servers.iter().any(|(_, d)| {
        d.app_for(os)
            .is_some_and(|a| a.version_kind == crate::declaration::VersionKind::Custom)
    });
    let component = match component {
        Some(path) if custom => {
            match crate::testing::TestPlugin::load_cached(path, os, super::default_cache_dir()) {
                Ok(c) => Some(c),
                Err(e) => {
                    let _ = writeln!(err, "{}", crate::terminal::line(&e.to_string()));
                    return EXIT_INVALID;
                }
            }
        }
        _ => None,
    };
    let results = evaluate_servers_with(servers, platform.as_ref(), component.as_ref());
    let _ = out.write_all(render(&results, json).as_bytes());
    EXIT_OK
}

/// Runs `wasmgate availability PATH [--host DIR] [--json]` for a
/// `plugin.yaml` (`.yaml`/`.yml`) or Hermes `plugin.json` (`.json`): loads
/// it with the manifest loader, then evaluates each server in manifest order
/// on the simulated host in `host_dir`, or on this machine. A server without
/// `app:`/`requires:` is evaluated as a declaration with no requirements.
/// Prints to stdout/stderr; returns the exit code (0 evaluated, 1 invalid
/// input, 2 usage).
pub fn run_availability(plugin_path: &Path, host_dir: Option<&Path>, json: bool) -> i32 {
    let mut stderr = std::io::stderr();
    if !plugin_path.is_file() {
        let _ = writeln!(
            stderr,
            "wasmgate availability: {}: no such file",
            plugin_path.display()
        );
        return EXIT_USAGE;
    }
    let ext = plugin_path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let res = match ext.as_deref() {
        Some("yaml" | "yml") => crate::manifest::load_plugin_yaml(plugin_path),
        Some("json") => crate::manifest::load_plugin_json(plugin_path),
        Some("wasm") => {
            // The component's `host-os` import answers the OS family evaluated.
            let os = match host_dir.map(|d| open_platform(Some(d))) {
                Some(Ok(p)) => p.os_family(),
                Some(Err(e)) => {
                    let _ = writeln!(stderr, "{}", crate::terminal::line(&e.to_string()));
                    return EXIT_INVALID;
                }
                None => crate::declaration::OsFamily::current(),
            };
            match super::component::component_manifest(plugin_path, os) {
                Ok(r) => r,
                Err(e) => {
                    let _ = writeln!(stderr, "{}", crate::terminal::line(&e.to_string()));
                    return EXIT_INVALID;
                }
            }
        }
        _ => {
            let _ = writeln!(
                stderr,
                "wasmgate availability: {}: expected a plugin.yaml (.yaml/.yml), plugin.json (.json) or .wasm component",
                plugin_path.display()
            );
            return EXIT_USAGE;
        }
    };
    let mut errors: Vec<String> = res.errors.iter().map(ToString::to_string).collect();
    if res.manifest.is_none() && errors.is_empty() {
        errors.push(format!("{}: not a usable manifest", plugin_path.display()));
    }
    let servers: Vec<(String, Declaration)> = res
        .manifest
        .iter()
        .flat_map(|m| &m.servers)
        .map(|s| {
            let decl = s.declaration.clone().unwrap_or_else(|| Declaration {
                name: s.name.clone(),
                app: None,
                requires: Default::default(),
            });
            (s.name.clone(), decl)
        })
        .collect();
    let component = (ext.as_deref() == Some("wasm")).then_some(plugin_path);
    run_availability_of(
        &servers,
        &errors,
        host_dir,
        component,
        json,
        &mut std::io::stdout().lock(),
        &mut stderr,
    )
}
