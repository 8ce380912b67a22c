//! Benchmark of plugin loading (`docs/security.md`, "Compile cache"; `docs/performance.md`):
//! per example component, cold compile vs load from the compile cache;
//! instantiation from the `InstancePre`; a `manifest()` call; a
//! `probe-version` call that reads one file; resident memory per loaded
//! plugin; and the start-up of the `wasmgate status` binary with 1, 10
//! and 100 cached plugins and no MCP server to connect; the plugin lock's
//! integrity check per load (`trust_check`). Then, when it is built, the
//! Python example plugin (`target/python-plugins/inkscape`, 18 MB of
//! CPython by componentize-py): its first load, its cached load, and
//! `wasmgate status` over it alone (`python`). `runtime`: one `manifest()`
//! call from each place a guest call can be made — no runtime, a
//! `spawn_blocking` thread (the gateway's loads), the `block_on` thread of a
//! multi-thread runtime (the CLI's), a current-thread runtime (a scoped
//! thread per call).
//!
//! Needs the example components (`cargo xtask plugins`) and the release
//! binary beside this example (`target/release/wasmgate`). Run:
//!
//! ```text
//! cargo xtask plugins
//! cargo build --release -p wasmgate --bin wasmgate --example plugin_bench
//! target/release/examples/plugin_bench
//! target/release/examples/plugin_bench trust   # only the plugin lock's check
//! target/release/examples/plugin_bench python  # only the Python plugin
//! target/release/examples/plugin_bench runtime # guest calls inside Tokio
//! ```

use std::path::{Path, PathBuf};
use std::process::Command;
mod timing;

use timing::time;

use std::time::{Duration, Instant};
use wasmgate::OsFamily;
use wasmgate::{CacheOutcome, LoadedPlugin, PluginRuntime, ProbeGrant, SandboxConfig};

const PLUGINS: &[&str] = &["git", "blender", "gpu-render", "versionfile"];

fn us(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e6)
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e3)
}

/// Resident set size of this process in bytes (`/proc/self/statm`).
fn rss() -> u64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = s
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn component(name: &str) -> PathBuf {
    root()
        .join("target/plugins")
        .join(name)
        .join(format!("{name}.wasm"))
}

/// `bytes` with a custom section appended: a different file (and cache
/// entry) with the same code, so N copies are N distinct components.
fn with_custom_section(bytes: &[u8], i: usize) -> Vec<u8> {
    let name = b"bench-copy";
    let payload = i.to_le_bytes();
    let mut section = vec![name.len() as u8];
    section.extend_from_slice(name);
    section.extend_from_slice(&payload);
    let mut out = bytes.to_vec();
    out.push(0); // custom section id
    out.push(section.len() as u8); // LEB128, < 128
    out.extend_from_slice(&section);
    out
}

