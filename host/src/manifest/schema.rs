//! One validator for every manifest source (`docs/declarations.md` §2a,
//! `docs/mcp-client.md` §1): a `plugin.yaml`, the value the component loader
//! builds from a component's `manifest()` export, a config file's
//! `mcp_servers`, and (after its envelope is unwrapped) a Hermes `plugin.json`.
//! Pure: works on a decoded manifest document (`crate::document`), reads no files.
//!
//! ```yaml
//! name: git
//! version: "0.1.0"
//! mcp_servers:
//!   git:
//!     command: "${PLUGIN_DIR}/git-mcp-server"
//!     app: { ... }
//!     requires: { ... }
//! skills:
//!   - skills/git/SKILL.md
//!   - {name: git, markdown: "..."}
//! ```
//!
//! A bad server yields every one of its problems and the good servers are kept.

use super::num::{parse_seconds, parse_uint};
use super::plugins::PluginsConfig;
use super::sampling::{SamplingPolicy, parse_sampling};
use super::server::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_RESULT_BYTES, DEFAULT_TIMEOUT, EnterpriseIdp,
    JwtAlgorithm, OAuthConfig, ServerSpec, ToolFilter, Transport,
};
use crate::declaration::parse::relative_name;
use crate::declaration::{
    Declaration, DeclarationError, Liveness, ParseOptions, parse_declaration,
};
use crate::validation::{
    Cursor, Problem, describe, did_you_mean, must_be, must_be_got, must_be_noted,
    must_be_noted_got, scalar_text, unknown_keys_message,
};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use crate::document::{Mapping, Value};

/// Largest `connect_timeout` accepted, seconds: a discovery that may take
/// longer than ten minutes is a configuration mistake (`1e9` was accepted),
/// and `status`, `call` and a gateway refresh wait up to this long for a
/// server (docs/security.md, "Gateway bounds").
pub const MAX_CONNECT_TIMEOUT: Duration = Duration::from_secs(600);

/// What the validator needs to know about a manifest's source.
#[derive(Debug, Clone)]
pub struct ManifestContext {
    /// Label of the source in every error (`plugins/git/plugin.yaml`).
    pub where_: String,
    /// The plugin folder: replaces `${PLUGIN_DIR}` in `command`, `args` and
    /// `env`, and anchors relative skill paths.
    pub plugin_dir: PathBuf,
    /// Accept `version.kind: custom` (true only for components).
    pub allow_custom_version: bool,
    /// The source is JSON (`plugin.json`): advice on quoting a number is
    /// given in JSON's syntax, not YAML's.
    pub json: bool,
    /// Host environment used for `${VAR}` / `${env:VAR}` in `env` and `headers`.
    pub env: BTreeMap<String, String>,
    /// Who wrote the source, which decides which names of `env` it may read.
    pub env_access: EnvAccess,
}

/// Which host variables a manifest's `${VAR}` / `${env:VAR}` and
/// `env_passthrough` may reach (`docs/security.md`, "What a plugin's
/// manifest may reach").
#[derive(Debug, Clone, Default)]
pub enum EnvAccess {
    /// The user's own config file: every variable.
    #[default]
    User,
    /// A plugin's manifest: only the variables the user granted that plugin
    /// in the config's `plugins: <name>: env_grants` (none when it has no
    /// entry). Any other `${VAR}` is an error of its server, and so is an
    /// `env_passthrough` name outside the grants and the child baseline
    /// (`crate::child_env::is_baseline`, passed to every child anyway).
    Plugin(Arc<PluginsConfig>),
}

/// A `*_env` key names a variable its plugin was not granted (reported
/// by [`ManifestContext::credential_env`]).
struct NotGranted;

impl ManifestContext {
    /// A context for the user's own file (the `--config` file): the process
    /// environment is the interpolation source, every name readable
    /// ([`EnvAccess::User`]). For a plugin's manifest use
    /// [`ManifestContext::for_plugin`].
    pub fn new(where_: impl Into<String>, plugin_dir: impl Into<PathBuf>) -> ManifestContext {
        ManifestContext {
            where_: where_.into(),
            plugin_dir: plugin_dir.into(),
            allow_custom_version: false,
            json: false,
            env: std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect(),
            env_access: EnvAccess::User,
        }
    }

    /// A context for a plugin's manifest: `${VAR}` reads only the names
    /// `grants` gives the plugin ([`EnvAccess::Plugin`]).
    pub fn for_plugin(
        where_: impl Into<String>,
        plugin_dir: impl Into<PathBuf>,
        grants: Arc<PluginsConfig>,
    ) -> ManifestContext {
        ManifestContext {
            env_access: EnvAccess::Plugin(grants),
            ..ManifestContext::new(where_, plugin_dir)
        }
    }

    /// Whether a server of `plugin` (`None`: of the config file, or of a
    /// plugin whose name is invalid) may read the host variable `var`.
    pub fn may_read_env(&self, plugin: Option<&str>, var: &str) -> bool {
        match &self.env_access {
            EnvAccess::User => true,
            EnvAccess::Plugin(g) => plugin.is_some_and(|p| g.grants(p, var)),
        }
    }

    /// The value of the variable `var` that the `*_env` key at `at` (a
    /// field path) names, with a problem reported where there is none:
    /// `Err(NotGranted)` when `plugin` was not granted it, `Ok(None)` when
    /// it is unset or empty. The value itself is never quoted in a problem.
    fn credential_env(
        &self,
        plugin: Option<&str>,
        var: &str,
        at: &str,
        bad: &mut Cursor<'_>,
    ) -> Result<Option<String>, NotGranted> {
        if !self.may_read_env(plugin, var) {
            bad.report_at(
                at,
                format!("names '{var}', a variable this plugin was not granted (env_grants)"),
            );
            return Err(NotGranted);
        }
        let value = self.env.get(var).filter(|v| !v.is_empty()).cloned();
        if value.is_none() {
            bad.report_at(at, format!("names '{var}', which is not set in the environment"));
        }
        Ok(value)
    }

    fn is_plugin(&self) -> bool {
        matches!(self.env_access, EnvAccess::Plugin(_))
    }

    /// Replaces the interpolation environment (tests, simulated hosts).
    #[cfg(any(test, feature = "internals"))]
    pub fn with_env<I, K, V>(mut self, env: I) -> ManifestContext
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        self.env = env.into_iter().map(|(k, v)| (k.into(), v.into())).collect();
        self
    }

    /// The `where` label of one server: `<where> server '<name>'`.
    pub fn server_where(&self, name: &str) -> String {
        server_label(&self.where_, name)
    }
}

/// `<where> server '<name>'`, the `where` of a server's problems, the
/// name shown as [`crate::validation::echo_name`] shows it (a server name
/// is the file's own text until it is validated).
pub(crate) fn server_label(where_: &str, name: &str) -> String {
    format!("{where_} server '{}'", crate::validation::echo_name(name))
}

/// A server's `where` ([`server_label`]), made on first use: a valid entry
/// never shows it, and making it (a format and the redaction of the name)
/// was a tenth of validating a 10,000-server manifest
/// (`docs/performance.md`, "2026-12-05 (night)").
pub(crate) struct ServerLabel<'a> {
    where_: &'a str,
    name: &'a str,
    text: std::cell::OnceCell<String>,
}

