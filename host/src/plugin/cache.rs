//! The on-disk compile cache (`docs/security.md`, "Compile cache"): a compiled component
//! is stored as `<sha256 of the component>-<engine hash>.cwasm`, with the
//! BLAKE3 digest of that file in `<same>.blake3`. An entry is used only
//! when the file's digest matches; a truncated or corrupted entry is
//! recompiled and rewritten, never loaded. The digest guards against damage,
//! not against someone who can write the cache folder: keep it private to
//! the user. The entry check uses BLAKE3 rather than SHA-256 because it runs
//! over the whole compiled image (3–4× the component), and BLAKE3 is several
//! times faster here (`docs/performance.md`).
//!
//! Identity shortcut (unix). Hashing an 18 MB Python component and its
//! 35 MB entry on every load costs tens of milliseconds, so both digests
//! are remembered with the file's identity — device, inode, size, mtime and
//! ctime in nanoseconds, as the plugin lock does (`trust/digest.rs`,
//! `docs/security.md` "What is pinned"):
//! - the component's SHA-256 in `id-<identity>.sha256`, written after a
//!   read whose identity did not change while it was read;
//! - the entry's identity as written, on the second line of its `.blake3`.
//!
//! A file whose identity is unchanged is not hashed again: the component is
//! not read at all, and the entry is deserialized without its BLAKE3:
//! mapped in place when only its owner can shrink it (entries are written
//! read-only; a mapped file truncated by someone else would kill the host
//! with SIGBUS, module `in_place`), else copied into a sealed memfd and
//! mapped (Linux), else read whole (bounded). Writing a file moves its ctime, which no
//! unprivileged process can set back, and a replaced file has another inode
//! or ctime; so a changed component gets a fresh hash (and entry), and a
//! changed entry is hashed in full and recompiled when it does not match.
//! This cache never writes an entry in place (temporary file, then
//! rename).

use sha2::{Digest, Sha256};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use wasmtime::Engine;
use wasmtime::component::Component;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The cache entry path (without extension) for the component whose
/// SHA-256 is `sha256` on `engine`.
fn entry(dir: &Path, engine: &Engine, sha256: &str) -> PathBuf {
    let mut h = DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut h);
    dir.join(format!("{sha256}-{:016x}", h.finish()))
}

/// How a component was obtained (for logs and tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheOutcome {
    /// No cache folder configured: compiled.
    Disabled,
    /// Loaded from a verified cache entry.
    Hit,
    /// Compiled, and written to the cache.
    Miss,
    /// The entry failed verification or deserialization: compiled again
    /// and rewritten.
    Recompiled,
}

/// The component being loaded: the opened file, read only when needed.
pub(crate) struct Source {
    file: std::fs::File,
    size: u64,
    identity: Option<String>,
    bytes: Option<Vec<u8>>,
}

impl Source {
    /// `file` opened for reading, `size` bytes at opening.
    pub(crate) fn new(file: std::fs::File, size: u64) -> Source {
        let identity = file.metadata().ok().and_then(|m| identity(&m));
        Source {
            file,
            size,
            identity,
            bytes: None,
        }
    }

    /// Up to the first 8 bytes (the header), without reading the rest.
    pub(crate) fn header(&mut self) -> std::io::Result<Vec<u8>> {
        if let Some(b) = &self.bytes {
            return Ok(b[..b.len().min(8)].to_vec());
        }
        let mut buf = [0u8; 8];
        let mut n = 0;
        while n < buf.len() {
            let r = read_at(&mut self.file, &mut buf[n..], n as u64)?;
            if r == 0 {
                break;
            }
            n += r;
        }
        Ok(buf[..n].to_vec())
    }

    /// The whole file, at most the size it had at opening (a file that grew
    /// since is read to that size and the identity is dropped, so nothing is
    /// remembered for it).
    pub(crate) fn bytes(&mut self) -> std::io::Result<&[u8]> {
        if self.bytes.is_none() {
            use std::io::{Read, Seek};
            self.file.seek(std::io::SeekFrom::Start(0))?;
            let mut buf = Vec::with_capacity(self.size as usize);
            (&mut self.file)
                .take(self.size.saturating_add(1))
                .read_to_end(&mut buf)?;
            let after = self.file.metadata().ok().and_then(|m| identity(&m));
            if buf.len() as u64 != self.size || after != self.identity {
                self.identity = None;
            }
            buf.truncate(self.size as usize);
            self.bytes = Some(buf);
        }
        Ok(self.bytes.as_deref().unwrap_or_default())
    }

