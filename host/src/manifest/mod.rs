//! Plugin manifests: `plugin.yaml`, Hermes-style `plugin.json`, and the
//! manifest a component exports, all validated by one validator
//! (`spec/declarations.md` §2a).

pub mod server;

pub use server::{ServerSpec, ToolFilter, Transport};
