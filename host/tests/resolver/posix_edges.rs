//! POSIX resolution edges (`docs/declarations.md`, "Locations" and
//! "Expansion"), on simulated linux/darwin hosts and on real files of this
//! machine: separators are not doubled by `~` or a variable, a trailing `/`
//! names a folder (also after `*`), `\` is a file-name character, `PATH`
//! entries are literal, an unset `PATH` is `/bin:/usr/bin`, `///x` is the
//! root, and `~user` comes from the user database.
#![cfg(unix)]

use crate::common::*;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use wasmgate::resolver::expand::{expand, is_absolute};
use wasmgate::resolver::{Resolution, locate};
use wasmgate::{LocationKind, OsFamily, Presence, VersionKind};
use wasmgate::{Platform, RealPlatform, SimulatedHost};

fn paths(r: &Resolution) -> Vec<(String, bool)> {
    r.candidates
        .iter()
        .map(|c| (c.path.clone(), c.present))
        .collect()
}

fn p(s: &str, present: bool) -> (String, bool) {
    (s.to_string(), present)
}

fn exe_paths(host: &dyn Platform, os: OsFamily, locs: &[&str]) -> Vec<(String, bool)> {
    let app = exe_app(os, locs.iter().map(|l| path(l)).collect());
    paths(&locate(&app, host))
}

#[test]
fn home_of_slash_and_trailing_separators_join_without_doubling() {
    // HOME=/ (as `home:` and as `HOME`): `~/usr/bin/sh` is `/usr/bin/sh`.
    for extra in ["home: /\n", "env:\n  HOME: /\n"] {
        let h = Host::new(OsFamily::Linux, extra);
        h.exe("/usr/bin/sh");
        h.exe("/Thing 2/thing");
        let host = h.load();
        assert_eq!(
            exe_paths(
                &host,
                OsFamily::Linux,
                &["~/usr/bin/sh", "~/Thing */thing", "~"]
            ),
            vec![
                p("/usr/bin/sh", true),
                p("/Thing 2/thing", true),
                p("/", false),
            ],
            "{extra}"
        );
    }
    // A home with one or more trailing slashes.
    for home in ["/home/u/", "/home/u//"] {
        let h = Host::new(OsFamily::Darwin, &format!("home: '{home}'\n"));
        h.exe("/home/u/bin/thing");
        h.exe("/home/u/Thing 3/thing");
        let host = h.load();
        assert_eq!(
            exe_paths(&host, OsFamily::Darwin, &["~/bin/thing", "~/Thing */thing"]),
            vec![
                p("/home/u/bin/thing", true),
                p("/home/u/Thing 3/thing", true)
            ],
            "{home}"
        );
        // `~` alone keeps the home as it is.
        assert_eq!(expand("~", &host).text, home);
    }
}

#[test]
fn variables_ending_in_a_separator_join_without_doubling() {
    let mut h = Host::new(OsFamily::Linux, "");
    h.yaml("env:\n  ROOT: /\n  TOOLS: /srv/tools/\n  PFX: /srv/tools/pre\n  EMPTY: ''\n");
    h.exe("/usr/bin/sh");
    h.exe("/srv/tools/thing");
    h.exe("/srv/tools/pre-x");
    h.exe("/srv/tools/Thing 4/thing");
    let host = h.load();
    assert_eq!(
        exe_paths(
            &host,
            OsFamily::Linux,
            &[
                "$ROOT/usr/bin/sh",
                "${ROOT}/usr/bin/sh",
                "$TOOLS/thing",
                "${TOOLS}/Thing */thing",
                "$PFX-x",
                "$EMPTY/usr/bin/sh",
            ]
        ),
        vec![
            p("/usr/bin/sh", true),
            p("/usr/bin/sh", true),
            p("/srv/tools/thing", true),
            p("/srv/tools/Thing 4/thing", true),
            p("/srv/tools/pre-x", true),
            p("/usr/bin/sh", true),
        ]
    );
    // Text that does not follow with a separator keeps the value whole.
    assert_eq!(expand("${TOOLS}x", &host).text, "/srv/tools/x");
}

#[test]
fn star_results_keep_the_path_as_written_around_the_matches() {
    let h = Host::new(OsFamily::Linux, "");
    h.exe("/opt/Thing 2/thing");
    h.exe("/opt/Thing 10/thing");
    let host = h.load();
    assert_eq!(
        exe_paths(
            &host,
            OsFamily::Linux,
            &["///opt//Thing */thing", "/opt/Thing *//thing"]
        ),
        vec![
            p("///opt//Thing 10/thing", true),
            p("///opt//Thing 2/thing", true),
            p("/opt/Thing 10//thing", true),
            p("/opt/Thing 2//thing", true),
        ]
    );
}

