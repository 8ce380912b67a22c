//! The normalized form of a validated manifest, as `wasmgate check` prints
//! it (JSON, or the same structure as YAML), fields in schema order.
//! Declarations use their serde form (`declaration::model`). Values of `env`
//! and `headers` are shown as `<redacted>`: they may hold secrets
//! interpolated from the host environment (`docs/mcp-client.md` §4).

use super::schema::{Manifest, SkillSource};
use super::server::{ServerSpec, Transport};
use crate::declaration::Declaration;
use serde::Serialize;
use std::collections::BTreeMap;

const REDACTED: &str = "<redacted>";

/// A manifest as printed: `{name, version, servers, skills}`.
#[derive(Debug, Serialize)]
pub struct ManifestOut<'a> {
    /// Plugin name.
    pub name: &'a str,
    /// Plugin version.
    pub version: &'a str,
    /// Valid servers in manifest order.
    pub servers: Vec<ServerOut<'a>>,
    /// Skills in manifest order.
    pub skills: Vec<SkillOut<'a>>,
}

/// One server as printed. Durations are seconds, sizes bytes.
#[derive(Debug, Serialize)]
pub struct ServerOut<'a> {
    /// Server name.
    pub name: &'a str,
    /// Plugin that brought it.
    pub plugin: Option<&'a str>,
    /// `enabled`.
    pub enabled: bool,
    /// Transport with redacted values.
    pub transport: TransportOut<'a>,
    /// Per tool call, seconds.
    pub timeout: f64,
    /// Connect and discovery, seconds.
    pub connect_timeout: f64,
    /// `tools.include` (`null` = all).
    pub tools_include: Option<&'a [String]>,
    /// `tools.exclude`.
    pub tools_exclude: &'a [String],
    /// Bytes.
    pub max_result_bytes: usize,
    /// The sampling policy.
    pub sampling: SamplingOut<'a>,
    /// The declaration, when the server has one.
    pub declaration: Option<&'a Declaration>,
}

/// A transport as printed.
#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TransportOut<'a> {
    /// `command`.
    Stdio {
        /// Program.
        command: &'a str,
        /// Arguments, with token shapes redacted (`docs/mcp-client.md` §4),
        /// as in every other output.
        args: Vec<String>,
        /// Variable names, values redacted.
        env: BTreeMap<&'a str, &'static str>,
        /// Pass-through names.
        env_passthrough: &'a [String],
    },
    /// `url`.
    Http {
        /// Endpoint, shown as [`crate::secret::display_url`] shows it:
        /// no userinfo, every query value redacted (a signed URL's `sig=`).
        url: String,
        /// Header names, values redacted.
        headers: BTreeMap<&'a str, &'static str>,
    },
    /// `app_endpoint: true`.
    AppEndpoint,
}

/// The sampling policy as printed (seconds for `timeout`).
#[derive(Debug, Serialize)]
pub struct SamplingOut<'a> {
    /// `enabled`.
    pub enabled: bool,
    /// `model`.
    pub model: Option<&'a str>,
    /// `max_tokens_cap`.
    pub max_tokens_cap: u32,
    /// Seconds.
    pub timeout: f64,
    /// `max_rpm`.
    pub max_rpm: u32,
    /// `allowed_models`.
    pub allowed_models: &'a [String],
    /// `max_tool_rounds`.
    pub max_tool_rounds: u32,
    /// `log_level`.
    pub log_level: &'static str,
}

/// A skill as printed: where it comes from and its size in bytes.
#[derive(Debug, Serialize)]
pub struct SkillOut<'a> {
    /// Skill name (inline skills).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<&'a str>,
    /// File path (file skills).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Size of the SKILL.md text in bytes (`null` when not read yet).
    pub bytes: Option<usize>,
}

fn redacted(m: &BTreeMap<String, String>) -> BTreeMap<&str, &'static str> {
    m.keys().map(|k| (k.as_str(), REDACTED)).collect()
}

/// The printed form of one server.
pub fn server_out(s: &ServerSpec) -> ServerOut<'_> {
    let transport = match &s.transport {
        Transport::Stdio {
            command,
            args,
            env,
            env_passthrough,
        } => TransportOut::Stdio {
            command,
            args: crate::secret::redact_args(args),
            env: redacted(env),
            env_passthrough,
        },
        Transport::Http { url, headers } => TransportOut::Http {
            url: crate::secret::display_url(url),
            headers: redacted(headers),
        },
        Transport::AppEndpoint => TransportOut::AppEndpoint,
    };
    let p = &s.sampling;
    ServerOut {
        name: &s.name,
        plugin: s.plugin.as_deref(),
        enabled: s.enabled,
        transport,
        timeout: s.timeout.as_secs_f64(),
        connect_timeout: s.connect_timeout.as_secs_f64(),
        tools_include: s.tools.include.as_deref(),
        tools_exclude: &s.tools.exclude,
        max_result_bytes: s.max_result_bytes,
        sampling: SamplingOut {
            enabled: p.enabled,
            model: p.model.as_deref(),
            max_tokens_cap: p.max_tokens_cap,
            timeout: p.timeout.as_secs_f64(),
            max_rpm: p.max_rpm,
            allowed_models: &p.allowed_models,
            max_tool_rounds: p.max_tool_rounds,
            log_level: p.log_level.as_str(),
        },
        declaration: s.declaration.as_ref(),
    }
}

/// The printed form of a whole manifest.
pub fn manifest_out(m: &Manifest) -> ManifestOut<'_> {
    let skills = m
        .skills
        .iter()
        .map(|s| match s {
            SkillSource::File { path } => SkillOut {
                name: None,
                path: Some(path.display().to_string()),
                bytes: None,
            },
            SkillSource::Loaded { path, markdown } => SkillOut {
                name: None,
                path: Some(path.display().to_string()),
                bytes: Some(markdown.len()),
            },
            SkillSource::Inline { name, markdown } => SkillOut {
                name: Some(name),
                path: None,
                bytes: Some(markdown.len()),
            },
        })
        .collect();
    ManifestOut {
        name: &m.name,
        version: &m.version,
        servers: m.servers.iter().map(server_out).collect(),
        skills,
    }
}
