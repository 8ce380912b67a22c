//! Why a component did not load or a guest call failed: the errors of
//! [`super::PluginRuntime`] (`docs/security.md`, "Sandbox and limits").

use super::contract::{contract, contract_package};
use std::path::PathBuf;

/// Which guest call failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GuestCall {
    /// `manifest()` (instantiation included).
    #[error("manifest()")]
    Manifest,
    /// `probe-version` (instantiation included).
    #[error("probe-version()")]
    ProbeVersion,
}

/// Why a guest call failed: which limit, or which trap. Displays as the
/// words that follow the call's name (`timed out: ran past its 2000 ms
/// deadline`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CallFailure {
    /// The epoch deadline passed (`deadline_ms`).
    #[error("timed out: ran past its {deadline_ms} ms deadline")]
    Timeout {
        /// The deadline, in milliseconds.
        deadline_ms: u64,
    },
    /// Linear memory (or a table) would have grown past the cap.
    #[error("hit the memory limit: tried to grow past {} MiB", .limit_bytes >> 20)]
    MemoryLimit {
        /// The cap, in bytes.
        limit_bytes: usize,
    },
    /// The guest's wasm stack was exhausted (deep recursion).
    #[error("overflowed its stack")]
    StackOverflow,
    /// The guest passed more data across the boundary in one call than
    /// [`SandboxConfig::hostcall_bytes`](super::SandboxConfig::hostcall_bytes) allows.
    #[error(
        "hit the host-call data limit: passed more than {limit_bytes} bytes to the host in one call"
    )]
    HostcallData {
        /// The cap, in bytes.
        limit_bytes: usize,
    },
    /// Any other trap (a panic in the guest, `unreachable`, …).
    #[error("trapped: {0}")]
    Trap(String),
}

/// Why a `.wasm` file did not become a [`LoadedPlugin`](super::LoadedPlugin).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LoadFailure {
    /// The file or folder could not be read.
    #[error("cannot read: {0}")]
    Io(String),
    /// The `.wasm` entry is not a regular file inside its plugin folder (a
    /// link out of it, a FIFO, a device); `docs/security.md`, "What a
    /// plugin's manifest may reach". The reason, as a sentence.
    #[error("{0}")]
    Refused(String),
    /// Zero bytes.
    #[error("empty file (0 bytes); expected a WebAssembly component")]
    Empty,
    /// Larger than [`SandboxConfig::max_component_bytes`](super::SandboxConfig::max_component_bytes).
    #[error("file is {size} bytes, over the {limit} byte limit")]
    TooLarge {
        /// File size in bytes.
        size: u64,
        /// The cap in bytes.
        limit: u64,
    },
    /// Not WebAssembly at all (no `\0asm` header).
    #[error("not a WebAssembly file (no `\\0asm` header); expected a component")]
    NotWasm,
    /// A core WebAssembly module, not a component.
    #[error(
        "a core WebAssembly module, not a component; build the plugin with \
         `cargo build --target wasm32-wasip2` (the SDK makes a component)"
    )]
    CoreModule,
    /// A component wasmtime could not compile or validate.
    #[error("invalid component: {0}")]
    Invalid(String),
    /// Built against another version of the contract.
    #[error(
        "built against {}@{found}; this host supports {}",
        contract_package(),
        contract()
    )]
    ContractVersion {
        /// The version the component imports, e.g. `0.2.0`.
        found: String,
    },
    /// Imports something outside the `plugin` world and WASI.
    #[error(
        "imports `{0}`, which is outside the {world} world (only its `host` \
         interface and WASI are provided)",
        world = contract()
    )]
    UnsupportedImport(String),
    /// Does not export the `plugin` world's functions with their types, or
    /// imports a WASI interface the host does not link.
    #[error("does not fit the {world} world: {0}", world = contract())]
    Link(String),
    /// A guest call trapped or hit a limit.
    #[error("{call} {failure}")]
    Call {
        /// Which call.
        call: GuestCall,
        /// Why.
        failure: CallFailure,
    },
    /// The manifest it returned cannot be used (too large, duplicates).
    #[error("unusable manifest: {0}")]
    Manifest(String),
}

/// A `.wasm` file (or plugin folder) that failed to load, with the reason.
/// Displays as `<file>: <reason>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {reason}", .file.display())]
pub struct PluginLoadError {
    /// The file (or folder) that failed.
    pub file: PathBuf,
    /// Why (shown in the message, so not also given as its source).
    pub reason: LoadFailure,
}

/// A failed `probe-version` call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeFailure {
    /// The probe trapped or hit a limit.
    #[error("{call} {0}", call = GuestCall::ProbeVersion)]
    Call(CallFailure),
    /// The probe returned an error string.
    #[error("{call} failed: {0}", call = GuestCall::ProbeVersion)]
    Probe(String),
}
