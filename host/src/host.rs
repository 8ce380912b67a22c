//! The native host: the one place where the pieces meet, in the order of
//! `docs/design.md`'s data flow — plugin components and `plugin.yaml` folders →
//! manifests (validated) → registry → availability → gates → MCP client
//! connects only offerable servers → tools and skills for the agent.
//!
//! [`Host`] is also the Rust embedding API: load, [`Host::discover`],
//! [`Host::offered_tools`], [`Host::visible_skills`], [`Host::call`],
//! [`Host::status`], [`Host::shutdown`]; [`Host::load_next`] loads again
//! keeping the sessions of servers that did not change.

pub(crate) mod probe;

use crate::availability::{self, Availability};
use crate::declaration::{OsFamily, Registry};
use crate::manifest::{self, ManifestContext, ManifestResult, ServerSpec, SkillSource, Transport};
use crate::mcp::{
    self, CallError, CallResult, ClientOptions, ConnectionState, McpClient, ToolInfo,
};
use crate::platform::{GpuClass, Platform, RealPlatform, gpu_class};
use crate::plugin::{HostConfig, LoadedPlugin, PluginHost};
use crate::skills::{self, SkillGate};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What to load. Build with [`HostOptions::new`] and set fields.
#[derive(Clone)]
pub struct HostOptions {
    /// Plugin folders: `*.wasm` components directly inside or one level
    /// down, and subfolders (or the folder itself) holding a `plugin.yaml`.
    pub plugin_dirs: Vec<PathBuf>,
    /// A YAML config file with `mcp_servers:` (`docs/mcp-client.md` §1).
    pub config: Option<PathBuf>,
    /// The machine (or simulated host) availability is evaluated on.
    pub platform: Arc<dyn Platform>,
    /// Sandbox limits for components (`docs/security.md`).
    pub sandbox: HostConfig,
    /// MCP client options (reconnect policy).
    pub client: ClientOptions,
}

impl HostOptions {
    /// Options for this machine with default limits, no plugins, no config.
    pub fn new() -> HostOptions {
        HostOptions {
            plugin_dirs: Vec::new(),
            config: None,
            platform: Arc::new(RealPlatform::new()),
            sandbox: HostConfig::default(),
            client: ClientOptions::default(),
        }
    }
}

impl Default for HostOptions {
    fn default() -> Self {
        HostOptions::new()
    }
}

/// One loaded plugin, as `status` reports it.
#[derive(Debug, Clone, Serialize)]
pub struct PluginRecord {
    /// Plugin name (from its manifest).
    pub name: String,
    /// Plugin version.
    pub version: String,
    /// The `.wasm` component, `plugin.yaml` or `plugin.json` it came from.
    pub file: PathBuf,
    /// `component`, `yaml` or `json` (the Hermes `plugin.json` envelope).
    pub kind: &'static str,
    /// Its servers' names, in manifest order (valid ones only).
    pub servers: Vec<String>,
}

/// One skill and the skill gate's decision.
#[derive(Debug, Clone, Serialize)]
pub struct SkillRecord {
    /// Plugin that brought it.
    pub plugin: String,
    /// Skill name.
    pub name: String,
    /// `description` from its front matter.
    pub description: Option<String>,
    /// `requires_apps` from its front matter.
    pub requires_apps: Vec<String>,
    /// Shown to the agent now.
    pub visible: bool,
    /// Why it is hidden (one sentence per failing name), empty when visible.
    pub hidden_because: Vec<String>,
    /// The whole SKILL.md text.
    #[serde(skip)]
    pub markdown: String,
}

/// One configured server with its availability.
#[derive(Debug, Clone)]
pub struct ServerRecord {
    /// The validated entry.
    pub spec: ServerSpec,
    /// `None` when the server has no declaration (always offerable).
    pub availability: Option<Availability>,
    /// The user-facing sentence when not offerable.
    pub message: Option<String>,
}

impl ServerRecord {
    /// The MCP gate's availability half: no declaration, or an offerable one.
    pub fn offerable(&self) -> bool {
        self.availability
            .as_ref()
            .is_none_or(Availability::offerable)
    }
}

