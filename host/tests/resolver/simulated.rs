//! Resolution on simulated hosts of every OS family (`docs/declarations.md`
//! §3, `docs/simulated-host.md`): every location kind, expansion, `*`
//! ordering, presence, symlinks, host.yaml validation.
#![cfg(unix)]

use crate::common::*;
use wasmgate::resolver::{Resolution, locate};
use wasmgate::{LocationKind, OsFamily, Presence, VersionKind};
use wasmgate::{Platform, SimulatedHost};

fn paths(r: &Resolution) -> Vec<(String, bool)> {
    r.candidates
        .iter()
        .map(|c| (c.path.clone(), c.present))
        .collect()
}

fn p(s: &str, present: bool) -> (String, bool) {
    (s.to_string(), present)
}

#[test]
fn star_folders_are_ordered_by_the_matched_version() {
    let h = Host::new(OsFamily::Linux, "");
    for v in [
        "Thing 2.9",
        "Thing beta",
        "Thing 10.0",
        "Thing 2.10",
        "Thing 2",
        "Thing 2.0",
    ] {
        h.exe(&format!("/opt/{v}/thing"));
    }
    h.exe("/opt/.Thing 99/thing"); // hidden: `*` does not match a leading dot
    h.exe("/opt/Other 50/thing");
    let host = h.load();
    let r = locate(
        &exe_app(OsFamily::Linux, vec![path("/opt/Thing */thing")]),
        &host,
    );
    assert_eq!(
        paths(&r),
        vec![
            p("/opt/Thing 10.0/thing", true),
            p("/opt/Thing 2.10/thing", true),
            p("/opt/Thing 2.9/thing", true),
            // 2 and 2.0 are equal versions: by name, ascending.
            p("/opt/Thing 2/thing", true),
            p("/opt/Thing 2.0/thing", true),
            p("/opt/Thing beta/thing", true),
        ]
    );
}

#[test]
fn star_skips_a_match_without_the_file_and_reports_the_pattern_when_none() {
    let h = Host::new(OsFamily::Linux, "");
    h.dir("/opt/Thing 3.0");
    h.exe("/opt/Thing 2.0/thing");
    let host = h.load();
    let r = locate(
        &exe_app(OsFamily::Linux, vec![path("/opt/Thing */thing")]),
        &host,
    );
    assert_eq!(paths(&r), vec![p("/opt/Thing 2.0/thing", true)]);

    let r = locate(
        &exe_app(OsFamily::Linux, vec![path("/srv/None */thing")]),
        &host,
    );
    assert_eq!(paths(&r), vec![p("/srv/None */thing", false)]);
}

#[test]
fn win32_star_folders_and_percent_variables() {
    let mut h = Host::new(OsFamily::Win32, "");
    h.yaml("env:\n  ProgramFiles: 'C:\\Program Files'\n");
    h.file_with(
        "C:/Program Files/Vendor/Vendor App 2.3/vendor.exe",
        0o644,
        b"MZ",
    );
    h.file_with(
        "C:/Program Files/Vendor/Vendor App 2.10/vendor.exe",
        0o644,
        b"MZ",
    );
    let host = h.load();
    let r = locate(
        &exe_app(
            OsFamily::Win32,
            vec![path("%ProgramFiles%/Vendor/Vendor App */vendor.exe")],
        ),
        &host,
    );
    assert_eq!(
        paths(&r),
        vec![
            p(
                "C:\\Program Files\\Vendor\\Vendor App 2.10\\vendor.exe",
                true
            ),
            p(
                "C:\\Program Files\\Vendor\\Vendor App 2.3\\vendor.exe",
                true
            ),
        ]
    );
}

#[test]
fn unset_variables_leave_the_candidate_not_present_but_literal_percent_works() {
    let mut h = Host::new(OsFamily::Win32, "");
    h.yaml("env:\n  USERPROFILE: 'C:\\Users\\ana'\n");
    h.file_with("C:/Data/100%/x.exe", 0o644, b"MZ");
    h.file_with("C:/Data/a$/x.exe", 0o644, b"MZ");
    let host = h.load();
    let app = exe_app(
        OsFamily::Win32,
        vec![
            path("%HERMES_TEST_UNSET_VAR%/x.exe"),
            path("C:\\Data\\100%\\x.exe"),
            path("C:\\Data\\a$\\x.exe"),
            path("${UNSET_TOO}\\x.exe"),
        ],
    );
    assert_eq!(
        paths(&locate(&app, &host)),
        vec![
            p("%HERMES_TEST_UNSET_VAR%\\x.exe", false),
            p("C:\\Data\\100%\\x.exe", true),
            p("C:\\Data\\a$\\x.exe", true),
            p("${UNSET_TOO}\\x.exe", false),
        ]
    );
}

