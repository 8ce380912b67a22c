//! Sampling through the gateway (`docs/mcp-client.md` §5 and §7): a plugin's
//! MCP server asks wasmgate's client for `sampling/createMessage`; the
//! client applies that server's sampling policy (rate limit, model choice,
//! `allowed_models`, token cap, timeout, tool rounds, audit metrics —
//! `crate::mcp::sampling`) and hands the admitted request to the
//! [`ForwardToClient`] provider, which asks the gateway's own MCP client
//! (the agent) and returns its answer.
//!
//! Which client is asked (docs/security.md, "Sampling through the
//! gateway"): the one whose `tools/call` to that server the request belongs
//! to. Every call in flight is recorded with its originating request — the
//! client session and that session's JSON-RPC request id — and the server
//! it went to (the exact server name of the tool, never a name prefix). The
//! request goes back to the client *from the originating call's handler*, so
//! over HTTP it rides that request's own response stream.
//!
//! A server's request carries no id of the call it serves (MCP defines no
//! such field; over stdio nothing ties the two). So the gateway makes the
//! tie unambiguous instead of guessing:
//! - A server whose sampling is active serves one client session at a time
//!   through the gateway: a call from another session waits (inside that
//!   call's `timeout`) until the calls of the session being served end.
//!   Calls of one session still run side by side.
//! - The request goes to the session whose calls to that server are in
//!   flight. None in flight (a server asking on its own, between calls) or
//!   calls of several sessions (cannot happen while the rule above holds) —
//!   refused with an error saying why; nobody is asked.
//! - A client that did not declare the sampling capability gets no request:
//!   the server receives a clear error instead.
//!
//! Elicitation (`elicitation/create`) takes the same route: the session
//! whose calls to that server are in flight, asked from the call's own
//! handler, only when it declared elicitation (else the server gets an
//! error saying so), bounded in size and time (`crate::mcp::upstream`).
//! Without a sampling lane, calls of several sessions to one server may run
//! side by side; an elicitation then cannot be tied to one of them and is
//! refused. Log lines (`notifications/message`) follow the same rule and go
//! to that session at the level it chose with `logging/setLevel` (none
//! chosen: every line the server sends); a line that cannot be tied to one
//! session stays in wasmgate's log. Progress needs no guess: each forwarded
//! call's upstream progress token belongs to that call alone, and its
//! notifications go back with the caller's own token. Resource updates go to
//! every session that subscribed to that URI of that server.

// rmcp marks sampling deprecated (SEP-2577, protocol 2026-07-28); clients
// on earlier protocol versions still use it, and `docs/mcp-client.md` §5 requires it.
#![allow(deprecated)]

use super::lock;
use crate::mcp::sampling::{SamplingFuture, SamplingProvider, SamplingRequest, SamplingResponse};
use crate::mcp::upstream::{ElicitFuture, UpstreamSink};
use rmcp::RoleServer;
use rmcp::model::{
    CancelledNotificationParam, ClientResult, CreateMessageRequest, CreateMessageRequestParams,
    CustomRequest, LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam,
    RequestId, ServerRequest,
};
use rmcp::service::{Peer, PeerRequestOptions};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{Notify, mpsc, oneshot};

/// What the client of a call is asked on the server's behalf.
pub(crate) enum ClientAsk {
    /// `sampling/createMessage`.
    Sampling(CreateMessageRequestParams),
    /// `elicitation/create`, its params as the server sent them.
    Elicitation(serde_json::Value),
}

/// One message for the client whose call it belongs to; the call's handler
/// sends it from its own task (over HTTP it rides that call's stream).
pub(crate) enum ClientJob {
    /// A request; the answer goes back on `reply`.
    Ask {
        ask: ClientAsk,
        reply: oneshot::Sender<Result<ClientResult, String>>,
    },
    /// `notifications/progress`, already with the caller's token.
    Progress(ProgressNotificationParam),
    /// `notifications/message`, already past the session's level.
    Log(LoggingMessageNotificationParam),
}

