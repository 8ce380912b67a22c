//! Opening one server's transport and its MCP session (`docs/mcp-client.md`
//! §2 connect, §4 stdio environment), and the troubleshooting messages
//! for every way that can fail.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[cfg(unix)]
use process_wrap::tokio::ProcessGroup;
use process_wrap::tokio::{ChildWrapper, CommandWrap, KillOnDrop};
use rmcp::RoleClient;
use rmcp::service::{Peer, RunningService, ServiceExt};
use tokio::io::AsyncBufReadExt;

use super::handler::Handler;
use crate::child_env::child_env_from_host;
use crate::manifest::server::{ServerSpec, Transport};
use crate::secret::Redactor;

/// Smallest limit for one stdio message from a server, in bytes (a larger
/// result is read whole, then cut to `max_result_bytes`).
pub const MIN_STDIO_MESSAGE_BYTES: usize = 64 * 1024 * 1024;
/// Lines of a child's stderr kept for error messages.
const STDERR_TAIL_LINES: usize = 20;
/// Longest stderr line kept or logged, in bytes; the rest of a longer line
/// is skipped unread into memory and the line says how much was cut. The
/// kept tail is then at most `STDERR_TAIL_LINES` × this (docs/security.md,
/// "MCP client bounds").
pub const MAX_STDERR_LINE_BYTES: usize = 4096;
/// How long a child that failed its handshake gets to exit before it is
/// considered alive (so its exit status can be reported).
const EXIT_GRACE: Duration = Duration::from_millis(500);
/// How long a child gets to exit after its stdin closes at shutdown before
/// its process group is killed.
pub(crate) const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Why a server could not be connected. The client wraps it as
/// `failed to connect to MCP server '<name>': <cause>`, redacted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The stdio `command` is not on the child's PATH (or the path given does
    /// not name an executable file).
    #[error(
        "command '{command}' was not found on PATH; install it or give its absolute path as `command`{}",
        launcher_hint(.command)
    )]
    CommandNotFound {
        /// The configured command.
        command: String,
    },
    /// `command` is a path (it has a folder separator) that names no
    /// runnable file.
    #[error(
        "command '{command}' {reason}; `command` must name an executable file (or a program on PATH)"
    )]
    CommandUnusable {
        /// The configured command.
        command: String,
        /// Why: "does not exist", "is a folder", "is not executable".
        reason: &'static str,
    },
    /// An `npx`/`uvx`-style launcher ran but could not find the package.
    #[error(
        "{launcher} could not find the server's package ({detail}); check the package name in `args`{}",
        if .launcher == "npx" && !.yes_given { ", and pass `-y` so npx installs it without asking" } else { "" }
    )]
    PackageNotFound {
        /// The launcher (`npx`, `uvx`, …).
        launcher: String,
        /// The launcher's own error line.
        detail: String,
        /// Whether `args` already has npx's `-y` / `--yes` (then the
        /// message does not suggest it).
        yes_given: bool,
    },
    /// The process could not be started.
    #[error("cannot start '{command}': {message}")]
    Spawn {
        /// The configured command.
        command: String,
        /// The OS error.
        message: String,
    },
    /// The process exited before the MCP handshake finished.
    #[error(
        "the server process exited during start-up ({status}); {}",
        stderr_tail(.stderr)
    )]
    ExitedAtStart {
        /// Exit status as the OS reports it (`exit status: 3`).
        status: String,
        /// The last lines of its stderr, if any.
        stderr: Option<String>,
    },
    /// No answer to `initialize` + `tools/list` within `connect_timeout`.
    #[error(
        "timed out after {seconds} s waiting for initialize and tools/list; the server may be slow to start: raise `connect_timeout` in its entry (now {seconds} s)"
    )]
    Timeout {
        /// The configured `connect_timeout`, in seconds.
        seconds: f64,
    },
    /// The server wrote lines to stdout that are not JSON-RPC (stdout must
    /// carry only MCP messages), and the handshake did not complete.
    #[error(
        "the server wrote something that is not MCP JSON-RPC to stdout ('{line}'); stdout must carry only MCP messages (a server logs to stderr)"
    )]
    NotMcp {
        /// The first such line (cut to 200 characters, redacted).
        line: String,
    },
    /// The handshake failed (the server answered something that is not MCP).
    #[error("the MCP handshake failed: {message}")]
    Protocol {
        /// What went wrong.
        message: String,
    },
    /// `tools/list` failed after a good handshake.
    #[error("tools/list failed: {message}")]
    ListTools {
        /// What went wrong.
        message: String,
    },
    /// Nothing listens at the HTTP URL.
    #[error(
        "connection refused at {url}: no server listens there; check that it runs and that the port is right (another program may hold the port the server wanted)"
    )]
    HttpRefused {
        /// The configured URL.
        url: String,
    },
    /// The HTTP request failed in another way.
    #[error("HTTP request to {url} failed: {message}")]
    Http {
        /// The configured URL.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// The TLS handshake with an `https://` server failed; most often its
    /// certificate is not trusted by this machine's trust store.
    #[error(
        "TLS with {url} failed ({detail}); if the server's certificate comes from a private CA, add the CA to this machine's trust store or point SSL_CERT_FILE at a PEM file that holds it"
    )]
    Tls {
        /// The configured URL.
        url: String,
        /// The TLS library's reason (e.g. "certificate verify failed").
        detail: String,
    },
    /// The `url` is not a valid http(s) URL.
    #[error("'{url}' is not a valid http:// or https:// URL")]
    InvalidUrl {
        /// The configured URL.
        url: String,
    },
    /// The server answered with HTTP 401 or 403: it refused the
    /// credentials (the configured `headers`, or the app-endpoint token).
    #[error("{}", http_auth_text(.url, .status, *.app_endpoint))]
    HttpAuth {
        /// The URL dialled (never carries the token).
        url: String,
        /// `401 Unauthorized` or `403 Forbidden`.
        status: String,
        /// The credentials came from a running application's `server_json`
        /// (app-endpoint transport) rather than the entry's `headers`.
        app_endpoint: bool,
    },
    /// The URL speaks the legacy HTTP+SSE transport (MCP 2024-11-05), which
    /// wasmgate does not support (`docs/mcp-client.md` §1).
    #[error(
        "{url} speaks the legacy HTTP+SSE transport (MCP 2024-11-05), which wasmgate does not support; point `url` at the server's streamable HTTP endpoint (often /mcp) or start the server with its streamable HTTP transport, or run it over stdio with `command`"
    )]
    LegacySse {
        /// The configured URL.
        url: String,
    },
    /// App-endpoint transport: the application that hosts the server is not
    /// running, or its `server_json` gives no usable loopback endpoint
    /// (`docs/declarations.md` §7). The detail never carries the token.
    #[error(
        "the application that hosts this server gives no usable endpoint ({detail}); start the application (it writes its server_json with the URL and token when it runs)"
    )]
    AppNotRunning {
        /// Why (`process is not running`, `url host is not loopback`, …).
        detail: String,
    },
    /// An `auth: oauth` server without a usable login: no tokens, or a
    /// refresh the authorization server refused (docs/mcp-client.md §9).
    #[error(
        "{}: {reason}; {}",
        super::oauth::AUTH_REQUIRED,
        super::oauth::login_hint(.server)
    )]
    AuthRequired {
        /// The configured server name (for the `wasmgate login` hint).
        server: String,
        /// Why, in a few words (never a token).
        reason: String,
    },
}

