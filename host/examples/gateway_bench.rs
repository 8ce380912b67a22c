//! Benchmark: the per-call overhead of going through `wasmgate serve` versus
//! calling the same MCP server directly (`docs/mcp-client.md` §7). Both paths use the same
//! client (wasmgate's own, `Host::call`), so the difference is the gateway:
//!
//! - direct:  client → `git-mcp-server`
//! - gateway: client → `wasmgate serve` (stdio) → `git-mcp-server`
//!
//! The tool is `show` with an invalid revision `-<id>`: the server answers at
//! once with a tool error that echoes the id, so the figures measure MCP
//! round trips rather than git, and every answer proves which call it
//! belongs to (no lost, duplicated or crossed call).
//!
//! Run (after `cargo xtask plugins`; release so the gateway is optimised):
//!
//! ```text
//! cargo build --release -p wasmgate --bins --examples
//! target/release/examples/gateway_bench
//! ```
//!
//! Options: `--wasmgate PATH` (default: `wasmgate` beside this example's
//! folder), `--server PATH` (default `target/plugins/git/git-mcp-server`),
//! `--serial N` (default 2,000), `--calls N` (default 10,000; fewer for a
//! profile under valgrind), `--rounds N` (default 3; rounds alternate the
//! two paths, and the summary line gives medians).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use wasmgate::{Host, HostOptions};

/// Sequential calls measured for latency (`--serial N`), after `WARMUP`
/// untimed ones.
const SERIAL: usize = 2_000;
const WARMUP: usize = 200;
/// Calls (`--calls N`) and callers of the concurrency run.
const CALLS: usize = 10_000;
const CALLERS: usize = 64;
/// Rounds (`--rounds N`), each measuring direct then gateway.
const ROUNDS: usize = 3;

/// A count option, or its default.
fn count(name: &str, default: usize) -> usize {
    arg(name)
        .and_then(|v| v.to_str().and_then(|s| s.parse().ok()))
        .unwrap_or(default)
}

fn arg(name: &str) -> Option<PathBuf> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(PathBuf::from)
}

async fn host(config: &Path) -> anyhow::Result<Host> {
    let mut o = HostOptions::new();
    o.config = Some(config.to_path_buf());
    let h = Host::load(o)?;
    let report = h.discover().await;
    anyhow::ensure!(
        report.failed.is_empty(),
        "connect failed: {:?}",
        report.failed
    );
    Ok(h)
}

/// One call; returns its latency. Panics when the answer is not this call's.
async fn call(h: &Host, tool: &str, id: usize) -> Duration {
    let t = Instant::now();
    let r = h
        .call(tool, serde_json::json!({"revision": format!("-{id}")}))
        .await
        .unwrap_or_else(|e| panic!("{tool} call {id}: {e}"));
    let took = t.elapsed();
    let want = format!("'-{id}'");
    assert!(
        r.is_error && r.text().contains(&want),
        "call {id}: {}",
        r.text()
    );
    took
}

fn pct(sorted: &[Duration], p: usize) -> Duration {
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}

struct Figures {
    p50: Duration,
    p99: Duration,
    per_second: f64,
    answered: usize,
}

async fn measure(h: Arc<Host>, tool: &str, serial: usize, calls: usize) -> Figures {
    for i in 0..WARMUP {
        call(&h, tool, i).await;
    }
    let mut lat = Vec::with_capacity(serial);
    for i in 0..serial {
        lat.push(call(&h, tool, i).await);
    }
    lat.sort();

    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..CALLERS {
        let (h, next, tool) = (h.clone(), next.clone(), tool.to_owned());
        tasks.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            loop {
                let id = next.fetch_add(1, Ordering::Relaxed);
                if id >= calls {
                    return ids;
                }
                call(&h, &tool, id).await;
                ids.push(id);
            }
        }));
    }
    let mut seen = HashSet::new();
    for t in tasks {
        for id in t.await.expect("caller task") {
            assert!(seen.insert(id), "call {id} answered twice");
        }
    }
    let elapsed = start.elapsed();
    assert_eq!(seen.len(), calls, "lost calls");
    Figures {
        p50: pct(&lat, 50),
        p99: pct(&lat, 99),
        per_second: calls as f64 / elapsed.as_secs_f64(),
        answered: seen.len(),
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let exe = std::env::current_exe()?;
    let profile = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/examples");
    let wasmgate = arg("--wasmgate").unwrap_or_else(|| profile.join("wasmgate"));
    let server =
        arg("--server").unwrap_or_else(|| PathBuf::from("target/plugins/git/git-mcp-server"));
    let server = std::fs::canonicalize(&server)
        .map_err(|e| anyhow::anyhow!("{}: {e} (run `cargo xtask plugins`)", server.display()))?;
    let tmp = std::env::temp_dir().join(format!("wasmgate-bench-{}", std::process::id()));
    std::fs::create_dir_all(tmp.join("no-plugins"))?;
    let direct_cfg = tmp.join("direct.yaml");
    std::fs::write(
        &direct_cfg,
        format!(
            "mcp_servers:\n  git:\n    command: \"{}\"\n",
            server.display()
        ),
    )?;
    let gw_cfg = tmp.join("gateway.yaml");
    std::fs::write(
        &gw_cfg,
        format!(
            "mcp_servers:\n  gw:\n    command: \"{}\"\n    args: [serve, --config, \"{}\", --plugins, \"{}\", --refresh-seconds, \"0\"]\n",
            wasmgate.display(),
            direct_cfg.display(),
            tmp.join("no-plugins").display()
        ),
    )?;

    let serial = count("--serial", SERIAL).max(1);
    let calls = count("--calls", CALLS);
    let rounds = count("--rounds", ROUNDS).max(1);
    let direct = Arc::new(host(&direct_cfg).await?);
    let gateway = Arc::new(host(&gw_cfg).await?);
    // Rounds alternate direct and gateway, so a change of the machine's
    // load hits both paths alike; the summary takes medians.
    let mut rows = Vec::new();
    for _ in 0..rounds {
        let d = measure(direct.clone(), "mcp_git_show", serial, calls).await;
        let g = measure(gateway.clone(), "mcp_gw_mcp_git_show", serial, calls).await;
        rows.push((d, g));
    }
    direct.shutdown().await;
    gateway.shutdown().await;
    let _ = std::fs::remove_dir_all(&tmp);

    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "| round | direct p50 | direct p99 | gateway p50 | gateway p99 | direct calls/s | gateway calls/s | ratio | answered |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for (i, (d, g)) in rows.iter().enumerate() {
        println!(
            "| {} | {:.0} µs | {:.0} µs | {:.0} µs | {:.0} µs | {:.0} | {:.0} | {:.2} | {} / {} |",
            i + 1,
            us(d.p50),
            us(d.p99),
            us(g.p50),
            us(g.p99),
            d.per_second,
            g.per_second,
            g.per_second / d.per_second,
            d.answered.min(g.answered),
            calls
        );
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let added50 = median(rows.iter().map(|(d, g)| us(g.p50) - us(d.p50)).collect());
    let added99 = median(rows.iter().map(|(d, g)| us(g.p99) - us(d.p99)).collect());
    let ratio = median(
        rows.iter()
            .map(|(d, g)| g.per_second / d.per_second)
            .collect(),
    );
    println!(
        "\nmedians over {rounds} round(s): added at p50 {added50:.0} µs, at p99 {added99:.0} µs; \
         throughput ratio gateway/direct {ratio:.2} ({CALLERS} callers, {calls} calls per path and round)"
    );
    Ok(())
}
