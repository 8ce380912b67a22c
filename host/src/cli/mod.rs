//! The `wasmgate` commands (clap). Each command takes `--json`, and every
//! command accepts `--plugins DIR` (repeatable) and `--config FILE`.
//!
//! Exit status: 0 success, 1 the input is invalid or the operation failed,
//! 2 usage errors (clap's own convention).

use clap::{Parser, Subcommand};
use std::path::PathBuf;
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
    /// A YAML file with an `mcp_servers:` mapping (spec/mcp-client.md §1).
    #[arg(long, value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    /// Log filter (tracing's syntax), e.g. `debug` or `wasmgate=trace`. Default: $WASMGATE_LOG, else `warn`.
    #[arg(long, value_name = "FILTER", global = true)]
    pub log: Option<String>,
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
        /// The file to check.
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
        /// A `plugin.yaml`, `plugin.json` or `.wasm` component.
        path: PathBuf,
        /// A simulated host folder (`host.yaml` + `root/`; spec/simulated-host.md).
        #[arg(long, value_name = "DIR")]
        host: Option<PathBuf>,
    },
}

/// Runs the command line; returns the process exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.log.as_deref());
    ExitCode::from(run(cli))
}

fn init_logging(filter: Option<&str>) {
    use tracing_subscriber::EnvFilter;
    let filter = filter
        .map(str::to_owned)
        .or_else(|| std::env::var("WASMGATE_LOG").ok())
        .unwrap_or_else(|| "warn".to_owned());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_new(filter).unwrap_or_else(|_| EnvFilter::new("warn")))
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}

fn run(cli: Cli) -> u8 {
    let _ = cli;
    0
}