impl ConnectError {
    /// Whether another attempt can help: `false` for errors that a retry
    /// repeats (a missing command or package, a server process that exits
    /// during start-up, a URL that is invalid or not MCP, refused
    /// credentials, the legacy SSE transport); only the others are retried
    /// inside the first connect (`docs/mcp-client.md` §8, "Connecting and
    /// reconnecting").
    pub fn is_permanent(&self) -> bool {
        matches!(
            self,
            ConnectError::CommandNotFound { .. }
                | ConnectError::ExitedAtStart { .. }
                | ConnectError::CommandUnusable { .. }
                | ConnectError::PackageNotFound { .. }
                | ConnectError::Spawn { .. }
                | ConnectError::NotMcp { .. }
                | ConnectError::InvalidUrl { .. }
                | ConnectError::HttpAuth { .. }
                | ConnectError::LegacySse { .. }
                | ConnectError::Tls { .. }
                | ConnectError::Timeout { .. }
                | ConnectError::AuthRequired { .. }
        )
    }

    /// The same error with every text field passed through `redactor`
    /// (the app-endpoint token is only known once `server_json` is read).
    pub(crate) fn redacted(self, redactor: &Redactor) -> ConnectError {
        let r = |s: String| redactor.redact(&s);
        match self {
            ConnectError::PackageNotFound {
                launcher,
                detail,
                yes_given,
            } => ConnectError::PackageNotFound {
                launcher,
                detail: r(detail),
                yes_given,
            },
            ConnectError::Spawn { command, message } => ConnectError::Spawn {
                command,
                message: r(message),
            },
            ConnectError::ExitedAtStart { status, stderr } => ConnectError::ExitedAtStart {
                status,
                stderr: stderr.map(r),
            },
            ConnectError::NotMcp { line } => ConnectError::NotMcp { line: r(line) },
            ConnectError::Protocol { message } => ConnectError::Protocol {
                message: r(message),
            },
            ConnectError::ListTools { message } => ConnectError::ListTools {
                message: r(message),
            },
            ConnectError::Http { url, message } => ConnectError::Http {
                url: r(url),
                message: r(message),
            },
            ConnectError::Tls { url, detail } => ConnectError::Tls {
                url: r(url),
                detail: r(detail),
            },
            ConnectError::AppNotRunning { detail } => {
                ConnectError::AppNotRunning { detail: r(detail) }
            }
            ConnectError::AuthRequired { server, reason } => ConnectError::AuthRequired {
                server,
                reason: r(reason),
            },
            other => other,
        }
    }
}

/// Where a missing launcher comes from (` (npx comes with Node.js)`), or
/// nothing for other commands.
fn launcher_hint(command: &str) -> &'static str {
    match launcher_of(command).as_deref() {
        Some("npx" | "npm" | "node") => " (npx comes with Node.js)",
        Some("uvx" | "uv") => " (uvx comes with uv)",
        _ => "",
    }
}

/// The end of a start-up failure: the server's last stderr lines, or that
/// it wrote none.
fn stderr_tail(stderr: &Option<String>) -> String {
    match stderr {
        Some(s) => format!("its stderr ends with: {s}"),
        None => "it wrote nothing to stderr".to_string(),
    }
}

/// A refused credential, worded for where the credential came from.
fn http_auth_text(url: &str, status: &str, app_endpoint: bool) -> String {
    if app_endpoint {
        format!(
            "the application's endpoint {url} refused the token from its server_json (HTTP {status}); restart the application so it writes a fresh server_json"
        )
    } else {
        format!(
            "the server at {url} refused the credentials (HTTP {status}); check this entry's `headers` (Authorization)"
        )
    }
}

