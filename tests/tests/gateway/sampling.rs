//! Sampling through `wasmgate serve` (`docs/mcp-client.md` §5, §7):
//! a plugin's MCP server asks for `sampling/createMessage` inside a tool
//! call; the gateway applies that server's sampling policy and forwards the
//! request to its own client — the official Python MCP SDK with a
//! `sampling_callback` (a fake LLM that echoes what it was asked) — and the
//! answer goes back to the server and into the tool's result.
//!
//! The server is `tests/python/sampling_server.py` (official Python SDK,
//! FastMCP): its tool `ask` asks for 500 tokens with the model hint
//! `tiny-model`. Two entries run it: `sampler` (policy: model
//! `policy-model`, `max_tokens_cap: 64`) and `strict` (`allowed_models:
//! [other-model]`, so its request is refused before any client sees it).

use serde_json::Value;
use std::path::{Path, PathBuf};

use wasmgate_conformance::{ServedHttp, interop_python, wasmgate_bin, workspace_root};

/// Writes the gateway's config (two entries of the sampling server) and an
/// empty plugin folder; returns (config, plugins).
fn config(dir: &Path) -> (PathBuf, PathBuf) {
    let server = workspace_root().join("tests/python/sampling_server.py");
    let python = interop_python();
    let cfg = dir.join("gateway.yaml");
    std::fs::write(
        &cfg,
        format!(
            "mcp_servers:\n\
             \x20 sampler:\n\
             \x20   command: \"{py}\"\n\
             \x20   args: [\"{s}\"]\n\
             \x20   sampling:\n\
             \x20     model: policy-model\n\
             \x20     max_tokens_cap: 64\n\
             \x20 strict:\n\
             \x20   command: \"{py}\"\n\
             \x20   args: [\"{s}\"]\n\
             \x20   sampling:\n\
             \x20     allowed_models: [other-model]\n",
            s = server.display(),
            py = python.display()
        ),
    )
    .unwrap();
    let plugins = dir.join("no-plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    (cfg, plugins)
}

fn client(args: &[String]) -> Value {
    wasmgate_conformance::python_json("gateway_sampling.py", args, |_| {})
}

fn stdio_args(cfg: &Path, plugins: &Path, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "--tool".into(),
        "mcp_sampler_ask".into(),
        "--tool".into(),
        "mcp_strict_ask".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    args.extend([
        "--stdio".into(),
        "--".into(),
        wasmgate_bin().display().to_string(),
        "serve".into(),
        "--dev".into(),
        "--refresh-seconds".into(),
        "0".into(),
        "--config".into(),
        cfg.display().to_string(),
        "--plugins".into(),
        plugins.display().to_string(),
    ]);
    args
}

/// What a client with sampling must have seen.
fn check_forwarded(r: &Value) {
    let sampler = &r["calls"]["mcp_sampler_ask"];
    assert_eq!(sampler["is_error"], false, "{r:#}");
    let text = sampler["text"].as_str().unwrap();
    // The client's answer reached the server: its model, stop reason and text.
    assert!(text.contains("model=py-fake-llm"), "{text}");
    assert!(text.contains("stop=endTurn"), "{text}");
    assert!(
        text.contains("echo[what is mcp_sampler_ask?] max=64"),
        "{text}"
    );
    // The policy was applied before forwarding: the configured model
    // replaced the server's hint, max_tokens was capped, and the strict
    // server's request never reached the client.
    let seen = r["sampling_requests"].as_array().unwrap();
    assert_eq!(seen.len(), 1, "{r:#}");
    assert_eq!(
        seen[0]["hints"],
        serde_json::json!(["policy-model"]),
        "{r:#}"
    );
    assert_eq!(seen[0]["max_tokens"], 64, "{r:#}");
    assert_eq!(seen[0]["system_prompt"], "Answer in one line.", "{r:#}");
    let strict = &r["calls"]["mcp_strict_ask"];
    assert_eq!(strict["is_error"], true, "{r:#}");
    let text = strict["text"].as_str().unwrap();
    assert!(
        text.contains("not in this server's allowed_models"),
        "{text}"
    );
}

#[test]
fn gateway_forwards_sampling_to_a_python_sdk_client_over_stdio() {
    let tmp = tempfile::tempdir().unwrap();
    let (cfg, plugins) = config(tmp.path());
    let r = client(&stdio_args(&cfg, &plugins, &[]));
    check_forwarded(&r);
}

#[test]
fn gateway_without_a_sampling_client_gives_the_server_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let (cfg, plugins) = config(tmp.path());
    let r = client(&stdio_args(&cfg, &plugins, &["--no-sampling"]));
    let sampler = &r["calls"]["mcp_sampler_ask"];
    assert_eq!(sampler["is_error"], true, "{r:#}");
    let text = sampler["text"].as_str().unwrap();
    assert!(
        text.contains("did not declare the sampling capability"),
        "{text}"
    );
    assert!(text.contains("'sampler'"), "{text}");
    assert_eq!(r["sampling_requests"], serde_json::json!([]), "{r:#}");
}

fn serve_http(cfg: &Path, plugins: &Path, token_file: &Path) -> ServedHttp {
    wasmgate_conformance::serve_http(
        &[
            "--token-file".as_ref(),
            token_file.as_os_str(),
            "--config".as_ref(),
            cfg.as_os_str(),
            "--plugins".as_ref(),
            plugins.as_os_str(),
        ],
        |_| {},
    )
}

#[test]
fn gateway_forwards_sampling_to_a_python_sdk_client_over_http() {
    let tmp = tempfile::tempdir().unwrap();
    let (cfg, plugins) = config(tmp.path());
    let token_file = tmp.path().join("token");
    std::fs::write(&token_file, "sampling-token\n").unwrap();
    let served = serve_http(&cfg, &plugins, &token_file);
    let r = client(&[
        "--tool".into(),
        "mcp_sampler_ask".into(),
        "--tool".into(),
        "mcp_strict_ask".into(),
        "--http".into(),
        served.url.clone(),
        "--token".into(),
        "sampling-token".into(),
    ]);
    check_forwarded(&r);
}
