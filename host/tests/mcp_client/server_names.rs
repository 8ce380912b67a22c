//! Server names outside ASCII and the tool-name prefixes they mint
//! (`docs/declarations.md`, "Server names"; `docs/mcp-client.md`): accepted
//! in plugin.yaml, a config file and plugin.json, sanitised one `_` per code
//! point, and names that would mint the same prefix are a clear error for
//! the later server (within a file and across config and plugins). Also the
//! `~` refusal in a stdio `command`.

use std::path::Path;
use wasmgate::document::Value;
use wasmgate::manifest::{
    ManifestContext, ManifestResult, load_config, load_plugin_json, manifest_from_value,
    merge_servers,
};
use wasmgate::naming::{may_own_tool, tool_name};

fn ctx() -> ManifestContext {
    ManifestContext::new("p/plugin.yaml", "/plugins/p")
}

fn from_yaml(y: &str) -> ManifestResult {
    let v: Value = yaml_serde::from_str(y).unwrap();
    manifest_from_value(&v, &ctx())
}

fn errors(r: &ManifestResult) -> Vec<String> {
    r.errors.iter().map(ToString::to_string).collect()
}

fn names(r: &ManifestResult) -> Vec<String> {
    r.manifest
        .as_ref()
        .unwrap()
        .servers
        .iter()
        .map(|s| s.name.clone())
        .collect()
}

#[test]
fn names_outside_ascii_are_accepted_and_sanitised_per_code_point() {
    let r = from_yaml(
        "name: p\nversion: '1'\nmcp_servers:\n  café: {command: x}\n  日本: {command: x}\n  my server: {command: x}\n  Ünï.cødé-1: {command: x}\n",
    );
    assert!(r.errors.is_empty(), "{:?}", errors(&r));
    assert_eq!(names(&r), ["café", "日本", "my server", "Ünï.cødé-1"]);
    assert_eq!(r.server_order, names(&r));
    for (server, tool, minted) in [
        ("café", "read", "mcp_caf__read"),
        ("日本", "read", "mcp____read"),
        ("my server", "read", "mcp_my_server_read"),
        ("Ünï.cødé-1", "x", "mcp__n__c_d__1_x"),
    ] {
        assert_eq!(tool_name(server, tool), minted);
        assert!(may_own_tool(server, minted));
    }
}

#[test]
fn bad_names_are_reported_and_nothing_else_is_lost() {
    // Blank, a control character, and 129 characters.
    let long = "n".repeat(129);
    let r = from_yaml(&format!(
        "name: p\nversion: '1'\nmcp_servers:\n  ' ': {{command: x}}\n  \"a\\tb\": {{command: x}}\n  {long}: {{command: x}}\n  fine: {{command: x}}\n  {}: {{command: x}}\n",
        "m".repeat(128)
    ));
    let e = errors(&r);
    assert_eq!(e.len(), 3, "{e:?}");
    assert!(
        e.iter().all(|l| l.contains("has a bad server name")),
        "{e:?}"
    );
    assert!(e[1].contains("a\\tb"), "the tab is shown escaped: {e:?}");
    assert_eq!(names(&r), ["fine".to_string(), "m".repeat(128)]);
}

#[test]
fn names_minting_the_same_prefix_are_an_error_for_the_later_one() {
    let r = from_yaml(
        "name: p\nversion: '1'\nmcp_servers:\n  café: {command: x}\n  caf_: {command: x}\n  a-b: {command: x}\n  a.b: {command: x}\n  a_b: {timeout: soon}\n  ok: {command: x}\n",
    );
    let e = errors(&r);
    assert_eq!(names(&r), ["café", "a-b", "ok"]);
    assert_eq!(r.server_order, ["café", "caf_", "a-b", "a.b", "a_b", "ok"]);
    assert!(
        e.contains(&"p/plugin.yaml server 'caf_': would mint tool names starting with 'mcp_caf__' like server 'café'; rename one of them (it is left out)".to_string()),
        "{e:?}"
    );
    assert!(
        e.iter()
            .any(|l| l.contains("server 'a.b': would mint") && l.contains("'mcp_a_b_'")),
        "{e:?}"
    );
    // A clashing entry that is also invalid reports both.
    let ab: Vec<&String> = e.iter().filter(|l| l.contains("server 'a_b'")).collect();
    assert!(ab.len() >= 2, "{e:?}");
    assert!(ab[0].contains("would mint"), "{e:?}");
    assert!(ab.iter().any(|l| l.contains("timeout")), "{e:?}");
}

#[test]
fn across_config_and_plugins_the_first_keeps_the_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.yaml");
    std::fs::write(&cfg, "mcp_servers:\n  café: {command: x}\n").unwrap();
    let config = load_config(&cfg);
    assert!(config.errors.is_empty());
    assert_eq!(config.order, ["café"]);
    let plugin = from_yaml(
        "name: p\nversion: '1'\nmcp_servers:\n  caf_: {command: x}\n  other: {command: x}\n",
    );
    let (all, errs) = merge_servers(config.servers, plugin.manifest.unwrap().servers);
    let kept: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(kept, ["café", "other"]);
    assert_eq!(errs.len(), 1);
    assert_eq!(
        errs[0].to_string(),
        "plugin 'p' server 'caf_': would mint tool names starting with 'mcp_caf__' like server 'café' of the config file; rename one of them (it is left out)"
    );
}

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn plugin_json_follows_the_same_name_rules() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "plugin.json",
        // Written by hand: the file's key order is the order that counts.
        r#"{"name": "v", "version": "1", "mcpServers": {
            "café": {"command": "x"},
            "caf_": {"command": "x"},
            "a\u0007b": {"command": "x"},
            "ok": {"command": "x"}
        }}"#,
    );
    let r = load_plugin_json(&p);
    let e = errors(&r);
    assert_eq!(names(&r), ["café", "ok"], "{e:?}");
    assert_eq!(e.len(), 2, "{e:?}");
    assert!(
        e.iter().any(|l| l.contains("server 'caf_': would mint")),
        "{e:?}"
    );
    assert!(
        e.iter().any(|l| l.contains("has a bad server name")),
        "{e:?}"
    );
    assert_eq!(r.server_order.len(), 4);
}

#[test]
fn a_command_starting_with_tilde_is_refused() {
    for cmd in ["~/bin/server", "~ana/bin/server", "~"] {
        let r = from_yaml(&format!(
            "name: p\nversion: '1'\nmcp_servers:\n  s: {{command: '{cmd}'}}\n  t: {{command: /bin/true}}\n"
        ));
        let e = errors(&r);
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            e[0].starts_with(&format!(
                "p/plugin.yaml server 's': command ({cmd:?}) starts with '~', which is not expanded"
            )),
            "{e:?}"
        );
        assert!(e[0].contains(cmd), "{e:?}");
        assert_eq!(names(&r), ["t"]);
    }
}
