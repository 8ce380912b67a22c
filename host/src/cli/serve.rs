//! `wasmgate serve`: the gateway (`docs/mcp-client.md` §7) over stdio, or
//! over streamable HTTP on loopback with `--http 127.0.0.1:PORT`.
//!
//! The bearer token for HTTP comes from `--token-file FILE` or the
//! `WASMGATE_TOKEN` environment variable — never from the command line, where
//! other users of the machine could read it in the process list.
//!
//! HTTP bounds (docs/security.md, "Gateway bounds"): `--max-connections`,
//! `--header-timeout`, `--max-sessions`, `--session-idle-seconds`. The
//! client's `initialize` is answered at once; servers connect in the
//! background and late ones are announced with `tools/list_changed`.
//!
//! Re-evaluation: every `--refresh-seconds` (default 30; 0 = off), when a
//! plugin folder changes, and on `SIGHUP` (unix). Stops at the end of stdin
//! (stdio), or on Ctrl-C / `SIGTERM`; every server child is ended.

use crate::gateway::{self, Gateway, GatewayOptions};
use crate::host::HostOptions;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Environment variable holding the HTTP bearer token.
pub const TOKEN_ENV: &str = "WASMGATE_TOKEN";

/// Arguments of `wasmgate serve`.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// Serve MCP streamable HTTP at http://ADDR/mcp instead of stdio. Loopback
    /// only, e.g. `127.0.0.1:8765` (port 0 picks a free port; the address is
    /// printed on stderr).
    /// `localhost:PORT` means `127.0.0.1:PORT`; any other address is a usage
    /// error (exit 2).
    #[arg(long, value_name = "ADDR", value_parser = parse_http_addr)]
    pub http: Option<SocketAddr>,
    /// A file whose content (trimmed) is the bearer token HTTP clients must
    /// send. Default: $WASMGATE_TOKEN; neither = no token.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Re-evaluate plugins and availability every N seconds (0 = only on a
    /// plugin folder change or SIGHUP).
    #[arg(long, value_name = "N", default_value_t = 30)]
    pub refresh_seconds: u64,
    /// HTTP: open connections at most. At the cap a new connection closes
    /// the oldest one that never sent an authorized request; if all have,
    /// the new one is closed.
    #[arg(long, value_name = "N", default_value_t = gateway::http::DEFAULT_MAX_CONNECTIONS as u64,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub max_connections: u64,
    /// HTTP: seconds a client has to send a request's headers (also the
    /// longest a connection may sit idle between requests).
    #[arg(long, value_name = "SECONDS", default_value_t = gateway::http::DEFAULT_HEADER_TIMEOUT_SECS,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub header_timeout: u64,
    /// HTTP: MCP sessions at most; an initialize beyond it gets 503.
    #[arg(long, value_name = "N", default_value_t = gateway::http::DEFAULT_MAX_SESSIONS as u64,
          value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub max_sessions: u64,
    /// HTTP: a session with no request for this many seconds is ended (its
    /// client initializes a new one).
    #[arg(long, value_name = "SECONDS", default_value_t = gateway::http::DEFAULT_SESSION_IDLE_SECS,
          value_parser = clap::value_parser!(u64).range(1..=604_800))]
    pub session_idle_seconds: u64,
    /// Keep every tool name within AGENT's limit after the prefix AGENT
    /// adds (Claude Code and Codex show `mcp__wasmgate__<tool>` and cap it
    /// at 64), with the same hashed form and collision rule
    /// (docs/mcp-client.md §2.3). `wasmgate setup` sets it.
    #[arg(long, value_name = "AGENT",
          value_parser = clap::builder::PossibleValuesParser::new(crate::naming::BUDGET_AGENTS))]
    pub name_budget: Option<String>,
    /// How upstream tools and prompts are named: `always` (default,
    /// `mcp_<server>_<name>`) or `never` (each server's own names, for a
    /// gateway in front of one server). `never` is refused, with the
    /// collisions listed, when two servers offer the same name; it waits
    /// for the servers to connect before answering (docs/mcp-client.md §7).
    #[arg(long, value_name = "MODE", default_value = "always", value_parser = parse_prefix)]
    pub prefix: gateway::PrefixMode,
    /// Also offer the tool `wasmgate_not_offered`, which returns the text
    /// of the resource `wasmgate://not-offered` (the plugin applications
    /// this machine does not offer, and why), for agents that read no
    /// resources (docs/mcp-client.md §7). Off by default.
    #[arg(long)]
    pub not_offered_tool: bool,
}

