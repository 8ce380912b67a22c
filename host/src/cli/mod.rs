//! The `wasmgate` commands (clap). Each command takes `--json`, and every
//! command accepts `--plugins DIR` (repeatable) and `--config FILE`.
//!
//! Exit status: 0 success, 1 the input is invalid or the operation failed,
//! 2 usage errors (clap's own convention).

pub mod agents;
pub mod availability;
pub mod check;
pub mod component;
mod diff;
mod file_secrets;
pub mod login;
pub mod new;
pub mod plugin;
mod report;
pub mod serve;

use crate::host::{Host, HostOptions};
use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Command-line arguments.
#[derive(Debug, Parser)]
#[command(
    name = "wasmgate",
    version,
    about = "WebAssembly plugin host for AI agents: loads plugin components, evaluates which \
             applications this machine can offer, and connects their MCP servers."
)]
pub struct Cli {
    /// A folder of plugin components (repeatable). Default: $WASMGATE_PLUGINS
    /// (separated like PATH), else the user's config dir `wasmgate/plugins`.
    #[arg(long = "plugins", value_name = "DIR", global = true)]
    pub plugins: Vec<PathBuf>,
    /// A YAML file with an `mcp_servers:` mapping (docs/mcp-client.md §1).
    /// Default: $WASMGATE_CONFIG, else the user's config dir
    /// `wasmgate/config.yaml` when that file exists.
    #[arg(long, value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    /// Log filter (tracing's syntax), e.g. `debug` or `wasmgate=trace`. Default: $WASMGATE_LOG, else `warn`.
    #[arg(long, value_name = "FILTER", global = true)]
    pub log: Option<String>,
    /// Development mode: trust every plugin for this run without approval
    /// (also `WASMGATE_DEV=1`). Every output says so. Never for plugins
    /// you did not write.
    #[arg(long, global = true)]
    pub dev: bool,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Per plugin and server: availability (state, version, path), connection, tool names, skills.
    Status,
    /// Validate a plugin: a `.wasm` component, a `plugin.yaml`, or a `plugin.json`.
    /// Prints the normalized manifest, or every error as `<where>: <field path> …`.
    Check {
        /// The plugin: a `.wasm` component, a `plugin.yaml`, a `plugin.json`, or
        /// the plugin's folder (its plugin.yaml, else plugin.json, else its one
        /// `.wasm`). Check the assembled folder, so the server it ships beside
        /// the component is checked too.
        path: PathBuf,
    },
    /// The tools offered now (connected servers whose declaration is offerable).
    Tools,
    /// Call an offered tool.
    Call {
        /// Registered tool name, e.g. `mcp_git_log`.
        tool: String,
        /// Arguments as a JSON object.
        #[arg(long, value_name = "JSON", default_value = "{}")]
        args: String,
    },
    /// The skills and whether each is visible (`requires_apps` gate).
    Skills,
    /// Evaluate the declarations of a plugin on this machine or on a simulated host.
    Availability {
        /// A `plugin.yaml`, `plugin.json` or `.wasm` component, or the plugin's
        /// folder (as for `check`).
        path: PathBuf,
        /// A simulated host folder (`host.yaml` + `root/`; docs/simulated-host.md).
        #[arg(long, value_name = "DIR")]
        host: Option<PathBuf>,
    },
    /// Scaffold a plugin crate NAME in a new folder NAME: the component's
    /// declaration for win32, darwin and linux, a skill, a small stdio MCP
    /// server to ship beside it, and a README with the build, check and
    /// status commands.
    New(new::NewArgs),
    /// Serve every offered tool and visible skill as one MCP server (stdio,
    /// or streamable HTTP on loopback with `--http`); docs/mcp-client.md §7.
    Serve(serve::ServeArgs),
    /// Print another agent's MCP config (Claude, Cursor, Windsurf, VS Code,
    /// Codex, Goose) as wasmgate config; `--write` merges it into yours
    /// (docs/mcp-client.md §1.4).
    Import(agents::ImportArgs),
    /// Add the one `wasmgate serve` entry to an agent's user config (with
    /// a backup and a diff; run again, it keeps what you added to the
    /// entry); `--undo` removes exactly it (docs/mcp-client.md §1.5).
    Setup(agents::SetupArgs),
    /// Review, install, approve and remove plugins (the plugin lock,
    /// `<user config dir>/wasmgate/plugins.lock`; docs/security.md).
    Plugin {
        /// What to do.
        #[command(subcommand)]
        action: plugin::PluginCommand,
    },
    /// Log in to an `auth: oauth` server (OAuth 2.1, browser and loopback
    /// redirect; docs/mcp-client.md §9).
    Login(login::LoginArgs),
    /// Forget the login of an `auth: oauth` server.
    Logout {
        /// The server's name.
        server: String,
    },
}

