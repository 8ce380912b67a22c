//! Hostile: prints 100 MiB to stdout (and a line to stderr), then returns a
//! valid manifest. The host keeps a bounded prefix for its log and drops
//! the rest; the plugin loads.

use std::io::Write;
use wasmgate_sdk::{Manifest, Plugin};

struct Chatty;

impl Plugin for Chatty {
    fn manifest() -> Manifest {
        let line = [b'x'; 1023];
        let mut out = std::io::stdout().lock();
        for _ in 0..(100 * 1024) {
            // Errors are ignored: a closed stream must not stop the plugin.
            let _ = out.write_all(&line);
            let _ = out.write_all(b"\n");
        }
        let _ = out.flush();
        eprintln!("chatty: done");
        Manifest::new("chatty", "0.1.0")
    }
}

wasmgate_sdk::export_plugin!(Chatty);
