//! The MCP client (`docs/mcp-client.md` §2–4, §6) on rmcp: connects
//! offerable servers in parallel, lists their tools, names them
//! `mcp_{server}_{tool}`, calls them, and reports each server's connection
//! state.
//!
//! The client never evaluates availability: [`McpClient::connect_all`] takes
//! the gate decision from its caller (`offerable(spec)`), and a server that is
//! not offerable is never spawned (state `gated`). A server's tools are
//! offered only while it is connected.
//!
//! ```no_run
//! # async fn demo(specs: Vec<wasmgate::manifest::server::ServerSpec>) {
//! use wasmgate::mcp::McpClient;
//! let client = McpClient::new();
//! let report = client.connect_all(&specs, |_spec| true).await;
//! for tool in client.tools() {
//!     println!("{} ({})", tool.name, tool.server);
//! }
//! let result = client.call("mcp_git_status", serde_json::json!({})).await;
//! client.shutdown().await;
//! # }
//! ```

pub mod env;
pub mod filter;
mod handler;
mod http_bounds;
pub(crate) mod line_transport;
pub mod naming;
pub mod oauth;
mod peers;
pub mod sampling;
pub mod transport;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam,
    ClientRequest, PaginatedRequestParams, RequestId, ServerResult, Tool,
};
use rmcp::service::{Peer, PeerRequestOptions, RunningServiceCancellationToken};
use serde::Serialize;

use crate::manifest::server::{ServerSpec, Transport};
use crate::secret::Redactor;
use handler::Handler;
pub use naming::Collision;
pub use transport::ConnectError;
use transport::{ChildGuard, SHUTDOWN_GRACE};

/// Most `tools/list` pages read from one server.
pub const MAX_TOOL_PAGES: usize = 100;
/// Most tools kept of one server; the listing stops there with a warning.
pub const MAX_TOOLS_PER_SERVER: usize = 10_000;
/// Most bytes of tool definitions (as JSON) kept of one server; the listing
/// stops there with a warning. One page is at most
/// [`line_transport::MAX_TOOLS_PAGE_BYTES`] over stdio.
pub const MAX_TOOLS_BYTES_PER_SERVER: usize = 16 * 1024 * 1024;
/// How often a connected stdio child is checked for having exited (a
/// helper it started may keep its stdout open, so no end of stream comes).
const CHILD_WATCH: Duration = Duration::from_millis(100);
pub use handler::LOG_NOTIFICATIONS_PER_SECOND;
pub use line_transport::{MAX_CONTENT_BLOCKS, MAX_TOOLS_PAGE_BYTES};

/// The troubleshooting line when there is nothing to connect.
pub const NO_SERVERS_CONFIGURED: &str = "no MCP servers configured: add an entry under `mcp_servers` in the config file, or load a plugin that brings one";

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
    /// ([`ConnectError::is_permanent`]) are never retried.
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
    /// The machine whose applications' `server_json` files the
    /// app-endpoint transport reads (`docs/declarations.md` §7); `None` =
    /// this machine ([`crate::platform::RealPlatform`]).
    pub platform: Option<Arc<dyn crate::platform::Platform>>,
    /// The longest registered tool name (`serve --name-budget`,
    /// [`naming::agent_name_budget`]); `None` = [`naming::MAX_TOOL_NAME`].
    pub name_budget: Option<usize>,
}

impl fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientOptions")
            .field("reconnect", &self.reconnect)
            .field("sampling_provider", &self.sampling_provider.is_some())
            .field("platform", &self.platform.is_some())
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

/// What one [`McpClient::connect_all`] pass did.
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
    /// Set when the list was empty: [`NO_SERVERS_CONFIGURED`] from the
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

/// A live session.
struct Session {
    generation: u64,
    peer: Peer<RoleClient>,
    cancel: Mutex<Option<RunningServiceCancellationToken>>,
    child: Option<Arc<Mutex<ChildGuard>>>,
}

impl Session {
    fn pid(&self) -> Option<u32> {
        self.child.as_ref()?.lock().ok()?.id()
    }

    fn cancel(&self) {
        if let Some(t) = self.cancel.lock().ok().and_then(|mut c| c.take()) {
            t.cancel();
        }
    }

