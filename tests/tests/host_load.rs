//! The library path end to end: `wasmgate::Host` over plugin folders
//! and a config file, with real MCP server processes.

use std::path::Path;
use wasmgate::TrustPolicy;
use wasmgate::{Host, HostOptions};
use wasmgate_conformance::plugins_dir;

fn git_server() -> String {
    let bin = plugins_dir()
        .join("git")
        .join(format!("git-mcp-server{}", std::env::consts::EXE_SUFFIX));
    assert!(bin.is_file(), "{}", bin.display());
    bin.display().to_string()
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Issue "Declarations", Done when: one bad server and two good ones in one
/// manifest — the bad one is reported, the good ones are registered and offered.
#[tokio::test(flavor = "multi_thread")]
async fn one_bad_server_is_reported_and_two_good_ones_are_offered() {
    let server = git_server();
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join("mixed/plugin.yaml"),
        &format!(
            r#"name: mixed
version: "1.0.0"
mcp_servers:
  good-one:
    command: "{server}"
    app:
      linux: {{presence: executable, location: {{kind: command, name: git}}}}
      darwin: {{presence: executable, location: {{kind: command, name: git}}}}
      win32: {{presence: executable, location: {{kind: command, name: git}}}}
    requires: {{app: true}}
  broken:
    command: "{server}"
    app:
      linux: {{presence: executable, location: {{kind: command, name: bin/git}}}}
    requires: {{app: true}}
  good-two:
    command: "{server}"
"#
        ),
    );
    let mut options = HostOptions::new();
    // The example plugins are this repository's own: trusted unpinned.
    options.trust = TrustPolicy::Dev;
    options.plugin_dirs = vec![dir.path().to_path_buf()];
    let host = Host::load(options).expect("host loads");

    let problems = host.problems();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].contains("server 'broken'")
            && problems[0].contains("app.linux.location.name (\"bin/git\") must be a bare name"),
        "{problems:?}"
    );
    assert!(host.registry().lookup("good-one").is_some());
    assert!(host.registry().lookup("broken").is_none());

    host.discover().await;
    let tools: Vec<String> = host.offered_tools().into_iter().map(|t| t.name).collect();
    for server in ["good_one", "good_two"] {
        assert!(
            tools.iter().any(|t| t == &format!("mcp_{server}_log")),
            "{server}: {tools:?}"
        );
    }
    assert!(!tools.iter().any(|t| t.contains("broken")), "{tools:?}");
    host.shutdown().await;
}

/// A server whose declaration is not offerable is never spawned, and its
/// skill is hidden; a config-file server and a plugin server with the same
/// name: the config keeps it and the clash is reported.
#[tokio::test(flavor = "multi_thread")]
async fn gated_servers_are_never_connected_and_name_clashes_are_reported() {
    let server = git_server();
    let dir = tempfile::tempdir().unwrap();
    // `nowhere` runs a wrapper that leaves a marker if it is ever started.
    let marker = dir.path().join("nowhere-started");
    let marker_arg = marker.display();
    write(
        &dir.path().join("plugins/app/plugin.yaml"),
        &format!(
            r#"name: app
version: "1.0.0"
mcp_servers:
  nowhere:
    command: sh
    args: ["-c", 'touch "$0"; exec "$1"', "{marker_arg}", "{server}"]
    app:
      linux: {{presence: executable, location: /nonexistent/wasmgate-test/app}}
      darwin: {{presence: bundle, location: /nonexistent/App.app}}
      win32: {{presence: executable, location: 'C:\nonexistent\app.exe'}}
    requires: {{app: true}}
  shared:
    command: "{server}"
skills:
  - skills/nowhere/SKILL.md
"#
        ),
    );
    write(
        &dir.path().join("plugins/app/skills/nowhere/SKILL.md"),
        "---\nname: nowhere\ndescription: needs the app\nrequires_apps: [nowhere]\n---\nBody.\n",
    );
    let config = dir.path().join("config.yaml");
    write(
        &config,
        &format!("mcp_servers:\n  shared:\n    command: \"{server}\"\n"),
    );
    let mut options = HostOptions::new();
    // The example plugins are this repository's own: trusted unpinned.
    options.trust = TrustPolicy::Dev;
    options.plugin_dirs = vec![dir.path().join("plugins")];
    options.config = Some(config);
    let host = Host::load(options).expect("host loads");

    assert!(
        host.problems()
            .iter()
            .any(|p| p.contains("server 'shared'") && p.contains("same name")),
        "{:?}",
        host.problems()
    );
    let shared = host.server("shared").expect("config server kept");
    assert_eq!(shared.spec.plugin, None);

    let report = host.discover().await;
    assert_eq!(report.gated, vec!["nowhere".to_string()]);
    let st = host.status();
    let nowhere = st.servers.iter().find(|s| s.name == "nowhere").unwrap();
    assert_eq!(nowhere.connection, "gated");
    assert_eq!(nowhere.availability.as_ref().unwrap().state, "missing_app");
    let skill = host.skills().iter().find(|k| k.name == "nowhere").unwrap();
    assert!(!skill.visible);
    assert!(host.visible_skills().is_empty());
    let offered: Vec<(String, String)> = host
        .offered_tools()
        .into_iter()
        .map(|t| (t.server, t.name))
        .collect();
    assert!(
        offered.iter().any(|(_, n)| n == "mcp_shared_log"),
        "the config server's tools are offered: {offered:?}"
    );
    assert!(
        offered.iter().all(|(s, _)| s == "shared"),
        "only the config server's tools: {offered:?}"
    );
    host.shutdown().await;
    // Checked last, so a server started late has had time to leave it.
    assert!(!marker.exists(), "the gated server was started");
}

/// A plugin folder holding a Hermes `plugin.json` (servers under
/// `mcpServers`) is loaded like a `plugin.yaml` one, and a broken
/// `plugin.json` is reported, not skipped.
#[tokio::test(flavor = "multi_thread")]
async fn plugin_json_folders_are_loaded_and_a_broken_one_is_reported() {
    let server = git_server();
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join("hermes/plugin.json"),
        &serde_json::json!({
            "name": "hermes",
            "version": "1.0.0",
            "mcpServers": { "hj": { "command": server } }
        })
        .to_string(),
    );
    write(&dir.path().join("broken/plugin.json"), "{\"name\": ");
    let mut options = HostOptions::new();
    // The example plugins are this repository's own: trusted unpinned.
    options.trust = TrustPolicy::Dev;
    options.plugin_dirs = vec![dir.path().to_path_buf()];
    let host = Host::load(options).expect("host loads");

    let plugin = host
        .plugins()
        .iter()
        .find(|p| p.name == "hermes")
        .expect("the plugin.json plugin is loaded");
    assert_eq!(plugin.kind, "json");
    assert_eq!(plugin.servers, vec!["hj"]);
    let problems = host.problems();
    assert!(
        problems
            .iter()
            .any(|p| p.contains("broken/plugin.json") && p.contains("is not valid JSON")),
        "{problems:?}"
    );
    host.discover().await;
    assert!(
        host.offered_tools().iter().any(|t| t.name == "mcp_hj_log"),
        "{:?}",
        host.offered_tools()
    );
    host.shutdown().await;
}
