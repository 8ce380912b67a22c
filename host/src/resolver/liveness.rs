//! Liveness `server_json` (`docs/declarations.md` §7): the
//! runtime file a running application writes with its pid, its loopback URL
//! and a bearer token. Whether something MCP answers there is the connect's
//! question (the app-endpoint transport, `docs/declarations.md` §7.5), not
//! this module's.
//!
//! The endpoint and its token are `crate::endpoint`'s types; this module
//! fills them and [`ServerJsonSource`] hands them to the MCP client.

use super::expand::{expand, is_absolute};
use crate::declaration::{AppDef, Declaration, Liveness};
use crate::endpoint::{AppEndpointSource, Endpoint, Token};
use crate::platform::Platform;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

/// Largest runtime file read, in bytes (`docs/declarations.md` §7).
pub const SERVER_JSON_LIMIT: u64 = 64 * 1024;

/// Largest pid accepted (docs/declarations.md §7.1).
const MAX_PID: u64 = 0x7FFF_FFFF;

/// The state of one observation (docs/declarations.md §1.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// Not looked at (liveness is not `server_json`, or an earlier step failed).
    NotChecked,
    /// Looked at and true.
    Present,
    /// Looked at and false.
    Absent,
    /// Could not be decided from what was read (no pid, a URL that is not
    /// plain loopback http, a token that is not header-safe, …).
    Unavailable,
}

/// What one read of the runtime file found (docs/declarations.md §7.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LivenessReport {
    /// The pid check.
    pub running: Check,
    /// The URL check.
    pub endpoint_state: Check,
    /// The endpoint, only when `running` and `endpoint_state` are `Present`.
    pub endpoint: Option<Endpoint>,
    /// Human text about the outcome; never contains the token.
    pub detail: String,
}

impl LivenessReport {
    fn not_checked() -> LivenessReport {
        LivenessReport {
            running: Check::NotChecked,
            endpoint_state: Check::NotChecked,
            endpoint: None,
            detail: "liveness is not server_json".into(),
        }
    }

    fn no_session(detail: &str) -> LivenessReport {
        LivenessReport {
            running: Check::Absent,
            endpoint_state: Check::Absent,
            endpoint: None,
            detail: detail.into(),
        }
    }
}

/// Reads the app's `server_json` runtime file afresh (`docs/declarations.md` §7): at most
/// 64 KiB, a JSON object; the pid (an integer, not a boolean, in 1..=2³¹−1)
/// must be alive; the URL must be plain `http` to `127.0.0.1`, `localhost`
/// or `::1` with a numeric port and no userinfo; the declared
/// `endpoint_path` replaces the file's path; a token that is not header-safe
/// is refused.
pub fn read_server_json(app: &AppDef, platform: &dyn Platform) -> LivenessReport {
    let Liveness::ServerJson {
        path,
        pid_key,
        url_key,
        token_key,
        endpoint_path,
    } = &app.liveness
    else {
        return LivenessReport::not_checked();
    };
    let os = platform.os_family();
    let e = expand(path.trim(), platform);
    if !e.complete || !is_absolute(&e.text, os) {
        return LivenessReport::no_session("runtime file path does not expand to an absolute path");
    }
    let Ok(bytes) = platform.read_file(&e.text, SERVER_JSON_LIMIT) else {
        return LivenessReport::no_session("runtime file missing, unreadable or over 64 KiB");
    };
    let Ok(serde_json::Value::Object(obj)) = serde_json::from_slice::<serde_json::Value>(&bytes)
    else {
        return LivenessReport::no_session("runtime file is not a JSON object");
    };
    let pid = obj
        .get(pid_key.as_str())
        .and_then(serde_json::Value::as_u64)
        .filter(|p| (1..=MAX_PID).contains(p));
    let url = obj
        .get(url_key.as_str())
        .and_then(serde_json::Value::as_str)
        .unwrap_or("");
    let token = obj
        .get(token_key.as_str())
        .and_then(serde_json::Value::as_str)
        .unwrap_or("");
    let running = match pid {
        None => Check::Unavailable,
        Some(p) if platform.process_alive(p as u32) => Check::Present,
        Some(_) => Check::Absent,
    };
    let (endpoint_state, endpoint, detail) = match compose_endpoint(url, endpoint_path) {
        Err(why) => (Check::Unavailable, None, why.to_string()),
        Ok(_) if !header_safe(token) => (
            Check::Unavailable,
            None,
            "token is not header-safe".to_string(),
        ),
        Ok((url, dial)) => (
            Check::Present,
            Some(Endpoint {
                url,
                dial,
                path: endpoint_path.clone(),
                token: Token::new(token),
            }),
            String::new(),
        ),
    };
    let detail = match (running, detail.is_empty()) {
        (Check::Unavailable, _) => "no usable pid in runtime file".to_string(),
        (Check::Absent, _) => "process is not running".to_string(),
        (_, false) => detail,
        _ => "running".to_string(),
    };
    LivenessReport {
        running,
        endpoint_state,
        endpoint: if running == Check::Present {
            endpoint
        } else {
            None
        },
        detail,
    }
}

