//! One validator for every source (`docs/declarations.md` §2a,
//! `docs/mcp-client.md` §1): plugin.yaml, the Hermes plugin.json envelope,
//! the component's manifest value, and a config file's `mcp_servers`.

use proptest::prelude::*;
use std::path::{Path, PathBuf};
use std::time::Duration;
use wasmgate::cli::check::{EXIT_INVALID, EXIT_USAGE, EXIT_VALID, report, run_check};
use wasmgate::document::Value;
use wasmgate::manifest::load::{MAX_CONFIG_BYTES, MAX_MANIFEST_BYTES, MAX_SKILL_BYTES};
use wasmgate::manifest::{
    ManifestContext, ManifestResult, SamplingLogLevel, SkillSource, Transport, load_config,
    load_plugin_json, load_plugin_yaml, manifest_from_value, merge_servers,
};
use wasmgate::{OsFamily, Registry, VersionKind};

fn ctx() -> ManifestContext {
    ManifestContext::new("p/plugin.yaml", "/plugins/p")
        .with_env([("HOME", "/home/u"), ("TOKEN", "s3cret")])
}

fn from_yaml(y: &str) -> ManifestResult {
    let v: Value = yaml_serde::from_str(y).unwrap();
    manifest_from_value(&v, &ctx())
}

fn errors(r: &ManifestResult) -> Vec<String> {
    r.errors.iter().map(ToString::to_string).collect()
}

/// The errors without their echoed values (`<where>: <path> <message>`),
/// for the rule tables, which are about the path and the wording.
fn plain_errors(r: &ManifestResult) -> Vec<String> {
    r.errors
        .iter()
        .map(|e| {
            if e.path.is_empty() {
                format!("{}: {}", e.where_, e.message)
            } else {
                format!("{}: {} {}", e.where_, e.path, e.message)
            }
        })
        .collect()
}

const THREE_SERVERS: &str = r#"
name: demo
version: "1.0.0"
mcp_servers:
  good-a:
    command: "${PLUGIN_DIR}/server"
    app:
      linux: {presence: executable, location: [{kind: command, name: git}]}
    requires: {app: true}
  broken:
    command: x
    app:
      linux: {presence: executable, location: [{kind: command, name: a/b}]}
  good-b:
    url: http://127.0.0.1:8080/mcp
    requires: {gpu: nvidia}
"#;

#[test]
fn one_bad_server_is_reported_and_the_good_ones_are_kept() {
    let r = from_yaml(THREE_SERVERS);
    assert_eq!(
        errors(&r),
        vec!["p/plugin.yaml server 'broken': app.linux.location[0].name (\"a/b\") must be a bare name (no folders, drive or URL)".to_string()]
    );
    let m = r.manifest.expect("manifest kept");
    let names: Vec<&str> = m.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["good-a", "good-b"]);
    // The good ones register.
    let reg = Registry::new();
    for s in &m.servers {
        if let Some(d) = &s.declaration {
            reg.register(&s.name, d.clone());
        }
    }
    assert!(reg.lookup("good-a").is_some() && reg.lookup("good-b").is_some());
    assert!(reg.lookup("broken").is_none());
    match &m.servers[0].transport {
        Transport::Stdio { command, .. } => assert_eq!(command, "/plugins/p/server"),
        t => panic!("{t:?}"),
    }
    assert_eq!(m.servers[0].plugin.as_deref(), Some("demo"));
}

#[test]
fn every_error_of_every_server_is_reported_at_once() {
    let r = from_yaml(
        r#"
name: demo
version: "1"
mcp_servers:
  a: {command: x, requires: {app: true, min_version: 2.3}}
  b: {command: x, timeout: abc}
  c: {comand: x}
  d: {command: x, url: "http://127.0.0.1:1/"}
"#,
    );
    let e = errors(&r);
    assert_eq!(e.len(), 4, "{e:#?}");
    assert!(e[0].starts_with(
        "p/plugin.yaml server 'a': requires.app is true but the declaration has no 'app' block"
    ));
    assert!(
        e[1].starts_with("p/plugin.yaml server 'b': timeout (\"abc\") must be a number of seconds"),
        "{}",
        e[1]
    );
    assert!(
        e[2].contains("server 'c': has unknown keys ['comand'] (did you mean 'command'?)"),
        "{}",
        e[2]
    );
    assert!(
        e[3].contains("server 'd': url cannot be combined with command"),
        "{}",
        e[3]
    );
    assert!(r.manifest.unwrap().servers.is_empty());
}

#[test]
fn unquoted_min_version_is_told_to_quote_it() {
    let r = from_yaml(
        r#"
name: demo
version: "1"
mcp_servers:
  a:
    command: x
    app: {darwin: {presence: bundle, location: /Applications/A.app, version: {kind: plist}}}
    requires: {app: true, min_version: 2.3}
"#,
    );
    assert_eq!(
        errors(&r),
        vec!["p/plugin.yaml server 'a': requires.min_version (2.3) must be a dotted numeric string, but YAML read 2.3 as a number; quote it: min_version: \"2.3\"".to_string()]
    );
}

