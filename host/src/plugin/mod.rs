//! Plugin components: the wasmtime engine, loading, `InstancePre`, limits,
//! and the host side of the `wasmgate:plugin@0.1.0` imports (`docs/design.md`,
//! "The contract" and "Sandbox and limits"; `docs/security.md`).
//!
//! The sandbox itself is described on [`PluginHost`].

mod cache;
mod convert;
mod engine;
pub(crate) mod folders;
mod grant;
mod output;

pub use cache::CacheOutcome;
pub use grant::ProbeGrant;

use crate::declaration::OsFamily;
use crate::error::HostError;
use engine::EpochTicker;
use output::CapturedOutput;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use wasmtime::component::{Component, HasSelf, Linker, ResourceTable};
use wasmtime::{Engine, ResourceLimiter, Store, StoreLimits, StoreLimitsBuilder, Trap};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

/// Host bindings generated from `host/wit/plugin.wit`: a byte-for-byte copy
/// of the contract's one source, `guest-sdk/wit/plugin.wit`, kept inside this
/// crate so the packaged crate builds on its own
/// (`tests/tests/packaging.rs` fails when the two differ).
#[allow(missing_docs)]
pub mod bindings {
    wasmtime::component::bindgen!({
        path: "wit",
        world: "plugin",
    });
}

use bindings::wasmgate::plugin::types as wit;

/// The contract this host implements (`guest-sdk/wit/plugin.wit`).
pub const CONTRACT: &str = "wasmgate:plugin@0.1.0";
const CONTRACT_PACKAGE: &str = "wasmgate:plugin";
const CONTRACT_VERSION: &str = "0.1.0";

/// Limits and defaults of the sandbox. Every field has a default
/// ([`HostConfig::default`]); see `docs/security.md`.
#[derive(Debug, Clone)]
pub struct HostConfig {
    /// The OS family being evaluated, returned by the `os-family` import
    /// (a simulated host may differ from the machine). Default: this machine's.
    pub os: OsFamily,
    /// Interval of the epoch ticker. Default 10 ms.
    pub epoch_tick: Duration,
    /// Deadline of one `manifest()` call, instantiation included. Default 1 s.
    pub manifest_deadline: Duration,
    /// Deadline of one `probe-version` call. Default 200 ms.
    pub probe_deadline: Duration,
    /// Largest linear memory (and table) a store may grow to, in bytes.
    /// Default 64 MiB.
    pub memory_limit: usize,
    /// Most bytes a guest may pass to the host in one call across the
    /// boundary: an import's arguments, or an export's results such as the
    /// whole manifest (`Store::set_hostcall_fuel`). Default 4 MiB.
    pub hostcall_bytes: usize,
    /// Guest stdout and stderr kept per call, per stream, in bytes; the rest
    /// is counted and dropped. Default 64 KiB.
    pub output_bytes: usize,
    /// Largest file a probe may read, in bytes (the guest may ask for less).
    /// Default 1 MiB.
    pub probe_read_bytes: u64,
    /// Most entries a probe's folder listing may return. Default 4096.
    pub probe_list_entries: u64,
    /// Largest `.wasm` file loaded, in bytes. Default 64 MiB.
    pub max_component_bytes: u64,
    /// Largest manifest accepted (sum of its strings), in bytes. Default 4 MiB.
    pub max_manifest_bytes: usize,
    /// Folder of the compile cache (`cache.rs`); `None` compiles every
    /// time. Default `None`.
    pub cache_dir: Option<PathBuf>,
    /// Per-plugin overrides of the limits above, keyed by the component's
    /// file stem (`git` for `git.wasm`) or by the plugin's manifest name.
    /// `manifest()` runs before the name is known, so its overrides match
    /// the file stem only; a probe matches the name first, then the stem.
    /// Default: none.
    pub overrides: BTreeMap<String, PluginLimits>,
}

/// Limits that may be set per plugin ([`HostConfig::overrides`]); `None`
/// keeps the [`HostConfig`] default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PluginLimits {
    /// Deadline of one `manifest()` call.
    pub manifest_deadline: Option<Duration>,
    /// Deadline of one `probe-version` call.
    pub probe_deadline: Option<Duration>,
    /// Largest linear memory (and table) of one store, in bytes.
    pub memory_limit: Option<usize>,
    /// Most bytes passed guest → host in one call.
    pub hostcall_bytes: Option<usize>,
}

