//! The `mcpServers` JSON of Claude Desktop (`claude_desktop_config.json`),
//! Claude Code (`.mcp.json`; `~/.claude.json` with its user scope at the
//! top and its local scope under `projects.<folder>`), Cursor (`mcp.json`)
//! and Windsurf (`mcp_config.json`); `docs/mcp-client.md` §1.4.
//!
//! An entry: `command`, `args`, `env` (stdio), `url` (Windsurf:
//! `serverUrl`), `headers` (HTTP), `type` (`stdio`, `http`; `sse` is
//! refused), Cursor's `envFile`, Windsurf's `disabled` and `disabledTools`.
//! Claude Code's `headersHelper` and `oauth` and Cursor's `auth` are refused
//! by name.

use super::{Builder, Decoded, Format, Places, entries, entry_mapping, refuse_keys};
use crate::manifest::schema::ManifestContext;
use crate::validation::{Problem, describe, must_be, scalar_text};
use std::path::Path;
use crate::document::{Mapping, Value};

const KNOWN: [&str; 9] = [
    "command",
    "args",
    "env",
    "envFile",
    "url",
    "serverUrl",
    "headers",
    "type",
    "disabled",
];

const UNSUPPORTED: [(&str, &str); 6] = [
    (
        "headersHelper",
        "wasmgate runs no helper command for headers; write them in headers (\"${VAR}\" reads the environment)",
    ),
    (
        "oauth",
        "OAuth client settings are not read; give a bearer token in headers (\"Authorization\": \"Bearer ${TOKEN}\")",
    ),
    (
        "auth",
        "OAuth client settings are not read; give a bearer token in headers (\"Authorization\": \"Bearer ${TOKEN}\")",
    ),
    (
        "disabledTools",
        "list the tools to leave out in wasmgate's tools.exclude instead",
    ),
    (
        "autoApprove",
        "wasmgate asks no per-tool approval; the agent that calls wasmgate does",
    ),
    (
        "alwaysAllow",
        "wasmgate asks no per-tool approval; the agent that calls wasmgate does",
    ),
];

/// Largest `envFile` read, in bytes (1 MiB).
pub const MAX_ENV_FILE_BYTES: u64 = 1024 * 1024;

/// Converts a file's `mcpServers` (and, for `~/.claude.json`, the
/// `projects.<current folder>.mcpServers` of Claude Code's local scope,
/// which win over user-scope entries of the same name).
pub fn decode(top: &Mapping, ctx: &ManifestContext, places: &Places) -> Decoded {
    let mut b = Builder::default();
    // In file order; a local-scope entry replaces the user-scope one of the
    // same name and moves to the end (an index, not a scan per entry: a
    // `~/.claude.json` may hold thousands of projects).
    let mut all: Vec<Option<(String, Value)>> = Vec::new();
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut put = |name: String, entry: Value| {
        if let Some(old) = index.insert(name.clone(), all.len()) {
            all[old] = None;
        }
        all.push(Some((name, entry)));
    };
    if let Some(m) = scope(top.get("mcpServers"), ctx, "mcpServers", &mut b.errors) {
        for (n, v) in entries(m) {
            put(n, v.clone());
        }
    }
    if let (Some(Value::Mapping(projects)), Some(cwd)) = (top.get("projects"), &places.cwd) {
        let here = Folder::new(cwd);
        for (k, p) in projects {
            let Some(folder) = k.as_str() else { continue };
            if !here.is(Path::new(folder)) {
                continue;
            }
            let path = format!("projects.{}.mcpServers", crate::validation::echo_name(folder));
            if let Some(m) = scope(p.get("mcpServers"), ctx, &path, &mut b.errors) {
                for (n, v) in entries(m) {
                    put(n, v.clone());
                }
            }
        }
    }
    for (name, entry) in all.into_iter().flatten() {
        let res = entry_mapping(&entry).map(|m| convert(m, ctx, places));
        b.add(ctx, &name, res);
    }
    b.finish(Format::McpServers)
}

/// One scope's `mcpServers` (at `path`): its mapping, nothing when it is
/// absent or null, and an error when it is anything else — said, not
/// skipped in silence, for the user scope and the local one alike.
fn scope<'v>(
    v: Option<&'v Value>,
    ctx: &ManifestContext,
    path: &str,
    errors: &mut Vec<crate::manifest::ManifestError>,
) -> Option<&'v Mapping> {
    match v {
        Some(Value::Mapping(m)) => Some(m),
        None | Some(Value::Null) => None,
        Some(other) => {
            errors.push(crate::manifest::ManifestError::new(
                &ctx.where_,
                None,
                path,
                must_be("an object", other),
            ));
            None
        }
    }
}

