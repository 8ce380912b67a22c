//! Availability on simulated hosts (`docs/declarations.md` §4–§6): each state on each OS family, every-copy `min_version`, version
//! sources, GPU facts, the user-facing sentences and the CLI output.
#![cfg(unix)]

use crate::common::*;
use wasmgate::availability::{Availability, State, availability, install_refusal, message};
use wasmgate::cli::availability::run_availability_of;
use wasmgate::platform::{GpuClass, Platform, gpu_class, refresh_gpu_class};
use wasmgate::{Declaration, GpuVendor, LocationKind, OsFamily, Presence, Requires, VersionKind};

fn st(a: &Availability) -> State {
    a.state
}

fn all_families_app(requires: Requires) -> Declaration {
    decl(
        "vendor-mcp",
        vec![
            app(
                OsFamily::Win32,
                Presence::Executable,
                vec![path("C:\\Vendor\\vendor.exe")],
                VersionKind::PeResource,
            ),
            app(
                OsFamily::Darwin,
                Presence::Bundle,
                vec![kind(LocationKind::AppBundle, "Vendor.app")],
                VersionKind::Plist,
            ),
            exe_app(OsFamily::Linux, vec![kind(LocationKind::Command, "vendor")]),
        ],
        requires,
    )
}

#[test]
fn no_requirements_on_every_family_without_io() {
    for os in OsFamily::ALL {
        let host = Host::new(os, "").load();
        let d = all_families_app(Requires::default());
        let a = availability(&d, &host);
        assert_eq!(st(&a), State::NoRequirements);
        assert!(a.offerable());
        assert_eq!(host.fs_calls(), 0, "{os}");
        assert_eq!(message(&d, &a), None);
    }
}

#[test]
fn unsupported_os_on_every_family() {
    for (os, other) in [
        (OsFamily::Win32, OsFamily::Linux),
        (OsFamily::Darwin, OsFamily::Win32),
        (OsFamily::Linux, OsFamily::Darwin),
    ] {
        let host = Host::new(os, "gpu: none\n").load();
        let d = decl(
            "t",
            vec![exe_app(other, vec![kind(LocationKind::Command, "x")])],
            Requires {
                app: true,
                min_version: None,
                gpu: Some(GpuVendor::Nvidia),
            },
        );
        let a = availability(&d, &host);
        // The OS gate comes before the GPU gate.
        assert_eq!(st(&a), State::UnsupportedOs, "{os}");
        assert!(!a.offerable());
        assert_eq!(host.fs_calls(), 0);
        assert_eq!(
            message(&d, &a).unwrap(),
            "t is not installed. Install t, then try again."
        );
    }
}

#[test]
fn unsupported_gpu_from_stated_and_read_facts() {
    let gpu_only = decl("render", vec![], needs_gpu());
    for (os, extra) in [
        (OsFamily::Linux, "gpu: amd\n"),
        (OsFamily::Darwin, "arch: arm64\n"),
        (OsFamily::Win32, "gpu: intel\n"),
    ] {
        let host = Host::new(os, extra).load();
        let a = availability(&gpu_only, &host);
        assert_eq!(st(&a), State::UnsupportedGpu, "{os}");
        assert_eq!(
            message(&gpu_only, &a).unwrap(),
            "render needs an NVIDIA GPU; none was found on this machine. Use render on a machine with an NVIDIA GPU."
        );
        assert_eq!(
            install_refusal("gpu-render", &gpu_only, &a).unwrap(),
            "Plugin 'gpu-render' server 'render' is unavailable: unsupported_gpu, needs an NVIDIA GPU."
        );
    }
    for extra in ["gpu: nvidia\n", "gpu: unknown\n", ""] {
        let host = Host::new(OsFamily::Linux, extra).load();
        let a = availability(&gpu_only, &host);
        assert_eq!(st(&a), State::NoRequirements, "{extra:?}");
        assert!(a.offerable());
    }
}

