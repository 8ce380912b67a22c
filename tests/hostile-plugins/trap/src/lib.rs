//! Hostile: `manifest()` panics (a trap in the guest).

use wasmgate_sdk::{Manifest, Plugin};

struct Panics;

impl Plugin for Panics {
    fn manifest() -> Manifest {
        panic!("this plugin always panics in manifest()")
    }
}

wasmgate_sdk::export_plugin!(Panics);
