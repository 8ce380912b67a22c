//! The real platform on this (linux) machine, with real files: execute bits,
//! symlinks, `*` folders, a command on the real PATH, bundles, GPU facts.
#![cfg(target_os = "linux")]

mod resolver_common;

use resolver_common::*;
use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use wasmgate::availability::{State, availability};
use wasmgate::declaration::{LocationKind, OsFamily, Presence, VersionKind};
use wasmgate::platform::{
    FileKind, GpuClass, Platform, RealPlatform, gpu_class, refresh_gpu_class,
};
use wasmgate::resolver::locate;

fn write(path: &std::path::Path, mode: u32) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, b"#!/bin/sh\nexit 0\n").unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn real_files_exec_bits_symlinks_and_star_folders() {
    let real = RealPlatform::new();
    assert_eq!(real.os_family(), OsFamily::Linux);
    let t = tempfile::tempdir().unwrap();
    let base = t.path().to_str().unwrap().to_string();
    write(&t.path().join("Thing 2.9/thing"), 0o755);
    write(&t.path().join("Thing 2.10/thing"), 0o644); // no execute bit
    write(&t.path().join("Thing 10.0/thing"), 0o700);
    fs::create_dir_all(t.path().join("Thing 11.0")).unwrap(); // no file: not a copy
    symlink(t.path().join("Thing 2.9/thing"), t.path().join("link")).unwrap();
    symlink(t.path().join("missing"), t.path().join("dangling")).unwrap();

    let app = exe_app(
        OsFamily::Linux,
        vec![
            path(&format!("{base}/Thing */thing")),
            path(&format!("{base}/link")),
            path(&format!("{base}/dangling")),
            path(&format!("{base}/Thing 2.9")),
        ],
    );
    let r = locate(&app, &real);
    let got: Vec<(String, bool)> = r
        .candidates
        .iter()
        .map(|c| (c.path.strip_prefix(&base).unwrap().to_string(), c.present))
        .collect();
    assert_eq!(
        got,
        vec![
            ("/Thing 10.0/thing".to_string(), true),
            ("/Thing 2.10/thing".to_string(), false),
            ("/Thing 2.9/thing".to_string(), true),
            ("/link".to_string(), true),
            ("/dangling".to_string(), false),
            ("/Thing 2.9".to_string(), false),
        ]
    );
    assert_eq!(
        real.metadata(&format!("{base}/link")),
        Some(FileKind::File { executable: true })
    );
    assert_eq!(
        real.metadata(&format!("{base}/Thing 2.9")),
        Some(FileKind::Dir)
    );
    assert!(real.fs_calls() >= 6);
}

#[test]
fn command_on_the_real_path() {
    let real = RealPlatform::new();
    let d = decl(
        "t",
        vec![exe_app(
            OsFamily::Linux,
            vec![kind(LocationKind::Command, "sh")],
        )],
        needs_app(),
    );
    let a = availability(&d, &real);
    assert_eq!(a.state, State::Available);
    let p = a.path.unwrap();
    assert!(p.starts_with('/') && p.ends_with("/sh"), "{p}");
    assert!(std::path::Path::new(&p).is_file());

    let d = decl(
        "t",
        vec![exe_app(
            OsFamily::Linux,
            vec![kind(LocationKind::Command, "wasmgate-no-such-command-4f1c")],
        )],
        needs_app(),
    );
    let a = availability(&d, &real);
    assert_eq!(a.state, State::MissingApp);
    assert_eq!(a.path.as_deref(), Some("wasmgate-no-such-command-4f1c"));
}

#[test]
fn bundle_and_plist_on_real_files() {
    let real = RealPlatform::new();
    let t = tempfile::tempdir().unwrap();
    let bundle = t.path().join("Thing.app");
    fs::create_dir_all(bundle.join("Contents")).unwrap();
    let mut d = plist::Dictionary::new();
    d.insert(
        "CFBundleShortVersionString".into(),
        plist::Value::String("3.2.1".into()),
    );
    plist::Value::Dictionary(d)
        .to_file_binary(bundle.join("Contents/Info.plist"))
        .unwrap();
    // A plist bundle is a darwin concept; on linux it is read as a path with
    // bundle presence (the presence test itself is OS-independent).
    let mut def = app(
        OsFamily::Linux,
        Presence::Bundle,
        vec![path(bundle.to_str().unwrap())],
        VersionKind::None,
    );
    assert!(locate(&def, &real).found());
    def.version_kind = VersionKind::Plist;
    let copy = locate(&def, &real).candidates.remove(0);
    assert_eq!(
        wasmgate::resolver::read_version(&def, &copy, &real).as_deref(),
        Some("3.2.1")
    );
}

#[test]
fn gpu_class_on_this_machine_is_cached_and_refreshable() {
    let real = RealPlatform::new();
    let first = gpu_class(&real);
    assert_eq!(gpu_class(&real), first);
    assert_eq!(refresh_gpu_class(&real), first);
    // The same rule applied to the files this machine has.
    let expected = if std::path::Path::new("/proc/driver/nvidia/version").exists() {
        GpuClass::Nvidia
    } else if fs::read_dir("/sys/class/drm").is_err() {
        GpuClass::Unknown
    } else {
        first // classification of sysfs contents is covered on simulated hosts
    };
    assert_eq!(first, expected);
}
