//! Hostile plugin components (`docs/security.md`, "Limits"): each is a real
//! component built from `tests/hostile-plugins/`. The host must stay up,
//! report the right reason, and keep loading the others.

use std::path::Path;
use std::sync::{Arc, mpsc};
use std::time::Duration;
use wasmgate::OsFamily;
use wasmgate::{
    CallFailure, GuestCall, LoadFailure, LoadedPlugin, PluginLimits, PluginRuntime, ProbeFailure,
    ProbeGrant, SandboxConfig,
};
use wasmgate_conformance::{hostile_plugin, plugins_dir};

fn host() -> Arc<PluginRuntime> {
    Arc::new(PluginRuntime::new(SandboxConfig::default()).expect("plugin host starts"))
}

/// Longest a hostile load may take before the test calls it a hang; far
/// above the host's own deadlines (seconds), so only a hang reaches it.
const HANG_BOUND: Duration = Duration::from_secs(60);

/// Loads the hostile component `name` in `host`, expecting a failure that
/// names the file; then checks the same host still loads a good plugin.
/// The load runs on its own thread and the test fails if it has not come
/// back within [`HANG_BOUND`] (a hang fails the test instead of stalling it).
fn load_err_in(host: &Arc<PluginRuntime>, name: &str) -> (LoadFailure, String) {
    let file = hostile_plugin(name);
    let dir = file.parent().unwrap().to_path_buf();
    let (tx, rx) = mpsc::channel();
    {
        let (host, file) = (host.clone(), file.clone());
        std::thread::spawn(move || {
            let _ = tx.send(host.load_file(&file, &dir));
        });
    }
    let e = rx
        .recv_timeout(HANG_BOUND)
        .unwrap_or_else(|_| panic!("loading {name} did not return within {HANG_BOUND:?}"))
        .unwrap_err();
    assert_eq!(e.file, file);
    let text = e.to_string();
    assert!(text.starts_with(&file.display().to_string()), "{text}");
    assert_good_plugin_still_loads(host);
    (e.reason, text)
}

fn load_err(name: &str) -> (LoadFailure, String) {
    load_err_in(&host(), name)
}

/// The host is still usable after a hostile call: a good component loads
/// and its manifest comes back.
fn assert_good_plugin_still_loads(host: &PluginRuntime) {
    let file = plugins_dir().join("gpu-render").join("gpu-render.wasm");
    let p = host
        .load_file(&file, file.parent().unwrap())
        .expect("a good plugin loads after a hostile one");
    assert_eq!(p.name, "gpu-render");
}

#[test]
pub(super) fn an_infinite_loop_in_manifest_hits_the_epoch_deadline() {
    let (reason, text) = load_err("infinite-loop");
    assert_eq!(
        reason,
        LoadFailure::Call {
            call: GuestCall::Manifest,
            failure: CallFailure::Timeout { deadline_ms: 1000 }
        },
        "{text}"
    );
    assert!(text.contains("manifest() timed out"), "{text}");
}

#[test]
pub(super) fn a_memory_bomb_hits_the_memory_limit() {
    let (reason, text) = load_err("memory-bomb");
    assert_eq!(
        reason,
        LoadFailure::Call {
            call: GuestCall::Manifest,
            failure: CallFailure::MemoryLimit {
                limit_bytes: 64 << 20
            }
        },
        "{text}"
    );
    assert!(text.contains("memory limit"), "{text}");
}

#[test]
pub(super) fn a_panic_in_manifest_is_a_trap() {
    let (reason, text) = load_err("trap");
    assert!(
        matches!(
            reason,
            LoadFailure::Call {
                call: GuestCall::Manifest,
                failure: CallFailure::Trap(_)
            }
        ),
        "{text}"
    );
    assert!(text.contains("manifest() trapped"), "{text}");
    // The panic message the guest printed is part of the reason.
    assert!(
        text.contains("this plugin always panics in manifest()"),
        "{text}"
    );
}

#[test]
pub(super) fn deep_recursion_overflows_the_guest_stack() {
    let (reason, text) = load_err("deep-recursion");
    assert_eq!(
        reason,
        LoadFailure::Call {
            call: GuestCall::Manifest,
            failure: CallFailure::StackOverflow
        },
        "{text}"
    );
    assert!(text.contains("overflowed its stack"), "{text}");
}

