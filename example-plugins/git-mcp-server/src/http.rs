//! `git-mcp-server --http 127.0.0.1:PORT [--server-json FILE]`: the same
//! tools over MCP streamable HTTP (endpoint `/mcp`) on loopback, the way a
//! desktop application hosts its own MCP server.
//!
//! With `GIT_MCP_SERVER_TOKEN` set in the environment, every request must
//! carry `Authorization: Bearer <token>`, else `401 Unauthorized`. With
//! `--server-json FILE`, once listening it writes the application runtime
//! file of `docs/declarations.md` §7 — `{"pid", "http", "token"}` (the
//! default liveness keys) — the way
//! the application would (written to a temporary name, then renamed).
//! Port 0 picks a free port; the runtime file tells which.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tower_service::Service;

use crate::GitServer;

type BoxBody = http_body_util::combinators::BoxBody<Bytes, std::convert::Infallible>;

/// Parses `--http ADDR [--server-json FILE]` and serves until killed.
pub async fn run(args: &[String]) -> anyhow::Result<()> {
    let mut addr: Option<SocketAddr> = None;
    let mut server_json: Option<PathBuf> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--http" => addr = it.next().map(|v| v.parse()).transpose()?,
            "--server-json" => server_json = it.next().map(PathBuf::from),
            other => anyhow::bail!("unknown argument '{other}'"),
        }
    }
    let addr = addr.ok_or_else(|| anyhow::anyhow!("--http needs an address"))?;
    anyhow::ensure!(addr.ip().is_loopback(), "--http serves on loopback only");
    let token: Option<Arc<[u8]>> = std::env::var("GIT_MCP_SERVER_TOKEN")
        .ok()
        .filter(|t| !t.is_empty())
        .map(|t| Arc::from(t.into_bytes()));
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    let url = format!("http://{local}/mcp");
    if let Some(path) = &server_json {
        let body = serde_json::json!({
            "pid": std::process::id(),
            "http": url,
            "token": token.as_ref().map(|t| String::from_utf8_lossy(t).into_owned()).unwrap_or_default(),
        });
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, serde_json::to_vec(&body)?)?;
        std::fs::rename(&tmp, path)?;
    }
    eprintln!("git-mcp-server: streamable HTTP at {url}");
    let mcp = StreamableHttpService::new(
        || Ok(GitServer),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        let mcp = mcp.clone();
        let token = token.clone();
        let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
            let mut mcp = mcp.clone();
            let token = token.clone();
            async move {
                if let Some(expected) = &token
                    && !authorized(&req, expected)
                {
                    return Ok::<_, std::convert::Infallible>(status(
                        hyper::StatusCode::UNAUTHORIZED,
                        "401 Unauthorized: send Authorization: Bearer <token>\n",
                    ));
                }
                if req.uri().path() != "/mcp" {
                    return Ok(status(
                        hyper::StatusCode::NOT_FOUND,
                        "404: the endpoint is /mcp\n",
                    ));
                }
                mcp.call(req).await
            }
        });
        tokio::spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

fn authorized(req: &hyper::Request<Incoming>, expected: &[u8]) -> bool {
    let Some(given) = req
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "))
    else {
        return false;
    };
    given.len() == expected.len()
        && given
            .iter()
            .zip(expected)
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

fn status(code: hyper::StatusCode, text: &'static str) -> hyper::Response<BoxBody> {
    let mut r = hyper::Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *r.status_mut() = code;
    r
}
