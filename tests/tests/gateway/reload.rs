//! A gateway refresh keeps the sessions of unchanged servers (`docs/mcp-client.md` §7,
//! `docs/mcp-client.md` §7): each server here is a wrapper script that
//! appends a line to its own start log and then `exec`s our git MCP server,
//! so the number of lines is the number of processes started. A refresh
//! that adds a plugin starts only the new server; one that changes a
//! server's entry restarts only that server (and sends no list_changed,
//! since the offered tools stay the same); one that removes a plugin ends
//! only that server. On a simulated machine, an application that is found
//! at another path (same entry, different availability) restarts only its
//! server, and one that disappears stops it.
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;
use wasmgate::TrustPolicy;
use wasmgate::gateway::{Gateway, GatewayOptions};
use wasmgate_conformance::{git_repo, plugins_dir};

/// Writes `<plugins>/<name>/plugin.yaml` whose server `<name>` runs a
/// wrapper that logs its start to `<logs>/<name>.starts`. `extra` is
/// appended to the server entry (to change the spec).
fn write_plugin(plugins: &Path, logs: &Path, name: &str, extra: &str) {
    let dir = plugins.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let server = plugins_dir().join("git").join("git-mcp-server");
    assert!(server.is_file(), "{} is built", server.display());
    let wrapper = logs.join(format!("{name}.sh"));
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\necho \"$$\" >> '{log}'\nexec '{server}' \"$@\"\n",
            log = starts_file(logs, name).display(),
            server = server.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        dir.join("plugin.yaml"),
        format!(
            "name: {name}\nversion: \"0.1.0\"\nmcp_servers:\n  {name}:\n    command: \"{}\"\n{extra}",
            wrapper.display()
        ),
    )
    .unwrap();
}

fn starts_file(logs: &Path, name: &str) -> PathBuf {
    logs.join(format!("{name}.starts"))
}

/// The pids the wrapper logged, one per process start.
fn starts(logs: &Path, name: &str) -> Vec<u32> {
    std::fs::read_to_string(starts_file(logs, name))
        .unwrap_or_default()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect()
}

/// A temp repository with one commit, "the only commit".
fn temp_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    git_repo(dir.path(), &["the only commit"]);
    dir
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

fn tool_names(gw: &Gateway) -> Vec<String> {
    gw.offered_tools().into_iter().map(|t| t.name).collect()
}