impl<'a> ServerLabel<'a> {
    /// The label of server `name` in `where_`, not made yet.
    pub(crate) fn new(where_: &'a str, name: &'a str) -> ServerLabel<'a> {
        ServerLabel {
            where_,
            name,
            text: std::cell::OnceCell::new(),
        }
    }

    /// A label made already.
    fn made(text: &str) -> ServerLabel<'a> {
        ServerLabel {
            where_: "",
            name: "",
            text: std::cell::OnceCell::from(text.to_string()),
        }
    }

    /// The label, made now if it was not.
    pub(crate) fn get(&self) -> &str {
        self.text
            .get_or_init(|| server_label(self.where_, self.name))
    }
}

impl std::fmt::Display for ServerLabel<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.get())
    }
}

/// A manifest problem. Displays as `<where>: <field path> [(<value>)] <what>`,
/// where `where` names the server when there is one and the offending value
/// follows the path when there is one to show
/// (`plugin.yaml server 'git': timeout ("abc") must be a number of seconds`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", crate::declaration::parse::ProblemLine::new(.where_, .path, .value, .message))]
pub struct ManifestError {
    /// Source label, including `server '<name>'` for a server's errors.
    pub where_: String,
    /// The server the error belongs to, if any.
    pub server: Option<String>,
    /// Field path inside the server entry or manifest (may be empty).
    pub path: String,
    /// What is wrong.
    pub message: String,
    /// The offending value as shown after the path (quoted, escaped, cut;
    /// `crate::validation::echo_at`), when there is one to show.
    pub value: Option<String>,
}

impl ManifestError {
    /// An error without a value to show (the validator fills it in from the
    /// document at the error's path).
    pub fn new(where_: &str, server: Option<&str>, path: &str, message: impl Into<String>) -> Self {
        ManifestError {
            where_: where_.to_string(),
            server: server.map(str::to_string),
            path: path.to_string(),
            message: message.into(),
            value: None,
        }
    }

    /// Wraps a declaration error of `server`.
    pub fn from_declaration(e: DeclarationError, server: &str) -> ManifestError {
        ManifestError {
            where_: e.where_,
            server: Some(server.to_string()),
            path: e.path,
            message: e.message,
            value: e.value,
        }
    }

    /// Fills in the offending value of each error that has none from
    /// `root`, the document its paths are relative to (a server entry, or
    /// the manifest for errors of no server).
    pub(crate) fn with_values_from<'a>(
        errors: impl IntoIterator<Item = &'a mut ManifestError>,
        root: &Value,
    ) {
        for e in errors {
            if e.value.is_none() {
                e.value = crate::validation::echo_at(root, &e.path);
            }
        }
    }
}

/// A skill a plugin brings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkillSource {
    /// `skills/x/SKILL.md` in a `plugin.yaml`: the path joined to the plugin
    /// folder, not yet read.
    File {
        /// Absolute (or plugin-folder-relative) path of the SKILL.md.
        path: PathBuf,
    },
    /// A `File` the loader has read (bounded size).
    Loaded {
        /// Where it was read from.
        path: PathBuf,
        /// The SKILL.md text.
        markdown: String,
    },
    /// `{name, markdown}`: what a component's manifest gives.
    Inline {
        /// Skill name.
        name: String,
        /// The SKILL.md text.
        markdown: String,
    },
}

/// A validated manifest.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// Plugin name.
    pub name: String,
    /// Plugin version, as written.
    pub version: String,
    /// The valid servers, in manifest order (bad ones are reported instead).
    pub servers: Vec<ServerSpec>,
    /// Skills, in manifest order.
    pub skills: Vec<SkillSource>,
}

/// The outcome of validating a manifest: what is valid, plus every problem.
#[derive(Debug, Clone, Default)]
pub struct ManifestResult {
    /// `None` when the manifest as a whole is unusable (not a mapping, bad
    /// `name`/`version`); otherwise the valid parts.
    pub manifest: Option<Manifest>,
    /// Every error, in manifest order.
    pub errors: Vec<ManifestError>,
    /// Non-fatal notes (an unset `${VAR}`), already labelled with their where.
    pub warnings: Vec<String>,
    /// The name of every server entry in manifest order, the invalid ones
    /// included (so `status` can list them in place).
    pub server_order: Vec<String>,
}

impl ManifestResult {
    /// Valid without any error.
    #[cfg(any(test, feature = "internals"))]
    pub fn is_ok(&self) -> bool {
        self.manifest.is_some() && self.errors.is_empty()
    }
}

/// Servers of a config file's `mcp_servers` (or a manifest's) with their problems.
#[derive(Debug, Clone, Default)]
pub struct ServersResult {
    /// Valid servers in file order.
    pub servers: Vec<ServerSpec>,
    /// Every problem of each bad server (and each bad top-level field).
    pub errors: Vec<ManifestError>,
    /// Non-fatal notes.
    pub warnings: Vec<String>,
    /// The config file's `plugins:` section ([`super::plugins`]); empty for
    /// a manifest's servers.
    pub plugins: PluginsConfig,
    /// The name of every server entry in file order, the invalid ones
    /// included (so `status` can list them in place).
    pub order: Vec<String>,
}

const MANIFEST_KEYS: [&str; 4] = ["name", "version", "mcp_servers", "skills"];

/// Validates a whole manifest (`docs/declarations.md` §2a).
pub fn manifest_from_value(value: &Value, ctx: &ManifestContext) -> ManifestResult {
    let w = ctx.where_.as_str();
    let mut out = ManifestResult::default();
    let Value::Mapping(m) = value else {
        out.errors.push(ManifestError::new(
            w,
            None,
            "",
            format!("the manifest {}", must_be("a mapping", value)),
        ));
        return out;
    };
    if let Some(msg) = unknown_keys_message(m, &MANIFEST_KEYS) {
        out.errors
            .push(ManifestError::new(w, None, "manifest", msg));
    }
    let name = match m.get("name") {
        Some(Value::String(s)) if is_plugin_name(s) => Some(s.clone()),
        other => {
            let got = other.map(describe).unwrap_or("nothing");
            out.errors.push(ManifestError::new(
                w,
                None,
                "name",
                must_be_noted_got("a plugin name", "letters, digits, '_', '.', '-'", got),
            ));
            None
        }
    };
    let version = match m.get("version") {
        Some(Value::String(s)) if is_plugin_version(s.trim()) => Some(s.trim().to_string()),
        Some(Value::String(s)) if !s.trim().is_empty() => {
            out.errors.push(ManifestError::new(
                w,
                None,
                "version",
                format!(
                    "must be at most {MAX_PLUGIN_VERSION} characters (got {})",
                    s.trim().chars().count()
                ),
            ));
            None
        }
        Some(Value::Number(n)) => {
            out.errors.push(ManifestError::new(
                w,
                None,
                "version",
                crate::validation::quote_the_number("a string", "version", n, ctx.json),
            ));
            None
        }
        other => {
            let got = other.map(describe).unwrap_or("nothing");
            out.errors.push(ManifestError::new(
                w,
                None,
                "version",
                must_be_got("a non-empty string", got),
            ));
            None
        }
    };
    let servers = servers_from_value(m.get("mcp_servers"), ctx, name.as_deref());
    out.errors.extend(servers.errors);
    out.warnings.extend(servers.warnings);
    out.server_order = servers.order;
    let skills = skills_from_value(m.get("skills"), ctx, &mut out.errors);
    ManifestError::with_values_from(out.errors.iter_mut().filter(|e| e.server.is_none()), value);
    if let (Some(name), Some(version)) = (name, version) {
        out.manifest = Some(Manifest {
            name,
            version,
            servers: servers.servers,
            skills,
        });
    }
    out
}

