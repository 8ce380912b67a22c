//! The declaration parser (`docs/declarations.md` §2).
//!
//! Input is an already-decoded value (YAML, JSON, or the mapping the
//! component loader builds from the WIT records) plus a `where` label. Every
//! rule of docs/declarations.md §2 runs in that order and the first failing
//! check wins; wasmgate's decisions (`docs/declarations.md` §2, decisions 1–7) refine it:
//! unknown keys are errors at every level (checked right after "must be a
//! mapping", as §2.1 and §2.6 already do for `app` and `requires`), a lone
//! location mapping is a list of one, `plist` needs `presence: bundle`,
//! `%VAR%` is refused under linux/darwin, `//server/share` everywhere, an
//! unquoted numeric `min_version` is told to quote it, type confusion is an
//! ordinary error with its field path, and the hardened liveness rules apply.
//! The parser never touches files.

use super::kinds::{LocationKindSpec, location_kind_by_name, location_kind_names};
use super::model::{
    AppDef, Declaration, GpuVendor, Liveness, Location, LocationKind, OsFamily, Presence, Requires,
    VersionKind,
};
use crate::validation::{
    Cursor, Problem, did_you_mean, falsy_or_text, got_type, hint_for, is_falsy, key_text, must_be,
    must_be_got, must_be_noted, quote_the_number, quoted_list, unknown_keys_message,
};
use std::fmt;
use crate::document::{Mapping, Value};

/// A declaration that breaks a rule of `docs/declarations.md` §2. Displays as
/// `<where>: <field path> [(<value>)] <what is wrong>`, e.g.
/// `plugin.yaml server 'blender': app.linux.location[0].name ("bin/blender") must be a bare name`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", ProblemLine::new(.where_, .path, .value, .message))]
pub struct DeclarationError {
    /// Where the declaration came from (`plugins/x/plugin.yaml server 'x'`).
    pub where_: String,
    /// The field path (`app.linux.location[0].name`, `requires.min_version`).
    pub path: String,
    /// What is wrong, with a hint where one helps.
    pub message: String,
    /// The offending value as shown after the path (quoted, escaped, cut;
    /// `crate::validation::echo_at`), when there is one to show.
    pub value: Option<String>,
}

/// How a problem with a field path reads: `<where>: <path> [(<value>)]
/// <message>`, or `<where>: <message>` when the path is empty (a problem
/// of the whole document). One rendering for declaration and manifest
/// errors, so both read alike.
pub(crate) struct ProblemLine<'a> {
    where_: &'a str,
    path: &'a str,
    value: Option<&'a str>,
    message: &'a str,
}

impl<'a> ProblemLine<'a> {
    pub(crate) fn new(
        where_: &'a str,
        path: &'a str,
        value: &'a Option<String>,
        message: &'a str,
    ) -> Self {
        ProblemLine {
            where_,
            path,
            value: value.as_deref(),
            message,
        }
    }
}

/// Longest source label (`where`) a problem line shows, in characters.
pub(crate) const WHERE_MAX_CHARS: usize = 512;
/// Longest field path a problem line shows, in characters.
pub(crate) const PATH_MAX_CHARS: usize = 256;
/// Longest message a problem line shows, in characters.
pub(crate) const MESSAGE_MAX_CHARS: usize = 4096;

impl fmt::Display for ProblemLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ProblemLine {
            where_,
            path,
            value,
            message,
        } = self;
        // Every part is bounded where it is made (echoed values and names
        // are cut at ECHO_MAX_CHARS); these caps keep one line one screen
        // whatever a future message forgets.
        use crate::terminal::cut_chars;
        let where_ = cut_chars(where_, WHERE_MAX_CHARS);
        let path = cut_chars(path, PATH_MAX_CHARS);
        // A message may quote the value it is about (`got '…'`): a URL's
        // password or query values in it are not shown.
        let message = cut_chars(&crate::secret::redact_urls(message), MESSAGE_MAX_CHARS);
        match (path.is_empty(), value) {
            (true, _) => write!(f, "{where_}: {message}"),
            (false, Some(v)) => write!(f, "{where_}: {path} ({v}) {message}"),
            (false, None) => write!(f, "{where_}: {path} {message}"),
        }
    }
}

