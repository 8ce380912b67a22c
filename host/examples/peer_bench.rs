//! Side by side with the original (`docs/performance.md`, "Side by side with
//! the original"): the manifest pipeline of `manifest_bench` on real files,
//! and the original Python implementation (NousResearch/hermes-agent,
//! `hermes_platform`, line A) on the same declarations and the same files, in
//! one run.
//!
//! The bench writes into a temporary folder a `plugin.yaml` with N servers
//! (default 10,000), each an `app.linux` declaration of one of five kinds in
//! turn (a plain path, a `*` versioned folder, `command`, `flatpak`, `snap`;
//! every second one with a first candidate that never exists), and the files
//! of about half of the applications. Every path is absolute inside the
//! folder; `HOME` (the per-user flatpak folder) and `PATH` (two folders, the
//! commands in the second) point into it, for both sides. The `snap` folder
//! (`/snap/bin`) is outside it: those declarations are absent on a machine
//! without snap, on both sides.
//!
//! Figures, per declaration, median [min] of the runs:
//!
//! - ours: `load + validate` (`load_plugin_yaml`: read, decode, validate),
//!   `evaluate` (`availability()` on `RealPlatform`), `end to end`;
//! - the original (`host/examples/peer/hermes_bench.py`, run when
//!   `WASMGATE_PEER_HERMES` names a checkout): its parser on the decoded
//!   mapping, its `availability()`, and both; plus how many outcomes (state
//!   and reported path) differ from ours;
//! - file-system calls per declaration (`Platform::fs_calls`), and the time of
//!   `availability()` against a replay of just the file-system calls it made
//!   (`std::fs::metadata`, `read_dir` on the same paths, in the same order).
//!
//! ```text
//! WASMGATE_PEER_HERMES=/path/to/hermes-agent \
//! cargo run --config 'profile.dev.package.wasmgate.opt-level=3' \
//!   --config 'profile.dev.package.yaml_serde.opt-level=3' \
//!   --config 'profile.dev.package.libyaml-rs.opt-level=3' \
//!   -p wasmgate --example peer_bench [N] [RUNS]
//! ```
//!
//! (The YAML decoder is most of `load + validate` and lives in those two
//! dependencies, which the dev profile builds at opt-level 1; `--release`
//! works too but compiles wasmtime for 10+ minutes.)
//!
//! Ours runs on the `wasmgate` binary's allocator, mimalloc (the default
//! `mimalloc` feature; `--no-default-features` builds it on the system's,
//! and the output names which).
//!
//! `WASMGATE_PEER_PYTHON` names the interpreter (default `python3` from
//! `PATH`); it needs PyYAML. `WASMGATE_PEER_KEEP=1` keeps the temporary
//! folder (to count the original's system calls with `strace`).

mod allocator;
mod timing;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;
use timing::time;
use wasmgate::availability::availability;
use wasmgate::manifest::load_plugin_yaml;
use wasmgate::platform::{
    DisplayAdapter, FileKind, GpuCache, Platform, ReadError, ReadSeek, RealPlatform, UninstallEntry,
};
use wasmgate::{Declaration, OsFamily};

/// Where the original's code is public, and the commit the figures used.
const PEER_REPO: &str = "https://github.com/zons-zhaozhy/hermes-agent";
const PEER_COMMIT: &str = "0c8ef8dc257dd92a47fe192052cc8162ab0c6be7";

const KINDS: [&str; 5] = ["path", "`*` folder", "command", "flatpak", "snap"];

/// The `i`-th server entry; pushes the files to create when its application
/// exists. `root` is the temporary folder.
fn server(i: usize, root: &str, yaml: &mut String, files: &mut Vec<String>) {
    let name = format!("app{i}");
    let (location, file) = match i % 5 {
        0 => (
            format!("{root}/opt/{name}/bin/{name}"),
            format!("{root}/opt/{name}/bin/{name}"),
        ),
        // Each `*` under its own vendor folder, as in manifest_bench: one
        // folder with thousands of entries would make every listing cost
        // thousands.
        1 => (
            format!("{root}/opt/vendor{i}/{name}-*/bin/{name}"),
            format!("{root}/opt/vendor{i}/{name}-2.{i}/bin/{name}"),
        ),
        2 => (
            format!("{{kind: command, name: {name}}}"),
            format!("{root}/bin2/{name}"),
        ),
        3 => (
            format!("{{kind: flatpak, app_id: org.example.App{i}}}"),
            format!("{root}/home/.local/share/flatpak/exports/bin/org.example.App{i}"),
        ),
        // Outside the folder: /snap/bin is the only place snap looks.
        _ => (format!("{{kind: snap, name: {name}}}"), String::new()),
    };
    // Always a list: the original refuses a lone mapping (`location: {kind:
    // …}`), which ours accepts.
    let location = if i.is_multiple_of(2) {
        format!("[{location}]")
    } else {
        format!("[{root}/usr/local/{name}/{name}, {location}]")
    };
    let _ = write!(
        yaml,
        "  {name}:\n    command: {name}-mcp\n    app:\n      linux:\n        presence: executable\n        location: {location}\n    requires: {{app: true}}\n"
    );
    if i.is_multiple_of(2) && !file.is_empty() {
        files.push(file);
    }
}

