//! The SHA-256 a plugin is pinned by (`docs/security.md`, "What is pinned").
//!
//! - A component directly inside a plugin folder (`plugins/foo.wasm`): the
//!   SHA-256 of that file — the same number `sha256sum foo.wasm` prints and
//!   `plugin add URL --sha256` takes.
//! - A plugin in its own folder (`plugins/git/` with a component, or a
//!   `plugin.yaml` / `plugin.json` folder): the SHA-256 of a listing of every
//!   file in the folder — `wasmgate-folder-v1\n` then, sorted by path, one
//!   `<path>\0<kind>\0<sha256>\n` line per entry (`file`, or `link` hashing
//!   the link's target text; links are never followed). The manifest, the
//!   component, the skills and every program or script the plugin ships
//!   (`${PLUGIN_DIR}/server`) are covered, so none can change unnoticed.
//!
//! Speed: reading a 20 MB component on every load would cost milliseconds.
//! Each file's hash is remembered with its identity — device, inode, size,
//! mtime and ctime (seconds and nanoseconds) — in the lock entry and in this
//! process. A file whose identity is unchanged is not read again. Writing a
//! file changes its mtime and ctime; `touch -d` can set mtime back but sets
//! ctime to now, and ctime cannot be set by an unprivileged process; a file
//! replaced by another (rename) has another inode or ctime. So the shortcut
//! trusts only what the kernel vouches for. Off unix (no inode or ctime)
//! every file is read each time.

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Deepest folder level walked below a plugin folder.
pub const MAX_DEPTH: usize = 8;
/// Most entries (files, links, folders) in one plugin folder.
pub const MAX_ENTRIES: usize = 4096;
/// Most bytes read to hash one plugin (all files together), 1 GiB.
pub const MAX_TOTAL_BYTES: u64 = 1 << 30;

/// What a plugin is pinned by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unit {
    /// One component file directly inside a plugin folder.
    File(PathBuf),
    /// A plugin's own folder, every file in it.
    Folder(PathBuf),
}

impl Unit {
    /// The file or folder.
    pub fn path(&self) -> &Path {
        match self {
            Unit::File(p) | Unit::Folder(p) => p,
        }
    }
}

/// Who a file is, as the kernel tells it (unix `stat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// Device number.
    pub dev: u64,
    /// Inode number.
    pub ino: u64,
    /// Modification time, seconds and nanoseconds.
    pub mtime: (i64, i64),
    /// Status change time, seconds and nanoseconds.
    pub ctime: (i64, i64),
}

/// One entry of a plugin's digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRecord {
    /// Path relative to the plugin folder, `/`-separated (the file name for
    /// a `Unit::File`).
    pub path: String,
    /// `file` or `link`.
    pub kind: String,
    /// SHA-256 (hex) of the content, or of a link's target text.
    pub sha256: String,
    /// Bytes.
    pub size: u64,
    /// The identity the hash was computed for (`None` off unix).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) identity: Option<Identity>,
}

/// A plugin's digest: its SHA-256 and the per-file records it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Digest {
    /// Hex SHA-256 (see the module docs for what it covers).
    pub sha256: String,
    /// Every file, sorted by path.
    pub files: Vec<FileRecord>,
}

/// Hex form of a SHA-256.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 (hex) of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Hashes that were verified in this process, by path (a `serve` refresh
/// loop does not read unchanged files again even before they are pinned).
static SEEN: Mutex<Option<HashMap<PathBuf, Seen>>> = Mutex::new(None);

/// Size, identity and SHA-256 of a file hashed in this process.
type Seen = (u64, Identity, String);

/// Computes the digest of `unit`; `known` are the records of the last
/// approval (their identities let unchanged files go unread).
/// Errors (one sentence naming the path): a file cannot be read, the folder
/// is deeper than [`MAX_DEPTH`], holds more than [`MAX_ENTRIES`] entries or
/// more than [`MAX_TOTAL_BYTES`], or holds something other than files,
/// folders and links (a FIFO, a device, a socket).
pub fn digest(unit: &Unit, known: &[FileRecord]) -> Result<Digest, String> {
    let mut budget = MAX_TOTAL_BYTES;
    match unit {
        Unit::File(file) => {
            let name = file
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            let meta =
                std::fs::symlink_metadata(file).map_err(|e| format!("{}: {e}", file.display()))?;
            let rec = record(file, &name, &meta, known, &mut budget)?;
            Ok(Digest {
                sha256: rec.sha256.clone(),
                files: vec![rec],
            })
        }
        Unit::Folder(dir) => {
            let mut files = Vec::new();
            walk(dir, dir, 0, known, &mut files, &mut budget)?;
            files.sort_by(|a, b| a.path.cmp(&b.path));
            let mut h = Sha256::new();
            h.update(b"wasmgate-folder-v1\n");
            for f in &files {
                h.update(f.path.as_bytes());
                h.update(b"\0");
                h.update(f.kind.as_bytes());
                h.update(b"\0");
                h.update(f.sha256.as_bytes());
                h.update(b"\n");
            }
            Ok(Digest {
                sha256: hex(&h.finalize()),
                files,
            })
        }
    }
}

