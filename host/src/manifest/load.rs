//! Reading manifests from files: `plugin.yaml`, the Hermes-style
//! `plugin.json` envelope (docs/declarations.md §2a), and a `--config` file's
//! `mcp_servers`. Each decodes its file into the manifest document
//! (`crate::document`) and runs
//! the one validator of [`super::schema`], so the same content gives the same
//! declaration and the same errors whatever the source.

use super::schema::{
    ManifestContext, ManifestError, ManifestResult, ServersResult, SkillSource,
    manifest_from_value, plugin_dir_of, server_from_value, servers_from_value,
};
use crate::platform::ReadError;
use crate::validation::{Problem, got_type, must_be, unknown_keys_message};
use std::path::Path;
use crate::document::{Keep, Mapping, Pruned, Value};

/// Largest manifest or config file read, in bytes (4 MiB).
pub const MAX_MANIFEST_BYTES: u64 = 4 * 1024 * 1024;

/// Largest config file read, in bytes (64 MiB): wasmgate's own `--config`
/// and the agents' files that `--config`, `import` and `setup` read. The
/// user's own files, not a plugin's, and an agent's may be large (Claude
/// Code keeps its history per project in `~/.claude.json`).
pub const MAX_CONFIG_BYTES: u64 = 64 * 1024 * 1024;
/// Largest SKILL.md read, in bytes (1 MiB).
pub const MAX_SKILL_BYTES: u64 = 1024 * 1024;

/// The `extensions` key of a Hermes `plugin.json` holding declarations.
pub const HERMES_EXTENSION: &str = "com.nousresearch.hermes";

/// Reads at most `limit` bytes of UTF-8 text; `Err` is the message. A
/// link the user named is followed (a dotfile manager links
/// `~/.claude.json`); a FIFO or device is refused without blocking.
pub(crate) fn read_bounded(path: &Path, limit: u64) -> Result<String, String> {
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        // A FIFO (or a device) named as the config would block the open or
        // the read without end: opened without waiting, then refused.
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let f = opts
        .open(path)
        .map_err(|e| format!("cannot be read: {e}"))?;
    let len = match f.metadata() {
        Ok(m) if m.is_file() => m.len(),
        Ok(m) if m.is_dir() => return Err("cannot be read: it is a folder".into()),
        Ok(_) => {
            return Err("is refused: it is not a regular file (a FIFO, socket or device)".into());
        }
        Err(e) => return Err(format!("cannot be read: {e}")),
    };
    let buf = crate::platform::read_bounded(f, limit, len).map_err(|e| match e {
        ReadError::TooLarge { .. } => format!("is larger than {limit} bytes"),
        e => format!("cannot be read: {e}"),
    })?;
    String::from_utf8(buf).map_err(|_| "is not UTF-8 text".to_string())
}

/// [`read_bounded`] for a plugin's own file: inside its folder, a regular
/// file, at most `limit` bytes ([`super::files`]).
fn read_plugin_text(path: &Path, limit: u64) -> Result<String, String> {
    let bytes = super::files::read_file_in_its_folder(path, limit).map_err(|e| e.to_string())?;
    String::from_utf8(bytes).map_err(|_| "is not UTF-8 text".to_string())
}

fn file_error(path: &Path, message: String) -> ManifestResult {
    ManifestResult {
        manifest: None,
        errors: vec![ManifestError {
            where_: path.display().to_string(),
            server: None,
            path: String::new(),
            message,
            value: None,
        }],
        ..ManifestResult::default()
    }
}

/// Most integers beyond 64 bits [`decode_yaml`] quotes in one file before it
/// gives up (each one costs a parse of the whole file).
pub const MAX_QUOTED_INTEGERS: usize = 64;

/// Decodes YAML text; `Err` is the message (with line and column).
///
/// libyaml's events go straight into the document (`yaml_events`, about
/// a quarter faster, `docs/performance.md`); whatever that decode does not
/// build alike — errors, anchors, aliases, tags, the numbers below — is
/// decoded by `yaml_serde` over the same parser, so results and messages
/// are `yaml_serde`'s either way.
///
/// An integer outside 64 bits (`args: [99999999999999999999999]`) is valid
/// YAML that yaml_serde cannot hold; rather than lose the whole file (and
/// with it every good server, `docs/mcp-client.md` §1), it is quoted where
/// it stands and the text parsed again, at most [`MAX_QUOTED_INTEGERS`]
/// times. The fast decode makes such an integer that string at once, up to
/// the same count, where the quoting would; when it hands the text over,
/// it names the integers the loop would quote first (where their order is
/// certain), and they are quoted in one go, so a file with more of them, or
/// with them and a form the fast decode does not build, costs one parse
/// more rather than one per integer. The validator then sees a string:
/// accepted where a scalar is stringified (`args`, `env`), "out of range" in a numeric field, for that
/// server only. An integer that cannot be quoted in place (behind an alias
/// or a tag) stays a whole-file error naming its field path.
///
/// A key that appears twice in one mapping stays a whole-file error (YAML
/// requires unique keys); the message names the key and its lines.
///
/// Text nested deeper than [`super::depth::MAX_DEPTH`] levels is refused
/// when the parser's events pass that depth: the parse stops there, before
/// `yaml_serde` (whose parse is quadratic in the depth) sees the text. The
/// events are counted for the whole text, also where the fast decode
/// hands over, so no text scan runs first (one did until 2026-12-05 and
/// guessed at quotes and comments).
pub fn decode_yaml(text: &str) -> Result<Value, String> {
    use super::yaml_events::Decoded;
    // A byte-order mark, as some Windows editors save one: not content
    // (yaml_serde took it for the start of a second document).
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // The fast decode answers for what it builds alike and counts the
    // real depth on the parser's events; anything else (errors included)
    // is yaml_serde's, in its words.
    match super::yaml_events::decode(text, super::depth::MAX_DEPTH) {
        Decoded::Value(v) => Ok(v),
        Decoded::TooDeep { line } => Err(super::depth::too_deep(line, super::depth::MAX_DEPTH)),
        Decoded::HandOver { quote } => decode_with_yaml_serde(text, &quote),
        Decoded::Refused(m) => Err(m),
    }
}

