//! A plugin's native surface: what it will run or contact, as the user
//! approves it (`plugin inspect`, `docs/security.md`). Secret-shaped values
//! are never stored or printed: `env` and `headers` appear by name, `args`
//! with token shapes redacted, and one SHA-256 over every value notices a
//! change the redacted form hides.

use crate::manifest::output::{TransportOut, server_out};
use crate::manifest::{Manifest, ServerSpec, SkillSource, Transport};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Everything a plugin brings that acts outside the sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Surface {
    /// Plugin name.
    pub name: String,
    /// Plugin version.
    pub version: String,
    /// Its servers, in manifest order.
    pub servers: Vec<ServerSurface>,
    /// Its skills, in manifest order.
    pub skills: Vec<SkillSurface>,
}

/// One server: the command line it spawns or the URL it contacts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerSurface {
    /// Server name.
    pub name: String,
    /// `enabled`.
    pub enabled: bool,
    /// `stdio`, `http` or `app_endpoint`.
    pub transport: String,
    /// Program (stdio).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Arguments, token shapes redacted (stdio).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Names of the variables it sets (stdio).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env_keys: Vec<String>,
    /// Names of host variables it may see (stdio).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env_passthrough: Vec<String>,
    /// Endpoint (http).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Header names (http).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub header_names: Vec<String>,
    /// `app:` / `requires:` as the declaration's serde form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs: Option<serde_json::Value>,
    /// Whether it may ask the agent's model (`sampling.enabled`).
    pub sampling: bool,
    /// SHA-256 of every value (args, env and header values) unredacted.
    pub values_sha256: String,
}

/// One skill: its name (or file) and the SHA-256 of its text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillSurface {
    /// Inline name, or the SKILL.md path relative to the plugin folder.
    pub name: String,
    /// SHA-256 of the markdown (`null`: not read).
    pub sha256: Option<String>,
}

/// The surface of a validated manifest; skill paths are shown relative to
/// `plugin_dir`.
pub fn surface(m: &Manifest, plugin_dir: &Path) -> Surface {
    let skills = m
        .skills
        .iter()
        .map(|s| match s {
            SkillSource::Inline { name, markdown } => SkillSurface {
                name: name.clone(),
                sha256: Some(super::digest::sha256_hex(markdown.as_bytes())),
            },
            SkillSource::Loaded { path, markdown } => SkillSurface {
                name: relative(path, plugin_dir),
                sha256: Some(super::digest::sha256_hex(markdown.as_bytes())),
            },
            SkillSource::File { path } => SkillSurface {
                name: relative(path, plugin_dir),
                sha256: None,
            },
        })
        .collect();
    Surface {
        name: m.name.clone(),
        version: m.version.clone(),
        servers: m.servers.iter().map(server_surface).collect(),
        skills,
    }
}