/// The host. See the module docs.
pub struct Host {
    platform: Arc<dyn Platform>,
    plugins: Vec<PluginRecord>,
    servers: Vec<ServerRecord>,
    skills: Vec<SkillRecord>,
    problems: Vec<String>,
    warnings: Vec<String>,
    registry: Registry,
    client: McpClient,
    gpu: GpuClass,
    // Kept for custom version probes: the engine and each component
    // plugin's `InstancePre`, by plugin name.
    _components: Option<probe::Components>,
    /// Servers whose spec is unchanged but whose availability changed since
    /// the host this one was loaded after ([`Host::load_next`]); the next
    /// discovery restarts them once.
    restart: std::sync::Mutex<Vec<String>>,
    /// Servers whose declaration is not offerable.
    gated: Vec<String>,
    /// Every configured server entry as `(plugin, name)` in configured order
    /// (config file, then each plugin), the invalid ones included.
    order: Vec<(Option<String>, String)>,
    /// Server entries that are not registered (invalid, or left out for a
    /// name clash), with each of their problems.
    invalid: Vec<InvalidServer>,
}

/// A configured server entry that is not registered: invalid, or left out
/// for a name clash. `status` lists it in place with state `invalid`.
#[derive(Debug, Clone)]
struct InvalidServer {
    plugin: Option<String>,
    name: String,
    problems: Vec<String>,
}

/// The problems of `name` among `errors`, as `status` prints them.
fn problems_of(errors: &[manifest::ManifestError], name: &str) -> Vec<String> {
    errors
        .iter()
        .filter(|e| e.server.as_deref() == Some(name))
        .map(ToString::to_string)
        .collect()
}

impl Host {
    /// Loads every plugin folder and the config, validates manifests,
    /// registers declarations and evaluates availability. Never connects.
    ///
    /// Problems with one plugin or server (a file that is not a component, a
    /// trap, a bad declaration, a duplicate server name) are collected in
    /// [`Host::problems`] as `<where>: <field path> …` lines and everything
    /// else still loads. Errors: only when the component engine cannot start.
    pub fn load(options: HostOptions) -> anyhow::Result<Host> {
        let client = McpClient::with_options(ClientOptions {
            // The app-endpoint transport reads server_json on the machine
            // availability was evaluated on.
            platform: options
                .client
                .platform
                .clone()
                .or(Some(options.platform.clone())),
            ..options.client.clone()
        });
        Host::load_with(options, client)
    }

    /// Loads again after `previous` (a refresh, `docs/mcp-client.md` §7),
    /// sharing its MCP client: the next [`Host::discover`] keeps the live
    /// session (the same process) of every server whose spec and
    /// availability did not change, connects new and changed ones, and
    /// closes the sessions of servers that are gone or no longer offerable.
    /// `options.client` is not used (the shared client keeps its own). Do
    /// not call [`Host::shutdown`] on `previous` afterwards: it would end
    /// the shared sessions. Errors: as [`Host::load`].
    pub fn load_next(options: HostOptions, previous: &Host) -> anyhow::Result<Host> {
        let host = Host::load_with(options, previous.client.clone())?;
        // Same spec, different availability (a new version or path of the
        // application): the running server may front the old copy.
        let restart: Vec<String> = host
            .servers
            .iter()
            .filter(|s| {
                previous.server(&s.spec.name).is_some_and(|p| {
                    p.spec == s.spec && p.offerable() && p.availability != s.availability
                })
            })
            .map(|s| s.spec.name.clone())
            .collect();
        *host.restart.lock().unwrap_or_else(|e| e.into_inner()) = restart;
        Ok(host)
    }

