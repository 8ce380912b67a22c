//! `wasmgate serve` against hostile servers and hostile local clients
//! (docs/security.md,
//! "Gateway bounds" and "Sampling through the gateway").
//!
//! Real processes only: the gateway binary, the fixture server
//! `tests/python/gw_fixture_server.py` (official Python SDK), the agent's
//! client `tests/python/gw_hostile_client.py` (official Python SDK), and raw
//! TCP / HTTP/1.1 from this file for the listener's bounds. Every wait is
//! bounded; memory is read from `/proc/<pid>/status`.
//!
//! Linux only: `/proc` and `ulimit -n`.
#![cfg(target_os = "linux")]

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wasmgate_conformance::{interop_python, wasmgate_bin, workspace_root};

const TOKEN: &str = "gw-hostile-token";

fn fixture() -> PathBuf {
    workspace_root().join("tests/python/gw_fixture_server.py")
}

/// A config with the fixture as `fx` (and `extra` lines), an empty plugin
/// folder and a token file in `dir`.
fn world(dir: &Path, extra: &str) -> (PathBuf, PathBuf, PathBuf) {
    let cfg = dir.join("gateway.yaml");
    std::fs::write(
        &cfg,
        format!(
            "mcp_servers:\n  fx:\n    command: \"{}\"\n    args: [\"{}\"]\n{extra}",
            interop_python().display(),
            fixture().display()
        ),
    )
    .unwrap();
    let plugins = dir.join("no-plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let token = dir.join("token");
    std::fs::write(&token, format!("{TOKEN}\n")).unwrap();
    (cfg, plugins, token)
}

/// A running `wasmgate serve --http 127.0.0.1:0`, its stderr lines kept.
struct Served {
    child: Child,
    addr: SocketAddr,
    url: String,
    log: Arc<Mutex<Vec<String>>>,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Served {
    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn log_lines(&self, needle: &str) -> usize {
        self.log
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.contains(needle))
            .count()
    }
}

/// Starts the gateway over HTTP with `flags`; `nofile` sets `ulimit -n`.
fn serve(cfg: &Path, plugins: &Path, token: &Path, flags: &[&str], nofile: Option<u32>) -> Served {
    let mut inner: Vec<String> = vec![
        wasmgate_bin().display().to_string(),
        "serve".into(),
        "--http".into(),
        "127.0.0.1:0".into(),
        "--refresh-seconds".into(),
        "0".into(),
        "--config".into(),
        cfg.display().to_string(),
        "--plugins".into(),
        plugins.display().to_string(),
        "--token-file".into(),
        token.display().to_string(),
    ];
    inner.extend(flags.iter().map(|s| s.to_string()));
    let mut cmd = match nofile {
        // `exec`: the pid is the gateway's own.
        Some(n) => {
            let mut c = Command::new("sh");
            c.arg("-c")
                .arg(format!("ulimit -n {n} && exec \"$@\""))
                .arg("sh")
                .args(&inner);
            c
        }
        None => {
            let mut c = Command::new(&inner[0]);
            c.args(&inner[1..]);
            c
        }
    };
    cmd.env_remove("WASMGATE_PLUGINS")
        .env_remove("WASMGATE_TOKEN")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn wasmgate serve --http");
    let stderr = child.stderr.take().unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let (tx, rx) = std::sync::mpsc::channel();
    let lines = log.clone();
    std::thread::spawn(move || {
        let mut sent = false;
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            // Echo a bounded share of it: a spinning accept loop would
            // flood the test's output.
            let mut l = lines.lock().unwrap();
            if l.len() < 200 {
                eprintln!("[wasmgate] {line}");
            }
            if !sent && let Some(url) = line.strip_prefix("wasmgate serve: listening on ") {
                let _ = tx.send(url.trim().to_owned());
                sent = true;
            }
            l.push(line);
        }
    });
    let url = rx
        .recv_timeout(Duration::from_secs(120))
        .expect("wasmgate serve --http printed its address");
    let addr: SocketAddr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .parse()
        .unwrap();
    Served {
        child,
        addr,
        url,
        log,
    }
}

