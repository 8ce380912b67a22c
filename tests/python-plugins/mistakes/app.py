"""A Python test plugin whose manifest makes five mistakes, one per server:
`tests/tests/plugins/check_sources.rs` checks that `wasmgate check` reports each
with the same field path, value and message as the same mistake in a
`plugin.yaml` (docs/declarations.md §2a: one validator for every source).

Built by `cargo xtask plugins` into `target/python-plugins/mistakes/mistakes.wasm`.
"""

import wasmgate_sdk as sdk
from wasmgate_sdk import App, Manifest, Requires, Server


class Mistakes(sdk.Plugin):
    def manifest(self):
        return (
            Manifest("mistakes", "0.1.0")
            # A folder where a bare command name belongs.
            .server(
                Server.stdio("bare-name", "uvx")
                .app(App.linux().command("bin/git"))
                .requires(Requires.app())
            )
            # A path that climbs out with `..`.
            .server(
                Server.stdio("dot-dot", "uvx")
                .app(App.linux().path("~/x/../y"))
                .requires(Requires.app())
            )
            # A minimum version that is not dotted numbers.
            .server(
                Server.stdio("bad-version", "uvx")
                .app(App.linux().command("git"))
                .requires(Requires.app().min_version("one.two"))
            )
            # A URL that is not http(s).
            .server(Server.http("bad-url", "ftp://example.com/mcp"))
            # An app block with nowhere to look.
            .server(
                Server.stdio("no-location", "uvx")
                .app(App.darwin().bundle())
                .requires(Requires.app())
            )
        )

    def probe_version(self, server, os, grant):
        return None


WitWorld = sdk.export(Mistakes)
