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
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
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

/// Bounds of the HTTP listener (docs/security.md, "Gateway bounds"). Each
/// is a flag of `wasmgate serve`; the defaults suit a local gateway with a
/// few agents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpLimits {
    /// Open connections at most (`--max-connections`). At the cap, a new
    /// connection closes the oldest one that has not yet sent an authorized
    /// request (a slowloris or idle probe); if every open one has, the new
    /// connection is closed at once.
    pub max_connections: usize,
    /// Time a client has to send a request's headers (`--header-timeout`),
    /// also the longest a connection may sit idle between requests.
    pub header_timeout: Duration,
    /// MCP sessions at most (`--max-sessions`); an `initialize` beyond it
    /// gets `503 Service Unavailable`.
    pub max_sessions: usize,
    /// A session with no request for this long is ended
    /// (`--session-idle-seconds`); its client gets `404` and initializes a
    /// new one, as the MCP transport spec says.
    pub session_idle: Duration,
}

/// Default [`HttpLimits::max_connections`].
pub const DEFAULT_MAX_CONNECTIONS: usize = 64;
/// Default [`HttpLimits::header_timeout`], seconds.
pub const DEFAULT_HEADER_TIMEOUT_SECS: u64 = 10;
/// Default [`HttpLimits::max_sessions`].
pub const DEFAULT_MAX_SESSIONS: usize = 32;
/// Default [`HttpLimits::session_idle`], seconds.
pub const DEFAULT_SESSION_IDLE_SECS: u64 = 1800;

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_timeout: Duration::from_secs(DEFAULT_HEADER_TIMEOUT_SECS),
            max_sessions: DEFAULT_MAX_SESSIONS,
            session_idle: Duration::from_secs(DEFAULT_SESSION_IDLE_SECS),
        }
    }
}

/// The open connections, oldest first, and whether each has sent an
/// authorized request (only those that have not may be closed for a
/// newcomer).
#[derive(Default)]
struct Connections {
    next: u64,
    open: BTreeMap<u64, Conn>,
}

struct Conn {
    trusted: Arc<AtomicBool>,
    close: CancellationToken,
}

impl Connections {
    /// Closes the oldest connection that never sent an authorized request.
    /// Returns whether there was one.
    fn evict_untrusted(&mut self) -> bool {
        let victim = self
            .open
            .iter()
            .find(|(_, c)| !c.trusted.load(Ordering::Relaxed))
            .map(|(id, _)| *id);
        match victim.and_then(|id| self.open.remove(&id)) {
            Some(c) => {
                c.close.cancel();
                true
            }
            None => false,
        }
    }
}

/// Removes its connection from the table when the connection task ends.
struct ConnGuard {
    table: Arc<Mutex<Connections>>,
    id: u64,
}

impl Drop for ConnGuard {
    fn drop(&mut self) {
        lock(&self.table).open.remove(&self.id);
    }
}

/// At most one warning per this period about refused or failed accepts;
/// the next one says how many were left out.
const ACCEPT_LOG_EVERY: Duration = Duration::from_secs(10);
/// Longest back-off after an accept error (too many open files, …).
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// A rate-limited warning: the first at once, then one per
/// [`ACCEPT_LOG_EVERY`] with the count of those in between.
struct RateLog {
    last: Option<Instant>,
    skipped: u64,
}

impl RateLog {
    fn warn(&mut self, msg: &str) {
        let now = Instant::now();
        if self
            .last
            .is_some_and(|t| now.duration_since(t) < ACCEPT_LOG_EVERY)
        {
            self.skipped += 1;
            return;
        }
        if self.skipped > 0 {
            tracing::warn!("gateway http: {msg} (and {} more like it)", self.skipped);
        } else {
            tracing::warn!("gateway http: {msg}");
        }
        self.last = Some(now);
        self.skipped = 0;
    }
}

