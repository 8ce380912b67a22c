//! `wasmgate import FILE [--write]` and `wasmgate setup AGENT [--dry-run]
//! [--undo]` (`docs/mcp-client.md` §1.4, §1.5): another agent's MCP
//! config read as wasmgate's, and one `wasmgate serve` entry added to (or
//! removed from) an agent's own config file, with a backup and a diff.

use super::diff::{diff_text, print_diff};
use super::file_secrets::{json_secrets, value_secrets};
use crate::manifest::agents::edit::{self, Syntax};
use crate::manifest::agents::{Places, decode_config};
use crate::manifest::{ManifestContext, ManifestError, servers_from_value};
use std::path::{Path, PathBuf};
use crate::document::{Mapping, Value};

/// The name of the entry `setup` writes.
pub const ENTRY_NAME: &str = "wasmgate";

/// `wasmgate import`.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// Another agent's config: `claude_desktop_config.json`, `.mcp.json`,
    /// `~/.claude.json`, Cursor's or Windsurf's `mcp.json`, VS Code's
    /// `mcp.json`, Codex's `config.toml`, Goose's `config.yaml`.
    pub file: PathBuf,
    /// Merge the servers into your wasmgate config (`--config`, else the
    /// default `<user config dir>/wasmgate/config.yaml`), keeping a backup.
    #[arg(long)]
    pub write: bool,
}

/// The agents `setup` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Agent {
    /// Claude Code: `~/.claude.json` (`$CLAUDE_CONFIG_DIR/.claude.json`), `mcpServers`.
    ClaudeCode,
    /// Claude Desktop: `claude_desktop_config.json`, `mcpServers`.
    ClaudeDesktop,
    /// Cursor: `~/.cursor/mcp.json`, `mcpServers`.
    Cursor,
    /// Windsurf: `~/.codeium/windsurf/mcp_config.json`, `mcpServers`.
    Windsurf,
    /// VS Code: the user's `Code/User/mcp.json`, `servers`.
    Vscode,
    /// Codex: `$CODEX_HOME/config.toml` (`~/.codex/config.toml`), `[mcp_servers.wasmgate]`.
    Codex,
    /// Goose: `<config dir>/goose/config.yaml`, `extensions.wasmgate`.
    Goose,
    /// Hermes: `$HERMES_HOME/config.yaml` (`~/.hermes/config.yaml`), `mcp_servers`.
    Hermes,
}