/// Parses `--prefix`: `always` or `never`.
pub fn parse_prefix(s: &str) -> Result<gateway::PrefixMode, String> {
    match s {
        "always" => Ok(gateway::PrefixMode::Always),
        "never" => Ok(gateway::PrefixMode::Never),
        _ => Err(format!("expected `always` or `never`, not `{s}`")),
    }
}

impl ServeArgs {
    /// The HTTP listener's bounds from the flags.
    pub fn http_limits(&self) -> gateway::http::HttpLimits {
        gateway::http::HttpLimits {
            // Ranges checked by clap: they fit a usize.
            max_connections: usize::try_from(self.max_connections).unwrap_or(usize::MAX),
            header_timeout: Duration::from_secs(self.header_timeout),
            max_sessions: usize::try_from(self.max_sessions).unwrap_or(usize::MAX),
            session_idle: Duration::from_secs(self.session_idle_seconds),
        }
    }
}

/// Parses `--http`: `IP:PORT` or `localhost:PORT` (read as `127.0.0.1`).
/// Errors: not an address, or not a loopback one (the gateway runs local
/// applications for whoever connects; `docs/mcp-client.md` §7).
pub fn parse_http_addr(s: &str) -> Result<SocketAddr, String> {
    let localhost_port = s
        .split_once(':')
        .filter(|(host, _)| host.eq_ignore_ascii_case("localhost"))
        .map(|(_, port)| port);
    let addr = match localhost_port {
        Some(port) => port
            .parse::<u16>()
            .map(|p| SocketAddr::from(([127, 0, 0, 1], p)))
            .map_err(|_| format!("`{port}` is not a port number (0-65535)"))?,
        None => s.parse::<SocketAddr>().map_err(|_| {
            "expected IP:PORT on loopback, e.g. 127.0.0.1:8765, [::1]:8765 or localhost:8765"
                .to_string()
        })?,
    };
    if !addr.ip().is_loopback() {
        return Err(format!(
            "{addr} is not loopback: wasmgate serves only on 127.0.0.1, [::1] or localhost; \
             it runs local applications for whoever connects"
        ));
    }
    Ok(addr)
}

/// Longest bearer token accepted, in bytes: HTTP clients and servers cap a
/// header line at a few KiB.
pub const MAX_TOKEN_BYTES: usize = 4096;

/// Reads the bearer token: `--token-file`, else `$WASMGATE_TOKEN`, else none.
/// Surrounding white space (a trailing newline) is dropped. Errors: the file
/// cannot be read; the token is empty, longer than [`MAX_TOKEN_BYTES`], or
/// holds anything but visible ASCII (a space or a second line could never be
/// sent in an `Authorization` header). The token is never in an error.
pub fn read_token(file: Option<&Path>) -> anyhow::Result<Option<String>> {
    use std::io::Read;
    let (token, from) = match file {
        Some(f) => {
            let from = format!("--token-file {}", f.display());
            let mut bytes = Vec::new();
            std::fs::File::open(f)
                .and_then(|file| {
                    file.take(MAX_TOKEN_BYTES as u64 * 2 + 64)
                        .read_to_end(&mut bytes)
                })
                .map_err(|e| anyhow::anyhow!("{from}: {e}"))?;
            let text = String::from_utf8(bytes)
                .map_err(|_| anyhow::anyhow!("{from}: the token is not UTF-8 text"))?;
            (text, from)
        }
        None => match std::env::var(TOKEN_ENV) {
            Ok(t) => (t, format!("${TOKEN_ENV}")),
            Err(_) => return Ok(None),
        },
    };
    let token = token.trim();
    if token.is_empty() {
        anyhow::bail!("{from}: the token is empty");
    }
    if token.len() > MAX_TOKEN_BYTES {
        anyhow::bail!("{from}: the token is longer than {MAX_TOKEN_BYTES} bytes");
    }
    if let Some(c) = token.chars().find(|c| !c.is_ascii_graphic()) {
        let what = match c {
            '\n' | '\r' => "a line break".to_string(),
            ' ' | '\t' => "white space".to_string(),
            c => format!("the character U+{:04X}", c as u32),
        };
        anyhow::bail!(
            "{from}: the token holds {what}; it must be one word of visible ASCII (it is sent as `Authorization: Bearer <token>`)"
        );
    }
    Ok(Some(token.to_owned()))
}

