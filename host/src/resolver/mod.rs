//! Locating an application on a machine (`docs/declarations.md` §3,
//! §4, §7): every location kind, presence tests, expansion, `*`
//! versioned folders, version sources and `server_json` liveness. All machine
//! access goes through [`Platform`]; directory tables and expansion follow the
//! platform's OS family, so any family can be evaluated on any machine.

pub mod expand;
pub mod liveness;
pub mod pe;
pub mod version;

use crate::declaration::{AppDef, LocationKind, OsFamily, Presence};
use crate::platform::{FileKind, Platform};
use expand::{expand, is_absolute, join, native, native_owned};
use std::cmp::Ordering;

pub use version::{compare_keys, read_version, version_at_least, version_key};

/// One place an application was looked for (docs/declarations.md §1.7).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The path (native separators), or for a `command` that was not found
    /// the bare name, or an expansion that could not complete.
    pub path: String,
    /// The presence test passed (`docs/declarations.md` §3).
    pub present: bool,
    /// The location kind that produced it.
    pub kind: LocationKind,
    /// For a copy found through an uninstall entry: that entry's
    /// `DisplayVersion` (`Some(None)` when it has none). `None` for every
    /// other way of finding a copy.
    pub uninstall_version: Option<Option<String>>,
}

/// Every candidate of an app definition, in declaration order (docs/declarations.md §3).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resolution {
    /// Present and not-present candidates, in order.
    pub candidates: Vec<Candidate>,
}

impl Resolution {
    /// The present candidates (found copies), in order.
    pub fn present(&self) -> impl Iterator<Item = &Candidate> {
        self.candidates.iter().filter(|c| c.present)
    }

    /// Whether any copy was found.
    #[cfg(any(test, feature = "internals"))]
    pub fn found(&self) -> bool {
        self.candidates.iter().any(|c| c.present)
    }
}

/// A folder a directory-table kind looks in (`docs/declarations.md` §3).
#[derive(Debug, Clone, Copy)]
pub enum KnownDir {
    /// A fixed (possibly `~`-relative) folder.
    Fixed(&'static str),
    /// `$VAR/suffix` when `VAR` is set to an absolute path, else `default`.
    EnvOr {
        /// The variable (`XDG_DATA_HOME`).
        var: &'static str,
        /// Joined under the variable's value.
        suffix: &'static str,
        /// Used when the variable is unset or not absolute.
        default: &'static str,
    },
}

/// The folders a directory-table location kind searches on `os`, in order
/// (`docs/declarations.md` §3). Empty for kinds without a table and for other OS families.
pub fn known_dirs(kind: LocationKind, os: OsFamily) -> &'static [KnownDir] {
    use KnownDir::*;
    match (kind, os) {
        (LocationKind::AppBundle, OsFamily::Darwin) => {
            &[Fixed("/Applications"), Fixed("~/Applications")]
        }
        (LocationKind::Flatpak, OsFamily::Linux) => &[
            Fixed("/var/lib/flatpak/exports/bin"),
            EnvOr {
                var: "XDG_DATA_HOME",
                suffix: "flatpak/exports/bin",
                default: "~/.local/share/flatpak/exports/bin",
            },
        ],
        (LocationKind::Snap, OsFamily::Linux) => {
            &[Fixed("/snap/bin"), Fixed("/var/lib/snapd/snap/bin")]
        }
        _ => &[],
    }
}

/// Locates every copy of `app` on `platform` (docs/declarations.md §3): the candidates
/// of each location in declaration order. Only metadata and listings are
/// read; nothing is opened or run.
pub fn locate(app: &AppDef, platform: &dyn Platform) -> Resolution {
    let mut out = Vec::new();
    for loc in &app.locations {
        match loc.kind {
            LocationKind::Path => locate_path(&loc.value, app.presence, platform, &mut out),
            LocationKind::Command => out.push(locate_command(&loc.value, platform)),
            LocationKind::UninstallRegistry => {
                locate_uninstall(&loc.value, &loc.file, app.presence, platform, &mut out)
            }
            LocationKind::AppBundle | LocationKind::Flatpak | LocationKind::Snap => {
                locate_known(loc.kind, &loc.value, app.presence, platform, &mut out)
            }
        }
    }
    Resolution { candidates: out }
}

