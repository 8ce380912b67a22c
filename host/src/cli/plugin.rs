//! `wasmgate plugin inspect|add|approve|list|remove`: review what a plugin
//! will run, install it, approve it in the plugin lock, and remove it
//! (`docs/security.md`, "Approval and the lock").

use crate::declaration::OsFamily;
use crate::host::{Host, HostOptions, PluginRecord};
use crate::manifest::{self, Manifest};
use crate::trust::digest::{self, Unit};
use crate::trust::surface::{self, Surface};
use crate::trust::{TrustPolicy, TrustState, signature};
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Largest download `plugin add URL` accepts, in bytes (256 MiB).
pub const MAX_DOWNLOAD_BYTES: u64 = 256 << 20;
/// Longest a download may take.
pub const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(120);

/// The `plugin` subcommands.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum PluginCommand {
    /// Show what a plugin would run, without installing it: name, version,
    /// SHA-256, every server's command line (command, args, env keys,
    /// passthrough names) or URL (header names), what each needs
    /// (`app:` / `requires:`), and its skills.
    Inspect {
        /// A `.wasm` component, a plugin folder, a `plugin.yaml` /
        /// `plugin.json`, or an `https://` URL of a component (with `--sha256`).
        source: String,
        /// The SHA-256 (hex) a downloaded component must have.
        #[arg(long, value_name = "HEX")]
        sha256: Option<String>,
    },
    /// Install a plugin into the plugins folder under its name and approve
    /// what it shows.
    Add {
        /// A `.wasm` component, a plugin folder, or an `https://` URL of a
        /// component (then `--sha256` is required).
        source: String,
        /// The SHA-256 (hex) the component must have (required for a URL).
        #[arg(long, value_name = "HEX")]
        sha256: Option<String>,
    },
    /// Approve a plugin as it is now (showing what changed since the last
    /// approval) and pin the tools its servers offer.
    Approve {
        /// Plugin name.
        name: String,
    },
    /// Every plugin with its state: approved, unapproved or changed.
    List,
    /// Remove a plugin from the lock, and its files from the plugins folder.
    Remove {
        /// Plugin name.
        name: String,
    },
}

/// What the `plugin` commands need from the command line.
pub struct Context {
    /// Plugin folders and config as for every command.
    pub options: HostOptions,
    /// Where `add` installs (first `--plugins`, else the default folder).
    pub install_dir: Option<PathBuf>,
    /// `--json`.
    pub json: bool,
}

/// Runs one `plugin` command; returns the exit code (0 done, 1 refused or
/// failed).
pub async fn run(mut ctx: Context, cmd: &PluginCommand) -> anyhow::Result<u8> {
    // Approvals always go to the user's lock, development mode or not.
    if ctx.options.trust.is_dev() {
        ctx.options.trust = TrustPolicy::default_lock();
    }
    let r = match cmd {
        PluginCommand::Inspect { source, sha256 } => inspect(&ctx, source, sha256.as_deref()).await,
        PluginCommand::Add { source, sha256 } => add(&ctx, source, sha256.as_deref()).await,
        PluginCommand::Approve { name } => approve(&ctx, name).await,
        PluginCommand::List => list(&ctx),
        PluginCommand::Remove { name } => remove(&ctx, name),
    };
    match r {
        Ok(()) => Ok(0),
        Err(e) => {
            eprintln!("wasmgate plugin: {}", crate::terminal::text(&e));
            Ok(1)
        }
    }
}

/// A plugin read from a source, not installed.
struct Inspected {
    manifest: Manifest,
    kind: &'static str,
    unit: Unit,
    /// The file a signature covers (component, or manifest).
    signed: PathBuf,
    digest: digest::Digest,
    /// Errors of parts left out (an invalid server), one sentence each.
    problems: Vec<String>,
    /// A downloaded copy's folder, removed on drop.
    _download: Option<TempDir>,
}

/// `plugin inspect --json`.
#[derive(Serialize)]
struct InspectOut<'a> {
    name: &'a str,
    version: &'a str,
    sha256: &'a str,
    kind: &'a str,
    source: String,
    signature: Option<String>,
    surface: &'a Surface,
    problems: &'a [String],
}

