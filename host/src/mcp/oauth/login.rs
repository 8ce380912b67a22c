//! `wasmgate login SERVER` (docs/mcp-client.md §9): the authorization-code
//! flow with PKCE through a loopback redirect listener (127.0.0.1, a
//! random port, one `state` checked), and the client-credentials grant of
//! a machine client. Tokens go to the server's token file
//! ([`super::store`]); no token is ever printed or logged.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use rmcp::transport::auth::{
    AuthorizationRequest, AuthorizationSession, ClientCredentialsConfig, JwtSigningAlgorithm,
    OAuthState,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{OAuthConfig, brief, manager, store_for};
use crate::manifest::server::JwtAlgorithm;

/// How the authorization URL reaches a browser: given the URL, it resolves
/// when the browser was handed the URL (not when the user finished).
pub type OpenBrowser = Box<dyn FnOnce(String) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

/// Largest request head read from the browser on the redirect listener.
const MAX_REDIRECT_REQUEST_BYTES: usize = 16 * 1024;

/// How long `login` waits for the browser's redirect by default.
pub const DEFAULT_LOGIN_WAIT: Duration = Duration::from_secs(300);

/// The `client_name` wasmgate registers under (dynamic registration).
pub(super) const CLIENT_NAME: &str = "wasmgate";

/// Logs in to `server` at `url`: discovery from the server's 401
/// challenge, registration, the authorization URL handed to `browser`,
/// the redirect to the loopback listener (waiting at most `wait`), and the
/// code exchanged for tokens, which are saved to the token file. A
/// client-credentials server gets its token without a browser.
///
/// # Errors
/// One line naming what failed (discovery, registration, the browser's
/// answer, the `state` check, the token exchange); never a token.
pub async fn login(
    server: &str,
    url: &str,
    config: &OAuthConfig,
    browser: OpenBrowser,
    wait: Duration,
) -> Result<(), String> {
    if config.client_credentials {
        return client_credentials(server, url, config).await;
    }
    if config.enterprise.is_some() {
        return enterprise_managed(server, url, config).await;
    }
    let store = store_for(server, url)?;
    // A call refused for its scope (403 insufficient_scope) left its
    // challenge: this login asks for that scope (step-up), else the
    // server's answer to an unauthenticated request says what to ask for.
    let step_up = store.step_up();
    let challenge = match &step_up {
        Some(c) => Some(c.clone()),
        None => challenge_of(url).await,
    };
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|e| format!("cannot open the redirect listener on 127.0.0.1: {e}"))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let redirect_uri = format!("http://127.0.0.1:{port}/callback");

    let mut m = manager(url, store.clone()).await.map_err(|e| brief(&e))?;
    super::discover(&mut m, url, challenge.as_deref()).await?;
    let mut request = AuthorizationRequest::new(&redirect_uri)
        .with_client_name(CLIENT_NAME)
        .with_initial_scope_selection();
    if let Some(c) = challenge {
        request = request.with_challenge(c);
    }
    if !config.scopes.is_empty() {
        // The configured scopes, and for a step-up the ones the server
        // asked for besides.
        let mut scopes = config.scopes.clone();
        for s in step_up
            .as_deref()
            .and_then(challenge_scope)
            .unwrap_or_default()
        {
            if !scopes.contains(&s) {
                scopes.push(s);
            }
        }
        request = request.with_scopes(scopes);
    }
    if let Some(id) = &config.client_id {
        request = request.with_preregistered_client(id);
        if let Some(s) = &config.client_secret {
            request = request.with_client_secret(s);
        }
    }
    if let Some(u) = &config.client_metadata_url {
        request = request.with_client_metadata_url(u);
    }
    // rmcp's `start_authorization` would discover again, without the
    // legacy form `discover` accepts; the session is made from `m` as it
    // does.
    let session = AuthorizationSession::new(m, request)
        .await
        .map_err(|(_, e)| format!("authorization could not start: {}", brief(&e)))?;
    let mut state = OAuthState::Session(session);
    let auth_url = state.get_authorization_url().await.map_err(|e| brief(&e))?;
    let expected_state =
        query_value(&auth_url, "state").ok_or("the authorization URL has no state parameter")?;

    let opened = tokio::spawn(browser(auth_url));
    let target = tokio::time::timeout(wait, redirect(&listener, &redirect_uri, &expected_state))
        .await
        .map_err(|_| {
            format!(
                "no answer from the browser within {} s; run the login again",
                wait.as_secs()
            )
        });
    opened.abort();
    let callback = target??;
    state
        .handle_callback_url(&callback)
        .await
        .map_err(|e| format!("the token exchange failed: {}", brief(&e)))?;
    if step_up.is_some() {
        store.clear_step_up()?;
    }
    Ok(())
}

