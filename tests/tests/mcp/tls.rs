//! HTTPS to an MCP server: streamable HTTP behind TLS (the official Python
//! SDK's FastMCP app under uvicorn, `tests/python/tls_server.py`), through
//! the real `wasmgate` binary. Remote MCP servers are often
//! `https://` URLs, so the client must speak TLS and verify certificates
//! against the system's trust store (`SSL_CERT_FILE` adds a CA, as for any
//! OpenSSL program): trusted → tools listed and called; not trusted → the
//! server is `failed` with an error naming the certificate, and the other
//! server in the same config still connects.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use wasmgate_conformance::{
    git_server_bin, interop_python, status_server, stdout_json, wasmgate_dev, workspace_root,
};

struct Server {
    _child: wasmgate_conformance::KillOnDrop,
    port: u16,
}

/// Starts the TLS server; its CA certificate is written to `ca`.
fn tls_server(ca: &Path) -> Server {
    let mut child = Command::new(interop_python())
        .arg(workspace_root().join("tests/python/tls_server.py"))
        .arg(ca)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the interop venv's python (with the `mcp` package) runs the TLS server");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(p) = line.strip_prefix("PORT ") {
                let _ = tx.send(p.trim().parse::<u16>().unwrap());
            }
        }
    });
    let port = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the TLS server printed its port");
    Server {
        _child: wasmgate_conformance::KillOnDrop(child),
        port,
    }
}

fn wasmgate(dir: &Path, args: &[&str]) -> Command {
    let mut c = wasmgate_dev();
    c.args(args)
        .args(["--json", "--config"])
        .arg(dir.join("config.yaml"))
        .arg("--plugins")
        .arg(dir.join("no-plugins"))
        .env_remove("WASMGATE_PLUGINS")
        .env_remove("WASMGATE_CONFIG")
        .env_remove("SSL_CERT_FILE")
        .env_remove("SSL_CERT_DIR")
        .env("WASMGATE_CACHE", "")
        .stdin(Stdio::null());
    c
}

#[test]
fn https_servers_are_verified_against_the_trust_store() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("no-plugins")).unwrap();
    let ca = dir.path().join("ca.pem");
    let tls = tls_server(&ca);
    std::fs::write(
        dir.path().join("config.yaml"),
        format!(
            "mcp_servers:\n  secure:\n    url: https://127.0.0.1:{port}/mcp\n    connect_timeout: 30\n  local:\n    command: {git}\n",
            port = tls.port,
            git = git_server_bin().display()
        ),
    )
    .unwrap();

    // Trusted: the CA is added the way any OpenSSL program takes one.
    let out = wasmgate(dir.path(), &["status"])
        .env("SSL_CERT_FILE", &ca)
        .output()
        .unwrap();
    let st = stdout_json(&out);
    let secure = status_server(&st, "secure");
    assert_eq!(secure["connection"], "connected", "{secure:#}");
    assert_eq!(secure["tools"], serde_json::json!(["mcp_secure_echo"]));
    let out = wasmgate(
        dir.path(),
        &[
            "call",
            "mcp_secure_echo",
            "--args",
            r#"{"text": "over TLS"}"#,
        ],
    )
    .env("SSL_CERT_FILE", &ca)
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("secure echo: over TLS"), "{text}");

    // Not trusted: a clear failure for that server only.
    let out = wasmgate(dir.path(), &["status"]).output().unwrap();
    let st = stdout_json(&out);
    let secure = status_server(&st, "secure");
    assert_eq!(secure["connection"], "failed", "{secure:#}");
    let e = secure["last_error"].as_str().unwrap();
    assert!(
        e.contains("failed to connect to MCP server 'secure'") && e.contains("certificate"),
        "{e}"
    );
    assert_eq!(
        status_server(&st, "local")["connection"],
        "connected",
        "{st:#}"
    );

    // Plain http:// to the TLS port: the hang-up is explained.
    std::fs::write(
        dir.path().join("config.yaml"),
        format!(
            "mcp_servers:\n  plain:\n    url: http://127.0.0.1:{port}/mcp\n    connect_timeout: 30\n",
            port = tls.port
        ),
    )
    .unwrap();
    let out = wasmgate(dir.path(), &["status"]).output().unwrap();
    let st = stdout_json(&out);
    let plain = status_server(&st, "plain");
    assert_eq!(plain["connection"], "failed", "{plain:#}");
    let e = plain["last_error"].as_str().unwrap();
    assert!(e.contains("use an https:// URL"), "{e}");
}