impl ClientAsk {
    /// The request to the agent; sampling checked as rmcp's
    /// `create_message` checks it.
    fn request(self, peer: &Peer<RoleServer>) -> Result<ServerRequest, String> {
        Ok(match self {
            // The checks rmcp's `Peer::create_message` makes before it
            // sends; that call awaits the answer without the request id the
            // gateway needs to withdraw the request, so it sends itself.
            ClientAsk::Sampling(params) => {
                if (params.tools.is_some() || params.tool_choice.is_some())
                    && !peer.supports_sampling_tools()
                {
                    return Err(
                        "tools or toolChoice provided but the client does not declare \
                                sampling tools"
                            .into(),
                    );
                }
                params.validate()?;
                ServerRequest::CreateMessageRequest(CreateMessageRequest::new(params))
            }
            ClientAsk::Elicitation(params) => ServerRequest::CustomRequest(CustomRequest::new(
                Need::Elicitation.method(),
                Some(params),
            )),
        })
    }
}

impl ClientJob {
    /// Sends the job to the client of `peer`; a request's answer goes back
    /// on its `reply`.
    pub(crate) async fn serve(self, peer: &Peer<RoleServer>) {
        match self {
            ClientJob::Ask { ask, mut reply } => {
                let request = match ask.request(peer) {
                    Ok(r) => r,
                    Err(why) => {
                        let _ = reply.send(Err(why));
                        return;
                    }
                };
                let handle = match peer
                    .send_request_with_option(request, PeerRequestOptions::no_options())
                    .await
                {
                    Ok(h) => h,
                    Err(e) => {
                        let _ = reply.send(Err(e.to_string()));
                        return;
                    }
                };
                // Dropped unanswered (the server withdrew its request, its
                // call ended): the agent's request is withdrawn too.
                let mut guard = crate::mcp::CancelOnDrop {
                    peer: peer.clone(),
                    id: Some(handle.id.clone()),
                };
                tokio::select! {
                    answer = handle.await_response() => {
                        guard.disarm();
                        let _ = reply.send(answer.map_err(|e| e.to_string()));
                    }
                    () = reply.closed() => {
                        // Sent at once with the reason (over HTTP rmcp puts a
                        // cancel on the session's own stream, docs/mcp-client.md §7).
                        if let Some(id) = guard.id.take() {
                            let _ = peer
                                .notify_cancelled(CancelledNotificationParam::new(
                                    Some(id),
                                    Some("the MCP server withdrew its request".into()),
                                ))
                                .await;
                        }
                    }
                }
            }
            ClientJob::Progress(p) => {
                let _ = peer.notify_progress(p).await;
            }
            ClientJob::Log(p) => {
                let _ = peer.notify_logging_message(p).await;
            }
        }
    }

    /// Answers a request that will not be sent (its call ended).
    pub(crate) fn drop_unsent(self) {
        if let ClientJob::Ask { reply, .. } = self {
            let _ = reply.send(Err("the call it belongs to ended before it was sent".into()));
        }
    }
}

/// The originating request of a `tools/call`: which client session, which
/// request of it, and where its jobs go.
pub(crate) struct Caller {
    /// The gateway's number for the client session.
    pub session: u64,
    /// The session's JSON-RPC id of the `tools/call`.
    pub request: RequestId,
    /// The client session.
    pub peer: Peer<RoleServer>,
    /// The call handler's queue.
    pub jobs: mpsc::Sender<ClientJob>,
    /// The level the session chose with `logging/setLevel` (`None`: all).
    pub log_level: Arc<Mutex<Option<LoggingLevel>>>,
}

/// What a server asks the client for: decides the capability it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Need {
    Sampling,
    Elicitation,
}

/// Form mode in an agent's elicitation capability: `form` named, or
/// neither mode (an empty object means form only, for clients of protocol
/// versions before modes).
fn declares_form_mode(c: &rmcp::model::ElicitationCapability) -> bool {
    c.form.is_some() || c.url.is_none()
}

impl Need {
    fn name(self) -> &'static str {
        match self {
            Need::Sampling => "sampling",
            Need::Elicitation => "elicitation",
        }
    }

    fn method(self) -> &'static str {
        match self {
            Need::Sampling => "sampling/createMessage",
            Need::Elicitation => "elicitation/create",
        }
    }

    /// Whether the agent declared what the gateway passes on: sampling, or
    /// form-mode elicitation (the only mode forwarded).
    fn declared(self, peer: &Peer<RoleServer>) -> bool {
        peer.peer_info().is_some_and(|i| match self {
            Need::Sampling => i.capabilities.sampling.is_some(),
            Need::Elicitation => i
                .capabilities
                .elicitation
                .as_ref()
                .is_some_and(declares_form_mode),
        })
    }
}