#[test]
fn server_schema_rules() {
    let cases: &[(&str, Option<&str>)] = &[
        // (entry, expected error fragment or None for valid)
        ("{command: x}", None),
        ("{url: 'https://example.test/mcp'}", None),
        (
            "{}",
            Some(
                "command is missing: a server needs exactly one of command, url or app_endpoint: true",
            ),
        ),
        (
            "{command: x, url: 'http://127.0.0.1/'}",
            Some("url cannot be combined with command"),
        ),
        (
            "{command: x, app_endpoint: true}",
            Some("app_endpoint cannot be combined with command"),
        ),
        (
            "{app_endpoint: true}",
            Some("app_endpoint needs an app block whose liveness is server_json"),
        ),
        (
            "{app_endpoint: true, app: {linux: {presence: executable, location: /x, liveness: {kind: server_json, path: /run/s.json}}}}",
            None,
        ),
        (
            "{app_endpoint: 'yes'}",
            Some("app_endpoint must be a boolean"),
        ),
        (
            "{app_endpoint: false}",
            Some("command is missing: a server needs exactly one of command"),
        ),
        (
            "{comand: x}",
            Some("has unknown keys ['comand'] (did you mean 'command'?)"),
        ),
        ("{command: ''}", Some("command must be a non-empty string")),
        ("{command: [x]}", Some("command must be a non-empty string")),
        ("{command: x, args: [a, 8080, true, 1.5]}", None),
        (
            "{command: x, args: [[a]]}",
            Some("args[0] must be a string, number or boolean (got a list)"),
        ),
        (
            "{command: x, args: [{a: 1}]}",
            Some("args[0] must be a string, number or boolean (got a mapping)"),
        ),
        ("{command: x, args: a}", Some("args must be a list")),
        ("{command: x, env: {A: 1, B: true}}", None),
        (
            "{command: x, env: {A: [1]}}",
            Some("env.A must be a string, number or boolean"),
        ),
        ("{command: x, env: [A]}", Some("env must be a mapping")),
        (
            "{command: x, env: {'A=B': x}}",
            Some("env has a bad variable name 'A=B'"),
        ),
        ("{command: x, env_passthrough: [PATH, HOME]}", None),
        (
            "{command: x, env_passthrough: [1]}",
            Some("env_passthrough[0] must be an environment variable name"),
        ),
        (
            "{url: 'ftp://x'}",
            Some("url must be an http:// or https:// URL"),
        ),
        (
            "{url: 'http://'}",
            Some("url must be an http:// or https:// URL"),
        ),
        ("{url: 5}", Some("url must be a string")),
        // The url is parsed at load time (url crate): host, port, brackets.
        ("{url: 'http://[::1]:8080/mcp'}", None),
        ("{url: 'HTTPS://Example.TEST'}", None),
        (
            "{url: 'http://[::1/mcp'}",
            Some("url must be an http:// or https:// URL with a host: invalid IPv6 address"),
        ),
        (
            "{url: 'http://127.0.0.1:99999/mcp'}",
            Some("url must be an http:// or https:// URL with a host: invalid port number"),
        ),
        (
            "{url: 'http://127.0.0.1:0/mcp'}",
            Some(
                "url must be an http:// or https:// URL with a host: port 0 cannot be connected to",
            ),
        ),
        (
            "{url: 'http://exa mple.test/'}",
            Some("url must be an http:// or https:// URL with a host, without spaces"),
        ),
        (
            "{url: 'localhost:8080/mcp'}",
            Some(
                "url must be an http:// or https:// URL with a host (e.g. http://127.0.0.1:8080/mcp)",
            ),
        ),
        (
            "{url: 'http:/127.0.0.1/mcp'}",
            Some("url must be an http:// or https:// URL"),
        ),
        // Credentials in the URL would be printed wherever the URL is.
        (
            "{url: 'http://alice:pw@127.0.0.1:9/mcp'}",
            Some(
                "url must not carry a user name or password; send credentials in headers (Authorization) and write the URL as http://127.0.0.1:9/mcp",
            ),
        ),
        (
            "{url: 'https://alice@example.test/mcp'}",
            Some("url must not carry a user name or password"),
        ),
        (
            "{url: 'http://127.0.0.1/', headers: {Authorization: 'Bearer ${TOKEN}'}}",
            None,
        ),
        (
            "{url: 'http://127.0.0.1/', headers: {'Bad Header': x}}",
            Some("headers has a bad header name 'Bad Header'"),
        ),
        (
            "{url: 'http://127.0.0.1/', args: [a]}",
            Some("args is only valid with command"),
        ),
        (
            "{command: x, headers: {A: b}}",
            Some("headers is only valid with url"),
        ),
        ("{command: x, enabled: false}", None),
        (
            "{command: x, enabled: 'no'}",
            Some("enabled must be a boolean"),
        ),
        ("{command: x, timeout: 120, connect_timeout: '60'}", None),
        ("{command: x, timeout: '120'}", None),
        (
            "{command: x, timeout: abc}",
            Some("timeout must be a number of seconds"),
        ),
        (
            "{command: x, timeout: -1}",
            Some("timeout must be a positive number of seconds"),
        ),
        (
            "{command: x, timeout: '-5'}",
            Some("timeout must be a positive number of seconds"),
        ),
        (
            "{command: x, connect_timeout: [1]}",
            Some("connect_timeout must be a number of seconds"),
        ),
        // At least 1 ms: a shorter one is a typo that would round to 0 s.
        ("{command: x, timeout: 0.001, connect_timeout: '0.5'}", None),
        (
            "{command: x, timeout: 1e-10}",
            Some("timeout must be at least 0.001 seconds (1 ms; got 0.0000000001 s)"),
        ),
        (
            "{command: x, connect_timeout: 0.0005}",
            Some("connect_timeout must be at least 0.001 seconds"),
        ),
        (
            "{command: x, sampling: {timeout: 1e-10}}",
            Some("sampling.timeout must be at least 0.001 seconds"),
        ),
        (
            "{command: x, timeout: '99999999999999999999999'}",
            Some("timeout is out of range (at most 18446744073709551615 seconds)"),
        ),
        // Past the limit, however far: named against the limit.
        (
            "{command: x, connect_timeout: 1e300}",
            Some("connect_timeout is 1e300 s, more than the limit of 600 s"),
        ),
        (
            "{command: x, connect_timeout: 601}",
            Some("connect_timeout is 601 s, more than the limit of 600 s"),
        ),
        (
            "{command: x, max_result_bytes: '99999999999999999999999'}",
            Some("max_result_bytes is out of range (at most 18446744073709551615)"),
        ),
        (
            "{command: x, sampling: {max_rpm: 4294967296}}",
            Some("sampling.max_rpm is out of range (an integer from 0 to 4294967295)"),
        ),
        (
            "{command: x, tools: {include: [a, 'b*'], exclude: c}}",
            None,
        ),
        (
            "{command: x, tools: {include: [1]}}",
            Some("tools.include[0] must be a tool name or glob"),
        ),
        (
            "{command: x, tools: {inclde: [a]}}",
            Some("tools has unknown keys ['inclde'] (did you mean 'include'?)"),
        ),
        ("{command: x, tools: [a]}", Some("tools must be a mapping")),
        ("{command: x, max_result_bytes: 1024}", None),
        (
            "{command: x, max_result_bytes: 0}",
            Some("max_result_bytes must be a positive number of bytes"),
        ),
        (
            "{command: x, max_result_bytes: -1}",
            Some("max_result_bytes must be a non-negative integer"),
        ),
        (
            "{command: x, sampling: {enabled: false, max_rpm: 0, log_level: warning}}",
            None,
        ),
        (
            "{command: x, sampling: {max_tokens_cap: 0}}",
            Some("sampling.max_tokens_cap must be an integer from 1"),
        ),
        (
            "{command: x, sampling: {enable: false}}",
            Some("sampling has unknown keys ['enable'] (did you mean 'enabled'?)"),
        ),
        (
            "{command: x, sampling: true}",
            Some("sampling must be a mapping"),
        ),
        (
            "{command: x, transport: sse}",
            Some("has unknown keys ['transport']"),
        ),
        ("[command, x]", Some("the server entry must be a mapping")),
        (
            "{command: x, app: {linux: {presence: executable, location: /x, version: {kind: custom}}}}",
            Some("app.linux.version.kind 'custom' is only valid in a component's manifest"),
        ),
    ];
    let mut failures = Vec::new();
    for (entry, want) in cases {
        let doc = format!("name: p\nversion: '1'\nmcp_servers:\n  s: {entry}\n");
        let r = from_yaml(&doc);
        let e = plain_errors(&r);
        match want {
            None if !e.is_empty() => failures.push(format!("{entry}: unexpected {e:?}")),
            None => {}
            Some(w) => {
                let want = format!("p/plugin.yaml server 's': {w}");
                if e.len() != 1 || !e[0].starts_with(&want) {
                    failures.push(format!("{entry}: want `{want}`, got {e:?}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn values_are_stringified_interpolated_and_defaulted() {
    let r = from_yaml(
        r#"
name: p
version: "1"
mcp_servers:
  s:
    command: "${PLUGIN_DIR}/bin/srv"
    args: ["--dir=${PLUGIN_DIR}", 8080, true, "${TOKEN}"]
    env: {A: "${PLUGIN_DIR}/x", B: "${HOME}", C: "${env:TOKEN}", D: "${NOT_SET_ANYWHERE}", E: 3}
    timeout: "2.5"
    tools: {include: []}
    sampling: {model: m, allowed_models: [m], timeout: 5}
"#,
    );
    assert!(r.errors.is_empty(), "{:?}", errors(&r));
    assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
    assert!(r.warnings[0].contains("server 's': env.D uses ${NOT_SET_ANYWHERE}, which is not set"));
    let s = &r.manifest.unwrap().servers[0];
    let Transport::Stdio {
        command, args, env, ..
    } = &s.transport
    else {
        panic!()
    };
    assert_eq!(command, "/plugins/p/bin/srv");
    // Secrets are not interpolated into argv (only ${PLUGIN_DIR}).
    assert_eq!(args, &["--dir=/plugins/p", "8080", "true", "${TOKEN}"]);
    assert_eq!(env["A"], "/plugins/p/x");
    assert_eq!(env["B"], "/home/u");
    assert_eq!(env["C"], "s3cret");
    assert_eq!(env["D"], "${NOT_SET_ANYWHERE}");
    assert_eq!(env["E"], "3");
    assert_eq!(s.timeout, Duration::from_millis(2500));
    assert_eq!(s.connect_timeout, Duration::from_secs(60));
    assert_eq!(s.max_result_bytes, 8 * 1024 * 1024);
    assert_eq!(s.tools.include, Some(vec![]));
    assert!(s.enabled);
    assert_eq!(s.sampling.model.as_deref(), Some("m"));
    assert_eq!(s.sampling.timeout, Duration::from_secs(5));
    assert_eq!(s.sampling.max_tokens_cap, 4096);
    assert_eq!(s.sampling.log_level, SamplingLogLevel::Info);
    assert!(s.declaration.is_none());
}

#[test]
fn manifest_level_rules() {
    let cases: &[(&str, &str)] = &[
        ("[1]", "p/plugin.yaml: the manifest must be a mapping"),
        (
            "{version: '1'}",
            "p/plugin.yaml: name must be a plugin name",
        ),
        (
            "{name: 'a b', version: '1'}",
            "p/plugin.yaml: name must be a plugin name",
        ),
        (
            "{name: p}",
            "p/plugin.yaml: version must be a non-empty string",
        ),
        (
            "{name: p, version: 1.0}",
            "p/plugin.yaml: version must be a string, but YAML read 1.0 as a number; quote it",
        ),
        (
            "{name: p, version: '1', mcp_server: {}}",
            "p/plugin.yaml: manifest has unknown keys ['mcp_server'] (did you mean 'mcp_servers'?)",
        ),
        (
            "{name: p, version: '1', mcp_servers: [a]}",
            "p/plugin.yaml: mcp_servers must be a mapping",
        ),
        (
            // `a b` is a fine name now (docs/declarations.md, "Server names");
            // a blank one is not.
            "{name: p, version: '1', mcp_servers: {' ': {command: x}}}",
            "p/plugin.yaml: mcp_servers has a bad server name ' '",
        ),
        (
            "{name: p, version: '1', skills: x}",
            "p/plugin.yaml: skills must be a list",
        ),
        (
            "{name: p, version: '1', skills: [../x/SKILL.md]}",
            "p/plugin.yaml: skills[0] must be a relative path inside the plugin folder",
        ),
        (
            "{name: p, version: '1', skills: [/abs/SKILL.md]}",
            "p/plugin.yaml: skills[0] must be a relative path",
        ),
        (
            "{name: p, version: '1', skills: [{name: s}]}",
            "p/plugin.yaml: skills[0].markdown must be a string",
        ),
        (
            "{name: p, version: '1', skills: [{name: s, markdown: x, extra: 1}]}",
            "p/plugin.yaml: skills[0] has unknown keys ['extra']",
        ),
        (
            "{name: p, version: '1', skills: [5]}",
            "p/plugin.yaml: skills[0] must be a path or a mapping",
        ),
    ];
    for (doc, want) in cases {
        let e = plain_errors(&from_yaml(doc));
        assert!(
            e.len() == 1 && e[0].starts_with(want),
            "{doc}: want `{want}`, got {e:?}"
        );
    }
    let r = from_yaml(
        "{name: p, version: '1', skills: [skills/a/SKILL.md, {name: b, markdown: '# B'}]}",
    );
    assert_eq!(
        r.manifest.unwrap().skills,
        vec![
            SkillSource::File {
                path: PathBuf::from("/plugins/p/skills/a/SKILL.md")
            },
            SkillSource::Inline {
                name: "b".into(),
                markdown: "# B".into()
            },
        ]
    );
}

// ---------------------------------------------------------------------------
// Same content from YAML, JSON and a component value
// ---------------------------------------------------------------------------

const DECL_YAML: &str = r#"
app:
  win32:
    presence: executable
    location:
      - {kind: uninstall_registry, display_name_prefix: Vendor App, file: bin/vendor.exe}
    version: {kind: pe_resource}
  darwin:
    presence: bundle
    location: [{kind: app_bundle, name: Vendor.app}]
    version: {kind: plist}
  linux:
    presence: executable
    location: [{kind: command, name: vendor}, {kind: flatpak, app_id: com.vendor.App}]
requires: {app: true, min_version: "2.3", gpu: nvidia}
"#;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, text).unwrap();
    p
}

/// plugin.yaml, plugin.json (+ mcp.json) and the component value for the
/// same servers: `ok` with DECL_YAML, `bad` with one broken location.
fn three_sources(dir: &Path, bad_name: &str) -> Vec<ManifestResult> {
    let decl: Value = yaml_serde::from_str(DECL_YAML).unwrap();
    let mut bad = decl.clone();
    bad["app"]["linux"]["location"][0]["name"] = Value::String(bad_name.into());
    // plugin.yaml
    let mut servers = wasmgate::document::Mapping::new();
    for (name, d) in [("ok", &decl), ("bad", &bad)] {
        let mut e = d.as_mapping().unwrap().clone();
        e.insert("command".into(), "${PLUGIN_DIR}/srv".into());
        servers.insert(name.into(), Value::Mapping(e));
    }
    let mut doc = wasmgate::document::Mapping::new();
    doc.insert("name".into(), "vendor".into());
    doc.insert("version".into(), "1.0.0".into());
    doc.insert("mcp_servers".into(), Value::Mapping(servers.clone()));
    let component_value = Value::Mapping(doc.clone());
    let yaml_path = write(dir, "y/plugin.yaml", &yaml_serde::to_string(&doc).unwrap());
    // plugin.json + mcp.json
    // Written from the YAML value so object keys keep their order.
    let plugin_json: Value = yaml_serde::from_str(
        "{name: vendor, version: 1.0.0, extensions: {com.nousresearch.hermes: {servers: {}}}}",
    )
    .unwrap();
    let mut plugin_json = plugin_json;
    let ext = &mut plugin_json["extensions"]["com.nousresearch.hermes"]["servers"];
    ext["ok"] = decl.clone();
    ext["bad"] = bad.clone();
    let plugin_json = serde_json::to_string(&plugin_json).unwrap();
    let mcp_json = serde_json::json!({"mcpServers": {
        "ok": {"command": "${PLUGIN_DIR}/srv"},
        "bad": {"type": "stdio", "command": "${PLUGIN_DIR}/srv"},
    }});
    let json_path = write(dir, "j/plugin.json", &plugin_json);
    write(dir, "j/mcp.json", &mcp_json.to_string());
    let cctx = ManifestContext::new("c/plugin.wasm", "/c");
    vec![
        load_plugin_yaml(&yaml_path),
        load_plugin_json(&json_path),
        manifest_from_value(
            &component_value,
            &ManifestContext {
                allow_custom_version: true,
                ..cctx
            },
        ),
    ]
}

#[test]
fn yaml_json_and_component_give_the_same_declaration_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    let results = three_sources(dir.path(), "bin/vendor");
    let mut decls = Vec::new();
    let mut errs = Vec::new();
    for r in &results {
        let m = r.manifest.as_ref().expect("manifest");
        assert_eq!(m.servers.len(), 1, "{:?}", errors(r));
        decls.push(m.servers[0].declaration.clone().unwrap());
        assert_eq!(r.errors.len(), 1, "{:?}", errors(r));
        let e = &r.errors[0];
        errs.push((e.server.clone(), e.path.clone(), e.message.clone()));
    }
    assert_eq!(decls[0], decls[1]);
    assert_eq!(decls[0], decls[2]);
    assert_eq!(errs[0], errs[1]);
    assert_eq!(errs[0], errs[2]);
    assert_eq!(errs[0].1, "app.linux.location[0].name");
    let d = &decls[0];
    assert_eq!(
        d.app_for(OsFamily::Darwin).unwrap().version_kind,
        VersionKind::Plist
    );
    // where labels: `<file> server '<name>'`, and for plugin.json the extension.
    assert!(
        results[0].errors[0]
            .to_string()
            .contains("plugin.yaml server 'bad': app.linux.location[0].name")
    );
    assert!(
        results[1].errors[0]
            .to_string()
            .contains("plugin.json extension server 'bad': app.linux.location[0].name")
    );
    assert!(
        results[2].errors[0]
            .to_string()
            .starts_with("c/plugin.wasm server 'bad': app.linux.location[0].name")
    );
}

#[test]
fn plugin_json_envelope_rules() {
    let dir = tempfile::tempdir().unwrap();
    let case =
        |name: &str, plugin: serde_json::Value, mcp: Option<serde_json::Value>| -> ManifestResult {
            let d = dir.path().join(name);
            let p = write(&d, "plugin.json", &plugin.to_string());
            if let Some(m) = mcp {
                write(&d, "mcp.json", &m.to_string());
            }
            load_plugin_json(&p)
        };
    let app = serde_json::json!({"linux": {"presence": "executable", "location": "/x",
        "liveness": {"kind": "server_json", "path": "/run/a.json", "endpoint_path": "/rpc"}}});
    let ext = |servers: serde_json::Value| {
        serde_json::json!({"name": "v", "version": "1",
        "extensions": {"com.nousresearch.hermes": {"servers": servers}}})
    };
    let mcp = serde_json::json!({"mcpServers": {"a": {"command": "x"}}});

    // A near miss of mcpServers or extensions would drop every server or
    // gate without a word; Hermes' own keys (description, …) stay quiet.
    let r = case(
        "misspelt-top-level",
        serde_json::json!({"name": "v", "version": "1", "description": "d",
            "mcp_servers": {"a": {"command": "x"}}, "extension": {}}),
        None,
    );
    let all = errors(&r);
    let shown: Vec<&str> = all
        .iter()
        .map(|e| {
            e.rsplit_once("plugin.json: ")
                .map_or(e.as_str(), |(_, m)| m)
        })
        .collect();
    assert_eq!(
        shown,
        [
            "extension is not a key of plugin.json (did you mean `extensions`?)",
            "mcp_servers is not a key of plugin.json (did you mean `mcpServers`?)",
        ],
    );
    // Quoting advice in the file's own syntax.
    let r = case(
        "json-numbers",
        serde_json::json!({"name": "v", "version": 1.5, "mcpServers": {"a": {"command": "x"}},
            "extensions": {"com.nousresearch.hermes": {"servers": {"a": {"app": app.clone(),
                "requires": {"app": true, "min_version": 2.3}}}}}}),
        None,
    );
    let all = errors(&r);
    assert!(
        all.iter().any(|e| e.ends_with(
            "version (1.5) must be a string, but 1.5 is a JSON number; quote it: \"version\": \"1.5\""
        )),
        "{all:?}"
    );
    assert!(
        all.iter().any(|e| e.ends_with(
            "requires.min_version (2.3) must be a dotted numeric string, but 2.3 is a JSON number; quote it: \"min_version\": \"2.3\""
        )),
        "{all:?}"
    );

    // The same for mcp.json beside it, and for the extension's own key.
    let r = case(
        "mcp-json-near-miss",
        serde_json::json!({"name": "v", "version": "1"}),
        Some(serde_json::json!({"mcp_servers": {"a": {"command": "x"}}})),
    );
    assert!(
        errors(&r)[0].ends_with(
            "mcp.json: mcp_servers is not a key of mcp.json (did you mean `mcpServers`?)"
        ),
        "{:?}",
        errors(&r)
    );
    let r = case(
        "extension-case",
        serde_json::json!({"name": "v", "version": "1", "mcpServers": {"a": {"command": "x"}},
            "extensions": {"com.nousresearch.Hermes": {"servers": {"a": {"requires": {"gpu": "nvidia"}}}},
                "com.example.other": {}}}),
        None,
    );
    assert_eq!(errors(&r).len(), 1, "{:?}", errors(&r));
    assert!(
        errors(&r)[0]
            .contains("extensions has 'com.nousresearch.Hermes' but no 'com.nousresearch.hermes'"),
        "{:?}",
        errors(&r)
    );

    let r = case(
        "both-spellings",
        serde_json::json!({"name": "v", "version": "1", "mcpServers": {}, "mcpServer": {}}),
        None,
    );
    assert!(errors(&r).is_empty(), "{:?}", errors(&r));

    let r = case(
        "unknown-server",
        ext(serde_json::json!({"zz": {"requires": {"gpu": "nvidia"}}})),
        Some(mcp.clone()),
    );
    assert!(
        errors(&r)
            .iter()
            .any(|e| e.contains("extension server 'zz': is not a server of mcpServers")),
        "{:?}",
        errors(&r)
    );

    let r = case(
        "non-object",
        ext(serde_json::json!({"a": 5})),
        Some(mcp.clone()),
    );
    assert!(
        errors(&r)[0].contains("extension server 'a': must be an object"),
        "{:?}",
        errors(&r)
    );

    let r = case(
        "unknown-keys",
        ext(serde_json::json!({"a": {"requires": {}, "zeta": 1, "alpha": 2}})),
        Some(mcp.clone()),
    );
    assert!(
        errors(&r)[0].contains("extension server 'a': has unknown keys ['alpha', 'zeta']"),
        "{:?}",
        errors(&r)
    );

    let r = case(
        "liveness-alone",
        ext(serde_json::json!({"a": {"liveness": {"kind": "static"}}})),
        Some(mcp.clone()),
    );
    assert!(
        errors(&r)[0].contains("extension server 'a': liveness needs app or requires"),
        "{:?}",
        errors(&r)
    );

    // The server-level server_json liveness is folded into app.<os>.liveness.
    let r = case(
        "fold",
        ext(
            serde_json::json!({"a": {"app": app, "liveness": {"kind": "server_json", "path": "/run/b.json", "fields": {"token": "tok"}}}}),
        ),
        Some(mcp.clone()),
    );
    assert!(r.errors.is_empty(), "{:?}", errors(&r));
    let d = r.manifest.unwrap().servers[0].declaration.clone().unwrap();
    match &d.app_for(OsFamily::Linux).unwrap().liveness {
        wasmgate::Liveness::ServerJson {
            path,
            token_key,
            endpoint_path,
            ..
        } => {
            assert_eq!(
                (path.as_str(), token_key.as_str(), endpoint_path.as_str()),
                ("/run/b.json", "tok", "/rpc")
            );
        }
        l => panic!("{l:?}"),
    }
    // ... and checked by the same parser (hardened rules).
    let r = case(
        "fold-bad",
        ext(
            serde_json::json!({"a": {"app": app, "liveness": {"kind": "server_json", "path": "relative/b.json"}}}),
        ),
        Some(mcp.clone()),
    );
    assert!(
        errors(&r)[0].contains(
            "extension server 'a': app.linux.liveness.path (\"relative/b.json\") must be absolute"
        ),
        "{:?}",
        errors(&r)
    );

    let r = case(
        "bad-fields",
        ext(
            serde_json::json!({"a": {"requires": {}, "liveness": {"kind": "server_json", "path": "/p", "fields": {"tokn": "x"}}}}),
        ),
        Some(mcp.clone()),
    );
    assert!(
        errors(&r)[0].contains("liveness.fields has unknown keys ['tokn']"),
        "{:?}",
        errors(&r)
    );

    // mcpServers inside plugin.json; SSE refused.
    let mut p = ext(serde_json::json!({}));
    p["mcpServers"] = serde_json::json!({"s": {"type": "sse", "url": "http://127.0.0.1:1/sse"}, "t": {"url": "http://127.0.0.1:1/mcp", "type": "http"}});
    let r = case("inline-sse", p, None);
    assert_eq!(errors(&r).len(), 1, "{:?}", errors(&r));
    assert!(errors(&r)[0].contains("server 's': type is 'sse'"));
    assert_eq!(r.manifest.unwrap().servers[0].name, "t");

    let r = case("not-json", serde_json::json!("x"), None);
    assert!(errors(&r)[0].contains("must be a JSON object"));
}

#[test]
fn config_file_and_merge() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(
        dir.path(),
        "config.yaml",
        "model: whatever\nmcp_servers:\n  git: {command: git-mcp}\n  web: {url: 'http://127.0.0.1:9/mcp'}\n  bad: {command: x, timeout: -3}\n",
    );
    let c = load_config(&cfg);
    assert_eq!(c.servers.len(), 2);
    assert_eq!(c.errors.len(), 1);
    assert!(
        c.errors[0].to_string().ends_with(
            "config.yaml server 'bad': timeout (-3) must be a positive number of seconds"
        )
    );
    assert!(c.servers.iter().all(|s| s.plugin.is_none()));

    let p = from_yaml(THREE_SERVERS).manifest.unwrap();
    let mut plugin_servers = p.servers.clone();
    let mut clash = plugin_servers[0].clone();
    clash.name = "git".into();
    plugin_servers.push(clash);
    let (all, errs) = merge_servers(c.servers.clone(), plugin_servers);
    let names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["git", "web", "good-a", "good-b"]);
    assert_eq!(errs.len(), 1);
    assert_eq!(
        errs[0].to_string(),
        "plugin 'demo' server 'git': has the same name as a server of the config file; it is left out"
    );
    assert!(all[0].plugin.is_none());

    assert!(
        load_config(&dir.path().join("missing.yaml")).errors[0]
            .message
            .contains("cannot be read")
    );
    let bad = write(dir.path(), "bad.yaml", "mcp_servers: [\n");
    assert!(
        load_config(&bad).errors[0]
            .message
            .contains("is not valid YAML")
    );
}

#[test]
fn skills_are_read_from_files_bounded() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "skills/a/SKILL.md", "---\nname: a\n---\n# A\n");
    let p = write(
        dir.path(),
        "plugin.yaml",
        "name: p\nversion: '1'\nskills: [skills/a/SKILL.md, skills/missing/SKILL.md]\n",
    );
    let r = load_plugin_yaml(&p);
    assert_eq!(r.errors.len(), 1);
    assert!(r.errors[0].to_string().contains("skills[1]"));
    let skills = r.manifest.unwrap().skills;
    assert_eq!(skills.len(), 1);
    assert!(matches!(&skills[0], SkillSource::Loaded { markdown, .. } if markdown.contains("# A")));

    // The bound: a SKILL.md of exactly MAX_SKILL_BYTES is read whole, one
    // byte more is refused by size (and the other skill stays).
    let skill = |bytes: u64| {
        let head = "---\nname: big\n---\n";
        format!("{head}{}", "x".repeat(bytes as usize - head.len()))
    };
    write(dir.path(), "skills/cap/SKILL.md", &skill(MAX_SKILL_BYTES));
    write(
        dir.path(),
        "skills/over/SKILL.md",
        &skill(MAX_SKILL_BYTES + 1),
    );
    let p = write(
        dir.path(),
        "plugin.yaml",
        "name: p\nversion: '1'\nskills: [skills/cap/SKILL.md, skills/over/SKILL.md]\n",
    );
    let r = load_plugin_yaml(&p);
    assert_eq!(r.errors.len(), 1, "{:?}", errors(&r));
    let e = r.errors[0].to_string();
    assert!(e.contains("skills[1]"), "{e}");
    assert!(
        e.contains(&format!("is larger than {MAX_SKILL_BYTES} bytes")),
        "{e}"
    );
    let skills = r.manifest.unwrap().skills;
    assert_eq!(skills.len(), 1);
    match &skills[0] {
        SkillSource::Loaded { markdown, .. } => {
            assert_eq!(markdown.len() as u64, MAX_SKILL_BYTES)
        }
        other => panic!("the skill at the cap was not read: {other:?}"),
    }
}