/// The [`AppEndpointSource`] the host gives its MCP client: each ask reads
/// the declaration's `server_json` afresh on `platform`
/// (`read_server_json`).
pub struct ServerJsonSource {
    platform: Arc<dyn Platform>,
}

impl ServerJsonSource {
    /// Reads runtime files on `platform` (the machine availability was
    /// evaluated on).
    pub fn new(platform: Arc<dyn Platform>) -> ServerJsonSource {
        ServerJsonSource { platform }
    }
}

impl AppEndpointSource for ServerJsonSource {
    fn endpoint(&self, declaration: Option<&Declaration>) -> Result<Endpoint, String> {
        let os = self.platform.os_family();
        let app = declaration
            .and_then(|d| d.app_for(os))
            .ok_or_else(|| format!("its declaration has no app block for {}", os.as_str()))?;
        let report = read_server_json(app, self.platform.as_ref());
        report.endpoint.ok_or(report.detail)
    }
}

/// A token may travel in a header when it is printable ASCII without spaces
/// (no CR/LF that could inject headers).
fn header_safe(token: &str) -> bool {
    token.bytes().all(|b| (0x21..=0x7E).contains(&b))
}

/// `endpoint_path` rule of docs/declarations.md §2.2 (hardened), checked again here so
/// the composed URL can never move to another authority.
fn plain_endpoint_path(p: &str) -> bool {
    p.starts_with('/')
        && p.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._~/-".contains(&b))
        && !p.split('/').any(|s| s == "..")
}

/// Validates a runtime file URL and composes the endpoint URL and the
/// address to dial. Errors are short reasons without the URL's secrets.
pub fn compose_endpoint(
    url: &str,
    endpoint_path: &str,
) -> Result<(String, SocketAddr), &'static str> {
    if url.is_empty() {
        return Err("no url in runtime file");
    }
    if !plain_endpoint_path(endpoint_path) {
        return Err("endpoint path must be a plain path on loopback");
    }
    let rest = match url.get(..7) {
        Some(s) if s.eq_ignore_ascii_case("http://") => &url[7..],
        _ => return Err("url is not plain http"),
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.contains('@') {
        return Err("url carries userinfo");
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let Some((h, after)) = v6.split_once(']') else {
            return Err("malformed url");
        };
        let Some(port) = after.strip_prefix(':') else {
            return Err("url has no port");
        };
        (h, port)
    } else {
        match authority.split_once(':') {
            Some((h, port)) if !port.contains(':') => (h, port),
            Some(_) => return Err("malformed url"),
            None => return Err("url has no port"),
        }
    };
    if port.is_empty() || port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()) {
        return Err("url port is not a number in 1..65535");
    }
    let port: u16 = match port.parse() {
        Ok(p) if p > 0 => p,
        _ => return Err("url port is not a number in 1..65535"),
    };
    let host = host.to_ascii_lowercase();
    let (shown, ip) = match host.as_str() {
        "127.0.0.1" => ("127.0.0.1", IpAddr::V4(Ipv4Addr::LOCALHOST)),
        "localhost" => ("localhost", IpAddr::V4(Ipv4Addr::LOCALHOST)),
        "::1" => ("[::1]", IpAddr::V6(Ipv6Addr::LOCALHOST)),
        _ => return Err("url host is not loopback"),
    };
    Ok((
        format!("http://{shown}:{port}{endpoint_path}"),
        SocketAddr::new(ip, port),
    ))
}
