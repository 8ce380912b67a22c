//! One MCP server entry of a manifest or config (`mcp_servers.<name>`),
//! in the schema of `docs/mcp-client.md` §1 plus the `app:` /
//! `requires:` blocks of `docs/declarations.md` §1.

use super::sampling::SamplingPolicy;
use crate::declaration::Declaration;
use std::collections::BTreeMap;
use std::time::Duration;

// The defaults belong to the entry: `ServerSpec::new` and the schema's
// parser both read them here, so `schema` depends on `server` and not the
// other way round (docs/mcp-client.md §1).

/// Default per-call timeout (`timeout`): 120 s.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// Default connect-and-discovery timeout (`connect_timeout`): 60 s.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(60);
/// Default largest tool result kept (`max_result_bytes`): 8 MiB.
pub const DEFAULT_MAX_RESULT_BYTES: usize = 8 * 1024 * 1024;

/// How the host reaches a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking MCP over stdio.
    Stdio {
        /// Program to run; `${PLUGIN_DIR}` already replaced.
        command: String,
        /// Arguments, scalars stringified.
        args: Vec<String>,
        /// Extra environment for the child (values interpolated).
        env: BTreeMap<String, String>,
        /// Names of host variables the child may also see.
        env_passthrough: Vec<String>,
    },
    /// Streamable HTTP.
    Http {
        /// Endpoint URL.
        url: String,
        /// Headers sent with every request.
        headers: BTreeMap<String, String>,
    },
    /// URL and bearer token come from the running application's
    /// `server_json` (the declaration's liveness block).
    AppEndpoint,
}

/// Tool filter (`tools: {include, exclude}`); globs with `*` and `?`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolFilter {
    /// When `Some`, only these tools (include wins over exclude); `Some(vec![])` offers none.
    pub include: Option<Vec<String>>,
    /// Tools never offered.
    pub exclude: Vec<String>,
}

/// A validated server entry.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSpec {
    /// Configured server name (the `mcp_servers` key).
    pub name: String,
    /// Plugin that brought it (`None` for a config-file server).
    pub plugin: Option<String>,
    /// `enabled` (default true).
    pub enabled: bool,
    /// How to reach it.
    pub transport: Transport,
    /// Per tool call (default 120 s).
    pub timeout: Duration,
    /// Connect and discovery (default 60 s).
    pub connect_timeout: Duration,
    /// `tools:` filter.
    pub tools: ToolFilter,
    /// Largest tool result kept, in bytes (default 8 MiB).
    pub max_result_bytes: usize,
    /// `sampling:` (defaults when absent).
    pub sampling: SamplingPolicy,
    /// The server's application declaration, when it has `app:` or `requires:`.
    pub declaration: Option<Declaration>,
    /// The values its `${VAR}` / `${env:VAR}` references in `env` and
    /// `headers` stood for, and the whole values they are part of: secrets,
    /// redacted also in successful tool results (docs/security.md,
    /// "Redaction"). Empty by default.
    pub secrets: Vec<String>,
    /// `auth: oauth` (HTTP servers only; docs/mcp-client.md §9): the
    /// server's tokens come from `wasmgate login`. `None`: static headers.
    /// Boxed: few servers have one, and inline it was 248 of the entry's
    /// 672 bytes (`docs/performance.md`, "2026-12-05 (night)").
    pub oauth: Option<Box<OAuthConfig>>,
}

/// The OAuth settings of one server entry (`auth: oauth` and its `oauth:`
/// block, docs/mcp-client.md §9): what the entry says; the flows that use
/// it are the MCP client's. `Debug` never shows the secret.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct OAuthConfig {
    /// A client ID registered out of band (`oauth.client_id`); wins over
    /// every other registration.
    pub client_id: Option<String>,
    /// The value of the variable named by `oauth.client_secret_env`, read
    /// at load time (never written inline in a file).
    pub client_secret: Option<String>,
    /// Scopes to ask for (`oauth.scopes`); empty: the server's hint.
    pub scopes: Vec<String>,
    /// HTTPS URL of this client's Client ID Metadata Document
    /// (`oauth.client_metadata_url`).
    pub client_metadata_url: Option<String>,
    /// `oauth.grant: client_credentials`: a machine client that gets its
    /// token with `client_id` + `client_secret` (or + `private_key`), no
    /// browser.
    pub client_credentials: bool,
    /// The PEM text of the variable named by `oauth.private_key_env`, read
    /// at load time: the client-credentials grant then authenticates with
    /// a signed JWT assertion (`private_key_jwt`, RFC 7523) instead of a
    /// secret.
    pub private_key: Option<String>,
    /// `oauth.signing_algorithm`: how the assertion is signed (default
    /// [`JwtAlgorithm::Rs256`]).
    pub signing_algorithm: JwtAlgorithm,
    /// `oauth.grant: enterprise_managed` and its `oauth.idp:` block:
    /// enterprise-managed authorization (SEP-990, ID-JAG). The user's
    /// enterprise ID token is exchanged at the identity provider for an
    /// ID-JAG, which the server's authorization server takes for an access
    /// token (RFC 8693 token exchange, then the RFC 7523 JWT-bearer grant).
    pub enterprise: Option<EnterpriseIdp>,
}