#[test]
fn manifest_and_config_files_are_read_up_to_their_bound() {
    // A valid file padded with a comment to `bytes` bytes.
    let padded = |body: &str, bytes: u64| {
        let pad = bytes as usize - body.len() - 2;
        format!("{body}#{}\n", "x".repeat(pad))
    };
    let dir = tempfile::tempdir().unwrap();
    let manifest = "name: p\nversion: '1'\n";
    let at_cap = write(
        dir.path(),
        "cap/plugin.yaml",
        &padded(manifest, MAX_MANIFEST_BYTES),
    );
    assert_eq!(
        std::fs::metadata(&at_cap).unwrap().len(),
        MAX_MANIFEST_BYTES
    );
    let r = load_plugin_yaml(&at_cap);
    assert!(r.errors.is_empty(), "{:?}", errors(&r));
    assert_eq!(r.manifest.unwrap().name, "p");

    let over = write(
        dir.path(),
        "over/plugin.yaml",
        &padded(manifest, MAX_MANIFEST_BYTES + 1),
    );
    let r = load_plugin_yaml(&over);
    assert!(r.manifest.is_none());
    assert_eq!(r.errors.len(), 1, "{:?}", errors(&r));
    assert!(
        r.errors[0]
            .to_string()
            .contains(&format!("is larger than {MAX_MANIFEST_BYTES} bytes")),
        "{:?}",
        errors(&r)
    );

    // A config file (the user's own, or an agent's such as a large
    // ~/.claude.json) has its own, larger bound.
    let config = "mcp_servers:\n  s: {command: x}\n";
    let at_cap = write(dir.path(), "cap.yaml", &padded(config, MAX_CONFIG_BYTES));
    let r = load_config(&at_cap);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(r.servers.len(), 1);
    let over = write(
        dir.path(),
        "over.yaml",
        &padded(config, MAX_CONFIG_BYTES + 1),
    );
    let r = load_config(&over);
    assert!(r.servers.is_empty());
    assert!(
        r.errors[0]
            .message
            .contains(&format!("is larger than {MAX_CONFIG_BYTES} bytes")),
        "{:?}",
        r.errors
    );
}