/// The limits one call runs under, after overrides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EffectiveLimits {
    /// Deadline of `manifest()`.
    pub manifest_deadline: Duration,
    /// Deadline of `probe-version`.
    pub probe_deadline: Duration,
    /// Memory cap per store, in bytes.
    pub memory_limit: usize,
    /// Host-call data cap per call, in bytes.
    pub hostcall_bytes: usize,
}

impl HostConfig {
    /// The limits for the plugin whose file stem is `stem` and whose
    /// manifest name is `name` (when known): the name's override wins over
    /// the stem's, and either over the defaults, field by field.
    pub fn limits_for(&self, stem: &str, name: Option<&str>) -> EffectiveLimits {
        let mut l = EffectiveLimits {
            manifest_deadline: self.manifest_deadline,
            probe_deadline: self.probe_deadline,
            memory_limit: self.memory_limit,
            hostcall_bytes: self.hostcall_bytes,
        };
        let by_stem = self.overrides.get(stem);
        let by_name = name.and_then(|n| self.overrides.get(n));
        for o in [by_stem, by_name].into_iter().flatten() {
            if let Some(d) = o.manifest_deadline {
                l.manifest_deadline = d;
            }
            if let Some(d) = o.probe_deadline {
                l.probe_deadline = d;
            }
            if let Some(m) = o.memory_limit {
                l.memory_limit = m;
            }
            if let Some(h) = o.hostcall_bytes {
                l.hostcall_bytes = h;
            }
        }
        l
    }
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            os: OsFamily::current(),
            epoch_tick: Duration::from_millis(10),
            manifest_deadline: Duration::from_secs(1),
            probe_deadline: Duration::from_millis(200),
            memory_limit: 64 << 20,
            hostcall_bytes: 4 << 20,
            output_bytes: 64 << 10,
            probe_read_bytes: 1 << 20,
            probe_list_entries: 4096,
            max_component_bytes: 64 << 20,
            max_manifest_bytes: 4 << 20,
            cache_dir: None,
            overrides: BTreeMap::new(),
        }
    }
}

/// A plugin whose component compiled, linked and returned a manifest.
#[derive(Clone)]
pub struct LoadedPlugin {
    /// Plugin name from its manifest.
    pub name: String,
    /// The `.wasm` file it was loaded from.
    pub file: PathBuf,
    /// The folder holding the `.wasm` file: the value of `${PLUGIN_DIR}`.
    pub dir: PathBuf,
    /// The manifest as the mapping a `plugin.yaml` holds (see
    /// `convert.rs` for the shape); validate it with `crate::manifest`.
    pub manifest: yaml_serde::Value,
    /// Whether the compiled component came from the compile cache.
    pub cache: CacheOutcome,
    pre: Arc<bindings::PluginPre<StoreState>>,
}

impl fmt::Debug for LoadedPlugin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoadedPlugin")
            .field("name", &self.name)
            .field("file", &self.file)
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

/// Which guest call failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GuestCall {
    /// `manifest()` (instantiation included).
    #[error("manifest()")]
    Manifest,
    /// `probe-version` (instantiation included).
    #[error("probe-version()")]
    ProbeVersion,
}

/// Why a guest call failed: which limit, or which trap. Displays as the
/// words that follow the call's name (`timed out: ran past its 2000 ms
/// deadline`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CallFailure {
    /// The epoch deadline passed (`deadline_ms`).
    #[error("timed out: ran past its {deadline_ms} ms deadline")]
    Timeout {
        /// The deadline, in milliseconds.
        deadline_ms: u64,
    },
    /// Linear memory (or a table) would have grown past the cap.
    #[error("hit the memory limit: tried to grow past {} MiB", .limit_bytes >> 20)]
    MemoryLimit {
        /// The cap, in bytes.
        limit_bytes: usize,
    },
    /// The guest's wasm stack was exhausted (deep recursion).
    #[error("overflowed its stack")]
    StackOverflow,
    /// The guest passed more data across the boundary in one call than
    /// [`HostConfig::hostcall_bytes`] allows.
    #[error(
        "hit the host-call data limit: passed more than {limit_bytes} bytes to the host in one call"
    )]
    HostcallData {
        /// The cap, in bytes.
        limit_bytes: usize,
    },
    /// Any other trap (a panic in the guest, `unreachable`, …).
    #[error("trapped: {0}")]
    Trap(String),
}