/// The file name of a command without extension (`/usr/bin/npx` → `npx`).
fn launcher_of(command: &str) -> Option<String> {
    Path::new(command)
        .file_stem()
        .map(|s| s.to_string_lossy().to_ascii_lowercase())
}

/// Finds `command` the way the child would: a name with a path separator
/// must be an executable file; a bare name is searched on `path` (the
/// child's PATH; when it is unset, `/bin:/usr/bin` on unix).
pub fn resolve_command(command: &str, path: Option<&str>) -> Option<PathBuf> {
    let is_exec = |p: &Path| -> bool {
        let Ok(meta) = std::fs::metadata(p) else {
            return false;
        };
        if !meta.is_file() {
            return false;
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            meta.permissions().mode() & 0o111 != 0
        }
        #[cfg(not(unix))]
        {
            true
        }
    };
    if command.is_empty() {
        return None;
    }
    if command.contains('/') || command.contains(std::path::MAIN_SEPARATOR) {
        let p = PathBuf::from(command);
        return is_exec(&p).then_some(p);
    }
    let exts: Vec<String> = if cfg!(windows) && Path::new(command).extension().is_none() {
        std::env::var("PATHEXT")
            .unwrap_or_else(|_| ".EXE;.CMD;.BAT;.COM".to_string())
            .split(';')
            .map(|e| e.to_string())
            .collect()
    } else {
        vec![String::new()]
    };
    // An unset PATH searches what `execvp` searches then (the same default
    // as a declaration's `command` location); a set but empty one, nothing.
    #[cfg(unix)]
    let path = Some(path.unwrap_or(crate::resolver::DEFAULT_POSIX_PATH));
    for dir in std::env::split_paths(path?) {
        // Empty and relative entries would search the current folder.
        if !dir.is_absolute() {
            continue;
        }
        for ext in &exts {
            let candidate = dir.join(format!("{command}{ext}"));
            if is_exec(&candidate) {
                return Some(candidate);
            }
        }
    }
    None
}

/// Owns a stdio child (its own process group) and kills the whole group
/// when dropped, so no server outlives the client.
pub(crate) struct ChildGuard {
    child: Option<Box<dyn ChildWrapper>>,
    /// Its exit status once seen (kept after [`ChildGuard::kill`], so a
    /// call that failed with the session can still say how it ended).
    status: Option<String>,
}

impl ChildGuard {
    /// Process id of the child, while it runs.
    pub(crate) fn id(&self) -> Option<u32> {
        self.child.as_ref().and_then(|c| c.id())
    }

    /// `Some(status text)` once the child has exited.
    pub(crate) fn exited(&mut self) -> Option<String> {
        if let Some(s) = &self.status {
            return Some(s.clone());
        }
        let c = self.child.as_mut()?;
        match c.try_wait() {
            Ok(Some(status)) => {
                self.status = Some(status.to_string());
                self.status.clone()
            }
            _ => None,
        }
    }

    /// Kills the child's process group now (SIGKILL on unix) — also when
    /// the child itself already exited: the helpers it started (npx →
    /// node) are still in its group and must not be orphaned.
    pub(crate) fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            // The group outlives its leader while members remain; a group
            // that is gone answers ESRCH, which is ignored.
            let _ = c.start_kill();
            // Reap in the background when a runtime is there; tokio reaps
            // orphaned children itself otherwise.
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                handle.spawn(async move {
                    let _ = c.wait().await;
                });
            }
        }
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Reads one line into `buf` (cleared first, line break dropped), keeping
/// at most `max` bytes of it; the rest up to the line break is skipped.
/// `Ok(Some(skipped bytes))`, or `Ok(None)` at the end of the stream.
async fn read_capped_line<R: tokio::io::AsyncBufRead + Unpin>(
    read: &mut R,
    max: usize,
    buf: &mut Vec<u8>,
) -> std::io::Result<Option<usize>> {
    buf.clear();
    let mut skipped = 0;
    let mut any = false;
    loop {
        let chunk = read.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(any.then_some(skipped));
        }
        any = true;
        let (part, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (&chunk[..i], Some(i + 1)),
            None => (chunk, None),
        };
        let room = max.saturating_sub(buf.len());
        buf.extend_from_slice(&part[..part.len().min(room)]);
        skipped += part.len().saturating_sub(room);
        let used = done.unwrap_or(chunk.len());
        read.consume(used);
        if done.is_some() {
            return Ok(Some(skipped));
        }
    }
}

/// The last lines a child wrote to stderr.
pub(crate) type StderrTail = Arc<Mutex<VecDeque<String>>>;

/// The first stdout line of a server that was not JSON-RPC.
pub(crate) type NoiseSlot = Arc<Mutex<Option<String>>>;

/// A spawned child with what is known about its output.
pub(crate) struct ChildParts {
    guard: Arc<Mutex<ChildGuard>>,
    tail: StderrTail,
    noise: NoiseSlot,
}

/// Where `open_stdio` leaves the child as soon as it runs, so a caller whose
/// connect timed out can still inspect and kill it.
pub(crate) type ChildSlot = Mutex<Option<ChildParts>>;

/// Longest stdout noise line kept for an error message, in characters.
const NOISE_CHARS: usize = 200;
/// Bytes of a stdout noise line that are redacted and then cut to
/// [`NOISE_CHARS`] (a secret a few KiB into the line is cut off anyway).
const NOISE_SCAN_BYTES: usize = 16 * 1024;

