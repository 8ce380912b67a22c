//! The real platform on this (linux) machine, with real files: execute bits,
//! symlinks, `*` folders, a command on the real PATH, bundles, GPU facts.
#![cfg(target_os = "linux")]

use crate::common::*;
use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use wasmgate::platform::{
    FileKind, GpuCache, GpuClass, Platform, RealPlatform, gpu_class, refresh_gpu_class,
};
use wasmgate::resolver::locate;
use wasmgate::{LocationKind, OsFamily, Presence, VersionKind};
use wasmgate::{State, availability};

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

/// The real platform with its GPU fact files (`/proc/driver/nvidia/…`,
/// `/sys/class/drm/…`) read from a folder the test lays out: real files and
/// real reads, facts the test controls. Counts the reads of those files, so
/// a cached answer shows as no new reads.
struct LaidOutGpu {
    real: RealPlatform,
    root: std::path::PathBuf,
    gpu_reads: std::sync::atomic::AtomicU64,
    cache: GpuCache,
}

impl LaidOutGpu {
    fn new(root: &std::path::Path) -> LaidOutGpu {
        LaidOutGpu {
            real: RealPlatform::new(),
            root: root.to_path_buf(),
            gpu_reads: Default::default(),
            cache: GpuCache::new(),
        }
    }

    /// `path` inside the laid-out folder when it is a GPU fact path.
    fn at(&self, path: &str) -> String {
        if path.starts_with("/proc/") || path.starts_with("/sys/") {
            self.gpu_reads
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            format!("{}{path}", self.root.display())
        } else {
            path.to_string()
        }
    }

    fn reads(&self) -> u64 {
        self.gpu_reads.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn vendor(&self, card: &str, id: &str) {
        let dir = self.root.join(format!("sys/class/drm/{card}/device"));
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("vendor"), id).unwrap();
    }
}

impl Platform for LaidOutGpu {
    fn os_family(&self) -> OsFamily {
        self.real.os_family()
    }
    fn home(&self) -> Option<String> {
        self.real.home()
    }
    fn env_var(&self, name: &str) -> Option<String> {
        self.real.env_var(name)
    }
    fn metadata(&self, path: &str) -> Option<FileKind> {
        self.real.metadata(&self.at(path))
    }
    fn read_file(&self, path: &str, max_bytes: u64) -> Result<Vec<u8>, wasmgate::ReadError> {
        self.real.read_file(&self.at(path), max_bytes)
    }
    fn open_file(&self, path: &str) -> std::io::Result<Box<dyn wasmgate::ReadSeek>> {
        self.real.open_file(&self.at(path))
    }
    fn list_dir(&self, path: &str) -> std::io::Result<Vec<String>> {
        self.real.list_dir(&self.at(path))
    }
    fn uninstall_entries(&self) -> Vec<wasmgate::UninstallEntry> {
        self.real.uninstall_entries()
    }
    fn display_adapters(&self) -> Option<Vec<wasmgate::DisplayAdapter>> {
        self.real.display_adapters()
    }
    fn native_arch(&self) -> Option<String> {
        self.real.native_arch()
    }
    fn process_alive(&self, pid: u32) -> bool {
        self.real.process_alive(pid)
    }
    fn fs_calls(&self) -> u64 {
        self.real.fs_calls()
    }
    fn gpu_cache(&self) -> &GpuCache {
        &self.cache
    }
}

#[test]
fn gpu_class_from_real_sysfs_files_is_cached_and_refreshable() {
    let t = tempfile::tempdir().unwrap();
    let p = LaidOutGpu::new(t.path());
    // No driver file, no drm tree: the facts cannot be read.
    assert_eq!(gpu_class(&p), GpuClass::Unknown);

    // Cards in numeric order (card10 after card2), connectors and render
    // nodes ignored; intel + amd: amd wins.
    p.vendor("card2", "0x8086\n");
    p.vendor("card10", "0x1002\n");
    fs::create_dir_all(t.path().join("sys/class/drm/card0-eDP-1")).unwrap();
    fs::create_dir_all(t.path().join("sys/class/drm/renderD128")).unwrap();
    assert_eq!(
        gpu_class(&p),
        GpuClass::Unknown,
        "cached: facts not read again"
    );
    let before = p.reads();
    assert_eq!(refresh_gpu_class(&p), GpuClass::Amd);
    let per_read = p.reads() - before;
    assert!(
        per_read >= 4,
        "driver file, drm listing, two vendor files: {per_read}"
    );

    // Cached: 100 calls read nothing, even when the facts change.
    fs::create_dir_all(t.path().join("proc/driver/nvidia")).unwrap();
    fs::write(t.path().join("proc/driver/nvidia/version"), "NVRM 550\n").unwrap();
    let before = p.reads();
    for _ in 0..100 {
        assert_eq!(gpu_class(&p), GpuClass::Amd);
    }
    assert_eq!(p.reads(), before, "gpu_class read the files again");

    // Refresh reads them again: the NVIDIA driver file wins.
    assert_eq!(refresh_gpu_class(&p), GpuClass::Nvidia);
    assert!(p.reads() > before);
    assert_eq!(gpu_class(&p), GpuClass::Nvidia);

    // Blank vendor files only: unknown; an unknown vendor: none.
    fs::remove_dir_all(t.path().join("proc")).unwrap();
    fs::remove_dir_all(t.path().join("sys")).unwrap();
    p.vendor("card0", "  \n");
    assert_eq!(refresh_gpu_class(&p), GpuClass::Unknown);
    p.vendor("card1", "0x1af4\n");
    assert_eq!(refresh_gpu_class(&p), GpuClass::None);
}

#[test]
fn the_real_platform_keeps_its_gpu_class_in_its_cache() {
    // A second call on the same RealPlatform reads no file (the
    // classification itself is covered on laid-out files above).
    let real = RealPlatform::new();
    let first = gpu_class(&real);
    let calls = real.fs_calls();
    assert!(calls >= 1, "the first gpu_class read this machine's facts");
    assert_eq!(gpu_class(&real), first);
    assert_eq!(
        real.fs_calls(),
        calls,
        "a cached gpu_class touched the file system"
    );
}