/// Longest plugin `version`, in characters.
pub const MAX_PLUGIN_VERSION: usize = 128;

/// A plugin `version` (already trimmed): 1–[`MAX_PLUGIN_VERSION`]
/// characters. It is shown in `status` and kept in the trust lock, so it
/// is bounded like a name; its form is the author's (`1.2.0`,
/// `2026.12-beta`), and what it holds is shown escaped like any text from
/// a plugin (`docs/security.md`, "Terminal").
fn is_plugin_version(s: &str) -> bool {
    !s.is_empty() && s.chars().count() <= MAX_PLUGIN_VERSION
}

pub(crate) fn is_plugin_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 128
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
        && !s.starts_with('.')
}

/// Longest server name, in characters.
pub const MAX_SERVER_NAME: usize = 128;

/// A configured server name: 1–[`MAX_SERVER_NAME`] characters, any
/// letters (`café`, `日本`), not blank, without control characters. Tool
/// names are minted from it sanitised (`crate::naming::sanitize`: one
/// `_` per character outside `[A-Za-z0-9_]`; `docs/declarations.md`,
/// "Server names").
pub fn is_server_name(s: &str) -> bool {
    !s.trim().is_empty() && s.chars().count() <= MAX_SERVER_NAME && !s.chars().any(char::is_control)
}

/// Skill names keep the plugin-name rule (they are folder names).
fn is_skill_name(s: &str) -> bool {
    is_plugin_name(s)
}

/// The tool-name prefix a server mints (`mcp_<sanitised name>_`).
fn minted_prefix(name: &str) -> String {
    format!("mcp_{}_", crate::naming::sanitize(name))
}

/// Checks the names of servers validated one by one (plugin.json): each
/// `(name, label)` in file order must be a server name and must not mint the
/// tool-name prefix of an earlier one. Servers that fail are removed from
/// `servers`; returns their errors.
pub(crate) fn check_server_names(
    names: &[(String, String)],
    servers: &mut Vec<ServerSpec>,
) -> Vec<ManifestError> {
    let mut errors = Vec::new();
    let mut prefixes: HashMap<String, String> = HashMap::new();
    let mut bad = Vec::new();
    for (name, label) in names {
        if !is_server_name(name) {
            errors.push(ManifestError::new(
                label,
                Some(name),
                "",
                format!(
                    "has a bad server name (1 to {MAX_SERVER_NAME} characters, not blank, no control characters)"
                ),
            ));
            bad.push(name.clone());
            continue;
        }
        match prefixes.get(&minted_prefix(name)) {
            Some(first) => {
                errors.push(ManifestError::new(
                    label,
                    Some(name),
                    "",
                    prefix_clash_message(name, first, ""),
                ));
                bad.push(name.clone());
            }
            None => {
                prefixes.insert(minted_prefix(name), name.clone());
            }
        }
    }
    servers.retain(|s| !bad.contains(&s.name));
    errors
}

/// Where a server entry came from, as merge errors name it: `plugin '<name>'`
/// or `the config file`.
fn source_of(plugin: &Option<String>) -> String {
    match plugin {
        Some(p) => format!("plugin '{p}'"),
        None => "the config file".to_string(),
    }
}

/// The problem of a server whose sanitised name equals an earlier one's
/// (`café` and `caf_` would both mint `mcp_caf__…`).
fn prefix_clash_message(name: &str, first: &str, first_by: &str) -> String {
    format!(
        "would mint tool names starting with '{}' like server '{first}'{first_by}; rename one of them (it is left out)",
        minted_prefix(name)
    )
}