/// [`decode_yaml`]'s decode for what `yaml_events` hands over: `yaml_serde`
/// with the out-of-range integers quoted one by one (the rule above),
/// after those at the byte offsets `first` (the ones the loop would quote
/// first, in its order) are quoted at once.
pub(super) fn decode_with_yaml_serde(text: &str, first: &[usize]) -> Result<Value, String> {
    let mut quoted = 0;
    let mut text = std::borrow::Cow::Borrowed(text);
    // From the last to the first, so each offset still points at its
    // integer; all or none.
    if !first.is_empty() && first.len() <= MAX_QUOTED_INTEGERS {
        let mut pre = text.to_string();
        let all = first.iter().rev().all(|&at| match quote_integer_at(&pre, at) {
            Some(t) => {
                pre = t;
                true
            }
            None => false,
        });
        if all {
            text = std::borrow::Cow::Owned(pre);
            quoted = first.len();
        }
    }
    // What the loop below has parsed again: bounded, so a large file whose
    // integers' order is uncertain (a tag, a hex scalar) is not parsed 64
    // times (a 4 MB file took 28 s).
    let mut reparsed = 0usize;
    loop {
        let e = match yaml_serde::from_str::<Value>(&text) {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        let raw = e.to_string();
        let Some(range_msg) = out_of_range_integer(&raw) else {
            return Err(
                duplicate_key(&raw, &text).unwrap_or_else(|| {
                    // The parser's message may quote the file (a key, a value).
                    format!("is not valid YAML: {}", crate::secret::redact_patterns(&raw))
                })
            );
        };
        if quoted == MAX_QUOTED_INTEGERS {
            return Err(format!(
                "{range_msg}; the file has more than {MAX_QUOTED_INTEGERS} such integers"
            ));
        }
        reparsed = reparsed.saturating_add(text.len());
        if reparsed > MAX_REQUOTE_BYTES {
            return Err(format!(
                "{range_msg}; write it in quotes: a file this large is not parsed again for each such integer"
            ));
        }
        match e
            .location()
            .and_then(|l| quote_integer_at(&text, l.index()))
        {
            Some(t) => {
                text = std::borrow::Cow::Owned(t);
                quoted += 1;
            }
            None => return Err(range_msg),
        }
    }
}

/// Bytes [`decode_with_yaml_serde`] parses again, in all, to quote integers
/// past 64 bits one by one (64 parses of a 256 KiB file; 4 of a 4 MB one).
const MAX_REQUOTE_BYTES: usize = 16 << 20;

/// `text` with the plain integer scalar at byte `at` (after an optional
/// `&anchor`) put in double quotes; `None` when no such scalar is there.
fn quote_integer_at(text: &str, at: usize) -> Option<String> {
    static INT: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"^(?:&[^\s,\[\]{}]+[ \t]+)?([-+]?(?:0x[0-9a-fA-F]+|0o[0-7]+|[0-9]+))(?:[\s,\]}#:]|$)",
        )
        .expect("a valid pattern")
    });
    let rest = text.get(at..)?;
    let m = INT.captures(rest)?.get(1)?;
    let (s, e) = (at + m.start(), at + m.end());
    Some(format!("{}\"{}\"{}", &text[..s], &text[s..e], &text[e..]))
}

/// Rewrites yaml_serde's "invalid type: integer `N` as u128/i128" (a number
/// too large for the value type) into "`<path>`: the integer N is out of range".
fn out_of_range_integer(raw: &str) -> Option<String> {
    static RE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"^(?:(?P<path>\S+): )?invalid type: integer `(?P<n>-?[0-9]+)` as [iu]128, expected [^\n]*? at (?P<at>line [0-9]+ column [0-9]+)$",
        )
        .expect("a valid pattern")
    });
    let c = RE.captures(raw)?;
    let n = &c["n"];
    let at = &c["at"];
    Some(match c.name("path") {
        Some(p) => format!(
            "{}: the integer {n} is out of range (at most {}) at {at}",
            p.as_str(),
            u64::MAX
        ),
        None => format!(
            "the integer {n} is out of range (at most {}) at {at}",
            u64::MAX
        ),
    })
}

/// Rewrites yaml_serde's "duplicate entry with key K at line L column C"
/// (L:C is where the mapping starts) into a message naming the key and, for
/// a block mapping, the lines that hold it.
fn duplicate_key(raw: &str, text: &str) -> Option<String> {
    static RE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"^(?:(?P<path>.+?): )?duplicate entry (?:with key (?P<key>.+?)|with null key|in YAML map)(?: at line (?P<line>[0-9]+) column (?P<col>[0-9]+))?$",
        )
        .expect("a valid pattern")
    });
    let c = RE.captures(raw)?;
    // yaml_serde gives no place for the top-level mapping: the root's.
    let place: Option<Option<(usize, usize)>> = match (c.name("line"), c.name("col"), c.name("path")) {
        (Some(l), Some(k), _) => Some(Some((l.as_str().parse().ok()?, k.as_str().parse().ok()?))),
        (_, _, None) => Some(None),
        _ => None,
    };
    // yaml_serde says "with null key" for a null key and "in YAML map" for
    // a key it cannot print: a list or a mapping (refused before it is
    // built, `yaml_events`), or a tagged scalar (`? !t a` twice).
    let unprintable_key = raw.contains("duplicate entry in YAML map");
    let key = c.name("key").map_or("null", |k| k.as_str());
    // A string key is printed with Rust's {:?}; plain keys are what we scan for.
    let bare = key
        .strip_prefix('"')
        .and_then(|k| k.strip_suffix('"'))
        .or_else(|| key.strip_prefix('`').and_then(|k| k.strip_suffix('`')))
        .unwrap_or(key);
    let mapping = match c.name("path") {
        Some(p) => format!("the mapping {}", p.as_str()),
        None => "the top-level mapping".to_string(),
    };
    let at = match place {
        Some(place) => {
            // On the parser's events: a `key:` inside a quoted or block
            // scalar is no key (a text scan named such lines).
            use super::yaml_events::PrintedKey;
            let printed = match c.name("key") {
                None => PrintedKey::Null,
                Some(_) if key.starts_with('"') => PrintedKey::Str(bare),
                Some(_) => PrintedKey::Scalar(bare),
            };
            let mut lines = super::yaml_events::key_lines(text, place, printed);
            lines.dedup();
            match place {
                _ if lines.len() >= 2 => {
                    // The first few: a file may repeat a key thousands of times.
                    const SHOWN: usize = 4;
                    let shown: Vec<String> = lines.iter().take(SHOWN).map(ToString::to_string).collect();
                    let more = match lines.len().saturating_sub(SHOWN) {
                        0 => String::new(),
                        n => format!(" and {n} more"),
                    };
                    format!(" (at lines {}{more})", shown.join(" and "))
                }
                // A flow mapping on one line: where it starts.
                Some((line, col)) => format!(" (in the mapping at line {line} column {col})"),
                None => String::new(),
            }
        }
        None => String::new(),
    };
    // The key is the file's own text: shown bounded and redacted.
    let the_key = if unprintable_key {
        "the same tagged key".to_string()
    } else {
        format!("the key {}", crate::validation::echo_name(key))
    };
    let mapping = crate::terminal::cut_chars(
        &crate::secret::redact_patterns(&mapping),
        crate::declaration::parse::PATH_MAX_CHARS,
    );
    Some(format!(
        "is not valid YAML: {mapping} has {the_key} more than once{at}; the keys of a mapping must be unique"
    ))
}

