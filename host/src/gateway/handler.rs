//! The rmcp server handler of one client session (`docs/mcp-client.md` §7):
//! tools from the live host, calls forwarded, visible skills as prompts and
//! resources. Every session handler shares one [`Gateway`].

// rmcp marks sampling deprecated (SEP-2577, protocol 2026-07-28); clients
// on earlier protocol versions still use it, and `docs/mcp-client.md` §5 requires it.
#![allow(deprecated)]

use super::Gateway;
use super::sampling::{Caller, ClientJob};
use crate::host::{Host, SkillRecord};
use crate::mcp::upstream::ProgressSink;
use crate::mcp::{CallError, CallResult, ConnectionState, ToolInfo};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, Implementation, ListPromptsResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, Prompt, PromptMessage, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, Role, ServerCapabilities,
    ServerConfig, Tool, ToolAnnotations,
};
use rmcp::model::{
    CompleteRequestParams, CompleteResult, ListResourceTemplatesResult, SetLevelRequestParams,
    SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use std::borrow::Cow;
use std::sync::Arc;

/// URI scheme of skill resources: `skill://<plugin>/<name>`.
pub const SKILL_SCHEME: &str = "skill://";
/// Prefix of skill prompt names: `skill_<name>`.
pub const SKILL_PROMPT_PREFIX: &str = "skill_";

/// The handler of one client session. Cheap to clone.
#[derive(Clone)]
pub struct GatewayHandler {
    gateway: Gateway,
    /// The gateway's number for this session (sampling routing).
    session: u64,
    /// The level this session set with `logging/setLevel`.
    log_level: Arc<std::sync::Mutex<Option<rmcp::model::LoggingLevel>>>,
}

impl GatewayHandler {
    pub(super) fn new(gateway: Gateway) -> GatewayHandler {
        let session = gateway.inner.route.session_number();
        GatewayHandler {
            gateway,
            session,
            log_level: Default::default(),
        }
    }
}

/// Messages for its client a call may have queued at once (requests wait
/// in the server's own task; progress and log lines beyond it are dropped,
/// docs/security.md "Gateway bounds").
const CALL_QUEUE: usize = 64;

/// One visible skill as the gateway offers it.
struct OfferedSkill<'a> {
    prompt: String,
    uri: String,
    skill: &'a SkillRecord,
}

/// Visible skills with their prompt names and URIs. Prompt names are
/// `skill_<name>`; when two plugins bring a skill of the same name, the later
/// one is `skill_<plugin>_<name>` so both stay reachable.
fn offered_skills(host: &Host) -> Vec<OfferedSkill<'_>> {
    let mut out: Vec<OfferedSkill<'_>> = Vec::new();
    for skill in host.visible_skills() {
        let mut prompt = format!("{SKILL_PROMPT_PREFIX}{}", skill.name);
        if out.iter().any(|o| o.prompt == prompt) {
            prompt = format!("{SKILL_PROMPT_PREFIX}{}_{}", skill.plugin, skill.name);
        }
        out.push(OfferedSkill {
            prompt,
            uri: format!("{SKILL_SCHEME}{}/{}", skill.plugin, skill.name),
            skill,
        });
    }
    out
}

/// The MCP `Tool` for a registered tool: name, title, description and input
/// schema as the client got them from the server.
pub fn mcp_tool(t: &ToolInfo) -> Tool {
    let schema = match &t.input_schema {
        serde_json::Value::Object(m) => m.clone(),
        // The client keeps what the server sent; MCP needs an object schema.
        _ => {
            let mut m = serde_json::Map::new();
            m.insert("type".into(), "object".into());
            m
        }
    };
    let mut tool = Tool::new(t.name.clone(), t.description.clone(), Arc::new(schema));
    if let Some(title) = &t.title {
        tool = tool.with_title(title.clone());
    }
    if let Some(ro) = t.read_only {
        tool = tool.with_annotations(ToolAnnotations::new().read_only(ro));
    }
    tool
}

