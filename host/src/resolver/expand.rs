//! Expansion of `~`, `$VAR`, `${VAR}` (every OS family) and `%VAR%` (win32),
//! and path syntax per OS family (`docs/declarations.md` §3).

use crate::declaration::OsFamily;
use crate::platform::Platform;

/// The result of expanding a location string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expanded {
    /// The text with every set variable replaced; unset ones stay literally.
    pub text: String,
    /// `false` when a variable (or `~`) had no value: the candidate built from
    /// this text is never present. Tracked during expansion, so a folder
    /// named `100%` or `a$` is not mistaken for a variable.
    pub complete: bool,
}

fn is_posix_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Characters accepted in a win32 `%NAME%` (`ProgramFiles(x86)` included);
/// anything else (a space, a separator) means the `%` is literal text.
fn is_win_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '(' | ')' | '-' | '.' | '{' | '}')
}

/// Expands `input` for the OS family of `platform`: a leading `~` (alone or
/// before a separator) becomes the home folder, then `$NAME` / `${NAME}`
/// (`NAME` = `[A-Za-z0-9_]+`) and, on win32, `%NAME%` (`%%` is a literal `%`).
///
/// On linux/darwin `~user` (up to the first `/`) becomes that user's home
/// folder from the platform's user database ([`Platform::user_home`]); a
/// user it does not know, and `~user` on win32, mark the result incomplete
/// (never a folder literally named `~user`). A home folder or variable value
/// that ends in a separator, followed by a separator, is joined without
/// doubling it (`HOME=/` and `~/usr/bin/sh` give `/usr/bin/sh`;
/// `docs/declarations.md`, "Expansion").
pub fn expand(input: &str, platform: &dyn Platform) -> Expanded {
    let os = platform.os_family();
    let mut complete = true;
    let mut out = String::with_capacity(input.len() + 16);
    let mut rest = input;
    if let Some(after) = input.strip_prefix('~') {
        let is_sep = |c: char| c == '/' || (os == OsFamily::Win32 && c == '\\');
        let name_end = after.find(is_sep).unwrap_or(after.len());
        let (user, tail) = after.split_at(name_end);
        let home = if user.is_empty() {
            platform.home()
        } else if os != OsFamily::Win32 {
            platform.user_home(user)
        } else {
            None
        };
        match home.filter(|h| !h.is_empty()) {
            Some(home) => {
                push_joined(&mut out, &home, tail, os);
                rest = tail;
            }
            None => complete = false,
        }
    }
    let bytes = rest.as_bytes();
    let mut i = 0;
    let mut lit_start = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'$' {
            let (name, end) = if bytes.get(i + 1) == Some(&b'{') {
                match rest[i + 2..].find('}') {
                    Some(close) => {
                        let name = &rest[i + 2..i + 2 + close];
                        if !name.is_empty() && name.bytes().all(is_posix_name_byte) {
                            (Some(name), i + 2 + close + 1)
                        } else {
                            (None, i + 1)
                        }
                    }
                    None => (None, i + 1),
                }
            } else {
                let mut j = i + 1;
                while j < bytes.len() && is_posix_name_byte(bytes[j]) {
                    j += 1;
                }
                if j > i + 1 {
                    (Some(&rest[i + 1..j]), j)
                } else {
                    (None, i + 1)
                }
            };
            if let Some(name) = name {
                out.push_str(&rest[lit_start..i]);
                push_var(
                    &mut out,
                    platform,
                    name,
                    &rest[i..end],
                    &rest[end..],
                    &mut complete,
                );
                lit_start = end;
            }
            i = end;
            continue;
        }
        if b == b'%'
            && os == OsFamily::Win32
            && let Some(close) = rest[i + 1..].find('%')
        {
            let name = &rest[i + 1..i + 1 + close];
            let end = i + 1 + close + 1;
            if name.is_empty() {
                out.push_str(&rest[lit_start..i]);
                out.push('%');
                lit_start = end;
                i = end;
                continue;
            }
            if name.chars().all(is_win_name_char) {
                out.push_str(&rest[lit_start..i]);
                push_var(
                    &mut out,
                    platform,
                    name,
                    &rest[i..end],
                    &rest[end..],
                    &mut complete,
                );
                lit_start = end;
                i = end;
                continue;
            }
        }
        i += 1;
    }
    out.push_str(&rest[lit_start..]);
    Expanded {
        text: out,
        complete,
    }
}

