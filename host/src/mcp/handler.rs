//! The rmcp client handler of one session: identifies wasmgate, forwards
//! server log notifications to the log (redacted, with the server's name),
//! refreshes the server's tools on `notifications/tools/list_changed`
//! (`docs/mcp-client.md` §2), serves `sampling/createMessage` through the
//! agent's provider under the server's policy (§5), and hands resource
//! updates and `elicitation/create` to the embedder's [`UpstreamSink`] (§7,
//! "Pass-through"; progress and log lines reach it from the transport's
//! [`Tap`], in the server's order).

// rmcp marks logging and sampling deprecated (SEP-2577, protocol 2026-07-28);
// servers on earlier protocol versions still use both, and `docs/mcp-client.md` §5 requires
// sampling.
#![allow(deprecated)]

use std::sync::{Arc, Mutex, Weak};

use rmcp::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    Implementation, JsonObject, SamplingCapability, SamplingMessage,
};
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};

use super::Inner;
use super::sampling::{self, SamplingDenied, SamplingRequest, SamplingSetup};
use super::upstream::{
    ELICITATION_TIMEOUT, MAX_ELICITATION_BYTES, MAX_ELICITATIONS_IN_FLIGHT, Tap, UpstreamSink,
};
use crate::secret::Redactor;
use rmcp::model::{
    CustomRequest, CustomResult, ElicitRequestParams, ElicitResult, ElicitationCapability,
    FormElicitationCapability, ResourceUpdatedNotificationParam,
};

/// Longest server log message forwarded, in characters.
const MAX_LOG_CHARS: usize = 2000;

/// Most log notifications of one session written to the log per second;
/// the others are counted and reported in one "suppressed N" line
/// (docs/security.md, "MCP client bounds").
pub const LOG_NOTIFICATIONS_PER_SECOND: u32 = 20;

/// The log rate limit of one session: a one-second window.
#[derive(Debug, Default)]
pub(crate) struct LogLimit {
    server: String,
    window: Option<std::time::Instant>,
    in_window: u32,
    suppressed: u64,
}

impl LogLimit {
    /// Whether one more notification may be written now.
    fn admit(&mut self, server: &str) -> bool {
        let now = std::time::Instant::now();
        if self
            .window
            .is_none_or(|w| now.duration_since(w) >= std::time::Duration::from_secs(1))
        {
            self.report();
            self.window = Some(now);
            self.in_window = 0;
        }
        self.server = server.to_string();
        if self.in_window < LOG_NOTIFICATIONS_PER_SECOND {
            self.in_window += 1;
            true
        } else {
            self.suppressed += 1;
            false
        }
    }

    /// The "suppressed N" line for what was held back, once.
    fn report(&mut self) {
        if self.suppressed > 0 {
            tracing::warn!(
                target: "wasmgate::mcp::server_log",
                server = %crate::terminal::line(&self.server),
                "suppressed {} log notification(s) of this server (more than {LOG_NOTIFICATIONS_PER_SECOND} a second)",
                self.suppressed
            );
            self.suppressed = 0;
        }
    }
}

impl Drop for LogLimit {
    fn drop(&mut self) {
        self.report();
    }
}

/// Client handler for one session of one server.
#[derive(Clone)]
pub(crate) struct Handler {
    /// Configured server name.
    pub server: String,
    /// Session generation; a refresh from an old session is ignored.
    pub generation: u64,
    /// The client, to refresh tools; weak so a session never keeps it alive.
    pub client: Weak<Inner>,
    /// The server's redactor, for its log lines and sampling errors.
    pub redactor: Redactor,
    /// Sampling for this server; `None` = the capability is not advertised.
    pub sampling: Option<SamplingSetup>,
    /// The rate limit of its log notifications (one per session).
    pub log_limit: std::sync::Arc<std::sync::Mutex<LogLimit>>,
    /// Coalesces `notifications/tools/list_changed` of this session.
    pub refresh: Arc<Mutex<Refresh>>,
    /// The embedder's receiver of what is not an answer (the gateway);
    /// `None` = elicitation is not declared.
    pub upstream: Option<Arc<dyn UpstreamSink>>,
    /// What the session's transport hands on as it reads: progress to
    /// its call, log lines to `upstream` ([`super::upstream`]).
    pub tap: Arc<Tap>,
    /// Elicitation requests of this session waiting for an answer
    /// ([`MAX_ELICITATIONS_IN_FLIGHT`] permits).
    pub elicitations: Arc<tokio::sync::Semaphore>,
}

/// The method of an elicitation request.
const ELICITATION_METHOD: &str = "elicitation/create";

/// Re-list state of one session (docs/security.md, "Gateway bounds"): at
/// most one `tools/list` refresh runs and at most one more is queued, however
/// many `notifications/tools/list_changed` a server sends — each used to
/// start its own refresh, so a flood of them grew the process without bound.
#[derive(Debug, Default)]
pub(crate) struct Refresh {
    /// A refresh task is running.
    running: bool,
    /// A notification arrived while it ran: it runs once more.
    queued: bool,
}

