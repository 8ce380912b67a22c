//! The plugin author's `cargo test` way in (`guest-sdk/README.md`, "5. Test
//! a plugin"), done exactly as the README shows it on the example plugins:
//! a real component loaded with `wasmgate::testing::TestPlugin`, a
//! simulated host made in code with `SimulatedHost::builder`, a PE with a
//! version resource and an `Info.plist` from `wasmgate::fixtures`, and the
//! component's own `probe_version`. Only the component paths differ from
//! the README (the example components are built into `target/plugins`);
//! the last test keeps the README and this file in step.

use std::path::PathBuf;
use wasmgate::fixtures::{pe_with_version, plist_with_version};
use wasmgate::testing::TestPlugin;
use wasmgate::{OsFamily, SimulatedHost};
use wasmgate_conformance::{plugins_dir, workspace_root};

fn versionfile() -> PathBuf {
    plugins_dir().join("versionfile").join("versionfile.wasm")
}

fn blender() -> PathBuf {
    plugins_dir().join("blender").join("blender.wasm")
}

#[test]
fn the_probe_reads_the_version_file_on_windows() {
    let dir = tempfile::tempdir().unwrap();
    let app = r"C:\Users\me\AppData\Local\VersionfileApp";
    let host = SimulatedHost::builder(OsFamily::Win32)
        .env("LOCALAPPDATA", r"C:\Users\me\AppData\Local")
        .file(
            format!(r"{app}\versionfile-app.exe"),
            pe_with_version("2.1.0.0"),
        )
        .file(format!(r"{app}\VERSION"), "2.1.0\n")
        .build(dir.path())
        .unwrap();
    let plugin = TestPlugin::load(versionfile(), OsFamily::Win32).unwrap();
    let probed = plugin.probe_version("versionfile", &host, app).unwrap();
    assert_eq!(probed.as_deref(), Some("2.1.0"));
    let a = plugin.availability("versionfile", &host).unwrap();
    assert!(a.offerable(), "{a:?}");
    assert_eq!(a.version.as_deref(), Some("2.1.0"));
}

#[test]
fn blender_is_found_with_its_version_on_windows_and_macos() {
    let dir = tempfile::tempdir().unwrap();
    let win = SimulatedHost::builder(OsFamily::Win32)
        .env("ProgramFiles", r"C:\Program Files")
        .file(
            r"C:\Program Files\Blender Foundation\Blender 4.2\blender.exe",
            pe_with_version("4.2.1.0"),
        )
        .build(&dir.path().join("win"))
        .unwrap();
    let plugin = TestPlugin::load(blender(), OsFamily::Win32).unwrap();
    let a = plugin.availability("blender", &win).unwrap();
    assert!(a.offerable(), "{a:?}");
    assert_eq!(a.version.as_deref(), Some("4.2.1.0"));

    let mac = SimulatedHost::builder(OsFamily::Darwin)
        .file(
            "/Applications/Blender.app/Contents/Info.plist",
            plist_with_version("2.93"),
        )
        .build(&dir.path().join("mac"))
        .unwrap();
    let plugin = TestPlugin::load(blender(), OsFamily::Darwin).unwrap();
    let a = plugin.availability("blender", &mac).unwrap();
    assert_eq!(a.state.as_str(), "version_too_old", "{a:?}");
    assert_eq!(a.version.as_deref(), Some("2.93"));
}

/// The failures an author meets are errors, not panics or silent Nones.
#[test]
fn a_wrong_os_a_missing_folder_and_an_unknown_server_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let linux = SimulatedHost::builder(OsFamily::Linux)
        .build(dir.path())
        .unwrap();
    let plugin = TestPlugin::load(versionfile(), OsFamily::Win32).unwrap();
    let e = plugin.availability("versionfile", &linux).unwrap_err();
    assert!(e.contains("loaded for win32, the platform is linux"), "{e}");
    let plugin = TestPlugin::load(versionfile(), OsFamily::Linux).unwrap();
    let e = plugin
        .probe_version("versionfile", &linux, "/opt/none")
        .unwrap_err();
    assert!(e.contains("cannot lend /opt/none"), "{e}");
    let e = plugin.availability("nope", &linux).unwrap_err();
    assert!(
        e.contains("has no server 'nope' (servers: versionfile)"),
        "{e}"
    );
    let e = TestPlugin::load(dir.path().join("none.wasm"), OsFamily::Linux).unwrap_err();
    assert!(e.contains("none.wasm"), "{e}");
}

/// Every line of the README's test example is a line of this file, except
/// the component paths: what the README shows is what runs here.
#[test]
fn the_readme_example_is_these_tests() {
    let readme = std::fs::read_to_string(workspace_root().join("guest-sdk/README.md")).unwrap();
    let section = readme
        .split("## 5. Test a plugin")
        .nth(1)
        .expect("guest-sdk/README.md has a section '## 5. Test a plugin'");
    let code = section
        .split("```rust")
        .nth(1)
        .and_then(|c| c.split("```").next())
        .expect("a rust block in that section");
    let this = include_str!("author_testing.rs");
    let mut compared = 0;
    for line in code.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if line.contains("target/wasm32-wasip2") || line.starts_with("//") {
            continue;
        }
        let line = line
            .replace(
                "TestPlugin::load(VERSIONFILE,",
                "TestPlugin::load(versionfile(),",
            )
            .replace("TestPlugin::load(BLENDER,", "TestPlugin::load(blender(),");
        assert!(
            this.lines().any(|l| l.trim() == line),
            "the README line `{line}` is not in tests/tests/author_testing.rs"
        );
        compared += 1;
    }
    assert!(compared >= 30, "only {compared} lines compared");
}

/// `wasmgate availability COMPONENT --host DIR` runs the component's own
/// `probe_version` for `version.kind: custom`, as `status` does, on a host
/// folder the builder wrote.
#[test]
fn availability_on_a_host_folder_runs_the_components_probe() {
    let dir = tempfile::tempdir().unwrap();
    let app = r"C:\Users\me\AppData\Local\VersionfileApp";
    SimulatedHost::builder(OsFamily::Win32)
        .env("LOCALAPPDATA", r"C:\Users\me\AppData\Local")
        .file(
            format!(r"{app}\versionfile-app.exe"),
            pe_with_version("1.0"),
        )
        .file(format!(r"{app}\VERSION"), "2.5.0\n")
        .build(dir.path())
        .unwrap();
    let out = std::process::Command::new(wasmgate_conformance::wasmgate_bin())
        .args(["availability", "--json", "--host"])
        .arg(dir.path())
        .arg(versionfile())
        .env("WASMGATE_CACHE", "")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0]["state"], "available", "{v:#} {stderr}");
    assert_eq!(v[0]["version"], "2.5.0", "{v:#}");
}