async fn inspect(ctx: &Context, source: &str, sha256: Option<&str>) -> Result<(), String> {
    let i = read_source(source, sha256).await?;
    let plugin_root = unit_root(&i.unit);
    let surface = surface::surface(&i.manifest, &plugin_root);
    let signature = signature_note(&ctx.options, &i.manifest.name, &i.signed);
    if ctx.json {
        print_json(&InspectOut {
            name: &i.manifest.name,
            version: &i.manifest.version,
            sha256: &i.digest.sha256,
            kind: i.kind,
            source: source.to_owned(),
            signature,
            surface: &surface,
            problems: &i.problems,
        });
    } else {
        let mut o = describe(
            &surface,
            &i.digest.sha256,
            i.kind,
            source,
            signature.as_deref(),
        );
        // What is left out is said, not silently dropped.
        for p in &i.problems {
            o.push_str(&format!("  problem (left out): {}\n", esc(p)));
        }
        print!("{o}");
    }
    Ok(())
}

async fn add(ctx: &Context, source: &str, sha256: Option<&str>) -> Result<(), String> {
    let i = read_source(source, sha256).await?;
    let name = i.manifest.name.clone();
    if !manifest::schema::is_server_name(&name) || name.contains(['/', '\\', '.']) {
        return Err(format!(
            "{source}: plugin name `{name}` cannot be a folder name; nothing was installed"
        ));
    }
    let Some(dir) = &ctx.install_dir else {
        return Err("no user config dir and no --plugins DIR: nowhere to install".into());
    };
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let dest = match &i.unit {
        Unit::File(_) => dir.join(format!("{name}.wasm")),
        Unit::Folder(_) => dir.join(&name),
    };
    if std::fs::symlink_metadata(&dest).is_ok() {
        return Err(format!(
            "{}: already exists; `wasmgate plugin remove {name}` first, or `wasmgate plugin approve {name}` to approve it as it is",
            dest.display()
        ));
    }
    let copied = match &i.unit {
        Unit::File(f) => copy_file(f, &dest).and_then(|()| {
            let sig = signature::signature_path(f);
            if sig.is_file() {
                copy_file(&sig, &signature::signature_path(&dest))
            } else {
                Ok(())
            }
        }),
        Unit::Folder(src) => copy_tree(src, &dest, 0),
    };
    let undo = |dest: &Path| {
        let _ = std::fs::remove_file(signature::signature_path(dest));
        let _ = if dest.is_dir() {
            std::fs::remove_dir_all(dest)
        } else {
            std::fs::remove_file(dest)
        };
    };
    if let Err(e) = copied {
        undo(&dest);
        return Err(format!("{e}; nothing was installed"));
    }
    let mut options = ctx.options.clone();
    options.plugin_dirs = vec![dir.clone()];
    let result = approve_loaded(
        ctx,
        &options,
        &name,
        Some(&i.digest.sha256),
        Some(&i.problems),
    )
    .await;
    if let Err(e) = result {
        undo(&dest);
        return Err(format!("{e}; nothing was installed"));
    }
    eprintln!("installed {} and approved it", dest.display());
    Ok(())
}

async fn approve(ctx: &Context, name: &str) -> Result<(), String> {
    approve_loaded(ctx, &ctx.options, name, None, None).await
}

/// `plugin approve --json`.
#[derive(Serialize)]
struct ApproveOut<'a> {
    name: &'a str,
    version: &'a str,
    sha256: &'a str,
    previous: &'a str,
    changes: &'a [String],
    tool_changes: Vec<String>,
    surface: &'a Surface,
    /// `plugin add` only: the refusal sentence of each server this machine
    /// cannot offer (docs/declarations.md §6.3).
    unavailable: Vec<String>,
    /// `plugin add` only: each part left out as invalid (a bad server), one
    /// sentence each, as `plugin inspect` shows them.
    left_out: &'a [String],
}

