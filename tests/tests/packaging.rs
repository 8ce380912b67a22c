//! The two published crates package on their own: the contract
//! (`guest-sdk/wit/plugin.wit`, its one source) travels inside the SDK crate,
//! and the host builds its bindings from a byte-identical copy inside its
//! own crate (`host/wit/since_v0.1.0/plugin.wit`, the latest version; older
//! versions, once there are any, stay beside it in `host/wit/since_v*/`). `.ci/run` also builds a plugin against
//! the packaged SDK outside the workspace.

use std::process::Command;
use wasmgate_conformance::workspace_root;

#[test]
fn the_host_wit_is_an_exact_copy_of_the_sdk_wit() {
    let root = workspace_root();
    let sdk = root.join("guest-sdk/wit/plugin.wit");
    let host = root.join("host/wit/since_v0.1.0/plugin.wit");
    let a = std::fs::read(&sdk).unwrap_or_else(|e| panic!("{}: {e}", sdk.display()));
    let b = std::fs::read(&host).unwrap_or_else(|e| panic!("{}: {e}", host.display()));
    assert!(
        a == b,
        "{} differs from {}: the SDK's copy is the source; copy it over the host's",
        host.display(),
        sdk.display()
    );
    // Nothing else may claim to be the contract.
    let mut found = Vec::new();
    for dir in ["guest-sdk/wit", "host/wit", "host/wit/since_v0.1.0"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            found.push(format!(
                "{dir}/{}",
                e.unwrap().file_name().to_string_lossy()
            ));
        }
    }
    found.sort();
    assert_eq!(
        found,
        [
            "guest-sdk/wit/plugin.wit",
            "host/wit/since_v0.1.0",
            "host/wit/since_v0.1.0/plugin.wit"
        ]
    );
}

/// `cargo package --list` of `package`: the files its `.crate` holds.
fn packaged_files(package: &str) -> Vec<String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(workspace_root())
        .args([
            "package",
            "--list",
            "--allow-dirty",
            "--offline",
            "-p",
            package,
        ])
        .output()
        .expect("run cargo package --list");
    assert!(
        out.status.success(),
        "cargo package --list -p {package}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn both_crates_ship_the_wit_they_build_from() {
    for (package, wit) in [
        ("wasmgate-sdk", "wit/plugin.wit"),
        ("wasmgate", "wit/since_v0.1.0/plugin.wit"),
    ] {
        let files = packaged_files(package);
        assert!(
            files.iter().any(|f| f == wit),
            "{package}'s .crate lacks {wit}: {files:?}"
        );
        assert!(
            files.iter().any(|f| f == "Cargo.toml"),
            "{package}: {files:?}"
        );
    }
}