    fn load_with(options: HostOptions, client: McpClient) -> anyhow::Result<Host> {
        let platform = options.platform.clone();
        let mut problems = Vec::new();
        let mut warnings = Vec::new();
        let mut plugins = Vec::new();
        let mut plugin_servers = Vec::new();
        let mut skill_sources: Vec<(String, SkillSource)> = Vec::new();

        // Config servers come first: they keep their names on a clash.
        let mut config_servers = Vec::new();
        // The user's grants to plugins (`plugins:` of the config).
        let mut grants = Arc::new(manifest::PluginsConfig::default());
        // Every name the config gives a server, valid or not: their tool
        // namespaces are kept from plugins (`crate::mcp::naming`).
        let mut reserved: Vec<String> = Vec::new();
        let mut order: Vec<(Option<String>, String)> = Vec::new();
        let mut invalid: Vec<InvalidServer> = Vec::new();
        if let Some(path) = &options.config {
            let r = manifest::load_config(path);
            for name in &r.order {
                order.push((None, name.clone()));
                if !r.servers.iter().any(|s| &s.name == name) {
                    invalid.push(InvalidServer {
                        plugin: None,
                        name: name.clone(),
                        problems: problems_of(&r.errors, name),
                    });
                }
            }
            problems.extend(r.errors.iter().map(ToString::to_string));
            warnings.extend(r.warnings);
            reserved.extend(r.errors.iter().filter_map(|e| e.server.clone()));
            reserved.extend(r.servers.iter().map(|s| s.name.clone()));
            grants = Arc::new(r.plugins);
            config_servers = r.servers;
        }
        client.reserve_namespaces(reserved);

        let (wasm_dirs, manifest_files) = scan_plugin_dirs(&options.plugin_dirs, &mut problems);
        let mut components = None;
        if wasm_dirs_have_components(&wasm_dirs) {
            let sandbox = HostConfig {
                os: platform.os_family(),
                ..options.sandbox.clone()
            };
            let plugin_host = PluginHost::new(sandbox)?;
            let mut accepted = Vec::new();
            for loaded in plugin_host.load_dirs(&wasm_dirs) {
                match loaded {
                    Ok(p) => {
                        let r = validate_component_with(&p, grants.clone());
                        let before = plugins.len();
                        accept(
                            r,
                            &p.file,
                            "component",
                            &mut plugins,
                            &mut plugin_servers,
                            &mut skill_sources,
                            &mut problems,
                            &mut warnings,
                            (&mut order, &mut invalid),
                        );
                        if plugins.len() > before {
                            accepted.push(p);
                        }
                    }
                    Err(e) => problems.push(e.to_string()),
                }
            }
            components = Some(probe::Components::new(plugin_host, accepted));
        }
        for file in manifest_files {
            let is_json = file.extension().is_some_and(|x| x == "json");
            let ctx = ManifestContext::for_plugin(
                file.display().to_string(),
                manifest::schema::plugin_dir_of(&file),
                grants.clone(),
            );
            let r = if is_json {
                manifest::load_plugin_json_with(&file, &ctx)
            } else {
                manifest::load_plugin_yaml_with(&file, &ctx)
            };
            accept(
                r,
                &file,
                if is_json { "json" } else { "yaml" },
                &mut plugins,
                &mut plugin_servers,
                &mut skill_sources,
                &mut problems,
                &mut warnings,
                (&mut order, &mut invalid),
            );
        }

        let offered: Vec<(Option<String>, String)> = plugin_servers
            .iter()
            .map(|s| (s.plugin.clone(), s.name.clone()))
            .collect();
        let (specs, clashes) = manifest::merge_servers(config_servers, plugin_servers);
        // Plugin servers left out for a name clash are listed as invalid.
        for (plugin, name) in offered {
            let kept = specs.iter().any(|s| s.name == name && s.plugin == plugin);
            if !kept && let Some(p) = &plugin {
                let by = format!("plugin '{p}' server '{name}'");
                invalid.push(InvalidServer {
                    plugin: plugin.clone(),
                    name: name.clone(),
                    problems: clashes
                        .iter()
                        .filter(|e| e.where_ == by)
                        .map(ToString::to_string)
                        .collect(),
                });
            }
        }
        problems.extend(clashes.iter().map(ToString::to_string));

        let registry = Registry::new();
        let servers: Vec<ServerRecord> = specs
            .into_iter()
            .map(|spec| {
                let (availability, message) = match &spec.declaration {
                    Some(decl) => {
                        registry.register(&spec.name, decl.clone());
                        let a = probe::availability(
                            decl,
                            &spec,
                            platform.as_ref(),
                            components.as_ref(),
                            &mut warnings,
                        );
                        let m = availability::message(decl, &a);
                        (Some(a), m)
                    }
                    None => (None, None),
                };
                ServerRecord {
                    spec,
                    availability,
                    message,
                }
            })
            .collect();

        let skills = gate_skills(skill_sources, &servers, &registry, &mut problems);
        let gpu = gpu_class(platform.as_ref());
        let gated = servers
            .iter()
            .filter(|s| !s.offerable())
            .map(|s| s.spec.name.clone())
            .collect();
        Ok(Host {
            platform,
            plugins,
            servers,
            skills,
            problems,
            warnings,
            registry,
            client,
            gpu,
            _components: components,
            restart: std::sync::Mutex::new(Vec::new()),
            gated,
            order,
            invalid,
        })
    }