/// The warning for a token file that other users may read (unix: any
/// group or other permission bit), naming its mode and the fix; `None` when
/// only its owner can read it, or it cannot be inspected (reading it then
/// reports the error).
pub fn token_file_warning(path: &Path) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o777;
        (mode & 0o077 != 0).then(|| {
            format!(
                "--token-file {} can be read by other users (mode {mode:03o}); anyone who reads it can call every offered tool: run `chmod 600 {}`",
                crate::terminal::line(&path.display().to_string()),
                crate::terminal::line(&path.display().to_string())
            )
        })
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// Runs `wasmgate serve`; returns the exit code.
pub async fn run(mut host: HostOptions, args: &ServeArgs) -> anyhow::Result<u8> {
    if let Some(agent) = &args.name_budget {
        host.client.name_budget =
            crate::naming::agent_name_budget(agent, crate::cli::agents::ENTRY_NAME);
    }
    if let Some(w) = args.token_file.as_deref().and_then(token_file_warning) {
        eprintln!("wasmgate serve: warning: {w}");
    }
    let token = match read_token(args.token_file.as_deref()) {
        Ok(t) => t,
        Err(e) => {
            // A bad token source is a usage error, like a bad --http.
            eprintln!("wasmgate serve: {e:#}");
            return Ok(2);
        }
    };
    let listener = match args.http {
        Some(addr) => Some(gateway::http::bind_loopback(addr).await?),
        None => {
            if token.is_some() && args.token_file.is_some() {
                tracing::warn!("--token-file applies to --http only; stdio has no token");
            }
            None
        }
    };
    let options = GatewayOptions {
        host,
        refresh_every: (args.refresh_seconds > 0)
            .then(|| Duration::from_secs(args.refresh_seconds)),
        // The client's initialize is answered at once; servers that connect
        // later are announced with tools/list_changed (a slow or silent
        // server must not hold up the agent's start).
        // `--prefix never` needs every server's names before it may offer
        // them unprefixed, so it connects first.
        discover_in_background: args.prefix == gateway::PrefixMode::Always,
        prefix: args.prefix,
        not_offered_tool: args.not_offered_tool,
        ..GatewayOptions::new()
    };
    let gw = Gateway::start(options).await?;
    if args.prefix == gateway::PrefixMode::Never {
        let collisions = gw.prefix_collisions().await;
        if !collisions.is_empty() {
            eprintln!(
                "wasmgate serve: --prefix never: two servers offer the same name, so names \
                 need the server prefix (use --prefix always):"
            );
            for c in &collisions {
                eprintln!("  {c}");
            }
            gw.shutdown().await;
            return Ok(2);
        }
    }
    // Bounded: a plugin's file of thousands of bad entries must not fill
    // the agent's MCP log.
    for list in [gw.host().problems(), gw.host().warnings()] {
        for p in crate::terminal::listed(list, " (`wasmgate status --json` lists all)") {
            tracing::warn!("{p}");
        }
    }
    let watch = tokio::spawn(gw.clone().watch());
    let stop = CancellationToken::new();
    let signals = tokio::spawn(handle_signals(gw.clone(), stop.clone()));

    let result = match listener {
        Some(listener) => {
            let addr = listener.local_addr()?;
            if token.is_none() {
                // Loopback only, but any local process (and any browser page
                // that can reach it) could call every offered tool.
                eprintln!(
                    "wasmgate serve: warning: no bearer token (--token-file or ${TOKEN_ENV}); \
                     every local process can call the offered tools"
                );
            }
            eprintln!(
                "wasmgate serve: listening on http://{addr}{}",
                gateway::http::MCP_PATH
            );
            gateway::http::serve_http(
                gw.clone(),
                listener,
                token,
                args.http_limits(),
                stop.clone(),
            )
            .await;
            Ok(())
        }
        None => tokio::select! {
            r = gateway::serve_stdio(gw.clone()) => r.map_err(anyhow::Error::from),
            () = stop.cancelled() => Ok(()),
        },
    };
    watch.abort();
    signals.abort();
    gw.shutdown().await;
    result.map(|()| 0)
}

