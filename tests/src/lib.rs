//! Shared helpers for the conformance tests.
//!
//! The example plugins are real components built from source. The first
//! test that needs them runs `cargo xtask plugins` (once per test process,
//! and serialised across processes by a file lock); the nested cargo uses
//! `target/guest` as its target folder, so it never waits on the lock the
//! outer `cargo test` holds on `target/`. Cargo's own up-to-date checks make
//! later runs cheap.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

mod git;
mod sibling;
pub use git::{git, git_repo};
pub use sibling::sibling_bin;

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ lives one level below the workspace root")
        .to_path_buf()
}

/// Runs `cargo xtask <task>` (as `cargo run -p xtask`) under the
/// cross-process lock `target/<task>.lock`.
fn xtask(task: &str) -> Result<(), String> {
    let root = workspace_root();
    let target = root.join("target");
    std::fs::create_dir_all(&target).map_err(|e| format!("create {}: {e}", target.display()))?;
    let lock_path = target.join(format!("{task}.lock"));
    let lock = File::create(&lock_path).map_err(|e| format!("{}: {e}", lock_path.display()))?;
    lock.lock()
        .map_err(|e| format!("lock {}: {e}", lock_path.display()))?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .current_dir(&root)
        .env("CARGO_TARGET_DIR", target.join("guest"))
        .args(["run", "--quiet", "--package", "xtask", "--", task])
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    drop(lock);
    if !output.status.success() {
        return Err(format!(
            "`cargo xtask {task}` failed ({}):\n{}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(())
}

fn built(task: &'static str, once: &'static OnceLock<Result<(), String>>, dir: &str) -> PathBuf {
    if let Err(e) = once.get_or_init(|| xtask(task)) {
        panic!("{e}");
    }
    workspace_root().join("target").join(dir)
}

/// `target/plugins`, holding `git/`, `blender/` and `gpu-render/` (each a
/// component plus what it ships), built from source once per test process.
///
/// # Panics
/// When the build fails (the message carries cargo's output).
pub fn plugins_dir() -> PathBuf {
    static ONCE: OnceLock<Result<(), String>> = OnceLock::new();
    built("plugins", &ONCE, "plugins")
}

// `HOSTILE_PLUGINS` and `foreach_hostile_plugin!`, from `tests/build.rs`.
include!(concat!(env!("OUT_DIR"), "/hostile_plugins.rs"));

/// `target/hostile-plugins/<name>.wasm` for the hostile test components of
/// `tests/hostile-plugins/`, built once per test process.
///
/// # Panics
/// When `name` is not one of [`HOSTILE_PLUGINS`], or the build fails.
pub fn hostile_plugin(name: &str) -> PathBuf {
    assert!(
        HOSTILE_PLUGINS.contains(&name),
        "no hostile component {name:?} in tests/hostile-plugins/ (there are {HOSTILE_PLUGINS:?})"
    );
    static ONCE: OnceLock<Result<(), String>> = OnceLock::new();
    built("hostile-plugins", &ONCE, "hostile-plugins").join(format!("{name}.wasm"))
}

/// The `wasmgate` binary under test; see [`sibling_bin`].
pub fn wasmgate_bin() -> PathBuf {
    sibling_bin("wasmgate")
}

/// A folder of this test process for `XDG_CONFIG_HOME`
/// (`target/test-config/<pid>`, emptied on first use): the plugin lock
/// and config defaults of a test never touch the user's.
///
/// # Panics
/// When the folder cannot be created.
pub fn isolated_config_home() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = workspace_root()
            .join("target")
            .join("test-config")
            .join(std::process::id().to_string());
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("create target/test-config/<pid>");
        d
    })
    .clone()
}

/// The `wasmgate` binary as a [`Command`] in development mode
/// (`WASMGATE_DEV=1`: plugins run without approval, and every output says
/// so) with `XDG_CONFIG_HOME` set to [`isolated_config_home`]. Tests that
/// load plugins through the binary start here (or approve first with
/// `wasmgate plugin approve`); a later `.env("XDG_CONFIG_HOME", …)` or
/// `.env_remove("WASMGATE_DEV")` overrides either.
pub fn wasmgate_dev() -> Command {
    let mut c = Command::new(wasmgate_bin());
    c.env("WASMGATE_DEV", "1")
        .env("XDG_CONFIG_HOME", isolated_config_home());
    c
}

/// The `git-mcp-server` binary (the MCP server of the example git plugin);
/// see [`sibling_bin`].
pub fn git_server_bin() -> PathBuf {
    sibling_bin("git-mcp-server")
}

/// A server process a test started, killed and reaped on drop (no clean
/// shutdown is needed; the test's assertions are done by then).
pub struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A `wasmgate serve --http 127.0.0.1:0` process of a test; ended with
/// SIGTERM on drop (killed after 10 s), so its server children are ended too.
pub struct ServedHttp {
    /// The gateway process.
    pub child: std::process::Child,
    /// The MCP endpoint it printed, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
}