/// What happens to a stdout line of the child that cannot be JSON-RPC: it
/// is dropped and logged, and the first one is kept for an error message,
/// so a chatty server gets a clear error instead of a silent timeout.
fn stdout_noise(
    server: String,
    redactor: Redactor,
    noise: NoiseSlot,
) -> super::line_transport::NoiseHook {
    Box::new(move |line: &[u8]| {
        // Redact the whole line, then cut: a secret that crosses the cut
        // must not leave its first part behind. The line is at most the
        // transport's line limit; only its first [`NOISE_SCAN_BYTES`] are
        // looked at.
        let line = &line[..line.len().min(NOISE_SCAN_BYTES)];
        let text = redactor.redact(String::from_utf8_lossy(line).trim());
        let text = crate::terminal::cut_chars(&text, NOISE_CHARS);
        tracing::warn!(server = %server, "ignored a stdout line that is not JSON-RPC: {text}");
        if let Ok(mut n) = noise.lock() {
            n.get_or_insert(text);
        }
    })
}

/// A live MCP session with one server.
pub(crate) struct Opened {
    /// The running rmcp client service (owns the transport).
    pub service: RunningService<RoleClient, Handler>,
    /// Request handle.
    pub peer: Peer<RoleClient>,
    /// The stdio child, if any.
    pub child: Option<Arc<Mutex<ChildGuard>>>,
}

