//! The simulated host: a folder with `host.yaml` (the machine's facts) and
//! `root/` (its file system), describing a machine of any OS family
//! (`docs/simulated-host.md`).
//!
//! `root/` is opened with cap-std, so every file-system look stays inside it:
//! a symbolic link that leaves `root/` (an absolute target, or `..` past the
//! top) reads as "does not exist". When `root/` holds no symbolic link at load
//! time, metadata and listings use plain path lookups (nothing can lead out),
//! which is several times faster; links added to `root/` after loading are
//! not looked for — load the host again after changing its links.

use super::{
    DisplayAdapter, FileKind, GpuCache, GpuClass, Hive, Platform, ReadError, ReadSeek,
    UninstallEntry, read_bounded,
};
use crate::declaration::OsFamily;
use cap_std::fs::Dir;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// A `host.yaml` or `root/` that cannot be used; the text names the file
/// and the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SimulatedHostError(pub String);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HostYaml {
    os: String,
    #[serde(default)]
    home: Option<String>,
    #[serde(default)]
    env: Option<BTreeMap<String, String>>,
    /// The user database for `~user` (linux/darwin): name → home folder.
    #[serde(default)]
    users: Option<BTreeMap<String, String>>,
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

/// What tells a folder's state apart for the case-folding caches: its
/// modification time and, on POSIX, its device, inode and change time (a
/// folder replaced by another one with a copied modification time differs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    mtime: SystemTime,
    #[cfg(unix)]
    id: (u64, u64, i64, i64),
}

impl Stamp {
    fn of(m: &fs::Metadata) -> Option<Stamp> {
        #[cfg(unix)]
        use std::os::unix::fs::MetadataExt;
        Some(Stamp {
            mtime: m.modified().ok()?,
            #[cfg(unix)]
            id: (m.dev(), m.ino(), m.ctime(), m.ctime_nsec()),
        })
    }

    /// File times are coarse (a clock tick): a folder changed within the
    /// last seconds could change again without a new time, so only a stamp
    /// a few seconds old is kept.
    fn settled(&self) -> bool {
        SystemTime::now()
            .duration_since(self.mtime)
            .is_ok_and(|age| age > std::time::Duration::from_secs(2))
    }
}

/// Most absent paths kept for win32 case folding.
const ABSENT_ENTRIES: usize = 4096;

/// A folder's entry names for case folding (win32): the names as listed and,
/// by lower-case name, the first name in listing order with that spelling.
struct Folded {
    exact: std::collections::HashSet<String>,
    by_lower: HashMap<String, String>,
}

impl Folded {
    fn new(names: impl Iterator<Item = String>) -> Folded {
        let mut f = Folded {
            exact: std::collections::HashSet::new(),
            by_lower: HashMap::new(),
        };
        for n in names {
            f.by_lower
                .entry(n.to_ascii_lowercase())
                .or_insert_with(|| n.clone());
            f.exact.insert(n);
        }
        f
    }

    /// The entry `name` denotes: itself when it exists as written, else the
    /// first entry equal to it without (ASCII) case.
    fn find(&self, name: &str) -> Option<&str> {
        if let Some(n) = self.exact.get(name) {
            return Some(n);
        }
        self.by_lower
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }
}

