//! Versions: comparison (`docs/declarations.md` §4) and the version sources
//! `plist`, `pe_resource` and `uninstall_registry`.

use super::Candidate;
use super::pe;
use crate::declaration::{AppDef, VersionKind};
use crate::platform::Platform;
use std::cmp::Ordering;

/// Longest ASCII digit run a version segment may have; longer makes the
/// version unreadable (`docs/declarations.md` §4: it cannot be compared as a number).
const MAX_DIGITS: usize = 18;

/// Largest `Info.plist` read, in bytes.
const PLIST_LIMIT: u64 = 1024 * 1024;

/// The comparison key of a version (`docs/declarations.md` §4): split on `.`, each segment's
/// first run of ASCII digits as a number (`0-beta` → 0, `v2` → 2), a segment
/// with no digit → 0. `None` (unreadable) when the text has no ASCII digit at
/// all or a digit run is longer than 18 digits.
pub fn version_key(text: &str) -> Option<Vec<u64>> {
    if !text.bytes().any(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut key = Vec::new();
    for seg in text.split('.') {
        let b = seg.as_bytes();
        let Some(start) = b.iter().position(u8::is_ascii_digit) else {
            key.push(0);
            continue;
        };
        let len = b[start..].iter().take_while(|c| c.is_ascii_digit()).count();
        if len > MAX_DIGITS {
            return None;
        }
        key.push(seg[start..start + len].parse().ok()?);
    }
    Some(key)
}

/// Compares two version keys segment by segment, missing segments as 0.
pub fn compare_keys(a: &[u64], b: &[u64]) -> Ordering {
    let n = a.len().max(b.len());
    for i in 0..n {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        match x.cmp(&y) {
            Ordering::Equal => {}
            other => return other,
        }
    }
    Ordering::Equal
}

/// `found >= minimum` under `docs/declarations.md` §4; `false` when either is unreadable.
/// `2.3.0-beta >= 2.3.0`, `2.3.0.12594 >= 2.3.0`, `2.10 >= 2.9`, `1. >= 1`.
pub fn version_at_least(found: &str, minimum: &str) -> bool {
    match (version_key(found), version_key(minimum)) {
        (Some(f), Some(m)) => compare_keys(&f, &m) != Ordering::Less,
        _ => false,
    }
}

/// Reads the version of one found copy from the app's version source
/// (`docs/declarations.md` §4). `None` when the kind is `none` or `custom` (a component's
/// `probe-version` runs in the plugin layer), or the source is missing or
/// unreadable.
pub fn read_version(app: &AppDef, copy: &Candidate, platform: &dyn Platform) -> Option<String> {
    match app.version_kind {
        VersionKind::None | VersionKind::Custom => None,
        VersionKind::Plist => plist_version(&copy.path, platform),
        VersionKind::PeResource => pe::file_version(platform, &copy.path),
        VersionKind::UninstallRegistry => match &copy.uninstall_version {
            // Found through an uninstall entry: that entry's DisplayVersion.
            Some(v) => v.clone(),
            None => platform
                .uninstall_entries()
                .into_iter()
                .filter(|e| {
                    e.display_name
                        .as_deref()
                        .is_some_and(|n| n.starts_with(app.version_arg.as_str()))
                })
                .find_map(|e| e.display_version),
        },
    }
}

/// `CFBundleShortVersionString`, else `CFBundleVersion`, of
/// `<bundle>/Contents/Info.plist` (XML or binary). Numbers are written out;
/// empty strings and zero count as absent.
pub fn plist_version(bundle: &str, platform: &dyn Platform) -> Option<String> {
    let sep = if bundle.ends_with('/') || bundle.ends_with('\\') {
        ""
    } else {
        "/"
    };
    let path = format!("{bundle}{sep}Contents/Info.plist");
    let bytes = platform.read_file(&path, PLIST_LIMIT).ok()?;
    parsed_plist_version(bytes)
}

/// Most `Info.plist` contents whose version is kept.
const PLIST_CACHE_ENTRIES: usize = 512;

/// Largest `Info.plist` whose parse is kept, in bytes (real ones are a few
/// KiB): with [`PLIST_CACHE_ENTRIES`] the cache holds at most 32 MiB.
const PLIST_CACHE_MAX_BYTES: usize = 64 * 1024;

/// The version in an `Info.plist`'s bytes, parsed once per distinct content:
/// the file is still read on every look (so a changed file is seen at once),
/// only the XML/binary parse is skipped when the same bytes were parsed
/// before. Keyed by the whole content, so a cached answer is always the one a
/// parse would give.
fn parsed_plist_version(bytes: Vec<u8>) -> Option<String> {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static CACHE: OnceLock<Mutex<HashMap<Vec<u8>, Option<String>>>> = OnceLock::new();
    if bytes.len() > PLIST_CACHE_MAX_BYTES {
        return parse_plist_version(&bytes);
    }
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(v) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&bytes) {
        return v.clone();
    }
    let version = parse_plist_version(&bytes);
    let mut c = cache.lock().unwrap_or_else(|e| e.into_inner());
    if c.len() >= PLIST_CACHE_ENTRIES {
        c.clear();
    }
    c.insert(bytes, version.clone());
    version
}

