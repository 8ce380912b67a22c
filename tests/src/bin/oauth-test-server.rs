//! A local OAuth 2.1 authorization server and two protected MCP servers on
//! one issuer, on 127.0.0.1, for the OAuth tests of wasmgate's client
//! (`tests/tests/oauth.rs`, docs/mcp-client.md §9).
//!
//! Prints `http://127.0.0.1:PORT` on its first stdout line, then serves:
//! * `/a/mcp`, `/b/mcp` — rmcp streamable HTTP servers with one tool
//!   `hello`, behind `Authorization: Bearer`; without a valid token a 401
//!   whose `WWW-Authenticate` names the protected-resource metadata.
//! * `/big/mcp` — the same behind the same login, but hostile: its
//!   `tools/list` page is [`BIG_PAGE_BYTES`], over the client's 4 MiB page
//!   bound and under rmcp's own 16 MiB SSE event default.
//! * `/.well-known/oauth-protected-resource/{a,b}/mcp` — that metadata.
//! * `/.well-known/oauth-authorization-server` — the issuer's metadata
//!   (PKCE S256, dynamic registration, refresh tokens).
//! * `/register`, `/authorize` (redirects at once with a code: the user
//!   approves), `/token` (`authorization_code` with the PKCE check,
//!   `refresh_token` with rotation: the old refresh token dies, and the
//!   device grant: `authorization_pending` until the user decided).
//! * `/device_authorization` (RFC 8628: a device code, a user code, the
//!   verification URLs, `interval` 1 s) and `/device?user_code=…` — the
//!   page the user opens: it approves the code, or denies it with
//!   `&deny=1`.
//! * `/test/stats` (JSON counts, `device_polls` among them) and `POST /test/revoke` (every refresh
//!   token dies), for the tests.
//!
//! Flags: `--expires-in SECONDS` (access token lifetime, default 3600);
//! `--no-device` (the metadata names no device authorization endpoint);
//! `--legacy-issuer ISSUER` (the 2025-03-26 form: no protected-resource
//! metadata, a 401 without `resource_metadata`, and the root metadata's
//! `issuer` is ISSUER — a leading `/` is a path on this origin).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use sha2::Digest as _;
use tower_service::Service as _;

/// The size of `/big/mcp`'s `tools/list` page (one tool's description).
const BIG_PAGE_BYTES: usize = 6 * 1024 * 1024;

#[derive(Clone)]
struct Hello {
    /// `/big/mcp`: the description of `hello` is [`BIG_PAGE_BYTES`] long.
    big: bool,
}

impl ServerHandler for Hello {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut schema = serde_json::Map::new();
        schema.insert("type".into(), "object".into());
        let description = if self.big {
            "x".repeat(BIG_PAGE_BYTES)
        } else {
            "says hello".to_string()
        };
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "hello",
            description,
            Arc::new(schema),
        )]))
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        Ok(
            CallToolResult::success(vec![ContentBlock::text("hello from the protected server")])
                .into(),
        )
    }
}

#[derive(Default)]
struct State {
    /// code → (client_id, code_challenge, redirect_uri, resource)
    codes: HashMap<String, (String, String, String, Option<String>)>,
    access: HashSet<String>,
    refresh: HashSet<String>,
    counter: u64,
    token_requests: u64,
    refreshes: u64,
    refused_refreshes: u64,
    authorizations: u64,
    registrations: u64,
    resources: Vec<String>,
    pkce_checked: u64,
    /// device code → (user code, client_id, the user's decision)
    devices: HashMap<String, (String, String, Option<bool>)>,
    device_polls: u64,
    /// The `resource` of each device authorization request.
    device_resources: Vec<String>,
}

type Body = http_body_util::combinators::BoxBody<Bytes, std::convert::Infallible>;

fn resp(status: u16, content_type: &str, body: String) -> hyper::Response<Body> {
    hyper::Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(Full::new(Bytes::from(body)).boxed())
        .expect("response")
}

fn json(status: u16, v: serde_json::Value) -> hyper::Response<Body> {
    resp(status, "application/json", v.to_string())
}

fn form(body: &[u8]) -> HashMap<String, String> {
    url::form_urlencoded::parse(body).into_owned().collect()
}

fn fresh(st: &mut State, kind: &str) -> String {
    st.counter += 1;
    format!("{kind}-{}-{}", st.counter, std::process::id())
}

