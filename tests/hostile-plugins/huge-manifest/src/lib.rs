//! Hostile: returns a 50 MiB manifest (one skill of 50 MiB). The host
//! refuses it by size instead of keeping it.

use wasmgate_sdk::{Manifest, Plugin, Skill};

struct Huge;

impl Plugin for Huge {
    fn manifest() -> Manifest {
        Manifest::new("huge-manifest", "0.1.0").skill(Skill::new("huge", "x".repeat(50 << 20)))
    }
}

wasmgate_sdk::export_plugin!(Huge);
