//! Other agents' MCP config files read as a `--config` file
//! (`docs/mcp-client.md` §1.4): Claude Desktop, Claude Code, Cursor and
//! Windsurf (`mcpServers` JSON), VS Code (`servers`), Codex (`config.toml`
//! `[mcp_servers.<id>]`) and Goose (`config.yaml` `extensions`).
//!
//! The format is recognised by content ([`decode_config`]). Each format's
//! module converts its server entries into entries of wasmgate's own
//! server schema (`mcp_servers.<name>`), which then go through the one
//! validator of [`super::schema`]; so validation and its errors stay one
//! path. A key of an entry that has no meaning in wasmgate is refused with
//! an error naming it (that server is left out, the others are kept).

pub mod codex;
pub mod edit;
pub mod goose;
mod json_edit;
pub mod mcpjson;
pub mod vars;
pub mod vscode;

use super::schema::{ManifestContext, ManifestError};
use crate::validation::{Problem, key_text, must_be};
use std::path::{Path, PathBuf};
use crate::document::{Keep, Mapping, Value};

/// The format a config file was read in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// wasmgate's (and Hermes') YAML with a top-level `mcp_servers:`.
    Wasmgate,
    /// A JSON (or YAML) `mcpServers` object: Claude Desktop, Claude Code,
    /// Cursor, Windsurf.
    McpServers,
    /// VS Code's `mcp.json` `servers` (or settings.json `mcp.servers`).
    VsCode,
    /// Codex `config.toml`.
    Codex,
    /// Goose `config.yaml` `extensions`.
    Goose,
}

impl Format {
    /// The format's name in messages.
    pub fn label(self) -> &'static str {
        match self {
            Format::Wasmgate => "wasmgate mcp_servers",
            Format::McpServers => "mcpServers (Claude / Cursor / Windsurf)",
            Format::VsCode => "VS Code servers",
            Format::Codex => "Codex config.toml",
            Format::Goose => "Goose extensions",
        }
    }

    /// The format's own fields that a conversion renames: `(own field, the
    /// wasmgate field path it becomes)`. Errors found by wasmgate's
    /// validator are shown under the user's own field name (`Builder::add_from`).
    fn own_names(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Format::Codex => &[
                ("env_vars", "env_passthrough"),
                ("tool_timeout_sec", "timeout"),
                ("startup_timeout_sec", "connect_timeout"),
                ("startup_timeout_ms", "connect_timeout"),
                ("http_headers", "headers"),
                ("env_http_headers", "headers"),
                ("bearer_token_env_var", "headers"),
                ("enabled_tools", "tools.include"),
                ("disabled_tools", "tools.exclude"),
            ],
            Format::Goose => &[
                ("cmd", "command"),
                ("envs", "env"),
                ("env_keys", "env_passthrough"),
                ("uri", "url"),
                ("available_tools", "tools.include"),
            ],
            Format::Wasmgate | Format::McpServers | Format::VsCode => &[],
        }
    }
}

/// The renames of one converted entry `m` in `format`: `(wasmgate field
/// path, own field)`, for each wasmgate field that exactly one own field
/// became. Where several own fields merge into one (Codex's three header
/// sources, `enabled_tools` with `disabled_tools`), wasmgate's name stays:
/// no single own field could be named.
fn renames_of(m: &Mapping, format: Format) -> Vec<(&'static str, &'static str)> {
    let own = format.own_names();
    let head = |p: &str| p.split(['.', '[']).next().unwrap_or("").to_string();
    own.iter()
        .filter(|(o, _)| m.contains_key(*o))
        .filter(|(o, ours)| {
            !own.iter()
                .any(|(o2, ours2)| o2 != o && head(ours2) == head(ours) && m.contains_key(*o2))
        })
        .map(|(o, ours)| (*ours, *o))
        .collect()
}

