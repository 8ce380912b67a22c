//! The WIT `manifest` record → the manifest document (`crate::document`) a
//! `plugin.yaml` decodes to (`docs/declarations.md` §2a), so one validator
//! (`crate::manifest`) checks components and YAML files alike.
//!
//! Shapes produced (keys only when the WIT field is set):
//! `{name, version, mcp_servers: {<name>: {command, args, env,
//! env_passthrough | url, headers | app_endpoint: true, timeout,
//! connect_timeout, app: {<os>: {presence, location: [...], version: {kind,
//! ...}, liveness: {kind, ...}}}, requires: {app, min_version, gpu}}},
//! skills: [{name, markdown}]}`.

use super::contract::latest::wasmgate::plugin::types as wit;
use crate::document::{Mapping, Value};

fn s(v: impl Into<String>) -> Value {
    Value::String(v.into())
}

/// A mapping of distinct fixed keys (no lookups while it is built).
fn map<const N: usize>(entries: [(&str, Value); N]) -> Value {
    let mut m = Mapping::with_capacity(N);
    for (k, v) in entries {
        m.push_new(s(k), v);
    }
    Value::Mapping(m)
}

fn pairs(p: Vec<wit::Pair>) -> Value {
    let mut m = Mapping::with_capacity(p.len());
    for wit::Pair { key, value } in p {
        m.insert(s(key), s(value));
    }
    Value::Mapping(m)
}

fn strings(v: Vec<String>) -> Value {
    Value::Sequence(v.into_iter().map(Value::String).collect())
}

pub(crate) fn os_key(os: wit::OsFamily) -> &'static str {
    match os {
        wit::OsFamily::Win32 => "win32",
        wit::OsFamily::Darwin => "darwin",
        wit::OsFamily::Linux => "linux",
    }
}

fn location(l: wit::Location) -> Value {
    match l {
        wit::Location::Path(p) => s(p),
        wit::Location::Command(n) => map([("kind", s("command")), ("name", s(n))]),
        wit::Location::AppBundle(n) => map([("kind", s("app_bundle")), ("name", s(n))]),
        wit::Location::Snap(n) => map([("kind", s("snap")), ("name", s(n))]),
        wit::Location::Flatpak(id) => map([("kind", s("flatpak")), ("app_id", s(id))]),
        wit::Location::UninstallRegistry(u) => map([
            ("kind", s("uninstall_registry")),
            ("display_name_prefix", s(u.display_name_prefix)),
            ("file", s(u.file)),
        ]),
    }
}

fn version(v: wit::VersionSource) -> Value {
    match v {
        wit::VersionSource::None => map([("kind", s("none"))]),
        wit::VersionSource::PeResource => map([("kind", s("pe_resource"))]),
        wit::VersionSource::Plist => map([("kind", s("plist"))]),
        wit::VersionSource::Custom => map([("kind", s("custom"))]),
        wit::VersionSource::UninstallRegistry(prefix) => map([
            ("kind", s("uninstall_registry")),
            ("display_name_prefix", s(prefix)),
        ]),
    }
}

fn liveness(l: wit::Liveness) -> Value {
    match l {
        wit::Liveness::None => map([("kind", s("none"))]),
        wit::Liveness::ServerJson(j) => {
            let mut m = Mapping::new();
            m.insert(s("kind"), s("server_json"));
            m.insert(s("path"), s(j.path));
            for (k, v) in [
                ("pid_key", j.pid_key),
                ("url_key", j.url_key),
                ("token_key", j.token_key),
                ("endpoint_path", j.endpoint_path),
            ] {
                if let Some(v) = v {
                    m.insert(s(k), s(v));
                }
            }
            Value::Mapping(m)
        }
    }
}

fn presence(p: wit::Presence) -> Value {
    s(match p {
        wit::Presence::Executable => "executable",
        wit::Presence::Bundle => "bundle",
    })
}

fn server(srv: wit::McpServer, problems: &mut Vec<String>) -> Value {
    // Each key below is set at most once: appended, not looked up.
    let mut m = Mapping::with_capacity(8);
    match srv.transport {
        wit::Transport::Stdio(st) => {
            m.push_new(s("command"), s(st.command));
            m.push_new(s("args"), strings(st.args));
            m.push_new(s("env"), pairs(st.env));
            m.push_new(s("env_passthrough"), strings(st.env_passthrough));
        }
        wit::Transport::Http(h) => {
            m.push_new(s("url"), s(h.url));
            m.push_new(s("headers"), pairs(h.headers));
        }
        wit::Transport::AppEndpoint => {
            m.push_new(s("app_endpoint"), Value::Bool(true));
        }
    }
    if let Some(t) = srv.timeout_seconds {
        m.push_new(s("timeout"), Value::Number(u64::from(t).into()));
    }
    if let Some(t) = srv.connect_timeout_seconds {
        m.push_new(s("connect_timeout"), Value::Number(u64::from(t).into()));
    }
    if !srv.app.is_empty() {
        // A mapping cannot hold one OS family twice: the first block is
        // kept and the duplicate reported, never silently replaced.
        let mut app = Mapping::new();
        for def in srv.app {
            let key = os_key(def.os);
            if app.contains_key(key) {
                problems.push(format!(
                    "mcp_servers.{}.app: duplicate OS family '{key}'",
                    srv.name
                ));
                continue;
            }
            app.push_new(
                s(key),
                map([
                    ("presence", presence(def.presence)),
                    (
                        "location",
                        Value::Sequence(def.location.into_iter().map(location).collect()),
                    ),
                    ("version", version(def.version)),
                    ("liveness", liveness(def.liveness)),
                ]),
            );
        }
        m.push_new(s("app"), Value::Mapping(app));
    }
    if let Some(r) = srv.requires {
        let mut req = Mapping::with_capacity(3);
        req.push_new(s("app"), Value::Bool(r.app));
        if let Some(v) = r.min_version {
            req.push_new(s("min_version"), s(v));
        }
        if let Some(wit::GpuVendor::Nvidia) = r.gpu {
            req.push_new(s("gpu"), s("nvidia"));
        }
        m.push_new(s("requires"), Value::Mapping(req));
    }
    Value::Mapping(m)
}

