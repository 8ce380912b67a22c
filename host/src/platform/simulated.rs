//! The simulated host: a folder with `host.yaml` (the machine's facts) and
//! `root/` (its file system), describing a machine of any OS family
//! (`spec/simulated-host.md`).
//!
//! `root/` is opened with cap-std, so every file-system look stays inside it:
//! a symbolic link that leaves `root/` (an absolute target, or `..` past the
//! top) reads as "does not exist". When `root/` holds no symbolic link at load
//! time, metadata and listings use plain path lookups (nothing can lead out),
//! which is several times faster; links added to `root/` after loading are
//! not looked for — load the host again after changing its links.

use super::{
    DisplayAdapter, FileKind, GpuCache, GpuClass, Hive, Platform, ReadError, ReadSeek,
    UninstallEntry,
};
use crate::declaration::OsFamily;
use cap_std::fs::Dir;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// A `host.yaml` or `root/` that cannot be used; the text names the file
/// and the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimulatedHostError(pub String);

impl fmt::Display for SimulatedHostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SimulatedHostError {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HostYaml {
    os: String,
    #[serde(default)]
    home: Option<String>,
    #[serde(default)]
    env: Option<BTreeMap<String, String>>,
    #[serde(default)]
    gpu: Option<String>,
    #[serde(default)]
    arch: Option<String>,
    #[serde(default)]
    processes: Option<Vec<u32>>,
    #[serde(default)]
    registry: Option<RegistryYaml>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RegistryYaml {
    #[serde(default)]
    uninstall: Option<Vec<UninstallYaml>>,
    #[serde(default)]
    display_adapters: Option<Vec<AdapterYaml>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UninstallYaml {
    hive: String,
    #[serde(default)]
    view: Option<u8>,
    key: String,
    #[serde(rename = "DisplayName", default)]
    display_name: Option<String>,
    #[serde(rename = "DisplayVersion", default)]
    display_version: Option<String>,
    #[serde(rename = "InstallLocation", default)]
    install_location: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AdapterYaml {
    key: String,
    #[serde(rename = "MatchingDeviceId", default)]
    matching_device_id: Option<String>,
}

/// A folder's entry names and its modification time when listed.
type Listing = (SystemTime, Arc<Vec<String>>);

/// A simulated machine loaded from a folder (`spec/simulated-host.md`).
pub struct SimulatedHost {
    os: OsFamily,
    home: Option<String>,
    env: BTreeMap<String, String>,
    gpu: Option<GpuClass>,
    arch: Option<String>,
    processes: Vec<u32>,
    uninstall: Vec<UninstallEntry>,
    display_adapters: Option<Vec<DisplayAdapter>>,
    root: Option<Dir>,
    /// `root/` as an ambient path, for the quick "does not exist" answer.
    root_path: PathBuf,
    /// `root/` held no symbolic link when loaded: metadata and listings then
    /// use plain path lookups (nothing can lead out of `root/`); otherwise
    /// every lookup goes through cap-std.
    no_links: bool,
    /// win32 case folding: folder listings by folder, with the folder's
    /// modification time when listed.
    listings: Mutex<HashMap<PathBuf, Listing>>,
    calls: AtomicU64,
    gpu_cache: GpuCache,
}

impl fmt::Debug for SimulatedHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimulatedHost")
            .field("os", &self.os)
            .field("home", &self.home)
            .field("gpu", &self.gpu)
            .finish_non_exhaustive()
    }
}

impl SimulatedHost {
    /// Loads `dir/host.yaml` and opens `dir/root/` (an absent `root/` is an
    /// empty file system).
    ///
    /// Errors: `host.yaml` missing or not YAML, an unknown key at any level,
    /// `os` not `win32`/`darwin`/`linux`, a `gpu` that is not a GPU class,
    /// `arch` off darwin, `registry` off win32, a bad `hive`/`view`.
    pub fn load(dir: &Path) -> Result<SimulatedHost, SimulatedHostError> {
        let file = dir.join("host.yaml");
        let where_ = file.display().to_string();
        let text = std::fs::read_to_string(&file)
            .map_err(|e| SimulatedHostError(format!("{where_}: cannot read: {e}")))?;
        let y: HostYaml = yaml_serde::from_str(&text)
            .map_err(|e| SimulatedHostError(format!("{where_}: {e}")))?;
        let err =
            |field: &str, what: String| SimulatedHostError(format!("{where_}: {field} {what}"));
        let os = OsFamily::parse(&y.os).ok_or_else(|| {
            err(
                "os",
                format!("must be one of win32, darwin, linux (got {:?})", y.os),
            )
        })?;
        let gpu = match &y.gpu {
            None => None,
            Some(g) => Some(GpuClass::parse(g).ok_or_else(|| {
                err(
                    "gpu",
                    format!(
                        "must be one of nvidia, amd, intel, apple_silicon, none, unknown (got {g:?})"
                    ),
                )
            })?),
        };
        if y.arch.is_some() && os != OsFamily::Darwin {
            return Err(err("arch", "is only valid with os: darwin".into()));
        }
        if let Some(a) = &y.arch
            && !matches!(a.as_str(), "arm64" | "x86_64")
        {
            return Err(err("arch", format!("must be arm64 or x86_64 (got {a:?})")));
        }
        let mut uninstall = Vec::new();
        let mut display_adapters = None;
        if let Some(reg) = y.registry {
            if os != OsFamily::Win32 {
                return Err(err("registry", "is only valid with os: win32".into()));
            }
            for (i, e) in reg.uninstall.unwrap_or_default().into_iter().enumerate() {
                let field = format!("registry.uninstall[{i}]");
                let hive = match e.hive.as_str() {
                    "HKLM" => Hive::Hklm,
                    "HKCU" => Hive::Hkcu,
                    other => {
                        return Err(err(
                            &format!("{field}.hive"),
                            format!("must be HKLM or HKCU (got {other:?})"),
                        ));
                    }
                };
                let view = match (hive, e.view) {
                    (_, None) | (_, Some(64)) => 64,
                    (Hive::Hklm, Some(32)) => 32,
                    (Hive::Hkcu, Some(32)) => {
                        return Err(err(
                            &format!("{field}.view"),
                            "32 is only valid for HKLM".into(),
                        ));
                    }
                    (_, Some(v)) => {
                        return Err(err(
                            &format!("{field}.view"),
                            format!("must be 64 or 32 (got {v})"),
                        ));
                    }
                };
                uninstall.push(UninstallEntry {
                    hive,
                    view,
                    key: e.key,
                    display_name: e.display_name,
                    display_version: e.display_version,
                    install_location: e.install_location,
                });
            }
            // Enumeration order of the platform contract: HKLM 64, HKLM 32,
            // HKCU; the file's order within each (a stable sort).
            uninstall.sort_by_key(|e| match (e.hive, e.view) {
                (Hive::Hklm, 64) => 0,
                (Hive::Hklm, _) => 1,
                (Hive::Hkcu, _) => 2,
            });
            display_adapters = reg.display_adapters.map(|list| {
                list.into_iter()
                    .map(|a| DisplayAdapter {
                        key: a.key,
                        matching_device_id: a.matching_device_id,
                    })
                    .collect()
            });
        }
        let root_path = dir.join("root");
        let root = if root_path.exists() {
            Some(
                Dir::open_ambient_dir(&root_path, cap_std::ambient_authority()).map_err(|e| {
                    SimulatedHostError(format!("{}: cannot open: {e}", root_path.display()))
                })?,
            )
        } else {
            None
        };
        let env = y.env.unwrap_or_default();
        let no_links = root.is_some() && !has_symlink(&root_path);
        Ok(SimulatedHost {
            os,
            home: y.home,
            env,
            gpu,
            arch: y.arch,
            processes: y.processes.unwrap_or_default(),
            uninstall,
            display_adapters,
            root,
            no_links,
            listings: Mutex::new(HashMap::new()),
            root_path,
            calls: AtomicU64::new(0),
            gpu_cache: GpuCache::new(),
        })
    }

