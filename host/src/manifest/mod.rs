//! Plugin manifests: `plugin.yaml`, Hermes-style `plugin.json`, and the
//! manifest a component exports, all validated by one validator
//! (`docs/declarations.md` §2a), plus config files' `mcp_servers`
//! (`docs/mcp-client.md` §1).

pub mod agents;
pub mod depth;
pub mod files;
pub mod load;
mod num;
pub mod output;
pub mod plugins;
pub mod sampling;
pub mod schema;
pub mod server;

pub use files::{PluginFileError, read_plugin_file};
pub use load::{
    load_config, load_config_in, load_config_with, load_plugin_json, load_plugin_json_with,
    load_plugin_yaml, load_plugin_yaml_with, manifest_file,
};
pub use plugins::{PluginSettings, PluginsConfig, plugins_from_value};
pub use sampling::{SamplingLogLevel, SamplingPolicy};
pub use schema::{
    EnvAccess, Manifest, ManifestContext, ManifestError, ManifestResult, ServersResult,
    SkillSource, manifest_from_value, merge_servers, server_from_value, servers_from_value,
};
pub use server::{EnterpriseIdp, JwtAlgorithm, OAuthConfig, ServerSpec, ToolFilter, Transport};
