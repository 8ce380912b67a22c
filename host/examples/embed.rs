//! The Rust embedding API in about 25 lines: load plugin folders, discover,
//! list offered tools and visible skills, call a tool, shut down.
//!
//! `cargo run -p wasmgate --example embed -- target/plugins` (after
//! `cargo xtask plugins`); it calls `mcp_git_log` on the current folder.
//! For live changes (an application installed, a plugin added) wrap the
//! options in `wasmgate::gateway::Gateway` and `subscribe()` to its changes.

use wasmgate::{Host, HostOptions};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut options = HostOptions::new();
    options.plugin_dirs = std::env::args().skip(1).map(Into::into).collect();
    // The folders named on the command line are trusted as they are; keep
    // the default (the user's plugin lock) for plugins users install.
    options.trust = wasmgate::TrustPolicy::Dev;
    let host = Host::load(options)?; // validates manifests, evaluates availability
    host.discover().await; // connects only offerable servers, in parallel
    for tool in host.offered_tools() {
        println!("tool  {}  {}", tool.name, tool.description);
    }
    for skill in host.visible_skills() {
        println!("skill {} (plugin {})", skill.name, skill.plugin);
    }
    let result = host
        .call("mcp_git_log", serde_json::json!({"max_count": 3}))
        .await;
    match result {
        Ok(r) => println!("mcp_git_log (is_error: {}):\n{}", r.is_error, r.text()),
        Err(e) => println!("mcp_git_log: {e}"),
    }
    host.shutdown().await; // ends every server child
    Ok(())
}
