//! The declaration parser, rule by rule (`docs/declarations.md`
//! §2): one table row per rule and per accepted edge, each with
//! the exact field path; round-trip (a declaration rendered back to YAML
//! parses to itself); proptest over arbitrary YAML values (never panics);
//! and every parser case (no `host`) of `tests/cases/declarations.yaml`.

use proptest::prelude::*;
use wasmgate::declaration::{
    Declaration, DeclarationError, Liveness, LocationKind, OsFamily, ParseOptions, Presence,
    VersionKind, parse_declaration, render_declaration,
};
use wasmgate::document::Value;

const WHERE: &str = "plugin.yaml server 't'";

/// Parses `{app: …, requires: …}` written as YAML.
fn parse_doc(doc: &str, opts: ParseOptions) -> Result<Declaration, DeclarationError> {
    let v: Value = yaml_serde::from_str(doc).unwrap_or_else(|e| panic!("bad test YAML {doc}: {e}"));
    parse_declaration("t", v.get("app"), v.get("requires"), WHERE, opts)
}

enum Expect {
    Ok,
    /// (exact field path, substring of the message)
    Err(&'static str, &'static str),
}
use Expect::{Err as E, Ok as K};

const COMPONENT: ParseOptions = ParseOptions {
    allow_custom_version: true,
    json: false,
};