    /// Connects every enabled server whose declaration is offerable (in
    /// parallel, each under its own `connect_timeout`); servers that are not
    /// offerable are never spawned. Idempotent: connected servers are kept,
    /// failed ones are retried.
    pub async fn discover(&self) -> mcp::DiscoveryReport {
        self.discover_only(|_| true).await
    }

    /// [`Host::discover`] limited to the servers `wanted` selects (the CLI's
    /// `call` connects only the server that owns the tool).
    pub async fn discover_only(
        &self,
        wanted: impl Fn(&ServerSpec) -> bool,
    ) -> mcp::DiscoveryReport {
        let specs: Vec<ServerSpec> = self
            .servers
            .iter()
            .filter(|s| wanted(&s.spec))
            .map(|s| s.spec.clone())
            .collect();
        if specs.is_empty() && !self.servers.is_empty() {
            // The filter selected nothing (e.g. `call` of an unknown tool):
            // not the "no servers configured" situation.
            return mcp::DiscoveryReport::default();
        }
        let offerable =
            |spec: &ServerSpec| self.server(&spec.name).is_some_and(ServerRecord::offerable);
        let restart = std::mem::take(&mut *self.restart.lock().unwrap_or_else(|e| e.into_inner()));
        if !restart.is_empty() {
            // A pass that leaves them out closes their sessions; the pass
            // below connects them afresh.
            tracing::info!(servers = ?restart, "availability changed; restarting these servers");
            self.client
                .connect_all(&specs, |spec| {
                    !restart.contains(&spec.name) && offerable(spec)
                })
                .await;
        }
        self.client.connect_all(&specs, offerable).await
    }

    /// The tools offered now: tools of connected servers whose declaration is
    /// offerable (the MCP gate, `docs/declarations.md` §8).
    pub fn offered_tools(&self) -> Vec<ToolInfo> {
        self.client
            .tools()
            .into_iter()
            .filter(|t| self.server(&t.server).is_some_and(ServerRecord::offerable))
            .collect()
    }

    /// A registered tool by name (offerable or not; [`Host::call`] refuses
    /// gated ones), for the name of the server that owns it.
    pub fn tool(&self, name: &str) -> Option<ToolInfo> {
        self.client.tool(name)
    }

    /// Waits until the registered tools may have changed
    /// ([`mcp::McpClient::tools_changed`]); hosts loaded with
    /// [`Host::load_next`] share the signal with the host they follow.
    pub fn tools_changed(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let client = self.client.clone();
        async move { client.tools_changed().await }
    }

    /// Whether a server that is still connecting may own the tool name
    /// `name` (its prefix; the gateway waits for such a server during its
    /// first discovery).
    pub fn connecting_may_own(&self, name: &str) -> bool {
        self.client.status().iter().any(|s| {
            s.state == ConnectionState::Connecting && mcp::naming::may_own_tool(&s.name, name)
        })
    }

    /// Calls an offered tool by its registered name (`mcp_<server>_<tool>`)
    /// with JSON object arguments. Errors: [`CallError`] (unknown tool, not
    /// connected, timeout after the server's `timeout` seconds, transport).
    pub async fn call(&self, name: &str, args: serde_json::Value) -> Result<CallResult, CallError> {
        // The gate check needs the tool's server (a copy of its record);
        // only a tool whose name a gated server may own needs it — the
        // gateway's hot path usually skips it.
        if self
            .gated
            .iter()
            .any(|server| mcp::naming::may_own_tool(server, name))
            && let Some(t) = self.client.tool(name)
            && !self.server(&t.server).is_some_and(ServerRecord::offerable)
        {
            return Err(CallError::NotConnected {
                server: t.server,
                state: ConnectionState::Gated,
            });
        }
        self.client.call(name, args).await
    }

