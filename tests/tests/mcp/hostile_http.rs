//! The byte bounds of a streamable HTTP server's answers
//! (`docs/security.md`, "MCP client bounds"), against a real hostile HTTP
//! server process on 127.0.0.1 (`src/bin/hostile-http-mcp-server.rs`) whose
//! answers never end: a `tools/list` body, a call result body, one SSE event
//! and a flood of SSE events. Each fails its request at once with an error
//! naming the server and the limit, the session and a neighbour server keep
//! working, and a one-shot client's peak memory (`src/bin/mcp-probe.rs`)
//! stays a small multiple of the limit. Every wait is bounded; nothing
//! asserts wall time.

#![cfg(target_os = "linux")]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use wasmgate::{CallError, McpClient};
use wasmgate::{ServerSpec, Transport};

/// The hostile server, killed when dropped.
struct Hostile {
    _child: wasmgate_conformance::KillOnDrop,
    port: u16,
}

fn start() -> Hostile {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hostile-http-mcp-server"))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the hostile HTTP server");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the server printed its port");
    let port = line.trim().parse().expect("a port number");
    Hostile {
        _child: wasmgate_conformance::KillOnDrop(child),
        port,
    }
}

fn http_spec(name: &str, port: u16, path: &str) -> ServerSpec {
    ServerSpec {
        // Long, so a call that waited for it would trip the shorter bound
        // each test puts around its calls.
        timeout: Duration::from_secs(300),
        connect_timeout: Duration::from_secs(60),
        max_result_bytes: 1 << 20,
        ..ServerSpec::new(
            name,
            Transport::Http {
                url: format!("http://127.0.0.1:{port}{path}"),
                headers: Default::default(),
            },
        )
    }
}

async fn bounded<T>(secs: u64, what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(secs), f)
        .await
        .unwrap_or_else(|_| panic!("{what} waited more than {secs} s"))
}

/// The stdio message limit at `max_result_bytes` 1 MiB, which HTTP shares.
const MESSAGE_LIMIT: usize = wasmgate::mcp::transport::MIN_STDIO_MESSAGE_BYTES;

#[tokio::test]
async fn endless_http_answers_fail_their_request_at_once_and_neighbours_keep_working() {
    let server = start();
    let neighbour = ServerSpec {
        timeout: Duration::from_secs(300),
        ..ServerSpec::new(
            "h",
            Transport::stdio(env!("CARGO_BIN_EXE_hostile-mcp-server"), &[] as &[&str]),
        )
    };
    let client = McpClient::new();
    let report = bounded(
        180,
        "connect",
        client.connect_all(
            &[
                http_spec("hh", server.port, "/mcp"),
                http_spec("list", server.port, "/huge-list"),
                http_spec("listsse", server.port, "/huge-list-sse"),
                neighbour,
            ],
            |_| true,
        ),
    )
    .await;
    let mut connected = report.connected.clone();
    connected.sort();
    assert_eq!(connected, vec!["h", "hh"], "{report:?}");
    for name in ["list", "listsse"] {
        let (_, e) = report
            .failed
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{name} failed: {report:?}"));
        assert!(
            e.contains("tools/list")
                && e.contains("over the limit of 4194304 bytes per page")
                && e.contains(&format!("server '{name}'")),
            "{name}: {e}"
        );
    }
    for tool in ["big_json", "endless_event", "event_flood"] {
        let r = bounded(
            120,
            tool,
            client.call(&format!("mcp_hh_{tool}"), serde_json::json!({})),
        )
        .await;
        let m = match r {
            Err(CallError::Failed { message, .. }) => message,
            other => panic!("{tool}: expected a failed call, got {other:?}"),
        };
        assert!(
            m.contains(&format!("longer than the limit of {MESSAGE_LIMIT} bytes"))
                && m.contains("server 'hh'"),
            "{tool}: {m}"
        );
        // The same session and the neighbour server still answer.
        for name in ["mcp_hh_say", "mcp_h_say"] {
            let ok = bounded(
                60,
                name,
                client.call(name, serde_json::json!({"text": "still here"})),
            )
            .await
            .unwrap_or_else(|e| panic!("{name} after {tool}: {e}"));
            assert_eq!(ok.text(), "still here", "{name} after {tool}");
        }
    }
    client.shutdown().await;
}

/// One client process (`mcp-probe`) against `path` of the hostile server.
fn probe(what: &[&str], port: u16, path: &str) -> serde_json::Value {
    let child = Command::new(env!("CARGO_BIN_EXE_mcp-probe"))
        .args(what)
        .arg("--")
        .arg(format!("http://127.0.0.1:{port}{path}"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start mcp-probe");
    // Bounded: the probe is killed after 240 s.
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        if rx.recv_timeout(Duration::from_secs(240)).is_err() {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
        }
    });
    let out = child.wait_with_output().expect("mcp-probe output");
    let _ = tx.send(());
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "probe output is not JSON ({e}): {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn peak_mib(v: &serde_json::Value) -> f64 {
    v["vmhwm_kib"].as_f64().expect("vmhwm_kib") / 1024.0
}

const MIB: f64 = 1024.0 * 1024.0;

#[test]
fn endless_http_answers_keep_the_client_s_memory_a_few_times_the_limit() {
    let server = start();
    let base = probe(&["list"], server.port, "/mcp");
    assert_eq!(base["connected"], true, "{base}");

    for path in ["/huge-list", "/huge-list-sse"] {
        let v = probe(&["list"], server.port, path);
        assert_eq!(v["connected"], false, "{v}");
        let e = v["connect_error"].as_str().unwrap_or("");
        assert!(
            e.contains("over the limit of 4194304 bytes per page"),
            "{v}"
        );
        let grew = peak_mib(&v) - peak_mib(&base);
        let limit = 16.0 * wasmgate::mcp::MAX_TOOLS_PAGE_BYTES as f64 / MIB;
        eprintln!("endless tools/list at {path}: peak grew {grew:.0} MiB (bound {limit:.0} MiB)");
        assert!(grew < limit, "{path}: peak grew {grew:.0} MiB: {v}");
    }
    // mcp-probe's max_result_bytes is the default 8 MiB: the message limit
    // is MIN_STDIO_MESSAGE_BYTES.
    for tool in ["big_json", "endless_event", "event_flood"] {
        let v = probe(&["call", tool, "{}"], server.port, "/mcp");
        let e = v["call_error"].as_str().unwrap_or("");
        assert!(
            e.contains(&format!("longer than the limit of {MESSAGE_LIMIT} bytes")),
            "{tool}: {v}"
        );
        let grew = peak_mib(&v) - peak_mib(&base);
        let limit = 4.0 * MESSAGE_LIMIT as f64 / MIB;
        eprintln!("endless {tool}: peak grew {grew:.0} MiB (bound {limit:.0} MiB)");
        assert!(grew < limit, "{tool}: peak grew {grew:.0} MiB: {v}");
    }
}
