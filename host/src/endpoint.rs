//! The app-endpoint (`docs/declarations.md` §7): where a running
//! application's own MCP server listens and the bearer token it wants.
//! The resolver reads it from the application's `server_json`; the MCP
//! client dials it. Both use this module and neither imports the other:
//! the host hands the client an [`AppEndpointSource`].
//!
//! The token is held in a [`Token`], whose `Debug` prints `<redacted>` and
//! which has no `Display` or `Serialize`: it leaves only through
//! [`Token::expose`] for the MCP transport, to the verified loopback URL.

use crate::declaration::Declaration;
use std::fmt;
use std::net::SocketAddr;

/// A bearer token from a runtime file. Never printed: `Debug` shows
/// `<redacted>`; there is no `Display`.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// A token for the `Authorization: Bearer` header to an endpoint, as
    /// an [`AppEndpointSource`] read it. One that cannot be a header value
    /// (a control character such as CR or LF) is never sent: the connect
    /// fails with `ConnectError::AppNotRunning`. (`ServerJsonSource` is
    /// stricter: printable ASCII without spaces, `docs/declarations.md`
    /// §7.3.)
    pub fn new(token: &str) -> Token {
        Token(token.to_string())
    }

    /// The secret, for the `Authorization` header to the verified loopback
    /// endpoint only.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// `true` when the runtime file carried no token.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// A running application's MCP endpoint: plain `http` on loopback.
#[derive(Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `http://<host>:<port><endpoint_path>`, the host as the file wrote it
    /// (`127.0.0.1`, `localhost`, `[::1]`).
    pub url: String,
    /// The address dialled: `localhost` is dialled as 127.0.0.1, never
    /// resolved by name.
    pub dial: SocketAddr,
    /// The declared `endpoint_path` (the file's own path is discarded).
    pub path: String,
    /// The bearer token (may be empty).
    pub token: Token,
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Endpoint")
            .field("url", &self.url)
            .field("dial", &self.dial)
            .field("token", &self.token)
            .finish()
    }
}

/// Where the MCP client gets the endpoint of an `app_endpoint` server
/// (`docs/declarations.md` §7.5). It is asked afresh before every connect
/// and reconnect, because the application writes a new URL and token each
/// time it starts. `Host::load` sets one that reads `server_json` on the
/// machine availability was evaluated on (`ServerJsonSource`); an embedder
/// that builds its own `McpClient` sets one in `ClientOptions`.
pub trait AppEndpointSource: Send + Sync {
    /// The endpoint of the application `declaration` fronts, or a short
    /// reason without secrets why there is none (`process is not running`,
    /// `url host is not loopback`, …), shown in the server's connect error.
    fn endpoint(&self, declaration: Option<&Declaration>) -> Result<Endpoint, String>;
}