/// A simulated machine loaded from a folder (`docs/simulated-host.md`).
pub struct SimulatedHost {
    os: OsFamily,
    home: Option<String>,
    env: BTreeMap<String, String>,
    /// win32: `env` by lower-case name (the first name in sorted order wins
    /// among names differing only by case), built once at load so a lookup
    /// does not scan every variable.
    env_folded: HashMap<String, String>,
    users: BTreeMap<String, String>,
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
    listings: Mutex<HashMap<PathBuf, (Stamp, Arc<Folded>)>>,
    /// win32 case folding without links: paths found absent, with the
    /// deepest folder that exists on the way and its stamp then. While that
    /// folder's stamp is unchanged no entry of it was added, removed or
    /// renamed, so the path is still absent: one look at the folder answers.
    absent: Mutex<HashMap<PathBuf, (PathBuf, Stamp)>>,
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
        // Bounded like a manifest, and only a regular file of `dir` is read
        // (a FIFO never blocks the load; docs/security.md, "MCP client bounds").
        let bytes = crate::manifest::files::read_plugin_file(
            dir,
            Path::new("host.yaml"),
            crate::manifest::load::MAX_MANIFEST_BYTES,
        )
        .map_err(|e| SimulatedHostError(format!("{where_}: {e}")))?;
        let text = String::from_utf8(bytes)
            .map_err(|_| SimulatedHostError(format!("{where_}: is not UTF-8 text")))?;
        crate::manifest::depth::check_yaml_depth(&text, crate::manifest::depth::MAX_DEPTH)
            .map_err(|e| SimulatedHostError(format!("{where_}: {e}")))?;
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
        if y.users.is_some() && os == OsFamily::Win32 {
            return Err(err(
                "users",
                "is only valid with os: darwin or linux".into(),
            ));
        }
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
        // `root/` itself may not be a link: through it the "simulated" file
        // system would be any folder of this machine (`root -> /`).
        if fs::symlink_metadata(&root_path).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(SimulatedHostError(format!(
                "{}: must be a folder, not a symbolic link",
                root_path.display()
            )));
        }
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
        let mut env_folded = HashMap::new();
        if os == OsFamily::Win32 {
            for (k, v) in &env {
                env_folded
                    .entry(k.to_ascii_lowercase())
                    .or_insert_with(|| v.clone());
            }
        }
        let no_links = root.is_some() && !has_symlink(&root_path);
        Ok(SimulatedHost {
            os,
            home: y.home,
            env,
            env_folded,
            users: y.users.unwrap_or_default(),
            gpu,
            arch: y.arch,
            processes: y.processes.unwrap_or_default(),
            uninstall,
            display_adapters,
            root,
            no_links,
            listings: Mutex::new(HashMap::new()),
            absent: Mutex::new(HashMap::new()),
            root_path,
            calls: AtomicU64::new(0),
            gpu_cache: GpuCache::new(),
        })
    }

    /// A simulated host made in code: see [`SimulatedHostBuilder`].
    pub fn builder(os: OsFamily) -> SimulatedHostBuilder {
        SimulatedHostBuilder {
            os,
            home: None,
            env: BTreeMap::new(),
            gpu: None,
            arch: None,
            processes: Vec::new(),
            uninstall: Vec::new(),
            files: Vec::new(),
            folders: Vec::new(),
        }
    }

    /// Maps a path of the evaluated OS family to a path relative to `root/`
    /// ([`map_path`]).
    fn map(&self, path: &str) -> Option<PathBuf> {
        map_path(self.os, path)
    }

    /// Resolves `path` in `root/`. On win32 a path that does not exist as
    /// written is looked up again without case, as the Windows file system
    /// would. When `root/` has no links, the metadata of a path found as
    /// written comes back too (links followed), so the caller does not ask
    /// again.
    fn resolve(&self, path: &str) -> Option<(&Dir, PathBuf, Option<fs::Metadata>)> {
        let root = self.root.as_ref()?;
        let rel = self.map(path)?;
        if self.os != OsFamily::Win32 {
            return Some((root, rel, None));
        }
        if self.no_links && self.known_absent(&rel) {
            return None;
        }
        let full = self.root_path.join(&rel);
        if self.no_links {
            // Without links, following them changes nothing.
            if let Ok(m) = fs::metadata(&full) {
                return Some((root, rel, Some(m)));
            }
        } else if fs::symlink_metadata(&full).is_ok() {
            return Some((root, rel, None));
        }
        match self.fold(root, &rel) {
            Ok(found) => Some((root, found, None)),
            Err(Some((folder, stamp))) if self.no_links && stamp.settled() => {
                let mut absent = self.absent.lock().unwrap_or_else(|e| e.into_inner());
                if absent.len() >= ABSENT_ENTRIES {
                    absent.clear();
                }
                absent.insert(rel, (folder, stamp));
                None
            }
            Err(_) => None,
        }
    }

    /// Whether `rel` was found absent before and the deepest folder that
    /// existed on its way is unchanged since (one metadata look).
    fn known_absent(&self, rel: &Path) -> bool {
        let entry = {
            let absent = self.absent.lock().unwrap_or_else(|e| e.into_inner());
            match absent.get(rel) {
                Some(e) => e.clone(),
                None => return false,
            }
        };
        let (folder, stamp) = entry;
        let now = fs::metadata(self.root_path.join(&folder))
            .ok()
            .and_then(|m| Stamp::of(&m));
        if now == Some(stamp) {
            return true;
        }
        self.absent
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(rel);
        false
    }

    /// Case folding of a `root/`-relative path that does not exist as
    /// written: the parent folder as written when it exists, else folded in
    /// turn; then the entry of that folder equal to the last segment without
    /// case. The simulator's own work, not a call through the platform, so
    /// not counted. When nothing matches, the error names the deepest folder
    /// that exists on the way (and its stamp) if there is one.
    fn fold(&self, root: &Dir, rel: &Path) -> Result<PathBuf, Option<(PathBuf, Stamp)>> {
        let name = rel.file_name().and_then(|n| n.to_str()).ok_or(None)?;
        let parent = match rel.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let (dir, (listing, stamp)) = match self.folded_listing(root, parent) {
            Some(l) => (parent.to_path_buf(), l),
            None if parent == Path::new(".") => return Err(None),
            None => {
                let dir = self.fold(root, parent)?;
                let l = self.folded_listing(root, &dir).ok_or(None)?;
                (dir, l)
            }
        };
        match listing.find(name) {
            Some(actual) => Ok(dir.join(actual)),
            None => Err(Some((dir, stamp))),
        }
    }

    /// The entry names of a folder of `root/` for case folding, kept while
    /// the folder's modification time is unchanged (adding, removing or
    /// renaming an entry changes it) once that time is a few seconds old.
    /// `None` when the folder does not exist as written.
    fn folded_listing(&self, root: &Dir, dir: &Path) -> Option<(Arc<Folded>, Stamp)> {
        let full = self.root_path.join(dir);
        let meta = fs::metadata(&full).ok()?;
        if !meta.is_dir() {
            return None;
        }
        let stamp = Stamp::of(&meta)?;
        {
            let cache = self.listings.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((t, names)) = cache.get(dir)
                && *t == stamp
            {
                return Some((names.clone(), stamp));
            }
        }
        let names = if self.no_links {
            Folded::new(
                fs::read_dir(&full)
                    .ok()?
                    .filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned()),
            )
        } else {
            Folded::new(
                root.read_dir(dir)
                    .ok()?
                    .filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned()),
            )
        };
        let names = Arc::new(names);
        if stamp.settled() {
            let mut cache = self.listings.lock().unwrap_or_else(|e| e.into_inner());
            cache.insert(dir.to_path_buf(), (stamp, names.clone()));
        }
        Some((names, stamp))
    }

    fn count(&self) {
        self.calls.fetch_add(1, Ordering::Relaxed);
    }

    /// [`Platform::metadata`] without the trailing-separator rule (not counted).
    fn metadata_inner(&self, path: &str) -> Option<FileKind> {
        let (root, rel, known) = self.resolve(path)?;
        // A path that does not exist even when links are followed anywhere
        // is absent. Without links in root/ the plain answer is the answer;
        // otherwise an existing path is looked at again through cap-std,
        // which refuses links leaving root/.
        let quick = match known {
            Some(m) => m,
            None => fs::metadata(self.root_path.join(&rel)).ok()?,
        };
        if self.no_links {
            return Some(kind_of(quick.is_file(), quick.is_dir(), self.os, || {
                std_exec_bit(&quick)
            }));
        }
        let m = root.metadata(rel).ok()?;
        Some(kind_of(m.is_file(), m.is_dir(), self.os, || exec_bit(&m)))
    }

    /// Whether `path` ends in a separator of the evaluated OS family.
    fn ends_with_sep(&self, path: &str) -> bool {
        path.ends_with('/') || (self.os == OsFamily::Win32 && path.ends_with('\\'))
    }

    /// Opens a regular file in `root/` (plainly when `root/` has no links,
    /// else through cap-std).
    /// Also returns the file's length in bytes (a read's size hint).
    fn open_regular(&self, path: &str) -> io::Result<(Box<dyn ReadSeek>, u64)> {
        if self.ends_with_sep(path) {
            return Err(not_found()); // a trailing separator names a folder
        }
        let (root, rel, _) = self.resolve(path).ok_or_else(not_found)?;
        let (file, is_file, len): (Box<dyn ReadSeek>, bool, u64) = if self.no_links {
            let f = fs::File::open(self.root_path.join(&rel))?;
            let m = f.metadata()?;
            (Box::new(f), m.is_file(), m.len())
        } else {
            let f = root.open(rel)?;
            let m = f.metadata()?;
            (Box::new(f), m.is_file(), m.len())
        };
        if !is_file {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a regular file",
            ));
        }
        Ok((file, len))
    }
}