/// Options that depend on where a declaration comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ParseOptions {
    /// Accept `version.kind: custom`. Only a component can read its own
    /// version (its `probe-version` export), so YAML/JSON sources pass `false`.
    pub allow_custom_version: bool,
    /// The source is JSON (`plugin.json`): advice on quoting a number is
    /// given in JSON's syntax, not YAML's.
    pub json: bool,
}

/// The first failing rule wins (docs/declarations.md §2): each step returns
/// its problem at once, at the cursor's path.
type R<T> = Result<T, Problem>;

/// The problem at the cursor's path, as the step's result.
fn fail<T>(cur: &Cursor<'_>, message: impl Into<String>) -> R<T> {
    Err(cur.problem(message))
}

/// Parses one server's `app:` and `requires:` blocks into a [`Declaration`].
///
/// `server` is the configured server name (copied into every
/// `AppDef::app_id`); `raw_app` / `raw_requires` are the decoded blocks
/// (`None` = key absent, same as null); `where_` labels every error.
///
/// # Errors
/// The first failing rule of docs/declarations.md §2 as a [`DeclarationError`].
pub fn parse_declaration(
    server: &str,
    raw_app: Option<&Value>,
    raw_requires: Option<&Value>,
    where_: &str,
    opts: ParseOptions,
) -> Result<Declaration, DeclarationError> {
    let wrap = |Problem { path, message }: Problem| {
        // The value at the path, looked up in the block the path starts in.
        let block = if path.starts_with("requires") {
            raw_requires
        } else {
            raw_app
        };
        let mut root = Mapping::new();
        let head = if path.starts_with("requires") {
            "requires"
        } else {
            "app"
        };
        if let Some(b) = block {
            root.insert(Value::String(head.into()), b.clone());
        }
        DeclarationError {
            where_: where_.to_string(),
            value: crate::validation::echo_at(&Value::Mapping(root), &path),
            path,
            message,
        }
    };
    // The app block is parsed completely before `requires` (docs/declarations.md §2).
    let mut cur = Cursor::new();
    cur.key("app");
    let app = parse_app(server, raw_app.unwrap_or(&Value::Null), opts, &mut cur).map_err(wrap)?;
    cur.pop();
    cur.key("requires");
    let requires = parse_requires(
        raw_requires.unwrap_or(&Value::Null),
        app.as_deref(),
        opts,
        &mut cur,
    )
    .map_err(wrap)?;
    Ok(Declaration {
        name: server.to_string(),
        app,
        requires,
    })
}

// ---------------------------------------------------------------------------
// app (docs/declarations.md §2.1)
// ---------------------------------------------------------------------------

const OS_KEYS: [&str; 3] = ["win32", "darwin", "linux"];

