//! Byte bounds on a streamable HTTP server's answers, applied while the body
//! is read, before anything is parsed (`docs/security.md`, "MCP client
//! bounds"). rmcp's reqwest client counts the bytes of a JSON body and of
//! each SSE event against limits it is given; [`BoundedHttpClient`] wraps
//! that client and gives it the stdio limits of the request it sends (a
//! `tools/list` page: [`MAX_TOOLS_PAGE_BYTES`]; any other answer: the stdio
//! message limit), caps the total of one response stream at the message
//! limit, and turns a hit limit into a JSON-RPC error answering that request,
//! naming the server and the limit. The call fails at once (not at its
//! `timeout`) and the session keeps working, as over stdio.

use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, ErrorData, RequestId, ServerJsonRpcMessage,
};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;

use super::line_transport::MAX_TOOLS_PAGE_BYTES;

/// The SSE events of one stream, as rmcp's client trait passes them.
type Events = BoxStream<'static, Result<Sse, SseError>>;

/// The HTTP client of one streamable HTTP server with its answers bounded.
///
/// `message_limit` is the largest answer read, in bytes (the stdio message
/// limit of the same server: [`super::transport::MIN_STDIO_MESSAGE_BYTES`]
/// or 4 × `max_result_bytes`). `C` is the client that sends: reqwest's
/// (built by [`super::transport::http_client`]), or rmcp's `AuthClient`
/// around it for an `auth: oauth` server, so an authorized server's answers
/// are bounded the same way. Errors are the inner client's.
#[derive(Clone)]
pub(crate) struct BoundedHttpClient<C = reqwest::Client> {
    inner: C,
    server: Arc<str>,
    message_limit: usize,
}

impl<C> BoundedHttpClient<C> {
    /// Wraps `inner` (which keeps the proxy, redirect and TLS rules of
    /// [`super::transport::http_client`]) for the server named `server`.
    pub(crate) fn new(inner: C, server: &str, message_limit: usize) -> Self {
        Self {
            inner,
            server: server.into(),
            message_limit,
        }
    }

    /// The byte limit of the answer to `message`.
    fn limit_for(&self, message: &ClientJsonRpcMessage) -> usize {
        match request_of(message) {
            Some((_, ClientRequest::ListToolsRequest(_))) => {
                MAX_TOOLS_PAGE_BYTES.min(self.message_limit)
            }
            _ => self.message_limit,
        }
    }
}

fn request_of(message: &ClientJsonRpcMessage) -> Option<(&RequestId, &ClientRequest)> {
    match message {
        ClientJsonRpcMessage::Request(r) => Some((&r.id, &r.request)),
        _ => None,
    }
}

/// What was too large, for the error text.
#[derive(Clone, Copy)]
enum Over {
    /// The whole JSON body.
    Body,
    /// One SSE event.
    Event,
    /// All the events of one response stream together.
    Stream,
}

/// The sentence of a hit limit. A `tools/list` page keeps the stdio
/// wording (`… over the limit of N bytes per page`).
fn over_limit_text(server: &str, method: &str, over: Over, limit: usize) -> String {
    let part = match over {
        Over::Body => "its JSON body",
        Over::Event => "one SSE event of it",
        Over::Stream => "its SSE stream in total",
    };
    if method == "tools/list" {
        format!(
            "the tools/list page is over the limit of {limit} bytes per page ({part}; server '{server}' over HTTP, read no further)"
        )
    } else {
        format!(
            "the server's answer to {method} could not be read: {part} is longer than the limit of {limit} bytes (server '{server}' over HTTP, read no further)"
        )
    }
}

fn error_answer(id: RequestId, text: String) -> ServerJsonRpcMessage {
    ServerJsonRpcMessage::error(ErrorData::internal_error(text, None), Some(id))
}

/// Whether `e` is rmcp's "SSE event exceeded the maximum size" (its type is
/// private to rmcp; its text is the only mark it leaves).
fn is_event_too_large(e: &SseError) -> bool {
    matches!(e, SseError::Body(inner) if inner.to_string().contains("exceeded the maximum size"))
}

