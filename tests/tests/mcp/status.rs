//! The MCP client's "Done when" through the real `wasmgate` binary
//! (`docs/mcp-client.md` §6): `wasmgate status --json` on a config with a
//! broken server, a gated server and two healthy ones (one stdio, one
//! app-endpoint over streamable HTTP with the application's bearer token)
//! shows each correctly while the healthy ones serve `wasmgate call`s; and
//! the default config path (`<user config dir>/wasmgate/config.yaml`, or
//! `$WASMGATE_CONFIG`) when `--config` is not given.

#![cfg(unix)]

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
use wasmgate_conformance::{
    git_server_bin, status_server, stdout_json, wasmgate_bin, wasmgate_dev, workspace_root,
};

/// The application's bearer token (an unusual shape: only a literal match finds it).
const APP_TOKEN: &str = "deskTok-5c4b3a2918f7e6d5c4b3";

/// `wasmgate` with a clean environment for config and plugin defaults.
fn wasmgate(home: &Path) -> Command {
    let mut c = wasmgate_dev();
    c.current_dir(workspace_root())
        .env_remove("WASMGATE_PLUGINS")
        .env_remove("WASMGATE_CONFIG")
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("xdg"))
        .env("WASMGATE_CACHE", "");
    c
}

/// A child process killed when the test ends.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_for_file(path: &Path) {
    let until = Instant::now() + Duration::from_secs(60);
    while !path.is_file() {
        assert!(Instant::now() < until, "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn status_shows_broken_gated_and_healthy_servers_while_the_healthy_ones_serve_calls() {
    let dir = tempfile::tempdir().unwrap();
    let git = git_server_bin();
    // The application: our git MCP server on loopback HTTP, writing its
    // runtime file with URL and token like a desktop application does.
    let sj = dir.path().join("desk-server.json");
    let _app = Proc(
        Command::new(&git)
            .args(["--http", "127.0.0.1:0", "--server-json"])
            .arg(&sj)
            .env("GIT_MCP_SERVER_TOKEN", APP_TOKEN)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("git-mcp-server --http starts"),
    );
    wait_for_file(&sj);

    // Each stdio command first touches a marker file, so a spawn leaves a trace.
    let gated_marker = dir.path().join("gated-was-spawned");
    let healthy_marker = dir.path().join("healthy-was-spawned");
    let spawn_with_marker = |marker: &Path| {
        format!(
            "command: sh\n    args: [\"-c\", \"touch '{}'; exec '{}'\"]",
            marker.display(),
            git.display()
        )
    };
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        format!(
            r#"mcp_servers:
  broken:
    command: wasmgate-no-such-command-xyz
  gated:
    {gated}
    app:
      linux: {{presence: executable, location: /nonexistent/wasmgate-test-app/bin/app}}
      darwin: {{presence: executable, location: /nonexistent/wasmgate-test-app/bin/app}}
    requires: {{app: true}}
  healthy-one:
    {healthy}
  healthy-two:
    app_endpoint: true
    app:
      linux:
        presence: executable
        location: "{git}"
        liveness: {{kind: server_json, path: "{sj}"}}
      darwin:
        presence: executable
        location: "{git}"
        liveness: {{kind: server_json, path: "{sj}"}}
    requires: {{app: true}}
"#,
            gated = spawn_with_marker(&gated_marker),
            healthy = spawn_with_marker(&healthy_marker),
            git = git.display(),
            sj = sj.display(),
        ),
    )
    .unwrap();
    let cfg = config.to_str().unwrap().to_string();
    let repo = workspace_root().display().to_string();

    // Status and a call on each healthy server, all at once.
    let run = |args: Vec<String>| {
        let home = dir.path().to_path_buf();
        std::thread::spawn(move || wasmgate(&home).args(&args).output().unwrap())
    };
    let status = run(vec![
        "status".into(),
        "--json".into(),
        "--config".into(),
        cfg.clone(),
    ]);
    let calls: Vec<_> = ["mcp_healthy_one_status", "mcp_healthy_two_log"]
        .into_iter()
        .map(|tool| {
            run(vec![
                "call".into(),
                tool.into(),
                "--json".into(),
                "--config".into(),
                cfg.clone(),
                "--args".into(),
                serde_json::json!({"path": repo, "max_count": 2}).to_string(),
            ])
        })
        .collect();
    let status_out = status.join().unwrap();
    let call_outs: Vec<Output> = calls.into_iter().map(|c| c.join().unwrap()).collect();

    assert!(
        status_out.status.success(),
        "{}",
        String::from_utf8_lossy(&status_out.stderr)
    );
    let st = stdout_json(&status_out);

    let broken = status_server(&st, "broken");
    assert_eq!(broken["connection"], "failed", "{broken:#}");
    let e = broken["last_error"].as_str().unwrap();
    assert!(
        e.contains("failed to connect to MCP server 'broken'") && e.contains("not found on PATH"),
        "{e}"
    );
    assert_eq!(broken["tools"], serde_json::json!([]));

    let gated = status_server(&st, "gated");
    assert_eq!(gated["connection"], "gated", "{gated:#}");
    assert_eq!(gated["availability"]["state"], "missing_app", "{gated:#}");
    assert_eq!(gated["availability"]["offerable"], false);
    assert_eq!(gated["tools"], serde_json::json!([]));

    for (name, transport, tool) in [
        ("healthy-one", "stdio", "mcp_healthy_one_status"),
        ("healthy-two", "app_endpoint", "mcp_healthy_two_log"),
    ] {
        let s = status_server(&st, name);
        assert_eq!(s["connection"], "connected", "{s:#}");
        assert_eq!(s["transport"], transport, "{s:#}");
        assert!(s["last_error"].is_null(), "{s:#}");
        let tools: Vec<&str> = s["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap())
            .collect();
        assert_eq!(tools.len(), 5, "{s:#}");
        assert!(tools.contains(&tool), "{s:#}");
    }
    assert_eq!(
        status_server(&st, "healthy-two")["availability"]["state"],
        "available"
    );

    for out in &call_outs {
        assert!(
            out.status.success(),
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let r = stdout_json(out);
        assert_eq!(r["is_error"], false, "{r:#}");
    }
    let status_call = stdout_json(&call_outs[0]);
    assert!(
        status_call["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("## "),
        "{status_call:#}"
    );
    let log_call = stdout_json(&call_outs[1]);
    assert_eq!(
        log_call["structured_content"]["commits"]
            .as_array()
            .map(Vec::len),
        Some(2),
        "{log_call:#}"
    );

    // The gated server was never spawned; the healthy one (same wrapper) was.
    assert!(healthy_marker.exists(), "the marker wrapper does not work");
    assert!(!gated_marker.exists(), "the gated server was spawned");

    // The application's token is nowhere in what wasmgate printed.
    for out in std::iter::once(&status_out).chain(&call_outs) {
        for text in [&out.stdout, &out.stderr] {
            assert!(
                !String::from_utf8_lossy(text).contains(APP_TOKEN),
                "the token was printed"
            );
        }
    }
}

fn config_with_git(path: &Path, name: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(
        path,
        format!(
            "mcp_servers:\n  {name}:\n    command: \"{}\"\n",
            git_server_bin().display()
        ),
    )
    .unwrap();
}

fn server_names(home: &Path, extra_env: Option<(&str, &Path)>) -> Vec<String> {
    let mut cmd = wasmgate(home);
    cmd.args(["status", "--json"]);
    if let Some((k, v)) = extra_env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let st = stdout_json(&out);
    st["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            assert_eq!(s["connection"], "connected", "{s:#}");
            s["name"].as_str().unwrap().to_string()
        })
        .collect()
}

#[test]
fn without_config_the_user_config_dir_file_is_used() {
    let home = tempfile::tempdir().unwrap();
    // Nothing there: no servers, no error.
    assert!(server_names(home.path(), None).is_empty());

    // <XDG_CONFIG_HOME>/wasmgate/config.yaml.
    config_with_git(
        &home.path().join("xdg").join("wasmgate").join("config.yaml"),
        "from-xdg",
    );
    assert_eq!(server_names(home.path(), None), vec!["from-xdg"]);

    // $WASMGATE_CONFIG wins over it.
    let other = home.path().join("elsewhere.yaml");
    config_with_git(&other, "from-env");
    assert_eq!(
        server_names(home.path(), Some(("WASMGATE_CONFIG", &other))),
        vec!["from-env"]
    );

    // Without XDG_CONFIG_HOME: ~/.config/wasmgate/config.yaml.
    config_with_git(
        &home
            .path()
            .join(".config")
            .join("wasmgate")
            .join("config.yaml"),
        "from-home",
    );
    let out = Command::new(wasmgate_bin())
        .current_dir(workspace_root())
        .env_remove("WASMGATE_PLUGINS")
        .env_remove("WASMGATE_CONFIG")
        .env_remove("XDG_CONFIG_HOME")
        .env("HOME", home.path())
        .env("WASMGATE_CACHE", "")
        .args(["status", "--json"])
        .output()
        .unwrap();
    let st = stdout_json(&out);
    assert_eq!(status_server(&st, "from-home")["connection"], "connected");
}

#[test]
fn a_named_path_that_does_not_exist_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let cases: [(&[&str], Option<&str>, &str); 6] = [
        (
            &["status", "--plugins", "/etc/hostname"],
            None,
            "--plugins /etc/hostname: is a file; --plugins takes a folder of plugins (here: --plugins /etc)",
        ),
        (
            &["status", "--plugins", "/no/such/plugins"],
            None,
            "--plugins /no/such/plugins: no such folder or file",
        ),
        (
            &["tools", "--config", "/no/such/config.yaml"],
            None,
            "--config /no/such/config.yaml: no such file",
        ),
        (
            &["call", "mcp_x_y", "--config", "/tmp"],
            None,
            "--config /tmp: is a folder, not a YAML file",
        ),
        (
            &["skills"],
            Some("/no/such/env-config.yaml"),
            "$WASMGATE_CONFIG /no/such/env-config.yaml: no such file",
        ),
        (
            &["serve", "--config", "/no/such/config.yaml"],
            None,
            "--config /no/such/config.yaml: no such file",
        ),
    ];
    for (args, env_config, want) in cases {
        let mut c = wasmgate(home);
        c.args(args).stdin(Stdio::null());
        if let Some(v) = env_config {
            c.env("WASMGATE_CONFIG", v);
        }
        let out = c.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    // The defaults under the user config dir are optional: absent, status
    // runs (exit 0) with nothing loaded.
    let out = wasmgate(home).args(["status", "--json"]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn status_shows_load_warnings_such_as_an_unset_variable() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.yaml");
    std::fs::write(
        &cfg,
        format!(
            "mcp_servers:\n  s:\n    command: {}\n    env: {{FOO: \"${{WASMGATE_TEST_UNSET_VAR}}\"}}\n",
            git_server_bin().display()
        ),
    )
    .unwrap();
    let out = wasmgate(dir.path())
        .args(["status", "--config"])
        .arg(&cfg)
        .env_remove("WASMGATE_TEST_UNSET_VAR")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("warnings:") && text.contains("WASMGATE_TEST_UNSET_VAR"),
        "{text}"
    );
    let out = wasmgate(dir.path())
        .args(["status", "--json", "--config"])
        .arg(&cfg)
        .env_remove("WASMGATE_TEST_UNSET_VAR")
        .output()
        .unwrap();
    let st = stdout_json(&out);
    let warnings = st["warnings"].as_array().expect("warnings array");
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().unwrap().contains("WASMGATE_TEST_UNSET_VAR")),
        "{st:#}"
    );
}
