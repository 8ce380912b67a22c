//! wasmgate — a WebAssembly plugin host for AI agents.
//!
//! Plugins are WebAssembly components (the `wasmgate:plugin@0.1.0` world in
//! `guest-sdk/wit/plugin.wit`). Each exports the MCP servers it brings, the application
//! declaration of each server, and its skills. The host evaluates availability
//! on this machine (or a simulated host), connects only offerable servers,
//! names and registers their tools, and gates skills by `requires_apps`.
//!
//! Data flows one way (`docs/design.md`): plugin component → manifest →
//! declarations (validated) → registry → availability (resolver → platform)
//! → gates → MCP client → tools.

// Every public item is documented (shapes, units, errors, spec source); CI's
// `clippy -D warnings` keeps it so.
#![warn(missing_docs)]

pub mod availability;
pub mod cli;
pub mod declaration;
mod error;
pub mod fixtures;
pub mod gateway;
pub mod host;
pub mod logging;
pub mod manifest;
pub mod mcp;
pub mod platform;
pub mod plugin;
pub mod resolver;
pub mod skills;
pub mod terminal;
pub mod testing;
pub mod trust;

pub use error::HostError;