fn skills_from_value(
    v: Option<&Value>,
    ctx: &ManifestContext,
    errors: &mut Vec<ManifestError>,
) -> Vec<SkillSource> {
    let w = ctx.where_.as_str();
    let items = match v {
        None | Some(Value::Null) => return Vec::new(),
        Some(Value::Sequence(items)) => items,
        Some(other) => {
            errors.push(ManifestError::new(
                w,
                None,
                "skills",
                must_be("a list", other),
            ));
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let p = format!("skills[{i}]");
        match item {
            Value::String(_) => match relative_name(Some(item), true) {
                Some(rel) => out.push(SkillSource::File {
                    path: ctx.plugin_dir.join(rel.replace('\\', "/")),
                }),
                None => errors.push(ManifestError::new(
                    w,
                    None,
                    &p,
                    "must be a relative path inside the plugin folder (e.g. skills/x/SKILL.md)",
                )),
            },
            Value::Mapping(sm) => {
                if let Some(msg) = unknown_keys_message(sm, &["name", "markdown"]) {
                    errors.push(ManifestError::new(w, None, &p, msg));
                    continue;
                }
                match (sm.get("name"), sm.get("markdown")) {
                    (Some(Value::String(n)), Some(Value::String(md))) if is_skill_name(n) => out
                        .push(SkillSource::Inline {
                            name: n.clone(),
                            markdown: md.clone(),
                        }),
                    (Some(Value::String(n)), Some(Value::String(_))) => {
                        errors.push(ManifestError::new(
                            w,
                            None,
                            &format!("{p}.name"),
                            format!(
                                "must be a skill name (letters, digits, '_', '.', '-'; got '{n}')"
                            ),
                        ))
                    }
                    (Some(Value::String(_)), _) => errors.push(ManifestError::new(
                        w,
                        None,
                        &format!("{p}.markdown"),
                        "must be a string (the SKILL.md text)",
                    )),
                    _ => errors.push(ManifestError::new(
                        w,
                        None,
                        &format!("{p}.name"),
                        "must be a string",
                    )),
                }
            }
            other => errors.push(ManifestError::new(
                w,
                None,
                &p,
                must_be("a path or a mapping {name, markdown}", other),
            )),
        }
    }
    out
}

/// Validates an `mcp_servers` mapping (absent/null → no servers). `plugin`
/// is the plugin that brings them (`None` for a config file).
pub fn servers_from_value(
    v: Option<&Value>,
    ctx: &ManifestContext,
    plugin: Option<&str>,
) -> ServersResult {
    let mut out = ServersResult::default();
    let m = match v {
        None | Some(Value::Null) => return out,
        Some(Value::Mapping(m)) => m,
        Some(other) => {
            out.errors.push(ManifestError::new(
                &ctx.where_,
                None,
                "mcp_servers",
                must_be("a mapping of server name to entry", other),
            ));
            return out;
        }
    };
    // Sanitised name → the first server (valid or not) that mints its
    // prefix, by its place in `out.order`.
    let mut prefixes: HashMap<String, usize> = HashMap::with_capacity(m.len());
    out.order.reserve(m.len());
    out.servers.reserve(m.len());
    for (k, entry) in m {
        let name = match k {
            Value::String(s) if is_server_name(s) => s.clone(),
            other => {
                out.errors.push(ManifestError::new(
                    &ctx.where_,
                    None,
                    "mcp_servers",
                    format!(
                        "has a bad server name '{}' (1 to {MAX_SERVER_NAME} characters, not blank, no control characters)",
                        crate::validation::echo_name(&crate::validation::key_text(other)).escape_debug()
                    ),
                ));
                continue;
            }
        };
        out.order.push(name.clone());
        let label = ServerLabel::new(&ctx.where_, &name);
        let result = server_entry(&name, entry, ctx, plugin, &label, &mut out.warnings);
        // The sanitised name stands for the prefix it mints.
        let sanitised = crate::naming::sanitize(&name);
        if let Some(&first) = prefixes.get(&sanitised) {
            let mut errors = vec![ManifestError::new(
                label.get(),
                Some(&name),
                "",
                prefix_clash_message(&name, &out.order[first], ""),
            )];
            if let Err(e) = result {
                errors.extend(e);
            }
            out.errors.extend(errors);
            continue;
        }
        prefixes.insert(sanitised, out.order.len() - 1);
        match result {
            Ok(s) => out.servers.push(s),
            Err(e) => out.errors.extend(e),
        }
    }
    out
}

const SERVER_KEYS: [&str; 17] = [
    "command",
    "args",
    "env",
    "env_passthrough",
    "url",
    "headers",
    "app_endpoint",
    "enabled",
    "timeout",
    "connect_timeout",
    "tools",
    "max_result_bytes",
    "sampling",
    "app",
    "requires",
    "auth",
    "oauth",
];

/// Validates one server entry (`mcp_servers.<name>`). `label` is the where
/// of its errors (`<where> server '<name>'`); warnings are appended.
///
/// Every independent problem of the entry is reported at once (the
/// `wasmgate check` promise, `docs/declarations.md` §2a): the transport
/// choice, each bad `args` / `env` / `headers` / `env_passthrough` item, each
/// numeric field, `tools`, each `sampling` key, and the declaration. Inside
/// `app` / `requires` the first failing check wins (docs/declarations.md §2 fixes that
/// order), so the declaration adds at most one error.
///
/// # Errors
/// Every problem of the entry, in entry order of the checks, each a
/// [`ManifestError`] carrying `label`; never empty.
pub fn server_from_value(
    name: &str,
    entry: &Value,
    ctx: &ManifestContext,
    plugin: Option<&str>,
    label: &str,
    warnings: &mut Vec<String>,
) -> Result<ServerSpec, Vec<ManifestError>> {
    server_entry(name, entry, ctx, plugin, &ServerLabel::made(label), warnings)
}

/// [`server_from_value`] with its label made when first needed.
fn server_entry(
    name: &str,
    entry: &Value,
    ctx: &ManifestContext,
    plugin: Option<&str>,
    label: &ServerLabel<'_>,
    warnings: &mut Vec<String>,
) -> Result<ServerSpec, Vec<ManifestError>> {
    let err = |path: &str, msg: String| ManifestError::new(label.get(), Some(name), path, msg);
    let Value::Mapping(m) = entry else {
        return Err(vec![err(
            "",
            format!("the server entry {}", must_be("a mapping", entry)),
        )]);
    };
    let mut errs: Vec<ManifestError> = Vec::new();
    let fail = |errs: &mut Vec<ManifestError>, Problem { path, message }: Problem| {
        errs.push(err(&path, message))
    };
    if let Some(msg) = unknown_keys_message(m, &SERVER_KEYS) {
        errs.push(err("", msg));
    }
    let get = |k: &str| m.get(k).filter(|v| !v.is_null());
    let boolean = |key: &str, default: bool, errs: &mut Vec<ManifestError>| match get(key) {
        None => default,
        Some(Value::Bool(b)) => *b,
        Some(o) => {
            errs.push(err(key, must_be_noted("a boolean", "true or false", o)));
            default
        }
    };
    let enabled = boolean("enabled", true, &mut errs);
    let app_endpoint = boolean("app_endpoint", false, &mut errs);

    let has_command = get("command").is_some();
    let has_url = get("url").is_some();
    let given: Vec<&str> = [
        (has_command, "command"),
        (has_url, "url"),
        (app_endpoint, "app_endpoint"),
    ]
    .iter()
    .filter(|(b, _)| *b)
    .map(|(_, n)| *n)
    .collect();
    match given.len() {
        1 => {
            // Keys that only belong to one transport (noise when the
            // transport itself is in question).
            for (key, needs) in [
                ("args", has_command),
                ("env", has_command),
                ("env_passthrough", has_command),
                ("headers", has_url),
            ] {
                if get(key).is_some() && !needs {
                    let t = if key == "headers" { "url" } else { "command" };
                    errs.push(err(key, format!("is only valid with {t}")));
                }
            }
        }
        // A non-boolean app_endpoint, or an unknown key that is a typo of
        // a transport key (`comand`), is reported above; which transport
        // was meant is then unknown.
        0 if get("app_endpoint").is_some_and(|v| !v.is_bool()) || misspelt_transport(m) => {}
        0 => errs.push(err(
            "command",
            "is missing: a server needs exactly one of command, url or app_endpoint: true".into(),
        )),
        _ => errs.push(err(
            given[1],
            format!(
                "cannot be combined with {}: a server needs exactly one of command, url or app_endpoint: true",
                given[0]
            ),
        )),
    }

    // Each given transport is checked, so a server with both command and
    // url also hears about a bad url.
    let mut bad = Cursor::new();
    let stdio = has_command.then(|| stdio_transport(m, ctx, plugin, label, warnings, &mut bad));
    let http = has_url.then(|| http_transport(m, ctx, plugin, label, warnings, &mut bad));
    for f in bad.take() {
        fail(&mut errs, f);
    }
    let transport = match (stdio, http) {
        (Some(Some(t)), None) | (None, Some(Some(t))) => Some(t),
        (None, None) if app_endpoint => Some(Transport::AppEndpoint),
        _ => None,
    };
    let secrets = transport
        .as_ref()
        .map(|t| interpolated_secrets(m, ctx, t))
        .unwrap_or_default();

    let seconds = |key: &str, default: Duration, errs: &mut Vec<ManifestError>| match get(key) {
        None => default,
        Some(v) => parse_seconds(v).unwrap_or_else(|msg| {
            errs.push(err(key, msg));
            default
        }),
    };
    let timeout = seconds("timeout", DEFAULT_TIMEOUT, &mut errs);
    // A number past the limit is named against the limit, even one too
    // large for a duration (`1e300`), as written.
    let over = get("connect_timeout")
        .filter(|v| {
            v.as_f64().is_some_and(|f| {
                f > MAX_CONNECT_TIMEOUT.as_secs_f64() && Duration::try_from_secs_f64(f).is_err()
            })
        })
        .and_then(scalar_text);
    let mut connect_timeout = match over {
        Some(_) => Duration::MAX,
        None => seconds("connect_timeout", DEFAULT_CONNECT_TIMEOUT, &mut errs),
    };
    if connect_timeout > MAX_CONNECT_TIMEOUT {
        errs.push(err(
            "connect_timeout",
            format!(
                "is {} s, more than the limit of {} s (ten minutes); a server needs far less \
                 to start and answer initialize",
                over.unwrap_or_else(|| connect_timeout.as_secs_f64().to_string()),
                MAX_CONNECT_TIMEOUT.as_secs()
            ),
        ));
        connect_timeout = DEFAULT_CONNECT_TIMEOUT;
    }
    let tools = parse_tools(get("tools"), &mut bad);
    let max_result_bytes = match get("max_result_bytes") {
        None => DEFAULT_MAX_RESULT_BYTES,
        Some(v) => match parse_uint(v) {
            Ok(n) if n >= 1 && usize::try_from(n).is_ok() => n as usize,
            Ok(_) => {
                bad.report_at("max_result_bytes", "must be a positive number of bytes");
                DEFAULT_MAX_RESULT_BYTES
            }
            Err(msg) => {
                bad.report_at("max_result_bytes", msg);
                DEFAULT_MAX_RESULT_BYTES
            }
        },
    };
    let sampling = parse_sampling(get("sampling")).unwrap_or_else(|fails| {
        bad.extend(fails);
        SamplingPolicy::default()
    });
    let oauth = parse_oauth(m, has_url, ctx, plugin, &mut bad);
    for f in bad.take() {
        fail(&mut errs, f);
    }

    let raw_app = m.get("app");
    let raw_requires = m.get("requires");
    let declaration =
        if raw_app.is_some_and(|v| !v.is_null()) || raw_requires.is_some_and(|v| !v.is_null()) {
            let opts = ParseOptions {
                allow_custom_version: ctx.allow_custom_version,
                json: ctx.json,
            };
            // The label goes in only on failure (it is made lazily).
            match parse_declaration(name, raw_app, raw_requires, "", opts) {
                Ok(d) => Some(Ok(d)),
                Err(mut e) => {
                    e.where_ = label.get().to_string();
                    errs.push(ManifestError::from_declaration(e, name));
                    Some(Err(()))
                }
            }
        } else {
            None
        };
    // A declaration that failed to parse is already reported; its liveness
    // cannot be judged.
    let declaration_ok = !matches!(declaration, Some(Err(())));
    let declaration = declaration.and_then(Result::ok);
    if given == ["app_endpoint"] && declaration_ok && !has_server_json(declaration.as_ref()) {
        errs.push(err(
            "app_endpoint",
            "needs an app block whose liveness is server_json (the URL and token come from that file)"
                .into(),
        ));
    }

    match transport {
        Some(transport) if errs.is_empty() => Ok(ServerSpec {
            name: name.to_string(),
            plugin: plugin.map(str::to_string),
            enabled,
            transport,
            timeout,
            connect_timeout,
            tools,
            max_result_bytes,
            sampling,
            declaration,
            secrets: {
                let mut secrets = secrets;
                secrets.extend(oauth.as_ref().and_then(|o| o.client_secret.clone()));
                secrets.extend(oauth.as_ref().and_then(|o| o.private_key.clone()));
                if let Some(idp) = oauth.as_ref().and_then(|o| o.enterprise.as_ref()) {
                    secrets.push(idp.id_token.clone());
                    secrets.extend(idp.client_secret.clone());
                }
                secrets
            },
            oauth: oauth.map(Box::new),
        }),
        _ => {
            // Every path to "no transport" pushes its reason; this is a
            // guard, never a panic.
            if errs.is_empty() {
                errs.push(err("", "has no usable transport".into()));
            }
            ManifestError::with_values_from(&mut errs, entry);
            Err(errs)
        }
    }
}

/// `command`, `args`, `env`, `env_passthrough` of a stdio server; `None`
/// when any of them is bad (each problem pushed to `bad`).
fn stdio_transport(
    m: &Mapping,
    ctx: &ManifestContext,
    plugin: Option<&str>,
    label: &ServerLabel<'_>,
    warnings: &mut Vec<String>,
    bad: &mut Cursor<'_>,
) -> Option<Transport> {
    let before = bad.count();
    let get = |k: &str| m.get(k).filter(|v| !v.is_null());
    let with_dir = |s: &str| {
        // The folder's text only when a value names it (most do not).
        if s.contains("${PLUGIN_DIR}") {
            s.replace("${PLUGIN_DIR}", &ctx.plugin_dir.to_string_lossy())
        } else {
            s.to_string()
        }
    };
    let command = match get("command") {
        // No shell runs the command, so `~` is never expanded: refused
        // rather than looked up as a folder literally named `~`
        // (`docs/mcp-client.md` §8, "The command").
        Some(Value::String(s)) if s.trim().starts_with('~') => {
            bad.report_at("command", format!(
                    "starts with '~', which is not expanded (no shell runs the command; got '{}'); write the full path, or ${{PLUGIN_DIR}}/… for a program in the plugin folder",
                    s.trim()
                ));
            String::new()
        }
        Some(Value::String(s)) if !s.trim().is_empty() => with_dir(s.trim()),
        Some(o) => {
            bad.report_at("command", must_be("a non-empty string", o));
            String::new()
        }
        None => {
            bad.report_at("command", "is missing");
            String::new()
        }
    };
    let mut args = Vec::new();
    match get("args") {
        None => {}
        Some(Value::Sequence(items)) => {
            for (i, it) in items.iter().enumerate() {
                match scalar_text(it) {
                    Some(t) if t.contains('\0') => {
                        bad.report_at(&format!("args[{i}]"), "must not contain NUL")
                    }
                    Some(t) => args.push(with_dir(&t)),
                    None => bad.report_at(
                        &format!("args[{i}]"),
                        must_be("a string, number or boolean", it),
                    ),
                }
            }
        }
        Some(o) => bad.report_at("args", must_be("a list", o)),
    }
    let env = string_map(
        get("env"),
        "env",
        true,
        ctx,
        plugin,
        label,
        warnings,
        &with_dir,
        bad,
    );
    let mut env_passthrough = Vec::new();
    match get("env_passthrough") {
        None => {}
        Some(Value::Sequence(items)) => {
            for (i, it) in items.iter().enumerate() {
                match it {
                    // A plugin passes through only what the user granted
                    // it (the baseline reaches every child anyway). An
                    // ungranted name is left out, not the whole server: the
                    // variable is what is withheld (docs/security.md).
                    Value::String(s)
                        if is_env_name(s)
                            && ctx.is_plugin()
                            && !ctx.may_read_env(plugin, s)
                            && !crate::child_env::is_baseline(s) =>
                    {
                        warnings.push(format!(
                            "{label}: env_passthrough[{i}] {} is not passed: {}",
                            crate::validation::echo_name(s),
                            not_granted_grant(plugin, &crate::validation::echo_name(s))
                        ))
                    }
                    Value::String(s) if is_env_name(s) => env_passthrough.push(s.clone()),
                    o => bad.report_at(
                        &format!("env_passthrough[{i}]"),
                        must_be("an environment variable name", o),
                    ),
                }
            }
        }
        Some(o) => bad.report_at("env_passthrough", must_be("a list of names", o)),
    }
    (bad.count() == before).then_some(Transport::Stdio {
        command,
        args,
        env,
        env_passthrough,
    })
}

/// `auth: oauth` and its `oauth:` block (docs/mcp-client.md §9):
/// `client_id`, `client_secret_env` (the name of the variable that holds
/// the secret; a secret is never written inline), `private_key_env` and
/// `signing_algorithm` (a `private_key_jwt` client), `scopes`,
/// `client_metadata_url` (https), `grant` (`authorization_code`, the
/// default, `client_credentials`, or `enterprise_managed` with its `idp`
/// block, [`parse_idp`]). `None` without `auth`.
fn parse_oauth(
    m: &Mapping,
    has_url: bool,
    ctx: &ManifestContext,
    plugin: Option<&str>,
    bad: &mut Cursor<'_>,
) -> Option<OAuthConfig> {
    let get = |k: &str| m.get(k).filter(|v| !v.is_null());
    let auth = get("auth");
    let block = get("oauth");
    match auth {
        None => {
            if block.is_some() {
                bad.report_at("oauth", "is only valid with auth: oauth");
            }
            return None;
        }
        Some(Value::String(s)) if s == "oauth" => {}
        Some(o) => {
            bad.report_at("auth", must_be("oauth", o));
            return None;
        }
    }
    if !has_url {
        bad.report_at("auth", "is only valid with url");
        return None;
    }
    let mut cfg = OAuthConfig::default();
    let Some(block) = block else {
        return Some(cfg);
    };
    let Value::Mapping(b) = block else {
        bad.report_at("oauth", must_be("a mapping", block));
        return None;
    };
    const KEYS: [&str; 8] = [
        "client_id",
        "idp",
        "client_secret_env",
        "private_key_env",
        "signing_algorithm",
        "scopes",
        "client_metadata_url",
        "grant",
    ];
    if let Some(msg) = unknown_keys_message(b, &KEYS) {
        bad.report_at("oauth", msg);
    }
    let before = bad.count();
    let text = |key: &str, bad: &mut Cursor<'_>| match b.get(key).filter(|v| !v.is_null()) {
        None => None,
        Some(Value::String(s)) if !s.trim().is_empty() && s.len() <= 2048 => {
            Some(s.trim().to_string())
        }
        Some(o) => {
            bad.report_at(&format!("oauth.{key}"), must_be("a non-empty string", o));
            None
        }
    };
    cfg.client_id = text("client_id", bad);
    let has_client_id = cfg.client_id.is_some();
    // The value of a `*_env` key: the variable it names, read now; the
    // value itself is never quoted in an error.
    let from_env = |key: &str, bad: &mut Cursor<'_>| {
        let var = text(key, bad)?;
        let at = format!("oauth.{key}");
        // Not granted: that problem alone, as before the value is read.
        let value = ctx.credential_env(plugin, &var, &at, bad).ok()?;
        if !has_client_id {
            bad.report_at(
                &at,
                "needs oauth.client_id (a credential belongs to a pre-registered client)",
            );
        }
        value.map(|v| (var, v))
    };
    cfg.client_secret = from_env("client_secret_env", bad).map(|(_, v)| v);
    if let Some((var, pem)) = from_env("private_key_env", bad) {
        // A PEM private key (PKCS#8 or PKCS#1 / SEC1); whether it suits
        // the algorithm is the signer's to say, at login.
        let pem_key = pem.contains("-----BEGIN ") && pem.contains("PRIVATE KEY-----");
        if pem_key {
            cfg.private_key = Some(pem);
        } else {
            bad.report_at(
                "oauth.private_key_env",
                format!("names '{var}', whose value is not a PEM private key"),
            );
        }
    }
    match text("signing_algorithm", bad) {
        None => {}
        Some(name) => match JwtAlgorithm::from_name(&name) {
            Some(a) => cfg.signing_algorithm = a,
            None => bad.report_at(
                "oauth.signing_algorithm",
                format!(
                    "must be one of {}",
                    JwtAlgorithm::ALL.map(|(_, n)| n).join(", ")
                ),
            ),
        },
    }
    let key_named = b.get("private_key_env").is_some_and(|v| !v.is_null());
    if b.get("signing_algorithm").is_some_and(|v| !v.is_null()) && !key_named {
        bad.report_at(
            "oauth.signing_algorithm",
            "is only valid with oauth.private_key_env",
        );
    }
    if key_named && b.get("client_secret_env").is_some_and(|v| !v.is_null()) {
        bad.report_at(
            "oauth.private_key_env",
            "and oauth.client_secret_env are two ways to authenticate the client; give one",
        );
    }
    match b.get("scopes").filter(|v| !v.is_null()) {
        None => {}
        Some(Value::Sequence(items)) if items.len() <= 64 => {
            for (i, it) in items.iter().enumerate() {
                match it {
                    Value::String(s) if !s.is_empty() && !s.contains(char::is_whitespace) => {
                        cfg.scopes.push(s.clone())
                    }
                    o => bad.report_at(
                        &format!("oauth.scopes[{i}]"),
                        must_be("a scope name without spaces", o),
                    ),
                }
            }
        }
        Some(o) => bad.report_at(
            "oauth.scopes",
            must_be("a list of at most 64 scope names", o),
        ),
    }
    if let Some(u) = text("client_metadata_url", bad) {
        if url::Url::parse(&u).is_ok_and(|p| p.scheme() == "https" && p.host().is_some()) {
            cfg.client_metadata_url = Some(u);
        } else {
            bad.report_at(
                "oauth.client_metadata_url",
                format!(
                    "must be an https:// URL (got '{}')",
                    crate::secret::display_url(&u)
                ),
            );
        }
    }
    match text("grant", bad).as_deref() {
        None | Some("authorization_code") => {}
        Some("client_credentials") => {
            cfg.client_credentials = true;
            let credential = b.get("client_secret_env").is_some_and(|v| !v.is_null()) || key_named;
            if !has_client_id || !credential {
                bad.report_at(
                    "oauth.grant",
                    "client_credentials needs oauth.client_id and oauth.client_secret_env \
                     or oauth.private_key_env",
                );
            }
        }
        Some("enterprise_managed") => {
            if !has_client_id {
                bad.report_at(
                    "oauth.grant",
                    "needs oauth.client_id (this client at the server's authorization server)",
                );
            }
            match b.get("idp").filter(|v| !v.is_null()) {
                None => bad.report_at(
                    "oauth.idp",
                    "is needed by enterprise_managed (issuer, token_endpoint, client_id, \
                     id_token_env)",
                ),
                Some(idp) => cfg.enterprise = parse_idp(idp, ctx, plugin, bad),
            }
        }
        Some(_) => bad.report_at(
            "oauth.grant",
            "must be authorization_code, client_credentials or enterprise_managed",
        ),
    }
    if b.get("grant").and_then(Value::as_str).map(str::trim) != Some("enterprise_managed")
        && b.get("idp").is_some_and(|v| !v.is_null())
    {
        bad.report_at(
            "oauth.idp",
            "is only valid with oauth.grant: enterprise_managed",
        );
    }
    if key_named && !cfg.client_credentials {
        // rmcp signs assertions for the client-credentials grant only.
        bad.report_at(
            "oauth.private_key_env",
            "is only valid with oauth.grant: client_credentials",
        );
    }
    (bad.count() == before).then_some(cfg)
}

