//! Hostile: `manifest()` recurses without bound. The guest's wasm stack
//! overflows and traps; the host's stack is untouched.

use wasmgate_sdk::{Manifest, Plugin};

struct Deep;

/// Recursion that LLVM cannot turn into a loop and that keeps its state in
/// wasm locals (not the shadow stack in linear memory), so the engine's
/// wasm stack is what runs out.
#[inline(never)]
fn down(n: u64) -> u64 {
    if n == u64::MAX {
        return 0;
    }
    down(n + 1).rotate_left(1) ^ n
}

impl Plugin for Deep {
    fn manifest() -> Manifest {
        let depth = down(0);
        Manifest::new("deep-recursion", format!("{depth}"))
    }
}

wasmgate_sdk::export_plugin!(Deep);