#[test]
fn check_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(
        dir.path(),
        "good/plugin.yaml",
        "name: p\nversion: '1'\nmcp_servers:\n  s: {command: x, requires: {gpu: nvidia}}\n",
    );
    let bad = write(dir.path(), "bad/plugin.yaml", THREE_SERVERS);
    let txt = write(dir.path(), "x/plugin.txt", "name: p");
    assert_eq!(run_check(&good, false, Vec::new()), EXIT_VALID);
    assert_eq!(run_check(&good, true, Vec::new()), EXIT_VALID);
    assert_eq!(run_check(&bad, true, Vec::new()), EXIT_INVALID);
    assert_eq!(run_check(&txt, false, Vec::new()), EXIT_USAGE);
    assert_eq!(
        run_check(&dir.path().join("none.yaml"), false, Vec::new()),
        EXIT_USAGE
    );
    let json = write(
        dir.path(),
        "j/plugin.json",
        r#"{"name": "p", "version": "1", "mcpServers": {"s": {"command": "x"}}}"#,
    );
    assert_eq!(run_check(&json, true, Vec::new()), EXIT_VALID);
    // A component's manifest accepts version.kind: custom; plugin.yaml does not.
    let v: Value = yaml_serde::from_str(
        "{name: p, version: '1', mcp_servers: {s: {command: x, app: {linux: {presence: executable, location: /x, version: {kind: custom}}}, requires: {app: true, min_version: '1'}}}}",
    )
    .unwrap();
    assert_eq!(
        report(
            manifest_from_value(
                &v,
                &ManifestContext {
                    allow_custom_version: true,
                    ..ManifestContext::new("p.wasm", dir.path())
                }
            ),
            &wasmgate::cli::check::CheckContext::default(),
            true
        ),
        EXIT_VALID
    );
    let custom = write(
        dir.path(),
        "c/plugin.yaml",
        &yaml_serde::to_string(&v).unwrap(),
    );
    assert_eq!(run_check(&custom, true, Vec::new()), EXIT_INVALID);
}

