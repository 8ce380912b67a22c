//! OAuth 2.1 for remote MCP servers (`auth: oauth` on an HTTP server entry;
//! docs/mcp-client.md §9), built on rmcp's `auth` module: discovery
//! (protected-resource metadata from `WWW-Authenticate` or the well-known
//! URL, authorization-server metadata with its older fallbacks), PKCE S256,
//! the `resource` parameter, scope selection, client registration in the
//! spec's order (pre-registered, Client ID Metadata Document, dynamic),
//! refresh before expiry and once on a 401, and client credentials
//! (`client_secret_basic` / `_post`) for machine clients.
//!
//! What wasmgate adds: the token file of each server ([`store`]), the
//! loopback redirect listener of `wasmgate login` ([`login`]), and the
//! `auth_required` verdict of a server whose tokens are missing or whose
//! refresh failed ([`AUTH_REQUIRED`]).

pub mod device;
pub mod login;
pub mod store;

use std::path::PathBuf;

use rmcp::transport::auth::{
    AuthClient, AuthError, AuthorizationManager, AuthorizationMetadata, CredentialStore as _,
    OAuthTokenResponse, StoredCredentials,
};

pub use store::{StoreKind, TokenStore, default_token_dir};
#[cfg(any(test, feature = "internals"))]
pub use store::KEYRING_SERVICE;

use crate::manifest::server::OAuthConfig;

/// The state word `status` shows for a server that needs a login.
pub const AUTH_REQUIRED: &str = "auth_required";

/// Where the token files are: set once for the process (tests and the
/// conformance client point it at a temporary folder), else
/// [`default_token_dir`].
static TOKEN_DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Sets the token folder for this process; `false` when it was set before.
/// Logins then go to files there unless `WASMGATE_OAUTH_STORE=keyring`.
/// For the conformance client and the tests, which keep logins in a folder
/// of their own.
#[cfg(any(test, feature = "internals"))]
pub fn set_token_dir(dir: PathBuf) -> bool {
    TOKEN_DIR.set(dir).is_ok()
}

/// The token folder in use; `None` when neither was set nor a user config
/// dir exists.
pub fn token_dir() -> Option<PathBuf> {
    TOKEN_DIR.get().cloned().or_else(default_token_dir)
}

/// The store of `server` at `url`: the OS keyring with the file as its
/// fallback, or files only when the token folder was chosen
/// (`WASMGATE_OAUTH_DIR`, [`set_token_dir`]); `WASMGATE_OAUTH_STORE`
/// (`keyring` / `file`) decides over both (docs/mcp-client.md §9).
///
/// # Errors
/// No token folder on this machine, or a `WASMGATE_OAUTH_STORE` that is
/// neither word.
pub fn store_for(server: &str, url: &str) -> Result<TokenStore, String> {
    let dir = token_dir().ok_or_else(|| {
        "this machine has no user config dir for the token store; set WASMGATE_OAUTH_DIR"
            .to_string()
    })?;
    let chosen = TOKEN_DIR.get().is_some()
        || std::env::var_os("WASMGATE_OAUTH_DIR").is_some_and(|d| !d.is_empty());
    let kind = StoreKind::from_env(if chosen {
        StoreKind::File
    } else {
        StoreKind::Keyring
    })?;
    Ok(TokenStore::new(&dir, server, url, kind))
}

/// The sentence every `auth_required` message ends with.
pub fn login_hint(server: &str) -> String {
    format!("run `wasmgate login {server}`")
}

/// An authorization manager for `url` with the server's token file as its
/// credential store.
pub(crate) async fn manager(
    url: &str,
    store: TokenStore,
) -> Result<AuthorizationManager, AuthError> {
    let mut m = AuthorizationManager::new(url).await?;
    m.set_credential_store(store);
    Ok(m)
}

