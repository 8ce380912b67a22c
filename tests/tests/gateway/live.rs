//! The gateway's library API (`docs/mcp-client.md` §7, "subscribe to changes"): a plugin
//! folder removed and added back while the gateway runs, seen by
//! `Gateway::refresh` (on demand) and by `Gateway::watch` (the folder poll),
//! with a `Change` for each and the offered tools following.

use std::path::Path;
use std::time::Duration;
use wasmgate::TrustPolicy;
use wasmgate::gateway::{Gateway, GatewayOptions};
use wasmgate_conformance::plugins_dir;

/// A `plugin.yaml` plugin whose server (no declaration: always offerable)
/// is the git example's server under the name `extra`.
fn write_extra(dir: &Path) {
    let server = plugins_dir().join("git").join("git-mcp-server");
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("plugin.yaml"),
        format!(
            "name: extra\nversion: \"0.1.0\"\nmcp_servers:\n  extra:\n    command: \"{}\"\n",
            server.display()
        ),
    )
    .unwrap();
}

fn has_extra(gw: &Gateway) -> bool {
    gw.offered_tools().iter().any(|t| t.name == "mcp_extra_log")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugin_removed_and_added_back_mid_session() {
    let tmp = tempfile::tempdir().unwrap();
    let extra = tmp.path().join("extra");
    write_extra(&extra);
    let mut options = GatewayOptions::new();
    options.host.trust = TrustPolicy::Dev;
    options.host.plugin_dirs = vec![plugins_dir(), tmp.path().to_path_buf()];
    options.refresh_every = None;
    options.watch_tick = Duration::from_millis(100);
    let gw = Gateway::start(options).await.expect("gateway starts");
    assert!(has_extra(&gw), "{:?}", gw.offered_tools());
    let mut changes = gw.subscribe();

    // On demand: the folder is gone, a refresh swaps hosts and says so.
    std::fs::remove_dir_all(&extra).unwrap();
    let outcome = gw.refresh().await.unwrap();
    assert!(outcome.swapped && outcome.tools_changed, "{outcome:?}");
    let change = changes.recv().await.unwrap();
    assert!(change.tools && change.availability, "{change:?}");
    assert!(!has_extra(&gw));
    assert!(gw.offered_tools().iter().any(|t| t.name == "mcp_git_log"));
    let err = gw
        .call("mcp_extra_log", serde_json::json!({}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("mcp_extra_log"), "{err}");

    // A refresh with nothing changed keeps the live host and says nothing.
    let outcome = gw.refresh().await.unwrap();
    assert!(!outcome.swapped && !outcome.tools_changed, "{outcome:?}");

    // The watch: the folder comes back and is picked up by the poll.
    let watch = tokio::spawn(gw.clone().watch());
    write_extra(&extra);
    let change = tokio::time::timeout(Duration::from_secs(60), changes.recv())
        .await
        .expect("a change within 60 s")
        .unwrap();
    assert!(change.tools, "{change:?}");
    assert!(has_extra(&gw), "{:?}", gw.offered_tools());
    let r = gw
        .call("mcp_extra_log", serde_json::json!({"max_count": 1}))
        .await
        .expect("the re-added server answers");
    assert!(!r.is_error, "{}", r.text());
    watch.abort();
    gw.shutdown().await;
}