/// Why a `.wasm` file did not become a [`LoadedPlugin`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LoadFailure {
    /// The file or folder could not be read.
    #[error("cannot read: {0}")]
    Io(String),
    /// The `.wasm` entry is not a regular file inside its plugin folder (a
    /// link out of it, a FIFO, a device); `docs/security.md`, "What a
    /// plugin's manifest may reach". The reason, as a sentence.
    #[error("{0}")]
    Refused(String),
    /// Zero bytes.
    #[error("empty file (0 bytes); expected a WebAssembly component")]
    Empty,
    /// Larger than [`HostConfig::max_component_bytes`].
    #[error("file is {size} bytes, over the {limit} byte limit")]
    TooLarge {
        /// File size in bytes.
        size: u64,
        /// The cap in bytes.
        limit: u64,
    },
    /// Not WebAssembly at all (no `\0asm` header).
    #[error("not a WebAssembly file (no `\\0asm` header); expected a component")]
    NotWasm,
    /// A core WebAssembly module, not a component.
    #[error(
        "a core WebAssembly module, not a component; build the plugin with \
         `cargo build --target wasm32-wasip2` (the SDK makes a component)"
    )]
    CoreModule,
    /// A component wasmtime could not compile or validate.
    #[error("invalid component: {0}")]
    Invalid(String),
    /// Built against another version of the contract.
    #[error("built against {CONTRACT_PACKAGE}@{found}; this host supports {CONTRACT}")]
    ContractVersion {
        /// The version the component imports, e.g. `0.2.0`.
        found: String,
    },
    /// Imports something outside the `plugin` world and WASI.
    #[error(
        "imports `{0}`, which is outside the {CONTRACT} world (only its `host` \
         interface and WASI are provided)"
    )]
    UnsupportedImport(String),
    /// Does not export the `plugin` world's functions with their types, or
    /// imports a WASI interface the host does not link.
    #[error("does not fit the {CONTRACT} world: {0}")]
    Link(String),
    /// A guest call trapped or hit a limit.
    #[error("{call} {failure}")]
    Call {
        /// Which call.
        call: GuestCall,
        /// Why.
        failure: CallFailure,
    },
    /// The manifest it returned cannot be used (too large, duplicates).
    #[error("unusable manifest: {0}")]
    Manifest(String),
}

/// A `.wasm` file (or plugin folder) that failed to load, with the reason.
/// Displays as `<file>: <reason>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {reason}", .file.display())]
pub struct PluginLoadError {
    /// The file (or folder) that failed.
    pub file: PathBuf,
    /// Why (shown in the message, so not also given as its source).
    pub reason: LoadFailure,
}

/// A failed `probe-version` call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeFailure {
    /// The probe trapped or hit a limit.
    #[error("{call} {0}", call = GuestCall::ProbeVersion)]
    Call(CallFailure),
    /// The probe returned an error string.
    #[error("{call} failed: {0}", call = GuestCall::ProbeVersion)]
    Probe(String),
}

/// Records which limit was hit, so a trap that follows a refused growth is
/// reported as the memory limit rather than as a bare trap.
struct Limiter {
    inner: StoreLimits,
    hit: bool,
}

impl Limiter {
    /// Notes a refused (or failed) growth and passes the answer on.
    fn record(&mut self, r: wasmtime::Result<bool>) -> wasmtime::Result<bool> {
        if !matches!(r, Ok(true)) {
            self.hit = true;
        }
        r
    }
}

impl ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let r = self.inner.memory_growing(current, desired, maximum);
        self.record(r)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let r = self.inner.table_growing(current, desired, maximum);
        self.record(r)
    }

    fn instances(&self) -> usize {
        self.inner.instances()
    }

    fn tables(&self) -> usize {
        self.inner.tables()
    }

    fn memories(&self) -> usize {
        self.inner.memories()
    }
}

/// The data of one short-lived [`Store`].
struct StoreState {
    plugin: Arc<str>,
    os: wit::OsFamily,
    wasi: WasiCtx,
    table: ResourceTable,
    limiter: Limiter,
    stdout: CapturedOutput,
    stderr: CapturedOutput,
    grant: Option<ProbeGrant>,
    read_cap: u64,
    list_cap: u64,
}

impl WasiView for StoreState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl wit::Host for StoreState {}

impl bindings::wasmgate::plugin::host::Host for StoreState {
    fn host_os(&mut self) -> wit::OsFamily {
        self.os
    }

