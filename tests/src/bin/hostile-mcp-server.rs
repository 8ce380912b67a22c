//! A hostile MCP server over stdio for the client's tests (`docs/security.md`, "MCP client bounds"; the
//! MCP-client part): it speaks just enough newline-delimited JSON-RPC to
//! connect, then misbehaves in the ways a server can. Written by hand (no
//! SDK) so every byte it sends is chosen by the test.
//!
//! Flags (any combination):
//! * `--page-bytes N` — `tools/list` answers pages of about N bytes of
//!   tiny tools, each with a next cursor, forever.
//! * `--evil-names` — one more tool whose name and description carry ANSI/OSC
//!   escapes and line breaks.
//! * `--stderr-line BYTES --stderr-count N` — at start, N stderr lines of
//!   BYTES bytes each (the last one without a line break).
//! * `--exit-at-start` — exits with status 3 right after the stderr lines.
//! * `--noise TEXT` — writes TEXT to stdout, then never answers.
//! * `--helper PIDFILE` — at start, a helper process (`sleep 600`, stdio
//!   detached) in the server's process group; its pid goes to PIDFILE.
//! * `--grandchild-stdout PIDFILE` — the same, but the helper keeps the
//!   server's stdout open.
//! * `--sleep-secs N` — sleeps N seconds and exits (the helper on Windows,
//!   which has no `sleep`: this program started again).
//!
//! Tools (`tools/call`, arguments in parentheses):
//! * `say (text)` — the text back as one text block.
//! * `blocks (n)` — n empty text blocks.
//! * `big (bytes)` — one line of about `bytes` bytes (a text block).
//! * `badutf8` — a result line with invalid UTF-8 inside a string.
//! * `deep (levels)` — structuredContent nested `levels` arrays deep.
//! * `env` — the server's environment as a JSON object in a text block.
//! * `exit (answer)` — exits at once; with `answer: true` it answers first.
//! * `logs (n, text)` — n `notifications/message` with `text`, then "done".
//! * `fail (text)` — a JSON-RPC error with `text` as its message.

use std::io::{BufRead, Write};

use serde_json::{Value, json};

struct Options {
    page_bytes: Option<usize>,
    evil_names: bool,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value_of = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let opts = Options {
        page_bytes: value_of("--page-bytes").and_then(|v| v.parse().ok()),
        evil_names: args.iter().any(|a| a == "--evil-names"),
    };
    if let (Some(bytes), Some(count)) = (
        value_of("--stderr-line").and_then(|v| v.parse::<usize>().ok()),
        value_of("--stderr-count").and_then(|v| v.parse::<usize>().ok()),
    ) {
        let mut err = std::io::stderr().lock();
        let line = "e".repeat(bytes);
        for i in 0..count {
            let _ = err.write_all(line.as_bytes());
            if i + 1 < count {
                let _ = err.write_all(b"\n");
            }
        }
        let _ = err.flush();
    }
    if let Some(secs) = value_of("--sleep-secs").and_then(|v| v.parse().ok()) {
        std::thread::sleep(std::time::Duration::from_secs(secs));
        return;
    }
    if args.iter().any(|a| a == "--exit-at-start") {
        std::process::exit(3);
    }
    if let Some(noise) = value_of("--noise") {
        println!("{noise}");
        std::thread::sleep(std::time::Duration::from_secs(600));
        return;
    }
    if let Some(pidfile) = value_of("--helper") {
        spawn_helper(&pidfile, false);
    }
    if let Some(pidfile) = value_of("--grandchild-stdout") {
        spawn_helper(&pidfile, true);
    }

    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    let mut page = 0usize;
    for line in stdin.lock().lines() {
        let Ok(line) = line else { return };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let Some(id) = msg.get("id").cloned() else {
            continue; // a notification
        };
        let method = msg["method"].as_str().unwrap_or("");
        let params = &msg["params"];
        let reply = match method {
            "initialize" => json!({
                "protocolVersion": params["protocolVersion"].as_str().unwrap_or("2025-06-18"),
                "capabilities": {"tools": {}, "logging": {}},
                "serverInfo": {"name": "hostile", "version": "1.0.0"}
            }),
            "ping" => json!({}),
            "tools/list" => {
                page += 1;
                tools_page(&opts, page)
            }
            "tools/call" => {
                match call(&mut out, &id, &params["name"], &params["arguments"]) {
                    Some(r) => r,
                    None => continue, // answered (or not) by the tool itself
                }
            }
            _ => {
                send(
                    &mut out,
                    &json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no such method"}}),
                );
                continue;
            }
        };
        send(
            &mut out,
            &json!({"jsonrpc": "2.0", "id": id, "result": reply}),
        );
    }
}

