//! `wasmgate check` on a component, a `plugin.yaml` and a `plugin.json` with
//! the same content gives the same normalized declaration, and the same
//! error with the same field path (`docs/declarations.md` §2a: one validator).

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};
use wasmgate_conformance::{hostile_plugin, plugins_dir, wasmgate_bin};

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

/// The five mistakes of the Python and Rust test plugins
/// (`tests/python-plugins/mistakes/app.py`,
/// `tests/hostile-plugins/mistakes`), one per server, as YAML.
const MISTAKES_YAML: &str = r#"name: mistakes
version: "0.1.0"
mcp_servers:
  bare-name:
    command: uvx
    app: {linux: {presence: executable, location: [{kind: command, name: bin/git}]}}
    requires: {app: true}
  dot-dot:
    command: uvx
    app: {linux: {presence: executable, location: ["~/x/../y"]}}
    requires: {app: true}
  bad-version:
    command: uvx
    app: {linux: {presence: executable, location: [{kind: command, name: git}]}}
    requires: {app: true, min_version: "one.two"}
  bad-url:
    url: "ftp://example.com/mcp"
  no-location:
    command: uvx
    app: {darwin: {presence: bundle, location: []}}
    requires: {app: true}
"#;

/// `check --json` of `path` with the compile cache the Python plugin
/// tests share (`tests/tests/python_plugin.rs`): its 18 MB of CPython is
/// compiled once, not per run. Returns the errors of the document and the
/// stderr lines, with the file they name cut.
fn check_errors(path: &Path) -> (Value, Vec<String>) {
    let cache = wasmgate_conformance::workspace_root().join("target/tmp/python-plugin-cache");
    std::fs::create_dir_all(&cache).unwrap();
    let out = Command::new(wasmgate_bin())
        .arg("check")
        .arg(path)
        .arg("--json")
        .env("WASMGATE_CACHE", &cache)
        .output()
        .expect("run wasmgate check");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{}: {stderr}", path.display());
    let mut doc: Value = serde_json::from_slice(&out.stdout).expect("check --json prints JSON");
    assert_eq!(doc["valid"], false, "{doc:#}");
    let file = path.display().to_string();
    // `where` names the file; everything else must match.
    for e in doc["errors"].as_array_mut().unwrap() {
        let w = e["where"].as_str().unwrap().to_owned();
        let rest = w
            .strip_prefix(&format!("{file} "))
            .unwrap_or_else(|| panic!("{w}"));
        e["where"] = Value::String(rest.to_owned());
    }
    let lines = stderr
        .lines()
        .map(|l| {
            l.strip_prefix(&format!("{file} "))
                .unwrap_or_else(|| panic!("{l}"))
                .to_owned()
        })
        .collect();
    (doc["errors"].clone(), lines)
}

#[test]
pub(super) fn the_same_mistakes_give_the_same_errors_from_python_rust_and_yaml() {
    let component = plugins_dir()
        .parent()
        .unwrap()
        .join("python-plugins/mistakes/mistakes.wasm");
    let dir = tempfile::tempdir().unwrap();
    let yaml = dir.path().join("plugin.yaml");
    std::fs::write(&yaml, MISTAKES_YAML).unwrap();

    let (from_yaml, yaml_lines) = check_errors(&yaml);
    let (from_python, python_lines) = check_errors(&component);
    let (from_rust, rust_lines) = check_errors(&hostile_plugin("mistakes"));
    let paths: Vec<(&str, &str)> = from_yaml
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["server"].as_str().unwrap(), e["path"].as_str().unwrap()))
        .collect();
    assert_eq!(
        paths,
        [
            ("bare-name", "app.linux.location[0].name"),
            ("dot-dot", "app.linux.location[0]"),
            ("bad-version", "requires.min_version"),
            ("bad-url", "url"),
            ("no-location", "app.darwin.location"),
        ],
        "{from_yaml:#}"
    );
    assert_eq!(from_python, from_yaml, "Python");
    assert_eq!(python_lines, yaml_lines, "Python");
    assert_eq!(from_rust, from_yaml, "Rust");
    assert_eq!(rust_lines, yaml_lines, "Rust");
}