#[test]
fn a_trailing_slash_names_a_folder_also_after_a_star() {
    let h = Host::new(OsFamily::Linux, "");
    h.exe("/opt/Thing 1/thing"); // a file: never matches `thing/`
    h.dir("/opt/Thing 2/thing"); // a folder
    h.exe("/opt/Thing 3/thing/inner");
    h.exe("/opt/file");
    let host = h.load();
    // Executable presence: folders are never present, but they are the
    // copies looked at; the file is not one of them.
    assert_eq!(
        exe_paths(
            &host,
            OsFamily::Linux,
            &["/opt/Thing */thing/", "/opt/file/", "/opt/Thing *"]
        ),
        vec![
            p("/opt/Thing 3/thing/", false),
            p("/opt/Thing 2/thing/", false),
            p("/opt/file/", false),
            p("/opt/Thing 3", false),
            p("/opt/Thing 2", false),
            p("/opt/Thing 1", false),
        ]
    );
    // A file is only ever a folder with the slash: `Thing */` lists folders.
    let h = Host::new(OsFamily::Linux, "");
    h.exe("/opt/Thing 9");
    h.dir("/opt/Thing 8");
    let host = h.load();
    assert_eq!(
        exe_paths(&host, OsFamily::Linux, &["/opt/Thing */"]),
        vec![p("/opt/Thing 8/", false)]
    );
    assert!(host.metadata("/opt/Thing 9/").is_none());
    assert!(host.read_file("/opt/Thing 9/", 64).is_err());
    assert!(host.metadata("/opt/Thing 8/").is_some_and(|k| k.is_dir()));

    // Bundles: `T.app/` after a `*` is found as a folder and is present.
    let h = Host::new(OsFamily::Darwin, "");
    h.plain("/Apps/T 1/T.app");
    h.bundle_version("/Apps/T 2/T.app", "2.0");
    let host = h.load();
    let app = app(
        OsFamily::Darwin,
        Presence::Bundle,
        vec![path("/Apps/T */T.app/")],
        VersionKind::None,
    );
    assert_eq!(
        paths(&locate(&app, &host)),
        vec![p("/Apps/T 2/T.app/", true)]
    );
}

#[test]
fn backslash_is_a_file_name_character_on_posix() {
    for os in [OsFamily::Linux, OsFamily::Darwin] {
        let h = Host::new(os, "");
        h.exe("/opt/a\\b");
        h.exe("/opt/x\\1/thing");
        h.exe("/opt/x\\2/thing");
        h.exe("/opt/y/thing"); // `x\*` never splits into `x` and `*`
        h.exe("/\\srv\\x");
        let host = h.load();
        assert_eq!(
            exe_paths(
                &host,
                os,
                &["/opt/a\\b", "/opt/x\\*/thing", "/\\srv\\x", "/opt/a/b"]
            ),
            vec![
                p("/opt/a\\b", true),
                p("/opt/x\\2/thing", true),
                p("/opt/x\\1/thing", true),
                p("/\\srv\\x", true),
                p("/opt/a/b", false),
            ],
            "{os:?}"
        );
    }
    // win32 keeps `\` a separator.
    let h = Host::new(OsFamily::Win32, "");
    h.exe("C:/opt/x/thing.exe");
    let host = h.load();
    assert_eq!(
        exe_paths(&host, OsFamily::Win32, &["C:\\opt\\*\\thing.exe"]),
        vec![p("C:\\opt\\x\\thing.exe", true)]
    );
}

#[test]
fn three_slashes_are_the_root_and_two_are_never_looked_at() {
    let h = Host::new(OsFamily::Linux, "");
    h.exe("/usr/bin/sh");
    let host = h.load();
    assert_eq!(
        exe_paths(
            &host,
            OsFamily::Linux,
            &["///usr/bin/sh", "////usr//bin/sh", "//usr/bin/sh"]
        ),
        vec![
            p("///usr/bin/sh", true),
            p("////usr//bin/sh", true),
            p("//usr/bin/sh", false),
        ]
    );
    for (text, os, abs) in [
        ("///usr/bin/sh", OsFamily::Linux, true),
        ("/\\srv\\x", OsFamily::Darwin, true),
        ("//server/share", OsFamily::Linux, false),
        ("/\\srv\\x", OsFamily::Win32, false),
        ("//server/share", OsFamily::Win32, false),
        ("///x", OsFamily::Win32, false),
    ] {
        assert_eq!(is_absolute(text, os), abs, "{text} {os:?}");
    }
}