/// A forwarded call's outcome as an MCP result: every content block as the
/// server sent it, `structuredContent`, and `isError`.
pub fn mcp_result(r: CallResult) -> CallToolResult {
    let content = r
        .content
        .into_iter()
        .map(|block| {
            // From a reference: no copy of the block on the usual path.
            <ContentBlock as serde::Deserialize>::deserialize(&block)
                .unwrap_or_else(|_| ContentBlock::text(block.to_string()))
        })
        .collect();
    let mut out = if r.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    out.structured_content = r.structured_content;
    out
}

impl ServerHandler for GatewayHandler {
    fn get_info(&self) -> ServerConfig {
        let caps = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_resources()
            .enable_resources_list_changed()
            .enable_resources_subscribe()
            .build();
        // Upstream servers' completions and the caller's log level pass
        // through (passthrough.rs).
        let mut caps = caps;
        caps.completions = Some(Default::default());
        caps.logging = Some(Default::default());
        ServerConfig::new(caps)
            .with_server_info(Implementation::new("wasmgate", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "wasmgate carries the tools of the plugins whose applications are installed \
                 on this machine (named mcp_<server>_<tool>); the list changes when an \
                 application is installed or removed. Skills are offered as prompts \
                 (skill_<name>) and resources (skill://<plugin>/<name>).",
            )
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.gateway.add_peer(context.peer);
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.gateway.settle_first_discovery().await;
        let own = self.gateway.inner.options.not_offered_tool;
        let mut tools: Vec<Tool> = self
            .gateway
            .agent_tools()
            .into_iter()
            // The gateway's own tool keeps its name (an unprefixed upstream
            // tool of that name stays reachable only without the flag).
            .filter(|(name, _)| !(own && name == super::not_offered::NOT_OFFERED_TOOL))
            .map(|(name, t)| {
                let mut tool = mcp_tool(&t);
                tool.name = name.into();
                tool
            })
            .collect();
        if own {
            tools.push(super::not_offered::not_offered_tool());
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if self.gateway.inner.options.not_offered_tool
            && request.name == super::not_offered::NOT_OFFERED_TOOL
        {
            let text = super::not_offered::not_offered_markdown(&self.gateway.host());
            return Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into());
        }
        let name: Cow<'static, str> = self.gateway.registered_tool_name(&request.name).into();
        let args = request.arguments.map_or(
            serde_json::Value::Object(Default::default()),
            serde_json::Value::Object,
        );
        let (jobs, mut queued) = tokio::sync::mpsc::channel::<ClientJob>(CALL_QUEUE);
        // The server's progress for this call goes back with the caller's
        // own token, to this call only; none asked for, none sent.
        let token = context.meta.get_progress_token();
        let progress = token.clone().map(|token| {
            let jobs = jobs.clone();
            Arc::new(move |mut p: rmcp::model::ProgressNotificationParam| {
                p.progress_token = token.clone();
                // Bounded: a client that reads nothing loses progress lines.
                let _ = jobs.try_send(ClientJob::Progress(p));
            }) as ProgressSink
        });
        let caller = Caller {
            session: self.session,
            request: context.id.clone(),
            peer: context.peer.clone(),
            jobs,
            log_level: self.log_level.clone(),
        };
        let call = self.gateway.call_from(caller, &name, args, progress);
        // What the server sends the client for this call is sent from here,
        // this request's own task: rmcp ties a request sent from a request
        // handler to that request, so over HTTP it rides the call's own
        // response stream.
        let peer = context.peer.clone();
        let outcome = {
            use futures::StreamExt;
            let mut call = std::pin::pin!(call);
            // The client's answers to requests are awaited beside the call
            // (a request can wait on a person); notifications are sent at
            // once and in order, each finished before the next message.
            let mut asking = futures::stream::FuturesUnordered::new();
            loop {
                tokio::select! {
                    r = &mut call => break r,
                    Some(job) = queued.recv() => match job {
                        ClientJob::Ask { .. } => asking.push(job.serve(&peer)),
                        note => note.serve(&peer).await,
                    },
                    Some(()) = asking.next(), if !asking.is_empty() => {}
                    () = context.ct.cancelled() => {
                        // Dropping the call sends notifications/cancelled to the
                        // server and frees its place in the route.
                        return Err(ErrorData::internal_error(
                            format!("call to '{name}' was cancelled by the client"),
                            None,
                        ));
                    }
                }
            }
        };
        // What the server sent before its answer was queued when its answer
        // was read (crate::mcp::upstream): passed on before the answer,
        // which ends the call's stream over HTTP. Requests are not sent any
        // more.
        while let Ok(job) = queued.try_recv() {
            match job {
                ClientJob::Ask { .. } => job.drop_unsent(),
                note => note.serve(&peer).await,
            }
        }
        match outcome {
            Ok(r) => Ok(mcp_result(r).into()),
            Err(
                CallError::UnknownTool { .. }
                | CallError::NotConnected {
                    state: ConnectionState::Gated,
                    ..
                },
            ) => Err(ErrorData::invalid_params(
                format!(
                    "no tool named '{name}' is offered by wasmgate now (its application may \
                     not be installed, or its server is not connected); call tools/list"
                ),
                None,
            )),
            Err(CallError::BadArguments { name }) => Err(ErrorData::invalid_params(
                format!("arguments for '{name}' must be a JSON object"),
                None,
            )),
            // The call reached (or tried to reach) the server: the agent reads why.
            Err(e) => Ok(CallToolResult::error(vec![ContentBlock::text(e.to_string())]).into()),
        }
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let host = self.gateway.host();
        let mut prompts: Vec<Prompt> = offered_skills(&host)
            .into_iter()
            .map(|o| {
                Prompt::new(o.prompt, o.skill.description.clone(), None).with_title(format!(
                    "{} (skill from plugin {})",
                    o.skill.name, o.skill.plugin
                ))
            })
            .collect();
        let taken: Vec<String> = prompts.iter().map(|p| p.name.clone()).collect();
        for o in self.gateway.upstream_prompts(&taken).await {
            let mut p = o.prompt;
            p.name = o.name;
            prompts.push(p);
        }
        Ok(ListPromptsResult::with_all_items(prompts))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let host = self.gateway.host();
        let skills = offered_skills(&host);
        let Some(o) = skills.iter().find(|o| o.prompt == request.name) else {
            let taken: Vec<String> = skills.iter().map(|o| o.prompt.clone()).collect();
            let name = request.name.clone();
            if let Some(r) = self
                .gateway
                .get_upstream_prompt(&name, &taken, request)
                .await
            {
                return r.map(Into::into);
            }
            return Err(ErrorData::invalid_params(
                format!("no prompt named '{name}' is offered now; call prompts/list"),
                None,
            ));
        };
        let mut result = GetPromptResult::new(vec![PromptMessage::new_text(
            Role::User,
            o.skill.markdown.clone(),
        )]);
        if let Some(d) = &o.skill.description {
            result = result.with_description(d.clone());
        }
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let host = self.gateway.host();
        // What this machine does not offer and why (docs/mcp-client.md §7).
        let text = super::not_offered::not_offered_markdown(&host);
        let not_offered = Resource::new(super::not_offered::NOT_OFFERED_URI, "not-offered")
            .with_mime_type("text/markdown")
            .with_size(text.len() as u64)
            .with_description(
                "The plugin applications not offered on this machine, and what to install, update or start",
            );
        // Last, after the skills (clients that show the first resource
        // show a skill).
        let mut resources: Vec<Resource> = offered_skills(&host)
            .into_iter()
            .map(|o| {
                let mut r = Resource::new(o.uri, o.skill.name.clone())
                    .with_mime_type("text/markdown")
                    .with_size(o.skill.markdown.len() as u64);
                if let Some(d) = &o.skill.description {
                    r = r.with_description(d.clone());
                }
                r
            })
            .chain(std::iter::once(not_offered))
            .collect();
        let skills = resources.len();
        for (_, r) in self.gateway.upstream_resources().await {
            // A skill URI is the gateway's own; a server cannot shadow it.
            if !resources[..skills].iter().any(|s| s.uri == r.uri) {
                resources.push(r);
            }
        }
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let host = self.gateway.host();
        if request.uri == super::not_offered::NOT_OFFERED_URI {
            return Ok(ReadResourceResult::new(vec![
                ResourceContents::text(
                    super::not_offered::not_offered_markdown(&host),
                    request.uri.clone(),
                )
                .with_mime_type("text/markdown"),
            ])
            .into());
        }
        let skills = offered_skills(&host);
        let Some(o) = skills.iter().find(|o| o.uri == request.uri) else {
            if request.uri.starts_with(SKILL_SCHEME) {
                return Err(ErrorData::resource_not_found(
                    format!(
                        "no skill resource '{}' is offered now; call resources/list",
                        request.uri
                    ),
                    None,
                ));
            }
            return self.gateway.read_upstream(request).await.map(Into::into);
        };
        Ok(ReadResourceResult::new(vec![
            ResourceContents::text(o.skill.markdown.clone(), o.uri.clone())
                .with_mime_type("text/markdown"),
        ])
        .into())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let templates = self
            .gateway
            .upstream_templates()
            .await
            .into_iter()
            .map(|(_, t)| t)
            .collect();
        Ok(ListResourceTemplatesResult::with_all_items(templates))
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.gateway
            .subscribe_upstream(self.session, context.peer, request)
            .await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.gateway
            .unsubscribe_upstream(self.session, request)
            .await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let host = self.gateway.host();
        let taken: Vec<String> = offered_skills(&host)
            .into_iter()
            .map(|o| o.prompt)
            .collect();
        self.gateway.complete_upstream(&taken, request).await
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // Recorded per session: the least severe level this client wants.
        *self.log_level.lock().unwrap_or_else(|e| e.into_inner()) = Some(request.level);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(schema: serde_json::Value) -> ToolInfo {
        ToolInfo {
            name: "mcp_git_log".into(),
            server: "git".into(),
            original_name: "log".into(),
            title: Some("Log".into()),
            description: "recent commits".into(),
            input_schema: schema,
            read_only: Some(true),
        }
    }

    #[test]
    fn tools_keep_the_registered_name_schema_title_and_read_only_hint() {
        let schema =
            serde_json::json!({"type": "object", "properties": {"max_count": {"type": "integer"}}});
        let t = mcp_tool(&info(schema.clone()));
        assert_eq!(t.name, "mcp_git_log");
        assert_eq!(t.description.as_deref(), Some("recent commits"));
        assert_eq!(t.title.as_deref(), Some("Log"));
        assert_eq!(serde_json::Value::Object((*t.input_schema).clone()), schema);
        assert_eq!(t.annotations.and_then(|a| a.read_only_hint), Some(true));
        // A server that sent no object schema still yields a valid MCP tool.
        let t = mcp_tool(&info(serde_json::Value::Null));
        assert_eq!(
            t.input_schema.get("type"),
            Some(&serde_json::json!("object"))
        );
    }

    #[test]
    fn results_keep_blocks_structured_content_and_is_error() {
        let r = CallResult {
            server: "git".into(),
            tool: "log".into(),
            content: vec![
                serde_json::json!({"type": "text", "text": "abc"}),
                serde_json::json!({"type": "image", "data": "AAAA", "mimeType": "image/png"}),
            ],
            structured_content: Some(serde_json::json!({"commits": []})),
            is_error: true,
            truncated_bytes: 0,
        };
        let out = serde_json::to_value(mcp_result(r)).unwrap();
        assert_eq!(out["isError"], true);
        assert_eq!(out["content"][0]["text"], "abc");
        assert_eq!(out["content"][1]["type"], "image");
        assert_eq!(out["content"][1]["mimeType"], "image/png");
        assert_eq!(out["structuredContent"], serde_json::json!({"commits": []}));
    }
}