#[test]
fn gpu_class_from_linux_files_in_numeric_card_order() {
    let h = Host::new(OsFamily::Linux, "");
    // 18 cards: string order would put card10.. before card2; every card is read.
    for i in 0..18 {
        let vendor = if i == 9 { "0x1002\n" } else { "0x1af4\n" };
        h.file_with(
            &format!("/sys/class/drm/card{i}/device/vendor"),
            0o444,
            vendor.as_bytes(),
        );
    }
    h.dir("/sys/class/drm/card0-eDP-1");
    h.dir("/sys/class/drm/renderD128");
    let host = h.load();
    assert_eq!(gpu_class(&host), GpuClass::Amd);

    // The NVIDIA driver file wins, and refresh re-reads the facts.
    h.file_with("/proc/driver/nvidia/version", 0o444, b"NVRM version: 550\n");
    assert_eq!(gpu_class(&host), GpuClass::Amd, "cached");
    assert_eq!(refresh_gpu_class(&host), GpuClass::Nvidia);
    assert_eq!(gpu_class(&host), GpuClass::Nvidia);

    let host = Host::new(OsFamily::Linux, "").load();
    assert_eq!(gpu_class(&host), GpuClass::Unknown, "no drm tree");
    let h = Host::new(OsFamily::Linux, "");
    h.file_with("/sys/class/drm/card0/device/vendor", 0o444, b"  \n");
    assert_eq!(gpu_class(&h.load()), GpuClass::Unknown, "blank vendor");
}

#[test]
fn gpu_class_from_win32_display_adapters_and_darwin_arch() {
    let mut h = Host::new(OsFamily::Win32, "");
    h.yaml(
        "registry:\n  display_adapters:\n    - {key: '0000', MatchingDeviceId: 'pci\\ven_8086&dev_46a6'}\n    - {key: Properties}\n    - {key: '0017', MatchingDeviceId: 'PCI\\VEN_10DE&DEV_2684'}\n",
    );
    assert_eq!(gpu_class(&h.load()), GpuClass::Nvidia);
    let mut h = Host::new(OsFamily::Win32, "");
    h.yaml("registry:\n  display_adapters:\n    - {key: Properties}\n");
    assert_eq!(gpu_class(&h.load()), GpuClass::None);
    let mut h = Host::new(OsFamily::Win32, "");
    h.yaml("registry:\n  display_adapters:\n    - {key: '0000'}\n");
    assert_eq!(gpu_class(&h.load()), GpuClass::Unknown);
    assert_eq!(
        gpu_class(&Host::new(OsFamily::Win32, "").load()),
        GpuClass::Unknown
    );
    assert_eq!(
        gpu_class(&Host::new(OsFamily::Darwin, "arch: arm64\n").load()),
        GpuClass::AppleSilicon
    );
    assert_eq!(
        gpu_class(&Host::new(OsFamily::Darwin, "arch: x86_64\n").load()),
        GpuClass::Unknown
    );
}

#[test]
fn missing_app_on_every_family_reports_where_it_looked() {
    let cases = [
        (OsFamily::Win32, Some("C:\\Vendor\\vendor.exe")),
        (OsFamily::Darwin, Some("/Applications/Vendor.app")),
        (OsFamily::Linux, Some("vendor")),
    ];
    for (os, looked) in cases {
        let host = Host::new(os, "home: /Users/u\n").load();
        let d = all_families_app(needs_min("2.3"));
        let a = availability(&d, &host);
        assert_eq!(st(&a), State::MissingApp, "{os}");
        assert_eq!(a.path.as_deref(), looked);
        assert_eq!(a.version, None);
        assert_eq!(a.min_version.as_deref(), Some("2.3"));
        assert_eq!(
            message(&d, &a).unwrap(),
            "vendor-mcp is not installed. Install vendor-mcp, then try again."
        );
    }
}

