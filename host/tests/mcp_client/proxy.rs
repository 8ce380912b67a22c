//! HTTP proxies the right way round (`docs/mcp-client.md` §8, "Proxies (HTTP servers)"), with
//! real processes: `wasmgate` run with `HTTP_PROXY` pointing at a small
//! forward proxy of this test (loopback), and MCP servers on loopback.
//!
//! - a remote `url:` server (a name that only the proxy resolves) goes
//!   through the proxy;
//! - a `127.0.0.1` server and the app endpoint are dialled directly: the
//!   proxy never sees them, nor their bearer tokens;
//! - `NO_PROXY` sends a remote-looking server (`0.0.0.0`, which this
//!   machine answers itself) directly.
//!
//! The proxy forwards every connection to the fixture server whatever host
//! it names, so nothing outside this machine is ever contacted.
#![cfg(unix)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const LOOPBACK_TOKEN: &str = "loopTok-5e4d3c2b1a09f8e7";
const APP_TOKEN: &str = "appTok-proxy-77aa66bb55cc";

fn server_py() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/edges_mcp_server.py")
}

struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn http_server(dir: &Path) -> (Proc, u16) {
    let port_file = dir.join("port");
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

/// What the proxy saw: every byte each client sent it.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<u8>>>);

impl Seen {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

/// A forward proxy on 127.0.0.1: every client connection is piped to
/// `upstream` (whatever host its request names); bytes from the client are
/// recorded. The listener thread ends with the test process.
fn proxy(upstream: u16) -> (u16, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Seen::default();
    let s = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(client) = conn else { continue };
            let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                continue;
            };
            let (mut c_read, mut s_write) =
                (client.try_clone().unwrap(), server.try_clone().unwrap());
            let record = s.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 16 * 1024];
                loop {
                    match c_read.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            record.0.lock().unwrap().extend_from_slice(&buf[..n]);
                            if s_write.write_all(&buf[..n]).is_err() {
                                break;
                            }
                        }
                    }
                }
                let _ = s_write.shutdown(std::net::Shutdown::Write);
            });
            let (mut s_read, mut c_write) = (server, client);
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut s_read, &mut c_write);
                let _ = c_write.shutdown(std::net::Shutdown::Write);
            });
        }
    });
    (port, seen)
}

/// `wasmgate <args> --config FILE` with `env` on top of a clean proxy setting.
fn wasmgate(dir: &Path, config: &str, args: &[&str], env: &[(&str, String)]) -> Output {
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
        .env_remove("WASMGATE_PLUGINS");
    for v in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "NO_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "no_proxy",
    ] {
        cmd.env_remove(v);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(90);
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if Instant::now() > until {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("wasmgate hung: {}", String::from_utf8_lossy(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn connections(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut m = serde_json::Map::new();
    for s in v["servers"].as_array().unwrap() {
        m.insert(
            s["name"].as_str().unwrap().to_string(),
            serde_json::json!([s["connection"], s["last_error"]]),
        );
    }
    serde_json::Value::Object(m)
}

#[test]
fn remote_servers_use_the_proxy_and_loopback_never_does() {
    let t = tempfile::tempdir().unwrap();
    let (_server, port) = http_server(t.path());
    let (proxy_port, seen) = proxy(port);

    // The app endpoint: the git MCP server in --http mode writes its
    // server_json with a loopback URL and a token.
    let sj = t.path().join("server.json");
    let mut app = Command::new(crate::common::git_server_bin());
    app.args(["--http", "127.0.0.1:0", "--server-json"])
        .arg(&sj)
        .env("GIT_MCP_SERVER_TOKEN", APP_TOKEN)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let _app = Proc(app.spawn().expect("git-mcp-server starts"));
    let until = Instant::now() + Duration::from_secs(60);
    while !sj.is_file() {
        assert!(Instant::now() < until, "server.json never appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
    let bin = crate::common::git_server_bin();
    let config = format!(
        r#"mcp_servers:
  remote:
    url: http://mcp.remote.test/mcp
  local:
    url: http://127.0.0.1:{port}/mcp
    headers: {{Authorization: "Bearer {LOOPBACK_TOKEN}"}}
  named:
    url: http://localhost:{port}/mcp
  desk:
    app_endpoint: true
    app:
      linux:
        presence: executable
        location: "{bin}"
        liveness: {{kind: server_json, path: "{sj}"}}
"#,
        bin = bin.display(),
        sj = sj.display()
    );
    let env = [("HTTP_PROXY", format!("http://127.0.0.1:{proxy_port}"))];
    let out = wasmgate(t.path(), &config, &["status", "--json"], &env);
    let c = connections(&out);
    for name in ["remote", "local", "named", "desk"] {
        assert_eq!(c[name][0], "connected", "{name}: {c}");
    }
    let text = seen.text();
    assert!(
        text.contains("POST http://mcp.remote.test/mcp HTTP/1.1"),
        "the remote server went through the proxy: {text}"
    );
    for direct in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        LOOPBACK_TOKEN.to_string(),
        APP_TOKEN.to_string(),
    ] {
        assert!(
            !text.contains(&direct),
            "{direct} reached the proxy: {text}"
        );
    }

    // A call through the proxy: streamable HTTP keeps the unknown block too.
    let out = wasmgate(t.path(), &config, &["call", "mcp_remote_mixed"], &env);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("[content block of unknown type \"hologram\"]"),
        "{stdout}"
    );
}

#[test]
fn no_proxy_sends_a_remote_looking_server_directly() {
    let t = tempfile::tempdir().unwrap();
    let (_server, port) = http_server(t.path());
    let (proxy_port, seen) = proxy(port);
    // `0.0.0.0` is not loopback by its address, so a proxy applies to it;
    // this machine answers it itself, so the direct way works too.
    let config = format!("mcp_servers:\n  wide:\n    url: http://0.0.0.0:{port}/mcp\n");
    let proxy_env = ("HTTP_PROXY", format!("http://127.0.0.1:{proxy_port}"));

    let out = wasmgate(
        t.path(),
        &config,
        &["status", "--json"],
        std::slice::from_ref(&proxy_env),
    );
    assert_eq!(connections(&out)["wide"][0], "connected");
    assert!(
        seen.text().contains(&format!("http://0.0.0.0:{port}/mcp")),
        "{}",
        seen.text()
    );

    let before = seen.text().len();
    for no_proxy in ["0.0.0.0", "example.org,0.0.0.0"] {
        let out = wasmgate(
            t.path(),
            &config,
            &["status", "--json"],
            &[proxy_env.clone(), ("NO_PROXY", no_proxy.to_string())],
        );
        assert_eq!(connections(&out)["wide"][0], "connected", "{no_proxy}");
    }
    assert_eq!(
        seen.text().len(),
        before,
        "NO_PROXY hosts never reach the proxy"
    );
}