    fn log(&mut self, level: wit::LogLevel, message: String) {
        let plugin = &*self.plugin;
        match level {
            wit::LogLevel::Trace => tracing::trace!(plugin, "{message}"),
            wit::LogLevel::Debug => tracing::debug!(plugin, "{message}"),
            wit::LogLevel::Info => tracing::info!(plugin, "{message}"),
            wit::LogLevel::Warn => tracing::warn!(plugin, "{message}"),
            wit::LogLevel::Error => tracing::error!(plugin, "{message}"),
        }
    }

    fn read_file(&mut self, path: String, max_bytes: u32) -> Result<Vec<u8>, wit::ProbeError> {
        match &self.grant {
            Some(g) => g.read_file(&path, u64::from(max_bytes).min(self.read_cap)),
            None => Err(no_grant(&path)),
        }
    }

    fn list_dir(
        &mut self,
        path: String,
        max_entries: u32,
    ) -> Result<Vec<wit::DirEntry>, wit::ProbeError> {
        match &self.grant {
            Some(g) => g.list_dir(&path, u64::from(max_entries).min(self.list_cap)),
            None => Err(no_grant(&path)),
        }
    }
}

fn no_grant(path: &str) -> wit::ProbeError {
    wit::ProbeError::Denied(format!(
        "{path}: nothing is granted outside a probe-version call"
    ))
}

fn to_wit_os(os: OsFamily) -> wit::OsFamily {
    match os {
        OsFamily::Win32 => wit::OsFamily::Win32,
        OsFamily::Darwin => wit::OsFamily::Darwin,
        OsFamily::Linux => wit::OsFamily::Linux,
    }
}

/// The plugin host: one engine, one linker, the epoch ticker.
///
/// # Plugin folders
///
/// [`PluginHost::load_dirs`] takes folders. In each folder, every `*.wasm`
/// file directly inside is one plugin, and every subfolder's `*.wasm` files
/// (one level down) are plugins too: `target/plugins/git/git.wasm` and
/// `plugins/blender.wasm` both load. `${PLUGIN_DIR}` in a server's command,
/// args and env is the folder holding the `.wasm` file, so a plugin can ship
/// its MCP server binary beside its component. Files load in name order.
///
/// # Sandbox
///
/// One [`Engine`] with epoch interruption and a ticker thread; a fresh
/// [`Store`] per call from a cached `InstancePre`, with an epoch deadline,
/// a memory cap ([`StoreLimits`]) and bounded host-call data. WASI p2 is
/// linked with nothing granted: no preopens, env, args or network; stdout
/// and stderr are captured (bounded) and logged with the plugin's name.
/// The `host` import reads files only inside the grant of a probe call.
pub struct PluginHost {
    engine: Engine,
    linker: Linker<StoreState>,
    config: HostConfig,
    // Declared last: dropped after the engine handle above is no longer used.
    _ticker: EpochTicker,
}

