//! The fixture MCP server of the server scenarios of the MCP conformance
//! suite (`@modelcontextprotocol/conformance`, pinned in `tests/interop/`):
//! every tool, resource, resource template and prompt the scenarios call,
//! with the content the scenarios' requirements name, on rmcp.
//!
//! `conformance-fixture-server` serves one session over stdio;
//! `conformance-fixture-server --http 127.0.0.1:PORT` serves streamable
//! HTTP at `/mcp` on that loopback address (port 0: any free port; the
//! bound address is printed on stdout as `listening http://ADDR/mcp`).
//!
//! `tests/tests/conformance_server.rs` runs the suite against it directly
//! and through `wasmgate serve --http --prefix never` in front of it; the
//! scenarios expected to fail are in `tests/interop/conformance-baseline.yml`
//! (`server:` and `gateway:`).

// Logging and sampling are deprecated by rmcp for protocol 2026-07-28; the
// suite speaks 2025-11-25, where they are current.
#![allow(deprecated)]

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientResult, CompleteRequestParams,
    CompleteResult, CustomRequest, GetPromptRequestParams, GetPromptResponse, GetPromptResult,
    Implementation, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, LoggingLevel, LoggingMessageNotificationParam, PaginatedRequestParams,
    ProgressNotificationParam, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    ResourceUpdatedNotificationParam, ServerCapabilities, ServerConfig, ServerRequest,
    SetLevelRequestParams, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::{Peer, PeerRequestOptions, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

/// A 1×1 red PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A WAV header with no samples (44 bytes).
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=";

/// The scenarios' spacing between progress steps and log lines.
const STEP: Duration = Duration::from_millis(50);

/// Log levels from least to most severe (RFC 5424 order, as MCP's).
const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

fn rank(level: &str) -> usize {
    LEVELS.iter().position(|l| *l == level).unwrap_or(0)
}

/// The handler of one session: the level `logging/setLevel` chose and the
/// subscribed URIs.
#[derive(Clone, Default)]
struct Fixture {
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    /// Least severe level sent (`logging/setLevel`); `None`: all.
    level: Option<String>,
    subscribed: BTreeSet<String>,
}

/// A value of an rmcp model type from its JSON form. The fixture's
/// content is fixed, so a mismatch is a bug here, reported as an
/// internal error.
fn from_json<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, ErrorData> {
    serde_json::from_value(v)
        .map_err(|e| ErrorData::internal_error(format!("fixture JSON: {e}"), None))
}

fn tools() -> Value {
    let none = json!({"type": "object", "properties": {}});
    let text_arg = |name: &str, what: &str| {
        json!({"type": "object", "properties": {(name): {"type": "string", "description": what}},
               "required": [name]})
    };
    json!([
        {"name": "test_simple_text", "description": "Returns a simple text block", "inputSchema": none},
        {"name": "test_image_content", "description": "Returns a PNG image block", "inputSchema": none},
        {"name": "test_audio_content", "description": "Returns a WAV audio block", "inputSchema": none},
        {"name": "test_embedded_resource", "description": "Returns an embedded text resource", "inputSchema": none},
        {"name": "test_multiple_content_types", "description": "Returns text, image and resource blocks", "inputSchema": none},
        {"name": "test_tool_with_logging", "description": "Sends three info log lines while it runs", "inputSchema": none},
        {"name": "test_tool_with_progress", "description": "Reports progress 0, 50, 100 of 100", "inputSchema": none},
        {"name": "test_error_handling", "description": "Returns a tool error", "inputSchema": none},
        {"name": "test_sampling", "description": "Asks the client to sample", "inputSchema": text_arg("prompt", "The prompt to send to the LLM")},
        {"name": "test_elicitation", "description": "Asks the client for a username and email", "inputSchema": text_arg("message", "The message to show the user")},
        {"name": "test_elicitation_sep1034_defaults", "description": "Elicitation with defaults of every primitive type", "inputSchema": none},
        {"name": "test_elicitation_sep1330_enums", "description": "Elicitation with the five enum forms", "inputSchema": none},
        {"name": "test_reconnection", "description": "A short call (SSE polling)", "inputSchema": none},
        {"name": "test_elicitation_burst", "description": "Sends six elicitation requests at once (message 'hold') and says how many were answered and how many refused", "inputSchema": none},
        {"name": "test_elicitation_withdrawn", "description": "Asks the client for input, withdraws the request (notifications/cancelled) after 300 ms, and returns 5 s later", "inputSchema": none},
        {"name": "test_slow", "description": "Waits `seconds` (at most 60), reporting progress each second; stops when cancelled", "inputSchema":
            {"type": "object", "properties": {"seconds": {"type": "integer"}}}},
        {"name": "json_schema_2020_12_tool", "description": "Tool with JSON Schema 2020-12 features", "inputSchema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {"address": {"type": "object", "properties": {
                "street": {"type": "string"}, "city": {"type": "string"}}}},
            "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
            "additionalProperties": false
        }}
    ])
}

fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

fn result(content: Vec<Value>) -> Result<CallToolResponse, ErrorData> {
    Ok(from_json::<CallToolResult>(json!({"content": content}))?.into())
}

impl Fixture {
    fn wants(&self, level: &str) -> bool {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state
            .level
            .as_deref()
            .is_none_or(|min| rank(level) >= rank(min))
    }

    async fn log(&self, peer: &Peer<RoleServer>, level: &str, data: &str) {
        if !self.wants(level) {
            return;
        }
        if let Ok(p) = from_json::<LoggingMessageNotificationParam>(
            json!({"level": level, "logger": "conformance-fixture", "data": data}),
        ) {
            let _ = peer.notify_logging_message(p).await;
        }
    }

    /// `elicitation/create` with `params` as the raw JSON the scenario
    /// checks (enumNames and oneOf kept as written); the answer as JSON.
    async fn elicit(
        &self,
        ctx: &RequestContext<RoleServer>,
        params: Value,
    ) -> Result<Value, String> {
        let offered = ctx
            .peer
            .peer_info()
            .and_then(|i| serde_json::to_value(&*i).ok())
            .is_some_and(|i| !i["capabilities"]["elicitation"].is_null());
        if !offered {
            return Err("the client does not offer elicitation".into());
        }
        let req =
            ServerRequest::CustomRequest(CustomRequest::new("elicitation/create", Some(params)));
        match ctx.peer.send_request(req).await {
            Ok(ClientResult::CustomResult(r)) => Ok(r.0),
            Ok(other) => serde_json::to_value(other).map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        }
    }

    async fn progress(&self, ctx: &RequestContext<RoleServer>, done: f64, total: f64) {
        let Some(token) = ctx.meta.get_progress_token() else {
            return;
        };
        if let Ok(p) = from_json::<ProgressNotificationParam>(json!({
            "progressToken": token, "progress": done, "total": total
        })) {
            let _ = ctx.peer.notify_progress(p).await;
        }
    }
}

fn elicitation_text(answer: Result<Value, String>) -> Result<CallToolResponse, ErrorData> {
    match answer {
        Ok(a) => result(vec![text(&format!(
            "Elicitation completed: action={}, content={}",
            a["action"].as_str().unwrap_or("?"),
            a.get("content").unwrap_or(&Value::Null)
        ))]),
        Err(e) => Ok(
            CallToolResult::error(vec![rmcp::model::ContentBlock::text(format!(
                "elicitation failed: {e}"
            ))])
            .into(),
        ),
    }
}

impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        let caps: ServerCapabilities = serde_json::from_value(json!({
            "tools": {"listChanged": false},
            "prompts": {"listChanged": false},
            "resources": {"subscribe": true, "listChanged": false},
            "logging": {},
            "completions": {}
        }))
        .unwrap_or_default();
        ServerConfig::new(caps).with_server_info(Implementation::new(
            "conformance-fixture",
            env!("CARGO_PKG_VERSION"),
        ))
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let level = serde_json::to_value(request.level)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned));
        self.state.lock().unwrap_or_else(|e| e.into_inner()).level = level;
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        from_json(json!({"tools": tools()}))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let arg = |k: &str| args.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        match &*request.name {
            "test_simple_text" => result(vec![text("This is a simple text response for testing.")]),
            "test_image_content" => result(vec![
                json!({"type": "image", "data": PNG, "mimeType": "image/png"}),
            ]),
            "test_audio_content" => result(vec![
                json!({"type": "audio", "data": WAV, "mimeType": "audio/wav"}),
            ]),
            "test_embedded_resource" => result(vec![json!({"type": "resource", "resource": {
                "uri": "test://embedded-resource", "mimeType": "text/plain",
                "text": "This is an embedded resource content."}})]),
            "test_multiple_content_types" => result(vec![
                text("Multiple content types test:"),
                json!({"type": "image", "data": PNG, "mimeType": "image/png"}),
                json!({"type": "resource", "resource": {"uri": "test://mixed-content-resource",
                    "mimeType": "application/json", "text": "{\"test\":\"data\",\"value\":123}"}}),
            ]),
            "test_tool_with_logging" => {
                self.log(&ctx.peer, "info", "Tool execution started").await;
                tokio::time::sleep(STEP).await;
                self.log(&ctx.peer, "info", "Tool processing data").await;
                tokio::time::sleep(STEP).await;
                self.log(&ctx.peer, "info", "Tool execution completed")
                    .await;
                // One below info, for the caller's level to filter.
                self.log(&ctx.peer, "debug", "Tool debug detail").await;
                result(vec![text("Tool with logging executed successfully")])
            }
            "test_tool_with_progress" => {
                for (i, done) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(STEP).await;
                    }
                    self.progress(&ctx, done, 100.0).await;
                }
                result(vec![text("Tool with progress executed successfully")])
            }
            "test_error_handling" => {
                Ok(CallToolResult::error(vec![rmcp::model::ContentBlock::text(
                    "This tool intentionally returns an error for testing",
                )])
                .into())
            }
            "test_sampling" => {
                let params = from_json(json!({
                    "messages": [{"role": "user", "content": {"type": "text", "text": arg("prompt")}}],
                    "maxTokens": 100
                }))?;
                match ctx.peer.create_message(params).await {
                    Ok(r) => {
                        let v = serde_json::to_value(&r).unwrap_or_default();
                        let said = v["content"]["text"]
                            .as_str()
                            .map(str::to_owned)
                            .unwrap_or_else(|| v["content"].to_string());
                        result(vec![text(&format!("LLM response: {said}"))])
                    }
                    Err(e) => Ok(CallToolResult::error(vec![rmcp::model::ContentBlock::text(
                        format!("sampling failed: {e}"),
                    )])
                    .into()),
                }
            }
            "test_elicitation" => {
                let answer = self
                    .elicit(
                        &ctx,
                        json!({
                            "message": arg("message"),
                            "requestedSchema": {"type": "object", "properties": {
                                "username": {"type": "string", "description": "User's response"},
                                "email": {"type": "string", "description": "User's email address"}},
                                "required": ["username", "email"]}
                        }),
                    )
                    .await;
                match answer {
                    Ok(a) => result(vec![text(&format!(
                        "User response: <action: {}, content: {}>",
                        a["action"].as_str().unwrap_or("?"),
                        a.get("content").unwrap_or(&Value::Null)
                    ))]),
                    Err(e) => elicitation_text(Err(e)),
                }
            }
            "test_elicitation_burst" => {
                let ask = || {
                    self.elicit(
                        &ctx,
                        json!({"message": "hold", "requestedSchema":
                            {"type": "object", "properties": {"x": {"type": "string"}}}}),
                    )
                };
                let (a, b, c, d, e, f) = tokio::join!(ask(), ask(), ask(), ask(), ask(), ask());
                let answers = [a, b, c, d, e, f];
                let refused: Vec<&String> =
                    answers.iter().filter_map(|a| a.as_ref().err()).collect();
                result(vec![text(&format!(
                    "answered={} refused={}: {}",
                    answers.len() - refused.len(),
                    refused.len(),
                    refused.first().map_or("", |e| e.as_str())
                ))])
            }
            "test_elicitation_withdrawn" => {
                let req = ServerRequest::CustomRequest(CustomRequest::new(
                    "elicitation/create",
                    Some(json!({"message": "never mind", "requestedSchema":
                        {"type": "object", "properties": {"x": {"type": "string"}}}})),
                ));
                let handle = ctx
                    .peer
                    .send_request_with_option(req, PeerRequestOptions::no_options())
                    .await
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                tokio::time::sleep(Duration::from_millis(300)).await;
                let _ = handle
                    .cancel(Some("the server changed its mind".into()))
                    .await;
                // The call goes on: the withdrawal must reach the agent on
                // its own, not because the call ended.
                tokio::time::sleep(Duration::from_secs(5)).await;
                result(vec![text("withdrawn")])
            }
            "test_elicitation_sep1034_defaults" => {
                let answer = self
                    .elicit(&ctx, json!({
                        "message": "Please review your information",
                        "requestedSchema": {"type": "object", "properties": {
                            "name": {"type": "string", "default": "John Doe"},
                            "age": {"type": "integer", "default": 30},
                            "score": {"type": "number", "default": 95.5},
                            "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                            "verified": {"type": "boolean", "default": true}}}
                    }))
                    .await;
                elicitation_text(answer)
            }
            "test_elicitation_sep1330_enums" => {
                let answer = self
                    .elicit(&ctx, json!({
                        "message": "Please choose",
                        "requestedSchema": {"type": "object", "properties": {
                            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                            "titledSingle": {"type": "string", "oneOf": [
                                {"const": "value1", "title": "First Option"},
                                {"const": "value2", "title": "Second Option"},
                                {"const": "value3", "title": "Third Option"}]},
                            "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                                "enumNames": ["Option One", "Option Two", "Option Three"]},
                            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                            "titledMulti": {"type": "array", "items": {"anyOf": [
                                {"const": "value1", "title": "First Choice"},
                                {"const": "value2", "title": "Second Choice"},
                                {"const": "value3", "title": "Third Choice"}]}}}}
                    }))
                    .await;
                elicitation_text(answer)
            }
            "test_reconnection" => {
                tokio::time::sleep(STEP).await;
                result(vec![text("Reconnection test completed")])
            }
            "test_slow" => {
                let seconds = args
                    .get("seconds")
                    .and_then(Value::as_u64)
                    .unwrap_or(5)
                    .min(60);
                for i in 0..seconds {
                    self.progress(&ctx, i as f64, seconds as f64).await;
                    tokio::select! {
                        () = ctx.ct.cancelled() => {
                            // The cancellation reached us: say so where a test can see it.
                            eprintln!("conformance-fixture: test_slow cancelled");
                            self.log(&ctx.peer, "warning", "test_slow cancelled").await;
                            return Err(ErrorData::internal_error("cancelled", None));
                        }
                        () = tokio::time::sleep(Duration::from_secs(1)) => {}
                    }
                }
                result(vec![text(&format!("slept {seconds} s"))])
            }
            other => Err(ErrorData::invalid_params(
                format!("no tool named '{other}'"),
                None,
            )),
        }
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        from_json(json!({"resources": [
            {"uri": "test://static-text", "name": "static-text", "description": "A static text resource", "mimeType": "text/plain"},
            {"uri": "test://static-binary", "name": "static-binary", "description": "A static PNG", "mimeType": "image/png"},
            {"uri": "test://watched-resource", "name": "watched-resource", "description": "A resource to subscribe to", "mimeType": "text/plain"}
        ]}))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        from_json(json!({"resourceTemplates": [
            {"uriTemplate": "test://template/{id}/data", "name": "template-data",
             "description": "Data for an id", "mimeType": "application/json"}
        ]}))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri.as_str();
        let contents = match uri {
            "test://static-text" => json!({"uri": uri, "mimeType": "text/plain",
                "text": "This is the content of the static text resource."}),
            "test://static-binary" => json!({"uri": uri, "mimeType": "image/png", "blob": PNG}),
            "test://watched-resource" => json!({"uri": uri, "mimeType": "text/plain",
                "text": "The watched resource's content."}),
            _ => {
                let id = uri
                    .strip_prefix("test://template/")
                    .and_then(|r| r.strip_suffix("/data"))
                    .filter(|id| !id.is_empty() && !id.contains('/'));
                let Some(id) = id else {
                    return Err(ErrorData::resource_not_found(
                        format!("no resource '{uri}'"),
                        None,
                    ));
                };
                let body =
                    json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
                json!({"uri": uri, "mimeType": "application/json", "text": body.to_string()})
            }
        };
        Ok(from_json::<ReadResourceResult>(json!({"contents": [contents]}))?.into())
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let uri = request.uri.to_string();
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .subscribed
            .insert(uri.clone());
        // One update soon after, while the subscription holds.
        let state = self.state.clone();
        let peer = context.peer.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let still = state
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .subscribed
                .contains(&uri);
            if still
                && let Ok(p) = from_json::<ResourceUpdatedNotificationParam>(json!({"uri": uri}))
            {
                let _ = peer.notify_resource_updated(p).await;
            }
        });
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .subscribed
            .remove(request.uri.as_str());
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        from_json(json!({"prompts": [
            {"name": "test_simple_prompt", "description": "A prompt without arguments"},
            {"name": "test_prompt_with_arguments", "description": "A prompt with two arguments", "arguments": [
                {"name": "arg1", "description": "First test argument", "required": true},
                {"name": "arg2", "description": "Second test argument", "required": true}]},
            {"name": "test_prompt_with_embedded_resource", "description": "A prompt embedding a resource", "arguments": [
                {"name": "resourceUri", "description": "URI of the resource to embed", "required": true}]},
            {"name": "test_prompt_with_image", "description": "A prompt with an image"}
        ]}))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let arg = |k: &str| args.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        let user = |content: Value| json!({"role": "user", "content": content});
        let messages = match request.name.as_str() {
            "test_simple_prompt" => vec![user(text("This is a simple prompt for testing."))],
            "test_prompt_with_arguments" => vec![user(text(&format!(
                "Prompt with arguments: arg1='{}', arg2='{}'",
                arg("arg1"),
                arg("arg2")
            )))],
            "test_prompt_with_embedded_resource" => vec![
                user(
                    json!({"type": "resource", "resource": {"uri": arg("resourceUri"),
                    "mimeType": "text/plain", "text": "Embedded resource content for testing."}}),
                ),
                user(text("Please process the embedded resource above.")),
            ],
            "test_prompt_with_image" => vec![
                user(json!({"type": "image", "data": PNG, "mimeType": "image/png"})),
                user(text("Please analyze the image above.")),
            ],
            other => {
                return Err(ErrorData::invalid_params(
                    format!("no prompt named '{other}'"),
                    None,
                ));
            }
        };
        Ok(from_json::<GetPromptResult>(json!({"messages": messages}))?.into())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let req = serde_json::to_value(&request).unwrap_or_default();
        let partial = req["argument"]["value"].as_str().unwrap_or("");
        let candidates: &[&str] = match (
            req["ref"]["type"].as_str(),
            req["argument"]["name"].as_str(),
        ) {
            (Some("ref/prompt"), Some("arg1" | "arg2")) => {
                &["paris", "park", "party", "test", "testing"]
            }
            (Some("ref/resource"), Some("id")) => &["1", "123", "42"],
            _ => &[],
        };
        let values: Vec<&str> = candidates
            .iter()
            .copied()
            .filter(|c| c.starts_with(partial))
            .collect();
        from_json(
            json!({"completion": {"values": values, "total": values.len(), "hasMore": false}}),
        )
    }
}