impl Decoded {
    /// Renames each error's field path of a converted server to the user's
    /// own field (`env_passthrough[0]` → Codex's `env_vars[0]`), for the
    /// errors wasmgate's validator found in [`Decoded::value`].
    pub fn name_own_fields(&self, errors: &mut [ManifestError]) {
        for e in errors {
            if let Some(renames) = e.server.as_ref().and_then(|s| self.renames.get(s))
                && let Some(p) = own_path(&e.path, renames)
            {
                e.path = p;
            }
        }
    }
}

/// `path` with its wasmgate field prefix replaced by the user's own field
/// name from `renames` (`env_passthrough[0]` → `env_vars[0]`).
fn own_path(path: &str, renames: &[(&'static str, &'static str)]) -> Option<String> {
    renames.iter().find_map(|(ours, own)| {
        let rest = path.strip_prefix(ours)?;
        (rest.is_empty() || rest.starts_with(['.', '['])).then(|| format!("{own}{rest}"))
    })
}

/// A config file decoded into wasmgate's schema.
#[derive(Debug, Clone)]
pub struct Decoded {
    /// Which format the file was in.
    pub format: Format,
    /// The top-level mapping in wasmgate's schema: `mcp_servers` (and
    /// `plugins` for the wasmgate format), or `Null` for an empty file.
    pub value: Value,
    /// Servers refused while converting (a key without a meaning here), each
    /// naming the key; those servers are not in `value`.
    pub errors: Vec<ManifestError>,
    /// Notes (an entry that is no MCP server, such as a Goose built-in).
    pub warnings: Vec<String>,
    /// Every server name of the file in file order, the refused ones
    /// included (for `status`).
    pub order: Vec<String>,
    /// Per converted server, the fields renamed on the way: `(wasmgate
    /// field path, own field)`, so the validator's errors can name the
    /// user's own field ([`own_path`]).
    pub renames: std::collections::BTreeMap<String, Vec<(&'static str, &'static str)>>,
}

/// Where the agents' own variables point: `${userHome}`,
/// `${workspaceFolder}`, and the folder whose Claude Code project scope
/// applies.
#[derive(Debug, Clone, Default)]
pub struct Places {
    /// The user's home folder.
    pub home: Option<PathBuf>,
    /// The project folder of a project-scoped file (`<ws>/.cursor/mcp.json`,
    /// `<ws>/.vscode/mcp.json`, `<ws>/.mcp.json`).
    pub workspace: Option<PathBuf>,
    /// The current folder: picks `projects.<folder>` of `~/.claude.json`.
    pub cwd: Option<PathBuf>,
    /// Keep `${VAR}` / `${env:VAR}` / `${VAR:-default}` in `command`,
    /// `args` and `url` as written instead of expanding them from the
    /// environment: `wasmgate import` prints and writes the file's
    /// references, never a value read from the environment
    /// (`docs/mcp-client.md` §1.4).
    pub keep_env_vars: bool,
}

impl Places {
    /// The places of a file at `path`, from the process (home, cwd).
    pub fn of_file(path: &Path) -> Places {
        let home = std::env::var_os("HOME")
            .or_else(|| std::env::var_os("USERPROFILE"))
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let parent = abs.parent().map(Path::to_path_buf);
        let workspace = match (parent.as_deref(), abs.file_name().and_then(|n| n.to_str())) {
            (Some(dir), _)
                if dir
                    .file_name()
                    .is_some_and(|n| n == ".cursor" || n == ".vscode" || n == ".windsurf") =>
            {
                dir.parent().map(Path::to_path_buf)
            }
            (Some(dir), Some(".mcp.json")) => Some(dir.to_path_buf()),
            _ => None,
        }
        // `~/.cursor/mcp.json` is the user's file, not a project's.
        .filter(|ws| home.as_deref() != Some(ws.as_path()));
        Places {
            home,
            workspace,
            cwd: std::env::current_dir().ok(),
            keep_env_vars: false,
        }
    }
}

/// The problem of a `.json` config with no object in it.
const EMPTY_JSON: &str = "is empty: a JSON config is one object (`{\"mcpServers\": {…}}`)";