/// `cur` is at `app`.
fn parse_app(
    server: &str,
    v: &Value,
    opts: ParseOptions,
    cur: &mut Cursor<'static>,
) -> R<Option<Vec<AppDef>>> {
    let m = match v {
        Value::Null => return Ok(None),
        Value::Mapping(m) => m,
        other => {
            return fail(cur, must_be("a mapping", other));
        }
    };
    // Unknown OS keys are checked before emptiness.
    let mut unknown: Vec<String> = m
        .keys()
        .filter(|k| !matches!(k, Value::String(s) if OsFamily::parse(s).is_some()))
        .map(key_text)
        .collect();
    if !unknown.is_empty() {
        unknown.sort();
        let mut msg = format!(
            "has unknown OS keys {}; use ('win32', 'darwin', 'linux')",
            quoted_list(&unknown)
        );
        if let Some(hint) = hint_for(&unknown, &OS_KEYS) {
            msg.push_str(&format!("; {hint}"));
        }
        return fail(cur, msg);
    }
    if m.is_empty() {
        return fail(cur, "needs at least one OS block");
    }
    let mut defs = Vec::with_capacity(m.len());
    for (k, block) in m {
        // Every key is a known OS family here (checked above).
        let os = match k {
            Value::String(s) => OsFamily::parse(s),
            _ => None,
        };
        let Some(os) = os else {
            return fail(cur, format!("has unknown OS keys {}", quoted_list(&[key_text(k)])));
        };
        cur.key(os.as_str());
        defs.push(parse_os_block(server, os, block, opts, cur)?);
        cur.pop();
    }
    Ok(Some(defs))
}

// ---------------------------------------------------------------------------
// One OS block (docs/declarations.md §2.2)
// ---------------------------------------------------------------------------

const OS_BLOCK_KEYS: [&str; 4] = ["presence", "location", "version", "liveness"];
const VERSION_KEYS: [&str; 2] = ["kind", "display_name_prefix"];
const LIVENESS_KEYS: [&str; 6] = [
    "kind",
    "path",
    "pid_key",
    "url_key",
    "token_key",
    "endpoint_path",
];

fn check_keys(m: &Mapping, cur: &Cursor<'_>, allowed: &[&str]) -> R<()> {
    match unknown_keys_message(m, allowed) {
        Some(msg) => fail(cur, msg),
        None => Ok(()),
    }
}

/// `cur` is at `app.<os>`.
fn parse_os_block(
    server: &str,
    os: OsFamily,
    v: &Value,
    opts: ParseOptions,
    cur: &mut Cursor<'static>,
) -> R<AppDef> {
    let Value::Mapping(m) = v else {
        return fail(cur, must_be("a mapping", v));
    };
    check_keys(m, cur, &OS_BLOCK_KEYS)?;

    // 2. presence
    let presence = match m.get("presence") {
        Some(Value::String(s)) if s == "executable" => Presence::Executable,
        Some(Value::String(s)) if s == "bundle" => Presence::Bundle,
        other => {
            let mut msg = "must be one of ('executable', 'bundle')".to_string();
            match other {
                None => msg.push_str(" (it is missing)"),
                Some(Value::String(s)) => {
                    if let Some(c) = did_you_mean(s, &["executable", "bundle"]) {
                        msg.push_str(&format!("; did you mean '{c}'?"));
                    }
                }
                Some(o) => msg.push_str(&got_type(o)),
            }
            return Err(cur.problem_at("presence", msg));
        }
    };

    // 3. location
    cur.key("location");
    let locations = match m.get("location") {
        Some(Value::Sequence(items)) => {
            if items.is_empty() {
                return fail(cur, "is required");
            }
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                cur.index(i);
                out.push(parse_location_item(item, os, presence, cur)?);
                cur.pop();
            }
            out
        }
        // Decision 2: a lone mapping is a list of one.
        Some(item @ (Value::String(_) | Value::Mapping(_))) => {
            vec![parse_location_item(item, os, presence, cur)?]
        }
        None | Some(Value::Null) => return fail(cur, "is required"),
        Some(other) => {
            return fail(
                cur,
                format!(
                    "is required: a path, a location mapping or a list of them{}",
                    got_type(other)
                ),
            );
        }
    };
    cur.pop();

    // 4. version
    cur.key("version");
    let (version_kind, version_arg) = match m.get("version") {
        None => (VersionKind::None, String::new()),
        Some(v) if is_falsy(v) => (VersionKind::None, String::new()),
        Some(Value::Mapping(vm)) => parse_version(vm, os, presence, cur, opts)?,
        Some(other) => return fail(cur, must_be("a mapping", other)),
    };
    cur.pop();

    // 5. liveness
    cur.key("liveness");
    let liveness = match m.get("liveness") {
        None => Liveness::None,
        Some(v) if is_falsy(v) => Liveness::None,
        Some(Value::Mapping(lm)) => parse_liveness(lm, os, cur)?,
        Some(other) => {
            return fail(cur, must_be("a mapping", other));
        }
    };
    cur.pop();

    Ok(AppDef {
        app_id: server.to_string(),
        os_family: os,
        presence,
        locations,
        version_kind,
        version_arg,
        liveness,
    })
}