impl PluginHost {
    /// Builds the engine, links WASI p2 (nothing granted) and the `host`
    /// import, and starts the epoch ticker. Errors: [`HostError::Engine`]
    /// (engine or linker setup), [`HostError::Ticker`].
    pub fn new(config: HostConfig) -> Result<PluginHost, HostError> {
        let engine = engine::new_engine().map_err(HostError::engine)?;
        let mut linker = Linker::<StoreState>::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker).map_err(HostError::engine)?;
        bindings::Plugin::add_to_linker::<StoreState, HasSelf<StoreState>>(&mut linker, |s| s)
            .map_err(HostError::engine)?;
        let ticker =
            EpochTicker::start(engine.clone(), config.epoch_tick).map_err(HostError::Ticker)?;
        Ok(PluginHost {
            engine,
            linker,
            config,
            _ticker: ticker,
        })
    }

    /// The configuration in use.
    pub fn config(&self) -> &HostConfig {
        &self.config
    }

    /// Loads every plugin component in `dirs` (the layout: "Plugin folders"
    /// above), in folder order then file-name order. A file that
    /// fails gives a [`PluginLoadError`] naming it; the others still load.
    pub fn load_dirs(&self, dirs: &[PathBuf]) -> Vec<Result<LoadedPlugin, PluginLoadError>> {
        let found = folders::scan(dirs);
        let mut out: Vec<_> = found.unreadable_errors().map(Err).collect();
        out.extend(self.load_files(&found.components));
        out
    }

    /// Loads `files` (component file, its `${PLUGIN_DIR}`), in order.
    pub(crate) fn load_files(
        &self,
        files: &[(PathBuf, PathBuf)],
    ) -> Vec<Result<LoadedPlugin, PluginLoadError>> {
        let mut out = Vec::with_capacity(files.len());
        // Compiling is the slow part: one thread per file, at most the
        // machine's parallelism at a time.
        let width = std::thread::available_parallelism().map_or(1, |n| n.get());
        for chunk in files.chunks(width.max(1)) {
            let results: Vec<_> = std::thread::scope(|scope| {
                let handles: Vec<_> = chunk
                    .iter()
                    .map(|(file, dir)| scope.spawn(move || self.load_file(file, dir)))
                    .collect();
                handles
                    .into_iter()
                    .zip(chunk)
                    .map(|(h, (file, _))| {
                        h.join().unwrap_or_else(|_| {
                            Err(PluginLoadError {
                                file: file.clone(),
                                reason: LoadFailure::Invalid("the loader panicked".into()),
                            })
                        })
                    })
                    .collect()
            });
            out.extend(results);
        }
        out
    }

    /// Loads one component `file`; `plugin_dir` is its `${PLUGIN_DIR}`.
    pub fn load_file(
        &self,
        file: &Path,
        plugin_dir: &Path,
    ) -> Result<LoadedPlugin, PluginLoadError> {
        let fail = |reason| PluginLoadError {
            file: file.to_path_buf(),
            reason,
        };
        // Inside its folder, a regular file, at most the cap read.
        let limit = self.config.max_component_bytes;
        // Opened, not read: a cached load of an unchanged file reads only
        // its header (`cache.rs`, "Identity shortcut").
        let (handle, size) =
            crate::manifest::files::open_file_in_its_folder(file, limit).map_err(|e| {
                use crate::manifest::PluginFileError as E;
                fail(match e {
                    E::TooLarge {
                        size: Some(size),
                        limit,
                    } => LoadFailure::TooLarge { size, limit },
                    E::OutsideFolder | E::NotRegular { .. } => LoadFailure::Refused(e.to_string()),
                    other => LoadFailure::Io(
                        other
                            .to_string()
                            .trim_start_matches("cannot be read: ")
                            .to_string(),
                    ),
                })
            })?;
        let stem = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut source = cache::Source::new(handle, size);
        let (pre, cache) = self.prepare(&mut source).map_err(fail)?;
        let limits = self.config.limits_for(&stem, None);
        let manifest = self
            .call(
                &pre,
                &stem,
                &limits,
                None,
                GuestCall::Manifest,
                |p, store| p.call_manifest(store),
            )
            .map_err(|failure| {
                fail(LoadFailure::Call {
                    call: GuestCall::Manifest,
                    failure,
                })
            })?;
        let size = manifest_bytes(&manifest);
        if size > self.config.max_manifest_bytes {
            return Err(fail(LoadFailure::Manifest(format!(
                "{size} bytes, over the {} byte limit",
                self.config.max_manifest_bytes
            ))));
        }
        let name = manifest.name.clone();
        let (value, problems) = convert::manifest_to_value(manifest);
        if !problems.is_empty() {
            return Err(fail(LoadFailure::Manifest(problems.join("; "))));
        }
        Ok(LoadedPlugin {
            name,
            file: file.to_path_buf(),
            dir: plugin_dir.to_path_buf(),
            manifest: value,
            cache,
            pre: Arc::new(pre),
        })
    }

    /// Calls `plugin`'s `probe-version` for `server` on `os` with `grant`
    /// (the located install folder), in a fresh store under the probe
    /// deadline. `Ok(None)`: the probe read no version.
    pub fn probe_version(
        &self,
        plugin: &LoadedPlugin,
        server: &str,
        os: OsFamily,
        grant: ProbeGrant,
    ) -> Result<Option<String>, ProbeFailure> {
        let limits = self.limits_of(plugin);
        let r = self
            .call(
                &plugin.pre,
                &plugin.name,
                &limits,
                Some((grant, os)),
                GuestCall::ProbeVersion,
                |p, store| p.call_probe_version(store, server, to_wit_os(os)),
            )
            .map_err(ProbeFailure::Call)?;
        r.map_err(ProbeFailure::Probe)
    }

    /// Instantiates `plugin` from its cached `InstancePre` in a fresh store
    /// with every limit set, calls nothing, and drops the store: the fixed
    /// cost of every guest call (benchmarks, `docs/performance.md`).
    /// Errors: instantiation trapped or hit a limit.
    pub fn instantiate(&self, plugin: &LoadedPlugin) -> Result<(), CallFailure> {
        let limits = self.limits_of(plugin);
        self.call(
            &plugin.pre,
            &plugin.name,
            &limits,
            None,
            GuestCall::Manifest,
            |_, _| Ok(()),
        )
    }

    /// Calls `plugin`'s `manifest()` again in a fresh store and returns the
    /// size of its text in bytes (benchmarks). Errors: the call trapped or
    /// hit a limit.
    pub fn manifest_size(&self, plugin: &LoadedPlugin) -> Result<usize, CallFailure> {
        let limits = self.limits_of(plugin);
        self.call(
            &plugin.pre,
            &plugin.name,
            &limits,
            None,
            GuestCall::Manifest,
            |p, store| p.call_manifest(store),
        )
        .map(|m| manifest_bytes(&m))
    }

    fn limits_of(&self, plugin: &LoadedPlugin) -> EffectiveLimits {
        let stem = plugin
            .file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        self.config.limits_for(&stem, Some(&plugin.name))
    }

    /// Checks the file's shape and imports, compiles it, and links it into
    /// an `InstancePre`.
    fn prepare(
        &self,
        source: &mut cache::Source,
    ) -> Result<(bindings::PluginPre<StoreState>, CacheOutcome), LoadFailure> {
        let header = source
            .header()
            .map_err(|e| LoadFailure::Io(e.to_string()))?;
        match wasm_layer(&header) {
            WasmKind::Empty => return Err(LoadFailure::Empty),
            WasmKind::NotWasm => return Err(LoadFailure::NotWasm),
            WasmKind::Core => return Err(LoadFailure::CoreModule),
            WasmKind::Component => {}
        }
        let (component, cache) =
            cache::compile(&self.engine, source, self.config.cache_dir.as_deref())
                .map_err(|e| LoadFailure::Invalid(format!("{e:#}")))?;
        check_imports(&self.engine, &component)?;
        let pre = self
            .linker
            .instantiate_pre(&component)
            .map_err(|e| LoadFailure::Link(format!("{e:#}")))?;
        let pre = bindings::PluginPre::new(pre).map_err(|e| LoadFailure::Link(format!("{e:#}")))?;
        Ok((pre, cache))
    }

    /// Runs one guest call in a fresh store with every limit set, flushes
    /// the guest's output to the log, and classifies a failure.
    ///
    /// WASI's synchronous bindings block on a Tokio runtime (the current
    /// one when there is one), which panics on a thread that is driving
    /// async tasks. So a call from inside a runtime is handed over once:
    /// on a multi-thread runtime with `block_in_place` (a worker hands its
    /// tasks on; a `spawn_blocking` thread, where `Host::load` runs in the
    /// gateway, just runs it), and only on a current-thread runtime, which
    /// cannot block in place, on a scoped thread of its own.
    fn call<R: Send>(
        &self,
        pre: &bindings::PluginPre<StoreState>,
        plugin: &str,
        limits: &EffectiveLimits,
        grant: Option<(ProbeGrant, OsFamily)>,
        which: GuestCall,
        f: impl FnOnce(&bindings::Plugin, &mut Store<StoreState>) -> wasmtime::Result<R> + Send,
    ) -> Result<R, CallFailure> {
        match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
            Err(_) => return self.call_here(pre, plugin, limits, grant, which, f),
            Ok(tokio::runtime::RuntimeFlavor::MultiThread) => {
                return tokio::task::block_in_place(|| {
                    self.call_here(pre, plugin, limits, grant, which, f)
                });
            }
            Ok(_) => {}
        }
        std::thread::scope(|scope| {
            scope
                .spawn(|| self.call_here(pre, plugin, limits, grant, which, f))
                .join()
                .unwrap_or_else(|_| Err(CallFailure::Trap("the host call panicked".into())))
        })
    }

    /// [`PluginHost::call`] on the current thread.
    fn call_here<R>(
        &self,
        pre: &bindings::PluginPre<StoreState>,
        plugin: &str,
        limits: &EffectiveLimits,
        grant: Option<(ProbeGrant, OsFamily)>,
        which: GuestCall,
        f: impl FnOnce(&bindings::Plugin, &mut Store<StoreState>) -> wasmtime::Result<R>,
    ) -> Result<R, CallFailure> {
        let cfg = &self.config;
        let stdout = CapturedOutput::new(cfg.output_bytes);
        let stderr = CapturedOutput::new(cfg.output_bytes);
        let wasi = WasiCtxBuilder::new()
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .build();
        let (grant, os) = match grant {
            Some((g, os)) => (Some(g), os),
            None => (None, cfg.os),
        };
        let store_limits = StoreLimitsBuilder::new()
            .memory_size(limits.memory_limit)
            .table_elements(limits.memory_limit / 8)
            .trap_on_grow_failure(true)
            .build();
        let state = StoreState {
            plugin: Arc::from(plugin),
            os: to_wit_os(os),
            wasi,
            table: ResourceTable::new(),
            limiter: Limiter {
                inner: store_limits,
                hit: false,
            },
            stdout: stdout.clone(),
            stderr: stderr.clone(),
            grant,
            read_cap: cfg.probe_read_bytes,
            list_cap: cfg.probe_list_entries,
        };
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| &mut s.limiter);
        store.set_hostcall_fuel(limits.hostcall_bytes);
        let deadline = match which {
            GuestCall::Manifest => limits.manifest_deadline,
            GuestCall::ProbeVersion => limits.probe_deadline,
        };
        let tick = cfg.epoch_tick.as_nanos().max(1);
        let ticks = deadline.as_nanos().div_ceil(tick).max(1) as u64;
        store.set_epoch_deadline(ticks);
        store.epoch_deadline_trap();

        let result = pre
            .instantiate(&mut store)
            .and_then(|instance| f(&instance, &mut store));
        let state = store.data();
        // A panicking Rust guest prints its message to stderr just before
        // it traps: keep the last line for the failure reason.
        let last_stderr = state.stderr.last_line(300);
        state.stdout.flush_to_log(plugin, "stdout");
        state.stderr.flush_to_log(plugin, "stderr");
        result.map_err(|e| {
            if state.limiter.hit {
                return CallFailure::MemoryLimit {
                    limit_bytes: limits.memory_limit,
                };
            }
            match e.downcast_ref::<Trap>() {
                Some(Trap::Interrupt) => CallFailure::Timeout {
                    deadline_ms: deadline.as_millis() as u64,
                },
                Some(Trap::StackOverflow) => CallFailure::StackOverflow,
                trap => {
                    let text = match trap {
                        Some(t) => t.to_string(),
                        None => e.root_cause().to_string(),
                    };
                    // wasmtime 48 reports spent hostcall fuel as a plain
                    // error with this text (no typed error to match).
                    if text.contains("fuel allocated for hostcalls has been exhausted") {
                        return CallFailure::HostcallData {
                            limit_bytes: limits.hostcall_bytes,
                        };
                    }
                    CallFailure::Trap(match last_stderr {
                        Some(line) => format!("{text} (guest stderr: {line})"),
                        None => text,
                    })
                }
            }
        })
    }
}

