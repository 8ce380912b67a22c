//! What a server sends while it serves a call, besides the result, for an
//! embedder that passes it on (the gateway, `docs/mcp-client.md` §7,
//! "Pass-through"): `notifications/progress` of a call, log lines
//! (`notifications/message`), `notifications/resources/updated` and
//! `elicitation/create`.
//!
//! Progress and log lines are taken off the session's transport as they are
//! read (`Tapped`), in the order the server sent them, before the answer
//! that follows them is read. rmcp hands each notification to a task of its
//! own, so a handler could see a line after the call's answer; read here,
//! everything the server sent before its answer is queued for the caller
//! when the call returns, however the tasks are scheduled.
//!
//! Progress is tied to its call exactly: the token rmcp puts on each
//! `tools/call` is registered with the caller's [`ProgressSink`] for as long
//! as the call runs ([`McpClient::call_with`](super::McpClient::call_with)).
//! A notification read before its call registered (the call registers the
//! token a moment after sending) is kept a short while and handed over at
//! registration; a token no call registers goes nowhere. The rest has no tie
//! to a call in MCP and goes to the [`UpstreamSink`] with the server's name,
//! which decides where it belongs.
//!
//! Without a sink (the plain CLI) the client does not declare the
//! elicitation capability, and log lines only go to wasmgate's own log.

// rmcp marks logging deprecated (protocol 2026-07-28); servers on 2025-11-25
// still send log lines.
#![allow(deprecated)]

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::RoleClient;
use rmcp::model::{
    JsonRpcMessage, LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
    ServerNotification,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

use crate::secret::Redactor;

/// Receives the progress notifications of one call (the server's token as
/// sent; the receiver puts its own caller's token in). Called while the
/// session's transport is read: it must not block (queue, do not send).
pub type ProgressSink = Arc<dyn Fn(ProgressNotificationParam) + Send + Sync>;

/// Boxed future of [`UpstreamSink::elicit`]: the client's answer (an MCP
/// `ElicitResult` as JSON), or why there is none.
pub type ElicitFuture<'a> =
    Pin<Box<dyn Future<Output = Result<serde_json::Value, String>> + Send + 'a>>;

/// Where a server's messages that are not answers go (the gateway's clients).
pub trait UpstreamSink: Send + Sync {
    /// A log line of `server` (its data already redacted and bounded to
    /// `MAX_FORWARDED_LOG_BYTES`). Called while the session's transport is
    /// read, in the server's order: it must not block.
    fn log(&self, server: &str, params: LoggingMessageNotificationParam);
    /// `server` says the resource `uri` changed.
    fn resource_updated(&self, server: &str, uri: &str);
    /// `server` asks the user for input (`elicitation/create`, its params as
    /// JSON, at most `MAX_ELICITATION_BYTES`). The answer is bounded by
    /// the caller (`ELICITATION_TIMEOUT`, `MAX_ELICITATION_BYTES`).
    fn elicit(&self, server: &str, params: serde_json::Value) -> ElicitFuture<'_>;
}

/// Largest `elicitation/create` request and answer passed on, in bytes of
/// JSON (docs/security.md, "Gateway bounds").
pub const MAX_ELICITATION_BYTES: usize = 64 * 1024;

/// Most `elicitation/create` requests of one session waiting for their
/// answers at once; more are refused at once (docs/security.md, "Gateway
/// bounds").
pub const MAX_ELICITATIONS_IN_FLIGHT: usize = 4;

/// Longest wait for the answer to one `elicitation/create` (a person types
/// it); the call's own `timeout` still bounds the whole call.
pub const ELICITATION_TIMEOUT: Duration = Duration::from_secs(600);

/// Most bytes of one log line's data, and of a progress notification's
/// `message`, passed on to the embedder; a longer one is replaced by its
/// cut text (docs/security.md, "Gateway bounds").
pub const MAX_FORWARDED_LOG_BYTES: usize = 16 * 1024;

/// Most bytes of a forwarded log line's `logger` name.
pub const MAX_FORWARDED_LOGGER_BYTES: usize = 256;

/// Progress notifications kept for a call that has not registered yet.
const EARLY_MAX: usize = 64;

/// How long such a notification waits for its call to register.
const EARLY_TTL: Duration = Duration::from_secs(5);

/// The progress tokens of one session's calls in flight, and the few
/// notifications read just before their call registered.
#[derive(Default)]
pub(crate) struct ProgressRoutes {
    inner: Mutex<Routes>,
}

#[derive(Default)]
struct Routes {
    live: HashMap<ProgressToken, ProgressSink>,
    early: VecDeque<(Instant, ProgressNotificationParam)>,
}

/// Removes its token from [`ProgressRoutes`] when the call ends.
pub(crate) struct Registered {
    routes: Arc<ProgressRoutes>,
    token: ProgressToken,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.routes.lock().live.remove(&self.token);
    }
}