#[test]
pub(super) fn a_50_mib_manifest_is_refused_by_size() {
    let (reason, text) = load_err("huge-manifest");
    assert_eq!(
        reason,
        LoadFailure::Call {
            call: GuestCall::Manifest,
            failure: CallFailure::HostcallData {
                limit_bytes: 4 << 20
            }
        },
        "{text}"
    );
    assert!(text.contains("host-call data limit"), "{text}");
}

#[test]
pub(super) fn a_plugin_printing_100_mib_still_loads() {
    // The default 1 s deadline covers this on an idle machine; the test
    // allows more so a loaded CI machine does not turn it into a timeout.
    let host = PluginRuntime::new(SandboxConfig {
        manifest_deadline: std::time::Duration::from_secs(20),
        ..SandboxConfig::default()
    })
    .unwrap();
    let file = hostile_plugin("chatty");
    let plugin = host.load_file(&file, file.parent().unwrap()).unwrap();
    assert_eq!(plugin.name, "chatty");
    assert_good_plugin_still_loads(&host);
}

#[test]
pub(super) fn an_import_outside_the_world_is_refused_naming_it() {
    let (reason, text) = load_err("extra-import");
    assert_eq!(
        reason,
        LoadFailure::UnsupportedImport("evil:net/sock".into()),
        "{text}"
    );
    assert!(text.contains("imports `evil:net/sock`"), "{text}");
}

#[test]
pub(super) fn another_contract_version_is_refused_naming_both() {
    let (reason, text) = load_err("other-version");
    assert_eq!(
        reason,
        LoadFailure::ContractVersion {
            found: "0.2.0".into()
        }
    );
    assert!(text.contains("wasmgate:plugin@0.2.0"), "{text}");
    assert!(text.contains("wasmgate:plugin@0.1.0"), "{text}");
}

#[test]
fn hostile_plugins_beside_good_ones_do_not_stop_them() {
    let tmp = tempfile::tempdir().unwrap();
    for name in ["infinite-loop", "memory-bomb", "trap", "other-version"] {
        std::fs::copy(
            hostile_plugin(name),
            tmp.path().join(format!("{name}.wasm")),
        )
        .unwrap();
    }
    let results = host().load_dirs(&[tmp.path().to_path_buf(), plugins_dir()]);
    let loaded: Vec<_> = results
        .iter()
        .filter_map(|r| r.as_ref().ok())
        .map(|p| p.name.as_str())
        .collect();
    let failed = results.iter().filter(|r| r.is_err()).count();
    assert_eq!(failed, 4);
    assert_eq!(loaded, ["blender", "git", "gpu-render", "versionfile"]);
}

/// An install folder: `VERSION`, a `big.bin` over the read cap, a `many/`
/// folder over the listing cap, and a symbolic link to a file outside.
fn install_folder(root: &Path) -> std::path::PathBuf {
    let app = root.join("vendor");
    std::fs::create_dir_all(app.join("many")).unwrap();
    std::fs::write(app.join("VERSION"), "4.2.1\n").unwrap();
    std::fs::write(root.join("secret"), "outside").unwrap();
    std::fs::write(app.join("big.bin"), vec![0u8; 2 << 20]).unwrap();
    for i in 0..5000 {
        std::fs::write(app.join("many").join(i.to_string()), "").unwrap();
    }
    #[cfg(unix)]
    std::os::unix::fs::symlink(root.join("secret"), app.join("link")).unwrap();
    app
}

fn probe_plugin(host: &PluginRuntime) -> LoadedPlugin {
    let file = hostile_plugin("probe");
    host.load_file(&file, file.parent().unwrap()).unwrap()
}

