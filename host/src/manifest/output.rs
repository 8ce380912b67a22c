//! The normalized form of a validated manifest, as `wasmgate check` prints
//! it (JSON, or the same structure as YAML). Declarations use their serde
//! form (`declaration::model`). Values of `env` and `headers` are shown as
//! `<redacted>`: they may hold secrets interpolated from the host
//! environment (`spec/mcp-client.md` §4).

use super::schema::{Manifest, SkillSource};
use super::server::{ServerSpec, Transport};
use serde_json::{Map, Value as Json, json};

const REDACTED: &str = "<redacted>";

fn redacted(m: &std::collections::BTreeMap<String, String>) -> Json {
    Json::Object(
        m.keys()
            .map(|k| (k.clone(), Json::String(REDACTED.into())))
            .collect(),
    )
}

/// One server as JSON. Durations are seconds (numbers), sizes bytes.
pub fn server_json(s: &ServerSpec) -> Json {
    let mut o = Map::new();
    o.insert("name".into(), json!(s.name));
    o.insert("plugin".into(), json!(s.plugin));
    o.insert("enabled".into(), json!(s.enabled));
    let transport = match &s.transport {
        Transport::Stdio {
            command,
            args,
            env,
            env_passthrough,
        } => json!({
            "kind": "stdio",
            "command": command,
            "args": args,
            "env": redacted(env),
            "env_passthrough": env_passthrough,
        }),
        Transport::Http { url, headers } => json!({
            "kind": "http",
            "url": url,
            "headers": redacted(headers),
        }),
        Transport::AppEndpoint => json!({"kind": "app_endpoint"}),
    };
    o.insert("transport".into(), transport);
    o.insert("timeout".into(), json!(s.timeout.as_secs_f64()));
    o.insert(
        "connect_timeout".into(),
        json!(s.connect_timeout.as_secs_f64()),
    );
    o.insert(
        "tools".into(),
        json!({"include": s.tools.include, "exclude": s.tools.exclude}),
    );
    o.insert("max_result_bytes".into(), json!(s.max_result_bytes));
    let p = &s.sampling;
    o.insert(
        "sampling".into(),
        json!({
            "enabled": p.enabled,
            "model": p.model,
            "max_tokens_cap": p.max_tokens_cap,
            "timeout": p.timeout.as_secs_f64(),
            "max_rpm": p.max_rpm,
            "allowed_models": p.allowed_models,
            "max_tool_rounds": p.max_tool_rounds,
            "log_level": p.log_level.as_str(),
        }),
    );
    o.insert(
        "declaration".into(),
        serde_json::to_value(&s.declaration).unwrap_or(Json::Null),
    );
    Json::Object(o)
}

/// A whole manifest as JSON: `{name, version, servers: [...], skills: [...]}`.
pub fn manifest_json(m: &Manifest) -> Json {
    let skills: Vec<Json> = m
        .skills
        .iter()
        .map(|s| match s {
            SkillSource::File { path } => json!({"path": path.display().to_string()}),
            SkillSource::Loaded { path, markdown } => {
                json!({"path": path.display().to_string(), "bytes": markdown.len()})
            }
            SkillSource::Inline { name, markdown } => {
                json!({"name": name, "bytes": markdown.len()})
            }
        })
        .collect();
    json!({
        "name": m.name,
        "version": m.version,
        "servers": m.servers.iter().map(server_json).collect::<Vec<_>>(),
        "skills": skills,
    })
}