impl ProgressRoutes {
    fn lock(&self) -> std::sync::MutexGuard<'_, Routes> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sends progress with `token` to `sink` until the guard drops; what was
    /// read for `token` before goes to `sink` first, in order.
    pub(crate) fn register(
        self: &Arc<Self>,
        token: ProgressToken,
        sink: ProgressSink,
    ) -> Registered {
        let mut routes = self.lock();
        // Under the lock, so a notification read meanwhile queues behind
        // these (sinks only queue, they never block).
        let mut kept = VecDeque::with_capacity(routes.early.len());
        let now = Instant::now();
        for (at, p) in routes.early.drain(..) {
            if now.duration_since(at) >= EARLY_TTL {
                continue;
            }
            if p.progress_token == token {
                sink(p);
            } else {
                kept.push_back((at, p));
            }
        }
        routes.early = kept;
        routes.live.insert(token.clone(), sink);
        Registered {
            routes: self.clone(),
            token,
        }
    }

    /// Hands `params` to the call that registered its token; keeps it a
    /// short while when there is none yet ([`EARLY_TTL`], at most
    /// [`EARLY_MAX`]).
    pub(crate) fn deliver(&self, params: ProgressNotificationParam) {
        let mut routes = self.lock();
        if let Some(sink) = routes.live.get(&params.progress_token) {
            sink(params);
            return;
        }
        let now = Instant::now();
        routes
            .early
            .retain(|(at, _)| now.duration_since(*at) < EARLY_TTL);
        if routes.early.len() == EARLY_MAX {
            routes.early.pop_front();
        }
        tracing::trace!(token = ?params.progress_token, "progress of no registered call kept");
        routes.early.push_back((now, params));
    }
}

/// What one session's transport hands on as it reads (see the module docs).
pub(crate) struct Tap {
    /// The configured server name.
    pub server: String,
    /// The server's redactor, for forwarded log lines.
    pub redactor: Redactor,
    /// The embedder's receiver; `None` = log lines stay in wasmgate's log.
    pub upstream: Option<Arc<dyn UpstreamSink>>,
    /// This session's calls in flight by progress token.
    pub progress: Arc<ProgressRoutes>,
}

impl Tap {
    /// Looks at one message the server sent, before rmcp handles it.
    fn saw(&self, message: &RxJsonRpcMessage<RoleClient>) {
        let JsonRpcMessage::Notification(n) = message else {
            return;
        };
        match &n.notification {
            ServerNotification::ProgressNotification(p) => {
                let mut params = p.params.clone();
                // Bounded and redacted here: it may wait for its call, and
                // it goes to the agent as it is.
                if let Some(m) = &params.message {
                    params.message = Some(cut(
                        &self.redactor.redact_secrets(m),
                        MAX_FORWARDED_LOG_BYTES,
                    ));
                }
                self.progress.deliver(params);
            }
            ServerNotification::LoggingMessageNotification(l) => {
                if let Some(sink) = &self.upstream {
                    sink.log(&self.server, forwarded_log(&self.redactor, &l.params));
                }
            }
            _ => {}
        }
    }
}

