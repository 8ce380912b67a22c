//! The Python example plugin end to end (`guest-sdk/python/README.md`):
//! `example-plugins/inkscape/app.py`, built with the Python SDK by the
//! pinned componentize-py (`cargo xtask plugins`), passes what the Rust
//! plugins pass — `check`, `status`, `availability --host` on simulated
//! win32, darwin and linux hosts, its custom probe (found, too old, no
//! folder), and the sandbox's default caps.
//!
//! The component is 18 MB of CPython: one compile takes seconds (minutes in
//! a debug build on a busy machine), so every run here shares one compile
//! cache, `target/tmp/python-plugin-cache`, filled at most once per test
//! process (the first test to need it compiles; the others wait) and kept
//! between runs: an unchanged component is not compiled again. The
//! manifest-mistakes test of `plugins/check_sources.rs` uses the same folder.
#![cfg(target_os = "linux")]

use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use wasmgate::OsFamily;
use wasmgate::SimulatedHost;
use wasmgate::fixtures::{pe_with_version, plist_with_version};
use wasmgate::{CacheOutcome, CallFailure, LoadFailure, PluginRuntime, SandboxConfig};
use wasmgate_conformance::{plugins_dir, wasmgate_bin, wasmgate_dev, workspace_root};

fn inkscape() -> PathBuf {
    // `cargo xtask plugins` lays Python plugins out beside target/plugins.
    plugins_dir()
        .parent()
        .unwrap()
        .join("python-plugins/inkscape/inkscape.wasm")
}

/// The compile cache of this test binary, warmed once (a `check`, which
/// goes through the cache).
fn cache() -> PathBuf {
    static WARM: OnceLock<PathBuf> = OnceLock::new();
    WARM.get_or_init(|| {
        let dir = workspace_root().join("target/tmp/python-plugin-cache");
        std::fs::create_dir_all(&dir).unwrap();
        let out = check(&inkscape(), &dir);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        dir
    })
    .clone()
}

fn check(component: &Path, cache: &Path) -> Output {
    Command::new(wasmgate_bin())
        .args(["check", "--json"])
        .arg(component)
        .env("WASMGATE_CACHE", cache)
        .output()
        .expect("wasmgate runs")
}

#[test]
fn check_accepts_the_python_component_and_uses_the_compile_cache() {
    let cache = cache();
    let out = check(&inkscape(), &cache);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = v.to_string();
    assert!(text.contains("org.inkscape.Inkscape"), "{v:#}");
    assert!(text.contains("Inkscape.app"), "{v:#}");
    assert!(text.contains("\"min_version\":\"1.0\""), "{v:#}");
    assert!(text.contains("\"name\":\"inkscape\""), "{v:#}");
    // The cache holds exactly one compiled entry for this component: the
    // second check did not compile again.
    let digest = wasmgate::trust::digest::sha256_hex(&std::fs::read(inkscape()).unwrap());
    let entries: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.starts_with(&digest) && n.ends_with(".cwasm")
        })
        .collect();
    assert_eq!(entries.len(), 1, "one cache entry for {digest}");
}

/// `<root>/bin/inkscape` with the execute bit, plus `files` beside it.
fn install(root: &Path, files: &[(&str, &str)]) -> PathBuf {
    let bin = root.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let exe = bin.join("inkscape");
    std::fs::write(&exe, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    for (name, text) in files {
        std::fs::write(bin.join(name), text).unwrap();
    }
    bin
}

/// `wasmgate status --json` over a plugin folder holding a copy of the
/// component, with `PATH` set to `path` only (the linux declaration finds
/// `inkscape` on PATH).
fn status(tmp: &Path, path: &Path) -> (Value, String) {
    let plugins = tmp.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let copy = plugins.join("inkscape.wasm");
    if !copy.exists() {
        std::fs::copy(inkscape(), &copy).unwrap();
    }
    let out = wasmgate_dev()
        .args(["status", "--json", "--log", "warn", "--plugins"])
        .arg(&plugins)
        .env_remove("WASMGATE_PLUGINS")
        .env("PATH", path)
        .env("WASMGATE_CACHE", cache())
        .output()
        .expect("wasmgate runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    (v, stderr)
}

fn server<'a>(st: &'a Value, name: &str) -> &'a Value {
    st["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no server {name} in {st}"))
}

#[test]
fn status_a_version_file_new_enough_is_available() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = install(&tmp.path().join("app"), &[("VERSION", "1.3.2\n")]);
    let (st, stderr) = status(tmp.path(), &bin);
    let a = &server(&st, "inkscape")["availability"];
    assert_eq!(a["state"], "available", "{a} {stderr}");
    assert_eq!(a["version"], "1.3.2");
    assert_eq!(a["min_version"], "1.0");
    assert_eq!(a["path"], bin.join("inkscape").display().to_string());
    let names: Vec<&str> = st["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(names, ["inkscape"]);
}

#[test]
fn status_the_appstream_release_is_read_without_a_version_file() {
    let tmp = tempfile::tempdir().unwrap();
    let xml = r#"<?xml version="1.0"?>
<component type="desktop-application">
  <releases>
    <release version="1.2.2" date="2022-12-05"/>
    <release version="1.2.1" date="2022-07-14"/>
  </releases>
</component>"#;
    let bin = install(
        &tmp.path().join("app"),
        &[("org.inkscape.Inkscape.appdata.xml", xml)],
    );
    let (st, stderr) = status(tmp.path(), &bin);
    let a = &server(&st, "inkscape")["availability"];
    assert_eq!(a["state"], "available", "{a} {stderr}");
    assert_eq!(a["version"], "1.2.2");
}

