//! The MCP client against our real git MCP server (`example-plugins/git-mcp-server`),
//! spawned as a real child process: discovery, naming, calls, gating,
//! collisions, reconnect and shutdown (`docs/mcp-client.md` §2, §3, §6);
//! and an embedder's own `AppEndpointSource` dialling it over HTTP (kept out
//! of `mcp_http_transports`, whose log-capturing test must run beside no
//! other connect to a server of the same name).

use crate::common::{git, git_repo, git_server_bin};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use wasmgate::naming;
use wasmgate::{ClientOptions, ConnectionState, McpClient, ReconnectPolicy};
use wasmgate::{ServerSpec, ToolFilter, Transport};

fn spec(name: &str, command: &str, args: &[&str]) -> ServerSpec {
    ServerSpec {
        plugin: Some("git".to_string()),
        timeout: Duration::from_secs(30),
        connect_timeout: Duration::from_secs(30),
        ..ServerSpec::new(name, Transport::stdio(command, args))
    }
}

fn git_spec(name: &str) -> ServerSpec {
    spec(name, git_server_bin().to_str().unwrap(), &[])
}

/// A temp repository with two commits and one uncommitted file.
fn temp_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    git_repo(dir.path(), &[]);
    std::fs::write(dir.path().join("a.txt"), "one\n").unwrap();
    git(dir.path(), &["add", "a.txt"]);
    git(dir.path(), &["commit", "-q", "-m", "first commit"]);
    std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
    git(dir.path(), &["commit", "-q", "-am", "second commit"]);
    std::fs::write(dir.path().join("new.txt"), "x\n").unwrap();
    dir
}

fn alive(pid: u32) -> bool {
    // A zombie still has /proc/<pid>; read its state.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s
            .split(") ")
            .nth(1)
            .is_some_and(|rest| rest.starts_with('Z')),
        Err(_) => false,
    }
}

async fn wait_until(mut f: impl FnMut() -> bool, what: &str) {
    for _ in 0..300 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("gave up waiting for: {what}");
}

#[tokio::test]
async fn git_server_tools_are_listed_and_called_on_a_real_repo() {
    let repo = temp_repo();
    let client = McpClient::new();
    let report = client.connect_all(&[git_spec("git")], |_| true).await;
    assert_eq!(report.connected, vec!["git"], "{report:?}");
    assert!(report.failed.is_empty());

    let names: Vec<String> = client.tools().into_iter().map(|t| t.name).collect();
    for want in [
        "mcp_git_status",
        "mcp_git_log",
        "mcp_git_branch",
        "mcp_git_show",
        "mcp_git_diff",
    ] {
        assert!(
            names.contains(&want.to_string()),
            "{want} missing from {names:?}"
        );
    }
    let log = client.tool("mcp_git_log").unwrap();
    assert_eq!(log.original_name, "log");
    assert_eq!(log.server, "git");
    assert_eq!(log.read_only, Some(true));
    assert!(
        log.input_schema["properties"]["max_count"].is_object(),
        "{}",
        log.input_schema
    );

    let path = repo.path().to_str().unwrap();
    let r = client
        .call(
            "mcp_git_log",
            serde_json::json!({"path": path, "max_count": 1}),
        )
        .await
        .unwrap();
    assert!(!r.is_error);
    assert!(r.text().contains("second commit"), "{}", r.text());
    assert!(
        !r.text().contains("first commit"),
        "max_count ignored: {}",
        r.text()
    );
    let commits = &r.structured_content.as_ref().unwrap()["commits"];
    assert_eq!(commits.as_array().unwrap().len(), 1);
    assert_eq!(commits[0]["author"], "Test Author");

    let r = client
        .call("mcp_git_status", serde_json::json!({"path": path}))
        .await
        .unwrap();
    assert!(r.text().contains("## main"), "{}", r.text());
    assert!(r.text().contains("?? new.txt"), "{}", r.text());

    let r = client
        .call(
            "mcp_git_show",
            serde_json::json!({"path": path, "revision": "HEAD~1"}),
        )
        .await
        .unwrap();
    assert!(r.text().contains("first commit"), "{}", r.text());

    // A folder that is not a repository: a tool error, not a protocol error.
    let plain = tempfile::tempdir().unwrap();
    let r = client
        .call(
            "mcp_git_status",
            serde_json::json!({"path": plain.path().to_str().unwrap()}),
        )
        .await
        .unwrap();
    assert!(r.is_error);
    assert!(r.text().contains("is not a git repository"), "{}", r.text());

    // Option injection is refused.
    let r = client
        .call(
            "mcp_git_show",
            serde_json::json!({"path": path, "revision": "--output=/tmp/x"}),
        )
        .await
        .unwrap();
    assert!(r.is_error, "{}", r.text());

    // Bad arguments and unknown tools are caller errors.
    assert!(
        client
            .call("mcp_git_log", serde_json::json!([1]))
            .await
            .is_err()
    );
    let e = client
        .call("mcp_git_nope", serde_json::Value::Null)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("mcp_git_nope"));

    let status = client.status();
    assert_eq!(status.len(), 1);
    assert_eq!(status[0].state, ConnectionState::Connected);
    assert_eq!(status[0].tool_count, 5);
    assert_eq!(status[0].transport, "stdio");
    assert!(
        status[0]
            .server_info
            .as_deref()
            .unwrap()
            .starts_with("git-mcp-server")
    );
    let pid = status[0].pid.expect("stdio child pid");
    assert!(alive(pid));

    client.shutdown().await;
    assert!(client.tools().is_empty());
    wait_until(
        || !alive(pid),
        "the git server process to end after shutdown",
    )
    .await;
}