fn client(args: &[String]) -> Value {
    wasmgate_conformance::python_json("gw_hostile_client.py", args, |_| {})
}

fn http_client(served: &Served, mode: &str, more: &[&str]) -> Value {
    let mut args: Vec<String> = vec![
        "--http".into(),
        served.url.clone(),
        "--token".into(),
        TOKEN.into(),
        "--mode".into(),
        mode.into(),
    ];
    args.extend(more.iter().map(|s| s.to_string()));
    client(&args)
}

/// One HTTP/1.1 exchange on a fresh connection: (status, head, body),
/// read until the answer is complete or 30 s passed.
fn http(
    addr: SocketAddr,
    method: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut req = format!(
        "{method} /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    let mut buf = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut chunk = [0u8; 8192];
    while Instant::now() < deadline {
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(_) => break,
        }
        let text = String::from_utf8_lossy(&buf);
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let status: u16 = head
                .split(' ')
                .nth(1)
                .and_then(|c| c.parse().ok())
                .unwrap_or(0);
            // An SSE answer stays open; one JSON-RPC result is all we want.
            if status != 200 || body.contains("\"result\"") || body.contains("\"error\"") {
                break;
            }
        }
    }
    let text = String::from_utf8_lossy(&buf).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, head.to_owned(), body.to_owned())
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw-test","version":"1"}}}"#;

fn bearer() -> String {
    format!("Bearer {TOKEN}")
}

/// An authorized `initialize`: (status, session id, body).
fn initialize(addr: SocketAddr) -> (u16, Option<String>, String) {
    let auth = bearer();
    let (status, head, body) = http(addr, "POST", &[("Authorization", &auth)], INITIALIZE);
    let session = head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case("mcp-session-id")
            .then(|| v.trim().to_owned())
    });
    (status, session, body)
}

fn proc_status_kib(pid: u32, field: &str) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in /proc/{pid}/status"))
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

/// utime + stime of a process, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the parenthesised command name: state is field 3,
    // utime 14, stime 15.
    let rest = &s[s.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

/// Whether the peer closed `s` (EOF or reset) within `bound`.
fn closed_within(s: &mut TcpStream, bound: Duration) -> bool {
    s.set_read_timeout(Some(bound)).unwrap();
    let mut b = [0u8; 256];
    loop {
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return false,
            Err(_) => return true,
        }
    }
}

#[test]
fn two_http_sessions_sampling_through_one_server_each_get_their_own_answer() {
    let tmp = tempfile::tempdir().unwrap();
    let (cfg, plugins, token) = world(tmp.path(), "");
    let served = serve(&cfg, &plugins, &token, &[], None);
    let go = tmp.path().join("go");
    let run = |label: &'static str| {
        let url = served.url.clone();
        let go = go.clone();
        std::thread::spawn(move || {
            client(&[
                "--http".into(),
                url,
                "--token".into(),
                TOKEN.into(),
                "--mode".into(),
                "sample".into(),
                "--label".into(),
                label.into(),
                "--question".into(),
                format!("secret-of-{label}"),
                // Both calls are in flight before either server asks.
                "--delay".into(),
                "1.5".into(),
                "--go".into(),
                go.display().to_string(),
            ])
        })
    };
    let a = run("A");
    let b = run("B");
    // Both clients are up and waiting (bounded by their own 30 s poll).
    std::thread::sleep(Duration::from_secs(3));
    std::fs::write(&go, "").unwrap();
    let (a, b) = (a.join().unwrap(), b.join().unwrap());
    for (label, r) in [("A", &a), ("B", &b)] {
        assert_eq!(r["call"]["is_error"], false, "{label}: {r:#}");
        let text = r["call"]["text"].as_str().unwrap();
        assert_eq!(text, format!("answer={label}:secret-of-{label}"), "{r:#}");
        assert_eq!(
            r["sampling_seen"],
            serde_json::json!([format!("secret-of-{label}")]),
            "{label} saw another session's request: {r:#}"
        );
    }
}

