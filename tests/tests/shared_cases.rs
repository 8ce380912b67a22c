//! The sample conformance cases of `../shared/cases` run against the real
//! `wasmgate` binary through their own runner (parse, availability,
//! version_compare and gpu kinds; profiles core and hardened).

use std::process::Command;
use wasmgate_conformance::{wasmgate_bin, workspace_root};

#[test]
fn shared_declaration_cases_pass() {
    let runner = workspace_root().join("../shared/cases/run_declaration_cases.py");
    assert!(
        runner.is_file(),
        "{} is missing: the shared folder must lie beside the checkout",
        runner.display()
    );
    let out = Command::new("python3")
        .arg(&runner)
        .arg("--wasmgate")
        .arg(wasmgate_bin())
        .output()
        .expect("python3 runs (PyYAML is installed by .ci/run)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains(" 0 failed"), "{stdout}");
}
