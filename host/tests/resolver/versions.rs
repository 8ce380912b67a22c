//! Version sources on real files (`docs/declarations.md` §4): PE version
//! resources of real Windows executables (pip's vendored launchers, patched
//! the way a vendor build would stamp them), XML and binary plists written
//! by the plist crate — read through the simulated host and this machine.
#![cfg(unix)]

use crate::common::*;
use wasmgate::RealPlatform;
use wasmgate::resolver::pe::file_version;
use wasmgate::resolver::version::plist_version;
use wasmgate::resolver::{Candidate, read_version};
use wasmgate::{OsFamily, Presence, VersionKind};

fn pe_on_real_machine(bytes: &[u8]) -> Option<String> {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("app.exe");
    std::fs::write(&p, bytes).unwrap();
    file_version(&RealPlatform::new(), p.to_str().unwrap())
}

#[test]
fn pe_fixed_file_version_of_a_real_launcher() {
    let pe = pe_with_version();
    // pip's launcher is stamped 1.1.0.14 by its build.
    assert_eq!(pe_on_real_machine(&pe).as_deref(), Some("1.1.0.14"));
    let mut patched = pe.clone();
    set_fixed_version(&mut patched, [2, 3, 0, 12594]);
    assert_eq!(pe_on_real_machine(&patched).as_deref(), Some("2.3.0.12594"));
}

#[test]
fn pe32_launcher_and_comma_separated_string_versions() {
    let pe32 = pe32_with_version().expect("pip's t32.exe (a PE32 launcher)");
    assert_eq!(pe_on_real_machine(&pe32).as_deref(), Some("1.1.0.14"));
    // Old resource scripts write "3, 4, 5, 6"; the fixed info is 0.0.0.0 here.
    let mut pe = pe_with_version();
    set_fixed_version(&mut pe, [0, 0, 0, 0]);
    set_string_value(&mut pe, "FileVersion", "3, 4, 5");
    assert_eq!(pe_on_real_machine(&pe).as_deref(), Some("3.4.5"));
}

#[test]
fn pe_zero_or_unsigned_fixed_info_falls_back_to_the_string_table() {
    let mut pe = pe_with_version();
    set_string_value(&mut pe, "FileVersion", "7.7.7.77");
    set_string_value(&mut pe, "ProductVersion", "8.8.8.88");
    let mut zero = pe.clone();
    set_fixed_version(&mut zero, [0, 0, 0, 0]);
    assert_eq!(pe_on_real_machine(&zero).as_deref(), Some("7.7.7.77"));

    // A wrong VS_FIXEDFILEINFO signature: the fixed info is not trusted.
    let mut unsigned = pe.clone();
    let off = fixed_info_offset(&unsigned);
    unsigned[off..off + 4].copy_from_slice(&0xDEAD_BEEFu32.to_le_bytes());
    assert_eq!(pe_on_real_machine(&unsigned).as_deref(), Some("7.7.7.77"));

    // No FileVersion string: ProductVersion.
    rename_string_key(&mut zero, "FileVersion", "FileVersiom");
    assert_eq!(pe_on_real_machine(&zero).as_deref(), Some("8.8.8.88"));
}

#[test]
fn pe_without_a_version_resource_and_non_pe_files_are_unreadable() {
    assert_eq!(pe_on_real_machine(&pe_without_version()), None);
    assert_eq!(pe_on_real_machine(b"#!/bin/sh\necho hi\n"), None);
    let sh = std::fs::read("/bin/sh").unwrap(); // an ELF executable
    assert_eq!(pe_on_real_machine(&sh), None);
    // Truncated real PE: never a panic.
    let pe = pe_with_version();
    for cut in [2, 64, 512, 4096, pe.len() / 2, pe.len() - 10] {
        let _ = pe_on_real_machine(&pe[..cut]);
    }
}

#[test]
fn pe_version_through_a_simulated_win32_host() {
    let h = Host::new(OsFamily::Win32, "");
    let mut pe = pe_with_version();
    set_fixed_version(&mut pe, [11, 0, 9, 509]);
    h.file_with("C:/Vendor/bin/vendor.exe", 0o644, &pe);
    let host = h.load();
    let def = app(
        OsFamily::Win32,
        Presence::Executable,
        vec![path("C:\\Vendor\\bin\\vendor.exe")],
        VersionKind::PeResource,
    );
    let copy = Candidate {
        path: "C:\\Vendor\\bin\\vendor.exe".into(),
        present: true,
        kind: wasmgate::LocationKind::Path,
        uninstall_version: None,
    };
    assert_eq!(
        read_version(&def, &copy, &host).as_deref(),
        Some("11.0.9.509")
    );
}

#[test]
fn plist_versions_xml_and_binary() {
    for binary in [false, true] {
        let h = Host::new(OsFamily::Darwin, "");
        h.bundle(
            "/Applications/A.app",
            &[
                (
                    "CFBundleShortVersionString",
                    plist::Value::String("4.2".into()),
                ),
                ("CFBundleVersion", plist::Value::String("4201".into())),
            ],
            binary,
        );
        h.bundle(
            "/Applications/B.app",
            &[
                (
                    "CFBundleShortVersionString",
                    plist::Value::String(String::new()),
                ),
                ("CFBundleVersion", plist::Value::String("77".into())),
            ],
            binary,
        );
        h.bundle(
            "/Applications/C.app",
            &[("CFBundleVersion", plist::Value::Integer(7.into()))],
            binary,
        );
        h.bundle(
            "/Applications/D.app",
            &[("CFBundleName", plist::Value::String("D".into()))],
            binary,
        );
        let host = h.load();
        assert_eq!(
            plist_version("/Applications/A.app", &host).as_deref(),
            Some("4.2")
        );
        assert_eq!(
            plist_version("/Applications/B.app", &host).as_deref(),
            Some("77")
        );
        assert_eq!(
            plist_version("/Applications/C.app", &host).as_deref(),
            Some("7")
        );
        assert_eq!(plist_version("/Applications/D.app", &host), None);
        assert_eq!(plist_version("/Applications/None.app", &host), None);
    }
}

#[test]
fn plist_larger_than_the_limit_is_not_read() {
    let h = Host::new(OsFamily::Darwin, "");
    let big = "x".repeat(2 * 1024 * 1024);
    h.bundle(
        "/Applications/Big.app",
        &[
            (
                "CFBundleShortVersionString",
                plist::Value::String("1.0".into()),
            ),
            ("Padding", plist::Value::String(big)),
        ],
        false,
    );
    assert_eq!(plist_version("/Applications/Big.app", &h.load()), None);
}