fn arb_value() -> impl Strategy<Value = Value> {
    const WORDS: &[&str] = &[
        "name",
        "version",
        "mcp_servers",
        "skills",
        "command",
        "args",
        "env",
        "url",
        "headers",
        "app_endpoint",
        "enabled",
        "timeout",
        "connect_timeout",
        "tools",
        "include",
        "exclude",
        "max_result_bytes",
        "sampling",
        "app",
        "requires",
        "linux",
        "presence",
        "location",
        "executable",
        "${PLUGIN_DIR}",
        "${X}",
        "${",
        "http://127.0.0.1/",
        "-1",
        "120",
        "abc",
        "p",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| Value::Number(n.into())),
        any::<f64>().prop_map(|f| Value::Number(f.into())),
        proptest::sample::select(WORDS).prop_map(|s| Value::String(s.into())),
        ".{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 64, 6, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Sequence),
            proptest::collection::vec(
                (
                    proptest::sample::select(WORDS).prop_map(|s| Value::String(s.into())),
                    inner
                ),
                0..6
            )
            .prop_map(|kv| Value::Mapping(kv.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// The manifest validator never panics, and every error names its source.
    #[test]
    fn arbitrary_manifests_never_panic(v in arb_value()) {
        let r = manifest_from_value(&v, &ctx());
        for e in &r.errors {
            prop_assert!(e.to_string().starts_with("p/plugin.yaml"));
        }
    }
}

// ---------------------------------------------------------------------------
// Every problem at once; userinfo; integers beyond 64 bits; mcp_servers key
// ---------------------------------------------------------------------------

#[test]
fn every_problem_of_one_server_is_reported_at_once() {
    let r = from_yaml(
        r#"
name: p
version: "1"
mcp_servers:
  s:
    command: ""
    args: [ok, [a], {b: 1}]
    env: {A: [1], "B=C": x, D: fine}
    env_passthrough: [1]
    enabled: "no"
    timeout: abc
    connect_timeout: 1e-10
    tools: {include: [1], exclude: 5}
    max_result_bytes: 0
    sampling: {max_rpm: -1, log_level: loud}
    requires: {gpu: amd}
  good: {command: x}
"#,
    );
    let got: Vec<(String, String)> = r
        .errors
        .iter()
        .map(|e| (e.path.clone(), e.message.clone()))
        .collect();
    let paths: Vec<&str> = got.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        paths,
        [
            "enabled",
            "command",
            "args[1]",
            "args[2]",
            "env.A",
            "env",
            "env_passthrough[0]",
            "timeout",
            "connect_timeout",
            "tools.include[0]",
            "tools.exclude",
            "max_result_bytes",
            "sampling.max_rpm",
            "sampling.log_level",
            "requires.gpu",
        ],
        "{got:#?}"
    );
    assert!(r.errors.iter().all(|e| e.server.as_deref() == Some("s")));
    assert!(got[5].1.contains("bad variable name 'B=C'"), "{got:?}");
    let names: Vec<String> = r
        .manifest
        .unwrap()
        .servers
        .iter()
        .map(|s| s.name.clone())
        .collect();
    assert_eq!(names, ["good"]);

    // Inside a declaration the first failing check wins (docs/declarations.md §2), but
    // the server's other keys are still reported.
    let r = from_yaml(
        "name: p\nversion: '1'\nmcp_servers:\n  s: {command: x, timeout: -1, app: {linux: {presence: executable, location: a/b}}, requires: {gpu: amd}}\n",
    );
    let e = errors(&r);
    assert_eq!(e.len(), 2, "{e:#?}");
    assert!(
        e[0].ends_with("timeout (-1) must be a positive number of seconds"),
        "{}",
        e[0]
    );
    assert!(
        e[1].contains("server 's': app.linux.location (\"a/b\") must be absolute"),
        "{}",
        e[1]
    );

    // Both transports given: the combination is one error, and a bad url is
    // still named.
    let r = from_yaml(
        "name: p\nversion: '1'\nmcp_servers:\n  s: {command: x, url: 'http://[::1/mcp'}\n",
    );
    let e = errors(&r);
    assert_eq!(e.len(), 2, "{e:#?}");
    assert!(e[0].contains("url cannot be combined with command"));
    assert!(
        e[1].contains("url must be an http:// or https:// URL with a host: invalid IPv6 address")
    );
}

#[test]
fn a_password_in_a_url_is_refused_in_every_source_without_printing_it() {
    const SECRET: &str = "s3cr3t-pw";
    let url = format!("http://alice:{SECRET}@127.0.0.1:9/mcp");
    let dir = tempfile::tempdir().unwrap();
    let want = "url must not carry a user name or password; send credentials in headers (Authorization) and write the URL as http://127.0.0.1:9/mcp";

    let cfg = write(
        dir.path(),
        "config.yaml",
        &format!("mcp_servers:\n  u: {{url: '{url}'}}\n  ok: {{url: 'http://127.0.0.1:9/mcp'}}\n"),
    );
    let c = load_config(&cfg);
    let yaml = write(
        dir.path(),
        "y/plugin.yaml",
        &format!(
            "name: p\nversion: '1'\nmcp_servers:\n  u: {{url: '{url}'}}\n  ok: {{command: x}}\n"
        ),
    );
    let y = load_plugin_yaml(&yaml);
    let json = write(
        dir.path(),
        "j/plugin.json",
        &serde_json::json!({"name": "p", "version": "1"}).to_string(),
    );
    write(
        dir.path(),
        "j/mcp.json",
        &serde_json::json!({"mcpServers": {"u": {"type": "http", "url": url}, "ok": {"command": "x"}}})
            .to_string(),
    );
    let j = load_plugin_json(&json);
    let component: Value = yaml_serde::from_str(&format!(
        "{{name: p, version: '1', mcp_servers: {{u: {{url: '{url}'}}, ok: {{command: x}}}}}}"
    ))
    .unwrap();
    let w = manifest_from_value(&component, &ManifestContext::new("c/plugin.wasm", "/c"));

    for (what, errs, kept) in [
        ("config", c.errors.clone(), c.servers.len()),
        (
            "plugin.yaml",
            y.errors.clone(),
            y.manifest.unwrap().servers.len(),
        ),
        (
            "plugin.json",
            j.errors.clone(),
            j.manifest.unwrap().servers.len(),
        ),
        (
            "component",
            w.errors.clone(),
            w.manifest.unwrap().servers.len(),
        ),
    ] {
        assert_eq!(errs.len(), 1, "{what}: {errs:?}");
        let e = &errs[0];
        assert_eq!(
            (e.server.as_deref(), e.path.as_str()),
            (Some("u"), "url"),
            "{what}"
        );
        let text = e.to_string();
        assert!(
            text.contains("server 'u': ") && text.ends_with(want),
            "{what}: {text}"
        );
        assert!(
            !text.contains(SECRET) && !text.contains("alice"),
            "{what}: {text}"
        );
        assert_eq!(kept, 1, "{what}: the good server is kept");
    }
}

#[test]
fn an_integer_beyond_64_bits_costs_only_its_server() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(
        dir.path(),
        "config.yaml",
        "mcp_servers:\n  good: {command: x, args: [--port, 99999999999999999999999, -99999999999999999999999]}\n  big:\n    command: x\n    max_result_bytes: 99999999999999999999999\n  slow: {command: x, timeout: 99999999999999999999999}\n  rpm: {command: x, sampling: {max_rpm: 99999999999999999999999}}\n  web: {url: 'http://127.0.0.1:9/mcp'}\n",
    );
    let c = load_config(&cfg);
    let names: Vec<&str> = c.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["good", "web"], "{:?}", c.errors);
    match &c.servers[0].transport {
        Transport::Stdio { args, .. } => assert_eq!(
            args,
            &[
                "--port",
                "99999999999999999999999",
                "-99999999999999999999999"
            ]
        ),
        t => panic!("{t:?}"),
    }
    let e: Vec<String> = c.errors.iter().map(ToString::to_string).collect();
    assert_eq!(e.len(), 3, "{e:#?}");
    assert!(
        e[0].ends_with(
            "server 'big': max_result_bytes (\"99999999999999999999999\") is out of range (at most 18446744073709551615)"
        ),
        "{e:?}"
    );
    assert!(
        e[1].ends_with(
            "server 'slow': timeout (\"99999999999999999999999\") is out of range (at most 18446744073709551615 seconds)"
        ),
        "{e:?}"
    );
    assert!(
        e[2].ends_with(
            "server 'rpm': sampling.max_rpm (\"99999999999999999999999\") is out of range (an integer from 0 to 4294967295)"
        ),
        "{e:?}"
    );
}