/// The presence test of `docs/declarations.md` §3 on an expanded absolute path. `executable`:
/// a regular file (links followed) with, on POSIX families, an execute bit.
/// `bundle`: `Contents/Info.plist` is a regular file (which makes the path a
/// folder) — one metadata call.
pub fn is_present(path: &str, presence: Presence, platform: &dyn Platform) -> bool {
    let os = platform.os_family();
    match presence {
        Presence::Executable => executable_at(path, platform.metadata(path), os),
        Presence::Bundle => {
            let plist = join(path, "Contents/Info.plist", os);
            platform.metadata(&plist).is_some_and(FileKind::is_file)
        }
    }
}

fn executable_at(_path: &str, meta: Option<FileKind>, os: OsFamily) -> bool {
    match meta {
        Some(FileKind::File { executable }) => os == OsFamily::Win32 || executable,
        _ => false,
    }
}

fn candidate(path: String, present: bool, kind: LocationKind) -> Candidate {
    Candidate {
        path,
        present,
        kind,
        uninstall_version: None,
    }
}

fn locate_path(value: &str, presence: Presence, p: &dyn Platform, out: &mut Vec<Candidate>) {
    let os = p.os_family();
    let e = expand(value, p);
    let complete = e.complete;
    let text = native_owned(e.text, os);
    if !complete || !is_absolute(&text, os) {
        out.push(candidate(text, false, LocationKind::Path));
        return;
    }
    if !text.contains('*') {
        let present = is_present(&text, presence, p);
        out.push(candidate(text, present, LocationKind::Path));
        return;
    }
    let matches = glob(&text, presence, p);
    if matches.is_empty() {
        out.push(candidate(text, false, LocationKind::Path));
        return;
    }
    out.extend(
        matches
            .into_iter()
            .map(|(path, present)| candidate(path, present, LocationKind::Path)),
    );
}

/// A `*` match: the path and the text each `*` matched.
struct Match {
    path: String,
    captures: Vec<String>,
}

/// A `*` match that exists, with its presence and the version key of each
/// capture (computed once, not per comparison while sorting).
struct Found {
    m: Match,
    present: bool,
    keys: Vec<Option<Vec<u64>>>,
}

/// Expands `*` segments (`docs/declarations.md`, "Locations"): each `*`
/// matches a run of characters within one segment (not names starting with
/// `.` unless the pattern does; without case on win32). Segments are split on
/// `/` on linux/darwin (`\` is an ordinary character there) and on `\` on
/// win32 (the pattern is native by then). The text around the matched names
/// is kept as written (a doubled separator stays doubled), and a pattern that
/// ends in a separator matches folders only, each reported with that
/// separator. Matches are ordered by the texts the `*`s matched, compared as
/// versions, highest first; texts without a readable version after every
/// versioned one; ties by path, ascending. Matches that do not exist are
/// dropped; existing ones are returned with their presence.
fn glob(pattern: &str, presence: Presence, p: &dyn Platform) -> Vec<(String, bool)> {
    let os = p.os_family();
    let sep = expand::separator(os);
    let (prefix, body) = match os {
        OsFamily::Win32 => (&pattern[..3], &pattern[3..]),
        _ => ("/", &pattern[1..]),
    };
    let segments: Vec<&str> = body.split(sep).collect();
    let folder_only = pattern.ends_with(sep);
    let last_star = segments.iter().rposition(|s| s.contains('*'));
    let mut states = vec![Match {
        path: prefix.to_string(),
        captures: Vec::new(),
    }];
    for (i, seg) in segments.iter().enumerate() {
        let mut next = Vec::new();
        for st in states {
            let joined = |name: &str| {
                let mut path = String::with_capacity(st.path.len() + name.len() + 1);
                path.push_str(&st.path);
                if i > 0 {
                    path.push(sep);
                }
                path.push_str(name);
                path
            };
            if !seg.contains('*') {
                next.push(Match {
                    path: joined(seg),
                    captures: st.captures,
                });
                continue;
            }
            let Ok(names) = p.list_dir(&st.path) else {
                continue;
            };
            for name in names {
                if name.starts_with('.') && !seg.starts_with('.') {
                    continue;
                }
                if let Some(caps) = match_segment(seg, &name, os == OsFamily::Win32) {
                    let mut captures = st.captures.clone();
                    captures.extend(caps);
                    next.push(Match {
                        path: joined(&name),
                        captures,
                    });
                }
            }
        }
        states = next;
    }
    let ends_with_star = last_star == Some(segments.len().saturating_sub(1));
    let mut found: Vec<Found> = Vec::new();
    for m in states {
        let present = is_present(&m.path, presence, p);
        // A listing proved a final `*` match exists; otherwise a match that
        // is not present must still exist to count as a copy looked at. A
        // trailing separator: it must be a folder (a listing also names files).
        let exists = if folder_only {
            p.metadata(&m.path).is_some_and(FileKind::is_dir)
        } else {
            present || ends_with_star || p.metadata(&m.path).is_some()
        };
        if exists {
            let keys = m.captures.iter().map(|c| version_key(c)).collect();
            found.push(Found { m, present, keys });
        }
    }
    found.sort_by(order_matches);
    found.into_iter().map(|f| (f.m.path, f.present)).collect()
}

