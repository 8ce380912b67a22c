//! Codex's `config.toml` (`~/.codex/config.toml`, `docs/mcp-client.md`
//! §1.4): each `[mcp_servers.<id>]` table, parsed by the `toml` crate.
//!
//! | Codex | wasmgate |
//! |---|---|
//! | `command`, `args`, `env` | the same |
//! | `env_vars` (names) | `env_passthrough` |
//! | `url` | `url` |
//! | `bearer_token_env_var = "T"` | `headers.Authorization: "Bearer ${T}"` |
//! | `http_headers` | `headers` |
//! | `env_http_headers = {H = "V"}` | `headers.H: "${V}"` |
//! | `enabled` | `enabled` |
//! | `startup_timeout_sec` / `startup_timeout_ms` | `connect_timeout` |
//! | `tool_timeout_sec` | `timeout` |
//! | `enabled_tools` / `disabled_tools` | `tools.include` / `tools.exclude` |
//!
//! `cwd` is refused by name (wasmgate has no per-server working folder).
//! Other top-level tables of the file belong to Codex and are ignored.

use super::{Builder, Decoded, Format, copy, entries, entry_mapping, refuse_keys};
use crate::manifest::schema::ManifestContext;
use crate::validation::{Problem, must_be};
use crate::document::{Mapping, Value};

const KNOWN: [&str; 15] = [
    "command",
    "args",
    "env",
    "env_vars",
    "url",
    "bearer_token_env_var",
    "http_headers",
    "env_http_headers",
    "enabled",
    "startup_timeout_sec",
    "startup_timeout_ms",
    "tool_timeout_sec",
    "enabled_tools",
    "disabled_tools",
    "type",
];

const UNSUPPORTED: [(&str, &str); 1] = [(
    "cwd",
    "wasmgate starts a server in its own working folder; give absolute paths in command and args",
)];

/// Whether `text` is TOML with a `mcp_servers` table (a Codex config under
/// a name other than `*.toml`).
pub fn looks_like_toml(text: &str) -> bool {
    toml::from_str::<toml::Table>(text).is_ok_and(|t| t.contains_key("mcp_servers"))
}

/// Whether `text` has a Codex `[mcp_servers…]` table header on a line of its
/// own and no YAML `mcp_servers:` key at its top level: a file that is no
/// valid YAML is then reported as the TOML it is meant to be, with the TOML
/// parser's position, not as broken YAML (and a broken wasmgate YAML file
/// keeps its YAML error).
pub fn has_codex_header(text: &str) -> bool {
    let header = text.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with("[mcp_servers.") || l.starts_with("[mcp_servers]")
    });
    header
        && !text.lines().any(|l| {
            ["mcp_servers", "\"mcp_servers\"", "'mcp_servers'"]
                .iter()
                .any(|k| l.strip_prefix(k).is_some_and(|r| r.trim_start().starts_with(':')))
        })
}

/// `is not valid TOML at line L, column C: <what>` for a parse error at
/// `span` of `text`. The parser's own rendering quotes the source line,
/// which may hold a secret (an `env` value, a bearer token), so only its
/// position and its message are shown, redacted and cut
/// (`docs/security.md`, "Redaction").
pub(crate) fn not_toml(text: &str, message: &str, span: Option<std::ops::Range<usize>>) -> String {
    let what = crate::secret::redact_patterns(message.trim());
    let what: String = what
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    let what = match what.char_indices().nth(MAX_TOML_MESSAGE) {
        Some((i, _)) => format!("{}…", &what[..i]),
        None => what,
    };
    match span.filter(|r| text.is_char_boundary(r.start)) {
        Some(r) => {
            // As an editor shows it: a lone CR ends a line (TOML refuses
            // one), a byte order mark is no column.
            let (line, before) = crate::manifest::load::editor_place(text, r.start);
            format!("is not valid TOML at line {line}, column {}: {what}", before + 1)
        }
        None => format!("is not valid TOML: {what}"),
    }
}

/// Longest parser message [`not_toml`] shows, in characters.
const MAX_TOML_MESSAGE: usize = 200;

