//! Testing a plugin in `cargo test` (`guest-sdk/README.md`, "Test a
//! plugin"): load the built component as the host does, evaluate its
//! declarations on a simulated host made in code
//! ([`crate::SimulatedHost::builder`], fixtures from
//! [`crate::fixtures`]), and call its `probe_version` export.
//!
//! ```no_run
//! use wasmgate::testing::TestPlugin;
//! use wasmgate::{OsFamily, SimulatedHost};
//!
//! let dir = std::env::temp_dir().join("vendor-test-host");
//! let host = SimulatedHost::builder(OsFamily::Linux)
//!     .executable("/usr/bin/vendor")
//!     .env("PATH", "/usr/bin")
//!     .build(&dir)
//!     .unwrap();
//! let plugin = TestPlugin::load("target/wasm32-wasip2/release/vendor.wasm", OsFamily::Linux).unwrap();
//! let a = plugin.availability("vendor", &host).unwrap();
//! assert!(a.offerable(), "{a:?}");
//! ```

use crate::availability::{Availability, availability_with};
use crate::declaration::{AppDef, Declaration, OsFamily};
use crate::manifest::{Manifest, ManifestContext, ServerSpec, manifest_from_value};
use crate::platform::Platform;
use crate::plugin::{LoadedPlugin, PluginRuntime, ProbeGrant, SandboxConfig};
use std::path::Path;

/// One plugin component loaded for one OS family, as the host loads it (the
/// same sandbox, limits and manifest validation).
pub struct TestPlugin {
    os: OsFamily,
    host: PluginRuntime,
    plugin: LoadedPlugin,
    manifest: Manifest,
}

impl std::fmt::Debug for TestPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestPlugin")
            .field("os", &self.os)
            .field("plugin", &self.plugin)
            .finish_non_exhaustive()
    }
}

impl TestPlugin {
    /// Loads the component at `path` with its `host-os` import answering
    /// `os`, and validates its manifest (`version.kind: custom` allowed).
    ///
    /// # Errors
    /// The text of what `wasmgate check` would say: the engine cannot
    /// start, the file does not load (not a component, another contract
    /// version, a trap, a limit), or every error of an invalid manifest,
    /// one per line.
    pub fn load(path: impl AsRef<Path>, os: OsFamily) -> Result<TestPlugin, String> {
        TestPlugin::load_cached(path, os, None)
    }

    /// As [`TestPlugin::load`], with the compile cache in `cache_dir`
    /// (`None`: compile every time): an 18 MB Python component compiles in
    /// seconds, and loads from the cache in milliseconds
    /// (`docs/performance.md`). Errors: as [`TestPlugin::load`].
    pub fn load_cached(
        path: impl AsRef<Path>,
        os: OsFamily,
        cache_dir: Option<std::path::PathBuf>,
    ) -> Result<TestPlugin, String> {
        let path = path.as_ref();
        let host = PluginRuntime::new(SandboxConfig {
            os,
            cache_dir,
            ..SandboxConfig::default()
        })
        .map_err(|e| format!("cannot start the component engine: {e:#}"))?;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => std::path::PathBuf::from("."),
        };
        let plugin = host.load_file(path, &dir).map_err(|e| e.to_string())?;
        let mut ctx = ManifestContext::new(path.display().to_string(), &plugin.dir);
        ctx.allow_custom_version = true;
        let res = manifest_from_value(&plugin.manifest, &ctx);
        let errors: Vec<String> = res.errors.iter().map(ToString::to_string).collect();
        match res.manifest {
            Some(manifest) if errors.is_empty() => Ok(TestPlugin {
                os,
                host,
                plugin,
                manifest,
            }),
            _ if errors.is_empty() => Err(format!("{}: not a usable manifest", path.display())),
            _ => Err(errors.join("\n")),
        }
    }

    /// The validated manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The server `name` of the manifest. Errors: no such server (the text
    /// lists the servers there are).
    pub fn server(&self, name: &str) -> Result<&ServerSpec, String> {
        self.manifest
            .servers
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| {
                let names: Vec<&str> = self
                    .manifest
                    .servers
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect();
                format!(
                    "plugin '{}' has no server '{name}' (servers: {})",
                    self.manifest.name,
                    names.join(", ")
                )
            })
    }

    /// Evaluates server `name`'s declaration on `platform` as the host does,
    /// with this component's `probe_version` for `version.kind: custom`
    /// (lent the located copy's folder, read-only, for the one call).
    ///
    /// # Errors
    /// No such server, `platform` of another OS family than the one the
    /// plugin was loaded for, or a probe that trapped, hit a limit or
    /// returned an error (the host would log it and read no version).
    pub fn availability(
        &self,
        name: &str,
        platform: &dyn Platform,
    ) -> Result<Availability, String> {
        self.same_os(platform)?;
        let spec = self.server(name)?;
        let decl = spec.declaration.clone().unwrap_or_else(|| Declaration {
            name: spec.name.clone(),
            app: None,
            requires: Default::default(),
        });
        let failure = std::cell::RefCell::new(None);
        let probe = |def: &AppDef, path: &str| -> Option<String> {
            let folder = crate::host::probe::grant_folder(def, path, platform);
            match self.probe_version(name, platform, &folder) {
                Ok(v) => v,
                Err(e) => {
                    failure.borrow_mut().get_or_insert(e);
                    None
                }
            }
        };
        let a = availability_with(&decl, platform, Some(&probe));
        match failure.into_inner() {
            Some(e) => Err(e),
            None => Ok(a),
        }
    }

    /// Calls the component's `probe_version` for server `name` with
    /// `folder` (a folder of `platform`, in its OS family's path syntax)
    /// lent read-only. `Ok(None)`: the probe read no version.
    ///
    /// # Errors
    /// `platform` of another OS family, a folder the platform cannot lend
    /// (missing, outside a simulated host's `root/`), or a probe that
    /// trapped, hit a limit or returned an error.
    pub fn probe_version(
        &self,
        name: &str,
        platform: &dyn Platform,
        folder: &str,
    ) -> Result<Option<String>, String> {
        self.same_os(platform)?;
        let dir = platform
            .open_grant_dir(folder)
            .ok_or_else(|| format!("cannot lend {folder} to the probe: no such folder"))?;
        self.host
            .probe_version(&self.plugin, name, self.os, ProbeGrant::from_dir(dir))
            .map_err(|e| format!("plugin '{}': server '{name}': {e}", self.plugin.name))
    }

    fn same_os(&self, platform: &dyn Platform) -> Result<(), String> {
        let theirs = platform.os_family();
        if theirs == self.os {
            Ok(())
        } else {
            Err(format!(
                "the plugin was loaded for {}, the platform is {}; load it with TestPlugin::load(path, OsFamily::{theirs:?})",
                self.os.as_str(),
                theirs.as_str()
            ))
        }
    }
}
