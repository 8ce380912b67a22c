//! `auth: oauth` servers against a local authorization server (the
//! `oauth-test-server` binary of this crate, on 127.0.0.1): login with
//! code + PKCE through the loopback redirect (a browser stand-in follows
//! the redirect), refresh before expiry with rotation, a revoked refresh
//! making the server `auth_required` in `status` and `call`, two servers
//! on one issuer, the device login (RFC 8628) approved and denied, the
//! login in a real Secret Service (a private D-Bus session bus and
//! gnome-keyring) and in a private file when the keyring is unavailable,
//! and no token in any output (docs/mcp-client.md §9).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use wasmgate_conformance::wasmgate_bin;

struct Server {
    _child: wasmgate_conformance::KillOnDrop,
    base: String,
}

fn start(expires_in: u64) -> Server {
    start_with(&["--expires-in", &expires_in.to_string()])
}

fn start_with(args: &[&str]) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_oauth-test-server"))
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .expect("oauth-test-server starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("http://127.0.0.1:"), "{line}");
    Server {
        _child: wasmgate_conformance::KillOnDrop(child),
        base: line.trim().to_string(),
    }
}

struct Setup {
    _dir: tempfile::TempDir,
    config: std::path::PathBuf,
    tokens: std::path::PathBuf,
    plugins: std::path::PathBuf,
    /// Added to every `wasmgate` run (the keyring tests' bus).
    env: Vec<(String, String)>,
}

fn setup(base: &str) -> Setup {
    setup_with(&format!(
        "mcp_servers:\n  a:\n    url: {base}/a/mcp\n    auth: oauth\n  b:\n    url: {base}/b/mcp\n    auth: oauth\n"
    ))
}

fn setup_with(yaml: &str) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(&config, yaml).unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    Setup {
        tokens: dir.path().join("tokens"),
        config,
        plugins,
        _dir: dir,
        env: Vec::new(),
    }
}

fn wasmgate(s: &Setup, args: &[&str]) -> Command {
    let mut c = Command::new(wasmgate_bin());
    c.arg("--config")
        .arg(&s.config)
        .arg("--plugins")
        .arg(&s.plugins)
        .args(["--log", "debug"])
        .args(args)
        .env("WASMGATE_OAUTH_DIR", &s.tokens)
        .env("XDG_CONFIG_HOME", s._dir.path())
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        // The token folder is the test's, so logins are files there
        // (never the keyring of the user running the tests), unless a test
        // asks for its own keyring.
        .env_remove("WASMGATE_OAUTH_STORE");
    for (k, v) in &s.env {
        c.env(k, v);
    }
    c
}

/// Whether `text` holds a token or a device code of the test server.
fn has_secret(text: &str) -> bool {
    text.contains("secret-access")
        || text.contains("secret-refresh")
        || text.contains("secret-device")
}

/// Everything a command printed; asserts no token is in it.
fn run(s: &Setup, args: &[&str]) -> (bool, String) {
    let out = wasmgate(s, args).output().expect("wasmgate runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !has_secret(&text),
        "a token was printed by {args:?}:\n{text}"
    );
    (out.status.success(), text)
}

