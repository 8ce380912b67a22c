//! Connect failures with real processes and their troubleshooting messages
//! (`docs/mcp-client.md` §2, §4): a command not on PATH, a server
//! that exits at start, one that hangs on initialize, a launcher that cannot
//! find its package, a refused HTTP port, no servers at all — and the healthy
//! server next to them keeps working. Nothing secret reaches an error.

use crate::common::{git, git_repo, git_server_bin};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use wasmgate::mcp::{ConnectionState, McpClient, NO_SERVERS_CONFIGURED};
use wasmgate::{ServerSpec, Transport};

fn stdio(name: &str, command: &str, args: &[&str]) -> ServerSpec {
    ServerSpec {
        timeout: Duration::from_secs(30),
        connect_timeout: Duration::from_secs(20),
        max_result_bytes: 1 << 20,
        ..ServerSpec::new(name, Transport::stdio(command, args))
    }
}

fn with_env(mut s: ServerSpec, k: &str, v: &str) -> ServerSpec {
    if let Transport::Stdio { env, .. } = &mut s.transport {
        env.insert(k.to_string(), v.to_string());
    }
    s
}

fn error_of(client: &McpClient, name: &str) -> String {
    let s = client
        .status()
        .into_iter()
        .find(|s| s.name == name)
        .unwrap();
    assert_eq!(s.state, ConnectionState::Failed, "{name}: {s:?}");
    let e = s.last_error.expect("a failed server has an error");
    eprintln!("{name}: {e}");
    e
}

#[tokio::test]
async fn no_servers_configured_is_reported() {
    let client = McpClient::new();
    let report = client.connect_all(&[], |_| true).await;
    assert_eq!(report.warning.as_deref(), Some(NO_SERVERS_CONFIGURED));
    assert!(client.status().is_empty());
}

#[tokio::test]
async fn command_not_found_on_path() {
    let client = McpClient::new();
    client
        .connect_all(
            &[stdio("ghost", "wasmgate-no-such-command-xyz", &[])],
            |_| true,
        )
        .await;
    let e = error_of(&client, "ghost");
    assert!(
        e.starts_with("failed to connect to MCP server 'ghost': "),
        "{e}"
    );
    assert!(
        e.contains("'wasmgate-no-such-command-xyz' was not found on PATH"),
        "{e}"
    );
}

#[tokio::test]
async fn a_command_path_that_names_no_program_says_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.txt");
    std::fs::write(&plain, "not a program").unwrap();
    let cases = [
        ("missing", dir.path().join("no-such-bin"), "does not exist"),
        (
            "folder",
            dir.path().to_path_buf(),
            "is a folder, not a program",
        ),
        ("plain", plain, "is not executable"),
    ];
    let specs: Vec<ServerSpec> = cases
        .iter()
        .map(|(name, path, _)| stdio(name, path.to_str().unwrap(), &[]))
        .collect();
    let client = McpClient::new();
    client.connect_all(&specs, |_| true).await;
    for (name, path, want) in &cases {
        let e = error_of(&client, name);
        assert!(e.contains(want), "{name}: {e}");
        assert!(e.contains(path.to_str().unwrap()), "{name}: {e}");
        assert!(!e.contains("not found on PATH"), "{name}: {e}");
    }
}

#[tokio::test]
async fn server_exiting_at_start_reports_status_and_stderr() {
    let client = McpClient::new();
    let s = with_env(
        stdio(
            "dies",
            "sh",
            &[
                "-c",
                "echo \"cannot start, token is $SECRET_TOKEN\" >&2; exit 3",
            ],
        ),
        "SECRET_TOKEN",
        "s3cr3t-value-0042",
    );
    client.connect_all(&[s], |_| true).await;
    let e = error_of(&client, "dies");
    assert!(e.contains("exited during start-up"), "{e}");
    assert!(e.contains("exit status: 3"), "{e}");
    assert!(e.contains("cannot start"), "{e}");
    assert!(!e.contains("s3cr3t-value-0042"), "secret leaked: {e}");
    assert!(e.contains("[REDACTED]"), "{e}");

    let client = McpClient::new();
    client
        .connect_all(&[stdio("false", "false", &[])], |_| true)
        .await;
    let e = error_of(&client, "false");
    assert!(e.contains("exit status: 1"), "{e}");
    assert!(e.contains("wrote nothing to stderr"), "{e}");
}

