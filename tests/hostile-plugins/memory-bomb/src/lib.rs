//! Hostile: `manifest()` allocates without bound. The host's memory cap
//! (StoreLimits) must stop it.

use wasmgate_sdk::{Manifest, Plugin};

struct Bomb;

impl Plugin for Bomb {
    fn manifest() -> Manifest {
        let mut hoard: Vec<Vec<u8>> = Vec::new();
        loop {
            // 1 MiB at a time, touched so it is really allocated.
            hoard.push(std::hint::black_box(vec![1u8; 1 << 20]));
            if hoard.len() == usize::MAX {
                break;
            }
        }
        Manifest::new("memory-bomb", format!("{}", hoard.len()))
    }
}

wasmgate_sdk::export_plugin!(Bomb);
