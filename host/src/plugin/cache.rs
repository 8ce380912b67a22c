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
//! not read at all, and the entry is read (bounded, never mapped: a mapped
//! file truncated by another process would kill the host with SIGBUS) and
//! deserialized without its BLAKE3. Writing a file moves its ctime, which no
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

fn identity_of(path: &Path) -> Option<String> {
    std::fs::symlink_metadata(path)
        .ok()
        .filter(|m| m.is_file())
        .and_then(|m| identity(&m))
}

fn write_atomically(dir: &Path, to: &Path, data: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
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
            // Never mapped in place: a mapped entry that another process
            // truncates while it is in use kills this one with SIGBUS. On
            // Linux the entry is copied in the kernel into a sealed memfd
            // (nobody can shrink it) and mapped from there, lazily: the
            // fast path of a large component (docs/performance.md).
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
                            // Verified in full: remember its identity now.
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
        let (mut src, _) =
            crate::manifest::files::open_plugin_file(dir, Path::new(cwasm.file_name()?), limit)
                .ok()?;
        let meta = src.metadata().ok()?;
        if super::identity(&meta).as_deref() != Some(expected_id) {
            return None;
        }
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
    std::fs::create_dir_all(dir)?;
    let data = component.serialize().map_err(|e| anyhow::anyhow!("{e}"))?;
    let digest = blake3::hash(&data).to_hex().to_string();
    // Write beside, then rename, so a reader never sees half an entry; the
    // digest goes last, so an entry without a matching digest is ignored.
    // The identity is taken after the rename (which moves the ctime).
    let tmp = cwasm.with_extension(format!("cwasm.{}.tmp", std::process::id()));
    std::fs::write(&tmp, &data)?;
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

    #[test]
    fn an_oversized_digest_file_is_not_read_and_the_component_is_recompiled() {
        let engine = Engine::default();
        // The empty component.
        let bytes = b"\0asm\x0d\0\x01\0";
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("empty.wasm");
        std::fs::write(&file, bytes).unwrap();
        let source = || Source::new(std::fs::File::open(&file).unwrap(), bytes.len() as u64);
        let cache = dir.path().join("cache");
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