/// Decodes a Codex `config.toml`; `Err` is the message after the file name.
pub fn decode(text: &str, ctx: &ManifestContext) -> Result<Decoded, String> {
    let table = parse_table(text)?;
    let mut b = Builder::default();
    match table.get("mcp_servers") {
        None => {}
        Some(toml::Value::Table(servers)) => {
            let servers = match to_yaml(&toml::Value::Table(servers.clone())) {
                Value::Mapping(m) => m,
                _ => Mapping::new(),
            };
            for (name, entry) in entries(&servers) {
                let res = entry_mapping(entry).map(convert);
                b.add_from(ctx, &name, entry, Format::Codex, res);
            }
        }
        Some(other) => {
            return Err(format!(
                "mcp_servers must be a table of [mcp_servers.<id>] (got a {})",
                other.type_str()
            ));
        }
    }
    Ok(b.finish(Format::Codex))
}

/// `text` as a TOML table nested at most 64 levels deep, as YAML and
/// JSON are read (`docs/security.md`, the nesting row); `Err` is the
/// message after the file name.
pub(crate) fn parse_table(text: &str) -> Result<toml::Table, String> {
    let table: toml::Table =
        toml::from_str(text).map_err(|e| not_toml(text, e.message(), e.span()))?;
    let max = crate::manifest::depth::MAX_DEPTH;
    if table.values().map(depth).max().unwrap_or(0) >= max {
        return Err(format!(
            "is nested deeper than {max} levels; wasmgate reads at most {max} levels of TOML, as of YAML or JSON"
        ));
    }
    Ok(table)
}