/// Whether `top` is a `~/.claude.json` whose servers are all in its local
/// scopes (`projects.<folder>.mcpServers`), with no user-scope
/// `mcpServers`: still Claude Code's file.
pub fn has_project_servers(top: &Mapping) -> bool {
    matches!(top.get("projects"), Some(Value::Mapping(projects))
        if projects.values().any(|p| p.get("mcpServers").is_some()))
}

/// The current folder, to find its `projects.<folder>` key: equal as
/// written, or the same folder once both are canonical. The folder is
/// canonicalized once; a key only when its last component is the
/// folder's (as written or canonical), so thousands of other projects
/// cost no file-system call each. Claude Code writes the key from its
/// own `getcwd()`, which is canonical already.
struct Folder<'a> {
    path: &'a Path,
    canonical: Option<std::path::PathBuf>,
}

impl<'a> Folder<'a> {
    fn new(path: &'a Path) -> Self {
        Folder {
            path,
            canonical: path.canonicalize().ok(),
        }
    }

    fn is(&self, key: &Path) -> bool {
        if key == self.path || self.canonical.as_deref() == Some(key) {
            return true;
        }
        let Some(canonical) = &self.canonical else {
            return false;
        };
        let named = |p: &Path| p.file_name().is_some() && p.file_name() == key.file_name();
        // Claude Code writes absolute keys; a relative one would resolve
        // against wasmgate's own working folder, not any project's.
        key.is_absolute()
            && (named(self.path) || named(canonical))
            && key.canonicalize().is_ok_and(|k| &k == canonical)
    }
}

pub(crate) fn convert(
    m: &Mapping,
    ctx: &ManifestContext,
    places: &Places,
) -> (Mapping, Vec<Problem>) {
    convert_with(m, ctx, places, Format::McpServers, &KNOWN, &UNSUPPORTED)
}

/// [`convert`] with the key set of one format (VS Code's is smaller).
pub(crate) fn convert_with(
    m: &Mapping,
    ctx: &ManifestContext,
    places: &Places,
    format: Format,
    known: &[&str],
    unsupported: &[(&str, &str)],
) -> (Mapping, Vec<Problem>) {
    let mut fails = Vec::new();
    refuse_keys(m, format, known, unsupported, &mut fails);
    let mut out = Mapping::new();
    let is_http = m.contains_key("url") || m.contains_key("serverUrl");
    check_type(m.get("type"), is_http, &mut fails);
    strings(m, "command", ctx, places, true, &mut out, &mut fails);
    strings(m, "args", ctx, places, true, &mut out, &mut fails);
    strings(m, "env", ctx, places, false, &mut out, &mut fails);
    if m.contains_key("url") && m.contains_key("serverUrl") {
        fails.push(Problem::new(
            "serverUrl",
            "cannot be combined with url (both name the endpoint)",
        ));
    }
    strings(m, "url", ctx, places, true, &mut out, &mut fails);
    if let Some(v) = m.get("serverUrl") {
        let mut tmp = Mapping::new();
        tmp.insert("serverUrl".into(), v.clone());
        strings(&tmp, "serverUrl", ctx, places, true, &mut out, &mut fails);
        if let Some(u) = out.shift_remove("serverUrl") {
            out.insert("url".into(), u);
        }
    }
    strings(m, "headers", ctx, places, false, &mut out, &mut fails);
    match m.get("disabled") {
        None | Some(Value::Null) => {}
        Some(Value::Bool(d)) => {
            out.insert("enabled".into(), Value::Bool(!d));
        }
        Some(o) => fails.push(Problem::new("disabled", must_be("a boolean", o))),
    }
    if let Some(v) = m.get("envFile").filter(|v| !v.is_null()) {
        match env_file(v, ctx, places) {
            Ok(vars) => {
                let mut env = match out.shift_remove("env") {
                    Some(Value::Mapping(e)) => e,
                    _ => Mapping::new(),
                };
                // `env` wins over the file (Cursor's order).
                for (k, val) in vars {
                    if !env.contains_key(k.as_str()) {
                        env.insert(Value::String(k), Value::String(val));
                    }
                }
                out.insert("env".into(), Value::Mapping(env));
            }
            Err(msg) => fails.push(Problem::new("envFile", msg)),
        }
    }
    (out, fails)
}