/// Decodes JSON text straight into the universal value type, keeping the
/// order of object keys (OS blocks keep their input order, docs/declarations.md §1.2).
pub fn decode_json(text: &str) -> Result<Value, String> {
    // A byte order mark, as some Windows editors save one: not content.
    decode_json_pruned(text.strip_prefix('\u{feff}').unwrap_or(text), Keep::All)
}

/// [`decode_json`] of text without its byte order mark (one is stripped
/// by the caller, a second is an error), building only what `keep`
/// names (the rest is parsed and dropped): a config's reader looks at a
/// few keys of a file that may be large.
pub(crate) fn decode_json_pruned(text: &str, keep: Keep) -> Result<Value, String> {
    decode_json_placed(text, keep, text, 0)
}

/// [`decode_json`] of `part`, a slice of the text `whole` (one entry of a
/// config file): an error is placed in `whole`'s lines.
pub(crate) fn decode_json_within(whole: &str, part: &str) -> Result<Value, String> {
    let at = (part.as_ptr() as usize)
        .checked_sub(whole.as_ptr() as usize)
        .filter(|at| at + part.len() <= whole.len())
        .unwrap_or(0);
    decode_json_placed(part, Keep::All, whole, at)
}

/// [`decode_json_pruned`] of `text`, which starts at byte `at` of `whole`
/// (where an error is placed).
fn decode_json_placed(text: &str, keep: Keep, whole: &str, at: usize) -> Result<Value, String> {
    use serde::de::DeserializeSeed as _;
    super::depth::check_json_depth(text, super::depth::MAX_DEPTH)?;
    let text = lone_surrogates_replaced(text);
    let mut de = serde_json::Deserializer::from_str(&text);
    // The parser's message may quote a key (a duplicate): redacted.
    Pruned(keep)
        .deserialize(&mut de)
        .and_then(|v| de.end().map(|()| v))
        .map_err(|e| not_json(whole, at, &e))
}

/// `is not valid JSON: <serde_json's words>` for `e`, an error in the
/// part of `text` that starts at byte `at` (0: all of it), redacted (the
/// words may quote a key), with its place as a person counts it in
/// `text`: the line of the whole text and the column in characters
/// (serde_json counts the bytes of what it was given).
pub(crate) fn not_json(text: &str, at: usize, e: &serde_json::Error) -> String {
    let said = match (json_error_what(e), text.get(at..)) {
        (Some(what), Some(part)) if e.line() > 0 => {
            let line_start = match e.line() {
                1 => 0,
                n => memchr::memchr_iter(b'\n', part.as_bytes())
                    .nth(n - 2)
                    .map_or(part.len(), |i| i + 1),
            };
            let mut end = (at + line_start + e.column()).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            // serde_json's column counts the character it stopped at.
            let (line, column) = editor_place(text, end);
            format!("{what} at line {line} column {column}")
        }
        _ => e.to_string(),
    };
    format!(
        "is not valid JSON: {}",
        crate::secret::redact_patterns(&said)
    )
}

/// serde_json's words for `e` without the place it ends them with (` at
/// line L column C`, counted in the text it was given), when they have one.
pub(crate) fn json_error_what(e: &serde_json::Error) -> Option<String> {
    let words = e.to_string();
    let place = format!(" at line {} column {}", e.line(), e.column());
    words.strip_suffix(&place).map(str::to_string)
}

/// The place of byte `end` of `text` as an editor shows it: its line
/// (1-based; a lone CR ends a line too, as in a classic Mac file) and how
/// many characters stand before it on that line (a byte order mark is no
/// column).
pub(crate) fn editor_place(text: &str, end: usize) -> (usize, usize) {
    let before = &text[..end];
    let lone_cr = memchr::memchr_iter(b'\r', before.as_bytes())
        .filter(|&i| text.as_bytes().get(i + 1) != Some(&b'\n'))
        .count();
    let line = memchr::memchr_iter(b'\n', before.as_bytes()).count() + lone_cr + 1;
    let last = before.rsplit(['\n', '\r']).next().unwrap_or("");
    let last = if line == 1 { last.trim_start_matches('\u{feff}') } else { last };
    (line, last.chars().count())
}