/// `wasmgate setup`.
#[derive(Debug, clap::Args)]
pub struct SetupArgs {
    /// The agent whose user config gets the `wasmgate serve` entry.
    #[arg(value_enum)]
    pub agent: Agent,
    /// Print the diff; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Remove the entry `setup` added (only when it is wasmgate's).
    #[arg(long)]
    pub undo: bool,
    /// The agent's config file (default: its user-scope file).
    #[arg(long, value_name = "FILE")]
    pub file: Option<PathBuf>,
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .or_else(|| std::env::var_os("USERPROFILE"))
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

fn env_dir(var: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// Where an editor keeps its per-user settings (`Code/User`, `Claude`):
/// `%APPDATA%` on Windows, `~/Library/Application Support` on macOS,
/// `$XDG_CONFIG_HOME` (else `~/.config`) elsewhere.
fn app_dir(name: &str) -> Option<PathBuf> {
    let base = if cfg!(windows) {
        env_dir("APPDATA")?
    } else if cfg!(target_os = "macos") {
        home()?.join("Library").join("Application Support")
    } else {
        env_dir("XDG_CONFIG_HOME").unwrap_or(home()?.join(".config"))
    };
    Some(base.join(name))
}

impl Agent {
    /// The user-scope config file, its syntax, and the path of the servers
    /// object in it.
    fn target(self) -> Option<(PathBuf, Syntax, &'static [&'static str])> {
        Some(match self {
            Agent::ClaudeCode => (
                env_dir("CLAUDE_CONFIG_DIR")
                    .unwrap_or(home()?)
                    .join(".claude.json"),
                Syntax::Json,
                &["mcpServers"],
            ),
            Agent::ClaudeDesktop => (
                app_dir("Claude")?.join("claude_desktop_config.json"),
                Syntax::Json,
                &["mcpServers"],
            ),
            Agent::Cursor => (
                home()?.join(".cursor").join("mcp.json"),
                Syntax::Json,
                &["mcpServers"],
            ),
            Agent::Windsurf => (
                home()?
                    .join(".codeium")
                    .join("windsurf")
                    .join("mcp_config.json"),
                Syntax::Json,
                &["mcpServers"],
            ),
            Agent::Vscode => (
                app_dir("Code")?.join("User").join("mcp.json"),
                Syntax::Jsonc,
                &["servers"],
            ),
            Agent::Codex => (
                env_dir("CODEX_HOME")
                    .unwrap_or(home()?.join(".codex"))
                    .join("config.toml"),
                Syntax::Toml,
                &["mcp_servers"],
            ),
            Agent::Goose => (
                if cfg!(windows) {
                    env_dir("APPDATA")?
                        .join("Block")
                        .join("goose")
                        .join("config")
                } else {
                    env_dir("XDG_CONFIG_HOME")
                        .unwrap_or(home()?.join(".config"))
                        .join("goose")
                }
                .join("config.yaml"),
                Syntax::Yaml,
                &["extensions"],
            ),
            Agent::Hermes => (
                env_dir("HERMES_HOME")
                    .unwrap_or(home()?.join(".hermes"))
                    .join("config.yaml"),
                Syntax::Yaml,
                &["mcp_servers"],
            ),
        })
    }

    /// The entry that runs `command args…` in this agent's schema.
    fn entry(self, command: &str, args: &[String]) -> Value {
        let s = |t: &str| Value::String(t.to_string());
        let args = Value::Sequence(args.iter().map(|a| s(a)).collect());
        let mut m = Mapping::new();
        match self {
            Agent::Goose => {
                m.insert(s("name"), s(ENTRY_NAME));
                m.insert(s("type"), s("stdio"));
                m.insert(s("cmd"), s(command));
                m.insert(s("args"), args);
                m.insert(s("enabled"), Value::Bool(true));
                m.insert(s("timeout"), Value::Number(300.into()));
                m.insert(
                    s("description"),
                    s("wasmgate: the gated tools of this machine's plugins"),
                );
            }
            Agent::ClaudeCode | Agent::Vscode => {
                m.insert(s("type"), s("stdio"));
                m.insert(s("command"), s(command));
                m.insert(s("args"), args);
            }
            _ => {
                m.insert(s("command"), s(command));
                m.insert(s("args"), args);
            }
        }
        Value::Mapping(m)
    }

    /// The entry to write over `existing` (one of ours, or none): setup's
    /// own members of `fresh` (the program, its arguments, the transport,
    /// Goose's `name`) set anew, another transport's address
    /// ([`OTHER_TRANSPORT`]) dropped, its defaults ([`SET_ONCE`]) only where
    /// the entry has none, and every other member the user added there (`env`,
    /// `disabled`, `alwaysAllow`, `timeout`, …) kept where it stands, so
    /// running `setup` again (after an upgrade moved the executable, with
    /// other `--plugins`) loses none of them (`docs/mcp-client.md` §1.5).
    fn refreshed(existing: Option<&Value>, fresh: Value) -> Value {
        let (Some(Value::Mapping(old)), Value::Mapping(new)) = (existing, &fresh) else {
            return fresh;
        };
        let mut m = old.clone();
        // Another transport's address beside `command` would make the
        // entry ambiguous (Goose refuses `cmd` with `uri`).
        m.retain(|k, _| !k.as_str().is_some_and(|k| OTHER_TRANSPORT.contains(&k)));
        for (k, v) in new {
            let set_once = k.as_str().is_some_and(|k| SET_ONCE.contains(&k));
            if !(set_once && m.contains_key(k)) {
                m.insert(k.clone(), v.clone());
            }
        }
        Value::Mapping(m)
    }
}

/// Members of a remote server's transport (its address, headers, token),
/// in the agents' schemas; dropped from an entry `setup` writes again,
/// which runs a command (Codex refuses its `bearer_token_env_var` and
/// `http_headers` beside `command`).
const OTHER_TRANSPORT: &[&str] = &[
    "url",
    "uri",
    "httpUrl",
    "serverUrl",
    "headers",
    "bearer_token",
    "bearer_token_env_var",
    "http_headers",
    "env_http_headers",
];

/// Members `setup` writes only into a new entry: the user's own value
/// (Goose's `enabled: false`, a longer `timeout`) outlives a second run.
const SET_ONCE: &[&str] = &["enabled", "timeout", "description"];

/// The member that turns `entry` off in its agent (`disabled: true` in
/// Claude's, Cursor's and Windsurf's schema; `enabled: false` in Goose's
/// and Codex's), if one does.
fn turned_off(entry: &Value) -> Option<&'static str> {
    if entry.get("disabled").and_then(Value::as_bool) == Some(true) {
        Some("disabled: true")
    } else if entry.get("enabled").and_then(Value::as_bool) == Some(false) {
        Some("enabled: false")
    } else {
        None
    }
}

