//! `git-mcp-server` — a small, read-only MCP server (stdio; `--http ADDR` for
//! streamable HTTP, see `http.rs`) over the `git` executable. The `git` example plugin fronts it (`example-plugins/git`).
//!
//! Tools (every one takes an optional `path`, the repository or any folder
//! inside it; default: the server's current directory):
//!
//! - `status` — `git status --short --branch`
//! - `log` — recent commits (`max_count`, default 20, at most 500), as text
//!   and as `structuredContent` (`{"commits": [{hash, author, date, subject}]}`)
//! - `branch` — local and remote branches
//! - `show` — one commit (`revision`, default `HEAD`) with its stat
//! - `diff` — the working tree diff (`staged: true` for the index)
//!
//! Each tool runs `git --no-optional-locks -C <path> …` directly (no shell),
//! so nothing in the repository is written. A folder that is not a git
//! repository, a missing folder, an unknown revision or a missing `git`
//! executable is a tool error (`isError: true`) with a clear message, never a
//! protocol error. Output is bounded by [`MAX_OUTPUT_BYTES`]; a cut output
//! says how many bytes were left out. A git run is bounded by
//! [`GIT_TIMEOUT`].

mod http;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::{ErrorData, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

/// Largest output a tool returns, in bytes; the rest is cut with a note.
const MAX_OUTPUT_BYTES: usize = 256 * 1024;
/// Longest a single git invocation may run.
const GIT_TIMEOUT: Duration = Duration::from_secs(30);
/// Default and upper bound of `log`'s `max_count`.
const LOG_DEFAULT: u32 = 20;
const LOG_MAX: u32 = 500;

/// Arguments shared by `status` and `branch`.
#[derive(Debug, Deserialize, JsonSchema)]
struct PathArgs {
    /// Repository folder (or any folder inside it); default: the server's current directory.
    #[serde(default)]
    path: Option<String>,
}

/// Arguments of `log`.
#[derive(Debug, Deserialize, JsonSchema)]
struct LogArgs {
    /// Repository folder (or any folder inside it); default: the server's current directory.
    #[serde(default)]
    path: Option<String>,
    /// Number of commits to list, newest first (default 20, at most 500).
    #[serde(default)]
    max_count: Option<u32>,
}

/// Arguments of `show`.
#[derive(Debug, Deserialize, JsonSchema)]
struct ShowArgs {
    /// Repository folder (or any folder inside it); default: the server's current directory.
    #[serde(default)]
    path: Option<String>,
    /// Commit, tag or branch to show (default `HEAD`); must not start with `-`.
    #[serde(default)]
    revision: Option<String>,
}

/// Arguments of `diff`.
#[derive(Debug, Deserialize, JsonSchema)]
struct DiffArgs {
    /// Repository folder (or any folder inside it); default: the server's current directory.
    #[serde(default)]
    path: Option<String>,
    /// Diff the index against HEAD (`git diff --cached`) instead of the working tree.
    #[serde(default)]
    staged: bool,
}

/// The server; stateless, every call runs git afresh.
#[derive(Debug, Clone, Default)]
struct GitServer;

/// A finished git run that succeeded, or the text of a tool error.
type GitOutcome = Result<String, String>;

/// Resolves the `path` argument: default the current directory; it must exist
/// and be a folder.
fn repo_dir(path: Option<&str>) -> Result<PathBuf, String> {
    let dir = match path {
        None | Some("") => std::env::current_dir()
            .map_err(|e| format!("cannot read the current directory: {e}"))?,
        Some(p) => PathBuf::from(p),
    };
    match std::fs::metadata(&dir) {
        Ok(m) if m.is_dir() => Ok(dir),
        Ok(_) => Err(format!("path '{}' is not a folder", dir.display())),
        Err(e) => Err(format!("path '{}' cannot be read: {e}", dir.display())),
    }
}

/// Cuts `text` to [`MAX_OUTPUT_BYTES`] at a character boundary, noting how
/// much was left out.
fn bound(mut text: String) -> String {
    if text.len() <= MAX_OUTPUT_BYTES {
        return text;
    }
    let total = text.len();
    let mut cut = MAX_OUTPUT_BYTES;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
    text.push_str(&format!(
        "\n[output truncated: {} of {total} bytes left out]",
        total - cut
    ));
    text
}

/// Runs `git --no-optional-locks -C <dir> <args…>` without a shell.
async fn git(dir: &std::path::Path, args: &[&str]) -> GitOutcome {
    let mut cmd = tokio::process::Command::new("git");
    cmd.arg("--no-optional-locks")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_PAGER", "cat")
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err("the git executable was not found on PATH".to_string());
        }
        Err(e) => return Err(format!("cannot run git: {e}")),
    };
    let out = match tokio::time::timeout(GIT_TIMEOUT, child.wait_with_output()).await {
        Ok(Ok(out)) => out,
        Ok(Err(e)) => return Err(format!("git failed to run: {e}")),
        Err(_) => {
            return Err(format!(
                "git {} did not finish within {} s",
                args.first().copied().unwrap_or(""),
                GIT_TIMEOUT.as_secs()
            ));
        }
    };
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
    if out.status.success() {
        return Ok(bound(String::from_utf8_lossy(&out.stdout).into_owned()));
    }
    if stderr.contains("not a git repository") {
        return Err(format!(
            "'{}' is not a git repository (or any parent folder of one)",
            dir.display()
        ));
    }
    Err(bound(format!(
        "git {} failed ({}): {}",
        args.first().copied().unwrap_or(""),
        out.status,
        if stderr.is_empty() {
            "no error text"
        } else {
            &stderr
        }
    )))
}