/// Loads `options`, checks the signature when keys are trusted, shows what
/// approval accepts, writes it, then connects the plugin's servers and pins
/// their tools. `want_sha256`: the SHA-256 the installed copy must have.
/// `fresh_install`: `plugin add`'s call, with the parts of the plugin left
/// out as invalid (shown after the approval, as `plugin inspect` shows them).
async fn approve_loaded(
    ctx: &Context,
    options: &HostOptions,
    name: &str,
    want_sha256: Option<&str>,
    fresh_install: Option<&[String]>,
) -> Result<(), String> {
    let left_out = fresh_install.unwrap_or_default();
    let fresh_install = fresh_install.is_some();
    let host = Host::load(options.clone()).map_err(|e| format!("{e:#}"))?;
    let Some(rec) = host.plugins().iter().find(|p| p.name == name).cloned() else {
        let mut e = format!(
            "no plugin named '{name}' in {}",
            folders(&options.plugin_dirs)
        );
        for p in host.problems() {
            e.push_str(&format!("\n  {p}"));
        }
        return Err(e);
    };
    let entry = host.pending_approval(name).cloned().ok_or_else(|| {
        format!(
            "plugin '{name}' cannot be pinned: {}",
            esc(&rec.trust.changes.join("; "))
        )
    })?;
    if let Some(want) = want_sha256
        && entry.sha256 != want
    {
        return Err(format!(
            "{}: the installed copy has SHA-256 {}, not {want} (changed while copying)",
            rec.file.display(),
            entry.sha256
        ));
    }
    check_signature(options, name, &rec.file)?;
    let previous = rec.trust.state;
    host.approve(name)?;
    host.shutdown().await;

    // Now approved: connect its servers and pin (or re-pin) their tools.
    let mut tool_changes = Vec::new();
    let mut unavailable = Vec::new();
    if !rec.servers.is_empty() {
        let host = Host::load(options.clone()).map_err(|e| format!("{e:#}"))?;
        // The refusal sentence of each of its servers this machine cannot
        // offer (docs/declarations.md §6.3), now that they are evaluated:
        // the plugin is installed all the same, and `status` tells when
        // that changes.
        unavailable = host
            .servers()
            .iter()
            .filter(|s| s.spec.plugin.as_deref() == Some(name))
            .filter_map(|s| {
                let decl = host.registry().lookup(&s.spec.name)?;
                crate::availability::install_refusal(name, &decl, s.availability.as_ref()?)
            })
            .collect();
        let servers = rec.servers.clone();
        host.discover_only(|s| s.plugin.as_deref() == Some(name) && servers.contains(&s.name))
            .await;
        let r = host.approve_tools(name);
        host.shutdown().await;
        tool_changes = r?;
    }
    if ctx.json {
        print_json(&ApproveOut {
            name,
            version: &rec.version,
            sha256: &entry.sha256,
            previous: previous.as_str(),
            changes: &rec.trust.changes,
            tool_changes,
            surface: &entry.surface,
            unavailable,
            left_out,
        });
        return Ok(());
    }
    let mut o = String::new();
    if fresh_install || previous == TrustState::Unapproved {
        o.push_str(&describe(
            &entry.surface,
            &entry.sha256,
            rec.kind,
            &rec.file.display().to_string(),
            None,
        ));
    } else if previous == TrustState::Changed {
        o.push_str(&format!("plugin {name} changed since its approval:\n"));
        for c in &rec.trust.changes {
            o.push_str(&format!("  {}\n", esc(c)));
        }
    }
    if !tool_changes.is_empty() {
        o.push_str("tools changed since their approval:\n");
        for c in &tool_changes {
            o.push_str(&format!("  {}\n", esc(c)));
        }
    }
    o.push_str(&format!(
        "approved {name} {} (sha256 {})\n",
        esc(&rec.version),
        entry.sha256
    ));
    if fresh_install {
        for sentence in &unavailable {
            o.push_str(&format!(
                "{} Its tools are offered once it is (`wasmgate status` tells).\n",
                esc(sentence)
            ));
        }
        for problem in left_out {
            o.push_str(&format!("left out as invalid: {}\n", esc(problem)));
        }
    }
    print!("{o}");
    Ok(())
}

/// With `trusted_keys` configured for `name`, the signature of `signed`
/// must verify. Errors: the config cannot be read, or the signature is
/// missing or wrong.
fn check_signature(options: &HostOptions, name: &str, signed: &Path) -> Result<(), String> {
    let Some(config) = &options.config else {
        return Ok(());
    };
    let keys = signature::trusted_keys(config, name)?;
    if keys.is_empty() {
        return Ok(());
    }
    signature::verify(signed, &keys)
        .map(|_| ())
        .map_err(|e| format!("refused: {e}"))
}

/// What `inspect` says about a signature.
fn signature_note(options: &HostOptions, name: &str, signed: &Path) -> Option<String> {
    let keys = options
        .config
        .as_deref()
        .map(|c| signature::trusted_keys(c, name));
    let has_sig = signature::signature_path(signed).is_file();
    match keys {
        Some(Err(e)) => Some(format!("cannot read trusted_keys: {e}")),
        Some(Ok(k)) if !k.is_empty() => Some(match signature::verify(signed, &k) {
            Ok(key) => format!("verified with trusted key {key}"),
            Err(e) => format!("NOT VERIFIED: {e}"),
        }),
        _ if has_sig => Some("present; no trusted key configured for this plugin".into()),
        _ => None,
    }
}

