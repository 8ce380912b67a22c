//! The user's per-plugin settings: the top-level `plugins:` mapping of the
//! config file (`README.md`, "Config"; rules in `docs/security.md`, "What a
//! plugin's manifest may reach").
//!
//! ```yaml
//! plugins:
//!   github:                        # a plugin name (its manifest's `name`)
//!     env_grants: [GITHUB_TOKEN]   # host variables its manifest may read
//!     trusted_keys: ["RWQ..."]     # kept for signature checks
//! ```
//!
//! A plugin without an entry is granted nothing. A bad entry is reported
//! (`<config>: plugins.<name>.<key> …`) and grants only its valid names.

use super::schema::ManifestError;
use crate::validation::{Cursor, Problem, key_text, must_be, unknown_keys_message};
use std::collections::BTreeMap;
use crate::document::Value;

/// Keys of one `plugins.<name>` entry.
const ENTRY_KEYS: [&str; 2] = ["env_grants", "trusted_keys"];

/// What the user's config says about one plugin.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PluginSettings {
    /// Host environment variables the plugin's manifest may read through
    /// `${VAR}` / `${env:VAR}` and list under `env_passthrough`, in the
    /// order written, without duplicates.
    pub env_grants: Vec<String>,
    /// Public keys (as written) a plugin's signature must verify against.
    /// Parsed and kept here; enforced by the signature check.
    pub trusted_keys: Vec<String>,
    /// Whether the entry had any problem (reported in the config's errors).
    /// What was valid is kept; a check that must fail closed (signatures)
    /// can refuse a plugin whose entry is flawed.
    pub has_errors: bool,
}

/// The `plugins:` section: plugin name → its settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PluginsConfig {
    /// Entries by plugin name.
    pub plugins: BTreeMap<String, PluginSettings>,
}

impl PluginsConfig {
    /// The settings of plugin `name`, if the user wrote an entry.
    pub fn get(&self, name: &str) -> Option<&PluginSettings> {
        self.plugins.get(name)
    }

    /// Whether the user granted plugin `name` the host variable `var`.
    pub fn grants(&self, name: &str, var: &str) -> bool {
        self.get(name)
            .is_some_and(|s| s.env_grants.iter().any(|g| g == var))
    }
}

/// An environment variable name as `env_grants` takes it: non-empty, no
/// `=`, NUL or whitespace, at most 256 bytes.
fn is_var_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 256
        && !s.contains(['=', '\0'])
        && !s.chars().any(char::is_whitespace)
}

/// A list of non-empty strings at `cur` (`plugins.<name>.<key>`); each bad
/// item is reported and left out.
fn string_list(
    v: &Value,
    valid: impl Fn(&str) -> bool,
    what: &str,
    list_what: &str,
    cur: &mut Cursor<'_>,
) -> Vec<String> {
    let items = match v {
        Value::Null => return Vec::new(),
        Value::Sequence(items) => items,
        other => {
            cur.report_at("", must_be(&format!("a list of {list_what}"), other));
            return Vec::new();
        }
    };
    let mut out: Vec<String> = Vec::new();
    for (i, it) in items.iter().enumerate() {
        match it {
            Value::String(s) if valid(s) => {
                if !out.contains(s) {
                    out.push(s.clone());
                }
            }
            Value::String(s) => cur.report_at(
                &format!("[{i}]"),
                format!(
                    "must be {what} (got '{}')",
                    crate::validation::echo_name(s).escape_debug()
                ),
            ),
            o => cur.report_at(&format!("[{i}]"), must_be(what, o)),
        }
    }
    out
}