/// What of a JSON config is built: the keys any format's reader looks at
/// (`mcp_servers`, `plugins`, `mcpServers`, `servers`, `mcp.servers`,
/// `extensions`, `projects.<folder>.mcpServers`). Every other key keeps
/// its place with a null value, so a near miss is still named; its value
/// is parsed and dropped (a 16 MiB `~/.claude.json` of history took
/// 650 MB to import when all of it was built; `docs/security.md`, "MCP
/// client bounds").
const CONFIG_KEEP: Keep = Keep::Keys(&[
    ("mcp_servers", Keep::All),
    ("plugins", Keep::All),
    ("mcpServers", Keep::All),
    ("servers", Keep::All),
    ("mcp", Keep::Keys(&[("servers", Keep::All)])),
    ("extensions", Keep::All),
    (
        "projects",
        Keep::Values(&Keep::Keys(&[("mcpServers", Keep::All)])),
    ),
]);

/// Decodes a config file's text by its content: a TOML file (`.toml`, or
/// text that is no YAML mapping but valid TOML) is Codex's; a JSON or YAML
/// mapping with `mcp_servers` or `plugins` is wasmgate's, with `mcpServers`
/// the Claude family's, a JSON one with `servers` (or `mcp.servers`) VS Code's
/// (JSONC: comments and trailing commas accepted only there), with
/// `extensions` Goose's. A mapping with none of them is `Err` (the message
/// after the file name), as is text that is neither, and a `.json` file
/// holding nothing but white space. A leading byte order
/// mark is skipped; a `.yaml` / `.yml` file is read as YAML even when it
/// opens with `{`, and a `.json` file as JSON (or VS Code's JSONC) whatever
/// it opens with.
pub fn decode_config(
    path: &Path,
    text: &str,
    ctx: &ManifestContext,
    places: &Places,
) -> Result<Decoded, String> {
    let is_toml = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("toml"));
    if is_toml {
        return codex::decode(text, ctx);
    }
    // A byte order mark, as some Windows editors save one, is not content
    // (it made a JSON file read as YAML).
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // A `.yaml` file is YAML even when it is one flow mapping (`{…}`).
    let is_yaml = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("yaml") || e.eq_ignore_ascii_case("yml"));
    // A `.json` file with nothing in it is no JSON (every agent refuses
    // it); read as YAML it was an empty config, and `import` wrote
    // `mcp_servers: {}` as if it had found one. One that holds YAML is no
    // agent's file either.
    // By name, so that a file called `.json` counts too.
    let is_json_name = path
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.len() >= 5 && n[n.len() - 5..].eq_ignore_ascii_case(".json"));
    if text.trim().is_empty() && is_json_name {
        return Err(EMPTY_JSON.into());
    }
    let is_json = is_json_name
        || (!is_yaml && (text.trim_start().starts_with('{') || starts_with_comment(text)));
    let value = if is_json {
        match super::load::decode_json_pruned(text, CONFIG_KEEP) {
            Ok(v) => v,
            // VS Code's files are JSONC; the other agents read strict JSON,
            // so comments are accepted only in a file of VS Code's shape.
            Err(strict) => match vscode::decode_jsonc_pruned(text, CONFIG_KEEP) {
                Ok(Value::Mapping(top))
                    if vscode::servers_of(&top).is_some()
                        && !["mcpServers", "mcp_servers", "plugins"]
                            .iter()
                            .any(|k| top.contains_key(*k)) =>
                {
                    Value::Mapping(top)
                }
                Ok(_) => {
                    return Err(format!(
                        "{strict} (comments and trailing commas are read only in VS Code's mcp.json and settings.json; this file's agent reads strict JSON)"
                    ));
                }
                // Strict JSON's error at a comment says nothing of the
                // file; JSONC's names what is wrong past it.
                Err(jsonc) if vscode::has_comment(text) => {
                    return Err(jsonc);
                }
                Err(_) => return Err(strict),
            },
        }
    } else {
        match super::load::decode_yaml(text) {
            Ok(v @ (Value::Mapping(_) | Value::Null)) => v,
            // A Codex config.toml under another name.
            Ok(_) | Err(_) if codex::looks_like_toml(text) => return codex::decode(text, ctx),
            Err(_) if codex::has_codex_header(text) => return codex::decode(text, ctx),
            Ok(v) => v,
            Err(e) => return Err(e),
        }
    };
    let wasmgate = |value: Value| Decoded {
        format: Format::Wasmgate,
        value,
        errors: Vec::new(),
        warnings: Vec::new(),
        order: Vec::new(),
        renames: Default::default(),
    };
    let Value::Mapping(top) = &value else {
        return match value {
            // `null`: as empty as an empty file.
            Value::Null if is_json_name => Err(EMPTY_JSON.into()),
            Value::Null => Ok(wasmgate(Value::Null)),
            other => Err(must_be("a mapping", &other)),
        };
    };
    if top.contains_key("mcp_servers") || top.contains_key("plugins") {
        return Ok(wasmgate(value));
    }
    if top.contains_key("mcpServers") || mcpjson::has_project_servers(top) {
        return Ok(mcpjson::decode(top, ctx, places));
    }
    // VS Code's files are JSON; a YAML `servers:` is more likely a typo of
    // `mcp_servers:` (its hint below).
    if let Some(servers) = vscode::servers_of(top).filter(|_| is_json) {
        return Ok(vscode::decode(servers, ctx, places));
    }
    if let Some(Value::Mapping(ext)) = top.get("extensions")
        && goose::looks_like_goose(ext)
    {
        return Ok(goose::decode(ext, ctx));
    }
    Err(super::load::no_mcp_servers_message(top))
}