/// The client-credentials grant: with a secret, `client_secret_basic`
/// when the server offers only that, else `client_secret_post`; with a
/// private key, a JWT assertion signed by it (`private_key_jwt`, RFC 7523;
/// audience the authorization server's issuer). The token is saved.
///
/// # Errors
/// No `client_id` or credential configured, a key that does not suit the
/// signing algorithm, or the server refused.
pub async fn client_credentials(
    server: &str,
    url: &str,
    config: &OAuthConfig,
) -> Result<(), String> {
    let credentials = match (
        &config.client_id,
        &config.client_secret,
        &config.private_key,
    ) {
        (Some(client_id), Some(client_secret), _) => ClientCredentialsConfig::ClientSecret {
            client_id: client_id.clone(),
            client_secret: client_secret.clone(),
            scopes: config.scopes.clone(),
            resource: Some(url.to_string()),
        },
        (Some(client_id), None, Some(key)) => ClientCredentialsConfig::PrivateKeyJwt {
            client_id: client_id.clone(),
            signing_key: key.as_bytes().to_vec(),
            signing_algorithm: jws_algorithm(config.signing_algorithm),
            token_endpoint_audience: None,
            scopes: config.scopes.clone(),
            resource: Some(url.to_string()),
        },
        _ => {
            return Err("the client-credentials grant needs oauth.client_id and \
                 oauth.client_secret_env or oauth.private_key_env"
                .into());
        }
    };
    let store = store_for(server, url)?;
    let url = url.to_string();
    // rmcp 3.11's grant future is not `Send` once its JWT signer is built
    // in (a form serializer lives across an await), and connects run on
    // the multi-thread runtime: the grant gets a thread and a one-thread
    // runtime of its own, its HTTP client made there too.
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("wasmgate-oauth-grant".into())
        .spawn(move || {
            let outcome = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt.block_on(async move {
                    let m = manager(&url, store).await.map_err(|e| brief(&e))?;
                    let mut state = OAuthState::Unauthorized(m);
                    state
                        .authenticate_client_credentials(credentials)
                        .await
                        .map_err(|e| format!("the client-credentials grant failed: {}", brief(&e)))
                }),
                Err(e) => Err(format!("cannot start the client-credentials grant: {e}")),
            };
            let _ = tx.send(outcome);
        })
        .map_err(|e| format!("cannot start the client-credentials grant: {e}"))?;
    rx.await
        .unwrap_or_else(|_| Err("the client-credentials grant ended without an answer".into()))
}

