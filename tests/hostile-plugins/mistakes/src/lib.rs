//! A test plugin whose manifest makes five mistakes, one per server, the
//! same as the Python test plugin `tests/python-plugins/mistakes/app.py`:
//! `tests/tests/plugins/check_sources.rs` checks that `wasmgate check` reports each
//! alike from this component, the Python one and a `plugin.yaml`
//! (`docs/declarations.md` §2a: one validator for every source).

use wasmgate_sdk::{App, Grant, Manifest, OsFamily, Plugin, Requires, Server};

struct Mistakes;

impl Plugin for Mistakes {
    fn manifest() -> Manifest {
        Manifest::new("mistakes", "0.1.0")
            // A folder where a bare command name belongs.
            .server(
                Server::stdio("bare-name", "uvx")
                    .app(App::linux().command("bin/git"))
                    .requires(Requires::app()),
            )
            // A path that climbs out with `..`.
            .server(
                Server::stdio("dot-dot", "uvx")
                    .app(App::linux().path("~/x/../y"))
                    .requires(Requires::app()),
            )
            // A minimum version that is not dotted numbers.
            .server(
                Server::stdio("bad-version", "uvx")
                    .app(App::linux().command("git"))
                    .requires(Requires::app().min_version("one.two")),
            )
            // A URL that is not http(s).
            .server(Server::http("bad-url", "ftp://example.com/mcp"))
            // An app block with nowhere to look.
            .server(
                Server::stdio("no-location", "uvx")
                    .app(App::darwin().bundle())
                    .requires(Requires::app()),
            )
    }

    fn probe_version(_: &str, _: OsFamily, _: &Grant) -> Result<Option<String>, String> {
        Ok(None)
    }
}

wasmgate_sdk::export_plugin!(Mistakes);
