//! The MCP client bounds and redaction rules of `docs/security.md` ("MCP client bounds", "Redaction"), each against a
//! real hostile server process (`src/bin/hostile-mcp-server.rs`): memory a
//! server controls stays bounded (VmHWM of a one-shot client process,
//! `src/bin/mcp-probe.rs`), bad answers fail their call at once instead of
//! waiting the timeout, processes are not orphaned, deep YAML/JSON is
//! refused early, server text is escaped on the terminal and its logs are
//! rate-limited, and secrets stay out of every output. Every wait is
//! bounded by a timeout around it; nothing asserts wall time.

#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use wasmgate::{CallError, ConnectionState, McpClient};
use wasmgate::{ServerSpec, Transport};
use wasmgate_conformance::wasmgate_bin;

fn hostile() -> &'static str {
    env!("CARGO_BIN_EXE_hostile-mcp-server")
}

fn spec(name: &str, args: &[&str]) -> ServerSpec {
    ServerSpec {
        // Long, so a call that waited for it would trip the shorter bound
        // each test puts around its calls.
        timeout: Duration::from_secs(300),
        connect_timeout: Duration::from_secs(60),
        max_result_bytes: 1 << 20,
        ..ServerSpec::new(name, Transport::stdio(hostile(), args))
    }
}

/// Runs `f`, failing the test if it takes longer than `secs`.
async fn bounded<T>(secs: u64, what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(secs), f)
        .await
        .unwrap_or_else(|_| panic!("{what} waited more than {secs} s"))
}

fn failed_message(r: Result<wasmgate::CallResult, CallError>) -> String {
    match r {
        Err(CallError::Failed { message, .. }) => message,
        other => panic!("expected a failed call, got {other:?}"),
    }
}