/// Runs the command line; returns the process exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.command.loads_nothing() {
        quiet_on_closed_stdout();
    }
    init_logging(cli.log.as_deref());
    ExitCode::from(run(cli))
}

impl Command {
    /// The commands that read only the file they are given (or write an
    /// agent's): they load no plugins or servers, start no process and
    /// open no socket.
    fn loads_nothing(&self) -> bool {
        matches!(
            self,
            Command::Check { .. }
                | Command::Availability { .. }
                | Command::New(_)
                | Command::Import(_)
                | Command::Setup(_)
        )
    }
}

/// Ends the process quietly, as `cat` does, when its output pipe closes
/// (`wasmgate import FILE | head`): Rust ignores `SIGPIPE`, and `println!`
/// then panics with a backtrace. Only for the commands that start no
/// process and open no socket: for the others a closed pipe to a server
/// must fail that server, not end wasmgate.
fn quiet_on_closed_stdout() {
    #[cfg(unix)]
    // SAFETY: `signal` with a valid signal number and `SIG_DFL`, before
    // this process starts any thread or child.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn init_logging(filter: Option<&str>) {
    use tracing_subscriber::EnvFilter;
    let filter = filter
        .map(str::to_owned)
        .or_else(|| std::env::var("WASMGATE_LOG").ok())
        .unwrap_or_else(|| "warn".to_owned());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_new(filter).unwrap_or_else(|_| EnvFilter::new("warn")))
        // Every line redacted and escaped, rmcp's and reqwest's too
        // (docs/security.md, "Redaction").
        .with_writer(crate::logging::RedactingStderr)
        // Colour only for a terminal: logs redirected to a file stay plain.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .try_init();
}