#[tokio::test]
async fn discovery_is_idempotent_and_filters_apply() {
    let client = McpClient::new();
    let mut s = git_spec("git");
    s.tools = ToolFilter {
        include: None,
        exclude: vec!["d*".into(), "show".into()],
    };
    client.connect_all(std::slice::from_ref(&s), |_| true).await;
    let pid = client.status()[0].pid.unwrap();
    let mut names: Vec<String> = client.tools().into_iter().map(|t| t.name).collect();
    names.sort();
    assert_eq!(
        names,
        vec!["mcp_git_branch", "mcp_git_log", "mcp_git_status"]
    );

    // Again: nothing new is spawned.
    let report = client.connect_all(std::slice::from_ref(&s), |_| true).await;
    assert_eq!(report.already_connected, vec!["git"]);
    assert!(report.connected.is_empty());
    assert_eq!(client.status()[0].pid, Some(pid));

    // include wins; include: [] offers none.
    s.tools = ToolFilter {
        include: Some(vec![]),
        exclude: vec![],
    };
    client.connect_all(std::slice::from_ref(&s), |_| true).await;
    assert!(client.tools().is_empty());
    assert_eq!(client.status()[0].state, ConnectionState::Connected);
    client.shutdown().await;
}

#[tokio::test]
async fn not_offerable_and_disabled_servers_are_never_spawned() {
    let marker_dir = tempfile::tempdir().unwrap();
    let gated_marker = marker_dir.path().join("gated");
    let disabled_marker = marker_dir.path().join("disabled");
    let script = |m: &Path| format!("touch '{}'; exec sleep 30", m.display());
    let gated = spec("blender", "sh", &["-c", &script(&gated_marker)]);
    let mut disabled = spec("off", "sh", &["-c", &script(&disabled_marker)]);
    disabled.enabled = false;

    let client = McpClient::new();
    let report = client
        .connect_all(&[git_spec("git"), gated, disabled], |s| s.name != "blender")
        .await;
    assert_eq!(report.gated, vec!["blender"]);
    assert_eq!(report.disabled, vec!["off"]);
    assert_eq!(report.connected, vec!["git"]);
    let states: Vec<(String, ConnectionState)> = client
        .status()
        .into_iter()
        .map(|s| (s.name, s.state))
        .collect();
    assert_eq!(
        states,
        vec![
            ("git".into(), ConnectionState::Connected),
            ("blender".into(), ConnectionState::Gated),
            ("off".into(), ConnectionState::Disabled),
        ]
    );
    assert!(!gated_marker.exists(), "a gated server was spawned");
    assert!(!disabled_marker.exists(), "a disabled server was spawned");
    assert!(client.tools().iter().all(|t| t.server == "git"));

    // The gate closes on a connected server: its session ends, its tools go.
    let pid = client.status()[0].pid.unwrap();
    client.connect_all(&[git_spec("git")], |_| false).await;
    assert_eq!(client.status()[0].state, ConnectionState::Gated);
    assert!(client.tools().is_empty());
    wait_until(|| !alive(pid), "the gated server's process to end").await;
    client.shutdown().await;
}