    /// Every skill with the gate's decision.
    pub fn skills(&self) -> &[SkillRecord] {
        &self.skills
    }

    /// The skills the `requires_apps` gate shows.
    pub fn visible_skills(&self) -> Vec<&SkillRecord> {
        self.skills.iter().filter(|s| s.visible).collect()
    }

    /// Every configured server, config-file servers first, then plugins'.
    pub fn servers(&self) -> &[ServerRecord] {
        &self.servers
    }

    /// The server named `name`.
    pub fn server(&self, name: &str) -> Option<&ServerRecord> {
        self.servers.iter().find(|s| s.spec.name == name)
    }

    /// Loaded plugins, in load order.
    pub fn plugins(&self) -> &[PluginRecord] {
        &self.plugins
    }

    /// Load problems: a plugin file that failed, a bad server entry, a name
    /// clash; one line each, naming the file and field.
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    /// Non-fatal notes (an unset `${VAR}`).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The declaration registry (server name → declaration).
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The GPU class of the evaluated machine (`docs/declarations.md` §5).
    pub fn gpu_class(&self) -> GpuClass {
        self.gpu
    }

    /// The OS family being evaluated.
    pub fn os_family(&self) -> OsFamily {
        self.platform.os_family()
    }

    /// A snapshot for `wasmgate status` (`docs/mcp-client.md` §6). Reads
    /// state; never connects.
    pub fn status(&self) -> HostStatus {
        let conn = self.client.status();
        let line = |s: &ServerRecord| {
            let c = conn.iter().find(|c| c.name == s.spec.name);
            let connection = match c {
                Some(c) => c.state.to_string(),
                None if !s.spec.enabled => "disabled".into(),
                None if !s.offerable() => "gated".into(),
                None => "not_connected".into(),
            };
            ServerStatusLine {
                name: s.spec.name.clone(),
                plugin: s.spec.plugin.clone(),
                transport: transport_name(&s.spec.transport),
                availability: s.availability.as_ref().map(|a| AvailabilityLine {
                    state: a.state.as_str(),
                    offerable: a.offerable(),
                    version: a.version.clone(),
                    path: a.path.clone(),
                    min_version: a.min_version.clone(),
                    message: s.message.clone(),
                }),
                connection,
                tools: c.map(|c| c.tools.clone()).unwrap_or_default(),
                collisions: c.map(|c| c.collisions.clone()).unwrap_or_default(),
                last_error: c.and_then(|c| c.last_error.clone()),
                server_info: c.and_then(|c| c.server_info.clone()),
                problems: Vec::new(),
            }
        };
        // Every configured entry in configured order: registered servers
        // and, in their place, the invalid ones with their problems.
        let mut servers = Vec::new();
        let mut listed = vec![false; self.servers.len()];
        for (plugin, name) in &self.order {
            let same = |p: &Option<String>, n: &str| p == plugin && n == name;
            if let Some(i) = (0..self.servers.len()).find(|&i| {
                !listed[i] && same(&self.servers[i].spec.plugin, &self.servers[i].spec.name)
            }) {
                listed[i] = true;
                servers.push(line(&self.servers[i]));
            } else if let Some(inv) = self.invalid.iter().find(|v| same(&v.plugin, &v.name)) {
                servers.push(ServerStatusLine {
                    name: inv.name.clone(),
                    plugin: inv.plugin.clone(),
                    transport: "unknown",
                    availability: None,
                    connection: "invalid".into(),
                    tools: Vec::new(),
                    collisions: Vec::new(),
                    last_error: None,
                    server_info: None,
                    problems: inv.problems.clone(),
                });
            }
        }
        for (i, s) in self.servers.iter().enumerate() {
            if !listed[i] {
                servers.push(line(s));
            }
        }
        HostStatus {
            os_family: self.platform.os_family().as_str(),
            gpu_class: self.gpu.as_str(),
            plugins: self.plugins.clone(),
            servers,
            skills: self.skills.clone(),
            problems: self.problems.clone(),
            warnings: self.warnings.clone(),
        }
    }

    /// Ends every server session and child process.
    pub async fn shutdown(&self) {
        self.client.shutdown().await;
    }
}