#[test]
fn posix_expansion_of_home_and_variables() {
    let mut h = Host::new(OsFamily::Linux, "home: /home/u\n");
    h.yaml("env:\n  TOOLS: /srv/tools\n");
    h.exe("/home/u/bin/thing");
    h.exe("/srv/tools/thing");
    let host = h.load();
    let app = exe_app(
        OsFamily::Linux,
        vec![
            path("~/bin/thing"),
            path("$TOOLS/thing"),
            path("${TOOLS}/thing"),
            path("$NOPE/thing"),
            path("~someone/thing"),
        ],
    );
    assert_eq!(
        paths(&locate(&app, &host)),
        vec![
            p("/home/u/bin/thing", true),
            p("/srv/tools/thing", true),
            p("/srv/tools/thing", true),
            p("$NOPE/thing", false),
            p("~someone/thing", false),
        ]
    );
}

#[test]
fn executable_presence_needs_the_execute_bit_on_posix_only() {
    let h = Host::new(OsFamily::Linux, "");
    h.plain("/opt/thing");
    h.dir("/opt/folder");
    let host = h.load();
    let app = exe_app(
        OsFamily::Linux,
        vec![path("/opt/thing"), path("/opt/folder")],
    );
    assert_eq!(
        paths(&locate(&app, &host)),
        vec![p("/opt/thing", false), p("/opt/folder", false)]
    );

    let h = Host::new(OsFamily::Win32, "");
    h.plain("C:/x/thing.exe");
    let host = h.load();
    let app = exe_app(OsFamily::Win32, vec![path("C:/x/thing.exe")]);
    assert_eq!(
        paths(&locate(&app, &host)),
        vec![p("C:\\x\\thing.exe", true)]
    );
}

#[test]
fn symlinks_are_followed_inside_root_only() {
    let h = Host::new(OsFamily::Linux, "");
    h.exe("/opt/real/thing");
    h.symlink("/usr/bin/inside", "../../opt/real/thing");
    // Leaves root/ by climbing past it, and by an absolute target (which on
    // this machine is a real executable).
    h.symlink("/usr/bin/climb", "../../../../../../../../bin/sh");
    h.symlink("/usr/bin/absolute", "/bin/sh");
    let host = h.load();
    let app = exe_app(
        OsFamily::Linux,
        vec![
            path("/usr/bin/inside"),
            path("/usr/bin/climb"),
            path("/usr/bin/absolute"),
        ],
    );
    assert!(std::path::Path::new("/bin/sh").exists());
    assert_eq!(
        paths(&locate(&app, &host)),
        vec![
            p("/usr/bin/inside", true),
            p("/usr/bin/climb", false),
            p("/usr/bin/absolute", false),
        ]
    );
    assert!(host.read_file("/usr/bin/absolute", 1024).is_err());
}

#[test]
fn command_searches_path_in_order_with_execute_bit_and_never_the_cwd() {
    let mut h = Host::new(OsFamily::Linux, "");
    h.yaml("env:\n  PATH: ':relative:/usr/local/bin:/usr/bin:/opt/bin'\n");
    h.plain("/usr/local/bin/thing"); // no execute bit: skipped
    h.exe("/usr/bin/thing");
    h.exe("/opt/bin/thing");
    h.exe("/relative/thing");
    let host = h.load();
    let app = exe_app(OsFamily::Linux, vec![kind(LocationKind::Command, "thing")]);
    assert_eq!(paths(&locate(&app, &host)), vec![p("/usr/bin/thing", true)]);

    let app = exe_app(OsFamily::Linux, vec![kind(LocationKind::Command, "absent")]);
    assert_eq!(paths(&locate(&app, &host)), vec![p("absent", false)]);
}