/// The git server started in `dir`, so a tool called without `path`
/// answers about that repository.
fn git_spec_in(name: &str, dir: &Path) -> ServerSpec {
    let bin = git_server_bin();
    spec(
        name,
        "sh",
        &[
            "-c",
            "cd \"$1\" && exec \"$2\"",
            "sh",
            dir.to_str().unwrap(),
            bin.to_str().unwrap(),
        ],
    )
}

#[tokio::test]
async fn colliding_names_keep_the_first_configured_server() {
    // "git-x" and "git_x" both want mcp_git_x_status. Each runs in its own
    // repository (branches `first` and `second`), so a call shows which
    // server answered.
    let (a, b) = (temp_repo(), temp_repo());
    git(a.path(), &["checkout", "-q", "-b", "first"]);
    git(b.path(), &["checkout", "-q", "-b", "second"]);
    let client = McpClient::new();
    client
        .connect_all(
            &[
                git_spec_in("git-x", a.path()),
                git_spec_in("git_x", b.path()),
            ],
            |_| true,
        )
        .await;
    let first = client
        .tool("mcp_git_x_status")
        .expect("plain name registered");
    assert_eq!(first.server, "git-x");
    let hashed = naming::hashed_name("git_x", "status");
    let second = client.tool(&hashed).expect("hashed name registered");
    assert_eq!(second.server, "git_x");
    assert_eq!(second.original_name, "status");
    assert_eq!(client.tools().len(), 10);

    let status = client.status();
    assert!(status[0].collisions.is_empty());
    assert_eq!(status[1].collisions.len(), 5);
    assert_eq!(status[1].collisions[0].kept_by, "git-x");

    // The hashed tool really dispatches to its own server, the plain one
    // to the first.
    let r = client.call(&hashed, serde_json::json!({})).await.unwrap();
    assert!(!r.is_error, "{}", r.text());
    assert!(r.text().contains("## second"), "{}", r.text());
    let r = client
        .call("mcp_git_x_status", serde_json::json!({}))
        .await
        .unwrap();
    assert!(!r.is_error, "{}", r.text());
    assert!(r.text().contains("## first"), "{}", r.text());
    client.shutdown().await;
}

/// The git server behind a wrapper that refuses to start (exit 1) while
/// `block` exists.
fn blockable_git_spec(name: &str, block: &Path) -> ServerSpec {
    let bin = git_server_bin();
    spec(
        name,
        "sh",
        &[
            "-c",
            "if [ -e \"$1\" ]; then echo blocked >&2; exit 1; fi; exec \"$2\"",
            "sh",
            block.to_str().unwrap(),
            bin.to_str().unwrap(),
        ],
    )
}

#[tokio::test]
async fn a_killed_server_is_failed_then_reconnected() {
    let repo = temp_repo();
    let tmp = tempfile::tempdir().unwrap();
    let block = tmp.path().join("block");
    let client = McpClient::with_options(ClientOptions {
        reconnect: ReconnectPolicy {
            attempts: 3,
            initial_delay: Duration::from_millis(20),
            max_delay: Duration::from_millis(100),
            // After the tries, probes keep reconnecting once unblocked.
            probe_interval: Some(Duration::from_millis(100)),
            first_connect_retries: 0,
        },
        ..Default::default()
    });
    let report = client
        .connect_all(&[blockable_git_spec("git", &block)], |_| true)
        .await;
    assert_eq!(report.connected, vec!["git"], "{report:?}");
    let pid = client.status()[0].pid.unwrap();

    // While the server cannot start again, the lost session is `failed`,
    // its tools are hidden, and the error says a reconnect was refused.
    std::fs::write(&block, "").unwrap();
    let killed = Command::new("kill")
        .arg("-9")
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(killed.success());
    wait_until(
        || {
            let s = &client.status()[0];
            s.state == ConnectionState::Failed
                && s.last_error
                    .as_deref()
                    .is_some_and(|e| e.contains("failed to connect") && e.contains("blocked"))
        },
        "the killed server to be failed with a refused reconnect",
    )
    .await;
    assert!(
        client.tools().is_empty(),
        "a failed server's tools are offered"
    );
    assert_eq!(client.status()[0].tool_count, 0);

    std::fs::remove_file(&block).unwrap();
    wait_until(
        || {
            let s = &client.status()[0];
            s.state == ConnectionState::Connected && s.pid.is_some_and(|p| p != pid)
        },
        "the server to reconnect with a new process",
    )
    .await;
    assert_eq!(client.tools().len(), 5);
    let r = client
        .call(
            "mcp_git_branch",
            serde_json::json!({"path": repo.path().to_str().unwrap()}),
        )
        .await
        .unwrap();
    assert!(!r.is_error, "{}", r.text());
    assert!(r.text().contains("main"), "{}", r.text());
    client.shutdown().await;
}

