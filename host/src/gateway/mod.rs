//! The gateway (`docs/mcp-client.md` §7): `wasmgate serve`, one MCP server
//! that carries every plugin's gated tools, so any agent gets the whole
//! plugin host by adding one MCP server to its config.
//!
//! - Tools: exactly [`Host::offered_tools`] — tools of connected servers
//!   whose declaration is offerable now — under their registered names
//!   (`mcp_{server}_{tool}`), with the description and input schema the
//!   client got from the server. `tools/call` goes to [`Host::call`], so the
//!   server's own `timeout` bounds it. A name that is not offered now (never
//!   existed, or its application is gone) is a JSON-RPC `invalid_params`
//!   error naming the tool; a call that reached the server and failed, timed
//!   out or lost its session is a tool error (`isError: true`) whose text
//!   the agent sees.
//! - Skills: each visible skill (the `requires_apps` gate, `docs/declarations.md`
//!   §8) is offered twice, as a **prompt** `skill_<name>` and as a
//!   **resource** `skill://<plugin>/<name>` (`text/markdown`). Why both:
//!   clients differ in what they surface — chat clients (Claude Desktop,
//!   VS Code, Zed) show prompts as user-invoked slash commands, while coding
//!   agents (Claude Code, Cursor, Continue) attach resources as context the
//!   model reads; a skill is useful in both roles, and both lists are cheap.
//!   Hidden skills are in neither list.
//! - Sampling: a plugin server's `sampling/createMessage` passes that
//!   server's sampling policy in wasmgate's client and is forwarded to the
//!   gateway's own client whose call the server is serving — recorded with
//!   its session and request id; a request that cannot be tied to one call
//!   is refused (`gateway/sampling.rs`). A client without the sampling capability is
//!   never asked; the server gets an error that says so.
//! - During a call: the server's `elicitation/create` and log lines take
//!   sampling's route to the calling session (elicitation only to a client
//!   that declared it), its progress goes back with the caller's own token
//!   to that call alone, and resource updates go to the sessions that
//!   subscribed (`gateway/sampling.rs`, `docs/mcp-client.md` §7).
//! - Live changes: [`Gateway::refresh`] loads the plugin folders and config
//!   again and re-evaluates availability. When nothing that the load decides
//!   changed (plugins, server entries, availability, skills), the live host is
//!   kept and only discovery runs again (failed servers are retried). When
//!   something changed, a fresh [`Host`] ([`Host::load_next`]) sharing the
//!   live host's MCP client is discovered and swapped in: every server whose
//!   spec and availability did not change keeps its session (the same
//!   process), new and changed servers are connected, removed or gated ones
//!   are closed. After every
//!   refresh, and on every watch tick, the offered tools and visible skills
//!   are compared with what clients last saw; a difference sends
//!   `notifications/tools/list_changed` (and the prompts/resources
//!   list_changed for skills) to every connected client.
//!   [`Gateway::watch`] runs the ticks: plugin folders polled for changed
//!   files (mtime and size), and a full refresh on a schedule. Changes of
//!   the MCP client's tools (a server connected or lost, its own
//!   `tools/list_changed`) are published as they happen, not on a tick.
//! - Start: with [`GatewayOptions::discover_in_background`] (what `wasmgate
//!   serve` uses) the servers connect after [`Gateway::start`] returns, so a
//!   client's `initialize` is answered at once and late servers are
//!   announced with `tools/list_changed`.
//!
//! Transports: [`serve_stdio`] and [`http::serve_http`] (loopback only,
//! optional bearer token).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use wasmgate::gateway::{Gateway, GatewayOptions};
//! let mut options = GatewayOptions::new();
//! options.host.plugin_dirs = vec!["target/plugins".into()];
//! let gateway = Gateway::start(options).await?;
//! let mut changes = gateway.subscribe();
//! tokio::spawn(gateway.clone().watch());
//! wasmgate::gateway::serve_stdio(gateway.clone()).await?;
//! gateway.shutdown().await;
//! # Ok(()) }
//! ```

