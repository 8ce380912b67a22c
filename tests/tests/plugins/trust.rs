//! The plugin lock through the real binary and real processes
//! (`docs/security.md`, "Plugins are untrusted: the threat model"): an unapproved plugin in the default
//! folder starts no process (a marker file its command would create stays
//! absent); `plugin approve` lets it run; a changed shipped file or command
//! line holds it back with the diff; a component's SHA-256 is pinned;
//! minisign signatures with a trusted key configured (signed, unsigned,
//! tampered); `plugin add https://127.0.0.1:…` with a right and a wrong
//! `--sha256`; a real server's rug pull through `tools/list_changed`
//! withholds only that tool, and approving it tells gateway clients.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use wasmgate_conformance::{
    git_server_bin, interop_python, plugins_dir, stdout_json, wasmgate_bin, workspace_root,
};

/// A user of their own: config dir, default plugins folder, compile cache.
struct User {
    tmp: tempfile::TempDir,
}

impl User {
    fn new() -> User {
        let u = User {
            tmp: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(u.plugins()).unwrap();
        u
    }
    fn xdg(&self) -> PathBuf {
        self.tmp.path().join("xdg")
    }
    /// `<user config dir>/wasmgate/plugins`: the default `--plugins`.
    fn plugins(&self) -> PathBuf {
        self.xdg().join("wasmgate").join("plugins")
    }
    fn lock(&self) -> PathBuf {
        self.xdg().join("wasmgate").join("plugins.lock")
    }
    fn lock_json(&self) -> Value {
        serde_json::from_slice(&std::fs::read(self.lock()).unwrap()).unwrap()
    }
    /// `wasmgate ARGS` as this user, not in development mode.
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(wasmgate_bin());
        c.args(args)
            .current_dir(self.tmp.path())
            .env("XDG_CONFIG_HOME", self.xdg())
            .env("HOME", self.tmp.path())
            .env("WASMGATE_CACHE", self.tmp.path().join("cache"))
            .env_remove("WASMGATE_DEV")
            .env_remove("WASMGATE_PLUGINS")
            .env_remove("WASMGATE_CONFIG")
            .env_remove("SSL_CERT_FILE")
            .stdin(Stdio::null());
        c
    }
    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("wasmgate runs")
    }
    fn status(&self) -> Value {
        let out = self.run(&["status", "--json"]);
        assert!(out.status.success(), "{}", text(&out));
        stdout_json(&out)
    }
}

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn plugin<'a>(status: &'a Value, name: &str) -> &'a Value {
    status["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("plugin {name} in {status:#}"))
}

fn has_server(status: &Value, name: &str) -> bool {
    status["servers"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["name"] == name)
}

/// A `plugin.yaml` plugin `marker` whose server is `/bin/sh server.sh
/// MARKER git-mcp-server EXTRA…`: the script touches MARKER, then runs the
/// real git MCP server.
fn write_marker_plugin(dir: &Path, marker: &Path, extra: &[&str]) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("server.sh"),
        "#!/bin/sh\ntouch \"$1\"\nshift\nexec \"$@\"\n",
    )
    .unwrap();
    let mut args = vec![
        dir.join("server.sh").display().to_string(),
        marker.display().to_string(),
        git_server_bin().display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    std::fs::write(
        dir.join("plugin.yaml"),
        format!(
            "name: marker\nversion: \"0.1.0\"\nmcp_servers:\n  marker:\n    command: /bin/sh\n    args: [{}]\n",
            args.join(", ")
        ),
    )
    .unwrap();
}

