//! Hostile input against the plugin commands and the plugin lock, through
//! the real binary (`docs/security.md`, "Plugins are untrusted"): what
//! `plugin inspect` / `list` print is what the plugin runs (no terminal
//! escapes from its manifest), a link in a plugin folder that leads out of
//! it is never pinned (its target could change after approval), and a FIFO
//! in the lock's or the config's place, or at a declared `server_json`
//! path, does not hang a command.

#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use wasmgate_conformance::wasmgate_bin;

/// A user of their own: config dir and default plugins folder.
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
    fn plugins(&self) -> PathBuf {
        self.xdg().join("wasmgate").join("plugins")
    }
    fn lock(&self) -> PathBuf {
        self.xdg().join("wasmgate").join("plugins.lock")
    }
    /// `wasmgate ARGS` as this user (not in development mode), killed when
    /// it runs longer than `limit`; `None` then.
    fn run_within(&self, args: &[&str], limit: Duration) -> Option<Output> {
        let mut child = Command::new(wasmgate_bin())
            .args(args)
            .current_dir(self.tmp.path())
            .env("XDG_CONFIG_HOME", self.xdg())
            .env("HOME", self.tmp.path())
            .env("WASMGATE_CACHE", "")
            .env_remove("WASMGATE_DEV")
            .env_remove("WASMGATE_PLUGINS")
            .env_remove("WASMGATE_CONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("wasmgate starts");
        let start = Instant::now();
        loop {
            if child.try_wait().unwrap().is_some() {
                return Some(child.wait_with_output().unwrap());
            }
            if start.elapsed() > limit {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    fn run(&self, args: &[&str]) -> Output {
        self.run_within(args, Duration::from_secs(120))
            .expect("wasmgate ends within 120 s")
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

/// Control characters that act on a terminal or reorder what it shows.
fn raw_controls(s: &str) -> Vec<char> {
    s.chars()
        .filter(|&c| {
            (c.is_control() && c != '\n' && c != '\t') || ('\u{202A}'..='\u{202E}').contains(&c)
        })
        .collect()
}

#[test]
fn inspect_and_list_show_escapes_of_the_manifest_instead_of_acting_on_the_terminal() {
    let u = User::new();
    let dir = u.plugins().join("esc");
    std::fs::create_dir_all(&dir).unwrap();
    // A version that clears the line, a server name with a bidi override,
    // an argument that rewrites the line to show a harmless command.
    std::fs::write(
        dir.join("plugin.yaml"),
        "name: esc\nversion: \"1.0\\e[2K\\rfine\"\nmcp_servers:\n  \"srv\\u202Eevil\":\n    command: /bin/true\n    args: [\"\\e[2K\\rruns: /usr/bin/harmless\", \"x\"]\n",
    )
    .unwrap();
    // `status` (in development mode, so its server starts, fails, and is
    // named in a log line) too.
    for args in [
        vec!["plugin", "inspect", dir.to_str().unwrap()],
        vec!["plugin", "list"],
        vec!["--dev", "status"],
    ] {
        let out = u.run(&args);
        assert!(out.status.success(), "{args:?}: {}", text(&out));
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(raw_controls(&all), Vec::<char>::new(), "{args:?}: {all}");
        assert!(all.contains("1.0\\u{1b}[2K\\rfine"), "{args:?}: {all}");
    }
    let out = u.run(&["plugin", "inspect", dir.to_str().unwrap()]);
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("srv\\u{202e}evil"), "{s}");
    assert!(s.contains("\\u{1b}[2K\\rruns: /usr/bin/harmless"), "{s}");
}

/// A `plugin.yaml` plugin `linked` whose server is `/bin/sh server.sh`,
/// with `server.sh` a link to `target`.
fn write_linked_plugin(dir: &Path, target: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::os::unix::fs::symlink(target, dir.join("server.sh")).unwrap();
    std::fs::write(
        dir.join("plugin.yaml"),
        format!(
            "name: linked\nversion: \"1\"\nmcp_servers:\n  linked:\n    command: /bin/sh\n    args: [{:?}]\n",
            dir.join("server.sh").display().to_string()
        ),
    )
    .unwrap();
}

#[test]
fn a_link_out_of_the_plugin_folder_is_never_approved() {
    let u = User::new();
    // The script lives outside the folder, where it could be swapped after
    // approval without the folder's digest changing.
    let outside = u.tmp.path().join("outside.sh");
    std::fs::write(&outside, "#!/bin/sh\nexit 0\n").unwrap();
    let dir = u.plugins().join("linked");
    write_linked_plugin(&dir, &outside);
    let out = u.run(&["plugin", "approve", "linked"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("leads out of the plugin folder"),
        "{}",
        text(&out)
    );
    assert!(
        !std::fs::read_to_string(u.lock()).is_ok_and(|l| l.contains("\"linked\"")),
        "not in the lock"
    );
    // Relative links that climb out are refused the same way.
    std::fs::remove_dir_all(&dir).unwrap();
    write_linked_plugin(&dir, Path::new("../../../outside.sh"));
    let out = u.run(&["plugin", "approve", "linked"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("leads out of the plugin folder"),
        "{}",
        text(&out)
    );
    // A link to a file inside the folder can be pinned.
    std::fs::remove_dir_all(&dir).unwrap();
    write_linked_plugin(&dir, Path::new("real.sh"));
    std::fs::write(dir.join("real.sh"), "#!/bin/sh\nexit 0\n").unwrap();
    let out = u.run(&["plugin", "list"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        !text(&out).contains("leads out of the plugin folder"),
        "{}",
        text(&out)
    );
}

fn mkfifo(p: &Path) {
    let st = Command::new("mkfifo").arg(p).status().expect("mkfifo runs");
    assert!(st.success(), "mkfifo {}", p.display());
}

#[test]
fn a_fifo_in_place_of_the_lock_or_the_config_does_not_hang_a_command() {
    let u = User::new();
    // A plugin, so the lock is read and its problem shown.
    std::fs::create_dir_all(u.plugins().join("p")).unwrap();
    std::fs::write(
        u.plugins().join("p/plugin.yaml"),
        "name: p\nversion: \"1\"\n",
    )
    .unwrap();
    mkfifo(&u.lock());
    let out = u
        .run_within(&["plugin", "list"], Duration::from_secs(60))
        .expect("`plugin list` with a FIFO as the lock ends");
    let all = text(&out);
    assert!(all.contains("plugins.lock: not a regular file"), "{all}");

    let config = u.tmp.path().join("config.yaml");
    mkfifo(&config);
    let out = u
        .run_within(
            &["status", "--config", config.to_str().unwrap()],
            Duration::from_secs(60),
        )
        .expect("`status --config FIFO` ends");
    // Refused as a usage error naming the path, before anything reads it.
    let all = text(&out);
    assert_eq!(out.status.code(), Some(2), "{all}");
    assert!(all.contains("config.yaml"), "{all}");
}

#[test]
#[cfg(target_os = "linux")]
fn a_fifo_at_a_declared_server_json_path_does_not_hang_status() {
    let u = User::new();
    let fifo = u.tmp.path().join("server.json");
    mkfifo(&fifo);
    let dir = u.plugins().join("live");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("plugin.yaml"),
        format!(
            "name: live\nversion: \"1\"\nmcp_servers:\n  live:\n    app_endpoint: true\n    app:\n      linux:\n        presence: executable\n        location: /bin/sh\n        liveness: {{kind: server_json, path: {:?}}}\n",
            fifo.display().to_string()
        ),
    )
    .unwrap();
    let out = u
        .run_within(&["--dev", "status"], Duration::from_secs(60))
        .expect("`status` with a FIFO as a server_json ends");
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("server live"), "{}", text(&out));
}

/// A declaration whose location value (plugin-controlled; `location` is
/// YAML, quoted as written) carries a terminal escape and a line break.
fn write_needs_plugin(dir: &Path, location: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("plugin.yaml"),
        format!(
            "name: needy\nversion: \"1\"\nmcp_servers:\n  needy:\n    command: /bin/true\n    app:\n      linux:\n        presence: executable\n        location: {location}\n    requires: {{app: true}}\n"
        ),
    )
    .unwrap();
}

#[test]
fn needs_and_trust_changes_show_escapes_of_the_declaration() {
    let u = User::new();
    let dir = u.plugins().join("needy");
    write_needs_plugin(&dir, "\"/opt/ok\"");
    let out = u.run(&["plugin", "approve", "needy"]);
    assert!(out.status.success(), "{}", text(&out));
    // The new declaration's location forges a line and clears the screen.
    write_needs_plugin(&dir, r#""/opt/x\e[2J\nneeds: nothing\u202E""#);
    for args in [
        vec!["plugin", "inspect", dir.to_str().unwrap()],
        vec!["plugin", "list"],
        vec!["status"],
        vec!["plugin", "approve", "needy"],
    ] {
        let out = u.run(&args);
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(raw_controls(&all), Vec::<char>::new(), "{args:?}: {all}");
        assert!(
            !all.lines()
                .any(|l| l.trim_start().starts_with("needs: nothing")),
            "{args:?}: a forged line: {all}"
        );
        // The declaration is read (not refused), so its value is shown.
        if args.get(1) != Some(&"list") {
            assert!(
                all.contains("/opt/x\\u{1b}[2J\\nneeds: nothing\\u{202e}"),
                "{args:?}: {all}"
            );
        }
    }
}