#[test]
fn a_sampling_request_outside_any_call_is_refused_and_no_client_is_asked() {
    let tmp = tempfile::tempdir().unwrap();
    let (cfg, plugins, token) = world(tmp.path(), "");
    let served = serve(&cfg, &plugins, &token, &[], None);
    let r = http_client(&served, "later", &["--label", "L"]);
    assert_eq!(r["call"]["text"], "scheduled", "{r:#}");
    let outcome = r["outcome"].as_str().unwrap();
    assert!(outcome.starts_with("refused:"), "{outcome}");
    assert!(
        outcome.contains("no call of a gateway client to 'fx' is in flight"),
        "{outcome}"
    );
    assert_eq!(r["sampling_seen"], serde_json::json!([]), "{r:#}");
    // The neighbour keeps working: a call with sampling in it right after.
    let r = http_client(
        &served,
        "sample",
        &["--label", "N", "--question", "still-fine"],
    );
    assert_eq!(r["call"]["text"], "answer=N:still-fine", "{r:#}");
}

#[test]
fn a_client_that_does_not_answer_sampling_in_time_fails_alone_and_the_other_session_is_served() {
    let tmp = tempfile::tempdir().unwrap();
    // fx asks for sampling with a 4 s timeout; fx2 is a second server.
    let extra = format!(
        "    sampling:\n      timeout: 4\n  fx2:\n    command: \"{}\"\n    args: [\"{}\"]\n",
        interop_python().display(),
        fixture().display()
    );
    let (cfg, plugins, token) = world(tmp.path(), &extra);
    let served = serve(&cfg, &plugins, &token, &[], None);
    let asked = tmp.path().join("asked");
    let (url, signal) = (served.url.clone(), asked.display().to_string());
    // A: its call asks for sampling and A's LLM answers only after 10 s,
    // long past the 4 s timeout (the Python SDK reads nothing else while
    // its sampling callback runs, so a callback that never returned would
    // also hide the call's result from A).
    let a = std::thread::spawn(move || {
        client(&[
            "--http".into(),
            url,
            "--token".into(),
            TOKEN.into(),
            "--mode".into(),
            "sample".into(),
            "--label".into(),
            "A".into(),
            "--question".into(),
            "secret-of-A".into(),
            "--llm-delay".into(),
            "10".into(),
            "--signal".into(),
            signal,
        ])
    });
    // B starts once A has been asked, so A's call is in flight meanwhile.
    let b = http_client(
        &served,
        "neighbour",
        &[
            "--label",
            "B",
            "--question",
            "secret-of-B",
            "--go",
            &asked.display().to_string(),
        ],
    );
    let a = a.join().unwrap();
    assert_eq!(a["call"]["is_error"], true, "{a:#}");
    let text = a["call"]["text"].as_str().unwrap_or("");
    assert!(text.contains("did not answer within 4 s"), "{a:#}");
    assert_eq!(
        a["sampling_seen"],
        serde_json::json!(["secret-of-A"]),
        "{a:#}"
    );
    // B's call to the other server ends while A's call still waits.
    assert_eq!(b["other_server"]["text"], "pong", "{b:#}");
    let (b_other, a_end) = (
        b["other_server_end"].as_f64().unwrap(),
        a["call_end"].as_f64().unwrap(),
    );
    assert!(
        b_other < a_end,
        "B's other-server call waited for A: {a:#} {b:#}"
    );
    // B's call to the same server is served, with B's own answer.
    assert_eq!(b["same_server"]["is_error"], false, "{b:#}");
    assert_eq!(b["same_server"]["text"], "answer=B:secret-of-B", "{b:#}");
    assert_eq!(
        b["sampling_seen"],
        serde_json::json!(["secret-of-B"]),
        "{b:#}"
    );
}