/// `wasmgate login SERVER --no-browser`, with the test acting as the
/// browser: it reads the printed URL and follows the redirects.
fn login(s: &Setup, server: &str) -> String {
    let mut child = wasmgate(s, &["login", server, "--no-browser", "--wait", "30"])
        .stderr(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let url = loop {
        let mut line = String::new();
        if err.read_line(&mut line).unwrap() == 0 {
            panic!("login ended without printing a URL:\n{seen}");
        }
        seen += &line;
        if let Some(u) = line.trim().strip_prefix("http") {
            break format!("http{u}");
        }
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(wasmgate::mcp::oauth::login::following_browser()(url));
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    let status = child.wait().unwrap();
    seen += &rest;
    assert!(!has_secret(&seen), "{seen}");
    assert!(status.success(), "login failed:\n{seen}");
    seen
}

/// The status line and body of `GET path_and_query` on the test server.
fn get(base: &str, path_and_query: &str) -> (String, String) {
    use std::io::{Read, Write};
    let addr = base.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(
        format!("GET {path_and_query} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n")
            .as_bytes(),
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    (
        head.lines().next().unwrap_or("").to_string(),
        body.to_string(),
    )
}

fn stats(base: &str) -> serde_json::Value {
    serde_json::from_str(&get(base, "/test/stats").1).unwrap()
}

fn post(base: &str, path: &str) {
    let addr = base.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    use std::io::{Read, Write};
    s.write_all(
        format!(
            "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
        )
        .as_bytes(),
    )
    .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
}

/// Refresh before expiry (4 s tokens, refreshed in their last 2 s): a call
/// of `mcp_a_hello` every half second, each one working, until the server
/// counts more refreshes than `before` (bounded: a loaded machine shifts
/// when the window opens, not whether). The new count.
fn refreshed_after(s: &Setup, base: &str, before: u64) -> u64 {
    for _ in 0..16 {
        std::thread::sleep(Duration::from_millis(500));
        let (ok, text) = run(s, &["call", "mcp_a_hello"]);
        assert!(ok, "{text}");
        let now = stats(base)["refreshes"].as_u64().unwrap();
        if now > before {
            return now;
        }
    }
    panic!("no refresh within 8 s of calls: {}", stats(base));
}

/// `wasmgate login SERVER --device --no-browser`, with the test as the
/// user on another device: it reads the printed code and URL, waits until
/// wasmgate has polled once (and been told `authorization_pending`), then
/// opens the URL that has the code in it, adding `extra` (`&deny=1` to
/// say no). What the login printed, and whether it succeeded.
fn device_login(s: &Setup, base: &str, server: &str, extra: &str) -> (bool, String) {
    let polls_before = stats(base)["device_polls"].as_u64().unwrap();
    let mut child = wasmgate(
        s,
        &["login", server, "--device", "--no-browser", "--wait", "30"],
    )
    .stderr(Stdio::piped())
    .stdout(Stdio::null())
    .spawn()
    .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let mut code = None;
    let complete = loop {
        let mut line = String::new();
        if err.read_line(&mut line).unwrap() == 0 {
            panic!("the device login ended without printing its URL:\n{seen}");
        }
        seen += &line;
        if let Some(rest) = line.split_once("enter the code ") {
            code = rest.1.split_whitespace().next().map(str::to_string);
        }
        if let Some(u) = line.trim().strip_prefix(base) {
            break u.to_string();
        }
    };
    let code = code.unwrap_or_else(|| panic!("no code was printed:\n{seen}"));
    assert!(complete.ends_with(&format!("user_code={code}")), "{seen}");
    assert!(
        seen.contains(&format!("open {base}/device on any device")),
        "{seen}"
    );
    for _ in 0..200 {
        if stats(base)["device_polls"].as_u64().unwrap() > polls_before {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let (status, body) = get(base, &format!("{complete}{extra}"));
    assert!(status.contains("200"), "{status} {body}");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    seen += &rest;
    let ok = child.wait().unwrap().success();
    assert!(
        !has_secret(&seen),
        "a token or the device code was printed:\n{seen}"
    );
    (ok, seen)
}

#[test]
fn device_login_polls_until_approved_refreshes_and_a_denied_one_saves_nothing() {
    let srv = start(4);
    let s = setup(&srv.base);
    let (ok, text) = device_login(&s, &srv.base, "a", "");
    assert!(ok, "{text}");
    assert!(text.contains("logged in to 'a'"), "{text}");
    let st = stats(&srv.base);
    // One poll was told to wait, the next got the tokens.
    assert!(st["device_polls"].as_u64().unwrap() >= 2, "{st}");
    assert_eq!(st["registrations"], 1, "{st}");
    assert_eq!(
        st["device_resources"],
        serde_json::json!([format!("{}/a/mcp", srv.base)]),
        "{st}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(s.tokens.join("a.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let (ok, text) = run(&s, &["call", "mcp_a_hello"]);
    assert!(ok, "{text}");
    assert!(text.contains("hello from the protected server"), "{text}");
    // The device login is rmcp's saved login: refreshed like the browser's.
    refreshed_after(&s, &srv.base, 0);

    // The user says no: the login fails naming the server's answer, and
    // nothing is saved.
    let (ok, text) = device_login(&s, &srv.base, "b", "&deny=1");
    assert!(!ok, "{text}");
    assert!(text.contains("access_denied"), "{text}");
    assert!(!s.tokens.join("b.json").exists());
    let (ok, text) = run(&s, &["call", "mcp_b_hello"]);
    assert!(!ok);
    assert!(text.contains("run `wasmgate login b`"), "{text}");
}

/// An authorization server without a device endpoint: `--device` says so
/// and names the way that works, and registers no client.
#[test]
fn a_device_login_where_the_server_has_none_says_so() {
    let srv = start_with(&["--no-device"]);
    let s = setup(&srv.base);
    let (ok, text) = run(
        &s,
        &["login", "a", "--device", "--no-browser", "--wait", "5"],
    );
    assert!(!ok, "{text}");
    assert!(
        text.contains("offers no device login")
            && text.contains("device_authorization_endpoint")
            && text.contains("without --device"),
        "{text}"
    );
    assert_eq!(stats(&srv.base)["registrations"], 0);
    assert!(!s.tokens.join("a.json").exists());
}

#[test]
fn login_refresh_rotation_revocation_and_two_servers_on_one_issuer() {
    let srv = start(4);
    let s = setup(&srv.base);

    // Before any login: both servers need one, with the sentence.
    let (_, text) = run(&s, &["status", "--json"]);
    assert!(text.contains("auth_required"), "{text}");
    assert!(text.contains("run `wasmgate login a`"), "{text}");

    login(&s, "a");
    let st = stats(&srv.base);
    assert_eq!(st["pkce_checked"], 1, "{st}");
    assert_eq!(st["registrations"], 1, "{st}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(s.tokens.join("a.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let (ok, text) = run(&s, &["call", "mcp_a_hello"]);
    assert!(ok, "{text}");
    assert!(text.contains("hello from the protected server"), "{text}");
    // b is still not logged in; a is unaffected.
    let (ok, text) = run(&s, &["call", "mcp_b_hello"]);
    assert!(!ok);
    assert!(text.contains("run `wasmgate login b`"), "{text}");

    // Two servers on one issuer: each has its own login.
    login(&s, "b");
    let (ok, text) = run(&s, &["call", "mcp_b_hello"]);
    assert!(ok, "{text}");

    let first = refreshed_after(&s, &srv.base, 0);
    // Rotation: the server killed the old refresh token; the stored one
    // is the new one, so the next refresh works too.
    refreshed_after(&s, &srv.base, first);
    let st = stats(&srv.base);
    assert_eq!(st["refused_refreshes"], 0, "{st}");

    // Revoked: the refresh fails, a is auth_required, its tools are gone.
    post(&srv.base, "/test/revoke");
    std::thread::sleep(Duration::from_millis(2500));
    let (_, text) = run(&s, &["status"]);
    assert!(text.contains("auth_required"), "{text}");
    assert!(text.contains("run `wasmgate login a`"), "{text}");
    let (ok, text) = run(&s, &["call", "mcp_a_hello"]);
    assert!(!ok);
    assert!(text.contains("run `wasmgate login a`"), "{text}");

    // Logout forgets the file.
    let (ok, _) = run(&s, &["logout", "a"]);
    assert!(ok);
    assert!(!s.tokens.join("a.json").exists());
}

/// The 2025-03-26 form (docs/mcp-client.md §9, "Legacy metadata"): no
/// protected-resource metadata, and the root authorization-server metadata
/// names a same-origin issuer with a path. A browser login, a device login
/// and the connects after them (with a refresh) all work, each login bound
/// to that issuer.
#[test]
fn a_legacy_same_origin_issuer_logs_in_and_connects() {
    let srv = start_with(&["--legacy-issuer", "/oauth", "--expires-in", "4"]);
    let s = setup(&srv.base);
    login(&s, "a");
    let (ok, text) = run(&s, &["call", "mcp_a_hello"]);
    assert!(ok, "{text}");
    assert!(text.contains("hello from the protected server"), "{text}");
    let (ok, text) = device_login(&s, &srv.base, "b", "");
    assert!(ok, "{text}");
    let (ok, text) = run(&s, &["call", "mcp_b_hello"]);
    assert!(ok, "{text}");
    for server in ["a", "b"] {
        let kept: serde_json::Value = serde_json::from_slice(
            &std::fs::read(s.tokens.join(format!("{server}.json"))).unwrap(),
        )
        .unwrap();
        let issuer = format!("{}/oauth", srv.base);
        assert!(
            kept.to_string()
                .contains(&format!("\"issuer\":\"{issuer}\"")),
            "{server}: the login is not bound to {issuer}"
        );
    }
    refreshed_after(&s, &srv.base, 0);
}

/// Mix-up protection stays (RFC 8414 §3.3): root metadata naming an issuer
/// of another origin is refused before any registration, and nothing is
/// saved.
#[test]
fn a_foreign_issuer_in_the_root_metadata_is_refused() {
    let srv = start_with(&["--legacy-issuer", "https://evil.example.com"]);
    let s = setup(&srv.base);
    let (ok, text) = run(&s, &["login", "a", "--no-browser", "--wait", "5"]);
    assert!(!ok, "{text}");
    assert!(
        text.contains("issuer mismatch") && text.contains("https://evil.example.com"),
        "{text}"
    );
    let (ok, text) = run(
        &s,
        &["login", "b", "--device", "--no-browser", "--wait", "5"],
    );
    assert!(!ok, "{text}");
    assert!(text.contains("issuer mismatch"), "{text}");
    assert_eq!(stats(&srv.base)["registrations"], 0);
    assert!(!s.tokens.join("a.json").exists() && !s.tokens.join("b.json").exists());
}

/// An OAuth-protected server is bounded like a plain one
/// (docs/security.md, "MCP client bounds"): `/big/mcp` answers `tools/list`
/// with a 6 MiB page, over the 4 MiB page bound and under rmcp's own 16 MiB
/// default, so only wasmgate's bound on the authorized client refuses it.
#[test]
fn an_authorized_servers_oversized_answer_is_cut_at_the_limit() {
    let srv = start(3600);
    let s = setup_with(&format!(
        "mcp_servers:\n  big:\n    url: {0}/big/mcp\n    auth: oauth\n  a:\n    url: {0}/a/mcp\n    auth: oauth\n",
        srv.base
    ));
    login(&s, "big");
    login(&s, "a");
    let (_, text) = run(&s, &["status"]);
    assert!(
        text.contains("over the limit of 4194304 bytes per page") && text.contains("server 'big'"),
        "{text}"
    );
    // The login was good: the cut is not an auth_required verdict.
    assert!(!text.contains("run `wasmgate login big`"), "{text}");
    // The neighbour on the same issuer is unaffected.
    let (ok, text) = run(&s, &["call", "mcp_a_hello"]);
    assert!(ok, "{text}");
}

/// A Secret Service of this test only: its own D-Bus session bus
/// (`dbus-daemon`) and `gnome-keyring-daemon` with an unlocked login
/// collection, in a temporary home. Both end on drop.
#[cfg(target_os = "linux")]
struct SecretService {
    _keyring: wasmgate_conformance::KillOnDrop,
    _bus: wasmgate_conformance::KillOnDrop,
    home: tempfile::TempDir,
    address: String,
}

#[cfg(target_os = "linux")]
impl SecretService {
    /// `None` (after saying why) where the programs are missing, unless
    /// `WASMGATE_REQUIRE_KEYRING=1` (CI), where that panics.
    fn start() -> Option<SecretService> {
        let missing: Vec<_> = ["dbus-daemon", "gnome-keyring-daemon", "secret-tool"]
            .into_iter()
            .filter(|p| Command::new(p).arg("--version").output().is_err())
            .collect();
        if !missing.is_empty() {
            let why = format!(
                "SKIPPED: no {missing:?} here (Debian: apt-get install gnome-keyring dbus libsecret-tools)"
            );
            if std::env::var("WASMGATE_REQUIRE_KEYRING").as_deref() == Ok("1") {
                panic!("WASMGATE_REQUIRE_KEYRING=1: {why}");
            }
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "{why}");
            return None;
        }
        // A daemon that does not come up is started afresh (it did not come
        // up in two of four runs of the whole suite on 2026-12-05, never
        // when run alone); each try is bounded by the clock, and its log is
        // kept for the panic.
        let mut tries = Vec::new();
        for _ in 0..3 {
            match Self::try_start(Duration::from_secs(30)) {
                Ok(s) => return Some(s),
                Err(why) => tries.push(why),
            }
        }
        panic!("the test's Secret Service did not come up: {tries:#?}");
    }

    /// One start of the bus and the keyring, usable within `wait`, or why not
    /// (the keyring's own log).
    fn try_start(wait: Duration) -> Result<SecretService, String> {
        let home = tempfile::tempdir().unwrap();
        let runtime = home.path().join("run");
        std::fs::create_dir_all(&runtime).unwrap();
        let mut bus = Command::new("dbus-daemon")
            .args(["--session", "--nofork", "--nopidfile", "--print-address=1"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut address = String::new();
        BufReader::new(bus.stdout.take().unwrap())
            .read_line(&mut address)
            .unwrap();
        let address = address.trim().to_string();
        assert!(address.starts_with("unix:"), "dbus-daemon said {address:?}");
        let bus = wasmgate_conformance::KillOnDrop(bus);
        let log = home.path().join("keyring.log");
        let mut keyring = Command::new("gnome-keyring-daemon")
            .args(["--foreground", "--unlock", "--components=secrets"])
            .env("HOME", home.path())
            .env("XDG_RUNTIME_DIR", &runtime)
            .env("XDG_DATA_HOME", home.path().join("data"))
            .env("DBUS_SESSION_BUS_ADDRESS", &address)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        {
            use std::io::Write;
            // The login collection's password, read from stdin to its end.
            let mut stdin = keyring.stdin.take().unwrap();
            stdin.write_all(b"test-keyring-password").unwrap();
        }
        let s = SecretService {
            _keyring: wasmgate_conformance::KillOnDrop(keyring),
            _bus: bus,
            home,
            address,
        };
        // Up when an item can be stored and read back (bounded by the clock).
        let deadline = std::time::Instant::now() + wait;
        while std::time::Instant::now() < deadline {
            let mut store = s.secret_tool(&[
                "store",
                "--label=probe",
                "service",
                "wg-probe",
                "username",
                "p",
            ]);
            let stored = store
                .stdin(Stdio::piped())
                .spawn()
                .and_then(|mut c| {
                    use std::io::Write;
                    c.stdin.take().unwrap().write_all(b"up")?;
                    c.wait()
                })
                .is_ok_and(|st| st.success());
            if stored && s.lookup("wg-probe", "p").as_deref() == Some("up") {
                return Ok(s);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(std::fs::read_to_string(&log).unwrap_or_default())
    }

    fn secret_tool(&self, args: &[&str]) -> Command {
        let mut c = Command::new("secret-tool");
        c.args(args)
            .env("DBUS_SESSION_BUS_ADDRESS", &self.address)
            .env("HOME", self.home.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        c
    }

    /// The secret of the item with these attributes, as `secret-tool`
    /// (libsecret, not wasmgate's client) reads it.
    fn lookup(&self, service: &str, user: &str) -> Option<String> {
        let out = self
            .secret_tool(&["lookup", "service", service, "username", user])
            .output()
            .ok()?;
        (out.status.success() && !out.stdout.is_empty())
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

/// `WASMGATE_OAUTH_STORE=keyring` with a Secret Service on the bus: the
/// login is in the keyring (libsecret reads it back; no token file), the
/// server connects with it, and logout removes it.
#[cfg(target_os = "linux")]
#[test]
fn the_login_is_kept_in_the_os_keyring_and_logout_removes_it() {
    let Some(keyring) = SecretService::start() else {
        return;
    };
    let srv = start(3600);
    let mut s = setup(&srv.base);
    s.env = vec![
        ("WASMGATE_OAUTH_STORE".into(), "keyring".into()),
        ("DBUS_SESSION_BUS_ADDRESS".into(), keyring.address.clone()),
    ];
    let said = login(&s, "a");
    assert!(said.contains("kept in the OS keyring"), "{said}");
    assert!(
        !s.tokens.join("a.json").exists(),
        "a token file was written too"
    );
    let record = keyring
        .lookup(wasmgate::mcp::oauth::KEYRING_SERVICE, "a")
        .expect("the keyring holds the login");
    let record: serde_json::Value = serde_json::from_str(&record).unwrap();
    assert_eq!(record["resource"], format!("{}/a/mcp", srv.base));
    assert!(
        record["credentials"]["token_response"]["access_token"]
            .as_str()
            .is_some_and(|t| t.starts_with("secret-access")),
        "the record holds no access token"
    );
    let (ok, text) = run(&s, &["call", "mcp_a_hello"]);
    assert!(ok, "{text}");
    assert!(text.contains("hello from the protected server"), "{text}");
    // b has no login: the keyring's entry is a's only.
    let (ok, text) = run(&s, &["call", "mcp_b_hello"]);
    assert!(!ok);
    assert!(text.contains("run `wasmgate login b`"), "{text}");
    let (ok, text) = run(&s, &["logout", "a"]);
    assert!(ok && text.contains("forgot the login of 'a'"), "{text}");
    assert_eq!(
        keyring.lookup(wasmgate::mcp::oauth::KEYRING_SERVICE, "a"),
        None
    );
    let (ok, text) = run(&s, &["call", "mcp_a_hello"]);
    assert!(!ok);
    assert!(text.contains("run `wasmgate login a`"), "{text}");
}

/// `WASMGATE_OAUTH_STORE=keyring` where no keyring answers (a session bus
/// address with nothing behind it): the login works, is kept in the
/// private file, and the warning says why.
#[cfg(target_os = "linux")]
#[test]
fn an_unavailable_keyring_falls_back_to_a_private_file() {
    let srv = start(3600);
    let mut s = setup(&srv.base);
    let nothing = s._dir.path().join("no-bus");
    s.env = vec![
        ("WASMGATE_OAUTH_STORE".into(), "keyring".into()),
        (
            "DBUS_SESSION_BUS_ADDRESS".into(),
            format!("unix:path={}", nothing.display()),
        ),
    ];
    let said = login(&s, "a");
    let file = s.tokens.join("a.json");
    assert!(said.contains("the OS keyring is not used"), "{said}");
    assert!(
        said.contains(&format!("kept in {}", file.display())),
        "{said}"
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "token file mode {mode:o}");
    let (ok, text) = run(&s, &["call", "mcp_a_hello"]);
    assert!(ok, "{text}");
    let (ok, _) = run(&s, &["logout", "a"]);
    assert!(ok);
    assert!(!file.exists());
    // A word that is neither store is refused, naming it.
    s.env[0].1 = "vault".into();
    let (ok, text) = run(&s, &["call", "mcp_a_hello"]);
    assert!(!ok);
    assert!(
        text.contains("WASMGATE_OAUTH_STORE must be `keyring` or `file` (got \"vault\")"),
        "{text}"
    );
}
