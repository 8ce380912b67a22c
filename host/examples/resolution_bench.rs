//! Benchmark: availability of 1,000 mixed declarations on simulated hosts
//! (one per OS family) and on this machine. Prints declarations per second
//! and file-system calls per declaration next to the budget of the issue
//! (one call per candidate location plus one per version read).
//!
//! Run (optimised wasmgate, the rest of the dev profile unchanged):
//!
//! ```text
//! cargo run --config 'profile.dev.package.wasmgate.opt-level=3' \
//!   -p wasmgate --example resolution_bench
//! ```
//!
//! (Cargo reads no environment variable for a per-package profile override:
//! `CARGO_PROFILE_DEV_PACKAGE_WASMGATE_OPT_LEVEL=3` is silently ignored and
//! builds wasmgate unoptimised; `cargo build -v` shows no `opt-level` then.)

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Instant;
use wasmgate::declaration::*;
use wasmgate::resolver::locate;
use wasmgate::{Platform, RealPlatform, SimulatedHost};
use wasmgate::{State, availability};

const N: usize = 1000;
const ROUNDS: usize = 20;

fn loc(kind: LocationKind, value: &str, file: &str) -> Location {
    Location {
        kind,
        value: value.into(),
        file: file.into(),
    }
}

fn decl(
    name: String,
    os: OsFamily,
    presence: Presence,
    locs: Vec<Location>,
    vk: VersionKind,
    min: Option<&str>,
    gpu: bool,
) -> Declaration {
    let requires = Requires {
        app: !locs.is_empty(),
        min_version: min.map(str::to_string),
        gpu: gpu.then_some(GpuVendor::Nvidia),
    };
    let app = (!locs.is_empty()).then(|| {
        vec![AppDef {
            app_id: name.clone(),
            os_family: os,
            presence,
            locations: locs,
            version_kind: vk,
            version_arg: "App".into(),
            liveness: Liveness::None,
        }]
    });
    Declaration {
        name,
        app,
        requires,
    }
}

fn write(root: &Path, rel: &str, mode: u32, content: &[u8]) {
    let p = root.join(rel.trim_start_matches('/'));
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(&p, content).unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(mode)).unwrap();
}

fn plist(root: &Path, bundle: &str, v: &str) {
    let p = root
        .join(bundle.trim_start_matches('/'))
        .join("Contents/Info.plist");
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    let mut d = plist::Dictionary::new();
    d.insert(
        "CFBundleShortVersionString".into(),
        plist::Value::String(v.into()),
    );
    plist::Value::Dictionary(d).to_file_xml(p).unwrap();
}

/// Linux declarations: path (plain and `*`), command, flatpak, snap, gpu-only,
/// no requirements; half of the apps exist.
fn linux_decls(base: &str) -> Vec<Declaration> {
    (0..N)
        .map(|i| {
            let name = format!("s{i}");
            let ex = |l| {
                decl(
                    name.clone(),
                    OsFamily::Linux,
                    Presence::Executable,
                    l,
                    VersionKind::None,
                    None,
                    false,
                )
            };
            match i % 8 {
                0 => ex(vec![loc(
                    LocationKind::Path,
                    &format!("{base}/opt/app{}/bin/app", i % 50),
                    "",
                )]),
                1 => ex(vec![loc(
                    LocationKind::Path,
                    &format!("{base}/opt/Suite */bin/suite{}", i % 4),
                    "",
                )]),
                2 => ex(vec![loc(
                    LocationKind::Command,
                    &format!("tool{}", i % 40),
                    "",
                )]),
                3 => ex(vec![loc(
                    LocationKind::Flatpak,
                    &format!("org.app.A{}", i % 30),
                    "",
                )]),
                4 => ex(vec![loc(
                    LocationKind::Snap,
                    &format!("snap{}", i % 30),
                    "",
                )]),
                5 => decl(
                    name,
                    OsFamily::Linux,
                    Presence::Executable,
                    vec![],
                    VersionKind::None,
                    None,
                    true,
                ),
                6 => decl(
                    name,
                    OsFamily::Linux,
                    Presence::Executable,
                    vec![],
                    VersionKind::None,
                    None,
                    false,
                ),
                _ => ex(vec![
                    loc(LocationKind::Command, &format!("missing{i}"), ""),
                    loc(
                        LocationKind::Path,
                        &format!("{base}/opt/app{}/bin/app", i % 50),
                        "",
                    ),
                ]),
            }
        })
        .collect()
}

/// Files of the linux mix under `root/` + `base`; the flatpak and snap
/// system folders only when `system_dirs` (a simulated root, never this machine).
fn linux_files(root: &Path, base: &str, system_dirs: bool) {
    let r = |p: &str| format!("{base}{p}");
    for i in (0..50).step_by(2) {
        write(root, &r(&format!("/opt/app{i}/bin/app")), 0o755, b"x");
    }
    for v in ["1.0", "2.5", "10.1", "beta"] {
        for s in 0..4 {
            write(
                root,
                &r(&format!("/opt/Suite {v}/bin/suite{s}")),
                0o755,
                b"x",
            );
        }
    }
    for i in (0..40).step_by(2) {
        write(root, &r(&format!("/usr/bin/tool{i}")), 0o755, b"x");
    }
    for i in (0..30).step_by(2).filter(|_| system_dirs) {
        write(
            root,
            &format!("/var/lib/flatpak/exports/bin/org.app.A{i}"),
            0o755,
            b"x",
        );
        write(root, &format!("/snap/bin/snap{i}"), 0o755, b"x");
    }
}