/// `text` with every `\u` escape of a lone UTF-16 surrogate made
/// `\ufffd` (U+FFFD, the replacement character), which is as long: every
/// other byte, and so every offset, stays. JavaScript writes a lone
/// surrogate so for a string cut inside a character (`~/.claude.json`
/// keeps such history), Python reads it; `serde_json` refuses the whole
/// file over it.
pub(crate) fn lone_surrogates_replaced(text: &str) -> std::borrow::Cow<'_, str> {
    if !(text.contains("\\ud") || text.contains("\\uD")) {
        return std::borrow::Cow::Borrowed(text);
    }
    let b = text.as_bytes();
    let hex4 = |at: usize| {
        b.get(at..at + 4)
            .and_then(|h| std::str::from_utf8(h).ok())
            .filter(|h| h.bytes().all(|c| c.is_ascii_hexdigit()))
            .and_then(|h| u32::from_str_radix(h, 16).ok())
    };
    let mut out = b.to_vec();
    let (mut i, mut in_string) = (0, false);
    while i < b.len() {
        match b[i] {
            b'"' => in_string = !in_string,
            b'\\' if in_string => {
                let lone = match (b.get(i + 1), hex4(i + 2)) {
                    (Some(b'u'), Some(0xD800..=0xDBFF)) => {
                        let pair = b.get(i + 6..i + 8) == Some(b"\\u")
                            && hex4(i + 8).is_some_and(|lo| (0xDC00..=0xDFFF).contains(&lo));
                        if pair {
                            i += 12;
                            continue;
                        }
                        true
                    }
                    (Some(b'u'), Some(0xDC00..=0xDFFF)) => true,
                    _ => false,
                };
                if lone {
                    out[i..i + 6].copy_from_slice(b"\\ufffd");
                    i += 6;
                } else {
                    // The escaped character (`\"` does not end the string).
                    i += 2;
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    // Only ASCII was replaced, by ASCII.
    std::borrow::Cow::Owned(String::from_utf8(out).unwrap_or_else(|_| text.to_string()))
}

/// The manifest of a plugin folder: its `plugin.yaml`, else its Hermes
/// `plugin.json` (`docs/declarations.md` §2a; the sources share one
/// validator); `None` when it has neither. An entry of that name that is
/// not a folder counts (a link, a FIFO), without following it: the loader
/// then refuses it by name rather than skipping the plugin silently.
pub fn manifest_file(dir: &Path) -> Option<std::path::PathBuf> {
    ["plugin.yaml", "plugin.json"]
        .into_iter()
        .map(|n| dir.join(n))
        .find(|p| std::fs::symlink_metadata(p).is_ok_and(|m| !m.is_dir()))
}

/// A plugin's context with no grants: `${VAR}` of the host is refused.
fn plugin_ctx(path: &Path) -> ManifestContext {
    ManifestContext::for_plugin(
        path.display().to_string(),
        plugin_dir_of(path),
        std::sync::Arc::default(),
    )
}

/// Loads a `plugin.yaml` (`docs/declarations.md` §2a) as a plugin's
/// manifest with no environment granted ([`ManifestContext::for_plugin`]);
/// see [`load_plugin_yaml_with`].
pub fn load_plugin_yaml(path: &Path) -> ManifestResult {
    load_plugin_yaml_with(path, &plugin_ctx(path))
}

/// Loads a `plugin.yaml` with an explicit context (its `where_` labels errors,
/// its `plugin_dir` anchors skills and `${PLUGIN_DIR}`), then reads every
/// skill file (at most [`MAX_SKILL_BYTES`] each); an unreadable skill is an error.
/// The file and its skills are read inside the plugin folder only
/// ([`super::files`]).
pub fn load_plugin_yaml_with(path: &Path, ctx: &ManifestContext) -> ManifestResult {
    let text = match read_plugin_text(path, MAX_MANIFEST_BYTES) {
        Ok(t) => t,
        Err(m) => return file_error(path, m),
    };
    let value = match decode_yaml(&text) {
        Ok(v) => v,
        Err(m) => return file_error(path, m),
    };
    let mut res = manifest_from_value(&value, ctx);
    read_skills(&mut res, ctx);
    res
}

/// Reads every [`SkillSource::File`] of a result into [`SkillSource::Loaded`];
/// a file that cannot be read becomes an error `skills[i] (<file>) …` and
/// is dropped. Each is read inside `ctx.plugin_dir` only: a link out of it,
/// a FIFO or device, or more than [`MAX_SKILL_BYTES`] is refused
/// ([`super::files`]).
pub fn read_skills(res: &mut ManifestResult, ctx: &ManifestContext) {
    let Some(m) = res.manifest.as_mut() else {
        return;
    };
    let mut kept = Vec::with_capacity(m.skills.len());
    for (i, s) in std::mem::take(&mut m.skills).into_iter().enumerate() {
        match s {
            SkillSource::File { path } => match read_skill(&ctx.plugin_dir, &path) {
                Ok(markdown) => kept.push(SkillSource::Loaded { path, markdown }),
                Err(msg) => res.errors.push(ManifestError {
                    where_: ctx.where_.clone(),
                    server: None,
                    path: format!("skills[{i}]"),
                    message: format!("({}) {msg}", path.display()),
                    value: None,
                }),
            },
            other => kept.push(other),
        }
    }
    m.skills = kept;
}

/// One skill file: `path` is the plugin folder joined with the relative
/// path the manifest gave.
fn read_skill(dir: &Path, path: &Path) -> Result<String, String> {
    let rel = path.strip_prefix(dir).unwrap_or(path);
    let bytes =
        super::files::read_plugin_file(dir, rel, MAX_SKILL_BYTES).map_err(|e| e.to_string())?;
    String::from_utf8(bytes).map_err(|_| "is not UTF-8 text".to_string())
}

/// Loads a config file: its top-level `mcp_servers` in the server schema
/// (other top-level keys belong to the embedding agent and are ignored,
/// `docs/mcp-client.md` §1), or another agent's config read by its content
/// (`mcpServers`, VS Code `servers`, Codex TOML, Goose `extensions`;
/// [`super::agents`], `docs/mcp-client.md` §1.4), and its top-level `plugins` (the user's
/// per-plugin settings, [`super::plugins`]) into
/// [`ServersResult::plugins`]. Servers carry `plugin: None`. A mapping
/// without an `mcp_servers` or `plugins` key is one error (`<file>: has no
/// mcp_servers mapping`, with a "did you mean" for `mcpServers` and the
/// like); `mcp_servers:` empty or null, and an empty file, give no servers
/// and no error.
pub fn load_config(path: &Path) -> ServersResult {
    let ctx = ManifestContext::new(path.display().to_string(), plugin_dir_of(path));
    load_config_with(path, &ctx)
}

/// [`load_config`] with an explicit context.
pub fn load_config_with(path: &Path, ctx: &ManifestContext) -> ServersResult {
    load_config_in(path, ctx, &super::agents::Places::of_file(path))
}

/// [`load_config_with`] with explicit places for the agents' own variables
/// (`${userHome}`, `${workspaceFolder}`, Claude Code's project scope).
pub fn load_config_in(
    path: &Path,
    ctx: &ManifestContext,
    places: &super::agents::Places,
) -> ServersResult {
    let fail = |message: String| ServersResult {
        errors: vec![ManifestError {
            where_: ctx.where_.clone(),
            server: None,
            path: String::new(),
            message,
            value: None,
        }],
        ..ServersResult::default()
    };
    let text = match read_bounded(path, MAX_CONFIG_BYTES) {
        Ok(t) => t,
        Err(m) => return fail(m),
    };
    let mut decoded = match super::agents::decode_config(path, &text, ctx, places) {
        Ok(d) => d,
        Err(m) => return fail(m),
    };
    let value = std::mem::take(&mut decoded.value);
    let mut r = match &value {
        // An empty (or comments-only) file: nothing configured yet.
        Value::Null => ServersResult::default(),
        Value::Mapping(m) => {
            let mut r = servers_from_value(m.get("mcp_servers"), ctx, None);
            let (plugins, errors) =
                super::plugins::plugins_from_value(m.get("plugins"), &ctx.where_);
            r.plugins = plugins;
            r.errors.extend(errors);
            r
        }
        other => return fail(must_be("a mapping", other)),
    };
    if decoded.format != super::agents::Format::Wasmgate {
        // The validator's errors name the user's own fields (Codex's
        // `env_vars`, Goose's `cmd`), not what they became.
        decoded.name_own_fields(&mut r.errors);
        // Servers refused while converting keep their place in the order.
        r.errors.splice(0..0, decoded.errors);
        r.warnings.extend(decoded.warnings);
        r.order = decoded.order;
    }
    r
}

/// The keys of `m`, in file order, that are a near miss of one of `meant`
/// (`mcp_servers` for `mcpServers`) while `m` lacks that key itself:
/// `(the key, the meant key)`.
fn near_misses<'a>(
    m: &'a Mapping,
    meant: &'a [&'static str],
) -> impl Iterator<Item = (&'a str, &'static str)> + 'a {
    m.keys().filter_map(Value::as_str).filter_map(move |k| {
        let want = crate::validation::did_you_mean(k, meant)?;
        (k != want && !m.contains_key(want)).then_some((k, want))
    })
}