/// The version kinds a source may name (`custom` only for a component).
fn version_kind_names(opts: ParseOptions) -> &'static [&'static str] {
    const ALL: [&str; 5] = [
        "none",
        "pe_resource",
        "plist",
        "uninstall_registry",
        "custom",
    ];
    if opts.allow_custom_version {
        &ALL
    } else {
        &ALL[..4]
    }
}

/// `cur` is at `app.<os>.version`.
fn parse_version(
    vm: &Mapping,
    os: OsFamily,
    presence: Presence,
    cur: &Cursor<'_>,
    opts: ParseOptions,
) -> R<(VersionKind, String)> {
    check_keys(vm, cur, &VERSION_KEYS)?;
    let kind_fail = |msg: String| Err(cur.problem_at("kind", msg));
    let names = version_kind_names(opts);
    // `kind: null` is a type error (a kind was meant and none was written);
    // only a missing `kind` means none.
    let kind = match vm.get("kind") {
        None => VersionKind::None,
        Some(Value::String(s)) => match s.as_str() {
            "none" => VersionKind::None,
            "pe_resource" => VersionKind::PeResource,
            "plist" => VersionKind::Plist,
            "uninstall_registry" => VersionKind::UninstallRegistry,
            "custom" if opts.allow_custom_version => VersionKind::Custom,
            "custom" => {
                return kind_fail(
                    "'custom' is only valid in a component's manifest (its probe-version export reads the version)".into(),
                );
            }
            other => {
                let mut msg = format!("must be one of {}", quoted_list(names));
                if let Some(c) = did_you_mean(other, names) {
                    msg.push_str(&format!("; did you mean '{c}'?"));
                }
                return kind_fail(msg);
            }
        },
        Some(other) => {
            return kind_fail(format!(
                "must be one of {}{}",
                quoted_list(names),
                got_type(other)
            ));
        }
    };
    // OS restriction of the version kind.
    let only = match kind {
        VersionKind::PeResource | VersionKind::UninstallRegistry => Some(OsFamily::Win32),
        VersionKind::Plist => Some(OsFamily::Darwin),
        VersionKind::None | VersionKind::Custom => None,
    };
    if let Some(only) = only
        && only != os
    {
        return kind_fail(format!(
            "'{}' is only valid under app.{only}",
            kind.as_str()
        ));
    }
    // Decision 3: a plist is read from a bundle.
    if kind == VersionKind::Plist && presence != Presence::Bundle {
        return kind_fail(format!("'plist' needs app.{os}.presence bundle"));
    }
    let dp = "display_name_prefix";
    let arg = falsy_or_text(vm.get(dp))
        .map_err(|got| cur.problem_at(dp, must_be_got("a string", got)))?;
    if kind == VersionKind::UninstallRegistry && arg.is_empty() {
        return Err(cur.problem_at(dp, "is required for uninstall_registry"));
    }
    Ok((kind, arg))
}

