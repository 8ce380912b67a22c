//! Pass-through of what an upstream server offers besides tools
//! (`docs/mcp-client.md` §7, "Pass-through"): its prompts, resources,
//! resource templates, subscriptions and completions, per server, gated
//! like its tools (only servers connected and offerable now are asked; a
//! resource of another server is neither listed nor readable), and the
//! naming mode `--prefix always|never`.
//!
//! Names: with [`PrefixMode::Always`] an upstream prompt is
//! `mcp_<server>_<prompt>` (the tools' rule, `docs/mcp-client.md` §2);
//! with [`PrefixMode::Never`] tools and prompts keep the server's own names
//! and [`Gateway::prefix_collisions`] lists names two servers share (the
//! CLI refuses to start then). URIs always keep their scheme: a resource is
//! routed to the first server (config order) that lists it or whose
//! template's fixed part starts it.
//!
//! Every upstream request is bounded: [`UPSTREAM_TIMEOUT`] per request,
//! [`MAX_PAGES`] pages and [`MAX_ITEMS`] items per list and server.

// rmcp marks resources/subscribe and logging legacy (protocol 2026-07-28);
// clients on 2025-11-25 use them.
#![allow(deprecated)]

use super::Gateway;
use crate::mcp::ToolInfo;
use crate::naming;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResult,
    PaginatedRequestParams, Prompt, ReadResourceRequestParams, ReadResourceResult, Resource,
    ResourceTemplate, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::Peer;
use rmcp::{ErrorData, ServiceError};
use rmcp::{RoleClient, RoleServer};
use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

/// How the gateway names upstream tools and prompts (`serve --prefix`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PrefixMode {
    /// `mcp_<server>_<name>` (the default; `docs/mcp-client.md` §2).
    #[default]
    Always,
    /// The server's own names; only when no two servers' names collide.
    Never,
}

/// Longest wait for one upstream prompts/resources/completion request.
pub const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(30);
/// Most pages read of one upstream list.
pub const MAX_PAGES: usize = 16;
/// Most items kept of one upstream list.
pub const MAX_ITEMS: usize = 1000;

/// One name two upstream servers share under `--prefix never`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrefixCollision {
    /// `tool` or `prompt`.
    pub kind: &'static str,
    /// The shared name.
    pub name: String,
    /// The servers that offer it, in config order.
    pub servers: Vec<String>,
}

impl std::fmt::Display for PrefixCollision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} '{}' is offered by {}",
            self.kind,
            self.name,
            self.servers
                .iter()
                .map(|s| format!("'{s}'"))
                .collect::<Vec<_>>()
                .join(" and ")
        )
    }
}

fn upstream_error(server: &str, what: &str, e: ServiceError) -> ErrorData {
    match e {
        // The server's own JSON-RPC error goes back as it sent it.
        ServiceError::McpError(e) => e,
        other => {
            ErrorData::internal_error(format!("{what} on server '{server}' failed: {other}"), None)
        }
    }
}

async fn bounded<T>(
    server: &str,
    what: &str,
    fut: impl Future<Output = Result<T, ServiceError>>,
) -> Result<T, ErrorData> {
    match tokio::time::timeout(UPSTREAM_TIMEOUT, fut).await {
        Ok(r) => r.map_err(|e| upstream_error(server, what, e)),
        Err(_) => Err(ErrorData::internal_error(
            format!(
                "{what} on server '{server}' got no answer in {} s",
                UPSTREAM_TIMEOUT.as_secs()
            ),
            None,
        )),
    }
}