/// Whether an entry was written by `setup`: its program is a `wasmgate`
/// executable (`wasmgate`, `wasmgate-<platform>`, or this executable) and
/// its first argument `serve`.
fn is_ours(v: &Value) -> bool {
    let Some(cmd) = v.get("command").or_else(|| v.get("cmd")).and_then(Value::as_str) else {
        return false;
    };
    let stem = Path::new(cmd).file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    // A release binary may be named for its platform
    // (`wasmgate-x86_64-linux`); the entry this very binary wrote names it.
    let named_so = stem == "wasmgate"
        || stem.starts_with("wasmgate-")
        || stem.starts_with("wasmgate_")
        || std::env::current_exe()
            .and_then(std::fs::canonicalize)
            .is_ok_and(|exe| exe == Path::new(cmd));
    let first = v.get("args").and_then(|a| a.get(0)).and_then(Value::as_str);
    named_so && first == Some("serve")
}

/// The `wasmgate serve` arguments `setup` writes: the `--plugins` and
/// `--config` the user gave (made absolute), and the agent's name budget
/// (`serve --name-budget`).
fn serve_args(agent: Agent, plugins: &[PathBuf], config: Option<&Path>) -> Vec<String> {
    let abs = |p: &Path| {
        std::path::absolute(p)
            .unwrap_or_else(|_| p.to_path_buf())
            .to_string_lossy()
            .into_owned()
    };
    let mut a = vec!["serve".to_string()];
    if let Some(v) = clap::ValueEnum::to_possible_value(&agent) {
        a.push("--name-budget".into());
        a.push(v.get_name().to_string());
    }
    for p in plugins {
        a.push("--plugins".into());
        a.push(abs(p));
    }
    if let Some(c) = config {
        a.push("--config".into());
        a.push(abs(c));
    }
    a
}

/// Reads a file to edit (absent: empty), bounded like a config file
/// ([`crate::manifest::load::MAX_CONFIG_BYTES`]).
fn read_text(path: &Path) -> Result<Option<String>, String> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot be read: {e}")),
        Ok(m) if !m.is_file() => {
            return Err("is not a regular file (a link or a folder is not edited)".into());
        }
        Ok(m) if m.len() > crate::manifest::load::MAX_CONFIG_BYTES => {
            return Err(format!(
                "is larger than {} bytes",
                crate::manifest::load::MAX_CONFIG_BYTES
            ));
        }
        Ok(_) => {}
    }
    // The read itself is bounded too: the file may be replaced (by a FIFO,
    // a larger file) between the look above and this read.
    let (dir, name) = match (path.parent(), path.file_name()) {
        (Some(d), Some(n)) => (
            if d.as_os_str().is_empty() {
                Path::new(".")
            } else {
                d
            },
            n,
        ),
        _ => return Err("is not a file path".into()),
    };
    let bytes = crate::manifest::files::read_plugin_file(
        dir,
        Path::new(name),
        crate::manifest::load::MAX_CONFIG_BYTES,
    )
    .map_err(|e| match e {
        crate::manifest::files::PluginFileError::NotFound => "cannot be read: not found".into(),
        e => e.to_string(),
    })?;
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| "is not UTF-8 text".into())
}


/// Whether an edited config is one wasmgate (and `setup --undo`) can read
/// again: at most [`crate::manifest::load::MAX_CONFIG_BYTES`].
fn fits(text: &str) -> Result<(), String> {
    let max = crate::manifest::load::MAX_CONFIG_BYTES;
    if text.len() as u64 > max {
        return Err(format!(
            "the edited file would be {} bytes, more than the {max} wasmgate reads; nothing was written",
            text.len()
        ));
    }
    Ok(())
}

