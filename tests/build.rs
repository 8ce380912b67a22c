//! Lists the hostile test components (`tests/hostile-plugins/*/`, one
//! folder each, the one list of them: the workspace's members glob and
//! `cargo xtask hostile-plugins` read the same folder) into
//! `$OUT_DIR/hostile_plugins.rs`: the names, and a `foreach_hostile_plugin!`
//! macro that calls `$m!(snake_name, "folder-name")` for each, so a test
//! binary can require at compile time that every component is tested
//! (wasmtime's `foreach_p2!` idea).

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("hostile-plugins");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| {
            let e = e.ok()?;
            let name = e.file_name().into_string().ok()?;
            e.path().join("Cargo.toml").is_file().then_some(name)
        })
        .collect();
    names.sort();
    let mut out = String::new();
    writeln!(
        out,
        "/// The hostile test components, by folder name (sorted)."
    )
    .unwrap();
    writeln!(out, "pub const HOSTILE_PLUGINS: &[&str] = &{names:?};").unwrap();
    writeln!(
        out,
        "/// Calls `$m!(snake_name, \"folder-name\")` once per hostile component."
    )
    .unwrap();
    writeln!(out, "#[macro_export]").unwrap();
    writeln!(out, "macro_rules! foreach_hostile_plugin {{").unwrap();
    writeln!(out, "    ($m:ident) => {{").unwrap();
    for n in &names {
        assert!(
            n.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
            "tests/hostile-plugins/{n}: a folder name is lowercase letters, digits and '-'"
        );
        writeln!(out, "        $m!({}, {n:?});", n.replace('-', "_")).unwrap();
    }
    writeln!(out, "    }};").unwrap();
    writeln!(out, "}}").unwrap();
    let path = Path::new(&std::env::var_os("OUT_DIR").unwrap()).join("hostile_plugins.rs");
    std::fs::write(&path, out).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}