    /// Closes the session: stdin closes, the child gets [`SHUTDOWN_GRACE`]
    /// to exit, then its process group is killed.
    async fn close(&self) {
        self.cancel();
        if let Some(child) = &self.child {
            let deadline = tokio::time::Instant::now() + SHUTDOWN_GRACE;
            while tokio::time::Instant::now() < deadline {
                if child
                    .lock()
                    .map(|mut c| c.exited().is_some())
                    .unwrap_or(true)
                {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            if let Ok(mut c) = child.lock() {
                c.kill();
            }
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.cancel();
        if let Some(child) = &self.child
            && let Ok(mut c) = child.lock()
        {
            c.kill();
        }
    }
}

/// One configured server.
struct Slot {
    spec: ServerSpec,
    redactor: Redactor,
    state: ConnectionState,
    last_error: Option<String>,
    session: Option<Arc<Session>>,
    raw_tools: Vec<Tool>,
    server_info: Option<String>,
    /// A live session of this slot was lost and [`reconnect_loop`] owns
    /// the retries (tries with backoff, then a probe every
    /// `probe_interval`): a discovery pass leaves the slot to it instead of
    /// starting a ladder of its own (`docs/mcp-client.md` §8, "Connecting and reconnecting").
    reconnecting: bool,
}

impl Slot {
    fn new(spec: ServerSpec) -> Self {
        Slot {
            redactor: Redactor::for_spec(&spec),
            spec,
            state: ConnectionState::Connecting,
            last_error: None,
            session: None,
            raw_tools: Vec::new(),
            server_info: None,
            reconnecting: false,
        }
    }
}

#[derive(Default)]
struct State {
    servers: Vec<Slot>,
    tools: Vec<ToolInfo>,
    index: HashMap<String, usize>,
    collisions: Vec<Collision>,
    /// Config server names whose tool namespaces plugins may not take
    /// ([`McpClient::reserve_namespaces`]); config servers among the slots
    /// are reserved too.
    reserved: Vec<String>,
    /// The servers' tools changed since the last [`State::rebuild`]; the
    /// next reader ([`Inner::read`]) rebuilds. A discovery pass of many
    /// servers then re-mints once, not once per connected server.
    dirty: bool,
    /// [`ClientOptions::name_budget`].
    name_budget: Option<usize>,
}

impl State {
    fn slot_mut(&mut self, name: &str) -> Option<&mut Slot> {
        self.servers.iter_mut().find(|s| s.spec.name == name)
    }

    /// Forgets the registered tools of `server`, so the next [`State::rebuild`]
    /// builds them afresh from its `raw_tools` (after they changed).
    fn invalidate(&mut self, server: &str) {
        self.tools.retain(|t| t.server != server);
    }

    /// Re-mints every offered tool in configured server order (§2), so the
    /// first configured server keeps a contested name whatever order the
    /// connects finished in. A tool registered before keeps its
    /// [`ToolInfo`] (moved, only renamed if its name changed): rebuilding
    /// after each of many connects stays linear in the tool count instead of
    /// copying every input schema again (the discovery benchmark,
    /// `docs/performance.md`).
    fn rebuild(&mut self) {
        let mut raw: HashMap<(&str, &str), &Tool> = HashMap::new();
        let mut pairs: Vec<(&str, &str, bool)> = Vec::new();
        // Every config server, connected or not, keeps its namespace.
        let mut reserved = self.reserved.clone();
        for slot in &self.servers {
            if slot.spec.plugin.is_none() && !reserved.contains(&slot.spec.name) {
                reserved.push(slot.spec.name.clone());
            }
        }
        for slot in &self.servers {
            if slot.state != ConnectionState::Connected {
                continue;
            }
            for tool in &slot.raw_tools {
                if filter::offers(&slot.spec.tools, &tool.name) {
                    let key = (slot.spec.name.as_str(), tool.name.as_ref());
                    pairs.push((key.0, key.1, slot.spec.plugin.is_some()));
                    raw.entry(key).or_insert(tool);
                }
            }
        }
        let (minted, collisions) = naming::mint_all_reserving_within(
            pairs.iter().copied(),
            &reserved,
            self.name_budget.unwrap_or(naming::MAX_TOOL_NAME),
        );
        let mut old: HashMap<(String, String), ToolInfo> = std::mem::take(&mut self.tools)
            .into_iter()
            .map(|t| ((t.server.clone(), t.original_name.clone()), t))
            .collect();
        let tools: Vec<ToolInfo> = minted
            .into_iter()
            .map(|m| {
                if let Some(mut kept) = old.remove(&(m.server.clone(), m.tool.clone())) {
                    kept.name = m.name;
                    return kept;
                }
                let t = raw[&(m.server.as_str(), m.tool.as_str())];
                ToolInfo {
                    description: t
                        .description
                        .as_deref()
                        .filter(|d| !d.trim().is_empty())
                        .map(str::to_string)
                        .unwrap_or_else(|| format!("MCP tool {} from {}", m.tool, m.server)),
                    title: t.title.clone(),
                    input_schema: serde_json::Value::Object((*t.input_schema).clone()),
                    read_only: t.annotations.as_ref().and_then(|a| a.read_only_hint),
                    name: m.name,
                    server: m.server,
                    original_name: m.tool,
                }
            })
            .collect();
        for c in collisions.iter().filter(|c| !self.collisions.contains(c)) {
            if c.reserved {
                tracing::warn!(
                    server = %c.server,
                    tool = %c.tool,
                    "tool name '{}' lies in the namespace of config server '{}'; the plugin's tool is registered as {}",
                    c.name,
                    c.kept_by,
                    c.renamed_to.as_deref().unwrap_or("(not registered)")
                );
                continue;
            }
            tracing::warn!(
                server = %c.server,
                tool = %c.tool,
                "tool name '{}' is already taken by server '{}'; registered as {}",
                c.name,
                c.kept_by,
                c.renamed_to.as_deref().unwrap_or("(not registered)")
            );
        }
        self.index = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.clone(), i))
            .collect();
        self.tools = tools;
        self.collisions = collisions;
    }
}

/// Shared client state (sessions refer to it weakly).
pub(crate) struct Inner {
    state: Mutex<State>,
    next_generation: AtomicU64,
    options: ClientOptions,
    /// Sampling window and metrics per server, kept across reconnects.
    sampling: Mutex<HashMap<String, Arc<Mutex<sampling::SamplingState>>>>,
    /// Signalled whenever the registered tools may have changed (a server
    /// connected, lost or re-listed). One stored permit: any number of
    /// changes before the listener wakes count as one.
    changed: tokio::sync::Notify,
}

impl Inner {
    /// The sampling set-up of a server, when a provider is there and its
    /// policy allows sampling.
    fn sampling_setup(&self, spec: &ServerSpec) -> Option<sampling::SamplingSetup> {
        let provider = self.options.sampling_provider.clone()?;
        let config = spec.sampling.clone();
        let server = spec.name.as_str();
        if !config.active() {
            return None;
        }
        let state = self
            .sampling
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(server.to_string())
            .or_default()
            .clone();
        Some(sampling::SamplingSetup {
            provider,
            config,
            state,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data; keep going.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The state with its registered tools up to date (for readers of
    /// tools, names, collisions and status).
    fn read(&self) -> std::sync::MutexGuard<'_, State> {
        let mut st = self.lock();
        if st.dirty {
            st.dirty = false;
            st.rebuild();
        }
        st
    }
}

/// The MCP client. Cheap to clone (shared state); every method takes `&self`.
#[derive(Clone)]
pub struct McpClient {
    inner: Arc<Inner>,
}

impl Default for McpClient {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for McpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpClient")
            .field("servers", &self.inner.lock().servers.len())
            .finish()
    }
}

/// What a successful connect brings back.
struct Connected {
    session: Session,
    tools: Vec<Tool>,
    server_info: Option<String>,
    monitor: rmcp::service::RunningService<RoleClient, Handler>,
    /// The slot's redactor plus the app-endpoint token, when there is one.
    redactor: Option<Redactor>,
}

/// Reads every `tools/list` page; a cursor seen before (one that does not
/// advance) ends the listing with a warning.
async fn list_tools_paged(
    peer: &Peer<RoleClient>,
    server: &str,
) -> Result<Vec<Tool>, rmcp::ServiceError> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    let mut seen: HashSet<String> = HashSet::new();
    let mut bytes = 0usize;
    for n in 0..MAX_TOOL_PAGES {
        let page = match peer
            .list_tools(Some(
                PaginatedRequestParams::default().with_cursor(cursor.clone()),
            ))
            .await
        {
            Ok(p) => p,
            // A later page that fails (too big, unreadable) ends the
            // listing; the tools read so far are kept.
            Err(e) if n > 0 => {
                tracing::warn!(
                    server,
                    "tools/list page {} failed ({}); stopping at {} tools",
                    n + 1,
                    crate::terminal::line(&e.to_string()),
                    tools.len()
                );
                return Ok(tools);
            }
            Err(e) => return Err(e),
        };
        for t in page.tools {
            bytes += serde_json::to_vec(&t).map_or(0, |v| v.len());
            if tools.len() >= MAX_TOOLS_PER_SERVER || bytes > MAX_TOOLS_BYTES_PER_SERVER {
                tracing::warn!(
                    server,
                    "tools/list exceeded {MAX_TOOLS_PER_SERVER} tools or {MAX_TOOLS_BYTES_PER_SERVER} bytes of tool definitions; stopping at {} tools",
                    tools.len()
                );
                return Ok(tools);
            }
            tools.push(t);
        }
        match page.next_cursor {
            Some(next) if !next.is_empty() => {
                if !seen.insert(next.clone()) {
                    tracing::warn!(
                        server,
                        "tools/list cursor '{}' does not advance; stopping at {} tools",
                        crate::terminal::line(&crate::terminal::cut_chars(&next, 100)),
                        tools.len()
                    );
                    return Ok(tools);
                }
                cursor = Some(next);
            }
            _ => return Ok(tools),
        }
    }
    tracing::warn!(
        server,
        "tools/list exceeded {MAX_TOOL_PAGES} pages; stopping at {} tools",
        tools.len()
    );
    Ok(tools)
}

/// The first connect of a discovery pass (§2, docs/mcp-client.md §2.5): a transient
/// failure is retried after `initial_delay`, ×2 each time (1, 2, 4 s by
/// default), up to `first_connect_retries` times; every attempt and pause
/// fits inside the server's `connect_timeout`. The last attempt's error is
/// returned.
async fn connect_first(
    inner: &Arc<Inner>,
    spec: &ServerSpec,
    redactor: &Redactor,
) -> Result<Connected, ConnectError> {
    let policy = &inner.options.reconnect;
    let deadline = tokio::time::Instant::now() + spec.connect_timeout;
    let mut n = 0u32;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let err = match connect_one_within(inner, spec, redactor, left).await {
            Ok(c) => return Ok(c),
            Err(e) => e,
        };
        let delay = policy.delay(n);
        let spent = n >= policy.first_connect_retries
            || err.is_permanent()
            || tokio::time::Instant::now() + delay >= deadline;
        if spent {
            return Err(err);
        }
        tracing::info!(
            server = %spec.name,
            "connect attempt {} failed ({}); retrying in {:?}",
            n + 1,
            redactor.redact(&err.to_string()),
            delay
        );
        tokio::time::sleep(delay).await;
        n += 1;
    }
}

/// Connects one server under its `connect_timeout`: transport, `initialize`,
/// then `tools/list` (skipped when the server lacks the tools capability).
async fn connect_one(
    inner: &Arc<Inner>,
    spec: &ServerSpec,
    redactor: &Redactor,
) -> Result<Connected, ConnectError> {
    connect_one_within(inner, spec, redactor, spec.connect_timeout).await
}

/// Reads the app-endpoint's URL and token afresh from the application's
/// `server_json` (`docs/declarations.md` §7).
fn app_endpoint(
    inner: &Inner,
    spec: &ServerSpec,
) -> Result<crate::resolver::liveness::Endpoint, ConnectError> {
    let real;
    let platform: &dyn crate::platform::Platform = match &inner.options.platform {
        Some(p) => p.as_ref(),
        None => {
            real = crate::platform::RealPlatform::new();
            &real
        }
    };
    let app = spec
        .declaration
        .as_ref()
        .and_then(|d| d.app_for(platform.os_family()))
        .ok_or_else(|| ConnectError::AppNotRunning {
            detail: format!(
                "its declaration has no app block for {}",
                platform.os_family().as_str()
            ),
        })?;
    let report = crate::resolver::liveness::read_server_json(app, platform);
    report.endpoint.ok_or(ConnectError::AppNotRunning {
        detail: report.detail,
    })
}

/// [`connect_one`] bounded by `limit` instead of the whole `connect_timeout`.
async fn connect_one_within(
    inner: &Arc<Inner>,
    spec: &ServerSpec,
    redactor: &Redactor,
    limit: Duration,
) -> Result<Connected, ConnectError> {
    let endpoint = match &spec.transport {
        Transport::AppEndpoint => Some(app_endpoint(inner, spec)?),
        _ => None,
    };
    // The app-endpoint token is a secret of this session: every text this
    // connect produces is redacted with it too.
    let token_redactor = endpoint
        .as_ref()
        .filter(|e| !e.token.is_empty())
        .map(|e| redactor.with_literal(e.token.expose()));
    let redactor = token_redactor.as_ref().unwrap_or(redactor);
    connect_attempt(inner, spec, redactor, endpoint.as_ref(), limit)
        .await
        .map(|mut c| {
            c.redactor = token_redactor.clone();
            c
        })
        .map_err(|e| match &token_redactor {
            Some(r) => e.redacted(r),
            None => e,
        })
}

/// One connect attempt under `limit`.
async fn connect_attempt(
    inner: &Arc<Inner>,
    spec: &ServerSpec,
    redactor: &Redactor,
    endpoint: Option<&crate::resolver::liveness::Endpoint>,
    limit: Duration,
) -> Result<Connected, ConnectError> {
    let generation = inner.next_generation.fetch_add(1, Ordering::Relaxed);
    let handler = Handler {
        server: spec.name.clone(),
        generation,
        client: Arc::downgrade(inner),
        redactor: redactor.clone(),
        sampling: inner.sampling_setup(spec),
        refresh: Default::default(),
        log_limit: Default::default(),
    };
    let child_slot = Mutex::new(None);
    let attempt = async {
        let opened = match (&spec.transport, endpoint) {
            (Transport::Stdio { .. }, _) => {
                transport::open_stdio(spec, redactor, handler, &child_slot).await?
            }
            (Transport::Http { .. }, _) => transport::open_http(spec, handler).await?,
            (Transport::AppEndpoint, Some(ep)) => {
                transport::open_app_endpoint(ep, spec, handler).await?
            }
            (Transport::AppEndpoint, None) => {
                return Err(ConnectError::AppNotRunning {
                    detail: "no endpoint was read".into(),
                });
            }
        };
        let info = opened.peer.peer_info();
        let has_tools = info.as_ref().is_none_or(|i| i.capabilities.tools.is_some());
        let server_info = info.as_ref().and_then(|i| {
            i.server_info
                .as_ref()
                .map(|s| format!("{} {}", s.name, s.version))
        });
        let tools = if has_tools {
            list_tools_paged(&opened.peer, &spec.name)
                .await
                .map_err(|e| ConnectError::ListTools {
                    message: e.to_string(),
                })?
        } else {
            tracing::info!(
                server = %spec.name,
                "server does not advertise the tools capability; skipping tools/list"
            );
            Vec::new()
        };
        Ok::<_, ConnectError>(Connected {
            session: Session {
                generation,
                peer: opened.peer.clone(),
                cancel: Mutex::new(Some(opened.service.cancellation_token())),
                child: opened.child,
            },
            tools,
            server_info,
            monitor: opened.service,
            redactor: None,
        })
    };
    match tokio::time::timeout(limit, attempt).await {
        Ok(r) => r,
        Err(_) => {
            let child = child_slot.lock().ok().and_then(|mut c| c.take());
            Err(transport::timeout_error(spec, child).await)
        }
    }
}

/// Installs a fresh session in its slot (if the slot still wants one) and
/// starts the monitor that notices when it ends.
fn install(inner: &Arc<Inner>, name: &str, connected: Connected) -> bool {
    let Connected {
        session,
        tools,
        server_info,
        monitor,
        redactor,
    } = connected;
    let generation = session.generation;
    let session_child = session.child.clone();
    let session = Arc::new(session);
    {
        let mut st = inner.lock();
        let Some(slot) = st.slot_mut(name) else {
            return false;
        };
        if matches!(
            slot.state,
            ConnectionState::Disabled | ConnectionState::Gated
        ) {
            return false;
        }
        tracing::info!(
            server = %name,
            "MCP server '{name}' ({}): registered {} tool(s)",
            transport_name(&slot.spec.transport),
            tools.len()
        );
        slot.state = ConnectionState::Connected;
        slot.last_error = None;
        slot.reconnecting = false;
        if let Some(r) = redactor {
            crate::logging::register_secrets(&r);
            slot.redactor = r;
        }
        slot.raw_tools = tools;
        slot.server_info = server_info;
        slot.session = Some(session);
        st.invalidate(name);
        st.dirty = true;
    }
    inner.changed.notify_one();
    if let Some(child) = session_child {
        // The child may exit while a helper it started keeps its stdout
        // open: no end of stream comes, so watch the process itself and end
        // the session (failing the calls in flight) when it exits.
        let weak = Arc::downgrade(inner);
        let name = name.to_string();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(CHILD_WATCH).await;
                let Some(inner) = weak.upgrade() else { return };
                let session = {
                    let mut st = inner.lock();
                    match st.slot_mut(&name).and_then(|s| s.session.clone()) {
                        Some(s) if s.generation == generation => s,
                        _ => return,
                    }
                };
                let exited = child.lock().ok().and_then(|mut c| c.exited());
                if let Some(status) = exited {
                    tracing::debug!(server = %name, "the server process exited ({status})");
                    session.cancel();
                    return;
                }
            }
        });
    }
    let weak = Arc::downgrade(inner);
    let name = name.to_string();
    tokio::spawn(async move {
        let reason = monitor.waiting().await;
        if let Some(inner) = weak.upgrade() {
            session_ended(&inner, &name, generation, format!("{reason:?}")).await;
        }
    });
    true
}