fn walk(
    root: &Path,
    dir: &Path,
    depth: usize,
    known: &[FileRecord],
    out: &mut Vec<FileRecord>,
    budget: &mut u64,
) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!(
            "{}: more than {MAX_DEPTH} folder levels; a plugin folder this deep is not pinned",
            dir.display()
        ));
    }
    let rd = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut entries = Vec::new();
    for e in rd {
        let e = e.map_err(|e| format!("{}: {e}", dir.display()))?;
        entries.push(e.path());
        if entries.len() + out.len() > MAX_ENTRIES {
            return Err(format!(
                "{}: more than {MAX_ENTRIES} entries; a plugin folder this big is not pinned",
                root.display()
            ));
        }
    }
    entries.sort();
    for path in entries {
        let rel = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        let meta =
            std::fs::symlink_metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        if meta.is_dir() {
            walk(root, &path, depth + 1, known, out, budget)?;
        } else if meta.file_type().is_symlink() && !link_stays_inside(&rel, &path)? {
            // Its target's content is not in the folder, so it could change
            // after approval without changing the digest.
            return Err(format!(
                "{}: a link that leads out of the plugin folder; a plugin's files must stay in its folder, so it is not pinned",
                path.display()
            ));
        } else {
            out.push(record(&path, &rel, &meta, known, budget)?);
        }
    }
    Ok(())
}

fn record(
    path: &Path,
    rel: &str,
    meta: &std::fs::Metadata,
    known: &[FileRecord],
    budget: &mut u64,
) -> Result<FileRecord, String> {
    let ft = meta.file_type();
    if ft.is_symlink() {
        // Never followed: the link's own target text is what is pinned.
        let target = std::fs::read_link(path).map_err(|e| format!("{}: {e}", path.display()))?;
        // The target's own bytes: two targets that differ only in bytes
        // that are not UTF-8 must not hash alike.
        let bytes = os_bytes(target.as_os_str());
        return Ok(FileRecord {
            path: rel.to_owned(),
            kind: "link".into(),
            sha256: sha256_hex(&bytes),
            size: bytes.len() as u64,
            identity: None,
        });
    }
    if !ft.is_file() {
        return Err(format!(
            "{}: not a regular file, folder or link (a FIFO, device or socket); plugins ship files only",
            path.display()
        ));
    }
    let before = identity(meta);
    let size = meta.len();
    if let Some(id) = before {
        let hit = known
            .iter()
            .find(|k| k.path == rel && k.kind == "file" && k.size == size && k.identity == Some(id))
            .map(|k| k.sha256.clone())
            .or_else(|| {
                let seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
                seen.as_ref()
                    .and_then(|m| m.get(path))
                    .filter(|(s, i, _)| *s == size && *i == id)
                    .map(|(_, _, h)| h.clone())
            });
        if let Some(sha256) = hit {
            return Ok(FileRecord {
                path: rel.to_owned(),
                kind: "file".into(),
                sha256,
                size,
                identity: before,
            });
        }
    }
    if size > *budget {
        return Err(format!(
            "{}: the plugin's files exceed {} MiB; it is not pinned",
            path.display(),
            MAX_TOTAL_BYTES >> 20
        ));
    }
    let (sha256, read) = hash_file(path, *budget)?;
    *budget -= read;
    // The identity after reading: a file written while it was read has
    // another ctime than the one taken before, and is read again next time.
    let after = std::fs::symlink_metadata(path)
        .ok()
        .and_then(|m| identity(&m));
    let kept = before.filter(|id| after == Some(*id) && read == size);
    if let Some(id) = kept {
        let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
        seen.get_or_insert_with(HashMap::new)
            .insert(path.to_path_buf(), (size, id, sha256.clone()));
    }
    Ok(FileRecord {
        path: rel.to_owned(),
        kind: "file".into(),
        sha256,
        size: read,
        identity: kept,
    })
}

/// The bytes of an OS string: the raw bytes on unix, UTF-8 (lossy) elsewhere.
fn os_bytes(s: &std::ffi::OsStr) -> std::borrow::Cow<'_, [u8]> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        std::borrow::Cow::Borrowed(s.as_bytes())
    }
    #[cfg(not(unix))]
    {
        match s.to_string_lossy() {
            std::borrow::Cow::Borrowed(t) => std::borrow::Cow::Borrowed(t.as_bytes()),
            std::borrow::Cow::Owned(t) => std::borrow::Cow::Owned(t.into_bytes()),
        }
    }
}