mod handler;
pub mod http;
// The gateway's own parts, private like the crate's (lib.rs, `internal_mod!`).
internal_mod!(not_offered, passthrough, sampling);

pub use handler::GatewayHandler;
pub use passthrough::{PrefixCollision, PrefixMode};

use crate::error::HostError;
use crate::host::{Host, HostOptions};
use crate::mcp::{CallError, CallResult, ToolInfo};
use rmcp::RoleServer;
use rmcp::service::Peer;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::broadcast;

/// Default period of the full refresh (`--refresh-seconds`), seconds.
pub const DEFAULT_REFRESH: Duration = Duration::from_secs(30);
/// Default period of the cheap watch tick: plugin folders polled, offered
/// set compared with what clients saw.
pub const DEFAULT_WATCH_TICK: Duration = Duration::from_secs(1);

/// What [`Gateway::start`] loads and how often it re-evaluates.
#[derive(Clone)]
pub struct GatewayOptions {
    /// Plugin folders, config, platform, sandbox, client options.
    pub host: HostOptions,
    /// Period of the full refresh; `None` = only on demand (and on a plugin
    /// folder change).
    pub refresh_every: Option<Duration>,
    /// Period of the watch tick (plugin folders polled, offered set
    /// compared). Default [`DEFAULT_WATCH_TICK`].
    pub watch_tick: Duration,
    /// `true`: [`Gateway::start`] returns once the plugins are loaded and
    /// connects the servers in the background, so a client's `initialize`
    /// is answered at once with the servers connected so far; each server
    /// that connects later is announced with `tools/list_changed`. `false`
    /// (the default for embedding): `start` returns after discovery.
    pub discover_in_background: bool,
    /// How upstream tools and prompts are named (`serve --prefix`,
    /// [`PrefixMode`]). Default [`PrefixMode::Always`].
    pub prefix: PrefixMode,
    /// Also offer the tool `not_offered::NOT_OFFERED_TOOL`, which returns
    /// the text of the resource `wasmgate://not-offered`, for agents that
    /// read no resources (`serve --not-offered-tool`, docs/mcp-client.md
    /// §7). Default `false`.
    pub not_offered_tool: bool,
}

impl GatewayOptions {
    /// This machine, no plugins, refresh every [`DEFAULT_REFRESH`].
    pub fn new() -> GatewayOptions {
        GatewayOptions {
            host: HostOptions::new(),
            refresh_every: Some(DEFAULT_REFRESH),
            watch_tick: DEFAULT_WATCH_TICK,
            discover_in_background: false,
            prefix: PrefixMode::Always,
            not_offered_tool: false,
        }
    }
}

impl Default for GatewayOptions {
    fn default() -> Self {
        GatewayOptions::new()
    }
}

/// A change of what the gateway offers, as sent to [`Gateway::subscribe`]rs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Change {
    /// The offered tools changed (names, descriptions or schemas).
    pub tools: bool,
    /// The visible skills changed.
    pub skills: bool,
    /// Availability or the loaded plugins changed (a new host was swapped in).
    pub availability: bool,
}

/// What one [`Gateway::refresh`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefreshOutcome {
    /// A fresh host replaced the live one (something the load decides changed).
    pub swapped: bool,
    /// Clients were told the tools changed.
    pub tools_changed: bool,
    /// Clients were told the skills changed.
    pub skills_changed: bool,
}

/// The gateway: a live [`Host`] behind a lock, the connected clients, and
/// what they last saw. Cheap to clone (one `Arc`).
#[derive(Clone)]
pub struct Gateway {
    inner: Arc<Inner>,
}