#[test]
fn available_on_every_family() {
    // win32: PE version from a real executable.
    let h = Host::new(OsFamily::Win32, "");
    let mut pe = pe_with_version();
    set_fixed_version(&mut pe, [2, 3, 0, 12594]);
    h.file_with("C:/Vendor/vendor.exe", 0o644, &pe);
    let a = availability(&all_families_app(needs_min("2.3")), &h.load());
    assert_eq!(
        (st(&a), a.version.as_deref(), a.path.as_deref()),
        (
            State::Available,
            Some("2.3.0.12594"),
            Some("C:\\Vendor\\vendor.exe")
        )
    );
    assert!(a.offerable());

    // darwin: binary plist.
    let h = Host::new(OsFamily::Darwin, "home: /Users/u\n");
    h.bundle(
        "/Applications/Vendor.app",
        &[("CFBundleVersion", plist::Value::String("2.4.1".into()))],
        true,
    );
    let a = availability(&all_families_app(needs_min("2.3")), &h.load());
    assert_eq!(
        (st(&a), a.version.as_deref(), a.path.as_deref()),
        (
            State::Available,
            Some("2.4.1"),
            Some("/Applications/Vendor.app")
        )
    );

    // linux: presence only (no version source on linux).
    let mut h = Host::new(OsFamily::Linux, "");
    h.yaml("env:\n  PATH: /usr/bin\n");
    h.exe("/usr/bin/vendor");
    let a = availability(&all_families_app(needs_min("2.3")), &h.load());
    assert_eq!(
        (
            st(&a),
            a.version.as_deref(),
            a.path.as_deref(),
            a.min_version.as_deref()
        ),
        (State::Available, None, Some("/usr/bin/vendor"), Some("2.3"))
    );
}

#[test]
fn version_too_old_on_win32_and_darwin() {
    let h = Host::new(OsFamily::Win32, "");
    let mut pe = pe_with_version();
    set_fixed_version(&mut pe, [2, 2, 9, 0]);
    h.file_with("C:/Vendor/vendor.exe", 0o644, &pe);
    let d = all_families_app(needs_min("2.3"));
    let a = availability(&d, &h.load());
    assert_eq!(
        (st(&a), a.version.as_deref(), a.path.as_deref()),
        (
            State::VersionTooOld,
            Some("2.2.9.0"),
            Some("C:\\Vendor\\vendor.exe")
        )
    );
    assert_eq!(
        message(&d, &a).unwrap(),
        "vendor-mcp version 2.2.9.0 is too old; version 2.3 or newer is required. Update vendor-mcp, then try again."
    );
    assert_eq!(
        install_refusal("vendor", &d, &a).unwrap(),
        "Plugin 'vendor' server 'vendor-mcp' is unavailable: version_too_old, found version 2.2.9.0."
    );

    // darwin: an unreadable plist with a minimum is version_too_old, no version.
    let h = Host::new(OsFamily::Darwin, "");
    h.file_with(
        "/Applications/Vendor.app/Contents/Info.plist",
        0o644,
        b"\x00\xffnot a plist",
    );
    let a = availability(&d, &h.load());
    assert_eq!(
        (st(&a), a.version.as_deref(), a.path.as_deref()),
        (State::VersionTooOld, None, Some("/Applications/Vendor.app"))
    );
    assert_eq!(
        message(&d, &a).unwrap(),
        "vendor-mcp's version could not be read; version 2.3 or newer is required. Check that vendor-mcp is installed completely (the warnings say what failed), then try again."
    );
}

#[test]
fn unreadable_plist_without_minimum_is_available_without_version() {
    let h = Host::new(OsFamily::Darwin, "");
    h.file_with(
        "/Applications/Thing.app/Contents/Info.plist",
        0o644,
        b"<plist",
    );
    let d = decl(
        "t",
        vec![app(
            OsFamily::Darwin,
            Presence::Bundle,
            vec![path("/Applications/Thing.app")],
            VersionKind::Plist,
        )],
        needs_app(),
    );
    let a = availability(&d, &h.load());
    assert_eq!(
        (st(&a), a.version, a.path.as_deref(), a.min_version),
        (
            State::Available,
            None,
            Some("/Applications/Thing.app"),
            None
        )
    );
}

fn darwin_copies(versions: &[(&str, &str)], min: &str) -> Availability {
    let h = Host::new(OsFamily::Darwin, "");
    let mut locs = Vec::new();
    for (bundle, v) in versions {
        if v.is_empty() {
            h.file_with(&format!("{bundle}/Contents/Info.plist"), 0o644, b"junk");
        } else {
            h.bundle_version(bundle, v);
        }
        locs.push(path(bundle));
    }
    let d = decl(
        "t",
        vec![app(
            OsFamily::Darwin,
            Presence::Bundle,
            locs,
            VersionKind::Plist,
        )],
        needs_min(min),
    );
    availability(&d, &h.load())
}