/// `command args…` behind a wrapper that appends a line to `starts` each
/// time it is started, so the file's line count is the number of spawns.
fn counted(name: &str, starts: &Path, command: &str, args: &[&str]) -> ServerSpec {
    let mut all = vec![
        "-c",
        "echo start >> \"$0\"; exec \"$@\"",
        starts.to_str().unwrap(),
        command,
    ];
    all.extend_from_slice(args);
    stdio(name, "sh", &all)
}

fn spawns(starts: &Path) -> usize {
    std::fs::read_to_string(starts)
        .unwrap_or_default()
        .lines()
        .count()
}

/// A temp repository on branch `main` with one commit.
fn temp_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    git_repo(dir.path(), &["first"]);
    dir
}

/// A successful `branch` call on a repository on `main`.
async fn assert_branch_works(client: &McpClient, tool: &str, repo: &Path) {
    let r = client
        .call(tool, serde_json::json!({"path": repo.to_str().unwrap()}))
        .await
        .unwrap();
    assert!(!r.is_error, "{tool}: {}", r.text());
    assert!(r.text().contains("main"), "{tool}: {}", r.text());
}

#[tokio::test]
async fn hanging_server_times_out_while_the_healthy_one_connects() {
    let repo = temp_repo();
    let tmp = tempfile::tempdir().unwrap();
    let (hang_starts, git_starts) = (tmp.path().join("hang"), tmp.path().join("git"));
    let git_bin = git_server_bin();
    let specs = |hang_timeout: Duration| {
        let mut hang = counted("hang", &hang_starts, "sleep", &["100"]);
        hang.connect_timeout = hang_timeout;
        let git = counted("git", &git_starts, git_bin.to_str().unwrap(), &[]);
        [hang, git]
    };
    let client = McpClient::new();
    let report = client
        .connect_all(&specs(Duration::from_millis(800)), |_| true)
        .await;
    assert_eq!(report.connected, vec!["git"]);
    assert_eq!(report.failed.len(), 1);
    let e = error_of(&client, "hang");
    assert!(e.contains("timed out after 0.8 s"), "{e}");
    assert!(e.contains("raise `connect_timeout`"), "{e}");
    // The healthy server serves calls.
    assert_branch_works(&client, "mcp_git_branch", repo.path()).await;
    assert_eq!(spawns(&git_starts), 1);
    let hang_before = spawns(&hang_starts);
    assert!(hang_before >= 1);

    // A later pass retries the failed one only: the hanging server is
    // spawned again, the connected one is not.
    let pid = client.status()[1].pid;
    let report = client
        .connect_all(&specs(Duration::from_millis(300)), |_| true)
        .await;
    assert_eq!(report.already_connected, vec!["git"]);
    assert_eq!(report.failed.len(), 1);
    assert!(
        spawns(&hang_starts) > hang_before,
        "the failed server was not retried"
    );
    assert_eq!(
        spawns(&git_starts),
        1,
        "the connected server was spawned again"
    );
    assert_eq!(client.status()[1].pid, pid);
    client.shutdown().await;
}

#[tokio::test]
async fn garbage_on_stdout_fails_cleanly() {
    let mut s = stdio(
        "garbage",
        "sh",
        &["-c", "echo 'this is not json-rpc'; sleep 100"],
    );
    s.connect_timeout = Duration::from_secs(3);
    let client = McpClient::new();
    client.connect_all(&[s], |_| true).await;
    // The line is dropped before rmcp sees it and named in the error.
    let e = error_of(&client, "garbage");
    assert!(
        e.contains("not MCP JSON-RPC to stdout ('this is not json-rpc')"),
        "{e}"
    );
}

