//! Plugin manifests: `plugin.yaml`, Hermes-style `plugin.json`, and the
//! manifest a component exports, all validated by one validator
//! (`spec/declarations.md` §2a), plus config files' `mcp_servers`
//! (`spec/mcp-client.md` §1).

pub mod depth;
pub mod load;
mod num;
pub mod output;
pub mod sampling;
pub mod schema;
pub mod server;

pub use load::{
    load_config, load_config_with, load_plugin_json, load_plugin_json_with, load_plugin_yaml,
    load_plugin_yaml_with, manifest_file,
};
pub use sampling::{SamplingLogLevel, SamplingPolicy};
pub use schema::{
    Manifest, ManifestContext, ManifestError, ManifestResult, ServersResult, SkillSource,
    manifest_from_value, merge_servers, server_from_value, servers_from_value,
};
pub use server::{ServerSpec, ToolFilter, Transport};