struct Inner {
    options: GatewayOptions,
    host: RwLock<Arc<Host>>,
    /// Fingerprint of the live host's load decisions.
    load_print: Mutex<u64>,
    /// Fingerprint of the plugin folders' files (names, sizes, mtimes).
    dir_print: Mutex<u64>,
    /// Serializes refreshes (and the first discovery).
    refresh_lock: Arc<tokio::sync::Mutex<()>>,
    /// Held by a refresh that swaps hosts, from its discovery to its own
    /// publish, and by every other publish: while a fresh host connects,
    /// the live one's view of the shared client is half-way (a restarted
    /// server looks lost), and the refresh announces the result itself.
    publishing: tokio::sync::Mutex<()>,
    /// `true` while the first discovery runs in the background.
    discovering: tokio::sync::watch::Sender<bool>,
    /// When [`Gateway::start`] returned (the grace of the first tools/list).
    started: Instant,
    /// The task that publishes tool changes of the MCP client as they
    /// happen (a server connected, lost, or its `tools/list_changed`).
    forwarder: Mutex<Option<tokio::task::AbortHandle>>,
    /// Connected MCP clients (closed ones are pruned on each notify) and
    /// calls in flight, for list_changed and for forwarding sampling.
    route: Arc<sampling::Route>,
    /// What clients last saw.
    seen: Mutex<Seen>,
    changes: broadcast::Sender<Change>,
}

#[derive(Default, PartialEq, Eq, Clone)]
struct Seen {
    tools: u64,
    skills: u64,
}

impl Gateway {
    /// Loads the plugin folders and config and connects every offerable
    /// server. Errors: only when the component engine cannot start
    /// ([`Host::load`]); one bad plugin is a problem line, not an error.
    ///
    /// Sampling: unless `options.host.client.sampling_provider` is set (an
    /// embedding agent's own LLM), plugin servers' `sampling/createMessage`
    /// requests go to the gateway's connected client (`sampling`).
    pub async fn start(mut options: GatewayOptions) -> Result<Gateway, HostError> {
        let route = Arc::new(sampling::Route::default());
        let forward = Arc::new(sampling::ForwardToClient::new(route.clone()));
        if options.host.client.sampling_provider.is_none() {
            options.host.client.sampling_provider = Some(forward.clone());
        }
        // Progress, log lines, resource updates and elicitation of the
        // servers go to the client whose call or subscription they belong to.
        if options.host.client.upstream.is_none() {
            options.host.client.upstream = Some(forward);
        }
        let host = load(options.host.clone()).await?;
        let background = options.discover_in_background;
        if !background {
            host.discover().await;
        }
        let load_print = load_fingerprint(&host);
        let dir_print = watch_fingerprint(&options.host);
        let (changes, _) = broadcast::channel(64);
        let gateway = Gateway {
            inner: Arc::new(Inner {
                options,
                host: RwLock::new(Arc::new(host)),
                load_print: Mutex::new(load_print),
                dir_print: Mutex::new(dir_print),
                refresh_lock: Arc::new(tokio::sync::Mutex::new(())),
                publishing: tokio::sync::Mutex::new(()),
                forwarder: Mutex::new(None),
                discovering: tokio::sync::watch::Sender::new(background),
                started: Instant::now(),
                route,
                seen: Mutex::new(Seen::default()),
                changes,
            }),
        };
        let seen = gateway.current_seen();
        *lock(&gateway.inner.seen) = seen;
        gateway.spawn_forwarder();
        if background {
            // Taken before `start` returns, so no refresh connects the same
            // servers a second time meanwhile.
            let one_at_a_time = gateway.inner.refresh_lock.clone().lock_owned().await;
            let gw = gateway.clone();
            tokio::spawn(async move {
                let _one_at_a_time = one_at_a_time;
                gw.host().discover().await;
                let _outside_a_swap = gw.inner.publishing.lock().await;
                gw.publish(false).await;
                gw.inner.discovering.send_replace(false);
            });
        }
        Ok(gateway)
    }