/// `oauth.idp:` of an `enterprise_managed` server: `issuer` and
/// `token_endpoint` (https, or http on loopback), `client_id`,
/// `client_secret_env` (optional) and `id_token_env` (the variable holding
/// the user's ID token). `None` when any is bad (each pushed to `bad`).
fn parse_idp(
    idp: &Value,
    ctx: &ManifestContext,
    plugin: Option<&str>,
    bad: &mut Cursor<'_>,
) -> Option<EnterpriseIdp> {
    let Value::Mapping(m) = idp else {
        bad.report_at("oauth.idp", must_be("a mapping", idp));
        return None;
    };
    const KEYS: [&str; 5] = [
        "issuer",
        "token_endpoint",
        "client_id",
        "client_secret_env",
        "id_token_env",
    ];
    if let Some(msg) = unknown_keys_message(m, &KEYS) {
        bad.report_at("oauth.idp", msg);
    }
    let before = bad.count();
    let text =
        |key: &str, needed: bool, bad: &mut Cursor<'_>| match m.get(key).filter(|v| !v.is_null()) {
            None => {
                if needed {
                    bad.report_at(&format!("oauth.idp.{key}"), "is needed");
                }
                None
            }
            Some(Value::String(s)) if !s.trim().is_empty() && s.len() <= 2048 => {
                Some(s.trim().to_string())
            }
            Some(o) => {
                bad.report_at(
                    &format!("oauth.idp.{key}"),
                    must_be("a non-empty string", o),
                );
                None
            }
        };
    let endpoint = |key: &str, bad: &mut Cursor<'_>| {
        let u = text(key, true, bad)?;
        let parsed = url::Url::parse(&u).ok();
        let why = match &parsed {
            // A password in the URL is a secret: never echoed.
            Some(p) if !p.username().is_empty() || p.password().is_some() => {
                Some("must not carry a user name or password".to_string())
            }
            Some(p) if p.fragment().is_some() => Some(format!(
                "must not have a fragment (got '{}')",
                crate::secret::display_url(&u)
            )),
            Some(p) => {
                let loopback = match p.host() {
                    Some(url::Host::Domain(h)) => h.eq_ignore_ascii_case("localhost"),
                    Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
                    Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
                    None => false,
                };
                let fine =
                    p.scheme() == "https" && p.host().is_some() || p.scheme() == "http" && loopback;
                (!fine).then(|| {
                    format!(
                        "must be an https:// URL (http only on loopback) (got '{}')",
                        crate::secret::display_url(&u)
                    )
                })
            }
            None => Some(format!(
                "must be an https:// URL (http only on loopback) (got '{}')",
                crate::secret::display_url(&u)
            )),
        };
        if let Some(why) = why {
            bad.report_at(&format!("oauth.idp.{key}"), why);
            return None;
        }
        Some(u)
    };
    let from_env = |key: &str, needed: bool, bad: &mut Cursor<'_>| {
        let var = text(key, needed, bad)?;
        ctx.credential_env(plugin, &var, &format!("oauth.idp.{key}"), bad)
            .ok()
            .flatten()
    };
    let issuer = endpoint("issuer", bad);
    let token_endpoint = endpoint("token_endpoint", bad);
    let client_id = text("client_id", true, bad);
    let client_secret = from_env("client_secret_env", false, bad);
    let id_token = from_env("id_token_env", true, bad);
    if bad.count() != before {
        return None;
    }
    Some(EnterpriseIdp {
        issuer: issuer?,
        token_endpoint: token_endpoint?,
        client_id: client_id?,
        client_secret,
        id_token: id_token?,
    })
}

