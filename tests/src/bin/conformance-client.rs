//! The client under test for the client scenarios of the MCP conformance
//! suite (`@modelcontextprotocol/conformance`, pinned in `tests/interop/`).
//!
//! The suite starts one scenario server per scenario and runs
//! `conformance-client <server-url>` with the scenario's name in
//! `MCP_CONFORMANCE_SCENARIO`. This binary drives wasmgate's own MCP client
//! ([`wasmgate::McpClient`], `docs/mcp-client.md` §2–3) over
//! streamable HTTP: discovery (`initialize`, `tools/list`), then the tool
//! calls the scenario asks for. It does nothing the library does not: a
//! scenario that needs a feature wasmgate lacks fails, and is listed in
//! `tests/interop/conformance-baseline.yml`.
//!
//! An `auth/*` scenario runs the OAuth code of `wasmgate::mcp::oauth`
//! (docs/mcp-client.md §9): the server entry gets `auth: oauth` with the
//! scenario's pre-registered client from `MCP_CONFORMANCE_CONTEXT` (when
//! it gives one) and this client's Client ID Metadata Document URL; the
//! first connect finds no login, [`wasmgate::mcp::oauth::login::login`]
//! runs with a browser stand-in that follows the authorization server's
//! redirect to the loopback listener, and the second connect uses the
//! stored tokens (in a temporary token folder).
//!
//! Exit status: 0 when every step succeeded, 1 otherwise (the reason on
//! stderr). Log lines of the library go to stderr (`RUST_LOG`, default
//! `info`).

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Duration;

use wasmgate::McpClient;
use wasmgate::mcp::oauth;
use wasmgate::{EnterpriseIdp, JwtAlgorithm, OAuthConfig};
use wasmgate::{ServerSpec, Transport};

/// Name of the one configured server; its tools are `mcp_conformance_<tool>`.
const SERVER: &str = "conformance";

/// The Client ID Metadata Document URL the suite's `auth/basic-cimd`
/// authorization server expects.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

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
    let mut spec = spec;
    // Kept until the end: the token folder of this run.
    let mut _tokens = None;
    if scenario.starts_with("auth/") {
        let dir = tempdir()?;
        oauth::set_token_dir(dir.clone());
        _tokens = Some(TempDir(dir));
        spec.oauth = Some(Box::new(oauth_config(scenario)));
    }
    let mut client = McpClient::new();
    let mut report = client
        .connect_all(std::slice::from_ref(&spec), |_| true)
        .await;
    if let (Some(cfg), Some((_, e))) = (&spec.oauth, report.failed.first())
        && e.contains(oauth::AUTH_REQUIRED)
    {
        eprintln!("first connect: {e}; logging in");
        client.shutdown().await;
        log_in(url, cfg)
            .await
            .map_err(|e| format!("login failed: {e}"))?;
        client = McpClient::new();
        report = client
            .connect_all(std::slice::from_ref(&spec), |_| true)
            .await;
    }
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
            // The registered name (a `-` in the server's name is mapped).
            let name = tools
                .iter()
                .find(|t| t.original_name == tool)
                .map(|t| t.name.clone())
                .unwrap_or_else(|| format!("mcp_{SERVER}_{tool}"));
            let mut r = client.call(&name, args.clone()).await;
            // Scope step-up: a call refused for its scope logs in again
            // (asking for the scope the server named) and is tried once more.
            if let (Err(e), Some(cfg)) = (&r, &spec.oauth)
                && e.to_string().contains(oauth::AUTH_REQUIRED)
            {
                eprintln!("call {tool}: {e}; logging in again");
                log_in(url, cfg)
                    .await
                    .map_err(|e| format!("step-up login failed: {e}"))?;
                client.shutdown().await;
                client = McpClient::new();
                let again = client
                    .connect_all(std::slice::from_ref(&spec), |_| true)
                    .await;
                if let Some((_, e)) = again.failed.first() {
                    return Err(format!("reconnect after the step-up failed: {e}"));
                }
                r = client.call(&name, args).await;
            }
            let r = r.map_err(|e| format!("call {tool}: {e}"))?;
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

/// `wasmgate login` of the scenario's server with the browser stand-in
/// that follows the authorization server's redirect.
async fn log_in(url: &str, cfg: &OAuthConfig) -> Result<(), String> {
    oauth::login::login(
        SERVER,
        url,
        cfg,
        oauth::login::following_browser(),
        Duration::from_secs(20),
    )
    .await
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

/// The `auth: oauth` settings of an `auth/*` scenario: the pre-registered
/// client the suite hands over in `MCP_CONFORMANCE_CONTEXT`, if any, and
/// the CIMD URL; the client-credentials scenarios use that grant.
fn oauth_config(scenario: &str) -> OAuthConfig {
    let ctx: serde_json::Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or_default();
    let text = |k: &str| ctx[k].as_str().map(str::to_string);
    OAuthConfig {
        client_id: text("client_id"),
        client_secret: text("client_secret"),
        client_metadata_url: Some(CLIENT_METADATA_URL.to_string()),
        client_credentials: scenario.starts_with("auth/client-credentials"),
        // auth/client-credentials-jwt: a private_key_jwt client.
        private_key: text("private_key_pem"),
        signing_algorithm: text("signing_algorithm")
            .and_then(|a| JwtAlgorithm::from_name(&a))
            .unwrap_or_default(),
        // auth/cross-app-access-complete-flow: enterprise-managed, the
        // suite's identity provider and the user's ID token from it.
        enterprise: match (
            text("idp_issuer"),
            text("idp_token_endpoint"),
            text("idp_client_id"),
            text("idp_id_token"),
        ) {
            (Some(issuer), Some(token_endpoint), Some(client_id), Some(id_token)) => {
                Some(EnterpriseIdp {
                    issuer,
                    token_endpoint,
                    client_id,
                    client_secret: None,
                    id_token,
                })
            }
            _ => None,
        },
        ..OAuthConfig::default()
    }
}

/// A fresh private folder under the system temp dir.
fn tempdir() -> Result<std::path::PathBuf, String> {
    let d = std::env::temp_dir().join(format!(
        "wasmgate-conformance-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    ));
    std::fs::create_dir_all(&d).map_err(|e| format!("{}: {e}", d.display()))?;
    Ok(d)
}

/// Removes its folder when dropped.
struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
