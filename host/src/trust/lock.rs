//! The lock file: what the user approved, one JSON file,
//! `<user config dir>/wasmgate/plugins.lock` (`docs/security.md`).
//!
//! Written atomically (a temporary file in the same folder, flushed, then
//! renamed over the old one) under an advisory lock on `plugins.lock.guard`,
//! so two wasmgate processes never lose each other's approvals or tool pins.

use super::digest::FileRecord;
use super::surface::Surface;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// File name of the lock inside `<user config dir>/wasmgate/`.
pub const LOCK_FILE_NAME: &str = "plugins.lock";
/// Largest lock file read, in bytes (16 MiB).
pub const MAX_LOCK_BYTES: u64 = 16 << 20;
/// The format version written.
pub const LOCK_VERSION: u32 = 1;

/// `<user config dir>/wasmgate/plugins.lock`; `None` when the machine has
/// no user config dir (then nothing is approved).
pub fn default_lock_path() -> Option<PathBuf> {
    use etcetera::BaseStrategy;
    etcetera::choose_base_strategy()
        .ok()
        .map(|s| s.config_dir().join("wasmgate").join(LOCK_FILE_NAME))
}

/// The whole lock file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LockFile {
    /// Format version ([`LOCK_VERSION`]).
    #[serde(default)]
    pub version: u32,
    /// Approved plugins by name.
    #[serde(default)]
    pub plugins: BTreeMap<String, LockEntry>,
}

/// One approved plugin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LockEntry {
    /// The plugin's SHA-256 (`trust::digest`).
    pub sha256: String,
    /// `component`, `yaml` or `json`.
    pub kind: String,
    /// The file or folder approved (informational).
    pub source: String,
    /// Every file the SHA-256 covers, with the identity it was hashed at.
    #[serde(default)]
    pub files: Vec<FileRecord>,
    /// The approved surface.
    pub surface: Surface,
    /// Tool pins by server, then by the server's own tool name; written on
    /// the first connect and by `plugin approve`.
    #[serde(default)]
    pub tools: BTreeMap<String, BTreeMap<String, ToolPin>>,
}

/// One pinned tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolPin {
    /// SHA-256 of `{"name", "description", "input_schema"}` (keys sorted).
    pub sha256: String,
    /// The approved description (for the diff `status` shows).
    pub description: String,
    /// SHA-256 of the input schema alone (to say which part changed).
    pub schema_sha256: String,
}

/// Reads a lock file; a missing file is an empty lock. Errors (naming the
/// file): unreadable, over [`MAX_LOCK_BYTES`], not the lock's JSON.
pub fn read(path: &Path) -> Result<(LockFile, Vec<u8>), String> {
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        // A FIFO in the lock's place must not hang every command: the open
        // does not wait for a writer, and the type is checked below.
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NONBLOCK);
    }
    let f = match opts.open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok((LockFile::default(), Vec::new()));
        }
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    if !f.metadata().map(|m| m.is_file()).unwrap_or(false) {
        return Err(format!("{}: not a regular file", path.display()));
    }
    let mut bytes = Vec::new();
    f.take(MAX_LOCK_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if bytes.len() as u64 > MAX_LOCK_BYTES {
        return Err(format!(
            "{}: larger than {} MiB",
            path.display(),
            MAX_LOCK_BYTES >> 20
        ));
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok((LockFile::default(), bytes));
    }
    let lock: LockFile = serde_json::from_slice(&bytes).map_err(|e| {
        format!(
            "{}: not a wasmgate lock file ({e}); fix or delete it, then approve again",
            path.display()
        )
    })?;
    Ok((lock, bytes))
}

/// Writes `lock` to `path` atomically (temporary file + rename), creating
/// the folder. Errors: the folder or file cannot be written.
pub fn write(path: &Path, lock: &LockFile) -> Result<(), String> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut text = serde_json::to_vec_pretty(lock).map_err(|e| e.to_string())?;
    text.push(b'\n');
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name()
            .map_or_else(|| LOCK_FILE_NAME.into(), |n| n.to_string_lossy()),
        std::process::id()
    ));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&text)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!("{}: {e}", path.display()));
    }
    Ok(())
}

/// Reads, changes and writes the lock under the advisory guard
/// (`<path>.guard`), so concurrent updates are applied one after the
/// other. Returns the lock as written. Errors: as [`read`] and [`write`].
pub fn update(path: &Path, change: impl FnOnce(&mut LockFile)) -> Result<LockFile, String> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let guard_path = path.with_extension("lock.guard");
    let guard =
        std::fs::File::create(&guard_path).map_err(|e| format!("{}: {e}", guard_path.display()))?;
    guard
        .lock()
        .map_err(|e| format!("{}: {e}", guard_path.display()))?;
    let (mut lock, _) = read(path)?;
    change(&mut lock);
    lock.version = LOCK_VERSION;
    write(path, &lock)?;
    drop(guard);
    Ok(lock)
}