fn run(cli: Cli) -> u8 {
    let plugin_dirs = if cli.plugins.is_empty() {
        default_plugin_dirs()
    } else {
        cli.plugins.clone()
    };
    if !cli.command.loads_nothing() && let Some(problem) = missing_named_path(&cli)
    {
        eprintln!("wasmgate: {problem}");
        return 2;
    }
    let dev = cli.dev || crate::trust::dev_from_env();
    // `status`'s text report opens with the same notice (`trust: …`);
    // every other output gets it here, once.
    if dev && (!matches!(cli.command, Command::Status) || cli.json) {
        eprintln!("wasmgate: {}", crate::trust::DEV_NOTICE);
    }
    let options = || {
        let mut o = HostOptions::new();
        o.plugin_dirs = plugin_dirs.clone();
        o.config = named_config(&cli)
            .map(|(path, _)| path)
            .or_else(default_config);
        o.sandbox.cache_dir = default_cache_dir();
        o.trust = if dev {
            crate::trust::TrustPolicy::Dev
        } else {
            crate::trust::TrustPolicy::default_lock()
        };
        o
    };
    match &cli.command {
        Command::Plugin { action } => {
            let ctx = plugin::Context {
                options: options(),
                install_dir: if cli.plugins.is_empty() {
                    default_install_dir()
                } else {
                    cli.plugins.first().cloned()
                },
                json: cli.json,
            };
            with_runtime(|| plugin::run(ctx, action))
        }
        Command::Check { path } => match plugin_file_of(path) {
            Ok(file) => component::run_check_any(&file, cli.json, config_server_names(&cli)) as u8,
            Err(why) => {
                let where_ = path.display().to_string();
                let msg = format!("wasmgate check: {where_}: {why}");
                check::fail(&where_, &msg, cli.json, check::EXIT_USAGE) as u8
            }
        },
        Command::New(args) => new::run(args),
        Command::Import(args) => agents::run_import(
            args,
            named_config(&cli)
                .map(|(p, _)| p)
                .or_else(|| user_config_dir().map(|d| d.join("wasmgate").join("config.yaml"))),
            cli.json,
        ),
        Command::Setup(args) => {
            let config = named_config(&cli);
            // The agent starts `serve` without the user's shell variables
            // (a desktop app reads no shell profile): folders named by
            // `$WASMGATE_PLUGINS` are written into its entry as `--plugins`.
            let (plugins, label) = if cli.plugins.is_empty() {
                let dirs = env_plugin_dirs();
                if dirs.as_ref().is_some_and(Vec::is_empty) {
                    eprintln!(
                        "wasmgate setup: warning: $WASMGATE_PLUGINS is set but names no folder; \
                         the agent's `wasmgate serve` will not see it and reads the default \
                         plugins folder (give --plugins to choose)"
                    );
                }
                (dirs.unwrap_or_default(), "$WASMGATE_PLUGINS")
            } else {
                (cli.plugins.clone(), "--plugins")
            };
            agents::run_setup(
                args,
                (&plugins, label),
                config.as_ref().map(|(p, label)| (p.as_path(), *label)),
                cli.json,
            )
        }
        Command::Availability { path, host } => match plugin_file_of(path) {
            Ok(file) => availability::run_availability(&file, host.as_deref(), cli.json) as u8,
            Err(why) => {
                eprintln!("wasmgate availability: {}: {why}", path.display());
                availability::EXIT_USAGE as u8
            }
        },
        Command::Skills => match Host::load(options()) {
            Ok(h) => {
                print!("{}", report::skills(&h, cli.json));
                0
            }
            Err(e) => fatal(&e.into()),
        },
        Command::Status => with_runtime(|| async {
            let h = Host::load(options())?;
            h.discover().await;
            print!("{}", report::status(&h, cli.json));
            h.shutdown().await;
            Ok(0)
        }),
        Command::Tools => with_runtime(|| async {
            let h = Host::load(options())?;
            h.discover().await;
            print!("{}", report::tools(&h, cli.json));
            h.shutdown().await;
            Ok(0)
        }),
        Command::Serve(args) => with_runtime(|| serve::run(options(), args)),
        Command::Login(args) => with_runtime(|| async {
            let h = Host::load(options())?;
            Ok(login::run_login(&h, args).await)
        }),
        Command::Logout { server } => match Host::load(options()) {
            Ok(h) => login::run_logout(&h, server),
            Err(e) => fatal(&e.into()),
        },
        Command::Call { tool, args } => {
            let args: serde_json::Value = match serde_json::from_str(args) {
                Ok(v @ serde_json::Value::Object(_)) => v,
                Ok(_) => {
                    eprintln!(
                        "wasmgate call: --args must be a JSON object, e.g. '{{\"path\": \".\"}}'"
                    );
                    return 2;
                }
                Err(e) => {
                    eprintln!("wasmgate call: --args is not valid JSON: {e}");
                    return 2;
                }
            };
            with_runtime(|| async {
                let h = Host::load(options())?;
                // Connect only the server that can own this tool name.
                h.discover_only(|s| crate::naming::may_own_tool(&s.name, tool))
                    .await;
                let code = report::call(&h, tool, args, cli.json).await;
                h.shutdown().await;
                Ok(code)
            })
        }
    }
}

fn with_runtime<F, Fut>(f: F) -> u8
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<u8>>,
{
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fatal(&anyhow::anyhow!("cannot start the async runtime: {e}")),
    };
    match rt.block_on(f()) {
        Ok(code) => code,
        Err(e) => fatal(&e),
    }
}

fn fatal(e: &anyhow::Error) -> u8 {
    eprintln!("wasmgate: {}", crate::terminal::line(&format!("{e:#}")));
    1
}

/// The compile cache folder (`docs/security.md`, "Compile cache"): `$WASMGATE_CACHE`
/// (empty: no cache), else `$XDG_CACHE_HOME/wasmgate/components`, else
/// `~/.cache/wasmgate/components`.
pub(crate) fn default_cache_dir() -> Option<PathBuf> {
    if let Some(v) = std::env::var_os("WASMGATE_CACHE") {
        return (!v.is_empty()).then(|| PathBuf::from(v));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("wasmgate").join("components"))
}

/// The user's config folder: `$XDG_CONFIG_HOME` (when absolute), else
/// `~/.config` on Linux and macOS; `%APPDATA%` on Windows.
fn user_config_dir() -> Option<PathBuf> {
    use etcetera::BaseStrategy;
    etcetera::choose_base_strategy()
        .ok()
        .map(|s| s.config_dir())
}