fn relative(path: &Path, dir: &Path) -> String {
    path.strip_prefix(dir)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

/// The surface of one server.
pub fn server_surface(s: &ServerSpec) -> ServerSurface {
    let out = server_out(s);
    let mut values = sha2::Sha256::default();
    use sha2::Digest;
    let mut feed = |v: &str| {
        values.update(v.as_bytes());
        values.update(b"\0");
    };
    let mut surface = ServerSurface {
        name: s.name.clone(),
        enabled: s.enabled,
        transport: String::new(),
        command: None,
        args: Vec::new(),
        env_keys: Vec::new(),
        env_passthrough: Vec::new(),
        url: None,
        header_names: Vec::new(),
        needs: s
            .declaration
            .as_ref()
            .and_then(|d| serde_json::to_value(d).ok()),
        sampling: s.sampling.enabled,
        values_sha256: String::new(),
    };
    match (&s.transport, out.transport) {
        (
            Transport::Stdio {
                command, args, env, ..
            },
            TransportOut::Stdio {
                args: shown,
                env_passthrough,
                ..
            },
        ) => {
            surface.transport = "stdio".into();
            surface.command = Some(command.clone());
            surface.args = shown;
            surface.env_keys = env.keys().cloned().collect();
            surface.env_passthrough = env_passthrough.to_vec();
            feed(command);
            args.iter().for_each(|a| feed(a));
            env.iter().for_each(|(k, v)| {
                feed(k);
                feed(v)
            });
        }
        (Transport::Http { url, headers }, _) => {
            surface.transport = "http".into();
            // As every output shows a URL: no userinfo, no query values
            // (a signed URL's `sig=`); a change of either still shows
            // through `values_sha256`.
            surface.url = Some(crate::secret::redact_patterns(&crate::secret::display_url(url)));
            surface.header_names = headers.keys().cloned().collect();
            feed(url);
            headers.iter().for_each(|(k, v)| {
                feed(k);
                feed(v)
            });
        }
        _ => surface.transport = "app_endpoint".into(),
    }
    surface.values_sha256 = super::digest::hex(&values.finalize());
    surface
}

/// One line per server: `stdio: CMD ARGS…; env: K1, K2; passthrough: P`
/// or `http: URL; headers: H1`, and what it needs.
pub fn describe_server(s: &ServerSurface) -> Vec<String> {
    let mut lines = Vec::new();
    match s.transport.as_str() {
        "stdio" => {
            let mut l = format!(
                "runs: {}",
                shell_words(s.command.as_deref().unwrap_or(""), &s.args)
            );
            if !s.env_keys.is_empty() {
                l.push_str(&format!("; env: {}", s.env_keys.join(", ")));
            }
            if !s.env_passthrough.is_empty() {
                l.push_str(&format!("; passthrough: {}", s.env_passthrough.join(", ")));
            }
            lines.push(l);
        }
        "http" => {
            let mut l = format!("contacts: {}", s.url.as_deref().unwrap_or(""));
            if !s.header_names.is_empty() {
                l.push_str(&format!("; headers: {}", s.header_names.join(", ")));
            }
            lines.push(l);
        }
        _ => lines.push("contacts: the URL its application writes (app_endpoint)".into()),
    }
    if let Some(n) = &s.needs {
        lines.extend(needs_lines(n));
    }
    if s.sampling {
        lines.push("may ask the agent's model (sampling enabled)".into());
    }
    if !s.enabled {
        lines.push("disabled (enabled: false)".into());
    }
    lines
}

/// `needs` on one line, for the change list (`surface_changes`).
fn needs_text(v: &serde_json::Value) -> String {
    // The change list labels the field itself ("needs: old → new").
    let lines = needs_lines(v);
    let lines: Vec<&str> = lines
        .iter()
        .map(|l| l.trim().trim_start_matches("needs: "))
        .collect();
    lines.join("; ")
}

/// What a server's declaration asks of the machine, in words: the
/// `requires:` line, then one line per OS block with its presence, its
/// locations in lookup order and where the version comes from
/// (docs/declarations.md §1). A stored value of another shape (an older
/// lock file) is shown as its JSON.
fn needs_lines(v: &serde_json::Value) -> Vec<String> {
    use crate::declaration::{Declaration, VersionKind};
    let Ok(d) = serde_json::from_value::<Declaration>(v.clone()) else {
        let mut v = v.clone();
        if let Some(o) = v.as_object_mut() {
            o.remove("name");
        }
        return vec![format!(
            "needs: {}",
            serde_json::to_string(&v).unwrap_or_default()
        )];
    };
    let mut wants = Vec::new();
    if d.requires.app {
        wants.push(match &d.requires.min_version {
            Some(m) => format!("the application, version {m} or newer"),
            None => "the application".to_string(),
        });
    }
    if d.requires.gpu.is_some() {
        wants.push(crate::availability::gpu_label(d.requires.gpu).to_string());
    }
    let mut lines = vec![if wants.is_empty() {
        "needs: nothing (the application is looked for, not required)".to_string()
    } else {
        format!("needs: {}", wants.join(" and "))
    }];
    for a in d.app.iter().flatten() {
        let places: Vec<String> = a
            .locations
            .iter()
            .map(|l| {
                if l.file.is_empty() {
                    format!("{} {}", l.kind.as_str(), l.value)
                } else {
                    format!("{} {} ({})", l.kind.as_str(), l.value, l.file)
                }
            })
            .collect();
        let mut l = format!(
            "  {} {}: {}",
            a.os_family.as_str(),
            a.presence.as_str(),
            places.join(", ")
        );
        if a.version_kind != VersionKind::None {
            l.push_str(&format!("; version from {}", a.version_kind.as_str()));
        }
        lines.push(l);
    }
    lines
}

fn shell_words(command: &str, args: &[String]) -> String {
    let quote = |s: &str| {
        if !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@+%${}".contains(c))
        {
            s.to_owned()
        } else {
            format!("'{}'", s.replace('\'', "'\\''"))
        }
    };
    std::iter::once(command)
        .chain(args.iter().map(String::as_str))
        .map(quote)
        .collect::<Vec<_>>()
        .join(" ")
}

/// What changed from `old` to `new`, one sentence each; empty when equal.
pub fn diff(old: &Surface, new: &Surface) -> Vec<String> {
    let mut out = Vec::new();
    if old.version != new.version {
        out.push(format!("version {} → {}", old.version, new.version));
    }
    for s in &new.servers {
        match old.servers.iter().find(|o| o.name == s.name) {
            None => out.push(format!(
                "server {} added: {}",
                s.name,
                describe_server(s).join("; ")
            )),
            Some(o) if o != s => out.extend(server_diff(o, s)),
            Some(_) => {}
        }
    }
    for o in &old.servers {
        if !new.servers.iter().any(|s| s.name == o.name) {
            out.push(format!("server {} removed", o.name));
        }
    }
    for k in &new.skills {
        match old.skills.iter().find(|o| o.name == k.name) {
            None => out.push(format!("skill {} added", k.name)),
            Some(o) if o.sha256 != k.sha256 => out.push(format!("skill {} text changed", k.name)),
            Some(_) => {}
        }
    }
    for o in &old.skills {
        if !new.skills.iter().any(|k| k.name == o.name) {
            out.push(format!("skill {} removed", o.name));
        }
    }
    out
}

fn server_diff(o: &ServerSurface, s: &ServerSurface) -> Vec<String> {
    let mut out = Vec::new();
    let n = &s.name;
    let mut field = |what: &str, a: String, b: String| {
        if a != b {
            out.push(format!("server {n}: {what} {a} → {b}"));
        }
    };
    field("transport", o.transport.clone(), s.transport.clone());
    field(
        "command line",
        shell_words(o.command.as_deref().unwrap_or(""), &o.args),
        shell_words(s.command.as_deref().unwrap_or(""), &s.args),
    );
    field(
        "env keys",
        format!("[{}]", o.env_keys.join(", ")),
        format!("[{}]", s.env_keys.join(", ")),
    );
    field(
        "passthrough",
        format!("[{}]", o.env_passthrough.join(", ")),
        format!("[{}]", s.env_passthrough.join(", ")),
    );
    field(
        "url",
        o.url.clone().unwrap_or_default(),
        s.url.clone().unwrap_or_default(),
    );
    field(
        "headers",
        format!("[{}]", o.header_names.join(", ")),
        format!("[{}]", s.header_names.join(", ")),
    );
    field(
        "needs",
        o.needs.as_ref().map(needs_text).unwrap_or_default(),
        s.needs.as_ref().map(needs_text).unwrap_or_default(),
    );
    field("sampling", o.sampling.to_string(), s.sampling.to_string());
    field("enabled", o.enabled.to_string(), s.enabled.to_string());
    if out.is_empty() && o.values_sha256 != s.values_sha256 {
        out.push(format!(
            "server {n}: a value in its args, env or headers changed (values are not shown)"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::declaration::*;

    #[test]
    fn needs_reads_as_words_one_line_per_os_block() {
        let d = Declaration {
            name: "blender".into(),
            app: Some(vec![AppDef {
                app_id: "blender".into(),
                os_family: OsFamily::Linux,
                presence: Presence::Executable,
                locations: vec![
                    Location {
                        kind: LocationKind::Command,
                        value: "blender".into(),
                        file: String::new(),
                    },
                    Location {
                        kind: LocationKind::Flatpak,
                        value: "org.blender.Blender".into(),
                        file: String::new(),
                    },
                ],
                version_kind: VersionKind::Custom,
                version_arg: String::new(),
                liveness: Liveness::None,
            }]),
            requires: Requires {
                app: true,
                min_version: Some("4.2".into()),
                gpu: Some(GpuVendor::Nvidia),
            },
        };
        let v = serde_json::to_value(&d).unwrap();
        assert_eq!(
            needs_lines(&v),
            [
                "needs: the application, version 4.2 or newer and an NVIDIA GPU",
                "  linux executable: command blender, flatpak org.blender.Blender; version from custom",
            ]
        );
        assert_eq!(
            needs_text(&v),
            "the application, version 4.2 or newer and an NVIDIA GPU; linux executable: command blender, flatpak org.blender.Blender; version from custom"
        );
        // A stored value of another shape still shows, as JSON.
        let odd = serde_json::json!({"name": "x", "other": 1});
        assert_eq!(needs_lines(&odd), [r#"needs: {"other":1}"#]);
    }
}