/// A log line as it is passed on: the server's secrets redacted (keys and
/// values), its data and logger bounded (a longer one is replaced by its
/// cut text).
fn forwarded_log(
    redactor: &Redactor,
    params: &LoggingMessageNotificationParam,
) -> LoggingMessageNotificationParam {
    let mut out = params.clone();
    redact_json(&mut out.data, redactor);
    let size = serde_json::to_vec(&out.data).map_or(usize::MAX, |v| v.len());
    if size > MAX_FORWARDED_LOG_BYTES {
        let text = match &out.data {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        out.data = cut(&text, MAX_FORWARDED_LOG_BYTES).into();
    }
    if let Some(l) = &out.logger {
        out.logger = Some(cut(&redactor.redact_secrets(l), MAX_FORWARDED_LOGGER_BYTES));
    }
    out
}

/// Redacts the server's secrets in every string of `v`, object keys
/// included (a secret can be a key as well as a value).
pub(crate) fn redact_json(v: &mut serde_json::Value, redactor: &Redactor) {
    match v {
        serde_json::Value::String(s) => *s = redactor.redact_secrets(s),
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| redact_json(x, redactor)),
        serde_json::Value::Object(o) => {
            let old = std::mem::take(o);
            for (k, mut x) in old {
                redact_json(&mut x, redactor);
                o.insert(redactor.redact_secrets(&k), x);
            }
        }
        _ => {}
    }
}

/// `text` cut to at most `max` bytes (on a character boundary), marked.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... [truncated]", &text[..end])
}

/// Why an `elicitation/create` request is not passed on, if it is not: its
/// params must be an object, in form mode (the only mode wasmgate declares
/// to servers; a URL-mode request would send the agent a link the gateway
/// never offered to carry).
pub(crate) fn elicitation_refusal(params: &serde_json::Value) -> Option<String> {
    let Some(o) = params.as_object() else {
        return Some("its params are not a JSON object".into());
    };
    match o.get("mode") {
        None => None,
        Some(m) if m == "form" => None,
        Some(m) => Some(format!(
            "wasmgate passes on form-mode elicitation only, not mode {}",
            crate::terminal::line(&cut(&m.to_string(), 64))
        )),
    }
}

/// A client transport that shows each message it reads to a [`Tap`] first.
pub(crate) struct Tapped<T> {
    inner: T,
    tap: Arc<Tap>,
}

