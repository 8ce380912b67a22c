//! `wasmgate serve` driven by a client we did not write: the official Python
//! MCP SDK (`mcp`, pinned in `.ci/run`), over stdio and over streamable HTTP
//! (`docs/mcp-client.md` §7). The script `tests/python/gateway_client.py` lists,
//! calls, reads skills, makes an application appear mid-session (an
//! executable created in a temporary PATH folder) and removes a plugin
//! folder mid-session; it prints what it saw and these tests judge it.
//!
//! Linux only: the appearing application is declared under `app.linux`.
#![cfg(target_os = "linux")]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use wasmgate_conformance::{ServedHttp, git_repo, plugins_dir, wasmgate_bin};

/// The temporary world of one scenario.
struct World {
    _tmp: tempfile::TempDir,
    /// A git repository with two commits.
    repo: PathBuf,
    /// Plugin folder holding the `appear` plugin (a `plugin.yaml`).
    plugins: PathBuf,
    /// Folder put first on the gateway's PATH; empty at start.
    bin: PathBuf,
    /// The command name the `appear` server's declaration looks for.
    app: String,
}

fn world() -> World {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    git_repo(&repo, &["first gateway commit", "second gateway commit"]);

    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let app = format!("wasmgate-appear-{}-{nanos}", std::process::id());

    let plugins = tmp.path().join("plugins");
    let appear = plugins.join("appear");
    std::fs::create_dir_all(&appear).unwrap();
    let server = plugins_dir().join("git").join("git-mcp-server");
    assert!(server.is_file(), "{} is built", server.display());
    let yaml = format!(
        r#"name: appear
version: "0.1.0"
mcp_servers:
  appear:
    command: "{server}"
    app:
      linux:
        presence: executable
        location:
          - kind: command
            name: {app}
    requires:
      app: true
skills:
  - name: appear-skill
    markdown: |
      ---
      name: appear-skill
      description: Use the appear application's tools.
      requires_apps: [appear]
      ---
      # Appear
      Call mcp_appear_log.
"#,
        server = server.display()
    );
    std::fs::write(appear.join("plugin.yaml"), yaml).unwrap();
    World {
        _tmp: tmp,
        repo,
        plugins,
        bin,
        app,
    }
}

/// PATH with `first` in front.
fn path_with(first: &Path) -> std::ffi::OsString {
    let mut dirs = vec![first.to_path_buf()];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(dirs).unwrap()
}

/// Runs the Python client; returns its JSON report.
fn python(w: &World, args: &[String]) -> Value {
    let path = path_with(&w.bin);
    wasmgate_conformance::python_json("gateway_client.py", args, |c| {
        c.env("PATH", path);
    })
}