impl Refresh {
    /// A notification arrived: `true` = start a refresh task now; `false` =
    /// one is running and will run once more (the notification is merged).
    fn start(&mut self) -> bool {
        if self.running {
            self.queued = true;
            false
        } else {
            self.running = true;
            true
        }
    }

    /// A refresh finished: `true` = run again (something arrived meanwhile).
    fn again(&mut self) -> bool {
        if self.queued {
            self.queued = false;
            true
        } else {
            self.running = false;
            false
        }
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        // Sampling is advertised only when the embedding agent supplied an
        // LLM and the server's policy allows it (§5).
        let mut capabilities = ClientCapabilities::default();
        if self.sampling.is_some() {
            let mut sampling = SamplingCapability::default();
            sampling.tools = Some(JsonObject::default());
            capabilities.sampling = Some(sampling);
        }
        // Elicitation is declared only when someone can answer it (the
        // gateway forwards it to the client whose call it belongs to).
        if self.upstream.is_some() {
            capabilities.elicitation =
                Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
        }
        ClientConfig::new(
            capabilities,
            Implementation::new("wasmgate", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, rmcp::ErrorData> {
        let Some(setup) = &self.sampling else {
            return Err(rmcp::ErrorData::invalid_request(
                SamplingDenied::Disabled.to_string(),
                None,
            ));
        };
        let hints: Vec<String> = params
            .model_preferences
            .as_ref()
            .and_then(|p| p.hints.as_ref())
            .map(|h| h.iter().filter_map(|h| h.name.clone()).collect())
            .unwrap_or_default();
        let request = SamplingRequest {
            server: self.server.clone(),
            model: String::new(),
            max_tokens: params.max_tokens,
            system_prompt: params.system_prompt.clone(),
            messages: params.messages.iter().map(to_json).collect(),
            tools: params
                .tools
                .as_ref()
                .map(|t| t.iter().map(to_json).collect())
                .unwrap_or_default(),
            temperature: params.temperature,
            stop_sequences: params.stop_sequences.clone().unwrap_or_default(),
        };
        let outcome =
            until_cancelled(&context, sampling::run(setup, &self.server, hints, request)).await?;
        let response = outcome.map_err(|e| {
            let msg = self.redactor.redact(&e.to_string());
            tracing::warn!(server = %self.server, "sampling request refused: {msg}");
            match e {
                SamplingDenied::Provider(_) | SamplingDenied::Timeout { .. } => {
                    rmcp::ErrorData::internal_error(msg, None)
                }
                _ => rmcp::ErrorData::invalid_request(msg, None),
            }
        })?;
        let message: SamplingMessage = serde_json::from_value(response.message).map_err(|e| {
            rmcp::ErrorData::internal_error(
                format!("the LLM's answer is not a sampling message: {e}"),
                None,
            )
        })?;
        tracing::info!(server = %self.server, model = %response.model, tokens = response.tokens_used, "sampling request served");
        let mut result = CreateMessageResult::new(message, response.model);
        result.stop_reason = response.stop_reason;
        Ok(result)
    }

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let params = serde_json::to_value(&params).map_err(|e| {
            rmcp::ErrorData::invalid_params(format!("unreadable elicitation request: {e}"), None)
        })?;
        let answer = until_cancelled(&context, self.elicit(params)).await??;
        serde_json::from_value(answer).map_err(|e| {
            rmcp::ErrorData::internal_error(
                format!("the client's answer is not an elicitation result: {e}"),
                None,
            )
        })
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleClient>,
    ) -> Result<CustomResult, rmcp::ErrorData> {
        // An elicitation whose params rmcp's types do not read (a newer
        // schema form) is passed on as the server wrote it.
        if request.method != ELICITATION_METHOD {
            return Err(rmcp::ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                request.method,
                None,
            ));
        }
        let params = request.params.unwrap_or(serde_json::Value::Null);
        until_cancelled(&context, self.elicit(params))
            .await?
            .map(CustomResult)
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Some(sink) = &self.upstream {
            sink.resource_updated(&self.server, &params.uri);
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.server, "received tools/list_changed");
        // Refresh in the background, never inline: the handler runs on the
        // session's message loop, and tools/list needs that loop. One task
        // at a time; notifications meanwhile are merged into one more run.
        if !self
            .refresh
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .start()
        {
            return;
        }
        let weak = self.client.clone();
        let refresh = self.refresh.clone();
        let server = self.server.clone();
        let generation = self.generation;
        tokio::spawn(async move {
            loop {
                match weak.upgrade() {
                    Some(inner) => super::refresh_tools(&inner, &server, generation).await,
                    None => {
                        refresh.lock().unwrap_or_else(|e| e.into_inner()).running = false;
                        return;
                    }
                }
                if !refresh.lock().unwrap_or_else(|e| e.into_inner()).again() {
                    return;
                }
            }
        });
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let admitted = self
            .log_limit
            .lock()
            .map(|mut l| l.admit(&self.server))
            .unwrap_or(false);
        if !admitted {
            return;
        }
        // Passed on to the embedder by the transport's tap already, in
        // the server's order (super::upstream); this is wasmgate's own log.
        let data = match &params.data {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        // Redact, then cut, then escape: a line break in the data must not
        // forge a log line, nor an escape sequence act on the terminal.
        let mut data = self.redactor.redact(&data);
        if data.chars().count() > MAX_LOG_CHARS {
            data = data.chars().take(MAX_LOG_CHARS).collect::<String>() + "... [truncated]";
        }
        let data = crate::terminal::line(&data).into_owned();
        let logger = self.redactor.redact(&crate::terminal::line(
            params.logger.as_deref().unwrap_or(""),
        ));
        let logger = logger.as_str();
        match params.level {
            LoggingLevel::Debug => {
                tracing::debug!(target: "wasmgate::mcp::server_log", server = %self.server, logger, "{data}")
            }
            LoggingLevel::Info | LoggingLevel::Notice => {
                tracing::info!(target: "wasmgate::mcp::server_log", server = %self.server, logger, "{data}")
            }
            LoggingLevel::Warning => {
                tracing::warn!(target: "wasmgate::mcp::server_log", server = %self.server, logger, "{data}")
            }
            _ => {
                tracing::error!(target: "wasmgate::mcp::server_log", server = %self.server, logger, "{data}")
            }
        }
    }
}

impl Handler {
    /// Passes an elicitation request on to the embedder, bounded in size
    /// and time; the answer as JSON. Errors go back to the server.
    async fn elicit(
        &self,
        params: serde_json::Value,
    ) -> Result<serde_json::Value, rmcp::ErrorData> {
        let refuse = |why: String| {
            let msg = self.redactor.redact(&why);
            tracing::warn!(server = %self.server, "elicitation request refused: {msg}");
            rmcp::ErrorData::invalid_request(msg, None)
        };
        let Some(sink) = &self.upstream else {
            return Err(refuse("wasmgate has no client to ask".into()));
        };
        // Each waiting request holds its params: a server that sends many
        // at once gets the extra ones refused, not queued.
        let Ok(_slot) = self.elicitations.clone().try_acquire_owned() else {
            return Err(refuse(format!(
                "more than {MAX_ELICITATIONS_IN_FLIGHT} elicitation requests of this server are waiting"
            )));
        };
        if let Some(why) = super::upstream::elicitation_refusal(&params) {
            return Err(refuse(why));
        }
        let size = serde_json::to_vec(&params).map_or(usize::MAX, |v| v.len());
        if size > MAX_ELICITATION_BYTES {
            return Err(refuse(format!(
                "the request has {size} bytes, more than the {MAX_ELICITATION_BYTES} wasmgate passes on"
            )));
        }
        // The person sees what the server wrote, its secrets redacted.
        let mut params = params;
        super::upstream::redact_json(&mut params, &self.redactor);
        let answer = match tokio::time::timeout(
            ELICITATION_TIMEOUT,
            sink.elicit(&self.server, params),
        )
        .await
        {
            Err(_) => {
                return Err(refuse(format!(
                    "no answer within {} s",
                    ELICITATION_TIMEOUT.as_secs()
                )));
            }
            Ok(Err(why)) => return Err(refuse(why)),
            Ok(Ok(a)) => a,
        };
        let size = serde_json::to_vec(&answer).map_or(usize::MAX, |v| v.len());
        if size > MAX_ELICITATION_BYTES {
            return Err(refuse(format!(
                "the client's answer has {size} bytes, more than the {MAX_ELICITATION_BYTES} wasmgate passes on"
            )));
        }
        tracing::info!(server = %self.server, "elicitation request answered by the client");
        Ok(answer)
    }
}

/// Runs `work` until the server cancels the request it serves
/// (`notifications/cancelled`): then `work` is dropped, which withdraws
/// what it asked of the embedder (the gateway cancels its request to the
/// agent), and the error is what rmcp would send (it sends nothing for a
/// cancelled request).
async fn until_cancelled<T>(
    context: &RequestContext<RoleClient>,
    work: impl std::future::Future<Output = T>,
) -> Result<T, rmcp::ErrorData> {
    tokio::select! {
        r = work => Ok(r),
        () = context.ct.cancelled() => Err(rmcp::ErrorData::invalid_request(
            "the server cancelled its request",
            None,
        )),
    }
}

/// An rmcp model value as JSON, for the provider.
fn to_json<T: serde::Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}

#[cfg(test)]
mod tests {
    use super::Refresh;

    #[test]
    fn list_changed_floods_merge_into_one_running_and_one_queued_refresh() {
        let mut r = Refresh::default();
        assert!(r.start(), "the first notification starts a refresh");
        for _ in 0..500_000 {
            assert!(!r.start(), "later ones only mark one more run");
        }
        assert!(r.again(), "one more run for all of them");
        assert!(!r.again(), "then the task ends");
        assert!(r.start(), "the next notification starts a new task");
    }
}