#[test]
fn an_unapproved_plugin_starts_nothing_until_approved_and_a_change_holds_it_back() {
    let u = User::new();
    let dir = u.plugins().join("marker");
    let marker = u.tmp.path().join("MARKER");
    write_marker_plugin(&dir, &marker, &[]);

    // Not in the lock: held back by status, tools and call.
    let st = u.status();
    let p = plugin(&st, "marker");
    assert_eq!(p["trust"]["state"], "unapproved", "{st:#}");
    let approve = p["trust"]["approve"].as_str().unwrap();
    assert!(
        approve.starts_with("wasmgate plugin approve marker"),
        "{approve}"
    );
    assert!(!has_server(&st, "marker"), "{st:#}");
    assert_eq!(st["trust"]["dev"], false);
    // `tools` and `skills` say what they leave out, and why.
    for cmd in ["tools", "skills"] {
        let out = u.run(&[cmd]);
        assert!(out.status.success(), "{}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr)
                .contains("plugin marker is unapproved and held back; see `wasmgate status`"),
            "{cmd}: {}",
            text(&out)
        );
    }
    let out = u.run(&["call", "mcp_marker_log", "--args", "{}"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("plugin 'marker' is unapproved and held back"),
        "{}",
        text(&out)
    );
    let out = u.run(&["status"]);
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("unapproved: held back"), "{s}");
    assert!(
        s.contains("approve with: wasmgate plugin approve marker"),
        "{s}"
    );
    // The log says why nothing started, not "no MCP servers configured".
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(!e.contains("no MCP servers configured"), "{e}");
    assert!(
        e.contains("held back: marker is unapproved (approve with: wasmgate plugin approve marker"),
        "{e}"
    );
    assert!(!marker.exists(), "an unapproved plugin's command ran");

    // Inspect shows the command line without running it.
    let out = u.run(&["plugin", "inspect", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("runs: /bin/sh"), "{s}");
    assert!(s.contains("server.sh"), "{s}");
    assert!(s.contains("sha256: "), "{s}");
    assert!(!marker.exists());

    // Approve: it runs, and its tools are pinned.
    let out = u.run(&["plugin", "approve", "marker"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("approved marker"));
    let lock = u.lock_json();
    assert!(
        lock["plugins"]["marker"]["tools"]["marker"]["log"]["sha256"].is_string(),
        "{lock:#}"
    );
    std::fs::remove_file(&marker).unwrap();
    let st = u.status();
    assert_eq!(
        plugin(&st, "marker")["trust"]["state"],
        "approved",
        "{st:#}"
    );
    let srv = wasmgate_conformance::status_server(&st, "marker");
    assert_eq!(srv["connection"], "connected", "{st:#}");
    assert!(
        srv["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "mcp_marker_log"),
        "{st:#}"
    );
    assert!(marker.exists(), "the approved plugin ran");
    std::fs::remove_file(&marker).unwrap();

    // A shipped file changed: held back, with the file named.
    std::fs::write(
        dir.join("server.sh"),
        "#!/bin/sh\ntouch \"$1\"\nshift\necho pwned >&2\nexec \"$@\"\n",
    )
    .unwrap();
    let st = u.status();
    let p = plugin(&st, "marker");
    assert_eq!(p["trust"]["state"], "changed", "{st:#}");
    let changes = p["trust"]["changes"].to_string();
    assert!(changes.contains("file server.sh changed"), "{changes}");
    assert!(changes.contains("SHA-256"), "{changes}");
    assert!(!has_server(&st, "marker"));
    assert!(!marker.exists(), "a changed plugin's command ran");
    let out = u.run(&["plugin", "list"]);
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("marker 0.1.0: changed"), "{s}");
    assert!(s.contains("file server.sh changed"), "{s}");
    let out = u.run(&["plugin", "approve", "marker"]);
    assert!(out.status.success(), "{}", text(&out));
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("changed since its approval"), "{s}");
    assert!(s.contains("file server.sh changed"), "{s}");
    std::fs::remove_file(&marker).unwrap();

    // Its command line changed: held back, the diff names the new argument.
    write_marker_plugin(&dir, &marker, &["--no-such-flag"]);
    let st = u.status();
    let p = plugin(&st, "marker");
    assert_eq!(p["trust"]["state"], "changed", "{st:#}");
    let changes = p["trust"]["changes"].to_string();
    assert!(changes.contains("command line"), "{changes}");
    assert!(changes.contains("--no-such-flag"), "{changes}");
    assert!(!marker.exists(), "a changed plugin's command ran");
    let out = u.run(&["plugin", "list", "--json"]);
    let list = stdout_json(&out);
    assert_eq!(list[0]["state"], "changed", "{list:#}");

    // Development mode trusts it for one run, and says so.
    let out = u.run(&["--dev", "status", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let st = stdout_json(&out);
    assert_eq!(st["trust"]["dev"], true);
    assert_eq!(plugin(&st, "marker")["trust"]["state"], "dev");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("development mode"),
        "{}",
        text(&out)
    );
    assert!(marker.exists(), "--dev runs it");
    // The lock was not touched by --dev: still changed.
    assert_eq!(plugin(&u.status(), "marker")["trust"]["state"], "changed");

    // Remove: lock entry and folder gone.
    let out = u.run(&["plugin", "remove", "marker"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!dir.exists());
    assert!(u.lock_json()["plugins"].get("marker").is_none());
}

/// The versionfile example component (one server with a declaration, a
/// custom version probe; nothing it runs exists here).
fn component() -> PathBuf {
    plugins_dir().join("versionfile").join("versionfile.wasm")
}

/// `bytes` with a custom section appended: another file, same behaviour.
fn tampered(bytes: &[u8]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    out.extend_from_slice(&[0, 5, 4, b'e', b'v', b'i', b'l']);
    out
}

fn inspect_sha(u: &User, path: &Path) -> String {
    let out = u.run(&["plugin", "inspect", "--json", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let v = stdout_json(&out);
    assert_eq!(v["name"], "versionfile", "{v:#}");
    v["sha256"].as_str().unwrap().to_owned()
}

#[test]
fn a_component_is_pinned_by_its_sha256() {
    let u = User::new();
    let file = u.plugins().join("versionfile.wasm");
    std::fs::copy(component(), &file).unwrap();
    let sha = inspect_sha(&u, &file);
    assert_eq!(sha.len(), 64);
    let st = u.status();
    let p = plugin(&st, "versionfile");
    assert_eq!(p["trust"]["state"], "unapproved", "{st:#}");
    assert_eq!(p["trust"]["sha256"], sha.as_str());
    assert!(!has_server(&st, "versionfile"));
    let out = u.run(&["plugin", "approve", "versionfile"]);
    assert!(out.status.success(), "{}", text(&out));
    let st = u.status();
    assert_eq!(plugin(&st, "versionfile")["trust"]["state"], "approved");
    assert!(has_server(&st, "versionfile"), "{st:#}");
    assert_eq!(
        u.lock_json()["plugins"]["versionfile"]["sha256"],
        sha.as_str()
    );

    std::fs::write(&file, tampered(&std::fs::read(component()).unwrap())).unwrap();
    let st = u.status();
    let p = plugin(&st, "versionfile");
    assert_eq!(p["trust"]["state"], "changed", "{st:#}");
    let changes = p["trust"]["changes"].to_string();
    assert!(
        changes.contains(&format!("SHA-256 {}", &sha[..16])),
        "{changes}"
    );
    assert!(!has_server(&st, "versionfile"));

    // --plugins DIR is held to the same lock.
    let other = u.tmp.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::copy(component(), other.join("versionfile.wasm")).unwrap();
    let out = u.run(&["status", "--json", "--plugins", other.to_str().unwrap()]);
    let st = stdout_json(&out);
    // Same content as approved: approved there too.
    assert_eq!(
        plugin(&st, "versionfile")["trust"]["state"],
        "approved",
        "{st:#}"
    );
    std::fs::write(
        other.join("versionfile.wasm"),
        tampered(&std::fs::read(component()).unwrap()),
    )
    .unwrap();
    let out = u.run(&["status", "--json", "--plugins", other.to_str().unwrap()]);
    let st = stdout_json(&out);
    let p = plugin(&st, "versionfile");
    assert_eq!(p["trust"]["state"], "changed", "{st:#}");
    let approve = p["trust"]["approve"].as_str().unwrap();
    assert!(approve.contains("--plugins"), "{approve}");
}

/// A minisign key pair: (public key base64, secret key).
fn keypair() -> (String, minisign::SecretKey, minisign::PublicKey) {
    let kp = minisign::KeyPair::generate_unencrypted_keypair().unwrap();
    (kp.pk.to_base64(), kp.sk, kp.pk)
}

fn sign(file: &Path, pk: &minisign::PublicKey, sk: &minisign::SecretKey) {
    let data = std::fs::read(file).unwrap();
    let sig = minisign::sign(
        Some(pk),
        sk,
        std::io::Cursor::new(data),
        Some("wasmgate test"),
        None,
    )
    .unwrap();
    let mut path = file.as_os_str().to_owned();
    path.push(".minisig");
    std::fs::write(PathBuf::from(path), sig.to_string()).unwrap();
}

#[test]
fn with_a_trusted_key_add_and_approve_refuse_unsigned_and_tampered_plugins() {
    let u = User::new();
    let (pk_b64, sk, pk) = keypair();
    let cfg = u.tmp.path().join("config.yaml");
    std::fs::write(
        &cfg,
        format!("mcp_servers: {{}}\nplugins:\n  versionfile:\n    trusted_keys: [\"{pk_b64}\"]\n"),
    )
    .unwrap();
    let cfg = cfg.to_str().unwrap().to_owned();
    let src = u.tmp.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    let file = src.join("versionfile.wasm");
    std::fs::copy(component(), &file).unwrap();
    let installed = u.plugins().join("versionfile.wasm");
    let add = |u: &User| u.run(&["plugin", "add", file.to_str().unwrap(), "--config", &cfg]);

    // Unsigned: refused, nothing installed.
    let out = add(&u);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("no signature"), "{}", text(&out));
    assert!(!installed.exists());

    // Tampered after signing: refused.
    sign(&file, &pk, &sk);
    std::fs::write(&file, tampered(&std::fs::read(component()).unwrap())).unwrap();
    let out = add(&u);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("does not verify"), "{}", text(&out));
    assert!(!installed.exists());

    // Signed: installed (with its signature) and approved.
    std::fs::copy(component(), &file).unwrap();
    sign(&file, &pk, &sk);
    let out = add(&u);
    assert!(out.status.success(), "{}", text(&out));
    assert!(installed.is_file());
    assert!(u.plugins().join("versionfile.wasm.minisig").is_file());
    assert!(u.lock_json()["plugins"]["versionfile"].is_object());
    // Installing again over it is refused.
    let out = add(&u);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("already exists"), "{}", text(&out));

    // Another key trusted now: approve refuses the installed plugin.
    let (other_b64, _, _) = keypair();
    std::fs::write(
        &cfg,
        format!(
            "mcp_servers: {{}}\nplugins:\n  versionfile:\n    trusted_keys: [\"{other_b64}\"]\n"
        ),
    )
    .unwrap();
    let out = u.run(&["plugin", "approve", "versionfile", "--config", &cfg]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("does not verify"), "{}", text(&out));
    // A key that is not a minisign key is an error naming the field.
    std::fs::write(
        &cfg,
        "mcp_servers: {}\nplugins:\n  versionfile:\n    trusted_keys: [\"not-a-key\"]\n",
    )
    .unwrap();
    let out = u.run(&["plugin", "approve", "versionfile", "--config", &cfg]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("plugins.versionfile.trusted_keys[0]"),
        "{}",
        text(&out)
    );
}

/// `tests/python/https_file_server.py` serving one file; killed on drop.
struct Https {
    _child: wasmgate_conformance::KillOnDrop,
    port: u16,
}

fn https_server(ca: &Path, file: &Path) -> Https {
    let mut child = Command::new(interop_python())
        .arg(workspace_root().join("tests/python/https_file_server.py"))
        .arg(ca)
        .arg(file)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the SDK venv's python (with `cryptography`, installed with the MCP SDK) runs");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(p) = line.strip_prefix("PORT ") {
                let _ = tx.send(p.trim().parse::<u16>().unwrap());
            }
        }
    });
    let port = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the HTTPS server printed its port");
    Https {
        _child: wasmgate_conformance::KillOnDrop(child),
        port,
    }
}