/// Writes `new` in place of `path` (a backup of the old text beside it
/// first; the new text through a temporary file renamed over it, with the
/// old file's permissions). Returns the backup's path.
fn write_with_backup(path: &Path, old: Option<&str>, new: &str) -> Result<Option<PathBuf>, String> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("{}: cannot be created: {e}", dir.display()))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // The backup and the temporary file get the old file's permissions
    // from their creation on, 0600 where there is no old file (an agent's
    // config holds tokens: never readable by others, even for a moment),
    // and are created new, never through what is already there.
    let mode = std::fs::metadata(path).ok().map(|m| m.permissions());
    #[cfg(unix)]
    let mode = mode.or_else(|| {
        use std::os::unix::fs::PermissionsExt;
        Some(std::fs::Permissions::from_mode(0o600))
    });
    let backup = match old {
        Some(old) => {
            let secs = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            // A second write in the same second keeps the first backup.
            let mut written = None;
            for n in 0..100 {
                let b = match n {
                    0 => dir.join(format!("{name}.wasmgate-backup-{secs}")),
                    n => dir.join(format!("{name}.wasmgate-backup-{secs}-{n}")),
                };
                match create_new(&b, old, mode.as_ref()) {
                    Ok(()) => {
                        written = Some(b);
                        break;
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                    Err(e) => return Err(format!("{}: cannot be written: {e}", b.display())),
                }
            }
            Some(written.ok_or_else(|| {
                format!("{}: 100 backups of this second exist already", dir.display())
            })?)
        }
        None => None,
    };
    let tmp = dir.join(format!(".{name}.wasmgate-tmp-{}", std::process::id()));
    // A stale one of a crashed run with the same process id goes first.
    let _ = std::fs::remove_file(&tmp);
    create_new(&tmp, new, mode.as_ref())
        .map_err(|e| format!("{}: cannot be written: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("{}: cannot be replaced: {e}", path.display())
    })?;
    Ok(backup)
}

/// Writes `text` to `path`, which must not exist yet (not even as a link),
/// with `permissions` from its creation on where given.
fn create_new(
    path: &Path,
    text: &str,
    permissions: Option<&std::fs::Permissions>,
) -> std::io::Result<()> {
    use std::io::Write;
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    if let Some(p) = permissions {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        o.mode(p.mode() & 0o777);
    }
    let mut f = o.open(path)?;
    f.write_all(text.as_bytes())?;
    // The mode given at creation is cut by the umask: set it exactly.
    if let Some(p) = permissions {
        f.set_permissions(p.clone())?;
    }
    f.sync_all()
}

/// A path as printed: control characters escaped and a long one cut
/// (`crate::terminal::line`); the path may come from the environment
/// (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`, …) or the command line.
fn shown(p: &Path) -> String {
    crate::terminal::line(&p.display().to_string()).into_owned()
}

/// What `setup` did, printed as text or (`--json`) as one JSON object.
#[derive(Debug, Default, serde::Serialize)]
struct SetupOutcome {
    /// The agent's config file, as given (text output escapes it).
    file: String,
    /// `added`, `updated`, `removed`, `unchanged` (already set up) or
    /// `none` (`--undo` with no entry to remove); `null` when setup failed
    /// before it knew.
    action: Option<&'static str>,
    dry_run: bool,
    /// Whether the file was written.
    written: bool,
    /// The copy of the old file, when one was kept.
    backup: Option<String>,
    /// The unified diff of the edit, redacted (or the line saying why it
    /// is not shown: the file's secrets are too many to redact from it);
    /// `null` when nothing changed.
    diff: Option<String>,
    notes: Vec<String>,
    warnings: Vec<String>,
    /// Why setup failed (exit 1); then nothing was written.
    error: Option<String>,
}

/// Runs `wasmgate setup`; returns the exit code (0 done or nothing to do,
/// 1 failed). With `json`, stdout is one JSON object ([`SetupOutcome`]);
/// warnings and the error also go to stderr, as in text.
pub fn run_setup(
    args: &SetupArgs,
    plugins: (&[PathBuf], &str),
    config: Option<(&Path, &str)>,
    json: bool,
) -> u8 {
    let mut out = SetupOutcome {
        dry_run: args.dry_run,
        ..SetupOutcome::default()
    };
    if let Err(m) = setup(args, plugins, config, &mut out) {
        eprintln!("wasmgate setup: {}", crate::terminal::line(&m));
        out.error = Some(m);
    }
    if json {
        let text = serde_json::to_string_pretty(&out).unwrap_or_else(|_| "{}".into());
        println!("{}", crate::terminal::json_text(text));
    } else {
        for n in &out.notes {
            println!("{}", crate::terminal::line(n));
        }
        if let Some(d) = &out.diff {
            print!("{d}");
        }
        let file = crate::terminal::line(&out.file);
        match out.action {
            _ if out.error.is_some() => {}
            Some("none") => println!("{file}: has no {ENTRY_NAME} entry; nothing to undo"),
            Some("unchanged") => println!("{file}: already set up; nothing changed"),
            _ if out.dry_run => println!("(dry run: {file} not written)"),
            _ => match &out.backup {
                Some(b) => println!("wrote {file} (backup: {})", crate::terminal::line(b)),
                None => println!("wrote {file}"),
            },
        }
    }
    u8::from(out.error.is_some())
}

