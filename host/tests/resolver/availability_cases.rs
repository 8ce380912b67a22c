//! Availability, version comparison and GPU classification through the
//! library, on simulated hosts built in code: the behaviours of the `host-*`,
//! `version-*` and `gpu-*` cases of `tests/cases/declarations.yaml` (which
//! `tests/tests/declaration_cases.rs` runs through the binary), with the
//! rules of `docs/declarations.md` §3–§6 (noted where they differ from the
//! behaviour wasmgate grew from).
#![cfg(unix)]

use crate::common::*;
use wasmgate::SimulatedHost;
use wasmgate::resolver::version_at_least;
use wasmgate::{Availability, State, availability};
use wasmgate::{Declaration, GpuVendor, LocationKind, OsFamily, Presence, Requires, VersionKind};

/// The compared fields, win32 paths with `/` as the conformance runner compares them.
fn fields(a: &Availability) -> (State, Option<String>, Option<String>, Option<String>, bool) {
    (
        a.state,
        a.version.clone(),
        a.path.as_ref().map(|p| p.replace('\\', "/")),
        a.min_version.clone(),
        a.offerable(),
    )
}

fn s(v: &str) -> Option<String> {
    Some(v.to_string())
}

fn one(os: OsFamily, d: &Declaration, host: &SimulatedHost) -> Availability {
    assert_eq!(wasmgate::Platform::os_family(host), os);
    availability(d, host)
}

#[test]
fn version_compare_cases() {
    assert!(version_at_least("2.3", "2.3.0.0"), "vc-pad-found");
    assert!(version_at_least("11.0.9.509", "11.0.9"), "vc-longer-found");
    assert!(version_at_least("01.2", "1.2"), "vc-leading-zero");
    // `docs/declarations.md` §4 decision: suffixes are not ordered (Hermes failed closed).
    assert!(version_at_least("2.3.0-beta", "2.3.0"), "vc-prerelease");
    // `docs/declarations.md` §4 decision: a segment with no digit counts as 0.
    assert!(version_at_least("1.", "1"), "vc-trailing-dot");
    assert!(
        !version_at_least("２.３", "2.3"),
        "vc-fullwidth-digit-fails"
    );
}

#[test]
fn av_unsupported_os() {
    let host = Host::new(OsFamily::Darwin, "").load();
    let d = decl(
        "t",
        vec![app(
            OsFamily::Win32,
            Presence::Executable,
            vec![path("C:/x/y.exe")],
            VersionKind::PeResource,
        )],
        needs_min("2.0"),
    );
    assert_eq!(
        fields(&one(OsFamily::Darwin, &d, &host)),
        (State::UnsupportedOs, None, None, s("2.0"), false)
    );
}

#[test]
fn av_executable_presence_rejects_directory() {
    let h = Host::new(OsFamily::Linux, "");
    h.dir("/opt/thing");
    let d = decl(
        "t",
        vec![exe_app(OsFamily::Linux, vec![path("/opt/thing")])],
        needs_app(),
    );
    let a = one(OsFamily::Linux, &d, &h.load());
    assert_eq!(
        (a.state, a.path.as_deref()),
        (State::MissingApp, Some("/opt/thing"))
    );
}

#[test]
fn av_bundle_info_plist_is_a_directory() {
    let h = Host::new(OsFamily::Darwin, "");
    h.dir("/Applications/Thing.app/Contents/Info.plist");
    let d = decl(
        "t",
        vec![app(
            OsFamily::Darwin,
            Presence::Bundle,
            vec![path("/Applications/Thing.app")],
            VersionKind::None,
        )],
        needs_app(),
    );
    assert_eq!(
        one(OsFamily::Darwin, &d, &h.load()).state,
        State::MissingApp
    );
}