/// A session ended. If it was not closed on purpose (the slot still holds
/// it), the server is `failed`, its tools are hidden, and the reconnect
/// policy runs.
async fn session_ended(inner: &Arc<Inner>, name: &str, generation: u64, reason: String) {
    // The transport closes a moment before the OS reports the exit; give
    // the child a short grace so the error can say how it ended.
    let child = {
        let mut st = inner.lock();
        match st.slot_mut(name).and_then(|s| s.session.clone()) {
            Some(s) if s.generation == generation => s.child.clone(),
            _ => return,
        }
    };
    let status = match &child {
        Some(c) => transport::exit_status(c).await,
        None => None,
    };
    let (session, spec) = {
        let mut st = inner.lock();
        let Some(slot) = st.slot_mut(name) else {
            return;
        };
        let is_current = slot
            .session
            .as_ref()
            .is_some_and(|s| s.generation == generation);
        if !is_current {
            return;
        }
        let session = slot.session.take();
        let msg = match status {
            Some(s) => format!("the server process exited ({s}); connection lost"),
            None => format!("connection lost ({reason})"),
        };
        tracing::warn!(server = %name, "MCP server '{name}': {}", slot.redactor.redact(&msg));
        slot.last_error = Some(slot.redactor.redact(&msg));
        slot.state = ConnectionState::Failed;
        slot.raw_tools.clear();
        slot.reconnecting = policy_reconnects(&inner.options.reconnect);
        let spec = slot.spec.clone();
        st.dirty = true;
        (session, spec)
    };
    inner.changed.notify_one();
    if let Some(s) = session {
        s.close().await;
    }
    let policy = inner.options.reconnect.clone();
    let weak = Arc::downgrade(inner);
    let name = name.to_string();
    tokio::spawn(async move { reconnect_loop(weak, name, spec, policy).await });
}

