//! Shared helpers for the resolver / availability tests: simulated host
//! folders built in temporary directories, declarations built from the model,
//! and real PE executables found on this machine.
#![allow(dead_code)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use tempfile::TempDir;
use wasmgate::SimulatedHost;
use wasmgate::declaration::*;

/// A simulated host folder under construction.
pub struct Host {
    pub dir: TempDir,
    pub os: OsFamily,
    yaml: String,
}

impl Host {
    /// A host of `os` with `extra` appended to host.yaml (already indented
    /// YAML lines such as `home: /home/u`).
    pub fn new(os: OsFamily, extra: &str) -> Host {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("root")).unwrap();
        Host {
            dir,
            os,
            yaml: format!("os: {}\n{extra}", os.as_str()),
        }
    }

    /// Where a path of the evaluated OS family lives under `root/`.
    pub fn root_path(&self, p: &str) -> PathBuf {
        let root = self.dir.path().join("root");
        if self.os == OsFamily::Win32 {
            let drive = p[..1].to_ascii_uppercase();
            let mut out = root.join(drive);
            for s in p[3..].split(['\\', '/']).filter(|s| !s.is_empty()) {
                out.push(s);
            }
            out
        } else {
            let mut out = root;
            for s in p.split('/').filter(|s| !s.is_empty()) {
                out.push(s);
            }
            out
        }
    }

    /// A regular file with `mode` and `content`.
    pub fn file_with(&self, p: &str, mode: u32, content: &[u8]) -> &Self {
        let path = self.root_path(p);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, content).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
        self
    }

    /// An executable file (mode 0755).
    pub fn exe(&self, p: &str) -> &Self {
        self.file_with(p, 0o755, b"#!/bin/sh\nexit 0\n")
    }

    /// A plain file without an execute bit (mode 0644).
    pub fn plain(&self, p: &str) -> &Self {
        self.file_with(p, 0o644, b"data")
    }

    /// A folder.
    pub fn dir(&self, p: &str) -> &Self {
        fs::create_dir_all(self.root_path(p)).unwrap();
        self
    }

    /// `<bundle>/Contents/Info.plist` written by the plist crate.
    pub fn bundle(&self, bundle: &str, entries: &[(&str, plist::Value)], binary: bool) -> &Self {
        let mut d = plist::Dictionary::new();
        for (k, v) in entries {
            d.insert(k.to_string(), v.clone());
        }
        let path = self.root_path(bundle).join("Contents").join("Info.plist");
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        let v = plist::Value::Dictionary(d);
        if binary {
            v.to_file_binary(&path).unwrap();
        } else {
            v.to_file_xml(&path).unwrap();
        }
        self
    }

    /// A bundle whose version string is `version` (XML plist).
    pub fn bundle_version(&self, bundle: &str, version: &str) -> &Self {
        self.bundle(
            bundle,
            &[(
                "CFBundleShortVersionString",
                plist::Value::String(version.into()),
            )],
            false,
        )
    }

    /// A symbolic link at `link` (a path of the evaluated OS) pointing at
    /// `target` verbatim.
    pub fn symlink(&self, link: &str, target: &str) -> &Self {
        let path = self.root_path(link);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, &path).unwrap();
        self
    }

    /// Appends host.yaml lines.
    pub fn yaml(&mut self, lines: &str) -> &mut Self {
        self.yaml.push_str(lines);
        self
    }

    /// Writes host.yaml and loads the host.
    pub fn load(&self) -> SimulatedHost {
        fs::write(self.dir.path().join("host.yaml"), &self.yaml).unwrap();
        SimulatedHost::load(self.dir.path()).unwrap()
    }

    /// Writes host.yaml and returns the folder (for the CLI).
    pub fn write(&self) -> &Path {
        fs::write(self.dir.path().join("host.yaml"), &self.yaml).unwrap();
        self.dir.path()
    }
}

pub fn path(v: &str) -> Location {
    Location {
        kind: LocationKind::Path,
        value: v.into(),
        file: String::new(),
    }
}

