//! The on-disk compile cache (`docs/security.md`, "Compile cache"): a compiled component
//! is stored as `<sha256 of the component>-<engine hash>.cwasm`, with the
//! BLAKE3 digest of that file in `<same>.blake3`. An entry is used only
//! when the file's digest matches; a truncated or corrupted entry is
//! recompiled and rewritten, never loaded. The digest guards against damage,
//! not against someone who can write the cache folder: keep it private to
//! the user. The entry check uses BLAKE3 rather than SHA-256 because it runs
//! over the whole compiled image (3–4× the component) on every cached load,
//! and BLAKE3 is several times faster here (`docs/performance.md`).

use sha2::{Digest, Sha256};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use wasmtime::Engine;
use wasmtime::component::Component;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The cache entry path (without extension) for `component` on `engine`.
fn entry(dir: &Path, engine: &Engine, component: &[u8]) -> PathBuf {
    let mut h = DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut h);
    dir.join(format!(
        "{}-{:016x}",
        hex(&Sha256::digest(component)),
        h.finish()
    ))
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

/// Compiles `bytes`, or loads the verified cached compilation from `dir`.
pub(crate) fn compile(
    engine: &Engine,
    bytes: &[u8],
    dir: Option<&Path>,
) -> wasmtime::Result<(Component, CacheOutcome)> {
    let Some(dir) = dir else {
        return Ok((Component::new(engine, bytes)?, CacheOutcome::Disabled));
    };
    let base = entry(dir, engine, bytes);
    let cwasm = base.with_extension("cwasm");
    let sum = base.with_extension("blake3");
    let mut outcome = CacheOutcome::Miss;
    // Bounded reads (docs/security.md, "MCP client bounds"): a compiled
    // image is a few times its component; a digest is 64 hex digits.
    let image_limit = (bytes.len() as u64).saturating_mul(16).max(MIN_IMAGE_LIMIT);
    let (image, digest) = (
        read_entry(dir, &cwasm, image_limit),
        read_entry(dir, &sum, MAX_DIGEST_BYTES),
    );
    if image.is_err() || digest.is_err() {
        outcome = CacheOutcome::Recompiled;
    }
    if let (Ok(Some(data)), Ok(Some(expected))) = (image, digest) {
        let expected = String::from_utf8_lossy(&expected);
        if blake3::hash(&data).to_hex().as_str() == expected.trim() {
            // SAFETY: `deserialize` trusts its input to be wasmtime's own
            // output for a compatible engine. The entry was written by
            // `Component::serialize` below for this engine (its
            // compatibility hash is in the name) and its bytes match the
            // digest recorded beside it.
            match unsafe { Component::deserialize(engine, &data) } {
                Ok(c) => return Ok((c, CacheOutcome::Hit)),
                Err(e) => tracing::warn!("compile cache entry {} unusable: {e}", cwasm.display()),
            }
        } else {
            tracing::warn!(
                "compile cache entry {} does not match its digest; recompiling",
                cwasm.display()
            );
        }
        outcome = CacheOutcome::Recompiled;
    }
    let component = Component::new(engine, bytes)?;
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
    let tmp = cwasm.with_extension(format!("cwasm.{}.tmp", std::process::id()));
    std::fs::write(&tmp, &data)?;
    std::fs::rename(&tmp, cwasm)?;
    let tmp = sum.with_extension(format!("blake3.{}.tmp", std::process::id()));
    std::fs::write(&tmp, digest)?;
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
        let (_, first) = compile(&engine, bytes, Some(dir.path())).unwrap();
        assert_eq!(first, CacheOutcome::Miss);
        let (_, again) = compile(&engine, bytes, Some(dir.path())).unwrap();
        assert_eq!(again, CacheOutcome::Hit);
        let sum = entry(dir.path(), &engine, bytes).with_extension("blake3");
        std::fs::write(&sum, vec![b'0'; MAX_DIGEST_BYTES as usize + 1]).unwrap();
        let (_, after) = compile(&engine, bytes, Some(dir.path())).unwrap();
        assert_eq!(after, CacheOutcome::Recompiled);
        // Rewritten: the entry is read again.
        assert!(matches!(
            read_entry(dir.path(), &sum, MAX_DIGEST_BYTES),
            Ok(Some(_))
        ));
    }
}