/// The problem of a config whose top level has no `mcp_servers` key (other
/// keys belong to the embedding agent, `docs/mcp-client.md` §1, so only the
/// missing key is reported), with a hint when a near spelling is there
/// (`mcpServers`, `mcp-servers`, `mcp_server`, `servers`).
pub(crate) fn no_mcp_servers_message(m: &Mapping) -> String {
    let near = m.keys().filter_map(Value::as_str).find(|k| {
        let folded: String = k
            .chars()
            .filter(|c| !matches!(c, '_' | '-' | ' ' | '.'))
            .flat_map(char::to_lowercase)
            .collect();
        matches!(
            folded.as_str(),
            "mcpservers" | "mcpserver" | "servers" | "mcp" | "mcps"
        ) || strsim::levenshtein(k, "mcp_servers") <= 2
    });
    match near {
        Some(k) => format!(
            "has no mcp_servers mapping (did you mean `mcp_servers`? this file has `{k}`, which wasmgate does not read)"
        ),
        None => "has no mcp_servers mapping (wasmgate reads its servers from the top-level `mcp_servers` key, or another agent's `mcpServers`, `servers`, Codex `[mcp_servers.<id>]` or Goose `extensions`; other keys are ignored)".to_string(),
    }
}

/// Loads a Hermes-style `plugin.json` (docs/declarations.md §2a) as a plugin's manifest
/// with no environment granted ([`ManifestContext::for_plugin`]).
pub fn load_plugin_json(path: &Path) -> ManifestResult {
    load_plugin_json_with(path, &plugin_ctx(path))
}

/// Loads a Hermes-style `plugin.json`:
///
/// * `name`, `version` as in `plugin.yaml`; `skills` likewise (optional).
/// * The servers are the `mcpServers` mapping of the `plugin.json` itself,
///   else of an `mcp.json` beside it (Claude-style entries: `command`,
///   `args`, `env`, `url`, `headers`, and a `type` of `stdio` / `http` /
///   `streamable-http`; `sse` is refused).
/// * `extensions["com.nousresearch.hermes"].servers.<name>` = `{app,
///   requires, liveness?}` adds a declaration to server `<name>`, which must
///   be one of those servers. Any other key is an error naming the unknown
///   keys; `liveness` needs `app` or `requires`.
/// * The server-level `liveness` (`{kind: server_json, path, fields: {url,
///   token, pid}}`, or `static` / `interactive_session`) is the second
///   vocabulary of docs/declarations.md §7.7; wasmgate keeps one (`app.<os>.liveness`),
///   so a `server_json` one is written into every OS block of `app` (the
///   block's own `endpoint_path` is kept), as Hermes applies it at probe
///   time, and then checked by the same parser; `static` and
///   `interactive_session` add nothing.
///
/// A server's errors read `<file> extension server '<name>': <field path> …`.
pub fn load_plugin_json_with(path: &Path, ctx: &ManifestContext) -> ManifestResult {
    let ctx = &ManifestContext {
        json: true,
        ..ctx.clone()
    };
    let text = match read_plugin_text(path, MAX_MANIFEST_BYTES) {
        Ok(t) => t,
        Err(m) => return file_error(path, m),
    };
    let value = match decode_json(&text) {
        Ok(v) => v,
        Err(m) => return file_error(path, m),
    };
    let Value::Mapping(top) = &value else {
        return file_error(path, must_be("a JSON object", &value));
    };
    let w = ctx.where_.clone();
    let mut errors: Vec<ManifestError> = Vec::new();
    let mut warnings = Vec::new();
    let err = |server: Option<&str>, where_: &str, p: &str, m: String| ManifestError {
        where_: where_.to_string(),
        server: server.map(str::to_string),
        path: p.to_string(),
        message: m,
        value: None,
    };

    // Other top-level keys are Hermes' (description, author, …), but a near
    // miss of the two keys wasmgate reads would silently drop every server
    // or every gate: an error when the key itself is absent.
    for (k, meant) in near_misses(top, &["mcpServers", "extensions"]) {
        errors.push(err(
            None,
            &w,
            &crate::validation::echo_name(k),
            format!("is not a key of plugin.json (did you mean `{meant}`?)"),
        ));
    }

    // Servers: plugin.json's own mcpServers, else mcp.json beside it.
    let mcp_json_path = plugin_dir_of(path).join("mcp.json");
    let (mcp_servers, servers_where): (Option<Mapping>, String) = match top.get("mcpServers") {
        Some(Value::Mapping(m)) => (Some(m.clone()), w.clone()),
        Some(other) => {
            errors.push(err(None, &w, "mcpServers", must_be("an object", other)));
            (None, w.clone())
        }
        // Any entry named mcp.json (a link, a FIFO) is read through the
        // plugin-folder rules, which refuse it by name.
        None if std::fs::symlink_metadata(&mcp_json_path).is_ok_and(|m| !m.is_dir()) => {
            let mw = mcp_json_path.display().to_string();
            match read_plugin_text(&mcp_json_path, MAX_MANIFEST_BYTES).and_then(|t| decode_json(&t))
            {
                Ok(Value::Mapping(m)) => match m.get("mcpServers") {
                    Some(Value::Mapping(s)) => (Some(s.clone()), mw),
                    // `mcp_servers` or `mcpservers` here would drop every
                    // server without a word.
                    None if let Some((k, meant)) = near_misses(&m, &["mcpServers"]).next() => {
                        errors.push(err(
                            None,
                            &mw,
                            &crate::validation::echo_name(k),
                            format!("is not a key of mcp.json (did you mean `{meant}`?)"),
                        ));
                        (None, mw)
                    }
                    None | Some(Value::Null) => (Some(Mapping::new()), mw),
                    Some(other) => {
                        errors.push(err(None, &mw, "mcpServers", must_be("an object", other)));
                        (None, mw)
                    }
                },
                Ok(other) => {
                    errors.push(err(None, &mw, "", must_be("a JSON object", &other)));
                    (None, mw)
                }
                Err(m) => {
                    errors.push(err(None, &mw, "", m));
                    (None, mw)
                }
            }
        }
        None => (Some(Mapping::new()), w.clone()),
    };
    let mcp_servers = mcp_servers.unwrap_or_default();

    // The declarations envelope.
    let ext_where = format!("{w} extension");
    let mut decls: Mapping = Mapping::new();
    // Other vendors' extensions are theirs to check; ours must have the
    // right shape, or a typo would silently drop every app/requires gate.
    let mut ext_servers = None;
    match top.get("extensions") {
        None | Some(Value::Null) => {}
        Some(Value::Mapping(ext)) => match ext.get(HERMES_EXTENSION) {
            // Another vendor's extension is theirs, but a misspelt
            // `com.nousresearch.hermes` (`…Hermes`) would drop every gate.
            None if let Some(k) = ext.keys().filter_map(Value::as_str).find(|k| {
                k.eq_ignore_ascii_case(HERMES_EXTENSION)
                    || (k.len() < 64 && strsim::damerau_levenshtein(k, HERMES_EXTENSION) <= 2)
            }) =>
            {
                errors.push(err(
                    None,
                    &w,
                    "extensions",
                    format!(
                        "has '{}' but no '{HERMES_EXTENSION}': the declarations are read from that key only (did you mean it?)",
                        crate::validation::echo_name(k)
                    ),
                ));
            }
            None | Some(Value::Null) => {}
            Some(Value::Mapping(h)) => {
                for k in h.keys() {
                    let key = crate::validation::key_text(k);
                    if key != "servers" {
                        errors.push(err(
                            None,
                            &ext_where,
                            &crate::validation::echo_name(&key),
                            "is not a known key (the extension holds only `servers`)".into(),
                        ));
                    }
                }
                ext_servers = h.get("servers");
            }
            Some(other) => errors.push(err(
                None,
                &ext_where,
                "",
                format!(
                    "extensions[\"{HERMES_EXTENSION}\"] must be an object{}",
                    got_type(other)
                ),
            )),
        },
        Some(other) => errors.push(err(None, &w, "extensions", must_be("an object", other))),
    }
    match ext_servers {
        None | Some(Value::Null) => {}
        Some(Value::Mapping(m)) => decls = m.clone(),
        Some(other) => errors.push(err(
            None,
            &ext_where,
            "servers",
            must_be("an object", other),
        )),
    }

    // Build the manifest value in the plugin.yaml schema.
    let mut manifest = Mapping::new();
    for key in ["name", "version", "skills"] {
        if let Some(v) = top.get(key) {
            manifest.insert(Value::String(key.into()), v.clone());
        }
    }
    let mut entries = Mapping::new();
    let mut labels: Vec<(String, String)> = Vec::new();
    for (k, entry) in &mcp_servers {
        let name = crate::validation::key_text(k);
        let label = super::schema::server_label(&servers_where, &name);
        let mut e = match entry {
            Value::Mapping(m) => m.clone(),
            other => {
                errors.push(err(
                    Some(&name),
                    &label,
                    "",
                    format!("the server entry {}", must_be("an object", other)),
                ));
                continue;
            }
        };
        if let Some(t) = e.shift_remove("type") {
            let ok = match (t.as_str(), e.contains_key("url")) {
                (Some("stdio"), false) => true,
                (Some("http" | "streamable-http" | "streamableHttp"), true) => true,
                (Some("sse"), _) => {
                    errors.push(err(
                        Some(&name),
                        &label,
                        "type",
                        "is 'sse': the legacy SSE transport is not supported; use streamable HTTP"
                            .into(),
                    ));
                    continue;
                }
                _ => false,
            };
            if !ok {
                errors.push(err(
                    Some(&name),
                    &label,
                    "type",
                    "must be 'stdio' (with command) or 'http' (with url)".into(),
                ));
                continue;
            }
        }
        let mut decl_label = label.clone();
        if let Some(d) = decls.get(k) {
            let dlabel = super::schema::server_label(&ext_where, &name);
            match extension_entry(d) {
                Ok((app, requires)) => {
                    if let Some(a) = app {
                        e.insert(Value::String("app".into()), a);
                    }
                    if let Some(r) = requires {
                        e.insert(Value::String("requires".into()), r);
                    }
                    decl_label = dlabel;
                }
                Err(Problem { path, message }) => {
                    errors.push(err(Some(&name), &dlabel, &path, message));
                    continue;
                }
            }
        }
        labels.push((name, decl_label));
        entries.insert(k.clone(), Value::Mapping(e));
    }
    for k in decls.keys() {
        if !mcp_servers.contains_key(k) {
            let name = crate::validation::key_text(k);
            errors.push(err(
                Some(&name),
                &super::schema::server_label(&ext_where, &name),
                "",
                "is not a server of mcpServers (plugin.json or mcp.json beside it)".into(),
            ));
        }
    }

    // Validate: top-level fields through the one validator, servers one by
    // one with their own labels.
    manifest.insert(Value::String("mcp_servers".into()), Value::Null);
    let mut res = manifest_from_value(&Value::Mapping(manifest), ctx);
    let plugin = res.manifest.as_ref().map(|m| m.name.clone());
    let mut servers = Vec::new();
    res.server_order = mcp_servers
        .keys()
        .map(crate::validation::key_text)
        .collect();
    let mut names = Vec::new();
    for (name, label) in labels {
        let Some(entry) = entries.get(name.as_str()) else {
            continue;
        };
        match server_from_value(&name, entry, ctx, plugin.as_deref(), &label, &mut warnings) {
            Ok(s) => servers.push(s),
            Err(e) => errors.extend(e),
        }
        names.push((name, label));
    }
    // The same name rules as plugin.yaml: a name that is no server name, or
    // that mints the same tool-name prefix as an earlier one, is left out.
    errors.extend(super::schema::check_server_names(&names, &mut servers));
    if let Some(m) = res.manifest.as_mut() {
        m.servers = servers;
    }
    res.errors.extend(errors);
    res.warnings.extend(warnings);
    read_skills(&mut res, ctx);
    res
}

