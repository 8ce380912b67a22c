//! The win32 build of `wasmgate` under Wine: real Win32 registry, file and
//! environment APIs, checked against the simulated win32 host
//! (`docs/simulated-host.md` §5 says what this proves and what it does not).
//!
//! Needs `wine64` (Debian's `wine64` package), the mingw tools
//! (`x86_64-w64-mingw32-gcc`, `x86_64-w64-mingw32-windres`) and
//! `target/x86_64-pc-windows-gnu/debug/wasmgate.exe` (`cargo xtask test`
//! builds it when Wine is present; by hand: `cargo build -p wasmgate --bin
//! wasmgate --target x86_64-pc-windows-gnu`). Without them every test here
//! prints why and passes, unless `WASMGATE_REQUIRE_WINE=1` (set by
//! `.ci/run`), which makes a missing piece a failure.
//!
//! One fresh `WINEPREFIX` per test process, under `target/wine-tests/`.
//! Every scenario writes its own registry entries (`wine reg add`) and files
//! under its own `C:\wg\<scenario>` folder, lays out the same facts as a
//! simulated host, and runs `wasmgate availability --json` both ways: the
//! two documents must be equal, and the real one must say what the rules
//! (`docs/declarations.md` §3–§5) say.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{Value as Json, json};
use wasmgate_conformance::{wasmgate_bin, workspace_root};

/// How long one Wine or mingw command may take (a cold `wineboot` is the
/// slowest, a few seconds on an idle machine).
const CALL_TIMEOUT: Duration = Duration::from_secs(180);

/// How often a program Wine could not start is started again (see
/// `Wine::run`).
const WINE_START_TRIES: u32 = 3;

const UNINSTALL: &str = r"SOFTWARE\Microsoft\Windows\CurrentVersion\Uninstall";
const DISPLAY_CLASS: &str =
    r"HKLM\SYSTEM\CurrentControlSet\Control\Class\{4d36e968-e325-11ce-bfc1-08002be10318}";

/// The one Wine setup of this test process.
struct Wine {
    /// `wine64` (or `wine`).
    wine: PathBuf,
    /// The win32 `wasmgate.exe` under test.
    exe: PathBuf,
    /// The fresh `WINEPREFIX`.
    prefix: PathBuf,
    /// Scratch folder on the Linux side (fixture builds, simulated hosts).
    scratch: PathBuf,
    /// A `cmd.exe` reading this process's pipe: it keeps one Wine session
    /// (wineserver) up for the whole test process, so Wine does not write
    /// its own display adapter again at a new session's start. It ends when
    /// this process does (its stdin closes).
    _session: Option<std::process::Child>,
}

/// Why the suite cannot run here, or the setup. With
/// `WASMGATE_REQUIRE_WINE=1` a missing piece panics instead.
fn wine() -> Option<&'static Wine> {
    static WINE: OnceLock<Result<Wine, String>> = OnceLock::new();
    match WINE.get_or_init(set_up) {
        Ok(w) => Some(w),
        Err(why) => {
            if std::env::var("WASMGATE_REQUIRE_WINE").as_deref() == Ok("1") {
                panic!("WASMGATE_REQUIRE_WINE=1 but the Wine suite cannot run: {why}");
            }
            logged(&format!(
                "SKIPPED: the Windows suite under Wine does not run here: {why}"
            ));
            None
        }
    }
}

/// Writes a line (why a test skipped, a retried Wine start) to the real
/// stderr: the test harness captures `eprintln!`, and these must be seen in
/// the log.
fn logged(why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{why}");
}

fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The win32 build beside this test's profile folder:
/// `target/x86_64-pc-windows-gnu/debug/wasmgate.exe`.
fn windows_exe(name: &str) -> PathBuf {
    if let Some(p) = std::env::var_os("WASMGATE_WINDOWS_BIN_DIR") {
        return PathBuf::from(p).join(format!("{name}.exe"));
    }
    let host_bin = wasmgate_bin();
    let target = host_bin
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| workspace_root().join("target"));
    target
        .join("x86_64-pc-windows-gnu/debug")
        .join(format!("{name}.exe"))
}

