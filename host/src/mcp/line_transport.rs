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
//! message per line, a trailing `\r` and a UTF-8 BOM are ignored, a line over
//! the length limit is discarded, a line that is not JSON is ignored, and
//! JSON that is no MCP message is answered with "Invalid Request".

use std::collections::HashSet;
use std::future::Future;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequest, CallToolResult, ClientJsonRpcMessage, ClientRequest, JsonRpcMessage,
    JsonRpcRequest, JsonRpcResponse, RequestId, ServerJsonRpcMessage, ServerResult,
};
use rmcp::service::{RoleClient, RoleServer, RxJsonRpcMessage, ServiceRole, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// Ids of sent `tools/call` requests still waiting for their response.
type Pending = Arc<Mutex<HashSet<RequestId>>>;

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
}

fn lock(p: &Pending) -> std::sync::MutexGuard<'_, HashSet<RequestId>> {
    p.lock().unwrap_or_else(|e| e.into_inner())
}

impl FastParse for RoleClient {
    fn note_sent(message: &ClientJsonRpcMessage, pending: &Pending) {
        if let JsonRpcMessage::Request(r) = message
            && matches!(r.request, ClientRequest::CallToolRequest(_))
        {
            let mut p = lock(pending);
            if p.len() >= MAX_PENDING {
                p.clear();
            }
            p.insert(r.id.clone());
        }
    }

    fn parse_direct(line: &[u8], pending: &Pending) -> Option<ServerJsonRpcMessage> {
        if lock(pending).is_empty() {
            return None;
        }
        let r: JsonRpcResponse<CallToolResult> = serde_json::from_slice(line).ok()?;
        if !lock(pending).remove(&r.id) {
            // A response, but not to a tools/call we sent: parse it as what
            // it is.
            return None;
        }
        Some(JsonRpcMessage::Response(JsonRpcResponse {
            jsonrpc: r.jsonrpc,
            id: r.id,
            result: ServerResult::CallToolResult(r.result),
        }))
    }
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
pub(crate) struct LineTransport<Role, R, W> {
    read: BufReader<R>,
    line: Vec<u8>,
    max_line: usize,
    discarding: bool,
    write: Arc<tokio::sync::Mutex<Option<W>>>,
    pending: Pending,
    noise: Option<NoiseHook>,
    _role: std::marker::PhantomData<Role>,
}

impl<Role, R, W> LineTransport<Role, R, W>
where
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
            if !self.discarding {
                self.line.extend_from_slice(&buf[..used]);
            }
            self.read.consume(used);
            if !complete {
                if self.line.len() > self.max_line {
                    tracing::error!(
                        max_line_length = self.max_line,
                        "Incoming message exceeded the maximum line length, discarding it"
                    );
                    self.line.clear();
                    self.discarding = true;
                }
                continue;
            }
            if std::mem::take(&mut self.discarding) {
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
            let parsed = parse::<Role>(&self.line, &self.pending);
            self.line.clear();
            match parsed {
                Parsed::Message(m) => return Some(m),
                Parsed::Skip => {}
                Parsed::Invalid => {
                    // Well-formed JSON that is no MCP message: answer
                    // "Invalid Request" as rmcp does (a request left
                    // unanswered would wait for its timeout). Sent from its
                    // own task, so a cancelled `receive` cannot cut it.
                    let reply = TxJsonRpcMessage::<Role>::error(
                        rmcp::ErrorData::invalid_request("Invalid request", None),
                        None,
                    );
                    tokio::spawn(self.send(reply));
                }
            }
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

    #[tokio::test]
    async fn json_that_is_no_message_is_answered_invalid_request() {
        let (client, server) = tokio::io::duplex(4096);
        let (read, write) = tokio::io::split(client);
        let mut t = LineTransport::<RoleServer, _, _>::new(read, write, 4096);
        let (peer_read, mut peer_write) = tokio::io::split(server);
        peer_write
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n")
            .await
            .unwrap();
        assert!(matches!(
            t.receive().await,
            Some(JsonRpcMessage::Request(_))
        ));
        let mut reply = String::new();
        BufReader::new(peer_read)
            .read_line(&mut reply)
            .await
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(&reply).unwrap();
        assert_eq!(v["error"]["code"], -32600, "{reply}");
    }
}
