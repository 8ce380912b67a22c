//! Config and manifest validation through the `wasmgate` binary
//! (`docs/mcp-client.md` §1, `docs/declarations.md` §2a): a bad server, an
//! integer beyond 64 bits or a password in a url costs only that server; a
//! config without `mcp_servers` says so; `wasmgate check` lists every
//! problem of a server; a sub-second `connect_timeout` is printed as such.

use std::path::Path;
use std::process::{Command, Output};

fn wasmgate(args: &[&str], dir: &Path) -> Output {
    wasmgate_env(args, dir, &[])
}

/// [`wasmgate`] with `env` set too.
fn wasmgate_env(args: &[&str], dir: &Path, env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wasmgate"))
        .envs(env.iter().copied())
        .current_dir(dir)
        .env_remove("WASMGATE_PLUGINS")
        .env_remove("WASMGATE_CONFIG")
        .env("WASMGATE_CACHE", "")
        .env("HOME", dir)
        .env("XDG_CONFIG_HOME", dir.join("xdg"))
        .env("RUST_LOG", "warn")
        .args(args)
        .output()
        .expect("wasmgate runs")
}

/// `wasmgate status --json --config <config> --plugins <empty folder>`:
/// (the JSON, stdout and stderr together as text).
fn status(dir: &Path, config: &str) -> (serde_json::Value, String) {
    status_env(dir, config, &[])
}