/// Parses the config's top-level `plugins` value (absent or null: no
/// entries). `where_` labels errors (the config file).
pub fn plugins_from_value(v: Option<&Value>, where_: &str) -> (PluginsConfig, Vec<ManifestError>) {
    let mut errors = Vec::new();
    let mut out = PluginsConfig::default();
    let mk = |path: String, message: String| ManifestError {
        where_: where_.to_string(),
        server: None,
        path,
        value: None,
        message,
    };
    let m = match v {
        None | Some(Value::Null) => return (out, errors),
        Some(Value::Mapping(m)) => m,
        Some(other) => {
            errors.push(mk(
                "plugins".into(),
                must_be("a mapping of plugin name to settings", other),
            ));
            return (out, errors);
        }
    };
    for (k, entry) in m {
        let name = match k {
            Value::String(s) if super::schema::is_plugin_name(s) => s.clone(),
            other => {
                errors.push(mk(
                    "plugins".into(),
                    format!(
                        "has a bad plugin name '{}' (letters, digits, '_', '.', '-')",
                        crate::validation::echo_name(&key_text(other))
                    ),
                ));
                continue;
            }
        };
        let mut settings = PluginSettings::default();
        let mut cur = Cursor::new();
        cur.key("plugins").key(&name);
        match entry {
            // `name:` alone: an entry that grants nothing.
            Value::Null => {}
            Value::Mapping(e) => {
                if let Some(msg) = unknown_keys_message(e, &ENTRY_KEYS) {
                    cur.report_at("", msg);
                }
                if let Some(g) = e.get("env_grants") {
                    cur.key("env_grants");
                    settings.env_grants = string_list(
                        g,
                        is_var_name,
                        "an environment variable name",
                        "environment variable names",
                        &mut cur,
                    );
                    cur.pop();
                }
                if let Some(t) = e.get("trusted_keys") {
                    cur.key("trusted_keys");
                    settings.trusted_keys = string_list(
                        t,
                        |s| !s.trim().is_empty(),
                        "a non-empty string",
                        "public keys",
                        &mut cur,
                    );
                    cur.pop();
                }
            }
            other => cur.report_at("", must_be("a mapping {env_grants, trusted_keys}", other)),
        }
        let problems = cur.take();
        settings.has_errors = !problems.is_empty();
        errors.extend(
            problems
                .into_iter()
                .map(|Problem { path, message }| mk(path, message)),
        );
        out.plugins.insert(name, settings);
    }
    (out, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> (PluginsConfig, Vec<String>) {
        let v: Value = yaml_serde::from_str(yaml).unwrap();
        let (c, e) = plugins_from_value(v.get("plugins"), "cfg.yaml");
        (c, e.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn grants_and_keys_are_kept() {
        let (c, e) = parse(
            "plugins:\n  gh: {env_grants: [GITHUB_TOKEN, GITHUB_TOKEN, X], trusted_keys: [RWQabc]}\n  bare:\n",
        );
        assert!(e.is_empty(), "{e:?}");
        assert!(c.grants("gh", "GITHUB_TOKEN") && c.grants("gh", "X"));
        assert!(!c.grants("gh", "HOME") && !c.grants("bare", "X") && !c.grants("none", "X"));
        assert_eq!(c.get("gh").unwrap().env_grants, ["GITHUB_TOKEN", "X"]);
        assert_eq!(c.get("gh").unwrap().trusted_keys, ["RWQabc"]);
        assert!(!c.get("gh").unwrap().has_errors);
    }

    #[test]
    fn bad_entries_name_the_field_and_keep_what_is_valid() {
        let (c, e) = parse(
            "plugins:\n  gh: {env_grant: [A], env_grants: [OK, 'A B', 3], trusted_keys: ''}\n  '.x': {}\n  p: [A]\n",
        );
        assert_eq!(
            e,
            [
                "cfg.yaml: plugins.gh has unknown keys ['env_grant'] (did you mean 'env_grants'?); allowed: env_grants, trusted_keys",
                "cfg.yaml: plugins.gh.env_grants[1] must be an environment variable name (got 'A B')",
                "cfg.yaml: plugins.gh.env_grants[2] must be an environment variable name (got a number)",
                "cfg.yaml: plugins.gh.trusted_keys must be a list of public keys (got a string)",
                "cfg.yaml: plugins has a bad plugin name '.x' (letters, digits, '_', '.', '-')",
                "cfg.yaml: plugins.p must be a mapping {env_grants, trusted_keys} (got a list)",
            ]
        );
        let gh = c.get("gh").unwrap();
        assert_eq!(gh.env_grants, ["OK"]);
        assert!(gh.has_errors);
        assert!(c.get("p").unwrap().has_errors);
        let (_, e) = parse("plugins: [a]\n");
        assert_eq!(
            e,
            ["cfg.yaml: plugins must be a mapping of plugin name to settings (got a list)"]
        );
    }
}