/// Removes the prefixes of earlier test processes that have exited (each
/// is about 700 MB, and the `Wine` in a static is never dropped, so every
/// run left one behind). A folder whose process still runs (a concurrent
/// run) is kept.
fn remove_dead_prefixes(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if pid != std::process::id() && !Path::new("/proc").join(pid.to_string()).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

fn set_up() -> Result<Wine, String> {
    let wine = [
        Path::new("/usr/lib/wine/wine64").to_path_buf(),
        which("wine64").unwrap_or_default(),
        which("wine").unwrap_or_default(),
    ]
    .into_iter()
    .find(|p| p.is_file())
    .ok_or("no wine64 (Debian: apt-get install wine64)")?;
    for tool in ["x86_64-w64-mingw32-gcc", "x86_64-w64-mingw32-windres"] {
        which(tool).ok_or(format!(
            "no {tool} (Debian: apt-get install gcc-mingw-w64-x86-64)"
        ))?;
    }
    let exe = windows_exe("wasmgate");
    if !exe.is_file() {
        return Err(format!(
            "{} is missing (cargo build -p wasmgate --bin wasmgate --target x86_64-pc-windows-gnu)",
            exe.display()
        ));
    }
    let tests_dir = workspace_root().join("target/wine-tests");
    remove_dead_prefixes(&tests_dir);
    let base = tests_dir.join(std::process::id().to_string());
    let _ = std::fs::remove_dir_all(&base);
    let prefix = base.join("prefix");
    let scratch = base.join("scratch");
    std::fs::create_dir_all(&prefix).map_err(|e| format!("{}: {e}", prefix.display()))?;
    std::fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let mut w = Wine {
        wine,
        exe,
        prefix,
        scratch,
        _session: None,
    };
    let boot = w.run(&[OsStr::new("wineboot"), OsStr::new("-i")], &[])?;
    if !boot.status.success() {
        return Err(format!("wineboot -i failed: {}", shown(&boot)));
    }
    let mut session = w.command(&[OsStr::new("cmd")], &[]);
    session
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    w._session = Some(session.spawn().map_err(|e| format!("wine cmd: {e}"))?);
    // The session's desktop writes Wine's own adapter once, now.
    let desktop = w.run(
        &[OsStr::new("cmd"), OsStr::new("/c"), OsStr::new("echo")],
        &[],
    )?;
    if !desktop.status.success() {
        return Err(format!("wine cmd /c echo failed: {}", shown(&desktop)));
    }
    // Rust's std takes its random bytes from bcryptprimitives.dll's
    // ProcessPrng (since 1.78); Wine 8.0 has no such DLL. The stub is built
    // from source here and placed in the prefix's system32.
    let system32 = w.prefix.join("drive_c/windows/system32");
    mingw(&[
        "x86_64-w64-mingw32-gcc",
        "-shared",
        "-O2",
        "-o",
        &system32.join("bcryptprimitives.dll").to_string_lossy(),
        &workspace_root()
            .join("tests/wine/bcryptprimitives.c")
            .to_string_lossy(),
        "-ladvapi32",
    ])?;
    // PATHEXT comes from the registry, not from the Unix environment: a
    // list without `.BAT` shows that the real value is the one used.
    w.reg(&[
        "add",
        r"HKCU\Environment",
        "/v",
        "PATHEXT",
        "/t",
        "REG_SZ",
        "/d",
        ".COM;.EXE;.CMD",
        "/f",
    ])?;
    let version = w.run(&[w.exe.as_os_str(), OsStr::new("--version")], &[])?;
    if !version.status.success() {
        return Err(format!(
            "wasmgate.exe --version failed: {}",
            shown(&version)
        ));
    }
    Ok(w)
}

fn shown(out: &Output) -> String {
    format!(
        "{}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs `c` to its end, killed after [`CALL_TIMEOUT`].
fn bounded(mut c: Command) -> Result<Output, String> {
    use std::io::Read as _;
    let what = format!("{c:?}");
    c.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().map_err(|e| format!("{what}: {e}"))?;
    // Each pipe is read into a shared buffer as it arrives: Wine's daemons
    // (wineserver, the services wineboot starts) inherit the pipes and may
    // hold them open long after the program ended, so waiting for EOF
    // could wait forever.
    let read = |p: Option<Box<dyn std::io::Read + Send>>| {
        let buf = std::sync::Arc::new(Mutex::new(Vec::new()));
        let sink = buf.clone();
        let done = std::thread::spawn(move || {
            let Some(mut p) = p else { return };
            let mut chunk = [0u8; 8192];
            while let Ok(n) = p.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .extend_from_slice(&chunk[..n]);
            }
        });
        (buf, done)
    };
    let (out_buf, out_done) = read(child.stdout.take().map(|p| Box::new(p) as _));
    let (err_buf, err_done) = read(child.stderr.take().map(|p| Box::new(p) as _));
    let deadline = Instant::now() + CALL_TIMEOUT;
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{what}: still running after {CALL_TIMEOUT:?}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // What the program wrote before it ended is in the pipe: a short grace
    // lets the readers drain it; a pipe a daemon still holds is left.
    let grace = Instant::now() + Duration::from_secs(2);
    while !(out_done.is_finished() && err_done.is_finished()) && Instant::now() < grace {
        std::thread::sleep(Duration::from_millis(10));
    }
    let take =
        |b: &Mutex<Vec<u8>>| std::mem::take(&mut *b.lock().unwrap_or_else(|e| e.into_inner()));
    Ok(Output {
        status,
        stdout: take(&out_buf),
        stderr: take(&err_buf),
    })
}

fn mingw(args: &[&str]) -> Result<(), String> {
    let mut c = Command::new(args[0]);
    c.args(&args[1..]);
    let out = bounded(c)?;
    if !out.status.success() {
        return Err(format!("{args:?}: {}", shown(&out)));
    }
    Ok(())
}

impl Wine {
    /// `wine <args>` in the test prefix, headless, with `env` added.
    fn command(&self, args: &[&OsStr], env: &[(&str, &str)]) -> Command {
        let mut c = Command::new(&self.wine);
        c.args(args)
            .env("WINEPREFIX", &self.prefix)
            .env("WINEDEBUG", "-all")
            // No Mono or Gecko install prompt.
            .env("WINEDLLOVERRIDES", "mscoree,mshtml=")
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY");
        for (k, v) in env {
            c.env(k, v);
        }
        c
    }

    /// Runs `wine <args>` to its end. A start that Wine itself failed (its
    /// loader hands a program it could not create to `start.exe`, which
    /// prints "ShellExecuteEx failed"; seen once on a loaded 2-core CI for
    /// `cmd`, which is in every prefix) is tried again, at most
    /// [`WINE_START_TRIES`] times: it is not an answer of the program.
    /// So is a failure with no output at all (seen once on CI for
    /// `wasmgate.exe call`, with `WINEDEBUG=-all` silencing Wine's own
    /// message): every program run here says why it failed — wasmgate on
    /// stderr or as `--json` on stdout, `reg`, `cmd` and `taskkill` too.
    /// Each retry is written to the real stderr, so a log shows it.
    fn run(&self, args: &[&OsStr], env: &[(&str, &str)]) -> Result<Output, String> {
        let mut tries = 1;
        loop {
            let out = bounded(self.command(args, env))?;
            let failed = !out.status.success();
            let start_failed =
                failed && String::from_utf8_lossy(&out.stdout).contains("ShellExecuteEx failed");
            let silent = failed && out.stdout.is_empty() && out.stderr.is_empty();
            if !(start_failed || silent) || tries == WINE_START_TRIES {
                return Ok(out);
            }
            logged(&format!(
                "wine {args:?}: {} with {}; started again (try {} of {WINE_START_TRIES})",
                out.status,
                if silent {
                    "no output"
                } else {
                    "\"ShellExecuteEx failed\""
                },
                tries + 1
            ));
            tries += 1;
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// `wine reg <args>`, which must succeed.
    fn reg(&self, args: &[&str]) -> Result<(), String> {
        let mut all: Vec<&OsStr> = vec![OsStr::new("reg")];
        all.extend(args.iter().map(OsStr::new));
        let out = self.run(&all, &[])?;
        if !out.status.success() {
            return Err(format!("wine reg {args:?}: {}", shown(&out)));
        }
        Ok(())
    }

    /// The Linux path of `C:\…` in the prefix.
    fn host_path(&self, win: &str) -> PathBuf {
        self.prefix.join("drive_c").join(drive_c_relative(win))
    }

    /// The Windows environment a program started with `env` sees.
    fn environment(&self, env: &[(&str, &str)]) -> BTreeMap<String, String> {
        let out = self
            .run(
                &[OsStr::new("cmd"), OsStr::new("/c"), OsStr::new("set")],
                env,
            )
            .expect("wine cmd /c set");
        assert!(out.status.success(), "wine cmd /c set: {}", shown(&out));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.trim_end_matches('\r').split_once('='))
            .filter(|(k, _)| !k.is_empty())
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }
}

/// `C:\a\b` → `a/b`.
fn drive_c_relative(win: &str) -> String {
    let rest = win
        .strip_prefix("C:\\")
        .or_else(|| win.strip_prefix("C:/"))
        .unwrap_or_else(|| panic!("{win}: fixtures live on C:"));
    rest.replace('\\', "/")
}

/// One uninstall entry, written with `wine reg add` and as a simulated
/// host's `registry.uninstall` item.
struct Entry {
    hive: &'static str,
    view: u8,
    key: &'static str,
    display_name: &'static str,
    display_version: Option<&'static str>,
    install_location: Option<&'static str>,
}

/// The facts of one scenario: uninstall entries, files and the Unix
/// environment Wine starts the program with (`WINEPATH` goes before the
/// Windows `PATH`).
#[derive(Default)]
struct Scenario {
    name: &'static str,
    /// The `mcp_servers` mapping of the plugin.yaml.
    servers: &'static str,
    uninstall: Vec<Entry>,
    files: Vec<(String, Vec<u8>)>,
    dirs: Vec<String>,
    env: Vec<(&'static str, &'static str)>,
    /// The display-adapter class key's subkeys (key, MatchingDeviceId);
    /// `None` leaves the registry's own.
    adapters: Option<Adapters>,
}

/// Display-adapter subkeys: (key, MatchingDeviceId).
type Adapters = Vec<(&'static str, Option<&'static str>)>;

/// Scenarios that rewrite the display-adapter class key run one at a time.
static DISPLAY_KEY: Mutex<()> = Mutex::new(());

/// Lays `s` out under Wine and as a simulated host, runs `availability
/// --json` both ways, asserts they agree and returns the servers by name.
fn evaluate(w: &Wine, s: &Scenario) -> BTreeMap<String, Json> {
    for e in &s.uninstall {
        let key = format!(r"{}\{UNINSTALL}\{}", e.hive, e.key);
        let view = format!("/reg:{}", e.view);
        let mut values = vec![("DisplayName", e.display_name)];
        values.extend(e.display_version.map(|v| ("DisplayVersion", v)));
        values.extend(e.install_location.map(|v| ("InstallLocation", v)));
        for (name, data) in values {
            let mut args = vec![
                "add",
                key.as_str(),
                "/v",
                name,
                "/t",
                "REG_SZ",
                "/d",
                data,
                "/f",
            ];
            if e.hive == "HKLM" {
                args.push(&view);
            }
            w.reg(&args).unwrap();
        }
    }
    if let Some(adapters) = &s.adapters {
        // The prefix's own adapter ("Wine Adapter") goes; only the test's
        // subkeys remain.
        w.reg(&["delete", DISPLAY_CLASS, "/f"]).unwrap();
        w.reg(&["add", DISPLAY_CLASS, "/f"]).unwrap();
        for (key, id) in adapters {
            let sub = format!(r"{DISPLAY_CLASS}\{key}");
            match id {
                Some(id) => w
                    .reg(&[
                        "add",
                        sub.as_str(),
                        "/v",
                        "MatchingDeviceId",
                        "/t",
                        "REG_SZ",
                        "/d",
                        id,
                        "/f",
                    ])
                    .unwrap(),
                None => w.reg(&["add", sub.as_str(), "/f"]).unwrap(),
            }
        }
    }
    let sim = w.scratch.join(s.name);
    let _ = std::fs::remove_dir_all(&sim);
    for (win, bytes) in &s.files {
        for p in [
            w.host_path(win),
            sim.join("root/C").join(drive_c_relative(win)),
        ] {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, bytes).unwrap();
        }
    }
    for win in &s.dirs {
        std::fs::create_dir_all(w.host_path(win)).unwrap();
        std::fs::create_dir_all(sim.join("root/C").join(drive_c_relative(win))).unwrap();
    }
    let plugin = format!(
        "name: wine-{}\nversion: 1.0.0\nmcp_servers:\n{}",
        s.name, s.servers
    );
    let plugin_win = format!(r"C:\wg\{}\plugin.yaml", s.name);
    let plugin_host = w.host_path(&plugin_win);
    std::fs::create_dir_all(plugin_host.parent().unwrap()).unwrap();
    std::fs::write(&plugin_host, &plugin).unwrap();

    // The simulated host: the same environment Windows gives the program,
    // the same uninstall entries in enumeration order (HKLM 64, HKLM 32,
    // HKCU; keys sorted as the registry keeps them), the same adapters.
    let env = w.environment(&s.env);
    let mut entries: Vec<&Entry> = s.uninstall.iter().collect();
    entries.sort_by_key(|e| {
        (
            match (e.hive, e.view) {
                ("HKLM", 64) => 0,
                ("HKLM", _) => 1,
                _ => 2,
            },
            e.key.to_ascii_lowercase(),
        )
    });
    let uninstall: Vec<Json> = entries
        .iter()
        .map(|e| {
            let mut m = json!({"hive": e.hive, "key": e.key, "DisplayName": e.display_name});
            if e.hive == "HKLM" {
                m["view"] = json!(e.view);
            }
            if let Some(v) = e.display_version {
                m["DisplayVersion"] = json!(v);
            }
            if let Some(v) = e.install_location {
                m["InstallLocation"] = json!(v);
            }
            m
        })
        .collect();
    let mut registry = json!({"uninstall": uninstall});
    if let Some(adapters) = &s.adapters {
        registry["display_adapters"] = adapters
            .iter()
            .map(|(k, id)| match id {
                Some(id) => json!({"key": k, "MatchingDeviceId": id}),
                None => json!({"key": k}),
            })
            .collect();
    }
    let host = json!({
        "os": "win32",
        "home": env.get("USERPROFILE"),
        "env": env,
        "registry": registry,
    });
    std::fs::create_dir_all(sim.join("root")).unwrap();
    std::fs::write(sim.join("host.yaml"), yaml_serde::to_string(&host).unwrap()).unwrap();
    let sim_plugin = sim.join("plugin.yaml");
    std::fs::write(&sim_plugin, &plugin).unwrap();

    let real = w
        .run(
            &[
                w.exe.as_os_str(),
                OsStr::new("availability"),
                OsStr::new(&plugin_win),
                OsStr::new("--json"),
            ],
            &s.env,
        )
        .unwrap();
    assert!(
        real.status.success(),
        "wasmgate.exe availability under Wine: {}",
        shown(&real)
    );
    let mut c = Command::new(wasmgate_bin());
    c.arg("availability")
        .arg(&sim_plugin)
        .arg("--host")
        .arg(&sim)
        .arg("--json");
    let simulated = bounded(c).unwrap();
    assert!(
        simulated.status.success(),
        "wasmgate availability --host: {}",
        shown(&simulated)
    );
    let real_doc: Json = serde_json::from_slice(&real.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", shown(&real)));
    let sim_doc: Json = serde_json::from_slice(&simulated.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", shown(&simulated)));
    assert_eq!(
        real_doc, sim_doc,
        "scenario {}: the real win32 build under Wine and the simulated win32 host disagree\nreal: {real_doc:#}\nsimulated: {sim_doc:#}",
        s.name
    );
    real_doc
        .as_array()
        .expect("availability --json is an array")
        .iter()
        .map(|e| (e["server"].as_str().unwrap().to_string(), e.clone()))
        .collect()
}

/// Asserts the named fields of server `name`.
#[track_caller]
fn expect(doc: &BTreeMap<String, Json>, name: &str, want: Json) {
    let got = doc
        .get(name)
        .unwrap_or_else(|| panic!("no server {name} in {doc:#?}"));
    for (k, v) in want.as_object().unwrap() {
        assert_eq!(&got[k], v, "server {name}, field {k}: {got:#}");
    }
}

/// A PE executable built by mingw: a trivial `main` and, when `rc` is
/// given, that version resource compiled by `windres`.
fn pe(w: &Wine, name: &str, rc: Option<&str>) -> Vec<u8> {
    let dir = w.scratch.join("pe").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let main = dir.join("main.c");
    std::fs::write(&main, "int main(void) { return 0; }\n").unwrap();
    let exe = dir.join("thing.exe");
    let mut args = vec![
        "x86_64-w64-mingw32-gcc".to_string(),
        "-o".into(),
        exe.to_string_lossy().into_owned(),
        main.to_string_lossy().into_owned(),
    ];
    if let Some(rc) = rc {
        let rc_path = dir.join("version.rc");
        std::fs::write(&rc_path, rc).unwrap();
        let obj = dir.join("version.o");
        mingw(&[
            "x86_64-w64-mingw32-windres",
            &rc_path.to_string_lossy(),
            "-O",
            "coff",
            "-o",
            &obj.to_string_lossy(),
        ])
        .unwrap();
        args.push(obj.to_string_lossy().into_owned());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    mingw(&args).unwrap();
    std::fs::read(&exe).unwrap()
}

/// A `.rc` with a fixed file version and a string table that disagree.
fn version_rc(fixed: &str, file_version: Option<&str>, product_version: &str) -> String {
    let file = file_version
        .map(|v| format!("      VALUE \"FileVersion\", \"{v}\"\n"))
        .unwrap_or_default();
    format!(
        "#include <winver.h>\n\
         1 VERSIONINFO\n\
         FILEVERSION {fixed}\n\
         PRODUCTVERSION 9,9,9,9\n\
         BEGIN\n\
         \x20 BLOCK \"StringFileInfo\"\n\
         \x20 BEGIN\n\
         \x20   BLOCK \"040904b0\"\n\
         \x20   BEGIN\n\
         {file}\
         \x20     VALUE \"ProductVersion\", \"{product_version}\"\n\
         \x20   END\n\
         \x20 END\n\
         \x20 BLOCK \"VarFileInfo\"\n\
         \x20 BEGIN\n\
         \x20   VALUE \"Translation\", 0x409, 1200\n\
         \x20 END\n\
         END\n"
    )
}

#[test]
fn uninstall_entries_in_every_view_with_versions_and_every_copy() {
    let Some(w) = wine() else { return };
    let exe = b"MZ not run, only looked at".to_vec();
    let local = w.environment(&[])["LOCALAPPDATA"].clone();
    let s = Scenario {
        name: "reg",
        servers: r#"
  view64:
    command: view64.exe
    app: {win32: {presence: executable, location: [{kind: uninstall_registry, display_name_prefix: WgView64, file: bin/view64.exe}], version: {kind: uninstall_registry, display_name_prefix: WgView64}}}
    requires: {app: true, min_version: '2.0'}
  view32:
    command: view32.exe
    app: {win32: {presence: executable, location: [{kind: uninstall_registry, display_name_prefix: WgView32, file: view32.exe}], version: {kind: uninstall_registry, display_name_prefix: WgView32}}}
    requires: {app: true, min_version: '3.1'}
  peruser:
    command: user.exe
    app: {win32: {presence: executable, location: [{kind: uninstall_registry, display_name_prefix: WgUser, file: user.exe}], version: {kind: uninstall_registry, display_name_prefix: WgUser}}}
    requires: {app: true, min_version: '1.0'}
  every-new-enough:
    command: every.exe
    app: {win32: {presence: executable, location: [{kind: uninstall_registry, display_name_prefix: WgEvery, file: every.exe}], version: {kind: uninstall_registry, display_name_prefix: WgEvery}}}
    requires: {app: true, min_version: '2.0'}
  every-too-old:
    command: every.exe
    app: {win32: {presence: executable, location: [{kind: uninstall_registry, display_name_prefix: WgEvery, file: every.exe}], version: {kind: uninstall_registry, display_name_prefix: WgEvery}}}
    requires: {app: true, min_version: '3.0'}
  network-skipped:
    command: unc.exe
    app: {win32: {presence: executable, location: [{kind: uninstall_registry, display_name_prefix: WgUnc, file: unc.exe}]}}
    requires: {app: true}
"#,
        uninstall: vec![
            Entry {
                hive: "HKLM",
                view: 64,
                key: "WgView64_is1",
                display_name: "WgView64 App",
                display_version: Some("2.3.0"),
                install_location: Some(r#""C:\wg\reg\View 64\""#),
            },
            Entry {
                hive: "HKLM",
                view: 32,
                key: "WgView32",
                display_name: "WgView32 App",
                display_version: Some("3.1.4"),
                install_location: Some(r"C:\wg\reg\view32"),
            },
            Entry {
                hive: "HKCU",
                view: 64,
                key: "WgUser",
                display_name: "WgUser App",
                display_version: Some("1.5"),
                install_location: Some(r"%LOCALAPPDATA%\WgUser\"),
            },
            // Every copy: A is too old, B meets 2.0, neither meets 3.0.
            Entry {
                hive: "HKLM",
                view: 64,
                key: "WgEveryA",
                display_name: "WgEvery A",
                display_version: Some("1.9"),
                install_location: Some(r"C:\wg\reg\every-a"),
            },
            Entry {
                hive: "HKLM",
                view: 32,
                key: "WgEveryB",
                display_name: "WgEvery B",
                display_version: Some("2.5"),
                install_location: Some(r"C:\wg\reg\every-b"),
            },
            Entry {
                hive: "HKLM",
                view: 64,
                key: "WgUnc",
                display_name: "WgUnc",
                display_version: None,
                install_location: Some(r"\\127.0.0.1\share\wg"),
            },
        ],
        files: vec![
            (r"C:\wg\reg\View 64\bin\view64.exe".into(), exe.clone()),
            (r"C:\wg\reg\view32\view32.exe".into(), exe.clone()),
            (format!(r"{local}\WgUser\user.exe"), exe.clone()),
            (r"C:\wg\reg\every-a\every.exe".into(), exe.clone()),
            (r"C:\wg\reg\every-b\every.exe".into(), exe.clone()),
        ],
        ..Scenario::default()
    };
    let doc = evaluate(w, &s);
    expect(
        &doc,
        "view64",
        json!({"state": "available", "version": "2.3.0", "path": r"C:\wg\reg\View 64\bin\view64.exe"}),
    );
    expect(
        &doc,
        "view32",
        json!({"state": "available", "version": "3.1.4", "path": r"C:\wg\reg\view32\view32.exe"}),
    );
    let user = &doc["peruser"];
    assert_eq!(user["state"], "available", "{user:#}");
    assert_eq!(user["version"], "1.5", "{user:#}");
    assert!(
        user["path"]
            .as_str()
            .is_some_and(|p| p.ends_with(r"\AppData\Local\WgUser\user.exe")),
        "{user:#}"
    );
    expect(
        &doc,
        "every-new-enough",
        json!({"state": "available", "version": "2.5", "path": r"C:\wg\reg\every-b\every.exe"}),
    );
    expect(
        &doc,
        "every-too-old",
        json!({"state": "version_too_old", "offerable": false, "version": "2.5", "path": r"C:\wg\reg\every-b\every.exe"}),
    );
    expect(
        &doc,
        "network-skipped",
        json!({"state": "missing_app", "offerable": false}),
    );
}

#[test]
fn pe_version_resources_built_by_windres() {
    let Some(w) = wine() else { return };
    let fixed = pe(
        w,
        "fixed",
        Some(&version_rc("2,3,0,12594", Some("7.7.7.7"), "8.8.8.8")),
    );
    let strings = pe(
        w,
        "strings",
        Some(&version_rc("0,0,0,0", Some("1, 2, 3, 4"), "8.8.8.8")),
    );
    let product = pe(w, "product", Some(&version_rc("0,0,0,0", None, "5.6")));
    let none = pe(w, "none", None);
    let s = Scenario {
        name: "pe",
        servers: r#"
  fixed:
    command: thing.exe
    app: {win32: {presence: executable, location: 'C:\wg\pe\fixed\thing.exe', version: {kind: pe_resource}}}
    requires: {app: true, min_version: '2.3'}
  strings:
    command: thing.exe
    app: {win32: {presence: executable, location: 'C:\wg\pe\strings\thing.exe', version: {kind: pe_resource}}}
    requires: {app: true, min_version: '1.2'}
  product:
    command: thing.exe
    app: {win32: {presence: executable, location: 'C:\wg\pe\product\thing.exe', version: {kind: pe_resource}}}
    requires: {app: true, min_version: '6.0'}
  none:
    command: thing.exe
    app: {win32: {presence: executable, location: 'C:\wg\pe\none\thing.exe', version: {kind: pe_resource}}}
    requires: {app: true, min_version: '1.0'}
"#,
        files: vec![
            (r"C:\wg\pe\fixed\thing.exe".into(), fixed),
            (r"C:\wg\pe\strings\thing.exe".into(), strings),
            (r"C:\wg\pe\product\thing.exe".into(), product),
            (r"C:\wg\pe\none\thing.exe".into(), none),
        ],
        ..Scenario::default()
    };
    let doc = evaluate(w, &s);
    // The fixed file info wins over the string table.
    expect(
        &doc,
        "fixed",
        json!({"state": "available", "version": "2.3.0.12594"}),
    );
    // 0.0.0.0 is skipped: the string table's FileVersion, commas as dots.
    expect(
        &doc,
        "strings",
        json!({"state": "available", "version": "1.2.3.4"}),
    );
    // No FileVersion: ProductVersion.
    expect(
        &doc,
        "product",
        json!({"state": "version_too_old", "version": "5.6"}),
    );
    expect(
        &doc,
        "none",
        json!({"state": "version_too_old", "version": null, "path": r"C:\wg\pe\none\thing.exe"}),
    );
}

#[test]
fn environment_folders_path_and_pathext() {
    let Some(w) = wine() else { return };
    let env = w.environment(&[]);
    let program_files = env["ProgramFiles"].clone();
    let local = env["LOCALAPPDATA"].clone();
    let exe = b"MZ".to_vec();
    let s = Scenario {
        name: "env",
        servers: r#"
  program-files:
    command: thing.exe
    app: {win32: {presence: executable, location: '%programfiles%\WgEnv\thing.exe'}}
    requires: {app: true}
  versioned-folders:
    command: thing.exe
    app: {win32: {presence: executable, location: '%LOCALAPPDATA%\WgEnv\Thing *\thing.exe'}}
    requires: {app: true}
  on-path:
    command: wgtool
    app: {win32: {presence: executable, location: {kind: command, name: WgTool}}}
    requires: {app: true}
  network-variable:
    command: thing.exe
    app: {win32: {presence: executable, location: '%WG_SHARE%\thing.exe'}}
    requires: {app: true}
  unset-variable:
    command: thing.exe
    app: {win32: {presence: executable, location: '%WG_UNSET_VARIABLE%\thing.exe'}}
    requires: {app: true}
"#,
        files: vec![
            (format!(r"{program_files}\WgEnv\thing.exe"), exe.clone()),
            (format!(r"{local}\WgEnv\Thing 2.9\thing.exe"), exe.clone()),
            (format!(r"{local}\WgEnv\Thing 2.10\thing.exe"), exe.clone()),
            (format!(r"{local}\WgEnv\Thing beta\thing.exe"), exe.clone()),
            // `.BAT` is not in the prefix's PATHEXT: bin1 is passed over.
            (r"C:\wg\env\bin1\wgtool.bat".into(), exe.clone()),
            // Found through `.EXE` although the name's case differs.
            (r"C:\wg\env\bin2\WGTOOL.EXE".into(), exe.clone()),
            (r"C:\wg\env\bin3\wgtool.exe".into(), exe.clone()),
        ],
        env: vec![
            ("WINEPATH", r"C:\wg\env\bin1;C:\wg\env\bin2;C:\wg\env\bin3"),
            ("WG_SHARE", r"\\127.0.0.1\share"),
        ],
        ..Scenario::default()
    };
    let doc = evaluate(w, &s);
    expect(
        &doc,
        "program-files",
        json!({"state": "available", "path": format!(r"{program_files}\WgEnv\thing.exe")}),
    );
    expect(
        &doc,
        "versioned-folders",
        json!({"state": "available", "path": format!(r"{local}\WgEnv\Thing 2.10\thing.exe")}),
    );
    let on_path = &doc["on-path"];
    assert_eq!(on_path["state"], "available", "{on_path:#}");
    assert!(
        on_path["path"]
            .as_str()
            .is_some_and(|p| p.eq_ignore_ascii_case(r"c:\wg\env\bin2\wgtool.exe")),
        "{on_path:#}"
    );
    expect(
        &doc,
        "network-variable",
        json!({"state": "missing_app", "offerable": false}),
    );
    expect(
        &doc,
        "unset-variable",
        json!({"state": "missing_app", "path": r"%WG_UNSET_VARIABLE%\thing.exe"}),
    );
}

/// `gpu_class()` as `wasmgate status --json` reports it under Wine.
fn status_gpu_class(w: &Wine) -> String {
    let empty = r"C:\wg\gpu\no-plugins";
    std::fs::create_dir_all(w.host_path(empty)).unwrap();
    let config = r"C:\wg\gpu\config.yaml";
    std::fs::write(w.host_path(config), "mcp_servers: {}\n").unwrap();
    let out = w
        .run(
            &[
                w.exe.as_os_str(),
                OsStr::new("--plugins"),
                OsStr::new(empty),
                OsStr::new("--config"),
                OsStr::new(config),
                OsStr::new("--dev"),
                OsStr::new("status"),
                OsStr::new("--json"),
            ],
            &[],
        )
        .unwrap();
    assert!(out.status.success(), "status --json: {}", shown(&out));
    let doc: Json = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", shown(&out)));
    doc["gpu_class"]
        .as_str()
        .unwrap_or_else(|| panic!("no gpu_class: {doc:#}"))
        .to_string()
}

#[test]
fn gpu_class_from_display_adapter_registry() {
    let Some(w) = wine() else { return };
    let _one_at_a_time = DISPLAY_KEY.lock().unwrap_or_else(|e| e.into_inner());
    let servers = r#"
  needs-nvidia:
    command: render.exe
    requires: {gpu: nvidia}
"#;
    let cases: [(&str, Adapters, &str, &str); 4] = [
        (
            "gpu-nvidia",
            vec![
                ("0000", Some(r"PCI\VEN_8086&DEV_A780")),
                ("0001", Some(r"PCI\VEN_10DE&DEV_2684")),
                ("Properties", None),
            ],
            "nvidia",
            "no_requirements",
        ),
        (
            "gpu-amd",
            vec![
                ("0000", Some(r"PCI\VEN_8086&DEV_A780")),
                ("0001", Some(r"PCI\VEN_1002&DEV_73BF")),
            ],
            "amd",
            "unsupported_gpu",
        ),
        (
            "gpu-none",
            vec![("Properties", None)],
            "none",
            "unsupported_gpu",
        ),
        // A numbered subkey without MatchingDeviceId is an unreadable vendor.
        (
            "gpu-unknown",
            vec![("0000", None)],
            "unknown",
            "no_requirements",
        ),
    ];
    for (name, adapters, class, state) in cases {
        let s = Scenario {
            name,
            servers,
            adapters: Some(adapters),
            ..Scenario::default()
        };
        let doc = evaluate(w, &s);
        expect(&doc, "needs-nvidia", json!({"state": state}));
        assert_eq!(status_gpu_class(w), class, "{name}");
    }
}

/// Reads the pid a helper wrote, waiting (bounded) for the file.
fn read_pid(path: &Path) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(pid) = std::fs::read_to_string(path)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            return pid;
        }
        assert!(Instant::now() < deadline, "no pid in {}", path.display());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `wasmgate.exe status --json` of a config with one `app_endpoint` server
/// whose `server_json` names `pid` (a closed loopback port as its URL).
fn liveness_status(w: &Wine, name: &str, pid: u32) -> String {
    let dir = format!(r"C:\wg\mcp\{name}");
    std::fs::create_dir_all(w.host_path(&dir)).unwrap();
    std::fs::write(
        w.host_path(&format!(r"{dir}\server.json")),
        json!({"pid": pid, "http": "http://127.0.0.1:9/mcp", "token": "t0ken-wine"}).to_string(),
    )
    .unwrap();
    let config = format!(r"{dir}\config.yaml");
    std::fs::write(
        w.host_path(&config),
        format!(
            "mcp_servers:\n  live:\n    app_endpoint: true\n    connect_timeout: 10\n    app: {{win32: {{presence: executable, location: 'C:\\wg\\mcp\\hostile-mcp-server.exe', liveness: {{kind: server_json, path: '{dir}\\server.json'}}}}}}\n    requires: {{app: true}}\n"
        ),
    )
    .unwrap();
    let empty = format!(r"{dir}\no-plugins");
    std::fs::create_dir_all(w.host_path(&empty)).unwrap();
    let out = w
        .run(
            &[
                w.exe.as_os_str(),
                OsStr::new("--plugins"),
                OsStr::new(&empty),
                OsStr::new("--config"),
                OsStr::new(&config),
                OsStr::new("status"),
                OsStr::new("--json"),
            ],
            &[],
        )
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        serde_json::from_str::<Json>(&text).is_ok(),
        "status --json: {}",
        shown(&out)
    );
    text
}

#[test]
fn mcp_stdio_server_exe_filtered_env_job_object_and_server_json_liveness() {
    let Some(w) = wine() else { return };
    let server = windows_exe("hostile-mcp-server");
    if !server.is_file() {
        let why = format!(
            "{} is missing (cargo build -p wasmgate-conformance --bin hostile-mcp-server --target x86_64-pc-windows-gnu)",
            server.display()
        );
        if std::env::var("WASMGATE_REQUIRE_WINE").as_deref() == Ok("1") {
            panic!("WASMGATE_REQUIRE_WINE=1: {why}");
        }
        logged(&format!("SKIPPED: {why}"));
        return;
    }
    let server_win = r"C:\wg\mcp\hostile-mcp-server.exe";
    std::fs::create_dir_all(w.host_path(r"C:\wg\mcp")).unwrap();
    std::fs::copy(&server, w.host_path(server_win)).unwrap();

    // A copy started outside wasmgate: its helper is in no job of ours and
    // stays alive — the running process id for server_json.
    let outside_pid_file = r"C:\wg\mcp\outside.pid";
    let mut outside = w.command(
        &[
            OsStr::new(server_win),
            OsStr::new("--helper"),
            OsStr::new(outside_pid_file),
        ],
        &[],
    );
    outside
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut outside = outside.spawn().unwrap();
    let alive_pid = read_pid(&w.host_path(outside_pid_file));

    // The server started by wasmgate.exe with the filtered environment; its
    // helper is in the server's job object.
    let helper_pid_file = r"C:\wg\mcp\helper.pid";
    let config = r"C:\wg\mcp\config.yaml";
    std::fs::write(
        w.host_path(config),
        format!(
            "mcp_servers:\n  h:\n    command: '{server_win}'\n    args: ['--helper', '{helper_pid_file}']\n    connect_timeout: 60\n"
        ),
    )
    .unwrap();
    let empty = r"C:\wg\mcp\no-plugins";
    std::fs::create_dir_all(w.host_path(empty)).unwrap();
    let call = |tool: &str, args: &str| {
        let out = w
            .run(
                &[
                    w.exe.as_os_str(),
                    OsStr::new("--plugins"),
                    OsStr::new(empty),
                    OsStr::new("--config"),
                    OsStr::new(config),
                    OsStr::new("--json"),
                    OsStr::new("call"),
                    OsStr::new(tool),
                    OsStr::new("--args"),
                    OsStr::new(args),
                ],
                &[("WG_SECRET_FOR_WINE_TEST", "do-not-pass")],
            )
            .unwrap();
        assert!(out.status.success(), "call {tool}: {}", shown(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let said = call("mcp_h_say", r#"{"text":"hello from wine"}"#);
    assert!(said.contains("hello from wine"), "{said}");
    let env_text = call("mcp_h_env", "{}");
    let upper = env_text.to_ascii_uppercase();
    assert!(
        upper.contains("SYSTEMROOT"),
        "the baseline keeps SystemRoot: {env_text}"
    );
    assert!(
        !upper.contains("WG_SECRET_FOR_WINE_TEST") && !env_text.contains("do-not-pass"),
        "a variable outside the filtered set reached the server: {env_text}"
    );

    // wasmgate.exe has ended: the job object took the server's helper too.
    let helper_pid = read_pid(&w.host_path(helper_pid_file));
    let dead = liveness_status(w, "dead", helper_pid);
    assert!(
        dead.contains("process is not running"),
        "the helper (pid {helper_pid}) outlived the server's job object: {dead}"
    );
    let alive = liveness_status(w, "alive", alive_pid);
    assert!(
        !alive.contains("process is not running"),
        "a running pid ({alive_pid}) read as not running: {alive}"
    );
    assert!(
        !alive.contains("t0ken-wine"),
        "the token was printed: {alive}"
    );

    // The outside helper is in no job: ended by pid, as a user would.
    let _ = w.run(
        &[
            OsStr::new("taskkill"),
            OsStr::new("/F"),
            OsStr::new("/PID"),
            OsStr::new(&alive_pid.to_string()),
        ],
        &[],
    );
    drop(outside.stdin.take());
    let _ = outside.kill();
    let _ = outside.wait();
}
