//! `docs/security.md`, "Limits": after a hostile call the host frees the guest's memory. A memory
//! bomb that fills its 64 MiB cap, loaded 24 times in one `PluginRuntime`,
//! would hold about 1.5 GiB if a store outlived its call; the resident size
//! of this process must stay far below that.

#![cfg(target_os = "linux")]

use wasmgate::{CallFailure, LoadFailure, PluginRuntime, SandboxConfig};
use wasmgate_conformance::hostile_plugin;

/// Resident set size of this process in bytes (`/proc/self/statm`, field 2, pages).
fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .expect("resident pages");
    // The page size is 4 KiB on the machines CI runs on; a larger one only
    // makes the bound below looser.
    pages * 4096
}

#[test]
fn memory_of_a_hostile_call_is_freed() {
    let file = hostile_plugin("memory-bomb");
    let dir = file.parent().unwrap().to_path_buf();
    let config = SandboxConfig::default();
    let cap = config.memory_limit as u64;
    let host = PluginRuntime::new(config).expect("plugin host starts");

    // Warm up: the first load compiles the component.
    let _ = host.load_file(&file, &dir);
    let before = rss_bytes();
    const ROUNDS: u64 = 24;
    for _ in 0..ROUNDS {
        let e = host.load_file(&file, &dir).unwrap_err();
        assert!(
            matches!(
                e.reason,
                LoadFailure::Call {
                    failure: CallFailure::MemoryLimit { .. },
                    ..
                }
            ),
            "{e}"
        );
    }
    let after = rss_bytes();
    let grown = after.saturating_sub(before);
    // Every round filled `cap` bytes; kept stores would add ROUNDS × cap.
    assert!(
        grown < 3 * cap,
        "resident size grew by {grown} bytes over {ROUNDS} memory bombs (cap {cap} bytes each)"
    );
}