#[test]
fn a_duplicate_key_is_a_whole_file_error_naming_the_key_and_lines() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(
        dir.path(),
        "config.yaml",
        "mcp_servers:\n  a: {command: x}\n  b: {command: y}\n  a: {command: z}\n",
    );
    let c = load_config(&cfg);
    assert!(c.servers.is_empty());
    assert_eq!(c.errors.len(), 1);
    assert!(
        c.errors[0].to_string().ends_with(
            "config.yaml: is not valid YAML: the mapping mcp_servers has the key \"a\" more than once (at lines 2 and 4); the keys of a mapping must be unique"
        ),
        "{}",
        c.errors[0]
    );
}

#[test]
fn a_config_needs_an_mcp_servers_key() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, Option<&str>)] = &[
        // Other keys belong to the embedding agent; only mcp_servers is read.
        ("model: x\nmcp_servers:\n  a: {command: x}\n", None),
        ("model: x\nmcp_servers:\n", None),
        ("mcp_servers: {}\n", None),
        ("", None),
        ("# nothing yet\n", None),
        (
            "model: x\n",
            Some(
                "has no mcp_servers mapping (wasmgate reads its servers from the top-level `mcp_servers` key, or another agent's `mcpServers`, `servers`, Codex `[mcp_servers.<id>]` or Goose `extensions`; other keys are ignored)",
            ),
        ),
        // Another agent's mcpServers is read (docs/mcp-client.md §1.4).
        ("model: x\nmcpServers:\n  a: {command: x}\n", None),
        (
            "mcp-servers: {}\n",
            Some("did you mean `mcp_servers`? this file has `mcp-servers`"),
        ),
        (
            "mcp_server: {}\n",
            Some("did you mean `mcp_servers`? this file has `mcp_server`"),
        ),
        (
            "servers: {}\n",
            Some("did you mean `mcp_servers`? this file has `servers`"),
        ),
        (
            "MCP_SERVERS: {}\n",
            Some("did you mean `mcp_servers`? this file has `MCP_SERVERS`"),
        ),
        ("- a\n", Some("must be a mapping (got a list)")),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let p = write(dir.path(), &format!("c{i}.yaml"), text);
        let c = load_config(&p);
        let e: Vec<String> = c.errors.iter().map(ToString::to_string).collect();
        match want {
            None => assert!(e.is_empty(), "{text:?}: {e:?}"),
            Some(w) => {
                assert_eq!(e.len(), 1, "{text:?}: {e:?}");
                assert!(
                    e[0].starts_with(&format!("{}: ", p.display())) && e[0].contains(w),
                    "{text:?}: want `{w}`, got {e:?}"
                );
                assert!(c.servers.is_empty());
            }
        }
    }
}