#[tokio::test]
async fn launcher_without_its_package() {
    // A real `npx` stand-in on the child's PATH that fails like npm does.
    let bin = tempfile::tempdir().unwrap();
    let npx = bin.path().join("npx");
    std::fs::write(
        &npx,
        "#!/bin/sh\necho 'npm error code E404' >&2\necho 'npm error 404 Not Found - GET https://registry.npmjs.org/@nope%2fserver' >&2\nexit 1\n",
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&npx, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!("{}:/usr/bin:/bin", bin.path().display());
    let s = with_env(stdio("pkg", "npx", &["-y", "@nope/server"]), "PATH", &path);
    let t = with_env(stdio("pkg2", "npx", &["@nope/server"]), "PATH", &path);
    let client = McpClient::new();
    client.connect_all(&[s, t], |_| true).await;
    let e = error_of(&client, "pkg");
    assert!(e.contains("npx could not find the server's package"), "{e}");
    assert!(e.contains("E404"), "{e}");
    // `-y` is suggested only where it is not given already.
    assert!(!e.contains("`-y`"), "{e}");
    let e = error_of(&client, "pkg2");
    assert!(e.contains("npx could not find the server's package"), "{e}");
    assert!(e.contains("pass `-y`"), "{e}");
}

#[tokio::test]
async fn refused_http_port() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut headers = BTreeMap::new();
    headers.insert(
        "Authorization".to_string(),
        "Bearer abcd-secret-header-9876".to_string(),
    );
    let s = ServerSpec {
        transport: Transport::Http {
            url: format!("http://127.0.0.1:{port}/mcp"),
            headers,
        },
        ..stdio("remote", "unused", &[])
    };
    let client = McpClient::new();
    client.connect_all(&[s], |_| true).await;
    let e = error_of(&client, "remote");
    assert!(e.contains("connection refused"), "{e}");
    assert!(e.contains(&format!("127.0.0.1:{port}")), "{e}");
    assert!(!e.contains("abcd-secret-header-9876"));
    assert_eq!(client.status()[0].transport, "http");
}

#[tokio::test]
async fn invalid_url_and_app_endpoint() {
    let bad = ServerSpec {
        transport: Transport::Http {
            url: "ftp://127.0.0.1/x".into(),
            headers: BTreeMap::new(),
        },
        ..stdio("badurl", "unused", &[])
    };
    let app = ServerSpec {
        transport: Transport::AppEndpoint,
        ..stdio("app", "unused", &[])
    };
    let client = McpClient::new();
    client.connect_all(&[bad, app], |_| true).await;
    assert!(error_of(&client, "badurl").contains("not a valid http"));
    assert!(error_of(&client, "app").contains("server_json"));
}

/// A folder with a `git` stand-in for the git MCP server: `status` sleeps,
/// `log` kills the server (its parent) mid-call, everything else runs the
/// real git.
fn fake_git_dir() -> tempfile::TempDir {
    let real = std::process::Command::new("sh")
        .args(["-c", "command -v git"])
        .output()
        .unwrap();
    let real = String::from_utf8(real.stdout).unwrap().trim().to_string();
    assert!(!real.is_empty(), "git is needed on PATH");
    let dir = tempfile::tempdir().unwrap();
    let git = dir.path().join("git");
    std::fs::write(
        &git,
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do\n  case \"$a\" in\n    status) exec sleep 100 ;;\n    log) kill -9 $PPID; exit 1 ;;\n    diff) sleep 1 ;;\n  esac\ndone\nexec '{real}' \"$@\"\n"
        ),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&git, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    dir
}