/// Whether JSONC text opens with a comment (`// …` or `/* … */` above the
/// object).
fn starts_with_comment(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with("//") || t.starts_with("/*")
}

/// The conversion of one server entry to wasmgate's schema: the entry as
/// far as it converts with the problems of what did not (none: accepted),
/// or `Err` when it is not a mapping at all.
pub(crate) type Conversion = Result<(Mapping, Vec<Problem>), Vec<Problem>>;

/// Collects one format's converted servers.
#[derive(Debug, Default)]
pub(crate) struct Builder {
    pub servers: Mapping,
    pub errors: Vec<ManifestError>,
    pub warnings: Vec<String>,
    pub order: Vec<String>,
    pub renames: std::collections::BTreeMap<String, Vec<(&'static str, &'static str)>>,
}

impl Builder {
    /// Adds the outcome of converting server `name` ([`Conversion`]): its
    /// entry in wasmgate's schema, or every problem with its field path.
    pub fn add(&mut self, ctx: &ManifestContext, name: &str, res: Conversion) {
        self.add_checked(ctx, name, res, &[], &[]);
    }

    /// [`Builder::add`] of the conversion of `entry`, a server of a
    /// `format` whose fields have their own names (Codex, Goose): the
    /// renames are kept for the errors wasmgate's validator finds later.
    pub fn add_from(
        &mut self,
        ctx: &ManifestContext,
        name: &str,
        entry: &Value,
        format: Format,
        res: Conversion,
    ) {
        let renames = match entry {
            Value::Mapping(m) => renames_of(m, format),
            _ => Vec::new(),
        };
        if matches!(&res, Ok((_, fails)) if fails.is_empty()) && !renames.is_empty() {
            self.renames.insert(name.to_string(), renames.clone());
        }
        self.add_checked(ctx, name, res, &renames, format.own_names());
    }

