//! A hostile MCP server over streamable HTTP for the client's bounds tests
//! (`tests/tests/mcp/hostile_http.rs`, `docs/security.md` "MCP client
//! bounds"). Plain HTTP/1.1 on `127.0.0.1`, written by hand (no SDK) so every
//! byte it sends is chosen by the test; it prints its port as the first
//! line of stdout and serves until it is killed.
//!
//! The URL path chooses how `tools/list` is answered:
//! * `/mcp` — four tools (below), one JSON body.
//! * `/huge-list` — a JSON body of tiny tools that never ends.
//! * `/huge-list-sse` — one SSE event of tiny tools that never ends.
//!
//! Tools (`tools/call`):
//! * `say (text)` — the text back as one text block.
//! * `big_json` — a JSON result body whose text never ends.
//! * `endless_event` — an SSE response whose one event never ends.
//! * `event_flood` — an SSE response of 64 KiB log notifications, forever.
//!
//! Every endless answer is written until the client hangs up. `GET` (the
//! standalone stream) is answered 405, `DELETE` 200; a request without an
//! id (a notification) 202; any other method a JSON-RPC -32601 error.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};

use serde_json::{Value, json};

/// Largest request head or body read.
const MAX_REQUEST_BYTES: usize = 16 << 20;

fn main() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let port = listener.local_addr().expect("local address").port();
    println!("{port}");
    let _ = std::io::stdout().flush();
    for stream in listener.incoming().flatten() {
        std::thread::spawn(move || {
            let _ = serve(stream);
        });
    }
}

struct Request {
    method: String,
    path: String,
    body: Vec<u8>,
}

fn read_request(r: &mut BufReader<TcpStream>) -> std::io::Result<Option<Request>> {
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    let mut length = 0usize;
    let mut head = line.len();
    loop {
        let mut h = String::new();
        if r.read_line(&mut h)? == 0 {
            return Ok(None);
        }
        head += h.len();
        if head > MAX_REQUEST_BYTES {
            return Ok(None);
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((name, value)) = h.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length.min(MAX_REQUEST_BYTES)];
    r.read_exact(&mut body)?;
    Ok(Some(Request { method, path, body }))
}

fn serve(stream: TcpStream) -> std::io::Result<()> {
    let mut w = stream.try_clone()?;
    let mut r = BufReader::new(stream);
    while let Some(req) = read_request(&mut r)? {
        match req.method.as_str() {
            "POST" => {
                if !post(&mut w, &req)? {
                    return Ok(());
                }
            }
            "DELETE" => reply(&mut w, "200 OK", "text/plain", b"")?,
            _ => reply(&mut w, "405 Method Not Allowed", "text/plain", b"")?,
        }
    }
    Ok(())
}

fn reply(w: &mut TcpStream, status: &str, content_type: &str, body: &[u8]) -> std::io::Result<()> {
    write!(
        w,
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nMcp-Session-Id: hostile-1\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )?;
    w.write_all(body)?;
    w.flush()
}

/// The head of an answer whose body ends only when the connection does.
fn endless_head(w: &mut TcpStream, content_type: &str) -> std::io::Result<()> {
    write!(
        w,
        "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nMcp-Session-Id: hostile-1\r\nConnection: close\r\n\r\n"
    )
}

/// Writes `chunk` until the client hangs up (a write fails).
fn forever(w: &mut TcpStream, chunk: &[u8]) -> std::io::Result<()> {
    loop {
        w.write_all(chunk)?;
    }
}

fn tiny_tools(n: usize) -> String {
    (0..n)
        .map(|i| format!(r#"{{"name":"t{i}","inputSchema":{{"type":"object"}}}},"#))
        .collect()
}

/// Answers one POST; `false` when the connection is used up.
fn post(w: &mut TcpStream, req: &Request) -> std::io::Result<bool> {
    let Ok(msg) = serde_json::from_slice::<Value>(&req.body) else {
        reply(w, "400 Bad Request", "text/plain", b"not JSON")?;
        return Ok(true);
    };
    let Some(id) = msg.get("id").cloned() else {
        reply(w, "202 Accepted", "text/plain", b"")?;
        return Ok(true);
    };
    let answer = |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result});
    let method = msg["method"].as_str().unwrap_or_default();
    let params = &msg["params"];
    let result = match method {
        "initialize" => answer(json!({
            "protocolVersion": params["protocolVersion"].as_str().unwrap_or("2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile-http", "version": "0"},
        })),
        "ping" => answer(json!({})),
        "tools/list" => match req.path.as_str() {
            "/huge-list" => {
                endless_head(w, "application/json")?;
                write!(w, r#"{{"jsonrpc":"2.0","id":{id},"result":{{"tools":["#)?;
                forever(w, tiny_tools(1000).as_bytes())?;
                return Ok(false);
            }
            "/huge-list-sse" => {
                endless_head(w, "text/event-stream")?;
                write!(
                    w,
                    r#"data: {{"jsonrpc":"2.0","id":{id},"result":{{"tools":["#
                )?;
                forever(w, tiny_tools(1000).as_bytes())?;
                return Ok(false);
            }
            _ => {
                let text = json!({"type": "object", "properties": {"text": {"type": "string"}}});
                let empty = json!({"type": "object"});
                answer(json!({"tools": [
                    {"name": "say", "inputSchema": text},
                    {"name": "big_json", "inputSchema": empty},
                    {"name": "endless_event", "inputSchema": empty},
                    {"name": "event_flood", "inputSchema": empty},
                ]}))
            }
        },
        "tools/call" => match params["name"].as_str().unwrap_or_default() {
            "say" => answer(json!({"content": [
                {"type": "text", "text": params["arguments"]["text"].as_str().unwrap_or_default()}
            ]})),
            "big_json" => {
                endless_head(w, "application/json")?;
                write!(
                    w,
                    r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":""#
                )?;
                forever(w, &[b'x'; 64 * 1024])?;
                return Ok(false);
            }
            "endless_event" => {
                endless_head(w, "text/event-stream")?;
                write!(
                    w,
                    r#"data: {{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":""#
                )?;
                forever(w, &[b'x'; 64 * 1024])?;
                return Ok(false);
            }
            "event_flood" => {
                endless_head(w, "text/event-stream")?;
                let event = format!(
                    "data: {}\n\n",
                    json!({"jsonrpc": "2.0", "method": "notifications/message",
                           "params": {"level": "info", "data": "y".repeat(64 * 1024)}})
                );
                forever(w, event.as_bytes())?;
                return Ok(false);
            }
            other => json!({"jsonrpc": "2.0", "id": id,
                            "error": {"code": -32602, "message": format!("no tool {other}")}}),
        },
        other => json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": -32601, "message": format!("no method {other}")}}),
    };
    reply(
        w,
        "200 OK",
        "application/json",
        result.to_string().as_bytes(),
    )?;
    Ok(true)
}
