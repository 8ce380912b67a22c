//! `wasmgate login SERVER --device` (docs/mcp-client.md §9, "Device
//! login"): the OAuth 2.0 device authorization grant (RFC 8628) for a
//! machine without a browser — a server over SSH, a container. wasmgate
//! prints a short code and a URL; the user opens the URL on any device and
//! enters the code, while wasmgate polls the token endpoint.
//!
//! rmcp 3.11 has no device grant, so the grant itself is the `oauth2`
//! crate's (`exchange_device_code`, `exchange_device_access_token`, with
//! its `authorization_pending` / `slow_down` handling). Discovery and the
//! saved login are rmcp's, as for the browser login: the tokens land in the
//! same token file, bound to the issuer, and are refreshed by rmcp at
//! connect like any other login.

use std::time::Duration;

use oauth2::basic::BasicClient;
use oauth2::{
    ClientId, ClientSecret, DeviceAuthorizationUrl, Scope, StandardDeviceAuthorizationResponse,
    TokenUrl,
};

use super::{OAuthConfig, brief, manager, store_for};

/// The grant type of the device flow (RFC 8628 §3.4).
const DEVICE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

/// Largest answer read from the authorization server, in bytes: a device
/// authorization or token response is a few KiB.
const MAX_ANSWER_BYTES: usize = 256 * 1024;

/// How long one request to the authorization server may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The shortest wait between two polls: a server's `interval` of 0 must
/// not turn the poll into a busy loop (RFC 8628 §3.2's default is 5 s).
const MIN_POLL_INTERVAL: Duration = Duration::from_secs(1);

/// Longest user code or verification URL shown, in characters: they come
/// from the server and go to the terminal.
const MAX_SHOWN_CHARS: usize = 512;

/// What the user must do, as the authorization server said it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DevicePrompt {
    /// The URL to open (`verification_uri`).
    pub verification_uri: String,
    /// The code to enter there (`user_code`).
    pub user_code: String,
    /// The URL with the code in it, when the server gives one
    /// (`verification_uri_complete`): opening it is enough.
    pub verification_uri_complete: Option<String>,
    /// Seconds until the code expires (`expires_in`).
    pub expires_in: u64,
}

/// Logs in to `server` at `url` with the device grant: discovery through
/// rmcp, the client (`oauth.client_id`, else dynamic registration as a
/// public client of the device grant), the device authorization request
/// (with the configured `scopes` and the `resource` parameter), `show`
/// called once with what the user must do, then the token endpoint polled
/// at the server's interval (at least 1 s) until the user approves, the
/// code expires, or `wait` has passed. The tokens are saved to the server's
/// token file.
///
/// # Errors
/// One line: the authorization server has no
/// `device_authorization_endpoint`, registration failed, the user denied
/// (`access_denied`), the code expired, or `wait` passed; never a token or
/// the device code.
pub async fn login_device(
    server: &str,
    url: &str,
    config: &OAuthConfig,
    show: impl FnOnce(&DevicePrompt),
    wait: Duration,
) -> Result<(), String> {
    let store = store_for(server, url)?;
    let mut m = manager(url, store.clone()).await.map_err(|e| brief(&e))?;
    let metadata = super::discover(&mut m, url, None).await?;
    let device_endpoint = metadata
        .additional_fields
        .get("device_authorization_endpoint")
        .and_then(|v| v.as_str())
        .ok_or(
            "the authorization server offers no device login (its metadata has no \
             device_authorization_endpoint); run `wasmgate login` without --device",
        )?
        .to_string();
    let http = http_client(&device_endpoint)?;
    let client_id = match &config.client_id {
        Some(id) => id.clone(),
        None => {
            let endpoint = metadata.registration_endpoint.as_deref().ok_or(
                "the authorization server has no registration endpoint; \
                 set oauth.client_id to a client registered for the device grant",
            )?;
            register(&http, endpoint, &config.scopes).await?
        }
    };

    let mut client = BasicClient::new(ClientId::new(client_id.clone()))
        .set_device_authorization_url(
            DeviceAuthorizationUrl::new(device_endpoint)
                .map_err(|e| format!("device_authorization_endpoint: {e}"))?,
        )
        .set_token_uri(
            TokenUrl::new(metadata.token_endpoint.clone())
                .map_err(|e| format!("token_endpoint: {e}"))?,
        );
    if let Some(s) = &config.client_secret {
        client = client.set_client_secret(ClientSecret::new(s.clone()));
    }
    let send = |req: oauth2::HttpRequest| send(&http, req);

    let mut ask = client
        .exchange_device_code()
        .add_extra_param("resource", url.to_string());
    for s in &config.scopes {
        ask = ask.add_scope(Scope::new(s.clone()));
    }
    let details: StandardDeviceAuthorizationResponse =
        ask.request_async(&send).await.map_err(|e| {
            format!(
                "the device authorization request failed: {}",
                token_error(&e)
            )
        })?;
    show(&DevicePrompt {
        verification_uri: shown(details.verification_uri().as_str()),
        user_code: shown(details.user_code().secret()),
        verification_uri_complete: details
            .verification_uri_complete()
            .map(|u| shown(u.secret())),
        expires_in: details.expires_in().as_secs(),
    });

    let poll = client
        .exchange_device_access_token(&details)
        .add_extra_param("resource", url.to_string())
        .request_async(
            &send,
            |d: Duration| tokio::time::sleep(d.max(MIN_POLL_INTERVAL)),
            Some(wait),
        );
    // The crate's own timeout is checked between polls; this one also ends
    // a poll that never answers or an interval longer than `wait`.
    let started = std::time::Instant::now();
    let waited_out = || {
        format!(
            "no approval within {} s; run the login again",
            wait.as_secs()
        )
    };
    let token = tokio::time::timeout(wait + REQUEST_TIMEOUT, poll)
        .await
        .map_err(|_| waited_out())?
        .map_err(|e| {
            // The crate says `expired_token` for its own timeout too: past
            // `wait`, that is ours, not the server's.
            let ours = matches!(&e, oauth2::RequestTokenError::ServerResponse(r)
                if *r.error() == oauth2::DeviceCodeErrorResponseType::ExpiredToken)
                && started.elapsed() >= wait;
            if ours {
                waited_out()
            } else {
                format!("the device login failed: {}", token_error(&e))
            }
        })?;

    // rmcp's token type (the same fields, and the vendor's kept) through
    // serde: the saved login is then rmcp's own, refreshed at connect.
    let token = serde_json::to_value(&token)
        .and_then(serde_json::from_value)
        .map_err(|e| format!("the token response cannot be kept: {e}"))?;
    // Saved by us, not rmcp's `set_credentials`, which would discover
    // again without the legacy form `discover` accepts.
    super::save_login(&store, &client_id, token, metadata.issuer.clone()).await?;
    if store.step_up().is_some() {
        store.clear_step_up()?;
    }
    Ok(())
}