/// Whether [`reconnect_loop`] will try again at all under `policy`.
fn policy_reconnects(policy: &ReconnectPolicy) -> bool {
    policy.attempts > 0 || policy.probe_interval.is_some()
}

/// Whether the slot still exists with this spec and is `failed` (so a
/// reconnect may proceed); marks it `connecting` when `start` is set.
fn wants_reconnect(inner: &Inner, name: &str, spec: &ServerSpec, start: bool) -> bool {
    let mut st = inner.lock();
    match st.slot_mut(name) {
        Some(slot) if slot.spec == *spec && slot.state == ConnectionState::Failed => {
            if start {
                slot.state = ConnectionState::Connecting;
            }
            true
        }
        _ => false,
    }
}

/// Reconnect per §2: `attempts` tries with backoff, then a probe every
/// `probe_interval`. Stops when the client is gone or the slot was
/// reconfigured, gated, disabled or reconnected by a discovery pass.
async fn reconnect_loop(
    weak: Weak<Inner>,
    name: String,
    spec: ServerSpec,
    policy: ReconnectPolicy,
) {
    let mut n = 0u32;
    loop {
        let delay = if n < policy.attempts {
            policy.delay(n)
        } else {
            match policy.probe_interval {
                Some(p) => p,
                None => {
                    // No probes: discovery passes may retry it again.
                    if let Some(inner) = weak.upgrade()
                        && let Some(slot) = inner.lock().slot_mut(&name)
                        && slot.spec == spec
                    {
                        slot.reconnecting = false;
                    }
                    return;
                }
            }
        };
        n = n.saturating_add(1);
        tokio::time::sleep(delay).await;
        let Some(inner) = weak.upgrade() else { return };
        if !wants_reconnect(&inner, &name, &spec, true) {
            return;
        }
        let redactor = Redactor::for_spec(&spec);
        match connect_one(&inner, &spec, &redactor).await {
            Ok(c) => {
                if install(&inner, &name, c) {
                    tracing::info!(server = %name, "MCP server '{name}' reconnected");
                }
                return;
            }
            Err(e) => {
                let msg =
                    redactor.redact(&format!("failed to connect to MCP server '{name}': {e}"));
                tracing::warn!(server = %name, attempt = n, "{msg}");
                let mut st = inner.lock();
                match st.slot_mut(&name) {
                    Some(slot)
                        if slot.spec == spec && slot.state == ConnectionState::Connecting =>
                    {
                        slot.state = ConnectionState::Failed;
                        slot.last_error = Some(msg);
                    }
                    _ => return,
                }
            }
        }
    }
}