    /// Publishes each change of the MCP client's tools as it happens
    /// (docs/security.md, "Gateway bounds": within 100 ms of the upstream
    /// `tools/list_changed`, not on the next watch tick). Changes that
    /// arrive while a publish runs merge into one more (the client's signal
    /// keeps one permit). Holds the gateway only weakly.
    fn spawn_forwarder(&self) {
        let weak = Arc::downgrade(&self.inner);
        let task = tokio::spawn(async move {
            loop {
                let Some(inner) = weak.upgrade() else { return };
                let changed = Gateway { inner }.host().tools_changed();
                changed.await;
                let Some(inner) = weak.upgrade() else { return };
                let gw = Gateway { inner };
                let _outside_a_swap = gw.inner.publishing.lock().await;
                gw.publish(false).await;
            }
        });
        *lock(&self.inner.forwarder) = Some(task.abort_handle());
    }

    /// The live host (a snapshot: a refresh may swap in another one).
    pub fn host(&self) -> Arc<Host> {
        self.inner
            .host
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The tools offered now ([`Host::offered_tools`] of the live host).
    pub fn offered_tools(&self) -> Vec<ToolInfo> {
        self.host().offered_tools()
    }

    /// Calls an offered tool by its registered name on the live host.
    /// Errors: as [`Host::call`] — [`CallError::UnknownTool`] for a name no
    /// connected server has, [`CallError::NotConnected`] with state `gated`
    /// when its application is not offerable now.
    pub async fn call(&self, name: &str, args: serde_json::Value) -> Result<CallResult, CallError> {
        // The Arc keeps this host alive for the call even if a refresh swaps
        // in another one meanwhile.
        let host = self.host();
        host.call(name, args).await
    }

    /// [`Gateway::call`] for a client session: while it runs, a sampling
    /// or elicitation request and the log lines of the tool's server go to
    /// `caller` ([`sampling`]), and its progress for this call to
    /// `progress`. A server whose sampling is active serves one session at
    /// a time: the wait for another session's calls to end counts against
    /// the server's `timeout`.
    pub(crate) async fn call_from(
        &self,
        caller: sampling::Caller,
        name: &str,
        args: serde_json::Value,
        progress: Option<crate::mcp::upstream::ProgressSink>,
    ) -> Result<CallResult, CallError> {
        let mut host = self.host();
        if host.tool(name).is_none() {
            self.await_first_discovery(name).await;
            host = self.host();
        }
        let Some(tool) = host.tool(name) else {
            return host.call(name, args).await;
        };
        let server = tool.server;
        let route = &self.inner.route;
        let spec = host.server(&server).map(|s| s.spec.clone());
        let _lane = match spec.filter(|s| s.sampling.active()) {
            Some(spec) => {
                match tokio::time::timeout(spec.timeout, route.lane(&server, caller.session)).await
                {
                    Ok(lane) => Some(lane),
                    Err(_) => {
                        return Err(CallError::Failed {
                            message: format!(
                                "waited the server's whole timeout ({} s) for another gateway \
                                 client's calls to '{server}' to end: a server that may ask for \
                                 sampling serves one client session at a time \
                                 (docs/security.md, \"Sampling through the gateway\")",
                                spec.timeout.as_secs_f64()
                            ),
                            server: server.clone(),
                            tool: tool.original_name,
                        });
                    }
                }
            }
            None => None,
        };
        let _in_flight = route.enter(&server, caller);
        host.call_with(name, args, progress).await
    }

    /// While the first discovery runs in the background, waits until it
    /// ends or [`FIRST_LIST_GRACE`] after the start has passed, whichever
    /// comes first: a client that lists tools right after `initialize` (a
    /// one-shot CLI) sees the servers that start quickly; slower ones follow
    /// with `tools/list_changed`.
    pub(crate) async fn settle_first_discovery(&self) {
        let mut discovering = self.inner.discovering.subscribe();
        let deadline = tokio::time::Instant::from_std(self.inner.started + FIRST_LIST_GRACE);
        let _ = tokio::time::timeout_at(deadline, discovering.wait_for(|busy| !*busy)).await;
    }

    /// While the first discovery runs in the background, waits until `name`
    /// is registered or no server that may own it is still connecting (each
    /// is bounded by its `connect_timeout`): a client that calls a tool it
    /// knows right after `initialize` is not told it does not exist because
    /// its server is still starting.
    async fn await_first_discovery(&self, name: &str) {
        let mut discovering = self.inner.discovering.subscribe();
        loop {
            if !*discovering.borrow_and_update() {
                return;
            }
            let host = self.host();
            if host.tool(name).is_some() || !host.connecting_may_own(name) {
                return;
            }
            drop(host);
            // Re-checked when the discovery ends and four times a second
            // (a server that connects or fails).
            tokio::select! {
                r = discovering.changed() => if r.is_err() { return },
                () = tokio::time::sleep(Duration::from_millis(250)) => {}
            }
        }
    }

    /// Receives a [`Change`] each time the offered tools, the visible
    /// skills or availability change.
    pub fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.inner.changes.subscribe()
    }