/// The authorization server's metadata for the MCP server at `url`, found
/// by rmcp's discovery (from `challenge`, a 401's `WWW-Authenticate`, when
/// there is one) and set on `m`. One older form is accepted besides (the
/// 2025-03-26 spec's, docs/mcp-client.md §9 "Legacy metadata"): with no
/// protected-resource metadata, the document at the server origin's root
/// `/.well-known/oauth-authorization-server` may name an issuer of that
/// same origin with a path (`https://h/oauth`); RFC 8414 §3.3 wants the
/// bare origin there, and an issuer of any other origin is still refused.
///
/// # Errors
/// One line: discovery failed, or the issuer is not the one its metadata
/// URL allows.
pub(crate) async fn discover(
    m: &mut AuthorizationManager,
    url: &str,
    challenge: Option<&str>,
) -> Result<AuthorizationMetadata, String> {
    let failed = |e: &str| format!("authorization server discovery failed: {e}");
    let metadata = match m.resolve_metadata_from_challenge(challenge).await {
        Ok(resolution) => resolution.metadata,
        Err(AuthError::AuthorizationServerMismatch {
            expected_issuer,
            received_issuer,
        }) if legacy_same_origin(url, &expected_issuer, &received_issuer) => {
            let metadata = legacy_metadata(&expected_issuer)
                .await
                .map_err(|e| failed(&e))?;
            if metadata.issuer.as_deref() != Some(received_issuer.as_str()) {
                return Err(failed("the root metadata document changed its issuer"));
            }
            tracing::info!(
                issuer = %crate::terminal::line(&received_issuer),
                "accepted the 2025-03-26 form: a same-origin issuer with a path in the \
                 root authorization-server metadata"
            );
            metadata
        }
        Err(e) => return Err(failed(&brief(&e))),
    };
    m.set_metadata(metadata.clone());
    Ok(metadata)
}

/// Whether an issuer mismatch is the 2025-03-26 form [`discover`]
/// accepts: the expected issuer is the bare origin of the MCP server at
/// `url` (the metadata came from its root well-known URL) and the received
/// one is that origin with a path and nothing else.
fn legacy_same_origin(url: &str, expected: &str, received: &str) -> bool {
    let (Ok(server), Ok(expected), Ok(received)) = (
        url::Url::parse(url),
        url::Url::parse(expected),
        url::Url::parse(received),
    ) else {
        return false;
    };
    let bare = |u: &url::Url| matches!(u.path(), "" | "/");
    let plain = |u: &url::Url| u.query().is_none() && u.fragment().is_none();
    server.origin().is_tuple()
        && expected.origin() == server.origin()
        && received.origin() == server.origin()
        && bare(&expected)
        && plain(&expected)
        && !bare(&received)
        && plain(&received)
        && received.username().is_empty()
        && received.password().is_none()
}

/// The root authorization-server metadata of `origin`, read again by us
/// (rmcp refused its issuer): same-origin redirects only, the answer at
/// most 256 KiB.
async fn legacy_metadata(origin: &str) -> Result<AuthorizationMetadata, String> {
    let u = format!(
        "{}/.well-known/oauth-authorization-server",
        origin.trim_end_matches('/')
    );
    let http = device::http_client(&u)?;
    let mut resp = http
        .get(&u)
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| e.without_url().to_string())?;
    if !resp.status().is_success() {
        return Err(format!(
            "the root metadata document answered {}",
            resp.status()
        ));
    }
    let body = device::read_body(&mut resp).await?;
    serde_json::from_slice(&body).map_err(|e| format!("the root metadata document: {e}"))
}

/// Saves a token answer got outside rmcp's flows (device code,
/// enterprise-managed) as rmcp's own login: bound to `issuer`, with the
/// scopes the answer granted and the time it came.
pub(crate) async fn save_login(
    store: &TokenStore,
    client_id: &str,
    token: OAuthTokenResponse,
    issuer: Option<String>,
) -> Result<(), String> {
    use oauth2::TokenResponse as _;
    let granted = token
        .scopes()
        .map(|s| s.iter().map(|s| s.to_string()).collect())
        .unwrap_or_default();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let stored = StoredCredentials::new(client_id.to_string(), Some(token), granted, Some(now))
        .with_issuer(issuer);
    store
        .save(stored)
        .await
        .map_err(|e| format!("the login cannot be saved: {}", brief(&e)))
}