/// A server-given text cut and made safe for one terminal line.
fn shown(s: &str) -> String {
    crate::terminal::line(&crate::terminal::cut_chars(s, MAX_SHOWN_CHARS)).into_owned()
}

/// The HTTP client for the authorization server's endpoints: no proxy for
/// a loopback one, same-origin redirects only, [`REQUEST_TIMEOUT`] each.
pub(super) fn http_client(endpoint: &str) -> Result<reqwest::Client, String> {
    crate::mcp::transport::http_client(
        crate::mcp::transport::is_loopback_url(endpoint),
        Some(REQUEST_TIMEOUT),
    )
    .map_err(|e| format!("cannot build the HTTP client: {e}"))
}

/// Why an HTTP exchange with the authorization server failed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct SendError(String);

/// One `oauth2` request over reqwest, the answer's body read to at most
/// [`MAX_ANSWER_BYTES`].
async fn send(
    http: &reqwest::Client,
    req: oauth2::HttpRequest,
) -> Result<oauth2::HttpResponse, SendError> {
    let (parts, body) = req.into_parts();
    let mut resp = http
        .request(parts.method, parts.uri.to_string())
        .headers(parts.headers)
        .body(body)
        .send()
        .await
        .map_err(|e| SendError(e.without_url().to_string()))?;
    let mut answer = http::Response::builder().status(resp.status());
    for (k, v) in resp.headers() {
        answer = answer.header(k, v);
    }
    let bytes = read_body(&mut resp).await.map_err(SendError)?;
    answer
        .body(bytes)
        .map_err(|e| SendError(format!("the answer cannot be read: {e}")))
}

/// The body of an authorization server's answer, at most
/// [`MAX_ANSWER_BYTES`]; a longer one is refused, not cut.
pub(super) async fn read_body(resp: &mut reqwest::Response) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| e.without_url().to_string())?
    {
        if bytes.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(format!(
                "the authorization server's answer is over {MAX_ANSWER_BYTES} bytes"
            ));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// Dynamic client registration (RFC 7591) of a public client of the device
/// grant; the new `client_id`.
async fn register(
    http: &reqwest::Client,
    endpoint: &str,
    scopes: &[String],
) -> Result<String, String> {
    let mut body = serde_json::json!({
        "client_name": super::login::CLIENT_NAME,
        "grant_types": [DEVICE_GRANT, "refresh_token"],
        "response_types": [],
        "token_endpoint_auth_method": "none",
        "application_type": "native",
    });
    if !scopes.is_empty() {
        body["scope"] = scopes.join(" ").into();
    }
    let req = http::Request::builder()
        .method("POST")
        .uri(endpoint)
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .body(body.to_string().into_bytes())
        .map_err(|e| format!("registration endpoint {endpoint:?}: {e}"))?;
    let resp = send(http, req)
        .await
        .map_err(|e| format!("client registration failed: {e}"))?;
    if !resp.status().is_success() {
        return Err(format!(
            "client registration failed: HTTP {}: {}",
            resp.status(),
            shown(&String::from_utf8_lossy(
                &resp.body()[..resp.body().len().min(300)]
            ))
        ));
    }
    let v: serde_json::Value = serde_json::from_slice(resp.body())
        .map_err(|e| format!("client registration failed: the answer is not JSON: {e}"))?;
    v.get("client_id")
        .and_then(|id| id.as_str())
        .filter(|id| !id.is_empty())
        .map(str::to_string)
        .ok_or_else(|| "client registration failed: the answer has no client_id".to_string())
}

/// An `oauth2` token error in one line: the server's error code and
/// description (cut), or the transport's reason; never a token.
fn token_error<RE: std::error::Error + 'static, T: oauth2::ErrorResponse + 'static>(
    e: &oauth2::RequestTokenError<RE, T>,
) -> String {
    match e {
        oauth2::RequestTokenError::ServerResponse(r) => {
            // `ErrorResponse` is only `Display`; it says the code and the
            // description.
            shown(&r.to_string())
        }
        oauth2::RequestTokenError::Request(re) => shown(&re.to_string()),
        oauth2::RequestTokenError::Parse(pe, _) => {
            shown(&format!("the answer does not read as OAuth: {pe}"))
        }
        oauth2::RequestTokenError::Other(s) => shown(s),
    }
}