/// What the first 8 bytes of a file say it is.
enum WasmKind {
    Empty,
    NotWasm,
    Core,
    Component,
}

/// The binary header is `\0asm` then a 16-bit version and a 16-bit layer:
/// layer 0 is a core module, layer 1 a component (component-model binary
/// format). Anything with the magic but an unknown layer goes to wasmtime,
/// whose error names what is wrong.
fn wasm_layer(bytes: &[u8]) -> WasmKind {
    if bytes.is_empty() {
        return WasmKind::Empty;
    }
    if bytes.len() < 8 || &bytes[..4] != b"\0asm" {
        return WasmKind::NotWasm;
    }
    match u16::from_le_bytes([bytes[6], bytes[7]]) {
        0 => WasmKind::Core,
        _ => WasmKind::Component,
    }
}

/// Refuses another contract version (naming both) and imports outside the
/// world before linking, so the error says why rather than "not found".
fn check_imports(engine: &Engine, component: &Component) -> Result<(), LoadFailure> {
    let ty = component.component_type();
    for (name, _) in ty.imports(engine) {
        if name.starts_with("wasi:") {
            // Linked (with nothing granted) or refused by the linker below.
            continue;
        }
        if let Some(rest) = name
            .strip_prefix(CONTRACT_PACKAGE)
            .and_then(|r| r.strip_prefix('/'))
        {
            let version = rest.split_once('@').map(|(_, v)| v).unwrap_or("");
            if !same_contract(version) {
                return Err(LoadFailure::ContractVersion {
                    found: if version.is_empty() {
                        "(unversioned)".into()
                    } else {
                        version.into()
                    },
                });
            }
            continue;
        }
        return Err(LoadFailure::UnsupportedImport(name.to_string()));
    }
    Ok(())
}

