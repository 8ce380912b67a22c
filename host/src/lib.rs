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
//!   whole), [`CallError`], [`ConnectError`].
//! - **The sandbox:** [`PluginHost`] with its limits ([`HostConfig`],
//!   [`PluginLimits`]; `docs/security.md`, "Limits") and its load errors
//!   ([`PluginLoadError`], [`LoadFailure`], [`CallFailure`]); log lines
//!   through [`RedactingStderr`] so no secret reaches a log.
//! - **The machine:** the [`Platform`] trait, [`RealPlatform`] and
//!   [`SimulatedHost`] (`docs/simulated-host.md`); a running application's
//!   own endpoint ([`Endpoint`], [`Token`]) comes to the MCP client through
//!   an [`AppEndpointSource`], by default [`ServerJsonSource`]
//!   (`docs/declarations.md` §7.5).
//! - **The declaration model** (`docs/declarations.md`): [`Declaration`],
//!   [`AppDef`], [`Location`], [`LocationKind`], [`Availability`],
//!   [`State`], [`ServerSpec`] and the validation errors
//!   ([`DeclarationError`], [`ManifestError`]).
//! - **Plugin authors' tests:** [`testing::TestPlugin`] and the version
//!   files of [`fixtures`] (`guest-sdk/README.md`, "Test a plugin").
//!
//! Three modules are part of the surface: [`gateway`], [`testing`] and
//! [`fixtures`].
//!
//! The other modules are this repository's own parts (the `wasmgate`
//! command line, the rule tests, the benchmarks reach into them); they are
//! hidden from the documentation and carry no compatibility promise.

// Every public item is documented (shapes, units, errors, spec source); CI's
// `clippy -D warnings` keeps it so.
#![warn(missing_docs)]

mod error;
pub mod fixtures;
pub mod gateway;
pub mod testing;

// Internals: reachable for the CLI binary, the integration tests and the
// benchmarks of this workspace, not part of the documented surface.
#[doc(hidden)]
pub mod availability;
#[doc(hidden)]
pub mod child_env;
#[doc(hidden)]
pub mod cli;
#[doc(hidden)]
pub mod declaration;
mod endpoint;
#[doc(hidden)]
pub mod host;
mod logging;
#[doc(hidden)]
pub mod manifest;
#[doc(hidden)]
pub mod mcp;
#[doc(hidden)]
pub mod naming;
#[doc(hidden)]
pub mod platform;
#[doc(hidden)]
pub mod plugin;
#[doc(hidden)]
pub mod resolver;
mod secret;
mod skills;
mod terminal;
#[doc(hidden)]
pub mod trust;
mod validation;

pub use availability::{Availability, State};
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
pub use logging::RedactingStderr;
pub use manifest::{
    EnterpriseIdp, JwtAlgorithm, ManifestError, OAuthConfig, ServerSpec, ToolFilter, Transport,
};
pub use mcp::sampling::{SamplingFuture, SamplingProvider, SamplingRequest, SamplingResponse};
pub use mcp::{
    CallError, CallResult, ClientOptions, Collision, ConnectError, ConnectionState,
    DiscoveryReport, ReconnectPolicy, ServerStatus, ToolInfo,
};
pub use platform::{
    DisplayAdapter, FileKind, GpuClass, Hive, Platform, ReadError, ReadSeek, RealPlatform,
    SimulatedHost, SimulatedHostBuilder, SimulatedHostError, UninstallEntry,
};
pub use plugin::{
    CacheOutcome, CallFailure, EffectiveLimits, GuestCall, HostConfig, LoadFailure, LoadedPlugin,
    PluginHost, PluginLimits, PluginLoadError, ProbeFailure, contract,
};
pub use resolver::liveness::ServerJsonSource;
pub use skills::SkillError;
pub use trust::lock::{LockEntry, ToolPin};
pub use trust::{TrustPolicy, TrustStore, WithheldTool};