fn darwin_decls() -> Vec<Declaration> {
    (0..N)
        .map(|i| {
            let name = format!("s{i}");
            let b = |l, min| {
                decl(
                    name.clone(),
                    OsFamily::Darwin,
                    Presence::Bundle,
                    l,
                    VersionKind::Plist,
                    min,
                    false,
                )
            };
            match i % 4 {
                0 => b(
                    vec![loc(
                        LocationKind::AppBundle,
                        &format!("App{}.app", i % 40),
                        "",
                    )],
                    Some("2.0"),
                ),
                1 => b(
                    vec![loc(
                        LocationKind::Path,
                        &format!("/Applications/App{}.app", i % 40),
                        "",
                    )],
                    None,
                ),
                2 => b(
                    vec![loc(
                        LocationKind::Path,
                        &format!("/Opt/Suite */Suite{}.app", i % 3),
                        "",
                    )],
                    Some("3"),
                ),
                _ => decl(
                    name,
                    OsFamily::Darwin,
                    Presence::Bundle,
                    vec![],
                    VersionKind::None,
                    None,
                    true,
                ),
            }
        })
        .collect()
}

fn win32_decls() -> Vec<Declaration> {
    (0..N)
        .map(|i| {
            let name = format!("s{i}");
            let w = |l, vk, min| {
                decl(
                    name.clone(),
                    OsFamily::Win32,
                    Presence::Executable,
                    l,
                    vk,
                    min,
                    false,
                )
            };
            match i % 4 {
                0 => w(
                    vec![loc(
                        LocationKind::UninstallRegistry,
                        &format!("App {}", i % 20),
                        "bin/app.exe",
                    )],
                    VersionKind::UninstallRegistry,
                    Some("2"),
                ),
                1 => w(
                    vec![loc(
                        LocationKind::Path,
                        &format!("%ProgramFiles%/App {}/bin/app.exe", i % 20),
                        "",
                    )],
                    VersionKind::None,
                    None,
                ),
                2 => w(
                    vec![loc(LocationKind::Command, &format!("app{}", i % 20), "")],
                    VersionKind::None,
                    None,
                ),
                _ => w(
                    vec![loc(
                        LocationKind::Path,
                        &format!("C:/Vendor/Suite */s{}.exe", i % 3),
                        "",
                    )],
                    VersionKind::None,
                    None,
                ),
            }
        })
        .collect()
}

struct Figures {
    per_sec: f64,
    fs_per_decl: f64,
    candidates_per_decl: f64,
    version_reads_per_decl: f64,
    offerable: usize,
}