/// Where a message of a server goes: the queue of a call, the level its
/// session chose, the session.
type Target = (
    mpsc::Sender<ClientJob>,
    Arc<Mutex<Option<LoggingLevel>>>,
    Peer<RoleServer>,
);

/// One session's subscription to a URI of a server.
struct Subscription {
    session: u64,
    peer: Peer<RoleServer>,
    server: String,
    uri: String,
}

struct CallEntry {
    id: u64,
    server: String,
    caller: Caller,
}

/// Who a server's lane belongs to (see the module docs).
struct Lane {
    session: u64,
    calls: usize,
    /// Calls of other sessions waiting for the lane; while any wait, the
    /// owning session starts no new call (no starvation).
    waiting: usize,
}

/// The gateway's client sessions and the `tools/call`s in flight, shared by
/// the session handlers and the sampling provider.
#[derive(Default)]
pub(crate) struct Route {
    /// Connected client sessions, oldest first; read through
    /// [`Route::live_peers`], which prunes closed ones.
    peers: Mutex<Vec<Peer<RoleServer>>>,
    /// Calls in flight with their originating request.
    calls: Mutex<Vec<CallEntry>>,
    /// Lanes of servers whose sampling is active, by server name.
    lanes: Mutex<HashMap<String, Lane>>,
    lane_freed: Notify,
    next: AtomicU64,
    /// Resource subscriptions by session.
    subscriptions: Mutex<Vec<Subscription>>,
}

/// Removes its call from [`Route`]'s in-flight list when dropped (the call
/// finished, failed or was cancelled).
pub(crate) struct InFlight<'a> {
    route: &'a Route,
    id: u64,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut calls = lock(&self.route.calls);
        if let Some(i) = calls.iter().position(|c| c.id == self.id) {
            calls.remove(i);
        }
    }
}

/// Holds a server's lane for one call; releases it when dropped.
pub(crate) struct LaneGuard<'a> {
    route: &'a Route,
    server: String,
}

impl Drop for LaneGuard<'_> {
    fn drop(&mut self) {
        let mut lanes = lock(&self.route.lanes);
        if let Some(lane) = lanes.get_mut(&self.server) {
            lane.calls = lane.calls.saturating_sub(1);
            if lane.calls == 0 && lane.waiting == 0 {
                lanes.remove(&self.server);
            }
        }
        drop(lanes);
        self.route.lane_freed.notify_waiters();
    }
}

/// A call waiting for a lane; un-counts itself if the wait is dropped
/// (the call timed out or was cancelled).
struct Waiting<'a> {
    route: &'a Route,
    server: &'a str,
    counted: bool,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if !self.counted {
            return;
        }
        let mut lanes = lock(&self.route.lanes);
        if let Some(lane) = lanes.get_mut(self.server) {
            lane.waiting = lane.waiting.saturating_sub(1);
            if lane.calls == 0 && lane.waiting == 0 {
                lanes.remove(self.server);
            }
        }
        drop(lanes);
        // A waiter that gave up may have been what held the owner back.
        self.route.lane_freed.notify_waiters();
    }
}