    /// The rmcp server handler for one client session.
    pub fn handler(&self) -> GatewayHandler {
        GatewayHandler::new(self.clone())
    }

    /// Re-evaluates on demand (an application installed or removed, a plugin
    /// added, changed or removed): loads the plugin folders and config again,
    /// swaps in a fresh host when anything the load decides changed (else
    /// retries failed servers on the live one), then tells clients what
    /// changed. Errors: the component engine could not start; the live host
    /// is kept.
    pub async fn refresh(&self) -> Result<RefreshOutcome, HostError> {
        let _one_at_a_time = self.inner.refresh_lock.lock().await;
        *lock(&self.inner.dir_print) = watch_fingerprint(&self.inner.options.host);
        let live = self.host();
        let fresh = load_next(self.inner.options.host.clone(), live.clone()).await?;
        let print = load_fingerprint(&fresh);
        let swapped = print != *lock(&self.inner.load_print);
        let _announce_at_the_end = match swapped {
            true => Some(self.inner.publishing.lock().await),
            false => None,
        };
        if swapped {
            // A reload says what went wrong with what it read, as the start
            // does: a plugin that broke disappears with its reason logged.
            for p in fresh
                .problems()
                .iter()
                .filter(|p| !live.problems().contains(p))
            {
                tracing::warn!("{p}");
            }
            for w in fresh
                .warnings()
                .iter()
                .filter(|w| !live.warnings().contains(w))
            {
                tracing::warn!("{w}");
            }
            // The fresh host shares the live host's MCP client: unchanged
            // servers keep their sessions; new and changed ones connect,
            // removed and gated ones are closed.
            fresh.discover().await;
            let fresh = Arc::new(fresh);
            *self.inner.host.write().unwrap_or_else(|e| e.into_inner()) = fresh;
            *lock(&self.inner.load_print) = print;
            tracing::info!("gateway: plugins or availability changed; new host swapped in");
            // `live` is only dropped, never shut down: its client is the
            // fresh host's. A call that holds it finishes on the shared
            // sessions.
        } else {
            // Nothing to reload: retry failed servers on the live host.
            drop(fresh);
            live.discover().await;
        }
        drop(live);
        let (tools_changed, skills_changed) = self.publish(swapped).await;
        Ok(RefreshOutcome {
            swapped,
            tools_changed,
            skills_changed,
        })
    }

    /// Runs forever: every `watch_tick` compares the offered set with what
    /// clients saw (a server lost or its tools changed) and polls the plugin
    /// folders; a changed folder, or `refresh_every` elapsed, runs
    /// [`Gateway::refresh`]. Spawn it; abort the task to stop it.
    pub async fn watch(self) {
        let tick = self.inner.options.watch_tick.max(Duration::from_millis(50));
        let mut last_refresh = Instant::now();
        loop {
            tokio::time::sleep(tick).await;
            let dirs = watch_fingerprint(&self.inner.options.host);
            let dirs_changed = dirs != *lock(&self.inner.dir_print);
            let due = self
                .inner
                .options
                .refresh_every
                .is_some_and(|every| last_refresh.elapsed() >= every);
            if dirs_changed || due {
                if dirs_changed {
                    tracing::info!(
                        "gateway: a plugin folder or the plugin lock changed; reloading"
                    );
                }
                if let Err(e) = self.refresh().await {
                    tracing::warn!("gateway: refresh failed: {e:#}");
                }
                last_refresh = Instant::now();
            } else {
                let _outside_a_swap = self.inner.publishing.lock().await;
                self.publish(false).await;
            }
        }
    }

