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
mod yaml_events;
pub mod schema;
pub mod server;

pub use files::PluginFileError;
pub use load::{
    load_config, load_plugin_json, load_plugin_json_with, load_plugin_yaml, load_plugin_yaml_with,
    manifest_file,
};
// Reached through these paths by the rule tests only.
#[cfg(any(test, feature = "internals"))]
pub use load::{load_config_in, load_config_with};
pub use plugins::PluginsConfig;
#[cfg(any(test, feature = "internals"))]
pub use plugins::plugins_from_value;
pub use sampling::SamplingPolicy;
#[cfg(any(test, feature = "internals"))]
pub use sampling::SamplingLogLevel;
pub use schema::{
    Manifest, ManifestContext, ManifestError, ManifestResult, SkillSource, manifest_from_value,
    merge_servers, servers_from_value,
};
#[cfg(any(test, feature = "internals"))]
pub use schema::ServersResult;
pub use server::{EnterpriseIdp, JwtAlgorithm, OAuthConfig, ServerSpec, ToolFilter, Transport};
