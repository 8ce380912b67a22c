//! What passes through `wasmgate serve` besides tools (`docs/mcp-client.md`
//! §7, "Pass-through"), with real processes: `wasmgate serve --http
//! --prefix never` in front of the conformance fixture server
//! (`tests/src/bin/conformance-fixture-server.rs`, over stdio), and rmcp
//! clients of ours over streamable HTTP as the agents.
//!
//! - Progress of one client's call reaches that client with its own token,
//!   never another client calling the same tool at the same time.
//! - Six elicitations at once: four reach the agent, two are refused.
//! - A server that withdraws its elicitation: the agent asked gets
//!   `notifications/cancelled` for it.
//! - A client that cancels a call: the server gets `notifications/cancelled`
//!   and the gateway forgets the call (another client's elicitation, which
//!   needs exactly one session's calls in flight, is then answered).
//! - Log lines at the level the client set; elicitation refused for a client
//!   that did not declare it; resource updates only to subscribers.
//! - A server that is not offered (its application is missing) lists no
//!   prompt or resource and serves no prompt.
//! - `--prefix never` with two servers sharing names refuses to start and
//!   lists the names.
//! - The official Python SDK as the agent: progress during a long call, log
//!   lines at the level it set, an upstream prompt and resource, an
//!   elicitation it answers, and its cancellation reaching the server.

// rmcp marks logging deprecated (protocol 2026-07-28); the fixture speaks
// 2025-11-25, where it is current.
#![allow(deprecated)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientCapabilities, ClientConfig, ClientRequest,
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability, Implementation,
    LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
    ResourceUpdatedNotificationParam, ServerResult, SetLevelRequestParams, SubscribeRequestParams,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use wasmgate_conformance::{ServedHttp, wasmgate_dev};

/// Longest wait for any one step.
const STEP: Duration = Duration::from_secs(60);

/// What one client session received besides answers.
#[derive(Default)]
struct Seen {
    progress: Vec<ProgressNotificationParam>,
    logs: Vec<LoggingMessageNotificationParam>,
    updated: Vec<String>,
    elicited: usize,
    /// Elicitations the server withdrew while this agent was asked.
    withdrawn: usize,
}

/// An agent: records notifications; declares elicitation when `elicits`
/// (and then accepts with a fixed answer).
#[derive(Clone)]
struct Agent {
    name: &'static str,
    elicits: bool,
    seen: Arc<Mutex<Seen>>,
}