/// `wasmgate status --json`.
#[derive(Debug, Clone, Serialize)]
pub struct HostStatus {
    /// OS family evaluated.
    pub os_family: &'static str,
    /// `gpu_class()` of that machine.
    pub gpu_class: &'static str,
    /// Loaded plugins.
    pub plugins: Vec<PluginRecord>,
    /// Every configured server, in order.
    pub servers: Vec<ServerStatusLine>,
    /// Every skill with its gate decision.
    pub skills: Vec<SkillRecord>,
    /// Load problems (`<where>: <field path> …`).
    pub problems: Vec<String>,
    /// Load warnings: an unset `${VAR}` in `env` or `headers` (`docs/mcp-client.md` §1),
    /// probe notes (`<where>: <field path> …`).
    pub warnings: Vec<String>,
}

/// One server in [`HostStatus`].
#[derive(Debug, Clone, Serialize)]
pub struct ServerStatusLine {
    /// Configured server name.
    pub name: String,
    /// Plugin that brought it (`null` for config servers).
    pub plugin: Option<String>,
    /// `stdio`, `http` or `app_endpoint`.
    pub transport: &'static str,
    /// `null` when the server has no declaration.
    pub availability: Option<AvailabilityLine>,
    /// `connected`, `connecting`, `failed`, `disabled`, `gated`, or
    /// `not_connected` (offerable, discovery not run).
    pub connection: String,
    /// Registered tool names.
    pub tools: Vec<String>,
    /// Naming collisions in which this server's tool lost its plain name
    /// (`reserved: true`: the name lies in a config server's namespace).
    pub collisions: Vec<mcp::Collision>,
    /// Last connect error, redacted.
    pub last_error: Option<String>,
    /// `name version` from `initialize`.
    pub server_info: Option<String>,
    /// Each problem of an `invalid` entry (`<where>: <field path> …`, as in
    /// [`HostStatus::problems`]); empty for a registered server.
    pub problems: Vec<String>,
}

/// Availability as `status` prints it (the fields of `wasmgate availability`).
#[derive(Debug, Clone, Serialize)]
pub struct AvailabilityLine {
    /// The state.
    pub state: &'static str,
    /// `available` or `no_requirements`.
    pub offerable: bool,
    /// Version read.
    pub version: Option<String>,
    /// Where found or first looked for.
    pub path: Option<String>,
    /// `requires.min_version`.
    pub min_version: Option<String>,
    /// The user-facing sentence when not offerable.
    pub message: Option<String>,
}

fn transport_name(t: &Transport) -> &'static str {
    match t {
        Transport::Stdio { .. } => "stdio",
        Transport::Http { .. } => "http",
        Transport::AppEndpoint => "app_endpoint",
    }
}

/// Validates the manifest value a component returned with the same
/// validator as `plugin.yaml` (`docs/declarations.md` §2a), as a plugin's
/// manifest with no host environment granted.
pub fn validate_component(p: &LoadedPlugin, os: OsFamily) -> ManifestResult {
    let _ = os;
    validate_component_with(p, Arc::default())
}

/// [`validate_component`] with the user's `plugins:` grants
/// (`docs/security.md`, "What a plugin's manifest may reach").
fn validate_component_with(
    p: &LoadedPlugin,
    grants: Arc<manifest::PluginsConfig>,
) -> ManifestResult {
    let ctx = ManifestContext {
        allow_custom_version: true,
        ..ManifestContext::for_plugin(p.file.display().to_string(), p.dir.clone(), grants)
    };
    manifest::manifest_from_value(&p.manifest, &ctx)
}