/// `cur` is at `app.<os>.liveness`.
fn parse_liveness(lm: &Mapping, os: OsFamily, cur: &mut Cursor<'static>) -> R<Liveness> {
    check_keys(lm, cur, &LIVENESS_KEYS)?;
    let server_json = match lm.get("kind") {
        None => false,
        Some(Value::String(s)) if s == "server_json" => true,
        Some(Value::String(s)) if s == "none" => false,
        Some(other) => {
            let mut msg = "must be one of ('server_json', 'none')".to_string();
            if let Value::String(s) = other {
                if let Some(c) = did_you_mean(s, &["server_json", "none"]) {
                    msg.push_str(&format!("; did you mean '{c}'?"));
                }
            } else {
                msg.push_str(&got_type(other));
            }
            return Err(cur.problem_at("kind", msg));
        }
    };
    let text = |key: &str, cur: &Cursor<'_>| -> R<String> {
        falsy_or_text(lm.get(key)).map_err(|got| cur.problem_at(key, must_be_got("a string", got)))
    };
    let raw_path = text("path", cur)?;
    if server_json && raw_path.is_empty() {
        return Err(cur.problem_at("path", "is required for server_json"));
    }
    // Hardened (line B): the path is stored stripped and must be rooted.
    let path = raw_path.trim().to_string();
    if !raw_path.is_empty() {
        cur.key("path");
        check_rooted(&path, os, cur, false)?;
        cur.pop();
    }
    let mut endpoint_path = text("endpoint_path", cur)?;
    if endpoint_path.is_empty() {
        endpoint_path = "/mcp".to_string();
    }
    if !is_plain_endpoint_path(&endpoint_path) {
        return Err(cur.problem_at(
            "endpoint_path",
            "must be a plain path starting with '/' (letters, digits and . _ ~ - /; no userinfo, query, fragment, scheme, whitespace or '..' segment)",
        ));
    }
    let mut keys = Vec::with_capacity(3);
    for (key, default) in [
        ("pid_key", "pid"),
        ("url_key", "http"),
        ("token_key", "token"),
    ] {
        let v = text(key, cur)?;
        if v.is_empty() {
            keys.push(default.to_string());
        } else if is_simple_key(&v) {
            keys.push(v);
        } else {
            return Err(cur.problem_at(
                key,
                "must be a simple key name (letters, digits, '_', '.', '-')",
            ));
        }
    }
    if !server_json {
        // Kind none: the fields were checked, nothing is probed.
        return Ok(Liveness::None);
    }
    let token_key = keys.pop().unwrap_or_default();
    let url_key = keys.pop().unwrap_or_default();
    let pid_key = keys.pop().unwrap_or_default();
    Ok(Liveness::ServerJson {
        path,
        pid_key,
        url_key,
        token_key,
        endpoint_path,
    })
}

/// `/[A-Za-z0-9._~/-]*` with no `..` segment (hardened rule, docs/declarations.md §2.2).
pub fn is_plain_endpoint_path(s: &str) -> bool {
    s.starts_with('/')
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._~/-".contains(&b))
        && !s.split('/').any(|seg| seg == "..")
}

/// `[A-Za-z0-9_.-]+` (hardened rule for `pid_key` / `url_key` / `token_key`).
pub fn is_simple_key(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
}

// ---------------------------------------------------------------------------
// Locations (docs/declarations.md §2.3–2.5)
// ---------------------------------------------------------------------------

/// `cur` is at the item (`app.<os>.location[i]`, or `app.<os>.location`
/// for a lone one).
fn parse_location_item(
    v: &Value,
    os: OsFamily,
    presence: Presence,
    cur: &Cursor<'_>,
) -> R<Location> {
    match v {
        Value::String(s) => {
            let t = s.trim();
            if t.is_empty() {
                return fail(cur, "is required");
            }
            check_rooted(t, os, cur, true)?;
            Ok(Location {
                kind: LocationKind::Path,
                value: t.to_string(),
                file: String::new(),
            })
        }
        Value::Mapping(m) => {
            let spec = match m.get("kind") {
                Some(Value::String(k)) => location_kind_by_name(k),
                _ => None,
            };
            let Some(spec) = spec else {
                return fail(cur, kind_help(m.get("kind")));
            };
            parse_kind_location(m, spec, os, presence, cur)
        }
        other => fail(cur, format!("{}{}", kind_help(None), got_type(other))),
    }
}

