//! Sampling (`sampling/createMessage`, `docs/mcp-client.md` §5): a server
//! asks the embedding agent's LLM for a completion.
//!
//! The agent supplies the LLM through [`SamplingProvider`]. Without one (the
//! plain CLI) the client does not advertise the sampling capability. Each
//! request passes the [`SamplingPolicy`] policy first: rate limit (sliding
//! 60 s window, `max_rpm`; 0 disables sampling), model choice (`model`
//! override, else the server's first hint, else the provider's default), the
//! `allowed_models` list enforced on the model actually used (also when the
//! server gave no hint), `max_tokens = min(request, max_tokens_cap)`, the
//! `timeout`, and tool-use rounds per conversation up to `max_tool_rounds`.
//! Audit metrics per server: `requests`, `errors`, `tokens_used`,
//! `tool_use_count`.

use crate::manifest::SamplingPolicy;
use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

/// Width of the rate-limit window.
pub const RATE_WINDOW: Duration = Duration::from_secs(60);

/// A request as the provider sees it (after the policy).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SamplingRequest {
    /// Configured server name that asked.
    pub server: String,
    /// The model to use (already checked against `allowed_models`).
    pub model: String,
    /// Token limit (already capped).
    pub max_tokens: u32,
    /// The server's system prompt.
    pub system_prompt: Option<String>,
    /// The conversation, as MCP `SamplingMessage` JSON objects.
    pub messages: Vec<serde_json::Value>,
    /// Tools the server offers to the LLM (MCP `Tool` JSON); empty when tool
    /// loops are disabled.
    pub tools: Vec<serde_json::Value>,
    /// Sampling temperature, if the server gave one.
    pub temperature: Option<f32>,
    /// Stop sequences, if any.
    pub stop_sequences: Vec<String>,
}

/// The provider's answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SamplingResponse {
    /// The model that answered.
    pub model: String,
    /// `endTurn`, `maxTokens`, `stopSequence`, `toolUse`, … .
    pub stop_reason: Option<String>,
    /// The assistant message, as an MCP `SamplingMessage` JSON object.
    pub message: serde_json::Value,
    /// Tokens the call used (for the audit metrics).
    pub tokens_used: u64,
}

/// Boxed future returned by a provider.
pub type SamplingFuture<'a> =
    Pin<Box<dyn Future<Output = Result<SamplingResponse, String>> + Send + 'a>>;

/// The embedding agent's LLM.
pub trait SamplingProvider: Send + Sync {
    /// The model used when neither the config nor the server names one.
    fn default_model(&self) -> String;
    /// Runs one completion. The error text is redacted before the server sees it.
    fn create_message(&self, request: SamplingRequest) -> SamplingFuture<'_>;
}

/// Why a sampling request was refused or failed.
#[derive(Debug, Clone, PartialEq)]
pub enum SamplingDenied {
    /// Sampling is off for this server.
    Disabled,
    /// More than `max_rpm` requests in the last 60 s.
    RateLimited {
        /// The configured limit.
        max_rpm: u32,
    },
    /// The model to be used is not in `allowed_models`.
    ModelNotAllowed {
        /// The model that would have been used.
        model: String,
    },
    /// The conversation already has `max_tool_rounds` tool-use rounds.
    ToolRounds {
        /// The configured limit.
        max: u32,
    },
    /// The provider did not answer within `timeout`.
    Timeout {
        /// The configured timeout, in seconds.
        seconds: f64,
    },
    /// The provider failed.
    Provider(String),
}

impl fmt::Display for SamplingDenied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SamplingDenied::Disabled => write!(f, "sampling is disabled for this server"),
            SamplingDenied::RateLimited { max_rpm } => {
                write!(
                    f,
                    "sampling rate limit reached ({max_rpm} requests per minute)"
                )
            }
            SamplingDenied::ModelNotAllowed { model } => {
                write!(f, "model '{model}' is not in this server's allowed_models")
            }
            SamplingDenied::ToolRounds { max } => {
                write!(f, "tool loop limit reached ({max} rounds per conversation)")
            }
            SamplingDenied::Timeout { seconds } => {
                write!(f, "the LLM did not answer within {seconds} s")
            }
            SamplingDenied::Provider(m) => write!(f, "the LLM call failed: {m}"),
        }
    }
}