/// `plugin list --json` entries.
#[derive(Serialize)]
struct ListOut {
    name: String,
    version: Option<String>,
    state: &'static str,
    file: Option<PathBuf>,
    sha256: Option<String>,
    changes: Vec<String>,
    approve: Option<String>,
}

fn list(ctx: &Context) -> Result<(), String> {
    let host = Host::load(ctx.options.clone()).map_err(|e| format!("{e:#}"))?;
    let mut out: Vec<ListOut> = host
        .plugins()
        .iter()
        .map(|p: &PluginRecord| ListOut {
            name: p.name.clone(),
            version: Some(p.version.clone()),
            state: p.trust.state.as_str(),
            file: Some(p.file.clone()),
            sha256: p.trust.sha256.clone(),
            changes: p.trust.changes.clone(),
            approve: p.trust.approve.clone(),
        })
        .collect();
    if let Some(store) = host.trust_store() {
        let lock = store.lock.lock().unwrap_or_else(|e| e.into_inner());
        for (name, e) in &lock.plugins {
            if !out.iter().any(|o| &o.name == name) {
                out.push(ListOut {
                    name: name.clone(),
                    version: Some(e.surface.version.clone()),
                    state: "missing",
                    file: None,
                    sha256: Some(e.sha256.clone()),
                    changes: vec![format!(
                        "approved, but not in {}",
                        folders(&ctx.options.plugin_dirs)
                    )],
                    approve: None,
                });
            }
        }
    }
    if ctx.json {
        print_json(&out);
        return Ok(());
    }
    let mut o = String::new();
    for p in &out {
        o.push_str(&format!(
            "{} {}: {}",
            esc(&p.name),
            esc(p.version.as_deref().unwrap_or("")),
            p.state
        ));
        if let Some(f) = &p.file {
            o.push_str(&format!(" ({})", esc(&f.display().to_string())));
        }
        o.push('\n');
        for c in &p.changes {
            o.push_str(&format!("  {}\n", esc(c)));
        }
        if let Some(a) = &p.approve {
            o.push_str(&format!("  approve with: {}\n", esc(a)));
        }
    }
    if out.is_empty() {
        o.push_str("no plugins\n");
    }
    for p in host.problems() {
        eprintln!("{}", esc(&p.to_string()));
    }
    print!("{o}");
    Ok(())
}

fn remove(ctx: &Context, name: &str) -> Result<(), String> {
    let host = Host::load(ctx.options.clone()).map_err(|e| format!("{e:#}"))?;
    let store = host
        .trust_store()
        .ok_or("development mode has no lock")?
        .clone();
    let in_lock = store.entry(name).is_some();
    let rec = host.plugins().iter().find(|p| p.name == name);
    if !in_lock && rec.is_none() {
        return Err(format!(
            "no plugin named '{name}' in the lock or in {}",
            folders(&ctx.options.plugin_dirs)
        ));
    }
    let mut said = Vec::new();
    if in_lock {
        store.update(|l| {
            l.plugins.remove(name);
        })?;
        said.push(format!("removed {name} from the plugin lock"));
    }
    if let Some(rec) = rec {
        let dirs = &ctx.options.plugin_dirs;
        let parent = rec.file.parent().map(Path::to_path_buf).unwrap_or_default();
        if rec.kind == "component" && dirs.contains(&parent) {
            std::fs::remove_file(&rec.file).map_err(|e| format!("{}: {e}", rec.file.display()))?;
            let _ = std::fs::remove_file(signature::signature_path(&rec.file));
            said.push(format!("deleted {}", rec.file.display()));
        } else if parent.parent().is_some_and(|g| dirs.iter().any(|d| d == g)) {
            // Its own folder directly inside a plugins folder.
            std::fs::remove_dir_all(&parent).map_err(|e| format!("{}: {e}", parent.display()))?;
            said.push(format!("deleted {}", parent.display()));
        } else {
            said.push(format!(
                "left {} in place (it is a plugins folder itself)",
                parent.display()
            ));
        }
    }
    for s in said {
        println!("{}", esc(&s));
    }
    Ok(())
}