fn kind_help(kind: Option<&Value>) -> String {
    let names = location_kind_names();
    let mut msg = format!(
        "must be a path or a mapping with kind one of {}",
        quoted_list(&names)
    );
    if let Some(Value::String(s)) = kind
        && let Some(c) = did_you_mean(s, &names)
    {
        msg.push_str(&format!("; did you mean '{c}'?"));
    }
    msg
}

fn parse_kind_location(
    m: &Mapping,
    spec: &LocationKindSpec,
    os: OsFamily,
    presence: Presence,
    cur: &Cursor<'_>,
) -> R<Location> {
    let kind = spec.kind.as_str();
    let allowed = ["kind", spec.key, "file"];
    let allowed = if spec.needs_file {
        &allowed[..]
    } else {
        &allowed[..2]
    };
    check_keys(m, cur, allowed)?;
    // OS restriction before presence (docs/declarations.md §2.3 rule 2).
    if let Some(only) = spec.only_under
        && only != os
    {
        return fail(cur, format!("kind '{kind}' is only valid under app.{only}"));
    }
    if presence != spec.presence {
        return fail(
            cur,
            format!(
                "kind '{kind}' needs app.{os}.presence {}",
                spec.presence.as_str()
            ),
        );
    }
    let Some(value) = relative_name(m.get(spec.key), false) else {
        return Err(cur.problem_at(spec.key, "must be a bare name (no folders, drive or URL)"));
    };
    let file = if spec.needs_file {
        match relative_name(m.get("file"), true) {
            Some(f) => f,
            None => {
                return Err(cur.problem_at(
                    "file",
                    "must be a relative path inside the install folder (e.g. bin/app.exe)",
                ));
            }
        }
    } else {
        String::new()
    };
    Ok(Location {
        kind: spec.kind,
        value,
        file,
    })
}

/// Bare names and relative files (docs/declarations.md §2.5): a non-empty string without
/// `://`; after stripping and turning `\` into `/`, no `..` or empty segment
/// and no `:` in the first; a bare name is one segment. Returns the stripped text.
pub(crate) fn relative_name(v: Option<&Value>, allow_dirs: bool) -> Option<String> {
    let Some(Value::String(s)) = v else {
        return None;
    };
    let t = s.trim();
    if t.is_empty() || t.contains("://") {
        return None;
    }
    let norm = backslashes_to_slashes(t);
    let mut segs = 0;
    for (i, seg) in norm.split('/').enumerate() {
        if seg.is_empty() || seg == ".." || (i == 0 && seg.contains(':')) {
            return None;
        }
        segs += 1;
    }
    if !allow_dirs && segs != 1 {
        return None;
    }
    Some(t.to_string())
}

/// `t` with every `\\` turned into `/`, copied only when it has one.
fn backslashes_to_slashes(t: &str) -> std::borrow::Cow<'_, str> {
    if t.contains('\\') {
        std::borrow::Cow::Owned(t.replace('\\', "/"))
    } else {
        std::borrow::Cow::Borrowed(t)
    }
}