/// The plugin file a `check` / `availability` PATH names: the file itself,
/// or for a plugin folder its `plugin.yaml`, else its `plugin.json`, else
/// its one `.wasm` component. Errors (the sentence after the path): the path
/// does not exist, or the folder holds no plugin file or several components.
pub fn plugin_file_of(path: &Path) -> Result<PathBuf, String> {
    if path.is_file() {
        return Ok(path.to_path_buf());
    }
    if !path.is_dir() {
        return Err("no such file or folder".into());
    }
    if let Some(manifest) = crate::manifest::manifest_file(path) {
        return Ok(manifest);
    }
    let mut wasm: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| format!("cannot be read: {e}"))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && p.extension()
                    .is_some_and(|x| x.eq_ignore_ascii_case("wasm"))
        })
        .collect();
    match wasm.len() {
        0 => Err("is a folder with no plugin.yaml, plugin.json or .wasm file".into()),
        1 => Ok(wasm.remove(0)),
        n => Err(format!(
            "is a folder with {n} .wasm files; name the one to use"
        )),
    }
}

/// A path the user named (`--plugins`, `--config`, `$WASMGATE_CONFIG`) that
/// does not exist: a usage error (exit 2) rather than a host with nothing in
/// it, since a typo would otherwise look like "no MCP servers configured".
/// Defaults under the user config dir are used only when present, so they
/// are not checked here.
fn missing_named_path(cli: &Cli) -> Option<String> {
    for p in &cli.plugins {
        if !p.exists() {
            return Some(format!("--plugins {}: no such folder or file", p.display()));
        }
        if !p.is_dir() {
            let folder = p
                .parent()
                .filter(|f| !f.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            return Some(format!(
                "--plugins {}: is a file; --plugins takes a folder of plugins (here: --plugins {})",
                p.display(),
                folder.display()
            ));
        }
    }
    let (config, flag) = named_config(cli)?;
    (!config.is_file()).then(|| {
        if config.is_dir() {
            format!("{flag} {}: is a folder, not a YAML file", config.display())
        } else {
            format!("{flag} {}: no such file", config.display())
        }
    })
}

/// The config file the user named, with where it was named: `--config`,
/// else a non-empty `$WASMGATE_CONFIG` (a missing file is then an error,
/// since it was asked for).
fn named_config(cli: &Cli) -> Option<(PathBuf, &'static str)> {
    match &cli.config {
        Some(c) => Some((c.clone(), "--config")),
        None => std::env::var_os("WASMGATE_CONFIG")
            .filter(|v| !v.is_empty())
            .map(|v| (PathBuf::from(v), "$WASMGATE_CONFIG")),
    }
}

/// The names of the servers with a declaration in the config file `check`
/// would use (named, else the default one), plus its bad servers; none when
/// there is no config file (`check` is about the plugin, so a bad config is
/// not its error).
fn config_server_names(cli: &Cli) -> Vec<String> {
    let Some(path) = named_config(cli).map(|(p, _)| p).or_else(default_config) else {
        return Vec::new();
    };
    let res = crate::manifest::load_config(&path);
    let mut names: Vec<String> = res
        .servers
        .into_iter()
        .filter(|s| s.declaration.is_some())
        .map(|s| s.name)
        .collect();
    names.extend(res.errors.into_iter().filter_map(|e| e.server));
    names
}

/// `--config` default when none is named ([`named_config`]):
/// `<user config dir>/wasmgate/config.yaml` when that file exists, else no
/// config file.
fn default_config() -> Option<PathBuf> {
    let file = user_config_dir()?.join("wasmgate").join("config.yaml");
    file.is_file().then(|| {
        tracing::info!("using the config file {}", file.display());
        file
    })
}

/// Where `plugin add` installs when no `--plugins` is given: the first
/// folder of `$WASMGATE_PLUGINS`, else `<user config dir>/wasmgate/plugins`
/// (created).
fn default_install_dir() -> Option<PathBuf> {
    env_plugin_dirs()
        .and_then(|dirs| dirs.into_iter().next())
        .or_else(|| user_config_dir().map(|b| b.join("wasmgate").join("plugins")))
}

/// The folders of `$WASMGATE_PLUGINS` (split like PATH, empty parts
/// skipped); `None` when it is not set.
fn env_plugin_dirs() -> Option<Vec<PathBuf>> {
    let v = std::env::var_os("WASMGATE_PLUGINS")?;
    Some(
        std::env::split_paths(&v)
            .filter(|p| !p.as_os_str().is_empty())
            .collect(),
    )
}

/// `--plugins` default: `$WASMGATE_PLUGINS` (split like PATH), else
/// `<user config dir>/wasmgate/plugins` when it exists.
fn default_plugin_dirs() -> Vec<PathBuf> {
    if let Some(dirs) = env_plugin_dirs() {
        return dirs;
    }
    user_config_dir()
        .map(|b| b.join("wasmgate").join("plugins"))
        .filter(|p| p.is_dir())
        .into_iter()
        .collect()
}