#[tokio::test]
async fn dropping_the_client_ends_its_servers() {
    let client = McpClient::new();
    client.connect_all(&[git_spec("git")], |_| true).await;
    let pid = client.status()[0].pid.unwrap();
    assert!(alive(pid));
    drop(client);
    wait_until(
        || !alive(pid),
        "the server to end when the client is dropped",
    )
    .await;
}

/// The token of the application the embedder's source points at.
const SKETCH_TOKEN: &str = "sketchTok-5e4d3c2b1a0f";

/// An embedder's own [`wasmgate::AppEndpointSource`] on a bare client: it
/// is asked before each connect attempt with the server's declaration, its
/// endpoint and token are dialled, and its reason for having none is the
/// server's connect error.
#[cfg(unix)]
#[tokio::test]
async fn an_embedders_own_app_endpoint_source_is_asked_before_each_connect() {
    use crate::common::{http_git_server, wait_for_file};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use wasmgate::{AppEndpointSource, Declaration, Endpoint, Token};

    /// Answers with `endpoint` (or `why` when it has none), counting asks.
    struct Fixed {
        endpoint: Option<Endpoint>,
        why: &'static str,
        asked: AtomicUsize,
    }
    impl AppEndpointSource for Fixed {
        fn endpoint(&self, declaration: Option<&Declaration>) -> Result<Endpoint, String> {
            assert!(declaration.is_none(), "this spec has no declaration");
            self.asked.fetch_add(1, Ordering::SeqCst);
            self.endpoint.clone().ok_or_else(|| self.why.to_string())
        }
    }

    let dir = tempfile::tempdir().unwrap();
    let sj = dir.path().join("server.json");
    let _app = http_git_server("127.0.0.1:0", Some(SKETCH_TOKEN), Some(&sj));
    wait_for_file(&sj);
    let file: serde_json::Value = serde_json::from_slice(&std::fs::read(&sj).unwrap()).unwrap();
    let url = file["http"].as_str().unwrap().to_string();
    let dial = url
        .strip_prefix("http://")
        .and_then(|r| r.strip_suffix("/mcp"))
        .unwrap()
        .parse()
        .unwrap();

    let source = |endpoint, why| {
        Arc::new(Fixed {
            endpoint,
            why,
            asked: AtomicUsize::new(0),
        })
    };
    let good = source(
        Some(Endpoint {
            url,
            dial,
            path: "/mcp".into(),
            token: Token::new(SKETCH_TOKEN),
        }),
        "",
    );
    let none = source(None, "no document window is open");
    for (src, connects) in [(good, true), (none, false)] {
        let client = McpClient::with_options(ClientOptions {
            app_endpoints: Some(src.clone()),
            ..ClientOptions::default()
        });
        client
            .connect_all(&[ServerSpec::new("sketch", Transport::AppEndpoint)], |_| {
                true
            })
            .await;
        let status = client.status();
        let asked = src.asked.load(Ordering::SeqCst);
        let sketch = &status[0];
        if connects {
            assert_eq!(asked, 1, "{status:?}");
            assert_eq!(sketch.state, ConnectionState::Connected, "{sketch:?}");
            assert!(client.tool("mcp_sketch_status").is_some(), "{status:?}");
        } else {
            // The first connect retries a missing endpoint, asking afresh
            // each time: an application started meanwhile is found.
            assert!(asked > 1, "asked {asked} times: {status:?}");
            assert_eq!(sketch.state, ConnectionState::Failed, "{sketch:?}");
            let e = sketch.last_error.as_deref().unwrap();
            assert!(e.contains("no document window is open"), "{e}");
        }
        client.shutdown().await;
    }
}
