//! The rmcp client handler of one session: identifies wasmgate, forwards
//! server log notifications to the log (redacted, with the server's name),
//! and refreshes the server's tools on `notifications/tools/list_changed`
//! (`spec/mcp-client.md` §2).

use std::sync::Weak;

use rmcp::ClientHandler;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
#[allow(deprecated)] // SEP-2577 deprecates logging; servers still send it.
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::service::{NotificationContext, RoleClient};

use super::Inner;
use super::redact::Redactor;

/// Longest server log message forwarded, in characters.
const MAX_LOG_CHARS: usize = 2000;

/// Client handler for one session of one server.
#[derive(Clone)]
pub(crate) struct Handler {
    /// Configured server name.
    pub server: String,
    /// Session generation; a refresh from an old session is ignored.
    pub generation: u64,
    /// The client, to refresh tools; weak so a session never keeps it alive.
    pub client: Weak<Inner>,
    /// The server's redactor, for its log lines.
    pub redactor: Redactor,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        // No sampling capability: the plain client has no LLM (§5).
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("wasmgate", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::info!(server = %self.server, "received tools/list_changed");
        // Refresh in the background, never inline: the handler runs on the
        // session's message loop, and tools/list needs that loop.
        if let Some(inner) = self.client.upgrade() {
            let server = self.server.clone();
            let generation = self.generation;
            tokio::spawn(async move {
                super::refresh_tools(&inner, &server, generation).await;
            });
        }
    }

    #[allow(deprecated)] // SEP-2577 deprecates logging; servers still send it.
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let data = match &params.data {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let mut data = self.redactor.redact(&data);
        if data.chars().count() > MAX_LOG_CHARS {
            data = data.chars().take(MAX_LOG_CHARS).collect::<String>() + "... [truncated]";
        }
        let logger = params.logger.as_deref().unwrap_or("");
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