#[test]
fn serve_answers_initialize_before_a_silent_server_and_adds_a_late_one() {
    let tmp = tempfile::tempdir().unwrap();
    // `mute` never answers initialize (connect_timeout 300 s); `late`
    // answers after an 8 s cold start.
    let (cfg, plugins, _token) = world(
        tmp.path(),
        &format!(
            "  mute:\n    command: sleep\n    args: [\"600\"]\n    connect_timeout: 300\n  \
             late:\n    command: \"{}\"\n    args: [\"{}\", \"--delay-start\", \"8\"]\n",
            interop_python().display(),
            fixture().display()
        ),
    );
    let r = client(&[
        "--mode".into(),
        "late".into(),
        "--stdio".into(),
        "--".into(),
        wasmgate_bin().display().to_string(),
        "serve".into(),
        "--refresh-seconds".into(),
        "0".into(),
        "--config".into(),
        cfg.display().to_string(),
        "--plugins".into(),
        plugins.display().to_string(),
    ]);
    // The client's initialize (bounded at 20 s in the client) was answered
    // while `mute` was still inside its 300 s connect_timeout and `late`
    // inside its cold start.
    let first: Vec<&str> = r["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(!first.iter().any(|t| t.starts_with("mcp_late_")), "{r:#}");
    assert!(!first.iter().any(|t| t.starts_with("mcp_mute_")), "{r:#}");
    // `late` came in with tools/list_changed, and its tools work.
    let after = r["tools_after"].as_array().unwrap();
    assert!(after.contains(&serde_json::json!("mcp_late_ping")), "{r:#}");
    assert!(after.contains(&serde_json::json!("mcp_fx_ping")), "{r:#}");
    assert_eq!(r["late_call"]["text"], "pong", "{r:#}");
}

#[test]
fn an_upstream_tools_list_changed_reaches_the_client_while_the_call_still_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let (cfg, plugins, token) = world(tmp.path(), "");
    let served = serve(&cfg, &plugins, &token, &[], None);
    // Each round the server adds a tool, notifies, then holds its call
    // 0.4 s. The gateway's watch tick is 1 s: comparing on the tick would
    // get a notification to the client before the call's result in about
    // 40 % of rounds (all five: 1 %); forwarding as it happens, in every one.
    let r = http_client(&served, "change", &["--rounds", "5", "--hold", "0.4"]);
    let rounds = r["rounds"].as_array().unwrap();
    let after: Vec<&Value> = rounds.iter().map(|x| &x["notified_after_s"]).collect();
    eprintln!("tools/list_changed reached the client after {after:?} s (from the call's start)");
    assert_eq!(rounds.len(), 5, "{r:#}");
    for round in rounds {
        assert_eq!(round["call"]["text"], "changed", "{r:#}");
        assert_eq!(round["call_running_when_notified"], true, "{r:#}");
    }
    let tools = r["tools_after"].as_array().unwrap();
    for k in 1..=5 {
        assert!(
            tools.contains(&serde_json::json!(format!("mcp_fx_added_{k}"))),
            "{r:#}"
        );
    }
}

/// The header timeout cuts connections that are late with a request head,
/// never a response in progress: a session idle for three times the
/// timeout still gets its notifications and answers.
#[test]
fn the_header_timeout_spares_an_idle_session_and_its_open_stream() {
    let tmp = tempfile::tempdir().unwrap();
    let (cfg, plugins, token) = world(tmp.path(), "");
    let served = serve(&cfg, &plugins, &token, &["--header-timeout", "1"], None);
    let r = http_client(
        &served,
        "change",
        &["--rounds", "2", "--hold", "2", "--idle-first", "3"],
    );
    let rounds = r["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 2, "{r:#}");
    for round in rounds {
        assert_eq!(round["call"]["text"], "changed", "{r:#}");
        assert_eq!(round["call_running_when_notified"], true, "{r:#}");
    }
}

#[test]
fn a_flood_of_tools_list_changed_is_coalesced_and_memory_stays_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    let (cfg, plugins, token) = world(tmp.path(), "");
    let served = serve(&cfg, &plugins, &token, &[], None);
    // Warm up (the fixture connected, one session served), then measure.
    let r = http_client(&served, "flood", &["--n", "1"]);
    assert_eq!(r["ping"]["text"], "pong", "{r:#}");
    let base = proc_status_kib(served.pid(), "VmRSS:");
    let n: u32 = 50_000;
    let r = http_client(&served, "flood", &["--n", &n.to_string()]);
    assert_eq!(r["flood"]["text"], format!("sent {n}"), "{r:#}");
    // One refresh in flight and one queued per session: each tools/list
    // takes the fixture 50 ms during the flood, so one after the other they
    // are at most one per 50 ms of flood (one per notification would be
    // 50,000 piled up).
    let lists: f64 = r["list_count"].as_str().unwrap().parse().unwrap();
    let flood_s = r["flood_s"].as_f64().unwrap();
    eprintln!("{lists} tools/list for {n} notifications in {flood_s} s");
    assert!(
        lists <= flood_s / 0.05 + 10.0 && lists < f64::from(n) / 10.0,
        "{lists} tools/list for {n} notifications in {flood_s} s: {r:#}"
    );
    assert_eq!(r["ping"]["text"], "pong", "{r:#}");
    let peak = proc_status_kib(served.pid(), "VmHWM:");
    eprintln!("gateway VmRSS before the flood {base} KiB, VmHWM after {peak} KiB");
    // Under 2x the resident size before the flood plus 32 MiB of slack (the
    // uncoalesced gateway grew by gigabytes).
    assert!(
        peak < 2 * base + 32 * 1024,
        "VmHWM {peak} KiB, base {base} KiB"
    );
}

#[test]
fn idle_connections_over_the_cap_do_not_starve_an_authorized_client() {
    let tmp = tempfile::tempdir().unwrap();
    let (cfg, plugins, token) = world(tmp.path(), "");
    let cap = 16;
    let served = serve(
        &cfg,
        &plugins,
        &token,
        &[
            "--max-connections",
            &cap.to_string(),
            "--header-timeout",
            "120",
        ],
        None,
    );
    let base_fds = open_fds(served.pid());
    let mut idle: Vec<TcpStream> = (0..320)
        .map(|_| TcpStream::connect(served.addr).expect("connect"))
        .collect();
    // Authorized clients are still served, again and again.
    for _ in 0..3 {
        let (status, session, body) = initialize(served.addr);
        assert_eq!(status, 200, "{body}");
        assert!(session.is_some(), "{body}");
        assert!(body.contains("wasmgate"), "{body}");
    }
    // The gateway holds at most `cap` of them: the rest were closed.
    let fds = open_fds(served.pid());
    assert!(
        fds <= base_fds + cap + 8,
        "{fds} fds open (base {base_fds}, cap {cap})"
    );
    let closed = idle
        .iter_mut()
        .map(|s| closed_within(s, Duration::from_millis(200)))
        .filter(|closed| *closed)
        .count();
    assert!(
        closed >= 320 - cap,
        "only {closed} of 320 idle connections were closed"
    );
}

#[test]
fn slowloris_headers_are_cut_off_at_the_header_timeout() {
    let tmp = tempfile::tempdir().unwrap();
    let (cfg, plugins, token) = world(tmp.path(), "");
    let served = serve(&cfg, &plugins, &token, &["--header-timeout", "2"], None);
    let mut slow: Vec<TcpStream> = (0..40)
        .map(|_| {
            let mut s = TcpStream::connect(served.addr).unwrap();
            s.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a")
                .unwrap();
            s
        })
        .collect();
    // Meanwhile an authorized client is served.
    let (status, _, body) = initialize(served.addr);
    assert_eq!(status, 200, "{body}");
    // Each is closed once its headers are late (bound: 30 s, far above the
    // 2 s header timeout).
    for (i, s) in slow.iter_mut().enumerate() {
        let _ = s.write_all(b"b");
        assert!(
            closed_within(s, Duration::from_secs(30)),
            "slow connection {i} still open"
        );
    }
}

#[test]
fn sessions_are_capped_expire_when_idle_and_unknown_deletes_are_404() {
    let tmp = tempfile::tempdir().unwrap();
    let (cfg, plugins, token) = world(tmp.path(), "");
    let served = serve(
        &cfg,
        &plugins,
        &token,
        &["--max-sessions", "3", "--session-idle-seconds", "3"],
        None,
    );
    let auth = bearer();
    let mut ids = Vec::new();
    for _ in 0..3 {
        let (status, session, body) = initialize(served.addr);
        assert_eq!(status, 200, "{body}");
        ids.push(session.unwrap());
    }
    let (status, _, body) = initialize(served.addr);
    assert_eq!(status, 503, "{body}");
    assert!(
        body.contains("already holds 3 MCP sessions (--max-sessions)"),
        "{body}"
    );
    // DELETE of a session that never existed: 404, not 202.
    let (status, _, body) = http(
        served.addr,
        "DELETE",
        &[
            ("Authorization", &auth),
            ("Mcp-Session-Id", "no-such-session"),
            ("MCP-Protocol-Version", "2025-06-18"),
        ],
        "",
    );
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("no such MCP session"), "{body}");
    // DELETE of a live one ends it, and makes room.
    let (status, _, body) = http(
        served.addr,
        "DELETE",
        &[
            ("Authorization", &auth),
            ("Mcp-Session-Id", &ids[0]),
            ("MCP-Protocol-Version", "2025-06-18"),
        ],
        "",
    );
    assert!((200..300).contains(&status), "{status} {body}");
    let (status, _, body) = initialize(served.addr);
    assert_eq!(status, 200, "{body}");
    // Full again. Idle sessions expire (3 s) and the cap frees itself: an
    // initialize is refused until then (a refused one creates nothing, and
    // nothing here touches the idle sessions). Bound: 60 s.
    let deadline = Instant::now() + Duration::from_secs(60);
    let admitted = loop {
        let (status, _, body) = initialize(served.addr);
        if status == 200 {
            break true;
        }
        assert_eq!(status, 503, "{body}");
        if Instant::now() > deadline {
            break false;
        }
        std::thread::sleep(Duration::from_millis(300));
    };
    assert!(admitted, "no idle session expired within 60 s");
    // The first idle one is gone: its DELETE is a 404 now.
    let (status, _, body) = http(
        served.addr,
        "DELETE",
        &[
            ("Authorization", &auth),
            ("Mcp-Session-Id", &ids[1]),
            ("MCP-Protocol-Version", "2025-06-18"),
        ],
        "",
    );
    assert_eq!(status, 404, "session {} did not expire: {body}", ids[1]);
}

#[test]
fn out_of_file_descriptors_the_accept_loop_backs_off_and_still_serves() {
    let tmp = tempfile::tempdir().unwrap();
    // No servers: the descriptors are the listener's and the connections'.
    let cfg = tmp.path().join("gateway.yaml");
    std::fs::write(&cfg, "mcp_servers: {}\n").unwrap();
    let w = tmp.path().join("w");
    std::fs::create_dir_all(&w).unwrap();
    let (_, plugins, token) = world(&w, "");
    let served = serve(
        &cfg,
        &plugins,
        &token,
        &["--max-connections", "100000", "--header-timeout", "120"],
        Some(64),
    );
    let _idle: Vec<TcpStream> = (0..200)
        .map(|_| TcpStream::connect(served.addr).expect("connect"))
        .collect();
    // Let it hit the limit, then watch its CPU over 3 s: a loop retrying
    // EMFILE at once burns a whole core (300 ticks at 100 Hz).
    std::thread::sleep(Duration::from_secs(1));
    let before = cpu_ticks(served.pid());
    std::thread::sleep(Duration::from_secs(3));
    let used = cpu_ticks(served.pid()) - before;
    assert!(
        used < 100,
        "{used} clock ticks of CPU in 3 s while out of descriptors"
    );
    let warnings = served.log_lines("accept failed");
    assert!(warnings >= 1, "the accept errors were not logged at all");
    assert!(
        warnings <= 3,
        "{warnings} accept warnings: not rate-limited"
    );
    // An authorized client is still served: the oldest unauthorized
    // connection gives its descriptor up.
    let (status, _, body) = initialize(served.addr);
    assert_eq!(status, 200, "{body}");
}
