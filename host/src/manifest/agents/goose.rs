//! Goose's `config.yaml` (`~/.config/goose/config.yaml`,
//! `docs/mcp-client.md` §1.4): each `extensions.<key>` entry.
//!
//! | Goose | wasmgate |
//! |---|---|
//! | `type: stdio`, `cmd`, `args`, `envs` | `command`, `args`, `env` |
//! | `env_keys` (names) | `env_passthrough` |
//! | `type: streamable_http`, `uri`, `headers` | `url`, `headers` |
//! | `timeout` (seconds) | `timeout` |
//! | `enabled` | `enabled` |
//! | `available_tools` (non-empty) | `tools.include` |
//!
//! `name`, `display_name`, `description` and `bundled` describe the entry
//! and are read as such. `type: sse` is refused; Goose's own extensions
//! (`builtin`, `platform`, `frontend`, `inline_python`) are no MCP server
//! wasmgate can start: each is left out with a warning. Other top-level
//! keys (`GOOSE_PROVIDER`, …) belong to Goose and are ignored.

use super::{Builder, Decoded, Format, copy, entries, entry_mapping, refuse_keys};
use crate::manifest::schema::ManifestContext;
use crate::validation::{Problem, must_be};
use crate::document::{Mapping, Value};

const KNOWN: [&str; 14] = [
    "type",
    "name",
    "display_name",
    "description",
    "bundled",
    "cmd",
    "args",
    "envs",
    "env_keys",
    "uri",
    "headers",
    "timeout",
    "enabled",
    "available_tools",
];

/// Whether an `extensions` mapping is Goose's: some entry is a mapping
/// with `type`, `cmd` or `uri`.
pub fn looks_like_goose(ext: &Mapping) -> bool {
    ext.values().any(|v| {
        matches!(v, Value::Mapping(m) if ["type", "cmd", "uri"].iter().any(|k| m.contains_key(*k)))
    })
}

/// Converts every entry of `extensions`.
pub fn decode(ext: &Mapping, ctx: &ManifestContext) -> Decoded {
    let mut b = Builder::default();
    for (name, entry) in entries(ext) {
        if let Value::Mapping(m) = entry
            && let Some(t @ ("builtin" | "platform" | "frontend" | "inline_python")) =
                m.get("type").and_then(Value::as_str)
        {
            b.warnings.push(format!(
                "{}: is a Goose {t} extension, which runs inside Goose, not an MCP server wasmgate can start; left out",
                ctx.server_where(&name)
            ));
            continue;
        }
        let res = entry_mapping(entry).map(convert);
        b.add_from(ctx, &name, entry, Format::Goose, res);
    }
    b.finish(Format::Goose)
}

/// What `cmd`, `uri` and `headers` must be for the extension's `type`,
/// said in Goose's own words (wasmgate's validator would speak of
/// `command` and `url`, which the user's file does not have): Goose reads
/// `cmd` for a `stdio` extension and `uri` (with its `headers`) for a
/// `streamable_http` one, and nothing else of the other kind.
fn shape(m: &Mapping, fails: &mut Vec<Problem>) {
    let has = |k: &str| m.get(k).is_some_and(|v| !v.is_null());
    let t = m.get("type").and_then(Value::as_str);
    let (cmd, uri) = (has("cmd"), has("uri"));
    match (t, cmd, uri) {
        (_, true, true) => fails.push(Problem::new(
            "uri",
            "cannot be combined with cmd: an extension has a cmd (type stdio) or a uri (type streamable_http)",
        )),
        (Some("stdio"), false, true) => fails.push(Problem::new(
            "uri",
            "is for type streamable_http; a stdio extension runs its cmd, which is missing",
        )),
        (Some("streamable_http"), true, false) => fails.push(Problem::new(
            "cmd",
            "is for type stdio; a streamable_http extension connects to its uri, which is missing",
        )),
        (Some("stdio"), false, false) => fails.push(Problem::new("cmd", "is missing: a stdio extension runs a cmd")),
        (Some("streamable_http"), false, false) => {
            fails.push(Problem::new("uri", "is missing: a streamable_http extension connects to a uri"));
        }
        (None, false, false) => fails.push(Problem::new(
            "cmd",
            "is missing: an extension has a cmd (type stdio) or a uri (type streamable_http)",
        )),
        _ => {}
    }
    if cmd && !uri && has("headers") {
        fails.push(Problem::new("headers", "is only read with a uri (type streamable_http)"));
    }
}

fn convert(m: &Mapping) -> (Mapping, Vec<Problem>) {
    let mut fails: Vec<Problem> = Vec::new();
    refuse_keys(m, Format::Goose, &KNOWN, &[], &mut fails);
    let mut out = Mapping::new();
    shape(m, &mut fails);
    match m.get("type").and_then(Value::as_str) {
        Some("stdio") | None if !m.contains_key("uri") => {}
        Some("streamable_http") | None => {}
        Some("sse") => fails.push(Problem::new(
            "type",
            "is 'sse': the legacy SSE transport is not supported; use streamable_http",
        )),
        Some(other) => fails.push(Problem::new(
            "type",
            format!("must be 'stdio' (with cmd) or 'streamable_http' (with uri); got '{other}'"),
        )),
    }
    if let Some(t) = m.get("type").filter(|t| !t.is_string()) {
        fails.push(Problem::new("type", must_be("a string", t)));
    }
    copy(m, "cmd", &mut out, "command");
    copy(m, "args", &mut out, "args");
    copy(m, "envs", &mut out, "env");
    copy(m, "env_keys", &mut out, "env_passthrough");
    copy(m, "uri", &mut out, "url");
    copy(m, "headers", &mut out, "headers");
    copy(m, "timeout", &mut out, "timeout");
    copy(m, "enabled", &mut out, "enabled");
    match m.get("available_tools") {
        None | Some(Value::Null) => {}
        // Goose offers every tool when the list is empty.
        Some(Value::Sequence(s)) if s.is_empty() => {}
        Some(Value::Sequence(s)) => {
            let mut tools = Mapping::new();
            tools.insert("include".into(), Value::Sequence(s.clone()));
            out.insert("tools".into(), Value::Mapping(tools));
        }
        Some(o) => fails.push(Problem::new(
            "available_tools",
            must_be("a list of tool names", o),
        )),
    }
    (out, fails)
}
