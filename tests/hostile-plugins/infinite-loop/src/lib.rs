//! Hostile: `manifest()` never returns (a loop without calls). The host's
//! epoch deadline must stop it. Its probe loops too.

use wasmgate_sdk::{Grant, Manifest, OsFamily, Plugin};

struct Spin;

fn spin() -> ! {
    let mut x: u64 = 0;
    loop {
        x = std::hint::black_box(x.wrapping_add(1));
    }
}

impl Plugin for Spin {
    fn manifest() -> Manifest {
        if std::hint::black_box(true) {
            spin()
        }
        Manifest::new("infinite-loop", "0.1.0")
    }

    fn probe_version(_: &str, _: OsFamily, _: &Grant) -> Result<Option<String>, String> {
        spin()
    }
}

wasmgate_sdk::export_plugin!(Spin);