/// Reads every page of one list (bounded), `page` asking for one.
async fn all_pages<T, F, Fut>(server: &str, what: &str, mut page: F) -> Vec<T>
where
    F: FnMut(Option<PaginatedRequestParams>) -> Fut,
    Fut: Future<Output = Result<(Vec<T>, Option<String>), ServiceError>>,
{
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = cursor
            .take()
            .map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        match bounded(server, what, page(params)).await {
            Ok((items, next)) => {
                out.extend(items);
                if out.len() >= MAX_ITEMS {
                    out.truncate(MAX_ITEMS);
                    break;
                }
                match next {
                    Some(c) if !c.is_empty() => cursor = Some(c),
                    _ => break,
                }
            }
            Err(e) => {
                tracing::warn!("gateway: {}", e.message);
                break;
            }
        }
    }
    out
}

/// An upstream prompt as the agent sees it.
pub(super) struct OfferedPrompt {
    pub name: String,
    pub server: String,
    pub prompt: Prompt,
}

impl Gateway {
    /// The naming mode (`serve --prefix`).
    pub fn prefix_mode(&self) -> PrefixMode {
        self.inner.options.prefix
    }

    /// Offered servers (config order) with their live peer and capabilities.
    fn offered_peers(&self) -> Vec<(String, Peer<RoleClient>, serde_json::Value)> {
        let host = self.host();
        host.servers()
            .iter()
            .filter_map(|s| {
                let (peer, caps) = host.offered_peer(&s.spec.name)?;
                Some((s.spec.name.clone(), peer, caps))
            })
            .collect()
    }

    /// The offered tools under the names the agent sees: registered names,
    /// or with [`PrefixMode::Never`] the server's own names (a name two
    /// servers share keeps its registered form on both).
    pub fn agent_tools(&self) -> Vec<(String, ToolInfo)> {
        let tools = self.offered_tools();
        if self.prefix_mode() == PrefixMode::Always {
            return tools.into_iter().map(|t| (t.name.clone(), t)).collect();
        }
        let mut count: BTreeMap<&str, usize> = BTreeMap::new();
        for t in &tools {
            *count.entry(t.original_name.as_str()).or_default() += 1;
        }
        let shared: Vec<String> = count
            .into_iter()
            .filter(|(_, n)| *n > 1)
            .map(|(k, _)| k.to_string())
            .collect();
        tools
            .into_iter()
            .map(|t| {
                let name = if shared.contains(&t.original_name) {
                    t.name.clone()
                } else {
                    t.original_name.clone()
                };
                (name, t)
            })
            .collect()
    }

    /// The registered name of the tool the agent calls `name`.
    pub fn registered_tool_name(&self, name: &str) -> String {
        if self.prefix_mode() == PrefixMode::Always {
            return name.to_string();
        }
        self.agent_tools()
            .into_iter()
            .find(|(n, _)| n == name)
            .map_or_else(|| name.to_string(), |(_, t)| t.name)
    }

    /// Names two offered servers share (tools, then prompts): what
    /// `--prefix never` cannot offer unprefixed. Asks the servers for
    /// their prompts.
    pub async fn prefix_collisions(&self) -> Vec<PrefixCollision> {
        let mut out = Vec::new();
        let mut by_name: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for t in self.offered_tools() {
            let servers = by_name.entry(t.original_name).or_default();
            if !servers.contains(&t.server) {
                servers.push(t.server);
            }
        }
        for (name, servers) in by_name {
            if servers.len() > 1 {
                out.push(PrefixCollision {
                    kind: "tool",
                    name,
                    servers,
                });
            }
        }
        let mut by_name: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (server, p) in self.upstream_prompts_raw().await {
            let servers = by_name.entry(p.name.to_string()).or_default();
            if !servers.contains(&server) {
                servers.push(server);
            }
        }
        for (name, servers) in by_name {
            if servers.len() > 1 {
                out.push(PrefixCollision {
                    kind: "prompt",
                    name,
                    servers,
                });
            }
        }
        out
    }