/// Audit metrics of one server (§5, shown in status §6).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SamplingMetrics {
    /// Requests received.
    pub requests: u64,
    /// Requests refused or failed.
    pub errors: u64,
    /// Tokens the provider reported.
    pub tokens_used: u64,
    /// Responses that asked for tool use.
    pub tool_use_count: u64,
}

/// Rate-limit window and metrics of one server; shared across reconnects.
#[derive(Debug, Default)]
pub struct SamplingState {
    window: VecDeque<Instant>,
    /// Audit metrics.
    pub metrics: SamplingMetrics,
}

/// The policy decision for one request: the model and the token limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admitted {
    /// Model to use.
    pub model: String,
    /// Capped token limit.
    pub max_tokens: u32,
    /// Whether tools may be passed on.
    pub tools_allowed: bool,
}

/// Counts tool-use rounds in a conversation: assistant messages that hold a
/// `tool_use` block.
pub fn tool_rounds(messages: &[serde_json::Value]) -> u32 {
    let has_tool_use = |content: &serde_json::Value| match content {
        serde_json::Value::Array(blocks) => blocks.iter().any(|b| b["type"] == "tool_use"),
        other => other["type"] == "tool_use",
    };
    messages
        .iter()
        .filter(|m| m["role"] == "assistant" && has_tool_use(&m["content"]))
        .count() as u32
}

/// Applies the policy to one request at time `now`; records the request in
/// the window and metrics (a refusal counts as an error).
pub fn admit(
    config: &SamplingPolicy,
    state: &mut SamplingState,
    now: Instant,
    hints: &[String],
    requested_max_tokens: u32,
    rounds: u32,
    default_model: &str,
) -> Result<Admitted, SamplingDenied> {
    state.metrics.requests += 1;
    let decision = (|| {
        if !config.active() {
            return Err(SamplingDenied::Disabled);
        }
        while state
            .window
            .front()
            .is_some_and(|t| now.duration_since(*t) >= RATE_WINDOW)
        {
            state.window.pop_front();
        }
        if state.window.len() >= config.max_rpm as usize {
            return Err(SamplingDenied::RateLimited {
                max_rpm: config.max_rpm,
            });
        }
        let model = config
            .model
            .clone()
            .or_else(|| hints.iter().find(|h| !h.is_empty()).cloned())
            .unwrap_or_else(|| default_model.to_string());
        if !config.allowed_models.is_empty() && !config.allowed_models.contains(&model) {
            return Err(SamplingDenied::ModelNotAllowed { model });
        }
        if config.max_tool_rounds > 0 && rounds >= config.max_tool_rounds
            || config.max_tool_rounds == 0 && rounds > 0
        {
            return Err(SamplingDenied::ToolRounds {
                max: config.max_tool_rounds,
            });
        }
        state.window.push_back(now);
        Ok(Admitted {
            model,
            max_tokens: requested_max_tokens.min(config.max_tokens_cap),
            tools_allowed: config.max_tool_rounds > 0,
        })
    })();
    if decision.is_err() {
        state.metrics.errors += 1;
    }
    decision
}

/// Sampling set-up of one server: the provider, its policy and its state.
#[derive(Clone)]
pub struct SamplingSetup {
    /// The agent's LLM.
    pub provider: Arc<dyn SamplingProvider>,
    /// The server's policy.
    pub config: SamplingPolicy,
    /// Window and metrics (shared across reconnects).
    pub state: Arc<Mutex<SamplingState>>,
}

