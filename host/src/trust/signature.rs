//! Optional plugin signatures: a detached minisign signature beside the
//! signed file (`<file>.minisig`), checked against the public keys the
//! user's config trusts for that plugin name:
//!
//! ```yaml
//! plugins:
//!   git:
//!     trusted_keys: ["RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3"]
//! ```
//!
//! The signed file is the component (`git.wasm`), or for a `plugin.yaml`
//! folder its manifest (`plugin.yaml.minisig`). With keys configured,
//! `plugin add` and `plugin approve` refuse a plugin whose signature is
//! missing or does not verify with any of them (`docs/security.md`).

use std::io::Read as _;
use std::path::{Path, PathBuf};

/// Largest `.minisig` read, in bytes (a real one is about 300).
pub const MAX_SIGNATURE_BYTES: u64 = 64 << 10;
/// Largest signed file read, in bytes (1 GiB).
pub const MAX_SIGNED_BYTES: u64 = 1 << 30;

/// The `plugins: <name>: trusted_keys:` list of the config file at
/// `config` (empty when the file, the section or the key is absent). Each
/// entry is a minisign public key: the base64 line, or the whole
/// `minisign.pub` text. Errors (naming the file and field path): the file
/// cannot be read or parsed, the list is not a list of strings, or a key
/// does not decode.
pub fn trusted_keys(config: &Path, plugin: &str) -> Result<Vec<String>, String> {
    match std::fs::symlink_metadata(config) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        _ => {}
    }
    // The config's one reader (bounded, depth-capped, the `plugins:` parser
    // of `crate::manifest::plugins`); signatures fail closed on any problem
    // of the file as a whole or of this plugin's entry.
    let r = crate::manifest::load_config(config);
    let entry = format!("plugins.{plugin}");
    let problems: Vec<String> = r
        .errors
        .iter()
        .filter(|e| {
            e.server.is_none()
                && (e.path.is_empty()
                    || e.path == entry
                    || e.path.starts_with(&format!("{entry}.")))
        })
        .map(ToString::to_string)
        .collect();
    if !problems.is_empty() {
        return Err(problems.join("; "));
    }
    let Some(settings) = r.plugins.get(plugin) else {
        return Ok(Vec::new());
    };
    let field = format!("{entry}.trusted_keys");
    let mut out = Vec::new();
    for (i, k) in settings.trusted_keys.iter().enumerate() {
        public_key(k).map_err(|e| format!("{}: {field}[{i}]: `{k}` {e}", config.display()))?;
        out.push(k.trim().to_owned());
    }
    Ok(out)
}

fn public_key(k: &str) -> Result<minisign_verify::PublicKey, String> {
    let k = k.trim();
    let r = if k.contains('\n') {
        minisign_verify::PublicKey::decode(k)
    } else {
        minisign_verify::PublicKey::from_base64(k)
    };
    r.map_err(|e| format!("is not a minisign public key ({e})"))
}

/// The signature file of `signed`: `<signed>.minisig`.
pub fn signature_path(signed: &Path) -> PathBuf {
    let mut s = signed.as_os_str().to_owned();
    s.push(".minisig");
    PathBuf::from(s)
}

/// Verifies `signed` against `keys` (see [`trusted_keys`]); `Ok` names the
/// key that verified. Errors (one sentence naming the file): no signature
/// file, unreadable, not a minisign signature, or no key verifies it.
pub fn verify(signed: &Path, keys: &[String]) -> Result<String, String> {
    let sig_path = signature_path(signed);
    let sig_text = read_bounded(&sig_path, MAX_SIGNATURE_BYTES).map_err(|e| match e {
        ReadError::Missing => format!(
            "{}: no signature ({} is missing) and the config trusts keys for this plugin",
            signed.display(),
            sig_path.display()
        ),
        ReadError::Other(e) => e,
    })?;
    let sig_text = String::from_utf8(sig_text)
        .map_err(|_| format!("{}: not a minisign signature", sig_path.display()))?;
    let sig = minisign_verify::Signature::decode(&sig_text)
        .map_err(|e| format!("{}: not a minisign signature ({e})", sig_path.display()))?;
    let bytes = read_bounded(signed, MAX_SIGNED_BYTES).map_err(|e| match e {
        ReadError::Missing => format!("{}: no such file", signed.display()),
        ReadError::Other(e) => e,
    })?;
    for k in keys {
        let Ok(pk) = public_key(k) else { continue };
        if pk.verify(&bytes, &sig, false).is_ok() {
            return Ok(k.clone());
        }
    }
    Err(format!(
        "{}: the signature {} does not verify with any trusted key of this plugin \
         (the file was changed after signing, or signed with another key)",
        signed.display(),
        sig_path.display()
    ))
}

enum ReadError {
    Missing,
    Other(String),
}

fn read_bounded(path: &Path, cap: u64) -> Result<Vec<u8>, ReadError> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(ReadError::Missing),
        Err(e) => return Err(ReadError::Other(format!("{}: {e}", path.display()))),
    };
    if !meta.is_file() {
        return Err(ReadError::Other(format!(
            "{}: not a regular file",
            path.display()
        )));
    }
    let f = std::fs::File::open(path)
        .map_err(|e| ReadError::Other(format!("{}: {e}", path.display())))?;
    let mut out = Vec::new();
    f.take(cap + 1)
        .read_to_end(&mut out)
        .map_err(|e| ReadError::Other(format!("{}: {e}", path.display())))?;
    if out.len() as u64 > cap {
        return Err(ReadError::Other(format!(
            "{}: larger than {cap} bytes",
            path.display()
        )));
    }
    Ok(out)
}
