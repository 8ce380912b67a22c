//! A one-shot MCP client process for the client's memory tests (`docs/security.md`, "MCP client bounds"):
//! connects one stdio server with the wasmgate library, lists its tools or
//! makes one call, and prints what happened with its own peak memory
//! (`VmHWM` of `/proc/self/status`) as one JSON line. A process of its own,
//! so the peak is this client's alone.
//!
//! `mcp-probe list -- COMMAND [ARGS…]`
//! `mcp-probe call TOOL JSON -- COMMAND [ARGS…]`
//!
//! A `COMMAND` that starts with `http://` is the URL of a streamable HTTP
//! server instead.

use std::time::Duration;

use wasmgate::McpClient;
use wasmgate::{ServerSpec, Transport};

fn vmhwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sep = args.iter().position(|a| a == "--").expect("-- COMMAND");
    let (what, server) = (&args[..sep], &args[sep + 1..]);
    let transport = if server[0].starts_with("http://") {
        Transport::Http {
            url: server[0].clone(),
            headers: Default::default(),
        }
    } else {
        Transport::stdio(server[0].clone(), &server[1..])
    };
    let spec = ServerSpec {
        timeout: Duration::from_secs(60),
        connect_timeout: Duration::from_secs(60),
        ..ServerSpec::new("h", transport)
    };
    let client = McpClient::new();
    let report = client.connect_all(&[spec], |_| true).await;
    let mut out = serde_json::json!({
        "connected": !report.connected.is_empty(),
        "connect_error": report.failed.first().map(|(_, e)| e.clone()),
        "tools": client.tools().len(),
    });
    if what.first().map(String::as_str) == Some("call") {
        let args: serde_json::Value = serde_json::from_str(&what[2]).expect("JSON arguments");
        match client.call(&format!("mcp_h_{}", what[1]), args).await {
            Ok(r) => {
                out["blocks"] = r.content.len().into();
                out["last_text"] = r
                    .content
                    .last()
                    .and_then(|b| b["text"].as_str())
                    .map(|t| t.chars().take(4000).collect::<String>())
                    .into();
                out["text"] = r.text().chars().take(100_000).collect::<String>().into();
            }
            Err(e) => out["call_error"] = e.to_string().into(),
        }
    }
    out["vmhwm_kib"] = vmhwm_kib().into();
    client.shutdown().await;
    println!("{out}");
}