/// One file-system call `availability()` made.
#[derive(Debug, Clone)]
enum Call {
    Metadata(String),
    ListDir(String),
    Read(String),
}

/// `RealPlatform` that also records each file-system call, to replay them.
#[derive(Default)]
struct Recording {
    inner: RealPlatform,
    calls: Mutex<Vec<Call>>,
}

impl Recording {
    fn record(&self, c: Call) {
        self.calls.lock().unwrap().push(c);
    }
}

impl Platform for Recording {
    fn os_family(&self) -> OsFamily {
        self.inner.os_family()
    }
    fn home(&self) -> Option<String> {
        self.inner.home()
    }
    fn user_home(&self, user: &str) -> Option<String> {
        self.inner.user_home(user)
    }
    fn env_var(&self, name: &str) -> Option<String> {
        self.inner.env_var(name)
    }
    fn metadata(&self, path: &str) -> Option<FileKind> {
        self.record(Call::Metadata(path.into()));
        self.inner.metadata(path)
    }
    fn read_file(&self, path: &str, max_bytes: u64) -> Result<Vec<u8>, ReadError> {
        self.record(Call::Read(path.into()));
        self.inner.read_file(path, max_bytes)
    }
    fn open_file(&self, path: &str) -> std::io::Result<Box<dyn ReadSeek>> {
        self.record(Call::Read(path.into()));
        self.inner.open_file(path)
    }
    fn list_dir(&self, path: &str) -> std::io::Result<Vec<String>> {
        self.record(Call::ListDir(path.into()));
        self.inner.list_dir(path)
    }
    fn uninstall_entries(&self) -> Vec<UninstallEntry> {
        self.inner.uninstall_entries()
    }
    fn display_adapters(&self) -> Option<Vec<DisplayAdapter>> {
        self.inner.display_adapters()
    }
    fn native_arch(&self) -> Option<String> {
        self.inner.native_arch()
    }
    fn process_alive(&self, pid: u32) -> bool {
        self.inner.process_alive(pid)
    }
    fn fs_calls(&self) -> u64 {
        self.inner.fs_calls()
    }
    fn gpu_cache(&self) -> &GpuCache {
        self.inner.gpu_cache()
    }
}

/// The same system calls as the platform makes for `c`, nothing else.
fn replay(c: &Call) -> usize {
    match c {
        Call::Metadata(p) => fs::metadata(p).map(|m| m.is_file() as usize).unwrap_or(0),
        Call::ListDir(p) => fs::read_dir(p)
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.file_name())).count())
            .unwrap_or(0),
        Call::Read(p) => fs::read(p).map(|b| b.len()).unwrap_or(0),
    }
}