    /// Maps a path of the evaluated OS family to a path relative to `root/`
    /// (`/opt/x` → `opt/x`; win32 `C:\x` → `C/x`, `/` and `\` both
    /// separators). `None` for relative paths and paths with a `..` segment.
    fn map(&self, path: &str) -> Option<PathBuf> {
        let (mut rel, rest) = match self.os {
            OsFamily::Win32 => {
                let b = path.as_bytes();
                if b.len() < 3
                    || !b[0].is_ascii_alphabetic()
                    || b[1] != b':'
                    || !matches!(b[2], b'\\' | b'/')
                {
                    return None;
                }
                (PathBuf::from(path[..1].to_ascii_uppercase()), &path[3..])
            }
            _ => (PathBuf::from("."), path.strip_prefix('/')?),
        };
        let seps: &[char] = if self.os == OsFamily::Win32 {
            &['\\', '/']
        } else {
            &['/']
        };
        for s in rest.split(seps) {
            match s {
                "" | "." => {}
                ".." => return None,
                s => rel.push(s),
            }
        }
        Some(rel)
    }

    /// Resolves `path` in `root/`. On win32 a path that does not exist as
    /// written is looked up again without case, segment by segment, as the
    /// Windows file system would (each listing is a counted call).
    fn resolve(&self, path: &str) -> Option<(&Dir, PathBuf)> {
        let root = self.root.as_ref()?;
        let rel = self.map(path)?;
        if self.os != OsFamily::Win32 || fs::symlink_metadata(self.root_path.join(&rel)).is_ok() {
            return Some((root, rel));
        }
        let mut found = PathBuf::new();
        for comp in rel.iter() {
            let comp = comp.to_string_lossy();
            let exact = found.join(comp.as_ref());
            if fs::symlink_metadata(self.root_path.join(&exact)).is_ok() {
                found = exact;
                continue;
            }
            // The simulator's own case folding: not a call through the
            // platform, so not counted.
            let dir = if found.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                found.clone()
            };
            let names = self.folded_listing(root, &dir)?;
            let name = names
                .iter()
                .find(|n| n.eq_ignore_ascii_case(&comp))?
                .clone();
            found = found.join(name);
        }
        Some((root, found))
    }