    async fn upstream_prompts_raw(&self) -> Vec<(String, Prompt)> {
        let mut out = Vec::new();
        for (server, peer, caps) in self.offered_peers() {
            if caps.get("prompts").is_none_or(serde_json::Value::is_null) {
                continue;
            }
            let prompts = all_pages(&server, "prompts/list", |p| {
                let peer = peer.clone();
                async move {
                    let r = peer.list_prompts(p).await?;
                    Ok((r.prompts, r.next_cursor))
                }
            })
            .await;
            out.extend(prompts.into_iter().map(|p| (server.clone(), p)));
        }
        out
    }

    /// Upstream prompts under the agent's names; `taken`: names already
    /// offered (skill prompts), which an upstream prompt never shadows.
    pub(super) async fn upstream_prompts(&self, taken: &[String]) -> Vec<OfferedPrompt> {
        let raw = self.upstream_prompts_raw().await;
        let mut count: BTreeMap<String, usize> = BTreeMap::new();
        for (_, p) in &raw {
            *count.entry(p.name.to_string()).or_default() += 1;
        }
        let mut out: Vec<OfferedPrompt> = Vec::new();
        for (server, prompt) in raw {
            let own = prompt.name.to_string();
            let plain = self.prefix_mode() == PrefixMode::Never
                && count.get(&own) == Some(&1)
                && !taken.contains(&own);
            let name = if plain {
                own
            } else {
                naming::tool_name(&server, &own)
            };
            if taken.contains(&name) || out.iter().any(|o| o.name == name) {
                continue;
            }
            out.push(OfferedPrompt {
                name,
                server,
                prompt,
            });
        }
        out
    }

    /// `prompts/get` of the upstream prompt the agent calls `name`;
    /// `None` when no offered server has it.
    pub(super) async fn get_upstream_prompt(
        &self,
        name: &str,
        taken: &[String],
        mut request: GetPromptRequestParams,
    ) -> Option<Result<GetPromptResult, ErrorData>> {
        let o = self
            .upstream_prompts(taken)
            .await
            .into_iter()
            .find(|o| o.name == name)?;
        let (peer, _) = self.host().offered_peer(&o.server)?;
        request.name = o.prompt.name.to_string();
        Some(bounded(&o.server, "prompts/get", peer.get_prompt(request)).await)
    }

    /// Resources of every offered server, with the server each came from.
    pub(super) async fn upstream_resources(&self) -> Vec<(String, Resource)> {
        let mut out = Vec::new();
        for (server, peer, caps) in self.offered_peers() {
            if caps.get("resources").is_none_or(serde_json::Value::is_null) {
                continue;
            }
            let items = all_pages(&server, "resources/list", |p| {
                let peer = peer.clone();
                async move {
                    let r = peer.list_resources(p).await?;
                    Ok((r.resources, r.next_cursor))
                }
            })
            .await;
            out.extend(items.into_iter().map(|r| (server.clone(), r)));
        }
        out
    }

    /// Resource templates of every offered server.
    pub(super) async fn upstream_templates(&self) -> Vec<(String, ResourceTemplate)> {
        let mut out = Vec::new();
        for (server, peer, caps) in self.offered_peers() {
            if caps.get("resources").is_none_or(serde_json::Value::is_null) {
                continue;
            }
            let items = all_pages(&server, "resources/templates/list", |p| {
                let peer = peer.clone();
                async move {
                    let r = peer.list_resource_templates(p).await?;
                    Ok((r.resource_templates, r.next_cursor))
                }
            })
            .await;
            out.extend(items.into_iter().map(|t| (server.clone(), t)));
        }
        out
    }

    /// The offered server a URI belongs to: the first that lists it, else
    /// the first with a template whose fixed part (up to its first `{`)
    /// starts the URI.
    async fn owner_of(&self, uri: &str) -> Option<String> {
        if let Some((s, _)) = self
            .upstream_resources()
            .await
            .into_iter()
            .find(|(_, r)| r.uri == uri)
        {
            return Some(s);
        }
        self.upstream_templates()
            .await
            .into_iter()
            .find(|(_, t)| {
                let fixed = t.uri_template.split('{').next().unwrap_or("");
                !fixed.is_empty() && uri.starts_with(fixed)
            })
            .map(|(s, _)| s)
    }

