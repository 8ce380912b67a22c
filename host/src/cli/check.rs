//! `wasmgate check <plugin.yaml | plugin.json | component.wasm> [--json]` —
//! validates a plugin and reports **every** problem at once
//! (`docs/declarations.md` §2, §2a): one line per error on stderr,
//! `<where>: <field path> [(<value>)] <what>`, where `where` names the server
//! (`plugin.yaml server 'git'`). A valid manifest is printed normalized on
//! stdout (YAML); with `--json`, stdout is always one JSON document
//! ([`CheckReport`]), for valid and invalid input alike.
//!
//! Beyond the manifest, `check` looks at what a plugin ships
//! (`docs/skills.md`): each skill's SKILL.md front matter (invalid front
//! matter is an error; a missing one, a `skill!` name that differs from
//! `name:`, and a `requires_apps` name that is neither a server of this
//! plugin nor of the config file are warnings), and every stdio `command`
//! under `${PLUGIN_DIR}` (it must exist as a file and, on Unix, be executable).
//!
//! Exit codes: 0 valid, 1 invalid, 2 usage (unknown file type, unreadable path).

use crate::manifest::output::manifest_out;
use crate::manifest::{
    Manifest, ManifestError, ManifestResult, SkillSource, Transport, load_plugin_json,
    load_plugin_yaml,
};
use crate::validation::did_you_mean;
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Exit code: the manifest is valid.
pub const EXIT_VALID: i32 = 0;
/// Exit code: the manifest has at least one error.
pub const EXIT_INVALID: i32 = 1;
/// Exit code: the command was used wrongly (file type, missing file).
pub const EXIT_USAGE: i32 = 2;

/// What `check` knows besides the manifest: where it came from and which
/// server names the user's config file adds (for `requires_apps`).
#[derive(Debug, Clone, Default)]
pub struct CheckContext {
    /// The label of the checked file in errors (its path).
    pub where_: String,
    /// The plugin folder (`${PLUGIN_DIR}`): the folder of the checked file.
    pub plugin_dir: PathBuf,
    /// Names of the config file's servers that have a declaration
    /// (`--config`, `$WASMGATE_CONFIG` or the default file); a skill may
    /// require them too.
    pub config_servers: Vec<String>,
}

impl CheckContext {
    /// The context for the plugin file `path`, with `config_servers`.
    pub fn for_file(path: &Path, config_servers: Vec<String>) -> CheckContext {
        CheckContext {
            where_: path.display().to_string(),
            plugin_dir: crate::manifest::schema::plugin_dir_of(path),
            config_servers,
        }
    }
}

/// One error of `check --json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckError {
    /// The source label, with `server '<name>'` for a server's errors.
    #[serde(rename = "where")]
    pub where_: String,
    /// The server the error belongs to, if any.
    pub server: Option<String>,
    /// The field path (may be empty).
    pub path: String,
    /// The offending value as the text line shows it, if any.
    pub value: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl From<&ManifestError> for CheckError {
    fn from(e: &ManifestError) -> CheckError {
        // Bounded as the text line is (`ProblemLine`).
        use crate::declaration::parse::{MESSAGE_MAX_CHARS, PATH_MAX_CHARS, WHERE_MAX_CHARS};
        use crate::terminal::cut_chars;
        CheckError {
            where_: cut_chars(&e.where_, WHERE_MAX_CHARS),
            server: e.server.as_deref().map(crate::validation::echo_name),
            path: cut_chars(&e.path, PATH_MAX_CHARS),
            value: e.value.clone(),
            message: cut_chars(&e.message, MESSAGE_MAX_CHARS),
        }
    }
}

/// The one JSON document `check --json` prints:
/// `{"valid", "manifest", "errors": [{"where", "server", "path", "value",
/// "message"}], "warnings": [text]}`. `manifest` is the normalized manifest
/// when valid, else `null`.
#[derive(Debug, Serialize)]
pub struct CheckReport<'a> {
    /// No errors and a usable manifest.
    pub valid: bool,
    /// The normalized manifest (`null` when invalid).
    pub manifest: Option<crate::manifest::output::ManifestOut<'a>>,
    /// Every error, in manifest order, then the shipped-file and skill errors.
    pub errors: Vec<CheckError>,
    /// Every warning, as the text lines show them (without `warning: `).
    pub warnings: Vec<String>,
}

/// Prints a failure that happened before any manifest (unreadable file, a
/// component that does not load) and returns `code`: the text on stderr and,
/// with `json`, a [`CheckReport`] with one error on stdout.
pub fn fail(where_: &str, message: &str, json: bool, code: i32) -> i32 {
    let _ = writeln!(std::io::stderr(), "{}", crate::terminal::line(message));
    if json {
        let doc = CheckReport {
            valid: false,
            manifest: None,
            errors: vec![CheckError {
                where_: where_.to_string(),
                server: None,
                path: String::new(),
                value: None,
                message: message.to_string(),
            }],
            warnings: Vec::new(),
        };
        print_json(&doc);
    }
    code
}

