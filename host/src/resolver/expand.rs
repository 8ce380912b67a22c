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
/// `~user` is not expanded (no user database on a simulated host) and marks
/// the result incomplete.
pub fn expand(input: &str, platform: &dyn Platform) -> Expanded {
    let os = platform.os_family();
    let mut complete = true;
    let mut out = String::with_capacity(input.len() + 16);
    let mut rest = input;
    if let Some(after) = input.strip_prefix('~') {
        let at_sep = after.is_empty()
            || after.starts_with('/')
            || (os == OsFamily::Win32 && after.starts_with('\\'));
        if at_sep {
            match platform.home().filter(|h| !h.is_empty()) {
                Some(home) => {
                    out.push_str(&home);
                    rest = after;
                }
                None => complete = false,
            }
        } else {
            complete = false;
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
                push_var(&mut out, platform, name, &rest[i..end], &mut complete);
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
                push_var(&mut out, platform, name, &rest[i..end], &mut complete);
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

/// Whether `path` is absolute for `os`: `C:\` / `C:/` on win32, `/` elsewhere.
/// Network paths (`\\server`, `//server`) are never absolute here: presence
/// checks must not reach the network.
pub fn is_absolute(path: &str, os: OsFamily) -> bool {
    let b = path.as_bytes();
    if b.len() >= 2 && (b[0] == b'/' || b[0] == b'\\') && (b[1] == b'/' || b[1] == b'\\') {
        return false;
    }
    match os {
        OsFamily::Win32 => {
            b.len() >= 3
                && b[0].is_ascii_alphabetic()
                && b[1] == b':'
                && matches!(b[2], b'\\' | b'/')
        }
        _ => b.first() == Some(&b'/'),
    }
}

/// The separator reported paths use on `os`.
pub fn separator(os: OsFamily) -> char {
    if os == OsFamily::Win32 { '\\' } else { '/' }
}

/// Puts a path in the native form of `os` (win32: every `/` becomes `\`).
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

/// Appends the value of variable `name`, or `raw` (the reference as
/// written) when it is unset — which leaves the expansion incomplete.
fn push_var(out: &mut String, platform: &dyn Platform, name: &str, raw: &str, complete: &mut bool) {
    match platform.env_var(name) {
        Some(v) => out.push_str(&v),
        None => {
            *complete = false;
            out.push_str(raw);
        }
    }
}