/// A plugin's manifest (`ManifestContext::for_plugin`) reads only granted
/// host variables; the same text in the user's config reads them all
/// (`docs/security.md`, "What a plugin's manifest may reach").
#[test]
fn a_plugin_manifest_reads_only_granted_host_variables() {
    use std::sync::Arc;
    use wasmgate::manifest::{PluginsConfig, plugins_from_value};
    const TEXT: &str = r#"
name: p
version: "1"
mcp_servers:
  e: {command: x, env: {A: "${TOKEN}", B: "${PLUGIN_DIR}/b"}}
  h: {url: "http://127.0.0.1:9/", headers: {X: "${env:TOKEN}", Y: "${PLUGIN_DIR}"}}
  pass: {command: x, env_passthrough: [PATH, TOKEN]}
  base: {command: x, env_passthrough: [HOME, XDG_DATA_HOME]}
  grant: {command: x, env: {G: "${GRANTED}", U: "${GRANTED_UNSET}"}, env_passthrough: [GRANTED]}
"#;
    let v: Value = yaml_serde::from_str(TEXT).unwrap();
    let grants: Value = yaml_serde::from_str(
        "plugins: {p: {env_grants: [GRANTED, GRANTED_UNSET]}, q: {env_grants: [TOKEN]}}",
    )
    .unwrap();
    let (grants, e) = plugins_from_value(grants.get("plugins"), "cfg.yaml");
    assert!(e.is_empty());
    let host_env = [
        ("HOME", "/home/u"),
        ("TOKEN", "s3cret"),
        ("GRANTED", "given"),
    ];
    let plugin = ManifestContext::for_plugin("p/plugin.yaml", "/plugins/p", Arc::new(grants))
        .with_env(host_env);
    let r = manifest_from_value(&v, &plugin);
    let errs = errors(&r);
    assert_eq!(errs.len(), 2, "{errs:#?}");
    assert!(errs[0].starts_with("p/plugin.yaml server 'e': env.A uses ${TOKEN}: a plugin's manifest may not read the host environment; the user may grant it in the config file (plugins: {p: {env_grants: [TOKEN]}})"), "{}", errs[0]);
    assert!(
        errs[1].starts_with("p/plugin.yaml server 'h': headers.X uses ${TOKEN}: "),
        "{}",
        errs[1]
    );
    // An ungranted passthrough name is withheld with a warning; the server
    // stays, without it.
    assert!(
        r.warnings.iter().any(|w| w
            .starts_with("p/plugin.yaml server 'pass': env_passthrough[1] TOKEN is not passed: ")
            && w.contains("env_grants: [TOKEN]")),
        "{:#?}",
        r.warnings
    );
    assert!(!format!("{errs:?}{:?}", r.warnings).contains("s3cret"));
    let m = r.manifest.unwrap();
    let names: Vec<&str> = m.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["pass", "base", "grant"]);
    let Transport::Stdio {
        env_passthrough, ..
    } = &m.servers[0].transport
    else {
        panic!()
    };
    assert_eq!(env_passthrough, &["PATH"]);
    let Transport::Stdio {
        env,
        env_passthrough,
        ..
    } = &m.servers[2].transport
    else {
        panic!()
    };
    assert_eq!(env["G"], "given");
    assert_eq!(env["U"], "${GRANTED_UNSET}");
    assert_eq!(env_passthrough, &["GRANTED"]);
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("${GRANTED_UNSET}, which is not set"))
    );

    // No entry for the plugin, or an invalid plugin name: nothing granted.
    let none = ManifestContext::for_plugin(
        "p/plugin.yaml",
        "/plugins/p",
        Arc::new(PluginsConfig::default()),
    )
    .with_env(host_env);
    let r = manifest_from_value(&v, &none);
    // e.A, h.X, grant.G and grant.U are refused; pass's TOKEN and grant's
    // GRANTED passthrough names are withheld with warnings.
    assert_eq!(r.errors.len(), 4, "{:?}", errors(&r));
    assert_eq!(
        r.warnings
            .iter()
            .filter(|w| w.contains("is not passed"))
            .count(),
        2,
        "{:#?}",
        r.warnings
    );

    // The user's own file reads everything.
    let user = ManifestContext::new("cfg.yaml", "/cfg").with_env(host_env);
    let r = manifest_from_value(&v, &user);
    assert!(r.errors.is_empty(), "{:?}", errors(&r));
    let Transport::Http { headers, .. } = &r.manifest.unwrap().servers[1].transport else {
        panic!()
    };
    assert_eq!(headers["X"], "s3cret");
}
