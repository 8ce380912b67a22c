//! `wasmgate check` as a plugin author meets it (`docs/skills.md`): skills'
//! front matter (an error when invalid; warnings for a missing key, a name
//! that differs from the one the plugin gives, a `requires_apps` name no
//! declared server carries), the `${PLUGIN_DIR}` commands a plugin ships
//! (must exist and be executable), the offending value after each error's
//! field path, and `--json` printing one document for valid and invalid
//! input alike. Real binary, real files.

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn check(dir: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wasmgate"))
        .current_dir(dir)
        .env_remove("WASMGATE_PLUGINS")
        .env_remove("WASMGATE_CONFIG")
        .env("WASMGATE_CACHE", "")
        .env("HOME", dir)
        .env("XDG_CONFIG_HOME", dir.join("xdg"))
        .arg("check")
        .args(extra)
        .output()
        .expect("wasmgate runs")
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "check --json printed no JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

#[cfg(unix)]
fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

const PLUGIN: &str = "name: p\nversion: '1'\nmcp_servers:\n  tool:\n    command: \"${PLUGIN_DIR}/tool-mcp\"\n    requires: {gpu: nvidia}\nskills:\n  - skills/tool/SKILL.md\n";

#[cfg(unix)]
#[test]
fn a_valid_plugin_with_its_server_and_a_complete_skill_has_no_warning() {
    let t = tempfile::tempdir().unwrap();
    write(t.path(), "p/plugin.yaml", PLUGIN);
    write(t.path(), "p/tool-mcp", "#!/bin/sh\n");
    chmod(&t.path().join("p/tool-mcp"), 0o755);
    write(
        t.path(),
        "p/skills/tool/SKILL.md",
        "---\nname: tool\ndescription: Use the tool.\nrequires_apps: [tool]\n---\n# Tool\n",
    );
    let out = check(t.path(), &["--json", "p"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = json(&out);
    assert_eq!(doc["valid"], true, "{doc:#}");
    assert_eq!(doc["errors"], serde_json::json!([]), "{doc:#}");
    assert_eq!(doc["warnings"], serde_json::json!([]), "{doc:#}");
    assert_eq!(doc["manifest"]["name"], "p", "{doc:#}");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The text form prints the manifest as YAML, no warning either.
    let out = check(t.path(), &["p"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("name: p"));
}

#[cfg(unix)]
#[test]
fn a_missing_or_non_executable_shipped_command_is_an_error_with_its_value() {
    let t = tempfile::tempdir().unwrap();
    write(t.path(), "p/plugin.yaml", PLUGIN);
    write(
        t.path(),
        "p/skills/tool/SKILL.md",
        "---\nname: tool\ndescription: d\n---\n",
    );
    let out = check(t.path(), &["--json", "p"]);
    assert_eq!(out.status.code(), Some(1));
    let doc = json(&out);
    assert_eq!(doc["valid"], false, "{doc:#}");
    assert_eq!(doc["manifest"], Value::Null, "{doc:#}");
    let e = &doc["errors"][0];
    assert_eq!(e["where"], "p/plugin.yaml server 'tool'", "{doc:#}");
    assert_eq!(e["path"], "command", "{doc:#}");
    assert_eq!(e["value"], "\"${PLUGIN_DIR}/tool-mcp\"", "{doc:#}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("tool-mcp does not exist"),
        "{doc:#}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("p/plugin.yaml server 'tool': command (\"${PLUGIN_DIR}/tool-mcp\") names a file the plugin ships"),
        "{stderr}"
    );

    write(t.path(), "p/tool-mcp", "#!/bin/sh\n");
    chmod(&t.path().join("p/tool-mcp"), 0o644);
    let doc = json(&check(t.path(), &["--json", "p"]));
    let msg = doc["errors"][0]["message"].as_str().unwrap();
    assert!(msg.contains("is not executable"), "{doc:#}");

    std::fs::remove_file(t.path().join("p/tool-mcp")).unwrap();
    std::fs::create_dir(t.path().join("p/tool-mcp")).unwrap();
    let doc = json(&check(t.path(), &["--json", "p"]));
    let msg = doc["errors"][0]["message"].as_str().unwrap();
    assert!(msg.contains("not a regular file"), "{doc:#}");
}

#[test]
fn skill_problems_are_warnings_and_bad_front_matter_an_error() {
    let t = tempfile::tempdir().unwrap();
    write(
        t.path(),
        "p/plugin.yaml",
        "name: p\nversion: '1'\nmcp_servers:\n  tool: {command: x, requires: {gpu: nvidia}}\n  bare: {command: x}\nskills:\n  - skills/a/SKILL.md\n  - skills/b/SKILL.md\n  - skills/c/SKILL.md\n",
    );
    // a: another name, an unknown and an undeclared server, a typo'd key.
    write(
        t.path(),
        "p/skills/a/SKILL.md",
        "---\nname: alpha\ndescription: d\nrequires_apps: [tool, nope, bare, tol]\nrequire_app: x\n---\n",
    );
    // b: no front matter at all.
    write(t.path(), "p/skills/b/SKILL.md", "# Just text\n");
    // c: requires_apps of the wrong type.
    write(
        t.path(),
        "p/skills/c/SKILL.md",
        "---\nname: c\nrequires_apps: {x: 1}\n---\n",
    );
    let out = check(t.path(), &["--json", "p"]);
    assert_eq!(out.status.code(), Some(1));
    let doc = json(&out);
    let warnings: Vec<&str> = doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    let has = |needle: &str| {
        assert!(
            warnings.iter().any(|w| w.contains(needle)),
            "no warning with {needle:?}: {warnings:#?}"
        )
    };
    has(
        "skills[0] 'a': front matter name 'alpha' differs from the name the plugin gives ('a'); 'a' is used",
    );
    has(
        "skills[0] 'a': requires_apps names 'nope', which is not a server of this plugin or the config file",
    );
    has("skills[0] 'a': requires_apps names 'bare', a server without a declaration");
    // A near miss of a declared server's name gets a hint; 'nope' is near none.
    has(
        "skills[0] 'a': requires_apps names 'tol', which is not a server of this plugin or the config file (did you mean 'tool'?); the gate hides the skill",
    );
    assert!(
        !warnings
            .iter()
            .any(|w| w.contains("'nope'") && w.contains("did you mean")),
        "{warnings:#?}"
    );
    has(
        "skills[0] 'a': front matter key 'require_app' is not read by wasmgate; did you mean 'requires_apps'?",
    );
    has("skills[1] 'b': SKILL.md has no front matter");
    assert!(
        !warnings.iter().any(|w| w.contains("names 'tool'")),
        "{warnings:#?}"
    );
    assert_eq!(doc["errors"].as_array().unwrap().len(), 1, "{doc:#}");
    assert_eq!(doc["errors"][0]["path"], "skills[2]", "{doc:#}");
    assert!(
        doc["errors"][0]["message"].as_str().unwrap().contains(
            "skill 'c': SKILL.md front matter: requires_apps must be a name or a list of names"
        ),
        "{doc:#}"
    );

    // A server of the config file (with a declaration) is a known name.
    write(
        t.path(),
        "config.yaml",
        "mcp_servers:\n  nope: {command: y, requires: {gpu: nvidia}}\n",
    );
    let doc = json(&check(
        t.path(),
        &["--json", "--config", "config.yaml", "p"],
    ));
    let text = doc["warnings"].to_string();
    assert!(!text.contains("'nope'"), "{doc:#}");
    assert!(text.contains("'bare'"), "{doc:#}");
}

#[test]
fn every_error_shows_its_value_and_json_is_printed_for_invalid_input() {
    let t = tempfile::tempdir().unwrap();
    write(
        t.path(),
        "p/plugin.yaml",
        "name: p\nversion: '1'\nmcp_servers:\n  s:\n    command: x\n    timeout: soon\n    env: {TOKEN: [1]}\n    app:\n      linux:\n        presence: executable\n        location: [/usr/bin/a, /usr/bin/b, \"~/x/../y\\u0007\"]\n    requires: {app: true}\n",
    );
    let out = check(t.path(), &["--json", "p/plugin.yaml"]);
    assert_eq!(out.status.code(), Some(1));
    let doc = json(&out);
    let errors = doc["errors"].as_array().unwrap();
    let by_path = |p: &str| {
        errors
            .iter()
            .find(|e| e["path"] == p)
            .unwrap_or_else(|| panic!("no error at {p}: {doc:#}"))
    };
    assert_eq!(by_path("timeout")["value"], "\"soon\"");
    // env values are never echoed (secrets).
    assert_eq!(by_path("env.TOKEN")["value"], Value::Null);
    let loc = by_path("app.linux.location[2]");
    assert_eq!(loc["value"], "\"~/x/../y\\u{7}\"", "{doc:#}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("p/plugin.yaml server 's': app.linux.location[2] (\"~/x/../y\\u{7}\") "),
        "{stderr}"
    );
    assert!(stderr.contains("timeout (\"soon\") must be"), "{stderr}");

    // Input that is no manifest at all, a missing file and a usage error:
    // still one JSON document.
    write(t.path(), "q/plugin.yaml", "name: [\n");
    for (args, code) in [
        (vec!["--json", "q/plugin.yaml"], 1),
        (vec!["--json", "none.yaml"], 2),
        (vec!["--json", "q"], 1),
    ] {
        let out = check(t.path(), &args);
        assert_eq!(out.status.code(), Some(code), "{args:?}");
        let doc = json(&out);
        assert_eq!(doc["valid"], false, "{args:?}: {doc:#}");
        assert!(
            !doc["errors"].as_array().unwrap().is_empty(),
            "{args:?}: {doc:#}"
        );
    }
}

#[test]
fn help_says_check_and_availability_take_the_plugin_folder() {
    for cmd in ["check", "availability"] {
        let out = Command::new(env!("CARGO_BIN_EXE_wasmgate"))
            .args([cmd, "--help"])
            .output()
            .expect("wasmgate runs");
        assert_eq!(out.status.code(), Some(0));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("the plugin's folder"),
            "{cmd} --help:\n{text}"
        );
    }
    // And a folder is what check takes (here: its plugin.yaml).
    let t = tempfile::tempdir().unwrap();
    write(
        t.path(),
        "p/plugin.yaml",
        "name: p\nversion: '1'\nmcp_servers: {}\n",
    );
    let out = check(t.path(), &["p"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Keys and names in a plugin's files reach `check`'s and `availability`'s
/// text output escaped (as `status` shows them): an escape sequence, a bell
/// or a line break in an unknown key, an `env_passthrough` name or a
/// location cannot set the terminal's title, colour it or forge a line.
#[test]
fn hostile_keys_and_names_are_shown_escaped_in_check_and_availability() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "p/plugin.yaml",
        "name: p\nversion: \"1\"\nmcp_servers:\n  s:\n    command: /bin/sh\n    \
         env_passthrough: [\"\\e]0;PWNED\\a\"]\n    \"\\e[31mRED\\nFAKE: line\": 1\n    \
         app:\n      linux:\n        presence: executable\n        \
         location: [{kind: command, name: \"nope\\e[2J\\nFAKE: available\"}]\n    \
         requires: {app: true}\n",
    );
    let out = check(dir, &["p/plugin.yaml"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err:?}");
    assert!(!err.lines().any(|l| l.starts_with("FAKE")), "{err:?}");
    assert!(err.contains("\\u{1b}[31mRED\\nFAKE: line"), "{err}");
    // `--json` too: a C1 control (U+009B, a CSI to some terminals) and a
    // bidi override are escaped, not left raw as serde_json leaves them.
    write(
        dir,
        "c1/plugin.yaml",
        "name: c1\nversion: \"1\"\nmcp_servers:\n  s:\n    command: /bin/sh\n    \"\\x9b31mK\\u202eEY\": 1\n",
    );
    let out = check(dir, &["--json", "c1/plugin.yaml"]);
    let doc = String::from_utf8_lossy(&out.stdout);
    assert!(
        !doc.contains('\u{9b}') && !doc.contains('\u{202e}'),
        "{doc:?}"
    );
    assert!(doc.contains("31mK"), "{doc}");
    json(&out);

    // A path location may hold control characters (a file name can): the
    // server evaluates, and its path is shown escaped on one line.
    write(
        dir,
        "q/plugin.yaml",
        "name: q\nversion: \"1\"\nmcp_servers:\n  s:\n    command: /bin/sh\n    \
         app:\n      linux:\n        presence: executable\n        \
         location: [\"/opt/nope\\e[2J\\nFAKE: available\"]\n    \
         requires: {app: true}\n",
    );
    let out = Command::new(env!("CARGO_BIN_EXE_wasmgate"))
        .current_dir(dir)
        .env("HOME", dir)
        .env("XDG_CONFIG_HOME", dir.join("xdg"))
        .env("WASMGATE_CACHE", "")
        .args(["availability", "q/plugin.yaml"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!text.contains('\u{1b}'), "{text:?}");
    assert!(!text.lines().any(|l| l.starts_with("FAKE")), "{text:?}");
    assert!(text.contains("nope\\u{1b}[2J\\nFAKE: available"), "{text}");
}

#[test]
fn names_from_the_file_are_cut_and_redacted_and_the_version_is_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // A key of 1 MiB that starts like a known one (an explicit `?` key:
    // YAML caps implicit keys at 1024 characters), 30 more unknown keys, a
    // token as a key name, and a version of 200 characters.
    let long_key = format!("versoin{}", "x".repeat(1 << 20));
    let mut text = format!(
        "name: p\nversion: \"{}\"\n? {long_key}\n: 1\n0ghp_abcdefghijklmnopqrstuvwxyz0123: 2\n",
        "9".repeat(200)
    );
    for i in 0..30 {
        text.push_str(&format!("extra{i:02}: 1\n"));
    }
    text.push_str("mcp_servers: {}\n");
    write(dir, "p/plugin.yaml", &text);
    let out = check(dir, &["p/plugin.yaml"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.lines().all(|l| l.chars().count() < 4096),
        "a line is longer than a screenful"
    );
    assert!(!err.contains(&"x".repeat(100)), "the long key is cut");
    assert!(err.contains("… and 12 more"), "{err}");
    assert!(
        !err.contains("abcdefghijklmnopqrstuvwxyz0123") && err.contains("'0[REDACTED]'"),
        "{err}"
    );
    assert!(
        err.contains("version (\"999") && err.contains("must be at most 128 characters (got 200)"),
        "{err}"
    );
    let report = json(&check(dir, &["--json", "p/plugin.yaml"]));
    assert_eq!(report["valid"], false);
    assert!(report["manifest"].is_null(), "{report}");
}

#[test]
fn a_huge_server_name_or_variable_name_is_shown_cut_and_redacted() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let huge = format!("ghp_abcdefghijklmnopqrstuvwxyz0123{}", "Q".repeat(300_000));
    write(
        dir,
        "j/plugin.json",
        &format!(r#"{{"name": "j", "version": "1", "mcpServers": {{"{huge}": 5}}}}"#),
    );
    let var = "A".repeat(200_000);
    write(
        dir,
        "y/plugin.yaml",
        &format!(
            "name: y\nversion: \"1\"\nmcp_servers:\n  s:\n    command: /bin/true\n    env_passthrough: [{var}]\n    env: {{ghp_abcdefghijklmnopqrstuvwxyz0123: a, ghp_abcdefghijklmnopqrstuvwxyz0123: b}}\n"
        ),
    );
    for (plugin, args) in [("j", vec![]), ("j", vec!["--json"]), ("y", vec![])] {
        let mut a = args.clone();
        let p = format!(
            "{plugin}/{}",
            if plugin == "j" {
                "plugin.json"
            } else {
                "plugin.yaml"
            }
        );
        a.push(&p);
        let out = check(dir, &a);
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(all.len() < 40_000, "{plugin} {args:?}: {} bytes", all.len());
        assert!(
            !all.contains("abcdefghijklmnopqrstuvwxyz0123"),
            "{plugin} {args:?}"
        );
    }
}

#[test]
fn a_url_query_value_is_redacted_in_what_check_prints() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "plugin.yaml",
        "name: p\nversion: '1'\nmcp_servers:\n  s:\n    url: \"https://h.example/mcp?sig=QSIG1234&x=1\"\n",
    );
    for extra in [&[][..], &["--json"][..]] {
        let mut args = vec![dir.path().to_str().unwrap()];
        args.extend_from_slice(extra);
        let out = check(dir.path(), &args);
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{all}");
        assert!(!all.contains("QSIG1234"), "{all}");
        assert!(
            all.contains("https://h.example/mcp?sig=[REDACTED]"),
            "{all}"
        );
    }
}

#[test]
fn a_file_of_many_bad_servers_lists_a_hundred_problems_and_counts_the_rest() {
    let t = tempfile::tempdir().unwrap();
    let mut yaml = String::from("name: p\nversion: '1'\nmcp_servers:\n");
    for i in 0..150 {
        yaml.push_str(&format!("  s{i}:\n    command: x\n    timeout: soon\n"));
    }
    write(t.path(), "p/plugin.yaml", &yaml);
    let out = check(t.path(), &["p/plugin.yaml"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.contains("timeout (\"soon\")"))
            .count(),
        100,
        "{stderr}"
    );
    assert_eq!(
        lines.last(),
        Some(&"… and 50 more not listed (`--json` lists all)"),
        "{stderr}"
    );
    let doc = json(&check(t.path(), &["--json", "p/plugin.yaml"]));
    assert_eq!(doc["errors"].as_array().unwrap().len(), 150, "{doc:#}");
}