#[tokio::test]
async fn a_call_that_hangs_times_out_and_the_session_stays_usable() {
    let fake = fake_git_dir();
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", fake.path().display());
    let mut s = with_env(
        stdio("slowgit", git_server_bin().to_str().unwrap(), &[]),
        "PATH",
        &path,
    );
    s.timeout = Duration::from_millis(700);
    let client = McpClient::new();
    let report = client.connect_all(&[s], |_| true).await;
    assert_eq!(report.connected, vec!["slowgit"], "{report:?}");

    // Two hanging calls run concurrently with a fast one on the same session.
    let c1 = client.clone();
    let c2 = client.clone();
    let slow1 =
        tokio::spawn(async move { c1.call("mcp_slowgit_status", serde_json::json!({})).await });
    let slow2 =
        tokio::spawn(async move { c2.call("mcp_slowgit_status", serde_json::json!({})).await });
    let repo = temp_repo();
    let on_repo = serde_json::json!({"path": repo.path().to_str().unwrap()});
    let fast = client
        .call("mcp_slowgit_branch", on_repo.clone())
        .await
        .unwrap();
    assert!(!fast.is_error, "{}", fast.text());
    assert!(fast.text().contains("main"), "{}", fast.text());
    for slow in [slow1, slow2] {
        match slow.await.unwrap() {
            Err(wasmgate::CallError::Timeout { seconds, tool, .. }) => {
                assert_eq!(seconds, 0.7);
                assert_eq!(tool, "status");
            }
            other => panic!("expected a timeout, got {other:?}"),
        }
    }
    let e = wasmgate::CallError::Timeout {
        server: "slowgit".into(),
        tool: "status".into(),
        seconds: 0.7,
    };
    assert!(e.to_string().contains("raise `timeout`"));
    // Still connected and serving.
    assert_eq!(client.status()[0].state, ConnectionState::Connected);
    let again = client.call("mcp_slowgit_branch", on_repo).await.unwrap();
    assert!(!again.is_error, "{}", again.text());
    assert_eq!(again.text(), fast.text());
    client.shutdown().await;
}

#[tokio::test]
async fn a_slow_answer_within_the_timeout_arrives_and_other_calls_are_not_held_up() {
    // `git diff` answers after a one-second sleep in the fake git; the
    // server's timeout (5 s) leaves room, so the call must succeed, and fast
    // calls on the same session finish while it is pending.
    let fake = fake_git_dir();
    let repo = tempfile::tempdir().unwrap();
    git_repo(repo.path(), &[]);
    std::fs::write(repo.path().join("a.txt"), "one\n").unwrap();
    git(repo.path(), &["add", "a.txt"]);
    git(repo.path(), &["commit", "-q", "-m", "first"]);
    std::fs::write(repo.path().join("a.txt"), "two\n").unwrap();

    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", fake.path().display());
    let mut s = with_env(
        stdio("sluggit", git_server_bin().to_str().unwrap(), &[]),
        "PATH",
        &path,
    );
    s.timeout = Duration::from_secs(5);
    let client = McpClient::new();
    let report = client.connect_all(&[s], |_| true).await;
    assert_eq!(report.connected, vec!["sluggit"], "{report:?}");

    let dir = repo.path().display().to_string();
    let c = client.clone();
    let d = dir.clone();
    let slow = tokio::spawn(async move {
        c.call("mcp_sluggit_diff", serde_json::json!({ "path": d }))
            .await
    });
    // The fast calls finish while the slow one is still pending.
    for _ in 0..3 {
        let b = client
            .call("mcp_sluggit_branch", serde_json::json!({ "path": dir }))
            .await
            .unwrap();
        assert!(!b.is_error, "{b:?}");
    }
    assert!(
        !slow.is_finished(),
        "the slow call answered before its sleep"
    );
    let r = slow
        .await
        .unwrap()
        .expect("a slow answer within the timeout");
    assert!(!r.is_error, "{r:?}");
    assert!(r.text().contains("+two"), "{}", r.text());
    assert_eq!(client.status()[0].state, ConnectionState::Connected);
    client.shutdown().await;
}

