//! Custom version probes in the host's availability pass (`docs/security.md`, "Custom
//! probes in availability"; `docs/declarations.md` §6 step 8): for a server whose
//! declaration reads its version with `version.kind: custom`, the located
//! copy's install folder is lent to the component's `probe-version` export
//! as a read-only [`ProbeGrant`], one call per copy.

use crate::availability::{self, Availability};
use crate::declaration::{AppDef, Declaration, Presence, VersionKind};
use crate::manifest::ServerSpec;
use crate::platform::Platform;
use crate::plugin::{LoadedPlugin, PluginRuntime, ProbeGrant};
use std::collections::HashMap;

/// The plugin runtime and the component plugins that were accepted, by name;
/// kept alive as long as the [`super::Host`] so probes can run.
pub(super) struct Components {
    host: PluginRuntime,
    by_name: HashMap<String, LoadedPlugin>,
}

impl Components {
    pub(super) fn new(host: PluginRuntime, plugins: Vec<LoadedPlugin>) -> Components {
        let by_name = plugins.into_iter().map(|p| (p.name.clone(), p)).collect();
        Components { host, by_name }
    }
}

/// Availability of `spec`'s declaration `decl`, with the owning component's
/// probe when the declaration for this OS family uses `version.kind:
/// custom`. A failed probe (trap, limit, error) is logged with the plugin's
/// name, added to `warnings`, and reads as no version: with a
/// `min_version` that is `version_too_old`, as for any unreadable version.
pub(super) fn availability(
    decl: &Declaration,
    spec: &ServerSpec,
    platform: &dyn Platform,
    components: Option<&Components>,
    warnings: &mut Vec<String>,
) -> Availability {
    let custom = decl
        .app_for(platform.os_family())
        .is_some_and(|d| d.version_kind == VersionKind::Custom);
    let plugin = spec
        .plugin
        .as_deref()
        .and_then(|name| Some((components?, components?.by_name.get(name)?)));
    let (Some((c, plugin)), true) = (plugin, custom) else {
        return availability::availability(decl, platform);
    };
    let failures = std::cell::RefCell::new(Vec::new());
    let probe = |def: &AppDef, path: &str| -> Option<String> {
        let folder = grant_folder(def, path, platform);
        let Some(dir) = platform.open_grant_dir(&folder) else {
            tracing::debug!(
                plugin = %plugin.name,
                server = %spec.name,
                "cannot lend {folder} to the probe; no version read"
            );
            return None;
        };
        match c.host.probe_version(
            plugin,
            &spec.name,
            platform.os_family(),
            ProbeGrant::from_dir(dir),
        ) {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!(plugin = %plugin.name, server = %spec.name, "{e}");
                failures.borrow_mut().push(format!(
                    "plugin '{}': server '{}': version probe of {path}: {e}",
                    plugin.name, spec.name
                ));
                None
            }
        }
    };
    let a = availability::availability_with(decl, platform, Some(&probe));
    warnings.extend(failures.into_inner());
    a
}

/// The folder a probe is granted: the bundle itself for `presence:
/// bundle`, else the folder holding the executable (in the evaluated OS
/// family's path syntax).
pub(crate) fn grant_folder(def: &AppDef, path: &str, platform: &dyn Platform) -> String {
    if def.presence == Presence::Bundle {
        return path.to_string();
    }
    let seps: &[char] = match platform.os_family() {
        crate::declaration::OsFamily::Win32 => &['\\', '/'],
        _ => &['/'],
    };
    match path.trim_end_matches(seps).rfind(seps) {
        // `/vendor` → `/`; `C:\vendor.exe` → `C:\`.
        Some(i) if path[..i].is_empty() || path[..i].ends_with(':') => path[..=i].to_string(),
        Some(i) => path[..i].to_string(),
        None => path.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::SimulatedHost;

    fn sim(os: &str) -> (tempfile::TempDir, SimulatedHost) {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("host.yaml"), format!("os: {os}\n")).unwrap();
        std::fs::create_dir_all(t.path().join("root/opt/tool/bin")).unwrap();
        std::fs::write(t.path().join("root/opt/tool/bin/VERSION"), "1.2.3").unwrap();
        let h = SimulatedHost::load(t.path()).unwrap();
        (t, h)
    }

    fn def(presence: Presence) -> AppDef {
        AppDef {
            app_id: "tool".into(),
            os_family: crate::declaration::OsFamily::Linux,
            presence,
            locations: Vec::new(),
            version_kind: VersionKind::Custom,
            version_arg: String::new(),
            liveness: crate::declaration::Liveness::None,
        }
    }

    #[test]
    fn the_grant_is_the_executables_folder_or_the_bundle() {
        let (_t, linux) = sim("linux");
        let e = def(Presence::Executable);
        assert_eq!(
            grant_folder(&e, "/opt/tool/bin/tool", &linux),
            "/opt/tool/bin"
        );
        assert_eq!(grant_folder(&e, "/tool", &linux), "/");
        let b = def(Presence::Bundle);
        assert_eq!(
            grant_folder(&b, "/Applications/Tool.app", &linux),
            "/Applications/Tool.app"
        );
        let (_t, win) = sim("win32");
        assert_eq!(
            grant_folder(&e, r"C:\Program Files\Tool\tool.exe", &win),
            r"C:\Program Files\Tool"
        );
        assert_eq!(grant_folder(&e, r"C:\tool.exe", &win), r"C:\");
    }

    #[test]
    fn a_simulated_host_lends_folders_inside_its_root_only() {
        let (_t, linux) = sim("linux");
        let dir = linux.open_grant_dir("/opt/tool/bin").expect("inside root/");
        let g = ProbeGrant::from_dir(dir);
        assert_eq!(g.read_file("VERSION", 100).unwrap(), b"1.2.3");
        assert!(g.read_file("../VERSION", 100).is_err());
        assert!(linux.open_grant_dir("/opt/nope").is_none());
        assert!(linux.open_grant_dir("/opt/../..").is_none());
        assert!(linux.open_grant_dir("relative").is_none());
    }
}