/// [`status`] with `env` set for the run.
fn status_env(dir: &Path, config: &str, env: &[(&str, &str)]) -> (serde_json::Value, String) {
    let cfg = dir.join("config.yaml");
    std::fs::write(&cfg, config).unwrap();
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let out = wasmgate_env(
        &[
            "status",
            "--json",
            "--config",
            cfg.to_str().unwrap(),
            "--plugins",
            plugins.to_str().unwrap(),
        ],
        dir,
        env,
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let all = format!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{all}");
    let json = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {all}"));
    (json, all)
}

fn names(st: &serde_json::Value) -> Vec<String> {
    st["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect()
}

fn problems(st: &serde_json::Value) -> Vec<String> {
    st["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn status_keeps_the_good_servers_beside_big_integers_and_passwords() {
    let dir = tempfile::tempdir().unwrap();
    let (st, all) = status(
        dir.path(),
        "model: whatever\nmcp_servers:\n  good: {enabled: false, command: x, args: [99999999999999999999999]}\n  big: {command: x, max_result_bytes: 99999999999999999999999}\n  u: {url: 'http://alice:s3cr3t-pw@127.0.0.1:9/mcp'}\n  v: {url: 'http://[::1/mcp'}\n  t: {command: x, timeout: 1e-10}\n",
    );
    // Every entry in file order; the invalid ones in place, each with its
    // problem (docs/mcp-client.md, "wasmgate status").
    assert_eq!(names(&st), ["good", "big", "u", "v", "t"], "{all}");
    assert_eq!(st["servers"][0]["connection"], "disabled");
    for (i, name) in [(1, "big"), (2, "u"), (3, "v"), (4, "t")] {
        let s = &st["servers"][i];
        assert_eq!(s["connection"], "invalid", "{name}: {all}");
        let own = s["problems"].as_array().unwrap();
        assert_eq!(own.len(), 1, "{name}: {all}");
        assert!(
            own[0]
                .as_str()
                .unwrap()
                .contains(&format!("server '{name}': ")),
            "{name}: {all}"
        );
    }
    let p = problems(&st);
    assert_eq!(p.len(), 4, "{p:#?}");
    assert!(p[0].ends_with("config.yaml server 'big': max_result_bytes (\"99999999999999999999999\") is out of range (at most 18446744073709551615)"), "{p:?}");
    assert!(p[1].ends_with("config.yaml server 'u': url must not carry a user name or password; send credentials in headers (Authorization) and write the URL as http://127.0.0.1:9/mcp"), "{p:?}");
    assert!(p[2].ends_with("config.yaml server 'v': url must be an http:// or https:// URL with a host: invalid IPv6 address"), "{p:?}");
    assert!(p[3].ends_with("config.yaml server 't': timeout (1e-10) must be at least 0.001 seconds (1 ms; got 0.0000000001 s)"), "{p:?}");
    // Not in the JSON, not in the log.
    assert!(!all.contains("s3cr3t-pw"), "{all}");
}

#[test]
fn status_names_a_config_without_mcp_servers() {
    let dir = tempfile::tempdir().unwrap();
    let (st, all) = status(dir.path(), "model: x\nmcp-servers:\n  a: {command: x}\n");
    assert!(names(&st).is_empty(), "{all}");
    let p = problems(&st);
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(
        p[0].ends_with("config.yaml: has no mcp_servers mapping (did you mean `mcp_servers`? this file has `mcp-servers`, which wasmgate does not read)"),
        "{p:?}"
    );
    // Another agent's `mcpServers` is read (docs/mcp-client.md §1.4).
    let (st, all) = status(dir.path(), "model: x\nmcpServers:\n  a: {command: x}\n");
    assert_eq!(names(&st), ["a"], "{all}");
    // Present but empty: nothing configured, nothing wrong.
    let (st, _) = status(dir.path(), "model: x\nmcp_servers:\n");
    assert!(problems(&st).is_empty() && names(&st).is_empty());
}

/// The `private_key_jwt` keys of an `oauth:` block (docs/mcp-client.md
/// §9): a good entry stays; each bad one costs only its server, with the
/// field and the variable named and the key's text never shown.
#[test]
fn private_key_jwt_settings_are_checked_without_showing_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let pem =
        "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49KEYBODY\n-----END PRIVATE KEY-----\n";
    let entry = |name: &str, oauth: &str| {
        format!("  {name}:\n    url: http://127.0.0.1:9/mcp\n    auth: oauth\n    oauth: {oauth}\n")
    };
    let config = [
        "mcp_servers:\n".to_string(),
        entry(
            "good",
            "{client_id: c, private_key_env: KEY, signing_algorithm: ES256, grant: client_credentials}",
        ),
        entry(
            "not-pem",
            "{client_id: c, private_key_env: NOT_PEM, grant: client_credentials}",
        ),
        entry(
            "both",
            "{client_id: c, private_key_env: KEY, client_secret_env: SECRET, grant: client_credentials}",
        ),
        entry(
            "bad-alg",
            "{client_id: c, private_key_env: KEY, signing_algorithm: HS256, grant: client_credentials}",
        ),
        entry("alg-alone", "{client_id: c, signing_algorithm: RS256}"),
        entry("code-grant", "{client_id: c, private_key_env: KEY}"),
        entry("no-client", "{private_key_env: KEY, grant: client_credentials}"),
    ]
    .concat();
    let (st, all) = status_env(
        dir.path(),
        &config,
        &[
            ("KEY", pem),
            ("NOT_PEM", "hunter2-not-a-key"),
            ("SECRET", "s3cr3t-value"),
        ],
    );
    let servers = st["servers"].as_array().unwrap();
    let good = servers.iter().find(|s| s["name"] == "good").expect(&all);
    assert_eq!(good["problems"], serde_json::json!([]), "{all}");
    // Its grant was tried (nothing listens there), so the key was taken.
    assert!(
        good["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("client-credentials grant")),
        "{all}"
    );
    let problems = servers
        .iter()
        .flat_map(|s| s["problems"].as_array().unwrap())
        .map(|p| p.as_str().unwrap().to_string())
        .collect::<Vec<_>>()
        .join("\n");
    for (server, field, says) in [
        (
            "not-pem",
            "oauth.private_key_env",
            "names 'NOT_PEM', whose value is not a PEM private key",
        ),
        (
            "both",
            "oauth.private_key_env",
            "two ways to authenticate the client; give one",
        ),
        (
            "bad-alg",
            "oauth.signing_algorithm",
            "(\"HS256\") must be one of RS256, RS384, RS512, ES256, ES384",
        ),
        (
            "alg-alone",
            "oauth.signing_algorithm",
            "is only valid with oauth.private_key_env",
        ),
        (
            "code-grant",
            "oauth.private_key_env",
            "is only valid with oauth.grant: client_credentials",
        ),
        (
            "no-client",
            "oauth.private_key_env",
            "needs oauth.client_id",
        ),
    ] {
        assert!(
            problems.lines().any(|l| l.contains(&format!("'{server}'"))
                && l.contains(field)
                && l.contains(says)),
            "{server}: {field} {says}\n{problems}"
        );
    }
    for secret in ["KEYBODY", "hunter2", "s3cr3t"] {
        assert!(!all.contains(secret), "{secret} shown: {all}");
    }
}

/// The `enterprise_managed` grant and its `oauth.idp:` block
/// (docs/mcp-client.md §9): each mistake named with its field, the ID
/// token and secrets never shown.
#[test]
fn enterprise_managed_settings_are_checked_without_showing_the_id_token() {
    let dir = tempfile::tempdir().unwrap();
    let entry = |name: &str, oauth: &str| {
        format!("  {name}:\n    url: http://127.0.0.1:9/mcp\n    auth: oauth\n    oauth: {oauth}\n")
    };
    let idp = |issuer: &str, token_var: &str| {
        format!(
            "{{issuer: {issuer}, token_endpoint: https://idp.example.com/token, client_id: idc, \
             client_secret_env: IDP_SECRET, id_token_env: {token_var}}}"
        )
    };
    let good_idp = idp("https://idp.example.com", "IDT");
    let config = [
        "mcp_servers:\n".to_string(),
        entry(
            "good",
            &format!("{{client_id: c, grant: enterprise_managed, idp: {good_idp}}}"),
        ),
        entry("no-idp", "{client_id: c, grant: enterprise_managed}"),
        entry("idp-alone", &format!("{{client_id: c, idp: {good_idp}}}")),
        entry(
            "no-client",
            &format!("{{grant: enterprise_managed, idp: {good_idp}}}"),
        ),
        entry(
            "plain-http",
            &format!(
                "{{client_id: c, grant: enterprise_managed, idp: {}}}",
                idp("http://idp.example.com", "IDT")
            ),
        ),
        entry(
            "password-url",
            &format!(
                "{{client_id: c, grant: enterprise_managed, idp: {}}}",
                idp("https://u:pa55word@idp.example.com", "IDT")
            ),
        ),
        entry(
            "unset-token",
            &format!(
                "{{client_id: c, grant: enterprise_managed, idp: {}}}",
                idp("https://idp.example.com", "UNSET_TOKEN")
            ),
        ),
        entry(
            "odd-key",
            "{client_id: c, grant: enterprise_managed, idp: {issuer: https://idp.example.com, \
             token_endpoint: https://idp.example.com/t, client_id: idc, id_token_env: IDT, \
             audience: x}}",
        ),
        entry("bad-grant", "{client_id: c, grant: saml}"),
    ]
    .concat();
    let (st, all) = status_env(
        dir.path(),
        &config,
        &[
            ("IDT", "eyJ-id-token-T0PSECRET"),
            ("IDP_SECRET", "idp-s3cr3t"),
        ],
    );
    let servers = st["servers"].as_array().unwrap();
    let good = servers.iter().find(|s| s["name"] == "good").expect(&all);
    assert_eq!(good["problems"], serde_json::json!([]), "{all}");
    // Its exchange was tried (nothing listens there), so the block was taken.
    assert!(
        good["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("authorization server discovery failed")),
        "{all}"
    );
    let problems = servers
        .iter()
        .flat_map(|s| s["problems"].as_array().unwrap())
        .map(|p| p.as_str().unwrap().to_string())
        .collect::<Vec<_>>()
        .join("\n");
    for (server, field, says) in [
        ("no-idp", "oauth.idp", "is needed by enterprise_managed"),
        (
            "idp-alone",
            "oauth.idp",
            "is only valid with oauth.grant: enterprise_managed",
        ),
        (
            "no-client",
            "oauth.grant",
            "(\"enterprise_managed\") needs oauth.client_id",
        ),
        (
            "plain-http",
            "oauth.idp.issuer",
            "must be an https:// URL (http only on loopback) (got 'http://idp.example.com/')",
        ),
        (
            "password-url",
            "oauth.idp.issuer",
            "must not carry a user name or password",
        ),
        (
            "unset-token",
            "oauth.idp.id_token_env",
            "names 'UNSET_TOKEN', which is not set in the environment",
        ),
        ("odd-key", "oauth.idp", "audience"),
        (
            "bad-grant",
            "oauth.grant",
            "must be authorization_code, client_credentials or enterprise_managed",
        ),
    ] {
        assert!(
            problems.lines().any(|l| l.contains(&format!("'{server}'"))
                && l.contains(field)
                && l.contains(says)),
            "{server}: {field} {says}\n{problems}"
        );
    }
    for secret in ["T0PSECRET", "idp-s3cr3t", "pa55word"] {
        assert!(!all.contains(secret), "{secret} shown: {all}");
    }
}

#[test]
fn check_lists_every_problem_of_a_server() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("plugin.yaml");
    std::fs::write(
        &manifest,
        "name: p\nversion: '1'\nmcp_servers:\n  s:\n    command: x\n    args: [[a]]\n    timeout: abc\n    tools: {include: [1]}\n    requires: {gpu: amd}\n  ok: {command: x}\n",
    )
    .unwrap();
    let out = wasmgate(&["check", manifest.to_str().unwrap()], dir.path());
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("plugin.yaml server 's': "))
        .collect();
    let paths: Vec<&str> = lines
        .iter()
        .map(|l| {
            l.split("server 's': ")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
        })
        .collect();
    assert_eq!(
        paths,
        ["args[0]", "timeout", "tools.include[0]", "requires.gpu"],
        "{stderr}"
    );
}

/// A sub-second `connect_timeout` reaches the client and its message
/// prints it as written (0.5 s, not 0 s). The child never answers
/// `initialize`; shutdown ends it.
#[cfg(unix)]
#[test]
fn a_sub_second_connect_timeout_is_printed_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let (st, all) = status(
        dir.path(),
        "mcp_servers:\n  mute: {command: sleep, args: [30], connect_timeout: 0.5}\n",
    );
    assert_eq!(names(&st), ["mute"], "{all}");
    let err = st["servers"][0]["last_error"].as_str().unwrap_or_default();
    assert!(
        err.contains("timed out after 0.5 s waiting for initialize and tools/list")
            && err.contains("(now 0.5 s)"),
        "{all}"
    );
}

/// `connect_timeout` has an upper bound (600 s, docs/security.md): `1e9`
/// costs only its server, with the field and the value in the problem; the
/// bound itself and the neighbour are kept.
#[test]
fn a_connect_timeout_over_ten_minutes_is_refused_with_field_and_value() {
    let dir = tempfile::tempdir().unwrap();
    let (st, all) = status(
        dir.path(),
        "mcp_servers:\n  huge: {command: x, connect_timeout: 1e9}\n  edge: {enabled: false, command: x, connect_timeout: 600}\n",
    );
    // `status` lists the invalid entry in its place (state `invalid`).
    assert_eq!(names(&st), ["huge", "edge"], "{all}");
    assert_eq!(st["servers"][0]["connection"], "invalid", "{all}");
    let p = problems(&st);
    assert_eq!(p.len(), 1, "{p:#?}");
    assert!(
        p[0].ends_with(
            "config.yaml server 'huge': connect_timeout (1000000000.0) is 1000000000 s, more than the limit of 600 s (ten minutes); a server needs far less to start and answer initialize"
        ),
        "{p:?}"
    );
}

/// README's `status` and `call` example ("The command line") is what runs:
/// its `config.yaml` is `tests/fixtures/config.yaml`, and from that folder
/// both commands print what README shows (but the first line, this
/// machine's OS family and GPU class).
#[test]
fn the_readmes_status_and_call_example_is_what_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("../README.md")).unwrap();
    let after = |text: &'static str, from: usize| -> (usize, usize) {
        let at = readme[from..].find(text).map(|i| from + i + text.len());
        let at = at.unwrap_or_else(|| panic!("README has no {text:?} after byte {from}"));
        let end = at + readme[at..].find("```").expect("a closing fence");
        (at, end)
    };
    let intro = readme
        .find("and this `config.yaml`")
        .expect("README's example of status and call");
    let (c0, c1) = after("```yaml\n", intro);
    let fixtures = root.join("tests/fixtures");
    assert_eq!(
        &readme[c0..c1],
        std::fs::read_to_string(fixtures.join("config.yaml")).unwrap(),
        "README's config.yaml and tests/fixtures/config.yaml differ"
    );
    let (o0, o1) = after("```\n", c1 + 3);
    let shown = &readme[o0..o1];
    let (status, call) = shown
        .split_once("\n$ wasmgate call mcp_media_mixed --config config.yaml\n")
        .expect("README shows the call");
    let status = status
        .strip_prefix("$ wasmgate status --config config.yaml\n")
        .expect("README shows the status");
    let home = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_wasmgate"))
            .current_dir(&fixtures)
            .env_remove("WASMGATE_PLUGINS")
            .env_remove("WASMGATE_CONFIG")
            .env("WASMGATE_CACHE", "")
            .env("HOME", home.path())
            .env("XDG_CONFIG_HOME", home.path().join("xdg"))
            .args(args)
            .output()
            .expect("wasmgate runs");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{args:?}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    };
    let got = run(&["status", "--config", "config.yaml"]);
    let rest = |t: &str| {
        t.split_once('\n')
            .map(|(_, r)| r.to_string())
            .unwrap_or_default()
    };
    assert_eq!(rest(&got), rest(status), "status differs from README");
    assert_eq!(
        run(&["call", "mcp_media_mixed", "--config", "config.yaml"]),
        call,
        "call differs from README"
    );
}