/// The work of [`run_setup`], recorded in `out`; the error is the line to
/// print after `wasmgate setup: `.
fn setup(
    args: &SetupArgs,
    (plugins, plugins_label): (&[PathBuf], &str),
    config: Option<(&Path, &str)>,
    out: &mut SetupOutcome,
) -> Result<(), String> {
    let Some((default_file, syntax, servers)) = args.agent.target() else {
        return Err("no home folder (HOME is not set)".into());
    };
    let file = args.file.clone().unwrap_or(default_file);
    out.file = file.display().to_string();
    let fail = |m: String| format!("{}: {}", shown(&file), m);
    let old = read_text(&file).map_err(fail)?;
    let text = old.as_deref().unwrap_or_default();
    // The entry there and the secrets to redact from the diff; a JSON file
    // (`~/.claude.json`, tens of megabytes of history) is not built whole.
    let current = match syntax {
        Syntax::Json => edit::entry(text, syntax, servers, ENTRY_NAME)
            .and_then(|e| Ok((e, json_secrets(text)?))),
        _ => edit::decode(text, syntax).map(|v| {
            let e = edit::get(&v, servers, ENTRY_NAME).cloned();
            (e, value_secrets(&v))
        }),
    };
    let (existing, secrets) = current.map_err(fail)?;
    // `"wasmgate": null` (`wasmgate: ~`) holds no entry: set, not refused.
    let existing = existing.as_ref().filter(|e| !e.is_null());
    if existing.is_some_and(|e| !is_ours(e)) {
        return Err(fail(format!(
            "already has an entry named {ENTRY_NAME} that does not run `wasmgate serve`; it is left as it is"
        )));
    }
    let new = if args.undo {
        if existing.is_none() {
            out.action = Some("none");
            return Ok(());
        }
        out.action = Some("removed");
        edit::remove_entry(text, syntax, servers, ENTRY_NAME)
    } else {
        let exe = std::env::current_exe()
            .and_then(std::fs::canonicalize)
            .map_err(|e| fail(format!("cannot find the wasmgate executable: {e}")))?
            .to_string_lossy()
            .into_owned();
        let entry = Agent::refreshed(
            existing,
            args.agent
                .entry(&exe, &serve_args(args.agent, plugins, config.map(|(c, _)| c))),
        );
        if let Some(off) = turned_off(&entry) {
            out.notes.push(format!(
                "note: the {ENTRY_NAME} entry is turned off in {} ({off}); \
                 the agent will not start it until that is changed",
                out.file
            ));
        }
        // `serve` refuses a named --plugins / --config that does not
        // exist or is of the wrong kind (exit 2), so the agent's entry
        // would fail at its start.
        for (flag, p, folder) in plugins
            .iter()
            .map(|p| (plugins_label, p.as_path(), true))
            .chain(config.map(|(c, label)| (label, c, false)))
        {
            // Config files are text: a path that is not UTF-8 would be
            // written as another path (U+FFFD for each bad byte).
            if p.to_str().is_none() {
                return Err(fail(format!(
                    "{flag} {} is not UTF-8 and cannot be written into the agent's config; \
                     use a folder whose path is",
                    shown(p)
                )));
            }
            let why = match std::fs::metadata(p) {
                Err(_) => "does not exist",
                Ok(m) if folder && !m.is_dir() => "is not a folder",
                Ok(m) if !folder && m.is_dir() => "is a folder, not a YAML file",
                Ok(_) => continue,
            };
            let w = format!(
                "{flag} {} {why}; `wasmgate serve` refuses to start until it is fixed{}",
                crate::terminal::line(&crate::terminal::cut_chars(&p.display().to_string(), 512)),
                if folder {
                    " (create the folder, or add a plugin to it with `wasmgate plugin add`)"
                } else {
                    ""
                }
            );
            eprintln!("wasmgate setup: warning: {w}");
            out.warnings.push(w);
        }
        if existing == Some(&entry) {
            out.action = Some("unchanged");
            return Ok(());
        }
        out.action = Some(if existing.is_some() { "updated" } else { "added" });
        edit::set_entry(text, syntax, servers, ENTRY_NAME, &entry)
    };
    let new = new.and_then(|t| fits(&t).map(|()| t)).map_err(fail)?;
    // A changed line of the file (a one-line file, a neighbour given its
    // comma) may hold secrets: redacted like every printed value
    // (docs/mcp-client.md §4).
    out.diff = Some(diff_text(&file, text, &new, secrets, &crate::secret::redact_patterns));
    if args.dry_run {
        return Ok(());
    }
    out.backup = write_with_backup(&file, old.as_deref(), &new)?.map(|b| b.display().to_string());
    out.written = true;
    Ok(())
}