pub fn kind(kind: LocationKind, v: &str) -> Location {
    Location {
        kind,
        value: v.into(),
        file: String::new(),
    }
}

pub fn uninstall(prefix: &str, file: &str) -> Location {
    Location {
        kind: LocationKind::UninstallRegistry,
        value: prefix.into(),
        file: file.into(),
    }
}

pub fn app(os: OsFamily, presence: Presence, locations: Vec<Location>, vk: VersionKind) -> AppDef {
    AppDef {
        app_id: "t".into(),
        os_family: os,
        presence,
        locations,
        version_kind: vk,
        version_arg: String::new(),
        liveness: Liveness::None,
    }
}

pub fn exe_app(os: OsFamily, locations: Vec<Location>) -> AppDef {
    app(os, Presence::Executable, locations, VersionKind::None)
}

pub fn decl(name: &str, apps: Vec<AppDef>, requires: Requires) -> Declaration {
    Declaration {
        name: name.into(),
        app: if apps.is_empty() { None } else { Some(apps) },
        requires,
    }
}

pub fn needs_app() -> Requires {
    Requires {
        app: true,
        min_version: None,
        gpu: None,
    }
}

pub fn needs_min(v: &str) -> Requires {
    Requires {
        app: true,
        min_version: Some(v.into()),
        gpu: None,
    }
}

pub fn needs_gpu() -> Requires {
    Requires {
        app: false,
        min_version: None,
        gpu: Some(GpuVendor::Nvidia),
    }
}

/// A real PE executable that carries a `VS_VERSION_INFO` resource: pip's
/// vendored distlib launcher `t64.exe` (built by MSVC, fixed file version
/// 1.1.0.14) from a local Python installation, or `$WASMGATE_PE_WITH_VERSION`.
/// Panics with instructions when none is found.
pub fn pe_with_version() -> Vec<u8> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Ok(p) = std::env::var("WASMGATE_PE_WITH_VERSION") {
        candidates.push(p.into());
    }
    for dir in pip_dirs() {
        candidates.push(dir.join("_vendor/distlib/t64.exe"));
        candidates.push(dir.join("_vendor/distlib/w64.exe"));
    }
    for c in candidates {
        if let Ok(b) = fs::read(&c)
            && contains(&b, &utf16("VS_VERSION_INFO"))
        {
            return b;
        }
    }
    panic!(
        "no real PE with a version resource found: run `cargo xtask interop` (its venv holds pip >= 23) \
         or set WASMGATE_PE_WITH_VERSION to a Windows .exe with a version resource"
    );
}

/// pip's 32-bit launcher `t32.exe` (a PE32 with a version resource), when
/// the local pip has one.
pub fn pe32_with_version() -> Option<Vec<u8>> {
    pip_dirs()
        .into_iter()
        .filter_map(|d| fs::read(d.join("_vendor/distlib/t32.exe")).ok())
        .find(|b| contains(b, &utf16("VS_VERSION_INFO")))
}

/// A real PE without a version resource (setuptools' `cli-64.exe`), or
/// `$WASMGATE_PE_WITHOUT_VERSION`.
pub fn pe_without_version() -> Vec<u8> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Ok(p) = std::env::var("WASMGATE_PE_WITHOUT_VERSION") {
        candidates.push(p.into());
    }
    for dir in pip_dirs() {
        let site = dir.parent().unwrap().to_path_buf();
        candidates.push(site.join("setuptools/cli-64.exe"));
        candidates.push(site.join("setuptools/gui-64.exe"));
    }
    for c in candidates {
        if let Ok(b) = fs::read(&c)
            && b.starts_with(b"MZ")
            && !contains(&b, &utf16("VS_VERSION_INFO"))
        {
            return b;
        }
    }
    panic!(
        "no real PE without a version resource found (setuptools cli-64.exe); \
         set WASMGATE_PE_WITHOUT_VERSION"
    );
}

