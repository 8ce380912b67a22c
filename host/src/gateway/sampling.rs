//! Sampling through the gateway (`docs/mcp-client.md` §5 and §7): a plugin's
//! MCP server asks wasmgate's client for `sampling/createMessage`; the
//! client applies that server's sampling policy (rate limit, model choice,
//! `allowed_models`, token cap, timeout, tool rounds, audit metrics —
//! [`crate::mcp::sampling`]) and hands the admitted request to the
//! [`ForwardToClient`] provider, which asks the gateway's own MCP client
//! (the agent) and returns its answer.
//!
//! Which client is asked: the one whose `tools/call` to that server is in
//! flight (the newest, if several are) — a server asks for sampling while
//! it handles a call; otherwise the newest connected client that declared
//! the sampling capability. A client that did not declare it gets no
//! request: the server receives a clear error instead.

// rmcp marks sampling deprecated (SEP-2577, protocol 2026-07-28); clients
// on earlier protocol versions still use it, and `docs/mcp-client.md` §5 requires it.
#![allow(deprecated)]

use super::lock;
use crate::mcp::naming;
use crate::mcp::sampling::{SamplingFuture, SamplingProvider, SamplingRequest, SamplingResponse};
use rmcp::RoleServer;
use rmcp::model::CreateMessageRequestParams;
use rmcp::service::Peer;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// The gateway's client sessions and the `tools/call`s in flight, shared by
/// the session handlers and the sampling provider.
#[derive(Default)]
pub(crate) struct Route {
    /// Connected client sessions, oldest first; read through
    /// [`Route::live_peers`], which prunes closed ones.
    peers: Mutex<Vec<Peer<RoleServer>>>,
    /// Calls in flight: (id, registered tool name, calling client).
    calls: Mutex<Vec<(u64, String, Peer<RoleServer>)>>,
    next: AtomicU64,
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
        if let Some(i) = calls.iter().rposition(|(id, _, _)| *id == self.id) {
            calls.swap_remove(i);
        }
    }
}

impl Route {
    /// The connected client sessions, oldest first, closed ones pruned.
    pub(crate) fn live_peers(&self) -> std::sync::MutexGuard<'_, Vec<Peer<RoleServer>>> {
        let mut peers = lock(&self.peers);
        peers.retain(|p| !p.is_transport_closed());
        peers
    }

    /// Records that `peer` is calling `tool` (a registered name) until the
    /// guard drops.
    pub(crate) fn enter(&self, tool: &str, peer: &Peer<RoleServer>) -> InFlight<'_> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.calls).push((id, tool.to_owned(), peer.clone()));
        InFlight { route: self, id }
    }

    /// The client to ask for `server`'s sampling request (see the module
    /// docs), or why there is none.
    fn client_for(&self, server: &str) -> Result<Peer<RoleServer>, String> {
        let caller = {
            let calls = lock(&self.calls);
            calls
                .iter()
                .filter(|(_, tool, p)| {
                    naming::may_own_tool(server, tool) && !p.is_transport_closed()
                })
                .max_by_key(|(id, _, _)| *id)
                .map(|(_, _, p)| p.clone())
        };
        let peer = match caller {
            Some(p) => p,
            None => {
                let peers = self.live_peers();
                match peers.iter().rev().find(|p| supports_sampling(p)) {
                    Some(p) => p.clone(),
                    None if peers.is_empty() => {
                        return Err(
                            "no MCP client is connected to wasmgate serve to answer it".into()
                        );
                    }
                    None => return Err(no_capability(&peers[peers.len() - 1])),
                }
            }
        };
        if supports_sampling(&peer) {
            Ok(peer)
        } else {
            Err(no_capability(&peer))
        }
    }
}

fn supports_sampling(peer: &Peer<RoleServer>) -> bool {
    peer.peer_info()
        .is_some_and(|i| i.capabilities.sampling.is_some())
}

fn no_capability(peer: &Peer<RoleServer>) -> String {
    let name = peer
        .peer_info()
        .map(|i| format!("'{}'", i.client_info.name))
        .unwrap_or_else(|| "connected to wasmgate serve".into());
    format!(
        "the MCP client {name} did not declare the sampling capability, so wasmgate serve \
         cannot forward sampling/createMessage to it"
    )
}

/// The gateway's [`SamplingProvider`]: forwards each admitted request to
/// the gateway's own MCP client (see the module docs). The model the policy
/// chose goes to the client as the first model hint; the client picks the
/// model it answers with. `tokens_used` is 0: MCP results carry no usage.
pub struct ForwardToClient {
    route: std::sync::Arc<Route>,
}

impl ForwardToClient {
    pub(crate) fn new(route: std::sync::Arc<Route>) -> ForwardToClient {
        ForwardToClient { route }
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
            let peer = self.route.client_for(&server).map_err(fail)?;
            let params = to_params(request).map_err(fail)?;
            let result = peer
                .create_message(params)
                .await
                .map_err(|e| fail(format!("the gateway's MCP client answered: {e}")))?;
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