async fn eventually_dead(pid: u32) -> bool {
    for _ in 0..100 {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[cfg_attr(not(target_os = "linux"), ignore = "reads /proc")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refresh_keeps_unchanged_servers_and_restarts_only_changed_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let plugins = tmp.path().join("plugins");
    let logs = tmp.path().join("logs");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::create_dir_all(&logs).unwrap();
    write_plugin(&plugins, &logs, "keep", "");
    write_plugin(&plugins, &logs, "changing", "");

    let mut options = GatewayOptions::new();
    options.host.trust = TrustPolicy::Dev;
    options.host.plugin_dirs = vec![plugins.clone()];
    options.refresh_every = None;
    let gw = Gateway::start(options).await.expect("gateway starts");
    let tools = tool_names(&gw);
    assert!(tools.contains(&"mcp_keep_log".into()), "{tools:?}");
    assert!(tools.contains(&"mcp_changing_log".into()), "{tools:?}");
    assert_eq!(starts(&logs, "keep").len(), 1);
    assert_eq!(starts(&logs, "changing").len(), 1);
    let keep_pid = starts(&logs, "keep")[0];
    let mut changes = gw.subscribe();

    // A new plugin: only its server starts; the tools change.
    write_plugin(&plugins, &logs, "added", "");
    let outcome = gw.refresh().await.unwrap();
    assert!(outcome.swapped && outcome.tools_changed, "{outcome:?}");
    assert!(changes.recv().await.unwrap().tools);
    assert_eq!(starts(&logs, "added").len(), 1);
    assert_eq!(starts(&logs, "keep"), vec![keep_pid], "keep was restarted");
    assert_eq!(starts(&logs, "changing").len(), 1, "changing was restarted");
    assert!(alive(keep_pid));
    assert!(tool_names(&gw).contains(&"mcp_added_log".into()));

    // A changed entry (a longer timeout): only that server restarts, and
    // since its tools are the same, clients are not told the tools changed.
    let changing_pid = starts(&logs, "changing")[0];
    write_plugin(&plugins, &logs, "changing", "    timeout: 45\n");
    let outcome = gw.refresh().await.unwrap();
    assert!(outcome.swapped, "{outcome:?}");
    assert!(!outcome.tools_changed, "{outcome:?}");
    let changing = starts(&logs, "changing");
    assert_eq!(changing.len(), 2, "changing restarts once: {changing:?}");
    assert!(eventually_dead(changing_pid).await, "the old process ended");
    assert!(alive(changing[1]));
    assert_eq!(starts(&logs, "keep"), vec![keep_pid], "keep was restarted");
    assert_eq!(starts(&logs, "added").len(), 1, "added was restarted");
    let repo = temp_repo();
    let log_args = serde_json::json!({"path": repo.path().to_str().unwrap(), "max_count": 1});
    let r = gw
        .call("mcp_changing_log", log_args.clone())
        .await
        .expect("the restarted server answers");
    assert!(!r.is_error, "{r:?}");
    assert!(r.text().contains("the only commit"), "{r:?}");

    // A removed plugin: its server ends, the others stay.
    let added_pid = starts(&logs, "added")[0];
    std::fs::remove_dir_all(plugins.join("added")).unwrap();
    let outcome = gw.refresh().await.unwrap();
    assert!(outcome.swapped && outcome.tools_changed, "{outcome:?}");
    assert!(eventually_dead(added_pid).await, "the removed server ended");
    assert!(!tool_names(&gw).contains(&"mcp_added_log".into()));
    assert_eq!(starts(&logs, "keep"), vec![keep_pid]);
    assert!(alive(keep_pid));

    // Nothing changed: nothing restarts, nothing is announced.
    let outcome = gw.refresh().await.unwrap();
    assert!(!outcome.swapped && !outcome.tools_changed, "{outcome:?}");
    assert_eq!(starts(&logs, "keep"), vec![keep_pid]);
    assert_eq!(starts(&logs, "changing").len(), 2);
    let r = gw
        .call("mcp_keep_log", log_args)
        .await
        .expect("the kept server answers");
    assert!(!r.is_error, "{r:?}");
    assert!(r.text().contains("the only commit"), "{r:?}");

    gw.shutdown().await;
    assert!(eventually_dead(keep_pid).await, "shutdown ends the servers");
}

/// A simulated linux machine whose PATH is `/opt/a:/opt/b`, with `myapp`
/// in `/opt/b` only.
fn simulated_machine(dir: &Path) {
    std::fs::write(
        dir.join("host.yaml"),
        "os: linux\nhome: /home/ana\nenv:\n  PATH: /opt/a:/opt/b\n",
    )
    .unwrap();
    make_app(dir, "b");
}

/// Creates the executable `root/opt/<folder>/myapp`.
fn make_app(dir: &Path, folder: &str) {
    let bin = dir.join("root/opt").join(folder);
    std::fs::create_dir_all(&bin).unwrap();
    let app = bin.join("myapp");
    std::fs::write(&app, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&app, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[cfg_attr(not(target_os = "linux"), ignore = "reads /proc")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_application_found_elsewhere_restarts_only_its_server() {
    let tmp = tempfile::tempdir().unwrap();
    let plugins = tmp.path().join("plugins");
    let logs = tmp.path().join("logs");
    let machine = tmp.path().join("machine");
    for d in [&plugins, &logs, &machine] {
        std::fs::create_dir_all(d).unwrap();
    }
    simulated_machine(&machine);
    write_plugin(&plugins, &logs, "keep", "");
    write_plugin(
        &plugins,
        &logs,
        "app",
        "    app:\n      linux:\n        presence: executable\n        location:\n          - kind: command\n            name: myapp\n    requires:\n      app: true\n",
    );
    let mut options = GatewayOptions::new();
    options.host.trust = TrustPolicy::Dev;
    options.host.plugin_dirs = vec![plugins.clone()];
    options.host.platform =
        std::sync::Arc::new(wasmgate::SimulatedHost::load(&machine).expect("simulated host"));
    options.refresh_every = None;
    let gw = Gateway::start(options).await.expect("gateway starts");
    let tools = tool_names(&gw);
    assert!(tools.contains(&"mcp_app_log".into()), "{tools:?}");
    let app_pid = starts(&logs, "app")[0];
    let keep_pid = starts(&logs, "keep")[0];
    let path_of = |gw: &Gateway| {
        gw.host()
            .server("app")
            .and_then(|s| s.availability.clone())
            .and_then(|a| a.path)
    };
    assert_eq!(path_of(&gw).as_deref(), Some("/opt/b/myapp"));

    // The application now resolves to another copy (first on PATH): same
    // entry, different availability — its server restarts, the other stays,
    // and the offered tools (the same) are not announced as changed.
    make_app(&machine, "a");
    let outcome = gw.refresh().await.unwrap();
    assert!(outcome.swapped && !outcome.tools_changed, "{outcome:?}");
    assert_eq!(path_of(&gw).as_deref(), Some("/opt/a/myapp"));
    let app = starts(&logs, "app");
    assert_eq!(app.len(), 2, "app restarts once: {app:?}");
    assert!(eventually_dead(app_pid).await, "the old app server ended");
    assert_eq!(starts(&logs, "keep"), vec![keep_pid], "keep was restarted");
    assert!(tool_names(&gw).contains(&"mcp_app_log".into()));

    // The application is gone: its server stops, its tools go, clients hear.
    std::fs::remove_file(machine.join("root/opt/a/myapp")).unwrap();
    std::fs::remove_file(machine.join("root/opt/b/myapp")).unwrap();
    let outcome = gw.refresh().await.unwrap();
    assert!(outcome.swapped && outcome.tools_changed, "{outcome:?}");
    assert!(eventually_dead(app[1]).await, "the gated server ended");
    assert!(!tool_names(&gw).contains(&"mcp_app_log".into()));
    assert_eq!(starts(&logs, "keep"), vec![keep_pid]);
    gw.shutdown().await;
}