/// (row id, document, expectation). `L` is a valid linux block to splice in.
fn rows() -> Vec<(&'static str, String, Expect, ParseOptions)> {
    let y = ParseOptions::default();
    let raw: Vec<(&'static str, &'static str, Expect)> = vec![
        // --- app (docs/declarations.md §2.1) ---
        ("app-null", "{app: null}", K),
        ("app-missing", "{}", K),
        ("app-list", "{app: []}", E("app", "must be a mapping")),
        ("app-string", "{app: linux}", E("app", "must be a mapping")),
        (
            "app-unknown-os",
            "{app: {freebsd: {}}}",
            E("app", "has unknown OS keys ['freebsd']"),
        ),
        (
            "app-unknown-os-before-empty-block",
            "{app: {Linux: {}}}",
            E("app", "did you mean 'linux'"),
        ),
        (
            "app-unknown-os-sorted",
            "{app: {zz: 1, aa: 2, linux: {}}}",
            E("app", "['aa', 'zz']"),
        ),
        (
            "app-non-string-os-key",
            "{app: {1: {}}}",
            E("app", "unknown OS keys ['1']"),
        ),
        (
            "app-empty",
            "{app: {}}",
            E("app", "needs at least one OS block"),
        ),
        // --- OS block (docs/declarations.md §2.2) ---
        (
            "os-null",
            "{app: {linux: null}}",
            E("app.linux", "must be a mapping"),
        ),
        (
            "os-list",
            "{app: {linux: [1]}}",
            E("app.linux", "must be a mapping"),
        ),
        (
            "os-input-order-first-fails",
            "{app: {darwin: 1, linux: 2}}",
            E("app.darwin", "must be a mapping"),
        ),
        (
            "os-unknown-key",
            "{app: {linux: {presence: executable, location: /x, versoin: {kind: none}}}}",
            E(
                "app.linux",
                "unknown keys ['versoin'] (did you mean 'version'?)",
            ),
        ),
        (
            "os-non-string-key",
            "{app: {linux: {presence: executable, location: /x, 7: a}}}",
            E("app.linux", "unknown keys ['7']"),
        ),
        (
            "presence-missing",
            "{app: {linux: {location: /x}}}",
            E(
                "app.linux.presence",
                "must be one of ('executable', 'bundle')",
            ),
        ),
        (
            "presence-case",
            "{app: {linux: {presence: Executable, location: /x}}}",
            E("app.linux.presence", "did you mean 'executable'"),
        ),
        (
            "presence-list",
            "{app: {linux: {presence: [executable], location: /x}}}",
            E("app.linux.presence", "must be one of"),
        ),
        (
            "presence-before-location",
            "{app: {linux: {presence: x}}}",
            E("app.linux.presence", "must be one of"),
        ),
        (
            "location-missing",
            "{app: {linux: {presence: executable}}}",
            E("app.linux.location", "is required"),
        ),
        (
            "location-empty-list",
            "{app: {linux: {presence: executable, location: []}}}",
            E("app.linux.location", "is required"),
        ),
        (
            "location-null",
            "{app: {linux: {presence: executable, location: null}}}",
            E("app.linux.location", "is required"),
        ),
        (
            "location-number",
            "{app: {linux: {presence: executable, location: 5}}}",
            E("app.linux.location", "got a number"),
        ),
        (
            "location-empty-string",
            "{app: {linux: {presence: executable, location: ''}}}",
            E("app.linux.location", "is required"),
        ),
        (
            "location-blank-item",
            "{app: {linux: {presence: executable, location: [/x, '  ']}}}",
            E("app.linux.location[1]", "is required"),
        ),
        (
            "location-lone-mapping-accepted",
            "{app: {linux: {presence: executable, location: {kind: command, name: git}}}}",
            K,
        ),
        (
            "location-lone-mapping-label",
            "{app: {linux: {presence: executable, location: {kind: command, name: a/b}}}}",
            E("app.linux.location.name", "must be a bare name"),
        ),
        (
            "location-item-number",
            "{app: {linux: {presence: executable, location: [5]}}}",
            E(
                "app.linux.location[0]",
                "must be a path or a mapping with kind one of ['app_bundle', 'command', 'flatpak', 'snap', 'uninstall_registry']",
            ),
        ),
        (
            "location-item-list",
            "{app: {linux: {presence: executable, location: [[/x]]}}}",
            E(
                "app.linux.location[0]",
                "must be a path or a mapping with kind",
            ),
        ),
        (
            "location-item-null",
            "{app: {linux: {presence: executable, location: [null]}}}",
            E(
                "app.linux.location[0]",
                "must be a path or a mapping with kind",
            ),
        ),
        (
            "location-kind-missing",
            "{app: {linux: {presence: executable, location: [{name: git}]}}}",
            E(
                "app.linux.location[0]",
                "must be a path or a mapping with kind",
            ),
        ),
        (
            "location-kind-near-miss",
            "{app: {linux: {presence: executable, location: [{kind: flatpack, app_id: a.b}]}}}",
            E("app.linux.location[0]", "did you mean 'flatpak'"),
        ),
        (
            "location-kind-path-is-not-a-kind",
            "{app: {linux: {presence: executable, location: [{kind: path, name: x}]}}}",
            E("app.linux.location[0]", "must be a path or a mapping"),
        ),
        (
            "location-kind-number",
            "{app: {linux: {presence: executable, location: [{kind: 1}]}}}",
            E("app.linux.location[0]", "must be a path or a mapping"),
        ),
        (
            "app-bundle-under-linux",
            "{app: {linux: {presence: bundle, location: [{kind: app_bundle, name: T.app}]}}}",
            E(
                "app.linux.location[0]",
                "kind 'app_bundle' is only valid under app.darwin",
            ),
        ),
        (
            "flatpak-under-darwin",
            "{app: {darwin: {presence: executable, location: [{kind: flatpak, app_id: a.b}]}}}",
            E(
                "app.darwin.location[0]",
                "kind 'flatpak' is only valid under app.linux",
            ),
        ),
        (
            "snap-under-win32",
            "{app: {win32: {presence: executable, location: [{kind: snap, name: s}]}}}",
            E(
                "app.win32.location[0]",
                "kind 'snap' is only valid under app.linux",
            ),
        ),
        (
            "uninstall-under-linux",
            "{app: {linux: {presence: executable, location: [{kind: uninstall_registry, display_name_prefix: T, file: t}]}}}",
            E(
                "app.linux.location[0]",
                "kind 'uninstall_registry' is only valid under app.win32",
            ),
        ),
        (
            "os-restriction-before-presence",
            "{app: {linux: {presence: executable, location: [{kind: app_bundle, name: T.app}]}}}",
            E("app.linux.location[0]", "only valid under app.darwin"),
        ),
        (
            "command-needs-executable",
            "{app: {darwin: {presence: bundle, location: [{kind: command, name: t}]}}}",
            E(
                "app.darwin.location[0]",
                "kind 'command' needs app.darwin.presence executable",
            ),
        ),
        (
            "app-bundle-needs-bundle",
            "{app: {darwin: {presence: executable, location: [{kind: app_bundle, name: T.app}]}}}",
            E(
                "app.darwin.location[0]",
                "kind 'app_bundle' needs app.darwin.presence bundle",
            ),
        ),
        (
            "command-on-every-os",
            "{app: {win32: {presence: executable, location: [{kind: command, name: t}]}, darwin: {presence: executable, location: [{kind: command, name: t}]}}}",
            K,
        ),
        (
            "name-missing",
            "{app: {linux: {presence: executable, location: [{kind: command}]}}}",
            E("app.linux.location[0].name", "must be a bare name"),
        ),
        (
            "name-slash",
            "{app: {linux: {presence: executable, location: [{kind: command, name: bin/t}]}}}",
            E("app.linux.location[0].name", "must be a bare name"),
        ),
        (
            "name-backslash",
            "{app: {linux: {presence: executable, location: [{kind: snap, name: 'a\\b'}]}}}",
            E("app.linux.location[0].name", "must be a bare name"),
        ),
        (
            "name-number",
            "{app: {linux: {presence: executable, location: [{kind: command, name: 7}]}}}",
            E("app.linux.location[0].name", "must be a bare name"),
        ),
        (
            "name-url",
            "{app: {linux: {presence: executable, location: [{kind: command, name: 'http://x'}]}}}",
            E("app.linux.location[0].name", "must be a bare name"),
        ),
        (
            "name-drive",
            "{app: {linux: {presence: executable, location: [{kind: command, name: 'C:thing'}]}}}",
            E("app.linux.location[0].name", "must be a bare name"),
        ),
        (
            "name-dotdot",
            "{app: {linux: {presence: executable, location: [{kind: command, name: '..'}]}}}",
            E("app.linux.location[0].name", "must be a bare name"),
        ),
        (
            "name-blank",
            "{app: {linux: {presence: executable, location: [{kind: command, name: '  '}]}}}",
            E("app.linux.location[0].name", "must be a bare name"),
        ),
        (
            "name-list",
            "{app: {linux: {presence: executable, location: [{kind: command, name: [a]}]}}}",
            E("app.linux.location[0].name", "must be a bare name"),
        ),
        (
            "flatpak-app-id-bad",
            "{app: {linux: {presence: executable, location: [{kind: flatpak, app_id: a/b}]}}}",
            E("app.linux.location[0].app_id", "must be a bare name"),
        ),
        (
            "flatpak-ok",
            "{app: {linux: {presence: executable, location: [{kind: flatpak, app_id: org.blender.Blender}]}}}",
            K,
        ),
        (
            "uninstall-prefix-bad",
            "{app: {win32: {presence: executable, location: [{kind: uninstall_registry, display_name_prefix: 'a\\b', file: t.exe}]}}}",
            E(
                "app.win32.location[0].display_name_prefix",
                "must be a bare name",
            ),
        ),
        (
            "uninstall-file-missing",
            "{app: {win32: {presence: executable, location: [{kind: uninstall_registry, display_name_prefix: T}]}}}",
            E(
                "app.win32.location[0].file",
                "must be a relative path inside the install folder",
            ),
        ),
        (
            "uninstall-file-trailing-slash",
            "{app: {win32: {presence: executable, location: [{kind: uninstall_registry, display_name_prefix: T, file: bin/}]}}}",
            E("app.win32.location[0].file", "relative path"),
        ),
        (
            "uninstall-file-absolute",
            "{app: {win32: {presence: executable, location: [{kind: uninstall_registry, display_name_prefix: T, file: /bin/t.exe}]}}}",
            E("app.win32.location[0].file", "relative path"),
        ),
        (
            "uninstall-file-dotdot",
            "{app: {win32: {presence: executable, location: [{kind: uninstall_registry, display_name_prefix: T, file: '..\\t.exe'}]}}}",
            E("app.win32.location[0].file", "relative path"),
        ),
        (
            "uninstall-file-drive",
            "{app: {win32: {presence: executable, location: [{kind: uninstall_registry, display_name_prefix: T, file: 'C:t.exe'}]}}}",
            E("app.win32.location[0].file", "relative path"),
        ),
        (
            "uninstall-file-double-slash",
            "{app: {win32: {presence: executable, location: [{kind: uninstall_registry, display_name_prefix: T, file: 'bin//t.exe'}]}}}",
            E("app.win32.location[0].file", "relative path"),
        ),
        (
            "uninstall-file-with-dirs-ok",
            "{app: {win32: {presence: executable, location: [{kind: uninstall_registry, display_name_prefix: Thing App, file: 'bin\\t.exe'}]}}}",
            K,
        ),
        (
            "location-mapping-unknown-key",
            "{app: {linux: {presence: executable, location: [{kind: command, name: git, nmae: x}]}}}",
            E("app.linux.location[0]", "unknown keys ['nmae']"),
        ),
        (
            "location-file-only-for-uninstall",
            "{app: {linux: {presence: executable, location: [{kind: command, name: git, file: x}]}}}",
            E("app.linux.location[0]", "unknown keys ['file']"),
        ),
        // --- rootedness (docs/declarations.md §2.4, decision 4) ---
        (
            "linux-relative",
            "{app: {linux: {presence: executable, location: bin/x}}}",
            E("app.linux.location", "must be absolute"),
        ),
        (
            "linux-tilde",
            "{app: {linux: {presence: executable, location: ~/bin/x}}}",
            K,
        ),
        (
            "linux-tilde-user",
            "{app: {linux: {presence: executable, location: ~bob/bin/x}}}",
            K,
        ),
        (
            "linux-dollar",
            "{app: {linux: {presence: executable, location: $HOME/x}}}",
            K,
        ),
        (
            "linux-dollar-brace",
            "{app: {linux: {presence: executable, location: '${HOME}/x'}}}",
            K,
        ),
        (
            "linux-percent-var-rejected",
            "{app: {linux: {presence: executable, location: '%APPDATA%/x'}}}",
            E("app.linux.location", "use $VAR"),
        ),
        (
            "darwin-percent-var-rejected",
            "{app: {darwin: {presence: bundle, location: '%HOME%/T.app'}}}",
            E("app.darwin.location", "never expands under app.darwin"),
        ),
        (
            "win32-percent-var",
            "{app: {win32: {presence: executable, location: '%ProgramFiles%\\T\\t.exe'}}}",
            K,
        ),
        (
            "win32-dollar-var",
            "{app: {win32: {presence: executable, location: '$LOCALAPPDATA/t.exe'}}}",
            K,
        ),
        (
            "win32-drive-backslash",
            "{app: {win32: {presence: executable, location: 'C:\\T\\t.exe'}}}",
            K,
        ),
        (
            "win32-drive-lower-slash",
            "{app: {win32: {presence: executable, location: 'c:/t/t.exe'}}}",
            K,
        ),
        (
            "win32-rooted-without-drive",
            "{app: {win32: {presence: executable, location: /x/y.exe}}}",
            E("app.win32.location", "must be absolute"),
        ),
        (
            "win32-drive-relative",
            "{app: {win32: {presence: executable, location: 'C:x.exe'}}}",
            E("app.win32.location", "must be absolute"),
        ),
        (
            "win32-relative",
            "{app: {win32: {presence: executable, location: 'Thing/thing.exe'}}}",
            E("app.win32.location", "must be absolute"),
        ),
        (
            "win32-unc",
            "{app: {win32: {presence: executable, location: '\\\\server\\share\\x.exe'}}}",
            E("app.win32.location", "network path"),
        ),
        (
            "win32-unc-forward",
            "{app: {win32: {presence: executable, location: '//server/share/x.exe'}}}",
            E("app.win32.location", "network path"),
        ),
        (
            "linux-unc",
            "{app: {linux: {presence: executable, location: //server/share/x}}}",
            E("app.linux.location", "network path"),
        ),
        (
            "darwin-unc",
            "{app: {darwin: {presence: bundle, location: //server/T.app}}}",
            E("app.darwin.location", "network path"),
        ),
        // POSIX: only exactly two leading `/` make a network path; `\` is
        // an ordinary file-name character there (`docs/declarations.md`).
        (
            "linux-three-slashes-is-root",
            "{app: {linux: {presence: executable, location: ///usr/bin/sh}}}",
            K,
        ),
        (
            "linux-many-slashes-is-root",
            "{app: {linux: {presence: executable, location: '////opt//x'}}}",
            K,
        ),
        (
            "linux-slash-backslash-is-a-file-in-root",
            "{app: {linux: {presence: executable, location: '/\\srv\\x'}}}",
            K,
        ),
        (
            "darwin-slash-backslash-is-a-file-in-root",
            "{app: {darwin: {presence: bundle, location: '/\\Apps\\T.app'}}}",
            K,
        ),
        (
            "linux-backslash-dotdot-is-a-name",
            "{app: {linux: {presence: executable, location: '/opt/..\\x'}}}",
            K,
        ),
        (
            "linux-backslash-in-star-pattern",
            "{app: {linux: {presence: executable, location: '/opt/a\\b */x'}}}",
            K,
        ),
        (
            "win32-slash-backslash-is-network",
            "{app: {win32: {presence: executable, location: '/\\srv\\x'}}}",
            E("app.win32.location", "network path"),
        ),
        (
            "win32-backslash-dotdot-is-dotdot",
            "{app: {win32: {presence: executable, location: 'C:\\a\\..\\x.exe'}}}",
            E("app.win32.location", "must be absolute"),
        ),
        (
            "linux-liveness-three-slashes",
            "{app: {linux: {presence: executable, location: /x, liveness: {kind: server_json, path: ///run/x.json}}}}",
            K,
        ),
        (
            "linux-liveness-network",
            "{app: {linux: {presence: executable, location: /x, liveness: {kind: server_json, path: //srv/x.json}}}}",
            E("app.linux.liveness.path", "network path"),
        ),
        (
            "linux-tilde-user",
            "{app: {linux: {presence: executable, location: ~ana/bin/x}}}",
            K,
        ),
        (
            "linux-trailing-slash",
            "{app: {linux: {presence: bundle, location: '/opt/Thing */T.app/'}}}",
            K,
        ),
        (
            "dotdot-segment",
            "{app: {linux: {presence: executable, location: /opt/../x}}}",
            E("app.linux.location", "must be absolute"),
        ),
        (
            "dotdot-backslash-segment",
            "{app: {win32: {presence: executable, location: 'C:\\a\\..\\b.exe'}}}",
            E("app.win32.location", "must be absolute"),
        ),
        (
            "dotdot-inside-segment-ok",
            "{app: {linux: {presence: executable, location: /opt/a..b/x}}}",
            K,
        ),
        (
            "url-scheme",
            "{app: {linux: {presence: executable, location: 'https://x.test/a'}}}",
            E("app.linux.location", "must be absolute"),
        ),
        (
            "url-scheme-inside",
            "{app: {linux: {presence: executable, location: '/opt/x/file://y'}}}",
            E("app.linux.location", "must be absolute"),
        ),
        (
            "globstar",
            "{app: {linux: {presence: executable, location: '/opt/**/x'}}}",
            E("app.linux.location", "'**'"),
        ),
        (
            "triple-star",
            "{app: {linux: {presence: executable, location: '/opt/T ***/x'}}}",
            E("app.linux.location", "must be absolute"),
        ),
        (
            "single-star-ok",
            "{app: {linux: {presence: executable, location: '/opt/T */x'}}}",
            K,
        ),
        (
            "two-stars-ok",
            "{app: {linux: {presence: executable, location: '/opt/*/b*/x'}}}",
            K,
        ),
        (
            "location-strips",
            "{app: {linux: {presence: executable, location: '  /opt/thing  '}}}",
            K,
        ),
        // --- version (docs/declarations.md §2.2 rule 4, decisions 1, 3, 6) ---
        (
            "version-empty-mapping",
            "{app: {linux: {presence: executable, location: /x, version: {}}}}",
            K,
        ),
        (
            "version-empty-string",
            "{app: {linux: {presence: executable, location: /x, version: ''}}}",
            K,
        ),
        (
            "version-zero",
            "{app: {linux: {presence: executable, location: /x, version: 0}}}",
            K,
        ),
        (
            "version-false",
            "{app: {linux: {presence: executable, location: /x, version: false}}}",
            K,
        ),
        (
            "version-string",
            "{app: {linux: {presence: executable, location: /x, version: plist}}}",
            E("app.linux.version", "must be a mapping"),
        ),
        (
            "version-list",
            "{app: {linux: {presence: executable, location: /x, version: [plist]}}}",
            E("app.linux.version", "must be a mapping"),
        ),
        (
            "version-kind-unknown",
            "{app: {linux: {presence: executable, location: /x, version: {kind: exe}}}}",
            E(
                "app.linux.version.kind",
                "must be one of ['none', 'pe_resource', 'plist', 'uninstall_registry']",
            ),
        ),
        (
            "version-kind-list",
            "{app: {linux: {presence: executable, location: /x, version: {kind: [plist]}}}}",
            E("app.linux.version.kind", "must be one of"),
        ),
        (
            "version-kind-near-miss",
            "{app: {win32: {presence: executable, location: 'C:/x.exe', version: {kind: pe_resoruce}}}}",
            E("app.win32.version.kind", "did you mean 'pe_resource'"),
        ),
        (
            "version-kind-null-is-a-type-error",
            "{app: {linux: {presence: executable, location: /x, version: {kind: null}}}}",
            E("app.linux.version.kind", "(got null)"),
        ),
        (
            "version-kind-tilde-null-is-a-type-error",
            "{app: {win32: {presence: executable, location: 'C:/x.exe', version: {kind: ~}}}}",
            E("app.win32.version.kind", "must be one of"),
        ),
        (
            "version-kind-missing-is-none",
            "{app: {linux: {presence: executable, location: /x, version: {}}}}",
            K,
        ),
        (
            "liveness-kind-null-is-a-type-error",
            "{app: {linux: {presence: executable, location: /x, liveness: {kind: null, path: /run/x.json}}}}",
            E("app.linux.liveness.kind", "(got null)"),
        ),
        (
            "liveness-kind-null-alone-is-a-type-error",
            "{app: {darwin: {presence: bundle, location: /A/T.app, liveness: {kind: null}}}}",
            E(
                "app.darwin.liveness.kind",
                "must be one of ('server_json', 'none')",
            ),
        ),
        (
            "pe-resource-under-darwin",
            "{app: {darwin: {presence: bundle, location: /A/T.app, version: {kind: pe_resource}}}}",
            E(
                "app.darwin.version.kind",
                "'pe_resource' is only valid under app.win32",
            ),
        ),
        (
            "pe-resource-under-linux",
            "{app: {linux: {presence: executable, location: /x, version: {kind: pe_resource}}}}",
            E("app.linux.version.kind", "only valid under app.win32"),
        ),
        (
            "uninstall-version-under-darwin",
            "{app: {darwin: {presence: bundle, location: /A/T.app, version: {kind: uninstall_registry, display_name_prefix: T}}}}",
            E("app.darwin.version.kind", "only valid under app.win32"),
        ),
        (
            "plist-under-win32",
            "{app: {win32: {presence: executable, location: 'C:/x.exe', version: {kind: plist}}}}",
            E(
                "app.win32.version.kind",
                "'plist' is only valid under app.darwin",
            ),
        ),
        (
            "plist-needs-bundle",
            "{app: {darwin: {presence: executable, location: /usr/local/bin/t, version: {kind: plist}}}}",
            E(
                "app.darwin.version.kind",
                "'plist' needs app.darwin.presence bundle",
            ),
        ),
        (
            "plist-with-bundle-ok",
            "{app: {darwin: {presence: bundle, location: /Applications/T.app, version: {kind: plist}}}}",
            K,
        ),
        (
            "uninstall-version-needs-prefix",
            "{app: {win32: {presence: executable, location: 'C:/x.exe', version: {kind: uninstall_registry}}}}",
            E(
                "app.win32.version.display_name_prefix",
                "is required for uninstall_registry",
            ),
        ),
        (
            "uninstall-version-prefix-whitespace-kept",
            "{app: {win32: {presence: executable, location: 'C:/x.exe', version: {kind: uninstall_registry, display_name_prefix: '  '}}}}",
            K,
        ),
        (
            "version-prefix-list",
            "{app: {win32: {presence: executable, location: 'C:/x.exe', version: {kind: uninstall_registry, display_name_prefix: [T]}}}}",
            E("app.win32.version.display_name_prefix", "must be a string"),
        ),
        (
            "version-unknown-key",
            "{app: {linux: {presence: executable, location: /x, version: {knid: none}}}}",
            E(
                "app.linux.version",
                "unknown keys ['knid'] (did you mean 'kind'?)",
            ),
        ),
        (
            "version-custom-not-from-yaml",
            "{app: {linux: {presence: executable, location: /x, version: {kind: custom}}}}",
            E(
                "app.linux.version.kind",
                "'custom' is only valid in a component's manifest",
            ),
        ),
        // --- liveness (docs/declarations.md §2.2 rule 5, hardened, decision 7) ---
        (
            "liveness-string",
            "{app: {linux: {presence: executable, location: /x, liveness: 'yes'}}}",
            E("app.linux.liveness", "must be a mapping"),
        ),
        (
            "liveness-null",
            "{app: {linux: {presence: executable, location: /x, liveness: null}}}",
            K,
        ),
        (
            "liveness-kind-bad",
            "{app: {linux: {presence: executable, location: /x, liveness: {kind: http}}}}",
            E(
                "app.linux.liveness.kind",
                "must be one of ('server_json', 'none')",
            ),
        ),
        (
            "liveness-path-required",
            "{app: {linux: {presence: executable, location: /x, liveness: {kind: server_json}}}}",
            E("app.linux.liveness.path", "is required for server_json"),
        ),
        (
            "liveness-path-relative",
            "{app: {linux: {presence: executable, location: /x, liveness: {kind: server_json, path: run/s.json}}}}",
            E("app.linux.liveness.path", "must be absolute"),
        ),
        (
            "liveness-path-dotdot",
            "{app: {linux: {presence: executable, location: /x, liveness: {kind: server_json, path: /a/../s.json}}}}",
            E("app.linux.liveness.path", "without '..' or a URL scheme"),
        ),
        (
            "liveness-path-url",
            "{app: {linux: {presence: executable, location: /x, liveness: {kind: server_json, path: 'file:///s.json'}}}}",
            E("app.linux.liveness.path", "must be absolute"),
        ),
        (
            "liveness-path-percent-on-linux",
            "{app: {linux: {presence: executable, location: /x, liveness: {kind: server_json, path: '%TEMP%/s.json'}}}}",
            E("app.linux.liveness.path", "use $VAR"),
        ),
        (
            "liveness-path-list",
            "{app: {linux: {presence: executable, location: /x, liveness: {kind: server_json, path: [a]}}}}",
            E("app.linux.liveness.path", "must be a string"),
        ),
        (
            "endpoint-no-slash",
            "{app: {linux: {presence: executable, location: /x, liveness: {kind: server_json, path: /s.json, endpoint_path: mcp}}}}",
            E(
                "app.linux.liveness.endpoint_path",
                "must be a plain path starting with '/'",
            ),
        ),
        (
            "endpoint-userinfo",
            "{app: {linux: {presence: executable, location: /x, liveness: {kind: server_json, path: /s.json, endpoint_path: '@attacker.example/'}}}}",
            E("app.linux.liveness.endpoint_path", "plain path"),
        ),
        (
            "endpoint-scheme",
            "{app: {linux: {presence: executable, location: /x, liveness: {kind: server_json, path: /s.json, endpoint_path: 'http://evil.test/x'}}}}",
            E("app.linux.liveness.endpoint_path", "plain path"),
        ),
        (
            "endpoint-query",
            "{app: {linux: {presence: executable, location: /x, liveness: {kind: server_json, path: /s.json, endpoint_path: '/mcp?token=1'}}}}",
            E("app.linux.liveness.endpoint_path", "plain path"),
        ),
        (
            "endpoint-fragment",
            "{app: {linux: {presence: executable, location: /x, liveness: {kind: server_json, path: /s.json, endpoint_path: '/mcp#frag'}}}}",
            E("app.linux.liveness.endpoint_path", "plain path"),
        ),
        (
            "endpoint-space",
            "{app: {linux: {presence: executable, location: /x, liveness: {kind: server_json, path: /s.json, endpoint_path: '/mcp x'}}}}",
            E("app.linux.liveness.endpoint_path", "plain path"),
        ),
        (
            "endpoint-tab",
            "{app: {linux: {presence: executable, location: /x, liveness: {kind: server_json, path: /s.json, endpoint_path: \"/mcp\\tx\"}}}}",
            E("app.linux.liveness.endpoint_path", "plain path"),
        ),
        (
            "endpoint-leading-space",
            "{app: {linux: {presence: executable, location: /x, liveness: {kind: server_json, path: /s.json, endpoint_path: ' /mcp'}}}}",
            E("app.linux.liveness.endpoint_path", "plain path"),
        ),
        (
            "endpoint-dotdot",
            "{app: {linux: {presence: executable, location: /x, liveness: {kind: server_json, path: /s.json, endpoint_path: '/a/../../b'}}}}",
            E("app.linux.liveness.endpoint_path", "plain path"),
        ),
        (
            "endpoint-slash-dotdot",
            "{app: {linux: {presence: executable, location: /x, liveness: {kind: server_json, path: /s.json, endpoint_path: '/..'}}}}",
            E("app.linux.liveness.endpoint_path", "plain path"),
        ),
        (
            "endpoint-rpc-v1-ok",
            "{app: {linux: {presence: executable, location: /x, liveness: {kind: server_json, path: /s.json, endpoint_path: /rpc/v1}}}}",
            K,
        ),
        (
            "endpoint-odd-chars-ok",
            "{app: {linux: {presence: executable, location: /x, liveness: {kind: server_json, path: /s.json, endpoint_path: /a/b-c_d.e~f}}}}",
            K,
        ),
        (
            "endpoint-double-slash-ok",
            "{app: {linux: {presence: executable, location: /x, liveness: {kind: server_json, path: /s.json, endpoint_path: //evil.example/x}}}}",
            K,
        ),
        (
            "pid-key-bad",
            "{app: {linux: {presence: executable, location: /x, liveness: {kind: server_json, path: /s.json, pid_key: 'a b'}}}}",
            E("app.linux.liveness.pid_key", "must be a simple key name"),
        ),
        (
            "url-key-bad",
            "{app: {linux: {presence: executable, location: /x, liveness: {kind: server_json, path: /s.json, url_key: '$url'}}}}",
            E("app.linux.liveness.url_key", "must be a simple key name"),
        ),
        (
            "token-key-bad",
            "{app: {linux: {presence: executable, location: /x, liveness: {kind: server_json, path: /s.json, token_key: 'a/b'}}}}",
            E("app.linux.liveness.token_key", "must be a simple key name"),
        ),
        (
            "liveness-keys-ok",
            "{app: {linux: {presence: executable, location: /x, liveness: {kind: server_json, path: /s.json, pid_key: process.id, url_key: base-url, token_key: auth_token}}}}",
            K,
        ),
        (
            "liveness-unknown-key",
            "{app: {linux: {presence: executable, location: /x, liveness: {kind: server_json, path: /s.json, endpoint: /mcp}}}}",
            E(
                "app.linux.liveness",
                "unknown keys ['endpoint'] (did you mean 'endpoint_path'?)",
            ),
        ),
        (
            "liveness-none-still-checked",
            "{app: {linux: {presence: executable, location: /x, liveness: {kind: none, endpoint_path: mcp}}}}",
            E("app.linux.liveness.endpoint_path", "plain path"),
        ),
        // --- requires (docs/declarations.md §2.6, decision 5) ---
        (
            "requires-list",
            "{requires: [gpu]}",
            E("requires", "must be a mapping"),
        ),
        (
            "requires-unknown-key",
            "{requires: {gpus: nvidia}}",
            E("requires", "unknown keys ['gpus'] (did you mean 'gpu'?)"),
        ),
        (
            "requires-unknown-keys-sorted",
            "{requires: {zz: 1, aa: 2}}",
            E("requires", "unknown keys ['aa', 'zz']"),
        ),
        (
            "requires-unknown-before-gpu",
            "{requires: {gpu: amd, x: 1}}",
            E("requires", "unknown keys ['x']"),
        ),
        (
            "gpu-amd",
            "{requires: {gpu: amd}}",
            E("requires.gpu", "must be one of ['nvidia']"),
        ),
        (
            "gpu-upper",
            "{requires: {gpu: NVIDIA}}",
            E("requires.gpu", "did you mean 'nvidia'"),
        ),
        (
            "gpu-number",
            "{requires: {gpu: 1}}",
            E("requires.gpu", "must be one of ['nvidia']"),
        ),
        ("gpu-null-ok", "{requires: {gpu: null}}", K),
        ("gpu-only-ok", "{requires: {gpu: nvidia}}", K),
        (
            "gpu-before-app",
            "{requires: {gpu: amd, app: 'x'}}",
            E("requires.gpu", "must be one of"),
        ),
        (
            "requires-app-string",
            "{app: {linux: {presence: executable, location: /x}}, requires: {app: 'true'}}",
            E("requires.app", "must be a boolean"),
        ),
        (
            "requires-app-null",
            "{app: {linux: {presence: executable, location: /x}}, requires: {app: null}}",
            E("requires.app", "must be a boolean"),
        ),
        (
            "requires-app-int",
            "{app: {linux: {presence: executable, location: /x}}, requires: {app: 1}}",
            E("requires.app", "must be a boolean"),
        ),
        (
            "requires-app-without-block",
            "{requires: {app: true}}",
            E(
                "requires.app",
                "is true but the declaration has no 'app' block",
            ),
        ),
        (
            "requires-app-false-gpu-with-block",
            "{app: {linux: {presence: executable, location: /x}}, requires: {app: false, gpu: nvidia}}",
            K,
        ),
        (
            "min-version-float",
            "{app: {darwin: {presence: bundle, location: /A.app, version: {kind: plist}}}, requires: {app: true, min_version: 2.3}}",
            E("requires.min_version", "quote it: min_version: \"2.3\""),
        ),
        (
            "min-version-int",
            "{app: {darwin: {presence: bundle, location: /A.app, version: {kind: plist}}}, requires: {app: true, min_version: 2}}",
            E("requires.min_version", "quote it"),
        ),
        (
            "min-version-word",
            "{app: {darwin: {presence: bundle, location: /A.app, version: {kind: plist}}}, requires: {app: true, min_version: latest}}",
            E("requires.min_version", "must be a dotted numeric string"),
        ),
        (
            "min-version-trailing-dot",
            "{app: {darwin: {presence: bundle, location: /A.app, version: {kind: plist}}}, requires: {app: true, min_version: '1.'}}",
            E("requires.min_version", "dotted numeric"),
        ),
        (
            "min-version-v-prefix",
            "{app: {darwin: {presence: bundle, location: /A.app, version: {kind: plist}}}, requires: {app: true, min_version: v2}}",
            E("requires.min_version", "dotted numeric"),
        ),
        (
            "min-version-newline",
            "{app: {darwin: {presence: bundle, location: /A.app, version: {kind: plist}}}, requires: {app: true, min_version: \"1.0\\n\"}}",
            E("requires.min_version", "dotted numeric"),
        ),
        (
            "min-version-unicode-digits",
            "{app: {darwin: {presence: bundle, location: /A.app, version: {kind: plist}}}, requires: {app: true, min_version: '١.٢'}}",
            E("requires.min_version", "dotted numeric"),
        ),
        (
            "min-version-ten-digit-part",
            "{app: {darwin: {presence: bundle, location: /A.app, version: {kind: plist}}}, requires: {app: true, min_version: '1234567890'}}",
            E("requires.min_version", "1 to 9 digits"),
        ),
        (
            "min-version-nine-digit-part-ok",
            "{app: {darwin: {presence: bundle, location: /A.app, version: {kind: plist}}}, requires: {app: true, min_version: '123456789'}}",
            K,
        ),
        (
            "min-version-four-parts-ok",
            "{app: {darwin: {presence: bundle, location: /A.app, version: {kind: plist}}}, requires: {app: true, min_version: '2.3.0.12594'}}",
            K,
        ),
        (
            "min-version-list",
            "{app: {darwin: {presence: bundle, location: /A.app, version: {kind: plist}}}, requires: {app: true, min_version: ['2']}}",
            E("requires.min_version", "dotted numeric"),
        ),
        (
            "min-version-needs-app-true",
            "{app: {win32: {presence: executable, location: 'C:/x/y.exe'}}, requires: {min_version: '1.0'}}",
            E("requires.min_version", "needs requires.app: true"),
        ),
        (
            "min-version-grammar-before-app-true",
            "{app: {win32: {presence: executable, location: 'C:/x/y.exe'}}, requires: {min_version: latest}}",
            E("requires.min_version", "dotted numeric"),
        ),
        (
            "min-version-linux-only",
            "{app: {linux: {presence: executable, location: /x}}, requires: {app: true, min_version: '1'}}",
            E(
                "requires.min_version",
                "needs a version source under app.linux (kind is none)",
            ),
        ),
        (
            "min-version-linux-exempt-with-darwin",
            "{app: {darwin: {presence: bundle, location: /A.app, version: {kind: plist}}, linux: {presence: executable, location: /x}}, requires: {app: true, min_version: '1'}}",
            K,
        ),
        (
            "min-version-win32-unversioned",
            "{app: {darwin: {presence: bundle, location: /A.app, version: {kind: plist}}, win32: {presence: executable, location: 'C:/x.exe'}}, requires: {app: true, min_version: '1'}}",
            E("requires.min_version", "under app.win32"),
        ),
        (
            "min-version-alphabetical-first",
            "{app: {win32: {presence: executable, location: 'C:/x.exe'}, darwin: {presence: bundle, location: /A.app}, linux: {presence: executable, location: /x}}, requires: {app: true, min_version: '1'}}",
            E(
                "requires.min_version",
                "needs a version source under app.darwin",
            ),
        ),
        // --- order and type confusion (decision 6) ---
        (
            "app-before-requires",
            "{app: 5, requires: 5}",
            E("app", "must be a mapping"),
        ),
        (
            "tagged-location",
            "{app: {linux: {presence: executable, location: !path /x}}}",
            E("app.linux.location", "got a tagged value"),
        ),
        (
            "tagged-app",
            "{app: !win {linux: {}}}",
            E("app", "must be a mapping"),
        ),
        (
            "nested-list-key",
            "{app: {linux: {presence: executable, location: /x, [a]: 1}}}",
            E("app.linux", "unknown keys"),
        ),
        (
            "float-presence",
            "{app: {linux: {presence: 1.5, location: /x}}}",
            E("app.linux.presence", "got a number"),
        ),
    ];
    let mut out: Vec<(&'static str, String, Expect, ParseOptions)> = raw
        .into_iter()
        .map(|(id, doc, e)| (id, doc.to_string(), e, y))
        .collect();
    // Component-only decisions.
    out.push((
        "version-custom-from-component",
        "{app: {linux: {presence: executable, location: /x, version: {kind: custom}}}, requires: {app: true, min_version: '2'}}".into(),
        K,
        COMPONENT,
    ));
    out.push((
        "custom-is-a-version-source",
        "{app: {win32: {presence: executable, location: 'C:/x.exe', version: {kind: custom}}, darwin: {presence: bundle, location: /A.app, version: {kind: custom}}}, requires: {app: true, min_version: '3.1'}}".into(),
        K,
        COMPONENT,
    ));
    out
}

#[test]
fn every_rule_has_a_row_with_its_field_path() {
    let rows = rows();
    assert!(rows.len() >= 100, "only {} rows", rows.len());
    let mut failures = Vec::new();
    for (id, doc, expect, opts) in &rows {
        let got = parse_doc(doc, *opts);
        match (expect, &got) {
            (Expect::Ok, Ok(_)) => {}
            (Expect::Err(path, needle), Err(e)) => {
                let text = e.to_string();
                if e.path != *path || !e.message.contains(needle) {
                    failures.push(format!("{id}: want `{path}` + `{needle}`, got `{text}`"));
                }
                // The offending value, when there is one, follows the path.
                let shown = match &e.value {
                    Some(v) => format!("{WHERE}: {} ({v}) {}", e.path, e.message),
                    None => format!("{WHERE}: {} {}", e.path, e.message),
                };
                if text != shown {
                    failures.push(format!("{id}: display form `{text}`"));
                }
            }
            (Expect::Ok, Err(e)) => failures.push(format!("{id}: want ok, got `{e}`")),
            (Expect::Err(path, _), Ok(d)) => {
                failures.push(format!("{id}: want error at {path}, got {d:?}"))
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn accepted_values_are_normalized() {
    let d = parse_doc(
        "{app: {linux: {presence: executable, location: ['  /opt/thing  ', {kind: snap, name: ' vendor '}]}}}",
        ParseOptions::default(),
    )
    .unwrap();
    let l = &d.app_for(OsFamily::Linux).unwrap().locations;
    assert_eq!(
        (l[0].kind, l[0].value.as_str()),
        (LocationKind::Path, "/opt/thing")
    );
    assert_eq!(
        (l[1].kind, l[1].value.as_str(), l[1].file.as_str()),
        (LocationKind::Snap, "vendor", "")
    );

    let d = parse_doc(
        "{app: {win32: {presence: executable, location: {kind: uninstall_registry, display_name_prefix: ' Thing ', file: ' bin/t.exe '}, liveness: {kind: server_json, path: ' %LOCALAPPDATA%/T/s.json ', pid_key: '', url_key: null, token_key: 0}}}}",
        ParseOptions::default(),
    )
    .unwrap();
    let w = d.app_for(OsFamily::Win32).unwrap();
    assert_eq!(w.app_id, "t");
    assert_eq!(w.presence, Presence::Executable);
    assert_eq!(w.locations[0].value, "Thing");
    assert_eq!(w.locations[0].file, "bin/t.exe");
    assert_eq!(w.version_kind, VersionKind::None);
    assert_eq!(
        w.liveness,
        Liveness::ServerJson {
            path: "%LOCALAPPDATA%/T/s.json".into(),
            pid_key: "pid".into(),
            url_key: "http".into(),
            token_key: "token".into(),
            endpoint_path: "/mcp".into(),
        }
    );
    // A display_name_prefix is kept for any version kind, not stripped.
    let d = parse_doc(
        "{app: {win32: {presence: executable, location: 'C:/x.exe', version: {kind: pe_resource, display_name_prefix: ' T'}}}}",
        ParseOptions::default(),
    )
    .unwrap();
    assert_eq!(d.app_for(OsFamily::Win32).unwrap().version_arg, " T");
    // OS blocks keep input order.
    let d = parse_doc(
        "{app: {linux: {presence: executable, location: /x}, darwin: {presence: bundle, location: /A.app}}}",
        ParseOptions::default(),
    )
    .unwrap();
    let order: Vec<OsFamily> = d.app.unwrap().iter().map(|a| a.os_family).collect();
    assert_eq!(order, vec![OsFamily::Linux, OsFamily::Darwin]);
}

// ---------------------------------------------------------------------------
// Round trip
// ---------------------------------------------------------------------------

const MULTI_OS: &str = r#"
app:
  win32:
    presence: executable
    location:
      - {kind: uninstall_registry, display_name_prefix: Vendor App, file: bin/vendor.exe}
      - "%ProgramFiles%/Vendor/Vendor App */vendor.exe"
    version: {kind: pe_resource}
    liveness: {kind: server_json, path: "%LOCALAPPDATA%/Vendor/server.json", endpoint_path: /rpc}
  darwin:
    presence: bundle
    location: [{kind: app_bundle, name: Vendor.app}, ~/Apps/Vendor.app]
    version: {kind: plist}
  linux:
    presence: executable
    location: [{kind: command, name: vendor}, {kind: flatpak, app_id: com.vendor.App}, {kind: snap, name: vendor}, "$HOME/opt/vendor-*/vendor"]
requires: {app: true, min_version: "2.3", gpu: nvidia}
"#;

fn round_trip(d: &Declaration, opts: ParseOptions) {
    let (app, requires) = render_declaration(d);
    let mut doc = wasmgate::document::Mapping::new();
    if let Some(a) = app {
        doc.insert("app".into(), a);
    }
    doc.insert("requires".into(), requires);
    let text = yaml_serde::to_string(&doc).unwrap();
    let v: Value = yaml_serde::from_str(&text).unwrap();
    let back = parse_declaration(&d.name, v.get("app"), v.get("requires"), WHERE, opts)
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(&back, d, "\n{text}");
}

#[test]
fn rendered_declarations_parse_to_themselves() {
    let d = parse_doc(MULTI_OS, ParseOptions::default()).unwrap();
    assert_eq!(d.app.as_ref().unwrap().len(), 3);
    assert!(d.requires_app());
    assert_eq!(d.min_version(), Some("2.3"));
    assert_eq!(d.required_gpu(), Some(wasmgate::GpuVendor::Nvidia));
    round_trip(&d, ParseOptions::default());
    for (id, doc, expect, opts) in rows() {
        if matches!(expect, Expect::Ok) {
            let d = parse_doc(&doc, opts).unwrap_or_else(|e| panic!("{id}: {e}"));
            round_trip(&d, opts);
        }
    }
}

// ---------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------

/// Words the parser cares about, so random values reach deep rules.
const WORDS: &[&str] = &[
    "app",
    "requires",
    "win32",
    "darwin",
    "linux",
    "presence",
    "executable",
    "bundle",
    "location",
    "version",
    "liveness",
    "kind",
    "name",
    "app_id",
    "display_name_prefix",
    "file",
    "command",
    "uninstall_registry",
    "app_bundle",
    "flatpak",
    "snap",
    "path",
    "pe_resource",
    "plist",
    "none",
    "custom",
    "server_json",
    "pid_key",
    "url_key",
    "token_key",
    "endpoint_path",
    "min_version",
    "gpu",
    "nvidia",
    "/x",
    "C:/x.exe",
    "%A%/x",
    "$A/x",
    "~/x",
    "//s/x",
    "/a/../b",
    "/**",
    "/T */x",
    "/mcp",
    "mcp",
    "2.3",
    "1.",
    "١",
    "",
    " ",
    "a/b",
    "http://x",
    "bin/x.exe",
];

fn arb_text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => proptest::sample::select(WORDS).prop_map(str::to_string),
        1 => ".{0,12}",
    ]
}

fn arb_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| Value::Number(n.into())),
        any::<f64>().prop_map(|f| Value::Number(f.into())),
        arb_text().prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Sequence),
            proptest::collection::vec(
                (
                    prop_oneof![
                        6 => arb_text().prop_map(Value::String),
                        1 => any::<i64>().prop_map(|n| Value::Number(n.into())),
                        1 => Just(Value::Null),
                    ],
                    inner
                ),
                0..5
            )
            .prop_map(|kv| Value::Mapping(kv.into_iter().collect())),
        ]
    })
}

