//! A server's `sampling:` block (`docs/mcp-client.md` §1 and §5): validated
//! at load time, kept as a [`SamplingPolicy`] for the MCP client.

use super::num::{parse_seconds, parse_uint};
use crate::validation::{Cursor, Problem, must_be, unknown_keys_message};
use std::time::Duration;
use crate::document::Value;

/// Level of the sampling audit log lines (`sampling.log_level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SamplingLogLevel {
    /// `debug`
    Debug,
    /// `info` (default)
    Info,
    /// `warning`
    Warning,
    /// `error`
    Error,
}

impl SamplingLogLevel {
    /// The configuration spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            SamplingLogLevel::Debug => "debug",
            SamplingLogLevel::Info => "info",
            SamplingLogLevel::Warning => "warning",
            SamplingLogLevel::Error => "error",
        }
    }
}

/// How the host answers a server's `sampling/createMessage` requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SamplingPolicy {
    /// `enabled` (default true): whether sampling is offered to this server.
    pub enabled: bool,
    /// `model`: overrides any model the server hints.
    pub model: Option<String>,
    /// `max_tokens_cap` (default 4096, at least 1): `max_tokens = min(request, cap)`.
    pub max_tokens_cap: u32,
    /// `timeout` (default 30 s): bound on one LLM call.
    pub timeout: Duration,
    /// `max_rpm` (default 10): requests per sliding 60 s window; 0 disables sampling.
    pub max_rpm: u32,
    /// `allowed_models` (default empty = every model): the model actually used must be listed.
    pub allowed_models: Vec<String>,
    /// `max_tool_rounds` (default 5): tool-use rounds per conversation; 0 disables tool loops.
    pub max_tool_rounds: u32,
    /// `log_level` (default `info`).
    pub log_level: SamplingLogLevel,
}

impl SamplingPolicy {
    /// Whether the sampling capability is offered to the server at all
    /// (`enabled` and a non-zero `max_rpm`).
    pub fn active(&self) -> bool {
        self.enabled && self.max_rpm > 0
    }
}

impl Default for SamplingPolicy {
    fn default() -> Self {
        SamplingPolicy {
            enabled: true,
            model: None,
            max_tokens_cap: 4096,
            timeout: Duration::from_secs(30),
            max_rpm: 10,
            allowed_models: Vec::new(),
            max_tool_rounds: 5,
            log_level: SamplingLogLevel::Info,
        }
    }
}

const SAMPLING_KEYS: [&str; 8] = [
    "enabled",
    "model",
    "max_tokens_cap",
    "timeout",
    "max_rpm",
    "allowed_models",
    "max_tool_rounds",
    "log_level",
];

fn u32_field(v: &Value, min: u64, cur: &Cursor<'_>) -> Result<u32, Problem> {
    let max = u64::from(u32::MAX);
    match parse_uint(v) {
        Ok(n) if n >= min && n <= max => Ok(n as u32),
        Ok(n) if n < min => Err(cur.problem(format!("must be an integer from {min} to {max}"))),
        // Above u32, or digits beyond 64 bits.
        Ok(_) => Err(cur.problem(format!("is out of range (an integer from {min} to {max})"))),
        Err(m) if m.starts_with("is out of range") => {
            Err(cur.problem(format!("is out of range (an integer from {min} to {max})")))
        }
        Err(m) => Err(cur.problem(m)),
    }
}