/// Enterprise-managed authorization (SEP-990; rmcp's `enterprise`
/// module): the server's authorization server from its discovery, the
/// configured ID token exchanged at the identity provider for an ID-JAG
/// (RFC 8693), the ID-JAG for an access token there (RFC 7523 JWT bearer,
/// this client by HTTP Basic when it has a secret), and that token saved
/// like any login. No browser; no refresh token (a new exchange once it
/// expires).
///
/// # Errors
/// No `oauth.idp`, discovery failed, or either exchange was refused (the
/// stage and the OAuth error code named; never a token).
pub async fn enterprise_managed(
    server: &str,
    url: &str,
    config: &OAuthConfig,
) -> Result<(), String> {
    use oauth2::ClientSecret;
    use rmcp::transport::auth::enterprise::{
        EmaAuthorizationServer, EmaClientAuthentication, EmaExchangeRequest,
    };
    let (Some(idp), Some(client_id)) = (&config.enterprise, &config.client_id) else {
        return Err("enterprise_managed needs oauth.client_id and oauth.idp".into());
    };
    let store = store_for(server, url)?;
    let mut m = manager(url, store.clone()).await.map_err(|e| brief(&e))?;
    let metadata = super::discover(&mut m, url, None).await?;
    let issuer = metadata
        .issuer
        .clone()
        .ok_or("the authorization server's metadata names no issuer (the ID-JAG's audience)")?;
    let auth = |secret: &Option<String>| match secret {
        Some(s) => EmaClientAuthentication::ClientSecretBasic(ClientSecret::new(s.clone())),
        None => EmaClientAuthentication::None,
    };
    let provider = EmaAuthorizationServer::new(&idp.issuer, &idp.token_endpoint, &idp.client_id)
        .with_client_authentication(auth(&idp.client_secret));
    let resource_as =
        EmaAuthorizationServer::new(issuer.clone(), &metadata.token_endpoint, client_id)
            .with_client_authentication(auth(&config.client_secret));
    let http = rmcp::transport::auth::default_oauth_http_client()
        .map_err(|e| format!("cannot make the HTTP client: {}", brief(&e)))?;
    let token = EmaExchangeRequest::new_with_id_token(provider, resource_as, url, &idp.id_token)
        .with_scopes(config.scopes.iter().cloned())
        .exchange(&http, &http)
        .await
        .map_err(|e| format!("the enterprise-managed token exchange failed: {e}"))?;
    // rmcp's token type through serde, as a login's: then refreshed and
    // sent the same way.
    let mut answer = serde_json::json!({
        "access_token": token.access_token.secret(),
        "token_type": "Bearer",
    });
    if let Some(d) = token.expires_in {
        answer["expires_in"] = d.as_secs().into();
    }
    if !token.scopes.is_empty() {
        let mut scopes: Vec<&str> = token.scopes.iter().map(String::as_str).collect();
        scopes.sort_unstable();
        answer["scope"] = scopes.join(" ").into();
    }
    let answer = serde_json::from_value(answer)
        .map_err(|e| format!("the token answer cannot be kept: {e}"))?;
    super::save_login(&store, client_id, answer, Some(issuer)).await
}

/// rmcp's name for a configured [`JwtAlgorithm`].
fn jws_algorithm(a: JwtAlgorithm) -> JwtSigningAlgorithm {
    match a {
        JwtAlgorithm::Rs256 => JwtSigningAlgorithm::RS256,
        JwtAlgorithm::Rs384 => JwtSigningAlgorithm::RS384,
        JwtAlgorithm::Rs512 => JwtSigningAlgorithm::RS512,
        JwtAlgorithm::Es256 => JwtSigningAlgorithm::ES256,
        JwtAlgorithm::Es384 => JwtSigningAlgorithm::ES384,
    }
}

/// The scopes of a `WWW-Authenticate` challenge's `scope="…"` parameter.
pub(crate) fn challenge_scope(challenge: &str) -> Option<Vec<String>> {
    let start = challenge.find("scope=\"")? + "scope=\"".len();
    let len = challenge[start..].find('"')?;
    Some(
        challenge[start..start + len]
            .split_whitespace()
            .map(str::to_string)
            .collect(),
    )
}

/// The `WWW-Authenticate` header of the server's answer to an
/// unauthenticated `initialize`, when it is a 401.
async fn challenge_of(url: &str) -> Option<String> {
    let client = crate::mcp::transport::http_client(
        crate::mcp::transport::is_loopback_url(url),
        Some(Duration::from_secs(30)),
    )
    .ok()?;
    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "wasmgate", "version": env!("CARGO_PKG_VERSION")}}
    });
    let resp = client
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .ok()?;
    if resp.status() != reqwest::StatusCode::UNAUTHORIZED {
        return None;
    }
    resp.headers()
        .get(http::header::WWW_AUTHENTICATE)?
        .to_str()
        .ok()
        .map(|s| s.chars().take(4096).collect())
}