/// Maps a path of `os` to a path relative to `root/` (`/opt/x` → `opt/x`;
/// win32 `C:\x` → `C/x`, `/` and `\` both separators). `None` for relative
/// paths and paths with a `..` segment.
fn map_path(os: OsFamily, path: &str) -> Option<PathBuf> {
    let win = os == OsFamily::Win32;
    let (mut rel, rest) = if win {
        let b = path.as_bytes();
        if b.len() < 3
            || !b[0].is_ascii_alphabetic()
            || b[1] != b':'
            || !matches!(b[2], b'\\' | b'/')
        {
            return None;
        }
        let mut rel = String::with_capacity(path.len());
        rel.push(b[0].to_ascii_uppercase() as char);
        (rel, &path[3..])
    } else {
        let mut rel = String::with_capacity(path.len() + 1);
        rel.push('.');
        (rel, path.strip_prefix('/')?)
    };
    // Built as one string (a segment at a time, `/`-joined): this runs
    // for every file-system call.
    for s in rest.split(|c: char| c == '/' || (win && c == '\\')) {
        match s {
            "" | "." => {}
            ".." => return None,
            s => {
                rel.push('/');
                rel.push_str(s);
            }
        }
    }
    Some(PathBuf::from(rel))
}

/// A simulated host made in code, for tests (plugin authors' included,
/// `guest-sdk/README.md`): the facts of `host.yaml` and the files of
/// `root/`, written into a folder by [`SimulatedHostBuilder::build`] and
/// loaded from there as [`SimulatedHost::load`] would — the same host a
/// folder written by hand gives (`docs/declarations.md`).
///
/// Paths are paths of the host's OS family (`C:\Program Files\X\x.exe`
/// for win32, `/opt/x/bin/x` otherwise). The version fixtures come from
/// [`crate::fixtures`].
///
/// ```no_run
/// use wasmgate::declaration::OsFamily;
/// use wasmgate::platform::SimulatedHost;
/// let dir = std::env::temp_dir().join("my-sim-host");
/// let host = SimulatedHost::builder(OsFamily::Win32)
///     .env("ProgramFiles", r"C:\Program Files")
///     .file(r"C:\Program Files\Vendor\vendor.exe", wasmgate::fixtures::pe_with_version("2.4.0.0"))
///     .build(&dir)
///     .unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct SimulatedHostBuilder {
    os: OsFamily,
    home: Option<String>,
    env: BTreeMap<String, String>,
    gpu: Option<GpuClass>,
    arch: Option<String>,
    processes: Vec<u32>,
    uninstall: Vec<[Option<String>; 4]>,
    files: Vec<(String, Vec<u8>, bool)>,
    folders: Vec<String>,
}