/// A `tools/call` result with its content blocks as JSON: the typed ones
/// serialized again, and — when a block of a type this client does not know
/// made the typed parse fail — every block as the server sent it.
struct RawCallResult {
    content: Vec<serde_json::Value>,
    structured_content: Option<serde_json::Value>,
    is_error: bool,
}

/// Sends `notifications/cancelled` for a request when dropped before
/// [`CancelOnDrop::disarm`] (a call abandoned by its caller or its timeout).
struct CancelOnDrop {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl CancelOnDrop {
    fn disarm(&mut self) {
        self.id = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        rt.spawn(async move {
            let n = CancelledNotification::new(CancelledNotificationParam::new(
                Some(id),
                Some("request abandoned by the caller".into()),
            ));
            let _ = peer.send_notification(n.into()).await;
        });
    }
}

/// `tools/call` that survives content blocks of unknown types. rmcp's typed
/// `call_tool` fails the whole call ("Unexpected response type") when one
/// block does not parse, because the result then arrives as a
/// `CustomResult`; here that raw result is read leniently instead: its
/// `content` blocks kept as sent (the CLI names the unknown type and shows
/// its JSON), `isError` and `structuredContent` as given.
async fn call_tool_tolerant(
    peer: &Peer<RoleClient>,
    params: CallToolRequestParams,
) -> Result<RawCallResult, rmcp::ServiceError> {
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await?;
    let mut guard = CancelOnDrop {
        peer: peer.clone(),
        id: Some(handle.id.clone()),
    };
    let result = handle.await_response().await;
    guard.disarm();
    match result? {
        ServerResult::CallToolResult(r) => Ok(RawCallResult {
            content: r
                .content
                .iter()
                .map(|b| serde_json::to_value(b).unwrap_or(serde_json::Value::Null))
                .collect(),
            structured_content: r.structured_content,
            is_error: r.is_error == Some(true),
        }),
        ServerResult::CustomResult(custom) => lenient_call_result(custom.0),
        ServerResult::EmptyResult(_) => Ok(RawCallResult {
            content: Vec::new(),
            structured_content: None,
            is_error: false,
        }),
        _ => Err(rmcp::ServiceError::UnexpectedResponse),
    }
}

/// Reads a `tools/call` result that did not fit the typed parse: an object
/// whose `content` (absent = none) is a list. Anything else is still an
/// unexpected response.
fn lenient_call_result(v: serde_json::Value) -> Result<RawCallResult, rmcp::ServiceError> {
    let serde_json::Value::Object(mut o) = v else {
        return Err(rmcp::ServiceError::UnexpectedResponse);
    };
    let content = match o.remove("content") {
        None | Some(serde_json::Value::Null) => Vec::new(),
        Some(serde_json::Value::Array(a)) => a,
        Some(_) => return Err(rmcp::ServiceError::UnexpectedResponse),
    };
    Ok(RawCallResult {
        content,
        structured_content: o.remove("structuredContent").filter(|v| !v.is_null()),
        is_error: o.get("isError").and_then(serde_json::Value::as_bool) == Some(true),
    })
}

/// Re-lists one server's tools after `notifications/tools/list_changed`.
pub(crate) async fn refresh_tools(inner: &Arc<Inner>, name: &str, generation: u64) {
    let session = {
        let mut st = inner.lock();
        match st.slot_mut(name).and_then(|s| s.session.clone()) {
            Some(s) if s.generation == generation => s,
            _ => return,
        }
    };
    match list_tools_paged(&session.peer, name).await {
        Ok(tools) => {
            let mut st = inner.lock();
            if let Some(slot) = st.slot_mut(name)
                && slot
                    .session
                    .as_ref()
                    .is_some_and(|s| s.generation == generation)
            {
                let before: HashSet<String> =
                    slot.raw_tools.iter().map(|t| t.name.to_string()).collect();
                let after: HashSet<String> = tools.iter().map(|t| t.name.to_string()).collect();
                tracing::info!(
                    server = %name,
                    "tools changed: added {:?}, removed {:?}",
                    after.difference(&before).collect::<Vec<_>>(),
                    before.difference(&after).collect::<Vec<_>>()
                );
                slot.raw_tools = tools;
                st.invalidate(name);
                st.dirty = true;
                drop(st);
                inner.changed.notify_one();
            }
        }
        Err(e) => tracing::warn!(server = %name, "tools/list refresh failed: {e}"),
    }
}

fn transport_name(t: &Transport) -> &'static str {
    match t {
        Transport::Stdio { .. } => "stdio",
        Transport::Http { .. } => "http",
        Transport::AppEndpoint => "app-endpoint",
    }
}