/// Waits up to [`EXIT_GRACE`] for the child to exit; returns its status.
pub(crate) async fn exit_status(child: &Arc<Mutex<ChildGuard>>) -> Option<String> {
    let deadline = tokio::time::Instant::now() + EXIT_GRACE;
    loop {
        if let Some(s) = child.lock().ok()?.exited() {
            return Some(s);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Recognizes a launcher's "package not found" in its stderr.
fn package_not_found(command: &str, args: &[String], stderr: &[String]) -> Option<ConnectError> {
    let launcher = launcher_of(command)?;
    let markers: &[&str] = match launcher.as_str() {
        "npx" | "npm" | "pnpm" | "bunx" => {
            &["E404", "404 Not Found", "could not determine executable"]
        }
        "uvx" | "uv" | "pipx" => &[
            "not found in the package registry",
            "No solution found",
            "No matching distribution",
            "Failed to resolve",
        ],
        _ => return None,
    };
    let line = stderr
        .iter()
        .find(|l| markers.iter().any(|m| l.contains(m)))?;
    Some(ConnectError::PackageNotFound {
        launcher,
        detail: line.trim().to_string(),
        yes_given: args.iter().any(|a| a == "-y" || a == "--yes"),
    })
}

/// Spawns a stdio server and runs the MCP handshake (no timeout here; the
/// caller bounds the whole connect by `connect_timeout`). On failure the
/// child is killed.
pub(crate) async fn open_stdio(
    spec: &ServerSpec,
    redactor: &Redactor,
    handler: Handler,
    child_slot: &ChildSlot,
) -> Result<Opened, ConnectError> {
    let Transport::Stdio {
        command,
        args,
        env,
        env_passthrough,
    } = &spec.transport
    else {
        unreachable!("open_stdio is only called for the stdio transport");
    };
    let child_env = child_env_from_host(env, env_passthrough);
    let resolved =
        resolve_command(command, child_env.get("PATH").map(String::as_str)).ok_or_else(|| {
            // A path is not looked up on PATH: say what is wrong with it.
            if command.contains('/') || (cfg!(windows) && command.contains('\\')) {
                let reason = match std::fs::metadata(command) {
                    Err(_) => "does not exist",
                    Ok(m) if m.is_dir() => "is a folder, not a program",
                    Ok(_) => "is not executable",
                };
                ConnectError::CommandUnusable {
                    command: command.clone(),
                    reason,
                }
            } else {
                ConnectError::CommandNotFound {
                    command: command.clone(),
                }
            }
        })?;
    let mut cmd = tokio::process::Command::new(&resolved);
    cmd.args(args)
        .env_clear()
        .envs(&child_env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut wrap = CommandWrap::from(cmd);
    // Its own process group (a job object on Windows), so killing it also
    // ends what it started (npx → node, uvx → python).
    #[cfg(unix)]
    wrap.wrap(ProcessGroup::leader());
    #[cfg(windows)]
    wrap.wrap(process_wrap::tokio::JobObject);
    wrap.wrap(KillOnDrop);
    let mut child = wrap.spawn().map_err(|e| ConnectError::Spawn {
        command: command.clone(),
        message: e.to_string(),
    })?;
    let stdin = child.stdin().take();
    let stdout = child.stdout().take();
    let stderr = child.stderr().take();
    let guard = Arc::new(Mutex::new(ChildGuard {
        child: Some(child),
        status: None,
    }));
    let tail: StderrTail = Arc::new(Mutex::new(VecDeque::new()));
    let noise: NoiseSlot = Arc::new(Mutex::new(None));
    *child_slot.lock().expect("child slot") = Some(ChildParts {
        guard: guard.clone(),
        tail: tail.clone(),
        noise: noise.clone(),
    });
    let (Some(stdin), Some(stdout)) = (stdin, stdout) else {
        return Err(ConnectError::Spawn {
            command: command.clone(),
            message: "stdio pipes were not created".to_string(),
        });
    };
    if let Some(stderr) = stderr {
        let server = spec.name.clone();
        let redactor = redactor.clone();
        let tail = tail.clone();
        tokio::spawn(async move {
            let mut read = tokio::io::BufReader::new(stderr);
            let mut buf = Vec::with_capacity(1024);
            while let Ok(Some(cut)) =
                read_capped_line(&mut read, MAX_STDERR_LINE_BYTES, &mut buf).await
            {
                let mut line = redactor.redact(String::from_utf8_lossy(&buf).trim_end());
                if cut > 0 {
                    line.push_str(&format!(" … [{cut} more bytes of this line left out]"));
                }
                let line = crate::terminal::line(&line).into_owned();
                tracing::info!(target: "wasmgate::mcp::stderr", server = %server, "{line}");
                if let Ok(mut t) = tail.lock() {
                    if t.len() == STDERR_TAIL_LINES {
                        t.pop_front();
                    }
                    t.push_back(line);
                }
            }
            // Every stderr line was logged before this one (tests wait for it).
            tracing::debug!(target: "wasmgate::mcp::stderr", server = %server, "stderr closed");
        });
    }
    // rmcp drops stdio messages over 16 MiB by default, which would leave a
    // call with a big result unanswered until its timeout; allow up to
    // [`MIN_STDIO_MESSAGE_BYTES`] or 4 × max_result_bytes, and let the client
    // cut the result to max_result_bytes afterwards.
    let max_line = MIN_STDIO_MESSAGE_BYTES.max(spec.max_result_bytes.saturating_mul(4));
    // Same framing as rmcp's AsyncRwTransport; tools/call results parsed
    // directly, stdout noise filtered in the same read (docs/performance.md).
    let transport =
        super::line_transport::LineTransport::<RoleClient, _, _>::new(stdout, stdin, max_line)
            .with_noise_hook(stdout_noise(
                spec.name.clone(),
                redactor.clone(),
                noise.clone(),
            ));
    let transport = super::upstream::Tapped::new(transport, handler.tap.clone());
    match handler.serve(transport).await {
        Ok(service) => {
            let peer = service.peer().clone();
            Ok(Opened {
                service,
                peer,
                child: Some(guard),
            })
        }
        Err(e) => {
            let status = exit_status(&guard).await;
            // Let the stderr reader catch the last lines.
            tokio::time::sleep(Duration::from_millis(50)).await;
            let lines: Vec<String> = tail
                .lock()
                .map(|t| t.iter().cloned().collect())
                .unwrap_or_default();
            guard.lock().expect("child guard").kill();
            if let Some(pnf) = package_not_found(command, args, &lines) {
                return Err(pnf);
            }
            match status {
                Some(status) => Err(ConnectError::ExitedAtStart {
                    status,
                    stderr: (!lines.is_empty())
                        .then(|| lines[lines.len().saturating_sub(3)..].join(" | ")),
                }),
                None => match noise.lock().ok().and_then(|n| n.clone()) {
                    Some(line) => Err(ConnectError::NotMcp { line }),
                    None => Err(ConnectError::Protocol {
                        message: e.to_string(),
                    }),
                },
            }
        }
    }
}

/// Splits an `http://host:port/...` URL into `host:port` (default port 80 or
/// 443); `None` when it is not an http(s) URL with a host.
pub fn http_authority(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let default_port = match scheme.to_ascii_lowercase().as_str() {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit('@').next()?;
    if authority.is_empty() {
        return None;
    }
    let has_port = match authority.strip_prefix('[') {
        Some(v6) => v6
            .split_once(']')
            .is_some_and(|(_, rest)| rest.starts_with(':')),
        None => authority.contains(':'),
    };
    if has_port {
        return Some(authority.to_string());
    }
    Some(format!("{authority}:{default_port}"))
}

/// Connects a streamable HTTP server: a TCP preflight (so a refused port
/// gets its own message), then the MCP handshake with the configured headers.
pub(crate) async fn open_http(spec: &ServerSpec, handler: Handler) -> Result<Opened, ConnectError> {
    let Transport::Http { url, headers } = &spec.transport else {
        unreachable!("open_http is only called for the http transport");
    };
    let mut custom = std::collections::HashMap::new();
    for (name, value) in headers {
        // Every header, `Authorization` (Bearer or Basic) included, is sent
        // verbatim; rmcp reserves only its own protocol headers.
        let n = http::HeaderName::from_bytes(name.as_bytes()).map_err(|_| ConnectError::Http {
            url: url.clone(),
            message: format!("header name '{name}' is not valid"),
        })?;
        let v = http::HeaderValue::from_str(value).map_err(|_| ConnectError::Http {
            url: url.clone(),
            message: format!("the value of header '{name}' is not valid in HTTP"),
        })?;
        custom.insert(n, v);
    }
    if let Some(oauth) = &spec.oauth {
        return open_oauth(spec, url, oauth, custom, handler).await;
    }
    open_url(url, custom, false, http_bounds_of(spec), handler).await
}

/// The name and message limit of `spec` for [`super::http_bounds`]: the
/// same bound as one stdio message of that server.
fn http_bounds_of(spec: &ServerSpec) -> (&str, usize) {
    (
        spec.name.as_str(),
        MIN_STDIO_MESSAGE_BYTES.max(spec.max_result_bytes.saturating_mul(4)),
    )
}

/// An `auth: oauth` server (docs/mcp-client.md §9): rmcp's authorized
/// client with the stored login; no login, a refused refresh or a 401 that
/// one refresh does not cure is [`ConnectError::AuthRequired`].
async fn open_oauth(
    spec: &ServerSpec,
    url: &str,
    oauth: &crate::manifest::server::OAuthConfig,
    headers: std::collections::HashMap<http::HeaderName, http::HeaderValue>,
    handler: Handler,
) -> Result<Opened, ConnectError> {
    let auth_required = |reason: String| ConnectError::AuthRequired {
        server: spec.name.clone(),
        reason,
    };
    let direct = is_loopback_url(url);
    let http = http_client(direct, None).map_err(|e| ConnectError::Http {
        url: url.to_string(),
        message: e.to_string(),
    })?;
    let client = super::oauth::authorized_client(&spec.name, url, oauth, http)
        .await
        .map_err(auth_required)?;
    // The authorized client sends through the same bounds as a plain one:
    // rmcp's AuthClient passes the limits on to reqwest's.
    match serve_http(client, url, headers, http_bounds_of(spec), handler).await {
        Ok(opened) => Ok(opened),
        Err(e) => {
            let chain = error_chain(&e);
            if chain.contains("authorization required") || chain.contains("HTTP 401") {
                return Err(auth_required("the server refused the stored login".into()));
            }
            Err(ConnectError::Http {
                url: url.to_string(),
                message: tidy_http_error(&chain),
            })
        }
    }
}

/// The MCP handshake over `client` (reqwest's, or rmcp's authorized client
/// around it) with `headers`, every answer bounded by [`super::http_bounds`]:
/// `(server, message_limit)` are the server's name and the byte bound of
/// one answer, given to rmcp's config too so no path reads past it.
async fn serve_http<C>(
    client: C,
    url: &str,
    headers: std::collections::HashMap<http::HeaderName, http::HeaderValue>,
    (server, message_limit): (&str, usize),
    handler: Handler,
) -> Result<Opened, rmcp::service::ClientInitializeError>
where
    C: rmcp::transport::streamable_http_client::StreamableHttpClient + Sync,
{
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let client = super::http_bounds::BoundedHttpClient::new(client, server, message_limit);
    let config = StreamableHttpClientTransportConfig::with_uri(url)
        .custom_headers(headers)
        .max_sse_event_size(message_limit)
        .max_json_response_size(message_limit);
    let transport = super::upstream::Tapped::new(
        StreamableHttpClientTransport::with_client(client, config),
        handler.tap.clone(),
    );
    let service = handler.serve(transport).await?;
    let peer = service.peer().clone();
    Ok(Opened {
        service,
        peer,
        child: None,
    })
}

/// Connects the app-endpoint transport (`docs/declarations.md` §7): the
/// verified loopback endpoint read from the application's `server_json`,
/// dialled by address (`localhost` is never resolved by name), with
/// `Authorization: Bearer <token>` when the file carried a token.
pub(crate) async fn open_app_endpoint(
    endpoint: &crate::endpoint::Endpoint,
    spec: &ServerSpec,
    handler: Handler,
) -> Result<Opened, ConnectError> {
    let url = format!("http://{}{}", endpoint.dial, endpoint.path);
    let mut custom = std::collections::HashMap::new();
    let token = endpoint.token.expose();
    if !token.is_empty() {
        let mut v = http::HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
            ConnectError::AppNotRunning {
                detail: "token is not header-safe".into(),
            }
        })?;
        v.set_sensitive(true);
        custom.insert(http::header::AUTHORIZATION, v);
    }
    open_url(&url, custom, true, http_bounds_of(spec), handler).await
}

/// The streamable HTTP handshake to `url` with `headers`; a failed
/// handshake is explained (refused port, refused credentials, legacy SSE).
/// `(server, message_limit)`: the server's name and the byte bound of one
/// answer ([`super::http_bounds`]).
async fn open_url(
    url: &str,
    headers: std::collections::HashMap<http::HeaderName, http::HeaderValue>,
    app_endpoint: bool,
    (server, message_limit): (&str, usize),
    handler: Handler,
) -> Result<Opened, ConnectError> {
    let authority = http_authority(url).ok_or_else(|| ConnectError::InvalidUrl {
        url: url.to_string(),
    })?;
    // Loopback and the app endpoint are always dialled directly; a remote
    // server goes through the proxy of HTTP(S)_PROXY unless NO_PROXY names it.
    let direct = app_endpoint || is_loopback_url(url);
    let via_proxy = !direct && proxy_configured(url);
    // A quick look at the port names a refused connection plainly; behind
    // a proxy the name may not even resolve here, so the proxy is asked.
    if !via_proxy {
        match tokio::net::TcpStream::connect(&authority).await {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                return Err(ConnectError::HttpRefused {
                    url: url.to_string(),
                });
            }
            Err(e) => {
                return Err(ConnectError::Http {
                    url: url.to_string(),
                    message: e.to_string(),
                });
            }
        }
    }
    let client = http_client(direct, None).map_err(|e| ConnectError::Http {
        url: url.to_string(),
        message: e.to_string(),
    })?;
    match serve_http(
        client,
        url,
        headers.clone(),
        (server, message_limit),
        handler,
    )
    .await
    {
        Ok(opened) => Ok(opened),
        Err(e) => {
            let raw = e.to_string();
            let chain = error_chain(&e);
            if let Some(detail) = tls_failure(&chain) {
                return Err(ConnectError::Tls {
                    url: url.to_string(),
                    detail,
                });
            }
            for (code, status) in [
                ("HTTP 401", "401 Unauthorized"),
                ("HTTP 403", "403 Forbidden"),
            ] {
                if raw.contains(code) {
                    return Err(ConnectError::HttpAuth {
                        url: url.to_string(),
                        status: status.to_string(),
                        app_endpoint,
                    });
                }
            }
            if speaks_legacy_sse(url, &headers, direct).await {
                return Err(ConnectError::LegacySse {
                    url: url.to_string(),
                });
            }
            let mut message = tidy_http_error(&chain);
            // A TLS server hangs up on a plain HTTP request.
            if url
                .get(..7)
                .is_some_and(|p| p.eq_ignore_ascii_case("http://"))
                && chain.contains("connection closed before message completed")
            {
                message.push_str(" (if the server speaks TLS, use an https:// URL)");
            }
            Err(ConnectError::Http {
                url: url.to_string(),
                message,
            })
        }
    }
}

/// An error and its sources, `outer: inner: …`; a source whose text the
/// previous one already shows is left out (rmcp and reqwest repeat theirs).
/// rmcp names neither the transport error of a failed initialize nor the
/// reqwest error inside `StreamableHttpError::Client` as a source, so the
/// walk steps into both explicitly: that is where a TLS or DNS reason is.
fn error_chain(e: &rmcp::service::ClientInitializeError) -> String {
    use rmcp::service::ClientInitializeError;
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    let mut out = e.to_string();
    let mut next: Option<&(dyn std::error::Error + 'static)> = match e {
        ClientInitializeError::TransportError { error, .. } => Some(error),
        other => std::error::Error::source(other),
    };
    while let Some(s) = next {
        let text = s.to_string();
        if !text.is_empty() && !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        next = match s.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            Some(StreamableHttpError::Client(inner)) => Some(inner as &dyn std::error::Error),
            _ => s.source(),
        };
    }
    out
}

/// The TLS reason in an error chain, when the failure was the TLS
/// handshake: OpenSSL's "certificate verify failed" with its X.509 reason,
/// or the words Secure Transport, SChannel and OpenSSL use for the others.
fn tls_failure(chain: &str) -> Option<String> {
    static X509_REASON: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\(([^()]+)\)\s*$").expect("pattern"));
    static OTHER: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"(?i)(self[- ]signed certificate[^:;)]*|certificate has expired|hostname mismatch|certificate is not trusted|invalid peer certificate[^:;)]*|the certificate chain was issued by an authority that is not trusted|the target principal name is incorrect|wrong version number|tlsv1 alert [a-z ]+|ssl handshake failure|handshake failure)",
        )
        .expect("pattern")
    });
    if chain
        .to_ascii_lowercase()
        .contains("certificate verify failed")
    {
        return Some(match X509_REASON.captures(chain) {
            Some(c) => format!("certificate verify failed: {}", c[1].trim()),
            None => "certificate verify failed".to_string(),
        });
    }
    OTHER.find(chain).map(|m| m.as_str().trim().to_string())
}