    /// The SHA-256 (hex) of the component: remembered by identity in
    /// `dir`, else read and hashed (and remembered when the identity held).
    fn sha256(&mut self, dir: &Path) -> std::io::Result<String> {
        let remembered = self
            .identity
            .as_ref()
            .map(|id| dir.join(format!("id-{id}.sha256")));
        if let Some(p) = &remembered
            && let Ok(Some(text)) = read_entry(dir, p, MAX_DIGEST_BYTES)
            && let Ok(text) = String::from_utf8(text)
            && text.trim().len() == 64
        {
            return Ok(text.trim().to_string());
        }
        let digest = hex(&Sha256::digest(self.bytes()?));
        if let (Some(p), Some(_)) = (&remembered, &self.identity) {
            // An optimisation: a read-only folder is not an error.
            let _ = write_atomically(dir, p, digest.as_bytes());
        }
        Ok(digest)
    }
}

#[cfg(unix)]
fn read_at(f: &mut std::fs::File, buf: &mut [u8], at: u64) -> std::io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(f, buf, at)
}

#[cfg(not(unix))]
fn read_at(f: &mut std::fs::File, buf: &mut [u8], at: u64) -> std::io::Result<usize> {
    use std::io::{Read, Seek};
    f.seek(std::io::SeekFrom::Start(at))?;
    f.read(buf)
}

/// `dev-ino-size-mtime-ctime` (nanoseconds), or `None` off unix.
#[cfg(unix)]
fn identity(meta: &std::fs::Metadata) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    Some(format!(
        "{:x}-{:x}-{:x}-{}.{:09}-{}.{:09}",
        meta.dev(),
        meta.ino(),
        meta.len(),
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ctime(),
        meta.ctime_nsec()
    ))
}

#[cfg(not(unix))]
fn identity(_meta: &std::fs::Metadata) -> Option<String> {
    None
}

/// Opens the entry `cwasm` of `dir` as [`read_entry`] does (a regular file
/// of that folder, at most `limit` bytes) when its identity is
/// `expected_id`; the file and its metadata, or `None`. Both ways of
/// mapping a verified entry start here.
#[cfg(unix)]
fn open_verified(
    dir: &Path,
    cwasm: &Path,
    limit: u64,
    expected_id: &str,
) -> Option<(std::fs::File, std::fs::Metadata)> {
    let (src, _) =
        crate::manifest::files::open_plugin_file(dir, Path::new(cwasm.file_name()?), limit).ok()?;
    let meta = src.metadata().ok()?;
    (identity(&meta).as_deref() == Some(expected_id)).then_some((src, meta))
}

fn identity_of(path: &Path) -> Option<String> {
    std::fs::symlink_metadata(path)
        .ok()
        .filter(|m| m.is_file())
        .and_then(|m| identity(&m))
}

/// Creates `dir` and its missing parents, private to this user on unix
/// (docs/security.md, "Compile cache": the folder must be private).
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

fn write_atomically(dir: &Path, to: &Path, data: &[u8]) -> std::io::Result<()> {
    create_private_dir(dir)?;
    let tmp = to.with_extension(format!("{}.tmp", std::process::id()));
    std::fs::write(&tmp, data)?;
    std::fs::rename(&tmp, to)
}

