//! Liveness `server_json` (`docs/declarations.md` §7): real processes for the
//! pid check and hostile runtime files. A planted token is searched for in
//! every output. The MCP `initialize` at the endpoint is the app-endpoint
//! connect's, tested in `mcp_http_transports.rs`.
#![cfg(unix)]

use crate::common::*;
use std::process::{Command, Stdio};
use wasmgate::resolver::liveness::{Check, read_server_json};
use wasmgate::{AppDef, Liveness, OsFamily};
use wasmgate::{Platform, RealPlatform};

const SECRET: &str = "s3cr3t-PLANTED-token-9f8e7d";

fn live_app(path: &str, endpoint_path: &str) -> AppDef {
    let mut a = exe_app(OsFamily::Linux, vec![crate::common::path("/opt/x")]);
    a.liveness = Liveness::ServerJson {
        path: path.into(),
        pid_key: "pid".into(),
        url_key: "http".into(),
        token_key: "token".into(),
        endpoint_path: endpoint_path.into(),
    };
    a
}

/// Evaluates one runtime file on a simulated linux host where pid 4242 lives.
fn eval(content: &[u8], endpoint_path: &str) -> wasmgate::resolver::liveness::LivenessReport {
    let mut h = Host::new(OsFamily::Linux, "");
    h.yaml("processes: [4242]\n");
    h.file_with("/run/t/server.json", 0o644, content);
    let host = h.load();
    let r = read_server_json(&live_app("/run/t/server.json", endpoint_path), &host);
    let shown = format!("{r:?} {}", r.detail);
    assert!(!shown.contains(SECRET), "token leaked: {shown}");
    r
}

#[test]
fn custom_keys_localhost_and_declared_endpoint_path() {
    let mut h = Host::new(OsFamily::Linux, "");
    h.yaml("processes: [4242]\n");
    h.file_with(
        "/run/thing/server.json",
        0o644,
        br#"{"processId": 4242, "url": "http://localhost:5000/ignored?q=1", "bearer": "b-2"}"#,
    );
    let mut app = live_app("/run/thing/server.json", "/rpc/v1");
    app.liveness = Liveness::ServerJson {
        path: "/run/thing/server.json".into(),
        pid_key: "processId".into(),
        url_key: "url".into(),
        token_key: "bearer".into(),
        endpoint_path: "/rpc/v1".into(),
    };
    let r = read_server_json(&app, &h.load());
    assert_eq!(
        (r.running, r.endpoint_state),
        (Check::Present, Check::Present)
    );
    let e = r.endpoint.unwrap();
    assert_eq!(e.url, "http://localhost:5000/rpc/v1");
    assert_eq!(
        e.dial.to_string(),
        "127.0.0.1:5000",
        "localhost is never resolved by name"
    );
    assert_eq!(e.token.expose(), "b-2");
    assert!(!format!("{e:?}").contains("b-2"));
}

