//! The client under test for the client scenarios of the MCP conformance
//! suite (`@modelcontextprotocol/conformance`, pinned in `tests/interop/`).
//!
//! The suite starts one scenario server per scenario and runs
//! `conformance-client <server-url>` with the scenario's name in
//! `MCP_CONFORMANCE_SCENARIO`. This binary drives wasmgate's own MCP client
//! ([`wasmgate::mcp::McpClient`], `docs/mcp-client.md` §2–3) over
//! streamable HTTP: discovery (`initialize`, `tools/list`), then the tool
//! calls the scenario asks for. It does nothing the library does not: a
//! scenario that needs a feature wasmgate lacks fails, and is listed in
//! `tests/interop/conformance-baseline.yml`.
//!
//! Exit status: 0 when every step succeeded, 1 otherwise (the reason on
//! stderr). Log lines of the library go to stderr (`RUST_LOG`, default
//! `info`).

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Duration;

use wasmgate::manifest::server::{ServerSpec, Transport};
use wasmgate::mcp::McpClient;

/// Name of the one configured server; its tools are `mcp_conformance_<tool>`.
const SERVER: &str = "conformance";

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: conformance-client <server-url> (scenario in MCP_CONFORMANCE_SCENARIO)");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    match run(&url, &scenario).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conformance-client [{scenario}]: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Connects, lists the tools, and makes the scenario's calls.
async fn run(url: &str, scenario: &str) -> Result<(), String> {
    let spec = ServerSpec {
        // The suite allows 30 s per scenario; stay well inside it.
        timeout: Duration::from_secs(10),
        connect_timeout: Duration::from_secs(10),
        ..ServerSpec::new(
            SERVER,
            Transport::Http {
                url: url.to_string(),
                headers: BTreeMap::new(),
            },
        )
    };
    let client = McpClient::new();
    let report = client.connect_all(&[spec], |_| true).await;
    let outcome = async {
        if let Some((_, e)) = report.failed.first() {
            return Err(format!("connect failed: {e}"));
        }
        let tools = client.tools();
        eprintln!(
            "connected; tools: {:?}",
            tools.iter().map(|t| &t.original_name).collect::<Vec<_>>()
        );
        for (tool, args) in calls(scenario) {
            let name = format!("mcp_{SERVER}_{tool}");
            let r = client
                .call(&name, args)
                .await
                .map_err(|e| format!("call {tool}: {e}"))?;
            eprintln!("{tool} -> is_error={} {}", r.is_error, r.text());
            if r.is_error {
                return Err(format!("{tool} returned a tool error: {}", r.text()));
            }
        }
        Ok(())
    }
    .await;
    client.shutdown().await;
    outcome
}

/// The tool calls each scenario expects after discovery, as
/// `(tool, arguments)`. Scenarios that only check the handshake and the
/// listing (`initialize`, the `auth/*` ones up to their first 401) need none.
fn calls(scenario: &str) -> Vec<(&'static str, serde_json::Value)> {
    use serde_json::json;
    match scenario {
        "tools_call" => vec![("add_numbers", json!({"a": 5, "b": 3}))],
        "sse-retry" => vec![("test_reconnection", json!({}))],
        "elicitation-sep1034-client-defaults" => {
            vec![("test_client_elicitation_defaults", json!({}))]
        }
        s if s.starts_with("auth/") => vec![("test-tool", json!({}))],
        _ => vec![],
    }
}