/// Whether an accept error means the process or system is out of file
/// descriptors (EMFILE / ENFILE).
fn out_of_files(e: &std::io::Error) -> bool {
    #[cfg(unix)]
    {
        matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE))
    }
    #[cfg(not(unix))]
    {
        let _ = e;
        false
    }
}

/// Serves the gateway on `listener` until `stop` is cancelled. `token`:
/// the bearer token every request must carry (`None` = no check); `limits`:
/// connection, header, session bounds ([`HttpLimits`]). Nothing ends it but
/// `stop`: a failed accept is logged and retried after a back-off, a failed
/// connection ends that connection only.
pub async fn serve_http(
    gateway: Gateway,
    listener: TcpListener,
    token: Option<String>,
    limits: HttpLimits,
    stop: CancellationToken,
) {
    // A browser page sends its Origin; only pages served from loopback may
    // call (DNS rebinding, MCP transport spec "Security Warning"). Clients
    // that are not browsers send no Origin and pass.
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(stop.child_token())
        .with_allowed_origins(ALLOWED_ORIGINS.iter().copied())
        .enforce_origin_validation();
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(limits.session_idle);
    let sessions = Arc::new(sessions);
    let mcp = StreamableHttpService::new(move || Ok(gateway.handler()), sessions.clone(), config);
    let token: Option<Arc<[u8]>> = token.map(|t| Arc::from(t.into_bytes()));
    let table = Arc::new(Mutex::new(Connections::default()));
    let mut log = RateLog {
        last: None,
        skipped: 0,
    };
    let mut backoff = Duration::ZERO;
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        let (stream, _peer) = tokio::select! {
            () = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => {
                    backoff = Duration::ZERO;
                    a
                }
                Err(e) => {
                    // Out of descriptors: free one held by a connection that
                    // never authorized, and back off, so the loop does not
                    // spin on an error that repeats at once.
                    let freed = out_of_files(&e) && lock(&table).evict_untrusted();
                    backoff = (backoff * 2).clamp(Duration::from_millis(10), ACCEPT_BACKOFF_MAX);
                    log.warn(&format!(
                        "accept failed: {e}{}; retrying in {} ms",
                        if freed { " (closed the oldest unauthorized connection)" } else { "" },
                        backoff.as_millis()
                    ));
                    tokio::select! {
                        () = stop.cancelled() => break,
                        () = tokio::time::sleep(backoff) => {}
                    }
                    continue;
                }
            },
        };
        let trusted = Arc::new(AtomicBool::new(false));
        let close = stop.child_token();
        let id = {
            let mut t = lock(&table);
            if t.open.len() >= limits.max_connections.max(1) && !t.evict_untrusted() {
                drop(t);
                drop(stream);
                log.warn(&format!(
                    "{} connections are open, all authorized; a new one was closed \
                     (--max-connections)",
                    limits.max_connections
                ));
                continue;
            }
            let id = t.next;
            t.next += 1;
            t.open.insert(
                id,
                Conn {
                    trusted: trusted.clone(),
                    close: close.clone(),
                },
            );
            id
        };
        let guard = ConnGuard {
            table: table.clone(),
            id,
        };
        let mcp = mcp.clone();
        let token = token.clone();
        let sessions = sessions.clone();
        let max_sessions = limits.max_sessions;
        let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
            let mut mcp = mcp.clone();
            let token = token.clone();
            let trusted = trusted.clone();
            let sessions = sessions.clone();
            let respond = async move {
                if let Some(expected) = &token
                    && !authorized(&req, expected)
                {
                    return Ok::<_, std::convert::Infallible>(unauthorized());
                }
                if req.uri().path() != MCP_PATH {
                    return Ok(not_found());
                }
                trusted.store(true, Ordering::Relaxed);
                let session = req
                    .headers()
                    .get(HEADER_SESSION_ID)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                let method = req.method();
                if method == hyper::Method::DELETE
                    && let Some(id) = &session
                    && !sessions.sessions.read().await.contains_key(id.as_str())
                {
                    return Ok(no_session());
                }
                // A POST without a session starts one.
                if method == hyper::Method::POST
                    && session.is_none()
                    && sessions.sessions.read().await.len() >= max_sessions
                {
                    return Ok(too_many_sessions(max_sessions));
                }
                mcp.call(req).await
            };
            async move { respond.await.map(close_after_error) }
        });
        let header_timeout = limits.header_timeout;
        tasks.spawn(async move {
            let _guard = guard;
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(header_timeout);
            let conn = builder.serve_connection(TokioIo::new(stream), service);
            tokio::pin!(conn);
            tokio::select! {
                r = conn.as_mut() => {
                    if let Err(e) = r {
                        tracing::debug!("gateway http: connection ended: {e}");
                    }
                }
                // Evicted for a newcomer, or the server stops.
                () = close.cancelled() => conn.as_mut().graceful_shutdown(),
            }
        });
        // Reap finished connections so the set does not grow.
        while tasks.try_join_next().is_some() {}
    }
    tasks.abort_all();
}