/// Development mode is said once per output: `status`'s text report opens
/// with it (so stderr does not repeat it); its JSON and other commands
/// get it on stderr.
#[test]
fn development_mode_is_said_once_per_output() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.yaml");
    std::fs::write(&cfg, "mcp_servers: {}\n").unwrap();
    let run = |args: &[&str]| {
        let out = wasmgate_env(args, dir.path(), &[("WASMGATE_DEV", "1")]);
        assert!(out.status.success(), "{args:?}");
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let c = cfg.to_str().unwrap();
    let (stdout, stderr) = run(&["status", "--config", c]);
    assert_eq!(stdout.matches("development mode").count(), 1, "{stdout}");
    assert!(!stderr.contains("development mode"), "{stderr}");
    for args in [
        &["status", "--json", "--config", c][..],
        &["tools", "--config", c],
    ] {
        let (_, stderr) = run(args);
        assert_eq!(
            stderr.matches("development mode").count(),
            1,
            "{args:?}: {stderr}"
        );
    }
}

/// A command that starts nothing ends quietly when its output pipe is
/// closed (`wasmgate import FILE | head`), as `cat` does: no panic, no
/// backtrace.
#[cfg(unix)]
#[test]
fn a_closed_output_pipe_ends_import_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("mcp.json");
    std::fs::write(&src, r#"{"mcpServers": {"a": {"command": "/bin/a"}}}"#).unwrap();
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_wasmgate"))
        .current_dir(dir.path())
        .env("HOME", dir.path())
        .env_remove("WASMGATE_CONFIG")
        .args(["import", src.to_str().unwrap()])
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    // 13: SIGPIPE on Linux and macOS.
    assert_eq!(out.status.signal(), Some(13), "{:?} {stderr}", out.status);
}
