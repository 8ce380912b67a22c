//! Helpers shared by the host's integration tests (each test binary
//! includes this module and uses part of it).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// A binary of this workspace built beside the test executable
/// (`target/<profile>/<name>`), e.g. `git-mcp-server`, which `cargo test` at
/// the workspace root builds since its package is a default member.
///
/// # Panics
/// When it is missing (the message says how to build it).
pub fn sibling_bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>");
    let bin = dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.is_file(),
        "{} is missing: build it first with `cargo build -p {name}`",
        bin.display()
    );
    bin
}

/// Our git MCP server (`example-plugins/git-mcp-server`).
pub fn git_server_bin() -> PathBuf {
    sibling_bin("git-mcp-server")
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
