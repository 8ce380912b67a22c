//! Benchmark of the manifest pipeline (`docs/performance.md`, "Manifest
//! pipeline"): a `plugin.yaml` with N declarations (default 10,000), each
//! server an `app.linux` declaration of a mixed kind (a plain path, a `*`
//! versioned folder, `command`, `flatpak`, `snap`; half with a first
//! candidate that is absent), evaluated on a simulated linux host where about half of
//! the applications exist. Per declaration, median of the runs [min]:
//!
//! - `parser alone`: libyaml's parser producing the events of the text in
//!   memory, nothing kept — the floor under any decoder built on it;
//! - `parser + yaml_serde's event loader`: the same with `yaml_serde`
//!   loading every event (`IgnoredAny`: nothing built);
//! - `decode through yaml_serde's loader (before)`: the file's text into
//!   the manifest document with `yaml_serde` driving the document's
//!   `Deserialize` (how the pipeline decoded until 2026-12-05, and still
//!   does for what the fast decode hands over);
//! - `decode`: what the pipeline does — read, the depth check, and
//!   libyaml's events straight into the document
//!   (`host/src/manifest/yaml_events.rs`);
//! - `load + validate`: `load_plugin_yaml` — read, decode, validate every
//!   server entry and declaration (what `wasmgate check` does);
//! - `evaluate`: `availability()` of every parsed declaration;
//! - `end to end`: load + validate + evaluate.
//!
//! Then, when `target/bench-plugins/many-servers.wasm` is built
//! (`cargo xtask bench-plugins`) and N is its 10,000, the same declarations
//! from a component (`bench-plugins/many-servers`): checked equal to the
//! YAML's, then timed as a plugin is loaded on every start —
//! `manifest() alone`: instantiation, the guest building its record and
//! the lift across the boundary; `load (cached) + manifest() + …`: what
//! a start does, a compile-cache hit, that call, and the record's
//! conversion into the manifest document (and its drop); `validate`: the same
//! validator as the YAML's; and `end to end` with evaluation.
//!
//! ```text
//! cargo xtask bench-plugins    # optional: the component side
//! cargo run --release -p wasmgate --example manifest_bench [N]
//! ```
//!
//! It runs on the `wasmgate` binary's allocator, mimalloc (the default
//! `mimalloc` feature); `--no-default-features --features internals`
//! builds it on the system's, and the output names which.

use std::fmt::Write as _;
mod allocator;
mod timing;

use timing::time;

use std::path::Path;
use std::time::Duration;
use wasmgate::availability;
use wasmgate::manifest::load_plugin_yaml;
use wasmgate::{OsFamily, SimulatedHost};

/// The `i`-th server entry and, when its application exists, the files the
/// simulated host needs.
fn server(i: usize, yaml: &mut String, host: &mut Vec<String>) {
    let present = i.is_multiple_of(2);
    let name = format!("app{i}");
    let (location, file) = match i % 5 {
        0 => (
            format!("/opt/{name}/bin/{name}"),
            format!("/opt/{name}/bin/{name}"),
        ),
        // Each `*` under its own vendor folder: a pattern lists its parent,
        // and one /opt with thousands of entries would make every listing
        // cost thousands (measured: 570 µs a declaration).
        1 => (
            format!("/opt/vendor{i}/{name}-*/bin/{name}"),
            format!("/opt/vendor{i}/{name}-2.{i}/bin/{name}"),
        ),
        2 => (
            format!("{{kind: command, name: {name}}}"),
            format!("/usr/bin/{name}"),
        ),
        3 => (
            format!("{{kind: flatpak, app_id: org.example.App{i}}}"),
            format!("/var/lib/flatpak/exports/bin/org.example.App{i}"),
        ),
        _ => (
            format!("{{kind: snap, name: {name}}}"),
            format!("/snap/bin/{name}"),
        ),
    };
    // Half the declarations list a first candidate that never exists.
    let location = if i.is_multiple_of(2) {
        location
    } else {
        format!("[/usr/local/{name}/{name}, {location}]")
    };
    let requires = "\n    requires: {app: true}";
    let _ = write!(
        yaml,
        "  {name}:\n    command: {name}-mcp\n    app:\n      linux:\n        presence: executable\n        location: {location}{requires}\n"
    );
    if present {
        host.push(file);
    }
}

