//! Loading the example plugin components with the library: manifests as
//! built by the SDK, and clear errors for files that are not plugins.

use std::path::{Path, PathBuf};
use wasmgate::document::Value;
use wasmgate::{
    CacheOutcome, LoadFailure, LoadedPlugin, PluginLoadError, PluginRuntime, SandboxConfig,
};
use wasmgate_conformance::plugins_dir;

fn host() -> PluginRuntime {
    PluginRuntime::new(SandboxConfig::default()).expect("plugin host starts")
}

fn get<'a>(v: &'a Value, path: &[&str]) -> &'a Value {
    let mut cur = v;
    for key in path {
        cur = match cur {
            Value::Mapping(m) => m
                .get(*key)
                .unwrap_or_else(|| panic!("no key {key} in {cur:?}")),
            Value::Sequence(s) => &s[key.parse::<usize>().unwrap()],
            _ => panic!("{key}: not a mapping in {cur:?}"),
        };
    }
    cur
}

fn yaml(s: &str) -> Value {
    yaml_serde::from_str(s).unwrap()
}

/// Copies the three example plugin folders into a fresh folder, so a test
/// can add bad files beside them without touching `target/plugins`.
fn copy_examples(to: &Path) {
    for name in ["git", "blender", "gpu-render"] {
        let from = plugins_dir().join(name);
        std::fs::create_dir_all(to.join(name)).unwrap();
        for entry in std::fs::read_dir(&from).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), to.join(name).join(entry.file_name())).unwrap();
        }
    }
}

fn split(
    results: Vec<Result<LoadedPlugin, PluginLoadError>>,
) -> (Vec<LoadedPlugin>, Vec<PluginLoadError>) {
    let mut ok = Vec::new();
    let mut err = Vec::new();
    for r in results {
        match r {
            Ok(p) => ok.push(p),
            Err(e) => err.push(e),
        }
    }
    (ok, err)
}

fn by_name<'a>(plugins: &'a [LoadedPlugin], name: &str) -> &'a LoadedPlugin {
    plugins
        .iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("plugin {name} not loaded"))
}