fn order_matches(fa: &Found, fb: &Found) -> Ordering {
    let (a, b) = (&fa.m, &fb.m);
    for (x, y) in fa.keys.iter().zip(&fb.keys) {
        let ord = match (x, y) {
            (Some(kx), Some(ky)) => compare_keys(ky, kx), // highest first
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        };
        if ord != Ordering::Equal {
            return ord;
        }
    }
    // Ties by name: the matched folder names, then the whole path.
    a.captures
        .cmp(&b.captures)
        .then_with(|| a.path.cmp(&b.path))
}

/// Matches one path segment with `*`s against a name; returns the text each
/// `*` matched (each the shortest that lets the rest match, left to right).
fn match_segment(pattern: &str, name: &str, fold_case: bool) -> Option<Vec<String>> {
    let (pat, nm) = if fold_case {
        (pattern.to_ascii_lowercase(), name.to_ascii_lowercase())
    } else {
        (pattern.to_string(), name.to_string())
    };
    let parts: Vec<&str> = pat.split('*').collect();
    let first = parts[0];
    let last = parts[parts.len() - 1];
    if !nm.starts_with(first) || nm.len() < first.len() + last.len() || !nm.ends_with(last) {
        return None;
    }
    let end = nm.len() - last.len();
    let mut pos = first.len();
    let mut caps = Vec::new();
    for mid in &parts[1..parts.len() - 1] {
        let at = nm[pos..end].find(mid)? + pos;
        caps.push(name.get(pos..at)?.to_string());
        pos = at + mid.len();
    }
    caps.push(name.get(pos..end)?.to_string());
    Some(caps)
}

/// The search path `command` uses when `PATH` is unset on linux/darwin, as
/// the original and `execvp` do (`docs/declarations.md`, "Locations").
pub const DEFAULT_POSIX_PATH: &str = "/bin:/usr/bin";