/// The events of one response stream, ended with an error answer to `id`
/// when one event is over `limit` or all of them together are.
fn bounded_events(
    events: Events,
    answer: Option<(RequestId, String)>,
    server: Arc<str>,
    limit: usize,
) -> Events {
    struct State {
        events: Events,
        answer: Option<(RequestId, String)>,
        server: Arc<str>,
        total: usize,
        done: bool,
    }
    let fail = move |s: &mut State, over: Over| -> Option<Result<Sse, SseError>> {
        s.done = true;
        let (id, method) = s.answer.take()?;
        let text = over_limit_text(&s.server, &method, over, limit);
        tracing::warn!(server = %s.server, "{}", crate::terminal::line(&text));
        let data = serde_json::to_string(&error_answer(id, text)).ok()?;
        Some(Ok(Sse {
            data: Some(data),
            ..Sse::default()
        }))
    };
    let state = State {
        events,
        answer,
        server,
        total: 0,
        done: false,
    };
    futures::stream::unfold(state, move |mut s| async move {
        if s.done {
            return None;
        }
        let item = match s.events.next().await? {
            Ok(event) => {
                let size = [&event.data, &event.event, &event.id]
                    .iter()
                    .map(|f| f.as_ref().map_or(0, String::len))
                    .sum::<usize>();
                s.total = s.total.saturating_add(size);
                if s.total > limit {
                    fail(&mut s, Over::Stream)?
                } else {
                    Ok(event)
                }
            }
            Err(e) if is_event_too_large(&e) => fail(&mut s, Over::Event).unwrap_or(Err(e)),
            Err(e) => Err(e),
        };
        Some((item, s))
    })
    .boxed()
}

impl<C> StreamableHttpClient for BoundedHttpClient<C>
where
    C: StreamableHttpClient + Sync,
{
    type Error = C::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        _max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        // This server's own bounds replace rmcp's event size too.
        self.post_message(uri, message, session_id, auth_header, custom_headers)
            .await
    }

    /// rmcp's limits (its config's) are replaced by this server's: the
    /// error-diagnostic prefix stays rmcp's.
    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        mut limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let limit = self.limit_for(&message);
        limits.max_json_response_size = limit;
        limits.max_sse_event_size = limit;
        let answer = request_of(&message).map(|(id, r)| (id.clone(), r.method().to_string()));
        let response = self
            .inner
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limits,
            )
            .await;
        match (response, answer) {
            (Err(StreamableHttpError::ResponseBodyTooLarge { max_size }), Some((id, method))) => {
                let text = over_limit_text(&self.server, &method, Over::Body, max_size);
                tracing::warn!(server = %self.server, "{}", crate::terminal::line(&text));
                Ok(StreamableHttpPostResponse::Json(
                    error_answer(id, text),
                    None,
                ))
            }
            (Ok(StreamableHttpPostResponse::Sse(events, session)), answer) => {
                Ok(StreamableHttpPostResponse::Sse(
                    bounded_events(events, answer, self.server.clone(), limit),
                    session,
                ))
            }
            (other, _) => other,
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<Events, StreamableHttpError<Self::Error>> {
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            self.message_limit,
        )
        .await
    }

    /// The standalone stream (and a resumed response stream): each event is
    /// bounded by the message limit; the stream lives as long as the
    /// session, so its total is not.
    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        _max_sse_event_size: usize,
    ) -> Result<Events, StreamableHttpError<Self::Error>> {
        self.inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                self.message_limit,
            )
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tools_list_page_keeps_the_stdio_wording() {
        let t = over_limit_text("s", "tools/list", Over::Body, MAX_TOOLS_PAGE_BYTES);
        assert!(
            t.contains("tools/list") && t.contains("over the limit of 4194304 bytes per page"),
            "{t}"
        );
        let t = over_limit_text("s", "tools/call", Over::Event, 7);
        assert!(
            t.contains("server 's'") && t.contains("limit of 7 bytes"),
            "{t}"
        );
    }
}