#[test]
fn add_from_an_https_url_checks_the_sha256_before_installing() {
    let u = User::new();
    let ca = u.tmp.path().join("ca.pem");
    let server = https_server(&ca, &component());
    let url = format!("https://127.0.0.1:{}/versionfile.wasm", server.port);
    let sha = inspect_sha(&u, &component());
    let installed = u.plugins().join("versionfile.wasm");
    let add = |sha: Option<&str>| {
        let mut args = vec!["plugin", "add", url.as_str()];
        if let Some(s) = sha {
            args.extend(["--sha256", s]);
        }
        u.cmd(&args)
            .env("SSL_CERT_FILE", &ca)
            .output()
            .expect("wasmgate runs")
    };

    let out = add(None);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("needs --sha256"), "{}", text(&out));

    let wrong = "0".repeat(64);
    let out = add(Some(&wrong));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("SHA-256 mismatch"), "{}", text(&out));
    assert!(text(&out).contains(&sha), "{}", text(&out));
    assert!(!installed.exists());
    assert!(!u.lock().exists() || u.lock_json()["plugins"].get("versionfile").is_none());

    let out = add(Some(&sha));
    assert!(out.status.success(), "{}", text(&out));
    assert!(installed.is_file());
    assert_eq!(
        u.lock_json()["plugins"]["versionfile"]["sha256"],
        sha.as_str()
    );
    assert_eq!(
        plugin(&u.status(), "versionfile")["trust"]["state"],
        "approved"
    );

    // Plain http only to loopback; never to another host.
    let out = u.run(&[
        "plugin",
        "add",
        "http://example.com/x.wasm",
        "--sha256",
        &sha,
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("plain http is allowed only"),
        "{}",
        text(&out)
    );
}

