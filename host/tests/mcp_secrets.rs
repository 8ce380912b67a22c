//! Nothing secret is printed (`docs/mcp-client.md` §4): secret env values and
//! headers are configured, servers fail in ways that echo them, and every
//! log line (debug level, rmcp's own included), every status field and every
//! error is searched for them.

use std::collections::BTreeMap;
use std::time::Duration;

use wasmgate::McpClient;
use wasmgate::{ServerSpec, Transport};

mod common;

const SECRET_ENV: &str = "zq7-env-secret-value-5501";
const SECRET_HEADER: &str = "hdr-secret-token-77aa91";
const TOKEN_SHAPED: &str = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";

fn spec(name: &str, transport: Transport) -> ServerSpec {
    ServerSpec {
        timeout: Duration::from_secs(10),
        connect_timeout: Duration::from_secs(10),
        max_result_bytes: 1 << 20,
        ..ServerSpec::new(name, transport)
    }
}

#[tokio::test]
async fn no_secret_reaches_logs_status_or_errors() {
    let (sink, _guard) = common::capture_logs();

    let mut env = BTreeMap::new();
    env.insert("API_SECRET".to_string(), SECRET_ENV.to_string());
    env.insert("GH".to_string(), TOKEN_SHAPED.to_string());
    let leaky = spec(
        "leaky",
        Transport::Stdio {
            command: "sh".into(),
            args: vec![
                "-c".into(),
                "echo \"starting with $API_SECRET\" >&2; echo \"Authorization: Bearer $API_SECRET\" >&2; \
                 echo \"token=$GH\" >&2; echo \"not json $API_SECRET\"; exit 4"
                    .into(),
            ],
            env,
            env_passthrough: vec![],
        },
    );
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut headers = BTreeMap::new();
    headers.insert(
        "Authorization".to_string(),
        format!("Bearer {SECRET_HEADER}"),
    );
    headers.insert("X-Api-Key".to_string(), SECRET_HEADER.to_string());
    let remote = spec(
        "remote",
        Transport::Http {
            url: format!("http://127.0.0.1:{port}/mcp?key={SECRET_HEADER}"),
            headers,
        },
    );

    let client = McpClient::new();
    let report = client.connect_all(&[leaky, remote], |_| true).await;
    assert_eq!(report.failed.len(), 2, "{report:?}");
    // Wait for the stderr reader to reach EOF: every line it logs comes
    // before its "stderr closed" (bounded: 300 × 20 ms).
    let mut closed = false;
    for _ in 0..300 {
        if sink
            .text()
            .lines()
            .any(|l| l.contains("stderr closed") && l.contains("server=leaky"))
        {
            closed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        closed,
        "the stderr reader of 'leaky' never ended: {}",
        sink.text()
    );

    let status = serde_json::to_string(&client.status()).unwrap();
    let report = serde_json::to_string(&report).unwrap();
    let logs = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
    assert!(
        logs.contains("starting with [REDACTED]"),
        "stderr not logged: {logs}"
    );
    for (what, text) in [("status", &status), ("report", &report), ("logs", &logs)] {
        for secret in [SECRET_ENV, SECRET_HEADER, TOKEN_SHAPED] {
            assert!(!text.contains(secret), "{secret} appears in {what}: {text}");
        }
    }
    client.shutdown().await;
}
