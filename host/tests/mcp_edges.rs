//! The MCP client's edges with real processes (`docs/mcp-client.md`): every
//! content block in `call` output and a block of an unknown type kept (stdio
//! and streamable HTTP), `status` listing invalid servers in place, server
//! names outside ASCII, a server that exits at start failing without
//! first-connect retries while a slow one gets its whole `connect_timeout`,
//! and a lost session left to its reconnect policy by discovery passes.
//!
//! The server is `tests/fixtures/edges_mcp_server.py` (standard library
//! only): it sends what the SDKs cannot, a content block of a type no
//! client knows.

mod common;

use common::capture_logs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use wasmgate::{ClientOptions, ConnectionState, McpClient, ReconnectPolicy};
use wasmgate::{ServerSpec, Transport};

fn server_py() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/edges_mcp_server.py")
}

fn stdio(name: &str, extra: &[&str]) -> ServerSpec {
    let script = server_py();
    let mut args = vec![script.to_str().unwrap()];
    args.extend_from_slice(extra);
    ServerSpec {
        timeout: Duration::from_secs(30),
        connect_timeout: Duration::from_secs(20),
        max_result_bytes: 1 << 20,
        ..ServerSpec::new(name, Transport::stdio("python3", &args))
    }
}

/// A child process killed when the test ends.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The fixture in `--http` mode on a free loopback port; returns it and the port.
fn http_server(dir: &Path) -> (Proc, u16) {
    let port_file = dir.join(format!("port-{}", std::process::id()));
    let _ = std::fs::remove_file(&port_file);
    let child = Command::new("python3")
        .arg(server_py())
        .args(["--http", "127.0.0.1:0", "--port-file"])
        .arg(&port_file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python3 runs the fixture server");
    let proc = Proc(child);
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(t) = std::fs::read_to_string(&port_file)
            && let Ok(p) = t.trim().parse::<u16>()
        {
            return (proc, p);
        }
        assert!(Instant::now() < until, "the fixture never listened");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn block_types(content: &[serde_json::Value]) -> Vec<String> {
    content
        .iter()
        .map(|b| b["type"].as_str().unwrap_or("?").to_string())
        .collect()
}

const MIXED_TYPES: [&str; 7] = [
    "text",
    "image",
    "audio",
    "resource_link",
    "resource",
    "resource",
    "hologram",
];

#[tokio::test]
async fn an_unknown_block_type_keeps_the_call_over_stdio_and_http() {
    let t = tempfile::tempdir().unwrap();
    let (_http, port) = http_server(t.path());
    let http = ServerSpec {
        timeout: Duration::from_secs(30),
        ..ServerSpec::new(
            "web",
            Transport::Http {
                url: format!("http://127.0.0.1:{port}/mcp"),
                headers: Default::default(),
            },
        )
    };
    let client = McpClient::new();
    let report = client
        .connect_all(&[stdio("edges", &[]), http], |_| true)
        .await;
    assert_eq!(report.connected, vec!["edges", "web"], "{report:?}");
    for tool in ["mcp_edges_mixed", "mcp_web_mixed"] {
        let r = client
            .call(tool, serde_json::json!({}))
            .await
            .unwrap_or_else(|e| panic!("{tool}: {e}"));
        assert_eq!(block_types(&r.content), MIXED_TYPES, "{tool}: {r:?}");
        assert!(!r.is_error);
        assert_eq!(r.content[6]["frames"], 3, "the unknown block as sent");
        assert_eq!(r.content[0]["text"], "first line of text");
        assert_eq!(
            r.structured_content,
            Some(serde_json::json!({"temperature": 21.5, "unit": "C"}))
        );
        // A known result still parses as before.
        let r = client
            .call(&tool.replace("mixed", "hello"), serde_json::json!({}))
            .await
            .unwrap();
        assert_eq!(r.text(), "hello");
        let r = client
            .call(&tool.replace("mixed", "error_empty"), serde_json::json!({}))
            .await
            .unwrap();
        assert!(r.is_error && r.content.is_empty(), "{r:?}");
    }
    client.shutdown().await;
}

#[tokio::test]
async fn a_server_that_exits_at_start_is_not_retried_and_a_slow_one_connects() {
    let (logs, _guard) = capture_logs();
    let mut dies = ServerSpec::new("dies", Transport::stdio("sh", &["-c", "exit 3"]));
    dies.connect_timeout = Duration::from_secs(30);
    let mut slow = stdio("slow", &["--delay", "1.5"]);
    slow.connect_timeout = Duration::from_secs(30);
    // The default policy: first-connect retries after 1, 2 and 4 s would
    // take over 7 s for `dies`; without them the pass ends once `slow` is up.
    let client = McpClient::new();
    let report = tokio::time::timeout(
        Duration::from_secs(6),
        client.connect_all(&[dies, slow], |_| true),
    )
    .await
    .expect("the pass does not wait through first-connect retries of a dead server");
    assert_eq!(report.connected, vec!["slow"], "{report:?}");
    assert_eq!(report.failed.len(), 1, "{report:?}");
    assert!(report.failed[0].1.contains("exit status: 3"), "{report:?}");
    let logs = logs.text();
    assert!(
        !logs
            .lines()
            .any(|l| l.contains("connect attempt") && l.contains("server=dies")),
        "{logs}"
    );
    client.shutdown().await;
}

fn starts(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

#[tokio::test]
async fn discovery_leaves_a_lost_session_to_its_reconnect_policy() {
    let t = tempfile::tempdir().unwrap();
    let log = t.path().join("starts.log");
    let spec = stdio(
        "flaky",
        &[
            "--start-log",
            log.to_str().unwrap(),
            "--die-after-start",
            "1",
        ],
    );
    let client = McpClient::with_options(ClientOptions {
        reconnect: ReconnectPolicy {
            attempts: 2,
            initial_delay: Duration::from_millis(50),
            max_delay: Duration::from_millis(100),
            probe_interval: Some(Duration::from_secs(300)),
            first_connect_retries: 0,
        },
        ..Default::default()
    });
    let specs = vec![spec];
    let report = client.connect_all(&specs, |_| true).await;
    assert_eq!(report.connected, vec!["flaky"]);
    assert_eq!(starts(&log), 1);
    // The session is lost; every restart of this server fails.
    let _ = client.call("mcp_flaky_die", serde_json::json!({})).await;
    let until = Instant::now() + Duration::from_secs(30);
    while starts(&log) < 3 || client.status()[0].state != ConnectionState::Failed {
        assert!(Instant::now() < until, "two reconnect tries never ran");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Both tries are spent: the next look is the probe in 300 s. Discovery
    // passes (a gateway refresh every 30 s) start no ladder of their own.
    for _ in 0..3 {
        let report = client.connect_all(&specs, |_| true).await;
        assert_eq!(report.reconnecting, vec!["flaky"], "{report:?}");
        assert!(report.failed.is_empty() && report.connected.is_empty());
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(starts(&log), 3, "no restart outside the reconnect policy");
    assert_eq!(client.status()[0].state, ConnectionState::Failed);
    // A changed spec is a new server: discovery connects it afresh.
    let mut changed = specs[0].clone();
    changed.timeout = Duration::from_secs(31);
    let report = client.connect_all(&[changed], |_| true).await;
    assert!(report.reconnecting.is_empty(), "{report:?}");
    assert_eq!(report.failed.len(), 1, "{report:?}");
    assert_eq!(starts(&log), 4);
    client.shutdown().await;
}

// ---------------------------------------------------------------------------
// The CLI as a real process
// ---------------------------------------------------------------------------

/// `wasmgate <args>` with `config` as `--config`, no plugins, a clean HOME.
fn wasmgate(dir: &Path, config: &str, args: &[&str]) -> Output {
    let cfg = dir.join("config.yaml");
    std::fs::write(&cfg, config).unwrap();
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_wasmgate"));
    cmd.args(args)
        .arg("--config")
        .arg(&cfg)
        .arg("--plugins")
        .arg(&plugins)
        .env("HOME", dir)
        .env("XDG_CONFIG_HOME", dir.join("xdg"))
        .env_remove("WASMGATE_CONFIG")
        .env_remove("WASMGATE_PLUGINS")
        .env_remove("HTTP_PROXY")
        .env_remove("HTTPS_PROXY")
        .env_remove("http_proxy")
        .env_remove("https_proxy")
        .env_remove("ALL_PROXY")
        .env_remove("all_proxy")
        .env_remove("NO_PROXY")
        .env_remove("no_proxy");
    run_bounded(cmd)
}

/// Runs `cmd` to its end, killed after 60 s (a hang fails the test).
fn run_bounded(mut cmd: Command) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if Instant::now() > until {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "wasmgate did not finish: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn py_entry(name: &str) -> String {
    format!(
        "  {name}:\n    command: python3\n    args: [\"{}\"]\n",
        server_py().display()
    )
}

#[test]
fn call_text_shows_every_block() {
    let t = tempfile::tempdir().unwrap();
    let config = format!("mcp_servers:\n{}", py_entry("edges"));
    let out = wasmgate(t.path(), &config, &["call", "mcp_edges_mixed"]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected = "first line of text
[image: image/png, 70 bytes]
[audio: audio/wav, 12 bytes]
[resource link: file:///srv/report.txt]
[resource: file:///srv/notes.md]
# Notes
all good
[resource: file:///srv/blob.bin, application/octet-stream, 6 bytes]
[content block of unknown type \"hologram\"] {\"frames\":3,\"note\":\"from the future\",\"type\":\"hologram\"}
[structured content]
{
  \"temperature\": 21.5,
  \"unit\": \"C\"
}
";
    assert_eq!(stdout, expected);

    // An isError result without content says so, and exits 1.
    let out = wasmgate(t.path(), &config, &["call", "mcp_edges_error_empty"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "[the tool reported an error and sent no content]\n"
    );

    // --json keeps every block as sent.
    let out = wasmgate(t.path(), &config, &["call", "mcp_edges_mixed", "--json"]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(block_types(v["content"].as_array().unwrap()), MIXED_TYPES);
}

#[test]
fn status_lists_invalid_servers_in_place_with_each_problem() {
    let t = tempfile::tempdir().unwrap();
    let config = format!(
        "mcp_servers:\n{}  broken:\n    timeout: soon\n    connect_timeout: -1\n{}  café:\n    command: python3\n    args: [\"{}\"]\n  caf_:\n    command: /bin/true\n",
        py_entry("first"),
        py_entry("last"),
        server_py().display()
    );
    let out = wasmgate(t.path(), &config, &["status", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let servers = v["servers"].as_array().unwrap();
    let names: Vec<&str> = servers
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["first", "broken", "last", "café", "caf_"], "{v}");
    let conn: Vec<&str> = servers
        .iter()
        .map(|s| s["connection"].as_str().unwrap())
        .collect();
    assert_eq!(
        conn,
        ["connected", "invalid", "connected", "connected", "invalid"],
        "{v}"
    );
    let problems = |i: usize| -> Vec<String> {
        servers[i]["problems"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_str().unwrap().to_string())
            .collect()
    };
    let broken = problems(1);
    assert_eq!(broken.len(), 3, "{broken:?}");
    assert!(
        broken
            .iter()
            .any(|p| p.contains("server 'broken': timeout"))
    );
    assert!(broken.iter().any(|p| p.contains("connect_timeout")));
    assert!(
        broken
            .iter()
            .any(|p| p.contains("needs exactly one of command, url or app_endpoint")),
        "{broken:?}"
    );
    assert!(problems(0).is_empty());
    let clash = problems(4);
    assert_eq!(clash.len(), 1, "{clash:?}");
    assert!(
        clash[0].contains("'mcp_caf__'") && clash[0].contains("server 'café'"),
        "{clash:?}"
    );
    // café's tools are minted with one `_` per code point.
    assert_eq!(servers[3]["tools"][0], "mcp_caf__mixed", "{v}");
    // The separate problems list stays.
    assert_eq!(v["problems"].as_array().unwrap().len(), 4, "{v}");

    // Text: the same order, each problem under its server.
    let out = wasmgate(t.path(), &config, &["status"]);
    let text = String::from_utf8(out.stdout).unwrap();
    let at = |needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("{needle:?} in\n{text}"))
    };
    assert!(at("server first (stdio)") < at("server broken: invalid"));
    assert!(at("server broken: invalid") < at("server last (stdio)"));
    assert!(at("server last (stdio)") < at("server café (stdio)"));
    assert!(at("server café (stdio)") < at("server caf_: invalid"));
    assert!(text.contains("    problem: "), "{text}");
    assert!(text.contains("tools: mcp_caf__mixed"), "{text}");
}

#[test]
fn a_server_name_outside_ascii_is_called_through_its_sanitised_tool_name() {
    let t = tempfile::tempdir().unwrap();
    let config = format!(
        "mcp_servers:\n  日本:\n    command: python3\n    args: [\"{}\"]\n",
        server_py().display()
    );
    let out = wasmgate(t.path(), &config, &["call", "mcp____hello"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "hello\n");
}