/// Waits for the browser's `GET /callback?…` on the listener; answers
/// anything else with 404. The full redirect URL when `state` matches.
async fn redirect(
    listener: &tokio::net::TcpListener,
    redirect_uri: &str,
    expected_state: &str,
) -> Result<String, String> {
    loop {
        let Ok((mut sock, _)) = listener.accept().await else {
            continue;
        };
        let mut head = Vec::new();
        let mut buf = [0u8; 2048];
        let read = tokio::time::timeout(Duration::from_secs(10), async {
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = sock.read(&mut buf).await?;
                if n == 0 {
                    break;
                }
                head.extend_from_slice(&buf[..n]);
                if head.len() > MAX_REDIRECT_REQUEST_BYTES {
                    break;
                }
            }
            Ok::<_, std::io::Error>(())
        })
        .await;
        if !matches!(read, Ok(Ok(()))) {
            continue;
        }
        let text = String::from_utf8_lossy(&head);
        let target = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("GET "))
            .and_then(|l| l.split(' ').next())
            .unwrap_or("");
        if !target.starts_with("/callback") {
            let _ = sock
                .write_all(
                    b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                )
                .await;
            continue;
        }
        let full = format!("{}{}", redirect_uri.trim_end_matches("/callback"), target);
        let (status, page, result) = if let Some(err) = query_value(&full, "error") {
            let desc = query_value(&full, "error_description").unwrap_or_default();
            (
                "400 Bad Request",
                "The authorization was refused. You can close this window.",
                Err(format!(
                    "the authorization server refused: {}{}{}",
                    crate::terminal::line(&crate::terminal::cut_chars(&err, 200)),
                    if desc.is_empty() { "" } else { ": " },
                    crate::terminal::line(&crate::terminal::cut_chars(&desc, 300))
                )),
            )
        } else if query_value(&full, "state").as_deref() != Some(expected_state) {
            // Someone else's redirect (or a forged one): refused, and the
            // login keeps waiting for the real one.
            let _ = sock
                .write_all(
                    b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                )
                .await;
            tracing::warn!("a redirect with a wrong state was refused");
            continue;
        } else {
            (
                "200 OK",
                "wasmgate is logged in. You can close this window.",
                Ok(full),
            )
        };
        let resp = format!(
            "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
            page.len()
        );
        let _ = sock.write_all(resp.as_bytes()).await;
        return result;
    }
}

/// The decoded value of query parameter `key` of `url`.
fn query_value(url: &str, key: &str) -> Option<String> {
    let u = url::Url::parse(url).ok()?;
    u.query_pairs()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}

/// The browser of an interactive login: prints the URL on stderr and, when
/// this machine has a desktop, opens it with the system's opener.
pub fn system_browser() -> OpenBrowser {
    Box::new(|url: String| -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(async move {
            eprintln!("Open this URL in a browser to log in:\n  {url}");
            open_with_system(&url);
        })
    })
}

/// Opens `url` with the system's opener when this machine has a desktop
/// (`open`, `rundll32`, `xdg-open` with `DISPLAY` / `WAYLAND_DISPLAY`).
pub(crate) fn open_with_system(url: &str) {
    let (prog, args): (&str, Vec<&str>) = if cfg!(target_os = "macos") {
        ("open", vec![url])
    } else if cfg!(windows) {
        ("rundll32", vec!["url.dll,FileProtocolHandler", url])
    } else if std::env::var_os("DISPLAY").is_some() || std::env::var_os("WAYLAND_DISPLAY").is_some()
    {
        ("xdg-open", vec![url])
    } else {
        return;
    };
    let _ = std::process::Command::new(prog)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
}

/// A browser stand-in for tests and the conformance client: it GETs the
/// authorization URL and follows each redirect (at most 10) itself, the
/// last one to the loopback listener, as a browser whose user approves.
#[cfg(any(test, feature = "internals"))]
pub fn following_browser() -> OpenBrowser {
    Box::new(|url: String| -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(async move {
            let Ok(client) = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .no_proxy()
                .timeout(Duration::from_secs(20))
                .build()
            else {
                return;
            };
            let mut next = url;
            for _ in 0..10 {
                let Ok(resp) = client.get(&next).send().await else {
                    return;
                };
                let Some(loc) = resp
                    .headers()
                    .get(http::header::LOCATION)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string)
                else {
                    return;
                };
                let Ok(base) = url::Url::parse(&next) else {
                    return;
                };
                let Ok(joined) = base.join(&loc) else {
                    return;
                };
                next = joined.to_string();
            }
        })
    })
}

#[cfg(test)]
mod tests {
    use super::challenge_scope;

    #[test]
    fn the_scope_of_a_challenge_is_read_and_error_is_not_taken_for_it() {
        let c = r#"Bearer error="insufficient_scope", scope="mcp:basic mcp:write", resource_metadata="https://x/.well-known/oauth-protected-resource/mcp""#;
        assert_eq!(challenge_scope(c).unwrap(), ["mcp:basic", "mcp:write"]);
        assert_eq!(
            challenge_scope(r#"Bearer error="insufficient_scope""#),
            None
        );
        assert_eq!(challenge_scope(r#"Bearer scope="unterminated"#), None);
    }
}