fn print_json(doc: &CheckReport<'_>) {
    let text = crate::terminal::json_text(
        serde_json::to_string_pretty(doc).unwrap_or_else(|_| "{\"valid\": false}".into()),
    );
    let _ = writeln!(std::io::stdout().lock(), "{text}");
}

/// Runs `wasmgate check PATH [--json]` for a `.yaml` / `.yml` (plugin.yaml)
/// or `.json` (Hermes plugin.json) file. Returns the exit code. A `.wasm`
/// component goes through [`super::component::run_check_any`].
pub fn run_check(path: &Path, json: bool, config_servers: Vec<String>) -> i32 {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let where_ = path.display().to_string();
    if !path.is_file() {
        let what = if path.is_dir() {
            "is a folder; give the plugin.yaml, plugin.json or .wasm file"
        } else {
            "no such file"
        };
        return fail(
            &where_,
            &format!("wasmgate check: {where_}: {what}"),
            json,
            EXIT_USAGE,
        );
    }
    let res = match ext.as_deref() {
        Some("yaml" | "yml") => load_plugin_yaml(path),
        Some("json") => load_plugin_json(path),
        _ => {
            return fail(
                &where_,
                &format!(
                    "wasmgate check: {where_}: expected a plugin.yaml (.yaml/.yml) or plugin.json (.json) file"
                ),
                json,
                EXIT_USAGE,
            );
        }
    };
    report(res, &CheckContext::for_file(path, config_servers), json)
}

/// Adds the shipped-file and skill checks to a manifest result, prints it
/// as `check` does (stderr lines; stdout the normalized manifest, or with
/// `json` the [`CheckReport`]) and returns the exit code.
pub fn report(mut res: ManifestResult, ctx: &CheckContext, json: bool) -> i32 {
    if let Some(m) = &res.manifest {
        let (errors, warnings) = plugin_checks(m, &res.errors, ctx);
        res.errors.extend(errors);
        res.warnings.extend(warnings);
    }
    let mut err = std::io::stderr().lock();
    // Names and keys in these come from the plugin's files: each line is
    // escaped as `status` escapes them (docs/security.md, "MCP client
    // bounds"), so none can drive the terminal or forge a line.
    for w in crate::terminal::listed(&res.warnings, " (`--json` lists all)") {
        let _ = writeln!(err, "warning: {}", crate::terminal::line(&w));
    }
    for e in crate::terminal::listed(&res.errors, " (`--json` lists all)") {
        let _ = writeln!(err, "{}", crate::terminal::line(&e));
    }
    drop(err);
    let valid = res.errors.is_empty() && res.manifest.is_some();
    if json {
        print_json(&CheckReport {
            valid,
            manifest: res.manifest.as_ref().filter(|_| valid).map(manifest_out),
            errors: res.errors.iter().map(CheckError::from).collect(),
            warnings: res.warnings.clone(),
        });
    } else if let Some(m) = res.manifest.as_ref().filter(|_| valid) {
        let text = yaml_serde::to_string(&manifest_out(m)).unwrap_or_default();
        let _ = writeln!(
            std::io::stdout().lock(),
            "{}",
            crate::terminal::text(text.trim_end())
        );
    }
    if valid { EXIT_VALID } else { EXIT_INVALID }
}

/// Front-matter keys the host reads from a SKILL.md (`docs/skills.md`).
pub const SKILL_KEYS: [&str; 3] = ["name", "description", "requires_apps"];

