//! `wasmgate new` end to end: the real binary scaffolds a plugin crate in a
//! temporary folder (`--sdk` this checkout's `guest-sdk`), cargo builds it
//! for `wasm32-wasip2` offline from the registry cache, the README's plugin
//! folder is put together, `wasmgate check --json` finds it valid without a
//! warning, and `wasmgate status` offers its tool only while a fake
//! application of that name is on `PATH` (then `call` runs the shipped
//! Python server). Linux only: the fake application is a POSIX script.
//!
//! The scaffold builds in `target/guest`, the target folder the example
//! plugins build in, so `wit-bindgen` and the SDK compile once for both.
#![cfg(target_os = "linux")]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use wasmgate_conformance::{plugins_dir, wasmgate_bin, workspace_root};

const NAME: &str = "demo-app";

fn wasmgate(dir: &Path, path_var: &str, args: &[&str]) -> Output {
    Command::new(wasmgate_bin())
        .current_dir(dir)
        .args(args)
        .env_remove("WASMGATE_PLUGINS")
        .env_remove("WASMGATE_CONFIG")
        .env("WASMGATE_CACHE", dir.join("cache"))
        .env("HOME", dir)
        .env("XDG_CONFIG_HOME", dir.join("xdg"))
        .env("PATH", path_var)
        .output()
        .expect("wasmgate runs")
}

fn text(o: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The cargo of this toolchain, with its rustc (not whatever `rustc` a
/// folder outside the checkout would pick).
fn cargo() -> (PathBuf, Option<PathBuf>) {
    let cargo = PathBuf::from(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    let rustc = cargo
        .parent()
        .map(|d| d.join("rustc"))
        .filter(|r| r.is_file());
    (cargo, rustc)
}

#[test]
fn a_scaffolded_plugin_builds_checks_and_is_offered_with_its_application() {
    // The example plugins first: their build fills target/guest (and its lock).
    let _ = plugins_dir();
    let tmp = tempfile::tempdir().unwrap();
    let sdk = workspace_root().join("guest-sdk");
    let out = Command::new(wasmgate_bin())
        .current_dir(tmp.path())
        .args(["new", NAME, "--sdk"])
        .arg(&sdk)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let krate = tmp.path().join(NAME);
    for f in [
        "Cargo.toml",
        "src/lib.rs",
        "README.md",
        "skills/demo-app/SKILL.md",
        "server/demo-app-mcp",
    ] {
        assert!(krate.join(f).is_file(), "{f} missing: {}", text(&out));
    }
    let manifest = std::fs::read_to_string(krate.join("Cargo.toml")).unwrap();
    assert!(manifest.contains("wasmgate-sdk = { path = "), "{manifest}");
    // A second `new` of the same name leaves the first alone.
    let again = Command::new(wasmgate_bin())
        .current_dir(tmp.path())
        .args(["new", NAME])
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(1), "{}", text(&again));

    // 1. Build (README step 1), offline, in the shared target folder.
    let target = workspace_root().join("target").join("guest");
    let (cargo, rustc) = cargo();
    let mut build = Command::new(&cargo);
    build
        .current_dir(&krate)
        .args([
            "build",
            "--target",
            "wasm32-wasip2",
            "--release",
            "--offline",
            "--quiet",
        ])
        .env("CARGO_TARGET_DIR", &target);
    if let Some(r) = rustc {
        build.env("RUSTC", r);
    }
    let built = build.output().expect("cargo runs");
    assert!(built.status.success(), "cargo build: {}", text(&built));
    let wasm = target.join("wasm32-wasip2/release/demo_app.wasm");
    let dist = tmp.path().join("dist");
    let folder = dist.join(NAME);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::copy(&wasm, folder.join("demo_app.wasm")).unwrap();
    // fs::copy keeps the execute bit the scaffold set.
    std::fs::copy(
        krate.join("server/demo-app-mcp"),
        folder.join("demo-app-mcp"),
    )
    .unwrap();

    let system_path = std::env::var("PATH").unwrap_or_default();
    // 2. Check (README step 2): valid, nothing to warn about.
    let out = wasmgate(
        tmp.path(),
        &system_path,
        &["check", "--json", folder.to_str().unwrap()],
    );
    let doc: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(doc["valid"], true, "{doc:#}");
    assert_eq!(doc["warnings"], serde_json::json!([]), "{doc:#}");
    assert_eq!(doc["manifest"]["servers"][0]["name"], NAME, "{doc:#}");

    // 3. Status (README step 3): without the application nothing is offered.
    let status = |path_var: &str| -> Value {
        let out = wasmgate(
            tmp.path(),
            path_var,
            // The scaffold README's step 3: the author's own plugin, trusted
            // for this run.
            &[
                "status",
                "--dev",
                "--json",
                "--plugins",
                dist.to_str().unwrap(),
            ],
        );
        assert!(out.status.success(), "{}", text(&out));
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)))
    };
    let server = |st: &Value| -> Value {
        st["servers"]
            .as_array()
            .and_then(|a| a.iter().find(|s| s["name"] == NAME))
            .cloned()
            .unwrap_or_else(|| panic!("no server {NAME}: {st:#}"))
    };
    let st = status(&system_path);
    let s = server(&st);
    assert_eq!(s["availability"]["state"], "missing_app", "{st:#}");
    assert_eq!(s["tools"], serde_json::json!([]), "{st:#}");
    assert_eq!(st["skills"][0]["visible"], false, "{st:#}");

    // With a `demo-app` command on PATH the server is available, connected,
    // its tool registered and the skill shown.
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let app = bin.join(NAME);
    std::fs::write(&app, "#!/bin/sh\nexit 0\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&app, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let with_app = format!("{}:{system_path}", bin.display());
    let st = status(&with_app);
    let s = server(&st);
    assert_eq!(s["availability"]["state"], "available", "{st:#}");
    assert_eq!(s["connection"], "connected", "{st:#}");
    assert_eq!(
        s["tools"],
        serde_json::json!(["mcp_demo_app_hello"]),
        "{st:#}"
    );
    assert_eq!(st["skills"][0]["name"], NAME, "{st:#}");
    assert_eq!(st["skills"][0]["visible"], true, "{st:#}");

    // A user approves the plugin (README of the scaffold); then the shipped
    // server answers a call without the development switch.
    let out = wasmgate(
        tmp.path(),
        &with_app,
        &[
            "plugin",
            "approve",
            NAME,
            "--plugins",
            dist.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let out = wasmgate(
        tmp.path(),
        &with_app,
        &[
            "call",
            "mcp_demo_app_hello",
            "--plugins",
            dist.to_str().unwrap(),
            "--args",
            r#"{"who": "scaffold test"}"#,
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("hello, scaffold test, from demo-app"),
        "{}",
        text(&out)
    );
}
