//! Helpers shared by the host's integration tests (each test binary
//! includes this module and uses part of it).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// A binary of this workspace built beside the test executable
/// (`target/<profile>/<name>`), e.g. `git-mcp-server`, which `cargo test` at
/// the workspace root builds since its package is a default member.
///
/// # Panics
/// When it is missing (the message says how to build it).
pub fn sibling_bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>");
    let bin = dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.is_file(),
        "{} is missing: build it first with `cargo build -p {name}`",
        bin.display()
    );
    bin
}

/// Our git MCP server (`example-plugins/git-mcp-server`).
pub fn git_server_bin() -> PathBuf {
    sibling_bin("git-mcp-server")
}