    /// A refused server's problems are every problem of its entry at once
    /// (`wasmgate check`'s promise, `docs/declarations.md` §2a): what did
    /// convert is validated too, and the validator's problems at a field
    /// the conversion did not already name are added (with the user's own
    /// field names, `renames`). The server stays refused. A validator
    /// problem of a field the format names otherwise (`own_names`, each
    /// `(own, ours)`: Goose's `cmd` for `command`, whether or not the
    /// entry has it) counts as named when the conversion named that field.
    fn add_checked(
        &mut self,
        ctx: &ManifestContext,
        name: &str,
        res: Conversion,
        renames: &[(&'static str, &'static str)],
        own_names: &[(&'static str, &'static str)],
    ) {
        self.order.push(name.to_string());
        let (converted, fails) = match res {
            Ok((m, fails)) if fails.is_empty() => {
                self.servers
                    .insert(Value::String(name.into()), Value::Mapping(m));
                return;
            }
            Ok((m, fails)) => (Some(m), fails),
            Err(fails) => (None, fails),
        };
        let label = ctx.server_where(name);
        let named: std::collections::HashSet<String> = fails.iter().map(|f| f.path.clone()).collect();
        for Problem { path, message } in fails {
            self.errors
                .push(ManifestError::new(&label, Some(name), &path, message));
        }
        let Some(m) = converted else { return };
        let mut ignored = Vec::new();
        let Err(more) = super::schema::server_from_value(
            name,
            &Value::Mapping(m),
            ctx,
            None,
            &label,
            &mut ignored,
        ) else {
            return;
        };
        // A field the conversion named, or one inside it, is not named
        // again; a problem of the field around it is its own (a bad name
        // in `env` beside a refused `env.FOO`). Looked up by the path and
        // each field it is inside: linear in the problems, which a hostile
        // file may hold by the ten thousand.
        let already = |path: &str| {
            std::iter::once(path.len())
                .chain(path.match_indices(['.', '[']).map(|(i, _)| i))
                .any(|end| named.contains(&path[..end]))
        };
        let is_transport = |p: &str| ["command", "url", "app_endpoint"].contains(&p);
        // `own_path` maps a path by `(from, to)` pairs: ours to own, and back.
        let to_own: Vec<(&str, &str)> = own_names.iter().map(|(own, ours)| (*ours, *own)).collect();
        let named_transport = named
            .iter()
            .any(|n| is_transport(n) || own_path(n, own_names).is_some_and(|p| is_transport(&p)));
        for mut e in more {
            if let Some(p) = own_path(&e.path, renames) {
                e.path = p;
            }
            let own_named = own_path(&e.path, &to_own).is_some_and(|p| already(&p));
            // The transport fields are one rule (exactly one of them): the
            // conversion's word on any of them is its word on the rule.
            let transport_named = is_transport(&e.path) && named_transport;
            if !already(&e.path) && !own_named && !transport_named {
                self.errors.push(e);
            }
        }
    }

    /// The decoded file in `format`.
    pub fn finish(self, format: Format) -> Decoded {
        let mut top = Mapping::new();
        top.insert("mcp_servers".into(), Value::Mapping(self.servers));
        Decoded {
            format,
            value: Value::Mapping(top),
            errors: self.errors,
            warnings: self.warnings,
            order: self.order,
            renames: self.renames,
        }
    }
}

/// The entry of server `name` as a mapping, or its one problem.
pub(crate) fn entry_mapping(entry: &Value) -> Result<&Mapping, Vec<Problem>> {
    match entry {
        Value::Mapping(m) => Ok(m),
        other => Err(vec![Problem::new(
            "",
            format!("the server entry {}", must_be("an object", other)),
        )]),
    }
}

/// The keys of `m` the format defines but wasmgate cannot honour, each
/// refused with `why`; `known` are the keys the converter maps; any other
/// key is refused as unknown to the format.
pub(crate) fn refuse_keys(
    m: &Mapping,
    format: Format,
    known: &[&str],
    unsupported: &[(&str, &str)],
    fails: &mut Vec<Problem>,
) {
    for k in m.keys() {
        let key = key_text(k);
        if known.contains(&key.as_str()) {
            continue;
        }
        // The key becomes the problem's field path: shown bounded and redacted.
        let shown = crate::validation::echo_name(&key);
        if let Some((_, why)) = unsupported.iter().find(|(u, _)| *u == key) {
            fails.push(Problem::new(
                shown,
                format!("is not supported by wasmgate: {why}"),
            ));
        } else {
            let hint = crate::validation::did_you_mean(&key, known)
                .map(|d| format!(" (did you mean `{d}`?)"))
                .unwrap_or_default();
            fails.push(Problem::new(
                shown,
                format!("is not a key of a {} server entry{hint}", format.label()),
            ));
        }
    }
}