/// How long the legacy SSE check waits for the response head.
const SSE_PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// After a failed streamable HTTP handshake: does `url` answer a plain GET
/// with an event stream? A streamable HTTP server opens a GET stream only
/// inside a session (so it refuses a GET without one); a legacy HTTP+SSE
/// server answers it with `text/event-stream` and its `endpoint` event.
async fn speaks_legacy_sse(
    url: &str,
    headers: &std::collections::HashMap<http::HeaderName, http::HeaderValue>,
    direct: bool,
) -> bool {
    let Ok(client) = http_client(direct, Some(SSE_PROBE_TIMEOUT)) else {
        return false;
    };
    let mut req = client
        .get(url)
        .header(http::header::ACCEPT, "text/event-stream");
    for (n, v) in headers {
        req = req.header(n, v);
    }
    let Ok(resp) = req.send().await else {
        return false;
    };
    resp.status().is_success()
        && resp
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().starts_with("text/event-stream"))
}

/// The HTTP client of one server (`docs/mcp-client.md` §8, "Proxies (HTTP servers)"). `direct`:
/// never through a proxy (loopback, the app endpoint — a bearer token for a
/// local application must not travel to a proxy). Otherwise the proxy of
/// `HTTPS_PROXY` / `HTTP_PROXY` / `ALL_PROXY` (either case) for the URL's
/// scheme, unless `NO_PROXY` names the host. Idle connections are not
/// pooled, and redirects are followed only to the same origin with a
/// 307/308 (which keep the request body), at most 10, as rmcp's own client.
pub(crate) fn http_client(
    direct: bool,
    timeout: Option<Duration>,
) -> Result<reqwest::Client, reqwest::Error> {
    let mut b = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .redirect(same_origin_redirects());
    if direct {
        b = b.no_proxy();
    }
    if let Some(t) = timeout {
        b = b.timeout(t);
    }
    b.build()
}