/// `LoggingLevel` is named so a rename in rmcp shows here first.
#[allow(dead_code)]
fn _level_type(_: LoggingLevel) {}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args.as_slice() {
        [] => serve_stdio().await,
        [flag, addr] if flag == "--http" => match addr.parse::<SocketAddr>() {
            Ok(a) if a.ip().is_loopback() => serve_http(a).await,
            _ => Err(format!(
                "--http wants a loopback address such as 127.0.0.1:0, not '{addr}'"
            )),
        },
        _ => Err("usage: conformance-fixture-server [--http 127.0.0.1:PORT]".into()),
    };
    if let Err(e) = outcome {
        eprintln!("conformance-fixture-server: {e}");
        std::process::exit(2);
    }
}

async fn serve_stdio() -> Result<(), String> {
    let running = Fixture::default()
        .serve((tokio::io::stdin(), tokio::io::stdout()))
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    running.waiting().await.map_err(|e| e.to_string())?;
    Ok(())
}

async fn serve_http(addr: SocketAddr) -> Result<(), String> {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };

    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("bind {addr}: {e}"))?;
    let bound = listener.local_addr().map_err(|e| e.to_string())?;
    println!("listening http://{bound}/mcp");
    let config = StreamableHttpServerConfig::default();
    let service = StreamableHttpService::new(
        || Ok(Fixture::default()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    loop {
        let (stream, _) = listener
            .accept()
            .await
            .map_err(|e| format!("accept: {e}"))?;
        let service = service.clone();
        tokio::spawn(async move {
            let hyper_service =
                hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let mut service = service.clone();
                    async move {
                        if req.uri().path() != "/mcp" {
                            use http_body_util::BodyExt;
                            let mut not_found = hyper::Response::new(
                                http_body_util::Full::new(bytes::Bytes::from_static(
                                    b"not found\n",
                                ))
                                .boxed(),
                            );
                            *not_found.status_mut() = hyper::StatusCode::NOT_FOUND;
                            return Ok::<_, std::convert::Infallible>(not_found);
                        }
                        tower_service::Service::call(&mut service, req).await
                    }
                });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), hyper_service)
                .await;
        });
    }
}