fn main() -> anyhow::Result<()> {
    let n: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(10_000);
    let tmp = tempfile::tempdir()?;
    let mut yaml = String::from("name: bench\nversion: 1.0.0\nmcp_servers:\n");
    let mut files = Vec::new();
    for i in 0..n {
        server(i, &mut yaml, &mut files);
    }
    let path = tmp.path().join("plugin.yaml");
    std::fs::write(&path, &yaml)?;
    let mut b = SimulatedHost::builder(OsFamily::Linux).env("PATH", "/usr/bin:/bin");
    for f in &files {
        b = b.executable(f.as_str());
    }
    let host = b.build(&tmp.path().join("host"))?;

    let r = load_plugin_yaml(&path);
    anyhow::ensure!(
        r.is_ok(),
        "the generated plugin.yaml is invalid: {:?}",
        r.errors.first()
    );
    let manifest = r.manifest.expect("valid");
    let decls: Vec<_> = manifest
        .servers
        .iter()
        .filter_map(|s| s.declaration.clone())
        .collect();
    anyhow::ensure!(decls.len() == n, "{} declarations of {n}", decls.len());
    let offerable = decls
        .iter()
        .filter(|d| availability(d, &host).offerable())
        .count();

    let runs = 15;
    let decode = time(runs, || {
        wasmgate::manifest::load::decode_yaml(&std::fs::read_to_string(&path).unwrap()).unwrap()
    });
    // The decode before libyaml's events went straight into the document.
    let decode_serde = time(runs, || {
        yaml_serde::from_str::<wasmgate::document::Value>(&std::fs::read_to_string(&path).unwrap())
            .unwrap()
    });
    // The floors under the decode: libyaml's parser alone (its events,
    // nothing kept), and yaml_serde's event loader on top of it (every
    // event and scalar copied, nothing built).
    let events = time(runs, || libyaml_events(&yaml));
    let loader = time(runs, || {
        yaml_serde::from_str::<serde::de::IgnoredAny>(&yaml).expect("valid YAML")
    });
    let load = time(runs, || load_plugin_yaml(&path));
    let evaluate = time(runs, || {
        decls
            .iter()
            .filter(|d| availability(d, &host).offerable())
            .count()
    });
    let end_to_end = time(runs, || {
        let r = load_plugin_yaml(&path);
        r.manifest
            .map(|m| {
                m.servers
                    .iter()
                    .filter_map(|s| s.declaration.as_ref())
                    .filter(|d| availability(d, &host).offerable())
                    .count()
            })
            .unwrap_or(0)
    });
    let per = |d: Duration| format!("{:.2}", d.as_secs_f64() * 1e6 / n as f64);
    // Each kind alone (declaration i has kind i % 5).
    let kinds = ["path", "`*` folder", "command", "flatpak", "snap"];
    let by_kind: Vec<(Duration, Duration)> = (0..kinds.len())
        .map(|k| {
            let some: Vec<_> = decls.iter().skip(k).step_by(kinds.len()).collect();
            let (med, min) = time(runs, || {
                some.iter()
                    .filter(|d| availability(d, &host).offerable())
                    .count()
            });
            let scale = kinds.len() as u32;
            (med * scale, min * scale)
        })
        .collect();
    println!(
        "## Manifest pipeline: plugin.yaml, {n} declarations ({} KiB), {offerable} offerable\n\nAllocator: {}.\n",
        yaml.len() / 1024,
        allocator::NAME
    );
    println!("| step | µs per declaration, median [min] of {runs} |");
    println!("|---|---|");
    for (label, (med, min)) in [
        ("parser alone (libyaml's events)", events),
        ("parser + yaml_serde's event loader (`IgnoredAny`)", loader),
        ("decode through yaml_serde's loader (before)", decode_serde),
        ("decode (libyaml's events into the document)", decode),
        ("load + validate", load),
        ("evaluate (availability)", evaluate),
        ("end to end", end_to_end),
    ] {
        println!("| {label} | {} [{}] |", per(med), per(min));
    }
    for (kind, (med, min)) in kinds.iter().zip(by_kind) {
        println!("| evaluate, {kind} only | {} [{}] |", per(med), per(min));
    }
    component(n, &manifest, &host, runs, &per, end_to_end)
}