/// The text `inspect` (and a first approval) prints.
fn describe(
    s: &Surface,
    sha256: &str,
    kind: &str,
    source: &str,
    signature: Option<&str>,
) -> String {
    // Every piece the plugin (or its file names) controls is escaped, so
    // what the user reviews is what it runs (docs/security.md).
    let mut o = format!("plugin {} {}\n", esc(&s.name), esc(&s.version));
    o.push_str(&format!("  source: {} ({kind})\n", esc(source)));
    o.push_str(&format!("  sha256: {sha256}\n"));
    if let Some(sig) = signature {
        o.push_str(&format!("  signature: {}\n", esc(sig)));
    }
    if s.servers.is_empty() {
        o.push_str("  servers: none\n");
    }
    for srv in &s.servers {
        o.push_str(&format!(
            "  server {} ({})\n",
            esc(&srv.name),
            srv.transport
        ));
        for l in surface::describe_server(srv) {
            o.push_str(&format!("    {}\n", esc(&l)));
        }
    }
    for k in &s.skills {
        o.push_str(&format!("  skill {}\n", esc(&k.name)));
    }
    o
}

/// One line of text a plugin controls, with control characters shown as
/// escapes (`wasmgate::terminal`).
fn esc(s: &str) -> std::borrow::Cow<'_, str> {
    crate::terminal::line(s)
}

fn print_json<T: Serialize>(v: &T) {
    let mut s = crate::terminal::json_text(
        serde_json::to_string_pretty(v).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}")),
    );
    s.push('\n');
    let _ = std::io::stdout().write_all(s.as_bytes());
}

fn folders(dirs: &[PathBuf]) -> String {
    if dirs.is_empty() {
        return "the plugin folders (none configured)".into();
    }
    dirs.iter()
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn unit_root(unit: &Unit) -> PathBuf {
    match unit {
        Unit::File(f) => manifest::schema::plugin_dir_of(f),
        Unit::Folder(d) => d.clone(),
    }
}

/// Reads a source: URL (downloaded, checked against `sha256`), `.wasm`,
/// manifest file, or folder.
async fn read_source(source: &str, sha256: Option<&str>) -> Result<Inspected, String> {
    let want = sha256.map(parse_sha256).transpose()?;
    if source.contains("://") {
        let Some(want) = want else {
            return Err(format!(
                "{source}: a URL needs --sha256 HEX (the component's SHA-256, from its publisher)"
            ));
        };
        let tmp = TempDir::new()?;
        let file = tmp.0.join("download.wasm");
        download(source, &want, &file).await?;
        let mut i = read_path(&file)?;
        i._download = Some(tmp);
        return Ok(i);
    }
    let i = read_path(Path::new(source))?;
    if let Some(want) = want
        && i.digest.sha256 != want
    {
        return Err(format!(
            "{source}: SHA-256 is {}, not the expected {want}",
            i.digest.sha256
        ));
    }
    Ok(i)
}

fn parse_sha256(s: &str) -> Result<String, String> {
    let s = s.trim().to_ascii_lowercase();
    if s.len() != 64 || !s.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(format!(
            "--sha256 `{s}`: expected 64 hexadecimal digits (a SHA-256)"
        ));
    }
    Ok(s)
}

fn read_path(path: &Path) -> Result<Inspected, String> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let (unit, file) = if meta.is_dir() {
        let file = super::plugin_file_of(path).map_err(|e| format!("{}: {e}", path.display()))?;
        (Unit::Folder(path.to_path_buf()), file)
    } else if meta.is_file() {
        let is_wasm = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("wasm"));
        if is_wasm {
            (Unit::File(path.to_path_buf()), path.to_path_buf())
        } else {
            (
                Unit::Folder(manifest::schema::plugin_dir_of(path)),
                path.to_path_buf(),
            )
        }
    } else {
        return Err(format!(
            "{}: not a file or folder (links are not followed)",
            path.display()
        ));
    };
    let is_wasm = file
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("wasm"));
    let is_json = file.extension().is_some_and(|e| e == "json");
    let (r, kind) = if is_wasm {
        (
            super::component::component_manifest(&file, OsFamily::current())?,
            "component",
        )
    } else if is_json {
        (manifest::load_plugin_json(&file), "json")
    } else {
        (manifest::load_plugin_yaml(&file), "yaml")
    };
    let Some(m) = r.manifest else {
        let errs: Vec<String> = r.errors.iter().map(ToString::to_string).collect();
        return Err(format!("not a valid plugin:\n  {}", errs.join("\n  ")));
    };
    let digest = digest::digest(&unit, &[])?;
    Ok(Inspected {
        manifest: m,
        kind,
        unit,
        signed: file,
        digest,
        problems: r.errors.iter().map(ToString::to_string).collect(),
        _download: None,
    })
}