impl Route {
    /// The connected client sessions, oldest first, closed ones pruned.
    pub(crate) fn live_peers(&self) -> std::sync::MutexGuard<'_, Vec<Peer<RoleServer>>> {
        let mut peers = lock(&self.peers);
        peers.retain(|p| !p.is_transport_closed());
        peers
    }

    /// A fresh number for a client session.
    pub(crate) fn session_number(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// Waits until `session` may call `server` (a server whose sampling is
    /// active; see the module docs). The caller bounds the wait.
    pub(crate) async fn lane(&self, server: &str, session: u64) -> LaneGuard<'_> {
        let mut waiting = Waiting {
            route: self,
            server,
            counted: false,
        };
        loop {
            let freed = self.lane_freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            {
                let mut lanes = lock(&self.lanes);
                let lane = lanes.entry(server.to_owned()).or_insert(Lane {
                    session,
                    calls: 0,
                    waiting: 0,
                });
                let mine = lane.session == session;
                let others_waiting = lane.waiting - usize::from(waiting.counted);
                if lane.calls == 0 || (mine && others_waiting == 0) {
                    lane.session = session;
                    lane.calls += 1;
                    if waiting.counted {
                        lane.waiting -= 1;
                        waiting.counted = false;
                    }
                    return LaneGuard {
                        route: self,
                        server: server.to_owned(),
                    };
                }
                if !waiting.counted {
                    lane.waiting += 1;
                    waiting.counted = true;
                }
            }
            freed.await;
        }
    }

    /// Records the call of `caller` to `server` until the guard drops.
    pub(crate) fn enter(&self, server: &str, caller: Caller) -> InFlight<'_> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.calls).push(CallEntry {
            id,
            server: server.to_owned(),
            caller,
        });
        InFlight { route: self, id }
    }

    /// Where `server`'s request goes: the queue of the oldest call in
    /// flight to it, when all its calls in flight belong to one client
    /// session that declared what the request needs; else why it goes
    /// nowhere.
    fn client_for(&self, server: &str, need: Need) -> Result<mpsc::Sender<ClientJob>, String> {
        let (jobs, _, peer) = self.one_session(server, need.name())?;
        if !need.declared(&peer) {
            return Err(no_capability(&peer, need));
        }
        Ok(jobs)
    }

    /// The queue, log level and session of the oldest call in flight to
    /// `server` when all its calls in flight belong to one session; else
    /// why there is none (`what`: the kind of message, for the reason).
    fn one_session(&self, server: &str, what: &str) -> Result<Target, String> {
        let calls = lock(&self.calls);
        let live: Vec<&CallEntry> = calls
            .iter()
            .filter(|c| c.server == server && !c.caller.peer.is_transport_closed())
            .collect();
        let Some(first) = live.first() else {
            return Err(format!(
                "no call of a gateway client to '{server}' is in flight, so wasmgate serve \
                 cannot tell which client the request belongs to (it forwards {what} only \
                 to the client whose tools/call the server is serving)"
            ));
        };
        if live
            .iter()
            .any(|c| c.caller.session != first.caller.session)
        {
            return Err(format!(
                "calls of several gateway clients to '{server}' are in flight, so wasmgate \
                 serve cannot tell which client the request belongs to; it was refused"
            ));
        }
        tracing::debug!(
            server,
            session = first.caller.session,
            request = ?first.caller.request,
            "{what} routed to the originating call"
        );
        Ok((
            first.caller.jobs.clone(),
            first.caller.log_level.clone(),
            first.caller.peer.clone(),
        ))
    }

    /// Records that `session` subscribed to `uri` of `server`.
    pub(crate) fn subscribe(&self, session: u64, peer: Peer<RoleServer>, server: &str, uri: &str) {
        let mut subs = lock(&self.subscriptions);
        subs.retain(|s| !s.peer.is_transport_closed());
        if !subs
            .iter()
            .any(|s| s.session == session && s.server == server && s.uri == uri)
        {
            subs.push(Subscription {
                session,
                peer,
                server: server.to_owned(),
                uri: uri.to_owned(),
            });
        }
    }

    /// Forgets `session`'s subscription to `uri` of `server`; whether
    /// another live session still holds one (then the server's
    /// subscription stays).
    pub(crate) fn unsubscribe(&self, session: u64, server: &str, uri: &str) -> bool {
        let mut subs = lock(&self.subscriptions);
        let this = |s: &Subscription| s.session == session && s.server == server && s.uri == uri;
        subs.retain(|s| !(s.peer.is_transport_closed() || this(s)));
        subs.iter().any(|s| s.server == server && s.uri == uri)
    }

    /// The live sessions subscribed to `uri` of `server`.
    fn subscribers(&self, server: &str, uri: &str) -> Vec<Peer<RoleServer>> {
        let mut subs = lock(&self.subscriptions);
        subs.retain(|s| !s.peer.is_transport_closed());
        subs.iter()
            .filter(|s| s.server == server && s.uri == uri)
            .map(|s| s.peer.clone())
            .collect()
    }
}

fn no_capability(peer: &Peer<RoleServer>, need: Need) -> String {
    let name = peer
        .peer_info()
        .map(|i| format!("'{}'", i.client_info.name))
        .unwrap_or_else(|| "connected to wasmgate serve".into());
    format!(
        "the MCP client {name} did not declare the {} capability, so wasmgate serve \
         cannot forward {} to it",
        need.name(),
        need.method()
    )
}

/// Rank of a log level, least severe first (MCP's RFC 5424 order).
fn rank(level: LoggingLevel) -> u8 {
    level as u8
}