#[tokio::test]
async fn a_server_that_dies_mid_call_fails_the_call_not_the_host() {
    let fake = fake_git_dir();
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", fake.path().display());
    let s = with_env(
        stdio("dyinggit", git_server_bin().to_str().unwrap(), &[]),
        "PATH",
        &path,
    );
    let healthy = stdio("git", git_server_bin().to_str().unwrap(), &[]);
    let client = McpClient::with_options(wasmgate::ClientOptions {
        reconnect: wasmgate::ReconnectPolicy {
            attempts: 0,
            probe_interval: None,
            ..Default::default()
        },
        ..Default::default()
    });
    client.connect_all(&[s, healthy], |_| true).await;
    let e = client
        .call("mcp_dyinggit_log", serde_json::json!({}))
        .await
        .expect_err("the server died during the call");
    assert!(matches!(e, wasmgate::CallError::Failed { .. }), "{e:?}");
    // The lost session is noticed: failed, tools hidden, the error says why.
    for _ in 0..200 {
        if client.status()[0].state == ConnectionState::Failed {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let st = &client.status()[0];
    assert_eq!(st.state, ConnectionState::Failed, "{st:?}");
    assert!(
        st.last_error.as_deref().unwrap().contains("signal: 9"),
        "{st:?}"
    );
    assert_eq!(st.tool_count, 0);
    assert!(client.tool("mcp_dyinggit_branch").is_none());
    // The other server keeps working.
    let repo = temp_repo();
    assert_branch_works(&client, "mcp_git_branch", repo.path()).await;
    client.shutdown().await;
}

#[tokio::test]
async fn http_headers_are_sent_verbatim_and_a_rejection_is_reported() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    // A plain HTTP peer on 127.0.0.1 that hands over the first request it
    // gets and refuses every request with 401.
    let (tx, rx) = tokio::sync::oneshot::channel::<String>();
    let peer = tokio::spawn(async move {
        let mut tx = Some(tx);
        while let Ok((mut sock, _)) = listener.accept().await {
            let mut buf = vec![0u8; 16384];
            let mut got = Vec::new();
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                match sock.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
            // The client's TCP preflight connects and sends nothing.
            if !got.is_empty()
                && let Some(tx) = tx.take()
            {
                let _ = tx.send(String::from_utf8_lossy(&got).to_string());
            }
            let _ = sock
                .write_all(
                    b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                )
                .await;
        }
    });
    let mut headers = BTreeMap::new();
    headers.insert(
        "Authorization".to_string(),
        "Basic dXNlcjpwYXNzd29yZA==".to_string(),
    );
    headers.insert("X-Team".to_string(), "engineering".to_string());
    let mut s = ServerSpec {
        transport: Transport::Http {
            url: format!("http://127.0.0.1:{port}/mcp"),
            headers,
        },
        ..stdio("authy", "unused", &[])
    };
    s.connect_timeout = Duration::from_secs(5);
    let client = McpClient::new();
    client.connect_all(&[s], |_| true).await;
    let e = error_of(&client, "authy");
    assert!(!e.contains("dXNlcjpwYXNzd29yZA"), "{e}");
    assert!(e.contains("refused the credentials (HTTP 401"), "{e}");
    assert!(
        !e.contains("WorkerTransport"),
        "internal type names in: {e}"
    );
    client.shutdown().await;
    peer.abort();
    let request = rx.await.expect("the HTTP peer got a request");
    let lower = request.to_ascii_lowercase();
    assert!(lower.starts_with("post /mcp "), "{request}");
    assert!(
        lower.contains("authorization: basic dxnlcjpwyxnzd29yza=="),
        "{request}"
    );
    assert!(lower.contains("x-team: engineering"), "{request}");
}