fn names(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("a list: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

/// What every scenario must have seen before the mid-session steps.
fn check_common(r: &Value, w: &World) {
    assert_eq!(r["server_name"], "wasmgate", "{r:#}");
    assert_eq!(r["capabilities"]["tools_list_changed"], true, "{r:#}");
    let tools = names(&r["tools"]);
    assert!(tools.contains(&"mcp_git_log".to_owned()), "{tools:?}");
    assert!(tools.contains(&"mcp_git_status".to_owned()), "{tools:?}");
    assert!(
        !tools.iter().any(|t| t.starts_with("mcp_blender_")),
        "blender is not installed, its tools are gated: {tools:?}"
    );
    assert!(
        !tools.iter().any(|t| t.starts_with("mcp_appear_")),
        "the appear application does not exist yet: {tools:?}"
    );
    // Input schemas are the server's own.
    let schema = &r["schemas"]["mcp_git_log"];
    assert_eq!(schema["type"], "object", "{schema}");
    assert!(schema["properties"]["max_count"].is_object(), "{schema}");

    let log = &r["git_log"];
    assert_eq!(log["is_error"], false, "{log:#}");
    let text = log["text"].as_str().unwrap();
    assert!(text.contains("second gateway commit"), "{text}");
    assert!(text.contains("first gateway commit"), "{text}");
    assert_eq!(
        log["structured"]["commits"].as_array().map(Vec::len),
        Some(2),
        "{log:#}"
    );
    // A tool error stays a tool error the agent can read.
    assert_eq!(r["git_log_bad_path"]["is_error"], true, "{r:#}");
    assert!(
        r["git_log_bad_path"]["text"]
            .as_str()
            .unwrap()
            .contains("no-such-dir"),
        "{r:#}"
    );
    // A gated or unknown tool is a clear protocol error.
    let gated = r["gated_call"]["error"].as_str().unwrap_or_default();
    assert!(
        gated.contains("no tool named 'mcp_blender_render' is offered"),
        "{r:#}"
    );
    // Hidden skills are in neither list.
    let prompts = names(&r["prompts"]);
    assert!(
        !prompts.contains(&"skill_appear-skill".to_owned()),
        "{prompts:?}"
    );
    let _ = w;
}

/// What the mid-session steps must have seen.
fn check_live(r: &Value) {
    assert_eq!(r["appear_notified"], true, "no tools/list_changed: {r:#}");
    let after = names(&r["tools_after_appear"]);
    assert!(after.contains(&"mcp_appear_log".to_owned()), "{after:?}");
    assert!(after.contains(&"mcp_git_log".to_owned()), "{after:?}");
    let call = &r["appear_call"];
    assert_eq!(call["is_error"], false, "{call:#}");
    assert!(
        call["text"]
            .as_str()
            .unwrap()
            .contains("second gateway commit"),
        "{call:#}"
    );
    assert_eq!(
        r["remove_notified"], true,
        "no list_changed on removal: {r:#}"
    );
    let gone = names(&r["tools_after_remove"]);
    assert!(
        !gone.iter().any(|t| t.starts_with("mcp_appear_")),
        "{gone:?}"
    );
    assert!(gone.contains(&"mcp_git_log".to_owned()), "{gone:?}");
}

fn live_args(w: &World) -> Vec<String> {
    vec![
        "--repo".into(),
        w.repo.display().to_string(),
        "--appear-dir".into(),
        w.bin.display().to_string(),
        "--appear-cmd".into(),
        w.app.clone(),
        "--appear-tool".into(),
        "mcp_appear_log".into(),
        "--remove-plugin".into(),
        w.plugins.join("appear").display().to_string(),
    ]
}

#[test]
fn gateway_stdio_python_sdk_lists_calls_and_follows_an_application_appearing() {
    let w = world();
    let mut args = live_args(&w);
    args.extend([
        "--stdio".to_owned(),
        "--".to_owned(),
        wasmgate_bin().display().to_string(),
        "serve".into(),
        "--dev".into(),
        "--refresh-seconds".into(),
        "1".into(),
        "--plugins".into(),
        plugins_dir().display().to_string(),
        "--plugins".into(),
        w.plugins.display().to_string(),
    ]);
    let r = python(&w, &args);
    check_common(&r, &w);
    // The git plugin's skill is visible (git is installed): a prompt and a resource.
    let prompts = names(&r["prompts"]);
    assert!(prompts.iter().any(|p| p.starts_with("skill_")), "{r:#}");
    let text = r["first_prompt"]["text"].as_str().unwrap();
    assert!(!text.is_empty(), "{r:#}");
    assert_eq!(r["first_resource"]["mime"], "text/markdown", "{r:#}");
    assert!(
        r["first_resource"]["uri"]
            .as_str()
            .unwrap()
            .starts_with("skill://"),
        "{r:#}"
    );
    check_live(&r);
}

fn serve_http(w: &World, token_file: &Path) -> ServedHttp {
    let plugins = plugins_dir();
    let path = path_with(&w.bin);
    wasmgate_conformance::serve_http(
        &[
            "--token-file".as_ref(),
            token_file.as_os_str(),
            "--plugins".as_ref(),
            plugins.as_os_str(),
            "--plugins".as_ref(),
            w.plugins.as_os_str(),
        ],
        |c| {
            c.env("PATH", path);
        },
    )
}

#[test]
fn gateway_http_python_sdk_with_bearer_token_and_sighup_refresh() {
    let w = world();
    let token_file = w.plugins.parent().unwrap().join("token");
    std::fs::write(&token_file, "s3cret-gateway-token\n").unwrap();
    let served = serve_http(&w, &token_file);
    let mut args = live_args(&w);
    args.extend([
        "--http".to_owned(),
        served.url.clone(),
        "--token".into(),
        "s3cret-gateway-token".into(),
        "--hup-pid".into(),
        served.child.id().to_string(),
    ]);
    let r = python(&w, &args);
    assert_eq!(r["no_token_status"], 401, "{r:#}");
    assert_eq!(r["wrong_token_status"], 401, "{r:#}");
    // DNS rebinding / cross-site pages: a browser Origin that is not
    // loopback is refused even with the token; a loopback one is not.
    assert_eq!(r["foreign_origin_status"], 403, "{r:#}");
    // A refusal closes its connection and says so: answered before the
    // body is read, the connection could not serve the client's next
    // request (httpx reuses it: "Server disconnected without sending a
    // response").
    assert_eq!(r["no_token_connection"], "close", "{r:#}");
    assert_eq!(r["foreign_origin_connection"], "close", "{r:#}");
    assert_ne!(r["loopback_origin_status"], 403, "{r:#}");
    assert_ne!(r["loopback_origin_status"], 401, "{r:#}");
    check_common(&r, &w);
    check_live(&r);
}

#[test]
fn serve_refuses_a_non_loopback_address_and_a_token_on_nothing() {
    let out = Command::new(wasmgate_bin())
        .args(["serve", "--http", "0.0.0.0:0"])
        .env_remove("WASMGATE_PLUGINS")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "a usage error");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not loopback"), "{err}");

    // There is no --token flag: a token never goes on the command line.
    let out = Command::new(wasmgate_bin())
        .args(["serve", "--http", "127.0.0.1:0", "--token", "x"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "clap refuses --token");

    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty-token");
    std::fs::write(&empty, "  \n").unwrap();
    let out = Command::new(wasmgate_bin())
        .args(["serve", "--http", "127.0.0.1:0", "--token-file"])
        .arg(&empty)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "a usage error");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("token is empty"), "{err}");
    // A token no client could send (a second line) is refused at start.
    std::fs::write(&empty, "tok\nsecond\n").unwrap();
    let out = Command::new(wasmgate_bin())
        .args(["serve", "--http", "127.0.0.1:0", "--token-file"])
        .arg(&empty)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("a line break") && !err.contains("second"),
        "{err}"
    );
}
