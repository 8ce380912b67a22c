//! VS Code's MCP config (`docs/mcp-client.md` §1.4): `.vscode/mcp.json` or
//! the user's `mcp.json` with a top-level `servers` object (beside
//! `inputs`), or `settings.json` with `"mcp": {"servers": …}`.
//!
//! An entry: `type` (`stdio`, `http`; `sse` refused), `command`, `args`,
//! `env`, `envFile`, `url`, `headers`; `${input:ID}` is refused (wasmgate
//! cannot prompt), `dev` and the sandbox keys are refused by name.

use super::{Builder, Decoded, Format, Places, entries, entry_mapping};
use crate::manifest::schema::ManifestContext;
use yaml_serde::{Mapping, Value};

const KNOWN: [&str; 7] = [
    "type", "command", "args", "env", "envFile", "url", "headers",
];

const UNSUPPORTED: [(&str, &str); 4] = [
    (
        "dev",
        "VS Code's watch-and-debug mode for server authors has no wasmgate counterpart",
    ),
    (
        "sandboxEnabled",
        "wasmgate does not sandbox a server process; leave it out",
    ),
    (
        "sandbox",
        "wasmgate does not sandbox a server process; leave it out",
    ),
    (
        "cwd",
        "wasmgate starts a server in its own working folder; give absolute paths in command and args",
    ),
];

/// The `servers` object of a VS Code file: top-level `servers`, or
/// `mcp.servers` of a settings.json.
pub fn servers_of(top: &Mapping) -> Option<&Mapping> {
    match top.get("servers") {
        Some(Value::Mapping(s)) => Some(s),
        _ => match top.get("mcp") {
            Some(Value::Mapping(mcp)) => match mcp.get("servers") {
                Some(Value::Mapping(s)) => Some(s),
                _ => None,
            },
            _ => None,
        },
    }
}

/// Converts every entry of `servers`.
pub fn decode(servers: &Mapping, ctx: &ManifestContext, places: &Places) -> Decoded {
    let mut b = Builder::default();
    for (name, entry) in entries(servers) {
        let res = entry_mapping(entry).and_then(|m| {
            super::mcpjson::convert_with(m, ctx, places, Format::VsCode, &KNOWN, &UNSUPPORTED)
        });
        b.add(ctx, &name, res);
    }
    b.finish(Format::VsCode)
}