/// Runs `wasmgate import`: prints the servers of `args.file` as a
/// wasmgate `mcp_servers:` config (only the valid ones; every problem on
/// stderr); with `--write`, merges them into `target`. Exit 1 when any
/// server was refused or the write failed.
pub fn run_import(args: &ImportArgs, target: Option<PathBuf>, json: bool) -> u8 {
    let path = &args.file;
    let ctx = ManifestContext::new(
        path.display().to_string(),
        crate::manifest::schema::plugin_dir_of(path),
    );
    // Only read: a link is followed, as `--config` follows it (`setup`
    // edits, and refuses one).
    let text = match path.try_exists() {
        Ok(false) => Ok(None),
        _ => crate::manifest::load::read_bounded(path, crate::manifest::load::MAX_CONFIG_BYTES)
            .map(Some),
    };
    let text = match text {
        Ok(Some(t)) => t,
        Ok(None) => {
            eprintln!("wasmgate import: {}: no such file", shown(path));
            return 1;
        }
        Err(m) => {
            eprintln!("wasmgate import: {}: {}", shown(path), crate::terminal::line(&m));
            return 1;
        }
    };
    // The file's `${VAR}`s are kept as written: what import prints and
    // writes never holds a value read from the environment.
    let places = Places {
        keep_env_vars: true,
        ..Places::of_file(path)
    };
    let decoded = match decode_config(path, &text, &ctx, &places) {
        Ok(d) => d,
        Err(m) => {
            eprintln!(
                "wasmgate import: {}: {}",
                shown(path),
                crate::terminal::line(&m)
            );
            return 1;
        }
    };
    let servers = decoded
        .value
        .get("mcp_servers")
        .cloned()
        .unwrap_or(Value::Null);
    let mut checked = servers_from_value(Some(&servers), &ctx, None);
    decoded.name_own_fields(&mut checked.errors);
    let mut problems: Vec<ManifestError> = decoded.errors;
    problems.extend(checked.errors);
    let mut out = Mapping::new();
    let mut secrets = Vec::new();
    let mut kept_refs = Vec::new();
    for s in &checked.servers {
        if let Some(e) = servers.get(s.name.as_str()) {
            out.insert(Value::String(s.name.clone()), e.clone());
            kept_refs.extend(unexpanded_refs(&s.name, e));
        }
        secrets.extend(printed_secrets(s));
    }
    // What is printed goes through the redaction of docs/mcp-client.md §4:
    // the servers' secrets (credential-named env and header values, URL
    // query values) and the token shapes; the written file keeps the values the user's
    // own file had, so the servers still work. A secret with `${VAR}`s in
    // it is redacted piece by piece: the references are printed as written.
    let secrets: Vec<String> = secrets
        .iter()
        .flat_map(|v| crate::secret::printed_forms(v))
        .collect();
    let redactor = crate::secret::Redactor::with_secrets(Vec::new(), secrets);
    // A `${NAME}` is no secret and is printed as written: the redactor's
    // values are the literal pieces around references (`printed_forms`),
    // and the patterns keep a value that is exactly a reference. The text
    // is redacted whole, so a pattern sees its context (`"Authorization":
    // "Bearer ${NAME}"` is advice, not a token).
    let redact = |t: &str| crate::secret::redact_patterns(&redactor.redact_secrets(t));
    let printed = redact_value(&Value::Mapping(out.clone()), &redact);
    let warnings: Vec<String> = decoded
        .warnings
        .into_iter()
        .chain(checked.warnings)
        .chain(kept_refs)
        .collect();
    if json {
        let v = serde_json::json!({
            "format": decoded.format.label(),
            "mcp_servers": serde_json::to_value(&printed).unwrap_or_default(),
            // Redacted as on stderr: a warning quotes the value it is about.
            "problems": problems.iter().map(|p| redact(&p.to_string())).collect::<Vec<_>>(),
            "warnings": warnings.iter().map(|w| redact(w)).collect::<Vec<_>>(),
        });
        println!(
            "{}",
            crate::terminal::json_text(serde_json::to_string_pretty(&v).unwrap_or_default())
        );
    } else {
        let mut top = Mapping::new();
        top.insert("mcp_servers".into(), printed);
        println!(
            "# wasmgate config from {} ({})",
            shown(path),
            decoded.format.label()
        );
        print!(
            "{}",
            crate::terminal::text(&yaml_serde::to_string(&Value::Mapping(top)).unwrap_or_default())
        );
    }
    for p in crate::terminal::listed(&problems, " (`--json` lists all)") {
        eprintln!("wasmgate import: {}", crate::terminal::line(&redact(&p)));
    }
    for w in crate::terminal::listed(&warnings, " (`--json` lists all)") {
        eprintln!("wasmgate import: warning: {}", crate::terminal::line(&redact(&w)));
    }
    let mut code = u8::from(!problems.is_empty());
    if args.write {
        let Some(target) = target else {
            eprintln!(
                "wasmgate import: no config file to write to (no --config and no user config dir)"
            );
            return 1;
        };
        if let Err(m) = merge_into(&target, &out, &redact) {
            eprintln!(
                "wasmgate import: {}: {}",
                shown(&target),
                crate::terminal::line(&redact(&m))
            );
            code = 1;
        }
    }
    code
}