#[test]
pub(super) fn a_custom_probe_reads_its_grant() {
    let tmp = tempfile::tempdir().unwrap();
    let app = install_folder(tmp.path());
    let host = host();
    let plugin = probe_plugin(&host);
    let v = host
        .probe_version(
            &plugin,
            "version-file",
            OsFamily::Linux,
            ProbeGrant::open(&app).unwrap(),
        )
        .unwrap();
    assert_eq!(
        v.as_deref(),
        Some(r#"4.2.1 linux ["VERSION", "big.bin", "link", "many"]"#)
    );
}

fn probe_err(server: &str) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let app = install_folder(tmp.path());
    let host = host();
    let plugin = probe_plugin(&host);
    let e = match host.probe_version(
        &plugin,
        server,
        OsFamily::Linux,
        ProbeGrant::open(&app).unwrap(),
    ) {
        Err(ProbeFailure::Probe(e)) => e,
        other => panic!("{server}: expected the probe's error, got {other:?}"),
    };
    // The same plugin still probes, and the host still loads others.
    let v = host
        .probe_version(
            &plugin,
            "version-file",
            OsFamily::Linux,
            ProbeGrant::open(&app).unwrap(),
        )
        .unwrap();
    assert!(v.is_some_and(|v| v.starts_with("4.2.1")));
    assert_good_plugin_still_loads(&host);
    e
}

#[test]
pub(super) fn a_probe_cannot_leave_its_grant() {
    assert!(probe_err("escape-dotdot").contains("Denied("));
    assert!(probe_err("escape-absolute").contains("Denied("));
    #[cfg(unix)]
    assert!(probe_err("escape-symlink").contains("Denied("));
}

#[test]
pub(super) fn a_probe_is_bounded_in_bytes_and_entries() {
    assert!(probe_err("read-huge").contains("TooLarge("));
    assert!(probe_err("list-huge").contains("TooLarge("));
}

#[test]
fn a_probe_listing_100_000_entries_stops_at_the_cap() {
    let tmp = tempfile::tempdir().unwrap();
    let app = install_folder(tmp.path());
    for i in 5000..100_000 {
        std::fs::File::create(app.join("many").join(i.to_string())).unwrap();
    }
    let host = host();
    let plugin = probe_plugin(&host);
    let r = host.probe_version(
        &plugin,
        "list-huge",
        OsFamily::Linux,
        ProbeGrant::open(&app).unwrap(),
    );
    match r {
        Err(ProbeFailure::Probe(e)) => assert!(e.contains("more than 4096 entries"), "{e}"),
        other => panic!("expected too-large, got {other:?}"),
    }
    assert_good_plugin_still_loads(&host);
}

#[test]
fn nothing_is_granted_outside_a_probe() {
    let host = host();
    let plugin = probe_plugin(&host);
    let skills = format!("{:?}", plugin.manifest);
    assert!(skills.contains("Denied("), "{skills}");
}

#[test]
pub(super) fn an_infinite_loop_in_a_probe_hits_the_probe_deadline() {
    let tmp = tempfile::tempdir().unwrap();
    let app = install_folder(tmp.path());
    let host = host();
    let plugin = probe_plugin(&host);
    let r = host.probe_version(
        &plugin,
        "spin",
        OsFamily::Linux,
        ProbeGrant::open(&app).unwrap(),
    );
    assert_eq!(
        r,
        Err(ProbeFailure::Call(CallFailure::Timeout {
            deadline_ms: 200
        }))
    );
    // The plugin is still usable afterwards: every call gets a fresh store.
    assert!(
        host.probe_version(
            &plugin,
            "version-file",
            OsFamily::Linux,
            ProbeGrant::open(&app).unwrap()
        )
        .unwrap()
        .is_some()
    );
    assert_good_plugin_still_loads(&host);
}

#[test]
pub(super) fn a_panic_in_a_probe_is_a_trap_and_the_plugin_probes_again() {
    let tmp = tempfile::tempdir().unwrap();
    let app = install_folder(tmp.path());
    let host = host();
    let plugin = probe_plugin(&host);
    let r = host.probe_version(
        &plugin,
        "panic-probe",
        OsFamily::Linux,
        ProbeGrant::open(&app).unwrap(),
    );
    match r {
        Err(ProbeFailure::Call(CallFailure::Trap(t))) => {
            assert!(t.contains("this probe always panics"), "{t}")
        }
        other => panic!("expected a trap, got {other:?}"),
    }
    let v = host
        .probe_version(
            &plugin,
            "version-file",
            OsFamily::Linux,
            ProbeGrant::open(&app).unwrap(),
        )
        .unwrap();
    assert!(v.is_some());
    assert_good_plugin_still_loads(&host);
}