/// The gateway's [`SamplingProvider`] and [`UpstreamSink`]: forwards each
/// admitted sampling request, each elicitation request and each log line to
/// the gateway's own MCP client whose call it belongs to, and resource
/// updates to the sessions that subscribed (see the module docs). The model
/// the policy chose goes to the client as the first model hint; the client
/// picks the model it answers with. `tokens_used` is 0: MCP results carry
/// no usage.
pub struct ForwardToClient {
    route: Arc<Route>,
}

impl ForwardToClient {
    pub(crate) fn new(route: Arc<Route>) -> ForwardToClient {
        ForwardToClient { route }
    }

    /// Asks the client whose call `server` is serving; its answer.
    async fn ask(&self, server: &str, need: Need, ask: ClientAsk) -> Result<ClientResult, String> {
        let jobs = self.route.client_for(server, need)?;
        let (reply, answer) = oneshot::channel();
        let ended = || "the call it belongs to ended before it was answered".to_string();
        jobs.send(ClientJob::Ask { ask, reply })
            .await
            .map_err(|_| ended())?;
        answer
            .await
            .map_err(|_| ended())?
            .map_err(|e| format!("the gateway's MCP client answered: {e}"))
    }
}

/// How long one client may take to accept a resource update.
const UPDATE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1);

impl UpstreamSink for ForwardToClient {
    fn log(&self, server: &str, params: LoggingMessageNotificationParam) {
        // A line that cannot be tied to one session stays in wasmgate's log.
        let Ok((jobs, level, _)) = self.route.one_session(server, "log lines") else {
            return;
        };
        let min = *lock(&level);
        if min.is_some_and(|min| rank(params.level) < rank(min)) {
            return;
        }
        // Bounded: a full queue (a client that reads nothing) drops lines.
        let _ = jobs.try_send(ClientJob::Log(params));
    }

    fn resource_updated(&self, server: &str, uri: &str) {
        for peer in self.route.subscribers(server, uri) {
            let uri = uri.to_owned();
            tokio::spawn(async move {
                let update = rmcp::model::ResourceUpdatedNotificationParam::new(uri);
                let _ = tokio::time::timeout(UPDATE_TIMEOUT, peer.notify_resource_updated(update))
                    .await;
            });
        }
    }

    fn elicit(&self, server: &str, params: serde_json::Value) -> ElicitFuture<'_> {
        let server = server.to_owned();
        Box::pin(async move {
            let fail = |why: String| format!("elicitation request of MCP server '{server}': {why}");
            let answer = self
                .ask(&server, Need::Elicitation, ClientAsk::Elicitation(params))
                .await
                .map_err(fail)?;
            serde_json::to_value(answer).map_err(|e| fail(format!("unreadable answer: {e}")))
        })
    }
}

/// The model name [`ForwardToClient`] reports as its default: none is
/// chosen, the gateway's client decides.
pub const CLIENT_CHOOSES: &str = "";

impl SamplingProvider for ForwardToClient {
    fn default_model(&self) -> String {
        CLIENT_CHOOSES.to_owned()
    }

    fn create_message(&self, request: SamplingRequest) -> SamplingFuture<'_> {
        Box::pin(async move {
            let server = request.server.clone();
            let fail = |why: String| format!("sampling request of MCP server '{server}': {why}");
            let params = to_params(request).map_err(fail)?;
            let result = match self
                .ask(&server, Need::Sampling, ClientAsk::Sampling(params))
                .await
                .map_err(fail)?
            {
                ClientResult::CreateMessageResult(r) => *r,
                _ => return Err(fail("the client's answer is not a sampling result".into())),
            };
            let message = serde_json::to_value(&result.message)
                .map_err(|e| fail(format!("unreadable answer: {e}")))?;
            Ok(SamplingResponse {
                model: result.model,
                stop_reason: result.stop_reason,
                message,
                tokens_used: 0,
            })
        })
    }
}

