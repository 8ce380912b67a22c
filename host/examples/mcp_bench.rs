//! MCP client benchmark (`docs/performance.md`, "MCP client").
//!
//! (a) Discovery: 1, 10 and 50 stdio servers of ours (`git-mcp-server`).
//!     Each server's own start (spawn, `initialize`, `tools/list`) is first
//!     measured alone, one after the other; then all of them are connected
//!     by one `McpClient::connect_all`. Figure: wall time of `connect_all`
//!     ÷ the slowest single start (target ≤ 1.3).
//! (b) Tool-call round trips, sequential, over stdio and over streamable
//!     HTTP (`git-mcp-server --http`): wasmgate's `McpClient::call` against a
//!     raw rmcp client on the same kind of server, interleaved run by run.
//!     The tool is `status` on a folder that does not exist, which the
//!     server answers at once with a tool error (no git process), so the
//!     figures are MCP round trips. Figure: µs per call wasmgate adds
//!     (target ≤ 50 µs).
//!
//! Every figure is the median over `MCP_BENCH_RUNS` runs (default 5).
//! `MCP_BENCH_ONLY=discovery|calls` runs one part; `MCP_BENCH_SERVERS=50`
//! picks the discovery sizes; `MCP_BENCH_CALLS` the calls per run (2000).
//!
//! ```text
//! cargo build --release -p git-mcp-server
//! cargo run --release -p wasmgate --example mcp_bench
//! ```
//!
//! The server binary is `target/<profile>/git-mcp-server` beside this
//! example's folder, or `$MCP_BENCH_SERVER`.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use wasmgate::McpClient;
use wasmgate::{ServerSpec, Transport};

/// A folder that does not exist: the server answers with a tool error
/// without running git.
const NO_REPO: &str = "/nonexistent/wasmgate-mcp-bench";

fn server_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("MCP_BENCH_SERVER") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("own path");
    let dir = exe
        .parent()
        .and_then(|p| p.parent())
        .expect("target/<profile>/examples");
    let bin = dir.join(format!("git-mcp-server{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.is_file(),
        "{} is missing: cargo build -p git-mcp-server (same profile)",
        bin.display()
    );
    bin
}

fn stdio_spec(name: String, bin: &std::path::Path) -> ServerSpec {
    ServerSpec::new(
        name,
        Transport::Stdio {
            command: bin.display().to_string(),
            args: vec![],
            env: Default::default(),
            env_passthrough: vec![],
        },
    )
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// One discovery run of `n` servers: (slowest single start, connect_all
/// wall time), in ms.
async fn discovery_run(n: usize, bin: &std::path::Path) -> (f64, f64) {
    let specs: Vec<ServerSpec> = (0..n).map(|i| stdio_spec(format!("git{i}"), bin)).collect();
    let mut slowest = 0f64;
    for s in &specs {
        let c = McpClient::new();
        let t = Instant::now();
        let r = c.connect_all(std::slice::from_ref(s), |_| true).await;
        let d = ms(t.elapsed());
        assert_eq!(r.connected.len(), 1, "{r:?}");
        slowest = slowest.max(d);
        c.shutdown().await;
    }
    let c = McpClient::new();
    let t = Instant::now();
    let r = c.connect_all(&specs, |_| true).await;
    let all = ms(t.elapsed());
    assert_eq!(r.connected.len(), n, "{r:?}");
    assert_eq!(r.tool_count, 5 * n);
    c.shutdown().await;
    (slowest, all)
}

/// The same `n` servers connected by raw rmcp clients in parallel (spawn,
/// `initialize`, every `tools/list` page), in ms: the floor this machine
/// sets for starting `n` processes at once, without wasmgate.
async fn raw_discovery(n: usize, bin: &std::path::Path) -> f64 {
    let t = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..n {
        let bin = bin.to_path_buf();
        set.spawn(async move {
            let mut cmd = tokio::process::Command::new(bin);
            cmd.stderr(Stdio::null());
            let client =
                ().serve(rmcp::transport::TokioChildProcess::new(cmd).expect("spawn"))
                    .await
                    .expect("raw client");
            let tools = client.peer().list_all_tools().await.expect("tools");
            assert_eq!(tools.len(), 5);
            client
        });
    }
    let mut clients = Vec::new();
    while let Some(c) = set.join_next().await {
        clients.push(c.expect("task"));
    }
    let d = ms(t.elapsed());
    for c in clients {
        let _ = c.cancel().await;
    }
    d
}

fn args() -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    m.insert("path".into(), NO_REPO.into());
    m
}

/// µs per call over `n` sequential calls through wasmgate's client.
async fn wasmgate_calls(client: &McpClient, tool: &str, n: usize) -> f64 {
    let t = Instant::now();
    for _ in 0..n {
        let r = client
            .call(tool, serde_json::Value::Object(args()))
            .await
            .expect("call");
        assert!(r.is_error && r.text().contains(NO_REPO), "{r:?}");
    }
    t.elapsed().as_secs_f64() * 1e6 / n as f64
}

/// µs per call over `n` sequential calls through a raw rmcp client.
async fn raw_calls(peer: &rmcp::service::Peer<rmcp::RoleClient>, n: usize) -> f64 {
    let t = Instant::now();
    for _ in 0..n {
        let r = peer
            .call_tool(CallToolRequestParams::new("status").with_arguments(args()))
            .await
            .expect("call");
        assert_eq!(r.is_error, Some(true));
    }
    t.elapsed().as_secs_f64() * 1e6 / n as f64
}

