//! The embedding API's error: what stops [`crate::Host::load`],
//! [`crate::gateway::Gateway::start`] and [`crate::gateway::Gateway::refresh`]
//! as a whole. Problems of one plugin or server are never a `HostError`:
//! they are problem lines of the host (`docs/mcp-client.md` §6), and the
//! rest still loads.

/// Why the host could not load at all. Each variant keeps its cause as the
/// error's [`source`](std::error::Error::source); the message itself does
/// not repeat it (print the chain, e.g. with `{:#}` of `anyhow`, to see both).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// wasmtime's engine or its linker could not be set up (an unsupported
    /// CPU or configuration, or a WIT import that does not link).
    #[error("the WebAssembly engine could not start")]
    Engine(#[source] Box<dyn std::error::Error + Send + Sync + 'static>),
    /// The thread that moves guest-call deadlines forward (the epoch ticker,
    /// `docs/security.md`, "Limits") could not start.
    #[error("the guest-deadline thread could not start")]
    Ticker(#[source] std::io::Error),
    /// The blocking task that loads plugins panicked or was cancelled (the
    /// runtime is shutting down).
    #[error("loading plugins stopped")]
    LoadStopped(#[source] tokio::task::JoinError),
}

impl HostError {
    /// An engine or linker error from wasmtime.
    pub(crate) fn engine(e: wasmtime::Error) -> HostError {
        HostError::Engine(e.into())
    }
}