/// One host with overrides: a 100 ms `manifest()` deadline and a 16 MiB
/// memory cap for two plugins by file stem, a 50 ms probe deadline for the
/// `probe` plugin by name.
fn host_with_overrides() -> Arc<PluginRuntime> {
    let mut cfg = SandboxConfig::default();
    cfg.overrides.insert(
        "infinite-loop".into(),
        PluginLimits {
            manifest_deadline: Some(Duration::from_millis(100)),
            ..PluginLimits::default()
        },
    );
    cfg.overrides.insert(
        "memory-bomb".into(),
        PluginLimits {
            memory_limit: Some(16 << 20),
            ..PluginLimits::default()
        },
    );
    cfg.overrides.insert(
        "probe".into(),
        PluginLimits {
            probe_deadline: Some(Duration::from_millis(50)),
            ..PluginLimits::default()
        },
    );
    Arc::new(PluginRuntime::new(cfg).unwrap())
}

#[test]
fn per_plugin_overrides_set_that_plugins_deadline_and_memory() {
    let host = host_with_overrides();
    let (reason, text) = load_err_in(&host, "infinite-loop");
    assert_eq!(
        reason,
        LoadFailure::Call {
            call: GuestCall::Manifest,
            failure: CallFailure::Timeout { deadline_ms: 100 }
        },
        "{text}"
    );
    let (reason, text) = load_err_in(&host, "memory-bomb");
    assert_eq!(
        reason,
        LoadFailure::Call {
            call: GuestCall::Manifest,
            failure: CallFailure::MemoryLimit {
                limit_bytes: 16 << 20
            }
        },
        "{text}"
    );
    assert!(text.contains("16 MiB"), "{text}");
    // A plugin without an override keeps the defaults.
    let (reason, _) = load_err_in(&host, "deep-recursion");
    assert_eq!(
        reason,
        LoadFailure::Call {
            call: GuestCall::Manifest,
            failure: CallFailure::StackOverflow
        }
    );
}

#[test]
fn a_probe_deadline_override_applies_by_plugin_name() {
    let tmp = tempfile::tempdir().unwrap();
    let app = install_folder(tmp.path());
    let host = host_with_overrides();
    let plugin = probe_plugin(&host);
    let r = host.probe_version(
        &plugin,
        "spin",
        OsFamily::Linux,
        ProbeGrant::open(&app).unwrap(),
    );
    assert_eq!(
        r,
        Err(ProbeFailure::Call(CallFailure::Timeout { deadline_ms: 50 }))
    );
}

/// `SandboxConfig::instance_pool`: with wasmtime's pooling allocator the
/// limits hold as they do on demand — a memory bomb stops at its own
/// override, above the default limit (the pool's slots are sized to the
/// largest limit), the host stays usable after it, and each call gives its
/// slot back (more calls than slots all succeed).
#[test]
fn the_pooling_allocator_keeps_each_plugins_limits_and_frees_its_slots() {
    let mut cfg = SandboxConfig {
        instance_pool: Some(2),
        ..SandboxConfig::default()
    };
    cfg.overrides.insert(
        "memory-bomb".into(),
        PluginLimits {
            memory_limit: Some(128 << 20),
            ..PluginLimits::default()
        },
    );
    let host = Arc::new(PluginRuntime::new(cfg).unwrap());
    let (reason, text) = load_err_in(&host, "memory-bomb");
    assert_eq!(
        reason,
        LoadFailure::Call {
            call: GuestCall::Manifest,
            failure: CallFailure::MemoryLimit {
                limit_bytes: 128 << 20
            }
        },
        "{text}"
    );
    let (reason, _) = load_err_in(&host, "deep-recursion");
    assert_eq!(
        reason,
        LoadFailure::Call {
            call: GuestCall::Manifest,
            failure: CallFailure::StackOverflow
        }
    );
    for _ in 0..10 {
        assert_good_plugin_still_loads(&host);
    }
}
