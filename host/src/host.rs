//! The native host ([`Host`]): the one place where the pieces meet, in the
//! order of `docs/design.md`'s data flow.

pub(crate) mod probe;

use crate::availability::{self, Availability};
use crate::declaration::{OsFamily, Registry};
use crate::error::HostError;
use crate::manifest::{self, ManifestContext, ManifestResult, ServerSpec, SkillSource, Transport};
use crate::mcp::{
    self, CallError, CallResult, ClientOptions, ConnectionState, McpClient, ToolInfo,
};
use crate::platform::{GpuClass, Platform, RealPlatform, gpu_class};
use crate::plugin::folders::PluginFolders;
use crate::plugin::{SandboxConfig, LoadedPlugin, PluginRuntime};
use crate::resolver::liveness::ServerJsonSource;
use crate::skills::{self, SkillGate};
use crate::trust::lock::{LockEntry, ToolPin};
use crate::trust::{
    self, PluginTrust, TrustPolicy, TrustState, TrustStore, WithheldTool, digest, surface,
};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
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
    pub sandbox: SandboxConfig,
    /// MCP client options (reconnect policy).
    pub client: ClientOptions,
    /// Which plugins may run (`docs/security.md`). Default: the user's lock
    /// file ([`TrustPolicy::default_lock`]): a plugin the user has not
    /// approved is held back. Embedders that vet their plugin folders
    /// themselves, and tests, set [`TrustPolicy::Dev`] or their own lock.
    pub trust: TrustPolicy,
}