/// A `plugin.yaml` plugin `rug` whose server is `tests/python/rug_server.py`.
fn write_rug_plugin(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let script = workspace_root().join("tests/python/rug_server.py");
    std::fs::write(
        dir.join("plugin.yaml"),
        format!(
            "name: rug\nversion: \"0.1.0\"\nmcp_servers:\n  rug:\n    command: {:?}\n    args: [{:?}]\n",
            interop_python().display().to_string(),
            script.display().to_string()
        ),
    )
    .unwrap();
}

fn offered(gw: &wasmgate::gateway::Gateway) -> Vec<String> {
    let mut v: Vec<String> = gw.offered_tools().into_iter().map(|t| t.name).collect();
    v.sort();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rug_pull_through_list_changed_withholds_only_that_tool_until_approved() {
    use wasmgate::TrustPolicy;
    use wasmgate::gateway::{Gateway, GatewayOptions};
    use wasmgate::{Host, HostOptions};
    let tmp = tempfile::tempdir().unwrap();
    let plugins = tmp.path().join("plugins");
    write_rug_plugin(&plugins.join("rug"));
    let lock = tmp.path().join("plugins.lock");
    let policy = TrustPolicy::Lock(Some(lock.clone()));

    // Not approved: nothing offered, the server never started.
    let mut options = HostOptions::new();
    options.plugin_dirs = vec![plugins.clone()];
    options.trust = policy.clone();
    let host = Host::load(options.clone()).unwrap();
    assert_eq!(host.plugins()[0].trust.state.as_str(), "unapproved");
    assert!(host.servers().is_empty());
    host.approve("rug").unwrap();
    drop(host);

    let mut gopts = GatewayOptions::new();
    gopts.host = options;
    gopts.refresh_every = None;
    let gw = Gateway::start(gopts).await.unwrap();
    assert_eq!(
        offered(&gw),
        ["mcp_rug_flip", "mcp_rug_shifty", "mcp_rug_stable"],
        "{:#?}",
        gw.host().status()
    );
    let r = gw
        .call("mcp_rug_flip", serde_json::json!({}))
        .await
        .unwrap();
    assert!(!r.is_error, "{r:?}");

    // The server's list_changed brings the new description: withheld.
    let deadline = Instant::now() + Duration::from_secs(30);
    while offered(&gw).contains(&"mcp_rug_shifty".to_owned()) {
        assert!(
            Instant::now() < deadline,
            "shifty still offered after list_changed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(offered(&gw), ["mcp_rug_flip", "mcp_rug_stable"]);
    let st = gw.host().status();
    let srv = st.servers.iter().find(|s| s.name == "rug").unwrap();
    assert_eq!(srv.withheld_tools.len(), 1, "{:#?}", srv);
    let w = &srv.withheld_tools[0];
    assert_eq!(w.tool, "shifty");
    assert_eq!(w.reason, "changed");
    let diff = w.changes.join("; ");
    assert!(diff.contains("Adds two numbers."), "{diff}");
    assert!(diff.contains("Ignore previous instructions"), "{diff}");
    assert_eq!(w.approve, "wasmgate plugin approve rug");
    let e = gw
        .call("mcp_rug_shifty", serde_json::json!({}))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("mcp_rug_shifty"), "{e}");

    // Approving the new tool list (what `plugin approve rug` does after
    // connecting) changes the lock; the refresh offers it and tells clients.
    let mut changes = gw.subscribe();
    let lines = gw.host().approve_tools("rug").unwrap();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("rug/shifty: description")),
        "{lines:?}"
    );
    let outcome = gw.refresh().await.unwrap();
    assert!(outcome.tools_changed, "{outcome:?}");
    assert!(changes.try_recv().is_ok_and(|c| c.tools));
    assert_eq!(
        offered(&gw),
        ["mcp_rug_flip", "mcp_rug_shifty", "mcp_rug_stable"]
    );
    gw.shutdown().await;
}

