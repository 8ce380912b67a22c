//! Write wasmgate plugins in Rust.
//!
//! A plugin is a `cdylib` crate built with
//! `cargo build --target wasm32-wasip2 --release`; the result is a WebAssembly
//! component targeting the `plugin` world of `wasmgate:plugin@0.1.0`
//! (`guest-sdk/wit/plugin.wit`). This crate generates the bindings once, so a plugin
//! author never calls `wit-bindgen`. An author:
//!
//! 1. describes the plugin with the typed builders ([`Manifest`], [`Server`],
//!    [`App`], [`Requires`], [`Skill`] / [`skill!`]);
//! 2. implements [`Plugin`] on a unit struct;
//! 3. calls [`export_plugin!`] once.
//!
//! ```ignore
//! use wasmgate_sdk::{App, Manifest, Plugin, Requires, Server};
//!
//! struct Git;
//!
//! impl Plugin for Git {
//!     fn manifest() -> Manifest {
//!         Manifest::new("git", env!("CARGO_PKG_VERSION"))
//!             .server(
//!                 Server::stdio("git", "${PLUGIN_DIR}/git-mcp-server")
//!                     .app(App::linux().command("git"))
//!                     .requires(Requires::app()),
//!             )
//!             .skill(wasmgate_sdk::skill!("git", "../skills/git/SKILL.md"))
//!     }
//! }
//!
//! wasmgate_sdk::export_plugin!(Git);
//! ```
//!
//! The host validates what [`Plugin::manifest`] returns with the same
//! validator as a `plugin.yaml` (`docs/declarations.md` §2, §2a), so a
//! mistake (a relative path, a kind on the wrong OS) is reported by the host
//! with its field path, e.g. `<where>: app.linux.location[0].name must be a
//! bare name`. The builders keep the shapes right; the host checks the values.
//!
//! A plugin never looks at the machine itself. For a `custom` version source
//! ([`VersionSource::Custom`]) the host calls [`Plugin::probe_version`] after
//! it located a copy, and lends read-only access to that copy's install folder
//! through a [`Grant`] for the length of that one call.

#![warn(missing_docs)]

use std::marker::PhantomData;

// Lets the generated bindings name this crate by its path from inside it.
extern crate self as wasmgate_sdk;

#[doc(hidden)]
pub mod __bindings {
    #![allow(missing_docs)]
    // `wit/` inside this crate: the contract's one source, shipped in the
    // packaged crate (the host builds from a checked copy of it).
    wit_bindgen::generate!({
        path: "wit",
        world: "plugin",
        pub_export_macro: true,
        export_macro_name: "__export_wasmgate_plugin_world",
        default_bindings_module: "::wasmgate_sdk::__bindings",
        runtime_path: "::wasmgate_sdk::__wit_bindgen::rt",
    });
}

#[doc(hidden)]
pub use wit_bindgen as __wit_bindgen;

/// The raw WIT types of `wasmgate:plugin/types@0.1.0`, for authors who want
/// to build records by hand. The builders of this crate produce them.
pub mod wit {
    pub use crate::__bindings::wasmgate::plugin::types::*;
}

mod builders;
mod probe;

pub use builders::{App, Http, Manifest, Requires, Server, ServerJson, Skill, Stdio, Transport};
pub use probe::{DEFAULT_MAX_BYTES, DEFAULT_MAX_ENTRIES, Grant, host_os, log};
pub use wit::{DirEntry, GpuVendor, LogLevel, OsFamily, Presence, ProbeError, VersionSource};

/// What a plugin implements. Both functions run inside the sandbox: no files,
/// network, environment or clock beyond what WASI's std needs.
pub trait Plugin {
    /// Everything the plugin brings: MCP servers with their application
    /// declarations, and skills. Called once per load in a fresh instance,
    /// under the host's epoch deadline and memory cap.
    fn manifest() -> Manifest;

    /// The version of the copy of `server`'s application the host located on
    /// `os`, for an OS block whose version source is
    /// [`VersionSource::Custom`]. `grant` reads the located install folder
    /// (the bundle, or the executable's folder) read-only, only during this
    /// call. `Ok(None)`: no version could be read. `Err`: the probe failed
    /// (the host reports the text). The default reads nothing.
    fn probe_version(server: &str, os: OsFamily, grant: &Grant) -> Result<Option<String>, String> {
        let _ = (server, os, grant);
        Ok(None)
    }
}

#[doc(hidden)]
pub mod __private {
    use super::*;

    /// Glue called by [`export_plugin!`]: builds the manifest and converts it.
    pub fn manifest<P: Plugin>() -> wit::Manifest {
        P::manifest().into_wit()
    }

    /// Glue called by [`export_plugin!`].
    pub fn probe_version<P: Plugin>(
        server: String,
        os: OsFamily,
    ) -> Result<Option<String>, String> {
        let grant = Grant {
            _private: PhantomData,
        };
        P::probe_version(&server, os, &grant)
    }
}

/// Exports a type implementing [`Plugin`] as the component's `plugin` world.
/// Call it once, at the crate root of a `cdylib` plugin crate.
#[macro_export]
macro_rules! export_plugin {
    ($plugin:ty) => {
        const _: () = {
            struct __WasmgatePluginExport;

            impl $crate::__bindings::Guest for __WasmgatePluginExport {
                fn manifest() -> $crate::wit::Manifest {
                    $crate::__private::manifest::<$plugin>()
                }

                fn probe_version(
                    server: ::std::string::String,
                    os: $crate::OsFamily,
                ) -> ::std::result::Result<
                    ::std::option::Option<::std::string::String>,
                    ::std::string::String,
                > {
                    $crate::__private::probe_version::<$plugin>(server, os)
                }
            }

            $crate::__bindings::__export_wasmgate_plugin_world!(
                __WasmgatePluginExport with_types_in $crate::__bindings
            );
        };
    };
}

/// A [`Skill`] whose SKILL.md is embedded from a file at compile time:
/// `skill!("git", "../skills/git/SKILL.md")`. The path is relative to the
/// source file that invokes the macro, as for `include_str!`.
#[macro_export]
macro_rules! skill {
    ($name:expr, $path:expr) => {
        $crate::Skill::new($name, ::std::include_str!($path))
    };
}