#[test]
fn path_entries_are_literal_on_posix() {
    let mut h = Host::new(OsFamily::Linux, "");
    // A leading space and quotes are part of the entry: both are relative
    // (skipped); `/opt/b ` (with its trailing space) is a real folder.
    h.yaml("env:\n  PATH: ' /opt/sp:\"/opt/q\":/opt/b :/usr/bin'\n");
    h.exe("/opt/sp/thing");
    h.exe("/opt/q/thing");
    h.exe("/opt/b /thing");
    h.exe("/usr/bin/thing");
    h.exe("/usr/bin/other");
    let host = h.load();
    let cmd = |n: &str| {
        paths(&locate(
            &exe_app(OsFamily::Linux, vec![kind(LocationKind::Command, n)]),
            &host,
        ))
    };
    assert_eq!(cmd("thing"), vec![p("/opt/b /thing", true)]);
    assert_eq!(cmd("other"), vec![p("/usr/bin/other", true)]);

    // win32 keeps its conventions: entries trimmed and unquoted.
    let mut h = Host::new(OsFamily::Win32, "");
    h.yaml("env:\n  PATH: ' \"C:\\Tools\" '\n");
    h.plain("C:/Tools/vendor.exe");
    let host = h.load();
    let app = exe_app(OsFamily::Win32, vec![kind(LocationKind::Command, "vendor")]);
    // Found without case, reported with the PATHEXT spelling.
    assert_eq!(
        paths(&locate(&app, &host)),
        vec![p("C:\\Tools\\vendor.EXE", true)]
    );
}

#[test]
fn unset_path_searches_bin_then_usr_bin_and_empty_path_nothing() {
    let h = Host::new(OsFamily::Linux, "");
    h.exe("/usr/bin/thing");
    h.exe("/usr/bin/both");
    h.exe("/bin/both");
    h.exe("/usr/local/bin/local");
    let host = h.load();
    let cmd = |host: &SimulatedHost, n: &str| {
        paths(&locate(
            &exe_app(OsFamily::Linux, vec![kind(LocationKind::Command, n)]),
            host,
        ))
    };
    assert_eq!(cmd(&host, "thing"), vec![p("/usr/bin/thing", true)]);
    assert_eq!(cmd(&host, "both"), vec![p("/bin/both", true)]);
    assert_eq!(cmd(&host, "local"), vec![p("local", false)]);

    let mut h = Host::new(OsFamily::Darwin, "");
    h.yaml("env:\n  PATH: ''\n");
    h.exe("/usr/bin/thing");
    let host = h.load();
    assert_eq!(cmd(&host, "thing"), vec![p("thing", false)]);

    // win32 has no default: an unset PATH finds nothing.
    let h = Host::new(OsFamily::Win32, "");
    h.plain("C:/bin/thing.exe");
    let host = h.load();
    let app = exe_app(OsFamily::Win32, vec![kind(LocationKind::Command, "thing")]);
    assert_eq!(paths(&locate(&app, &host)), vec![p("thing", false)]);
}

#[test]
fn tilde_user_comes_from_the_user_database() {
    let mut h = Host::new(OsFamily::Linux, "home: /home/u\n");
    h.yaml("users:\n  ana: /home/ana\n  root: /\n  sl: /home/sl/\n");
    h.exe("/home/ana/bin/x");
    h.exe("/usr/bin/sh");
    h.exe("/home/sl/x");
    h.exe("/home/u/x");
    let host = h.load();
    assert_eq!(
        exe_paths(
            &host,
            OsFamily::Linux,
            &[
                "~ana/bin/x",
                "~root/usr/bin/sh",
                "~sl/x",
                "~bob/x",
                "~ana",
                "~/x"
            ]
        ),
        vec![
            p("/home/ana/bin/x", true),
            p("/usr/bin/sh", true),
            p("/home/sl/x", true),
            // An unknown user: never present, never a folder named `~bob`.
            p("~bob/x", false),
            p("/home/ana", false),
            p("/home/u/x", true),
        ]
    );
    // A folder literally named `~bob` in the current folder is never used.
    assert!(!expand("~bob/x", &host).complete);

    // `users:` is a POSIX notion.
    let h = Host::new(OsFamily::Win32, "");
    fs::write(
        h.dir.path().join("host.yaml"),
        "os: win32\nusers: {ana: x}\n",
    )
    .unwrap();
    let err = SimulatedHost::load(h.dir.path()).unwrap_err();
    assert!(err.0.contains("users"), "{err}");
}

