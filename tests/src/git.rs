//! Git repositories for tests, shared by both test crates (the host's
//! `host/tests/common` includes this file by path: it cannot depend on this
//! crate, which depends on the host).

use std::path::Path;
use std::process::Command;

/// Runs `git -C dir ARGS…` as "Test Author" (a test needs no git identity
/// of the machine's user) and asserts it succeeded.
///
/// # Panics
/// When git cannot start or fails (the message has its stderr).
pub fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "Test Author")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "Test Author")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A git repository in `dir` (created if missing) on branch `main`, with
/// one empty commit per subject, oldest first.
pub fn git_repo(dir: &Path, subjects: &[&str]) {
    std::fs::create_dir_all(dir).expect("create the repository folder");
    git(dir, &["init", "-q", "-b", "main"]);
    for subject in subjects {
        git(dir, &["commit", "-q", "--allow-empty", "-m", subject]);
    }
}