/// Converts what `manifest()` returned. Servers keep their order. A
/// duplicate server name or OS family keeps the first entry and is reported
/// in the returned list of problems, since a mapping cannot hold both.
pub(crate) fn manifest_to_value(m: wit::Manifest) -> (Value, Vec<String>) {
    let mut problems = Vec::new();
    let mut servers = Mapping::with_capacity(m.servers.len());
    for srv in m.servers {
        if servers.contains_key(srv.name.as_str()) {
            problems.push(format!("mcp_servers: duplicate server name '{}'", srv.name));
            continue;
        }
        let name = srv.name.clone();
        let v = server(srv, &mut problems);
        servers.push_new(s(name), v);
    }
    let skills = m
        .skills
        .into_iter()
        .map(|k| map([("name", s(k.name)), ("markdown", s(k.markdown))]))
        .collect();
    let value = map([
        ("name", s(m.name)),
        ("version", s(m.version)),
        ("mcp_servers", Value::Mapping(servers)),
        ("skills", Value::Sequence(skills)),
    ]);
    (value, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_server_converts_to_the_plugin_yaml_shape() {
        let m = wit::Manifest {
            name: "blender".into(),
            version: "0.1.0".into(),
            servers: vec![wit::McpServer {
                name: "blender".into(),
                transport: wit::Transport::Stdio(wit::StdioServer {
                    command: "uvx".into(),
                    args: vec!["blender-mcp".into()],
                    env: vec![wit::Pair {
                        key: "A".into(),
                        value: "b".into(),
                    }],
                    env_passthrough: vec![],
                }),
                timeout_seconds: Some(30),
                connect_timeout_seconds: None,
                app: vec![
                    wit::AppDef {
                        os: wit::OsFamily::Win32,
                        presence: wit::Presence::Executable,
                        location: vec![
                            wit::Location::UninstallRegistry(wit::UninstallLocation {
                                display_name_prefix: "Blender".into(),
                                file: "blender.exe".into(),
                            }),
                            wit::Location::Path("%ProgramFiles%/B/blender.exe".into()),
                        ],
                        version: wit::VersionSource::UninstallRegistry("Blender".into()),
                        liveness: wit::Liveness::None,
                    },
                    wit::AppDef {
                        os: wit::OsFamily::Linux,
                        presence: wit::Presence::Executable,
                        location: vec![wit::Location::Flatpak("org.blender.Blender".into())],
                        version: wit::VersionSource::None,
                        liveness: wit::Liveness::ServerJson(wit::ServerJson {
                            path: "~/.b/server.json".into(),
                            pid_key: Some("p".into()),
                            url_key: None,
                            token_key: None,
                            endpoint_path: None,
                        }),
                    },
                ],
                requires: Some(wit::Requires {
                    app: true,
                    min_version: Some("3.0".into()),
                    gpu: Some(wit::GpuVendor::Nvidia),
                }),
            }],
            skills: vec![wit::Skill {
                name: "k".into(),
                markdown: "# k".into(),
            }],
        };
        let (v, problems) = manifest_to_value(m);
        assert!(problems.is_empty());
        let expected: Value = yaml_serde::from_str(
            r##"
name: blender
version: "0.1.0"
mcp_servers:
  blender:
    command: uvx
    args: [blender-mcp]
    env: {A: b}
    env_passthrough: []
    timeout: 30
    app:
      win32:
        presence: executable
        location:
          - {kind: uninstall_registry, display_name_prefix: Blender, file: blender.exe}
          - "%ProgramFiles%/B/blender.exe"
        version: {kind: uninstall_registry, display_name_prefix: Blender}
        liveness: {kind: none}
      linux:
        presence: executable
        location: [{kind: flatpak, app_id: org.blender.Blender}]
        version: {kind: none}
        liveness: {kind: server_json, path: "~/.b/server.json", pid_key: p}
    requires: {app: true, min_version: "3.0", gpu: nvidia}
skills:
  - {name: k, markdown: "# k"}
"##,
        )
        .unwrap();
        assert_eq!(v, expected);
    }

    #[test]
    fn duplicate_server_names_are_reported() {
        let srv = || wit::McpServer {
            name: "x".into(),
            transport: wit::Transport::AppEndpoint,
            timeout_seconds: None,
            connect_timeout_seconds: None,
            app: vec![],
            requires: None,
        };
        let (_, problems) = manifest_to_value(wit::Manifest {
            name: "p".into(),
            version: "1".into(),
            servers: vec![srv(), srv()],
            skills: vec![],
        });
        assert_eq!(problems, ["mcp_servers: duplicate server name 'x'"]);
    }
}
