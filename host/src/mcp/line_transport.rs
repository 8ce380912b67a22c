//! A newline-delimited JSON-RPC transport (MCP stdio framing) that parses
//! the hot messages straight into their types (docs/performance.md,
//! "Gateway overhead").
//!
//! rmcp's own `AsyncRwTransport` parses every incoming line as a whole
//! `JsonRpcMessage`, and a response's `result` as the untagged
//! `ServerResult`: serde buffers the message and tries each result type in
//! turn, building (and dropping) an error for every type that does not fit —
//! about fifteen for a `tools/call` result, the bulk of the gateway's CPU per
//! call in a profile. This transport remembers the ids of the `tools/call`
//! requests it sent and parses their responses directly as
//! `CallToolResult`; requests (on the server side) are parsed directly as
//! requests. Every other line, and any line the direct parse does not fit,
//! goes through the same generic parse as rmcp's. Framing as rmcp's: one
//! message per line, a trailing `\r` and a UTF-8 BOM are ignored, and JSON
//! that is no MCP message is answered with "Invalid Request".
//!
//! A line that cannot be read — over the length limit, not UTF-8, not JSON,
//! or JSON nested deeper than serde_json's limit of 128 levels — is dropped
//! by rmcp, and the request it answered then waits its whole timeout. Here
//! (client side) it fails the request it answers at once with what was
//! wrong (docs/security.md, "MCP client bounds"): the line's `id` is read
//! from its first and last KiB (or from the whole line when it was read),
//! and when no request's id is found there, a line that looks like a
//! response fails every request in flight. A `tools/list` page over
//! [`MAX_TOOLS_PAGE_BYTES`] and a `tools/call` result with more than
//! [`MAX_CONTENT_BLOCKS`] content blocks are bounded the same way.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequest, CallToolResult, ClientJsonRpcMessage, ClientNotification, ClientRequest,
    ContentBlock, JsonRpcMessage, JsonRpcRequest, JsonRpcResponse, RequestId, ServerJsonRpcMessage,
    ServerResult,
};
use rmcp::service::{RoleClient, RoleServer, RxJsonRpcMessage, ServiceRole, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// Most content blocks kept of one `tools/call` result; the rest are left
/// out (never parsed) and a text block says how many.
pub const MAX_CONTENT_BLOCKS: usize = 1000;

/// Largest `tools/list` response line, in bytes; a larger page fails that
/// `tools/list` request (parsed tools take ~40× their bytes in memory).
pub const MAX_TOOLS_PAGE_BYTES: usize = 4 * 1024 * 1024;

/// Bytes kept of each end of a line, to find its `id` when the line itself
/// cannot be read.
const ID_WINDOW: usize = 1024;

/// What a request in flight asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `tools/call`: its response takes the direct parse.
    Call,
    /// `tools/list`: its response is bounded by [`MAX_TOOLS_PAGE_BYTES`].
    ListTools,
    /// Anything else.
    Other,
}

/// Ids of sent requests still waiting for their response.
type Pending = Arc<Mutex<HashMap<RequestId, Kind>>>;

/// Most ids remembered; past it the set is cleared (a peer that never
/// answers cancelled calls must not grow it without bound). A forgotten id
/// only means its response takes the generic parse.
const MAX_PENDING: usize = 65_536;

/// The parse of one role: which sent messages to remember, and the direct
/// parse of a received line.
pub(crate) trait FastParse: ServiceRole {
    /// Notes a message about to be sent.
    fn note_sent(message: &TxJsonRpcMessage<Self>, pending: &Pending);
    /// The direct parse of `line`, when it applies.
    fn parse_direct(line: &[u8], pending: &Pending) -> Option<RxJsonRpcMessage<Self>>;
    /// The answers for the requests a line that cannot be read (`why`)
    /// answered; none by default (the line is dropped, as rmcp does).
    fn refuse(_line: &Line<'_>, _why: &str, _pending: &Pending) -> Vec<RxJsonRpcMessage<Self>> {
        Vec::new()
    }
    /// An error answer when a whole line of `len` bytes is too big for the
    /// request it answers.
    fn too_big(_len: usize, _line: &[u8], _pending: &Pending) -> Option<RxJsonRpcMessage<Self>> {
        None
    }
    /// Notes a received message (its request is no longer in flight).
    fn note_received(_message: &RxJsonRpcMessage<Self>, _pending: &Pending) {}
}

