//! The `versionfile` example plugin: an application that keeps its version
//! in a file inside its install folder, read by a custom probe (`guest-sdk/README.md` §4,
//! "Custom probes"). The host locates the copy; `probe_version` only reads
//! the folder the host grants for that one call.
//!
//! Where the application is looked for:
//! - linux: `$VERSIONFILE_HOME/bin/versionfile-app`, then
//!   `~/.local/share/versionfile-app/bin/versionfile-app`; the version is
//!   the first line of `VERSION` beside the executable, else the
//!   `"version"` of a `package.json` there.
//! - darwin: `/Applications/VersionfileApp.app` (a bundle; the grant is the
//!   bundle, the version is `Contents/Resources/VERSION`).
//! - win32: `%LOCALAPPDATA%\VersionfileApp\versionfile-app.exe`, `VERSION`
//!   beside it.
//!
//! The server is `versionfile-app --mcp` (on `PATH`) and needs version 2.0 or newer.

use wasmgate_sdk::{App, Grant, OsFamily, Plugin, ProbeError, Requires, Server, VersionSource};

struct VersionFile;

/// The oldest version whose `--mcp` mode the server relies on.
const MIN_VERSION: &str = "2.0";

impl Plugin for VersionFile {
    fn manifest() -> wasmgate_sdk::Manifest {
        wasmgate_sdk::Manifest::new("versionfile", env!("CARGO_PKG_VERSION")).server(
            Server::stdio("versionfile", "versionfile-app")
                .args(["--mcp"])
                .app(
                    App::linux()
                        .path("$VERSIONFILE_HOME/bin/versionfile-app")
                        .path("~/.local/share/versionfile-app/bin/versionfile-app")
                        .version(VersionSource::Custom),
                )
                .app(
                    App::darwin()
                        .bundle()
                        .path("/Applications/VersionfileApp.app")
                        .version(VersionSource::Custom),
                )
                .app(
                    App::win32()
                        .path("%LOCALAPPDATA%/VersionfileApp/versionfile-app.exe")
                        .version(VersionSource::Custom),
                )
                .requires(Requires::app().min_version(MIN_VERSION)),
        )
    }

    fn probe_version(_server: &str, os: OsFamily, grant: &Grant) -> Result<Option<String>, String> {
        let version_file = match os {
            OsFamily::Darwin => "Contents/Resources/VERSION",
            _ => "VERSION",
        };
        match grant.read_to_string(version_file) {
            Ok(text) => Ok(first_line(&text)),
            Err(ProbeError::NotFound(_)) => match grant.read_to_string("package.json") {
                Ok(json) => Ok(package_json_version(&json)),
                Err(ProbeError::NotFound(_)) => Ok(None),
                Err(e) => Err(format!("package.json: {e:?}")),
            },
            Err(e) => Err(format!("{version_file}: {e:?}")),
        }
    }
}

/// The first non-empty line, trimmed; `None` for an empty file.
fn first_line(text: &str) -> Option<String> {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_string)
}

/// The top-level `"version": "<text>"` of a `package.json`, found without
/// a JSON parser: the first `"version"` key followed by `:` and a string.
fn package_json_version(json: &str) -> Option<String> {
    let mut rest = json;
    while let Some(i) = rest.find("\"version\"") {
        rest = &rest[i + "\"version\"".len()..];
        let after = rest.trim_start();
        if let Some(value) = after.strip_prefix(':') {
            let value = value.trim_start().strip_prefix('"')?;
            let end = value.find('"')?;
            return Some(value[..end].to_string());
        }
    }
    None
}

wasmgate_sdk::export_plugin!(VersionFile);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_version_of_a_package_json() {
        let json = r#"{ "name": "app", "version" : "2.4.1", "deps": {"version": "9"} }"#;
        assert_eq!(package_json_version(json).as_deref(), Some("2.4.1"));
        assert_eq!(package_json_version("{}"), None);
        assert_eq!(first_line("\n 3.1.0 \nx"), Some("3.1.0".into()));
    }
}