fn send(out: &mut impl Write, v: &Value) {
    let mut bytes = serde_json::to_vec(v).expect("json");
    bytes.push(b'\n');
    let _ = out.write_all(&bytes);
    let _ = out.flush();
}

fn tool(name: &str, description: &str) -> Value {
    json!({"name": name, "description": description, "inputSchema": {"type": "object"}})
}

fn tools_page(opts: &Options, page: usize) -> Value {
    let mut tools = vec![
        tool("say", "Says the text back"),
        tool("blocks", "Many empty blocks"),
        tool("big", "One huge line"),
        tool("badutf8", "Invalid UTF-8"),
        tool("deep", "Deeply nested JSON"),
        tool("env", "The environment"),
        tool("exit", "Exits"),
        tool("logs", "Log notifications"),
        tool("fail", "A JSON-RPC error"),
    ];
    if opts.evil_names {
        tools.push(tool(
            "evil\u{1b}]0;owned\u{7}\u{1b}[2J\nname",
            "line one\u{1b}[31m red\nFAKE: forged line",
        ));
    }
    let Some(bytes) = opts.page_bytes else {
        return json!({"tools": tools});
    };
    if page > 1 {
        tools.clear();
    }
    // Tiny tools (the most memory per byte once parsed) up to `bytes`.
    let mut size = 0;
    let mut i = 0;
    while size < bytes {
        let t = json!({"name": format!("p{page}_{i}"), "inputSchema": {}});
        size += t.to_string().len() + 1;
        tools.push(t);
        i += 1;
    }
    json!({"tools": tools, "nextCursor": format!("page-{page}")})
}

fn text(t: &str) -> Value {
    json!({"content": [{"type": "text", "text": t}]})
}

/// A tool's answer; `None` when the tool wrote (or skipped) its own.
fn call(out: &mut impl Write, id: &Value, name: &Value, args: &Value) -> Option<Value> {
    let n = |k: &str| args[k].as_u64().unwrap_or(0) as usize;
    match name.as_str().unwrap_or("") {
        "say" => Some(text(args["text"].as_str().unwrap_or(""))),
        "blocks" => {
            let blocks = vec![json!({"type": "text", "text": ""}); n("n")];
            Some(json!({"content": blocks}))
        }
        "big" => Some(text(&"x".repeat(n("bytes")))),
        "badutf8" => {
            let mut line = format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"bad "
            )
            .into_bytes();
            line.extend_from_slice(b"\xff\xfe\xc3(");
            line.extend_from_slice(b"\"}]}}\n");
            let _ = out.write_all(&line);
            let _ = out.flush();
            None
        }
        "deep" => {
            let levels = n("levels");
            let line = format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[],\"structuredContent\":{}1{}}}}}\n",
                "[".repeat(levels),
                "]".repeat(levels)
            );
            let _ = out.write_all(line.as_bytes());
            let _ = out.flush();
            None
        }
        "env" => {
            let env: serde_json::Map<String, Value> = std::env::vars()
                .map(|(k, v)| (k, Value::String(v)))
                .collect();
            Some(text(&Value::Object(env).to_string()))
        }
        "exit" => {
            if args["answer"].as_bool() == Some(true) {
                send(
                    out,
                    &json!({"jsonrpc": "2.0", "id": id, "result": text("bye")}),
                );
            }
            std::process::exit(0);
        }
        "logs" => {
            let t = args["text"].as_str().unwrap_or("log line");
            for _ in 0..n("n") {
                send(
                    out,
                    &json!({"jsonrpc": "2.0", "method": "notifications/message",
                            "params": {"level": "warning", "data": t}}),
                );
            }
            Some(text("done"))
        }
        "fail" => {
            send(
                out,
                &json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32000,
                        "message": args["text"].as_str().unwrap_or("failed")}}),
            );
            None
        }
        _ => Some(json!({"content": [{"type": "text", "text": "unknown tool"}], "isError": true})),
    }
}

/// Starts `sleep 600` (on Windows this program with `--sleep-secs 600`; in
/// this process's group or job) and writes its pid to `pidfile`; with
/// `keep_stdout` it inherits this process's stdout.
fn spawn_helper(pidfile: &str, keep_stdout: bool) {
    let mut cmd = if cfg!(windows) {
        let mut c = std::process::Command::new(std::env::current_exe().expect("own path"));
        c.args(["--sleep-secs", "600"]);
        c
    } else {
        let mut c = std::process::Command::new("sleep");
        c.arg("600");
        c
    };
    cmd.stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    if !keep_stdout {
        cmd.stdout(std::process::Stdio::null());
    }
    let child = cmd.spawn().expect("sleep starts");
    std::fs::write(pidfile, child.id().to_string()).expect("pid file");
    // Not waited for: it outlives this process unless its group is killed.
    std::mem::forget(child);
}