/// [`git`] in the repository the `path` argument names ([`repo_dir`]).
async fn git_in(path: Option<&str>, args: &[&str]) -> GitOutcome {
    git(&repo_dir(path)?, args).await
}

/// Turns an outcome into a tool result: success text, or `isError` text.
fn to_result(outcome: GitOutcome, empty_note: &str) -> CallToolResult {
    match outcome {
        Ok(text) if text.trim().is_empty() => {
            CallToolResult::success(vec![ContentBlock::text(empty_note)])
        }
        Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
        Err(msg) => CallToolResult::error(vec![ContentBlock::text(msg)]),
    }
}

#[tool_router]
impl GitServer {
    /// `git status --short --branch` of a repository.
    #[tool(
        description = "Show the working tree status of a git repository (git status --short --branch). Optional `path`: the repository folder; default: the current directory.",
        annotations(read_only_hint = true)
    )]
    async fn status(
        &self,
        Parameters(args): Parameters<PathArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(to_result(
            git_in(args.path.as_deref(), &["status", "--short", "--branch"]).await,
            "(clean)",
        ))
    }

    /// Recent commits, newest first.
    #[tool(
        description = "List recent commits of a git repository, newest first: hash, author, date (ISO 8601), subject. Optional `path` (default: the current directory) and `max_count` (default 20, at most 500).",
        annotations(read_only_hint = true)
    )]
    async fn log(
        &self,
        Parameters(args): Parameters<LogArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let dir = match repo_dir(args.path.as_deref()) {
            Ok(d) => d,
            Err(e) => return Ok(to_result(Err(e), "")),
        };
        let n = args.max_count.unwrap_or(LOG_DEFAULT).clamp(1, LOG_MAX);
        let count = format!("--max-count={n}");
        // Unit separator between fields, one commit per line.
        let outcome = git(
            &dir,
            &[
                "log",
                &count,
                "--no-color",
                "--format=%H%x1f%an%x1f%aI%x1f%s",
            ],
        )
        .await;
        let raw = match outcome {
            Ok(raw) => raw,
            Err(e) if e.contains("does not have any commits") => {
                return Ok(CallToolResult::success(vec![ContentBlock::text(
                    "(no commits yet)",
                )]));
            }
            Err(e) => return Ok(to_result(Err(e), "")),
        };
        let mut text = String::new();
        let mut commits = Vec::new();
        for line in raw.lines() {
            let mut f = line.split('\u{1f}');
            let (Some(hash), Some(author), Some(date), Some(subject)) =
                (f.next(), f.next(), f.next(), f.next())
            else {
                continue;
            };
            text.push_str(&format!(
                "{} {} {} {}\n",
                &hash[..hash.len().min(12)],
                date,
                author,
                subject
            ));
            commits.push(serde_json::json!({
                "hash": hash, "author": author, "date": date, "subject": subject
            }));
        }
        if commits.is_empty() {
            text.push_str("(no commits)");
        }
        let mut result = CallToolResult::success(vec![ContentBlock::text(bound(text))]);
        result.structured_content = Some(serde_json::json!({ "commits": commits }));
        Ok(result)
    }

    /// Local and remote branches.
    #[tool(
        description = "List the local and remote-tracking branches of a git repository; the current one is marked with '*'. Optional `path` (default: the current directory).",
        annotations(read_only_hint = true)
    )]
    async fn branch(
        &self,
        Parameters(args): Parameters<PathArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(to_result(
            git_in(
                args.path.as_deref(),
                &["branch", "--all", "--no-color", "--verbose"],
            )
            .await,
            "(no branches yet)",
        ))
    }

    /// One commit with its stat.
    #[tool(
        description = "Show one commit of a git repository (author, date, message, changed files). Optional `path` (default: the current directory) and `revision` (default HEAD).",
        annotations(read_only_hint = true)
    )]
    async fn show(
        &self,
        Parameters(args): Parameters<ShowArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let dir = match repo_dir(args.path.as_deref()) {
            Ok(d) => d,
            Err(e) => return Ok(to_result(Err(e), "")),
        };
        let rev = args.revision.unwrap_or_else(|| "HEAD".to_string());
        // A revision starting with '-' would be read as an option.
        if rev.is_empty() || rev.starts_with('-') {
            return Ok(to_result(
                Err(format!(
                    "invalid revision '{rev}': it must not be empty or start with '-'"
                )),
                "",
            ));
        }
        Ok(to_result(
            git(
                &dir,
                &[
                    "show",
                    "--no-color",
                    "--stat",
                    "--format=fuller",
                    &rev,
                    "--",
                ],
            )
            .await,
            "",
        ))
    }

    /// The working tree (or staged) diff.
    #[tool(
        description = "Show the uncommitted changes of a git repository as a unified diff; `staged: true` shows the index against HEAD. Optional `path` (default: the current directory).",
        annotations(read_only_hint = true)
    )]
    async fn diff(
        &self,
        Parameters(args): Parameters<DiffArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let mut a = vec!["diff", "--no-color", "--no-ext-diff"];
        if args.staged {
            a.push("--cached");
        }
        Ok(to_result(
            git_in(args.path.as_deref(), &a).await,
            "(no changes)",
        ))
    }
}

#[tool_handler(
    name = "git-mcp-server",
    instructions = "Read-only git tools: status, log, branch, show, diff. Each takes an optional `path` (default: the server's current directory)."
)]
impl ServerHandler for GitServer {}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.is_empty() {
        return http::run(&args).await;
    }
    // stdout carries MCP; diagnostics go to stderr, which the host logs.
    let service = GitServer.serve(rmcp::transport::stdio()).await?;
    service.waiting().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bound_cuts_long_output_and_says_how_much() {
        let long = "é".repeat(MAX_OUTPUT_BYTES); // 2 bytes each
        let out = bound(long);
        assert!(out.contains("bytes left out"));
        assert!(out.len() < MAX_OUTPUT_BYTES + 100);
        assert_eq!(bound("short".into()), "short");
    }

    #[test]
    fn repo_dir_rejects_missing_folder() {
        let e = repo_dir(Some("/definitely/not/here")).unwrap_err();
        assert!(e.contains("/definitely/not/here"), "{e}");
    }
}
