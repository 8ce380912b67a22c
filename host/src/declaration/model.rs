//! The declaration data model (`docs/declarations.md` §1, §1.1–1.6).
//!
//! Values are immutable after parsing; the parser (`super::parse`) is the only
//! producer. Field names follow the vocabulary of `docs/declarations.md` §1, and the serialized form
//! (JSON/YAML) is the normalized declaration `wasmgate check` prints.

use serde::{Deserialize, Serialize};
use std::fmt;

/// An operating-system family: the keys of an `app:` block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OsFamily {
    /// Windows.
    Win32,
    /// macOS.
    Darwin,
    /// Linux and every other POSIX host.
    Linux,
}

impl OsFamily {
    /// All families, in the order `docs/declarations.md` §1 lists them (`win32`, `darwin`, `linux`).
    pub const ALL: [OsFamily; 3] = [OsFamily::Win32, OsFamily::Darwin, OsFamily::Linux];

    /// The spelling of `docs/declarations.md` §1: `win32`, `darwin` or `linux`.
    pub fn as_str(self) -> &'static str {
        match self {
            OsFamily::Win32 => "win32",
            OsFamily::Darwin => "darwin",
            OsFamily::Linux => "linux",
        }
    }

    /// Parses the spelling of `docs/declarations.md` §1; `None` for anything else (case-sensitive).
    pub fn parse(s: &str) -> Option<OsFamily> {
        match s {
            "win32" => Some(OsFamily::Win32),
            "darwin" => Some(OsFamily::Darwin),
            "linux" => Some(OsFamily::Linux),
            _ => None,
        }
    }

    /// The family of the machine this binary was built for (any non-Windows,
    /// non-macOS host evaluates as `linux`).
    pub fn current() -> OsFamily {
        if cfg!(windows) {
            OsFamily::Win32
        } else if cfg!(target_os = "macos") {
            OsFamily::Darwin
        } else {
            OsFamily::Linux
        }
    }
}

impl fmt::Display for OsFamily {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a found copy must be (`app.<os>.presence`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Presence {
    /// A regular file (links followed); on POSIX families with an execute bit.
    Executable,
    /// A folder holding `Contents/Info.plist`.
    Bundle,
}

impl Presence {
    /// `executable` or `bundle`.
    pub fn as_str(self) -> &'static str {
        match self {
            Presence::Executable => "executable",
            Presence::Bundle => "bundle",
        }
    }
}

/// The kind of one location entry. `Path` is a plain string location; the
/// others are the location kinds of `super::kinds::LOCATION_KINDS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LocationKind {
    /// A rooted path, possibly with `*` versioned folders.
    Path,
    /// A bare name on PATH.
    Command,
    /// win32 uninstall registry entries.
    UninstallRegistry,
    /// darwin `/Applications`, `~/Applications`.
    AppBundle,
    /// linux flatpak exports.
    Flatpak,
    /// linux snap bin folders.
    Snap,
}

impl LocationKind {
    /// The spelling of `docs/declarations.md` §1 (`path`, `command`, `uninstall_registry`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            LocationKind::Path => "path",
            LocationKind::Command => "command",
            LocationKind::UninstallRegistry => "uninstall_registry",
            LocationKind::AppBundle => "app_bundle",
            LocationKind::Flatpak => "flatpak",
            LocationKind::Snap => "snap",
        }
    }
}

/// One location (docs/declarations.md §1.5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Location {
    /// `path` for a plain string, else the location kind.
    pub kind: LocationKind,
    /// The stripped path, or the stripped value of the kind's key
    /// (`name`, `display_name_prefix`, `app_id`).
    pub value: String,
    /// For `uninstall_registry`: the executable relative to the install
    /// folder; `""` for every other kind.
    pub file: String,
}

/// Where the version of a found copy comes from (`version.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VersionKind {
    /// No version is read.
    None,
    /// PE version resource (win32).
    PeResource,
    /// `Contents/Info.plist` (darwin, bundles).
    Plist,
    /// `DisplayVersion` of an uninstall entry (win32).
    UninstallRegistry,
    /// The plugin's own `probe-version` export (components only).
    Custom,
}

impl VersionKind {
    /// The spelling of `docs/declarations.md` §1 (`none`, `pe_resource`, `plist`, `uninstall_registry`, `custom`).
    pub fn as_str(self) -> &'static str {
        match self {
            VersionKind::None => "none",
            VersionKind::PeResource => "pe_resource",
            VersionKind::Plist => "plist",
            VersionKind::UninstallRegistry => "uninstall_registry",
            VersionKind::Custom => "custom",
        }
    }
}

/// `liveness.kind` with its fields (docs/declarations.md §1.4, §7).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Liveness {
    /// Not checked.
    None,
    /// The running application writes a JSON file with pid, URL and token.
    ServerJson {
        /// Rooted path of the file (unexpanded).
        path: String,
        /// Key of the pid (default `pid`).
        pid_key: String,
        /// Key of the base URL (default `http`).
        url_key: String,
        /// Key of the bearer token (default `token`).
        token_key: String,
        /// Endpoint path replacing the URL's path (default `/mcp`).
        endpoint_path: String,
    },
}

/// One application on one OS family (docs/declarations.md §1.4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppDef {
    /// The declaration (server) name.
    pub app_id: String,
    /// The `app` key this block came from.
    pub os_family: OsFamily,
    /// What a found copy must be.
    pub presence: Presence,
    /// Non-empty, in declaration order.
    pub locations: Vec<Location>,
    /// `version.kind` (default `none`).
    pub version_kind: VersionKind,
    /// `version.display_name_prefix` (`""` when not given).
    pub version_arg: String,
    /// `liveness` (default `none`).
    pub liveness: Liveness,
}

/// GPU vendors a declaration can require (`requires.gpu`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GpuVendor {
    /// NVIDIA — the only value `docs/declarations.md` §2.6 allows.
    Nvidia,
}

impl GpuVendor {
    /// `nvidia`.
    pub fn as_str(self) -> &'static str {
        match self {
            GpuVendor::Nvidia => "nvidia",
        }
    }
}

/// `requires:` (docs/declarations.md §1.3).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Requires {
    /// The application must be found.
    pub app: bool,
    /// Dotted numeric minimum version, exactly as written.
    pub min_version: Option<String>,
    /// A GPU vendor that must be present.
    pub gpu: Option<GpuVendor>,
}

/// One server's declaration (docs/declarations.md §1.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Declaration {
    /// The configured server name.
    pub name: String,
    /// The `app:` block's OS blocks in input order; `None` when absent.
    pub app: Option<Vec<AppDef>>,
    /// The `requires:` block (defaults when absent).
    pub requires: Requires,
}

impl Declaration {
    /// `requires.app` (docs/declarations.md §1.1 derived accessor).
    pub fn requires_app(&self) -> bool {
        self.requires.app
    }

    /// `requires.min_version`, exactly as written.
    pub fn min_version(&self) -> Option<&str> {
        self.requires.min_version.as_deref()
    }

    /// `requires.gpu`.
    pub fn required_gpu(&self) -> Option<GpuVendor> {
        self.requires.gpu
    }

    /// The `AppDef` for `os`, if the declaration has one.
    pub fn app_for(&self, os: OsFamily) -> Option<&AppDef> {
        self.app.as_ref()?.iter().find(|d| d.os_family == os)
    }
}
