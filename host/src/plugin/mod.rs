//! Plugin components: the loader ([`PluginRuntime`]: compile, contract check,
//! link, `InstancePre`, one short-lived store per guest call) and the
//! result of a load ([`LoadedPlugin`]) (`docs/design.md`, "The contract" and
//! "Sandbox and limits"; `docs/security.md`).
//!
//! The sandbox itself is described on [`PluginRuntime`]. Each part has its own
//! file: `config` (limits), `failure` (errors), `contract` (what a file is
//! and whether it fits the contract), `store` (a call's store), `imports`
//! (the WIT `host` import), `grant` (a probe's folder), `cache` (compile
//! cache), `engine` (epoch ticker), `output` (captured stdout/stderr),
//! `convert` (a manifest record as YAML), `folders` (plugin-folder scan).

mod cache;
mod config;
mod contract;
mod convert;
mod engine;
mod failure;
pub(crate) mod folders;
mod grant;
mod imports;
mod output;
mod store;

pub use cache::CacheOutcome;
pub use config::{EffectiveLimits, SandboxConfig, PluginLimits};
pub use contract::contract;
pub use failure::{CallFailure, GuestCall, LoadFailure, PluginLoadError, ProbeFailure};
pub use grant::ProbeGrant;

use crate::declaration::OsFamily;
use crate::error::HostError;
use contract::{Plugin, PluginPre, WasmKind, check_imports, wasm_layer};
use engine::EpochTicker;
use imports::to_wit_os;
use output::CapturedOutput;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use store::{Limiter, StoreState};
use wasmtime::component::{Linker, ResourceTable};
use wasmtime::{Engine, Store, StoreLimitsBuilder, Trap};
use wasmtime_wasi::WasiCtxBuilder;

use contract::latest::wasmgate::plugin::types as wit;

/// A plugin whose component compiled, linked and returned a manifest.
#[derive(Clone)]
pub struct LoadedPlugin {
    /// Plugin name from its manifest.
    pub name: String,
    /// The `.wasm` file it was loaded from.
    pub file: PathBuf,
    /// The folder holding the `.wasm` file: the value of `${PLUGIN_DIR}`.
    pub dir: PathBuf,
    /// The manifest as the document a `plugin.yaml` holds (see
    /// `convert.rs` for the shape); validated by `crate::manifest`. Public
    /// only to this workspace's rule tests and benchmarks (the document's
    /// type is internal).
    #[cfg(feature = "internals")]
    pub manifest: crate::document::Value,
    #[cfg(not(feature = "internals"))]
    pub(crate) manifest: crate::document::Value,
    /// Whether the compiled component came from the compile cache.
    pub cache: CacheOutcome,
    pre: Arc<PluginPre>,
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

/// The plugin runtime: one engine, one linker, the epoch ticker.
///
/// # Plugin folders
///
/// [`PluginRuntime::load_dirs`] takes folders. In each folder, every `*.wasm`
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
/// a memory cap ([`StoreLimits`](wasmtime::StoreLimits)) and bounded host-call data. WASI p2 is
/// linked with nothing granted: no preopens, env, args or network; stdout
/// and stderr are captured (bounded) and logged with the plugin's name.
/// The `host` import reads files only inside the grant of a probe call.
pub struct PluginRuntime {
    engine: Engine,
    linker: Linker<StoreState>,
    config: SandboxConfig,
    // Declared last: dropped after the engine handle above is no longer used.
    _ticker: EpochTicker,
}

impl PluginRuntime {
    /// Builds the engine, links WASI p2 (nothing granted) and the `host`
    /// import, and starts the epoch ticker. Errors: [`HostError::Engine`]
    /// (engine or linker setup), [`HostError::Ticker`].
    pub fn new(config: SandboxConfig) -> Result<PluginRuntime, HostError> {
        let engine = engine::new_engine(&config).map_err(HostError::engine)?;
        let mut linker = Linker::<StoreState>::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker).map_err(HostError::engine)?;
        contract::add_to_linker(&mut linker).map_err(HostError::engine)?;
        let ticker =
            EpochTicker::start(engine.clone(), config.epoch_tick).map_err(HostError::Ticker)?;
        Ok(PluginRuntime {
            engine,
            linker,
            config,
            _ticker: ticker,
        })
    }

    /// The configuration in use.
    pub fn config(&self) -> &SandboxConfig {
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
    ) -> Result<(PluginPre, CacheOutcome), LoadFailure> {
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
        let version = check_imports(&self.engine, &component)?;
        let pre = self
            .linker
            .instantiate_pre(&component)
            .map_err(|e| LoadFailure::Link(format!("{e:#}")))?;
        let pre = PluginPre::new(version, pre).map_err(|e| LoadFailure::Link(format!("{e:#}")))?;
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
        pre: &PluginPre,
        plugin: &str,
        limits: &EffectiveLimits,
        grant: Option<(ProbeGrant, OsFamily)>,
        which: GuestCall,
        f: impl FnOnce(&Plugin, &mut Store<StoreState>) -> wasmtime::Result<R> + Send,
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

    /// [`PluginRuntime::call`] on the current thread.
    fn call_here<R>(
        &self,
        pre: &PluginPre,
        plugin: &str,
        limits: &EffectiveLimits,
        grant: Option<(ProbeGrant, OsFamily)>,
        which: GuestCall,
        f: impl FnOnce(&Plugin, &mut Store<StoreState>) -> wasmtime::Result<R>,
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
    use std::time::Duration;

    #[test]
    fn a_host_starts_and_stops_its_ticker() {
        let host = PluginRuntime::new(SandboxConfig::default()).unwrap();
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