/// Bytes of a JSON value when serialized.
fn json_len(v: &serde_json::Value) -> usize {
    serde_json::to_string(v).map(|s| s.len()).unwrap_or(0)
}

/// Applies `f` to every string inside a JSON value.
fn map_strings(v: &mut serde_json::Value, f: &dyn Fn(&str) -> String) {
    match v {
        serde_json::Value::String(s) => *s = f(s),
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| map_strings(x, f)),
        serde_json::Value::Object(o) => o.values_mut().for_each(|x| map_strings(x, f)),
        _ => {}
    }
}

/// Cuts a result to `max` bytes (serialized): whole blocks while they fit,
/// the first text block that does not fit is cut, the rest is left out, and
/// a note says how much.
fn bound_result(
    content: &mut Vec<serde_json::Value>,
    structured: &mut Option<serde_json::Value>,
    max: usize,
) -> usize {
    let total: usize =
        content.iter().map(json_len).sum::<usize>() + structured.as_ref().map_or(0, json_len);
    if total <= max {
        return 0;
    }
    let mut budget = max;
    let mut kept = Vec::new();
    for mut block in content.drain(..) {
        let len = json_len(&block);
        if len <= budget {
            budget -= len;
            kept.push(block);
            continue;
        }
        if let Some(serde_json::Value::String(text)) = block.get_mut("text")
            && budget > 64
        {
            let mut cut = (budget - 64).min(text.len());
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            kept.push(block);
        }
        break;
    }
    let structured_len = structured.as_ref().map_or(0, json_len);
    let kept_len: usize = kept.iter().map(json_len).sum();
    if structured_len > max.saturating_sub(kept_len) {
        *structured = None;
    }
    let now = kept_len + structured.as_ref().map_or(0, json_len);
    let left_out = total.saturating_sub(now);
    kept.push(serde_json::json!({
        "type": "text",
        "text": format!("[result truncated: about {left_out} of {total} bytes left out (max_result_bytes = {max})]"),
    }));
    *content = kept;
    left_out
}

impl McpClient {
    /// A client with the default options (reconnect 5 tries, 1–60 s backoff,
    /// probe every 300 s).
    pub fn new() -> Self {
        Self::with_options(ClientOptions::default())
    }