impl HostOptions {
    /// Options for this machine with default limits, no plugins, no config.
    pub fn new() -> HostOptions {
        HostOptions {
            plugin_dirs: Vec::new(),
            config: None,
            platform: Arc::new(RealPlatform::new()),
            sandbox: SandboxConfig::default(),
            client: ClientOptions::default(),
            trust: TrustPolicy::default_lock(),
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
    /// Its servers' names, in manifest order (valid ones only). A plugin
    /// that is held back ([`PluginTrust`]) has none of them connected.
    pub servers: Vec<String>,
    /// Approved, unapproved, changed or dev; what changed; the command that
    /// approves it.
    pub trust: PluginTrust,
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

/// The native host: the one place where the pieces meet, in the order of
/// `docs/design.md`'s data flow — plugin components and `plugin.yaml`
/// folders → manifests (validated) → registry → availability → gates → MCP
/// client connects only offerable servers → tools and skills for the agent.
///
/// It is also the Rust embedding API: [`Host::load`], [`Host::discover`],
/// [`Host::offered_tools`], [`Host::visible_skills`], [`Host::call`],
/// [`Host::status`], [`Host::shutdown`]; [`Host::load_next`] loads again
/// keeping the sessions of servers that did not change.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let mut options = wasmgate::HostOptions::new();
/// options.plugin_dirs = vec!["target/plugins".into()];
/// let host = wasmgate::Host::load(options)?;
/// host.discover().await;
/// for tool in host.offered_tools() {
///     println!("{}", tool.name);
/// }
/// host.shutdown().await;
/// # Ok(()) }
/// ```
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
    /// The lock (`None` in development mode).
    trust: Option<Arc<TrustStore>>,
    /// What `plugin approve NAME` writes for each loaded plugin.
    pending: HashMap<String, LockEntry>,
    /// Whether any server came from a plugin (tool pins apply).
    has_plugin_servers: bool,
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
    /// else still loads. Errors: only when the component engine cannot start
    /// ([`HostError::Engine`], [`HostError::Ticker`]).
    pub fn load(options: HostOptions) -> Result<Host, HostError> {
        let client = McpClient::with_options(ClientOptions {
            // The app-endpoint transport reads server_json on the machine
            // availability was evaluated on.
            app_endpoints: options
                .client
                .app_endpoints
                .clone()
                .or_else(|| Some(Arc::new(ServerJsonSource::new(options.platform.clone())))),
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
    pub fn load_next(options: HostOptions, previous: &Host) -> Result<Host, HostError> {
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

    fn load_with(options: HostOptions, client: McpClient) -> Result<Host, HostError> {
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
        // namespaces are kept from plugins (`crate::naming`).
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

        let found = scan_plugin_dirs(&options.plugin_dirs, &mut problems);
        let trust_store = match &options.trust {
            TrustPolicy::Dev => None,
            TrustPolicy::Lock(path) => Some(Arc::new(TrustStore::open(path.clone()))),
        };
        let mut tctx = TrustCtx {
            store: trust_store.as_deref(),
            plugin_dirs: &options.plugin_dirs,
            pending: HashMap::new(),
        };
        let mut components = None;
        problems.extend(found.unreadable_errors().map(|e| e.to_string()));
        if !found.components.is_empty() {
            let sandbox = SandboxConfig {
                os: platform.os_family(),
                ..options.sandbox.clone()
            };
            let runtime = PluginRuntime::new(sandbox)?;
            let mut accepted = Vec::new();
            for loaded in runtime.load_files(&found.components) {
                match loaded {
                    Ok(p) => {
                        let r = validate_component(&p, grants.clone());
                        let before = plugins.len();
                        let unit = if options.plugin_dirs.contains(&p.dir) {
                            digest::Unit::File(p.file.clone())
                        } else {
                            digest::Unit::Folder(p.dir.clone())
                        };
                        accept(
                            r,
                            &p.file,
                            "component",
                            unit,
                            &mut tctx,
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
            components = Some(probe::Components::new(runtime, accepted));
        }
        for file in found.manifests {
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
            let unit = digest::Unit::Folder(manifest::schema::plugin_dir_of(&file));
            accept(
                r,
                &file,
                if is_json { "json" } else { "yaml" },
                unit,
                &mut tctx,
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
        let pending = tctx.pending;
        if let Some(e) = trust_store.as_ref().and_then(|s| s.error.clone())
            && !plugins.is_empty()
        {
            problems.push(format!("plugin lock: {e}"));
        }
        let has_plugin_servers = !plugin_servers.is_empty();
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
            trust: trust_store,
            pending,
            has_plugin_servers,
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
        let mut report = self.client.connect_all(&specs, offerable).await;
        if specs.is_empty() {
            let warning = self.nothing_to_start();
            tracing::warn!("{warning}");
            report.warning = Some(warning);
        }
        self.pin_first_connect();
        report
    }

    /// Why discovery has no server to start: plugins held back by trust
    /// (with the command that approves each), else nothing configured.
    fn nothing_to_start(&self) -> String {
        let held: Vec<String> = self
            .plugins
            .iter()
            .filter(|p| !p.trust.state.runs() && !p.servers.is_empty())
            .map(|p| match &p.trust.approve {
                Some(a) => format!(
                    "{} is {} (approve with: {a})",
                    p.name,
                    p.trust.state.as_str()
                ),
                None => format!("{} is {}", p.name, p.trust.state.as_str()),
            })
            .collect();
        if held.is_empty() {
            mcp::NO_SERVERS_CONFIGURED.to_string()
        } else {
            format!(
                "no MCP server started: every server comes from a plugin that is held back: {}",
                held.join("; ")
            )
        }
    }

    /// Tool pins on a plugin server's first connect (trust on first use,
    /// `docs/security.md`): every tool of a connected server of an approved
    /// plugin that has no pins yet is pinned and the lock written.
    fn pin_first_connect(&self) {
        let Some(store) = &self.trust else { return };
        if !self.has_plugin_servers {
            return;
        }
        let mut fresh: Vec<(String, String, BTreeMap<String, ToolPin>)> = Vec::new();
        {
            let lock = store.lock.lock().unwrap_or_else(|e| e.into_inner());
            let tools = self.client.tools();
            for c in self.client.status() {
                if c.state != ConnectionState::Connected {
                    continue;
                }
                let Some(plugin) = self.server(&c.name).and_then(|s| s.spec.plugin.clone()) else {
                    continue;
                };
                let Some(entry) = lock.plugins.get(&plugin) else {
                    continue;
                };
                if entry.tools.contains_key(&c.name) {
                    continue;
                }
                let pins = tools
                    .iter()
                    .filter(|t| t.server == c.name)
                    .map(|t| {
                        (
                            t.original_name.clone(),
                            trust::tool_pin(&t.original_name, &t.description, &t.input_schema),
                        )
                    })
                    .collect();
                fresh.push((plugin, c.name.clone(), pins));
            }
        }
        if fresh.is_empty() {
            return;
        }
        let r = store.update(|l| {
            for (plugin, server, pins) in &fresh {
                if let Some(e) = l.plugins.get_mut(plugin) {
                    e.tools
                        .entry(server.clone())
                        .or_insert_with(|| pins.clone());
                }
            }
        });
        if let Err(e) = r {
            tracing::warn!("plugin lock: tool pins not saved: {e}");
        }
    }

    /// Why the tool `t` is withheld (its plugin's pins differ), or `None`
    /// when it may be offered. Config servers' tools and development mode
    /// are never withheld.
    pub fn withheld(&self, t: &ToolInfo) -> Option<WithheldTool> {
        let store = self.trust.as_ref()?;
        let plugin = self.server(&t.server)?.spec.plugin.clone()?;
        let lock = store.lock.lock().unwrap_or_else(|e| e.into_inner());
        withheld_in(&lock, &plugin, t)
    }

    /// The lock this host enforces (`None` in development mode).
    pub fn trust_store(&self) -> Option<&Arc<TrustStore>> {
        self.trust.as_ref()
    }

    /// What approving plugin `name` writes to the lock: its SHA-256, files
    /// and surface now, with its current tool pins. `None` when no plugin
    /// of that name was loaded, it could not be hashed, or in development
    /// mode.
    pub fn pending_approval(&self, name: &str) -> Option<&LockEntry> {
        self.pending.get(name)
    }

    /// Approves plugin `name` as loaded ([`Host::pending_approval`]),
    /// keeping its tool pins. Takes effect at the next load. Errors: no
    /// such plugin, it could not be hashed (the reason), development mode,
    /// or the lock cannot be written.
    pub fn approve(&self, name: &str) -> Result<(), String> {
        let Some(store) = &self.trust else {
            return Err("development mode has no lock to write".into());
        };
        let Some(entry) = self.pending.get(name) else {
            let why = self
                .plugins
                .iter()
                .find(|p| p.name == name)
                .map(|p| crate::terminal::line(&p.trust.changes.join("; ")).into_owned());
            return Err(match why {
                Some(w) => format!("plugin '{name}' cannot be pinned: {w}"),
                None => format!("no plugin named '{name}' in the plugin folders"),
            });
        };
        store.update(|l| {
            let mut e = entry.clone();
            if let Some(old) = l.plugins.get(name) {
                e.tools = old.tools.clone();
            }
            l.plugins.insert(name.to_owned(), e);
        })
    }

    /// Pins the tools the connected servers of approved plugin `plugin`
    /// offer now (after [`Host::discover`]), replacing its earlier pins;
    /// returns what changed, one sentence each (`server/tool: …`). Errors:
    /// development mode, the plugin is not approved, or the lock cannot be
    /// written.
    pub fn approve_tools(&self, plugin: &str) -> Result<Vec<String>, String> {
        let Some(store) = &self.trust else {
            return Err("development mode has no lock to write".into());
        };
        let Some(entry) = store.entry(plugin) else {
            return Err(format!("plugin '{plugin}' is not approved"));
        };
        let tools = self.client.tools();
        let mut changes = Vec::new();
        let mut pins: BTreeMap<String, BTreeMap<String, ToolPin>> = BTreeMap::new();
        for c in self.client.status() {
            let is_ours = self
                .server(&c.name)
                .is_some_and(|s| s.spec.plugin.as_deref() == Some(plugin));
            if !is_ours || c.state != ConnectionState::Connected {
                continue;
            }
            let old = entry.tools.get(&c.name);
            let mut now = BTreeMap::new();
            for t in tools.iter().filter(|t| t.server == c.name) {
                let pin = trust::tool_pin(&t.original_name, &t.description, &t.input_schema);
                if let Some(old) = old
                    && let Some(lines) =
                        trust::tool_changes(old.get(&t.original_name), &pin, &t.description)
                {
                    for l in lines {
                        changes.push(format!("{}/{}: {l}", c.name, t.original_name));
                    }
                }
                now.insert(t.original_name.clone(), pin);
            }
            for gone in old.iter().flat_map(|o| o.keys()) {
                if !now.contains_key(gone) {
                    changes.push(format!("{}/{gone}: removed", c.name));
                }
            }
            pins.insert(c.name.clone(), now);
        }
        store.update(|l| {
            if let Some(e) = l.plugins.get_mut(plugin) {
                for (server, p) in &pins {
                    e.tools.insert(server.clone(), p.clone());
                }
            }
        })?;
        Ok(changes)
    }

    /// The tools offered now: tools of connected servers whose declaration is
    /// offerable (the MCP gate, `docs/declarations.md` §8).
    pub fn offered_tools(&self) -> Vec<ToolInfo> {
        let tools = self
            .client
            .tools()
            .into_iter()
            .filter(|t| self.server(&t.server).is_some_and(ServerRecord::offerable));
        match (&self.trust, self.has_plugin_servers) {
            (Some(store), true) => {
                // A tool whose pin differs is withheld (a rug pull through
                // tools/list_changed or a new server version).
                let lock = store.lock.lock().unwrap_or_else(|e| e.into_inner());
                tools
                    .filter(|t| {
                        let plugin = self.server(&t.server).and_then(|s| s.spec.plugin.as_ref());
                        plugin.is_none_or(|p| withheld_in(&lock, p, t).is_none())
                    })
                    .collect()
            }
            _ => tools.collect(),
        }
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
            s.state == ConnectionState::Connecting && crate::naming::may_own_tool(&s.name, name)
        })
    }

    /// Calls an offered tool by its registered name (`mcp_<server>_<tool>`)
    /// with JSON object arguments. Errors: [`CallError`] (unknown tool, not
    /// connected, timeout after the server's `timeout` seconds, transport).
    pub async fn call(&self, name: &str, args: serde_json::Value) -> Result<CallResult, CallError> {
        self.call_with(name, args, None).await
    }

    /// [`Host::call`] with the server's progress for this call handed to
    /// `progress` while it runs ([`mcp::McpClient::call_with`]; the gateway's
    /// route, so not part of the embedding API).
    pub(crate) async fn call_with(
        &self,
        name: &str,
        args: serde_json::Value,
        progress: Option<mcp::upstream::ProgressSink>,
    ) -> Result<CallResult, CallError> {
        // The gate check needs the tool's server (a copy of its record);
        // only a tool whose name a gated server may own needs it — the
        // gateway's hot path usually skips it.
        if self
            .gated
            .iter()
            .any(|server| crate::naming::may_own_tool(server, name))
            && let Some(t) = self.client.tool(name)
            && !self.server(&t.server).is_some_and(ServerRecord::offerable)
        {
            return Err(CallError::NotConnected {
                server: t.server,
                state: ConnectionState::Gated,
            });
        }
        if self.trust.is_some()
            && self.has_plugin_servers
            && let Some(t) = self.client.tool(name)
            && self.withheld(&t).is_some()
        {
            // Withheld until `plugin approve`: not offered, so unknown.
            return Err(CallError::UnknownTool {
                name: name.to_owned(),
            });
        }
        self.client.call_with(name, args, progress).await
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

    /// The live MCP session of `name` when the server is connected and
    /// offerable now (the gate of its tools), with its capabilities as JSON;
    /// `None` otherwise. The gateway's pass-through of prompts, resources
    /// and completions goes through it (`docs/mcp-client.md` §7).
    pub fn offered_peer(
        &self,
        name: &str,
    ) -> Option<(rmcp::service::Peer<rmcp::RoleClient>, serde_json::Value)> {
        if !self.server(name).is_some_and(ServerRecord::offerable) {
            return None;
        }
        self.client.peer_of(name)
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
        let all_tools = self.client.tools();
        let line = |s: &ServerRecord| {
            let c = conn.iter().find(|c| c.name == s.spec.name);
            let connection = match c {
                // A server that needs `wasmgate login` (docs/mcp-client.md §9).
                Some(c)
                    if c.state == ConnectionState::Failed
                        && c.last_error
                            .as_deref()
                            .is_some_and(|e| e.starts_with(mcp::oauth::AUTH_REQUIRED)) =>
                {
                    mcp::oauth::AUTH_REQUIRED.into()
                }
                Some(c) => c.state.to_string(),
                None if !s.spec.enabled => "disabled".into(),
                None if !s.offerable() => "gated".into(),
                None => "not_connected".into(),
            };
            let withheld: Vec<(String, WithheldTool)> = all_tools
                .iter()
                .filter(|t| t.server == s.spec.name)
                .filter_map(|t| self.withheld(t).map(|w| (t.name.clone(), w)))
                .collect();
            ServerStatusLine {
                name: s.spec.name.clone(),
                plugin: s.spec.plugin.clone(),
                transport: transport_name(&s.spec.transport),
                availability: s
                    .availability
                    .as_ref()
                    .map(|a| AvailabilityLine::new(a, s.message.clone())),
                connection,
                tools: c
                    .map(|c| {
                        c.tools
                            .iter()
                            .filter(|n| !withheld.iter().any(|(w, _)| w == *n))
                            .cloned()
                            .collect()
                    })
                    .unwrap_or_default(),
                withheld_tools: withheld.into_iter().map(|(_, w)| w).collect(),
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
                    withheld_tools: Vec::new(),
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
            trust: TrustLine {
                dev: self.trust.is_none(),
                notice: self.trust.is_none().then_some(trust::DEV_NOTICE),
                lock_file: self
                    .trust
                    .as_ref()
                    .and_then(|t| t.path.as_ref())
                    .map(|p| p.display().to_string()),
            },
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
    /// How plugins are trusted in this run.
    pub trust: TrustLine,
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

/// The trust mode in [`HostStatus`].
#[derive(Debug, Clone, Serialize)]
pub struct TrustLine {
    /// Development mode (`--dev` / `WASMGATE_DEV=1`): plugins run unpinned.
    pub dev: bool,
    /// `trust::DEV_NOTICE` in development mode.
    pub notice: Option<&'static str>,
    /// The lock file enforced (`null` in development mode or without a
    /// user config dir).
    pub lock_file: Option<String>,
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
    /// `connected`, `connecting`, `failed`, `auth_required` (an `auth:
    /// oauth` server that needs `wasmgate login`), `disabled`, `gated`, or
    /// `not_connected` (offerable, discovery not run).
    pub connection: String,
    /// Registered tool names (withheld ones left out).
    pub tools: Vec<String>,
    /// Naming collisions in which this server's tool lost its plain name
    /// (`reserved: true`: the name lies in a config server's namespace).
    pub collisions: Vec<mcp::Collision>,
    /// Tools withheld because they differ from their pins.
    pub withheld_tools: Vec<WithheldTool>,
    /// Last connect error, redacted.
    pub last_error: Option<String>,
    /// `name version` from `initialize`.
    pub server_info: Option<String>,
    /// Each problem of an `invalid` entry (`<where>: <field path> …`, as in
    /// [`HostStatus::problems`]); empty for a registered server.
    pub problems: Vec<String>,
}

/// Availability as `status` prints it (the fields of `wasmgate availability`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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

impl AvailabilityLine {
    /// The line of `a`, with the sentence the user is told when it is not
    /// offerable (`docs/declarations.md` §6.4).
    pub(crate) fn new(a: &Availability, message: Option<String>) -> AvailabilityLine {
        AvailabilityLine {
            state: a.state.as_str(),
            offerable: a.offerable(),
            version: a.version.clone(),
            path: a.path.clone(),
            min_version: a.min_version.clone(),
            message,
        }
    }
}

fn transport_name(t: &Transport) -> &'static str {
    match t {
        Transport::Stdio { .. } => "stdio",
        Transport::Http { .. } => "http",
        Transport::AppEndpoint => "app_endpoint",
    }
}

/// Validates the manifest value a component returned with the same
/// validator as `plugin.yaml` (`docs/declarations.md` §2a), under the
/// user's `plugins:` grants (`docs/security.md`, "What a plugin's manifest
/// may reach").
fn validate_component(p: &LoadedPlugin, grants: Arc<manifest::PluginsConfig>) -> ManifestResult {
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
    unit: digest::Unit,
    tctx: &mut TrustCtx<'_>,
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
    let trust = evaluate_trust(tctx, &m, kind, &unit);
    let runs = trust.state.runs();
    plugins.push(PluginRecord {
        name: m.name.clone(),
        version: m.version.clone(),
        file: file.to_path_buf(),
        kind,
        servers: m.servers.iter().map(|s| s.name.clone()).collect(),
        trust,
    });
    if !runs {
        // Held back: none of its servers is spawned or contacted, none of
        // its skills shown.
        return;
    }
    servers.extend(m.servers);
    skills.extend(m.skills.into_iter().map(|s| (m.name.clone(), s)));
}

/// The lock and what a load learns for `plugin approve`.
struct TrustCtx<'a> {
    store: Option<&'a TrustStore>,
    plugin_dirs: &'a [PathBuf],
    pending: HashMap<String, LockEntry>,
}

/// The plugin's trust: its digest and surface against its lock entry.
fn evaluate_trust(
    tctx: &mut TrustCtx<'_>,
    m: &manifest::Manifest,
    kind: &str,
    unit: &digest::Unit,
) -> PluginTrust {
    let Some(store) = tctx.store else {
        return PluginTrust {
            state: TrustState::Dev,
            sha256: None,
            changes: Vec::new(),
            approve: None,
        };
    };
    let plugin_root = match unit {
        digest::Unit::File(f) => f.parent().unwrap_or(Path::new(".")),
        digest::Unit::Folder(d) => d.as_path(),
    };
    let dir = tctx
        .plugin_dirs
        .iter()
        .find(|d| unit.path().starts_with(d))
        .map(PathBuf::as_path);
    let approve = trust::approve_command(&m.name, dir);
    let known = store.entry(&m.name);
    let now = surface::surface(m, plugin_root);
    let d = match digest::digest(unit, known.as_ref().map_or(&[][..], |e| &e.files)) {
        Ok(d) => d,
        Err(e) => {
            return PluginTrust {
                state: if known.is_some() {
                    TrustState::Changed
                } else {
                    TrustState::Unapproved
                },
                sha256: None,
                changes: vec![e],
                approve: None,
            };
        }
    };
    tctx.pending.insert(
        m.name.clone(),
        LockEntry {
            sha256: d.sha256.clone(),
            kind: kind.to_owned(),
            source: unit.path().display().to_string(),
            files: d.files.clone(),
            surface: now.clone(),
            tools: known.as_ref().map(|k| k.tools.clone()).unwrap_or_default(),
        },
    );
    let Some(entry) = known else {
        return PluginTrust {
            state: TrustState::Unapproved,
            sha256: Some(d.sha256),
            changes: vec!["not in the plugin lock (never approved)".into()],
            approve: Some(approve),
        };
    };
    let mut changes = Vec::new();
    if entry.sha256 != d.sha256 {
        changes.push(format!(
            "SHA-256 {} → {}",
            short(&entry.sha256),
            short(&d.sha256)
        ));
        changes.extend(file_changes(&entry.files, &d.files));
    }
    changes.extend(surface::diff(&entry.surface, &now));
    if !changes.is_empty() {
        return PluginTrust {
            state: TrustState::Changed,
            sha256: Some(d.sha256),
            changes,
            approve: Some(approve),
        };
    }
    if entry.files != d.files {
        // Same content under new identities (copied, touched): remember
        // them so the next load reads nothing.
        let name = m.name.clone();
        let files = d.files.clone();
        if let Err(e) = store.update(|l| {
            if let Some(e) = l.plugins.get_mut(&name) {
                e.files = files.clone();
            }
        }) {
            tracing::debug!("plugin lock: identities not saved: {e}");
        }
    }
    PluginTrust {
        state: TrustState::Approved,
        sha256: Some(d.sha256),
        changes: Vec::new(),
        approve: None,
    }
}

fn short(sha: &str) -> &str {
    &sha[..sha.len().min(16)]
}

/// Files added, removed or changed between two digests (at most 20 lines).
fn file_changes(old: &[digest::FileRecord], new: &[digest::FileRecord]) -> Vec<String> {
    let mut out = Vec::new();
    for f in new {
        match old.iter().find(|o| o.path == f.path) {
            None => out.push(format!("file {} added", f.path)),
            Some(o) if o.sha256 != f.sha256 || o.kind != f.kind => {
                out.push(format!("file {} changed", f.path))
            }
            Some(_) => {}
        }
    }
    for o in old {
        if !new.iter().any(|f| f.path == o.path) {
            out.push(format!("file {} removed", o.path));
        }
    }
    if out.len() > 20 {
        let more = out.len() - 20;
        out.truncate(20);
        out.push(format!("… and {more} more files"));
    }
    out
}

/// [`Host::withheld`] against one lock snapshot.
fn withheld_in(lock: &trust::lock::LockFile, plugin: &str, t: &ToolInfo) -> Option<WithheldTool> {
    let approve = trust::approve_command(plugin, None);
    let Some(pins) = lock
        .plugins
        .get(plugin)
        .and_then(|e| e.tools.get(&t.server))
    else {
        // Approved plugin, server not pinned yet: discovery pins it right
        // after connecting; until then nothing of it is offered.
        return Some(WithheldTool {
            tool: t.original_name.clone(),
            reason: "new",
            changes: vec!["its server's tools are not pinned yet".into()],
            approve,
        });
    };
    let pin = pins.get(&t.original_name);
    let now = trust::tool_pin(&t.original_name, &t.description, &t.input_schema);
    let changes = trust::tool_changes(pin, &now, &t.description)?;
    Some(WithheldTool {
        tool: t.original_name.clone(),
        reason: if pin.is_some() { "changed" } else { "new" },
        changes,
        approve,
    })
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

/// The plugins in the plugin folders (one scan, `plugin::folders`); a
/// path that is not a folder is a problem line.
fn scan_plugin_dirs(dirs: &[PathBuf], problems: &mut Vec<String>) -> PluginFolders {
    let folders: Vec<PathBuf> = dirs
        .iter()
        .filter(|dir| {
            if dir.is_dir() {
                return true;
            }
            let what = if dir.exists() {
                "is not a folder (--plugins takes folders of plugins)"
            } else {
                "plugin folder not found"
            };
            problems.push(format!("{}: {what}", dir.display()));
            false
        })
        .cloned()
        .collect();
    crate::plugin::folders::scan(&folders)
}