#[allow(clippy::too_many_arguments)]
fn accept(
    r: ManifestResult,
    file: &Path,
    kind: &'static str,
    plugins: &mut Vec<PluginRecord>,
    servers: &mut Vec<ServerSpec>,
    skills: &mut Vec<(String, SkillSource)>,
    problems: &mut Vec<String>,
    warnings: &mut Vec<String>,
    (order, invalid): (&mut Vec<(Option<String>, String)>, &mut Vec<InvalidServer>),
) {
    problems.extend(r.errors.iter().map(ToString::to_string));
    warnings.extend(r.warnings);
    let Some(m) = r.manifest else { return };
    if plugins.iter().any(|p| p.name == m.name) {
        problems.push(format!(
            "{}: name '{}' is already used by another plugin; it is left out",
            file.display(),
            m.name
        ));
        return;
    }
    for name in &r.server_order {
        order.push((Some(m.name.clone()), name.clone()));
        if !m.servers.iter().any(|s| &s.name == name) {
            invalid.push(InvalidServer {
                plugin: Some(m.name.clone()),
                name: name.clone(),
                problems: problems_of(&r.errors, name),
            });
        }
    }
    plugins.push(PluginRecord {
        name: m.name.clone(),
        version: m.version.clone(),
        file: file.to_path_buf(),
        kind,
        servers: m.servers.iter().map(|s| s.name.clone()).collect(),
    });
    servers.extend(m.servers);
    skills.extend(m.skills.into_iter().map(|s| (m.name.clone(), s)));
}

fn gate_skills(
    sources: Vec<(String, SkillSource)>,
    servers: &[ServerRecord],
    registry: &Registry,
    problems: &mut Vec<String>,
) -> Vec<SkillRecord> {
    // Skill gate (§8): a name must resolve by lookup to a declaration, and
    // that declaration must be offerable; unknown names fail closed.
    let lookup = |name: &str| -> Option<bool> {
        registry.lookup(name)?;
        servers
            .iter()
            .find(|s| s.spec.name == name)
            .map(ServerRecord::offerable)
    };
    let mut out = Vec::new();
    for (plugin, source) in sources {
        let (name, markdown) = match source {
            SkillSource::Inline { name, markdown } => (name, markdown),
            SkillSource::Loaded { path, markdown } => {
                (skills::skill_name_from_path(&path), markdown)
            }
            SkillSource::File { path } => {
                problems.push(format!("{}: skill file was not read", path.display()));
                continue;
            }
        };
        match skills::parse_skill(&name, &markdown) {
            Ok(skill) => {
                let gate = skills::gate(&skill, lookup);
                let hidden_because = match &gate {
                    SkillGate::Visible => Vec::new(),
                    SkillGate::Hidden(r) => r.iter().map(ToString::to_string).collect(),
                };
                out.push(SkillRecord {
                    plugin,
                    name: skill.name.clone(),
                    description: skill.description.clone(),
                    requires_apps: skill.requires_apps.clone(),
                    visible: gate.is_visible(),
                    hidden_because,
                    markdown,
                });
            }
            Err(e) => problems.push(format!("plugin '{plugin}': {e}")),
        }
    }
    out
}

/// Splits plugin folders into component folders and manifest files
/// (`plugin.yaml` / `plugin.json`).
fn scan_plugin_dirs(dirs: &[PathBuf], problems: &mut Vec<String>) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut wasm_dirs = Vec::new();
    let mut manifests = Vec::new();
    for dir in dirs {
        if !dir.is_dir() {
            let what = if dir.exists() {
                "is not a folder (--plugins takes folders of plugins)"
            } else {
                "plugin folder not found"
            };
            problems.push(format!("{}: {what}", dir.display()));
            continue;
        }
        wasm_dirs.push(dir.clone());
        if let Some(direct) = manifest::manifest_file(dir) {
            manifests.push(direct);
        }
        let Ok(rd) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut subs: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .collect();
        subs.sort();
        for sub in subs {
            // A folder with a component is a component plugin; its
            // plugin.yaml (if any) is documentation, not a second plugin.
            if !has_wasm(&sub)
                && let Some(m) = manifest::manifest_file(&sub)
            {
                manifests.push(m);
            }
        }
    }
    (wasm_dirs, manifests)
}

fn has_wasm(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|rd| {
        rd.filter_map(Result::ok)
            .any(|e| e.path().extension().is_some_and(|x| x == "wasm"))
    })
}

fn wasm_dirs_have_components(dirs: &[PathBuf]) -> bool {
    dirs.iter().any(|d| {
        has_wasm(d)
            || std::fs::read_dir(d).is_ok_and(|rd| {
                rd.filter_map(Result::ok)
                    .any(|e| e.path().is_dir() && has_wasm(&e.path()))
            })
    })
}