/// Whether `pid` is a live (not zombie) process.
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Waits (bounded) until `pid` is gone.
fn dies(pid: u32) -> bool {
    for _ in 0..100 {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

fn read_pid(file: &Path) -> u32 {
    for _ in 0..100 {
        if let Some(pid) = std::fs::read_to_string(file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return pid;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{} was never written", file.display());
}

#[tokio::test]
async fn unreadable_answers_fail_their_call_at_once_and_the_session_keeps_working() {
    let client = McpClient::new();
    let report = client.connect_all(&[spec("h", &[])], |_| true).await;
    assert_eq!(report.connected, vec!["h"], "{report:?}");
    let cases = [
        // Over the stdio line limit (64 MiB at this max_result_bytes).
        (
            "big",
            serde_json::json!({"bytes": 70 << 20}),
            "longer than the limit of 67108864 bytes",
        ),
        ("badutf8", serde_json::json!({}), "not valid UTF-8"),
        (
            "deep",
            serde_json::json!({"levels": 300}),
            "nested deeper than 128 levels",
        ),
    ];
    for (tool, args, want) in cases {
        let r = bounded(60, tool, client.call(&format!("mcp_h_{tool}"), args)).await;
        let m = failed_message(r);
        assert!(m.contains(want), "{tool}: {m}");
        // The neighbour call on the same session still works.
        let ok = bounded(
            60,
            "say",
            client.call("mcp_h_say", serde_json::json!({"text": "still here"})),
        )
        .await
        .expect("the session keeps working");
        assert_eq!(ok.text(), "still here");
    }
    assert_eq!(client.status()[0].state, ConnectionState::Connected);
    client.shutdown().await;
}

#[tokio::test]
async fn a_tools_list_page_over_the_cap_fails_that_server_only() {
    let client = McpClient::new();
    let report = client
        .connect_all(
            &[spec("huge", &["--page-bytes", "5000000"]), spec("h", &[])],
            |_| true,
        )
        .await;
    assert_eq!(report.connected, vec!["h"], "{report:?}");
    let (_, e) = &report.failed[0];
    assert!(
        e.contains("tools/list") && e.contains("over the limit of 4194304 bytes per page"),
        "{e}"
    );
    let ok = bounded(
        60,
        "say",
        client.call("mcp_h_say", serde_json::json!({"text": "ok"})),
    )
    .await
    .unwrap();
    assert_eq!(ok.text(), "ok");
    client.shutdown().await;
}

#[tokio::test]
async fn a_server_that_exits_while_its_helper_holds_stdout_fails_the_call_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("helper.pid");
    let client = McpClient::new();
    let report = client
        .connect_all(
            &[
                spec("g", &["--grandchild-stdout", pidfile.to_str().unwrap()]),
                spec("h", &[]),
            ],
            |_| true,
        )
        .await;
    assert_eq!(report.connected, vec!["g", "h"], "{report:?}");
    let helper = read_pid(&pidfile);
    assert!(alive(helper));
    let r = bounded(
        60,
        "the call on a server that exited",
        client.call("mcp_g_exit", serde_json::json!({})),
    )
    .await;
    let m = failed_message(r);
    assert!(m.contains("the server process exited"), "{m}");
    let g = client.status().into_iter().find(|s| s.name == "g").unwrap();
    assert_ne!(g.state, ConnectionState::Connected, "{g:?}");
    // Its group was killed with the session: the helper is gone.
    assert!(dies(helper), "helper {helper} still runs");
    let ok = bounded(
        60,
        "say",
        client.call("mcp_h_say", serde_json::json!({"text": "neighbour"})),
    )
    .await
    .unwrap();
    assert_eq!(ok.text(), "neighbour");
    client.shutdown().await;
}

#[tokio::test]
async fn shutdown_kills_the_helpers_of_a_server_that_already_exited() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("helper.pid");
    let client = McpClient::new();
    client
        .connect_all(
            &[spec("x", &["--helper", pidfile.to_str().unwrap()])],
            |_| true,
        )
        .await;
    let helper = read_pid(&pidfile);
    let r = bounded(
        60,
        "exit",
        client.call("mcp_x_exit", serde_json::json!({"answer": true})),
    )
    .await
    .unwrap();
    assert_eq!(r.text(), "bye");
    bounded(30, "shutdown", client.shutdown()).await;
    assert!(dies(helper), "helper {helper} of an exited server survived");
}

#[tokio::test]
async fn stderr_lines_are_cut_and_the_kept_tail_is_small() {
    let client = McpClient::new();
    let report = client
        .connect_all(
            &[spec(
                "s",
                &[
                    "--stderr-line",
                    "8000000",
                    "--stderr-count",
                    "3",
                    "--exit-at-start",
                ],
            )],
            |_| true,
        )
        .await;
    let (_, e) = &report.failed[0];
    assert!(
        e.contains("exited during start-up"),
        "{}",
        &e[..e.len().min(500)]
    );
    assert!(
        e.contains("more bytes of this line left out"),
        "{}",
        &e[..500]
    );
    assert!(e.len() < 3 * 4096 + 2000, "{} bytes", e.len());
}

#[tokio::test]
async fn stdout_noise_is_redacted_before_it_is_cut() {
    let secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    // The secret starts at character 190 and crosses the 200-character cut.
    let noise = format!("{}{secret}", "x ".repeat(95));
    let mut s = spec("n", &["--noise", &noise]);
    s.connect_timeout = Duration::from_secs(3);
    let client = McpClient::new();
    let report = client.connect_all(&[s], |_| true).await;
    let (_, e) = &report.failed[0];
    assert!(e.contains("not MCP JSON-RPC"), "{e}");
    assert!(!e.contains("ghp_"), "{e}");
    client.shutdown().await;
}

#[tokio::test]
async fn successful_results_lose_only_secrets_and_errors_keep_the_strict_rule() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "mcp_servers:\n  r:\n    command: {}\n    env:\n      TZ: Europe/Berlin\n      PORT: \"8080\"\n      CACHE_DIR: /var/cache/thing\n      API_TOKEN: tok-literal-123\n      FROM_VAR: \"${{MY_VAR}}\"\n",
            hostile()
        ),
    )
    .unwrap();
    let ctx = wasmgate::manifest::ManifestContext::new("config.yaml", dir.path())
        .with_env([("MY_VAR", "var-secret-456")]);
    let loaded = wasmgate::manifest::load_config_with(&config, &ctx);
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let client = McpClient::new();
    client.connect_all(&loaded.servers, |_| true).await;
    let text =
        "tz Europe/Berlin port 8080 dir /var/cache/thing token tok-literal-123 var var-secret-456";
    let r = bounded(
        60,
        "say",
        client.call("mcp_r_say", serde_json::json!({"text": text})),
    )
    .await
    .unwrap();
    assert_eq!(
        r.text(),
        "tz Europe/Berlin port 8080 dir /var/cache/thing token [REDACTED] var [REDACTED]"
    );
    // An error text: every configured value and every key shape goes.
    let r = bounded(
        60,
        "fail",
        client.call(
            "mcp_r_fail",
            serde_json::json!({"text": format!("{text} key sk-proj.abc_DEF-9")}),
        ),
    )
    .await;
    let m = failed_message(r);
    for gone in [
        "Europe/Berlin",
        "/var/cache/thing",
        "tok-literal-123",
        "var-secret-456",
        "abc_DEF",
    ] {
        assert!(!m.contains(gone), "{gone} in {m}");
    }
    client.shutdown().await;
}

