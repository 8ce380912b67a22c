//! What the client reports and takes: connection states, the reconnect
//! policy, options, tools, server status, the discovery report, call
//! results and errors (`docs/mcp-client.md` §3–4, §6).

use super::sampling;
use crate::naming::Collision;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

/// Connection state of one configured server (§6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConnectionState {
    /// A live session; its tools are offered.
    Connected,
    /// Connecting or reconnecting now.
    Connecting,
    /// The last connect failed or the session was lost (see `last_error`).
    Failed,
    /// `enabled: false`; never spawned or connected.
    Disabled,
    /// Its declaration is not offerable; never spawned.
    Gated,
}

impl fmt::Display for ConnectionState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ConnectionState::Connected => "connected",
            ConnectionState::Connecting => "connecting",
            ConnectionState::Failed => "failed",
            ConnectionState::Disabled => "disabled",
            ConnectionState::Gated => "gated",
        })
    }
}

/// Reconnect policy (§2): after a live session drops, `attempts` tries with
/// exponential backoff `initial_delay`, ×2 each, capped at `max_delay`; then
/// the server is `failed`, its tools hidden, and it is probed again every
/// `probe_interval`. The first connect of a server retries a transient
/// failure `first_connect_retries` times with the same backoff (1, 2, 4 s;
/// docs/mcp-client.md §2.5), all inside its `connect_timeout`. Configurable so tests
/// run in milliseconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReconnectPolicy {
    /// Tries after a drop (default 5; 0 = never reconnect).
    pub attempts: u32,
    /// First backoff delay (default 1 s).
    pub initial_delay: Duration,
    /// Largest backoff delay (default 60 s).
    pub max_delay: Duration,
    /// Self-probe period once the tries are spent (default 300 s; `None` = no probes).
    pub probe_interval: Option<Duration>,
    /// Retries of a transient failure inside a discovery connect (default
    /// 3, so at most 4 attempts; 0 = one attempt). Permanent failures
    /// ([`ConnectError::is_permanent`](super::ConnectError::is_permanent)) are never retried.
    pub first_connect_retries: u32,
}

impl Default for ReconnectPolicy {
    fn default() -> Self {
        ReconnectPolicy {
            attempts: 5,
            initial_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
            probe_interval: Some(Duration::from_secs(300)),
            first_connect_retries: 3,
        }
    }
}

impl ReconnectPolicy {
    /// Delay before try `n` (0-based): `initial_delay · 2^n`, at most `max_delay`.
    pub fn delay(&self, n: u32) -> Duration {
        let factor = 2u32.saturating_pow(n.min(31));
        self.initial_delay
            .saturating_mul(factor)
            .min(self.max_delay)
    }
}

/// Client options.
#[derive(Clone, Default)]
pub struct ClientOptions {
    /// What happens after a live session drops.
    pub reconnect: ReconnectPolicy,
    /// The embedding agent's LLM for `sampling/createMessage` (§5); `None`
    /// (the plain CLI) = the sampling capability is not advertised.
    pub sampling_provider: Option<Arc<dyn sampling::SamplingProvider>>,
    /// Where `app_endpoint` servers' endpoints come from, asked before
    /// every connect (`docs/declarations.md` §7.5). `Host::load` sets one
    /// that reads `server_json` on the machine availability was evaluated
    /// on, unless one is given here; `None` on a bare client: its
    /// `app_endpoint` servers fail to connect with
    /// [`ConnectError::AppNotRunning`](super::ConnectError::AppNotRunning).
    pub app_endpoints: Option<Arc<dyn crate::endpoint::AppEndpointSource>>,
    /// The longest registered tool name (`serve --name-budget`,
    /// `naming::agent_name_budget`); `None` = `naming::MAX_TOOL_NAME`.
    pub name_budget: Option<usize>,
    /// Where servers' progress, log lines, resource updates and
    /// elicitation requests go besides wasmgate's log (the gateway's
    /// clients, `upstream`); `None` = the elicitation
    /// capability is not declared.
    pub upstream: Option<Arc<dyn super::upstream::UpstreamSink>>,
}

impl fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientOptions")
            .field("reconnect", &self.reconnect)
            .field("sampling_provider", &self.sampling_provider.is_some())
            .field("app_endpoints", &self.app_endpoints.is_some())
            .field("upstream", &self.upstream.is_some())
            .finish()
    }
}

/// One registered (offered) tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolInfo {
    /// Registered name, `mcp_{server}_{tool}` (§2).
    pub name: String,
    /// Configured server name.
    pub server: String,
    /// The server's own tool name, used on the wire.
    pub original_name: String,
    /// Tool title, if the server gave one.
    pub title: Option<String>,
    /// Description (the server's, or `MCP tool <tool> from <server>`).
    pub description: String,
    /// JSON Schema of the arguments, as the server sent it.
    pub input_schema: serde_json::Value,
    /// The server's `readOnlyHint`, if given.
    pub read_only: Option<bool>,
}

