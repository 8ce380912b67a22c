//! The HTTP side of the MCP client with real server processes
//! (`docs/mcp-client.md` §1–2, `docs/declarations.md` §7):
//!
//! - the app-endpoint transport: our git MCP server in `--http` mode plays
//!   a desktop application that hosts its own MCP server; it writes its
//!   `server_json` (pid, URL, bearer token) and refuses requests without
//!   the token. The token never appears in logs, status, reports or errors;
//! - the legacy HTTP+SSE transport (the Python MCP SDK's FastMCP with
//!   `transport="sse"`) gets an error that says so and what to do;
//! - the first connect retries a transient failure with backoff (a port
//!   that starts listening late) and never retries a permanent one.

mod common;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Proc, capture_logs, git_server_bin, http_git_server, interop_python, wait_for_file};
use wasmgate::{ClientOptions, McpClient, ReconnectPolicy};
use wasmgate::{Host, HostOptions};
use wasmgate::{ServerSpec, Transport};

/// The application's token (unusual shape, so only a literal match finds it).
const APP_TOKEN: &str = "appTok-9f8e7d6c5b4a39281706";
/// A wrong token written into a second runtime file.
const WRONG_TOKEN: &str = "wrongTok-11aa22bb33cc44dd55";

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// This crate's folder (inside the repository's git work tree).
fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn app_entry(name: &str, server_json: &Path) -> String {
    let bin = git_server_bin();
    format!(
        r#"  {name}:
    app_endpoint: true
    connect_timeout: 30
    app:
      linux:
        presence: executable
        location: "{bin}"
        liveness: {{kind: server_json, path: "{sj}"}}
      darwin:
        presence: executable
        location: "{bin}"
        liveness: {{kind: server_json, path: "{sj}"}}
"#,
        bin = bin.display(),
        sj = server_json.display()
    )
}

#[cfg(unix)]
#[tokio::test]
async fn app_endpoint_connects_with_the_token_from_server_json_and_never_shows_it() {
    let (logs, _guard) = capture_logs();
    let dir = tempfile::tempdir().unwrap();
    let sj = dir.path().join("server.json");
    let _app = http_git_server("127.0.0.1:0", Some(APP_TOKEN), Some(&sj));
    wait_for_file(&sj);
    // A second runtime file for the same running application, but with a
    // token the application does not accept.
    let wrong = dir.path().join("wrong.json");
    let text = std::fs::read_to_string(&sj).unwrap();
    assert!(text.contains(APP_TOKEN));
    std::fs::write(&wrong, text.replace(APP_TOKEN, WRONG_TOKEN)).unwrap();

    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "mcp_servers:\n{}{}",
            app_entry("desk", &sj),
            app_entry("stale", &wrong)
        ),
    )
    .unwrap();
    let mut options = HostOptions::new();
    options.config = Some(config);
    let host = Host::load(options).expect("host loads");
    assert!(host.problems().is_empty(), "{:?}", host.problems());
    assert!(host.server("desk").unwrap().offerable());

    let report = host.discover().await;
    assert_eq!(report.connected, vec!["desk"], "{report:?}");
    let status = host.status();
    let desk = &status.servers[0];
    assert_eq!(desk.transport, "app_endpoint");
    assert_eq!(desk.connection, "connected");
    assert!(
        desk.tools.contains(&"mcp_desk_status".to_string()),
        "{desk:?}"
    );

    let r = host
        .call(
            "mcp_desk_status",
            serde_json::json!({"path": repo().display().to_string()}),
        )
        .await
        .expect("call over the app endpoint");
    assert!(!r.is_error, "{r:?}");
    assert!(r.text().starts_with("## "), "{}", r.text());

    // The wrong token: refused, with an error that says what to do.
    let stale = &status.servers[1];
    assert_eq!(stale.connection, "failed", "{stale:?}");
    let e = stale.last_error.as_deref().unwrap();
    assert!(
        e.contains("refused the token from its server_json") && e.contains("401"),
        "{e}"
    );

    let everything = format!(
        "{}\n{}\n{:?}\n{}\n{:?}\n{:?}",
        serde_json::to_string(&host.status()).unwrap(),
        serde_json::to_string(&report).unwrap(),
        host.status(),
        serde_json::to_string(&r).unwrap(),
        host.servers(),
        host.warnings(),
    );
    host.shutdown().await;
    let logs = logs.text();
    assert!(logs.contains("desk"), "nothing was logged: {logs}");
    for (what, text) in [("status/report", &everything), ("logs", &logs)] {
        for secret in [APP_TOKEN, WRONG_TOKEN] {
            assert!(!text.contains(secret), "{secret} appears in {what}: {text}");
        }
    }
}

