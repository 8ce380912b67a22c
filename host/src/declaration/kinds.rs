//! The location-kinds table (docs/declarations.md §1.6): the single source of truth the
//! parser (`super::parse`) and the resolver share. Adding a location kind is
//! one entry here plus its search rule in the resolver.

use super::model::{LocationKind, OsFamily, Presence};

/// One row of [`LOCATION_KINDS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocationKindSpec {
    /// The kind (never [`LocationKind::Path`]: a plain string is a path).
    pub kind: LocationKind,
    /// The only OS family whose `app.<os>` block may use it; `None` = any.
    pub only_under: Option<OsFamily>,
    /// The mapping key holding the name (`name`, `display_name_prefix`, `app_id`).
    pub key: &'static str,
    /// The presence a copy found this way has; `app.<os>.presence` must equal it.
    pub presence: Presence,
    /// Whether the mapping also needs `file` (a relative path inside the
    /// install folder); only such kinds accept a `file` key.
    pub needs_file: bool,
}

/// Every location kind, sorted by name (the order error messages list them in).
pub const LOCATION_KINDS: &[LocationKindSpec] = &[
    LocationKindSpec {
        kind: LocationKind::AppBundle,
        only_under: Some(OsFamily::Darwin),
        key: "name",
        presence: Presence::Bundle,
        needs_file: false,
    },
    LocationKindSpec {
        kind: LocationKind::Command,
        only_under: None,
        key: "name",
        presence: Presence::Executable,
        needs_file: false,
    },
    LocationKindSpec {
        kind: LocationKind::Flatpak,
        only_under: Some(OsFamily::Linux),
        key: "app_id",
        presence: Presence::Executable,
        needs_file: false,
    },
    LocationKindSpec {
        kind: LocationKind::Snap,
        only_under: Some(OsFamily::Linux),
        key: "name",
        presence: Presence::Executable,
        needs_file: false,
    },
    LocationKindSpec {
        kind: LocationKind::UninstallRegistry,
        only_under: Some(OsFamily::Win32),
        key: "display_name_prefix",
        presence: Presence::Executable,
        needs_file: true,
    },
];

/// The row whose spelling is `name` (`command`, `app_bundle`, …); `None` for
/// `path` and anything unknown.
pub fn location_kind_by_name(name: &str) -> Option<&'static LocationKindSpec> {
    LOCATION_KINDS.iter().find(|k| k.kind.as_str() == name)
}

/// The row of `kind`; `None` for [`LocationKind::Path`].
#[cfg(any(test, feature = "internals"))]
pub fn location_kind_spec(kind: LocationKind) -> Option<&'static LocationKindSpec> {
    LOCATION_KINDS.iter().find(|k| k.kind == kind)
}

/// The kind names, sorted (`['app_bundle', 'command', …]` in messages).
pub fn location_kind_names() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = LOCATION_KINDS.iter().map(|k| k.kind.as_str()).collect();
    v.sort_unstable();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_but_path_has_one_row() {
        for k in [
            LocationKind::Command,
            LocationKind::UninstallRegistry,
            LocationKind::AppBundle,
            LocationKind::Flatpak,
            LocationKind::Snap,
        ] {
            let row = location_kind_spec(k).expect("row");
            assert_eq!(location_kind_by_name(k.as_str()), Some(row));
        }
        assert!(location_kind_spec(LocationKind::Path).is_none());
        assert!(location_kind_by_name("path").is_none());
        let names = location_kind_names();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
        assert_eq!(names.len(), LOCATION_KINDS.len());
    }
}