impl<T> Tapped<T> {
    pub(crate) fn new(inner: T, tap: Arc<Tap>) -> Tapped<T> {
        Tapped { inner, tap }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Tapped<T> {
    type Error = T::Error;

    fn name() -> Cow<'static, str> {
        T::name()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await?;
        self.tap.saw(&message);
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
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

    #[test]
    fn progress_goes_to_the_call_of_its_token_only_while_it_runs() {
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
        routes.deliver(progress(1, 1.0));
        routes.deliver(progress(2, 2.0));
        drop(a);
        // The call ended: its token goes nowhere.
        routes.deliver(progress(1, 3.0));
        // Read before its call registered: handed over at registration, in
        // order, ahead of what comes after.
        routes.deliver(progress(7, 7.0));
        routes.deliver(progress(7, 7.5));
        let c = routes.register(ProgressToken(NumberOrString::Number(7)), sink(b'c'));
        routes.deliver(progress(7, 8.0));
        assert_eq!(
            *got.lock().unwrap(),
            vec![
                (b'a', 1.0),
                (b'b', 2.0),
                (b'c', 7.0),
                (b'c', 7.5),
                (b'c', 8.0)
            ]
        );
        drop((b, c));
        let left = routes.lock();
        assert!(left.live.is_empty(), "no route left behind");
        assert_eq!(
            left.early.len(),
            1,
            "only the ended call's late line is kept"
        );
    }

    fn redactor() -> Redactor {
        Redactor::new(["s3cr3t-value-123".to_string()])
    }

    #[test]
    fn forwarded_log_lines_are_redacted_in_keys_and_values_and_bounded() {
        let r = redactor();
        let params: LoggingMessageNotificationParam = serde_json::from_value(serde_json::json!({
            "level": "info",
            "logger": format!("s3cr3t-value-123{}", "L".repeat(10_000)),
            "data": {"s3cr3t-value-123": ["x s3cr3t-value-123 y"]},
        }))
        .unwrap();
        let out = forwarded_log(&r, &params);
        let text = serde_json::to_string(&out).unwrap();
        assert!(!text.contains("s3cr3t-value-123"), "{text}");
        let logger = out.logger.unwrap();
        assert!(
            logger.len() <= MAX_FORWARDED_LOGGER_BYTES + 20,
            "{}",
            logger.len()
        );
        assert!(logger.ends_with("[truncated]"));
        let big: LoggingMessageNotificationParam = serde_json::from_value(serde_json::json!({
            "level": "info", "data": "é".repeat(MAX_FORWARDED_LOG_BYTES),
        }))
        .unwrap();
        let data = forwarded_log(&r, &big).data;
        assert!(data.as_str().unwrap().len() <= MAX_FORWARDED_LOG_BYTES + 20);
    }

    #[test]
    fn a_progress_message_is_redacted_and_bounded_before_it_waits_or_is_passed_on() {
        let progress: Arc<ProgressRoutes> = Default::default();
        let tap = Tap {
            server: "s".into(),
            redactor: redactor(),
            upstream: None,
            progress: progress.clone(),
        };
        let message: RxJsonRpcMessage<RoleClient> = serde_json::from_value(serde_json::json!({
            "jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": 5, "progress": 1,
                       "message": format!("s3cr3t-value-123 {}", "m".repeat(5_000_000))},
        }))
        .unwrap();
        tap.saw(&message);
        let got: Arc<Mutex<Vec<String>>> = Default::default();
        let g = got.clone();
        let _r = progress.register(
            ProgressToken(NumberOrString::Number(5)),
            Arc::new(move |p| g.lock().unwrap().push(p.message.unwrap_or_default())),
        );
        let got = got.lock().unwrap();
        assert_eq!(got.len(), 1);
        assert!(!got[0].contains("s3cr3t-value-123"));
        assert!(
            got[0].len() <= MAX_FORWARDED_LOG_BYTES + 20,
            "{}",
            got[0].len()
        );
    }

    #[test]
    fn only_form_mode_elicitation_with_object_params_is_passed_on() {
        assert_eq!(
            elicitation_refusal(&serde_json::json!({"message": "hi"})),
            None
        );
        assert_eq!(
            elicitation_refusal(&serde_json::json!({"mode": "form", "message": "hi"})),
            None
        );
        let url =
            elicitation_refusal(&serde_json::json!({"mode": "url", "url": "javascript:alert(1)"}))
                .unwrap();
        assert!(url.contains("form-mode elicitation only"), "{url}");
        assert!(elicitation_refusal(&serde_json::json!("a string")).is_some());
    }

    #[test]
    fn early_progress_is_bounded() {
        let routes = Arc::new(ProgressRoutes::default());
        for i in 0..(EARLY_MAX as i64 * 3) {
            routes.deliver(progress(i, 0.0));
        }
        assert_eq!(routes.lock().early.len(), EARLY_MAX);
        // The newest are kept.
        let got: Arc<Mutex<Vec<f64>>> = Default::default();
        let g = got.clone();
        let last = EARLY_MAX as i64 * 3 - 1;
        let _r = routes.register(
            ProgressToken(NumberOrString::Number(last)),
            Arc::new(move |p| g.lock().unwrap().push(p.progress)),
        );
        assert_eq!(*got.lock().unwrap(), vec![0.0]);
    }
}