/// Status of one configured server (§6). Reading it never connects.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerStatus {
    /// Configured server name.
    pub name: String,
    /// Plugin that brought it (`None` for a config-file server).
    pub plugin: Option<String>,
    /// `stdio`, `http` or `app-endpoint`.
    pub transport: &'static str,
    /// Connection state.
    pub state: ConnectionState,
    /// Number of offered tools.
    pub tool_count: usize,
    /// Registered names of its offered tools.
    pub tools: Vec<String>,
    /// Last connect or session error, redacted.
    pub last_error: Option<String>,
    /// Naming collisions in which this server's tool lost its plain name.
    pub collisions: Vec<Collision>,
    /// `name version` the server reported at initialize.
    pub server_info: Option<String>,
    /// Process id of its stdio child, while connected.
    pub pid: Option<u32>,
    /// Sampling audit metrics, once the server has asked for sampling.
    pub sampling: Option<sampling::SamplingMetrics>,
}

/// What one [`McpClient::connect_all`](super::McpClient::connect_all) pass did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DiscoveryReport {
    /// Servers connected in this pass.
    pub connected: Vec<String>,
    /// Servers that were already connected.
    pub already_connected: Vec<String>,
    /// `(server, error)` for each failed connect (error redacted).
    pub failed: Vec<(String, String)>,
    /// Servers not spawned because their declaration is not offerable.
    pub gated: Vec<String>,
    /// Servers with `enabled: false`.
    pub disabled: Vec<String>,
    /// Servers whose live session was lost and whose reconnect policy owns
    /// the retries (backoff tries, then a probe every `probe_interval`):
    /// this pass did not connect them.
    pub reconnecting: Vec<String>,
    /// Offered tools after the pass.
    pub tool_count: usize,
    /// Set when the list was empty: `NO_SERVERS_CONFIGURED` from the
    /// client; `Host` words it for its case (plugins held back by trust
    /// name themselves and the command that approves them).
    pub warning: Option<String>,
}

/// The outcome of a tool call that reached the server.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallResult {
    /// Configured server name.
    pub server: String,
    /// Original tool name.
    pub tool: String,
    /// Every content block as the server sent it (text, image, audio,
    /// resource links, embedded resources), in order.
    pub content: Vec<serde_json::Value>,
    /// `structuredContent`, if any.
    pub structured_content: Option<serde_json::Value>,
    /// The server's `isError`: the tool ran and failed (its text is redacted).
    pub is_error: bool,
    /// Bytes left out because the result exceeded `max_result_bytes` (0 = whole).
    pub truncated_bytes: usize,
}

impl CallResult {
    /// The text blocks joined with newlines.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter(|b| b.get("type").and_then(|t| t.as_str()) == Some("text"))
            .filter_map(|b| b.get("text").and_then(|t| t.as_str()))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Why a tool call did not produce a [`CallResult`]. Texts are redacted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// No offered tool has this name.
    #[error("no MCP tool named '{name}' is offered")]
    UnknownTool {
        /// The name asked for.
        name: String,
    },
    /// The tool's server has no live session now.
    #[error("MCP server '{server}' is not connected (state: {state})")]
    NotConnected {
        /// Configured server name.
        server: String,
        /// Its state.
        state: ConnectionState,
    },
    /// Arguments must be a JSON object (or null for none).
    #[error("arguments for '{name}' must be a JSON object")]
    BadArguments {
        /// Registered tool name.
        name: String,
    },
    /// The call ran past the server's `timeout`; it was cancelled on the server.
    #[error(
        "MCP call '{tool}' on server '{server}' timed out after {seconds} s and was cancelled; raise `timeout` in the server's entry if it needs longer"
    )]
    Timeout {
        /// Configured server name.
        server: String,
        /// Original tool name.
        tool: String,
        /// The configured timeout, in seconds.
        seconds: f64,
    },
    /// The request failed (transport closed, protocol error, …).
    #[error("MCP call '{tool}' on server '{server}' failed: {message}")]
    Failed {
        /// Configured server name.
        server: String,
        /// Original tool name.
        tool: String,
        /// What went wrong, redacted.
        message: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_caps() {
        let p = ReconnectPolicy::default();
        let d: Vec<u64> = (0..8).map(|n| p.delay(n).as_secs()).collect();
        assert_eq!(d, vec![1, 2, 4, 8, 16, 32, 60, 60]);
    }
}