/// Compiles the component of `source`, or loads the verified cached
/// compilation from `dir`.
pub(crate) fn compile(
    engine: &Engine,
    source: &mut Source,
    dir: Option<&Path>,
) -> wasmtime::Result<(Component, CacheOutcome)> {
    let Some(dir) = dir else {
        let bytes = source.bytes()?;
        return Ok((Component::new(engine, bytes)?, CacheOutcome::Disabled));
    };
    let base = entry(dir, engine, &source.sha256(dir)?);
    let cwasm = base.with_extension("cwasm");
    let sum = base.with_extension("blake3");
    let mut outcome = CacheOutcome::Miss;
    // Bounded reads (docs/security.md, "MCP client bounds"): a compiled
    // image is a few times its component; a digest is 64 hex digits plus
    // the entry's file identity.
    let image_limit = source.size.saturating_mul(16).max(MIN_IMAGE_LIMIT);
    match read_entry(dir, &sum, MAX_DIGEST_BYTES) {
        Err(()) => outcome = CacheOutcome::Recompiled,
        Ok(None) => {}
        Ok(Some(recorded)) => {
            let recorded = String::from_utf8_lossy(&recorded);
            let mut lines = recorded.lines();
            let expected = lines.next().unwrap_or_default().trim().to_string();
            let written_as = lines.next().map(str::trim);
            let now = identity_of(&cwasm);
            let size_ok = std::fs::symlink_metadata(&cwasm)
                .map(|m| m.len() <= image_limit)
                .unwrap_or(false);
            let same =
                size_ok && now.is_some() && written_as.is_some() && now.as_deref() == written_as;
            // A writable entry of ours (written by an older version, or
            // chmodded) is verified in full once and made read-only, so the
            // loads after it map it in place.
            #[cfg(unix)]
            let same = same && !in_place::ours_and_writable(&cwasm);
            // Mapped in place only when nobody but its owner — who can
            // already rewrite the cache — can shrink it: a mapped entry
            // truncated while in use kills this process with SIGBUS.
            #[cfg(unix)]
            if same
                && let Some(expected_id) = written_as
                && let Some(c) = in_place::load(engine, dir, &cwasm, image_limit, expected_id)
            {
                return Ok((c, CacheOutcome::Hit));
            }
            // Else, on Linux, the entry is copied in the kernel into a
            // sealed memfd (nobody can shrink it) and mapped from there.
            #[cfg(target_os = "linux")]
            if same
                && let Some(expected_id) = written_as
                && let Some(c) = sealed::load(engine, dir, &cwasm, image_limit, expected_id)
            {
                return Ok((c, CacheOutcome::Hit));
            }
            // Elsewhere, or when that fails: read whole.
            let data = if same {
                read_entry(dir, &cwasm, image_limit)
            } else {
                Ok(None)
            };
            if let Ok(Some(data)) = data.as_ref()
                && identity_of(&cwasm).as_deref() == written_as
            {
                // SAFETY: as below; the entry is the very file whose digest was
                // checked when it was written: its identity (device, inode,
                // size, mtime, ctime) is the recorded one before and after
                // this read, and any write moves the ctime.
                match unsafe { Component::deserialize(engine, data) } {
                    Ok(c) => return Ok((c, CacheOutcome::Hit)),
                    Err(e) => {
                        tracing::warn!("compile cache entry {} unusable: {e}", cwasm.display())
                    }
                }
            } else if let Ok(Some(data)) = read_entry(dir, &cwasm, image_limit) {
                if blake3::hash(&data).to_hex().as_str() == expected {
                    // SAFETY: `deserialize` trusts its input to be wasmtime's own
                    // output for a compatible engine. The entry was written by
                    // `Component::serialize` below for this engine (its
                    // compatibility hash is in the name) and its bytes match the
                    // digest recorded beside it.
                    match unsafe { Component::deserialize(engine, &data) } {
                        Ok(c) => {
                            // Verified in full: made read-only (an entry of
                            // an older version, or one someone chmodded) so
                            // it can be mapped in place, and its identity
                            // remembered now (the chmod moved the ctime).
                            #[cfg(unix)]
                            in_place::make_read_only(&cwasm);
                            if let Some(id) = identity_of(&cwasm) {
                                let _ = write_atomically(
                                    dir,
                                    &sum,
                                    format!("{expected}\n{id}\n").as_bytes(),
                                );
                            }
                            return Ok((c, CacheOutcome::Hit));
                        }
                        Err(e) => {
                            tracing::warn!("compile cache entry {} unusable: {e}", cwasm.display())
                        }
                    }
                } else {
                    tracing::warn!(
                        "compile cache entry {} does not match its digest; recompiling",
                        cwasm.display()
                    );
                }
            }
            outcome = CacheOutcome::Recompiled;
        }
    }
    let component = Component::new(engine, source.bytes()?)?;
    if let Err(e) = store(dir, &cwasm, &sum, &component) {
        // The cache is an optimisation: a read-only folder is not an error.
        tracing::warn!("cannot write compile cache entry {}: {e}", cwasm.display());
    }
    Ok((component, outcome))
}