/// One `extensions[…].servers.<name>` entry → (`app`, `requires`) in the
/// plugin.yaml schema, with a server-level `liveness` folded into `app`.
fn extension_entry(d: &Value) -> Result<(Option<Value>, Option<Value>), Problem> {
    let Value::Mapping(m) = d else {
        return Err(Problem::new(
            "",
            must_be("an object {app, requires, liveness}", d),
        ));
    };
    if let Some(msg) = unknown_keys_message(m, &["app", "requires", "liveness"]) {
        return Err(Problem::new("", msg));
    }
    let app = m.get("app").filter(|v| !v.is_null()).cloned();
    let requires = m.get("requires").filter(|v| !v.is_null()).cloned();
    let Some(liveness) = m.get("liveness").filter(|v| !v.is_null()) else {
        return Ok((app, requires));
    };
    if app.is_none() && requires.is_none() {
        return Err(Problem::new("liveness", "needs app or requires beside it"));
    }
    let Value::Mapping(lm) = liveness else {
        return Err(Problem::new("liveness", must_be("an object", liveness)));
    };
    let kind = lm.get("kind").and_then(Value::as_str).unwrap_or("static");
    match kind {
        "static" | "interactive_session" => {
            if let Some(msg) = unknown_keys_message(lm, &["kind"]) {
                return Err(Problem::new("liveness", msg));
            }
            Ok((app, requires))
        }
        "server_json" => {
            if let Some(msg) = unknown_keys_message(lm, &["kind", "path", "fields"]) {
                return Err(Problem::new("liveness", msg));
            }
            let path = match lm.get("path") {
                Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
                _ => {
                    return Err(Problem::new(
                        "liveness.path",
                        "must be a non-empty string for server_json",
                    ));
                }
            };
            let mut keys: Vec<(&str, Value)> = Vec::new();
            match lm.get("fields") {
                None | Some(Value::Null) => {}
                Some(Value::Mapping(f)) => {
                    if let Some(msg) = unknown_keys_message(f, &["url", "token", "pid"]) {
                        return Err(Problem::new("liveness.fields", msg));
                    }
                    for (field, key) in [
                        ("url", "url_key"),
                        ("token", "token_key"),
                        ("pid", "pid_key"),
                    ] {
                        match f.get(field) {
                            None | Some(Value::Null) => {}
                            Some(Value::String(s)) if !s.is_empty() => {
                                keys.push((key, Value::String(s.clone())))
                            }
                            Some(_) => {
                                return Err(Problem::new(
                                    format!("liveness.fields.{field}"),
                                    "must be a non-empty string",
                                ));
                            }
                        }
                    }
                }
                Some(other) => {
                    return Err(Problem::new("liveness.fields", must_be("an object", other)));
                }
            }
            // Fold into every OS block; the parser then checks the result.
            let app = app.map(|a| match a {
                Value::Mapping(osm) => Value::Mapping(
                    osm.into_iter()
                        .map(|(os, block)| {
                            let block = match block {
                                Value::Mapping(mut b) => {
                                    let mut live = match b.shift_remove("liveness") {
                                        Some(Value::Mapping(l)) => l,
                                        _ => Mapping::new(),
                                    };
                                    live.insert("kind".into(), "server_json".into());
                                    live.insert("path".into(), Value::String(path.clone()));
                                    for (k, v) in &keys {
                                        live.insert(Value::String((*k).into()), v.clone());
                                    }
                                    b.insert("liveness".into(), Value::Mapping(live));
                                    Value::Mapping(b)
                                }
                                other => other,
                            };
                            (os, block)
                        })
                        .collect(),
                ),
                other => other,
            });
            Ok((app, requires))
        }
        other => Err(Problem::new(
            "liveness.kind",
            format!(
                "must be one of ['static', 'interactive_session', 'server_json'] (got '{other}')"
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::decode_yaml;

    #[test]
    fn a_json_error_is_placed_in_characters_of_the_whole_text() {
        // The same mistake after ASCII and after two-byte characters: the
        // same column, as an editor counts it.
        let ascii = super::decode_json("{\n  \"eeee\": 1,\n}").unwrap_err();
        let wide = super::decode_json("{\n  \"éééé\": 1,\n}").unwrap_err();
        assert!(ascii.ends_with("at line 3 column 1"), "{ascii}");
        assert_eq!(ascii, wide);
        let ascii = super::decode_json("{\"eeee\": tru}").unwrap_err();
        let wide = super::decode_json("{\"日本語\": tru}").unwrap_err();
        assert!(ascii.ends_with("line 1 column 13"), "{ascii}");
        assert!(wide.ends_with("line 1 column 12"), "{wide}");
        // A part of a text: its line and column in the whole.
        let whole = "{\n  \"a\": {\n    \"é\": 1, \"é\": 2\n  }\n}";
        let inner = &whole[whole.find("{\n    ").unwrap()..];
        let e = serde_json::from_str::<serde_json::Value>(inner).unwrap_err();
        let said = super::not_json(whole, whole.len() - inner.len(), &e);
        assert!(said.contains("at line 5 column 1"), "{said} ({e})");
        // Lines end at a lone CR too; CRLF is one end; a byte order mark
        // is no column.
        for text in ["{\r  \"eeee\": 1,\r}", "{\r\n  \"eeee\": 1,\r\n}"] {
            let e = serde_json::from_str::<serde_json::Value>(text).unwrap_err();
            let said = super::not_json(text, 0, &e);
            assert!(said.ends_with("at line 3 column 1"), "{text:?}: {said}");
        }
        let text = "\u{feff}{\"eeee\": tru}";
        let e = serde_json::from_str::<serde_json::Value>(&text[3..]).unwrap_err();
        assert!(super::not_json(text, 3, &e).ends_with("line 1 column 13"));
    }
    use crate::document::Value;

    #[test]
    fn a_lone_surrogate_is_read_as_the_replacement_character() {
        let v = super::decode_json(
            r#"{"a": "x\ud83dy", "b": "\ud83d\ude00", "c": "\\ud83d", "d": "\uDC00\"", "e": "\ud83d\u0041"}"#,
        )
        .unwrap();
        assert_eq!(v["a"], Value::String("x\u{fffd}y".into()));
        assert_eq!(v["b"], Value::String("😀".into()));
        // An escaped backslash, then `ud83d`: no escape at all.
        assert_eq!(v["c"], Value::String("\\ud83d".into()));
        assert_eq!(v["d"], Value::String("\u{fffd}\"".into()));
        assert_eq!(v["e"], Value::String("\u{fffd}A".into()));
        // Nothing to replace: the text itself, not a copy.
        assert!(matches!(super::lone_surrogates_replaced("{\"a\": \"\\u0041\"}"), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn an_integer_beyond_64_bits_is_quoted_where_it_stands() {
        let v = decode_yaml(
            "mcp_servers:\n  s:\n    timeout: 99999999999999999999999\n    args: [1, -99999999999999999999999, 0x1FFFFFFFFFFFFFFFFFF, x]\n  t: {args: [&a 99999999999999999999999 ]}\n  ü: [é, 99999999999999999999999]\n  99999999999999999999999: 1\n",
        )
        .unwrap();
        let s = &v["mcp_servers"]["s"];
        assert_eq!(
            s["timeout"],
            Value::String("99999999999999999999999".into())
        );
        assert_eq!(
            s["args"],
            yaml_serde::from_str::<Value>(
                "[1, '-99999999999999999999999', '0x1FFFFFFFFFFFFFFFFFF', x]"
            )
            .unwrap()
        );
        assert_eq!(
            v["mcp_servers"]["t"]["args"][0],
            Value::String("99999999999999999999999".into())
        );
        // Byte offsets, not characters, after non-ASCII text on the same line.
        assert_eq!(
            v["mcp_servers"]["ü"][1],
            Value::String("99999999999999999999999".into())
        );
        assert_eq!(
            v["mcp_servers"]["99999999999999999999999"],
            Value::Number(1.into())
        );
        // Behind a tag it cannot be quoted in place: named with its path.
        let e = decode_yaml("a: !!int 99999999999999999999999\n").unwrap_err();
        assert!(
            e.contains("the integer 99999999999999999999999 is out of range"),
            "{e}"
        );
        // Bounded: past MAX_QUOTED_INTEGERS the file is refused.
        let many = "- 99999999999999999999999\n".repeat(super::MAX_QUOTED_INTEGERS + 1);
        let e = decode_yaml(&many).unwrap_err();
        assert!(
            e.contains("the integer 99999999999999999999999 is out of range")
                && e.contains("more than 64 such integers"),
            "{e}"
        );
        assert!(
            decode_yaml(&"- 99999999999999999999999\n".repeat(super::MAX_QUOTED_INTEGERS)).is_ok()
        );
        // Broken YAML still says so.
        let e = decode_yaml("a: [1, 2\n").unwrap_err();
        assert!(e.starts_with("is not valid YAML: "), "{e}");
    }

    #[test]
    fn quoting_one_by_one_stops_at_its_byte_budget() {
        // A hex scalar makes the order uncertain, so each integer costs a
        // parse of the whole file: a 2 MB file gets eight, not 64.
        let filler = "- 1\n".repeat(512 * 1024);
        let ints = "- 99999999999999999999999\n".repeat(10);
        let big = format!("- 0x1\n{ints}{filler}");
        let e = decode_yaml(&big).unwrap_err();
        assert!(
            e.contains("the integer 99999999999999999999999 is out of range")
                && e.contains("write it in quotes"),
            "{e}"
        );
        // A small file with the same shape is quoted as before.
        let small = format!("- 0x1\n{ints}- 1\n");
        let v = decode_yaml(&small).unwrap();
        assert_eq!(v[10], Value::String("99999999999999999999999".into()));
    }

    #[test]
    fn a_duplicate_key_names_the_key_and_its_lines() {
        let e = decode_yaml(
            "mcp_servers:\n  s: {command: x}\n  # note\n  t: {command: z}\n  s: {command: y}\n",
        )
        .unwrap_err();
        assert_eq!(
            e,
            "is not valid YAML: the mapping mcp_servers has the key \"s\" more than once (at lines 2 and 5); the keys of a mapping must be unique"
        );
        let e = decode_yaml("a: 1\nb: 2\n'a': 3\n").unwrap_err();
        assert!(
            e.contains("the top-level mapping has the key \"a\" more than once (at lines 1 and 3)"),
            "{e}"
        );
        // A list or mapping as a key is refused on the parser's events,
        // before any comparison of such keys (exponential in their
        // nesting); the duplicate wording stays for what yaml_serde decodes.
        let e = decode_yaml("? [1]\n: a\n? [1]\n: b\n").unwrap_err();
        assert!(
            e.contains("has a list or mapping as a mapping key (at line 1)"),
            "{e}"
        );
        // Lines come from the parser's events: a `key:` line inside a
        // quoted scalar is not a key (found by an attacker), nor is one in
        // a nested mapping or a block scalar; a leading comment moves the
        // root mapping.
        let e = decode_yaml("x:\n  a: 1\n  b: \"foo\n  a: bar\"\n  c: |\n    a: z\n  a: 2\n")
            .unwrap_err();
        assert!(e.contains("the mapping x has the key \"a\" more than once (at lines 2 and 7)"), "{e}");
        // Keys compare as decoded: `'1'` is a string, `1` and `+1` one
        // number, `True` and `true` one boolean, `~` and `null` one null.
        for (text, lines) in [
            ("x:\n  '1': c\n  1: a\n  +1: b\n", "3 and 4"),
            ("x:\n  True: 1\n  'true': 2\n  true: 3\n", "2 and 4"),
            ("x:\n  null: 1\n  'null': 2\n  ~: 3\n", "2 and 4"),
            ("x:\n  a: 1\n  '1': 2\n  \"a\": 3\n", "2 and 4"),
        ] {
            let e = decode_yaml(text).unwrap_err();
            assert!(e.contains(&format!("(at lines {lines})")), "{text:?}: {e}");
        }
        // A key this decode hands over (`0x1`) is not found; with one line
        // left the message names where the mapping starts, no wrong line.
        let e = decode_yaml("x:\n  1: a\n  0x1: b\n  '1': c\n").unwrap_err();
        assert!(e.contains("(in the mapping at line 2 column 3)"), "{e}");
        // A parent key with a space is still a path yaml_serde names.
        let e = decode_yaml("mcp_servers:\n  my server:\n    command: a\n    command: b\n").unwrap_err();
        assert!(
            e.contains("the mapping mcp_servers.my server has the key \"command\" more than once (at lines 3 and 4)"),
            "{e}"
        );
        let many = format!("m:\n{}", "  a: 1\n".repeat(1000));
        let e = decode_yaml(&many).unwrap_err();
        assert!(e.contains("(at lines 2 and 3 and 4 and 5 and 996 more)"), "{e}");
        let e = decode_yaml("# c\n\nk: {k: 1}\nk: 2\n").unwrap_err();
        assert!(e.contains("the top-level mapping has the key \"k\" more than once (at lines 3 and 4)"), "{e}");
        // A tagged key yaml_serde cannot print: named as what it is.
        let e = decode_yaml("mcp_servers:\n  ? !t a\n  : 1\n  ? !t a\n  : 2\n").unwrap_err();
        assert!(
            e.contains("the mapping mcp_servers has the same tagged key more than once (in the mapping at line 2 column 3)"),
            "{e}"
        );
        // A byte-order mark is not content.
        let v = decode_yaml("\u{feff}name: p\nversion: 1.0.0\n").unwrap();
        assert_eq!(v.get("version"), Some(&Value::String("1.0.0".into())));
        // A flow mapping: the line and column where it starts.
        let e = decode_yaml("x:\n  y: {k: 1, k: 2}\n").unwrap_err();
        assert!(
            e.contains("the mapping x.y has the key \"k\" more than once (in the mapping at line 2 column 6)"),
            "{e}"
        );
    }

    /// The parsers' messages quote keys: a secret in one is redacted, as
    /// YAML's are; a byte order mark is no content (found by an attacker).
    #[test]
    fn json_and_jsonc_errors_redact_the_keys_they_quote() {
        let token = format!("ghp_{}", "C".repeat(36));
        let strict = format!("{{\"mcpServers\": {{\"{token}\": {{}}, \"{token}\": {{}}}}}}");
        let e = super::decode_json(&strict).unwrap_err();
        assert!(e.contains("duplicate") && !e.contains(&token), "{e}");
        let jsonc = format!("// c\n{strict}");
        let e = crate::manifest::agents::vscode::decode_jsonc(&jsonc).unwrap_err();
        assert!(e.contains("duplicate") && !e.contains(&token), "{e}");
        let e = decode_yaml(&format!("a: [\n{token}: 1\n")).unwrap_err();
        assert!(!e.contains(&token), "{e}");
        assert_eq!(
            super::decode_json("\u{feff}{\"a\": 1}").unwrap().get("a"),
            Some(&Value::Number(1.into()))
        );
    }
}