/// Whether `path` is absolute for `os`: `C:\` / `C:/` on win32, `/`
/// elsewhere. Network paths are never absolute here: presence checks must
/// not reach the network. On win32 that is any path starting with two
/// separators (`\\server`, `//server`); on linux/darwin only exactly two
/// leading `/` before a name (`//server/share`, which POSIX leaves to the
/// system) — `///usr/bin/sh` is `/usr/bin/sh` and `\` is an ordinary
/// file-name character (`/\srv\x` is a file in `/`).
pub fn is_absolute(path: &str, os: OsFamily) -> bool {
    let b = path.as_bytes();
    match os {
        OsFamily::Win32 => {
            if b.len() >= 2 && matches!(b[0], b'/' | b'\\') && matches!(b[1], b'/' | b'\\') {
                return false;
            }
            b.len() >= 3
                && b[0].is_ascii_alphabetic()
                && b[1] == b':'
                && matches!(b[2], b'\\' | b'/')
        }
        _ => b.first() == Some(&b'/') && !is_posix_network_path(path),
    }
}

/// `//name…` with exactly two leading slashes: the one form POSIX leaves
/// implementation-defined (a network path on some systems). Three or more
/// leading slashes are the root.
pub fn is_posix_network_path(path: &str) -> bool {
    let b = path.as_bytes();
    b.len() >= 3 && b[0] == b'/' && b[1] == b'/' && b[2] != b'/'
}

/// The separator reported paths use on `os`.
pub fn separator(os: OsFamily) -> char {
    if os == OsFamily::Win32 { '\\' } else { '/' }
}

/// Puts a path in the native form of `os` (win32: every `/` becomes `\`).
/// [`native`] of a path already owned: no copy on POSIX families.
pub fn native_owned(path: String, os: OsFamily) -> String {
    if os == OsFamily::Win32 && path.contains('/') {
        path.replace('/', "\\")
    } else {
        path
    }
}

pub fn native(path: &str, os: OsFamily) -> String {
    if os == OsFamily::Win32 {
        path.replace('/', "\\")
    } else {
        path.to_string()
    }
}

/// Joins `rel` under `base` with the separator of `os` (no normalisation
/// beyond that).
pub fn join(base: &str, rel: &str, os: OsFamily) -> String {
    let win = os == OsFamily::Win32;
    let base_ends = base.ends_with('/') || (win && base.ends_with('\\'));
    // Built in one buffer: this runs for every candidate looked at.
    let mut out = String::with_capacity(base.len() + rel.len() + 1);
    out.push_str(base);
    if !base_ends {
        out.push(separator(os));
    }
    if win {
        out.extend(rel.chars().map(|c| if c == '/' { '\\' } else { c }));
    } else {
        out.push_str(rel);
    }
    out
}

/// Appends the value of variable `name` (joined to `next`, the text after
/// the reference, without doubling a separator), or `raw` (the reference as
/// written) when it is unset — which leaves the expansion incomplete.
fn push_var(
    out: &mut String,
    platform: &dyn Platform,
    name: &str,
    raw: &str,
    next: &str,
    complete: &mut bool,
) {
    match platform.env_var(name) {
        Some(v) => push_joined(out, &v, next, platform.os_family()),
        None => {
            *complete = false;
            out.push_str(raw);
        }
    }
}

/// Appends `value` (a home folder or a variable's value) before `next`: when
/// `next` starts with a separator, the value's trailing separators are
/// dropped so the two do not make `//` (which a POSIX reader could take for
/// a network path). A value that is only separators then adds nothing: `/`
/// before `/usr` is `/usr`.
fn push_joined(out: &mut String, value: &str, next: &str, os: OsFamily) {
    let is_sep = |c: char| c == '/' || (os == OsFamily::Win32 && c == '\\');
    if next.starts_with(is_sep) {
        out.push_str(value.trim_end_matches(is_sep));
    } else {
        out.push_str(value);
    }
}