// ---------------------------------------------------------------------------
// Real files of this machine
// ---------------------------------------------------------------------------

fn write_exe(path: &std::path::Path) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, b"#!/bin/sh\nexit 0\n").unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn real_files_backslash_names_trailing_slash_and_triple_slash() {
    let real = RealPlatform::new();
    let t = tempfile::tempdir().unwrap();
    let base = t.path().to_str().unwrap().to_string();
    assert!(base.starts_with('/'));
    write_exe(&t.path().join("a\\b"));
    write_exe(&t.path().join("x\\1/thing"));
    write_exe(&t.path().join("x\\2/thing"));
    write_exe(&t.path().join("T 1/thing"));
    fs::create_dir_all(t.path().join("T 2/thing")).unwrap();
    let os = real.os_family();
    let got = exe_paths(
        &real,
        os,
        &[
            &format!("{base}/a\\b"),
            &format!("{base}/x\\*/thing"),
            &format!("{base}/T */thing/"),
            &format!("{base}/a\\b/"),
            &format!("//{base}/a\\b"),
            &format!("//{base}/T */thing"),
        ],
    );
    let rel: Vec<(String, bool)> = got
        .into_iter()
        .map(|(path, present)| (path.replacen(&base, "<t>", 1), present))
        .collect();
    assert_eq!(
        rel,
        vec![
            p("<t>/a\\b", true),
            p("<t>/x\\2/thing", true),
            p("<t>/x\\1/thing", true),
            p("<t>/T 2/thing/", false),
            p("<t>/a\\b/", false),
            p("//<t>/a\\b", true),
            p("//<t>/T 2/thing", false),
            p("//<t>/T 1/thing", true),
        ]
    );
}

/// The home folder of `user` as /etc/passwd lists it.
fn passwd_home(user: &str) -> Option<String> {
    let text = fs::read_to_string("/etc/passwd").ok()?;
    text.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() >= 6 && f[0] == user).then(|| f[5].to_string())
    })
}

#[test]
fn real_tilde_user_is_read_from_the_user_database() {
    let real = RealPlatform::new();
    let home = passwd_home("root").expect("this machine's /etc/passwd lists root");
    assert_eq!(real.user_home("root").as_deref(), Some(home.as_str()));
    let e = expand("~root/x", &real);
    assert!(e.complete);
    assert_eq!(e.text, format!("{}/x", home.trim_end_matches('/')));
    let e = expand("~wasmgate-no-such-user-7d1/x", &real);
    assert!(!e.complete);
    assert_eq!(e.text, "~wasmgate-no-such-user-7d1/x");
    assert_eq!(real.user_home("bad\0name"), None);
}

/// `wasmgate availability` run as a real process with `HOME=/` and no
/// `PATH`: `~/bin/sh` is `/bin/sh` (no `//`), and `command: sh` is found
/// through `/bin:/usr/bin`.
#[test]
fn real_process_with_home_slash_and_no_path() {
    assert!(std::path::Path::new("/bin/sh").is_file());
    let t = tempfile::tempdir().unwrap();
    let yaml = "name: edges\nversion: \"1.0.0\"\nmcp_servers:\n  \
        home-sh:\n    command: /bin/true\n    app:\n      linux:\n        presence: executable\n        location: \"~/bin/sh\"\n    requires: {app: true}\n  \
        cmd-sh:\n    command: /bin/true\n    app:\n      linux:\n        presence: executable\n        location: {kind: command, name: sh}\n    requires: {app: true}\n";
    fs::write(t.path().join("plugin.yaml"), yaml).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_wasmgate"))
        .arg("availability")
        .arg(t.path().join("plugin.yaml"))
        .arg("--json")
        .env_clear()
        .env("HOME", "/")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let by = |name: &str| {
        v.as_array()
            .unwrap()
            .iter()
            .find(|s| s["server"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} in {v}"))
    };
    assert_eq!(by("home-sh")["path"], "/bin/sh", "{v}");
    assert_eq!(by("home-sh")["state"], "available", "{v}");
    let sh = by("cmd-sh");
    assert_eq!(sh["state"], "available", "{v}");
    let found = sh["path"].as_str().unwrap();
    assert!(found == "/bin/sh" || found == "/usr/bin/sh", "{v}");
}