#[tokio::test]
async fn url_query_values_and_userinfo_are_never_shown() {
    let client = McpClient::new();
    let s = ServerSpec::new(
        "u",
        Transport::Http {
            url: "http://127.0.0.1:1/mcp?sig=sigvalue123&access=accessvalue456".into(),
            headers: Default::default(),
        },
    );
    let report = client.connect_all(&[s], |_| true).await;
    let (_, e) = &report.failed[0];
    assert!(
        !e.contains("sigvalue123") && !e.contains("accessvalue456"),
        "{e}"
    );
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        "mcp_servers:\n  v:\n    url: http://alice:pw-secret-1@127.0.0.1:9/mcp?sig=sigvalue789\n",
    )
    .unwrap();
    let loaded = wasmgate::manifest::load_config(&config);
    let msg = format!("{:?}", loaded.errors);
    assert!(msg.contains("user name or password"), "{msg}");
    for gone in ["alice", "pw-secret-1", "sigvalue789"] {
        assert!(!msg.contains(gone), "{gone} in {msg}");
    }
}

// ---- memory, measured in a client process of its own ----

fn probe(what: &[&str], server_args: &[&str], env: &[(&str, &str)]) -> serde_json::Value {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-probe"));
    cmd.args(what).arg("--").arg(hostile()).args(server_args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = run_bounded(cmd, 240);
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
fn a_flood_of_tools_list_pages_stays_bounded() {
    let base = probe(&["list"], &[], &[]);
    let v = probe(&["list"], &["--page-bytes", "3900000"], &[]);
    assert_eq!(v["connected"], true, "{v}");
    let tools = v["tools"].as_u64().unwrap();
    assert!(tools > 0 && tools <= 10_000, "{v}");
    let grew = peak_mib(&v) - peak_mib(&base);
    // One page is at most 4 MiB; a parsed page takes ~40× its bytes.
    let limit = 64.0 * wasmgate::mcp::MAX_TOOLS_PAGE_BYTES as f64 / MIB;
    eprintln!("tools/list flood: peak grew {grew:.0} MiB (bound {limit:.0} MiB)");
    assert!(grew < limit, "peak grew {grew:.0} MiB: {v}");
}

#[test]
fn millions_of_content_blocks_are_cut_to_the_cap() {
    let base = probe(&["list"], &[], &[]);
    let v = probe(&["call", "blocks", r#"{"n": 2400000}"#], &[], &[]);
    assert_eq!(
        v["blocks"].as_u64(),
        Some(wasmgate::mcp::MAX_CONTENT_BLOCKS as u64 + 1),
        "{v}"
    );
    let note = v["last_text"].as_str().unwrap_or("");
    assert!(
        note.contains("2399000 of 2400000 content blocks left out"),
        "{v}"
    );
    // The line (~60 MiB) is read whole; its blocks are never all parsed.
    let grew = peak_mib(&v) - peak_mib(&base);
    let line_limit = wasmgate::mcp::transport::MIN_STDIO_MESSAGE_BYTES as f64 / MIB;
    eprintln!("2.4 M blocks: peak grew {grew:.0} MiB (line limit {line_limit:.0} MiB)");
    assert!(grew < 4.0 * line_limit, "peak grew {grew:.0} MiB: {v}");
}

#[test]
fn a_stderr_flood_keeps_a_small_tail() {
    let base = probe(&["list"], &[], &[]);
    let v = probe(
        &["list"],
        &["--stderr-line", "16000000", "--stderr-count", "12"],
        &[],
    );
    assert_eq!(v["connected"], true, "{v}");
    let grew = peak_mib(&v) - peak_mib(&base);
    // 12 lines of 16 MB went through; at most 20 lines of 4 KiB are kept.
    eprintln!("stderr flood of 192 MB: peak grew {grew:.0} MiB");
    assert!(grew < 32.0, "peak grew {grew:.0} MiB: {v}");
}

#[test]
fn windows_names_of_the_env_allowlist_are_case_sensitive_on_linux() {
    let v = probe(
        &["call", "env", "{}"],
        &[],
        &[
            ("tmp", "leak-tmp-1"),
            ("Public", "leak-public-2"),
            ("SystemRoot", "leak-root-3"),
        ],
    );
    let env: serde_json::Value = serde_json::from_str(v["text"].as_str().unwrap()).unwrap();
    assert!(env.get("PATH").is_some(), "{env}");
    for k in ["tmp", "Public", "SystemRoot"] {
        assert!(env.get(k).is_none(), "{k} reached the child: {env}");
    }
}

// ---- the CLI: terminal output, logs, processes, input depth ----

/// `wasmgate ARGS…` run as [`run_bounded`]: whether it succeeded, and its
/// stdout and stderr together.
fn run_text(args: &[&std::ffi::OsStr], secs: u64) -> (bool, String) {
    let mut cmd = Command::new(wasmgate_bin());
    cmd.args(args);
    let out = run_bounded(cmd, secs);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn run_bounded(mut cmd: Command, secs: u64) -> std::process::Output {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("starts");
    let (tx, rx) = std::sync::mpsc::channel();
    let pid = child.id();
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let read = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let (o, e) = (read(Box::new(stdout)), read(Box::new(stderr)));
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let status = match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(s) => s.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            panic!("the command ran past {secs} s and was killed");
        }
    };
    std::process::Output {
        status,
        stdout: o.join().unwrap(),
        stderr: e.join().unwrap(),
    }
}

fn config_with(dir: &Path, servers: &[(&str, &[&str])]) -> PathBuf {
    let mut y = String::from("mcp_servers:\n");
    for (name, args) in servers {
        y.push_str(&format!(
            "  {name}:\n    command: {}\n    connect_timeout: 10\n    timeout: 120\n    args: {}\n",
            hostile(),
            serde_json::to_string(args).unwrap()
        ));
    }
    let f = dir.join("config.yaml");
    std::fs::write(&f, y).unwrap();
    f
}

fn wasmgate(config: &Path, args: &[&str]) -> (String, String, i32) {
    let mut cmd = Command::new(wasmgate_bin());
    cmd.arg("--config").arg(config).args(args);
    cmd.env_remove("WASMGATE_LOG").env("WASMGATE_PLUGINS", "");
    let out = run_bounded(cmd, 120);
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

#[test]
fn server_text_reaches_the_terminal_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_with(
        dir.path(),
        &[
            ("h", &["--evil-names"]),
            ("n", &["--noise", "\u{1b}]0;pwned\u{7}\u{1b}[2J not mcp"]),
        ],
    );
    let (out, err, _) = wasmgate(&config, &["tools"]);
    assert!(
        !out.contains('\u{1b}') && !err.contains('\u{1b}'),
        "{out}{err}"
    );
    assert!(out.contains("evil\\u{1b}]0;owned"), "{out}");
    for line in out.lines() {
        assert!(line.starts_with("mcp_"), "a forged line: {line:?}\n{out}");
    }
    let (out, err, _) = wasmgate(&config, &["status"]);
    assert!(
        !out.contains('\u{1b}') && !err.contains('\u{1b}'),
        "{out}{err}"
    );
    assert!(out.contains("\\u{1b}]0;pwned"), "{out}");
    let (out, err, code) = wasmgate(
        &config,
        &[
            "call",
            "mcp_h_fail",
            "--args",
            r#"{"text": "boom\u001b]0;x\u0007\nFORGED: line"}"#,
        ],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(!err.contains('\u{1b}'), "{err}");
    assert!(err.contains("boom\\u{1b}]0;x\\u{7}\\nFORGED"), "{err}");
    assert!(!err.lines().any(|l| l.starts_with("FORGED")), "{err}");
}

#[test]
fn server_log_notifications_are_escaped_and_rate_limited() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_with(dir.path(), &[("h", &[])]);
    let (out, err, code) = wasmgate(
        &config,
        &[
            "call",
            "mcp_h_logs",
            "--args",
            r#"{"n": 20000, "text": "x\nFORGED: a log line \u001b]0;t\u0007"}"#,
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out.trim(), "done");
    let forged = err.lines().filter(|l| l.contains("FORGED")).count();
    assert!(!err.lines().any(|l| l.starts_with("FORGED")), "{err}");
    assert!(!err.contains('\u{1b}'), "escape in the log");
    let limit = wasmgate::mcp::LOG_NOTIFICATIONS_PER_SECOND as usize;
    // 20,000 notifications: at most `limit` lines per second of the call.
    assert!(forged > 0 && forged <= 10 * limit, "{forged} log lines");
    assert!(err.contains("suppressed"), "no suppressed line:\n{err}");
}

#[test]
fn call_leaves_no_helper_of_a_server_that_exited() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("helper.pid");
    let config = config_with(
        dir.path(),
        &[("x", &["--helper", pidfile.to_str().unwrap()])],
    );
    let (out, err, code) = wasmgate(
        &config,
        &["call", "mcp_x_exit", "--args", r#"{"answer": true}"#],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out.trim(), "bye");
    let helper = read_pid(&pidfile);
    assert!(dies(helper), "helper {helper} outlived `wasmgate call`");
}

#[test]
fn deeply_nested_yaml_and_json_are_refused_early_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let deep = format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000));
    let plugin = dir.path().join("p");
    std::fs::create_dir(&plugin).unwrap();
    let yaml = plugin.join("plugin.yaml");
    std::fs::write(&yaml, format!("name: p\nversion: 1.0.0\nx: {deep}\n")).unwrap();
    let json = dir.path().join("plugin.json");
    std::fs::write(&json, format!("{{\"name\": \"p\",\n\"x\": {deep}}}")).unwrap();
    for (file, line) in [(&yaml, 3), (&json, 2)] {
        let (ok, text) = run_text(&["check".as_ref(), file.as_os_str()], 120);
        assert!(!ok, "{text}");
        assert!(
            text.contains(&format!("nested deeper than 64 levels (at line {line})")),
            "{text}"
        );
        assert!(text.contains(&file.display().to_string()), "{text}");
    }
    // A config: the whole file is one error, named with its file.
    let config = dir.path().join("config.yaml");
    std::fs::write(&config, format!("mcp_servers:\n  a: {deep}\n")).unwrap();
    let (out, err, _) = wasmgate(&config, &["status"]);
    let text = format!("{out}{err}");
    assert!(
        text.contains("nested deeper than 64 levels (at line 2)"),
        "{text}"
    );
    assert!(text.contains("config.yaml"), "{text}");
    // A simulated host's host.yaml.
    host_yaml_is_too_deep(dir.path(), &format!("os: linux\nx: {deep}\n"), 2);
}

/// `wasmgate availability` with a simulated host whose `host.yaml` is
/// `text` names that file and `line`.
fn host_yaml_is_too_deep(dir: &std::path::Path, text: &str, line: usize) {
    let host = dir.join("host");
    std::fs::create_dir(&host).unwrap();
    std::fs::write(host.join("host.yaml"), text).unwrap();
    let yaml = dir.join("plugin.yaml");
    std::fs::write(&yaml, "name: p\nversion: 1.0.0\n").unwrap();
    let (_, text) = run_text(
        &[
            "availability".as_ref(),
            yaml.as_os_str(),
            "--host".as_ref(),
            host.as_os_str(),
        ],
        120,
    );
    assert!(text.contains("host.yaml"), "{text}");
    assert!(
        text.contains(&format!("nested deeper than 64 levels (at line {line})")),
        "{text}"
    );
}

/// Nesting that the text scan before the parser misjudges (a lone CR
/// ends libyaml's line but not the scan's, so a `#` hides the rest; a quote
/// inside a plain scalar opens nothing in YAML) is refused when the
/// parser's events pass 64 levels, and the parse stops there: 200,000
/// levels through the old path took hours.
#[test]
fn nesting_hidden_from_the_text_scan_is_refused_on_the_parsers_events() {
    let dir = tempfile::tempdir().unwrap();
    let deep = format!("{}1{}", "[".repeat(200_000), "]".repeat(200_000));
    let plugin = dir.path().join("p");
    std::fs::create_dir(&plugin).unwrap();
    let yaml = plugin.join("plugin.yaml");
    std::fs::write(&yaml, format!("name: p\nversion: 1.0.0\nx: [ #\r{deep}]\n")).unwrap();
    let (ok, text) = run_text(&["check".as_ref(), yaml.as_os_str()], 120);
    assert!(!ok, "{text}");
    // libyaml counts the lone CR as a line break.
    assert!(
        text.contains("nested deeper than 64 levels (at line 4)"),
        "{text}"
    );
    assert!(text.contains(&yaml.display().to_string()), "{text}");
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        format!("mcp_servers:\n  a: x 'y\n  b: {deep}\n  c: z'\n"),
    )
    .unwrap();
    let (out, err, _) = wasmgate(&config, &["status"]);
    let text = format!("{out}{err}");
    assert!(
        text.contains("nested deeper than 64 levels (at line 3)"),
        "{text}"
    );
    assert!(text.contains("config.yaml"), "{text}");
    host_yaml_is_too_deep(dir.path(), &format!("os: linux\nx: [ #\r{deep}]\n"), 3);
}

#[test]
fn a_401_challenge_echoing_the_token_is_redacted_in_the_log() {
    use std::io::{Read, Write};
    let token = "tok-SECRET-abc123456";
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = stop.clone();
    let server = std::thread::spawn(move || {
        // Bounded: at most 60 s and 100 connections.
        for _ in 0..6000 {
            if stop2.load(std::sync::atomic::Ordering::Relaxed) {
                return;
            }
            match listener.accept() {
                // One thread per connection: an idle one must not hold up
                // the next request.
                Ok((mut s, _)) => drop(std::thread::spawn(move || {
                    s.set_nonblocking(false).unwrap();
                    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                    let mut buf = [0u8; 65536];
                    let _ = s.read(&mut buf);
                    let body = "unauthorized";
                    let _ = write!(
                        s,
                        "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer error=\"invalid_token\", error_description=\"the token {token} is expired\"\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                })),
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "mcp_servers:\n  a:\n    url: http://127.0.0.1:{port}/mcp\n    connect_timeout: 30\n    headers:\n      Authorization: \"Bearer {token}\"\n"
        ),
    )
    .unwrap();
    let (out, err, _) = wasmgate(&config, &["status"]);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    server.join().unwrap();
    // The challenge did reach the output (status, and rmcp's log line)…
    assert!(
        format!("{out}{err}").contains("invalid_token"),
        "{out}{err}"
    );
    // …without the token.
    assert!(!out.contains(token) && !err.contains(token), "{out}{err}");
}