impl SimulatedHostBuilder {
    /// The home folder (`~`); without it the host uses `HOME`
    /// (`USERPROFILE` on win32) of its environment.
    pub fn home(mut self, path: impl Into<String>) -> Self {
        self.home = Some(path.into());
        self
    }

    /// An environment variable of the simulated machine.
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(name.into(), value.into());
        self
    }

    /// The machine's GPU class (`gpu_class()`).
    pub fn gpu(mut self, class: GpuClass) -> Self {
        self.gpu = Some(class);
        self
    }

    /// darwin only: `arm64` or `x86_64`.
    pub fn arch(mut self, arch: impl Into<String>) -> Self {
        self.arch = Some(arch.into());
        self
    }

    /// A running process id (liveness `pid_key` checks).
    pub fn process(mut self, pid: u32) -> Self {
        self.processes.push(pid);
        self
    }

    /// win32 only: an uninstall entry under HKLM (64-bit view), keyed by
    /// its display name, with its `DisplayVersion` and `InstallLocation`.
    pub fn uninstall_entry(
        mut self,
        display_name: impl Into<String>,
        display_version: Option<&str>,
        install_location: Option<&str>,
    ) -> Self {
        let name = display_name.into();
        self.uninstall.push([
            Some(name.clone()),
            Some(name),
            display_version.map(str::to_string),
            install_location.map(str::to_string),
        ]);
        self
    }

    /// A regular file with `content` (mode 0644 on Unix).
    pub fn file(mut self, path: impl Into<String>, content: impl Into<Vec<u8>>) -> Self {
        self.files.push((path.into(), content.into(), false));
        self
    }

    /// An executable file (a tiny shell script, mode 0755 on Unix).
    pub fn executable(mut self, path: impl Into<String>) -> Self {
        self.files
            .push((path.into(), b"#!/bin/sh\nexit 0\n".to_vec(), true));
        self
    }

    /// An (empty) folder.
    pub fn folder(mut self, path: impl Into<String>) -> Self {
        self.folders.push(path.into());
        self
    }

    /// Writes `dir/host.yaml` and `dir/root/…` (`dir` is made when missing;
    /// files already there stay unless overwritten) and loads the host.
    ///
    /// # Errors
    /// A path that is not an absolute path of the OS family (or has `..`),
    /// a file that cannot be written, or what [`SimulatedHost::load`]
    /// refuses (`arch` off darwin, an uninstall entry off win32).
    pub fn build(self, dir: &Path) -> Result<SimulatedHost, SimulatedHostError> {
        use yaml_serde::{Mapping, Value};
        let io_err = |p: &Path, e: io::Error| SimulatedHostError(format!("{}: {e}", p.display()));
        let root = dir.join("root");
        fs::create_dir_all(&root).map_err(|e| io_err(&root, e))?;
        let place = |p: &str| {
            map_path(self.os, p)
                .map(|rel| root.join(rel))
                .ok_or_else(|| {
                    SimulatedHostError(format!(
                        "{p:?} is not an absolute {} path without '..'",
                        self.os.as_str()
                    ))
                })
        };
        for f in &self.folders {
            let at = place(f)?;
            fs::create_dir_all(&at).map_err(|e| io_err(&at, e))?;
        }
        for (p, content, exec) in &self.files {
            let at = place(p)?;
            if let Some(parent) = at.parent() {
                fs::create_dir_all(parent).map_err(|e| io_err(parent, e))?;
            }
            fs::write(&at, content).map_err(|e| io_err(&at, e))?;
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let mode = if *exec { 0o755 } else { 0o644 };
                fs::set_permissions(&at, fs::Permissions::from_mode(mode))
                    .map_err(|e| io_err(&at, e))?;
            }
            #[cfg(not(unix))]
            let _ = exec;
        }
        let s = |t: &str| Value::String(t.to_string());
        let mut y = Mapping::new();
        y.insert(s("os"), s(self.os.as_str()));
        if let Some(h) = &self.home {
            y.insert(s("home"), s(h));
        }
        if !self.env.is_empty() {
            let env: Mapping = self.env.iter().map(|(k, v)| (s(k), s(v))).collect();
            y.insert(s("env"), Value::Mapping(env));
        }
        if let Some(g) = self.gpu {
            y.insert(s("gpu"), s(g.as_str()));
        }
        if let Some(a) = &self.arch {
            y.insert(s("arch"), s(a));
        }
        if !self.processes.is_empty() {
            let pids = self.processes.iter().map(|p| Value::Number((*p).into()));
            y.insert(s("processes"), Value::Sequence(pids.collect()));
        }
        if !self.uninstall.is_empty() {
            let keys = ["key", "DisplayName", "DisplayVersion", "InstallLocation"];
            let entries = self.uninstall.iter().map(|e| {
                let mut m = Mapping::new();
                m.insert(s("hive"), s("HKLM"));
                for (k, v) in keys.iter().zip(e) {
                    if let Some(v) = v {
                        m.insert(s(k), s(v));
                    }
                }
                Value::Mapping(m)
            });
            let mut reg = Mapping::new();
            reg.insert(s("uninstall"), Value::Sequence(entries.collect()));
            y.insert(s("registry"), Value::Mapping(reg));
        }
        let text = yaml_serde::to_string(&Value::Mapping(y))
            .map_err(|e| SimulatedHostError(format!("host.yaml: {e}")))?;
        let file = dir.join("host.yaml");
        fs::write(&file, text).map_err(|e| io_err(&file, e))?;
        SimulatedHost::load(dir)
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

    fn user_home(&self, user: &str) -> Option<String> {
        self.users.get(user).cloned()
    }

    fn env_var(&self, name: &str) -> Option<String> {
        if self.os == OsFamily::Win32 {
            self.env_folded.get(&name.to_ascii_lowercase()).cloned()
        } else {
            self.env.get(name).cloned()
        }
    }

    fn metadata(&self, path: &str) -> Option<FileKind> {
        self.count();
        let kind = self.metadata_inner(path)?;
        // A trailing separator names a folder, as on a real file system
        // (`/opt/x/` is "not a directory" when `x` is a file).
        if self.ends_with_sep(path) && !kind.is_dir() {
            return None;
        }
        Some(kind)
    }

    fn read_file(&self, path: &str, max_bytes: u64) -> Result<Vec<u8>, ReadError> {
        self.count();
        let (f, len) = self.open_regular(path).map_err(ReadError::Io)?;
        read_bounded(f, max_bytes, len)
    }

    fn open_file(&self, path: &str) -> io::Result<Box<dyn ReadSeek>> {
        self.count();
        self.open_regular(path).map(|(f, _)| f)
    }

    fn list_dir(&self, path: &str) -> io::Result<Vec<String>> {
        self.count();
        let (root, rel, _) = self.resolve(path).ok_or_else(not_found)?;
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
        let (root, rel, _) = self.resolve(path)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn host(os: &str, files: &[&str], dirs: &[&str]) -> (tempfile::TempDir, SimulatedHost) {
        let t = tempfile::tempdir().unwrap();
        fs::write(t.path().join("host.yaml"), format!("os: {os}\n")).unwrap();
        for d in dirs {
            fs::create_dir_all(t.path().join("root").join(d)).unwrap();
        }
        for f in files {
            let p = t.path().join("root").join(f);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, b"MZ").unwrap();
        }
        fs::create_dir_all(t.path().join("root")).unwrap();
        let h = SimulatedHost::load(t.path()).unwrap();
        (t, h)
    }

    #[test]
    fn an_oversized_host_yaml_is_refused_naming_the_file_and_the_limit() {
        let t = tempfile::tempdir().unwrap();
        let limit = crate::manifest::load::MAX_MANIFEST_BYTES;
        let mut text = String::from("os: linux\n");
        text.push_str(&"#".repeat(limit as usize));
        fs::write(t.path().join("host.yaml"), &text).unwrap();
        let e = SimulatedHost::load(t.path()).unwrap_err().to_string();
        assert!(
            e.contains("host.yaml") && e.contains(&format!("is larger than {limit} bytes")),
            "{e}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_host_yaml_fifo_is_refused_at_once() {
        let t = tempfile::tempdir().unwrap();
        let c = std::ffi::CString::new(t.path().join("host.yaml").to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = SimulatedHost::load(t.path()).unwrap_err().to_string();
        assert!(e.contains("host.yaml") && e.contains("a FIFO"), "{e}");
    }

    #[test]
    fn win32_paths_fold_case_at_every_depth_and_count_one_call() {
        let (_t, h) = host("win32", &["C/Program Files/App/Bin/app.exe"], &[]);
        let file = Some(FileKind::File { executable: false });
        assert_eq!(h.metadata(r"C:\Program Files\App\Bin\app.exe"), file);
        assert_eq!(h.metadata(r"c:\PROGRAM FILES\app\bin\APP.EXE"), file);
        assert_eq!(h.metadata("c:/program files/APP/Bin"), Some(FileKind::Dir));
        assert_eq!(h.metadata(r"C:\Program Files\App\Bin\other.exe"), None);
        assert_eq!(h.metadata(r"C:\Windows\app.exe"), None);
        assert_eq!(h.metadata(r"D:\app.exe"), None);
        assert_eq!(h.fs_calls(), 6);
        assert_eq!(
            h.read_file(r"c:\program files\app\bin\app.exe", 16)
                .unwrap(),
            b"MZ"
        );
        assert_eq!(
            h.list_dir(r"C:\PROGRAM FILES").unwrap(),
            vec!["App".to_string()]
        );
        assert_eq!(h.fs_calls(), 8);
    }

    #[test]
    fn win32_folding_prefers_the_name_as_written() {
        // Two entries differing only by case (possible in a root/ laid out on
        // a case-sensitive file system): the one written wins.
        let (_t, h) = host("win32", &["C/d/Ab"], &["C/d/AB"]);
        assert_eq!(h.metadata(r"C:\d\AB"), Some(FileKind::Dir));
        assert_eq!(
            h.metadata(r"C:\D\Ab"),
            Some(FileKind::File { executable: false })
        );
    }

    // Folder times are set through a handle on the folder (POSIX).
    #[cfg(unix)]
    #[test]
    fn win32_absent_paths_are_looked_for_again_once_their_folder_changes() {
        let (t, h) = host("win32", &["C/Tools/app.EXE"], &[]);
        let root = t.path().join("root");
        // Settled folders (older than the coarse-time margin), so absent
        // answers are kept.
        let old = SystemTime::now() - std::time::Duration::from_secs(60);
        let age = |d: &str| {
            fs::File::open(root.join(d))
                .unwrap()
                .set_modified(old)
                .unwrap()
        };
        for d in ["C/Tools", "C", "."] {
            age(d);
        }
        let file = Some(FileKind::File { executable: false });
        for _ in 0..2 {
            assert_eq!(h.metadata(r"C:\tools\other.exe"), None);
            assert_eq!(h.metadata(r"C:\Windows\x.exe"), None);
            assert_eq!(h.metadata(r"C:\tools\APP.exe"), file);
        }
        assert_eq!(h.fs_calls(), 6);
        fs::write(root.join("C/Tools/OTHER.EXE"), b"MZ").unwrap();
        fs::create_dir_all(root.join("C/windows")).unwrap();
        fs::write(root.join("C/windows/X.EXE"), b"MZ").unwrap();
        assert_eq!(h.metadata(r"C:\tools\other.exe"), file);
        assert_eq!(h.metadata(r"C:\Windows\x.exe"), file);
        // Absent again, then the folder replaced by another one with the
        // same modification time that holds the file.
        fs::remove_file(root.join("C/Tools/OTHER.EXE")).unwrap();
        age("C/Tools");
        assert_eq!(h.metadata(r"C:\tools\other.exe"), None);
        fs::rename(root.join("C/Tools"), root.join("C/Gone")).unwrap();
        fs::create_dir_all(root.join("C/Tools")).unwrap();
        fs::write(root.join("C/Tools/other.exe"), b"MZ").unwrap();
        age("C/Tools");
        age("C");
        assert_eq!(h.metadata(r"C:\tools\other.exe"), file);
    }

    #[test]
    fn posix_paths_keep_their_case() {
        let (_t, h) = host("linux", &["opt/App/app"], &[]);
        assert!(h.metadata("/opt/App/app").is_some_and(FileKind::is_file));
        assert_eq!(h.metadata("/opt/app/app"), None);
        assert_eq!(h.metadata("/opt/../opt/App/app"), None);
    }

    #[test]
    fn win32_environment_names_are_case_insensitive() {
        let t = tempfile::tempdir().unwrap();
        fs::write(
            t.path().join("host.yaml"),
            "os: win32\nenv:\n  ProgramFiles: 'C:\\Program Files'\n",
        )
        .unwrap();
        let h = SimulatedHost::load(t.path()).unwrap();
        assert_eq!(
            h.env_var("PROGRAMFILES").as_deref(),
            Some(r"C:\Program Files")
        );
        assert_eq!(
            h.env_var("programfiles").as_deref(),
            Some(r"C:\Program Files")
        );
        assert_eq!(h.env_var("ProgramData"), None);
    }

    #[test]
    fn bounded_reads_refuse_longer_files_whatever_the_hint() {
        let data = [7u8; 100];
        assert_eq!(read_bounded(&data[..], 100, 100).unwrap().len(), 100);
        assert_eq!(read_bounded(&data[..], 100, 0).unwrap().len(), 100);
        assert!(matches!(
            read_bounded(&data[..], 99, 100),
            Err(ReadError::TooLarge { limit: 99 })
        ));
        assert!(matches!(
            read_bounded(&data[..], 99, 5),
            Err(ReadError::TooLarge { limit: 99 })
        ));
    }
}