/// `name` in the folders of `path` (a `:` list), before `PATH` is changed.
fn find_in_path(name: &str, path: &str) -> Option<PathBuf> {
    path.split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

/// What the original's driver printed.
#[derive(serde::Deserialize)]
struct Peer {
    python: String,
    decode_us: f64,
    parse_us: (f64, f64),
    availability_us: (f64, f64),
    parse_availability_us: (f64, f64),
    forbidden_events: Vec<String>,
    outcomes: HashMap<String, (String, Option<String>)>,
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let n: usize = args
        .next()
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(10_000);
    let runs: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(11);

    // The interpreter's own path, asked before `PATH` changes: a `python3`
    // on `PATH` may be a shim (pyenv) that needs the old `PATH` to run.
    let python = std::env::var_os("WASMGATE_PEER_PYTHON")
        .map(PathBuf::from)
        .or_else(|| find_in_path("python3", &std::env::var("PATH").unwrap_or_default()))
        .and_then(|py| {
            let out = Command::new(py)
                .args(["-c", "import sys; print(sys.executable)"])
                .output()
                .ok()?;
            let exe = String::from_utf8(out.stdout).ok()?;
            (out.status.success() && !exe.trim().is_empty()).then(|| PathBuf::from(exe.trim()))
        });
    // Not under a folder whose name starts with `.`: both sides' `*` skip
    // hidden names, and a stray one in the prefix would only confuse.
    let tmp = tempfile::Builder::new()
        .prefix("wasmgate-peer-")
        .tempdir()?;
    let root = tmp.path().canonicalize()?;
    let root_s = root.to_str().expect("a UTF-8 temporary folder").to_string();
    let home = format!("{root_s}/home");
    let path_var = format!("{root_s}/bin1:{root_s}/bin2");
    fs::create_dir_all(format!("{root_s}/bin1"))?;
    fs::create_dir_all(format!("{root_s}/bin2"))?;
    fs::create_dir_all(&home)?;
    // SAFETY: no other thread exists yet; `RealPlatform` reads `HOME`, `PATH`
    // and `XDG_DATA_HOME` from this process's environment, and the original
    // gets the same values.
    unsafe {
        std::env::set_var("HOME", &home);
        std::env::set_var("PATH", &path_var);
        std::env::remove_var("XDG_DATA_HOME");
    }

    let mut yaml = String::from("name: bench\nversion: 1.0.0\nmcp_servers:\n");
    let mut files = Vec::new();
    for i in 0..n {
        server(i, &root_s, &mut yaml, &mut files);
    }
    for f in &files {
        let p = Path::new(f);
        fs::create_dir_all(p.parent().unwrap())?;
        fs::write(p, b"")?;
        // Executable: ours requires an execute bit for a found copy, the
        // original only a regular file (its `command` also needs the bit).
        fs::set_permissions(p, fs::Permissions::from_mode(0o755))?;
    }
    let plugin_dir = root.join("plugin");
    fs::create_dir_all(&plugin_dir)?;
    let yaml_path = plugin_dir.join("plugin.yaml");
    fs::write(&yaml_path, &yaml)?;

    // Ours.
    let r = load_plugin_yaml(&yaml_path);
    anyhow::ensure!(
        r.is_ok(),
        "the generated plugin.yaml is invalid: {:?}",
        r.errors.first()
    );
    let decls: Vec<Declaration> = r
        .manifest
        .expect("valid")
        .servers
        .into_iter()
        .filter_map(|s| s.declaration)
        .collect();
    anyhow::ensure!(decls.len() == n, "{} declarations of {n}", decls.len());
    let platform = RealPlatform::new();
    let ours: Vec<(String, Option<String>)> = decls
        .iter()
        .map(|d| {
            let a = availability(d, &platform);
            (a.state.as_str().to_string(), a.path)
        })
        .collect();
    let offerable = ours.iter().filter(|(s, _)| s == "available").count();

    let load = time(runs, || load_plugin_yaml(&yaml_path));
    let evaluate = time(runs, || {
        decls
            .iter()
            .filter(|d| availability(d, &platform).offerable())
            .count()
    });
    let end_to_end = time(runs, || {
        load_plugin_yaml(&yaml_path)
            .manifest
            .map(|m| {
                m.servers
                    .iter()
                    .filter_map(|s| s.declaration.as_ref())
                    .filter(|d| availability(d, &platform).offerable())
                    .count()
            })
            .unwrap_or(0)
    });

    // File-system calls, each declaration on its own, and the replay.
    let rec = Recording::default();
    let mut per_kind = [0u64; 5];
    for (i, d) in decls.iter().enumerate() {
        let before = rec.fs_calls();
        availability(d, &rec);
        per_kind[i % 5] += rec.fs_calls() - before;
    }
    let calls = rec.calls.into_inner().unwrap();
    let total_calls = calls.len();
    let lists = calls
        .iter()
        .filter(|c| matches!(c, Call::ListDir(_)))
        .count();
    let replayed = time(runs, || calls.iter().map(replay).sum::<usize>());

    let us = |d: Duration| d.as_secs_f64() * 1e6 / n as f64;
    let cell = |(med, min): (Duration, Duration)| format!("{:.2} [{:.2}]", us(med), us(min));
    println!(
        "## Side by side: plugin.yaml, {n} declarations ({} KiB), {offerable} available (ours), {runs} runs\n\nAllocator: {}.\n",
        yaml.len() / 1024,
        allocator::NAME
    );
    println!("| step | µs per declaration, median [min] |");
    println!("|---|---|");
    println!("| ours: load + validate | {} |", cell(load));
    println!(
        "| ours: evaluate (availability, real files) | {} |",
        cell(evaluate)
    );
    println!("| ours: end to end | {} |", cell(end_to_end));

    let peer_dir = std::env::var_os("WASMGATE_PEER_HERMES");
    let peer = match (&peer_dir, &python) {
        (Some(dir), Some(py)) => {
            let script =
                Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/peer/hermes_bench.py");
            let out = Command::new(py)
                .arg(&script)
                .arg(&yaml_path)
                .arg(runs.to_string())
                .env("WASMGATE_PEER_HERMES", dir)
                .env("HOME", &home)
                .env("PATH", &path_var)
                .env_remove("XDG_DATA_HOME")
                // Leave no __pycache__ in the original's checkout.
                .env("PYTHONDONTWRITEBYTECODE", "1")
                .output()?;
            anyhow::ensure!(
                out.status.success(),
                "the original's driver failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            Some(serde_json::from_slice::<Peer>(&out.stdout)?)
        }
        _ => None,
    };
    match &peer {
        Some(p) => {
            let c = |(med, min): (f64, f64)| format!("{med:.2} [{min:.2}]");
            println!("| original: parse (decoded mapping) | {} |", c(p.parse_us));
            println!("| original: availability | {} |", c(p.availability_us));
            println!(
                "| original: parse + availability | {} |",
                c(p.parse_availability_us)
            );
            println!(
                "| original: decode (yaml.safe_load, once; not compared) | {:.2} |",
                p.decode_us
            );
            let ratio = p.parse_availability_us.0 / us(end_to_end.0);
            let ratio_min = p.parse_availability_us.1 / us(end_to_end.1);
            println!(
                "\nOriginal parse + availability ÷ our end to end: {ratio:.2}× (medians), {ratio_min:.2}× (minima); target ≥ 5×."
            );
            println!(
                "Evaluate alone: {:.2}× (medians). Python {}; process or socket audit events in the original: {}.",
                p.availability_us.0 / us(evaluate.0),
                p.python,
                p.forbidden_events.len()
            );
            let mut states = 0;
            let mut paths = 0;
            let mut shown = 0;
            for (d, (state, path)) in decls.iter().zip(&ours) {
                let Some((ps, pp)) = p.outcomes.get(&d.name) else {
                    states += 1;
                    continue;
                };
                if ps != state {
                    states += 1;
                } else if pp != path {
                    paths += 1;
                } else {
                    continue;
                }
                if shown < 5 {
                    shown += 1;
                    println!(
                        "  differs: {} ours {state} {path:?}, original {ps} {pp:?}",
                        d.name
                    );
                }
            }
            println!(
                "Outcomes that differ: {states} of {n} by state, {paths} more by reported path only."
            );
        }
        None => println!(
            "\nThe original was not run: set WASMGATE_PEER_HERMES to a checkout of it \
             (git clone {PEER_REPO} && git -C hermes-agent checkout {PEER_COMMIT}) \
             and have python3 with PyYAML (or WASMGATE_PEER_PYTHON){}.",
            if python.is_none() {
                "; no python3 was found on PATH"
            } else {
                ""
            }
        ),
    }

    println!(
        "\nFile-system calls per declaration: {:.2} ({total_calls} in all, {lists} listings).",
        total_calls as f64 / n as f64
    );
    println!("| kind | fs calls per declaration |");
    println!("|---|---|");
    for (k, (name, c)) in KINDS.iter().zip(per_kind).enumerate() {
        // Declarations of kind k: i % 5 == k for i < n.
        let count = (n + 4 - k) / 5;
        println!("| {name} | {:.2} |", c as f64 / count.max(1) as f64);
    }
    if std::env::var_os("WASMGATE_PEER_KEEP").is_some() {
        println!(
            "\nKept the folder (WASMGATE_PEER_KEEP): {}",
            tmp.keep().display()
        );
    }
    println!(
        "\navailability() on parsed declarations: {} µs; its file-system calls replayed alone: {} µs; ratio {:.2} (target ≤ 2).",
        cell(evaluate),
        cell(replayed),
        evaluate.0.as_secs_f64() / replayed.0.as_secs_f64()
    );
    Ok(())
}