/// `url` and `headers` of a streamable HTTP server; `None` when either is
/// bad (each problem pushed to `bad`).
fn http_transport(
    m: &Mapping,
    ctx: &ManifestContext,
    plugin: Option<&str>,
    label: &ServerLabel<'_>,
    warnings: &mut Vec<String>,
    bad: &mut Cursor<'_>,
) -> Option<Transport> {
    let before = bad.count();
    let get = |k: &str| m.get(k).filter(|v| !v.is_null());
    let url = match get("url") {
        Some(Value::String(s)) => match check_http_url(s.trim()) {
            Ok(()) => s.trim().to_string(),
            Err(msg) => {
                bad.report_at("url", msg);
                String::new()
            }
        },
        Some(o) => {
            bad.report_at("url", must_be("a string", o));
            String::new()
        }
        None => {
            bad.report_at("url", "is missing");
            String::new()
        }
    };
    let headers = string_map(
        get("headers"),
        "headers",
        false,
        ctx,
        plugin,
        label,
        warnings,
        &|s| s.to_string(),
        bad,
    );
    (bad.count() == before).then_some(Transport::Http { url, headers })
}

/// Whether an unknown key of the entry is a near miss of `command`, `url`
/// or `app_endpoint` (its "did you mean" already names the transport).
fn misspelt_transport(m: &Mapping) -> bool {
    m.keys()
        .filter_map(Value::as_str)
        .filter(|k| !SERVER_KEYS.contains(k))
        .any(|k| {
            did_you_mean(k, &SERVER_KEYS)
                .is_some_and(|c| ["command", "url", "app_endpoint"].contains(&c))
        })
}

