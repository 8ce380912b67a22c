//! A benchmark component, not an example: its `manifest()` returns 10,000
//! servers, the same declarations as the `plugin.yaml` that
//! `host/examples/manifest_bench.rs` writes (a plain path, a `*` versioned
//! folder, `command`, `flatpak`, `snap` in turn; every second one with a
//! first candidate that never exists), so the bench can time a component's
//! manifest against the YAML on the same content. Built by
//! `cargo xtask bench-plugins` into `target/bench-plugins/`.

use wasmgate_sdk::{App, Manifest, Plugin, Requires, Server};

/// How many servers the manifest holds (the bench's default N).
const SERVERS: usize = 10_000;

struct ManyServers;

fn server(i: usize) -> Server {
    let name = format!("app{i}");
    let mut app = App::linux();
    if i % 2 == 1 {
        app = app.path(format!("/usr/local/{name}/{name}"));
    }
    app = match i % 5 {
        0 => app.path(format!("/opt/{name}/bin/{name}")),
        1 => app.path(format!("/opt/vendor{i}/{name}-*/bin/{name}")),
        2 => app.command(name.clone()),
        3 => app.flatpak(format!("org.example.App{i}")),
        _ => app.snap(name.clone()),
    };
    Server::stdio(name.clone(), format!("{name}-mcp"))
        .app(app)
        .requires(Requires::app())
}

impl Plugin for ManyServers {
    fn manifest() -> Manifest {
        (0..SERVERS).fold(Manifest::new("bench", "1.0.0"), |m, i| m.server(server(i)))
    }
}

wasmgate_sdk::export_plugin!(ManyServers);