/// `CFBundleShortVersionString`, else `CFBundleVersion`, of an `Info.plist`'s
/// bytes (XML or binary); `None` when unparsable or neither key has a value.
fn parse_plist_version(bytes: &[u8]) -> Option<String> {
    let value = plist::Value::from_reader(std::io::Cursor::new(bytes)).ok()?;
    let dict = value.as_dictionary()?;
    ["CFBundleShortVersionString", "CFBundleVersion"]
        .iter()
        .find_map(|k| match dict.get(k)? {
            plist::Value::String(s) if !s.is_empty() => Some(s.clone()),
            plist::Value::Integer(i) => {
                let s = i.to_string();
                (s != "0").then_some(s)
            }
            plist::Value::Real(r) if *r != 0.0 => Some(r.to_string()),
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparison_follows_the_seed_rule() {
        assert!(version_at_least("2.3", "2.3.0.0"));
        assert!(version_at_least("11.0.9.509", "11.0.9"));
        assert!(!version_at_least("11.0.9", "11.0.9.509"));
        assert!(version_at_least("01.2", "1.2"));
        assert!(version_at_least("2.3.0-beta", "2.3.0"));
        assert!(version_at_least("1.", "1"));
        assert!(version_at_least("2.10", "2.9"));
        assert!(version_at_least("v2", "2"));
        assert!(version_at_least("2.3.0.12594", "2.3.0"));
        assert!(!version_at_least("2.2.9", "2.3"));
        // Full-width digits are not ASCII digits: unreadable.
        assert!(!version_at_least("２.３", "2.3"));
        assert!(!version_at_least("beta", "0"));
        assert!(!version_at_least("", "0"));
    }

    #[test]
    fn long_digit_runs_are_unreadable() {
        assert_eq!(
            version_key("1.123456789012345678"),
            Some(vec![1, 123456789012345678])
        );
        assert_eq!(version_key("1.1234567890123456789"), None);
        assert!(!version_at_least("99999999999999999999", "1"));
    }

    #[test]
    fn plist_versions_follow_the_file_content() {
        use crate::platform::SimulatedHost;
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("host.yaml"), "os: darwin\n").unwrap();
        let file = t.path().join("root/Applications/A.app/Contents/Info.plist");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let write = |v: &str, binary: bool| {
            let mut d = plist::Dictionary::new();
            d.insert("CFBundleShortVersionString".into(), v.into());
            let value = plist::Value::Dictionary(d);
            if binary {
                value.to_file_binary(&file).unwrap();
            } else {
                value.to_file_xml(&file).unwrap();
            }
        };
        let host = SimulatedHost::load(t.path()).unwrap();
        write("1.0", false);
        assert_eq!(
            plist_version("/Applications/A.app", &host).as_deref(),
            Some("1.0")
        );
        // Same content again (the parse is reused), then changed content.
        assert_eq!(
            plist_version("/Applications/A.app", &host).as_deref(),
            Some("1.0")
        );
        write("2.5", false);
        assert_eq!(
            plist_version("/Applications/A.app", &host).as_deref(),
            Some("2.5")
        );
        write("3.1", true);
        assert_eq!(
            plist_version("/Applications/A.app", &host).as_deref(),
            Some("3.1")
        );
        std::fs::write(&file, b"not a plist").unwrap();
        assert_eq!(plist_version("/Applications/A.app", &host), None);
        std::fs::remove_file(&file).unwrap();
        assert_eq!(plist_version("/Applications/A.app", &host), None);
        // One read per look, parsed or not.
        assert_eq!(host.fs_calls(), 6);
    }

    #[test]
    fn keys_take_the_first_digit_run() {
        assert_eq!(version_key("0-beta.v2.x.12594"), Some(vec![0, 2, 0, 12594]));
        assert_eq!(compare_keys(&[2], &[2, 0, 0]), Ordering::Equal);
    }
}
