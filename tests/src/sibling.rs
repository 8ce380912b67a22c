//! The workspace's binaries beside a test executable, shared by both test
//! crates (the host's `host/tests/common` includes this file by path, as it
//! does `git.rs`).

use std::path::{Path, PathBuf};

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
