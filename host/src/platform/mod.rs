//! The platform layer: the only door to the machine (`docs/declarations.md` §3).
//!
//! Every look the resolver, the availability evaluation and the GPU reading
//! take at a machine goes through a [`Platform`]: file metadata (links
//! followed), bounded reads, directory listings, the environment, the win32
//! uninstall registry and display-adapter class key, the native CPU
//! architecture and process liveness. Two implementations exist:
//!
//! - [`RealPlatform`]: this machine (`cfg` per OS: linux and every other
//!   POSIX host, macOS, Windows).
//! - [`SimulatedHost`]: a folder (`host.yaml` + `root/`, `docs/simulated-host.md`)
//!   that describes a machine of **any** OS family, so a declaration can be
//!   evaluated for win32, darwin or linux on any machine.
//!
//! Paths handed to a platform are strings in the syntax of the OS family
//! being evaluated ([`Platform::os_family`]): `C:\Program Files\x.exe` for
//! win32, `/opt/x` otherwise. A platform counts its file-system calls
//! ([`Platform::fs_calls`]) so benchmarks can report calls per declaration.

mod gpu;
mod real;
mod simulated;

pub use gpu::{GpuCache, GpuClass, gpu_class};
#[cfg(any(test, feature = "internals"))]
pub use gpu::refresh_gpu_class;
pub use real::RealPlatform;
pub use simulated::{SimulatedHost, SimulatedHostBuilder, SimulatedHostError};

use crate::declaration::OsFamily;
use std::io::{self, Read, Seek};

/// What a path is, links followed (`Platform::metadata`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A regular file.
    File {
        /// At least one execute bit is set (POSIX). Always `false` where the
        /// evaluated file system has no execute bits (a win32 host).
        executable: bool,
    },
    /// A directory.
    Dir,
    /// Something else (device, socket, fifo).
    Other,
}

impl FileKind {
    /// A regular file.
    pub fn is_file(self) -> bool {
        matches!(self, FileKind::File { .. })
    }

    /// A directory.
    pub fn is_dir(self) -> bool {
        matches!(self, FileKind::Dir)
    }
}

/// The registry hive of an uninstall entry (win32).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Hive {
    /// `HKEY_LOCAL_MACHINE`.
    Hklm,
    /// `HKEY_CURRENT_USER`.
    Hkcu,
}

impl Hive {
    /// `HKLM` or `HKCU`.
    pub fn as_str(self) -> &'static str {
        match self {
            Hive::Hklm => "HKLM",
            Hive::Hkcu => "HKCU",
        }
    }
}

/// One subkey of `SOFTWARE\Microsoft\Windows\CurrentVersion\Uninstall`
/// (`docs/declarations.md` §3). Values that are absent or not strings are `None`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UninstallEntry {
    /// The hive the entry was read from.
    pub hive: Hive,
    /// The registry view: 64 (native) or 32 (`WOW6432Node`); HKCU entries are 64.
    pub view: u8,
    /// The subkey name.
    pub key: String,
    /// `DisplayName`.
    pub display_name: Option<String>,
    /// `DisplayVersion`.
    pub display_version: Option<String>,
    /// `InstallLocation` as stored (may hold quotes, trailing separators,
    /// `%VAR%` of a `REG_EXPAND_SZ`): the resolver cleans it.
    pub install_location: Option<String>,
}

/// One subkey of the display-adapter class key
/// `HKLM\SYSTEM\CurrentControlSet\Control\Class\{4d36e968-e325-11ce-bfc1-08002be10318}` (win32).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DisplayAdapter {
    /// The subkey name (`0000`, `0001`, … for adapters; `Properties` and
    /// others are not adapters).
    pub key: String,
    /// `MatchingDeviceId` (`PCI\VEN_10DE&DEV_2684…`), when present.
    pub matching_device_id: Option<String>,
}

/// Why a bounded read failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The file is larger than the limit (bytes).
    #[error("file is larger than {limit} bytes")]
    TooLarge {
        /// The limit that was exceeded, in bytes.
        limit: u64,
    },
    /// The file could not be opened or read (missing, a folder, a link that
    /// leaves a simulated root, permissions, …). Displays as the OS's
    /// message, which is also the source.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// A readable, seekable file handle from [`Platform::open_file`].
pub trait ReadSeek: Read + Seek + Send {}
impl<T: Read + Seek + Send> ReadSeek for T {}

