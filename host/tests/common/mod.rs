//! Helpers shared by the host's integration tests (each test binary
//! includes this module and uses part of it).
#![allow(dead_code, unused_imports)]

use std::path::{Path, PathBuf};

#[path = "../../../tests/src/sibling.rs"]
mod sibling;
pub use sibling::sibling_bin;

#[path = "../../../tests/src/git.rs"]
mod git;
pub use git::{git, git_repo};

/// Our git MCP server (`example-plugins/git-mcp-server`).
pub fn git_server_bin() -> PathBuf {
    sibling_bin("git-mcp-server")
}

/// A child process killed (and reaped) when the test ends.
pub struct Proc(pub std::process::Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Our git MCP server over streamable HTTP on `addr`, requiring `token`,
/// writing its runtime file to `server_json` when given (it plays a desktop
/// application that hosts its own MCP server).
pub fn http_git_server(addr: &str, token: Option<&str>, server_json: Option<&Path>) -> Proc {
    use std::process::{Command, Stdio};
    let mut cmd = Command::new(git_server_bin());
    cmd.args(["--http", addr])
        .env_remove("GIT_MCP_SERVER_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(t) = token {
        cmd.env("GIT_MCP_SERVER_TOKEN", t);
    }
    if let Some(p) = server_json {
        cmd.arg("--server-json").arg(p);
    }
    Proc(cmd.spawn().expect("git-mcp-server starts"))
}

/// Waits (at most 30 s) until `path` is a file.
pub fn wait_for_file(path: &Path) {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !path.is_file() {
        assert!(
            std::time::Instant::now() < until,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A log sink shared with the test: every line written by the subscriber
/// [`capture_logs`] installs.
#[derive(Clone, Default)]
pub struct Sink(pub std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Sink {
    /// What was logged so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

/// Captures every log line of this (current-thread) test at debug level,
/// rmcp's own included, until the guard drops.
pub fn capture_logs() -> (Sink, tracing::subscriber::DefaultGuard) {
    let sink = Sink::default();
    let writer = sink.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    (sink, tracing::subscriber::set_default(subscriber))
}

/// The folder `cargo xtask interop` installs the pinned third-party test
/// software into: `$WASMGATE_INTEROP_DIR`, else `<workspace>/target/interop`.
///
/// # Panics
/// When it holds no finished install, with the command that makes one.
pub fn interop_dir() -> PathBuf {
    let dir = match std::env::var_os("WASMGATE_INTEROP_DIR") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/interop"),
    };
    assert!(
        dir.join("installed.sha256").is_file(),
        "no interop install in {}: run `cargo xtask interop` (it installs the pinned \
         npm packages and the Python venvs of tests/interop/), or set WASMGATE_INTEROP_DIR",
        dir.display()
    );
    dir
}

/// The Python interpreter of the interop SDK venv (`venv-sdk/bin/python`),
/// which holds the pins of `tests/interop/requirements-sdk.txt` (the
/// official MCP SDK `mcp==1.30.0` among them).
/// Tests run Python only through it, never the system's `python3`.
pub fn interop_python() -> PathBuf {
    let python = interop_dir().join("venv-sdk/bin/python");
    assert!(
        python.is_file(),
        "{} is missing: run `cargo xtask interop`",
        python.display()
    );
    python
}