    /// Ends every server session and child process (the live host's MCP
    /// client, which every earlier host shared).
    pub async fn shutdown(&self) {
        if let Some(task) = lock(&self.inner.forwarder).take() {
            task.abort();
        }
        self.host().shutdown().await;
    }

    /// Remembers a client session so it gets list_changed notifications.
    pub(crate) fn add_peer(&self, peer: Peer<RoleServer>) {
        self.inner.route.live_peers().push(peer);
    }

    /// Number of connected client sessions (closed ones are not counted).
    pub fn client_count(&self) -> usize {
        self.inner.route.live_peers().len()
    }

    fn current_seen(&self) -> Seen {
        let host = self.host();
        Seen {
            tools: tools_fingerprint(&host.offered_tools()),
            skills: skills_fingerprint(&host),
        }
    }

    /// Compares the offered set with what clients saw; notifies on a
    /// difference. Returns (tools changed, skills changed).
    async fn publish(&self, availability: bool) -> (bool, bool) {
        let now = self.current_seen();
        let before = std::mem::replace(&mut *lock(&self.inner.seen), now.clone());
        let tools = before.tools != now.tools;
        let skills = before.skills != now.skills;
        if tools || skills || availability {
            let _ = self.inner.changes.send(Change {
                tools,
                skills,
                availability,
            });
        }
        if !(tools || skills) {
            return (false, false);
        }
        let peers: Vec<Peer<RoleServer>> = self.inner.route.live_peers().clone();
        tracing::info!(
            clients = peers.len(),
            tools,
            skills,
            "gateway: offered set changed; notifying clients"
        );
        for peer in peers {
            // Skills first, tools last: a client that reacts to the tools
            // notification (and perhaps ends the session) has seen the rest.
            // Bounded: a client that reads nothing must not hold up the others.
            use tokio::time::timeout;
            if skills {
                let _ = timeout(NOTIFY_TIMEOUT, peer.notify_prompt_list_changed()).await;
                let _ = timeout(NOTIFY_TIMEOUT, peer.notify_resource_list_changed()).await;
            }
            if tools {
                match timeout(NOTIFY_TIMEOUT, peer.notify_tool_list_changed()).await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => tracing::debug!("gateway: tools/list_changed not delivered: {e}"),
                    Err(_) => tracing::debug!("gateway: tools/list_changed not taken in time"),
                }
            }
        }
        (tools, skills)
    }
}

/// Longest a `tools/list` waits for the first discovery, counted from the
/// gateway's start (docs/security.md, "Gateway bounds").
pub const FIRST_LIST_GRACE: Duration = Duration::from_secs(3);

/// How long one client may take to accept a list_changed notification
/// before the gateway moves on to the next client.
const NOTIFY_TIMEOUT: Duration = Duration::from_secs(1);

/// Largest message a client may send over stdio, in bytes (rmcp's default).
pub const STDIO_MAX_MESSAGE: usize = 16 * 1024 * 1024;

