//! Writes the contract (`guest-sdk/wit/plugin.wit`, its one source) into
//! `$OUT_DIR/wit/plugin.wit` with only its version changed to the next
//! minor one (0.1.x → 0.2.0), so this plugin is built against another
//! version of the same contract.

use std::path::{Path, PathBuf};

fn main() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../guest-sdk/wit/plugin.wit");
    println!("cargo::rerun-if-changed={}", src.display());
    let text =
        std::fs::read_to_string(&src).unwrap_or_else(|e| panic!("read {}: {e}", src.display()));
    let prefix = "package wasmgate:plugin@";
    let line = text
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("{}: no `{prefix}…;` line", src.display()));
    let version = line[prefix.len()..].trim_end_matches(';');
    let mut parts = version.split('.').map(|p| p.parse::<u64>());
    let (Some(Ok(major)), Some(Ok(minor))) = (parts.next(), parts.next()) else {
        panic!(
            "{}: version `{version}` is not major.minor.patch",
            src.display()
        );
    };
    let other = format!("{prefix}{major}.{}.0;", minor + 1);
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR")).join("wit");
    std::fs::create_dir_all(&out).unwrap_or_else(|e| panic!("create {}: {e}", out.display()));
    let dest = out.join("plugin.wit");
    std::fs::write(&dest, text.replacen(line, &other, 1))
        .unwrap_or_else(|e| panic!("write {}: {e}", dest.display()));
}
