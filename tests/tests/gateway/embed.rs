//! `host/examples/embed.rs` runs (README, "Use wasmgate from any agent": the embedding example runs in CI).
//! `cargo test` at the workspace root builds every example of the `wasmgate`
//! package before tests run; this test runs the binary on the example
//! plugins from this repository's root and checks it listed and called.

use std::process::Command;
use wasmgate_conformance::{plugins_dir, wasmgate_bin, workspace_root};

#[test]
fn embed_example_loads_lists_calls_and_shuts_down() {
    let bin = wasmgate_bin()
        .parent()
        .unwrap()
        .join("examples")
        .join(format!("embed{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.is_file(),
        "{} is missing: run `cargo test` at the workspace root (it builds examples)",
        bin.display()
    );
    let out = Command::new(&bin)
        .arg(plugins_dir())
        .current_dir(workspace_root())
        .output()
        .expect("run the embed example");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("tool  mcp_git_log"), "{stdout}");
    assert!(!stdout.contains("mcp_blender_"), "{stdout}");
    assert!(
        stdout.contains("mcp_git_log (is_error: false):"),
        "{stdout}"
    );
    // The call ran real git on this checkout: a commit hash and date appear.
    let after = stdout
        .split("mcp_git_log (is_error: false):")
        .nth(1)
        .unwrap();
    assert!(after.trim().len() > 10, "{stdout}");
}