/// Largest digest file read, in bytes.
const MAX_DIGEST_BYTES: u64 = 1024;
/// The least image size read whatever the component's size, in bytes.
const MIN_IMAGE_LIMIT: u64 = 64 * 1024 * 1024;

/// A verified entry mapped in place (unix).
///
/// `deserialize_file` maps the file: a mapped file that is truncated while
/// in use kills the process with SIGBUS. Truncating needs write permission
/// on the file itself, so an entry that is owned by this user and has no
/// write bit can be shrunk only by its owner after a `chmod` (which moves
/// the ctime, so it no longer matches the recorded identity) or by root —
/// who can already replace the entry and its digest, that is, run code in
/// this host (`docs/security.md`, "Compile cache"). This cache never opens
/// an entry for writing: it writes a new file and renames it, and an entry
/// unlinked or renamed away stays valid while mapped.
#[cfg(unix)]
mod in_place {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    use std::path::Path;
    use wasmtime::Engine;
    use wasmtime::component::Component;

    /// Whether nobody but the owner (this user) or root can shrink the
    /// file of `meta`.
    pub(super) fn only_owner_can_shrink(meta: &std::fs::Metadata) -> bool {
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        meta.is_file() && meta.uid() == me && meta.mode() & 0o222 == 0
    }

    /// Whether the file at `path` is owned by this user and has a write bit.
    pub(super) fn ours_and_writable(path: &Path) -> bool {
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        std::fs::symlink_metadata(path)
            .is_ok_and(|m| m.is_file() && m.uid() == me && m.mode() & 0o222 != 0)
    }

    /// Drops every write bit of the entry at `path` (best effort: an entry
    /// left writable is copied rather than mapped in place).
    pub(super) fn make_read_only(path: &Path) {
        if let Ok(meta) = std::fs::symlink_metadata(path)
            && meta.is_file()
            && meta.mode() & 0o222 != 0
        {
            let mode = meta.mode() & 0o7555;
            let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode));
        }
    }

    /// `cwasm` (an entry of `dir`, opened as [`super::read_entry`] opens
    /// one: a regular file of that folder, at most `limit` bytes), mapped,
    /// when its identity is `expected_id` before and after the mapping and
    /// only its owner can shrink it; `None` (the caller copies or reads it
    /// instead) otherwise.
    pub(super) fn load(
        engine: &Engine,
        dir: &Path,
        cwasm: &Path,
        limit: u64,
        expected_id: &str,
    ) -> Option<Component> {
        let (src, meta) = super::open_verified(dir, cwasm, limit, expected_id)?;
        if !only_owner_can_shrink(&meta) {
            return None;
        }
        // The opened file itself, not the path again: nothing can be
        // renamed into its place between the check and the mapping.
        #[cfg(target_os = "linux")]
        let path = format!("/proc/self/fd/{}", src.as_raw_fd());
        #[cfg(not(target_os = "linux"))]
        let path = format!("/dev/fd/{}", src.as_raw_fd());
        // SAFETY: `deserialize_file` trusts its input to be wasmtime's own
        // output for a compatible engine, unchanged while mapped. The file
        // is, byte for byte, the entry whose BLAKE3 was checked when it
        // was written: its identity (device, inode, size, mtime, ctime) is
        // the recorded one, checked again below, and any write or chmod
        // moves the ctime; only its owner or root could shrink it later
        // (see the module doc).
        let component = match unsafe { Component::deserialize_file(engine, &path) } {
            Ok(c) => c,
            Err(e) => {
                tracing::debug!("compile cache entry {}: not mapped: {e}", cwasm.display());
                return None;
            }
        };
        let after = src.metadata().ok()?;
        (super::identity(&after).as_deref() == Some(expected_id)).then_some(component)
    }
}

/// A verified entry mapped from a sealed in-memory copy (Linux).
#[cfg(target_os = "linux")]
mod sealed {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::path::Path;
    use wasmtime::Engine;
    use wasmtime::component::Component;