/// Rootedness (docs/declarations.md §2.4) plus decision 4, for a stripped non-empty
/// string. `location` adds the no-`**` rule of location strings.
fn check_rooted(t: &str, os: OsFamily, cur: &Cursor<'_>, location: bool) -> R<()> {
    // `\` separates only on win32; on linux/darwin it is a file-name
    // character (`/\srv\x` is a file in `/`).
    let norm = if os == OsFamily::Win32 {
        backslashes_to_slashes(t)
    } else {
        std::borrow::Cow::Borrowed(t)
    };
    // Decision 4: network paths are refused on every OS (wasmgate never
    // looks at the network). On linux/darwin only exactly two leading `/`
    // make one; `///usr/bin/sh` is the root's `usr/bin/sh`.
    let network = match os {
        OsFamily::Win32 => norm.starts_with("//"),
        _ => crate::resolver::expand::is_posix_network_path(&norm),
    };
    if network {
        return fail(
            cur,
            "must be absolute, not a network path (//server/share is not allowed)",
        );
    }
    // Decision 4: %VAR% never expands under linux/darwin.
    if os != OsFamily::Win32 && t.starts_with('%') {
        return fail(
            cur,
            format!("must be absolute: %VAR% never expands under app.{os}; use $VAR instead"),
        );
    }
    // Most paths have no `..` at all: one substring search answers them.
    let no_dotdot = !norm.contains("..") || !norm.split('/').any(|s| s == "..");
    let no_scheme = !t.contains("://");
    let b = t.as_bytes();
    let rooted = t.starts_with(['~', '%', '$'])
        || match os {
            OsFamily::Win32 => {
                b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && b[2] == b'/'
                    || b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && b[2] == b'\\'
            }
            _ => t.starts_with('/'),
        };
    let no_globstar = !location || !t.contains("**");
    if no_dotdot && no_scheme && rooted && no_globstar {
        return Ok(());
    }
    let start = match os {
        OsFamily::Win32 => "must be absolute (C:\\...) or start with ~ / %VAR% / $VAR",
        _ => "must be absolute (/...) or start with ~ / $VAR",
    };
    let without = if location {
        "without '..', '**' or a URL scheme"
    } else {
        "without '..' or a URL scheme"
    };
    fail(cur, format!("{start}, {without}"))
}

// ---------------------------------------------------------------------------
// requires (docs/declarations.md §2.6)
// ---------------------------------------------------------------------------

const REQUIRES_KEYS: [&str; 3] = ["app", "min_version", "gpu"];

/// `cur` is at `requires`.
fn parse_requires(
    v: &Value,
    app: Option<&[AppDef]>,
    opts: ParseOptions,
    cur: &mut Cursor<'static>,
) -> R<Requires> {
    let m = match v {
        Value::Null => return Ok(Requires::default()),
        Value::Mapping(m) => m,
        other => {
            return fail(cur, must_be("a mapping", other));
        }
    };
    check_keys(m, cur, &REQUIRES_KEYS)?;

    let gpu = match m.get("gpu") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s == "nvidia" => Some(GpuVendor::Nvidia),
        Some(other) => {
            let mut msg = "must be one of ['nvidia']".to_string();
            match other {
                Value::String(s) if s.eq_ignore_ascii_case("nvidia") => {
                    msg.push_str("; did you mean 'nvidia'?")
                }
                Value::String(_) => {}
                o => msg.push_str(&got_type(o)),
            }
            return Err(cur.problem_at("gpu", msg));
        }
    };

    let needs_app = match m.get("app") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(cur.problem_at("app", must_be_noted("a boolean", "true or false", other)));
        }
    };
    if needs_app && app.is_none() {
        return Err(cur.problem_at("app", "is true but the declaration has no 'app' block"));
    }
    cur.key("min_version");

    let min_version = match m.get("min_version") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if is_min_version(s) => Some(s.clone()),
        // Decision 5: YAML read `2.3` as a number.
        Some(Value::Number(n)) => {
            return fail(
                cur,
                quote_the_number("a dotted numeric string", "min_version", n, opts.json),
            );
        }
        Some(other) => {
            let got = match other {
                Value::String(_) => String::new(),
                o => got_type(o),
            };
            return fail(
                cur,
                format!(
                    "must be a dotted numeric string like \"2.3\" (ASCII digits and dots, each part 1 to 9 digits){got}"
                ),
            );
        }
    };
    if min_version.is_some() {
        if !needs_app {
            return fail(cur, "needs requires.app: true");
        }
        if let Some(defs) = app {
            let multi = defs.len() > 1;
            let mut sorted: Vec<&AppDef> = defs.iter().collect();
            sorted.sort_by_key(|d| d.os_family.as_str());
            if let Some(d) = sorted.iter().find(|d| {
                d.version_kind == VersionKind::None && !(d.os_family == OsFamily::Linux && multi)
            }) {
                return fail(
                    cur,
                    format!(
                        "needs a version source under app.{} (kind is none)",
                        d.os_family
                    ),
                );
            }
        }
    }

    Ok(Requires {
        app: needs_app,
        min_version,
        gpu,
    })
}