impl Drop for ServedHttp {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `wasmgate serve --http 127.0.0.1:0 --refresh-seconds 0` in
/// development mode ([`wasmgate_dev`]) with `args` added (plugins, config, token file) and `$WASMGATE_PLUGINS` /
/// `$WASMGATE_TOKEN` removed; waits (up to 120 s) for the address it prints
/// on stderr. Its stderr lines are echoed with a `[wasmgate]` prefix.
/// `configure` may add environment variables.
pub fn serve_http(args: &[&std::ffi::OsStr], configure: impl FnOnce(&mut Command)) -> ServedHttp {
    serve_http_logged(args, configure, Default::default())
}

/// `wasmgate serve --http --prefix never` in front of one config server
/// `conformance` running `fixture` (the conformance fixture server's path,
/// `env!("CARGO_BIN_EXE_conformance-fixture-server")`) over stdio, with an
/// empty plugin folder in `dir`; the gateway's stderr lines go to `log`.
pub fn serve_fixture_gateway(
    dir: &std::path::Path,
    fixture: &str,
    log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
) -> ServedHttp {
    let cfg = dir.join("gateway.yaml");
    std::fs::write(
        &cfg,
        format!("mcp_servers:\n  conformance:\n    command: \"{fixture}\"\n"),
    )
    .unwrap();
    let plugins = dir.join("no-plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    serve_http_logged(
        &[
            "--prefix".as_ref(),
            "never".as_ref(),
            "--config".as_ref(),
            cfg.as_os_str(),
            "--plugins".as_ref(),
            plugins.as_os_str(),
        ],
        |_| {},
        log,
    )
}

/// [`serve_http`], also keeping every stderr line of the gateway in `log`
/// (for a test that looks for what the gateway or its servers logged).
pub fn serve_http_logged(
    args: &[&std::ffi::OsStr],
    configure: impl FnOnce(&mut Command),
    log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
) -> ServedHttp {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let mut cmd = wasmgate_dev();
    cmd.args(["serve", "--http", "127.0.0.1:0", "--refresh-seconds", "0"])
        .args(args)
        .env_remove("WASMGATE_PLUGINS")
        .env_remove("WASMGATE_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    configure(&mut cmd);
    let mut child = cmd.spawn().expect("spawn wasmgate serve --http");
    let stderr = child.stderr.take().expect("piped stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut sent = false;
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("[wasmgate] {line}");
            // Bounded: a test keeps at most its first 100 000 lines.
            if let Ok(mut log) = log.lock()
                && log.len() < 100_000
            {
                log.push(line.clone());
            }
            if !sent && let Some(url) = line.strip_prefix("wasmgate serve: listening on ") {
                let _ = tx.send(url.trim().to_owned());
                sent = true;
            }
        }
    });
    let url = rx
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("wasmgate serve --http printed its address");
    ServedHttp { child, url }
}

/// A command's stdout as JSON; panics with both streams when it is not.
pub fn stdout_json(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}):\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The entry named `name` in `wasmgate status --json`'s `servers` array;
/// panics with the whole status when there is none.
pub fn status_server<'a>(status: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    status["servers"]
        .as_array()
        .expect("servers array")
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("server {name} in status: {status:#}"))
}

/// The folder `cargo xtask interop` installs the pinned third-party test
/// software into: `$WASMGATE_INTEROP_DIR`, else `<workspace>/target/interop`.
///
/// # Panics
/// When it holds no finished install (its stamp `installed.sha256`), with
/// the command that makes one.
pub fn interop_dir() -> PathBuf {
    let dir = std::env::var_os("WASMGATE_INTEROP_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/interop"));
    assert!(
        dir.join("installed.sha256").is_file(),
        "no interop install in {}: run `cargo xtask interop` (it installs the pinned \
         npm packages and the Python venvs of tests/interop/), or set WASMGATE_INTEROP_DIR",
        dir.display()
    );
    dir
}

/// The Python interpreter of the interop SDK venv (`venv-sdk/bin/python`,
/// with the pins of `tests/interop/requirements-sdk.txt`: the official MCP
/// SDK `mcp==1.30.0` and what it needs). Tests run Python only through it, never
/// the system's `python3`.
///
/// # Panics
/// See [`interop_dir`].
pub fn interop_python() -> PathBuf {
    let python = interop_dir().join("venv-sdk/bin/python");
    assert!(
        python.is_file(),
        "{} is missing: run `cargo xtask interop`",
        python.display()
    );
    python
}

/// Runs the Python script `tests/python/<script>` with `args` under
/// [`interop_python`] and returns the JSON it prints on stdout;
/// `$WASMGATE_PLUGINS` / `$WASMGATE_TOKEN` are removed and `configure` may
/// set more. Panics with both streams when the script fails or prints no
/// JSON.
pub fn python_json(
    script: &str,
    args: &[String],
    configure: impl FnOnce(&mut Command),
) -> serde_json::Value {
    let mut cmd = Command::new(interop_python());
    cmd.arg(workspace_root().join("tests/python").join(script))
        .args(args)
        // A `wasmgate` the script starts inherits these (the SDK's stdio
        // client passes only a few variables; scripts add `--dev` too).
        .env("WASMGATE_DEV", "1")
        .env("XDG_CONFIG_HOME", isolated_config_home())
        .env_remove("WASMGATE_PLUGINS")
        .env_remove("WASMGATE_TOKEN");
    configure(&mut cmd);
    let out = cmd.output().expect("run the interop venv's python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "python client failed ({}):\nstdout: {stdout}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}