/// The only door to a machine (real or simulated). Object safe: callers take
/// `&dyn Platform`.
///
/// Paths are strings in the syntax of [`Platform::os_family`]. Every method
/// that touches a file system increments the counter read by
/// [`Platform::fs_calls`] by one.
pub trait Platform: Send + Sync {
    /// The OS family being evaluated (the machine's own for [`RealPlatform`],
    /// `host.yaml`'s `os` for a [`SimulatedHost`]).
    fn os_family(&self) -> OsFamily;

    /// What `~` expands to; `None` when unknown.
    fn home(&self) -> Option<String>;

    /// What `~user` expands to on linux/darwin: that user's home folder from
    /// the user database (`getpwnam` on this machine, `users:` of a
    /// simulated host). `None` when the user is unknown (the default):
    /// a location through `~user` is then never present.
    fn user_home(&self, user: &str) -> Option<String> {
        let _ = user;
        None
    }

    /// An environment variable (case-insensitive names on win32); `None` when
    /// unset.
    fn env_var(&self, name: &str) -> Option<String>;

    /// What `path` is, following symbolic links; `None` when it does not
    /// exist or cannot be inspected (including a link leaving a simulated root).
    fn metadata(&self, path: &str) -> Option<FileKind>;

    /// The whole content of a regular file, at most `max_bytes` bytes
    /// (larger files are refused, not truncated).
    fn read_file(&self, path: &str, max_bytes: u64) -> Result<Vec<u8>, ReadError>;

    /// Opens a regular file for random access (PE version resources are read
    /// in place instead of loading a whole executable).
    fn open_file(&self, path: &str) -> io::Result<Box<dyn ReadSeek>>;

    /// The entry names of a directory, in no particular order.
    fn list_dir(&self, path: &str) -> io::Result<Vec<String>>;

    /// Uninstall entries in enumeration order: HKLM 64-bit view, HKLM 32-bit
    /// view (`WOW6432Node`), HKCU; registry order within each. Empty off win32.
    fn uninstall_entries(&self) -> Vec<UninstallEntry>;

    /// The display-adapter class key's subkeys in enumeration order; `None`
    /// when the key cannot be opened (or off win32).
    fn display_adapters(&self) -> Option<Vec<DisplayAdapter>>;

    /// The native CPU architecture (`arm64`, `x86_64`; an x86-64 process under
    /// Rosetta reports `arm64`); `None` when unknown.
    fn native_arch(&self) -> Option<String>;

    /// A GPU class stated outright (a simulated host's `gpu:` key); `None`
    /// means "read it from the machine's facts" (`docs/declarations.md` §5).
    fn stated_gpu_class(&self) -> Option<GpuClass> {
        None
    }

    /// Whether a process with this id is alive (`docs/declarations.md` §7).
    /// On POSIX a process that exists but belongs to another user is alive.
    fn process_alive(&self, pid: u32) -> bool;

    /// File-system calls made so far through this platform.
    fn fs_calls(&self) -> u64;

    /// The cache behind `gpu_class` for this platform.
    fn gpu_cache(&self) -> &GpuCache;

    /// The folder at `path` opened as a cap-std [`cap_std::fs::Dir`], to
    /// lend a custom probe as its grant (`docs/security.md`, "Custom probes in availability"; counted
    /// as one file-system call). A simulated host opens the folder inside
    /// its `root/` (cap-std keeps the grant inside it). `None` when the
    /// folder cannot be opened, or the platform cannot lend folders (the
    /// default): the probe is then not called and no version is read.
    fn open_grant_dir(&self, path: &str) -> Option<cap_std::fs::Dir> {
        let _ = path;
        None
    }
}

/// Reads at most `max_bytes` bytes; a longer file is refused. `len_hint`:
/// the file's length as its metadata says (bytes), so the buffer is sized
/// once and the read takes one call plus the end-of-file check.
pub(crate) fn read_bounded<R: Read>(
    r: R,
    max_bytes: u64,
    len_hint: u64,
) -> Result<Vec<u8>, ReadError> {
    let cap = len_hint.min(max_bytes).saturating_add(1);
    let mut buf = Vec::with_capacity(usize::try_from(cap).unwrap_or(0));
    r.take(max_bytes.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(ReadError::Io)?;
    if buf.len() as u64 > max_bytes {
        return Err(ReadError::TooLarge { limit: max_bytes });
    }
    Ok(buf)
}
