//! What `wasmgate serve` tells an agent about the applications this machine
//! does not offer (`docs/mcp-client.md` §7), over real MCP: the official
//! Python SDK (`tests/python/gateway_client.py`) spawns the gateway over
//! stdio with a config whose server `vendor` needs an application that is
//! not installed, lists the resources, reads `wasmgate://not-offered`, and
//! calls the tool `wasmgate_not_offered`, which is offered only with
//! `serve --not-offered-tool`.
//!
//! Linux only, like the other Python SDK gateway tests (the interop venv's
//! `bin/python`).

#![cfg(target_os = "linux")]

use serde_json::Value;
use std::path::Path;

use wasmgate_conformance::wasmgate_bin;

const URI: &str = "wasmgate://not-offered";
const TOOL: &str = "wasmgate_not_offered";
const LINE: &str =
    "- `vendor` (the config file): vendor is not installed. Install vendor, then try again.";

/// A config with `vendor` (needs the absent command
/// `wasmgate-test-no-such-app`) and `plain` (needs nothing), and an empty
/// plugin folder.
fn world(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let cfg = dir.join("config.yaml");
    let app =
        "{presence: executable, location: [{kind: command, name: wasmgate-test-no-such-app}]}";
    std::fs::write(
        &cfg,
        format!(
            "mcp_servers:\n  vendor:\n    command: /bin/true\n    app: {{linux: {app}, darwin: {app}, win32: {app}}}\n    requires: {{app: true}}\n  plain: {{command: /bin/true}}\n"
        ),
    )
    .unwrap();
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    (cfg, plugins)
}

fn run(flags: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let (cfg, plugins) = world(dir.path());
    let mut args: Vec<String> = ["--read-resource", URI, "--call-tool", TOOL, "--stdio", "--"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.push(wasmgate_bin().display().to_string());
    args.extend(["serve", "--dev", "--refresh-seconds", "0"].map(String::from));
    args.extend(flags.iter().map(|s| s.to_string()));
    args.extend([
        "--config".to_string(),
        cfg.display().to_string(),
        "--plugins".to_string(),
        plugins.display().to_string(),
    ]);
    wasmgate_conformance::python_json("gateway_client.py", &args, |_| {})
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap_or_else(|| panic!("a list: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect()
}

#[test]
fn the_not_offered_resource_names_the_server_and_why_and_the_tool_is_off_by_default() {
    let r = run(&[]);
    assert!(strings(&r["resources"]).contains(&URI), "{r:#}");
    assert_eq!(r["read_resource"]["mime"], "text/markdown", "{r:#}");
    let text = r["read_resource"]["text"].as_str().unwrap();
    assert!(text.contains(LINE), "{text}");
    assert!(!text.contains("plain"), "{text}");
    // Off by default: not listed, and a call is refused as unknown.
    assert!(!strings(&r["tools"]).contains(&TOOL), "{r:#}");
    let err = r["call_tool"]["error"].as_str().unwrap_or_default();
    assert!(err.contains(TOOL), "{r:#}");
}

#[test]
fn with_the_flag_the_not_offered_tool_returns_the_resources_text() {
    let r = run(&["--not-offered-tool"]);
    assert!(strings(&r["tools"]).contains(&TOOL), "{r:#}");
    assert_eq!(r["call_tool"]["is_error"], false, "{r:#}");
    let from_tool = r["call_tool"]["text"].as_str().unwrap();
    assert_eq!(
        from_tool,
        r["read_resource"]["text"].as_str().unwrap(),
        "{r:#}"
    );
    assert!(from_tool.contains(LINE), "{from_tool}");
    // It takes no arguments and only reads.
    let schema = &r["schemas"][TOOL];
    assert_eq!(schema["type"], "object", "{r:#}");
}