/// The server names of a mapping of entries, each with its entry.
pub(crate) fn entries(m: &Mapping) -> impl Iterator<Item = (String, &Value)> {
    m.iter().map(|(k, v)| (key_text(k), v))
}

/// Copies `from[key]` (when present and not null) to `to[as_]`.
pub(crate) fn copy(from: &Mapping, key: &str, to: &mut Mapping, as_: &str) {
    if let Some(v) = from.get(key).filter(|v| !v.is_null()) {
        to.insert(Value::String(as_.into()), v.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::load::decode_json_pruned;

    #[test]
    fn a_json_config_builds_only_what_its_readers_look_at() {
        let text = r#"{
  "numStartups": 3,
  "tipsHistory": {"a": [1, 2, {"deep": [true]}]},
  "mcpServers": {"a": {"command": "/bin/a", "args": ["x"]}},
  "projects": {
    "/w": {"history": [{"display": "x", "display": "dup"}], "mcpServers": {"b": {"command": "/bin/b"}}},
    "/v": [1, 2]
  },
  "mcp": {"servers": {"c": {"url": "http://127.0.0.1:1/mcp"}}, "inputs": [{"id": "k"}]}
}"#;
        let v = decode_json_pruned(text, CONFIG_KEEP).unwrap();
        let full = crate::manifest::load::decode_json(text);
        // Built in full, the history's key given twice refuses the file;
        // pruned, only what is read is built, and checked.
        assert!(full.unwrap_err().contains("duplicate entry with key \"display\""));
        let top = v.as_mapping().unwrap();
        let keys: Vec<&str> = top.keys().filter_map(Value::as_str).collect();
        assert_eq!(keys, ["numStartups", "tipsHistory", "mcpServers", "projects", "mcp"]);
        assert_eq!(top.get("tipsHistory"), Some(&Value::Null));
        assert_eq!(top.get("numStartups"), Some(&Value::Null));
        let a = &top.get("mcpServers").unwrap().get("a").unwrap();
        assert_eq!(a.get("args").unwrap().as_sequence().unwrap().len(), 1);
        let w = top.get("projects").unwrap().get("/w").unwrap();
        assert_eq!(w.get("history"), Some(&Value::Null));
        assert!(w.get("mcpServers").unwrap().get("b").is_some());
        // A list where a mapping was looked for: read and dropped.
        let empty = Value::Sequence(Vec::new());
        let v2 = top.get("projects").unwrap().get("/v").unwrap();
        assert_eq!(v2, &empty);
        let listed = decode_json_pruned(r#"{"projects": [1, [2]], "mcp": [3]}"#, CONFIG_KEEP).unwrap();
        assert_eq!(listed.get("projects"), Some(&empty));
        assert_eq!(listed.get("mcp"), Some(&empty));
        let mcp = top.get("mcp").unwrap();
        assert!(mcp.get("servers").unwrap().get("c").is_some());
        assert_eq!(mcp.get("inputs"), Some(&Value::Null));

        // What is built still refuses a key given twice; what is not is
        // still parsed, and a syntax error there is named at its place.
        let dup = r#"{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}"#;
        let e = decode_json_pruned(dup, CONFIG_KEEP).unwrap_err();
        assert!(e.contains("duplicate entry with key \"a\""), "{e}");
        let broken = "{\n  \"history\": [1, 2,,],\n  \"mcpServers\": {}\n}";
        let e = decode_json_pruned(broken, CONFIG_KEEP).unwrap_err();
        assert!(e.contains("line 2 column"), "{e}");
        let trailing = r#"{"mcpServers": {}} x"#;
        assert!(decode_json_pruned(trailing, CONFIG_KEEP).is_err());
        // The top-level key given twice is refused, even one not built.
        let e = decode_json_pruned(r#"{"x": 1, "x": 2}"#, CONFIG_KEEP).unwrap_err();
        assert!(e.contains("duplicate entry with key \"x\""), "{e}");
    }
}