/// Never panics, and an error always names its where and a field path.
fn check_any(app: &Value, requires: &Value, custom: bool) {
    let opts = ParseOptions {
        allow_custom_version: custom,
        ..ParseOptions::default()
    };
    match parse_declaration("s", Some(app), Some(requires), "w", opts) {
        Ok(d) => round_trip(&d, opts),
        Err(e) => {
            assert!(!e.path.is_empty());
            assert!(
                e.path.starts_with("app") || e.path.starts_with("requires"),
                "{e}"
            );
            assert!(e.to_string().starts_with("w: "));
        }
    }
}

/// Every node of a value, as the list of child indexes leading to it.
fn node_paths(v: &Value, prefix: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
    out.push(prefix.clone());
    let children: Vec<&Value> = match v {
        Value::Sequence(s) => s.iter().collect(),
        Value::Mapping(m) => m.values().collect(),
        _ => Vec::new(),
    };
    for (i, c) in children.into_iter().enumerate() {
        prefix.push(i);
        node_paths(c, prefix, out);
        prefix.pop();
    }
}

fn replace_at(v: &mut Value, path: &[usize], new: Value) {
    let Some((first, rest)) = path.split_first() else {
        *v = new;
        return;
    };
    let child = match v {
        Value::Sequence(s) => s.get_mut(*first),
        Value::Mapping(m) => m.values_mut().nth(*first),
        _ => None,
    };
    if let Some(c) = child {
        replace_at(c, rest, new);
    }
}

