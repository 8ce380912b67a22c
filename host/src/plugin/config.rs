//! The sandbox's limits and defaults, and per-plugin overrides of them
//! (`docs/security.md`, "Sandbox and limits").

use crate::declaration::OsFamily;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Limits and defaults of the sandbox. Every field has a default
/// ([`SandboxConfig::default`]); see `docs/security.md`.
#[derive(Debug, Clone)]
pub struct SandboxConfig {
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
    /// Guest instances that may be live at once when wasmtime's pooling
    /// instance allocator is used; `None` (the default) allocates each
    /// call's memories and tables on demand. `Some(n)` reserves, when the
    /// host starts, address space for `n` instances whose memories may
    /// grow to the largest memory limit of this config and its overrides
    /// (about 4 GiB of virtual address space per memory slot, little of
    /// it resident); a call made while all `n` are in use fails
    /// instantiating. Measured in `docs/performance.md`, "Plugin loading":
    /// for the example guests it instantiates about 25% slower than the
    /// default, which is why it is opt-in.
    pub instance_pool: Option<u32>,
}

/// Limits that may be set per plugin ([`SandboxConfig::overrides`]); `None`
/// keeps the [`SandboxConfig`] default.
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

impl SandboxConfig {
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

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
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
            instance_pool: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_apply_by_stem_then_name_field_by_field() {
        let mut cfg = SandboxConfig::default();
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
}
