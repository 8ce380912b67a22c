//! The server binary over its real stdio: a protocol smoke test of the wire
//! format (the host's client tests exercise it through rmcp). Having an
//! integration test also makes `cargo test --workspace` build
//! `target/<profile>/git-mcp-server`, which the host's MCP tests spawn.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

#[test]
fn initialize_list_and_call_over_stdio() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_git-mcp-server"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("server starts");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut ask = |msg: serde_json::Value, expect_reply: bool| -> Option<serde_json::Value> {
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
        if !expect_reply {
            return None;
        }
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        Some(serde_json::from_str(&line).expect("a JSON-RPC line"))
    };
    let init = ask(
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "smoke", "version": "1"}}}),
        true,
    )
    .unwrap();
    assert_eq!(init["result"]["serverInfo"]["name"], "git-mcp-server");
    assert!(init["result"]["capabilities"]["tools"].is_object());
    ask(
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        false,
    );
    let list = ask(
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        true,
    )
    .unwrap();
    let mut names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, vec!["branch", "diff", "log", "show", "status"]);
    let call = ask(
        serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "status", "arguments": {"path": "/"}}}),
        true,
    )
    .unwrap();
    assert_eq!(call["result"]["isError"], true, "{call}");
    let text = call["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("is not a git repository"), "{text}");
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(
        status.success(),
        "server exits cleanly when stdin closes: {status}"
    );
}