fn has_server_json(decl: Option<&Declaration>) -> bool {
    decl.and_then(|d| d.app.as_ref()).is_some_and(|defs| {
        defs.iter()
            .any(|d| matches!(d.liveness, Liveness::ServerJson { .. }))
    })
}

fn is_env_name(s: &str) -> bool {
    !s.is_empty() && !s.contains(['=', '\0']) && !s.chars().any(char::is_whitespace)
}

fn is_header_name(s: &str) -> bool {
    // RFC 9110 token characters.
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Checks a server's `url` at load time, so a typo is reported with the
/// server's name rather than at connect time: an `http://` or `https://`
/// URL (written with the `//`) that parses (`url` crate, the parser the HTTP
/// client uses), with a host and a port from 1 to 65535, without spaces or
/// control characters, and without a user name or password — credentials
/// in the URL would be printed wherever the URL is (status, errors, logs);
/// they belong in `headers` (`Authorization`), which are redacted
/// (`docs/mcp-client.md` §4). `Err` is the message; it never repeats the
/// user name or password.
fn check_http_url(s: &str) -> Result<(), String> {
    const WHAT: &str = "must be an http:// or https:// URL with a host";
    let lower = s.get(..8).unwrap_or(s).to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return Err(format!("{WHAT} (e.g. http://127.0.0.1:8080/mcp)"));
    }
    if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("{WHAT}, without spaces or control characters"));
    }
    let u = url::Url::parse(s).map_err(|e| format!("{WHAT}: {e}"))?;
    if !u.username().is_empty() || u.password().is_some() {
        // Neither the user name nor the password is echoed, nor a query
        // value (`?sig=` is a credential too).
        return Err(format!(
            "must not carry a user name or password; send credentials in headers (Authorization) and write the URL as {}",
            crate::secret::display_url(u.as_str())
        ));
    }
    if u.host_str().is_none_or(str::is_empty) {
        return Err(format!("{WHAT}: empty host"));
    }
    if u.port() == Some(0) {
        return Err(format!("{WHAT}: port 0 cannot be connected to"));
    }
    Ok(())
}