/// The `min_version` grammar (`docs/declarations.md` §4): ASCII digits and dots, each part 1–9
/// digits (`2`, `2.3`, `2.3.0.12594`).
pub fn is_min_version(s: &str) -> bool {
    s.split('.')
        .all(|p| (1..=9).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit()))
}

// ---------------------------------------------------------------------------
// Rendering back to the source schema
// ---------------------------------------------------------------------------

// Rendering back into the source schema serves the parser's round-trip
// tests only; `wasmgate check` prints the serde form of the model.
#[cfg(any(test, feature = "internals"))]
fn s(v: &str) -> Value {
    Value::String(v.to_string())
}

/// Renders a declaration back into the source schema (`app:` and `requires:`
/// blocks as written in a `plugin.yaml`). Parsing the result with the same
/// server name gives the same [`Declaration`] (round-trip property).
#[cfg(any(test, feature = "internals"))]
pub fn render_declaration(decl: &Declaration) -> (Option<Value>, Value) {
    let app = decl.app.as_ref().map(|defs| {
        let mut m = Mapping::new();
        for d in defs {
            m.insert(s(d.os_family.as_str()), render_app_def(d));
        }
        Value::Mapping(m)
    });
    let mut r = Mapping::new();
    r.insert(s("app"), Value::Bool(decl.requires.app));
    if let Some(v) = &decl.requires.min_version {
        r.insert(s("min_version"), s(v));
    }
    if let Some(g) = decl.requires.gpu {
        r.insert(s("gpu"), s(g.as_str()));
    }
    (app, Value::Mapping(r))
}

#[cfg(any(test, feature = "internals"))]
fn render_app_def(d: &AppDef) -> Value {
    let mut m = Mapping::new();
    m.insert(s("presence"), s(d.presence.as_str()));
    let locs: Vec<Value> = d
        .locations
        .iter()
        .map(|l| match super::kinds::location_kind_spec(l.kind) {
            None => s(&l.value),
            Some(spec) => {
                let mut lm = Mapping::new();
                lm.insert(s("kind"), s(l.kind.as_str()));
                lm.insert(s(spec.key), s(&l.value));
                if spec.needs_file {
                    lm.insert(s("file"), s(&l.file));
                }
                Value::Mapping(lm)
            }
        })
        .collect();
    m.insert(s("location"), Value::Sequence(locs));
    let mut vm = Mapping::new();
    vm.insert(s("kind"), s(d.version_kind.as_str()));
    if !d.version_arg.is_empty() {
        vm.insert(s("display_name_prefix"), s(&d.version_arg));
    }
    m.insert(s("version"), Value::Mapping(vm));
    let mut lv = Mapping::new();
    match &d.liveness {
        Liveness::None => {
            lv.insert(s("kind"), s("none"));
        }
        Liveness::ServerJson {
            path,
            pid_key,
            url_key,
            token_key,
            endpoint_path,
        } => {
            lv.insert(s("kind"), s("server_json"));
            lv.insert(s("path"), s(path));
            lv.insert(s("pid_key"), s(pid_key));
            lv.insert(s("url_key"), s(url_key));
            lv.insert(s("token_key"), s(token_key));
            lv.insert(s("endpoint_path"), s(endpoint_path));
        }
    }
    m.insert(s("liveness"), Value::Mapping(lv));
    Value::Mapping(m)
}