fn lock(p: &Pending) -> std::sync::MutexGuard<'_, HashMap<RequestId, Kind>> {
    p.lock().unwrap_or_else(|e| e.into_inner())
}

impl FastParse for RoleClient {
    fn note_sent(message: &ClientJsonRpcMessage, pending: &Pending) {
        match message {
            JsonRpcMessage::Request(r) => {
                let kind = match r.request {
                    ClientRequest::CallToolRequest(_) => Kind::Call,
                    ClientRequest::ListToolsRequest(_) => Kind::ListTools,
                    _ => Kind::Other,
                };
                let mut p = lock(pending);
                if p.len() >= MAX_PENDING {
                    p.clear();
                }
                p.insert(r.id.clone(), kind);
            }
            // A cancelled request gets no answer.
            JsonRpcMessage::Notification(n) => {
                if let ClientNotification::CancelledNotification(c) = &n.notification
                    && let Some(id) = &c.params.request_id
                {
                    lock(pending).remove(id);
                }
            }
            _ => {}
        }
    }

    fn parse_direct(line: &[u8], pending: &Pending) -> Option<ServerJsonRpcMessage> {
        // O(1) per line (a scan for a pending call would be O(calls in
        // flight)); a response to another request fails the typed parse or
        // the id check below and takes the generic parse.
        if lock(pending).is_empty() {
            return None;
        }
        // A line that could hold more blocks than are kept: count them
        // first (no allocation), and parse only the kept ones if there are
        // too many.
        if line.len() > MAX_CONTENT_BLOCKS * 24
            && let Ok(c) = serde_json::from_slice::<CountResponse>(line)
            && c.result.content.0 > MAX_CONTENT_BLOCKS
            && lock(pending).get(&c.id) == Some(&Kind::Call)
        {
            lock(pending).remove(&c.id);
            return Some(cut_call_result(line, c.id, c.result.content.0));
        }
        let r: JsonRpcResponse<CallToolResult> = serde_json::from_slice(line).ok()?;
        {
            let mut p = lock(pending);
            if p.get(&r.id) != Some(&Kind::Call) {
                // A response, but not to a tools/call we sent: parse it as
                // what it is.
                return None;
            }
            p.remove(&r.id);
        }
        Some(JsonRpcMessage::Response(JsonRpcResponse {
            jsonrpc: r.jsonrpc,
            id: r.id,
            result: ServerResult::CallToolResult(r.result),
        }))
    }

    fn refuse(line: &Line<'_>, why: &str, pending: &Pending) -> Vec<RxJsonRpcMessage<Self>> {
        let ids = ids_of_bad_line(line, pending);
        let mut p = lock(pending);
        ids.into_iter()
            .filter_map(|id| {
                p.remove(&id)?;
                Some(JsonRpcMessage::error(
                    rmcp::ErrorData::internal_error(
                        format!("the server's answer could not be read: {why}"),
                        None,
                    ),
                    Some(id),
                ))
            })
            .collect()
    }

    fn too_big(len: usize, line: &[u8], pending: &Pending) -> Option<RxJsonRpcMessage<Self>> {
        if len <= MAX_TOOLS_PAGE_BYTES || !lock(pending).values().any(|k| *k == Kind::ListTools) {
            return None;
        }
        let id = serde_json::from_slice::<IdOnly>(line).ok()?.id?;
        let mut p = lock(pending);
        if p.get(&id) != Some(&Kind::ListTools) {
            return None;
        }
        p.remove(&id);
        Some(JsonRpcMessage::error(
            rmcp::ErrorData::internal_error(
                format!(
                    "the tools/list page is {len} bytes, over the limit of {MAX_TOOLS_PAGE_BYTES} bytes per page"
                ),
                None,
            ),
            Some(id),
        ))
    }