#[test]
fn av_every_copy_newer_later_and_linux_block_gated_on_presence_only() {
    let h = Host::new(OsFamily::Darwin, "");
    h.bundle_version("/Old/Thing.app", "1.0");
    h.bundle_version("/New/Thing.app", "2.4");
    let darwin = app(
        OsFamily::Darwin,
        Presence::Bundle,
        vec![path("/Old/Thing.app"), path("/New/Thing.app")],
        VersionKind::Plist,
    );
    let d = decl("t", vec![darwin.clone()], needs_min("2.0"));
    assert_eq!(
        fields(&one(OsFamily::Darwin, &d, &h.load())),
        (
            State::Available,
            s("2.4"),
            s("/New/Thing.app"),
            s("2.0"),
            true
        )
    );

    let h = Host::new(OsFamily::Linux, "");
    h.exe("/opt/bin/thing");
    let d = decl(
        "t",
        vec![
            darwin,
            exe_app(OsFamily::Linux, vec![path("/opt/bin/thing")]),
        ],
        needs_min("2.0"),
    );
    assert_eq!(
        fields(&one(OsFamily::Linux, &d, &h.load())),
        (State::Available, None, s("/opt/bin/thing"), s("2.0"), true)
    );
}

#[test]
fn av_gpu_only_apple_and_os_gate_before_gpu() {
    let host = Host::new(OsFamily::Darwin, "gpu: apple_silicon\n").load();
    let d = decl("t", vec![], needs_gpu());
    assert_eq!(
        one(OsFamily::Darwin, &d, &host).state,
        State::UnsupportedGpu
    );

    let host = Host::new(OsFamily::Darwin, "gpu: none\n").load();
    let d = decl(
        "t",
        vec![exe_app(OsFamily::Win32, vec![path("C:/x/y.exe")])],
        Requires {
            app: true,
            min_version: None,
            gpu: Some(GpuVendor::Nvidia),
        },
    );
    assert_eq!(one(OsFamily::Darwin, &d, &host).state, State::UnsupportedOs);
}

#[test]
fn av_command_needs_execute_permission_and_snap_present() {
    let mut h = Host::new(OsFamily::Linux, "");
    h.yaml("env:\n  PATH: /usr/local/bin\n");
    h.plain("/usr/local/bin/thing");
    let d = decl(
        "t",
        vec![exe_app(
            OsFamily::Linux,
            vec![kind(LocationKind::Command, "thing")],
        )],
        needs_app(),
    );
    let a = one(OsFamily::Linux, &d, &h.load());
    assert_eq!(
        (a.state, a.path.as_deref()),
        (State::MissingApp, Some("thing"))
    );

    let h = Host::new(OsFamily::Linux, "");
    h.exe("/snap/bin/thing");
    let d = decl(
        "t",
        vec![exe_app(
            OsFamily::Linux,
            vec![kind(LocationKind::Snap, "thing")],
        )],
        needs_app(),
    );
    let a = one(OsFamily::Linux, &d, &h.load());
    assert_eq!(
        (a.state, a.path.as_deref()),
        (State::Available, Some("/snap/bin/thing"))
    );
}

#[test]
fn av_app_bundle_missing() {
    let host = Host::new(OsFamily::Darwin, "home: /Users/u\n").load();
    let d = decl(
        "t",
        vec![app(
            OsFamily::Darwin,
            Presence::Bundle,
            vec![kind(LocationKind::AppBundle, "Thing.app")],
            VersionKind::None,
        )],
        needs_app(),
    );
    let a = one(OsFamily::Darwin, &d, &host);
    assert_eq!(
        (a.state, a.path.as_deref()),
        (State::MissingApp, Some("/Applications/Thing.app"))
    );
}

#[test]
fn av_star_skips_match_without_file() {
    let h = Host::new(OsFamily::Linux, "");
    h.dir("/opt/Thing 3.0");
    h.exe("/opt/Thing 2.0/thing");
    let d = decl(
        "t",
        vec![exe_app(OsFamily::Linux, vec![path("/opt/Thing */thing")])],
        needs_app(),
    );
    let a = one(OsFamily::Linux, &d, &h.load());
    assert_eq!(
        (a.state, a.path.as_deref()),
        (State::Available, Some("/opt/Thing 2.0/thing"))
    );
}