/// The streamable HTTP session header.
const HEADER_SESSION_ID: &str = "mcp-session-id";

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
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

/// An error answer closes its connection, and says so (`Connection:
/// close`): it is given before the request's body is read (the bearer
/// check, rmcp's Origin check), and hyper then closes the connection after
/// the answer, so a client that sent its next request on the same
/// connection got no answer at all (the Python SDK's `httpx`: "Server
/// disconnected without sending a response" after a refused Origin).
fn close_after_error<B>(mut r: hyper::Response<B>) -> hyper::Response<B> {
    if r.status().is_client_error() || r.status().is_server_error() {
        r.headers_mut().insert(
            hyper::header::CONNECTION,
            hyper::header::HeaderValue::from_static("close"),
        );
    }
    r
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

fn no_session() -> hyper::Response<BoxBody> {
    let mut r = hyper::Response::new(
        Full::new(Bytes::from_static(
            b"404 Not Found: no such MCP session (it ended or expired); send initialize for a new one\n",
        ))
        .boxed(),
    );
    *r.status_mut() = hyper::StatusCode::NOT_FOUND;
    r
}

fn too_many_sessions(max: usize) -> hyper::Response<BoxBody> {
    let mut r = hyper::Response::new(
        Full::new(Bytes::from(format!(
            "503 Service Unavailable: wasmgate serve already holds {max} MCP sessions \
             (--max-sessions); end one (DELETE) or wait for an idle one to expire\n"
        )))
        .boxed(),
    );
    *r.status_mut() = hyper::StatusCode::SERVICE_UNAVAILABLE;
    r.headers_mut().insert(
        hyper::header::RETRY_AFTER,
        hyper::header::HeaderValue::from_static("10"),
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

    #[test]
    fn at_the_cap_the_oldest_connection_that_never_authorized_goes_first() {
        let mut t = Connections::default();
        let mut tokens = Vec::new();
        for id in 0..4 {
            let trusted = Arc::new(AtomicBool::new(id == 0 || id == 2));
            let close = CancellationToken::new();
            tokens.push(close.clone());
            t.open.insert(id, Conn { trusted, close });
        }
        assert!(t.evict_untrusted());
        assert!(tokens[1].is_cancelled() && !tokens[0].is_cancelled());
        assert!(t.evict_untrusted());
        assert!(tokens[3].is_cancelled() && !tokens[2].is_cancelled());
        // Only authorized ones are left: nothing is closed for a newcomer.
        assert!(!t.evict_untrusted());
        assert_eq!(t.open.len(), 2);
    }

    #[test]
    fn accept_warnings_are_one_per_period_with_a_count() {
        let mut log = RateLog {
            last: None,
            skipped: 0,
        };
        for _ in 0..10_000 {
            log.warn("accept failed");
        }
        assert_eq!(log.skipped, 9_999, "only the first one was written");
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