#[test]
fn command_on_win32_uses_pathext_without_case() {
    let mut h = Host::new(OsFamily::Win32, "");
    h.yaml("env:\n  PATH: 'C:\\Windows\\System32;\"C:\\Tools\"'\n  PATHEXT: '.COM;.EXE;.BAT'\n");
    h.plain("C:/Tools/vendor.exe");
    h.plain("C:/Tools/other.cmd");
    let host = h.load();
    let app = exe_app(OsFamily::Win32, vec![kind(LocationKind::Command, "vendor")]);
    assert_eq!(
        paths(&locate(&app, &host)),
        vec![p("C:\\Tools\\vendor.EXE", true)]
    );
    let app = exe_app(
        OsFamily::Win32,
        vec![kind(LocationKind::Command, "vendor.exe")],
    );
    assert_eq!(
        paths(&locate(&app, &host)),
        vec![p("C:\\Tools\\vendor.exe", true)]
    );
    // .CMD is not in this PATHEXT.
    let app = exe_app(OsFamily::Win32, vec![kind(LocationKind::Command, "other")]);
    assert_eq!(paths(&locate(&app, &host)), vec![p("other", false)]);
}

#[test]
fn uninstall_registry_order_cleaning_and_unc() {
    let mut h = Host::new(OsFamily::Win32, "");
    h.yaml(
        r#"env:
  LOCALAPPDATA: 'C:\Users\ana\AppData\Local'
registry:
  uninstall:
    - {hive: HKCU, key: user, DisplayName: Vendor App user, InstallLocation: '%LOCALAPPDATA%\Vendor\'}
    - {hive: HKLM, view: 32, key: wow, DisplayName: Vendor App 32, InstallLocation: '"C:\Program Files (x86)\Vendor\ " '}
    - {hive: HKLM, view: 64, key: unc, DisplayName: Vendor App net, InstallLocation: '\\server\share\Vendor'}
    - {hive: HKLM, view: 64, key: noloc, DisplayName: Vendor App none}
    - {hive: HKLM, view: 64, key: other, DisplayName: Other, InstallLocation: 'C:\Other'}
    - {hive: HKLM, view: 64, key: main, DisplayName: Vendor App 2.3, DisplayVersion: 2.3.0, InstallLocation: 'C:\Program Files\Vendor'}
"#,
    );
    h.plain("C:/Program Files/Vendor/bin/vendor.exe");
    h.plain("C:/Program Files (x86)/Vendor/bin/vendor.exe");
    h.plain("C:/Users/ana/AppData/Local/Vendor/bin/vendor.exe");
    h.plain("C:/Other/bin/vendor.exe");
    let host = h.load();
    let app = exe_app(
        OsFamily::Win32,
        vec![uninstall("Vendor App", "bin/vendor.exe")],
    );
    let r = locate(&app, &host);
    assert_eq!(
        paths(&r),
        vec![
            p("C:\\Program Files\\Vendor\\bin\\vendor.exe", true),
            p("C:\\Program Files (x86)\\Vendor\\bin\\vendor.exe", true),
            p(
                "C:\\Users\\ana\\AppData\\Local\\Vendor\\bin\\vendor.exe",
                true
            ),
        ]
    );
    assert_eq!(
        r.candidates[0].uninstall_version,
        Some(Some("2.3.0".into()))
    );
    assert_eq!(r.candidates[1].uninstall_version, Some(None));
}

#[test]
fn uninstall_registry_yields_nothing_off_win32() {
    let h = Host::new(OsFamily::Linux, "");
    let host = h.load();
    let app = exe_app(OsFamily::Linux, vec![uninstall("Vendor", "v.exe")]);
    assert!(locate(&app, &host).candidates.is_empty());
}

#[test]
fn app_bundle_looks_in_applications_then_home() {
    let h = Host::new(OsFamily::Darwin, "home: /Users/u\n");
    h.bundle_version("/Users/u/Applications/Thing.app", "1.0");
    let host = h.load();
    let app = app(
        OsFamily::Darwin,
        Presence::Bundle,
        vec![kind(LocationKind::AppBundle, "Thing.app")],
        VersionKind::None,
    );
    assert_eq!(
        paths(&locate(&app, &host)),
        vec![
            p("/Applications/Thing.app", false),
            p("/Users/u/Applications/Thing.app", true),
        ]
    );
}

#[test]
fn bundle_presence_needs_an_info_plist_file() {
    let h = Host::new(OsFamily::Darwin, "");
    h.dir("/Applications/Thing.app/Contents/Info.plist");
    h.dir("/Applications/Empty.app");
    let host = h.load();
    let app = app(
        OsFamily::Darwin,
        Presence::Bundle,
        vec![
            path("/Applications/Thing.app"),
            path("/Applications/Empty.app"),
        ],
        VersionKind::None,
    );
    assert!(!locate(&app, &host).found());
}

#[test]
fn flatpak_system_then_xdg_data_home_or_default() {
    let mut h = Host::new(OsFamily::Linux, "home: /home/u\n");
    h.yaml("env:\n  XDG_DATA_HOME: /data/u\n");
    h.exe("/data/u/flatpak/exports/bin/com.vendor.App");
    let host = h.load();
    let app = exe_app(
        OsFamily::Linux,
        vec![kind(LocationKind::Flatpak, "com.vendor.App")],
    );
    assert_eq!(
        paths(&locate(&app, &host)),
        vec![
            p("/var/lib/flatpak/exports/bin/com.vendor.App", false),
            p("/data/u/flatpak/exports/bin/com.vendor.App", true),
        ]
    );
    let h = Host::new(OsFamily::Linux, "home: /home/u\n");
    h.exe("/home/u/.local/share/flatpak/exports/bin/com.vendor.App");
    let host = h.load();
    assert_eq!(
        paths(&locate(&app, &host)),
        vec![
            p("/var/lib/flatpak/exports/bin/com.vendor.App", false),
            p(
                "/home/u/.local/share/flatpak/exports/bin/com.vendor.App",
                true
            ),
        ]
    );
}

#[test]
fn snap_looks_in_both_bin_folders() {
    let h = Host::new(OsFamily::Linux, "");
    h.exe("/var/lib/snapd/snap/bin/thing");
    let host = h.load();
    let app = exe_app(OsFamily::Linux, vec![kind(LocationKind::Snap, "thing")]);
    assert_eq!(
        paths(&locate(&app, &host)),
        vec![
            p("/snap/bin/thing", false),
            p("/var/lib/snapd/snap/bin/thing", true)
        ]
    );
}

#[test]
fn directory_tables_follow_the_evaluated_os_family() {
    // A linux-only kind evaluated on a darwin host has no folders to look in.
    let h = Host::new(OsFamily::Darwin, "");
    let host = h.load();
    let app = exe_app(OsFamily::Darwin, vec![kind(LocationKind::Snap, "thing")]);
    assert!(locate(&app, &host).candidates.is_empty());
}

#[test]
fn host_yaml_unknown_keys_and_bad_values_are_errors() {
    let cases = [
        ("os: linux\nhoem: /x\n", "hoem"),
        ("os: beos\n", "os"),
        ("os: linux\ngpu: voodoo\n", "gpu"),
        ("os: linux\narch: arm64\n", "arch"),
        ("os: linux\nregistry: {uninstall: []}\n", "registry"),
        (
            "os: win32\nregistry: {uninstall: [{hive: HKCR, key: k}]}\n",
            "registry.uninstall[0].hive",
        ),
        (
            "os: win32\nregistry: {uninstall: [{hive: HKLM, key: k, Colour: red}]}\n",
            "Colour",
        ),
        (
            "os: win32\nregistry: {uninstall: [{hive: HKCU, view: 32, key: k}]}\n",
            "view",
        ),
    ];
    for (yaml, needle) in cases {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("host.yaml"), yaml).unwrap();
        let e = SimulatedHost::load(dir.path()).unwrap_err().to_string();
        assert!(e.contains("host.yaml"), "{e}");
        assert!(e.contains(needle), "{yaml:?}: {e}");
    }
}

#[test]
fn file_system_calls_are_counted() {
    let h = Host::new(OsFamily::Linux, "");
    h.exe("/opt/a");
    let host = h.load();
    let before = host.fs_calls();
    let app = exe_app(OsFamily::Linux, vec![path("/opt/a"), path("/opt/b")]);
    locate(&app, &host);
    assert_eq!(host.fs_calls() - before, 2);
}

#[test]
fn win32_case_folding_sees_files_added_after_load() {
    let h = Host::new(OsFamily::Win32, "");
    h.plain("C:/Tools/Old.exe");
    let host = h.load();
    let app = exe_app(OsFamily::Win32, vec![path("C:\\tools\\NEW.EXE")]);
    assert!(!locate(&app, &host).found());
    h.plain("C:/Tools/new.exe");
    assert!(locate(&app, &host).found());
    let old = exe_app(OsFamily::Win32, vec![path("c:\\TOOLS\\old.EXE")]);
    assert!(locate(&old, &host).found());
}