/// `command`: the first PATH folder holding the name (with a PATHEXT
/// extension on win32) as an executable. Empty and relative PATH entries are
/// skipped: the current folder is never searched. On linux/darwin entries
/// are taken literally (no trimming or quote stripping, which are win32
/// conventions) and an unset `PATH` means [`DEFAULT_POSIX_PATH`]; a `PATH`
/// set to the empty string searches nothing.
fn locate_command(name: &str, p: &dyn Platform) -> Candidate {
    let os = p.os_family();
    let win = os == OsFamily::Win32;
    let path_var = match p.env_var("PATH") {
        Some(v) => v,
        None if !win => DEFAULT_POSIX_PATH.to_string(),
        None => String::new(),
    };
    let list_sep = if win { ';' } else { ':' };
    // POSIX looks for the name as written: borrowed, no copy per lookup.
    let names: Vec<std::borrow::Cow<'_, str>> = if win {
        let exts: Vec<String> = p
            .env_var("PATHEXT")
            .filter(|s| !s.trim().is_empty())
            .unwrap_or_else(|| ".COM;.EXE;.BAT;.CMD".into())
            .split(';')
            .map(|e| e.trim().to_string())
            .filter(|e| !e.is_empty())
            .collect();
        let lower = name.to_ascii_lowercase();
        if exts
            .iter()
            .any(|e| lower.ends_with(&e.to_ascii_lowercase()))
        {
            vec![name.into()]
        } else {
            exts.iter().map(|e| format!("{name}{e}").into()).collect()
        }
    } else {
        vec![name.into()]
    };
    for dir in path_var.split(list_sep) {
        let dir = if win {
            dir.trim().trim_matches('"')
        } else {
            dir
        };
        if dir.is_empty() || !is_absolute(dir, os) {
            continue;
        }
        for n in &names {
            let full = join(dir, n, os);
            if executable_at(&full, p.metadata(&full), os) {
                return candidate(full, true, LocationKind::Command);
            }
        }
    }
    candidate(name.to_string(), false, LocationKind::Command)
}

/// Cleans an `InstallLocation` (`docs/declarations.md` §3): surrounding whitespace and quotes,
/// `%VAR%` of a `REG_EXPAND_SZ`, trailing separators and spaces. `None` when
/// nothing usable is left.
fn clean_install_location(raw: &str, p: &dyn Platform) -> Option<(String, bool)> {
    let t = raw.trim().trim_matches('"').trim();
    if t.is_empty() {
        return None;
    }
    let e = expand(t, p);
    let cleaned = e.text.trim_end_matches(['\\', '/', ' ']).to_string();
    if cleaned.is_empty() {
        return None;
    }
    Some((cleaned, e.complete))
}

fn locate_uninstall(
    prefix: &str,
    file: &str,
    presence: Presence,
    p: &dyn Platform,
    out: &mut Vec<Candidate>,
) {
    let os = p.os_family();
    if os != OsFamily::Win32 {
        return;
    }
    for entry in p.uninstall_entries() {
        if !entry
            .display_name
            .as_deref()
            .is_some_and(|n| n.starts_with(prefix))
        {
            continue;
        }
        let Some((folder, complete)) = entry
            .install_location
            .as_deref()
            .and_then(|l| clean_install_location(l, p))
        else {
            continue;
        };
        if folder.starts_with("\\\\") || folder.starts_with("//") {
            continue; // UNC: presence checks never touch the network.
        }
        let path = native(&join(&folder, file, os), os);
        let present = complete && is_absolute(&path, os) && is_present(&path, presence, p);
        out.push(Candidate {
            path,
            present,
            kind: LocationKind::UninstallRegistry,
            uninstall_version: Some(entry.display_version.clone()),
        });
    }
}

fn locate_known(
    kind: LocationKind,
    name: &str,
    presence: Presence,
    p: &dyn Platform,
    out: &mut Vec<Candidate>,
) {
    let os = p.os_family();
    for dir in known_dirs(kind, os) {
        let base = match *dir {
            KnownDir::Fixed(d) => expand(d, p),
            KnownDir::EnvOr {
                var,
                suffix,
                default,
            } => match p.env_var(var).filter(|v| is_absolute(v, os)) {
                Some(v) => expand::Expanded {
                    text: join(&v, suffix, os),
                    complete: true,
                },
                None => expand(default, p),
            },
        };
        let path = join(&base.text, name, os);
        let present = base.complete && is_absolute(&path, os) && is_present(&path, presence, p);
        out.push(candidate(path, present, kind));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_matching_captures_star_text() {
        assert_eq!(
            match_segment("Thing *", "Thing 2.10", false),
            Some(vec!["2.10".to_string()])
        );
        assert_eq!(match_segment("Thing *", "Other 2", false), None);
        assert_eq!(
            match_segment("a*b*c", "aXXbYYc", false),
            Some(vec!["XX".to_string(), "YY".to_string()])
        );
        assert_eq!(
            match_segment("thing *", "Thing 3", true),
            Some(vec!["3".to_string()])
        );
        assert_eq!(match_segment("ab*ba", "aba", false), None);
    }
}
