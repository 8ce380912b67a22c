//! The filtered environment of a stdio child (`docs/mcp-client.md` §4),
//! checked through a real child: a shell that records its environment and
//! then becomes the git MCP server, so the connection itself succeeds.
//! One test per binary: it sets variables of this process.

mod common;
use common::git_server_bin;
use std::collections::BTreeMap;
use std::time::Duration;

use wasmgate::{ConnectionState, McpClient};
use wasmgate::{ServerSpec, Transport};

#[tokio::test]
async fn stdio_child_sees_only_baseline_env_passthrough_and_its_own_env() {
    // SAFETY: this binary has this single test, and these are set before any
    // thread of ours reads the environment.
    unsafe {
        std::env::set_var("OPENAI_API_KEY", "sk-host-secret-must-not-leak");
        std::env::set_var("HTTPS_PROXY", "http://proxy.invalid:3128");
        std::env::set_var("WASMGATE_TEST_PASSED", "passed-through");
    }
    let out = tempfile::tempdir().unwrap();
    let dump = out.path().join("env.txt");
    let mut env = BTreeMap::new();
    env.insert("SERVER_OWN".to_string(), "own-value".to_string());
    env.insert("ENV_DUMP".to_string(), dump.display().to_string());
    let transport = Transport::Stdio {
        command: "sh".into(),
        args: vec![
            "-c".into(),
            "env > \"$ENV_DUMP\"; exec \"$0\"".into(),
            git_server_bin().display().to_string(),
        ],
        env,
        env_passthrough: vec!["WASMGATE_TEST_PASSED".into()],
    };
    let spec = ServerSpec {
        timeout: Duration::from_secs(30),
        connect_timeout: Duration::from_secs(30),
        max_result_bytes: 1 << 20,
        ..ServerSpec::new("envcheck", transport)
    };
    let client = McpClient::new();
    client.connect_all(&[spec], |_| true).await;
    assert_eq!(
        client.status()[0].state,
        ConnectionState::Connected,
        "{:?}",
        client.status()
    );
    let seen = std::fs::read_to_string(&dump).unwrap();
    let names: Vec<&str> = seen.lines().filter_map(|l| l.split('=').next()).collect();
    assert!(seen.contains("SERVER_OWN=own-value"), "{seen}");
    assert!(
        seen.contains("WASMGATE_TEST_PASSED=passed-through"),
        "{seen}"
    );
    assert!(names.contains(&"PATH"), "{seen}");
    assert!(
        !seen.contains("sk-host-secret"),
        "host secret leaked: {seen}"
    );
    assert!(!names.contains(&"HTTPS_PROXY"), "proxy leaked: {seen}");
    for name in names {
        let allowed = wasmgate::child_env::is_baseline(name)
            || ["SERVER_OWN", "ENV_DUMP", "WASMGATE_TEST_PASSED"].contains(&name)
            // Set by the shell itself.
            || ["PWD", "SHLVL", "_", "OLDPWD"].contains(&name);
        assert!(
            allowed,
            "unexpected variable {name} in the child's environment"
        );
    }
    client.shutdown().await;
}