#[test]
fn ipv6_loopback_keeps_brackets() {
    let body = format!(r#"{{"pid": 4242, "http": "http://[::1]:8765", "token": "{SECRET}"}}"#);
    let r = eval(body.as_bytes(), "/mcp");
    assert_eq!(r.endpoint.unwrap().url, "http://[::1]:8765/mcp");
}

#[test]
fn hostile_runtime_files_are_refused_without_leaking_the_token() {
    let url_cases = [
        "http://example.com:1234/mcp",
        "http://127.0.0.2:1234/mcp",
        "http://0.0.0.0:1234/mcp",
        "https://127.0.0.1:1234/mcp",
        "http://user:pw@127.0.0.1:1234/mcp",
        "http://127.0.0.1@example.com:80/mcp",
        "http://127.0.0.1/mcp",
        "http://127.0.0.1:0/mcp",
        "http://127.0.0.1:99999/mcp",
        "http://127.0.0.1:12a/mcp",
        "http://[::1]/mcp",
        "ftp://127.0.0.1:21/",
        "",
    ];
    for url in url_cases {
        let body = format!(r#"{{"pid": 4242, "http": "{url}", "token": "{SECRET}"}}"#);
        let r = eval(body.as_bytes(), "/mcp");
        assert_eq!(r.endpoint_state, Check::Unavailable, "{url}");
        assert!(r.endpoint.is_none(), "{url}");
    }
    // An endpoint_path that would move the authority (the parser rejects it;
    // the runtime check holds even for a hand-built AppDef).
    for ep in [
        "@attacker.example/",
        "mcp",
        "/mcp?token=1",
        "/a/../../b",
        "/mcp x",
    ] {
        let body =
            format!(r#"{{"pid": 4242, "http": "http://127.0.0.1:9/", "token": "{SECRET}"}}"#);
        let r = eval(body.as_bytes(), ep);
        assert_eq!(r.endpoint_state, Check::Unavailable, "{ep}");
    }
    // Tokens that are not header-safe.
    for tok in [
        format!("{SECRET}\\r\\nX-Evil: 1"),
        format!("{SECRET}\\n"),
        format!("a b{SECRET}"),
    ] {
        let body = format!(r#"{{"pid": 4242, "http": "http://127.0.0.1:9/", "token": "{tok}"}}"#);
        let r = eval(body.as_bytes(), "/mcp");
        assert_eq!(r.endpoint_state, Check::Unavailable, "{tok}");
        assert!(r.endpoint.is_none());
    }
    // Pids that are not usable.
    for pid in [
        "true",
        "false",
        "4242.0",
        "-1",
        "0",
        "2147483648",
        "\"4242\"",
        "null",
        "1.5e3",
    ] {
        let body =
            format!(r#"{{"pid": {pid}, "http": "http://127.0.0.1:9/", "token": "{SECRET}"}}"#);
        let r = eval(body.as_bytes(), "/mcp");
        assert_eq!(r.running, Check::Unavailable, "pid {pid}");
        assert!(r.endpoint.is_none());
    }
    // Not an object, not JSON, and too large.
    for body in [
        format!(r#"["{SECRET}"]"#).into_bytes(),
        format!("pid=4242 token={SECRET}").into_bytes(),
        {
            let mut b = format!(
                r#"{{"pid": 4242, "http": "http://127.0.0.1:9/", "token": "{SECRET}", "pad": ""#
            )
            .into_bytes();
            b.extend(std::iter::repeat_n(b'x', 70 * 1024));
            b.extend_from_slice(b"\"}");
            b
        },
    ] {
        let r = eval(&body, "/mcp");
        assert_eq!(
            (r.running, r.endpoint_state),
            (Check::Absent, Check::Absent)
        );
    }
}

#[test]
fn dead_pid_gives_no_endpoint() {
    let r = eval(
        br#"{"pid": 4206937, "http": "http://127.0.0.1:1/mcp"}"#,
        "/mcp",
    );
    assert_eq!(r.running, Check::Absent);
    assert!(r.endpoint.is_none());
}

#[test]
fn real_child_process_liveness() {
    let real = RealPlatform::new();
    let mut child = Command::new("sleep")
        .arg("30")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    assert!(real.process_alive(pid));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!real.process_alive(pid));
    assert!(
        real.process_alive(1),
        "init exists (EPERM or not, it is alive)"
    );
    assert!(!real.process_alive(0));
    assert!(!real.process_alive(u32::MAX));

    // End to end on this machine: a runtime file naming our own pid.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("server.json");
    std::fs::write(
        &file,
        format!(
            r#"{{"pid": {}, "http": "http://127.0.0.1:8765", "token": "{SECRET}"}}"#,
            std::process::id()
        ),
    )
    .unwrap();
    let r = read_server_json(&live_app(file.to_str().unwrap(), "/mcp"), &real);
    assert_eq!(
        (r.running, r.endpoint_state),
        (Check::Present, Check::Present)
    );
    assert!(!format!("{r:?}").contains(SECRET));
}