/// Whether the link at `path` (`rel`: its `/`-separated path inside the
/// plugin folder) names something inside the folder, judged on its target
/// text alone: not absolute, and its `..` never climbs above the folder.
/// A link inside that names another link is judged by that link's own entry.
fn link_stays_inside(rel: &str, path: &Path) -> Result<bool, String> {
    use std::path::Component;
    let target = std::fs::read_link(path).map_err(|e| format!("{}: {e}", path.display()))?;
    // The folders above the link, inside the plugin folder.
    let mut depth = rel.split('/').count().saturating_sub(1);
    for c in target.components() {
        match c {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir if depth > 0 => depth -= 1,
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// Reads at most `cap` bytes of a regular file and hashes them. Opened
/// non-blocking and checked again after opening, so a file swapped for a
/// FIFO between the `stat` and the `open` cannot hang the load.
fn hash_file(path: &Path, cap: u64) -> Result<(String, u64), String> {
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW);
    }
    let f = opts
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let is_file = f.metadata().map(|m| m.is_file()).unwrap_or(false);
    if !is_file {
        return Err(format!("{}: not a regular file", path.display()));
    }
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0u64;
    let mut r = f.take(cap + 1);
    loop {
        let n = r
            .read(&mut buf)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if total > cap {
            return Err(format!(
                "{}: the plugin's files exceed {} MiB; it is not pinned",
                path.display(),
                MAX_TOTAL_BYTES >> 20
            ));
        }
        h.update(&buf[..n]);
    }
    Ok((hex(&h.finalize()), total))
}

#[cfg(unix)]
fn identity(meta: &std::fs::Metadata) -> Option<Identity> {
    use std::os::unix::fs::MetadataExt;
    Some(Identity {
        dev: meta.dev(),
        ino: meta.ino(),
        mtime: (meta.mtime(), meta.mtime_nsec()),
        ctime: (meta.ctime(), meta.ctime_nsec()),
    })
}

#[cfg(not(unix))]
fn identity(_meta: &std::fs::Metadata) -> Option<Identity> {
    None
}

/// Forgets the hashes remembered in this process (benchmarks measure a
/// first load with it).
#[cfg(any(test, feature = "internals"))]
pub fn forget_seen() {
    *SEEN.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_file_is_read_again_even_with_the_same_size_and_mtime() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.wasm");
        std::fs::write(&f, b"one").unwrap();
        let d1 = digest(&Unit::File(f.clone()), &[]).unwrap();
        assert_eq!(d1.sha256, sha256_hex(b"one"));
        let mtime = std::fs::metadata(&f).unwrap().modified().unwrap();
        std::fs::write(&f, b"two").unwrap();
        // Same size, mtime set back: ctime still moves.
        std::fs::File::options()
            .write(true)
            .open(&f)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        let d2 = digest(&Unit::File(f.clone()), &d1.files).unwrap();
        assert_eq!(d2.sha256, sha256_hex(b"two"));
    }

    #[test]
    fn folders_cover_every_file_and_links_are_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("skills")).unwrap();
        std::fs::write(dir.path().join("plugin.yaml"), "name: x\n").unwrap();
        std::fs::write(dir.path().join("skills/SKILL.md"), "# s\n").unwrap();
        let d1 = digest(&Unit::Folder(dir.path().into()), &[]).unwrap();
        let paths: Vec<_> = d1.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["plugin.yaml", "skills/SKILL.md"]);
        std::fs::write(dir.path().join("skills/SKILL.md"), "# t\n").unwrap();
        let d2 = digest(&Unit::Folder(dir.path().into()), &d1.files).unwrap();
        assert_ne!(d1.sha256, d2.sha256);
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("skills/SKILL.md", dir.path().join("l")).unwrap();
            let d3 = digest(&Unit::Folder(dir.path().into()), &d2.files).unwrap();
            let l = d3.files.iter().find(|f| f.path == "l").unwrap();
            assert_eq!(l.kind, "link");
            assert_eq!(l.sha256, sha256_hex(b"skills/SKILL.md"));
            // Links whose target leaves the folder are not pinned.
            for (name, target) in [("abs", "/etc/passwd"), ("up", "skills/../../x")] {
                let link = dir.path().join(name);
                std::os::unix::fs::symlink(target, &link).unwrap();
                let e = digest(&Unit::Folder(dir.path().into()), &[]).unwrap_err();
                assert!(e.contains("leads out of the plugin folder"), "{e}");
                std::fs::remove_file(&link).unwrap();
            }
            std::os::unix::fs::symlink("../SKILL.md", dir.path().join("skills/up")).unwrap();
            assert!(digest(&Unit::Folder(dir.path().into()), &[]).is_ok());
            std::fs::remove_file(dir.path().join("skills/up")).unwrap();
            let fifo = dir.path().join("fifo");
            let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            let e = digest(&Unit::Folder(dir.path().into()), &[]).unwrap_err();
            assert!(e.contains("not a regular file"), "{e}");
        }
    }
}