    /// `cwasm` (an entry of `dir`, opened as [`super::read_entry`] opens
    /// one: a regular file of that folder, at most `limit` bytes) when its
    /// identity is `expected_id` before and after the copy; `None` (the
    /// caller reads it whole instead) on any failure, e.g. no memfd or a
    /// `noexec` one.
    pub(super) fn load(
        engine: &Engine,
        dir: &Path,
        cwasm: &Path,
        limit: u64,
        expected_id: &str,
    ) -> Option<Component> {
        let (mut src, meta) = super::open_verified(dir, cwasm, limit, expected_id)?;
        // SAFETY: memfd_create with a NUL-terminated name; the result is a
        // new descriptor owned here, or -1.
        let fd = unsafe {
            libc::memfd_create(
                c"wasmgate-cwasm".as_ptr(),
                libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
            )
        };
        if fd < 0 {
            return None;
        }
        // SAFETY: `fd` was just created and is owned by nobody else.
        let mut copy = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
        // `io::copy` between files is copy_file_range/sendfile on Linux.
        let copied = std::io::copy(&mut (&mut src).take(meta.len()), &mut copy).ok()?;
        let after = src.metadata().ok()?;
        if copied != meta.len() || super::identity(&after).as_deref() != Some(expected_id) {
            return None;
        }
        let seals =
            libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE | libc::F_SEAL_SEAL;
        // SAFETY: fcntl on a descriptor this function owns.
        if unsafe { libc::fcntl(copy.as_raw_fd(), libc::F_ADD_SEALS, seals) } != 0 {
            return None;
        }
        let path = format!("/proc/self/fd/{}", copy.as_raw_fd());
        // SAFETY: `deserialize_file` trusts its input to be wasmtime's own
        // output for a compatible engine: the copy is, byte for byte, the
        // entry whose BLAKE3 was checked when it was written (its identity —
        // device, inode, size, mtime, ctime — is the recorded one before and
        // after the copy, and any write moves the ctime); sealed, it can no
        // longer change or shrink under the mapping.
        match unsafe { Component::deserialize_file(engine, &path) } {
            Ok(c) => Some(c),
            Err(e) => {
                tracing::debug!(
                    "compile cache entry {}: sealed copy unusable: {e}",
                    cwasm.display()
                );
                None
            }
        }
    }

    use std::io::Read as _;
}

/// One file of an entry, at most `limit` bytes and only a regular file of
/// `dir`: `Ok(None)` when absent; `Err` (with a warning naming the file and
/// the limit) when it is larger or not a regular file.
fn read_entry(dir: &Path, path: &Path, limit: u64) -> Result<Option<Vec<u8>>, ()> {
    let Some(name) = path.file_name() else {
        return Ok(None);
    };
    match crate::manifest::files::read_plugin_file(dir, Path::new(name), limit) {
        Ok(data) => Ok(Some(data)),
        Err(crate::manifest::files::PluginFileError::NotFound) => Ok(None),
        Err(e) => {
            tracing::warn!("compile cache entry {} {e}; recompiling", path.display());
            Err(())
        }
    }
}

