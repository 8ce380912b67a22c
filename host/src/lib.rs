//! wasmgate — a WebAssembly plugin host for AI agents.
//!
//! Plugins are WebAssembly components (the `wasmgate:plugin@0.1.0` world in
//! `guest-sdk/wit/plugin.wit`). Each exports the MCP servers it brings, the
//! application declaration of each server, and its skills. The host
//! evaluates availability on this machine (or a simulated host), connects
//! only offerable servers, names and registers their tools, and gates skills
//! by `requires_apps`.
//!
//! Data flows one way (`docs/design.md`): plugin component → manifest →
//! declarations (validated) → registry → availability (resolver → platform)
//! → gates → MCP client → tools.
//!
//! # The surface
//!
//! Everything an embedder or a plugin author names is re-exported here, at
//! the crate root, and each item has one documented path:
//!
//! - **Embedding an agent:** [`Host`] (load, [`Host::discover`],
//!   [`Host::offered_tools`], [`Host::call`], [`Host::visible_skills`],
//!   [`Host::status`]) with [`HostOptions`]; the [`gateway`] module's
//!   [`gateway::Gateway`] adds live refresh and change announcements, and
//!   serves MCP to agents (`docs/mcp-client.md` §7). Errors: [`HostError`] (the load as a
//!   whole), [`CallError`], [`ConnectError`]. The MCP client on its own:
//!   [`McpClient`] with [`ClientOptions`]; sampling through a
//!   [`SamplingProvider`] under a server's [`SamplingPolicy`].
//! - **Trust** (`docs/security.md`): [`TrustPolicy`], each plugin's
//!   [`PluginTrust`] and the approved [`LockEntry`] with its [`Surface`].
//! - **The sandbox:** [`PluginRuntime`] with its limits ([`SandboxConfig`],
//!   [`PluginLimits`]; `docs/security.md`, "Limits") and its load errors
//!   ([`PluginLoadError`], [`LoadFailure`], [`CallFailure`]); log lines
//!   through [`RedactingStderr`] so no secret reaches a log.
//! - **The machine:** the [`Platform`] trait, [`RealPlatform`] and
//!   [`SimulatedHost`] (`docs/simulated-host.md`); a running application's
//!   own endpoint ([`Endpoint`], [`Token`]) comes to the MCP client through
//!   an [`AppEndpointSource`], by default [`ServerJsonSource`]
//!   (`docs/declarations.md` §7.5).
//! - **The declaration model** (`docs/declarations.md`): [`Declaration`],
//!   [`AppDef`], [`Location`], [`LocationKind`], [`availability()`] and
//!   its [`Availability`] and [`State`], the validated [`Manifest`] with its
//!   [`ServerSpec`]s, and the validation errors ([`DeclarationError`],
//!   [`ManifestError`]).
//! - **Plugin authors' tests:** [`testing::TestPlugin`] and the version
//!   files of [`fixtures`] (`guest-sdk/README.md`, "Test a plugin").
//!
//! Three modules are part of the surface: [`gateway`] (with
//! [`gateway::http`], the gateway over streamable HTTP), [`testing`] and
//! [`fixtures`]. Every other module is private: its items reach an
//! embedder only through the re-exports below, each by one path.
//!
//! The command line is the `wasmgate` binary; it enters through
//! `run_cli`, hidden from these docs. This workspace's own rule tests and
//! benchmarks see the private modules through the `internals` feature
//! (`docs/design.md` §3, "The library's surface"); it carries no
//! compatibility promise and is never needed to embed wasmgate.

// Every public item is documented (shapes, units, errors, spec source); CI's
// `clippy -D warnings` keeps it so.
#![warn(missing_docs)]
// A type reachable from the surface (a field, a return type, a trait's
// associated type) is re-exported here too, so an embedder can name it;
// CI's clippy of the crate without `internals` keeps it so.
#![warn(unnameable_types)]

/// A module that is private to the library, and public (hidden from the
/// docs) only with the `internals` feature, for this workspace's rule tests
/// and benchmarks. Without the feature nothing outside the crate can name
/// it, so the documented re-exports are the one path to each item, and an
/// item only tests use shows up as dead code.
macro_rules! internal_mod {
    ($($name:ident),* $(,)?) => {$(
        #[cfg(feature = "internals")]
        #[doc(hidden)]
        pub mod $name;
        #[cfg(not(feature = "internals"))]
        mod $name;
    )*};
}

mod error;
pub mod fixtures;
pub mod gateway;
pub mod testing;

internal_mod!(
    availability,
    child_env,
    cli,
    declaration,
    document,
    host,
    manifest,
    mcp,
    naming,
    platform,
    plugin,
    resolver,
    trust,
);
mod endpoint;
mod logging;
mod secret;
mod skills;
mod terminal;
mod validation;

/// The `wasmgate` command line (`wasmgate --help`): parses this process's
/// arguments, runs the command, and returns its exit status. The binary's
/// `main` is this one call; it is no part of the library's surface.
#[doc(hidden)]
pub fn run_cli() -> std::process::ExitCode {
    cli::main()
}

pub use availability::{Availability, State, availability};
pub use declaration::{
    AppDef, Declaration, DeclarationError, GpuVendor, Liveness, Location, LocationKind, OsFamily,
    Presence, Registry, Requires, VersionKind,
};
pub use endpoint::{AppEndpointSource, Endpoint, Token};
pub use error::HostError;
pub use host::{
    AvailabilityLine, Host, HostOptions, HostStatus, PluginRecord, ServerRecord, ServerStatusLine,
    SkillRecord, TrustLine,
};
pub use logging::{EventBuffer, RedactingStderr};
pub use manifest::sampling::{SamplingLogLevel, SamplingPolicy};
pub use manifest::schema::{Manifest, SkillSource};
pub use manifest::{
    EnterpriseIdp, JwtAlgorithm, ManifestError, OAuthConfig, ServerSpec, ToolFilter, Transport,
};
pub use mcp::sampling::{
    SamplingFuture, SamplingMetrics, SamplingProvider, SamplingRequest, SamplingResponse,
};
pub use mcp::upstream::UpstreamSink;
pub use mcp::{
    CallError, CallResult, ClientOptions, Collision, ConnectError, ConnectionState,
    DiscoveryReport, McpClient, ReconnectPolicy, ServerStatus, ToolInfo,
};
pub use platform::{
    DisplayAdapter, FileKind, GpuCache, GpuClass, Hive, Platform, ReadError, ReadSeek,
    RealPlatform, SimulatedHost, SimulatedHostBuilder, SimulatedHostError, UninstallEntry,
};
pub use plugin::{
    CacheOutcome, CallFailure, EffectiveLimits, GuestCall, LoadFailure, LoadedPlugin, PluginLimits,
    PluginLoadError, PluginRuntime, ProbeFailure, ProbeGrant, SandboxConfig, contract,
};
pub use resolver::liveness::ServerJsonSource;
pub use skills::SkillError;
pub use trust::digest::FileRecord;
pub use trust::lock::{LockEntry, ToolPin};
pub use trust::surface::{ServerSurface, SkillSurface, Surface};
pub use trust::{PluginTrust, TrustPolicy, TrustState, TrustStore, WithheldTool};
