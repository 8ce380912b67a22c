//! What a server sends while it serves a call, besides the result, for an
//! embedder that passes it on (the gateway, `docs/mcp-client.md` §7,
//! "Pass-through"): `notifications/progress` of a call, log lines
//! (`notifications/message`), `notifications/resources/updated` and
//! `elicitation/create`.
//!
//! Progress is tied to its call exactly: the token rmcp puts on each
//! `tools/call` is registered with the caller's [`ProgressSink`] for as long
//! as the call runs ([`McpClient::call_with`](super::McpClient::call_with));
//! a notification whose token no call of that session registered goes
//! nowhere. The rest has no tie to a call in MCP and goes to the
//! [`UpstreamSink`] with the server's name, which decides where it belongs.
//!
//! Without a sink (the plain CLI) the client does not declare the
//! elicitation capability, and log lines only go to wasmgate's own log.

// rmcp marks logging deprecated (protocol 2026-07-28); servers on 2025-11-25
// still send log lines.
#![allow(deprecated)]

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken};

/// Receives the progress notifications of one call (the server's token as
/// sent; the receiver puts its own caller's token in).
pub type ProgressSink = Arc<dyn Fn(ProgressNotificationParam) + Send + Sync>;

/// Boxed future of [`UpstreamSink::elicit`]: the client's answer (an MCP
/// `ElicitResult` as JSON), or why there is none.
pub type ElicitFuture<'a> =
    Pin<Box<dyn Future<Output = Result<serde_json::Value, String>> + Send + 'a>>;

/// Where a server's messages that are not answers go (the gateway's clients).
pub trait UpstreamSink: Send + Sync {
    /// A log line of `server` (its data already redacted and bounded).
    fn log(&self, server: &str, params: LoggingMessageNotificationParam);
    /// `server` says the resource `uri` changed.
    fn resource_updated(&self, server: &str, uri: &str);
    /// `server` asks the user for input (`elicitation/create`, its params as
    /// JSON, at most [`MAX_ELICITATION_BYTES`]). The answer is bounded by
    /// the caller ([`ELICITATION_TIMEOUT`], [`MAX_ELICITATION_BYTES`]).
    fn elicit(&self, server: &str, params: serde_json::Value) -> ElicitFuture<'_>;
}

/// Largest `elicitation/create` request and answer passed on, in bytes of
/// JSON (docs/security.md, "Gateway bounds").
pub const MAX_ELICITATION_BYTES: usize = 64 * 1024;

/// Longest wait for the answer to one `elicitation/create` (a person types
/// it); the call's own `timeout` still bounds the whole call.
pub const ELICITATION_TIMEOUT: Duration = Duration::from_secs(600);

/// How long a progress notification waits for its call's registration:
/// rmcp picks the token while it sends the request, so the call registers
/// it a moment after the server may already have reported progress.
const REGISTRATION_GRACE: Duration = Duration::from_millis(250);

/// The progress tokens of one session's calls in flight.
#[derive(Default)]
pub(crate) struct ProgressRoutes {
    routes: Mutex<HashMap<ProgressToken, ProgressSink>>,
    added: tokio::sync::Notify,
}

/// Removes its token from [`ProgressRoutes`] when the call ends.
pub(crate) struct Registered {
    routes: Arc<ProgressRoutes>,
    token: ProgressToken,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.routes.lock().remove(&self.token);
    }
}

impl ProgressRoutes {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ProgressToken, ProgressSink>> {
        self.routes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sends progress with `token` to `sink` until the guard drops.
    pub(crate) fn register(
        self: &Arc<Self>,
        token: ProgressToken,
        sink: ProgressSink,
    ) -> Registered {
        self.lock().insert(token.clone(), sink);
        self.added.notify_waiters();
        Registered {
            routes: self.clone(),
            token,
        }
    }

    /// Hands `params` to the call that registered its token (waiting
    /// [`REGISTRATION_GRACE`] for a call that is just starting); drops it
    /// when there is none.
    pub(crate) async fn deliver(&self, params: ProgressNotificationParam) {
        let deadline = tokio::time::Instant::now() + REGISTRATION_GRACE;
        loop {
            let added = self.added.notified();
            tokio::pin!(added);
            added.as_mut().enable();
            let sink = self.lock().get(&params.progress_token).cloned();
            if let Some(sink) = sink {
                sink(params);
                return;
            }
            if tokio::time::timeout_at(deadline, added).await.is_err() {
                tracing::debug!(token = ?params.progress_token, "progress of no call in flight dropped");
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::NumberOrString;

    fn progress(token: i64, done: f64) -> ProgressNotificationParam {
        serde_json::from_value(serde_json::json!({"progressToken": token, "progress": done}))
            .unwrap()
    }

    #[tokio::test]
    async fn progress_goes_to_the_call_of_its_token_only_while_it_runs() {
        let routes = Arc::new(ProgressRoutes::default());
        let got: Arc<Mutex<Vec<(u8, f64)>>> = Default::default();
        let sink = |who: u8| -> ProgressSink {
            let got = got.clone();
            Arc::new(move |p: ProgressNotificationParam| {
                got.lock().unwrap().push((who, p.progress))
            })
        };
        let a = routes.register(ProgressToken(NumberOrString::Number(1)), sink(b'a'));
        let b = routes.register(ProgressToken(NumberOrString::Number(2)), sink(b'b'));
        routes.deliver(progress(1, 1.0)).await;
        routes.deliver(progress(2, 2.0)).await;
        drop(a);
        // The call ended: its token goes nowhere (after the grace).
        routes.deliver(progress(1, 3.0)).await;
        // A notification that arrives just before its call registers waits for it.
        let late = {
            let routes = routes.clone();
            tokio::spawn(async move { routes.deliver(progress(7, 7.0)).await })
        };
        tokio::time::sleep(Duration::from_millis(30)).await;
        let c = routes.register(ProgressToken(NumberOrString::Number(7)), sink(b'c'));
        late.await.unwrap();
        assert_eq!(
            *got.lock().unwrap(),
            vec![(b'a', 1.0), (b'b', 2.0), (b'c', 7.0)]
        );
        drop((b, c));
        assert!(routes.lock().is_empty(), "no route left behind");
    }
}