fn store(dir: &Path, cwasm: &Path, sum: &Path, component: &Component) -> anyhow::Result<()> {
    create_private_dir(dir)?;
    let data = component.serialize().map_err(|e| anyhow::anyhow!("{e}"))?;
    let digest = blake3::hash(&data).to_hex().to_string();
    // Write beside, then rename, so a reader never sees half an entry; the
    // digest goes last, so an entry without a matching digest is ignored.
    // The identity is taken after the rename (which moves the ctime).
    let tmp = cwasm.with_extension(format!("cwasm.{}.tmp", std::process::id()));
    // A read-only leftover of a process with the same id would refuse the write.
    let _ = std::fs::remove_file(&tmp);
    std::fs::write(&tmp, &data)?;
    // Read-only, so that it can be mapped in place (module `in_place`).
    #[cfg(unix)]
    in_place::make_read_only(&tmp);
    std::fs::rename(&tmp, cwasm)?;
    let id = identity_of(cwasm).unwrap_or_default();
    let tmp = sum.with_extension(format!("blake3.{}.tmp", std::process::id()));
    std::fs::write(&tmp, format!("{digest}\n{id}\n"))?;
    std::fs::rename(&tmp, sum)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The empty component.
    const EMPTY: &[u8] = b"\0asm\x0d\0\x01\0";

    /// A fresh folder holding [`EMPTY`] as `empty.wasm`: the folder (kept
    /// while the test runs), the file, and a cache folder path inside it.
    fn empty_component() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("empty.wasm");
        std::fs::write(&file, EMPTY).unwrap();
        let cache = dir.path().join("cache");
        (dir, file, cache)
    }

    fn source_of(file: &Path) -> Source {
        Source::new(std::fs::File::open(file).unwrap(), EMPTY.len() as u64)
    }

    /// How many mappings of `file` this process holds.
    #[cfg(target_os = "linux")]
    fn mappings_of(file: &Path) -> usize {
        let file = file.to_string_lossy().into_owned();
        std::fs::read_to_string("/proc/self/maps")
            .unwrap()
            .lines()
            .filter(|l| l.ends_with(&file))
            .count()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_read_only_entry_is_mapped_in_place_and_a_writable_one_is_verified_and_made_read_only() {
        use std::os::unix::fs::PermissionsExt;
        let engine = Engine::default();
        let (_dir, file, cache) = empty_component();
        let source = || source_of(&file);
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode();
        let (_first, outcome) = compile(&engine, &mut source(), Some(&cache)).unwrap();
        assert_eq!(outcome, CacheOutcome::Miss);
        assert_eq!(mode(&cache) & 0o777, 0o700, "the cache folder is private");
        let base = entry(&cache, &engine, &source().sha256(&cache).unwrap());
        let cwasm = base.with_extension("cwasm");
        assert_eq!(mode(&cwasm) & 0o222, 0, "an entry is written read-only");
        assert_eq!(mappings_of(&cwasm), 0);

        let (_mapped, outcome) = compile(&engine, &mut source(), Some(&cache)).unwrap();
        assert_eq!(outcome, CacheOutcome::Hit);
        let mapped = mappings_of(&cwasm);
        assert!(mapped > 0, "a read-only entry is mapped in place");

        // Writable, with its identity recorded as it is now (an entry of an
        // older version): read whole and verified, not mapped, then made
        // read-only again.
        std::fs::set_permissions(&cwasm, std::fs::Permissions::from_mode(0o644)).unwrap();
        let sum = base.with_extension("blake3");
        let digest = std::fs::read_to_string(&sum).unwrap();
        let digest = digest.lines().next().unwrap().to_string();
        let id = identity_of(&cwasm).unwrap();
        std::fs::write(&sum, format!("{digest}\n{id}\n")).unwrap();
        let (_read, outcome) = compile(&engine, &mut source(), Some(&cache)).unwrap();
        assert_eq!(outcome, CacheOutcome::Hit);
        assert_eq!(
            mappings_of(&cwasm),
            mapped,
            "a writable entry is not mapped"
        );
        assert_eq!(mode(&cwasm) & 0o222, 0, "and is made read-only");

        let (_again, outcome) = compile(&engine, &mut source(), Some(&cache)).unwrap();
        assert_eq!(outcome, CacheOutcome::Hit);
        assert!(mappings_of(&cwasm) > mapped, "then it is mapped in place");
    }

    #[test]
    fn an_oversized_digest_file_is_not_read_and_the_component_is_recompiled() {
        let engine = Engine::default();
        let (_dir, file, cache) = empty_component();
        let source = || source_of(&file);
        let (_, first) = compile(&engine, &mut source(), Some(&cache)).unwrap();
        assert_eq!(first, CacheOutcome::Miss);
        let (_, again) = compile(&engine, &mut source(), Some(&cache)).unwrap();
        assert_eq!(again, CacheOutcome::Hit);
        let sha = source().sha256(&cache).unwrap();
        let sum = entry(&cache, &engine, &sha).with_extension("blake3");
        std::fs::write(&sum, vec![b'0'; MAX_DIGEST_BYTES as usize + 1]).unwrap();
        let (_, after) = compile(&engine, &mut source(), Some(&cache)).unwrap();
        assert_eq!(after, CacheOutcome::Recompiled);
        // Rewritten: the entry is read again.
        assert!(matches!(
            read_entry(&cache, &sum, MAX_DIGEST_BYTES),
            Ok(Some(_))
        ));
    }
}