fn main() -> anyhow::Result<()> {
    for p in PLUGINS {
        anyhow::ensure!(
            component(p).is_file(),
            "{} missing: run `cargo xtask plugins`",
            component(p).display()
        );
    }
    let tmp = tempfile::tempdir()?;
    let cache = tmp.path().join("cache");
    if std::env::args().nth(1).as_deref() == Some("trust") {
        // Only the plugin lock's integrity check.
        return trust_check(&cache);
    }
    if std::env::args().nth(1).as_deref() == Some("python") {
        return python(&cache);
    }
    if std::env::args().nth(1).as_deref() == Some("runtime") {
        return in_runtime();
    }
    let cold_host = PluginRuntime::new(SandboxConfig::default())?;
    let host = PluginRuntime::new(SandboxConfig {
        cache_dir: Some(cache.clone()),
        ..SandboxConfig::default()
    })?;

    println!("## Per plugin (median of runs; min in brackets)\n");
    // The pooling instance allocator (`SandboxConfig::instance_pool`), for the
    // instantiate column beside the default on-demand one.
    let pooled_host = PluginRuntime::new(SandboxConfig {
        cache_dir: Some(cache.clone()),
        instance_pool: Some(16),
        ..SandboxConfig::default()
    })?;
    println!(
        "| plugin | .wasm KiB | cold load (compile) ms | cached load µs | cold/cached | instantiate µs | instantiate, pooling µs | manifest() µs |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let mut loaded: Vec<LoadedPlugin> = Vec::new();
    for name in PLUGINS {
        let file = component(name);
        let dir = file.parent().unwrap().to_path_buf();
        let size = std::fs::metadata(&file)?.len();
        let (cold, cold_min) = time(5, || cold_host.load_file(&file, &dir).unwrap());
        // Fill the cache once, then every load is a hit.
        let first = host.load_file(&file, &dir).unwrap();
        assert_ne!(first.cache, CacheOutcome::Hit);
        let (cached, cached_min) = time(50, || {
            let p = host.load_file(&file, &dir).unwrap();
            assert_eq!(p.cache, CacheOutcome::Hit);
            p
        });
        let p = host.load_file(&file, &dir).unwrap();
        let (inst, inst_min) = time(2000, || host.instantiate(&p).unwrap());
        let pooled = pooled_host.load_file(&file, &dir).unwrap();
        let (pool, pool_min) = time(2000, || pooled_host.instantiate(&pooled).unwrap());
        let (man, man_min) = time(2000, || host.manifest_size(&p).unwrap());
        println!(
            "| {name} | {} | {} [{}] | {} [{}] | {:.0}× | {} [{}] | {} [{}] | {} [{}] |",
            size / 1024,
            ms(cold),
            ms(cold_min),
            us(cached),
            us(cached_min),
            cold.as_secs_f64() / cached.as_secs_f64(),
            us(inst),
            us(inst_min),
            us(pool),
            us(pool_min),
            us(man),
            us(man_min),
        );
        loaded.push(p);
    }

    trust_check(&cache)?;

    // A probe call with one file read (versionfile's VERSION), grant
    // opening included.
    let app = tmp.path().join("app");
    std::fs::create_dir_all(&app)?;
    std::fs::write(app.join("VERSION"), "2.3.1\n")?;
    let vf = loaded.iter().find(|p| p.name == "versionfile").unwrap();
    let (probe, probe_min) = time(2000, || {
        host.probe_version(
            vf,
            "versionfile",
            OsFamily::Linux,
            ProbeGrant::open(&app).unwrap(),
        )
        .unwrap()
        .unwrap()
    });
    println!(
        "\nprobe-version() reading one file (grant opened each time): {} µs [{}]",
        us(probe),
        us(probe_min)
    );

    // Resident memory per loaded plugin: 100 distinct cached components
    // (copies of versionfile with a custom section), kept loaded.
    let bytes = std::fs::read(component("versionfile"))?;
    let copies = tmp.path().join("copies");
    std::fs::create_dir_all(&copies)?;
    for i in 0..100 {
        std::fs::write(
            copies.join(format!("vf{i:03}.wasm")),
            with_custom_section(&bytes, i),
        )?;
    }
    for r in host.load_dirs(std::slice::from_ref(&copies)) {
        r.unwrap(); // fill the cache
    }
    let before = rss();
    let kept: Vec<_> = host
        .load_dirs(std::slice::from_ref(&copies))
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let after = rss();
    assert!(kept.iter().all(|p| p.cache == CacheOutcome::Hit));
    println!(
        "resident memory: {:.0} KiB per loaded plugin ({} plugins, RSS {} → {} MiB)",
        (after.saturating_sub(before)) as f64 / 1024.0 / kept.len() as f64,
        kept.len(),
        before >> 20,
        after >> 20
    );
    let (all, _) = time(5, || host.load_dirs(std::slice::from_ref(&copies)));
    println!(
        "load_dirs of 100 cached plugins in process: {} ms ({} µs per plugin)",
        ms(all),
        us(all / 100)
    );
    drop(kept);

    // `wasmgate status` start-up with 1, 10 and 100 cached plugins.
    let bin = std::env::current_exe()?
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .join("wasmgate");
    if !bin.is_file() {
        println!("\n{} missing: status start-up skipped", bin.display());
        return python(&cache);
    }
    println!("\n## `wasmgate status` start-up (process spawn to exit)\n");
    println!("| plugins | cold cache ms | cached ms (median) | cached ms (min) |");
    println!("|---|---|---|---|");
    for n in [0usize, 1, 10, 100] {
        let dir = tmp.path().join(format!("status{n}"));
        std::fs::create_dir_all(&dir)?;
        for i in 0..n {
            std::fs::write(
                dir.join(format!("vf{i:03}.wasm")),
                with_custom_section(&bytes, 1000 + i),
            )?;
        }
        let status_cache = tmp.path().join(format!("status-cache{n}"));
        let run = || {
            let out = Command::new(&bin)
                .args(["status", "--json", "--plugins"])
                .arg(&dir)
                // Unpinned copies: the lock's cost is measured in
                // `trust_check` above.
                .env("WASMGATE_DEV", "1")
                .env("WASMGATE_CACHE", &status_cache)
                .env_remove("VERSIONFILE_HOME")
                .output()
                .unwrap();
            assert!(out.status.success());
        };
        let t = Instant::now();
        run();
        let cold = t.elapsed();
        let (med, min) = time(10, run);
        println!("| {n} | {} | {} | {} |", ms(cold), ms(med), ms(min));
    }
    python(&cache)
}

/// `wasmgate` beside this example (`target/release/wasmgate`).
fn wasmgate_bin() -> anyhow::Result<PathBuf> {
    Ok(std::env::current_exe()?
        .parent()
        .and_then(Path::parent)
        .ok_or_else(|| anyhow::anyhow!("no folder above the example"))?
        .join("wasmgate"))
}

/// The Python example plugin (`docs/performance.md`, "Python plugins"):
/// its first load (compile and cache write, once: seconds), its cached
/// load (the component's SHA-256 and the entry's BLAKE3 remembered by file
/// identity, the entry read and deserialized), `instantiate` and
/// `manifest()` (CPython's start from its snapshot), and `wasmgate status`
/// over a folder holding only a copy of it: the copy's first run hashes
/// it (a new file identity), the runs after load from the cache.
fn python(cache: &Path) -> anyhow::Result<()> {
    let file = root().join("target/python-plugins/inkscape/inkscape.wasm");
    if !file.is_file() {
        println!("\n{} missing: Python plugin skipped", file.display());
        return Ok(());
    }
    let dir = file.parent().unwrap().to_path_buf();
    let host = PluginRuntime::new(SandboxConfig {
        cache_dir: Some(cache.to_path_buf()),
        ..SandboxConfig::default()
    })?;
    println!("\n## Python plugin (inkscape, componentize-py)\n");
    let t = Instant::now();
    let first = host.load_file(&file, &dir)?;
    let first_ms = t.elapsed();
    let (cached, cached_min) = time(50, || {
        let p = host.load_file(&file, &dir).unwrap();
        assert_eq!(p.cache, CacheOutcome::Hit);
        p
    });
    let p = host.load_file(&file, &dir)?;
    let (inst, inst_min) = time(50, || host.instantiate(&p).unwrap());
    let (man, man_min) = time(50, || host.manifest_size(&p).unwrap());
    println!(
        "| .wasm KiB | first load ({:?}) ms | cached load ms [min] | instantiate ms [min] | manifest() ms [min] |",
        first.cache
    );
    println!("|---|---|---|---|---|");
    println!(
        "| {} | {} | {} [{}] | {} [{}] | {} [{}] |",
        std::fs::metadata(&file)?.len() / 1024,
        ms(first_ms),
        ms(cached),
        ms(cached_min),
        ms(inst),
        ms(inst_min),
        ms(man),
        ms(man_min),
    );
    let bin = wasmgate_bin()?;
    if !bin.is_file() {
        println!("\n{} missing: status start-up skipped", bin.display());
        return Ok(());
    }
    let tmp = tempfile::tempdir()?;
    let plugins = tmp.path().join("plugins");
    std::fs::create_dir_all(&plugins)?;
    std::fs::copy(&file, plugins.join("inkscape.wasm"))?;
    let run = || {
        let out = Command::new(&bin)
            .args(["status", "--json", "--plugins"])
            .arg(&plugins)
            .env("WASMGATE_DEV", "1")
            .env("WASMGATE_CACHE", cache)
            .env("PATH", tmp.path())
            .output()
            .unwrap();
        assert!(out.status.success());
    };
    let t = Instant::now();
    run();
    let new_file = t.elapsed();
    let (med, min) = time(20, run);
    println!(
        "\n`wasmgate status` over the Python plugin alone: {} ms for a new copy (hashed once), \
         then {} ms median [{} min] of 20 cached runs",
        ms(new_file),
        ms(med),
        ms(min)
    );
    Ok(())
}

/// The plugin lock's integrity check (docs/security.md): per example plugin
/// folder, the first hash of every file and the check of a cached load
/// (identities unchanged, nothing read); then `Host::load` of the example
/// plugins with development mode against an approved lock.
fn trust_check(cache: &Path) -> anyhow::Result<()> {
    use wasmgate::TrustPolicy;
    use wasmgate::trust::digest::{Unit, digest, forget_seen};
    use wasmgate::{Host, HostOptions};
    println!("\n## Integrity check of the plugin lock\n");
    println!("| plugin folder | files | KiB hashed | first hash ms | cached check µs [min] |");
    println!("|---|---|---|---|---|");
    for name in PLUGINS {
        let dir = component(name).parent().unwrap().to_path_buf();
        forget_seen();
        let t = Instant::now();
        let d = digest(&Unit::Folder(dir.clone()), &[]).map_err(anyhow::Error::msg)?;
        let first = t.elapsed();
        // Only the lock's records: what a fresh `wasmgate` process has.
        forget_seen();
        let (c, cmin) = time(500, || {
            digest(&Unit::Folder(dir.clone()), &d.files).unwrap()
        });
        let bytes: u64 = d.files.iter().map(|f| f.size).sum();
        println!(
            "| {name} | {} | {} | {} | {} [{}] |",
            d.files.len(),
            bytes / 1024,
            ms(first),
            us(c),
            us(cmin)
        );
    }
    let tmp = tempfile::tempdir()?;
    let lock = tmp.path().join("plugins.lock");
    let options = |trust: TrustPolicy| {
        let mut o = HostOptions::new();
        o.plugin_dirs = vec![root().join("target/plugins")];
        o.sandbox.cache_dir = Some(cache.to_path_buf());
        o.trust = trust;
        o
    };
    let first = Host::load(options(TrustPolicy::Lock(Some(lock.clone()))))?;
    for p in first.plugins() {
        first.approve(&p.name).map_err(anyhow::Error::msg)?;
    }
    let n = first.plugins().len();
    drop(first);
    let approved = Host::load(options(TrustPolicy::Lock(Some(lock.clone()))))?;
    anyhow::ensure!(
        approved.plugins().iter().all(|p| p.trust.state.runs()),
        "every example plugin approved"
    );
    drop(approved);
    forget_seen();
    // Interleaved pairs, so drift of a shared machine's load hits both
    // sides alike; the median of the per-pair differences.
    let mut dev = Vec::new();
    let mut locked = Vec::new();
    let mut diff = Vec::new();
    for _ in 0..200 {
        let t = Instant::now();
        std::hint::black_box(Host::load(options(TrustPolicy::Dev)).unwrap());
        let d = t.elapsed();
        let t = Instant::now();
        std::hint::black_box(Host::load(options(TrustPolicy::Lock(Some(lock.clone())))).unwrap());
        let l = t.elapsed();
        dev.push(d);
        locked.push(l);
        diff.push(l.as_secs_f64() - d.as_secs_f64());
    }
    dev.sort();
    locked.sort();
    diff.sort_by(f64::total_cmp);
    let (open, open_min) = time(200, || wasmgate::TrustStore::open(Some(lock.clone())));
    let per_pair = diff[diff.len() / 2];
    println!(
        "\nHost::load of the {n} example plugins (compile cache warm), 200 interleaved pairs: \
         --dev median {} ms, lock enforced median {} ms; median difference {:.1} µs \
         (quartiles {:.1} / {:.1} µs) = {:.1} µs per plugin; of it, reading the lock \
         (once per load) {} µs [{}]",
        ms(dev[dev.len() / 2]),
        ms(locked[locked.len() / 2]),
        per_pair * 1e6,
        diff[diff.len() / 4] * 1e6,
        diff[diff.len() * 3 / 4] * 1e6,
        per_pair * 1e6 / n as f64,
        us(open),
        us(open_min),
    );
    Ok(())
}

/// `manifest()` of the git plugin from each place a guest call is made
/// (`PluginRuntime`'s hand-over out of async code; `docs/performance.md`).
fn in_runtime() -> anyhow::Result<()> {
    let host = std::sync::Arc::new(PluginRuntime::new(SandboxConfig::default())?);
    let file = component("git");
    let dir = file.parent().unwrap().to_path_buf();
    let p = std::sync::Arc::new(host.load_file(&file, &dir).unwrap());
    const N: usize = 2000;
    let run = {
        let (host, p) = (host.clone(), p.clone());
        move || time(N, || host.manifest_size(&p).unwrap())
    };
    println!("\n## A guest call from inside Tokio (git, manifest(); median [min] µs)\n");
    println!("| where | µs |");
    println!("|---|---|");
    let show = |label: &str, (med, min): (Duration, Duration)| {
        println!("| {label} | {} [{}] |", us(med), us(min));
    };
    show("no runtime", run.clone()());
    let multi = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()?;
    let r = run.clone();
    show(
        "spawn_blocking thread (gateway load)",
        multi.block_on(async move { tokio::task::spawn_blocking(r).await })?,
    );
    let r = run.clone();
    show(
        "block_on thread, multi-thread runtime (CLI)",
        multi.block_on(async move { r() }),
    );
    let r = run.clone();
    show(
        "worker task, multi-thread runtime",
        multi.block_on(async move { tokio::spawn(async move { r() }).await })?,
    );
    let current = tokio::runtime::Builder::new_current_thread().build()?;
    show(
        "current-thread runtime (scoped thread)",
        current.block_on(async move { run() }),
    );
    Ok(())
}