#[test]
fn add_of_a_plugin_folder_copies_regular_files_only_and_approves_it() {
    let u = User::new();
    let src = u.tmp.path().join("src-marker");
    let marker = u.tmp.path().join("MARKER");
    write_marker_plugin(&src, &marker, &[]);
    #[cfg(unix)]
    {
        // A link in the folder: refused, nothing installed.
        std::os::unix::fs::symlink("/etc/passwd", src.join("passwd")).unwrap();
        let out = u.run(&["plugin", "add", src.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        assert!(
            text(&out).contains("leads out of the plugin folder"),
            "{}",
            text(&out)
        );
        assert!(!u.plugins().join("marker").exists());
        std::fs::remove_file(src.join("passwd")).unwrap();
    }
    let out = u.run(&["plugin", "add", src.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("runs: /bin/sh"), "{s}");
    assert!(u.plugins().join("marker").join("plugin.yaml").is_file());
    let st = u.status();
    assert_eq!(
        plugin(&st, "marker")["trust"]["state"],
        "approved",
        "{st:#}"
    );
    assert!(marker.exists(), "the added plugin runs");
}

/// `docs/declarations.md` §6.3: a plugin whose application this machine
/// lacks is installed and approved all the same, and `plugin add` says
/// which server is held back, in the refusal sentence; `status` gates it.
#[cfg(target_os = "linux")]
#[test]
fn add_of_a_plugin_whose_application_is_missing_installs_it_and_names_the_held_back_server() {
    let u = User::new();
    let src = u.tmp.path().join("src-absent");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("plugin.yaml"),
        "name: absent\nversion: \"0.1.0\"\nmcp_servers:\n  absent:\n    command: /bin/sh\n    \
         app:\n      linux:\n        presence: executable\n        \
         location: [{kind: command, name: wasmgate-test-no-such-application}]\n    \
         requires: {app: true}\n",
    )
    .unwrap();
    let out = u.run(&["plugin", "add", src.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(
        s.contains(
            "Plugin 'absent' server 'absent' is unavailable: missing_app. \
             Its tools are offered once it is (`wasmgate status` tells)."
        ),
        "{s}"
    );
    assert!(u.plugins().join("absent").join("plugin.yaml").is_file());
    let st = u.status();
    assert_eq!(
        plugin(&st, "absent")["trust"]["state"],
        "approved",
        "{st:#}"
    );
}

#[test]
fn a_credential_given_as_its_own_argument_is_neither_shown_nor_kept_in_the_lock() {
    let u = User::new();
    let src = u.tmp.path().join("src-argsecret");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("plugin.yaml"),
        "name: argsecret\nversion: \"0.1.0\"\nmcp_servers:\n  s:\n    command: /bin/true\n    \
         args: [--api-key, plainsecret123, --max-tokens, \"4096\"]\n  \
         u:\n    url: \"http://127.0.0.1:9/mcp?sig=urlsecret456&x=1\"\n",
    )
    .unwrap();
    for args in [
        vec!["plugin", "inspect", src.to_str().unwrap()],
        vec!["plugin", "add", src.to_str().unwrap()],
    ] {
        let out = u.run(&args);
        assert!(out.status.success(), "{}", text(&out));
        let all = text(&out);
        assert!(!all.contains("plainsecret123"), "{all}");
        assert!(!all.contains("urlsecret456"), "{all}");
        assert!(all.contains("mcp?sig=[REDACTED]&x=[REDACTED]"), "{all}");
        assert!(
            all.contains("--api-key '[REDACTED]' --max-tokens 4096"),
            "{all}"
        );
    }
    let lock = std::fs::read_to_string(u.lock()).unwrap();
    assert!(!lock.contains("plainsecret123"), "{lock}");
    assert!(!lock.contains("urlsecret456"), "{lock}");
}

#[test]
fn add_names_the_servers_left_out_as_invalid_and_json_carries_them_and_the_unavailable() {
    let yaml = "name: mixed\nversion: \"0.1.0\"\nmcp_servers:\n  absent:\n    command: /bin/sh\n    \
         app:\n      linux:\n        presence: executable\n        \
         location: [{kind: command, name: wasmgate-test-no-such-application}]\n    \
         requires: {app: true}\n  bad:\n    command: /bin/sh\n    timeout: soon\n";
    for json in [false, true] {
        let u = User::new();
        let src = u.tmp.path().join("src-mixed");
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(src.join("plugin.yaml"), yaml).unwrap();
        let mut args = vec!["plugin", "add", src.to_str().unwrap()];
        if json {
            args.insert(0, "--json");
        }
        let out = u.run(&args);
        assert!(out.status.success(), "{}", text(&out));
        let s = String::from_utf8_lossy(&out.stdout);
        if json {
            let v: serde_json::Value = serde_json::from_str(&s).expect("one JSON document");
            assert_eq!(
                v["unavailable"][0], "Plugin 'mixed' server 'absent' is unavailable: missing_app.",
                "{v:#}"
            );
            let left = v["left_out"][0].as_str().unwrap_or_default();
            assert!(left.contains("server 'bad': timeout (\"soon\")"), "{v:#}");
        } else {
            assert!(
                s.contains("left out as invalid: ")
                    && s.contains("server 'bad': timeout (\"soon\")"),
                "{s}"
            );
            assert!(
                s.contains("server 'absent' is unavailable: missing_app."),
                "{s}"
            );
        }
    }
}
