//! Trust: which plugins the user approved, and holding back the rest
//! (`docs/security.md`, "Approval and the lock").
//!
//! A plugin is offered only when the lock ([`lock`]) has an entry for its
//! name whose SHA-256 ([`digest`]) and surface ([`surface`]) match what is
//! on disk now. Otherwise it is *held back*: none of its servers is spawned
//! or contacted and none of its skills is shown; `status` says why and
//! names the command that approves it. Tools of approved plugins are pinned
//! on their first connect; a tool whose description or schema changes
//! afterwards (or a new tool) is withheld until `plugin approve`.
//!
//! [`TrustPolicy::Dev`] (`--dev`, `WASMGATE_DEV=1`) trusts every plugin for
//! one run and reads or writes no pins.

pub mod digest;
pub mod lock;
pub mod signature;
pub mod surface;

use lock::{LockEntry, LockFile, ToolPin};
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Mutex;

/// Environment variable that turns on [`TrustPolicy::Dev`] for the CLI
/// (`1`, `true` or `yes`).
pub const DEV_ENV: &str = "WASMGATE_DEV";

/// The sentence every output carries in development mode.
pub const DEV_NOTICE: &str = "development mode (--dev / WASMGATE_DEV=1): every plugin is trusted without approval for this run";

/// How plugins are trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustPolicy {
    /// Only plugins approved in the lock file at this path run; `None` (no
    /// user config dir) approves nothing.
    Lock(Option<PathBuf>),
    /// Development: every plugin runs, no pins are read or written.
    Dev,
}

impl TrustPolicy {
    /// `TrustPolicy::Lock` at `lock::default_lock_path` — the default
    /// of [`crate::host::HostOptions::new`] and of the CLI.
    pub fn default_lock() -> TrustPolicy {
        TrustPolicy::Lock(lock::default_lock_path())
    }

    /// Whether this is [`TrustPolicy::Dev`].
    pub fn is_dev(&self) -> bool {
        matches!(self, TrustPolicy::Dev)
    }

    /// The lock file, when enforcing one.
    pub fn lock_path(&self) -> Option<&std::path::Path> {
        match self {
            TrustPolicy::Lock(p) => p.as_deref(),
            TrustPolicy::Dev => None,
        }
    }
}

/// Whether `WASMGATE_DEV` asks for development mode.
pub fn dev_from_env() -> bool {
    std::env::var(DEV_ENV)
        .is_ok_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes"))
}

/// A plugin's trust state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TrustState {
    /// In the lock, file and surface match: it runs.
    Approved,
    /// Not in the lock: held back.
    Unapproved,
    /// In the lock, but its file or surface differ: held back.
    Changed,
    /// Development mode: runs unpinned.
    Dev,
}

impl TrustState {
    /// `approved`, `unapproved`, `changed` or `dev`.
    pub fn as_str(self) -> &'static str {
        match self {
            TrustState::Approved => "approved",
            TrustState::Unapproved => "unapproved",
            TrustState::Changed => "changed",
            TrustState::Dev => "dev",
        }
    }

    /// Whether the plugin's servers and skills may be used.
    pub fn runs(self) -> bool {
        matches!(self, TrustState::Approved | TrustState::Dev)
    }
}

/// A plugin's trust, as `status` and `plugin list` show it.
#[derive(Debug, Clone, Serialize)]
pub struct PluginTrust {
    /// The state.
    pub state: TrustState,
    /// The plugin's SHA-256 now (`null` in development mode or when it
    /// could not be computed).
    pub sha256: Option<String>,
    /// What changed since the approval (or why it cannot be pinned), one
    /// sentence each.
    pub changes: Vec<String>,
    /// The command that approves it (`null` when approved).
    pub approve: Option<String>,
}

/// The shell command that approves plugin `name` found in `dir`.
pub fn approve_command(name: &str, dir: Option<&std::path::Path>) -> String {
    match dir {
        Some(d) => format!(
            "wasmgate plugin approve {name} --plugins {}",
            shell_quote(&d.display().to_string())
        ),
        None => format!("wasmgate plugin approve {name}"),
    }
}

fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@+%".contains(c))
    {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The pin of a tool: SHA-256 of its name, description and input schema
/// as canonical JSON (object keys sorted).
pub fn tool_pin(name: &str, description: &str, input_schema: &serde_json::Value) -> ToolPin {
    let doc = serde_json::json!({
        "description": description,
        "input_schema": canonical(input_schema),
        "name": name,
    });
    ToolPin {
        sha256: digest::sha256_hex(canonical(&doc).to_string().as_bytes()),
        description: description.to_owned(),
        schema_sha256: digest::sha256_hex(canonical(input_schema).to_string().as_bytes()),
    }
}

/// The value with every object's keys in sorted order (independent of
/// serde_json's `preserve_order`).
fn canonical(v: &serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let mut out = serde_json::Map::new();
            for k in keys {
                out.insert(k.clone(), canonical(&m[k]));
            }
            serde_json::Value::Object(out)
        }
        serde_json::Value::Array(a) => serde_json::Value::Array(a.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// Why a tool is withheld, as `status` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WithheldTool {
    /// The server's own tool name.
    pub tool: String,
    /// `changed` (description or schema differ from the pin) or `new`
    /// (not pinned).
    pub reason: &'static str,
    /// What changed, one sentence each.
    pub changes: Vec<String>,
    /// The command that approves it.
    pub approve: String,
}

/// Compares a tool with its pin: `None` when it matches.
pub fn tool_changes(
    pin: Option<&ToolPin>,
    now: &ToolPin,
    description: &str,
) -> Option<Vec<String>> {
    let Some(pin) = pin else {
        return Some(vec!["not in the approved tool list (a new tool)".into()]);
    };
    if pin.sha256 == now.sha256 {
        return None;
    }
    let mut out = Vec::new();
    if pin.description != description {
        out.push(format!(
            "description {:?} → {:?}",
            cut(&pin.description),
            cut(description)
        ));
    }
    if pin.schema_sha256 != now.schema_sha256 {
        out.push(format!(
            "input schema changed (sha256 {} → {})",
            &pin.schema_sha256[..12.min(pin.schema_sha256.len())],
            &now.schema_sha256[..12.min(now.schema_sha256.len())]
        ));
    }
    if out.is_empty() {
        out.push("name, description or schema changed".into());
    }
    Some(out)
}

fn cut(s: &str) -> String {
    const MAX: usize = 200;
    let s = crate::secret::redact_patterns(s);
    if s.chars().count() <= MAX {
        return s;
    }
    let mut t: String = s.chars().take(MAX).collect();
    t.push('…');
    t
}

/// The lock as one load read it, shared by the host and its discovery
/// (tool pins written on first connect).
#[derive(Debug)]
pub struct TrustStore {
    /// The lock file.
    pub(crate) path: Option<PathBuf>,
    /// The lock as read (and as updated by this process).
    pub(crate) lock: Mutex<LockFile>,
    /// SHA-256 of the lock file's bytes as read (a change swaps the
    /// gateway's host).
    pub read_sha256: String,
    /// Why the lock could not be read (then nothing is approved).
    pub error: Option<String>,
}

impl TrustStore {
    /// Reads the lock at `path`.
    pub fn open(path: Option<PathBuf>) -> TrustStore {
        let (lock, bytes, error) = match &path {
            None => (
                LockFile::default(),
                Vec::new(),
                Some("no user config dir: no plugin can be approved".to_owned()),
            ),
            Some(p) => match lock::read(p) {
                Ok((l, b)) => (l, b, None),
                Err(e) => (LockFile::default(), Vec::new(), Some(e)),
            },
        };
        TrustStore {
            path,
            lock: Mutex::new(lock),
            read_sha256: digest::sha256_hex(&bytes),
            error,
        }
    }

    /// The entry of `plugin`, cloned.
    pub fn entry(&self, plugin: &str) -> Option<LockEntry> {
        self.lock
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .plugins
            .get(plugin)
            .cloned()
    }

    /// Applies `change` to the file (under its guard) and to this copy.
    /// Errors: the lock cannot be written (the change still holds in this
    /// process).
    pub(crate) fn update(&self, change: impl Fn(&mut LockFile)) -> Result<(), String> {
        change(&mut self.lock.lock().unwrap_or_else(|e| e.into_inner()));
        let Some(path) = &self.path else {
            return Err("no user config dir: the lock cannot be written".into());
        };
        let written = lock::update(path, &change)?;
        *self.lock.lock().unwrap_or_else(|e| e.into_inner()) = written;
        Ok(())
    }
}