    /// A client with explicit options.
    pub fn with_options(options: ClientOptions) -> Self {
        McpClient {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    name_budget: options.name_budget,
                    ..State::default()
                }),
                next_generation: AtomicU64::new(1),
                options,
                sampling: Mutex::new(HashMap::new()),
                changed: tokio::sync::Notify::new(),
            }),
        }
    }

    /// Keeps the tool namespaces of these config server names from plugin
    /// servers ([`naming::mint_all_reserving`]), whether those servers are
    /// connected, listed in a later [`McpClient::connect_all`] or not (a
    /// `call` connects only some; an invalid entry still owns its name).
    /// Replaces the previous list; the next read re-mints.
    pub fn reserve_namespaces(&self, names: impl IntoIterator<Item = String>) {
        let mut st = self.inner.lock();
        let mut list: Vec<String> = Vec::new();
        for n in names {
            if !list.contains(&n) {
                list.push(n);
            }
        }
        if st.reserved != list {
            st.reserved = list;
            st.dirty = true;
        }
    }

    /// Discovery (§2): makes `specs` the configured servers (in this order),
    /// then connects — in parallel, each under its own `connect_timeout` —
    /// every server that is enabled, offerable by `offerable(spec)`, and not
    /// already connected. Servers that failed before are retried. A server
    /// that is disabled or not offerable is never spawned (a live session of
    /// one is closed). Servers no longer listed are closed and forgotten.
    /// Idempotent. Must run inside a tokio runtime.
    pub async fn connect_all(
        &self,
        specs: &[ServerSpec],
        offerable: impl Fn(&ServerSpec) -> bool,
    ) -> DiscoveryReport {
        let mut report = DiscoveryReport::default();
        if specs.is_empty() {
            // Logged by the caller, which knows why the list is empty (a
            // held-back plugin is not "nothing configured").
            tracing::debug!("{NO_SERVERS_CONFIGURED}");
            report.warning = Some(NO_SERVERS_CONFIGURED.to_string());
        }
        let mut to_close: Vec<Arc<Session>> = Vec::new();
        let mut to_connect: Vec<(ServerSpec, Redactor)> = Vec::new();
        {
            let mut st = self.inner.lock();
            let mut old: Vec<Slot> = std::mem::take(&mut st.servers);
            let mut seen = HashSet::new();
            for spec in specs {
                if !seen.insert(spec.name.clone()) {
                    tracing::warn!(server = %spec.name, "server name listed twice; the later entry is ignored");
                    continue;
                }
                let mut slot = match old.iter().position(|s| s.spec.name == spec.name) {
                    Some(i) if old[i].spec == *spec => old.remove(i),
                    Some(i) => {
                        // Reconfigured: a fresh session under the new spec.
                        let prev = old.remove(i);
                        to_close.extend(prev.session);
                        Slot::new(spec.clone())
                    }
                    None => Slot::new(spec.clone()),
                };
                // rmcp's own log lines may carry this server's secrets
                // (a 401's WWW-Authenticate echo): the log redacts them too.
                crate::logging::register_secrets(&slot.redactor);
                let allowed = spec.enabled && offerable(spec);
                if !allowed {
                    to_close.extend(slot.session.take());
                    slot.raw_tools.clear();
                    slot.last_error = None;
                    slot.reconnecting = false;
                    if spec.enabled {
                        slot.state = ConnectionState::Gated;
                        report.gated.push(spec.name.clone());
                    } else {
                        slot.state = ConnectionState::Disabled;
                        report.disabled.push(spec.name.clone());
                    }
                } else if slot.session.is_some() && slot.state == ConnectionState::Connected {
                    report.already_connected.push(spec.name.clone());
                } else if slot.reconnecting {
                    // Its lost session is retried by the reconnect policy.
                    report.reconnecting.push(spec.name.clone());
                } else {
                    slot.state = ConnectionState::Connecting;
                    to_connect.push((spec.clone(), slot.redactor.clone()));
                }
                st.servers.push(slot);
            }
            for gone in old {
                to_close.extend(gone.session);
            }
            st.dirty = true;
        }
        self.inner.changed.notify_one();
        for s in to_close {
            s.close().await;
        }

        let mut set = tokio::task::JoinSet::new();
        for (spec, redactor) in to_connect {
            let inner = self.inner.clone();
            set.spawn(async move {
                let r = connect_first(&inner, &spec, &redactor).await;
                (spec, redactor, r)
            });
        }
        while let Some(joined) = set.join_next().await {
            let Ok((spec, redactor, r)) = joined else {
                continue;
            };
            match r {
                Ok(c) => {
                    if install(&self.inner, &spec.name, c) {
                        report.connected.push(spec.name.clone());
                    }
                }
                Err(e) => {
                    let msg = redactor.redact(&format!(
                        "failed to connect to MCP server '{}': {e}",
                        spec.name
                    ));
                    tracing::warn!(server = %spec.name, "{msg}");
                    let mut st = self.inner.lock();
                    if let Some(slot) = st.slot_mut(&spec.name)
                        && slot.spec == spec
                    {
                        slot.state = ConnectionState::Failed;
                        slot.last_error = Some(msg.clone());
                    }
                    report.failed.push((spec.name.clone(), msg));
                }
            }
        }
        // Keep the report in configured order.
        let order: HashMap<&str, usize> = specs
            .iter()
            .enumerate()
            .map(|(i, s)| (s.name.as_str(), i))
            .collect();
        report
            .connected
            .sort_by_key(|n| order.get(n.as_str()).copied());
        report
            .failed
            .sort_by_key(|(n, _)| order.get(n.as_str()).copied());
        let st = self.inner.read();
        report.tool_count = st.tools.len();
        tracing::info!(
            "MCP: {} tool(s) from {} server(s) ({} failed, {} gated, {} disabled)",
            report.tool_count,
            st.servers
                .iter()
                .filter(|s| s.state == ConnectionState::Connected)
                .count(),
            report.failed.len(),
            report.gated.len(),
            report.disabled.len()
        );
        report
    }

    /// Waits until the registered tools may have changed since the last
    /// wait returned (a server connected, was lost, or re-listed its tools
    /// after `notifications/tools/list_changed`). Changes that happen while
    /// nobody waits are kept as one: the next wait returns at once. Meant
    /// for one listener (the gateway), which then compares what it offers.
    pub async fn tools_changed(&self) {
        self.inner.changed.notified().await;
    }

    /// The offered tools, in configured server order then the server's order.
    pub fn tools(&self) -> Vec<ToolInfo> {
        self.inner.read().tools.clone()
    }

    /// One offered tool by registered name.
    pub fn tool(&self, name: &str) -> Option<ToolInfo> {
        let st = self.inner.read();
        st.index.get(name).map(|&i| st.tools[i].clone())
    }

    /// Status of every configured server, in configured order (§6). Reads
    /// state only; never connects.
    pub fn status(&self) -> Vec<ServerStatus> {
        let metrics: HashMap<String, sampling::SamplingMetrics> = self
            .inner
            .sampling
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(k, v)| {
                let m = v.lock().unwrap_or_else(|p| p.into_inner()).metrics.clone();
                (k.clone(), m)
            })
            .collect();
        let st = self.inner.read();
        st.servers
            .iter()
            .map(|slot| {
                let tools: Vec<String> = st
                    .tools
                    .iter()
                    .filter(|t| t.server == slot.spec.name)
                    .map(|t| t.name.clone())
                    .collect();
                ServerStatus {
                    name: slot.spec.name.clone(),
                    plugin: slot.spec.plugin.clone(),
                    transport: transport_name(&slot.spec.transport),
                    state: slot.state,
                    tool_count: tools.len(),
                    tools,
                    last_error: slot.last_error.clone(),
                    collisions: st
                        .collisions
                        .iter()
                        .filter(|c| c.server == slot.spec.name)
                        .cloned()
                        .collect(),
                    server_info: slot.server_info.clone(),
                    pid: slot.session.as_ref().and_then(|s| s.pid()),
                    sampling: metrics
                        .get(&slot.spec.name)
                        .filter(|m| m.requests > 0)
                        .cloned(),
                }
            })
            .collect()
    }

    /// All naming collisions of the current registration.
    pub fn collisions(&self) -> Vec<Collision> {
        self.inner.read().collisions.clone()
    }

    /// Calls an offered tool by its registered name (§3). `args` is a JSON
    /// object (or `null` for none) passed through as is. Bounded by the
    /// server's `timeout`; on timeout the request is cancelled on the server
    /// (`notifications/cancelled`) and the session stays usable. A tool that
    /// reports `isError` comes back as `Ok` with `is_error: true` and its
    /// text redacted; a successful result only has the server's literal
    /// configured secrets redacted. Results over `max_result_bytes` are cut.
    pub async fn call(&self, name: &str, args: serde_json::Value) -> Result<CallResult, CallError> {
        let (session, server, tool, timeout, redactor, max_bytes) = {
            let st = self.inner.read();
            let Some(&i) = st.index.get(name) else {
                return Err(CallError::UnknownTool {
                    name: name.to_string(),
                });
            };
            let info = &st.tools[i];
            let Some(slot) = st.servers.iter().find(|s| s.spec.name == info.server) else {
                return Err(CallError::UnknownTool {
                    name: name.to_string(),
                });
            };
            let Some(session) = slot.session.clone() else {
                return Err(CallError::NotConnected {
                    server: info.server.clone(),
                    state: slot.state,
                });
            };
            (
                session,
                info.server.clone(),
                info.original_name.clone(),
                slot.spec.timeout,
                slot.redactor.clone(),
                slot.spec.max_result_bytes,
            )
        };
        let arguments = match args {
            serde_json::Value::Null => None,
            serde_json::Value::Object(m) => Some(m),
            _ => {
                return Err(CallError::BadArguments {
                    name: name.to_string(),
                });
            }
        };
        let mut params = CallToolRequestParams::new(tool.clone());
        if let Some(a) = arguments {
            params = params.with_arguments(a);
        }
        // Dropping the request future on timeout sends notifications/cancelled.
        let result =
            match tokio::time::timeout(timeout, call_tool_tolerant(&session.peer, params)).await {
                Err(_) => {
                    return Err(CallError::Timeout {
                        server,
                        tool,
                        seconds: timeout.as_secs_f64(),
                    });
                }
                Ok(Err(e)) => {
                    // The session ended under the call: say how the process ended.
                    let exited = match &session.child {
                        Some(c) if !matches!(e, rmcp::ServiceError::McpError(_)) => {
                            transport::exit_status(c).await
                        }
                        _ => None,
                    };
                    let message = match exited {
                        Some(status) => {
                            format!("the server process exited ({status}) before it answered")
                        }
                        None => e.to_string(),
                    };
                    return Err(CallError::Failed {
                        message: redactor.redact(&message),
                        server,
                        tool,
                    });
                }
                Ok(Ok(r)) => r,
            };
        let RawCallResult {
            mut content,
            structured_content: mut structured,
            is_error,
        } = result;
        // Over stdio the transport already kept only MAX_CONTENT_BLOCKS
        // (and noted it); over HTTP (and a lenient parse) the cut is made here.
        let blocks = content.len();
        if blocks > MAX_CONTENT_BLOCKS + 1 {
            content.truncate(MAX_CONTENT_BLOCKS);
            content.push(serde_json::json!({
                "type": "text",
                "text": line_transport::blocks_cut_note(blocks),
            }));
        }
        // An error text gets the strict rule; a successful result only
        // loses the server's secrets (docs/security.md, "Redaction").
        let redact_fn: &dyn Fn(&str) -> String = if is_error {
            &|s| redactor.redact(s)
        } else {
            &|s| redactor.redact_secrets(s)
        };
        content.iter_mut().for_each(|b| map_strings(b, redact_fn));
        if let Some(s) = structured.as_mut() {
            map_strings(s, redact_fn);
        }
        let truncated_bytes = bound_result(&mut content, &mut structured, max_bytes);
        Ok(CallResult {
            server,
            tool,
            content,
            structured_content: structured,
            is_error,
            truncated_bytes,
        })
    }

    /// Ends every session and child process (stdin closed, then the process
    /// group killed after a short grace) and forgets every server.
    pub async fn shutdown(&self) {
        let sessions: Vec<Arc<Session>> = {
            let mut st = self.inner.lock();
            let sessions = st
                .servers
                .iter_mut()
                .filter_map(|s| s.session.take())
                .collect();
            st.servers.clear();
            st.dirty = true;
            sessions
        };
        let mut set = tokio::task::JoinSet::new();
        for s in sessions {
            set.spawn(async move { s.close().await });
        }
        while set.join_next().await.is_some() {}
    }
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

    #[test]
    fn results_are_bounded_with_a_note() {
        let mut content = vec![
            serde_json::json!({"type": "text", "text": "a".repeat(100)}),
            serde_json::json!({"type": "text", "text": "b".repeat(10_000)}),
            serde_json::json!({"type": "image", "data": "AAAA", "mimeType": "image/png"}),
        ];
        let mut structured = Some(serde_json::json!({"big": "c".repeat(5000)}));
        let left = bound_result(&mut content, &mut structured, 1000);
        assert!(left > 14_000, "{left}");
        assert!(structured.is_none());
        assert_eq!(content.len(), 3);
        let note = content[2]["text"].as_str().unwrap();
        assert!(note.contains("left out"), "{note}");
        let total: usize = content[..2].iter().map(json_len).sum();
        assert!(total <= 1000);

        let mut small = vec![serde_json::json!({"type": "text", "text": "ok"})];
        let mut none = None;
        assert_eq!(bound_result(&mut small, &mut none, 1000), 0);
        assert_eq!(small.len(), 1);
    }
}
