//! The declaration cases of `tests/cases/declarations.yaml` (the file's
//! header is its schema) run through the real `wasmgate` binary: a case
//! without `host` as `wasmgate check plugin.yaml --json`, a case with one as
//! `wasmgate availability plugin.yaml --host DIR --json` on a simulated host
//! laid out from the case. No case is skipped: a case this runner cannot
//! run is a failure, and so is a key it does not know.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value as Json;
use wasmgate::fixtures::{pe_with_version, pe_without_version, plist_with};
use wasmgate_conformance::{wasmgate_bin, workspace_root};
use yaml_serde::{Mapping, Value};

/// The cases file, inside the repository.
fn cases_file() -> PathBuf {
    workspace_root().join("tests/cases/declarations.yaml")
}

/// How long one CLI call may take before the case fails as hung.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// The fewest cases the file may hold: cases lost from it fail the run.
const MIN_CASES: usize = 50;

/// Keys of `host` that lay out `root/` (the rest go to host.yaml as written).
const LAYOUT_KEYS: &[&str] = &[
    "executables",
    "files",
    "dirs",
    "plists",
    "pe",
    "drm",
    "nvidia_driver",
];

fn key<'a>(m: &'a Mapping, k: &str) -> Option<&'a Value> {
    m.get(Value::String(k.to_string()))
}

fn text(v: &Value) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        other => Err(format!("expected text, got {other:?}")),
    }
}

fn strings(v: Option<&Value>) -> Result<Vec<String>, String> {
    match v {
        None => Ok(Vec::new()),
        Some(Value::Sequence(items)) => items.iter().map(text).collect(),
        Some(other) => Err(format!("expected a list, got {other:?}")),
    }
}

/// `path` of the simulated OS family under `root/`: `C:/x` → `root/C/x`,
/// `/x` → `root/x`; anything that could leave `root/` is refused.
fn under_root(root: &Path, os: &str, path: &str) -> Result<PathBuf, String> {
    let rel: Vec<&str> = if os == "win32" {
        let b = path.as_bytes();
        if b.len() < 3 || !b[0].is_ascii_alphabetic() || b[1] != b':' {
            return Err(format!("windows path without a drive: {path:?}"));
        }
        std::iter::once(&path[..1])
            .chain(path[3..].split(['/', '\\']))
            .collect()
    } else {
        path.strip_prefix('/')
            .ok_or(format!("POSIX path not absolute: {path:?}"))?
            .split('/')
            .collect()
    };
    let mut out = root.to_path_buf();
    for (i, part) in rel.into_iter().filter(|p| !p.is_empty()).enumerate() {
        if part == "." || part == ".." {
            return Err(format!("path leaves root/: {path:?}"));
        }
        out.push(if i == 0 && os == "win32" {
            part.to_ascii_uppercase()
        } else {
            part.to_string()
        });
    }
    Ok(out)
}

fn write_file(path: &Path, bytes: &[u8], mode: u32) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let parent = path.parent().expect("below root/");
    std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Writes `dir/host.yaml` and `dir/root/` from a case's `host`.