    fn note_received(message: &RxJsonRpcMessage<Self>, pending: &Pending) {
        let id = match message {
            JsonRpcMessage::Response(r) => Some(&r.id),
            JsonRpcMessage::Error(e) => e.id.as_ref(),
            _ => None,
        };
        if let Some(id) = id {
            lock(pending).remove(id);
        }
    }
}

/// Just the `id` of a message (every other field skipped unparsed).
#[derive(serde::Deserialize)]
struct IdOnly {
    #[serde(default)]
    id: Option<RequestId>,
    /// Present on a request or notification (whose id is the peer's own).
    #[serde(default)]
    method: Option<serde::de::IgnoredAny>,
}

/// A response's id and the number of its result's content blocks.
#[derive(serde::Deserialize)]
struct CountResponse {
    id: RequestId,
    result: CountResult,
}

#[derive(serde::Deserialize)]
struct CountResult {
    #[serde(default)]
    content: Count,
}

/// The length of a JSON array, its items skipped unparsed.
#[derive(Default)]
struct Count(usize);

impl<'de> serde::Deserialize<'de> for Count {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Count;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<Count, A::Error> {
                let mut n = 0;
                while a.next_element::<serde::de::IgnoredAny>()?.is_some() {
                    n += 1;
                }
                Ok(Count(n))
            }
        }
        d.deserialize_seq(V)
    }
}

/// The first [`MAX_CONTENT_BLOCKS`] items of an array, the rest skipped.
struct FirstBlocks(Vec<ContentBlock>);

impl<'de> serde::Deserialize<'de> for FirstBlocks {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = FirstBlocks;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an array of content blocks")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<FirstBlocks, A::Error> {
                let mut kept = Vec::with_capacity(MAX_CONTENT_BLOCKS);
                while kept.len() < MAX_CONTENT_BLOCKS {
                    match a.next_element::<ContentBlock>()? {
                        Some(b) => kept.push(b),
                        None => return Ok(FirstBlocks(kept)),
                    }
                }
                while a.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(FirstBlocks(kept))
            }
        }
        d.deserialize_seq(V)
    }
}

#[derive(serde::Deserialize)]
struct CutResponse {
    result: CutResult,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct CutResult {
    content: FirstBlocks,
    #[serde(default)]
    structured_content: Option<serde_json::Value>,
    #[serde(default)]
    is_error: Option<bool>,
}

/// The note that ends a result whose blocks were cut.
pub(crate) fn blocks_cut_note(total: usize) -> String {
    format!(
        "[result truncated: {} of {total} content blocks left out (at most {MAX_CONTENT_BLOCKS} are kept)]",
        total.saturating_sub(MAX_CONTENT_BLOCKS)
    )
}

/// A `tools/call` response with more than [`MAX_CONTENT_BLOCKS`] blocks:
/// the first ones and a note, or an error when even those cannot be read.
fn cut_call_result(line: &[u8], id: RequestId, total: usize) -> ServerJsonRpcMessage {
    match serde_json::from_slice::<CutResponse>(line) {
        Ok(r) => {
            let mut content = r.result.content.0;
            content.push(ContentBlock::text(blocks_cut_note(total)));
            let mut result = CallToolResult::success(content);
            result.is_error = r.result.is_error;
            result.structured_content = r.result.structured_content;
            JsonRpcMessage::Response(JsonRpcResponse {
                jsonrpc: rmcp::model::JsonRpcVersion2_0,
                id,
                result: ServerResult::CallToolResult(result),
            })
        }
        Err(e) => JsonRpcMessage::error(
            rmcp::ErrorData::internal_error(
                format!(
                    "the result has {total} content blocks (at most {MAX_CONTENT_BLOCKS} are kept) and its first ones cannot be read: {e}"
                ),
                None,
            ),
            Some(id),
        ),
    }
}

/// A line that could not be read: its first and last [`ID_WINDOW`] bytes,
/// and the whole of it when it was kept.
pub(crate) struct Line<'a> {
    head: &'a [u8],
    tail: &'a [u8],
    whole: Option<&'a [u8]>,
}