#[test]
fn the_three_example_plugins_load_with_their_manifests() {
    let dir = plugins_dir();
    let (plugins, errors) = split(host().load_dirs(std::slice::from_ref(&dir)));
    assert!(errors.is_empty(), "{errors:?}");
    // git, blender, gpu-render, and versionfile (custom probe; its probe
    // is tested in `custom_probes.rs`).
    assert_eq!(plugins.len(), 4);

    let git = by_name(&plugins, "git");
    assert_eq!(git.dir, dir.join("git"));
    assert_eq!(git.file, dir.join("git").join("git.wasm"));
    let server = get(&git.manifest, &["mcp_servers", "git"]);
    assert_eq!(
        get(server, &["command"]),
        &yaml("\"${PLUGIN_DIR}/git-mcp-server\"")
    );
    assert_eq!(
        get(server, &["app"]),
        &yaml(
            r#"
linux: {presence: executable, location: [{kind: command, name: git}], version: {kind: none}, liveness: {kind: none}}
darwin: {presence: executable, location: [{kind: command, name: git}], version: {kind: none}, liveness: {kind: none}}
win32:
  presence: executable
  location:
    - {kind: uninstall_registry, display_name_prefix: Git, file: cmd/git.exe}
    - "%ProgramFiles%/Git/cmd/git.exe"
  version: {kind: none}
  liveness: {kind: none}
"#
        )
    );
    assert_eq!(get(server, &["requires"]), &yaml("{app: true}"));
    assert_eq!(get(&git.manifest, &["skills", "0", "name"]), &yaml("git"));
    let Value::String(md) = get(&git.manifest, &["skills", "0", "markdown"]) else {
        panic!("markdown is a string")
    };
    assert!(md.starts_with("---\n"), "{md}");
    assert!(md.contains("requires_apps: [git]"), "{md}");

    let blender = by_name(&plugins, "blender");
    let server = get(&blender.manifest, &["mcp_servers", "blender"]);
    assert_eq!(get(server, &["command"]), &yaml("uvx"));
    assert_eq!(get(server, &["args"]), &yaml("[blender-mcp]"));
    assert_eq!(
        get(server, &["app", "linux", "location"]),
        &yaml(
            "[{kind: command, name: blender}, {kind: flatpak, app_id: org.blender.Blender}, {kind: snap, name: blender}]"
        )
    );
    assert_eq!(
        get(server, &["app", "darwin"]),
        &yaml(
            "{presence: bundle, location: [{kind: app_bundle, name: Blender.app}], version: {kind: plist}, liveness: {kind: none}}"
        )
    );
    assert_eq!(
        get(server, &["app", "win32", "version"]),
        &yaml("{kind: pe_resource}")
    );
    assert_eq!(
        get(server, &["requires"]),
        &yaml(r#"{app: true, min_version: "3.0"}"#)
    );

    let gpu = by_name(&plugins, "gpu-render");
    let server = get(&gpu.manifest, &["mcp_servers", "gpu-render"]);
    assert_eq!(
        get(server, &["requires"]),
        &yaml("{app: false, gpu: nvidia}")
    );
    assert_eq!(get(server, &["timeout"]), &yaml("600"));
    assert!(matches!(server, Value::Mapping(m) if !m.contains_key("app")));

    let vf = by_name(&plugins, "versionfile");
    let server = get(&vf.manifest, &["mcp_servers", "versionfile"]);
    assert_eq!(
        get(server, &["app", "linux", "version"]),
        &yaml("{kind: custom}")
    );
    assert_eq!(
        get(server, &["requires"]),
        &yaml(r#"{app: true, min_version: "2.0"}"#)
    );
}

#[test]
fn the_git_plugin_ships_its_server_beside_the_component() {
    let exe = format!("git-mcp-server{}", std::env::consts::EXE_SUFFIX);
    assert!(plugins_dir().join("git").join(exe).is_file());
}

fn one_error_for(file_name: &str, bytes: &[u8]) -> PluginLoadError {
    let tmp = tempfile::tempdir().unwrap();
    copy_examples(tmp.path());
    let bad: PathBuf = tmp.path().join(file_name);
    std::fs::write(&bad, bytes).unwrap();
    let (plugins, errors) = split(host().load_dirs(&[tmp.path().to_path_buf()]));
    assert_eq!(plugins.len(), 3, "the other plugins still load: {errors:?}");
    assert_eq!(errors.len(), 1, "{errors:?}");
    let e = errors.into_iter().next().unwrap();
    assert_eq!(e.file, bad);
    assert!(
        e.to_string().starts_with(&format!("{}: ", bad.display())),
        "the message names the file: {e}"
    );
    e
}

#[test]
fn a_malformed_component_is_one_clear_error_and_the_others_load() {
    // A component header followed by garbage.
    let e = one_error_for("broken.wasm", b"\0asm\x0d\0\x01\0garbage-after-header");
    assert!(matches!(e.reason, LoadFailure::Invalid(_)), "{e}");
    assert!(e.to_string().contains("invalid component"), "{e}");
}

#[test]
fn random_bytes_are_not_webassembly() {
    let bytes: Vec<u8> = (0u32..4096)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let e = one_error_for("random.wasm", &bytes);
    assert_eq!(e.reason, LoadFailure::NotWasm, "{e}");
    assert!(e.to_string().contains("not a WebAssembly file"), "{e}");
}

#[test]
fn an_empty_file_is_reported_as_empty() {
    let e = one_error_for("empty.wasm", b"");
    assert_eq!(e.reason, LoadFailure::Empty, "{e}");
    assert!(e.to_string().contains("empty file"), "{e}");
}

#[test]
fn a_core_module_is_not_a_component() {
    // The smallest valid core module: magic + version 1.
    let e = one_error_for("core.wasm", b"\0asm\x01\0\0\0");
    assert_eq!(e.reason, LoadFailure::CoreModule, "{e}");
    assert!(
        e.to_string()
            .contains("core WebAssembly module, not a component"),
        "{e}"
    );
}

#[test]
fn a_missing_plugin_folder_is_reported() {
    let missing = std::env::temp_dir().join("wasmgate-no-such-plugin-folder");
    let results = host().load_dirs(std::slice::from_ref(&missing));
    assert_eq!(results.len(), 1);
    let e = results.into_iter().next().unwrap().unwrap_err();
    assert_eq!(e.file, missing);
    assert!(matches!(e.reason, LoadFailure::Io(_)));
}

#[test]
fn the_compile_cache_is_used_and_a_corrupted_entry_is_recompiled() {
    let cache = tempfile::tempdir().unwrap();
    let host = PluginRuntime::new(SandboxConfig {
        cache_dir: Some(cache.path().to_path_buf()),
        ..SandboxConfig::default()
    })
    .unwrap();
    let file = plugins_dir().join("git").join("git.wasm");
    let dir = file.parent().unwrap();
    assert_eq!(
        host.load_file(&file, dir).unwrap().cache,
        CacheOutcome::Miss
    );
    let second = host.load_file(&file, dir).unwrap();
    assert_eq!(second.cache, CacheOutcome::Hit);
    assert_eq!(second.name, "git");

    // The entry is mapped while `second` lives; truncating a mapped file
    // is what the read-only entry keeps others from doing.
    drop(second);
    // Truncate the entry (written read-only: its owner must make it
    // writable first): it must be recompiled, not loaded.
    let entry = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .expect("a cache entry");
    let data = std::fs::read(&entry).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&entry).unwrap().permissions().mode();
        assert_eq!(mode & 0o222, 0, "the entry is written read-only");
        std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    std::fs::write(&entry, &data[..data.len() / 2]).unwrap();
    let third = host.load_file(&file, dir).unwrap();
    assert_eq!(third.cache, CacheOutcome::Recompiled);
    assert_eq!(third.name, "git");
    assert_eq!(host.load_file(&file, dir).unwrap().cache, CacheOutcome::Hit);
}