/// The enterprise identity provider of an `enterprise_managed` server
/// (`oauth.idp:`, docs/mcp-client.md §9). `Debug` never shows the secret
/// or the ID token.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct EnterpriseIdp {
    /// `idp.issuer`: the provider's issuer URL (https, or http on loopback).
    pub issuer: String,
    /// `idp.token_endpoint`: where the token exchange is posted.
    pub token_endpoint: String,
    /// `idp.client_id`: this client at the provider.
    pub client_id: String,
    /// The value of `idp.client_secret_env` (HTTP Basic at the provider);
    /// `None`: a public client.
    pub client_secret: Option<String>,
    /// The value of `idp.id_token_env`: the user's ID token from the
    /// provider (its single sign-on), read at load time.
    pub id_token: String,
}

impl std::fmt::Debug for EnterpriseIdp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnterpriseIdp")
            .field("issuer", &self.issuer)
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("id_token", &"<redacted>")
            .finish()
    }
}

/// The JWS algorithm of a `private_key_jwt` client assertion
/// (`oauth.signing_algorithm`, docs/mcp-client.md §9): RSA PKCS#1 v1.5
/// with SHA-256/384/512, or ECDSA on P-256 / P-384. The key must be of
/// that type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum JwtAlgorithm {
    /// `RS256` (the default).
    #[default]
    Rs256,
    /// `RS384`.
    Rs384,
    /// `RS512`.
    Rs512,
    /// `ES256` (P-256 key).
    Es256,
    /// `ES384` (P-384 key).
    Es384,
}

impl JwtAlgorithm {
    /// Every algorithm with its JWS name, in the order docs list them.
    pub const ALL: [(JwtAlgorithm, &'static str); 5] = [
        (JwtAlgorithm::Rs256, "RS256"),
        (JwtAlgorithm::Rs384, "RS384"),
        (JwtAlgorithm::Rs512, "RS512"),
        (JwtAlgorithm::Es256, "ES256"),
        (JwtAlgorithm::Es384, "ES384"),
    ];

    /// The algorithm named `name` (`RS256` …, exact case); `None` for
    /// any other text.
    pub fn from_name(name: &str) -> Option<JwtAlgorithm> {
        Self::ALL.iter().find(|(_, n)| *n == name).map(|(a, _)| *a)
    }
}

impl std::fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("scopes", &self.scopes)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("client_credentials", &self.client_credentials)
            .field(
                "private_key",
                &self.private_key.as_ref().map(|_| "<redacted>"),
            )
            .field("signing_algorithm", &self.signing_algorithm)
            .field("enterprise", &self.enterprise)
            .finish()
    }
}

impl ServerSpec {
    /// An enabled config-file server with the defaults of
    /// `docs/mcp-client.md` §1: `timeout` 120 s, `connect_timeout` 60 s,
    /// every tool offered, `max_result_bytes` 8 MiB, default sampling
    /// policy, no declaration. Set fields on the result to change them.
    pub fn new(name: impl Into<String>, transport: Transport) -> ServerSpec {
        ServerSpec {
            name: name.into(),
            plugin: None,
            enabled: true,
            transport,
            timeout: DEFAULT_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            tools: ToolFilter::default(),
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
            sampling: SamplingPolicy::default(),
            declaration: None,
            secrets: Vec::new(),
            oauth: None,
        }
    }
}

impl Transport {
    /// A stdio transport running `command` with `args`, no extra
    /// environment and no passthrough names.
    pub fn stdio<S: AsRef<str>>(command: impl Into<String>, args: &[S]) -> Transport {
        Transport::Stdio {
            command: command.into(),
            args: args.iter().map(|a| a.as_ref().to_string()).collect(),
            env: BTreeMap::new(),
            env_passthrough: Vec::new(),
        }
    }
}