#[test]
fn av_win_uninstall_location_and_pe_version() {
    let mut h = Host::new(OsFamily::Win32, "");
    h.yaml("registry:\n  uninstall:\n    - {hive: HKLM, view: 64, key: k, DisplayName: Thing 2, DisplayVersion: 2.3.0, InstallLocation: 'C:/Program Files/Thing'}\n");
    let mut pe = pe_with_version();
    set_fixed_version(&mut pe, [2, 3, 0, 12594]);
    h.file_with("C:/Program Files/Thing/bin/thing.exe", 0o644, &pe);
    let d = decl(
        "t",
        vec![app(
            OsFamily::Win32,
            Presence::Executable,
            vec![uninstall("Thing", "bin/thing.exe")],
            VersionKind::PeResource,
        )],
        needs_min("2.3"),
    );
    assert_eq!(
        fields(&one(OsFamily::Win32, &d, &h.load())),
        (
            State::Available,
            s("2.3.0.12594"),
            s("C:/Program Files/Thing/bin/thing.exe"),
            s("2.3"),
            true
        )
    );
}

#[test]
fn av_win_uninstall_every_matching_entry_is_a_candidate() {
    let mut h = Host::new(OsFamily::Win32, "");
    h.yaml("registry:\n  uninstall:\n    - {hive: HKLM, key: a, DisplayName: Thing 1, InstallLocation: 'C:/Thing1'}\n    - {hive: HKCU, key: b, DisplayName: Thing 2, InstallLocation: 'C:/Users/u/AppData/Local/Thing2'}\n");
    h.plain("C:/Users/u/AppData/Local/Thing2/thing.exe");
    let d = decl(
        "t",
        vec![exe_app(
            OsFamily::Win32,
            vec![uninstall("Thing", "thing.exe")],
        )],
        needs_app(),
    );
    let a = one(OsFamily::Win32, &d, &h.load());
    assert_eq!(fields(&a).0, State::Available);
    assert_eq!(fields(&a).2, s("C:/Users/u/AppData/Local/Thing2/thing.exe"));
}

#[test]
fn av_win_unset_percent_var_missing() {
    let host = Host::new(OsFamily::Win32, "").load();
    let d = decl(
        "t",
        vec![exe_app(
            OsFamily::Win32,
            vec![path("%HERMES_TEST_UNSET_VAR%/x.exe")],
        )],
        needs_app(),
    );
    let a = one(OsFamily::Win32, &d, &host);
    assert_eq!(fields(&a).0, State::MissingApp);
    assert_eq!(fields(&a).2, s("%HERMES_TEST_UNSET_VAR%/x.exe"));
}

/// gpu cases: classification reached through availability of a gpu-only
/// declaration (blocked iff the class is amd/intel/apple_silicon/none).
fn gpu_state(host: &SimulatedHost) -> State {
    availability(&decl("t", vec![], needs_gpu()), host).state
}

#[test]
fn gpu_cases() {
    let linux_cards = |vendors: &[&str]| {
        let h = Host::new(OsFamily::Linux, "");
        h.dir("/sys/class/drm");
        for (i, v) in vendors.iter().enumerate() {
            h.file_with(
                &format!("/sys/class/drm/card{i}/device/vendor"),
                0o444,
                v.as_bytes(),
            );
        }
        h
    };
    // gpu-hybrid-intel-amd: amd blocks.
    assert_eq!(
        gpu_state(&linux_cards(&["0x8086\n", "0x1002\n"]).load()),
        State::UnsupportedGpu
    );
    // gpu-no-devices: none blocks.
    assert_eq!(gpu_state(&linux_cards(&[]).load()), State::UnsupportedGpu);
    // gpu-all-blank: unknown passes.
    assert_eq!(
        gpu_state(&linux_cards(&["  ", "\n"]).load()),
        State::NoRequirements
    );
    // gpu-mac-arm: apple_silicon blocks.
    assert_eq!(
        gpu_state(&Host::new(OsFamily::Darwin, "arch: arm64\n").load()),
        State::UnsupportedGpu
    );
    // gpu-linux-no-drm-tree: unknown passes.
    assert_eq!(
        gpu_state(&Host::new(OsFamily::Linux, "").load()),
        State::NoRequirements
    );
    // gpu-windows-no-adapters: none blocks.
    let mut h = Host::new(OsFamily::Win32, "");
    h.yaml("registry:\n  display_adapters:\n    - {key: Properties}\n");
    assert_eq!(gpu_state(&h.load()), State::UnsupportedGpu);
    // An NVIDIA card among others passes.
    assert_eq!(
        gpu_state(&linux_cards(&["0x8086\n", "0x10de\n"]).load()),
        State::NoRequirements
    );
}