/// A running `git-mcp-server --http 127.0.0.1:0`; its URL from its runtime file.
struct HttpServer {
    child: std::process::Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl HttpServer {
    fn start(bin: &std::path::Path) -> HttpServer {
        let dir = tempfile::tempdir().expect("temp dir");
        let sj = dir.path().join("server.json");
        let child = std::process::Command::new(bin)
            .args(["--http", "127.0.0.1:0", "--server-json"])
            .arg(&sj)
            .env_remove("GIT_MCP_SERVER_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("git-mcp-server --http");
        let until = Instant::now() + Duration::from_secs(30);
        while !sj.is_file() {
            assert!(Instant::now() < until, "no runtime file");
            std::thread::sleep(Duration::from_millis(10));
        }
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&sj).expect("read")).expect("json");
        HttpServer {
            child,
            url: v["http"].as_str().expect("url").to_string(),
            _dir: dir,
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::main]
async fn main() {
    let bin = server_bin();
    let runs: usize = std::env::var("MCP_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let calls: usize = std::env::var("MCP_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let only = std::env::var("MCP_BENCH_ONLY").unwrap_or_default();
    println!(
        "server: {}; {runs} runs; {} cores; load average {}",
        bin.display(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        std::fs::read_to_string("/proc/loadavg")
            .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
            .unwrap_or_else(|_| "?".into())
    );

    if only.is_empty() || only == "discovery" {
        println!("\n(a) discovery (ms; medians over {runs} runs)");
        println!(
            "servers | slowest single start | connect_all | ratio | raw rmcp, same servers in parallel"
        );
        let sizes: Vec<usize> = std::env::var("MCP_BENCH_SERVERS")
            .ok()
            .map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).collect())
            .unwrap_or_else(|| vec![1, 10, 50]);
        for n in sizes {
            let mut slow = Vec::new();
            let mut all = Vec::new();
            let mut ratio = Vec::new();
            let mut raw = Vec::new();
            for _ in 0..runs {
                let (s, a) = discovery_run(n, &bin).await;
                slow.push(s);
                all.push(a);
                ratio.push(a / s);
                raw.push(raw_discovery(n, &bin).await);
            }
            println!(
                "{n:7} | {:20.1} | {:11.1} | {:.2} | {:.1}   (ratios {:?})",
                median(slow),
                median(all),
                median(ratio.clone()),
                median(raw),
                ratio
                    .iter()
                    .map(|r| (r * 100.0).round() / 100.0)
                    .collect::<Vec<_>>()
            );
        }
    }

    if only.is_empty() || only == "calls" {
        println!(
            "\n(b) sequential tool calls, {calls} per run after 200 warm-up (µs per call; medians over {runs} runs)"
        );
        // stdio
        let wg = McpClient::new();
        let r = wg
            .connect_all(&[stdio_spec("git".into(), &bin)], |_| true)
            .await;
        assert_eq!(r.connected.len(), 1, "{r:?}");
        let raw = ()
            .serve(
                rmcp::transport::TokioChildProcess::new(tokio::process::Command::new(&bin))
                    .expect("spawn"),
            )
            .await
            .expect("raw stdio client");
        // HTTP
        let server = HttpServer::start(&bin);
        let wg_http = McpClient::new();
        let r = wg_http
            .connect_all(
                &[ServerSpec::new(
                    "web",
                    Transport::Http {
                        url: server.url.clone(),
                        headers: Default::default(),
                    },
                )],
                |_| true,
            )
            .await;
        assert_eq!(r.connected.len(), 1, "{r:?}");
        let raw_http = ()
            .serve(rmcp::transport::StreamableHttpClientTransport::from_uri(
                server.url.clone(),
            ))
            .await
            .expect("raw http client");

        wasmgate_calls(&wg, "mcp_git_status", 200).await;
        raw_calls(raw.peer(), 200).await;
        wasmgate_calls(&wg_http, "mcp_web_status", 200).await;
        raw_calls(raw_http.peer(), 200).await;

        let (mut s_raw, mut s_wg, mut h_raw, mut h_wg) = (vec![], vec![], vec![], vec![]);
        for _ in 0..runs {
            s_raw.push(raw_calls(raw.peer(), calls).await);
            s_wg.push(wasmgate_calls(&wg, "mcp_git_status", calls).await);
            h_raw.push(raw_calls(raw_http.peer(), calls).await);
            h_wg.push(wasmgate_calls(&wg_http, "mcp_web_status", calls).await);
        }
        let diffs = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x - y).collect::<Vec<_>>();
        println!(
            "transport | raw rmcp µs/call (calls/s) | wasmgate µs/call (calls/s) | added µs/call (median of per-run differences)"
        );
        for (name, raw_v, wg_v) in [("stdio", &s_raw, &s_wg), ("http", &h_raw, &h_wg)] {
            let r = median(raw_v.clone());
            let w = median(wg_v.clone());
            println!(
                "{name:9} | {r:8.1} ({:6.0}) | {w:8.1} ({:6.0}) | {:+.1}   (per run: {:?})",
                1e6 / r,
                1e6 / w,
                median(diffs(wg_v, raw_v)),
                diffs(wg_v, raw_v)
                    .iter()
                    .map(|d| (d * 10.0).round() / 10.0)
                    .collect::<Vec<_>>()
            );
        }
        wg.shutdown().await;
        wg_http.shutdown().await;
        let _ = raw.cancel().await;
        let _ = raw_http.cancel().await;
    }
}