fn lay_out_host(dir: &Path, host: &Mapping) -> Result<String, String> {
    let os = key(host, "os")
        .and_then(Value::as_str)
        .ok_or("host.os is missing")?
        .to_string();
    let root = dir.join("root");
    std::fs::create_dir_all(&root).map_err(|e| e.to_string())?;
    let mut yaml = Mapping::new();
    for (k, v) in host {
        let k = k.as_str().ok_or("host keys are text")?;
        if !LAYOUT_KEYS.contains(&k) {
            yaml.insert(Value::String(k.to_string()), v.clone());
        }
    }
    for d in strings(key(host, "dirs"))? {
        let p = under_root(&root, &os, &d)?;
        std::fs::create_dir_all(&p).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    for f in strings(key(host, "files"))? {
        write_file(&under_root(&root, &os, &f)?, b"", 0o644)?;
    }
    for f in strings(key(host, "executables"))? {
        write_file(&under_root(&root, &os, &f)?, b"#!/bin/sh\nexit 0\n", 0o755)?;
    }
    if let Some(plists) = key(host, "plists") {
        for (bundle, content) in plists.as_mapping().ok_or("host.plists is a mapping")? {
            let bundle = text(bundle)?;
            let bytes = match content {
                Value::String(s) if s == "invalid" => {
                    b"\x00\xffnot a property list\x01<plist".to_vec()
                }
                Value::Mapping(m) => {
                    let entries: Vec<(String, String)> = m
                        .iter()
                        .map(|(k, v)| Ok((text(k)?, text(v)?)))
                        .collect::<Result<_, String>>()?;
                    plist_with(entries.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                }
                other => return Err(format!("plists.{bundle}: {other:?}")),
            };
            let p = under_root(&root, &os, &bundle)?.join("Contents/Info.plist");
            write_file(&p, &bytes, 0o644)?;
        }
    }
    if let Some(pe) = key(host, "pe") {
        for (path, version) in pe.as_mapping().ok_or("host.pe is a mapping")? {
            let path = text(path)?;
            let bytes = match version {
                Value::Null => pe_without_version(),
                v => pe_with_version(&text(v)?),
            };
            write_file(&under_root(&root, &os, &path)?, &bytes, 0o755)?;
        }
    }
    if let Some(drm) = key(host, "drm") {
        for (card, vendor) in drm.as_mapping().ok_or("host.drm is a mapping")? {
            let card = text(card)?;
            let p = root.join("sys/class/drm").join(&card).join("device/vendor");
            let vendor = text(vendor)?;
            let body = if vendor.trim().is_empty() {
                vendor
            } else {
                format!("{vendor}\n")
            };
            write_file(&p, body.as_bytes(), 0o444)?;
        }
    }
    if key(host, "nvidia_driver").and_then(Value::as_bool) == Some(true) {
        write_file(
            &root.join("proc/driver/nvidia/version"),
            b"NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14\n",
            0o444,
        )?;
    }
    let text = yaml_serde::to_string(&Value::Mapping(yaml)).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("host.yaml"), text).map_err(|e| e.to_string())?;
    Ok(os)
}

/// Runs `wasmgate args…`; a call that runs past [`CALL_TIMEOUT`] is killed
/// and reported.
fn wasmgate(args: &[&std::ffi::OsStr]) -> Result<Output, String> {
    let mut child = Command::new(wasmgate_bin())
        .args(args)
        .env_remove("WASMGATE_PLUGINS")
        .env_remove("WASMGATE_CONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run wasmgate: {e}"))?;
    let deadline = Instant::now() + CALL_TIMEOUT;
    while child.try_wait().map_err(|e| e.to_string())?.is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("wasmgate {args:?} ran past {CALL_TIMEOUT:?}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().map_err(|e| e.to_string())
}

const EXPECT_KEYS: &[&str] = &[
    "valid",
    "requires",
    "declared",
    "errors",
    "state",
    "offerable",
    "version",
    "path",
    "min_version",
];

/// Runs one case; `Err` says why it failed.
fn run_case(case: &Mapping, work: &Path) -> Result<(), String> {
    for k in case.keys() {
        let k = k.as_str().unwrap_or_default();
        if !["id", "about", "server", "host", "expect"].contains(&k) {
            return Err(format!("unknown key {k:?}"));
        }
    }
    key(case, "about")
        .and_then(Value::as_str)
        .ok_or("no `about`")?;
    let expect = key(case, "expect")
        .and_then(Value::as_mapping)
        .ok_or("no `expect` mapping")?;
    for k in expect.keys() {
        let k = k.as_str().unwrap_or_default();
        if !EXPECT_KEYS.contains(&k) {
            return Err(format!("unknown expect key {k:?}"));
        }
    }
    let server = key(case, "server")
        .and_then(Value::as_mapping)
        .ok_or("no `server` mapping")?;
    let mut entry = Mapping::new();
    entry.insert("command".into(), "true".into());
    for (k, v) in server {
        match k.as_str() {
            Some("app" | "requires") => {
                entry.insert(k.clone(), v.clone());
            }
            _ => return Err(format!("server key {k:?}: only app and requires")),
        }
    }
    let mut servers = Mapping::new();
    servers.insert("t".into(), Value::Mapping(entry));
    let mut plugin = Mapping::new();
    plugin.insert("name".into(), "cases".into());
    plugin.insert("version".into(), "1.0.0".into());
    plugin.insert("mcp_servers".into(), Value::Mapping(servers));
    let plugin_path = work.join("plugin.yaml");
    std::fs::write(
        &plugin_path,
        yaml_serde::to_string(&Value::Mapping(plugin)).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;

    let (out, os) = match key(case, "host") {
        None => (
            wasmgate(&["check".as_ref(), plugin_path.as_os_str(), "--json".as_ref()])?,
            None,
        ),
        Some(host) => {
            let host_dir = work.join("host");
            let os = lay_out_host(&host_dir, host.as_mapping().ok_or("host is a mapping")?)?;
            let out = wasmgate(&[
                "availability".as_ref(),
                plugin_path.as_os_str(),
                "--host".as_ref(),
                host_dir.as_os_str(),
                "--json".as_ref(),
            ])?;
            (out, Some(os))
        }
    };
    let code = out.status.code();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let shown = || format!("exit {code:?}\nstdout: {stdout}\nstderr: {stderr}");

    let errors = strings(key(expect, "errors"))?;
    if !errors.is_empty() {
        if code != Some(1) {
            return Err(format!("want exit 1 (invalid); {}", shown()));
        }
        // The errors are on stderr (or in `check --json`'s document).
        // The cases name the field path and the wording; the value the
        // error echoes between them (`path ("value") message`) is left out.
        let all = without_echoed_values(&format!("{stderr}\n{stdout}"));
        let missing: Vec<&String> = errors
            .iter()
            .filter(|e| !all.contains(e.as_str()))
            .collect();
        if !missing.is_empty() {
            return Err(format!("error output lacks {missing:?}; {}", shown()));
        }
        if !all.contains("server 't'") {
            return Err(format!("errors do not name the server; {}", shown()));
        }
        return Ok(());
    }
    if code != Some(0) {
        return Err(format!("want exit 0; {}", shown()));
    }
    let Some(os) = os else {
        if key(expect, "valid").and_then(Value::as_bool) != Some(true) {
            return Err("a case without host expects `valid: true` or `errors`".into());
        }
        return Ok(());
    };
    let doc: Json =
        serde_json::from_str(&stdout).map_err(|e| format!("not JSON ({e}); {}", shown()))?;
    let got = doc
        .as_array()
        .and_then(|a| a.iter().find(|e| e["server"] == "t"))
        .ok_or_else(|| format!("no entry for server t; {}", shown()))?;
    let mut diffs = Vec::new();
    let mut compared = 0;
    for field in ["state", "offerable", "version", "path", "min_version"] {
        let Some(want) = key(expect, field) else {
            continue;
        };
        compared += 1;
        let want: Json = serde_json::to_value(want).map_err(|e| e.to_string())?;
        let mut got = got
            .get(field)
            .cloned()
            .unwrap_or(Json::String("<missing>".into()));
        if field == "path"
            && os == "win32"
            && let Json::String(p) = &got
        {
            got = Json::String(p.replace('\\', "/"));
        }
        if got != want {
            diffs.push(format!("{field}: got {got}, want {want}"));
        }
    }
    if compared == 0 {
        return Err("a case with host expects availability fields or `errors`".into());
    }
    if diffs.is_empty() {
        Ok(())
    } else {
        Err(format!("{}; {}", diffs.join("; "), shown()))
    }
}

#[test]
fn declaration_cases_pass_through_the_binary() {
    let path = cases_file();
    let body = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{} is part of the repository: {e}", path.display()));
    let cases: Vec<Mapping> = yaml_serde::from_str(&body)
        .unwrap_or_else(|e| panic!("{}: not a list of cases: {e}", path.display()));
    assert!(
        cases.len() >= MIN_CASES,
        "{} holds {} cases, fewer than {MIN_CASES}",
        path.display(),
        cases.len()
    );
    let tmp = tempfile::tempdir().unwrap();
    let mut ids = std::collections::BTreeSet::new();
    let mut failed = Vec::new();
    let mut passed = 0;
    for (i, case) in cases.iter().enumerate() {
        let id = key(case, "id")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| format!("<case {i} without id>"));
        if !ids.insert(id.clone()) {
            failed.push(format!("{id}: duplicate id"));
            continue;
        }
        let work = tmp.path().join(format!("{i:03}"));
        std::fs::create_dir_all(&work).unwrap();
        match run_case(case, &work) {
            Ok(()) => passed += 1,
            Err(e) => failed.push(format!("{id}: {e}")),
        }
    }
    println!(
        "declaration cases: {passed} passed, {} failed, 0 skipped",
        failed.len()
    );
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
    assert_eq!(passed, cases.len());
}

/// `text` without the ` (<value>)` echoes that errors carry after their
/// field path (`docs/declarations.md`: a quoted string, a number, or compact
/// JSON), so a case can name `path message` as it reads without the value.
fn without_echoed_values(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(" (") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        match echoed_len(after) {
            Some(n) => rest = &after[n..],
            None => {
                out.push_str(" (");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The length of an echoed value and its closing `)` at the start of `s`.
fn echoed_len(s: &str) -> Option<usize> {
    let first = s.chars().next()?;
    if first == '"' {
        let mut escaped = false;
        for (i, c) in s.char_indices().skip(1) {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => {
                    let tail = &s[i + 1..];
                    let tail = tail.strip_prefix('…').unwrap_or(tail);
                    return tail.starts_with(')').then(|| s.len() - tail.len() + 1);
                }
                _ => {}
            }
        }
        return None;
    }
    if !(first.is_ascii_digit() || matches!(first, '-' | '{' | '[')) {
        return None;
    }
    let mut depth = 1usize;
    for (i, c) in s.char_indices() {
        match c {
            '(' | '{' | '[' => depth += 1,
            '}' | ']' => depth = depth.saturating_sub(1),
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            '\n' => return None,
            _ => {}
        }
    }
    None
}
