//! Shared helpers for the conformance tests.
//!
//! The example plugins are real components built from source. The first
//! test that needs them runs `cargo xtask plugins` (once per test process,
//! and serialised across processes by a file lock); the nested cargo uses
//! `target/guest` as its target folder, so it never waits on the lock the
//! outer `cargo test` holds on `target/`. Cargo's own up-to-date checks make
//! later runs cheap.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ lives one level below the workspace root")
        .to_path_buf()
}

/// Runs `cargo xtask <task>` (as `cargo run -p xtask`) under the
/// cross-process lock `target/<task>.lock`.
fn xtask(task: &str) -> Result<(), String> {
    let root = workspace_root();
    let target = root.join("target");
    std::fs::create_dir_all(&target).map_err(|e| format!("create {}: {e}", target.display()))?;
    let lock_path = target.join(format!("{task}.lock"));
    let lock = File::create(&lock_path).map_err(|e| format!("{}: {e}", lock_path.display()))?;
    lock.lock()
        .map_err(|e| format!("lock {}: {e}", lock_path.display()))?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .current_dir(&root)
        .env("CARGO_TARGET_DIR", target.join("guest"))
        .args(["run", "--quiet", "--package", "xtask", "--", task])
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    drop(lock);
    if !output.status.success() {
        return Err(format!(
            "`cargo xtask {task}` failed ({}):\n{}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(())
}

fn built(task: &'static str, once: &'static OnceLock<Result<(), String>>, dir: &str) -> PathBuf {
    if let Err(e) = once.get_or_init(|| xtask(task)) {
        panic!("{e}");
    }
    workspace_root().join("target").join(dir)
}

/// `target/plugins`, holding `git/`, `blender/` and `gpu-render/` (each a
/// component plus what it ships), built from source once per test process.
///
/// # Panics
/// When the build fails (the message carries cargo's output).
pub fn plugins_dir() -> PathBuf {
    static ONCE: OnceLock<Result<(), String>> = OnceLock::new();
    built("plugins", &ONCE, "plugins")
}

/// `target/hostile-plugins/<name>.wasm` for the hostile test components of
/// `tests/hostile-plugins/`, built once per test process.
///
/// # Panics
/// When the build fails.
pub fn hostile_plugin(name: &str) -> PathBuf {
    static ONCE: OnceLock<Result<(), String>> = OnceLock::new();
    built("hostile-plugins", &ONCE, "hostile-plugins").join(format!("{name}.wasm"))
}

/// A binary of this workspace built beside the test executable
/// (`target/<profile>/<name>`; the host and `git-mcp-server` are default
/// members, so `cargo test` at the workspace root builds them). Panics with
/// what to run when it is missing.
pub fn sibling_bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/<test>");
    let bin = profile_dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.is_file(),
        "{} is missing: run the tests with `cargo xtask test` (or `cargo test` at the workspace root)",
        bin.display()
    );
    bin
}

/// The `wasmgate` binary under test; see [`sibling_bin`].
pub fn wasmgate_bin() -> PathBuf {
    sibling_bin("wasmgate")
}

/// The `git-mcp-server` binary (the MCP server of the example git plugin);
/// see [`sibling_bin`].
pub fn git_server_bin() -> PathBuf {
    sibling_bin("git-mcp-server")
}
