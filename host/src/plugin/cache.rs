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
    if let (Ok(data), Ok(expected)) = (std::fs::read(&cwasm), std::fs::read_to_string(&sum)) {
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