#[test]
fn every_copy_first_satisfying_wins_else_highest_else_first() {
    let a = darwin_copies(
        &[
            ("/Old/T.app", "1.0"),
            ("/New/T.app", "2.4"),
            ("/Newer/T.app", "3.0"),
        ],
        "2.0",
    );
    assert_eq!(
        (st(&a), a.version.as_deref(), a.path.as_deref()),
        (State::Available, Some("2.4"), Some("/New/T.app"))
    );
    let a = darwin_copies(
        &[
            ("/A/T.app", "1.0"),
            ("/B/T.app", "1.5"),
            ("/C/T.app", "1.5.0"),
        ],
        "2.0",
    );
    assert_eq!(
        (st(&a), a.version.as_deref(), a.path.as_deref()),
        (State::VersionTooOld, Some("1.5"), Some("/B/T.app")),
        "highest, first on ties"
    );
    let a = darwin_copies(&[("/A/T.app", ""), ("/B/T.app", "beta")], "2.0");
    assert_eq!(
        (st(&a), a.version.as_deref(), a.path.as_deref()),
        (State::VersionTooOld, None, Some("/A/T.app")),
        "none readable: the first copy"
    );
    let a = darwin_copies(&[("/A/T.app", "beta"), ("/B/T.app", "")], "2.0");
    assert_eq!(
        (st(&a), a.version.as_deref()),
        (State::VersionTooOld, Some("beta")),
        "the raw text found is reported"
    );
    let a = darwin_copies(&[("/A/T.app", "2.3.0-beta")], "2.3.0");
    assert_eq!(
        st(&a),
        State::Available,
        "prerelease suffixes are not ordered"
    );
}

#[test]
fn uninstall_registry_versions_follow_the_entry_of_each_copy() {
    let mut h = Host::new(OsFamily::Win32, "");
    h.yaml(
        r#"registry:
  uninstall:
    - {hive: HKLM, view: 64, key: a, DisplayName: Thing 1, DisplayVersion: 1.0, InstallLocation: 'C:\Thing1'}
    - {hive: HKLM, view: 32, key: b, DisplayName: Thing 2, InstallLocation: 'C:\Thing2'}
    - {hive: HKCU, key: c, DisplayName: Thing 3, DisplayVersion: 3.1, InstallLocation: 'C:\Thing3'}
"#,
    );
    for d in ["C:/Thing1", "C:/Thing2", "C:/Thing3", "C:/Elsewhere"] {
        h.plain(&format!("{d}/thing.exe"));
    }
    let host = h.load();
    let mut def = app(
        OsFamily::Win32,
        Presence::Executable,
        vec![uninstall("Thing", "thing.exe")],
        VersionKind::UninstallRegistry,
    );
    def.version_arg = "Thing".into();
    let a = availability(&decl("t", vec![def.clone()], needs_min("3")), &host);
    assert_eq!(
        (st(&a), a.version.as_deref(), a.path.as_deref()),
        (State::Available, Some("3.1"), Some("C:\\Thing3\\thing.exe"))
    );
    let a = availability(&decl("t", vec![def.clone()], needs_min("4")), &host);
    assert_eq!(
        (st(&a), a.version.as_deref(), a.path.as_deref()),
        (
            State::VersionTooOld,
            Some("3.1"),
            Some("C:\\Thing3\\thing.exe")
        )
    );
    // A copy found by path takes the first matching entry with a DisplayVersion.
    def.locations = vec![path("C:\\Elsewhere\\thing.exe")];
    def.version_arg = "Thing 2".into();
    let a = availability(&decl("t", vec![def.clone()], needs_min("1")), &host);
    assert_eq!((st(&a), a.version.as_deref()), (State::VersionTooOld, None));
    def.version_arg = "Thing".into();
    let a = availability(&decl("t", vec![def], needs_min("1")), &host);
    assert_eq!(
        (st(&a), a.version.as_deref()),
        (State::Available, Some("1.0"))
    );
}