    /// The entry names of a folder of `root/` for case folding, kept while
    /// the folder's modification time is unchanged (adding, removing or
    /// renaming an entry changes it) once that time is a few seconds old.
    fn folded_listing(&self, root: &Dir, dir: &Path) -> Option<Arc<Vec<String>>> {
        let full = self.root_path.join(dir);
        let mtime = fs::metadata(&full).and_then(|m| m.modified()).ok()?;
        let mut cache = self.listings.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((t, names)) = cache.get(dir)
            && *t == mtime
        {
            return Some(names.clone());
        }
        let names: Vec<String> = if self.no_links {
            fs::read_dir(&full)
                .ok()?
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        } else {
            root.read_dir(dir)
                .ok()?
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        };
        let names = Arc::new(names);
        // File times are coarse (a clock tick): a folder changed within the
        // last seconds could change again without a new time, so its listing
        // is not kept.
        let settled = SystemTime::now()
            .duration_since(mtime)
            .is_ok_and(|age| age > std::time::Duration::from_secs(2));
        if settled {
            cache.insert(dir.to_path_buf(), (mtime, names.clone()));
        }
        Some(names)
    }

    fn count(&self) {
        self.calls.fetch_add(1, Ordering::Relaxed);
    }

    /// Opens a regular file in `root/` (plainly when `root/` has no links,
    /// else through cap-std).
    fn open_regular(&self, path: &str) -> io::Result<Box<dyn ReadSeek>> {
        let (root, rel) = self.resolve(path).ok_or_else(not_found)?;
        let (file, is_file): (Box<dyn ReadSeek>, bool) = if self.no_links {
            let f = fs::File::open(self.root_path.join(&rel))?;
            let is_file = f.metadata()?.is_file();
            (Box::new(f), is_file)
        } else {
            let f = root.open(rel)?;
            let is_file = f.metadata()?.is_file();
            (Box::new(f), is_file)
        };
        if !is_file {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a regular file",
            ));
        }
        Ok(file)
    }
}

fn not_found() -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        "no such file in the simulated host",
    )
}

impl Platform for SimulatedHost {
    fn os_family(&self) -> OsFamily {
        self.os
    }

    fn home(&self) -> Option<String> {
        self.home.clone().or_else(|| match self.os {
            OsFamily::Win32 => self.env_var("USERPROFILE"),
            _ => self.env_var("HOME"),
        })
    }