/// The events libyaml's parser gives for `text`, counted and dropped.
fn libyaml_events(text: &str) -> usize {
    use libyaml_rs as sys;
    use std::mem::MaybeUninit;
    let mut count = 0;
    let mut parser = MaybeUninit::<sys::yaml_parser_t>::uninit();
    let p = parser.as_mut_ptr();
    // SAFETY: libyaml's C API as yaml_serde drives it: the parser is
    // initialised before use and deleted once, `text` outlives it, and
    // each event is deleted right after its type is read.
    unsafe {
        assert!(!sys::yaml_parser_initialize(p).fail, "parser");
        sys::yaml_parser_set_encoding(p, sys::YAML_UTF8_ENCODING);
        sys::yaml_parser_set_input_string(p, text.as_ptr(), text.len() as u64);
        loop {
            let mut event = MaybeUninit::<sys::yaml_event_t>::uninit();
            let e = event.as_mut_ptr();
            assert!(!sys::yaml_parser_parse(p, e).fail, "valid YAML");
            let end = (*e).type_ == sys::YAML_STREAM_END_EVENT;
            sys::yaml_event_delete(e);
            count += 1;
            if end {
                break;
            }
        }
        sys::yaml_parser_delete(p);
    }
    count
}

/// The component side: the same declarations from `many-servers.wasm`.
fn component(
    n: usize,
    yaml: &wasmgate::Manifest,
    host: &SimulatedHost,
    runs: usize,
    per: &dyn Fn(Duration) -> String,
    yaml_end_to_end: (Duration, Duration),
) -> anyhow::Result<()> {
    use std::sync::Arc;
    use wasmgate::manifest::{ManifestContext, PluginsConfig, manifest_from_value};
    use wasmgate::{PluginRuntime, SandboxConfig};
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-plugins/many-servers.wasm");
    if !file.is_file() || n != 10_000 {
        println!(
            "\n(component side skipped: it needs N = 10000 and `cargo xtask bench-plugins` for {})",
            file.display()
        );
        return Ok(());
    }
    let cache = tempfile::tempdir()?;
    let runtime = PluginRuntime::new(SandboxConfig {
        // 10,000 servers are about 1.2 MB of strings, and the guest builds
        // them all in its memory.
        max_manifest_bytes: 16 << 20,
        hostcall_bytes: 16 << 20,
        memory_limit: 256 << 20,
        cache_dir: Some(cache.path().to_path_buf()),
        ..SandboxConfig::default()
    })?;
    let dir = file.parent().expect("a folder").to_path_buf();
    runtime.load_file(&file, &dir)?; // fills the compile cache
    let grants = Arc::new(PluginsConfig::default());
    let validate = |p: &wasmgate::LoadedPlugin| {
        let ctx = ManifestContext::for_plugin(file.display().to_string(), &dir, grants.clone());
        manifest_from_value(&p.manifest, &ctx)
    };
    let loaded = runtime.load_file(&file, &dir)?;

    let r = validate(&loaded);
    anyhow::ensure!(
        r.errors.is_empty(),
        "component manifest: {:?}",
        r.errors.first()
    );
    let m = r.manifest.expect("valid");
    let decls = |m: &wasmgate::Manifest| -> Vec<_> {
        m.servers
            .iter()
            .map(|s| (s.name.clone(), s.declaration.clone()))
            .collect()
    };
    anyhow::ensure!(
        decls(&m) == decls(yaml),
        "the component's declarations differ from the plugin.yaml's"
    );
    let load = time(runs, || runtime.load_file(&file, &dir).unwrap());
    let call = time(runs, || runtime.manifest_size(&loaded).unwrap());
    let check = time(runs, || validate(&loaded));
    let end_to_end = time(runs, || {
        let p = runtime.load_file(&file, &dir).unwrap();
        validate(&p)
            .manifest
            .map(|m| {
                m.servers
                    .iter()
                    .filter_map(|s| s.declaration.as_ref())
                    .filter(|d| availability(d, host).offerable())
                    .count()
            })
            .unwrap_or(0)
    });
    println!(
        "\n## The same {n} declarations from a component ({} KiB `.wasm`), equal to the YAML's\n",
        std::fs::metadata(&file)?.len() / 1024
    );
    println!("| step | µs per declaration, median [min] of {runs} |");
    println!("|---|---|");
    for (label, (med, min)) in [
        (
            "manifest() alone: instantiate, the guest's work, the lift",
            call,
        ),
        (
            "load (cached) + manifest() + the record into the document",
            load,
        ),
        ("validate", check),
        ("end to end", end_to_end),
    ] {
        println!("| {label} | {} [{}] |", per(med), per(min));
    }
    println!(
        "| component ÷ plugin.yaml, end to end (medians / minima) | {:.2} / {:.2} |",
        end_to_end.0.as_secs_f64() / yaml_end_to_end.0.as_secs_f64(),
        end_to_end.1.as_secs_f64() / yaml_end_to_end.1.as_secs_f64()
    );
    Ok(())
}