#[test]
fn gpu_only_and_app_false_declarations() {
    let d = decl(
        "t",
        vec![exe_app(OsFamily::Linux, vec![path("/nowhere")])],
        Requires {
            app: false,
            min_version: None,
            gpu: Some(GpuVendor::Nvidia),
        },
    );
    let host = Host::new(OsFamily::Linux, "gpu: nvidia\n").load();
    assert_eq!(st(&availability(&d, &host)), State::NoRequirements);
    assert_eq!(host.fs_calls(), 0, "app block ignored when app: false");
}

#[test]
fn cli_json_output_in_manifest_order() {
    let mut h = Host::new(OsFamily::Win32, "gpu: amd\n");
    h.yaml("env:\n  ProgramFiles: 'C:\\Program Files'\n");
    let mut pe = pe_with_version();
    set_fixed_version(&mut pe, [2, 3, 0, 12594]);
    h.file_with(
        "C:/Program Files/Vendor/Vendor App 2.3/vendor.exe",
        0o644,
        &pe,
    );
    let dir = h.write();
    let vendor = decl(
        "vendor-mcp",
        vec![app(
            OsFamily::Win32,
            Presence::Executable,
            vec![path("%ProgramFiles%/Vendor/Vendor App */vendor.exe")],
            VersionKind::PeResource,
        )],
        needs_min("2.3"),
    );
    let render = decl("render", vec![], needs_gpu());
    let plain = decl("plain", vec![], Requires::default());
    let servers = vec![
        ("vendor-mcp".to_string(), vendor),
        ("render".to_string(), render),
        ("plain".to_string(), plain),
    ];
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let rc = run_availability_of(&servers, &[], Some(dir), None, true, &mut out, &mut err);
    assert_eq!(rc, 0, "{}", String::from_utf8_lossy(&err));
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(
        v,
        serde_json::json!([
            {"server": "vendor-mcp", "state": "available", "offerable": true,
             "version": "2.3.0.12594",
             "path": "C:\\Program Files\\Vendor\\Vendor App 2.3\\vendor.exe",
             "min_version": "2.3", "message": null},
            {"server": "render", "state": "unsupported_gpu", "offerable": false,
             "version": null, "path": null, "min_version": null,
             "message": "render needs an NVIDIA GPU; none was found on this machine. Use render on a machine with an NVIDIA GPU."},
            {"server": "plain", "state": "no_requirements", "offerable": true,
             "version": null, "path": null, "min_version": null, "message": null}
        ])
    );
    // Keys in the documented order.
    let text = String::from_utf8(out).unwrap();
    let order: Vec<usize> = [
        "\"server\"",
        "\"state\"",
        "\"offerable\"",
        "\"version\"",
        "\"path\"",
        "\"min_version\"",
        "\"message\"",
    ]
    .iter()
    .map(|k| text.find(k).unwrap())
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");

    // A bad host folder is invalid input (exit 1) naming host.yaml.
    std::fs::write(dir.join("host.yaml"), "os: win32\ncolour: blue\n").unwrap();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let rc = run_availability_of(&servers, &[], Some(dir), None, true, &mut out, &mut err);
    assert_eq!(rc, 1);
    assert!(String::from_utf8_lossy(&err).contains("host.yaml"));
    // Load errors are printed and exit 1; a missing host folder is usage (2).
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let errors =
        vec!["plugin.yaml server 'x': app.linux.location[0].name must be a bare name".to_string()];
    assert_eq!(
        run_availability_of(&[], &errors, None, None, true, &mut out, &mut err),
        1
    );
    assert!(String::from_utf8_lossy(&err).contains("app.linux.location[0].name"));
    let missing = dir.join("nope");
    assert_eq!(
        run_availability_of(
            &servers,
            &[],
            Some(&missing),
            None,
            true,
            &mut out,
            &mut err
        ),
        2
    );
}

#[test]
fn machine_status_reports_os_and_gpu_class() {
    // What `wasmgate status` prints as `os_family: … gpu_class: …`.
    let host = Host::new(OsFamily::Darwin, "arch: arm64\n").load();
    assert_eq!(
        (host.os_family().as_str(), gpu_class(&host).as_str()),
        ("darwin", "apple_silicon")
    );
    let host = Host::new(OsFamily::Win32, "gpu: nvidia\n").load();
    assert_eq!(gpu_class(&host).as_str(), "nvidia");
}