/// The ids of requests in flight that a bad line answers: its `id` when it
/// can be found (the whole line's, else one in its head or tail that names
/// a request in flight); else, when the line looks like a response, every
/// request in flight; else none (a bad notification or request answers
/// nothing).
fn ids_of_bad_line(line: &Line<'_>, pending: &Pending) -> Vec<RequestId> {
    static ID: std::sync::LazyLock<regex::bytes::Regex> = std::sync::LazyLock::new(|| {
        regex::bytes::Regex::new(r#""id"\s*:\s*(-?[0-9]+|"(?:[^"\\]|\\.){0,200}")"#)
            .expect("id pattern")
    });
    if let Some(whole) = line.whole
        && let Ok(m) = serde_json::from_slice::<IdOnly>(whole)
    {
        return match (m.method, m.id) {
            (None, Some(id)) => vec![id],
            _ => Vec::new(),
        };
    }
    // A request or notification of the peer's (its `method` comes before
    // any `result` or `error`) answers nothing of ours.
    let head = line.head;
    let first = |needle: &[u8]| {
        head.windows(needle.len())
            .position(|w| w == needle)
            .unwrap_or(usize::MAX)
    };
    let method = first(b"\"method\"");
    let answer = first(b"\"result\"").min(first(b"\"error\""));
    if method < answer {
        return Vec::new();
    }
    let p = lock(pending);
    for part in [line.head, line.tail] {
        for c in ID.captures_iter(part) {
            if let Ok(id) = serde_json::from_slice::<RequestId>(&c[1])
                && p.contains_key(&id)
            {
                return vec![id];
            }
        }
    }
    p.keys().cloned().collect()
}

impl FastParse for RoleServer {
    fn note_sent(_message: &ServerJsonRpcMessage, _pending: &Pending) {}

    fn parse_direct(line: &[u8], _pending: &Pending) -> Option<ClientJsonRpcMessage> {
        // Most lines a server receives are requests. A line that mentions
        // `result` or `error` takes the generic parse, which refuses a
        // request with a stray one of those keys.
        if contains(line, b"\"result\"") || contains(line, b"\"error\"") {
            return None;
        }
        // `ClientRequest` is untagged too, with `tools/call` 14th: try that
        // method first.
        if let Ok(r) = serde_json::from_slice::<JsonRpcRequest<CallToolRequest>>(line) {
            return Some(JsonRpcMessage::Request(JsonRpcRequest {
                jsonrpc: r.jsonrpc,
                id: r.id,
                request: ClientRequest::CallToolRequest(r.request),
            }));
        }
        let r: JsonRpcRequest<ClientRequest> = serde_json::from_slice(line).ok()?;
        Some(JsonRpcMessage::Request(r))
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Called with each received line that cannot be JSON-RPC (its first
/// non-blank byte is not `{` or `[`); the line is then dropped.
pub(crate) type NoiseHook = Box<dyn Fn(&[u8]) + Send + Sync>;

/// The transport: reads lines from `R`, writes lines to `W`.
pub(crate) struct LineTransport<Role: ServiceRole, R, W> {
    read: BufReader<R>,
    line: Vec<u8>,
    max_line: usize,
    discarding: bool,
    /// While discarding: the line's first and last [`ID_WINDOW`] bytes and
    /// its length so far.
    head: Vec<u8>,
    tail: VecDeque<u8>,
    discarded: usize,
    /// Answers made up for requests whose real answer could not be read,
    /// handed out before the next line is read.
    made_up: VecDeque<RxJsonRpcMessage<Role>>,
    write: Arc<tokio::sync::Mutex<Option<W>>>,
    pending: Pending,
    noise: Option<NoiseHook>,
    _role: std::marker::PhantomData<Role>,
}

impl<Role, R, W> LineTransport<Role, R, W>
where
    Role: ServiceRole,
    R: AsyncRead + Unpin,
{
    /// A transport over `read` and `write`; a line over `max_line` bytes is
    /// discarded.
    pub(crate) fn new(read: R, write: W, max_line: usize) -> Self {
        LineTransport {
            read: BufReader::with_capacity(64 * 1024, read),
            line: Vec::with_capacity(8 * 1024),
            max_line,
            discarding: false,
            head: Vec::new(),
            tail: VecDeque::new(),
            discarded: 0,
            made_up: VecDeque::new(),
            write: Arc::new(tokio::sync::Mutex::new(Some(write))),
            pending: Pending::default(),
            noise: None,
            _role: std::marker::PhantomData,
        }
    }

    /// Lines that cannot be JSON-RPC go to `hook` (a chatty server's
    /// stdout noise) instead of the parser.
    pub(crate) fn with_noise_hook(mut self, hook: NoiseHook) -> Self {
        self.noise = Some(hook);
        self
    }
}

impl<Role, R, W> Transport<Role> for LineTransport<Role, R, W>
where
    Role: FastParse,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<Role>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        Role::note_sent(&item, &self.pending);
        let write = self.write.clone();
        async move {
            let mut bytes = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            bytes.push(b'\n');
            let mut w = write.lock().await;
            let Some(w) = w.as_mut() else {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotConnected,
                    "Transport is closed",
                ));
            };
            w.write_all(&bytes).await?;
            w.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<Role>> {
        loop {
            if let Some(m) = self.made_up.pop_front() {
                return Some(m);
            }
            // Cancel safe: `read_until` appends to `self.line`, which is
            // cleared only once a whole line was taken, so a read dropped by
            // the service loop's `select!` resumes where it stopped.
            let buf = match self.read.fill_buf().await {
                Ok(b) => b,
                Err(e) => {
                    tracing::error!("Error reading from stream: {e}");
                    return None;
                }
            };
            if buf.is_empty() {
                return None;
            }
            let (used, complete) = match memchr(buf) {
                Some(i) => (i + 1, true),
                None => (buf.len(), false),
            };
            if self.discarding {
                // Keep only the last ID_WINDOW bytes (the id may be last).
                let part = &buf[..used];
                self.discarded += part.len();
                let keep = &part[part.len().saturating_sub(ID_WINDOW)..];
                self.tail.extend(keep);
                while self.tail.len() > ID_WINDOW {
                    self.tail.pop_front();
                }
            } else {
                self.line.extend_from_slice(&buf[..used]);
            }
            self.read.consume(used);
            if !complete {
                if !self.discarding && self.line.len() > self.max_line {
                    tracing::error!(
                        max_line_length = self.max_line,
                        "Incoming message exceeded the maximum line length, discarding it"
                    );
                    self.head = self.line[..ID_WINDOW.min(self.line.len())].to_vec();
                    self.tail = self.line[self.line.len().saturating_sub(ID_WINDOW)..]
                        .iter()
                        .copied()
                        .collect();
                    self.discarded = self.line.len();
                    self.line = Vec::with_capacity(8 * 1024);
                    self.discarding = true;
                }
                continue;
            }
            if std::mem::take(&mut self.discarding) {
                let tail: Vec<u8> = std::mem::take(&mut self.tail).into();
                let head = std::mem::take(&mut self.head);
                let why = format!(
                    "its line of {} bytes is longer than the limit of {} bytes",
                    self.discarded, self.max_line
                );
                let line = Line {
                    head: &head,
                    tail: &tail,
                    whole: None,
                };
                self.made_up
                    .extend(Role::refuse(&line, &why, &self.pending));
                continue;
            }
            if let Some(hook) = &self.noise {
                match self.line.iter().find(|b| !b.is_ascii_whitespace()) {
                    Some(b'{') | Some(b'[') => {}
                    None => {
                        self.line.clear();
                        continue;
                    }
                    Some(_) => {
                        hook(&self.line);
                        self.line.clear();
                        continue;
                    }
                }
            }
            if let Some(m) = Role::too_big(self.line.len(), &self.line, &self.pending) {
                self.line.clear();
                return Some(m);
            }
            let parsed = parse::<Role>(&self.line, &self.pending);
            match parsed {
                Parsed::Message(m) => {
                    self.line.clear();
                    Role::note_received(&m, &self.pending);
                    return Some(m);
                }
                Parsed::Skip => {}
                Parsed::Bad(why) => {
                    let n = self.line.len();
                    let line = Line {
                        head: &self.line[..ID_WINDOW.min(n)],
                        tail: &self.line[n.saturating_sub(ID_WINDOW)..],
                        whole: Some(&self.line),
                    };
                    self.made_up
                        .extend(Role::refuse(&line, &why, &self.pending));
                }
                Parsed::Invalid => {
                    // Well-formed JSON that is no MCP message: answer
                    // "Invalid Request" as rmcp does (a request left
                    // unanswered would wait for its timeout). Sent from its
                    // own task, so a cancelled `receive` cannot cut it.
                    // A request whose params do not read gets its own id
                    // back, so the peer stops waiting for it.
                    let id = serde_json::from_slice::<IdOnly>(&self.line)
                        .ok()
                        .filter(|m| m.method.is_some())
                        .and_then(|m| m.id);
                    let reply = TxJsonRpcMessage::<Role>::error(
                        rmcp::ErrorData::invalid_request("Invalid request", None),
                        id,
                    );
                    tokio::spawn(self.send(reply));
                }
            }
            self.line.clear();
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let mut w = self.write.lock().await;
        if let Some(mut w) = w.take() {
            w.shutdown().await?;
        }
        Ok(())
    }
}

fn memchr(buf: &[u8]) -> Option<usize> {
    buf.iter().position(|&b| b == b'\n')
}

/// What one received line is.
#[derive(Debug)]
enum Parsed<M> {
    /// A message.
    Message(M),
    /// Blank, or not JSON: ignored (answering garbage could start an error
    /// storm with a peer that echoes it).
    Skip,
    /// Meant as a message (it starts with `{`) but cannot be read: not
    /// UTF-8, not JSON, or nested too deep; the reason.
    Bad(String),
    /// JSON, but no MCP message.
    Invalid,
}

impl<M> Parsed<M> {
    #[cfg(test)]
    fn message(self) -> Option<M> {
        match self {
            Parsed::Message(m) => Some(m),
            _ => None,
        }
    }
}

/// One line: the direct parse when it applies, else the generic one.
fn parse<Role: FastParse>(line: &[u8], pending: &Pending) -> Parsed<RxJsonRpcMessage<Role>> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Parsed::Skip;
    }
    if let Some(m) = Role::parse_direct(line, pending) {
        return Parsed::Message(m);
    }
    match serde_json::from_slice::<RxJsonRpcMessage<Role>>(line) {
        Ok(m) => {
            if let JsonRpcMessage::Error(e) = &m
                && let Some(id) = &e.id
            {
                lock(pending).remove(id);
            }
            Parsed::Message(m)
        }
        Err(e) => match e.classify() {
            serde_json::error::Category::Data => {
                tracing::debug!("Protocol error on an incoming message: {e}");
                Parsed::Invalid
            }
            _ if line.trim_ascii_start().starts_with(b"{") => {
                tracing::debug!("An incoming message cannot be read: {e}");
                let why = match std::str::from_utf8(line) {
                    Err(u) => format!(
                        "it is not valid UTF-8 (byte {} of {})",
                        u.valid_up_to() + 1,
                        line.len()
                    ),
                    Ok(_) if e.to_string().contains("recursion limit") => {
                        "its JSON is nested deeper than 128 levels".to_string()
                    }
                    Ok(_) => format!("it is not valid JSON ({e})"),
                };
                Parsed::Bad(why)
            }
            _ => {
                tracing::debug!("Ignoring an incoming line that is not JSON: {e}");
                Parsed::Skip
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// rmcp's messages have no `PartialEq`; compare what goes on the wire.
    fn same<T: serde::Serialize>(a: &T, b: &T) {
        assert_eq!(
            serde_json::to_value(a).unwrap(),
            serde_json::to_value(b).unwrap()
        );
    }

    #[test]
    fn call_results_are_parsed_directly_and_other_lines_generically() {
        let pending = Pending::default();
        let sent: ClientJsonRpcMessage = serde_json::from_value(serde_json::json!({
            "jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "log", "arguments": {}}
        }))
        .unwrap();
        RoleClient::note_sent(&sent, &pending);
        let line = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"}],"isError":true}}"#;
        let direct = RoleClient::parse_direct(line, &pending).expect("direct");
        assert!(matches!(
            &direct,
            JsonRpcMessage::Response(JsonRpcResponse {
                result: ServerResult::CallToolResult(_),
                ..
            })
        ));
        let generic: ServerJsonRpcMessage = serde_json::from_slice(line).unwrap();
        same(&direct, &generic);
        assert!(lock(&pending).is_empty());
        // The id is spent: the same line again takes the generic parse.
        assert!(RoleClient::parse_direct(line, &pending).is_none());
        same(
            &parse::<RoleClient>(line, &pending).message(),
            &Some(generic),
        );
        // A tools/list result is never taken for a call result.
        let list = br#"{"jsonrpc":"2.0","id":8,"result":{"tools":[]}}"#;
        assert!(matches!(
            parse::<RoleClient>(list, &pending).message(),
            Some(JsonRpcMessage::Response(JsonRpcResponse {
                result: ServerResult::ListToolsResult(_),
                ..
            }))
        ));
        assert!(matches!(
            parse::<RoleClient>(b"not json\r\n", &pending),
            Parsed::Skip
        ));
        assert!(matches!(
            parse::<RoleClient>(b"  \n", &pending),
            Parsed::Skip
        ));
        assert!(matches!(
            parse::<RoleClient>(br#"{"jsonrpc":"2.0","id":1}"#, &pending),
            Parsed::Invalid
        ));
    }

    #[test]
    fn a_bad_line_fails_the_request_it_answers_or_every_one_in_flight() {
        let pending = Pending::default();
        for id in [1, 2] {
            lock(&pending).insert(RequestId::Number(id), Kind::Call);
        }
        let line = |head: &'static [u8], tail: &'static [u8]| Line {
            head,
            tail,
            whole: None,
        };
        // The id at the start (most SDKs) or at the end (TypeScript's order).
        let head = br#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"xx"#;
        assert_eq!(
            ids_of_bad_line(&line(head, br#"xx"}]}}"#), &pending),
            vec![RequestId::Number(2)]
        );
        let tail = br#"xx"}]},"jsonrpc":"2.0","id":1}"#;
        assert_eq!(
            ids_of_bad_line(&line(br#"{"result":{"content":[{"id":7,"#, tail), &pending),
            vec![RequestId::Number(1)]
        );
        // No id of ours: a response fails all, a notification none.
        let mut all = ids_of_bad_line(&line(br#"{"result":{"x":"#, br#""}}"#), &pending);
        all.sort_by_key(|id| id.to_string());
        assert_eq!(all.len(), 2);
        assert!(
            ids_of_bad_line(
                &line(
                    br#"{"jsonrpc":"2.0","method":"notifications/message","#,
                    b"}"
                ),
                &pending
            )
            .is_empty()
        );
        // A whole line's own id wins; a server request's id is not ours.
        let whole: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"t\":\"\xff\"}}";
        let l = Line {
            head: whole,
            tail: whole,
            whole: Some(whole),
        };
        assert_eq!(ids_of_bad_line(&l, &pending), vec![RequestId::Number(1)]);
        let req: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"sampling/createMessage\",\"params\":\"\xff\"}";
        let l = Line {
            head: req,
            tail: req,
            whole: Some(req),
        };
        assert!(ids_of_bad_line(&l, &pending).is_empty());
    }

    #[test]
    fn requests_are_parsed_directly_on_the_server_side() {
        let pending = Pending::default();
        let line = br#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x","arguments":{"k":1}}}"#;
        let direct = RoleServer::parse_direct(line, &pending).expect("direct");
        let generic: ClientJsonRpcMessage = serde_json::from_slice(line).unwrap();
        same(&direct, &generic);
        // Another method takes the second direct parse.
        let line = br#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}"#;
        let direct = RoleServer::parse_direct(line, &pending).expect("direct");
        let generic: ClientJsonRpcMessage = serde_json::from_slice(line).unwrap();
        same(&direct, &generic);
        // A notification and a response are not requests.
        let note = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        assert!(RoleServer::parse_direct(note, &pending).is_none());
        assert!(matches!(
            parse::<RoleServer>(note, &pending).message(),
            Some(JsonRpcMessage::Notification(_))
        ));
    }

    #[tokio::test]
    async fn lines_split_across_reads_and_oversized_lines() {
        let (client, mut server) = tokio::io::duplex(64);
        let (read, write) = tokio::io::split(client);
        let mut t = LineTransport::<RoleServer, _, _>::new(read, write, 200);
        let writer = tokio::spawn(async move {
            let big = format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"x\":\"{}\"}}}}\n",
                "a".repeat(500)
            );
            server.write_all(big.as_bytes()).await.unwrap();
            server
                .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\r\n")
                .await
                .unwrap();
            server
        });
        let m = t.receive().await.expect("a message");
        match m {
            JsonRpcMessage::Request(r) => assert_eq!(r.id, RequestId::Number(2)),
            other => panic!("{other:?}"),
        }
        drop(writer.await.unwrap());
        assert!(t.receive().await.is_none(), "end of stream");
    }

    /// Writes `input` (an invalid line, then a ping) to a transport of
    /// role `Role`; asserts the ping is received, and returns the first
    /// line the transport wrote back.
    async fn answer_to_a_bad_line<Role: FastParse>(input: &[u8]) -> serde_json::Value {
        let (client, server) = tokio::io::duplex(4096);
        let (read, write) = tokio::io::split(client);
        let mut t = LineTransport::<Role, _, _>::new(read, write, 4096);
        let (peer_read, mut peer_write) = tokio::io::split(server);
        peer_write.write_all(input).await.unwrap();
        assert!(matches!(
            t.receive().await,
            Some(JsonRpcMessage::Request(_))
        ));
        let mut reply = String::new();
        BufReader::new(peer_read)
            .read_line(&mut reply)
            .await
            .unwrap();
        serde_json::from_str(&reply).unwrap()
    }

    #[tokio::test]
    async fn json_that_is_no_message_is_answered_invalid_request() {
        let v = answer_to_a_bad_line::<RoleServer>(
            b"{\"jsonrpc\":\"2.0\",\"id\":1}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n",
        )
        .await;
        assert_eq!(v["error"]["code"], -32600, "{v}");
    }

    #[tokio::test]
    async fn a_request_whose_params_do_not_read_is_refused_under_its_own_id() {
        // A server's elicitation whose params are a string, then a ping.
        let v = answer_to_a_bad_line::<RoleClient>(
            b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"elicitation/create\",\"params\":\"x\"}\n{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\"}\n",
        )
        .await;
        assert_eq!(v["error"]["code"], -32600, "{v}");
        assert_eq!(v["id"], 7, "the server's own request id: {v}");
    }
}