fn pip_dirs() -> Vec<PathBuf> {
    let mut out = Vec::new();
    // The interop venv's pip first (`cargo xtask interop` installs it, with
    // the pinned setuptools beside it); the system's Python is never run.
    let venv_python = std::env::var_os("WASMGATE_INTEROP_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/interop"))
        .join("venv-sdk/bin/python");
    if venv_python.is_file()
        && let Ok(o) = std::process::Command::new(&venv_python)
            .args(["-c", "import pip,os;print(os.path.dirname(pip.__file__))"])
            .output()
        && o.status.success()
    {
        out.push(PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    }
    let home = std::env::var("HOME").unwrap_or_default();
    for base in [
        format!("{home}/.pyenv/versions"),
        "/usr/lib".into(),
        "/usr/local/lib".into(),
    ] {
        if let Ok(rd) = fs::read_dir(&base) {
            for e in rd.flatten() {
                // pyenv: versions/X/lib/pythonY/site-packages/pip
                let lib = e.path().join("lib");
                for root in [lib, e.path()] {
                    if let Ok(rd2) = fs::read_dir(&root) {
                        for p in rd2.flatten() {
                            for sub in ["site-packages/pip", "dist-packages/pip"] {
                                out.push(p.path().join(sub));
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

pub fn utf16(s: &str) -> Vec<u8> {
    s.encode_utf16().flat_map(|u| u.to_le_bytes()).collect()
}

pub fn contains(hay: &[u8], needle: &[u8]) -> bool {
    find(hay, needle, 0).is_some()
}

pub fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|i| i + from)
}

/// Offset of `VS_FIXEDFILEINFO` in a PE with a version resource (found the
/// way the conformance runner does: after the UTF-16 key, 32-bit aligned).
pub fn fixed_info_offset(pe: &[u8]) -> usize {
    let key = utf16("VS_VERSION_INFO");
    let pos = find(pe, &key, 0).expect("VS_VERSION_INFO");
    let start = pos - 6;
    let mut off = pos + key.len() + 2;
    off += (4 - (off - start) % 4) % 4;
    assert_eq!(
        u32::from_le_bytes(pe[off..off + 4].try_into().unwrap()),
        0xFEEF04BD
    );
    off
}

/// Sets the fixed file version of a PE with a version resource.
pub fn set_fixed_version(pe: &mut [u8], v: [u16; 4]) {
    let off = fixed_info_offset(pe);
    let ms = (u32::from(v[0]) << 16) | u32::from(v[1]);
    let ls = (u32::from(v[2]) << 16) | u32::from(v[3]);
    pe[off + 8..off + 12].copy_from_slice(&ms.to_le_bytes());
    pe[off + 12..off + 16].copy_from_slice(&ls.to_le_bytes());
}

/// Replaces the text of the string-table value `key` in place (the new text
/// must not be longer than the old one; it is NUL padded).
pub fn set_string_value(pe: &mut [u8], key: &str, text: &str) {
    let mut k = utf16(key);
    k.extend_from_slice(&[0, 0]);
    let after = fixed_info_offset(pe);
    let pos = find(pe, &k, after).unwrap_or_else(|| panic!("{key} in string table"));
    let start = pos - 6;
    let wvlen = u16::from_le_bytes([pe[start + 2], pe[start + 3]]) as usize;
    let mut off = pos + k.len();
    off += (4 - (off - start) % 4) % 4;
    assert!(text.len() < wvlen, "{text} does not fit {wvlen}");
    let mut new = utf16(text);
    new.resize(wvlen * 2, 0);
    pe[off..off + wvlen * 2].copy_from_slice(&new);
}

/// Renames a string-table key in place (same length), hiding it.
pub fn rename_string_key(pe: &mut [u8], key: &str, to: &str) {
    assert_eq!(key.len(), to.len());
    let mut k = utf16(key);
    k.extend_from_slice(&[0, 0]);
    let after = fixed_info_offset(pe);
    let pos = find(pe, &k, after).unwrap();
    pe[pos..pos + 2 * key.len()].copy_from_slice(&utf16(to));
}