/// Adds `servers` to the `mcp_servers` of the YAML config at `target`
/// (text edits: its comments stay); a name already there with another
/// entry is refused, the same entry skipped.
fn merge_into(
    target: &Path,
    servers: &Mapping,
    redact: &dyn Fn(&str) -> String,
) -> Result<(), String> {
    let old = read_text(target)?;
    let mut text = old.clone().unwrap_or_default();
    let current = edit::decode(&text, Syntax::Yaml)?;
    let mut clash = Vec::new();
    let mut added: Vec<(String, &Value)> = Vec::new();
    for (k, entry) in servers {
        let name = crate::validation::key_text(k);
        match edit::get(&current, &["mcp_servers"], &name) {
            Some(e) if e == entry => continue,
            Some(_) => clash.push(name),
            None => added.push((name, entry)),
        }
    }
    if !clash.is_empty() {
        let max = crate::validation::LIST_MAX_NAMES;
        let mut names: Vec<String> = clash
            .iter()
            .take(max)
            .map(|n| crate::validation::echo_name(n))
            .collect();
        if clash.len() > max {
            names.push(format!("… and {} more", clash.len() - max));
        }
        return Err(format!(
            "already has servers named {} with other entries; nothing was written (rename or remove them first)",
            names.join(", ")
        ));
    }
    // One edit for all of them: the file is decoded and checked once, not
    // twice per server.
    let added: Vec<(&str, &Value)> = added.iter().map(|(n, e)| (n.as_str(), *e)).collect();
    text = edit::set_entries(&text, Syntax::Yaml, &["mcp_servers"], &added)?;
    fits(&text)?;
    let before = old.clone().unwrap_or_default();
    if text == before {
        println!(
            "{}: already has these servers; nothing changed",
            shown(target)
        );
        return Ok(());
    }
    // The context lines may show the target's other servers: their
    // secrets are redacted too.
    print_diff(target, &before, &text, value_secrets(&current), redact);
    match write_with_backup(target, old.as_deref(), &text)? {
        Some(b) => println!("wrote {} (backup: {})", shown(target), shown(&b)),
        None => println!("wrote {}", shown(target)),
    }
    Ok(())
}

/// `v` with `redact` applied to every string it holds (keys stay), so the
/// printed YAML stays valid: `[REDACTED]` comes out quoted.
fn redact_value(v: &Value, redact: &dyn Fn(&str) -> String) -> Value {
    match v {
        Value::String(s) => Value::String(redact(s)),
        // A list of strings is a command line's arguments (`args`): the one
        // after a credential flag (`[--api-key, X]`) is a secret too.
        Value::Sequence(items) if items.iter().all(Value::is_string) => {
            let args: Vec<String> = items.iter().filter_map(|i| i.as_str()).map(str::to_string).collect();
            Value::Sequence(
                crate::secret::redact_args(&args)
                    .iter()
                    .map(|a| Value::String(redact(a)))
                    .collect(),
            )
        }
        Value::Sequence(items) => {
            Value::Sequence(items.iter().map(|i| redact_value(i, redact)).collect())
        }
        Value::Mapping(m) => Value::Mapping(
            m.iter()
                .map(|(k, i)| {
                    // A value under a credential name is a secret however
                    // short (the text redaction skips values of under four
                    // characters, which would match too much elsewhere);
                    // one that holds a `${NAME}` is advice, redacted piece
                    // by piece.
                    // A number there too (`DB_PASSWORD: 12345678`).
                    let whole = matches!(i, Value::String(s) if !s.contains("${"))
                        || matches!(i, Value::Number(_));
                    let whole = whole && k.as_str().is_some_and(crate::secret::is_credential_name);
                    let i = if whole {
                        Value::String(crate::secret::REDACTED.into())
                    } else {
                        redact_value(i, redact)
                    };
                    (k.clone(), i)
                })
                .collect(),
        ),
        // A number the redactor knows as a secret (a header's value, which
        // wasmgate reads as text).
        Value::Number(n) => {
            let t = n.to_string();
            let r = redact(&t);
            if r == t { v.clone() } else { Value::String(r) }
        }
        other => other.clone(),
    }
}