#[test]
fn status_an_old_version_is_too_old_and_gated() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = install(&tmp.path().join("app"), &[("VERSION", "0.92.5\n")]);
    let (st, _) = status(tmp.path(), &bin);
    let s = server(&st, "inkscape");
    assert_eq!(s["availability"]["state"], "version_too_old", "{s}");
    assert_eq!(s["availability"]["version"], "0.92.5");
    assert_eq!(s["connection"], "gated");
}

#[test]
fn status_no_install_folder_is_missing_app() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("nothing-here");
    std::fs::create_dir_all(&empty).unwrap();
    let (st, stderr) = status(tmp.path(), &empty);
    let a = &server(&st, "inkscape")["availability"];
    assert_eq!(a["state"], "missing_app", "{a}");
    assert_eq!(a["version"], Value::Null);
    assert!(!stderr.contains("probe-version()"), "{stderr}");
}

#[test]
fn status_a_found_copy_without_a_version_is_not_offerable() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = install(&tmp.path().join("app"), &[]);
    let (st, stderr) = status(tmp.path(), &bin);
    let a = &server(&st, "inkscape")["availability"];
    assert_eq!(a["state"], "version_too_old", "{a} {stderr}");
    assert_eq!(a["version"], Value::Null);
    assert!(!stderr.contains("probe-version() failed"), "{stderr}");
}

/// `wasmgate availability COMPONENT --host DIR --json`, the first result.
fn availability_on(host: &Path) -> Value {
    let out = Command::new(wasmgate_bin())
        .args(["availability", "--json", "--host"])
        .arg(host)
        .arg(inkscape())
        .env("WASMGATE_CACHE", cache())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v[0].clone()
}

#[test]
fn availability_on_simulated_hosts_of_all_three_families() {
    let dir = tempfile::tempdir().unwrap();
    // win32: the uninstall entry, the PE version resource of inkscape.exe.
    let win = dir.path().join("win");
    SimulatedHost::builder(OsFamily::Win32)
        .uninstall_entry(
            "Inkscape",
            Some("1.3.2"),
            Some(r"C:\Program Files\Inkscape\"),
        )
        .file(
            r"C:\Program Files\Inkscape\bin\inkscape.exe",
            pe_with_version("1.3.2.0"),
        )
        .build(&win)
        .unwrap();
    let a = availability_on(&win);
    assert_eq!(a["state"], "available", "{a:#}");
    assert_eq!(a["version"], "1.3.2.0", "{a:#}");

    // darwin: the bundle's Info.plist; 0.92 is too old.
    let mac = dir.path().join("mac");
    SimulatedHost::builder(OsFamily::Darwin)
        .file(
            "/Applications/Inkscape.app/Contents/Info.plist",
            plist_with_version("0.92.4"),
        )
        .build(&mac)
        .unwrap();
    let a = availability_on(&mac);
    assert_eq!(a["state"], "version_too_old", "{a:#}");
    assert_eq!(a["version"], "0.92.4", "{a:#}");

    // linux: the flatpak export, its version read by the component's own
    // probe from the granted folder of the simulated machine.
    let linux = dir.path().join("linux");
    SimulatedHost::builder(OsFamily::Linux)
        .env("PATH", "/usr/bin")
        .executable("/var/lib/flatpak/exports/bin/org.inkscape.Inkscape")
        .file("/var/lib/flatpak/exports/bin/VERSION", "1.4\n")
        .build(&linux)
        .unwrap();
    let a = availability_on(&linux);
    assert_eq!(a["state"], "available", "{a:#}");
    assert_eq!(a["version"], "1.4", "{a:#}");
}

/// The component runs within the default caps (no per-plugin override):
/// CPython's start and the manifest fit in 64 MiB and 1 s, and a probe in
/// 200 ms. A much lower memory cap is hit and named: the caps do apply.
#[test]
fn the_default_caps_hold_the_python_component() {
    let dir = inkscape().parent().unwrap().to_path_buf();
    let host = PluginRuntime::new(SandboxConfig {
        cache_dir: Some(cache()),
        ..SandboxConfig::default()
    })
    .unwrap();
    let p = host.load_file(&inkscape(), &dir).unwrap();
    assert_eq!(p.cache, CacheOutcome::Hit);
    assert_eq!(p.name, "inkscape");
    let app = tempfile::tempdir().unwrap();
    std::fs::write(app.path().join("VERSION"), "1.3\n").unwrap();
    let v = host
        .probe_version(
            &p,
            "inkscape",
            OsFamily::Linux,
            wasmgate::ProbeGrant::open(app.path()).unwrap(),
        )
        .unwrap();
    assert_eq!(v.as_deref(), Some("1.3"));

    let small = PluginRuntime::new(SandboxConfig {
        cache_dir: Some(cache()),
        memory_limit: 8 << 20,
        ..SandboxConfig::default()
    })
    .unwrap();
    let e = small.load_file(&inkscape(), &dir).unwrap_err();
    assert!(
        matches!(
            e.reason,
            LoadFailure::Call {
                failure: CallFailure::MemoryLimit { .. },
                ..
            }
        ),
        "{e}"
    );
}