    async fn owner_peer(&self, uri: &str) -> Result<(String, Peer<RoleClient>), ErrorData> {
        let not_found = || {
            ErrorData::resource_not_found(
                format!("no resource '{uri}' is offered now; call resources/list"),
                None,
            )
        };
        let server = self.owner_of(uri).await.ok_or_else(not_found)?;
        let (peer, _) = self.host().offered_peer(&server).ok_or_else(not_found)?;
        Ok((server, peer))
    }

    /// `resources/read` on the offered server the URI belongs to.
    pub(super) async fn read_upstream(
        &self,
        request: ReadResourceRequestParams,
    ) -> Result<ReadResourceResult, ErrorData> {
        let (server, peer) = self.owner_peer(&request.uri).await?;
        bounded(&server, "resources/read", peer.read_resource(request)).await
    }

    /// `resources/subscribe` on the offered server the URI belongs to;
    /// its `notifications/resources/updated` for that URI then go to
    /// `session` (and every other session that subscribed to it).
    pub(super) async fn subscribe_upstream(
        &self,
        session: u64,
        client: Peer<RoleServer>,
        request: SubscribeRequestParams,
    ) -> Result<(), ErrorData> {
        let (server, peer) = self.owner_peer(&request.uri).await?;
        let uri = request.uri.clone();
        bounded(&server, "resources/subscribe", peer.subscribe(request)).await?;
        self.inner.route.subscribe(session, client, &server, &uri);
        Ok(())
    }

    /// `resources/unsubscribe` for `session`: forwarded to the server the
    /// URI belongs to unless another session still subscribes to it.
    pub(super) async fn unsubscribe_upstream(
        &self,
        session: u64,
        request: UnsubscribeRequestParams,
    ) -> Result<(), ErrorData> {
        let (server, peer) = self.owner_peer(&request.uri).await?;
        if self.inner.route.unsubscribe(session, &server, &request.uri) {
            return Ok(());
        }
        bounded(&server, "resources/unsubscribe", peer.unsubscribe(request)).await
    }

    /// `completion/complete` for an upstream prompt (by the agent's name)
    /// or resource template (by its URI template); an empty completion for
    /// anything else (skill prompts have no arguments).
    pub(super) async fn complete_upstream(
        &self,
        taken: &[String],
        mut request: CompleteRequestParams,
    ) -> Result<CompleteResult, ErrorData> {
        let reference = serde_json::to_value(&request.r#ref).unwrap_or_default();
        let target = match reference["type"].as_str() {
            Some("ref/prompt") => {
                let name = reference["name"].as_str().unwrap_or("");
                let found = self
                    .upstream_prompts(taken)
                    .await
                    .into_iter()
                    .find(|o| o.name == name);
                match found {
                    Some(o) => {
                        let mut r = reference.clone();
                        r["name"] = o.prompt.name.to_string().into();
                        if let Ok(r) = serde_json::from_value(r) {
                            request.r#ref = r;
                        }
                        Some(o.server)
                    }
                    None => None,
                }
            }
            Some("ref/resource") => {
                let uri = reference["uri"].as_str().unwrap_or("");
                self.upstream_templates()
                    .await
                    .into_iter()
                    .find(|(_, t)| t.uri_template == uri)
                    .map(|(s, _)| s)
            }
            _ => None,
        };
        let Some(server) = target else {
            return Ok(CompleteResult::default());
        };
        let Some((peer, caps)) = self.host().offered_peer(&server) else {
            return Ok(CompleteResult::default());
        };
        if caps
            .get("completions")
            .is_none_or(serde_json::Value::is_null)
        {
            return Ok(CompleteResult::default());
        }
        bounded(&server, "completion/complete", peer.complete(request)).await
    }
}