/// The issuer's metadata (RFC 8414): PKCE S256, dynamic registration,
/// refresh tokens, and with `device` the device authorization endpoint.
fn metadata(base: &str, issuer: &str, device: bool) -> serde_json::Value {
    let mut m = serde_json::json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "registration_endpoint": format!("{base}/register"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
    });
    if device {
        m["device_authorization_endpoint"] = format!("{base}/device_authorization").into();
        m["grant_types_supported"] = serde_json::json!([
            "authorization_code",
            "refresh_token",
            "urn:ietf:params:oauth:grant-type:device_code"
        ]);
    }
    m
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let expires_in: u64 = args
        .iter()
        .position(|a| a == "--expires-in")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(3600);
    let device = !args.iter().any(|a| a == "--no-device");
    let legacy_issuer = args
        .iter()
        .position(|a| a == "--legacy-issuer")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .expect("bind 127.0.0.1");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    println!("{base}");
    let issuer = match legacy_issuer.as_deref() {
        Some(p) if p.starts_with('/') => format!("{base}{p}"),
        Some(other) => other.to_string(),
        None => base.clone(),
    };
    let legacy = legacy_issuer.is_some();
    let state = Arc::new(Mutex::new(State::default()));
    let mcp_of = |big: bool| {
        StreamableHttpService::new(
            move || Ok(Hello { big }),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default(),
        )
    };
    let (mcp, big) = (mcp_of(false), mcp_of(true));
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let (state, base, issuer, mcp, big) = (
            state.clone(),
            base.clone(),
            issuer.clone(),
            mcp.clone(),
            big.clone(),
        );
        let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
            let (state, base, issuer, mut mcp, mut big) = (
                state.clone(),
                base.clone(),
                issuer.clone(),
                mcp.clone(),
                big.clone(),
            );
            async move {
                let path = req.uri().path().to_string();
                let query = req.uri().query().unwrap_or("").to_string();
                if path == "/a/mcp" || path == "/b/mcp" || path == "/big/mcp" {
                    let token = req
                        .headers()
                        .get("authorization")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.strip_prefix("Bearer "))
                        .map(str::to_string);
                    let ok = token.is_some_and(|t| state.lock().unwrap().access.contains(&t));
                    if !ok {
                        let mut r = resp(401, "text/plain", "unauthorized".into());
                        let challenge = if legacy {
                            "Bearer".to_string()
                        } else {
                            format!(
                                "Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource{path}\""
                            )
                        };
                        r.headers_mut()
                            .insert("www-authenticate", challenge.parse().expect("header"));
                        return Ok::<_, std::convert::Infallible>(r);
                    }
                    if path == "/big/mcp" {
                        return big.call(req).await;
                    }
                    return mcp.call(req).await;
                }
                let body = req
                    .into_body()
                    .collect()
                    .await
                    .map(|b| b.to_bytes())
                    .unwrap_or_default();
                let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
                let r = match path.as_str() {
                    p if p.starts_with("/.well-known/oauth-protected-resource/") && !legacy => {
                        let res = p.trim_start_matches("/.well-known/oauth-protected-resource");
                        json(
                            200,
                            serde_json::json!({
                                "resource": format!("{base}{res}"),
                                "authorization_servers": [base],
                            }),
                        )
                    }
                    "/.well-known/oauth-authorization-server" => {
                        json(200, metadata(&base, &issuer, device))
                    }
                    "/register" => {
                        st.registrations += 1;
                        let req: serde_json::Value =
                            serde_json::from_slice(&body).unwrap_or_default();
                        let id = fresh(&mut st, "client");
                        json(
                            201,
                            serde_json::json!({
                                "client_id": id,
                                "redirect_uris": req["redirect_uris"],
                                "token_endpoint_auth_method": "none",
                            }),
                        )
                    }
                    "/authorize" => {
                        st.authorizations += 1;
                        let q = form(query.as_bytes());
                        let (Some(redirect), Some(challenge), Some("S256")) = (
                            q.get("redirect_uri"),
                            q.get("code_challenge"),
                            q.get("code_challenge_method").map(String::as_str),
                        ) else {
                            return Ok(resp(
                                400,
                                "text/plain",
                                "PKCE S256 and redirect_uri needed".into(),
                            ));
                        };
                        let code = fresh(&mut st, "code");
                        let client = q.get("client_id").cloned().unwrap_or_default();
                        st.codes.insert(
                            code.clone(),
                            (
                                client,
                                challenge.clone(),
                                redirect.clone(),
                                q.get("resource").cloned(),
                            ),
                        );
                        let mut loc = url::Url::parse(redirect).expect("redirect_uri");
                        loc.query_pairs_mut().append_pair("code", &code);
                        if let Some(s) = q.get("state") {
                            loc.query_pairs_mut().append_pair("state", s);
                        }
                        hyper::Response::builder()
                            .status(302)
                            .header("location", loc.to_string())
                            .body(Full::new(Bytes::new()).boxed())
                            .expect("response")
                    }
                    "/device_authorization" => {
                        let f = form(&body);
                        let client = f.get("client_id").cloned().unwrap_or_default();
                        if let Some(r) = f.get("resource") {
                            st.device_resources.push(r.clone());
                        }
                        let device_code = fresh(&mut st, "secret-device");
                        st.counter += 1;
                        let user_code = format!("WG-{:04}", st.counter);
                        st.devices
                            .insert(device_code.clone(), (user_code.clone(), client, None));
                        json(
                            200,
                            serde_json::json!({
                                "device_code": device_code,
                                "user_code": user_code,
                                "verification_uri": format!("{base}/device"),
                                "verification_uri_complete": format!("{base}/device?user_code={user_code}"),
                                "expires_in": 120,
                                "interval": 1,
                            }),
                        )
                    }
                    "/device" => {
                        let q = form(query.as_bytes());
                        let user_code = q.get("user_code").cloned().unwrap_or_default();
                        let deny = q.contains_key("deny");
                        let found = st
                            .devices
                            .values_mut()
                            .find(|(u, _, decided)| *u == user_code && decided.is_none());
                        match found {
                            Some((_, _, decided)) => {
                                *decided = Some(!deny);
                                resp(200, "text/plain", "decided".into())
                            }
                            None => resp(404, "text/plain", "no such code".into()),
                        }
                    }
                    "/token"
                        if form(&body).get("grant_type").map(String::as_str)
                            == Some("urn:ietf:params:oauth:grant-type:device_code") =>
                    {
                        st.token_requests += 1;
                        st.device_polls += 1;
                        let f = form(&body);
                        let code = f.get("device_code").cloned().unwrap_or_default();
                        let client = f.get("client_id").cloned().unwrap_or_default();
                        match st.devices.get(&code).cloned() {
                            Some((_, owner, _)) if owner != client => {
                                json(400, serde_json::json!({"error": "invalid_client"}))
                            }
                            Some((_, _, None)) => {
                                json(400, serde_json::json!({"error": "authorization_pending"}))
                            }
                            Some((_, _, Some(false))) => {
                                st.devices.remove(&code);
                                json(
                                    400,
                                    serde_json::json!({"error": "access_denied", "error_description": "the user said no"}),
                                )
                            }
                            Some((_, _, Some(true))) => {
                                st.devices.remove(&code);
                                let access = fresh(&mut st, "secret-access");
                                let refresh = fresh(&mut st, "secret-refresh");
                                st.access.insert(access.clone());
                                st.refresh.insert(refresh.clone());
                                json(
                                    200,
                                    serde_json::json!({
                                        "access_token": access,
                                        "token_type": "Bearer",
                                        "expires_in": expires_in,
                                        "refresh_token": refresh,
                                    }),
                                )
                            }
                            None => json(400, serde_json::json!({"error": "expired_token"})),
                        }
                    }
                    "/token" => {
                        st.token_requests += 1;
                        let f = form(&body);
                        let grant = f.get("grant_type").cloned().unwrap_or_default();
                        let ok = match grant.as_str() {
                            "authorization_code" => {
                                let code = f.get("code").cloned().unwrap_or_default();
                                match st.codes.remove(&code) {
                                    Some((_, challenge, redirect, resource)) => {
                                        let verifier =
                                            f.get("code_verifier").cloned().unwrap_or_default();
                                        let digest = sha2::Sha256::digest(verifier.as_bytes());
                                        let computed =
                                            base64::engine::general_purpose::URL_SAFE_NO_PAD
                                                .encode(digest);
                                        st.pkce_checked += 1;
                                        if let Some(r) =
                                            resource.or_else(|| f.get("resource").cloned())
                                        {
                                            st.resources.push(r);
                                        }
                                        computed == challenge
                                            && f.get("redirect_uri") == Some(&redirect)
                                    }
                                    None => false,
                                }
                            }
                            "refresh_token" => {
                                let rt = f.get("refresh_token").cloned().unwrap_or_default();
                                let alive = st.refresh.remove(&rt);
                                if alive {
                                    st.refreshes += 1
                                } else {
                                    st.refused_refreshes += 1
                                }
                                alive
                            }
                            _ => false,
                        };
                        if ok {
                            let access = fresh(&mut st, "secret-access");
                            let refresh = fresh(&mut st, "secret-refresh");
                            st.access.insert(access.clone());
                            st.refresh.insert(refresh.clone());
                            json(
                                200,
                                serde_json::json!({
                                    "access_token": access,
                                    "token_type": "Bearer",
                                    "expires_in": expires_in,
                                    "refresh_token": refresh,
                                }),
                            )
                        } else {
                            json(400, serde_json::json!({"error": "invalid_grant"}))
                        }
                    }
                    "/test/stats" => json(
                        200,
                        serde_json::json!({
                            "token_requests": st.token_requests,
                            "refreshes": st.refreshes,
                            "refused_refreshes": st.refused_refreshes,
                            "authorizations": st.authorizations,
                            "registrations": st.registrations,
                            "pkce_checked": st.pkce_checked,
                            "resources": st.resources,
                            "live_access_tokens": st.access.len(),
                            "device_polls": st.device_polls,
                            "device_resources": st.device_resources,
                        }),
                    ),
                    "/test/revoke" => {
                        st.refresh.clear();
                        st.access.clear();
                        json(200, serde_json::json!({"revoked": true}))
                    }
                    _ => resp(404, "text/plain", "not found".into()),
                };
                Ok(r)
            }
        });
        tokio::spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