/// The complete multi-OS declaration with one node (a value, or a whole
/// block) replaced by an arbitrary value: reaches every rule deep inside.
fn arb_mutated() -> impl Strategy<Value = (Value, Value)> {
    let base: Value = yaml_serde::from_str(MULTI_OS).unwrap();
    let mut paths = Vec::new();
    node_paths(&base, &mut Vec::new(), &mut paths);
    (proptest::sample::select(paths), arb_value(), 1..3usize).prop_map(move |(path, new, n)| {
        let mut doc = base.clone();
        for _ in 0..n {
            replace_at(&mut doc, &path, new.clone());
        }
        let app = doc.get("app").cloned().unwrap_or(Value::Null);
        let requires = doc.get("requires").cloned().unwrap_or(Value::Null);
        (app, requires)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_values_never_panic(app in arb_value(), requires in arb_value(), custom in any::<bool>()) {
        check_any(&app, &requires, custom);
    }

    #[test]
    fn arbitrary_os_blocks_never_panic(
        os in proptest::sample::select(&["win32", "darwin", "linux"][..]),
        block in arb_value(),
        requires in arb_value(),
    ) {
        let mut m = wasmgate::document::Mapping::new();
        m.insert(os.into(), block);
        check_any(&Value::Mapping(m), &requires, false);
    }

    #[test]
    fn mutated_complete_declarations_never_panic((app, requires) in arb_mutated(), custom in any::<bool>()) {
        check_any(&app, &requires, custom);
    }
}

/// Long fuzz run (not in the normal suite): `WASMGATE_FUZZ_SECS` (default
/// 600) seconds of random values through the parser; prints the exec count.
/// `cargo test -p wasmgate --test declaration -- --ignored --nocapture fuzz_long`
#[test]
#[ignore]
fn fuzz_long() {
    use proptest::test_runner::{Config, TestRunner};
    use std::sync::atomic::{AtomicU64, Ordering};
    let secs: u64 = std::env::var("WASMGATE_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    let execs = AtomicU64::new(0);
    let start = std::time::Instant::now();
    let mut round = 0u64;
    while start.elapsed().as_secs() < secs {
        round += 1;
        let mut runner = TestRunner::new(Config {
            cases: 20_000,
            failure_persistence: None,
            ..Config::default()
        });
        let strat = (
            arb_value(),
            arb_value(),
            any::<bool>(),
            proptest::sample::select(&["win32", "darwin", "linux", "", "mutate", "mutate"][..]),
            arb_mutated(),
        );
        runner
            .run(&strat, |(a, r, custom, os, (ma, mr))| {
                execs.fetch_add(1, Ordering::Relaxed);
                if os == "mutate" {
                    check_any(&ma, &mr, custom);
                } else if os.is_empty() {
                    check_any(&a, &r, custom);
                } else {
                    let mut m = wasmgate::document::Mapping::new();
                    m.insert(os.into(), a);
                    check_any(&Value::Mapping(m), &r, custom);
                }
                Ok(())
            })
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
    }
    println!(
        "fuzz_long: {} execs in {} s, no panic",
        execs.load(Ordering::Relaxed),
        start.elapsed().as_secs()
    );
}

// ---------------------------------------------------------------------------
// The declaration cases of tests/cases/declarations.yaml (those without a host)
// ---------------------------------------------------------------------------

/// Checks one case of `tests/cases/declarations.yaml` (its header is the
/// schema) against the library's parser: `valid` with the listed `requires`
/// and `declared` AppDef fields, or `errors` that all occur in the error,
/// which begins with its `where`.
fn check_case(case: &Value) -> Result<(), String> {
    let id = case
        .get("id")
        .and_then(Value::as_str)
        .ok_or("a case without id")?;
    let server = case.get("server").ok_or(format!("{id}: no server"))?;
    let expect = case.get("expect").ok_or(format!("{id}: no expect"))?;
    let got = parse_declaration(
        "t",
        server.get("app"),
        server.get("requires"),
        WHERE,
        ParseOptions::default(),
    );
    let errors: Vec<&str> = expect
        .get("errors")
        .and_then(Value::as_sequence)
        .into_iter()
        .flatten()
        .map(|v| v.as_str().unwrap_or_default())
        .collect();
    let valid = expect.get("valid").and_then(Value::as_bool) == Some(true);
    if valid != errors.is_empty() {
        return Err(format!("{id}: expect either `valid: true` or `errors`"));
    }
    match got {
        Err(e) if valid => Err(format!("{id}: want valid, got {e}")),
        Err(e) => {
            if !e.to_string().starts_with(&format!("{WHERE}: ")) {
                return Err(format!("{id}: `{e}` does not start with its where"));
            }
            // The cases name the field path and the wording; the echoed
            // value between them is left out of the comparison.
            let text = format!("{}: {} {}", e.where_, e.path, e.message);
            match errors.iter().find(|needle| !text.contains(**needle)) {
                Some(needle) => Err(format!("{id}: `{text}` lacks `{needle}`")),
                None => Ok(()),
            }
        }
        Ok(d) if !valid => Err(format!("{id}: want an error, got {d:?}")),
        Ok(d) => {
            if let Some(r) = expect.get("requires") {
                let want_app = r.get("app").and_then(Value::as_bool);
                if want_app.is_some_and(|a| a != d.requires.app) {
                    return Err(format!("{id}: requires.app"));
                }
                if let Some(mv) = r.get("min_version") {
                    let want =
                        yaml_serde::from_value::<Option<String>>(yaml_serde::Value::from(mv))
                            .ok()
                            .flatten();
                    if want != d.requires.min_version {
                        return Err(format!("{id}: requires.min_version"));
                    }
                }
                if let Some(g) = r.get("gpu")
                    && g.as_str() != d.requires.gpu.map(|g| g.as_str())
                {
                    return Err(format!("{id}: requires.gpu"));
                }
            }
            for (os, want) in expect
                .get("declared")
                .and_then(Value::as_mapping)
                .into_iter()
                .flatten()
            {
                let os = OsFamily::parse(os.as_str().unwrap_or_default())
                    .ok_or(format!("{id}: declared: unknown OS family {os:?}"))?;
                let def = d.app_for(os).ok_or(format!("{id}: no {os} block"))?;
                let fields = app_def_fields(def);
                for (k, v) in want.as_mapping().into_iter().flatten() {
                    let k = k.as_str().unwrap_or_default();
                    let got = fields.get(k).ok_or(format!("{id}: unknown field {k}"))?;
                    if got != v {
                        return Err(format!("{id}: app.{os}.{k}: got {got:?}, want {v:?}"));
                    }
                }
            }
            Ok(())
        }
    }
}

/// An `AppDef` in the field names the cases file uses (`declared`).
fn app_def_fields(d: &wasmgate::AppDef) -> std::collections::BTreeMap<&'static str, Value> {
    let s = |v: &str| Value::String(v.to_string());
    let (lk, lp, pk, uk, tk, ep) = match &d.liveness {
        Liveness::None => ("none", "", "pid", "http", "token", "/mcp"),
        Liveness::ServerJson {
            path,
            pid_key,
            url_key,
            token_key,
            endpoint_path,
        } => (
            "server_json",
            path.as_str(),
            pid_key.as_str(),
            url_key.as_str(),
            token_key.as_str(),
            endpoint_path.as_str(),
        ),
    };
    let locations = Value::Sequence(
        d.locations
            .iter()
            .map(|l| {
                let mut m = wasmgate::document::Mapping::new();
                m.insert("kind".into(), s(l.kind.as_str()));
                m.insert("value".into(), s(&l.value));
                m.insert("file".into(), s(&l.file));
                Value::Mapping(m)
            })
            .collect(),
    );
    [
        ("app_id", s(&d.app_id)),
        ("os_family", s(d.os_family.as_str())),
        ("presence", s(d.presence.as_str())),
        ("locations", locations),
        ("version_kind", s(d.version_kind.as_str())),
        ("version_arg", s(&d.version_arg)),
        ("liveness_kind", s(lk)),
        ("liveness_path", s(lp)),
        ("liveness_pid_key", s(pk)),
        ("liveness_url_key", s(uk)),
        ("liveness_token_key", s(tk)),
        ("endpoint_path", s(ep)),
    ]
    .into_iter()
    .collect()
}

/// The cases of `tests/cases/declarations.yaml` without a `host` (the
/// parser's cases); the file is part of the repository, so a missing or
/// unreadable file fails the test.
fn declaration_cases() -> Vec<Value> {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/cases/declarations.yaml");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{} is part of the repository: {e}", path.display()));
    let v: Value =
        yaml_serde::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    v.as_sequence()
        .unwrap_or_else(|| panic!("{}: not a list of cases", path.display()))
        .iter()
        .filter(|c| c.get("host").is_none())
        .cloned()
        .collect()
}

/// The fewest parser cases the file may hold.
const MIN_PARSE_CASES: usize = 20;

#[test]
fn declaration_cases_parse_in_the_library() {
    let cases = declaration_cases();
    assert!(
        cases.len() >= MIN_PARSE_CASES,
        "only {} parser cases in tests/cases/declarations.yaml (at least {MIN_PARSE_CASES})",
        cases.len()
    );
    let failures: Vec<String> = cases.iter().filter_map(|c| check_case(c).err()).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