/// `https://` anywhere, `http://` only to a loopback host (a local
/// mirror or a test; nothing on the way can change it).
fn check_url(source: &str) -> Result<url::Url, String> {
    let u = url::Url::parse(source).map_err(|e| format!("{source}: not a URL ({e})"))?;
    let loopback = match u.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        None => false,
    };
    match u.scheme() {
        "https" => Ok(u),
        "http" if loopback => Ok(u),
        "http" => Err(format!(
            "{source}: plain http is allowed only to 127.0.0.1, [::1] or localhost; use https://"
        )),
        other => Err(format!(
            "{source}: scheme `{other}` is not supported; use https://"
        )),
    }
}

/// Downloads `source` to `file` (at most [`MAX_DOWNLOAD_BYTES`], within
/// [`DOWNLOAD_TIMEOUT`], no redirects) and checks its SHA-256 before
/// anything is kept.
async fn download(source: &str, want: &str, file: &Path) -> Result<(), String> {
    use sha2::Digest as _;
    let url = check_url(source)?;
    let client = reqwest::Client::builder()
        .timeout(DOWNLOAD_TIMEOUT)
        .connect_timeout(Duration::from_secs(20))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| format!("{source}: {e}"))?;
    let mut resp = client
        .get(url)
        .send()
        .await
        .map_err(|e| format!("{source}: {}", error_chain(&e)))?;
    if !resp.status().is_success() {
        return Err(format!(
            "{source}: HTTP {} (redirects are not followed; give the final URL)",
            resp.status()
        ));
    }
    if resp
        .content_length()
        .is_some_and(|n| n > MAX_DOWNLOAD_BYTES)
    {
        return Err(format!(
            "{source}: larger than {} MiB",
            MAX_DOWNLOAD_BYTES >> 20
        ));
    }
    let mut out = std::fs::File::create(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let mut h = sha2::Sha256::new();
    let mut total = 0u64;
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| format!("{source}: {}", error_chain(&e)))?
    {
        total += chunk.len() as u64;
        if total > MAX_DOWNLOAD_BYTES {
            return Err(format!(
                "{source}: larger than {} MiB",
                MAX_DOWNLOAD_BYTES >> 20
            ));
        }
        h.update(&chunk);
        out.write_all(&chunk)
            .map_err(|e| format!("{}: {e}", file.display()))?;
    }
    out.sync_all()
        .map_err(|e| format!("{}: {e}", file.display()))?;
    let got = digest::hex(&h.finalize());
    if got != want {
        return Err(format!(
            "{source}: SHA-256 mismatch: expected {want}, downloaded {got}; nothing was installed"
        ));
    }
    Ok(())
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(&format!(": {c}"));
        cur = c.source();
    }
    s
}

/// A folder under the temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Result<TempDir, String> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let p =
            std::env::temp_dir().join(format!("wasmgate-download-{}-{nanos}", std::process::id()));
        std::fs::create_dir(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        Ok(TempDir(p))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Copies a regular file (never through a link).
fn copy_file(from: &Path, to: &Path) -> Result<(), String> {
    let meta = std::fs::symlink_metadata(from).map_err(|e| format!("{}: {e}", from.display()))?;
    if !meta.is_file() {
        return Err(format!(
            "{}: not a regular file (links, FIFOs and devices are not copied)",
            from.display()
        ));
    }
    std::fs::copy(from, to).map_err(|e| format!("{} → {}: {e}", from.display(), to.display()))?;
    Ok(())
}

/// Copies a plugin folder: folders and regular files only (a link or a
/// special file is refused), bounded like the digest.
fn copy_tree(from: &Path, to: &Path, depth: usize) -> Result<(), String> {
    if depth > digest::MAX_DEPTH {
        return Err(format!("{}: too deep", from.display()));
    }
    std::fs::create_dir(to).map_err(|e| format!("{}: {e}", to.display()))?;
    let rd = std::fs::read_dir(from).map_err(|e| format!("{}: {e}", from.display()))?;
    for (n, e) in rd.enumerate() {
        if n > digest::MAX_ENTRIES {
            return Err(format!("{}: too many entries", from.display()));
        }
        let e = e.map_err(|e| format!("{}: {e}", from.display()))?;
        let src = e.path();
        let dst = to.join(e.file_name());
        let meta =
            std::fs::symlink_metadata(&src).map_err(|e| format!("{}: {e}", src.display()))?;
        if meta.is_dir() {
            copy_tree(&src, &dst, depth + 1)?;
        } else {
            copy_file(&src, &dst)?;
        }
    }
    Ok(())
}