/// Why serving MCP to an agent ended with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The agent's `initialize` handshake over stdio failed (it closed
    /// stdin first, or sent no valid `initialize` request).
    #[error("MCP handshake on stdio failed")]
    Handshake(#[source] Box<dyn std::error::Error + Send + Sync + 'static>),
    /// The task that served the session panicked or was cancelled (the
    /// runtime is shutting down).
    #[error("the MCP session on stdio stopped")]
    Stopped(#[source] tokio::task::JoinError),
}

/// Serves the gateway over stdio until the client closes stdin. The caller
/// shuts the gateway down afterwards. Errors: [`ServeError`].
pub async fn serve_stdio(gateway: Gateway) -> Result<(), ServeError> {
    use rmcp::ServiceExt;
    // Non-blocking pipes when the client launched us with pipes (the usual
    // case): no blocking-pool hand-off per message; requests parsed
    // directly (docs/performance.md).
    let (read, write) = rmcp::transport::stdio_pipes();
    let transport = crate::mcp::line_transport::LineTransport::<RoleServer, _, _>::new(
        read,
        write,
        STDIO_MAX_MESSAGE,
    );
    let running = gateway
        .handler()
        .serve(transport)
        .await
        .map_err(|e| ServeError::Handshake(e.into()))?;
    running.waiting().await.map_err(ServeError::Stopped)?;
    Ok(())
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// [`Host::load`] off the async threads: it reads files and may compile
/// components.
async fn load(options: HostOptions) -> Result<Host, HostError> {
    tokio::task::spawn_blocking(move || Host::load(options))
        .await
        .map_err(HostError::LoadStopped)?
}

/// [`Host::load_next`] off the async threads.
async fn load_next(options: HostOptions, previous: Arc<Host>) -> Result<Host, HostError> {
    tokio::task::spawn_blocking(move || Host::load_next(options, &previous))
        .await
        .map_err(HostError::LoadStopped)?
}

/// Everything a load decides that changes what is offered: plugins, server
/// entries, availability (state, version, path), skills and their gate.
fn load_fingerprint(host: &Host) -> u64 {
    let mut h = DefaultHasher::new();
    for p in host.plugins() {
        (&p.name, &p.version, &p.file, p.kind, &p.servers).hash(&mut h);
        (p.trust.state.as_str(), &p.trust.changes).hash(&mut h);
    }
    // An approval or new tool pins: the fresh host enforces the new lock.
    if let Some(t) = host.trust_store() {
        t.read_sha256.hash(&mut h);
    }
    for s in host.servers() {
        format!("{:?}", s.spec).hash(&mut h);
        format!("{:?}", s.availability).hash(&mut h);
    }
    skills_fingerprint(host).hash(&mut h);
    h.finish()
}

fn skills_fingerprint(host: &Host) -> u64 {
    let mut h = DefaultHasher::new();
    for s in host.visible_skills() {
        (&s.plugin, &s.name, &s.description, &s.markdown).hash(&mut h);
    }
    h.finish()
}

fn tools_fingerprint(tools: &[ToolInfo]) -> u64 {
    let mut h = DefaultHasher::new();
    for t in tools {
        (&t.name, &t.title, &t.description, t.read_only).hash(&mut h);
        t.input_schema.to_string().hash(&mut h);
    }
    h.finish()
}

/// [`dir_fingerprint`] of the plugin folders and the lock file's size and
/// mtime: `plugin approve` in another process reloads the gateway.
fn watch_fingerprint(host: &HostOptions) -> u64 {
    let mut h = DefaultHasher::new();
    dir_fingerprint(&host.plugin_dirs).hash(&mut h);
    if let Some(lock) = host.trust.lock_path()
        && let Ok(meta) = std::fs::metadata(lock)
    {
        meta.len().hash(&mut h);
        meta.modified()
            .ok()
            .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
            .hash(&mut h);
    }
    h.finish()
}

/// Names, sizes and mtimes of the files in the plugin folders, four levels
/// deep (components one level down, `plugin.yaml` skills a few levels more).
fn dir_fingerprint(dirs: &[PathBuf]) -> u64 {
    let mut h = DefaultHasher::new();
    for dir in dirs {
        dir.hash(&mut h);
        hash_dir(dir, 4, &mut h);
    }
    h.finish()
}

fn hash_dir(dir: &Path, depth: u32, h: &mut DefaultHasher) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for path in entries {
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        path.hash(h);
        if meta.is_dir() {
            if depth > 1 {
                hash_dir(&path, depth - 1, h);
            }
        } else {
            meta.len().hash(h);
            meta.modified()
                .ok()
                .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
                .hash(h);
        }
    }
}