/// A warning for each `${VAR}` kept in `command`, `args` or `url` of an
/// imported entry: wasmgate does not interpolate those fields
/// (docs/security.md), so the server would get the text itself.
fn unexpanded_refs(server: &str, entry: &Value) -> Vec<String> {
    let has_ref = |s: &str| s.replace("${PLUGIN_DIR}", "").contains("${");
    let mut out = Vec::new();
    let mut note = |field: String, s: &str| {
        if has_ref(s) {
            let instead = if field == "url" {
                "send the secret in headers (\"Authorization\": \"Bearer ${NAME}\")"
            } else {
                "pass the value in env (\"NAME\": \"${NAME}\")"
            };
            out.push(format!(
                "server '{server}': {field} keeps '{s}' as written: wasmgate does not expand variables in command, args or url, so the server gets this text; {instead} or write it there"
            ));
        }
    };
    for field in ["command", "url"] {
        if let Some(s) = entry.get(field).and_then(Value::as_str) {
            note(field.to_string(), s);
        }
    }
    if let Some(Value::Sequence(args)) = entry.get("args") {
        for (i, a) in args.iter().enumerate() {
            if let Some(s) = a.as_str() {
                note(format!("args[{i}]"), s);
            }
        }
    }
    out
}

/// The values of `spec` that `import` must not print: what its `${VAR}`s
/// stood for, the argument after a credential flag
/// ([`crate::secret::credential_args`]), the `env` and `headers` values whose name looks like a
/// credential ([`crate::secret::is_credential_name`]; for
/// `Authorization: Bearer t` also `t`), and its URL's query values and
/// userinfo. An ordinary header (`X-Region: us-east-1`) stays readable.
fn printed_secrets(spec: &crate::manifest::ServerSpec) -> Vec<String> {
    use crate::manifest::Transport;
    use crate::secret::is_credential_name;
    let mut out = spec.secrets.clone();
    // The argument after a credential flag (`[--token, X]`): printed
    // redacted in the listing, and redacted where a warning quotes it.
    if let Transport::Stdio { args, .. } = &spec.transport {
        out.extend(
            crate::secret::credential_args(args)
                .into_iter()
                .map(|i| args[i].clone()),
        );
    }
    let mut named = |map: &std::collections::BTreeMap<String, String>| {
        for (k, v) in map {
            if is_credential_name(k) {
                out.push(v.clone());
                if let Some((_, token)) = v.split_once(' ') {
                    out.push(token.trim().to_string());
                }
            }
        }
    };
    match &spec.transport {
        Transport::Stdio { env, args, .. } => {
            named(env);
            // A connection string in an argument or a variable
            // (`postgres://u:pw@h/db`): its password and query values, as
            // `setup` redacts them from its diff.
            for v in args.iter().chain(env.values()) {
                out.extend(crate::secret::value_url_secrets(v));
            }
        }
        Transport::Http { url, headers } => {
            named(headers);
            out.extend(crate::secret::value_url_secrets(url));
        }
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_ours_when_a_wasmgate_executable_serves() {
        let e = |cmd: &str, first: &str| {
            let mut m = Mapping::new();
            m.insert("command".into(), Value::String(cmd.into()));
            m.insert("args".into(), Value::Sequence(vec![Value::String(first.into())]));
            Value::Mapping(m)
        };
        for cmd in ["/usr/bin/wasmgate", "/opt/wasmgate-x86_64-linux", "/opt/wasmgate.exe"] {
            assert!(is_ours(&e(cmd, "serve")), "{cmd}");
        }
        let me = std::env::current_exe().unwrap().canonicalize().unwrap();
        assert!(is_ours(&e(me.to_str().unwrap(), "serve")));
        assert!(!is_ours(&e("/usr/bin/wasmgate", "check")));
        assert!(!is_ours(&e("/usr/bin/wasmgatex", "serve")));
        assert!(!is_ours(&e("/bin/other", "serve")));
    }

    #[test]
    fn an_edit_past_the_read_limit_is_refused() {
        let max = crate::manifest::load::MAX_CONFIG_BYTES as usize;
        assert!(fits(&"x".repeat(max)).is_ok());
        let e = fits(&"x".repeat(max + 1)).unwrap_err();
        assert!(e.contains("more than the 67108864 wasmgate reads"), "{e}");
    }
}