/// Sets one `sampling` key on `p`; `Err` is the problem at `cur` (the key).
fn set_key(p: &mut SamplingPolicy, key: &str, v: &Value, cur: &Cursor<'_>) -> Result<(), Problem> {
    match key {
        "enabled" => match v {
            Value::Bool(b) => p.enabled = *b,
            o => {
                return Err(cur.problem(must_be("a boolean", o)));
            }
        },
        "model" => match v {
            Value::String(s) if !s.trim().is_empty() => p.model = Some(s.trim().to_string()),
            o => {
                return Err(cur.problem(must_be("a non-empty string", o)));
            }
        },
        "max_tokens_cap" => p.max_tokens_cap = u32_field(v, 1, cur)?,
        "timeout" => p.timeout = parse_seconds(v).map_err(|m| cur.problem(m))?,
        "max_rpm" => p.max_rpm = u32_field(v, 0, cur)?,
        "max_tool_rounds" => p.max_tool_rounds = u32_field(v, 0, cur)?,
        "allowed_models" => {
            let Value::Sequence(items) = v else {
                return Err(cur.problem(must_be("a list of model names", v)));
            };
            let mut out = Vec::with_capacity(items.len());
            for (i, it) in items.iter().enumerate() {
                match it {
                    Value::String(s) if !s.trim().is_empty() => out.push(s.trim().to_string()),
                    o => {
                        return Err(
                            cur.problem_at(&format!("[{i}]"), must_be("a non-empty string", o))
                        );
                    }
                }
            }
            p.allowed_models = out;
        }
        "log_level" => {
            p.log_level = match v.as_str() {
                Some("debug") => SamplingLogLevel::Debug,
                Some("info") => SamplingLogLevel::Info,
                Some("warning") => SamplingLogLevel::Warning,
                Some("error") => SamplingLogLevel::Error,
                _ => {
                    return Err(cur.problem("must be one of ['debug', 'info', 'warning', 'error']"));
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// Parses `sampling:` (null/absent → defaults). `Err` lists every bad key
/// as a [`Problem`] with its field path, in the block's order.
pub(crate) fn parse_sampling(v: Option<&Value>) -> Result<SamplingPolicy, Vec<Problem>> {
    let mut p = SamplingPolicy::default();
    let m = match v {
        None | Some(Value::Null) => return Ok(p),
        Some(Value::Mapping(m)) => m,
        Some(other) => {
            return Err(vec![Problem::new("sampling", must_be("a mapping", other))]);
        }
    };
    let mut bad = Vec::new();
    if let Some(msg) = unknown_keys_message(m, &SAMPLING_KEYS) {
        bad.push(Problem::new("sampling", msg));
    }
    let mut cur = Cursor::new();
    cur.key("sampling");
    for (k, v) in m {
        let key = k.as_str().unwrap_or_default();
        if v.is_null() {
            continue; // null keeps the default
        }
        cur.key(key);
        if let Err(f) = set_key(&mut p, key, v, &cur) {
            bad.push(f);
        }
        cur.pop();
    }
    if bad.is_empty() { Ok(p) } else { Err(bad) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(y: &str) -> Result<SamplingPolicy, Vec<Problem>> {
        let v: Value = yaml_serde::from_str(y).unwrap();
        parse_sampling(Some(&v))
    }

    #[test]
    fn defaults_and_overrides() {
        assert_eq!(parse("null").unwrap(), SamplingPolicy::default());
        let p = parse(
            "{enabled: false, model: m, max_tokens_cap: '100', timeout: 2.5, max_rpm: 0, allowed_models: [a], max_tool_rounds: 0, log_level: debug}",
        )
        .unwrap();
        assert!(!p.enabled);
        assert_eq!(p.model.as_deref(), Some("m"));
        assert_eq!(p.max_tokens_cap, 100);
        assert_eq!(p.timeout, Duration::from_millis(2500));
        assert_eq!(p.max_rpm, 0);
        assert_eq!(p.allowed_models, vec!["a".to_string()]);
        assert_eq!(p.max_tool_rounds, 0);
        assert_eq!(p.log_level, SamplingLogLevel::Debug);
    }

    #[test]
    fn bad_values_name_their_field() {
        for (y, path) in [
            ("{max_tokens_cap: 0}", "sampling.max_tokens_cap"),
            ("{max_rpm: -1}", "sampling.max_rpm"),
            ("{timeout: abc}", "sampling.timeout"),
            ("{enabled: 'yes'}", "sampling.enabled"),
            ("{allowed_models: [1]}", "sampling.allowed_models[0]"),
            ("{log_level: loud}", "sampling.log_level"),
            ("{max_tokens: 5}", "sampling"),
            ("[1]", "sampling"),
        ] {
            assert_eq!(parse(y).unwrap_err()[0].path, path, "{y}");
        }
    }
}