/// `env` / `headers`: string keys, scalar values stringified, then
/// `${PLUGIN_DIR}` (env only, via `dir`) and `${VAR}` / `${env:VAR}`
/// interpolation from `ctx.env`; an unset VAR stays literal and is warned
/// about. Each bad entry is pushed to `bad` and left out.
#[allow(clippy::too_many_arguments)]
fn string_map(
    v: Option<&Value>,
    field: &str,
    is_env: bool,
    ctx: &ManifestContext,
    plugin: Option<&str>,
    label: &ServerLabel<'_>,
    warnings: &mut Vec<String>,
    dir: &dyn Fn(&str) -> String,
    bad: &mut Cursor<'_>,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let m: &Mapping = match v {
        None => return out,
        Some(Value::Mapping(m)) => m,
        Some(o) => {
            bad.report_at(field, must_be("a mapping", o));
            return out;
        }
    };
    for (k, val) in m {
        let key = match k {
            Value::String(s) if (is_env && is_env_name(s)) || (!is_env && is_header_name(s)) => {
                s.clone()
            }
            other => {
                bad.report_at(
                    field,
                    format!(
                        "has a bad {} name '{}'",
                        if is_env { "variable" } else { "header" },
                        crate::validation::echo_name(&crate::validation::key_text(other))
                    ),
                );
                continue;
            }
        };
        let p = format!("{field}.{key}");
        let Some(text) = scalar_text(val) else {
            bad.report_at(&p, must_be("a string, number or boolean", val));
            continue;
        };
        let mut refused: Option<String> = None;
        let text = expand(&dir(&text), |var, has_default| {
            if !ctx.may_read_env(plugin, var) {
                // `${PLUGIN_DIR}` is not a host variable (headers keep it
                // as written); anything else is the user's environment.
                if var != "PLUGIN_DIR" && refused.is_none() {
                    refused = Some(var.to_string());
                }
                return None;
            }
            let v = ctx.env.get(var).cloned();
            if v.is_none() && !has_default {
                warnings.push(format!(
                    "{label}: {p} uses ${{{var}}}, which is not set; it is left as written"
                ));
            }
            v
        });
        if let Some(var) = refused {
            bad.report_at(
                &p,
                format!(
                    "uses ${{{var}}}: {}; this server is left out",
                    not_granted_grant(plugin, &var)
                ),
            );
            continue;
        }
        if text.contains('\0') || (!is_env && text.contains(['\r', '\n'])) {
            bad.report_at(&p, "must not contain NUL or line breaks");
            continue;
        }
        out.insert(key, text);
    }
    out
}

/// Why plugin `plugin` may not read host variable `var`, and how the user
/// grants it.
fn not_granted_grant(plugin: Option<&str>, var: &str) -> String {
    let name = plugin.unwrap_or("<plugin name>");
    format!(
        "a plugin's manifest may not read the host environment; the user may grant it in the config file (plugins: {{{name}: {{env_grants: [{var}]}}}})"
    )
}

/// The secrets of a server's `${VAR}`s: for each `env` / `headers` entry
/// whose written value references a variable that is set, the value the
/// variable stood for and the entry's final value ([`ServerSpec::secrets`]).
fn interpolated_secrets(m: &Mapping, ctx: &ManifestContext, transport: &Transport) -> Vec<String> {
    let (field, values) = match transport {
        Transport::Stdio { env, .. } => ("env", env),
        Transport::Http { headers, .. } => ("headers", headers),
        Transport::AppEndpoint => return Vec::new(),
    };
    let Some(Value::Mapping(raw)) = m.get(field) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (k, v) in raw {
        let (Some(key), Some(text)) = (k.as_str(), scalar_text(v)) else {
            continue;
        };
        let mut used = Vec::new();
        let mut rest = text.as_str();
        while let Some(start) = rest.find("${") {
            let after = &rest[start + 2..];
            let Some(end) = after.find('}') else { break };
            let (var, _) = super::agents::vars::split_default(&after[..end]);
            if let Some(val) = ctx.env.get(var).filter(|v| !v.is_empty()) {
                used.push(val.clone());
            }
            rest = &after[end + 1..];
        }
        if !used.is_empty() {
            out.extend(used);
            out.extend(values.get(key).cloned());
        }
    }
    out
}

/// Replaces each `${VAR}` / `${env:VAR}` with `value(VAR, has_default)`;
/// `None` leaves it as written, or gives the default of `${VAR:-default}`
/// (also used when the value is empty, as in the shell).
fn expand(s: &str, mut value: impl FnMut(&str, bool) -> Option<String>) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find('}') {
            Some(end) if end > 0 => {
                let (var, default) = super::agents::vars::split_default(&after[..end]);
                // `${VAR:-default}`: the default when VAR is unset or empty.
                match (value(var, default.is_some()), default) {
                    (Some(val), Some(d)) if val.is_empty() => out.push_str(d),
                    (Some(val), _) => out.push_str(&val),
                    (None, Some(d)) => out.push_str(d),
                    (None, None) => out.push_str(&rest[start..start + 2 + end + 1]),
                }
                rest = &after[end + 1..];
            }
            _ => {
                out.push_str("${");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// `tools: {include, exclude}`; each bad part is pushed to `bad` (the
/// filter then offers every tool, but the server is not loaded anyway).
fn parse_tools(v: Option<&Value>, bad: &mut Cursor<'_>) -> ToolFilter {
    let m = match v {
        None => return ToolFilter::default(),
        Some(Value::Mapping(m)) => m,
        Some(o) => {
            bad.report_at("tools", must_be("a mapping {include, exclude}", o));
            return ToolFilter::default();
        }
    };
    if let Some(msg) = unknown_keys_message(m, &["include", "exclude"]) {
        bad.report_at("tools", msg);
    }
    let mut list = |key: &str| -> Option<Vec<String>> {
        match m.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(vec![s.clone()]),
            Some(Value::Sequence(items)) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, it) in items.iter().enumerate() {
                    match it {
                        Value::String(s) if !s.is_empty() => out.push(s.clone()),
                        o => bad.report_at(
                            &format!("tools.{key}[{i}]"),
                            must_be("a tool name or glob", o),
                        ),
                    }
                }
                Some(out)
            }
            Some(o) => {
                bad.report_at(
                    &format!("tools.{key}"),
                    must_be("a list of tool names or globs", o),
                );
                None
            }
        }
    };
    let include = list("include");
    let exclude = list("exclude").unwrap_or_default();
    ToolFilter { include, exclude }
}

/// Joins config servers and plugin servers (`docs/mcp-client.md` §1): config
/// servers first, in file order, then each plugin's servers. A plugin server
/// whose name is already taken (by the config or an earlier plugin) is an
/// error and is left out; the first one keeps the name.
pub fn merge_servers(
    config: Vec<ServerSpec>,
    plugins: Vec<ServerSpec>,
) -> (Vec<ServerSpec>, Vec<ManifestError>) {
    let mut out = config;
    let mut errors = Vec::new();
    // Indexed, not searched per server: a plugin with thousands of servers
    // made this quadratic (10,000 servers: 13 s in a debug build).
    let mut by_prefix: std::collections::HashMap<String, Vec<usize>> =
        std::collections::HashMap::new();
    let mut by_name: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (i, o) in out.iter().enumerate() {
        by_prefix.entry(minted_prefix(&o.name)).or_default().push(i);
        by_name.entry(o.name.clone()).or_insert(i);
    }
    for s in plugins {
        let prefix = minted_prefix(&s.name);
        let clash = by_prefix
            .get(&prefix)
            .and_then(|at| at.iter().map(|&i| &out[i]).find(|o| o.name != s.name));
        if let Some(first) = clash {
            let taken_by = format!(" of {}", source_of(&first.plugin));
            errors.push(ManifestError::new(
                &format!("{} server '{}'", source_of(&s.plugin), s.name),
                Some(&s.name),
                "",
                prefix_clash_message(&s.name, &first.name, &taken_by),
            ));
            continue;
        }
        if let Some(first) = by_name.get(&s.name).map(|&i| &out[i]) {
            errors.push(ManifestError::new(
                &format!("{} server '{}'", source_of(&s.plugin), s.name),
                Some(&s.name),
                "",
                format!(
                    "has the same name as a server of {}; it is left out",
                    source_of(&first.plugin)
                ),
            ));
            continue;
        }
        by_prefix.entry(prefix).or_default().push(out.len());
        by_name.insert(s.name.clone(), out.len());
        out.push(s);
    }
    (out, errors)
}

/// The plugin folder for a manifest file: its parent (`.` for a bare name).
pub fn plugin_dir_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}
