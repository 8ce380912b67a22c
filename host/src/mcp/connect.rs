//! Connecting, listing tools, installing a session, and reconnecting
//! after it ends: free functions over the client's `&Arc<Inner>`
//! (`docs/mcp-client.md` §2, §6).

use super::handler::Handler;
use super::registry::{Inner, Session};
use super::transport::{self, ConnectError};
use super::types::{ConnectionState, ReconnectPolicy};
use super::{CHILD_WATCH, MAX_TOOL_PAGES, MAX_TOOLS_BYTES_PER_SERVER, MAX_TOOLS_PER_SERVER};
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{PaginatedRequestParams, Tool};
use rmcp::service::Peer;

use crate::manifest::server::{ServerSpec, Transport};
use crate::secret::Redactor;

/// What a successful connect brings back.
pub(super) struct Connected {
    pub(super) session: Session,
    pub(super) tools: Vec<Tool>,
    pub(super) server_info: Option<String>,
    pub(super) monitor: rmcp::service::RunningService<RoleClient, Handler>,
    /// The slot's redactor plus the app-endpoint token, when there is one.
    pub(super) redactor: Option<Redactor>,
}

/// Reads every `tools/list` page; a cursor seen before (one that does not
/// advance) ends the listing with a warning.
pub(super) async fn list_tools_paged(
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
pub(super) async fn connect_first(
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
pub(super) async fn connect_one(
    inner: &Arc<Inner>,
    spec: &ServerSpec,
    redactor: &Redactor,
) -> Result<Connected, ConnectError> {
    connect_one_within(inner, spec, redactor, spec.connect_timeout).await
}

/// Asks the client's [`AppEndpointSource`](crate::endpoint::AppEndpointSource)
/// for the app-endpoint's URL and token afresh (`docs/declarations.md` §7.5).
pub(super) fn app_endpoint(
    inner: &Inner,
    spec: &ServerSpec,
) -> Result<crate::endpoint::Endpoint, ConnectError> {
    let source =
        inner
            .options
            .app_endpoints
            .as_ref()
            .ok_or_else(|| ConnectError::AppNotRunning {
                detail: "this client was given no source of server_json endpoints".into(),
            })?;
    source
        .endpoint(spec.declaration.as_ref())
        .map_err(|detail| ConnectError::AppNotRunning { detail })
}

/// [`connect_one`] bounded by `limit` instead of the whole `connect_timeout`.
pub(super) async fn connect_one_within(
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
pub(super) async fn connect_attempt(
    inner: &Arc<Inner>,
    spec: &ServerSpec,
    redactor: &Redactor,
    endpoint: Option<&crate::endpoint::Endpoint>,
    limit: Duration,
) -> Result<Connected, ConnectError> {
    let generation = inner.next_generation.fetch_add(1, Ordering::Relaxed);
    let progress: Arc<super::upstream::ProgressRoutes> = Default::default();
    let handler = Handler {
        server: spec.name.clone(),
        generation,
        client: Arc::downgrade(inner),
        redactor: redactor.clone(),
        sampling: inner.sampling_setup(spec),
        refresh: Default::default(),
        log_limit: Default::default(),
        upstream: inner.options.upstream.clone(),
        elicitations: Arc::new(tokio::sync::Semaphore::new(
            super::upstream::MAX_ELICITATIONS_IN_FLIGHT,
        )),
        tap: Arc::new(super::upstream::Tap {
            server: spec.name.clone(),
            redactor: redactor.clone(),
            upstream: inner.options.upstream.clone(),
            progress: progress.clone(),
        }),
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
                progress,
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
pub(super) fn install(inner: &Arc<Inner>, name: &str, connected: Connected) -> bool {
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
pub(super) async fn session_ended(inner: &Arc<Inner>, name: &str, generation: u64, reason: String) {
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
pub(super) fn policy_reconnects(policy: &ReconnectPolicy) -> bool {
    policy.attempts > 0 || policy.probe_interval.is_some()
}

/// Whether the slot still exists with this spec and is `failed` (so a
/// reconnect may proceed); marks it `connecting` when `start` is set.
pub(super) fn wants_reconnect(inner: &Inner, name: &str, spec: &ServerSpec, start: bool) -> bool {
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
pub(super) async fn reconnect_loop(
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

pub(super) fn transport_name(t: &Transport) -> &'static str {
    match t {
        Transport::Stdio { .. } => "stdio",
        Transport::Http { .. } => "http",
        Transport::AppEndpoint => "app-endpoint",
    }
}