/// Ctrl-C and SIGTERM stop; SIGHUP refreshes (unix).
async fn handle_signals(gw: Gateway, stop: CancellationToken) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut hup), Ok(mut term)) = (
            signal(SignalKind::hangup()),
            signal(SignalKind::terminate()),
        ) else {
            let _ = tokio::signal::ctrl_c().await;
            stop.cancel();
            return;
        };
        loop {
            tokio::select! {
                _ = hup.recv() => {
                    tracing::info!("SIGHUP: re-evaluating plugins and availability");
                    if let Err(e) = gw.refresh().await {
                        tracing::warn!("refresh failed: {e:#}");
                    }
                }
                _ = term.recv() => break,
                _ = tokio::signal::ctrl_c() => break,
            }
        }
        stop.cancel();
    }
    #[cfg(not(unix))]
    {
        let _ = gw;
        let _ = tokio::signal::ctrl_c().await;
        stop.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::parse_http_addr;

    #[test]
    #[cfg(unix)]
    fn a_token_file_others_can_read_is_warned_about() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("t");
        std::fs::write(&f, "tok").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(super::token_file_warning(&f), None);
        for mode in [0o640, 0o604, 0o644] {
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode)).unwrap();
            let w = super::token_file_warning(&f).expect("a warning");
            assert!(w.contains(&format!("mode {mode:03o}")), "{w}");
            assert!(w.contains("chmod 600"), "{w}");
        }
    }

    #[test]
    fn tokens_are_one_word_of_visible_ascii_and_never_echoed() {
        use super::read_token;
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("t");
        std::fs::write(&f, "s3cret-Tok_en.42\n").unwrap();
        assert_eq!(
            read_token(Some(&f)).unwrap().as_deref(),
            Some("s3cret-Tok_en.42")
        );
        for (content, want) in [
            ("tok\nsecond\n", "a line break"),
            ("two words", "white space"),
            ("caf\u{e9}", "U+00E9"),
            ("   \n", "is empty"),
        ] {
            std::fs::write(&f, content).unwrap();
            let e = read_token(Some(&f)).unwrap_err().to_string();
            assert!(e.contains(want), "{content:?}: {e}");
            assert!(!e.contains("second") && !e.contains("words"), "{e}");
        }
        std::fs::write(&f, "x".repeat(20 << 20)).unwrap();
        let e = read_token(Some(&f)).unwrap_err().to_string();
        assert!(e.contains("longer than 4096 bytes"), "{e}");
        let e = read_token(Some(&dir.path().join("missing"))).unwrap_err();
        assert!(e.to_string().contains("--token-file"), "{e}");
    }

    #[test]
    fn the_http_bounds_default_to_the_documented_values_and_refuse_zero() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            serve: super::ServeArgs,
        }
        let cli = Cli::try_parse_from(["serve"]).unwrap();
        assert_eq!(
            cli.serve.http_limits(),
            crate::gateway::http::HttpLimits::default()
        );
        let cli = Cli::try_parse_from([
            "serve",
            "--max-connections",
            "16",
            "--header-timeout",
            "2",
            "--max-sessions",
            "3",
            "--session-idle-seconds",
            "60",
        ])
        .unwrap();
        let l = cli.serve.http_limits();
        assert_eq!(
            (
                l.max_connections,
                l.header_timeout.as_secs(),
                l.max_sessions,
                l.session_idle.as_secs()
            ),
            (16, 2, 3, 60)
        );
        for flag in [
            "--max-connections",
            "--header-timeout",
            "--max-sessions",
            "--session-idle-seconds",
        ] {
            let e = Cli::try_parse_from(["serve", flag, "0"])
                .err()
                .unwrap()
                .to_string();
            assert!(e.contains(flag) && e.contains('0'), "{e}");
        }
    }

    #[test]
    fn http_addresses_are_loopback_ip_port_or_localhost() {
        assert_eq!(
            parse_http_addr("localhost:8765").unwrap().to_string(),
            "127.0.0.1:8765"
        );
        assert_eq!(parse_http_addr("[::1]:0").unwrap().to_string(), "[::1]:0");
        assert_eq!(
            parse_http_addr("LocalHost:80").unwrap().to_string(),
            "127.0.0.1:80"
        );
        assert_eq!(
            parse_http_addr("127.0.0.1:9").unwrap().to_string(),
            "127.0.0.1:9"
        );
        let e = parse_http_addr("0.0.0.0:80").unwrap_err();
        assert!(e.contains("not loopback"), "{e}");
        let e = parse_http_addr("localhost:http").unwrap_err();
        assert!(e.contains("not a port number"), "{e}");
        let e = parse_http_addr("example.com:80").unwrap_err();
        assert!(e.contains("expected IP:PORT"), "{e}");
    }
}