/// Most redirects followed for one request.
const MAX_REDIRECTS: usize = 10;

/// Follows a 307/308 to the same origin only: a redirect elsewhere would
/// carry the server's headers (its credentials) to another host.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let keeps_body = matches!(
            attempt.status(),
            reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
        );
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !keeps_body || !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else {
            attempt.follow()
        }
    })
}

/// Whether `url`'s host is this machine: `localhost` (and `*.localhost`),
/// `127.0.0.0/8`, `::1` (an IPv4-mapped loopback included).
pub fn is_loopback_url(url: &str) -> bool {
    let Ok(u) = reqwest::Url::parse(url) else {
        return false;
    };
    match u.host() {
        Some(url::Host::Domain(d)) => {
            let d = d.trim_end_matches('.').to_ascii_lowercase();
            d == "localhost" || d.ends_with(".localhost")
        }
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => {
            ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
        None => false,
    }
}

/// Whether a proxy variable for `url`'s scheme is set (non-empty) in this
/// process's environment; `NO_PROXY` is applied by the HTTP client itself.
fn proxy_configured(url: &str) -> bool {
    let https = url
        .get(..8)
        .is_some_and(|p| p.eq_ignore_ascii_case("https://"));
    let names: &[&str] = if https {
        &["HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"]
    } else {
        &["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"]
    };
    names
        .iter()
        .any(|n| std::env::var_os(n).is_some_and(|v| !v.is_empty()))
}

/// Turns rmcp's HTTP handshake error into a sentence: internal type names
/// dropped.
fn tidy_http_error(raw: &str) -> String {
    static TYPE_NAME: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"Send message error Transport \[[^\]]*\] error: |, when send initialize request",
        )
        .expect("pattern")
    });
    TYPE_NAME
        .replace_all(raw, "")
        .trim()
        .trim_end_matches(':')
        .to_string()
}