#[cfg(unix)]
#[tokio::test]
async fn app_endpoint_without_a_running_application_is_not_connected() {
    // The runtime file names a process that has exited: the connect reads
    // the file afresh and says the application is not running.
    let dir = tempfile::tempdir().unwrap();
    let sj = dir.path().join("server.json");
    let mut gone = Command::new("true").spawn().unwrap();
    let pid = gone.id();
    gone.wait().unwrap();
    std::fs::write(
        &sj,
        format!(r#"{{"pid": {pid}, "http": "http://127.0.0.1:9/mcp", "token": "{APP_TOKEN}"}}"#),
    )
    .unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(&config, format!("mcp_servers:\n{}", app_entry("desk", &sj))).unwrap();
    let mut options = HostOptions::new();
    options.config = Some(config);
    let host = Host::load(options).expect("host loads");
    host.discover().await;
    let status = host.status();
    let s = &status.servers[0];
    assert_eq!(s.connection, "failed");
    let e = s.last_error.as_deref().unwrap();
    assert!(e.contains("process is not running"), "{e}");
    assert!(e.contains("start the application"), "{e}");
    let json = serde_json::to_string(&status).unwrap();
    assert!(!json.contains(APP_TOKEN), "{json}");
}

/// A legacy HTTP+SSE server: the official Python MCP SDK's FastMCP with
/// `transport="sse"`, run by the interop venv's Python (`cargo xtask
/// interop` installs the SDK there), on an ephemeral port it prints.
/// Returns the process and its port.
fn legacy_sse_server() -> (Proc, u16) {
    // Binds port 0 itself and prints the port once it listens, so no port
    // is guessed and nothing else can take it in between.
    let script = "import socket, sys, anyio, uvicorn\n\
         from mcp.server.fastmcp import FastMCP\n\
         mcp = FastMCP('legacy')\n\
         @mcp.tool()\n\
         def echo(text: str) -> str:\n    return text\n\
         sock = socket.socket(); sock.bind(('127.0.0.1', 0)); sock.listen(16)\n\
         print('PORT', sock.getsockname()[1], flush=True)\n\
         server = uvicorn.Server(uvicorn.Config(mcp.sse_app(), log_level='warning'))\n\
         anyio.run(lambda: server.serve(sockets=[sock]))\n";
    let mut child = Command::new(interop_python())
        .args(["-c", script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the interop venv's python runs the legacy SSE server");
    let stdout = child.stdout.take().expect("piped stdout");
    let stderr = child.stderr.take().expect("piped stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if let Some(p) = line.strip_prefix("PORT ") {
                let _ = tx.send(p.trim().parse::<u16>().ok());
            }
        }
    });
    let err_tail = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut std::io::BufReader::new(stderr), &mut s);
        s
    });
    let mut proc = Proc(child);
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(Some(port)) => (proc, port),
        other => {
            let _ = proc.0.kill();
            let _ = proc.0.wait();
            panic!(
                "the legacy SSE server printed no port ({other:?}); its stderr:\n{}",
                err_tail.join().unwrap_or_default()
            )
        }
    }
}

fn http_spec(name: &str, url: String) -> ServerSpec {
    let mut s = ServerSpec::new(
        name,
        Transport::Http {
            url,
            headers: Default::default(),
        },
    );
    s.connect_timeout = Duration::from_secs(20);
    s
}

#[tokio::test]
async fn legacy_sse_server_gets_a_clear_error() {
    let (_server, port) = legacy_sse_server();
    let client = McpClient::new();
    let report = client
        .connect_all(
            &[
                http_spec("legacy", format!("http://127.0.0.1:{port}/sse")),
                http_spec("posted", format!("http://127.0.0.1:{port}/messages/")),
            ],
            |_| true,
        )
        .await;
    assert_eq!(report.failed.len(), 2, "{report:?}");
    let (_, e) = &report.failed[0];
    assert!(
        e.contains("legacy HTTP+SSE transport") && e.contains("does not support"),
        "{e}"
    );
    assert!(e.contains("streamable HTTP"), "{e}");
    // The message endpoint of the same server is not an SSE stream: it gets
    // the plain HTTP error, not a wrong diagnosis.
    let (_, e) = &report.failed[1];
    assert!(!e.contains("legacy HTTP+SSE"), "{e}");
}

fn fast_retries(retries: u32) -> McpClient {
    McpClient::with_options(ClientOptions {
        reconnect: ReconnectPolicy {
            initial_delay: Duration::from_millis(200),
            max_delay: Duration::from_millis(800),
            first_connect_retries: retries,
            ..Default::default()
        },
        ..Default::default()
    })
}

#[tokio::test]
async fn first_connect_retries_until_the_port_listens() {
    let (logs, _guard) = capture_logs();
    let port = free_port();
    // The server starts listening a while after discovery begins.
    let starter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(700));
        http_git_server(&format!("127.0.0.1:{port}"), None, None)
    });
    let client = fast_retries(10);
    let report = client
        .connect_all(
            &[http_spec("late", format!("http://127.0.0.1:{port}/mcp"))],
            |_| true,
        )
        .await;
    let _server = starter.join().unwrap();
    assert_eq!(report.connected, vec!["late"], "{report:?}");
    assert!(client.tool("mcp_late_log").is_some());
    let logs = logs.text();
    assert!(
        logs.contains("connect attempt 1 failed") && logs.contains("connection refused"),
        "{logs}"
    );
    client.shutdown().await;
}

#[tokio::test]
async fn first_connect_gives_up_after_its_retries_and_never_retries_a_permanent_error() {
    let (logs, _guard) = capture_logs();
    let port = free_port();
    let client = fast_retries(2);
    let ghost = ServerSpec::new(
        "ghost",
        Transport::Stdio {
            command: "wasmgate-no-such-command-xyz".into(),
            args: vec![],
            env: Default::default(),
            env_passthrough: vec![],
        },
    );
    let report = client
        .connect_all(
            &[
                http_spec("dead", format!("http://127.0.0.1:{port}/mcp")),
                ghost,
            ],
            |_| true,
        )
        .await;
    assert_eq!(report.failed.len(), 2, "{report:?}");
    assert!(
        report.failed[0].1.contains("connection refused"),
        "{report:?}"
    );
    assert!(
        report.failed[1].1.contains("not found on PATH"),
        "{report:?}"
    );
    let logs = logs.text();
    let retries = |server: &str| {
        logs.lines()
            .filter(|l| l.contains("connect attempt") && l.contains(&format!("server={server}")))
            .count()
    };
    assert_eq!(retries("dead"), 2, "{logs}");
    assert_eq!(retries("ghost"), 0, "{logs}");
}
