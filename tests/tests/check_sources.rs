//! `wasmgate check` on a component, a `plugin.yaml` and a `plugin.json` with
//! the same content gives the same normalized declaration, and the same
//! error with the same field path (`docs/declarations.md` §2a: one validator).

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};
use wasmgate_conformance::{plugins_dir, wasmgate_bin};

/// The git example plugin's server declaration, written by hand as YAML.
const GIT_APP_YAML: &str = r#"
      app:
        linux:
          presence: executable
          location: [{kind: command, name: git}]
        darwin:
          presence: executable
          location: [{kind: command, name: git}]
        win32:
          presence: executable
          location:
            - {kind: uninstall_registry, display_name_prefix: Git, file: cmd/git.exe}
            - "%ProgramFiles%/Git/cmd/git.exe"
      requires: {app: true}
"#;

/// The same declaration in a Hermes `plugin.json` envelope.
const GIT_PLUGIN_JSON: &str = r#"{
  "name": "git",
  "version": "0.1.0",
  "mcpServers": {"git": {"command": "${PLUGIN_DIR}/git-mcp-server"}},
  "extensions": {"com.nousresearch.hermes": {"servers": {"git": {
    "app": {
      "linux": {"presence": "executable", "location": [{"kind": "command", "name": "git"}]},
      "darwin": {"presence": "executable", "location": [{"kind": "command", "name": "git"}]},
      "win32": {"presence": "executable", "location": [
        {"kind": "uninstall_registry", "display_name_prefix": "Git", "file": "cmd/git.exe"},
        "%ProgramFiles%/Git/cmd/git.exe"]}
    },
    "requires": {"app": true}
  }}}}
}"#;

/// The `${PLUGIN_DIR}/git-mcp-server` the manifests name, shipped in `dir`
/// (check refuses a shipped command that is not there).
fn ship_server(dir: &Path) {
    let server = dir.join("git-mcp-server");
    std::fs::write(&server, "#!/bin/sh\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&server, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

fn check(path: &Path) -> Output {
    Command::new(wasmgate_bin())
        .arg("check")
        .arg(path)
        .arg("--json")
        .output()
        .expect("run wasmgate check")
}

fn declaration(out: &Output) -> Value {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("check --json prints JSON");
    assert_eq!(v["valid"], true, "{v:#}");
    let servers = v["manifest"]["servers"].as_array().expect("servers");
    assert_eq!(servers.len(), 1);
    servers[0]["declaration"].clone()
}

#[test]
fn component_yaml_and_json_give_the_same_declaration() {
    let component = plugins_dir().join("git").join("git.wasm");
    let from_component = declaration(&check(&component));
    assert!(from_component.is_object(), "{from_component}");

    let dir = tempfile::tempdir().unwrap();
    let yaml = dir.path().join("plugin.yaml");
    std::fs::write(
        &yaml,
        format!(
            "name: git\nversion: \"0.1.0\"\nmcp_servers:\n  git:\n      command: \"${{PLUGIN_DIR}}/git-mcp-server\"\n{GIT_APP_YAML}"
        ),
    )
    .unwrap();
    let json = dir.path().join("plugin.json");
    std::fs::write(&json, GIT_PLUGIN_JSON).unwrap();
    ship_server(dir.path());

    assert_eq!(declaration(&check(&yaml)), from_component, "plugin.yaml");
    assert_eq!(declaration(&check(&json)), from_component, "plugin.json");
}

#[test]
fn the_same_mistake_gives_the_same_field_path_from_yaml_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = dir.path().join("plugin.yaml");
    std::fs::write(
        &yaml,
        "name: p\nversion: \"1\"\nmcp_servers:\n  s:\n    command: x\n    app:\n      linux:\n        presence: executable\n        location: [{kind: command, name: bin/git}]\n    requires: {app: true}\n",
    )
    .unwrap();
    let json = dir.path().join("plugin.json");
    std::fs::write(
        &json,
        r#"{"name": "p", "version": "1", "mcpServers": {"s": {"command": "x"}},
            "extensions": {"com.nousresearch.hermes": {"servers": {"s": {
              "app": {"linux": {"presence": "executable", "location": [{"kind": "command", "name": "bin/git"}]}},
              "requires": {"app": true}}}}}}"#,
    )
    .unwrap();
    for path in [&yaml, &json] {
        let out = check(path);
        assert_eq!(out.status.code(), Some(1));
        // `--json`: the same error as one document on stdout, its value apart.
        let doc: Value = serde_json::from_slice(&out.stdout).expect("check --json prints JSON");
        assert_eq!(doc["valid"], false, "{doc:#}");
        assert_eq!(
            doc["errors"][0]["path"], "app.linux.location[0].name",
            "{doc:#}"
        );
        assert_eq!(doc["errors"][0]["value"], "\"bin/git\"", "{doc:#}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("app.linux.location[0].name (\"bin/git\") must be a bare name"),
            "{}: {err}",
            path.display()
        );
    }
}

/// `check` and `availability` take a plugin folder as well as its file: the
/// folder's plugin.yaml, else plugin.json, else its one component.
#[test]
fn a_plugin_folder_stands_for_its_plugin_file() {
    let component_dir = plugins_dir().join("git");
    let from_folder = declaration(&check(&component_dir));
    let from_file = declaration(&check(&component_dir.join("git.wasm")));
    assert_eq!(from_folder, from_file);

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("plugin.json"), GIT_PLUGIN_JSON).unwrap();
    ship_server(dir.path());
    assert_eq!(
        declaration(&check(dir.path())),
        from_file,
        "plugin.json folder"
    );
    let out = Command::new(wasmgate_bin())
        .args(["availability", "--json"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0]["server"], "git", "{v:#}");

    let empty = tempfile::tempdir().unwrap();
    for cmd in ["check", "availability"] {
        let out = Command::new(wasmgate_bin())
            .arg(cmd)
            .arg(empty.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{cmd}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("is a folder with no plugin.yaml, plugin.json or .wasm file"),
            "{cmd}: {err}"
        );
    }
}
