//! Custom version probes end to end (`docs/security.md`, "Custom probes in availability"): the real
//! `wasmgate` binary loads the `versionfile` example component, locates a
//! real fixture install folder on this machine, lends it to the
//! component's `probe-version`, and gates the server on the version read.
//! Linux only: the fixtures are POSIX executables found by linux paths.
#![cfg(target_os = "linux")]

use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use wasmgate_conformance::{hostile_plugin, plugins_dir, wasmgate_dev};

/// `<root>/bin/<exe>` with the execute bit, plus `files` beside it.
fn install(root: &Path, exe: &str, files: &[(&str, &str)]) -> PathBuf {
    let bin = root.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let exe = bin.join(exe);
    std::fs::write(&exe, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    for (name, text) in files {
        std::fs::write(bin.join(name), text).unwrap();
    }
    bin
}

/// A plugin folder holding copies of the named components.
fn plugin_folder(root: &Path, components: &[PathBuf]) -> PathBuf {
    let dir = root.join("plugins");
    std::fs::create_dir_all(&dir).unwrap();
    for c in components {
        std::fs::copy(c, dir.join(c.file_name().unwrap())).unwrap();
    }
    dir
}

fn versionfile() -> PathBuf {
    plugins_dir().join("versionfile").join("versionfile.wasm")
}

fn status(plugins: &Path, env: &[(&str, &Path)]) -> (Value, String) {
    let mut c = wasmgate_dev();
    c.args(["status", "--json", "--log", "warn", "--plugins"])
        .arg(plugins)
        // No user plugins or cache leak in from the environment.
        .env_remove("WASMGATE_PLUGINS")
        .env_remove("VERSIONFILE_HOME")
        .env_remove("WASMGATE_PROBE_APP")
        // A compile cache of the test's own, not the user's.
        .env("WASMGATE_CACHE", plugins.with_extension("cache"));
    for (k, v) in env {
        c.env(k, v);
    }
    let out: Output = c.output().expect("wasmgate runs");
    let stderr = strip_ansi(&String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    (v, stderr)
}

/// The log's text without terminal colour codes (`ESC [ … m`).
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn availability<'a>(st: &'a Value, server: &str) -> &'a Value {
    &st["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == server)
        .unwrap_or_else(|| panic!("no server {server} in {st}"))["availability"]
}

#[test]
fn a_version_file_new_enough_makes_the_server_available() {
    let tmp = tempfile::tempdir().unwrap();
    let app = tmp.path().join("app");
    let bin = install(&app, "versionfile-app", &[("VERSION", "2.3.1\n")]);
    let plugins = plugin_folder(tmp.path(), &[versionfile()]);
    let (st, stderr) = status(&plugins, &[("VERSIONFILE_HOME", &app)]);
    let a = availability(&st, "versionfile");
    assert_eq!(a["state"], "available", "{a} {stderr}");
    assert_eq!(a["version"], "2.3.1");
    assert_eq!(a["min_version"], "2.0");
    assert_eq!(
        a["path"],
        bin.join("versionfile-app").display().to_string().as_str()
    );
}

#[test]
fn a_package_json_version_is_read_when_there_is_no_version_file() {
    let tmp = tempfile::tempdir().unwrap();
    let app = tmp.path().join("app");
    install(
        &app,
        "versionfile-app",
        &[(
            "package.json",
            r#"{"name": "versionfile-app", "version": "2.10.0"}"#,
        )],
    );
    let plugins = plugin_folder(tmp.path(), &[versionfile()]);
    let (st, _) = status(&plugins, &[("VERSIONFILE_HOME", &app)]);
    let a = availability(&st, "versionfile");
    assert_eq!(a["state"], "available", "{a}");
    assert_eq!(a["version"], "2.10.0");
}

#[test]
fn an_old_version_file_is_version_too_old() {
    let tmp = tempfile::tempdir().unwrap();
    let app = tmp.path().join("app");
    install(&app, "versionfile-app", &[("VERSION", "1.9.9\n")]);
    let plugins = plugin_folder(tmp.path(), &[versionfile()]);
    let (st, _) = status(&plugins, &[("VERSIONFILE_HOME", &app)]);
    let a = availability(&st, "versionfile");
    assert_eq!(a["state"], "version_too_old", "{a}");
    assert_eq!(a["version"], "1.9.9");
    let server = st["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "versionfile")
        .unwrap();
    assert_eq!(server["connection"], "gated");
}

#[test]
fn no_install_folder_is_missing_app_and_no_probe_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let plugins = plugin_folder(tmp.path(), &[hostile_plugin("probe"), versionfile()]);
    let missing = tmp.path().join("nothing-here");
    // The probe plugin's `panic-probe` looks for `$WASMGATE_PROBE_APP/vendor`
    // and its probe always panics, which the host logs: a trace of any run.
    // The folder exists with a VERSION (a probe could be lent it), but the
    // executable does not: the application is not found.
    let vendor = tmp.path().join("vendor");
    std::fs::create_dir_all(&vendor).unwrap();
    std::fs::write(vendor.join("VERSION"), "9.9\n").unwrap();
    let (st, stderr) = status(
        &plugins,
        &[
            ("VERSIONFILE_HOME", &missing),
            ("WASMGATE_PROBE_APP", &vendor),
        ],
    );
    assert_eq!(availability(&st, "versionfile")["state"], "missing_app");
    let a = availability(&st, "panic-probe");
    assert_eq!(a["state"], "missing_app", "{a}");
    assert_eq!(a["version"], Value::Null, "{a}");
    assert!(
        !stderr.contains("probe-version()") && !stderr.contains("this probe always panics"),
        "a probe ran for an application that was not found:\n{stderr}"
    );
    // The same plugin does leave the trace once its application is found
    // (the trace is not just missing from the log).
    let found = install(&tmp.path().join("found"), "vendor", &[("VERSION", "9.9\n")]);
    let (_, stderr) = status(&plugins, &[("WASMGATE_PROBE_APP", &found)]);
    assert!(stderr.contains("this probe always panics"), "{stderr}");
}

#[test]
fn a_probe_that_traps_reads_no_version_and_the_host_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let good = tmp.path().join("good");
    install(&good, "versionfile-app", &[("VERSION", "3.0\n")]);
    // The probe plugin's `panic-probe` server looks for
    // `$WASMGATE_PROBE_APP/vendor`; its probe panics.
    let vendor = tmp.path().join("vendor");
    let vendor_bin = install(&vendor, "vendor", &[("VERSION", "9.9\n")]);
    let plugins = plugin_folder(tmp.path(), &[hostile_plugin("probe"), versionfile()]);
    let (st, stderr) = status(
        &plugins,
        &[
            ("VERSIONFILE_HOME", &good),
            ("WASMGATE_PROBE_APP", &vendor_bin),
        ],
    );
    let a = availability(&st, "panic-probe");
    // Found, but the version is unreadable: with a minimum, not offerable.
    assert_eq!(a["state"], "version_too_old", "{a}");
    assert_eq!(a["version"], Value::Null, "{a}");
    assert_eq!(
        a["path"],
        vendor_bin.join("vendor").display().to_string().as_str()
    );
    // The failure is logged with the plugin's name and the trap.
    assert!(stderr.contains("plugin=probe"), "{stderr}");
    assert!(stderr.contains("probe-version() trapped"), "{stderr}");
    assert!(stderr.contains("this probe always panics"), "{stderr}");
    // Every other plugin and server goes on.
    let ok = availability(&st, "versionfile");
    assert_eq!(ok["state"], "available", "{ok}");
    assert_eq!(ok["version"], "3.0");
    let names: Vec<&str> = st["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(names, ["probe", "versionfile"]);
}