fn measure(decls: &[Declaration], p: &dyn Platform) -> Figures {
    // Budget: candidates looked at, and versions read (≤ one per found copy
    // when a version source is declared).
    let mut candidates = 0usize;
    let mut version_reads = 0usize;
    for d in decls {
        if let Some(app) = d.app_for(p.os_family()) {
            let r = locate(app, p);
            candidates += r.candidates.len();
            if app.version_kind != VersionKind::None {
                version_reads += r.present().count();
            }
        }
    }
    let before = p.fs_calls();
    let mut offerable = 0;
    for d in decls {
        if availability(d, p).offerable() {
            offerable += 1;
        }
    }
    let fs_calls = p.fs_calls() - before;
    let mut best = f64::MAX;
    for _ in 0..ROUNDS {
        let t = Instant::now();
        for d in decls {
            let a = availability(d, p);
            std::hint::black_box(a.state == State::Available);
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    Figures {
        per_sec: decls.len() as f64 / best,
        fs_per_decl: fs_calls as f64 / decls.len() as f64,
        candidates_per_decl: candidates as f64 / decls.len() as f64,
        version_reads_per_decl: version_reads as f64 / decls.len() as f64,
        offerable,
    }
}

/// Per location kind (a declaration's first location; `*` paths apart):
/// file-system calls, candidates and version reads per declaration.
fn per_kind(what: &str, decls: &[Declaration], p: &dyn Platform) -> String {
    let mut out = String::new();
    use std::collections::BTreeMap;
    let mut rows: BTreeMap<String, (usize, u64, usize, usize)> = BTreeMap::new();
    for d in decls {
        let app = d.app_for(p.os_family());
        let label = match app.and_then(|a| a.locations.first()) {
            None if d.requires.gpu.is_some() => "gpu only".to_string(),
            None => "no requirements".to_string(),
            Some(l) if l.kind == LocationKind::Path && l.value.contains('*') => {
                "path with *".into()
            }
            Some(l) => {
                let mut k = l.kind.as_str().to_string();
                if app.is_some_and(|a| a.locations.len() > 1) {
                    k.push_str(" + path");
                }
                k
            }
        };
        let (mut cands, mut reads) = (0, 0);
        if let Some(a) = app {
            let r = locate(a, p);
            cands = r.candidates.len();
            if a.version_kind != VersionKind::None {
                reads = r.present().count();
            }
        }
        let before = p.fs_calls();
        std::hint::black_box(availability(d, p));
        let calls = p.fs_calls() - before;
        let e = rows.entry(label).or_default();
        e.0 += 1;
        e.1 += calls;
        e.2 += cands;
        e.3 += reads;
    }
    for (label, (n, calls, cands, reads)) in rows {
        let n = n as f64;
        out.push_str(&format!(
            "| {what} | {label} | {:.2} | {:.2} | {:.2} |\n",
            calls as f64 / n,
            cands as f64 / n,
            reads as f64 / n
        ));
    }
    out
}

fn report(what: &str, f: &Figures) {
    println!(
        "| {what} | {:.0} | {:.2} | {:.2} | {:.2} | {} |",
        f.per_sec, f.fs_per_decl, f.candidates_per_decl, f.version_reads_per_decl, f.offerable
    );
}

fn main() {
    println!(
        "| host | declarations/s (best of {ROUNDS}) | fs calls/decl | candidates/decl | version reads/decl | offerable of {N} |"
    );
    println!("|---|---|---|---|---|---|");

    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let root = dir.join("root");
    linux_files(&root, "", true);
    fs::write(
        dir.join("host.yaml"),
        "os: linux\nhome: /home/u\ngpu: nvidia\nenv:\n  PATH: /usr/local/bin:/usr/bin:/bin\n",
    )
    .unwrap();
    let host = SimulatedHost::load(dir).unwrap();
    report("simulated linux", &measure(&linux_decls(""), &host));
    let mut breakdown = per_kind("simulated linux", &linux_decls(""), &host);

    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let root = dir.join("root");
    for i in (0..40).step_by(2) {
        plist(
            &root,
            &format!("/Applications/App{i}.app"),
            &format!("{}.{}", i % 4, i),
        );
    }
    for v in ["2.9", "3.1", "12.0b"] {
        for s in 0..3 {
            plist(&root, &format!("/Opt/Suite {v}/Suite{s}.app"), v);
        }
    }
    fs::write(
        dir.join("host.yaml"),
        "os: darwin\nhome: /Users/u\narch: arm64\n",
    )
    .unwrap();
    let host = SimulatedHost::load(dir).unwrap();
    report("simulated darwin", &measure(&darwin_decls(), &host));
    breakdown.push_str(&per_kind("simulated darwin", &darwin_decls(), &host));

    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let root = dir.join("root");
    let mut yaml = String::from(
        "os: win32\nhome: 'C:\\Users\\u'\nenv:\n  ProgramFiles: 'C:\\Program Files'\n  PATH: 'C:\\Windows;C:\\Tools'\n  PATHEXT: '.COM;.EXE'\nregistry:\n  uninstall:\n",
    );
    for i in (0..20).step_by(2) {
        write(
            &root,
            &format!("C/Program Files/App {i}/bin/app.exe"),
            0o644,
            b"MZ",
        );
        write(&root, &format!("C/Tools/app{i}.EXE"), 0o644, b"MZ");
        yaml.push_str(&format!("    - {{hive: HKLM, view: 64, key: k{i}, DisplayName: App {i}, DisplayVersion: '{}.0', InstallLocation: 'C:\\Program Files\\App {i}'}}\n", i % 4));
    }
    for v in ["1.0", "2.0", "3.0"] {
        for s in 0..3 {
            write(&root, &format!("C/Vendor/Suite {v}/s{s}.exe"), 0o644, b"MZ");
        }
    }
    fs::write(dir.join("host.yaml"), yaml).unwrap();
    // A host folder is normally laid out well before it is evaluated; the
    // win32 case-folding listings are kept only for folders that settled.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let host = SimulatedHost::load(dir).unwrap();
    report("simulated win32", &measure(&win32_decls(), &host));
    breakdown.push_str(&per_kind("simulated win32", &win32_decls(), &host));

    // This machine: the same linux mix, rooted in a temporary folder (the
    // command/flatpak/snap kinds look at the real PATH and system folders).
    let t = tempfile::tempdir().unwrap();
    let base = t.path().to_str().unwrap().to_string();
    linux_files(Path::new("/"), &base, false);
    let real = RealPlatform::new();
    if real.os_family() == OsFamily::Linux {
        report("this machine (linux)", &measure(&linux_decls(&base), &real));
        breakdown.push_str(&per_kind(
            "this machine (linux)",
            &linux_decls(&base),
            &real,
        ));
    }
    println!();
    println!(
        "| host | declarations whose first location is | fs calls/decl | candidates/decl | version reads/decl |"
    );
    println!("|---|---|---|---|---|");
    print!("{breakdown}");
}
