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

pub mod filter;
mod handler;
mod http_bounds;
pub(crate) mod line_transport;
pub mod oauth;
mod peers;
pub mod sampling;
pub mod transport;
pub mod upstream;

mod call;
mod connect;
mod registry;
mod types;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::CallToolRequestParams;

use crate::manifest::server::ServerSpec;
pub use crate::naming::Collision;
use crate::secret::Redactor;
pub use transport::ConnectError;

use call::{RawCallResult, bound_result, call_tool_tolerant, map_strings};
use connect::{connect_first, install, refresh_tools, transport_name};
pub(crate) use registry::Inner;
use registry::{Session, Slot, State};
pub use types::{
    CallError, CallResult, ClientOptions, ConnectionState, DiscoveryReport, ReconnectPolicy,
    ServerStatus, ToolInfo,
};

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
pub(crate) use call::CancelOnDrop;
// The bounds' constants, for the tests that push past them.
#[cfg(any(test, feature = "internals"))]
pub use handler::LOG_NOTIFICATIONS_PER_SECOND;
pub use line_transport::MAX_CONTENT_BLOCKS;
#[cfg(any(test, feature = "internals"))]
pub use line_transport::MAX_TOOLS_PAGE_BYTES;

/// The troubleshooting line when there is nothing to connect.
pub const NO_SERVERS_CONFIGURED: &str = "no MCP servers configured: add an entry under `mcp_servers` in the config file, or load a plugin that brings one";

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
    /// servers (`naming::mint_all_reserving_within`), whether those servers are
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
        self.call_with(name, args, None).await
    }

    /// What a call of the registered tool `name` goes to, read under one
    /// lock.
    fn call_target(&self, name: &str) -> Result<CallTarget, CallError> {
        let st = self.inner.read();
        let unknown = || CallError::UnknownTool {
            name: name.to_string(),
        };
        let info = &st.tools[*st.index.get(name).ok_or_else(unknown)?];
        let slot = st
            .servers
            .iter()
            .find(|s| s.spec.name == info.server)
            .ok_or_else(unknown)?;
        let Some(session) = slot.session.clone() else {
            return Err(CallError::NotConnected {
                server: info.server.clone(),
                state: slot.state,
            });
        };
        Ok(CallTarget {
            session,
            server: info.server.clone(),
            tool: info.original_name.clone(),
            timeout: slot.spec.timeout,
            redactor: slot.redactor.clone(),
            max_bytes: slot.spec.max_result_bytes,
            oauth_url: match (&slot.spec.oauth, &slot.spec.transport) {
                (Some(_), crate::manifest::server::Transport::Http { url, .. }) => {
                    Some(url.clone())
                }
                _ => None,
            },
        })
    }

    /// [`McpClient::call`], with the server's `notifications/progress` for
    /// this call (and only this call) handed to `progress` while it runs
    /// (`upstream`). `progress` is called as the session's transport is
    /// read: it must queue, never block.
    pub async fn call_with(
        &self,
        name: &str,
        args: serde_json::Value,
        progress: Option<upstream::ProgressSink>,
    ) -> Result<CallResult, CallError> {
        let CallTarget {
            session,
            server,
            tool,
            timeout,
            redactor,
            max_bytes,
            oauth_url,
        } = self.call_target(name)?;
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
        let result = match tokio::time::timeout(
            timeout,
            call_tool_tolerant(
                &session.peer,
                params,
                progress.map(|sink| (&session.progress, sink)),
            ),
        )
        .await
        {
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
                let message = match (exited, &oauth_url) {
                    (Some(status), _) => {
                        format!("the server process exited ({status}) before it answered")
                    }
                    (None, Some(url)) if let Some(challenge) = oauth::insufficient_scope(&e) => {
                        oauth::step_up_needed(&server, url, &challenge)
                    }
                    (None, _) => e.to_string(),
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

/// The session and settings one tool call uses ([`McpClient::call_with`]).
struct CallTarget {
    session: Arc<Session>,
    /// The server's name.
    server: String,
    /// The tool's name on the server.
    tool: String,
    timeout: Duration,
    redactor: Redactor,
    /// The server's `max_result_bytes`.
    max_bytes: usize,
    /// The server's URL when it is an `auth: oauth` HTTP server (for the
    /// scope step-up).
    oauth_url: Option<String>,
}
