//! Version 0.1.0 of the contract: the bindings wasmtime generates from
//! `host/wit/since_v0.1.0/plugin.wit` (a byte-for-byte copy of the SDK's
//! `guest-sdk/wit/plugin.wit` while 0.1 is the latest;
//! `tests/tests/packaging.rs` fails when they differ) and the oldest
//! version whose components these bindings serve.
#![allow(missing_docs)]

wasmtime::component::bindgen!({
    path: "wit/since_v0.1.0",
    world: "plugin",
});

/// The WIT the bindings above are generated from: the world a component's
/// imports are checked against ([`super::World`]).
pub(crate) const WIT: &str = include_str!("../../../wit/since_v0.1.0/plugin.wit");

/// The oldest contract version these bindings serve (a 0.x minor is one
/// semver series: 0.1.0 up to the next minor).
pub(crate) const MIN_VERSION: semver::Version = semver::Version::new(0, 1, 0);