/// `type`: `stdio` (with `command`) or `http` / `streamable-http` (with a
/// URL); `sse` is refused.
pub(crate) fn check_type(t: Option<&Value>, is_http: bool, fails: &mut Vec<Problem>) {
    let Some(t) = t.filter(|v| !v.is_null()) else {
        return;
    };
    match (t.as_str(), is_http) {
        (Some("stdio"), false) | (Some("http" | "streamable-http" | "streamableHttp"), true) => {}
        (Some("sse"), _) => fails.push(Problem::new(
            "type",
            "is 'sse': the legacy SSE transport is not supported; use streamable HTTP (type: http)",
        )),
        _ => fails.push(Problem::new(
            "type",
            format!(
                "must be 'stdio' (with command) or 'http' (with url); got {}",
                t.as_str()
                    .map(|s| format!("'{s}'"))
                    .unwrap_or_else(|| describe(t).to_string())
            ),
        )),
    }
}

/// Copies `m[key]` to `out[key]` with the agent variables expanded in each
/// string it holds (a string, a list's items, a mapping's values); with
/// `env_now` `${VAR}` is expanded here too (fields wasmgate does not
/// interpolate itself), unless [`Places::keep_env_vars`]. Values of another shape are copied for the
/// validator to name.
fn strings(
    m: &Mapping,
    key: &str,
    ctx: &ManifestContext,
    places: &Places,
    env_now: bool,
    out: &mut Mapping,
    fails: &mut Vec<Problem>,
) {
    let Some(v) = m.get(key).filter(|v| !v.is_null()) else {
        return;
    };
    let env = (env_now && !places.keep_env_vars).then_some(&ctx.env);
    let mut one = |s: &str, path: String| match super::vars::expand(s, places, env) {
        Ok(t) => Value::String(t),
        Err(msg) => {
            fails.push(Problem::new(path, msg));
            Value::String(s.to_string())
        }
    };
    let v = match v {
        Value::String(s) => one(s, key.to_string()),
        Value::Sequence(items) => Value::Sequence(
            items
                .iter()
                .enumerate()
                .map(|(i, it)| match it {
                    Value::String(s) => one(s, format!("{key}[{i}]")),
                    other => other.clone(),
                })
                .collect(),
        ),
        Value::Mapping(map) => Value::Mapping(
            map.iter()
                .map(|(k, it)| {
                    let p = format!("{key}.{}", crate::validation::key_text(k));
                    let it = match it {
                        Value::String(s) => one(s, p),
                        other => other.clone(),
                    };
                    (k.clone(), it)
                })
                .collect(),
        ),
        other => other.clone(),
    };
    out.insert(Value::String(key.into()), v);
}

/// Cursor's `envFile`: a dotenv file (relative to the config file's
/// folder), read bounded and parsed by `dotenvy`.
fn env_file(
    v: &Value,
    ctx: &ManifestContext,
    places: &Places,
) -> Result<Vec<(String, String)>, String> {
    let Some(s) = scalar_text(v).filter(|s| !s.trim().is_empty()) else {
        return Err(must_be("a file path", v));
    };
    let s = super::vars::expand(&s, places, Some(&ctx.env))?;
    let path = ctx.plugin_dir.join(&s);
    let bytes =
        read_bounded(&path, MAX_ENV_FILE_BYTES).map_err(|e| format!("({}) {e}", path.display()))?;
    let mut out = Vec::new();
    for item in dotenvy::from_read_iter(bytes.as_slice()) {
        match item {
            Ok(kv) => out.push(kv),
            Err(e) => return Err(format!("({}) is not a valid env file: {e}", path.display())),
        }
    }
    Ok(out)
}

fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let f = std::fs::File::open(path).map_err(|e| format!("cannot be read: {e}"))?;
    if !f.metadata().is_ok_and(|m| m.is_file()) {
        return Err("is not a regular file".into());
    }
    let mut buf = Vec::new();
    f.take(limit + 1)
        .read_to_end(&mut buf)
        .map_err(|e| format!("cannot be read: {e}"))?;
    if buf.len() as u64 > limit {
        return Err(format!("is larger than {limit} bytes"));
    }
    Ok(buf)
}
