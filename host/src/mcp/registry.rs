//! The session registry: one slot per configured server (its state,
//! session, tools and generation), behind the client's shared `Inner`.

use super::transport::{ChildGuard, SHUTDOWN_GRACE};
use super::types::{ClientOptions, ConnectionState, ToolInfo};
use super::{filter, sampling};
use crate::naming::{self, Collision};
use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::Tool;
use rmcp::service::{Peer, RunningServiceCancellationToken};

use crate::manifest::server::ServerSpec;
use crate::secret::Redactor;

/// A live session.
pub(super) struct Session {
    pub(super) generation: u64,
    pub(super) peer: Peer<RoleClient>,
    pub(super) cancel: Mutex<Option<RunningServiceCancellationToken>>,
    pub(super) child: Option<Arc<Mutex<ChildGuard>>>,
    /// The progress tokens of this session's calls in flight.
    pub(super) progress: Arc<super::upstream::ProgressRoutes>,
}

impl Session {
    pub(super) fn pid(&self) -> Option<u32> {
        self.child.as_ref()?.lock().ok()?.id()
    }

    pub(super) fn cancel(&self) {
        if let Some(t) = self.cancel.lock().ok().and_then(|mut c| c.take()) {
            t.cancel();
        }
    }

    /// Closes the session: stdin closes, the child gets [`SHUTDOWN_GRACE`]
    /// to exit, then its process group is killed.
    pub(super) async fn close(&self) {
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
pub(super) struct Slot {
    pub(super) spec: ServerSpec,
    pub(super) redactor: Redactor,
    pub(super) state: ConnectionState,
    pub(super) last_error: Option<String>,
    pub(super) session: Option<Arc<Session>>,
    pub(super) raw_tools: Vec<Tool>,
    pub(super) server_info: Option<String>,
    /// A live session of this slot was lost and [`reconnect_loop`] owns
    /// the retries (tries with backoff, then a probe every
    /// `probe_interval`): a discovery pass leaves the slot to it instead of
    /// starting a ladder of its own (`docs/mcp-client.md` §8, "Connecting and reconnecting").
    pub(super) reconnecting: bool,
}

impl Slot {
    pub(super) fn new(spec: ServerSpec) -> Self {
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
pub(super) struct State {
    pub(super) servers: Vec<Slot>,
    pub(super) tools: Vec<ToolInfo>,
    pub(super) index: HashMap<String, usize>,
    pub(super) collisions: Vec<Collision>,
    /// Config server names whose tool namespaces plugins may not take
    /// ([`McpClient::reserve_namespaces`]); config servers among the slots
    /// are reserved too.
    pub(super) reserved: Vec<String>,
    /// The servers' tools changed since the last [`State::rebuild`]; the
    /// next reader ([`Inner::read`]) rebuilds. A discovery pass of many
    /// servers then re-mints once, not once per connected server.
    pub(super) dirty: bool,
    /// [`ClientOptions::name_budget`].
    pub(super) name_budget: Option<usize>,
}

impl State {
    pub(super) fn slot_mut(&mut self, name: &str) -> Option<&mut Slot> {
        self.servers.iter_mut().find(|s| s.spec.name == name)
    }

    /// Forgets the registered tools of `server`, so the next [`State::rebuild`]
    /// builds them afresh from its `raw_tools` (after they changed).
    pub(super) fn invalidate(&mut self, server: &str) {
        self.tools.retain(|t| t.server != server);
    }

    /// Re-mints every offered tool in configured server order (§2), so the
    /// first configured server keeps a contested name whatever order the
    /// connects finished in. A tool registered before keeps its
    /// [`ToolInfo`] (moved, only renamed if its name changed): rebuilding
    /// after each of many connects stays linear in the tool count instead of
    /// copying every input schema again (the discovery benchmark,
    /// `docs/performance.md`).
    pub(super) fn rebuild(&mut self) {
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
            let (taken, registered) = if c.reserved {
                (
                    "lies in the namespace of config server",
                    "the plugin's tool is registered as",
                )
            } else {
                ("is already taken by server", "registered as")
            };
            tracing::warn!(
                server = %c.server,
                tool = %c.tool,
                "tool name '{}' {taken} '{}'; {registered} {}",
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
    pub(super) state: Mutex<State>,
    pub(super) next_generation: AtomicU64,
    pub(super) options: ClientOptions,
    /// Sampling window and metrics per server, kept across reconnects.
    pub(super) sampling: Mutex<HashMap<String, Arc<Mutex<sampling::SamplingState>>>>,
    /// Signalled whenever the registered tools may have changed (a server
    /// connected, lost or re-listed). One stored permit: any number of
    /// changes before the listener wakes count as one.
    pub(super) changed: tokio::sync::Notify,
}

impl Inner {
    /// The sampling set-up of a server, when a provider is there and its
    /// policy allows sampling.
    pub(super) fn sampling_setup(&self, spec: &ServerSpec) -> Option<sampling::SamplingSetup> {
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

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data; keep going.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The state with its registered tools up to date (for readers of
    /// tools, names, collisions and status).
    pub(super) fn read(&self) -> std::sync::MutexGuard<'_, State> {
        let mut st = self.lock();
        if st.dirty {
            st.dirty = false;
            st.rebuild();
        }
        st
    }
}