/// The checks of what a valid manifest ships: every stdio `command` under
/// the plugin folder, and every skill's front matter. `manifest_errors`
/// are the manifest's own errors (their servers count as this plugin's for
/// `requires_apps`). Returns (errors, warnings).
pub fn plugin_checks(
    m: &Manifest,
    manifest_errors: &[ManifestError],
    ctx: &CheckContext,
) -> (Vec<ManifestError>, Vec<String>) {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let dir = ctx.plugin_dir.to_string_lossy().into_owned();
    for s in &m.servers {
        let Transport::Stdio { command, .. } = &s.transport else {
            continue;
        };
        let Some(rest) = command.strip_prefix(dir.as_str()) else {
            continue;
        };
        // A command that only shares a prefix with the folder's name
        // (`/p/git` for `/p/gitx`) is not under it.
        if !(rest.starts_with(['/', '\\']) || dir.ends_with(['/', '\\'])) {
            continue;
        }
        let where_ = format!("{} server '{}'", ctx.where_, s.name);
        let problem = shipped_command_problem(Path::new(command));
        if let Some(problem) = problem {
            let mut e = ManifestError::new(&where_, Some(&s.name), "command", problem);
            e.value = Some(format!("{:?}", format!("${{PLUGIN_DIR}}{rest}")));
            errors.push(e);
        }
    }

    // The names the skill gate knows: servers with a declaration, of this
    // plugin (valid or not; a bad one is already an error) and of the
    // config file. A server without `app:` / `requires:` is not known to it.
    let mut known: Vec<&str> = m
        .servers
        .iter()
        .filter(|s| s.declaration.is_some())
        .map(|s| s.name.as_str())
        .collect();
    known.extend(manifest_errors.iter().filter_map(|e| e.server.as_deref()));
    known.extend(ctx.config_servers.iter().map(String::as_str));
    let undeclared: Vec<&str> = m
        .servers
        .iter()
        .filter(|s| s.declaration.is_none())
        .map(|s| s.name.as_str())
        .collect();

    for (i, skill) in m.skills.iter().enumerate() {
        let (given, markdown) = match skill {
            SkillSource::Inline { name, markdown } => (name.clone(), markdown),
            SkillSource::Loaded { path, markdown } => {
                (crate::skills::skill_name_from_path(path), markdown)
            }
            SkillSource::File { .. } => continue,
        };
        let label = format!("{} skills[{i}] '{given}'", ctx.where_);
        let skill = match crate::skills::parse_skill(&given, markdown) {
            Ok(s) => s,
            Err(e) => {
                errors.push(ManifestError::new(
                    &ctx.where_,
                    None,
                    &format!("skills[{i}]"),
                    e.to_string(),
                ));
                continue;
            }
        };
        let yaml_serde::Value::Mapping(fm) = &skill.front_matter else {
            warnings.push(format!(
                "{label}: SKILL.md has no front matter; start it with '---', then name, description and requires_apps, then '---'"
            ));
            continue;
        };
        for key in fm.keys().filter_map(yaml_serde::Value::as_str) {
            if !SKILL_KEYS.contains(&key)
                && let Some(c) = did_you_mean(key, &SKILL_KEYS)
            {
                warnings.push(format!(
                    "{label}: front matter key '{key}' is not read by wasmgate; did you mean '{c}'?"
                ));
            }
        }
        match fm.get("name") {
            None | Some(yaml_serde::Value::Null) => warnings.push(format!(
                "{label}: front matter has no name; add name: {given}"
            )),
            Some(yaml_serde::Value::String(n)) if n.trim() == given => {}
            Some(yaml_serde::Value::String(n)) => warnings.push(format!(
                "{label}: front matter name '{}' differs from the name the plugin gives ('{given}'); '{given}' is used (prompt skill_{given})",
                n.trim()
            )),
            Some(_) => errors.push(ManifestError::new(
                &ctx.where_,
                None,
                &format!("skills[{i}]"),
                format!("skill '{given}': SKILL.md front matter: name must be a string"),
            )),
        }
        if skill.description.is_none() {
            warnings.push(format!(
                "{label}: front matter has no description; agents show it to decide when to use the skill"
            ));
        }
        for app in &skill.requires_apps {
            if undeclared.contains(&app.as_str()) {
                warnings.push(format!(
                    "{label}: requires_apps names '{app}', a server without a declaration (app: / requires:); the gate does not know it and hides the skill"
                ));
            } else if !known.contains(&app.as_str()) {
                // A one-letter slip of the plugin's own server is the usual cause.
                let hint = did_you_mean(app, &known)
                    .map(|c| format!(" (did you mean '{c}'?)"))
                    .unwrap_or_default();
                warnings.push(format!(
                    "{label}: requires_apps names '{app}', which is not a server of this plugin or the config file{hint}; the gate hides the skill until a server of that name with a declaration is offerable"
                ));
            }
        }
    }
    (errors, warnings)
}

/// Why a shipped `command` cannot be started, if it cannot.
fn shipped_command_problem(path: &Path) -> Option<String> {
    let shown = path.display();
    match std::fs::metadata(path) {
        Err(_) => Some(format!(
            "names a file the plugin ships, but {shown} does not exist; put the server's program beside the component"
        )),
        Ok(m) if !m.is_file() => Some(format!("names {shown}, which is not a regular file")),
        Ok(m) => {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                if m.permissions().mode() & 0o111 == 0 {
                    return Some(format!(
                        "names {shown}, which is not executable (chmod +x it)"
                    ));
                }
            }
            #[cfg(not(unix))]
            let _ = m;
            None
        }
    }
}