/// After a connect timeout: the error, refined by what the child did (it may
/// have exited, or a launcher may have reported a missing package).
pub(crate) async fn timeout_error(spec: &ServerSpec, child: Option<ChildParts>) -> ConnectError {
    let seconds = spec.connect_timeout.as_secs_f64();
    let Some(ChildParts { guard, tail, noise }) = child else {
        return ConnectError::Timeout { seconds };
    };
    let lines: Vec<String> = tail
        .lock()
        .map(|t| t.iter().cloned().collect())
        .unwrap_or_default();
    let exited = guard.lock().ok().and_then(|mut g| g.exited());
    if let Ok(mut g) = guard.lock() {
        g.kill();
    }
    if let Transport::Stdio { command, args, .. } = &spec.transport
        && let Some(pnf) = package_not_found(command, args, &lines)
    {
        return pnf;
    }
    match exited {
        Some(status) => ConnectError::ExitedAtStart {
            status,
            stderr: (!lines.is_empty()).then(|| lines[lines.len().saturating_sub(3)..].join(" | ")),
        },
        None => match noise.lock().ok().and_then(|n| n.clone()) {
            Some(line) => ConnectError::NotMcp { line },
            None => ConnectError::Timeout { seconds },
        },
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn tls_failures_are_named_with_their_reason() {
        let openssl = "failed: Client error: error sending request for url (https://127.0.0.1:1/mcp): client error (Connect): error:0A000086:SSL routines:tls_post_process_server_certificate:certificate verify failed:../ssl/statem/statem_clnt.c:1889: (unable to get local issuer certificate)";
        assert_eq!(
            tls_failure(openssl).as_deref(),
            Some("certificate verify failed: unable to get local issuer certificate")
        );
        let plain_http = "client error (Connect): error:0A00010B:SSL routines:ssl3_get_record:wrong version number";
        assert_eq!(
            tls_failure(plain_http).as_deref(),
            Some("wrong version number")
        );
        let schannel = "client error (Connect): The certificate chain was issued by an authority that is not trusted. (os error -2146762487)";
        assert!(tls_failure(schannel).is_some());
        // Not TLS: a refused connection or a DNS failure.
        assert_eq!(
            tls_failure("failed to lookup address information: Name or service not known"),
            None
        );
        assert_eq!(tls_failure("connection refused"), None);
    }
    use super::*;

    #[test]
    fn loopback_urls_are_told_from_remote_ones() {
        for url in [
            "http://127.0.0.1:8080/mcp",
            "http://127.9.8.7/mcp",
            "http://[::1]:9/mcp",
            "http://[::ffff:127.0.0.1]/mcp",
            "http://LOCALHOST:1/mcp",
            "http://localhost./mcp",
            "https://app.localhost/mcp",
        ] {
            assert!(is_loopback_url(url), "{url}");
        }
        for url in [
            "http://0.0.0.0:1/mcp",
            "http://10.0.0.1/mcp",
            "http://127.example.org/mcp",
            "http://localhost.example.org/mcp",
            "https://mcp.example.com/mcp",
            "not a url",
        ] {
            assert!(!is_loopback_url(url), "{url}");
        }
    }

    #[test]
    fn resolve_finds_sh_and_rejects_missing() {
        let path = std::env::var("PATH").ok();
        assert!(resolve_command("sh", path.as_deref()).is_some());
        assert!(resolve_command("definitely-not-a-command-xyz", path.as_deref()).is_none());
        assert!(resolve_command("/no/such/file", path.as_deref()).is_none());
        // An unset PATH searches /bin:/usr/bin on unix; an empty one nothing.
        #[cfg(unix)]
        assert!(
            resolve_command("sh", None)
                .is_some_and(|p| p.starts_with("/bin") || p.starts_with("/usr/bin"))
        );
        assert!(resolve_command("sh", Some("")).is_none());
    }

    #[test]
    fn messages_name_the_cause() {
        let e = ConnectError::CommandNotFound {
            command: "npx".into(),
        };
        assert!(e.to_string().contains("not found on PATH"));
        assert!(e.to_string().contains("Node.js"));
        let e = ConnectError::Timeout { seconds: 2.0 };
        assert!(e.to_string().contains("raise `connect_timeout`"));
        let lines = vec!["npm error code E404".to_string()];
        let e = package_not_found("npx", &["some-pkg".into()], &lines).unwrap();
        assert!(e.to_string().contains("pass `-y`"), "{e}");
        // Not suggested when already given.
        let e = package_not_found("npx", &["-y".into(), "some-pkg".into()], &lines).unwrap();
        assert!(!e.to_string().contains("pass `-y`"), "{e}");
        assert!(package_not_found("git-mcp-server", &[], &lines).is_none());
    }

    #[test]
    fn authorities() {
        assert_eq!(
            http_authority("http://127.0.0.1:8080/mcp").as_deref(),
            Some("127.0.0.1:8080")
        );
        assert_eq!(
            http_authority("https://example.com/x").as_deref(),
            Some("example.com:443")
        );
        assert_eq!(http_authority("http://u:p@h/x").as_deref(), Some("h:80"));
        assert_eq!(
            http_authority("http://[::1]:9/").as_deref(),
            Some("[::1]:9")
        );
        assert_eq!(http_authority("ftp://h/"), None);
        assert_eq!(http_authority("http:///x"), None);
    }
}