/// 0.x versions are compatible only within the same minor (semver), which
/// is also what wasmtime's linker matches.
fn same_contract(version: &str) -> bool {
    let ours: Vec<&str> = CONTRACT_VERSION.split('.').collect();
    let theirs: Vec<&str> = version.split('.').collect();
    theirs.len() == 3 && theirs[0] == ours[0] && theirs[1] == ours[1]
}

/// Bytes of text in a manifest (names, commands, skills…): a cheap bound
/// on what it holds.
fn manifest_bytes(m: &wit::Manifest) -> usize {
    let mut n = m.name.len() + m.version.len();
    for k in &m.skills {
        n += k.name.len() + k.markdown.len();
    }
    for s in &m.servers {
        n += s.name.len() + 64 * s.app.len();
        match &s.transport {
            wit::Transport::Stdio(st) => {
                n += st.command.len();
                n += st.args.iter().map(String::len).sum::<usize>();
                n += st
                    .env
                    .iter()
                    .map(|p| p.key.len() + p.value.len())
                    .sum::<usize>();
                n += st.env_passthrough.iter().map(String::len).sum::<usize>();
            }
            wit::Transport::Http(h) => {
                n += h.url.len();
                n += h
                    .headers
                    .iter()
                    .map(|p| p.key.len() + p.value.len())
                    .sum::<usize>();
            }
            wit::Transport::AppEndpoint => {}
        }
        for a in &s.app {
            for l in &a.location {
                n += match l {
                    wit::Location::Path(x)
                    | wit::Location::Command(x)
                    | wit::Location::AppBundle(x)
                    | wit::Location::Flatpak(x)
                    | wit::Location::Snap(x) => x.len(),
                    wit::Location::UninstallRegistry(u) => {
                        u.display_name_prefix.len() + u.file.len()
                    }
                };
            }
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_kinds() {
        assert!(matches!(wasm_layer(b""), WasmKind::Empty));
        assert!(matches!(wasm_layer(b"hello world"), WasmKind::NotWasm));
        assert!(matches!(wasm_layer(b"\0asm\x01\0\0\0"), WasmKind::Core));
        assert!(matches!(
            wasm_layer(b"\0asm\x0d\0\x01\0"),
            WasmKind::Component
        ));
    }

    #[test]
    fn contract_versions() {
        assert!(same_contract("0.1.0"));
        assert!(same_contract("0.1.3"));
        assert!(!same_contract("0.2.0"));
        assert!(!same_contract("1.1.0"));
        assert!(!same_contract(""));
    }

    #[test]
    fn overrides_apply_by_stem_then_name_field_by_field() {
        let mut cfg = HostConfig::default();
        cfg.overrides.insert(
            "slow".into(),
            PluginLimits {
                manifest_deadline: Some(Duration::from_secs(5)),
                memory_limit: Some(1 << 20),
                ..PluginLimits::default()
            },
        );
        cfg.overrides.insert(
            "slow-plugin".into(),
            PluginLimits {
                memory_limit: Some(2 << 20),
                probe_deadline: Some(Duration::from_millis(50)),
                ..PluginLimits::default()
            },
        );
        let d = cfg.limits_for("other", Some("other"));
        assert_eq!(d.manifest_deadline, Duration::from_secs(1));
        assert_eq!(d.memory_limit, 64 << 20);
        let by_stem = cfg.limits_for("slow", None);
        assert_eq!(by_stem.manifest_deadline, Duration::from_secs(5));
        assert_eq!(by_stem.memory_limit, 1 << 20);
        assert_eq!(by_stem.probe_deadline, Duration::from_millis(200));
        let both = cfg.limits_for("slow", Some("slow-plugin"));
        assert_eq!(both.manifest_deadline, Duration::from_secs(5));
        assert_eq!(both.memory_limit, 2 << 20);
        assert_eq!(both.probe_deadline, Duration::from_millis(50));
        assert_eq!(both.hostcall_bytes, 4 << 20);
    }

    #[test]
    fn a_host_starts_and_stops_its_ticker() {
        let host = PluginHost::new(HostConfig::default()).unwrap();
        // The ticker thread owns a clone of the engine until it ends; once
        // the host is dropped no engine handle may be left.
        let engine = host.engine.weak();
        assert!(engine.upgrade().is_some());
        let (dropped, dropped_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            drop(host);
            let _ = dropped.send(());
        });
        // A bound around the drop: a ticker that never stops hangs it.
        dropped_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("dropping the host did not stop its ticker thread");
        assert!(
            engine.upgrade().is_none(),
            "the ticker thread still holds the engine after the host was dropped"
        );
    }
}