/// How deep `v`'s arrays and tables nest (a scalar 0, an empty array 1).
/// The `toml` crate stops a key path and a value's nesting at 80 levels
/// each, so neither this nor [`to_yaml`] recurses far.
fn depth(v: &toml::Value) -> usize {
    match v {
        toml::Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        toml::Value::Table(t) => 1 + t.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// A TOML value as the universal value type (a date-time becomes its text).
pub fn to_yaml(v: &toml::Value) -> Value {
    match v {
        toml::Value::String(s) => Value::String(s.clone()),
        toml::Value::Integer(i) => Value::Number((*i).into()),
        toml::Value::Float(f) => Value::Number((*f).into()),
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::Datetime(d) => Value::String(d.to_string()),
        toml::Value::Array(a) => Value::Sequence(a.iter().map(to_yaml).collect()),
        toml::Value::Table(t) => Value::Mapping(
            t.iter()
                .map(|(k, v)| (Value::String(k.clone()), to_yaml(v)))
                .collect(),
        ),
    }
}

/// One `[mcp_servers.<id>]` in wasmgate's schema.
fn convert(m: &Mapping) -> (Mapping, Vec<Problem>) {
    let mut fails: Vec<Problem> = Vec::new();
    refuse_keys(m, Format::Codex, &KNOWN, &UNSUPPORTED, &mut fails);
    let mut out = Mapping::new();
    // Codex infers the transport; a `type` some writers add is checked.
    super::mcpjson::check_type(m.get("type"), m.contains_key("url"), &mut fails);
    for k in ["command", "args", "env", "url", "enabled"] {
        copy(m, k, &mut out, k);
    }
    copy(m, "env_vars", &mut out, "env_passthrough");
    copy(m, "tool_timeout_sec", &mut out, "timeout");
    match (m.get("startup_timeout_sec"), m.get("startup_timeout_ms")) {
        (Some(_), Some(_)) => fails.push(Problem::new(
            "startup_timeout_ms",
            "cannot be combined with startup_timeout_sec",
        )),
        (Some(s), None) => {
            out.insert("connect_timeout".into(), s.clone());
        }
        // Checked here, in milliseconds: the validator would name the
        // converted seconds.
        (None, Some(Value::Number(n))) if n.as_f64().is_some() => {
            let ms = n.as_f64().unwrap_or(0.0);
            let max_ms = crate::manifest::schema::MAX_CONNECT_TIMEOUT.as_millis();
            if ms.is_nan() || ms < 1.0 {
                fails.push(Problem::new(
                    "startup_timeout_ms",
                    format!("({n}) must be a positive number of milliseconds, at least 1"),
                ));
            } else if ms > max_ms as f64 {
                fails.push(Problem::new(
                    "startup_timeout_ms",
                    format!(
                        "is {n} ms, more than the limit of {max_ms} ms (ten minutes); a server \
                         needs far less to start and answer initialize"
                    ),
                ));
            } else {
                out.insert("connect_timeout".into(), Value::Number((ms / 1000.0).into()));
            }
        }
        (None, Some(o)) => fails.push(Problem::new(
            "startup_timeout_ms",
            must_be("a number of milliseconds", o),
        )),
        (None, None) => {}
    }
    let mut headers = Mapping::new();
    match m.get("http_headers") {
        None => {}
        Some(Value::Mapping(h)) => headers.extend(h.clone()),
        Some(o) => fails.push(Problem::new("http_headers", must_be("a table", o))),
    }
    match m.get("env_http_headers") {
        None => {}
        Some(Value::Mapping(h)) => {
            for (k, v) in h {
                let key = crate::validation::key_text(k);
                match v.as_str() {
                    Some(var) if !var.is_empty() => {
                        headers.insert(k.clone(), Value::String(format!("${{{var}}}")));
                    }
                    _ => fails.push(Problem::new(
                        format!("env_http_headers.{key}"),
                        must_be("an environment variable name", v),
                    )),
                }
            }
        }
        Some(o) => fails.push(Problem::new("env_http_headers", must_be("a table", o))),
    }
    match m.get("bearer_token_env_var") {
        None => {}
        Some(Value::String(var)) if !var.is_empty() => {
            if headers.keys().any(|k| {
                k.as_str()
                    .is_some_and(|k| k.eq_ignore_ascii_case("authorization"))
            }) {
                fails.push(Problem::new(
                    "bearer_token_env_var",
                    "cannot be combined with an Authorization header",
                ));
            }
            headers.insert(
                "Authorization".into(),
                Value::String(format!("Bearer ${{{var}}}")),
            );
        }
        Some(o) => fails.push(Problem::new(
            "bearer_token_env_var",
            must_be("an environment variable name", o),
        )),
    }
    if !headers.is_empty() {
        out.insert("headers".into(), Value::Mapping(headers));
    }
    let list = |k: &str, fails: &mut Vec<Problem>| -> Option<Vec<Value>> {
        match m.get(k) {
            None => None,
            Some(Value::Sequence(s)) => Some(s.clone()),
            Some(o) => {
                fails.push(Problem::new(
                    k.to_string(),
                    must_be("a list of tool names", o),
                ));
                None
            }
        }
    };
    let enabled = list("enabled_tools", &mut fails);
    let disabled = list("disabled_tools", &mut fails);
    if enabled.is_some() || disabled.is_some() {
        let mut tools = Mapping::new();
        // Codex applies disabled_tools after enabled_tools; wasmgate's
        // include wins over exclude, so a tool in both is left out of include.
        if let Some(en) = enabled {
            let dis = disabled.clone().unwrap_or_default();
            let inc: Vec<Value> = en.into_iter().filter(|t| !dis.contains(t)).collect();
            tools.insert("include".into(), Value::Sequence(inc));
        }
        if let Some(dis) = disabled {
            tools.insert("exclude".into(), Value::Sequence(dis));
        }
        out.insert("tools".into(), Value::Mapping(tools));
    }
    (out, fails)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> ManifestContext {
        ManifestContext::new("config.toml", std::path::PathBuf::from("/nonexistent"))
    }

    #[test]
    fn a_toml_error_is_placed_as_an_editor_counts_without_the_byte_order_mark() {
        for (text, at) in [
            ("x = = 1\n", "line 1, column 5:"),
            ("\u{feff}x = = 1\n", "line 1, column 5:"),
            ("\u{feff}a = \"\u{e9}\"\nb = = 1\n", "line 2, column 5:"),
            ("a = 1\rb = = 2\r\n", "line 2, column "),
        ] {
            let e = decode(text, &ctx()).err().unwrap();
            assert!(e.contains(at), "{text:?}: {e}");
        }
    }

    #[test]
    fn toml_deeper_than_64_levels_is_refused_as_yaml_and_json_are() {
        // The root table is level 1, as a YAML file's top mapping is:
        // `mcp_servers` 2, the server 3, `args` 4, then the arrays.
        let nested = |arrays: usize| {
            format!(
                "[mcp_servers.a]\ncommand = \"x\"\nargs = {}{}\n",
                "[".repeat(arrays),
                "]".repeat(arrays)
            )
        };
        assert!(decode(&nested(61), &ctx()).is_ok());
        let e = decode(&nested(62), &ctx()).err().unwrap();
        assert!(e.starts_with("is nested deeper than 64 levels"), "{e}");
        // The same depth in a key path.
        let keys: Vec<String> = (0..70).map(|i| format!("k{i}")).collect();
        let text = format!("[mcp_servers.a]\ncommand = \"x\"\n[other.{}]\n", keys.join("."));
        assert!(decode(&text, &ctx()).err().unwrap().contains("deeper than 64"));
        // The toml crate's own limit (80) stops what is deeper still.
        let e = decode(&nested(200), &ctx()).err().unwrap();
        assert!(e.contains("not valid TOML"), "{e}");
    }
}