/// The admitted request as MCP `sampling/createMessage` parameters.
fn to_params(r: SamplingRequest) -> Result<CreateMessageRequestParams, String> {
    let mut params = serde_json::json!({
        "messages": r.messages,
        "maxTokens": r.max_tokens,
    });
    let obj = params.as_object_mut().expect("an object literal");
    if !r.model.is_empty() {
        obj.insert(
            "modelPreferences".into(),
            serde_json::json!({"hints": [{"name": r.model}]}),
        );
    }
    if let Some(s) = r.system_prompt {
        obj.insert("systemPrompt".into(), s.into());
    }
    if let Some(t) = r.temperature {
        obj.insert("temperature".into(), serde_json::json!(t));
    }
    if !r.stop_sequences.is_empty() {
        obj.insert("stopSequences".into(), serde_json::json!(r.stop_sequences));
    }
    if !r.tools.is_empty() {
        obj.insert("tools".into(), serde_json::Value::Array(r.tools));
    }
    serde_json::from_value(params).map_err(|e| format!("not a valid sampling request: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Whether `f` finishes within a short bound (a lane that should be
    /// free is taken at once; one that should not be stays pending).
    async fn within<F: std::future::Future>(f: F) -> Option<F::Output> {
        tokio::time::timeout(Duration::from_millis(200), f)
            .await
            .ok()
    }

    #[test]
    fn form_mode_is_declared_by_form_or_by_an_empty_capability() {
        let c = |v: serde_json::Value| -> rmcp::model::ElicitationCapability {
            serde_json::from_value(v).unwrap()
        };
        assert!(declares_form_mode(&c(serde_json::json!({}))));
        assert!(declares_form_mode(&c(serde_json::json!({"form": {}}))));
        assert!(declares_form_mode(&c(
            serde_json::json!({"form": {}, "url": {}})
        )));
        assert!(!declares_form_mode(&c(serde_json::json!({"url": {}}))));
    }

    #[tokio::test]
    async fn a_lane_serves_one_session_at_a_time_and_lets_a_waiter_in_next() {
        let route = Route::default();
        // Session 1 holds the lane with two calls side by side.
        let a1 = within(route.lane("s", 1)).await.expect("free lane");
        let a2 = within(route.lane("s", 1)).await.expect("same session");
        // Another server's lane is independent.
        let other = within(route.lane("t", 2)).await.expect("other server");
        drop(other);
        // Session 2 waits while session 1's calls run ...
        let waiter = route.lane("s", 2);
        tokio::pin!(waiter);
        assert!(within(waiter.as_mut()).await.is_none(), "session 2 got in");
        // ... and while it waits, session 1 starts no new call.
        assert!(
            within(route.lane("s", 1)).await.is_none(),
            "the owner overtook a waiter"
        );
        drop(a1);
        assert!(
            within(waiter.as_mut()).await.is_none(),
            "one call still runs"
        );
        drop(a2);
        let b = within(waiter.as_mut()).await.expect("lane handed over");
        drop(b);
        // A waiter that gives up un-counts itself: the lane is free again.
        let c = within(route.lane("s", 3)).await.expect("free");
        assert!(within(route.lane("s", 4)).await.is_none());
        drop(c);
        assert!(within(route.lane("s", 1)).await.is_some());
        assert!(lock(&route.lanes).is_empty(), "no lane left behind");
    }

    #[test]
    fn admitted_requests_become_mcp_parameters() {
        let p = to_params(SamplingRequest {
            server: "s".into(),
            model: "small".into(),
            max_tokens: 20,
            system_prompt: Some("be brief".into()),
            messages: vec![
                serde_json::json!({"role": "user", "content": {"type": "text", "text": "hi"}}),
            ],
            tools: vec![],
            temperature: Some(0.5),
            stop_sequences: vec!["END".into()],
        })
        .unwrap();
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(v["maxTokens"], 20);
        assert_eq!(v["modelPreferences"]["hints"][0]["name"], "small");
        assert_eq!(v["systemPrompt"], "be brief");
        assert_eq!(v["messages"][0]["content"]["text"], "hi");
        assert_eq!(v["stopSequences"][0], "END");
        // No model chosen: no hint, the client decides.
        let p = to_params(SamplingRequest {
            server: "s".into(),
            model: CLIENT_CHOOSES.into(),
            max_tokens: 1,
            system_prompt: None,
            messages: vec![],
            tools: vec![],
            temperature: None,
            stop_sequences: vec![],
        })
        .unwrap();
        assert!(p.model_preferences.is_none());
        // A message that is not an MCP sampling message is refused clearly.
        let e = to_params(SamplingRequest {
            server: "s".into(),
            model: String::new(),
            max_tokens: 1,
            system_prompt: None,
            messages: vec![serde_json::json!({"role": "wizard"})],
            tools: vec![],
            temperature: None,
            stop_sequences: vec![],
        })
        .unwrap_err();
        assert!(e.contains("not a valid sampling request"), "{e}");
    }
}