    fn env_var(&self, name: &str) -> Option<String> {
        if self.os == OsFamily::Win32 {
            self.env
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone())
        } else {
            self.env.get(name).cloned()
        }
    }

    fn metadata(&self, path: &str) -> Option<FileKind> {
        self.count();
        let (root, rel) = self.resolve(path)?;
        // A path that does not exist even when links are followed anywhere
        // is absent. Without links in root/ the plain answer is the answer;
        // otherwise an existing path is looked at again through cap-std,
        // which refuses links leaving root/.
        let quick = fs::metadata(self.root_path.join(&rel)).ok()?;
        if self.no_links {
            return Some(kind_of(quick.is_file(), quick.is_dir(), self.os, || {
                std_exec_bit(&quick)
            }));
        }
        let m = root.metadata(rel).ok()?;
        Some(kind_of(m.is_file(), m.is_dir(), self.os, || exec_bit(&m)))
    }

    fn read_file(&self, path: &str, max_bytes: u64) -> Result<Vec<u8>, ReadError> {
        self.count();
        let f = self.open_regular(path).map_err(ReadError::Io)?;
        read_bounded(f, max_bytes)
    }

    fn open_file(&self, path: &str) -> io::Result<Box<dyn ReadSeek>> {
        self.count();
        self.open_regular(path)
    }

    fn list_dir(&self, path: &str) -> io::Result<Vec<String>> {
        self.count();
        let (root, rel) = self.resolve(path).ok_or_else(not_found)?;
        let mut names = Vec::new();
        if self.no_links {
            for entry in fs::read_dir(self.root_path.join(&rel))? {
                names.push(entry?.file_name().to_string_lossy().into_owned());
            }
            return Ok(names);
        }
        for entry in root.read_dir(rel)? {
            names.push(entry?.file_name().to_string_lossy().into_owned());
        }
        Ok(names)
    }

    fn uninstall_entries(&self) -> Vec<UninstallEntry> {
        self.uninstall.clone()
    }

    fn display_adapters(&self) -> Option<Vec<DisplayAdapter>> {
        self.display_adapters.clone()
    }

    fn native_arch(&self) -> Option<String> {
        self.arch.clone()
    }

    fn stated_gpu_class(&self) -> Option<GpuClass> {
        self.gpu
    }

    fn process_alive(&self, pid: u32) -> bool {
        self.processes.contains(&pid)
    }

    fn fs_calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    fn gpu_cache(&self) -> &GpuCache {
        &self.gpu_cache
    }

    fn open_grant_dir(&self, path: &str) -> Option<cap_std::fs::Dir> {
        self.count();
        let (root, rel) = self.resolve(path)?;
        if rel.as_os_str().is_empty() || rel == Path::new(".") {
            return root.try_clone().ok();
        }
        root.open_dir(rel).ok()
    }
}

/// Whether a folder tree holds a symbolic link (not followed).
fn has_symlink(dir: &Path) -> bool {
    let Ok(rd) = fs::read_dir(dir) else {
        return false;
    };
    for entry in rd.flatten() {
        match entry.file_type() {
            Ok(t) if t.is_symlink() => return true,
            Ok(t) if t.is_dir() && has_symlink(&entry.path()) => return true,
            _ => {}
        }
    }
    false
}

fn kind_of(is_file: bool, is_dir: bool, os: OsFamily, exec: impl FnOnce() -> bool) -> FileKind {
    if is_file {
        FileKind::File {
            executable: os != OsFamily::Win32 && exec(),
        }
    } else if is_dir {
        FileKind::Dir
    } else {
        FileKind::Other
    }
}

#[cfg(unix)]
fn std_exec_bit(m: &fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    m.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn std_exec_bit(_m: &fs::Metadata) -> bool {
    true
}

#[cfg(unix)]
fn exec_bit(m: &cap_std::fs::Metadata) -> bool {
    use cap_std::fs::PermissionsExt;
    m.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn exec_bit(_m: &cap_std::fs::Metadata) -> bool {
    // A simulated POSIX host laid out on a Windows file system has no
    // execute bits to read; treat regular files as executable.
    true
}

/// Reads at most `max_bytes` bytes; a longer file is refused.
pub(super) fn read_bounded<R: Read>(r: R, max_bytes: u64) -> Result<Vec<u8>, ReadError> {
    let mut buf = Vec::new();
    r.take(max_bytes.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(ReadError::Io)?;
    if buf.len() as u64 > max_bytes {
        return Err(ReadError::TooLarge { limit: max_bytes });
    }
    Ok(buf)
}
