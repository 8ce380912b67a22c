//! `wasmgate serve --http 127.0.0.1:PORT`: the gateway over MCP streamable
//! HTTP (rmcp's `StreamableHttpService`, endpoint `/mcp`), on loopback only.
//!
//! Security: the listener refuses any address that is not loopback (the
//! gateway runs the user's applications; it must not be reachable from the
//! network). With a bearer token set, every request must carry
//! `Authorization: Bearer <token>`, else `401 Unauthorized` with
//! `WWW-Authenticate: Bearer`; the token is compared in constant time and
//! never logged. rmcp also checks the `Host` header against loopback names
//! and, as configured here, a browser's `Origin` against loopback origins
//! (DNS rebinding): any other origin gets `403 Forbidden`.

use super::Gateway;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower_service::Service;

/// The HTTP path of the MCP endpoint.
pub const MCP_PATH: &str = "/mcp";

/// Browser origins allowed to call the gateway: pages served from loopback,
/// any port. A request with any other `Origin` gets `403 Forbidden`.
pub const ALLOWED_ORIGINS: &[&str] = &[
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

/// Why the HTTP listener could not start.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// The address is not a loopback address.
    #[error(
        "--http {0}: wasmgate serves only on loopback (127.0.0.1 or [::1]); it runs local \
         applications for whoever connects"
    )]
    NotLoopback(SocketAddr),
    /// The bind failed (port in use, permission).
    // `error`, not `source`: the text already carries the OS error, and a
    // source would print it twice in an error chain.
    #[error("--http {addr}: cannot listen: {error}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The OS error.
        error: std::io::Error,
    },
}

/// Binds `addr` after checking it is loopback. Returns the listener (its
/// `local_addr` tells the port when `addr` had port 0).
pub async fn bind_loopback(addr: SocketAddr) -> Result<TcpListener, HttpError> {
    if !addr.ip().is_loopback() {
        return Err(HttpError::NotLoopback(addr));
    }
    TcpListener::bind(addr)
        .await
        .map_err(|error| HttpError::Bind { addr, error })
}

/// Serves the gateway on `listener` until `stop` is cancelled. `token`:
/// the bearer token every request must carry (`None` = no check).
pub async fn serve_http(
    gateway: Gateway,
    listener: TcpListener,
    token: Option<String>,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    // A browser page sends its Origin; only pages served from loopback may
    // call (DNS rebinding, MCP transport spec "Security Warning"). Clients
    // that are not browsers send no Origin and pass.
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(stop.child_token())
        .with_allowed_origins(ALLOWED_ORIGINS.iter().copied())
        .enforce_origin_validation();
    let mcp = StreamableHttpService::new(
        move || Ok(gateway.handler()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let token: Option<Arc<[u8]>> = token.map(|t| Arc::from(t.into_bytes()));
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let (stream, _peer) = tokio::select! {
            () = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!("gateway http: accept failed: {e}");
                    continue;
                }
            },
        };
        let mcp = mcp.clone();
        let token = token.clone();
        let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
            let mut mcp = mcp.clone();
            let token = token.clone();
            async move {
                if let Some(expected) = &token
                    && !authorized(&req, expected)
                {
                    return Ok::<_, std::convert::Infallible>(unauthorized());
                }
                if req.uri().path() != MCP_PATH {
                    return Ok(not_found());
                }
                mcp.call(req).await
            }
        });
        let stop = stop.clone();
        connections.spawn(async move {
            let conn = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service);
            tokio::pin!(conn);
            tokio::select! {
                r = conn.as_mut() => {
                    if let Err(e) = r {
                        tracing::debug!("gateway http: connection ended: {e}");
                    }
                }
                () = stop.cancelled() => conn.as_mut().graceful_shutdown(),
            }
        });
        // Reap finished connections so the set does not grow.
        while connections.try_join_next().is_some() {}
    }
    connections.abort_all();
    Ok(())
}

type BoxBody = http_body_util::combinators::BoxBody<Bytes, std::convert::Infallible>;

fn authorized(req: &hyper::Request<Incoming>, expected: &[u8]) -> bool {
    let Some(value) = req.headers().get(hyper::header::AUTHORIZATION) else {
        return false;
    };
    let value = value.as_bytes();
    let Some(given) = value
        .strip_prefix(b"Bearer ")
        .or_else(|| value.strip_prefix(b"bearer "))
    else {
        return false;
    };
    constant_time_eq(given, expected)
}

/// Equal lengths and bytes, in time independent of where they differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn unauthorized() -> hyper::Response<BoxBody> {
    let mut r = hyper::Response::new(
        Full::new(Bytes::from_static(
            b"401 Unauthorized: send Authorization: Bearer <token> (the token wasmgate serve was given)\n",
        ))
        .boxed(),
    );
    *r.status_mut() = hyper::StatusCode::UNAUTHORIZED;
    r.headers_mut().insert(
        hyper::header::WWW_AUTHENTICATE,
        hyper::header::HeaderValue::from_static("Bearer"),
    );
    r
}

fn not_found() -> hyper::Response<BoxBody> {
    let mut r = hyper::Response::new(
        Full::new(Bytes::from_static(
            b"404 Not Found: the MCP endpoint is /mcp\n",
        ))
        .boxed(),
    );
    *r.status_mut() = hyper::StatusCode::NOT_FOUND;
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_time_eq_compares_bytes_and_lengths() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
        assert!(!constant_time_eq(b"", b"a"));
    }

    #[tokio::test]
    async fn non_loopback_addresses_are_refused() {
        let addr: SocketAddr = "0.0.0.0:0".parse().unwrap();
        let e = bind_loopback(addr).await.unwrap_err();
        assert!(e.to_string().contains("only on loopback"), "{e}");
        let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
        assert!(bind_loopback(addr).await.is_ok());
    }
}