impl ClientHandler for Agent {
    fn get_info(&self) -> ClientConfig {
        let mut caps = ClientCapabilities::default();
        if self.elicits {
            caps.elicitation = Some(ElicitationCapability::default());
        }
        ClientConfig::new(caps, Implementation::new(self.name, "1"))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.seen.lock().unwrap().progress.push(params);
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.seen.lock().unwrap().logs.push(params);
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.seen.lock().unwrap().updated.push(params.uri);
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        self.seen.lock().unwrap().elicited += 1;
        let message = serde_json::to_value(&request).unwrap()["message"].clone();
        if message == "hold" {
            // A person who takes a while: the requests wait side by side.
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        if message == "never mind" {
            // The fixture withdraws this one: the person is never asked
            // for long; the withdrawal must reach the agent.
            if tokio::time::timeout(STEP, context.ct.cancelled())
                .await
                .is_ok()
            {
                self.seen.lock().unwrap().withdrawn += 1;
            }
            return Err(rmcp::ErrorData::internal_error("withdrawn", None));
        }
        Ok(ElicitResult::new(ElicitationAction::Accept)
            .with_content(serde_json::json!({"username": "agent-b", "email": "b@example.com"})))
    }
}

type Client = RunningService<RoleClient, Agent>;

async fn connect(url: &str, name: &'static str, elicits: bool) -> (Client, Arc<Mutex<Seen>>) {
    let seen: Arc<Mutex<Seen>> = Default::default();
    let agent = Agent {
        name,
        elicits,
        seen: seen.clone(),
    };
    let transport = StreamableHttpClientTransport::from_uri(url.to_string());
    let client = tokio::time::timeout(STEP, agent.serve(transport))
        .await
        .expect("initialize in time")
        .expect("initialize");
    (client, seen)
}

/// The fixture behind `wasmgate serve --http --prefix never`.
fn gateway(dir: &std::path::Path) -> ServedHttp {
    gateway_logged(dir, Default::default())
}

/// [`gateway`], keeping the gateway's stderr lines in `log`.
fn gateway_logged(dir: &std::path::Path, log: Arc<Mutex<Vec<String>>>) -> ServedHttp {
    wasmgate_conformance::serve_fixture_gateway(
        dir,
        env!("CARGO_BIN_EXE_conformance-fixture-server"),
        log,
    )
}

/// Waits until `done`; panics after [`STEP`] with `what`.
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + STEP;
    while !done() {
        assert!(std::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until a line of `log` contains `needle`; panics after [`STEP`]
/// with `what`.
fn wait_for_line(log: &Mutex<Vec<String>>, needle: &str, what: &str) {
    let deadline = std::time::Instant::now() + STEP;
    while !log.lock().unwrap().iter().any(|l| l.contains(needle)) {
        assert!(std::time::Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn call_params(tool: &str, args: serde_json::Value) -> CallToolRequestParams {
    let serde_json::Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    CallToolRequestParams::new(tool.to_string()).with_arguments(args)
}

/// Sends a `tools/call`; the token rmcp put on it and the pending answer.
async fn start_call(
    client: &Client,
    tool: &str,
    args: serde_json::Value,
) -> (ProgressToken, rmcp::service::RequestHandle<RoleClient>) {
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(call_params(tool, args)));
    let handle = client
        .peer()
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
        .expect("send tools/call");
    (handle.progress_token.clone(), handle)
}

/// The text of a `tools/call` answer and whether it is a tool error.
fn text_of(result: ServerResult) -> (String, bool) {
    let v = match result {
        ServerResult::CallToolResult(r) => serde_json::to_value(r).unwrap(),
        ServerResult::CustomResult(c) => c.0,
        other => panic!("not a tools/call result: {other:?}"),
    };
    let text = v["content"][0]["text"].as_str().unwrap_or("").to_string();
    (text, v["isError"] == true)
}

async fn call_text(client: &Client, tool: &str, args: serde_json::Value) -> (String, bool) {
    let (_, handle) = start_call(client, tool, args).await;
    let r = tokio::time::timeout(STEP, handle.await_response())
        .await
        .expect("answer in time")
        .expect("answer");
    text_of(r)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_of_one_client_never_reaches_another() {
    let tmp = tempfile::tempdir().unwrap();
    let served = gateway(tmp.path());
    let (a, seen_a) = connect(&served.url, "agent-a", false).await;
    let (b, seen_b) = connect(&served.url, "agent-b", false).await;
    // Both sessions count their progress tokens from the same start, so
    // both calls carry the same token: only the session tells them apart.
    let (token_a, call_a) = start_call(&a, "test_slow", serde_json::json!({"seconds": 2})).await;
    let (token_b, call_b) = start_call(&b, "test_slow", serde_json::json!({"seconds": 3})).await;
    let (ra, rb) = tokio::join!(
        tokio::time::timeout(STEP, call_a.await_response()),
        tokio::time::timeout(STEP, call_b.await_response())
    );
    assert_eq!(text_of(ra.unwrap().unwrap()).0, "slept 2 s");
    assert_eq!(text_of(rb.unwrap().unwrap()).0, "slept 3 s");
    let check = |seen: &Arc<Mutex<Seen>>, token: &ProgressToken, total: f64| {
        let seen = seen.lock().unwrap();
        let got: Vec<(f64, Option<f64>)> = seen
            .progress
            .iter()
            .map(|p| (p.progress, p.total))
            .collect();
        let want: Vec<(f64, Option<f64>)> =
            (0..total as u64).map(|i| (i as f64, Some(total))).collect();
        assert_eq!(
            got, want,
            "progress of a {total} s call, in order, and nothing else"
        );
        assert!(
            seen.progress.iter().all(|p| &p.progress_token == token),
            "progress with the caller's own token"
        );
    };
    check(&seen_a, &token_a, 2.0);
    check(&seen_b, &token_b, 3.0);
    let _ = a.cancel().await;
    let _ = b.cancel().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_reaches_the_server_and_is_forgotten_by_the_gateway() {
    let tmp = tempfile::tempdir().unwrap();
    let log: Arc<Mutex<Vec<String>>> = Default::default();
    let served = gateway_logged(tmp.path(), log.clone());
    let (a, seen_a) = connect(&served.url, "agent-a", false).await;
    let (b, seen_b) = connect(&served.url, "agent-b", true).await;
    let (_, call) = start_call(&a, "test_slow", serde_json::json!({"seconds": 30})).await;
    // The call is running on the server once its first progress arrived.
    until("no progress of test_slow", || {
        !seen_a.lock().unwrap().progress.is_empty()
    })
    .await;
    call.cancel(Some("the agent changed its mind".into()))
        .await
        .expect("send notifications/cancelled");
    // The server saw the cancellation (it says so on its stderr, which
    // wasmgate logs with the server's name).
    wait_for_line(
        &log,
        "test_slow cancelled",
        "the server never saw notifications/cancelled",
    );
    // The gateway forgot A's call: B's elicitation is tied to B's call
    // alone (with A's call still counted, it would be refused as belonging
    // to one of two clients).
    let (text, is_error) = call_text(
        &b,
        "test_elicitation",
        serde_json::json!({"message": "who are you?"}),
    )
    .await;
    assert!(!is_error, "elicitation through the gateway failed: {text}");
    assert!(
        text.contains("accept") && text.contains("agent-b"),
        "{text}"
    );
    assert_eq!(seen_b.lock().unwrap().elicited, 1);
    // A's session is still usable.
    let (text, is_error) = call_text(&a, "test_simple_text", serde_json::json!({})).await;
    assert!(!is_error && text.contains("simple text"), "{text}");
    let _ = a.cancel().await;
    let _ = b.cancel().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_elicitation_the_server_withdraws_is_withdrawn_from_the_agent() {
    let tmp = tempfile::tempdir().unwrap();
    let served = gateway(tmp.path());
    let (b, seen_b) = connect(&served.url, "agent-b", true).await;
    let (_, call) = start_call(&b, "test_elicitation_withdrawn", serde_json::json!({})).await;
    let answer = call.await_response();
    tokio::pin!(answer);
    // Cancellation the other way: the server's notifications/cancelled for
    // its elicitation reaches the agent that was asked, while the call
    // still runs (the fixture answers 5 s later).
    let withdrawn = async {
        while seen_b.lock().unwrap().withdrawn == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::select! {
        () = withdrawn => {}
        r = &mut answer => panic!(
            "the call ended ({r:?}) before the agent was told the request was withdrawn \
             (asked {} time(s))",
            seen_b.lock().unwrap().elicited
        ),
    }
    let r = tokio::time::timeout(STEP, answer)
        .await
        .expect("answer in time")
        .expect("answer");
    assert_eq!(text_of(r), ("withdrawn".to_string(), false));
    assert_eq!(seen_b.lock().unwrap().elicited, 1);
    let _ = b.cancel().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_elicitations_is_bounded_the_extra_ones_refused_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let served = gateway(tmp.path());
    let (b, seen_b) = connect(&served.url, "agent-b", true).await;
    let (text, is_error) = call_text(&b, "test_elicitation_burst", serde_json::json!({})).await;
    assert!(!is_error, "{text}");
    assert!(
        text.starts_with("answered=4 refused=2: ") && text.contains("4 elicitation requests"),
        "six at once while the agent takes 1 s each: {text}"
    );
    assert_eq!(seen_b.lock().unwrap().elicited, 4, "{text}");
    let _ = b.cancel().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_lines_at_the_level_set_elicitation_only_when_declared_updates_only_to_subscribers() {
    let tmp = tempfile::tempdir().unwrap();
    let served = gateway(tmp.path());
    let (a, seen_a) = connect(&served.url, "agent-a", false).await;
    let (b, seen_b) = connect(&served.url, "agent-b", false).await;

    // Level info: the tool's three info lines, not its debug line.
    tokio::time::timeout(
        STEP,
        a.peer()
            .set_level(SetLevelRequestParams::new(LoggingLevel::Info)),
    )
    .await
    .unwrap()
    .expect("logging/setLevel");
    let (text, _) = call_text(&a, "test_tool_with_logging", serde_json::json!({})).await;
    assert!(text.contains("executed successfully"), "{text}");
    // Over streamable HTTP, rmcp's server sends log lines on the session's
    // own stream, not the call's: they may land just after the answer.
    let deadline = std::time::Instant::now() + STEP;
    while seen_a.lock().unwrap().logs.len() < 3 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    {
        let seen = seen_a.lock().unwrap();
        let lines: Vec<String> = seen
            .logs
            .iter()
            .map(|l| l.data.as_str().unwrap_or("").to_string())
            .collect();
        assert_eq!(
            lines,
            [
                "Tool execution started",
                "Tool processing data",
                "Tool execution completed"
            ],
            "the info lines in order, no debug line"
        );
        assert!(seen.logs.iter().all(|l| l.level == LoggingLevel::Info));
    }
    assert!(
        seen_b.lock().unwrap().logs.is_empty(),
        "another client's log lines reached B"
    );

    // A did not declare elicitation: the server's request is refused with
    // the reason, and A is never asked.
    let (text, is_error) = call_text(
        &a,
        "test_elicitation",
        serde_json::json!({"message": "who are you?"}),
    )
    .await;
    assert!(is_error, "{text}");
    assert!(
        text.contains("did not declare the elicitation capability"),
        "{text}"
    );

    // Resource updates go to the session that subscribed only.
    tokio::time::timeout(
        STEP,
        b.peer().subscribe(SubscribeRequestParams::new(
            "test://watched-resource".to_string(),
        )),
    )
    .await
    .unwrap()
    .expect("resources/subscribe");
    until("no resources/updated", || {
        !seen_b.lock().unwrap().updated.is_empty()
    })
    .await;
    assert_eq!(seen_b.lock().unwrap().updated, ["test://watched-resource"]);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        seen_a.lock().unwrap().updated.is_empty(),
        "an update reached a client that did not subscribe"
    );
    let _ = a.cancel().await;
    let _ = b.cancel().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_is_not_offered_lists_no_prompt_or_resource_and_serves_no_prompt() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("gateway.yaml");
    let fixture = env!("CARGO_BIN_EXE_conformance-fixture-server");
    // `hidden` fronts an application this machine does not have: not
    // offered, so nothing of it may reach the agent.
    let app =
        "{presence: executable, location: [{kind: command, name: wasmgate-test-no-such-app}]}";
    std::fs::write(
        &cfg,
        format!(
            "mcp_servers:\n  shown:\n    command: \"{fixture}\"\n  hidden:\n    command: \"{fixture}\"\n    app: {{linux: {app}, darwin: {app}, win32: {app}}}\n    requires: {{app: true}}\n"
        ),
    )
    .unwrap();
    let plugins = tmp.path().join("no-plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let served = wasmgate_conformance::serve_http(
        &[
            "--config".as_ref(),
            cfg.as_os_str(),
            "--plugins".as_ref(),
            plugins.as_os_str(),
        ],
        |_| {},
    );
    let (a, _) = connect(&served.url, "agent-a", false).await;
    let prompts: Vec<String> = a
        .peer()
        .list_all_prompts()
        .await
        .expect("prompts/list")
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert!(
        prompts.contains(&"mcp_shown_test_simple_prompt".to_string()),
        "{prompts:?}"
    );
    assert!(
        !prompts.iter().any(|p| p.contains("hidden")),
        "a prompt of the server that is not offered: {prompts:?}"
    );
    let uris: Vec<String> = a
        .peer()
        .list_all_resources()
        .await
        .expect("resources/list")
        .into_iter()
        .map(|r| r.uri.clone())
        .collect();
    // Both servers list the same URIs; only the offered one's are there, once.
    assert_eq!(
        uris.iter().filter(|u| *u == "test://static-text").count(),
        1,
        "{uris:?}"
    );
    let prompt = a
        .peer()
        .get_prompt(rmcp::model::GetPromptRequestParams::new(
            "mcp_hidden_test_simple_prompt",
        ))
        .await;
    assert!(
        prompt.is_err(),
        "a prompt of the server that is not offered was served: {prompt:?}"
    );
    let _ = a.cancel().await;
}

#[test]
fn prefix_never_with_colliding_names_refuses_to_start_and_lists_them() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("gateway.yaml");
    let fixture = env!("CARGO_BIN_EXE_conformance-fixture-server");
    std::fs::write(
        &cfg,
        format!(
            "mcp_servers:\n  one:\n    command: \"{fixture}\"\n  two:\n    command: \"{fixture}\"\n"
        ),
    )
    .unwrap();
    let plugins = tmp.path().join("no-plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let mut child = wasmgate_dev()
        .args(["serve", "--prefix", "never", "--refresh-seconds", "0"])
        .arg("--config")
        .arg(&cfg)
        .arg("--plugins")
        .arg(&plugins)
        .env_remove("WASMGATE_PLUGINS")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn wasmgate serve");
    // Read while it runs: a full pipe must not stall it.
    let mut pipe = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut pipe, &mut s);
        s
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("wasmgate serve --prefix never started although two servers share names");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stderr = reader.join().unwrap();
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--prefix never"), "{stderr}");
    for name in [
        "tool 'test_simple_text'",
        "tool 'test_slow'",
        "prompt 'test_simple_prompt'",
    ] {
        assert!(
            stderr.contains(&format!("{name} is offered by 'one' and 'two'")),
            "{name} not listed:\n{stderr}"
        );
    }
}

/// The same pass-through with a client we did not write: the official
/// Python SDK (`tests/python/gateway_transparent.py`) over streamable HTTP.
#[test]
fn python_sdk_gets_progress_log_lines_at_its_level_prompts_resources_elicitation_and_cancels() {
    let tmp = tempfile::tempdir().unwrap();
    let log: Arc<Mutex<Vec<String>>> = Default::default();
    let served = gateway_logged(tmp.path(), log.clone());
    let out = wasmgate_conformance::python_json(
        "gateway_transparent.py",
        std::slice::from_ref(&served.url),
        |_| {},
    );
    let levels: Vec<&str> = out["logs_at_info"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["level"].as_str().unwrap())
        .collect();
    assert_eq!(levels, ["info", "info", "info"], "{out}");
    let after: Vec<&str> = out["logs_at_error_then_info"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["level"].as_str().unwrap())
        .collect();
    assert_eq!(
        after,
        ["info", "info", "info"],
        "only the call at `info` brought lines, none of the call at `error`: {out}"
    );
    assert_eq!(out["slow"], "slept 2 s", "{out}");
    assert_eq!(
        out["progress"],
        serde_json::json!([[0.0, 2.0], [1.0, 2.0]]),
        "progress of the call, in order, to the SDK's callback (its own token): {out}"
    );
    assert!(
        out["prompts"]
            .as_array()
            .unwrap()
            .contains(&"test_prompt_with_arguments".into()),
        "{out}"
    );
    assert_eq!(
        out["prompt"],
        serde_json::json!(["Prompt with arguments: arg1='one', arg2='two'"]),
        "{out}"
    );
    assert!(
        out["resources"]
            .as_array()
            .unwrap()
            .contains(&"test://static-text".into()),
        "upstream URIs keep their scheme: {out}"
    );
    assert!(
        !out["resource"][0].as_str().unwrap_or("").is_empty(),
        "{out}"
    );
    let elicitation = out["elicitation"].as_str().unwrap();
    assert!(
        elicitation.contains("accept") && elicitation.contains("py-agent"),
        "the server got the client's answer: {out}"
    );
    assert_eq!(
        out["elicited"],
        serde_json::json!(["who are you?"]),
        "{out}"
    );
    wait_for_line(
        &log,
        "test_slow cancelled",
        "the SDK's notifications/cancelled never reached the server",
    );
    assert!(
        out["after_cancel"]
            .as_str()
            .unwrap()
            .contains("simple text"),
        "the session works after the cancellation: {out}"
    );
}