/// The HTTP client of an `auth: oauth` server: `http` with the bearer
/// token of the stored login, refreshed before it expires and once on a
/// 401. `Err(reason)` when there is no usable login (the caller reports
/// [`AUTH_REQUIRED`]); a client-credentials server gets a fresh token here.
pub(crate) async fn authorized_client(
    server: &str,
    url: &str,
    config: &OAuthConfig,
    http: reqwest::Client,
) -> Result<AuthClient<reqwest::Client>, String> {
    let store = store_for(server, url)?;
    if config.client_credentials && !store.has_tokens() {
        login::client_credentials(server, url, config).await?;
    }
    if config.enterprise.is_some() && !store.has_tokens() {
        login::enterprise_managed(server, url, config).await?;
    }
    let logged_in = store.has_tokens();
    let mut m = manager(url, store).await.map_err(|e| e.to_string())?;
    if logged_in {
        // rmcp's load below would resolve the metadata itself, without the
        // legacy form.
        discover(&mut m, url, None).await?;
    }
    match m.initialize_from_store().await {
        Ok(true) => {}
        Ok(false) => return Err("not logged in".into()),
        Err(e) => return Err(format!("the stored login cannot be used: {e}")),
    }
    // An expired access token is refreshed here, before the handshake; a
    // refresh the server rejects means a new login.
    match m.get_access_token().await {
        Ok(_) => {}
        Err(AuthError::AuthorizationRequired) => return Err("the login has expired".into()),
        Err(e) => return Err(format!("the token refresh failed: {}", brief(&e))),
    }
    Ok(AuthClient::new(http, m))
}

/// The `WWW-Authenticate` challenge of a request the server refused with
/// 403 `insufficient_scope`, found in `e`'s chain of causes.
pub(crate) fn insufficient_scope(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut cause = Some(e);
    while let Some(c) = cause {
        if let Some(s) =
            c.downcast_ref::<rmcp::transport::streamable_http_client::InsufficientScopeError>()
        {
            return Some(s.www_authenticate_header.clone());
        }
        cause = c.source();
    }
    None
}

/// Scope step-up (docs/mcp-client.md §9): records the server's challenge
/// for the next `wasmgate login` and says so, ending with [`login_hint`].
pub(crate) fn step_up_needed(server: &str, url: &str, challenge: &str) -> String {
    let scope = login::challenge_scope(challenge)
        .map(|s| s.join(" "))
        .unwrap_or_default();
    let recorded = store_for(server, url).and_then(|s| s.record_step_up(challenge));
    if let Err(e) = &recorded {
        tracing::warn!(server, "the step-up challenge could not be kept: {e}");
    }
    format!(
        "{AUTH_REQUIRED}: '{server}' refused this call for its authorization's scope \
         (it asks for \"{}\"); {}",
        crate::terminal::line(&scope),
        login_hint(server)
    )
}

/// An rmcp auth error in one line, with no token in it (rmcp's messages
/// carry none; the redactor of the caller cuts any configured secret).
pub(crate) fn brief(e: &AuthError) -> String {
    let s = e.to_string();
    match s.char_indices().nth(300) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::legacy_same_origin;

    const MCP: &str = "http://127.0.0.1:4000/mcp";

    #[test]
    fn the_legacy_form_is_a_same_origin_issuer_with_a_path() {
        assert!(legacy_same_origin(
            MCP,
            "http://127.0.0.1:4000/",
            "http://127.0.0.1:4000/oauth"
        ));
        assert!(legacy_same_origin(
            MCP,
            "http://127.0.0.1:4000",
            "http://127.0.0.1:4000/tenant/a"
        ));
    }

    #[test]
    fn any_other_issuer_is_still_refused() {
        let refused = [
            // another host, port or scheme
            ("http://127.0.0.1:4000/", "https://evil.example.com/oauth"),
            ("http://127.0.0.1:4000/", "http://127.0.0.1:4001/oauth"),
            ("http://127.0.0.1:4000/", "https://127.0.0.1:4000/oauth"),
            ("http://127.0.0.1:4000/", "http://localhost:4000/oauth"),
            // the expected issuer already had a path (path-inserted URL)
            ("http://127.0.0.1:4000/a", "http://127.0.0.1:4000/b"),
            // the bare origin is no mismatch to accept; query, fragment
            // and user info are not an issuer's
            ("http://127.0.0.1:4000/", "http://127.0.0.1:4000/"),
            ("http://127.0.0.1:4000/", "http://127.0.0.1:4000/o?x=1"),
            ("http://127.0.0.1:4000/", "http://127.0.0.1:4000/o#f"),
            ("http://127.0.0.1:4000/", "http://u:p@127.0.0.1:4000/o"),
            // the metadata came from another origin than the server's
            ("http://127.0.0.1:5000/", "http://127.0.0.1:5000/oauth"),
            ("not a url", "http://127.0.0.1:4000/oauth"),
        ];
        for (expected, received) in refused {
            assert!(
                !legacy_same_origin(MCP, expected, received),
                "{expected} → {received}"
            );
        }
    }
}