impl fmt::Debug for SamplingSetup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SamplingSetup")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Runs one `sampling/createMessage` for `server` through the policy and the
/// provider (bounded by the config's `timeout`), and records the metrics.
pub async fn run(
    setup: &SamplingSetup,
    server: &str,
    hints: Vec<String>,
    mut request: SamplingRequest,
) -> Result<SamplingResponse, SamplingDenied> {
    let rounds = tool_rounds(&request.messages);
    let admitted = {
        let mut st = setup.state.lock().unwrap_or_else(|p| p.into_inner());
        admit(
            &setup.config,
            &mut st,
            Instant::now(),
            &hints,
            request.max_tokens,
            rounds,
            &setup.provider.default_model(),
        )?
    };
    request.server = server.to_string();
    request.model = admitted.model;
    request.max_tokens = admitted.max_tokens;
    if !admitted.tools_allowed {
        request.tools.clear();
    }
    let outcome =
        tokio::time::timeout(setup.config.timeout, setup.provider.create_message(request)).await;
    let mut st = setup.state.lock().unwrap_or_else(|p| p.into_inner());
    match outcome {
        Err(_) => {
            st.metrics.errors += 1;
            Err(SamplingDenied::Timeout {
                seconds: setup.config.timeout.as_secs_f64(),
            })
        }
        Ok(Err(e)) => {
            st.metrics.errors += 1;
            Err(SamplingDenied::Provider(e))
        }
        Ok(Ok(resp)) => {
            st.metrics.tokens_used += resp.tokens_used;
            if resp.stop_reason.as_deref() == Some("toolUse") {
                st.metrics.tool_use_count += 1;
            }
            Ok(resp)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hints(h: &[&str]) -> Vec<String> {
        h.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn rate_limit_is_a_sliding_minute() {
        let cfg = SamplingPolicy {
            max_rpm: 2,
            ..Default::default()
        };
        let mut st = SamplingState::default();
        let t0 = Instant::now();
        assert!(admit(&cfg, &mut st, t0, &[], 100, 0, "m").is_ok());
        assert!(
            admit(
                &cfg,
                &mut st,
                t0 + Duration::from_secs(10),
                &[],
                100,
                0,
                "m"
            )
            .is_ok()
        );
        assert_eq!(
            admit(
                &cfg,
                &mut st,
                t0 + Duration::from_secs(59),
                &[],
                100,
                0,
                "m"
            ),
            Err(SamplingDenied::RateLimited { max_rpm: 2 })
        );
        // The first request leaves the window at t0 + 60 s.
        assert!(
            admit(
                &cfg,
                &mut st,
                t0 + Duration::from_secs(60),
                &[],
                100,
                0,
                "m"
            )
            .is_ok()
        );
        assert_eq!(st.metrics.requests, 4);
        assert_eq!(st.metrics.errors, 1);

        let off = SamplingPolicy {
            max_rpm: 0,
            ..Default::default()
        };
        assert!(!off.active());
        assert_eq!(
            admit(&off, &mut st, t0, &[], 1, 0, "m"),
            Err(SamplingDenied::Disabled)
        );
    }

    #[test]
    fn model_choice_and_allowlist_also_without_a_hint() {
        let mut st = SamplingState::default();
        let now = Instant::now();
        let cfg = SamplingPolicy {
            allowed_models: vec!["small".into()],
            ..Default::default()
        };
        // No hint: the provider default is used, and it is not allowed.
        assert_eq!(
            admit(&cfg, &mut st, now, &[], 10, 0, "big"),
            Err(SamplingDenied::ModelNotAllowed {
                model: "big".into()
            })
        );
        let a = admit(
            &cfg,
            &mut st,
            now,
            &hints(&["small", "x"]),
            10_000,
            0,
            "big",
        )
        .unwrap();
        assert_eq!(a.model, "small");
        assert_eq!(a.max_tokens, 4096);
        let cfg = SamplingPolicy {
            model: Some("forced".into()),
            ..Default::default()
        };
        let a = admit(&cfg, &mut st, now, &hints(&["hinted"]), 10, 0, "d").unwrap();
        assert_eq!(a.model, "forced");
        assert_eq!(a.max_tokens, 10);
    }

    #[test]
    fn tool_rounds_are_capped_per_conversation() {
        let msgs = vec![
            serde_json::json!({"role": "user", "content": {"type": "text", "text": "hi"}}),
            serde_json::json!({"role": "assistant", "content": [{"type": "tool_use", "id": "1", "name": "t", "input": {}}]}),
            serde_json::json!({"role": "user", "content": [{"type": "tool_result", "toolUseId": "1", "content": []}]}),
            serde_json::json!({"role": "assistant", "content": {"type": "tool_use", "id": "2", "name": "t", "input": {}}}),
        ];
        assert_eq!(tool_rounds(&msgs), 2);
        let mut st = SamplingState::default();
        let now = Instant::now();
        let cfg = SamplingPolicy {
            max_tool_rounds: 2,
            ..Default::default()
        };
        assert_eq!(
            admit(&cfg, &mut st, now, &[], 1, 2, "m"),
            Err(SamplingDenied::ToolRounds { max: 2 })
        );
        assert!(admit(&cfg, &mut st, now, &[], 1, 1, "m").is_ok());
        let no_loops = SamplingPolicy {
            max_tool_rounds: 0,
            ..Default::default()
        };
        let a = admit(&no_loops, &mut st, now, &[], 1, 0, "m").unwrap();
        assert!(!a.tools_allowed);
        assert!(admit(&no_loops, &mut st, now, &[], 1, 1, "m").is_err());
    }

    struct Echo;
    impl SamplingProvider for Echo {
        fn default_model(&self) -> String {
            "echo-1".into()
        }
        fn create_message(&self, request: SamplingRequest) -> SamplingFuture<'_> {
            Box::pin(async move {
                if request.system_prompt.as_deref() == Some("slow") {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                }
                Ok(SamplingResponse {
                    model: request.model.clone(),
                    stop_reason: Some(
                        if request.tools.is_empty() {
                            "endTurn"
                        } else {
                            "toolUse"
                        }
                        .into(),
                    ),
                    message: serde_json::json!({"role": "assistant", "content": {"type": "text", "text": format!("max {}", request.max_tokens)}}),
                    tokens_used: 7,
                })
            })
        }
    }

    #[tokio::test]
    async fn run_applies_policy_timeout_and_metrics() {
        let setup = SamplingSetup {
            provider: Arc::new(Echo),
            config: SamplingPolicy {
                max_tokens_cap: 50,
                timeout: Duration::from_millis(50),
                ..Default::default()
            },
            state: Default::default(),
        };
        let req = |system: Option<&str>, tools: usize| SamplingRequest {
            server: String::new(),
            model: String::new(),
            max_tokens: 1000,
            system_prompt: system.map(str::to_string),
            messages: vec![],
            tools: vec![serde_json::json!({}); tools],
            temperature: None,
            stop_sequences: vec![],
        };
        let r = run(&setup, "s", vec![], req(None, 0)).await.unwrap();
        assert_eq!(r.model, "echo-1");
        assert_eq!(r.message["content"]["text"], "max 50");
        let r = run(&setup, "s", vec![], req(None, 1)).await.unwrap();
        assert_eq!(r.stop_reason.as_deref(), Some("toolUse"));
        let e = run(&setup, "s", vec![], req(Some("slow"), 0))
            .await
            .unwrap_err();
        assert!(matches!(e, SamplingDenied::Timeout { .. }));
        let m = setup.state.lock().unwrap().metrics.clone();
        assert_eq!(
            m,
            SamplingMetrics {
                requests: 3,
                errors: 1,
                tokens_used: 14,
                tool_use_count: 1
            }
        );
    }
}
