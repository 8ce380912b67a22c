//! Adding and removing one server entry in an agent's config file for
//! `wasmgate setup` and `wasmgate import --write` (`docs/mcp-client.md`
//! §1.5), keeping everything else as it is:
//!
//! * JSON: edited as text (`super::json_edit`): only the objects on the
//!   entry's path are read, the entry is added at the end of its object
//!   (or its value replaced where it stands) with the file's own indent and
//!   line end, and every other byte stays. A file holding nothing (or
//!   `null`) gets a new pretty-printed object.
//! * JSONC (VS Code): edited through `jsonc-parser`'s concrete syntax
//!   tree, so comments, trailing commas and layout stay; the entry is
//!   appended to its object (or its value replaced where it stands).
//! * TOML: edited with `toml_edit`, which keeps comments, order and
//!   formatting.
//! * YAML: a re-serialisation would drop comments, so the entry's lines
//!   are inserted as text at the end of the block of its top-level key (or
//!   the key appended at the end) and removed as text.
//!
//! Every edit is checked by decoding the result: it must equal the input
//! with exactly that entry added (or removed); otherwise the edit is refused
//! and nothing is written.

use crate::document::{Mapping, Value};

/// The syntax of an agent file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// JSON (`.json`).
    Json,
    /// VS Code's JSONC (comments, trailing commas).
    Jsonc,
    /// TOML (Codex).
    Toml,
    /// YAML (Goose, wasmgate, Hermes).
    Yaml,
}

/// Decodes `text` of `syntax` (empty text is an empty mapping).
///
/// # Errors
/// The decoder's message.
pub fn decode(text: &str, syntax: Syntax) -> Result<Value, String> {
    // A byte order mark alone is as empty as nothing.
    if text.trim_start_matches('\u{feff}').trim().is_empty() {
        return Ok(Value::Mapping(Mapping::new()));
    }
    let v = match syntax {
        Syntax::Json => super::super::load::decode_json(text)?,
        Syntax::Jsonc => super::vscode::decode_jsonc(text)?,
        Syntax::Yaml => super::super::load::decode_yaml(text)?,
        Syntax::Toml => super::codex::to_yaml(&toml::Value::Table(super::codex::parse_table(text)?)),
    };
    match v {
        Value::Null => Ok(Value::Mapping(Mapping::new())),
        v @ Value::Mapping(_) => Ok(v),
        _ => Err("is not a mapping at its top level".into()),
    }
}

/// The entry `name` under the object at `path` (`["mcpServers"]`,
/// `["mcp", "servers"]`) of a decoded file.
pub fn get<'a>(v: &'a Value, path: &[&str], name: &str) -> Option<&'a Value> {
    let mut cur = v;
    for p in path {
        cur = cur.get(*p)?;
    }
    cur.get(name)
}

fn without(v: &Value, path: &[&str], names: &[&str]) -> Value {
    let mut v = v.clone();
    let mut cur = &mut v;
    for p in path {
        match cur.get_mut(*p) {
            Some(next) => cur = next,
            None => return v,
        }
    }
    if let Value::Mapping(m) = cur {
        if let [name] = names {
            m.shift_remove(*name);
        } else {
            // One pass, not a removal (and re-index) per name.
            let names: std::collections::HashSet<&str> = names.iter().copied().collect();
            m.retain(|k, _| !k.as_str().is_some_and(|k| names.contains(k)));
        }
    }
    v
}

/// Empty containers on `path` that an edit may leave or create count as absent.
fn normalise(v: &Value, path: &[&str]) -> Value {
    let mut v = v.clone();
    prune(&mut v, path);
    v
}

fn prune(v: &mut Value, path: &[&str]) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    if let Value::Mapping(m) = v
        && let Some(child) = m.get_mut(*first)
    {
        prune(child, rest);
        if matches!(child, Value::Null) || matches!(child, Value::Mapping(c) if c.is_empty()) {
            m.shift_remove(*first);
        }
    }
}

/// `text` with `entry` set as `name` under `path` (added at the end, or
/// replaced in place when `name` is there).
///
/// # Errors
/// The file cannot be decoded, a container on `path` is no mapping, or the
/// edited text does not decode to exactly the input plus the entry.
pub fn set_entry(
    text: &str,
    syntax: Syntax,
    path: &[&str],
    name: &str,
    entry: &Value,
) -> Result<String, String> {
    set_entries(text, syntax, path, &[(name, entry)])
}

/// `text` with every `(name, entry)` of `entries` set under `path`, in
/// their order (each added at the end, or replaced in place when its name
/// is there). The file is decoded once before and once after all the
/// edits, so adding n entries costs one check, not n (`wasmgate import
/// --write` of a file with thousands of servers).
///
/// # Errors
/// As [`set_entry`]; also when a name is given twice.
pub fn set_entries(
    text: &str,
    syntax: Syntax,
    path: &[&str],
    entries: &[(&str, &Value)],
) -> Result<String, String> {
    let mut names = std::collections::HashSet::with_capacity(entries.len());
    if let Some((n, _)) = entries.iter().find(|(n, _)| !names.insert(*n)) {
        return Err(format!("the entry {n} is given twice"));
    }
    if entries.is_empty() {
        return Ok(text.to_string());
    }
    if syntax == Syntax::Json
        && let Some(out) = super::json_edit::set_entries(text, path, entries)?
    {
        return Ok(out);
    }
    let before = decode(text, syntax)?;
    let out = match syntax {
        Syntax::Json => json_set(&before, text, path, entries)?,
        Syntax::Jsonc => {
            let mut t = text.to_string();
            for (name, entry) in entries {
                t = jsonc_edit(&t, path, name, Some(entry))?;
            }
            t
        }
        Syntax::Toml => toml_set(text, &before, path, entries)?,
        Syntax::Yaml => {
            // An entry there is replaced where it stands; the others are
            // added at the end of the block.
            let mut t = text.to_string();
            let mut added = Vec::new();
            for (name, entry) in entries {
                if get(&before, path, name).is_some() {
                    t = yaml_replace(&t, path, name, entry)?;
                } else {
                    added.push((*name, *entry));
                }
            }
            if added.is_empty() { t } else { yaml_insert(&t, path, &added)? }
        }
    };
    let after = decode(&out, syntax).map_err(edit_not_decoded)?;
    let names: Vec<&str> = entries.iter().map(|(n, _)| *n).collect();
    if entries
        .iter()
        .any(|(name, entry)| get(&after, path, name) != Some(*entry))
        || normalise(&without(&after, path, &names), path)
            != normalise(&without(&before, path, &names), path)
    {
        return Err(changed_more(entries.len()));
    }
    Ok(out)
}

/// The refusal of an edit whose result reads back as more than asked.
pub(super) fn changed_more(entries: usize) -> String {
    if entries == 1 {
        "the edit would change more than the one entry; nothing was written (edit the file by hand)"
            .into()
    } else {
        format!(
            "the edit would change more than the {entries} entries; nothing was written (edit the file by hand)"
        )
    }
}

/// The entry `name` under `path` of `text` (`None` when it, or an object
/// on the path, is absent). A JSON file is not built whole: only the
/// objects on the path are looked into (`super::json_edit`).
///
/// # Errors
/// The file cannot be decoded or is not a mapping.
pub fn entry(text: &str, syntax: Syntax, path: &[&str], name: &str) -> Result<Option<Value>, String> {
    match syntax {
        Syntax::Json => super::json_edit::entry(text, path, name),
        _ => Ok(get(&decode(text, syntax)?, path, name).cloned()),
    }
}

/// `text` without the entry `name` under `path`.
///
/// # Errors
/// As [`set_entry`]; also when there is no such entry.
pub fn remove_entry(
    text: &str,
    syntax: Syntax,
    path: &[&str],
    name: &str,
) -> Result<String, String> {
    let before = match syntax {
        // Not decoded whole: edited as text, and checked, there.
        Syntax::Json => return super::json_edit::remove_entry(text, path, name),
        _ => decode(text, syntax)?,
    };
    if get(&before, path, name).is_none() {
        return Err(format!("has no entry {name} under {}", path.join(".")));
    }
    let out = match syntax {
        // (JSON returned above; its syntax tree is JSONC's too.)
        Syntax::Jsonc | Syntax::Json => jsonc_edit(text, path, name, None)?,
        Syntax::Toml => without_bom(text, |body| {
            let mut above = Vec::new();
            let edited = toml_edited(body, |doc| {
                above = comments_above(doc, path, name);
                let was_last = closing_space(doc, path);
                let at = item_at_mut(doc, path).ok_or_else(|| format!("has no {}", path.join(".")))?;
                if let Some(t) = at.as_table_like_mut() {
                    t.remove(name);
                }
                closing_space_kept(doc, path, was_last);
                Ok(())
            })?;
            Ok(comments_above_kept(body, &edited, &above))
        })?,
        Syntax::Yaml => yaml_remove(text, path, name)?,
    };
    let after = decode(&out, syntax).map_err(edit_not_decoded)?;
    if normalise(&after, path) != normalise(&without(&before, path, &[name]), path) {
        return Err(changed_more(1));
    }
    Ok(out)
}

fn json_set(
    before: &Value,
    text: &str,
    path: &[&str],
    entries: &[(&str, &Value)],
) -> Result<String, String> {
    let mut v = before.clone();
    let mut cur = &mut v;
    for p in path {
        let Value::Mapping(m) = cur else {
            return Err(format!("{} is not an object", path.join(".")));
        };
        if !m.contains_key(*p) || m.get(*p).is_some_and(Value::is_null) {
            m.insert(Value::String((*p).into()), Value::Mapping(Mapping::new()));
        }
        cur = m.get_mut(*p).expect("inserted above");
    }
    let Value::Mapping(m) = cur else {
        return Err(format!("{} is not an object", path.join(".")));
    };
    for (name, entry) in entries {
        match m.get_mut(*name) {
            Some(old) => *old = (*entry).clone(),
            None => {
                m.insert(Value::String((*name).into()), (*entry).clone());
            }
        }
    }
    json_write(&v, text)
}

/// Pretty JSON with the indent of `original` (its first indented line;
/// two spaces when it has none); compact JSON when `original` is one line
/// (as some tools save it), so the diff is that line, not the whole file.
fn json_write(v: &Value, original: &str) -> Result<String, String> {
    use serde::Serialize;
    // A byte order mark is kept as it was.
    let bom = if original.starts_with('\u{feff}') { "\u{feff}" } else { "" };
    let body = original.trim_start_matches('\u{feff}').trim();
    if !body.is_empty() && !body.contains(['\n', '\r']) {
        // So is its line end.
        let end = ["\r\n", "\n", "\r"]
            .into_iter()
            .find(|e| original.ends_with(e))
            .unwrap_or("");
        let json = serde_json::to_string(v).map_err(|e| e.to_string())?;
        return Ok(format!("{bom}{json}{end}"));
    }
    let indent = super::json_edit::indent_unit(original);
    let mut out = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
    let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
    v.serialize(&mut ser).map_err(|e| e.to_string())?;
    let json = String::from_utf8(out).map_err(|e| e.to_string())?;
    Ok(format!("{bom}{json}\n"))
}

/// Sets (`Some`) or removes (`None`) the entry `name` under `path` in the
/// JSONC syntax tree of `text`: comments and layout stay as written.
fn jsonc_edit(
    text: &str,
    path: &[&str],
    name: &str,
    entry: Option<&Value>,
) -> Result<String, String> {
    // A byte order mark is kept as it was (the syntax tree has no place
    // for one).
    let (bom, text) = super::json_edit::split_bom(text);
    let root = if text.trim().is_empty() {
        super::vscode::parse_cst("{}\n")?
    } else {
        super::vscode::parse_cst(text)?
    };
    let not_object = || format!("{} is not an object", path.join("."));
    let mut obj = root.object_value_or_create().ok_or_else(not_object)?;
    for p in path {
        obj = match entry {
            Some(_) => obj.object_value_or_create(p).ok_or_else(not_object)?,
            None => obj.object_value(p).ok_or_else(not_object)?,
        };
    }
    match (entry, obj.get(name)) {
        (Some(e), Some(prop)) => prop.set_value(jsonc_value(e)?),
        (Some(e), None) => {
            obj.append(name, jsonc_value(e)?);
        }
        (None, Some(prop)) => prop.remove(),
        (None, None) => return Err(format!("has no entry {name} under {}", path.join("."))),
    }
    Ok(format!("{bom}{root}"))
}

fn jsonc_value(v: &Value) -> Result<jsonc_parser::cst::CstInputValue, String> {
    use jsonc_parser::cst::CstInputValue as J;
    Ok(match v {
        Value::Null => J::Null,
        Value::Bool(b) => J::Bool(*b),
        Value::Number(n) => J::Number(n.to_string()),
        Value::String(s) => J::String(s.clone()),
        Value::Sequence(items) => {
            J::Array(items.iter().map(jsonc_value).collect::<Result<_, _>>()?)
        }
        Value::Mapping(m) => J::Object(
            m.iter()
                .map(|(k, it)| Ok((crate::validation::key_text(k), jsonc_value(it)?)))
                .collect::<Result<_, String>>()?,
        ),
        other => {
            return Err(format!(
                "{} has no JSON form",
                crate::validation::describe(other)
            ));
        }
    })
}

fn toml_value(v: &Value) -> Result<toml_edit::Value, String> {
    Ok(match v {
        Value::String(s) => s.as_str().into(),
        Value::Bool(b) => (*b).into(),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i.into(),
            (None, Some(f)) => f.into(),
            _ => return Err(format!("the number {n} has no TOML form")),
        },
        Value::Sequence(items) => {
            let mut a = toml_edit::Array::new();
            for it in items {
                a.push(toml_value(it)?);
            }
            toml_edit::Value::Array(a)
        }
        Value::Mapping(m) => {
            let mut t = toml_edit::InlineTable::new();
            for (k, it) in m {
                t.insert(crate::validation::key_text(k), toml_value(it)?);
            }
            toml_edit::Value::InlineTable(t)
        }
        other => {
            return Err(format!(
                "{} has no TOML form",
                crate::validation::describe(other)
            ));
        }
    })
}

/// `body` (a file without its byte order mark: callers go through
/// [`without_bom`]) parsed by `toml_edit`, changed by `edit`, and written
/// back with each line's own end, which `toml_edit` does not write back: a CRLF file came back LF throughout, so `--undo`
/// did not restore it and the diff printed every line (the neighbours'
/// secrets too).
fn toml_edited(
    body: &str,
    edit: impl FnOnce(&mut toml_edit::DocumentMut) -> Result<(), String>,
) -> Result<String, String> {
    let mut doc: toml_edit::DocumentMut = body
        .parse()
        .map_err(|e: toml_edit::TomlError| super::codex::not_toml(body, e.message(), e.span()))?;
    edit(&mut doc)?;
    Ok(with_line_ends_of(body, &doc.to_string()))
}

/// The lines of an edit's two texts (each with its own end) and the
/// operations that turn the old into the new, lines compared without
/// their ends.
struct LineDiff<'a> {
    old_raw: Vec<&'a str>,
    new_raw: Vec<&'a str>,
    ops: Vec<similar::DiffOp>,
}

impl<'a> LineDiff<'a> {
    fn of(original: &'a str, edited: &'a str) -> LineDiff<'a> {
        let raw = |t: &'a str| -> Vec<&'a str> { t.split_inclusive('\n').collect() };
        let (old_raw, new_raw) = (raw(original), raw(edited));
        let plain = |ls: &[&'a str]| -> Vec<&'a str> { ls.iter().map(|l| line_text(l)).collect() };
        let ops = similar::capture_diff_slices(similar::Algorithm::Myers, &plain(&old_raw), &plain(&new_raw));
        LineDiff { old_raw, new_raw, ops }
    }
}

/// A line without its end (`\n`, `\r\n`).
fn line_text(l: &str) -> &str {
    l.trim_end_matches('\n').trim_end_matches('\r')
}

/// `edited` (an edit of `original` that may have changed its line ends)
/// with every line it kept ending as it did in `original`, and each new
/// line with the file's usual end (`\r\n` where most lines have it): an
/// edit changes the lines it changes and no others, whatever ends a file
/// mixes (a diff of every line would print the neighbours' secrets).
fn with_line_ends_of(original: &str, edited: &str) -> String {
    let crlf = original.matches("\r\n").count();
    let eol = if crlf > original.matches('\n').count() - crlf { "\r\n" } else { "\n" };
    let LineDiff { old_raw, new_raw, ops } = LineDiff::of(original, edited);
    let mut out = String::with_capacity(edited.len() + edited.len() / 32);
    // A kept last line without an end, now followed by another, gets one.
    let push = |out: &mut String, l: &str| {
        if !out.is_empty() && !out.ends_with('\n') {
            out.push_str(eol);
        }
        out.push_str(l);
    };
    for op in ops {
        match op {
            similar::DiffOp::Equal { old_index, len, .. } => {
                for l in &old_raw[old_index..old_index + len] {
                    push(&mut out, l);
                }
            }
            similar::DiffOp::Delete { .. } => {}
            similar::DiffOp::Insert { new_index, new_len, .. } => {
                for l in &new_raw[new_index..new_index + new_len] {
                    push(&mut out, line_text(l));
                    if l.ends_with('\n') {
                        out.push_str(eol);
                    }
                }
            }
            // A line changed in place ends as the line it replaces did
            // (an inline `mcp_servers = {…}` line in a file of mixed ends).
            similar::DiffOp::Replace { old_index, old_len, new_index, new_len } => {
                for (i, l) in new_raw[new_index..new_index + new_len].iter().enumerate() {
                    push(&mut out, line_text(l));
                    if l.ends_with('\n') {
                        let was = (i < old_len).then(|| old_raw[old_index + i]);
                        out.push_str(match was {
                            Some(w) if w.ends_with("\r\n") => "\r\n",
                            Some(w) if w.ends_with('\n') => "\n",
                            _ => eol,
                        });
                    }
                }
            }
        }
    }
    // A file that did not end with a line end still does not, so set and
    // undo give it back byte for byte.
    if !original.is_empty() && !original.ends_with('\n') {
        let end = out.strip_suffix("\r\n").or_else(|| out.strip_suffix('\n')).map(str::len);
        if let Some(end) = end {
            out.truncate(end);
        }
    }
    out
}

/// The comment lines `toml_edit` holds as standing above the entry `name`
/// at `path`: a `[header]`'s prefix, or that of the key that starts a
/// dotted (`mcp_servers.wasmgate.command = …`) or inline entry.
fn comments_above(doc: &toml_edit::DocumentMut, path: &[&str], name: &str) -> Vec<String> {
    fn first_line(t: &toml_edit::Table) -> Option<&toml_edit::RawString> {
        let (k, v) = t.iter().next()?;
        match v {
            toml_edit::Item::Table(inner) if inner.is_dotted() => first_line(inner),
            _ => t.key(k)?.leaf_decor().prefix(),
        }
    }
    let Some((key, entry)) = item_at(doc, path).and_then(|i| i.as_table_like()?.get_key_value(name)) else {
        return Vec::new();
    };
    let prefix = match entry {
        toml_edit::Item::Table(t) if t.is_dotted() => first_line(t),
        toml_edit::Item::Table(t) => t.decor().prefix(),
        _ => key.leaf_decor().prefix(),
    };
    prefix
        .and_then(toml_edit::RawString::as_str)
        .map(|p| p.lines().filter(|l| is_toml_comment(l)).map(|l| line_text(l).to_string()).collect())
        .unwrap_or_default()
}

fn is_toml_comment(l: &str) -> bool {
    l.trim_start_matches('\u{feff}').trim_start().starts_with('#')
}

/// `edited` (`original` with the entry removed by `toml_edit`) with the
/// comment lines `above` it (see [`comments_above`]) put back where they
/// stood: `toml_edit` drops them with the entry, so `--undo` lost a
/// user's comment (a file's header comment above a dotted-key entry).
/// setup writes no comments, so those are the user's. Only where the edit
/// is one run of lines taken out and that run starts with exactly those
/// comments (identical lines may make a diff start it lower: it is slid
/// up); otherwise `edited` as it is. Blank lines go with the entry unless
/// a kept comment follows them.
fn comments_above_kept(original: &str, edited: &str, above: &[String]) -> String {
    if above.is_empty() {
        return edited.to_string();
    }
    let LineDiff { old_raw, ops, .. } = LineDiff::of(original, edited);
    let mut deleted = ops.iter().filter(|op| !matches!(op, similar::DiffOp::Equal { .. }));
    let (Some(&similar::DiffOp::Delete { old_index, old_len, .. }), None) = (deleted.next(), deleted.next()) else {
        return edited.to_string();
    };
    let leading = |from: usize| -> Option<usize> {
        let run = &old_raw[from..from + old_len];
        let first = run.iter().position(|l| !l.trim().is_empty() && !is_toml_comment(l))?;
        let comments: Vec<&str> = run[..first].iter().filter(|l| is_toml_comment(l)).map(|l| line_text(l)).collect();
        (comments == above).then(|| run[..first].iter().rposition(|l| is_toml_comment(l)).map_or(0, |i| i + 1))
    };
    let mut from = old_index;
    loop {
        if let Some(kept) = leading(from) {
            let mut out = String::with_capacity(original.len());
            old_raw[..from + kept].iter().for_each(|l| out.push_str(l));
            old_raw[from + old_len..].iter().for_each(|l| out.push_str(l));
            return out;
        }
        // The run may equally start a line higher when that line is the
        // same as its last.
        match from.checked_sub(1) {
            Some(up) if line_text(old_raw[up]) == line_text(old_raw[up + old_len]) => from = up,
            _ => return edited.to_string(),
        }
    }
}

/// `text` (decoded: `before`) with `entries` set under `path`.
fn toml_set(text: &str, before: &Value, path: &[&str], entries: &[(&str, &Value)]) -> Result<String, String> {
    without_bom(text, |body| {
        toml_edited(body, |doc| {
            let was_last = closing_space(doc, path);
            toml_set_in(before, doc, path, entries)?;
            closing_space_kept(doc, path, was_last);
            Ok(())
        })
    })
}

/// The item at `path` of `doc`, if there is one.
fn item_at<'a>(doc: &'a toml_edit::DocumentMut, path: &[&str]) -> Option<&'a toml_edit::Item> {
    path.iter().try_fold(doc.as_item(), |item, p| item.get(*p))
}

/// [`item_at`], to change it.
fn item_at_mut<'a>(doc: &'a mut toml_edit::DocumentMut, path: &[&str]) -> Option<&'a mut toml_edit::Item> {
    path.iter().try_fold(doc.as_item_mut(), |item, p| item.get_mut(*p))
}

/// The last member of the inline table at `path` (`mcp_servers = { a =
/// … }`) and the space after its value, before the `}`.
fn closing_space(doc: &toml_edit::DocumentMut, path: &[&str]) -> Option<(String, String)> {
    let (key, value) = item_at(doc, path)?.as_inline_table()?.iter().last()?;
    let space = value.decor().suffix()?.as_str()?;
    space.trim().is_empty().then(|| (key.to_string(), space.to_string()))
}

/// The space before an inline table's `}` kept there when its last member
/// changed (an entry added after it, or the last one removed): `toml_edit`
/// leaves it on the old last value, `{ a = 1 , wasmgate = … }`.
fn closing_space_kept(doc: &mut toml_edit::DocumentMut, path: &[&str], was: Option<(String, String)>) {
    let Some((key, space)) = was else { return };
    let Some(t) = item_at_mut(doc, path).and_then(toml_edit::Item::as_inline_table_mut) else {
        return;
    };
    let Some(last) = t.iter().last().map(|(k, _)| k.to_string()) else { return };
    if last == key {
        return;
    }
    if let Some(v) = t.get_mut(&key) {
        v.decor_mut().set_suffix("");
    }
    if let Some(v) = t.get_mut(&last) {
        v.decor_mut().set_suffix(space);
    }
}

fn toml_set_in(
    before: &Value,
    doc: &mut toml_edit::DocumentMut,
    path: &[&str],
    entries: &[(&str, &Value)],
) -> Result<(), String> {
    // A table on the path may be inline (`mcp_servers = {}`): the entry
    // then goes in as an inline table too.
    let mut cur: &mut dyn toml_edit::TableLike = doc.as_table_mut();
    for p in path {
        if !cur.contains_key(p) {
            let mut t = toml_edit::Table::new();
            // `[mcp_servers.<id>]` headers, no empty `[mcp_servers]`.
            t.set_implicit(true);
            cur.insert(p, toml_edit::Item::Table(t));
        }
        cur = cur
            .get_mut(p)
            .and_then(toml_edit::Item::as_table_like_mut)
            .ok_or_else(|| format!("{} is not a table", path.join(".")))?;
    }
    for (name, entry) in entries {
        let Value::Mapping(m) = entry else {
            return Err("the entry must be a mapping".into());
        };
        // What the entry there holds now, to leave its unchanged members
        // (a user's `[mcp_servers.<id>.env]` table, its comments) as written.
        let old_members = get(before, path, name).and_then(Value::as_mapping);
        match (cur.get_mut(name).and_then(toml_edit::Item::as_table_like_mut), old_members) {
            (Some(old), Some(was)) => {
                let gone: Vec<String> = old
                    .iter()
                    .map(|(k, _)| k.to_string())
                    .filter(|k| !m.contains_key(k.as_str()))
                    .collect();
                for k in gone {
                    old.remove(&k);
                }
                for (k, v) in m {
                    if was.get(k) == Some(v) {
                        continue;
                    }
                    let key = crate::validation::key_text(k);
                    let mut value = toml_value(v)?;
                    match old.get_mut(&key) {
                        // In its place with its key's and value's decor (a
                        // comment before it, or after the value, stays).
                        Some(toml_edit::Item::Value(was)) => {
                            *value.decor_mut() = was.decor().clone();
                            *was = value;
                        }
                        _ => {
                            old.insert(&key, toml_edit::Item::Value(value));
                        }
                    }
                }
            }
            _ => {
                let mut t = toml_edit::Table::new();
                for (k, v) in m {
                    t.insert(
                        &crate::validation::key_text(k),
                        toml_edit::Item::Value(toml_value(v)?),
                    );
                }
                cur.insert(name, toml_edit::Item::Table(t));
            }
        }
    }
    Ok(())
}

/// The error of an edited text that does not decode: the edit's fault
/// (the file's layout is one wasmgate's text edit does not handle), not
/// the file's, which decoded before.
pub(super) fn edit_not_decoded(e: String) -> String {
    format!(
        "wasmgate cannot edit this file's layout (the edited text would not decode: {e}); \
         nothing was written (edit the file by hand)"
    )
}

/// The lines of `text` with their byte-free indent and whether they hold
/// content (not blank, not only a comment).
fn indent_of(l: &str) -> usize {
    l.len() - l.trim_start_matches(' ').len()
}

fn is_content(l: &str) -> bool {
    let t = l.trim();
    !t.is_empty() && !t.starts_with('#')
}

fn key_line(l: &str, key: &str) -> bool {
    let body = l.trim_start_matches(' ');
    [key.to_string(), format!("\"{key}\""), format!("'{key}'")]
        .iter()
        .any(|k| {
            body.strip_prefix(k.as_str())
                .is_some_and(|r| r.trim_start().starts_with(':'))
        })
}

/// The line range `[start, end)` of the block under the top-level (or
/// nested, for each of `path`) key, and the indent of its children.
/// `None` when the key is absent.
fn yaml_block(lines: &[&str], path: &[&str]) -> Result<Option<(usize, usize, usize)>, String> {
    let (mut from, mut to, mut indent) = (0, lines.len(), 0);
    let mut header = None;
    for p in path {
        let Some(i) = (from..to).find(|&i| {
            is_content(lines[i]) && indent_of(lines[i]) == indent && key_line(lines[i], p)
        }) else {
            return Ok(None);
        };
        let after = lines[i].split_once(':').map_or("", |(_, r)| r.trim());
        // `key: # note` heads a block like `key:`.
        let after = if after.starts_with('#') {
            ""
        } else {
            after.split(" #").next().unwrap_or("").trim()
        };
        if !(after.is_empty() || after == "{}" || after == "~" || after == "null") {
            return Err(format!(
                "{} is written inline; wasmgate edits only a block mapping there (edit the file by hand)",
                path.join(".")
            ));
        }
        let end = (i + 1..to)
            .find(|&j| is_content(lines[j]) && indent_of(lines[j]) <= indent)
            .unwrap_or(to);
        let child = (i + 1..end)
            .find(|&j| is_content(lines[j]))
            .map_or(indent + 2, |j| indent_of(lines[j]));
        header = Some(i);
        from = i + 1;
        to = end;
        indent = child;
    }
    Ok(header.map(|_| (from, to, indent)))
}

fn yaml_entry_lines(name: &str, entry: &Value, indent: usize) -> Result<Vec<String>, String> {
    let mut m = Mapping::new();
    m.insert(Value::String(name.into()), entry.clone());
    let text = yaml_serde::to_string(&Value::Mapping(m)).map_err(|e| e.to_string())?;
    let pad = " ".repeat(indent);
    Ok(text.lines().map(|l| format!("{pad}{l}")).collect())
}

/// `edit` applied to `text` without its byte order mark, which is put
/// back in front (the line matching must not see it).
fn without_bom(
    text: &str,
    edit: impl FnOnce(&str) -> Result<String, String>,
) -> Result<String, String> {
    let (bom, body) = super::json_edit::split_bom(text);
    edit(body).map(|t| format!("{bom}{t}"))
}

fn yaml_insert(text: &str, path: &[&str], entries: &[(&str, &Value)]) -> Result<String, String> {
    without_bom(text, |text| yaml_insert_lines(text, path, entries))
}

fn yaml_insert_lines(
    text: &str,
    path: &[&str],
    entries: &[(&str, &Value)],
) -> Result<String, String> {
    let lines_of = |indent: usize| -> Result<Vec<String>, String> {
        let mut all = Vec::new();
        for (name, entry) in entries {
            all.extend(yaml_entry_lines(name, entry, indent)?);
        }
        Ok(all)
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    match yaml_block(&lines, path)? {
        Some((from, to, indent)) => {
            // After the block's last content line (its trailing comments
            // and blank lines stay after the new entry).
            let at = (from..to)
                .rev()
                .find(|&j| is_content(lines[j]))
                .map_or(from, |j| j + 1);
            if from > 0 {
                // `key: {}` / `key:` → `key:` heading a block.
                let h = from - 1;
                if let Some((k, rest)) = out[h].split_once(':') {
                    let rest = rest.trim();
                    // `key:` and `key: # note` already head a block.
                    if !(rest.is_empty() || rest.starts_with('#')) {
                        out[h] = format!("{k}:");
                    }
                }
            }
            out.splice(at..at, lines_of(indent)?);
        }
        None => {
            // Appended at the end, nesting what is missing of `path`.
            let mut depth = 0;
            let mut rest: &[&str] = path;
            // Keep the existing prefix of `path`.
            while let Some((_, tail)) = rest.split_first() {
                let have = &path[..path.len() - tail.len()];
                if yaml_block(&lines, have)?.is_none() {
                    break;
                }
                depth += 1;
                rest = tail;
            }
            if depth > 0 {
                return Err(format!(
                    "{} is not where wasmgate can add to it (edit the file by hand)",
                    path.join(".")
                ));
            }
            for (i, p) in rest.iter().enumerate() {
                out.push(format!("{}{p}:", " ".repeat(2 * i)));
            }
            out.extend(lines_of(2 * rest.len())?);
        }
    }
    Ok(yaml_written(text, &out))
}

/// The edited `lines` of the YAML `text` as a file: each line `text` had
/// with its own end, new ones with the usual one ([`with_line_ends_of`]).
fn yaml_written(text: &str, lines: &[String]) -> String {
    let mut s = lines.join("\n");
    s.push('\n');
    with_line_ends_of(text, &s)
}

fn yaml_remove(text: &str, path: &[&str], name: &str) -> Result<String, String> {
    without_bom(text, |text| yaml_splice_entry(text, path, name, None))
}

/// `text` with the entry `name` under `path` put in its place, so a
/// second `setup` keeps its order among the others.
fn yaml_replace(text: &str, path: &[&str], name: &str, entry: &Value) -> Result<String, String> {
    without_bom(text, |text| yaml_splice_entry(text, path, name, Some(entry)))
}

/// `text` with the lines of the entry `name` under `path` removed, or
/// replaced by those of `entry`.
fn yaml_splice_entry(
    text: &str,
    path: &[&str],
    name: &str,
    entry: Option<&Value>,
) -> Result<String, String> {
    let lines: Vec<&str> = text.lines().collect();
    let Some((from, to, indent)) = yaml_block(&lines, path)? else {
        return Err(format!("has no {}", path.join(".")));
    };
    let Some(start) = (from..to).find(|&i| {
        is_content(lines[i]) && indent_of(lines[i]) == indent && key_line(lines[i], name)
    }) else {
        return Err(format!("has no entry {name} under {}", path.join(".")));
    };
    let end = (start + 1..to)
        .find(|&j| is_content(lines[j]) && indent_of(lines[j]) <= indent)
        .unwrap_or(to);
    // Trailing blank lines and comments at the entry's indent or less
    // belong to what follows; a deeper `# …` line is the entry's (a line
    // of a block scalar, `description: |`, may start with `#`).
    let end = (start + 1..end)
        .rev()
        .find(|&j| is_content(lines[j]) || (!lines[j].trim().is_empty() && indent_of(lines[j]) > indent))
        .map_or(start + 1, |j| j + 1);
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    let new = match entry {
        Some(e) => yaml_entry_lines(name, e, indent)?,
        None => Vec::new(),
    };
    out.splice(start..end, new);
    Ok(yaml_written(text, &out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> Value {
        yaml_serde::from_str("{command: /bin/wasmgate, args: [serve]}").unwrap()
    }

    #[test]
    fn jsonc_with_a_byte_order_mark_is_edited_and_keeps_it() {
        // VS Code reads (and Windows editors write) settings with a BOM.
        let text = "\u{feff}{\n  \"servers\": {\"a\": {\"command\": \"x\"}}\n}\n";
        let out = set_entry(text, Syntax::Jsonc, &["servers"], "wasmgate", &entry()).unwrap();
        assert!(
            out.starts_with('\u{feff}') && out.contains("\"a\""),
            "{out}"
        );
        let back = remove_entry(&out, Syntax::Jsonc, &["servers"], "wasmgate").unwrap();
        assert!(back.starts_with('\u{feff}'), "{back}");
        assert_eq!(
            decode(&back, Syntax::Jsonc).unwrap(),
            decode(text, Syntax::Jsonc).unwrap()
        );
    }

    #[test]
    fn jsonc_keeps_comments_and_trailing_commas_and_undo_restores() {
        let text = "// my settings\n{\n  \"inputs\": [], // none\n  \"servers\": {\n    /* the old one */\n    \"other\": {\"command\": \"x\",},\n  },\n}\n";
        let out = set_entry(text, Syntax::Jsonc, &["servers"], "wasmgate", &entry()).unwrap();
        for c in ["// my settings", "// none", "/* the old one */"] {
            assert!(out.contains(c), "{c} dropped: {out}");
        }
        assert!(out.find("other").unwrap() < out.find("wasmgate").unwrap());
        let back = remove_entry(&out, Syntax::Jsonc, &["servers"], "wasmgate").unwrap();
        assert_eq!(
            decode(&back, Syntax::Jsonc).unwrap(),
            decode(text, Syntax::Jsonc).unwrap()
        );
        for c in ["// my settings", "// none", "/* the old one */"] {
            assert!(back.contains(c), "{c} dropped: {back}");
        }
        // No file yet, and no servers object yet.
        let out = set_entry("", Syntax::Jsonc, &["servers"], "wasmgate", &entry()).unwrap();
        assert_eq!(
            get(
                &decode(&out, Syntax::Jsonc).unwrap(),
                &["servers"],
                "wasmgate"
            ),
            Some(&entry())
        );
        let out = set_entry(
            "{\"inputs\": [] /* x */}",
            Syntax::Jsonc,
            &["servers"],
            "wasmgate",
            &entry(),
        )
        .unwrap();
        assert!(out.contains("/* x */"), "{out}");
    }

    #[test]
    fn yaml_keeps_comments_and_order_and_undo_restores() {
        let text = "# my goose\nGOOSE_PROVIDER: openai\nextensions:\n  # the dev one\n  developer:\n    type: builtin\n    enabled: true\n\n# trailing\nGOOSE_MODEL: x\n";
        let out = set_entry(text, Syntax::Yaml, &["extensions"], "wasmgate", &entry()).unwrap();
        assert!(
            out.contains("# my goose")
                && out.contains("# the dev one")
                && out.contains("# trailing")
        );
        assert!(out.find("developer").unwrap() < out.find("wasmgate").unwrap());
        assert!(out.find("wasmgate").unwrap() < out.find("GOOSE_MODEL").unwrap());
        let back = remove_entry(&out, Syntax::Yaml, &["extensions"], "wasmgate").unwrap();
        assert_eq!(back, text);
        // Absent key: appended.
        let out = set_entry(
            "a: 1\n",
            Syntax::Yaml,
            &["mcp_servers"],
            "wasmgate",
            &entry(),
        )
        .unwrap();
        assert!(
            out.starts_with("a: 1\nmcp_servers:\n  wasmgate:\n"),
            "{out}"
        );
        // Inline mapping: refused.
        assert!(
            set_entry(
                "mcp_servers: {a: {command: x}}\n",
                Syntax::Yaml,
                &["mcp_servers"],
                "w",
                &entry()
            )
            .is_err()
        );
    }

    #[test]
    fn json_keeps_order_and_toml_keeps_comments() {
        let text = "{\n    \"z\": 1,\n    \"mcpServers\": {\"b\": {\"command\": \"x\"}},\n    \"a\": [1, 2.5]\n}\n";
        let out = set_entry(text, Syntax::Json, &["mcpServers"], "wasmgate", &entry()).unwrap();
        assert!(out.find("\"z\"").unwrap() < out.find("\"mcpServers\"").unwrap());
        assert!(out.find("\"b\"").unwrap() < out.find("\"wasmgate\"").unwrap());
        assert!(out.contains("\n    \"z\""), "indent kept: {out}");
        let back = remove_entry(&out, Syntax::Json, &["mcpServers"], "wasmgate").unwrap();
        assert_eq!(
            decode(&back, Syntax::Json).unwrap(),
            decode(text, Syntax::Json).unwrap()
        );
        let text = "# codex\nmodel = \"o3\"\n\n[mcp_servers.docs] # keep\ncommand = \"docs\"\n";
        let out = set_entry(text, Syntax::Toml, &["mcp_servers"], "wasmgate", &entry()).unwrap();
        assert!(out.starts_with(text), "{out}");
        assert!(out.contains("[mcp_servers.wasmgate]"), "{out}");
        let back = remove_entry(&out, Syntax::Toml, &["mcp_servers"], "wasmgate").unwrap();
        assert_eq!(back.trim_end(), text.trim_end());
    }

    #[test]
    fn a_yaml_entry_with_a_local_tag_is_written_with_it() {
        // A tag the user wrote in the entry is written back as a tag (it
        // was written as a one-key mapping `'!custom': 5`, and refused).
        let text = "extensions:\n  wasmgate:\n    cmd: /old\n    v: !custom 5\n    w: !x [1]\n";
        let mut e = get(&decode(text, Syntax::Yaml).unwrap(), &["extensions"], "wasmgate").cloned().unwrap();
        if let Value::Mapping(m) = &mut e {
            m.insert(Value::String("cmd".into()), Value::String("/new".into()));
        }
        let out = set_entry(text, Syntax::Yaml, &["extensions"], "wasmgate", &e).unwrap();
        assert!(out.contains("v: !custom 5") && out.contains("cmd: /new"), "{out}");
    }

    #[test]
    fn mixed_line_ends_stay_on_every_line_an_edit_keeps() {
        for (syntax, path, text) in [
            (Syntax::Toml, "mcp_servers", "a = 1\r\nb = 2\n[mcp_servers.x]\r\ncommand = \"x\"\r\n"),
            (Syntax::Yaml, "extensions", "a: 1\r\nb: 2\nextensions:\r\n  x:\n    cmd: x\r\n"),
        ] {
            let out = set_entry(text, syntax, &[path], "wasmgate", &entry()).unwrap();
            // Every line of the file as it was, line end and all; the
            // new lines with the usual end (CRLF: 3 of 5 lines).
            assert!(out.starts_with(text), "{out:?}");
            assert!(!out[text.len()..].replace("\r\n", "").contains('\n'), "{out:?}");
            let back = remove_entry(&out, syntax, &[path], "wasmgate").unwrap();
            assert_eq!(back, text, "{syntax:?}");
        }
        assert_eq!(with_line_ends_of("a\r\nb", "a\nb\nc\n"), "a\r\nb\r\nc");
        // A line changed in place keeps its own end, not the usual one.
        assert_eq!(with_line_ends_of("a\r\nb\nc\r\n", "a\nB\nc\n"), "a\r\nB\nc\r\n");
        assert_eq!(with_line_ends_of("a\nb\r\nc\n", "a\nB\nc\n"), "a\nB\r\nc\n");
        assert_eq!(with_line_ends_of("a\nb\r\nc", "a\nc\n"), "a\nc");
    }

    #[test]
    fn a_yaml_entry_ending_in_a_block_scalar_line_like_a_comment_is_whole() {
        let text = "extensions:\n  wasmgate:\n    cmd: /old\n    description: |\n      my notes\n      # step 2\n  # next\n  b:\n    cmd: b\n";
        let back = remove_entry(text, Syntax::Yaml, &["extensions"], "wasmgate").unwrap();
        assert_eq!(back, "extensions:\n  # next\n  b:\n    cmd: b\n");
        let out = set_entry(text, Syntax::Yaml, &["extensions"], "wasmgate", &entry()).unwrap();
        assert!(!out.contains("step 2") && out.contains("  # next\n  b:"), "{out}");
    }

    #[test]
    fn a_yaml_entry_set_again_stays_where_it_stands() {
        let text = "extensions:\n  a:\n    cmd: a\n  # ours\n  wasmgate:\n    cmd: /old\n    args: [serve]\n  # next\n  b:\n    cmd: b\n";
        let out = set_entry(text, Syntax::Yaml, &["extensions"], "wasmgate", &entry()).unwrap();
        let (a, w, b) = (out.find("  a:").unwrap(), out.find("  wasmgate:").unwrap(), out.find("  b:").unwrap());
        assert!(a < w && w < b, "{out}");
        assert!(out.contains("  # ours\n  wasmgate:") && out.contains("  # next\n  b:"), "{out}");
        assert!(!out.contains("/old"), "{out}");
        assert_eq!(get(&decode(&out, Syntax::Yaml).unwrap(), &["extensions"], "wasmgate"), Some(&entry()));
    }

    #[test]
    fn toml_keeps_its_crlf_and_byte_order_mark_and_takes_an_inline_table() {
        for text in [
            "# c\r\nmodel = \"x\"\r\n\r\n[mcp_servers.a]\r\ncommand = \"a\"\r\n",
            "\u{feff}model = \"x\"\n",
            "\u{feff}[mcp_servers.a]\r\ncommand = \"a\"\r\n",
        ] {
            let out = set_entry(text, Syntax::Toml, &["mcp_servers"], "wasmgate", &entry()).unwrap();
            // Only lines added: every line of the file is there as it was.
            assert!(out.starts_with(text), "{out:?}");
            if text.contains("\r\n") {
                assert_eq!(out.matches('\n').count(), out.matches("\r\n").count(), "{out:?}");
            }
            let back = remove_entry(&out, Syntax::Toml, &["mcp_servers"], "wasmgate").unwrap();
            assert_eq!(back.trim_end(), text.trim_end(), "{out:?}");
        }
        let text = "mcp_servers = { a = { command = \"a\" } }\n";
        let out = set_entry(text, Syntax::Toml, &["mcp_servers"], "wasmgate", &entry()).unwrap();
        assert_eq!(out.lines().count(), 1, "{out}");
        // The space before the `}` stays there, not before the comma.
        assert!(out.starts_with("mcp_servers = { a = { command = \"a\" }, wasmgate = {"), "{out}");
        assert!(out.ends_with("] } }\n"), "{out}");
        let tight = "mcp_servers = {a = {command = \"a\"}}\n";
        let out = set_entry(tight, Syntax::Toml, &["mcp_servers"], "wasmgate", &entry()).unwrap();
        assert!(out.starts_with("mcp_servers = {a = {command = \"a\"}, wasmgate = {") && out.ends_with("}}\n"), "{out}");
        assert_eq!(remove_entry(&out, Syntax::Toml, &["mcp_servers"], "wasmgate").unwrap(), tight);
        let out = set_entry(text, Syntax::Toml, &["mcp_servers"], "wasmgate", &entry()).unwrap();
        assert_eq!(get(&decode(&out, Syntax::Toml).unwrap(), &["mcp_servers"], "wasmgate"), Some(&entry()));
        let back = remove_entry(&out, Syntax::Toml, &["mcp_servers"], "wasmgate").unwrap();
        assert_eq!(back, text);
    }

    #[test]
    fn a_toml_undo_keeps_the_users_comments_above_the_entry() {
        // A comment above the entry is the user's (setup writes none): it
        // stays, as does a comment inside the file after the entry.
        for (text, want) in [
            (
                "# my codex config\nmcp_servers.wasmgate.command = \"w\"\nmodel = \"o3\"\n",
                "# my codex config\nmodel = \"o3\"\n",
            ),
            (
                "model = \"o3\"\n\n# the gateway\r\n[mcp_servers.wasmgate]\ncommand = \"w\"\n\n[mcp_servers.docs]\ncommand = \"d\"\n",
                "model = \"o3\"\n\n# the gateway\r\n[mcp_servers.docs]\ncommand = \"d\"\n",
            ),
            (
                "# top\n\n[mcp_servers.wasmgate]\n# mine, inside\ncommand = \"w\"\n",
                "# top\n",
            ),
            (
                "\u{feff}# my codex config\n[mcp_servers.wasmgate]\ncommand = \"w\"\n[b]\n",
                "\u{feff}# my codex config\n[b]\n",
            ),
            // The same comment above the entry and above what follows it.
            (
                "a = 1\n# c\n[mcp_servers.wasmgate]\ncommand = \"w\"\nargs = [\"serve\"]\n# c\n[b]\n",
                "a = 1\n# c\n# c\n[b]\n",
            ),
            // Lines of the entry's strings that read like comments go
            // with it, also when its sub-table stands apart.
            (
                "[mcp_servers.wasmgate]\ncommand = \"w\"\nd = \"\"\"\n[b]\n# y\n\"\"\"\n[b]\n[mcp_servers.wasmgate.env]\n",
                "[b]\n",
            ),
            (
                "[mcp_servers.wasmgate]\ncommand = \"w\"\n[other]\nx = \"\"\"\n# y\n\"\"\"\n[mcp_servers.wasmgate.env]\nK = \"\"\"\n# y\n\"\"\"\n",
                "[other]\nx = \"\"\"\n# y\n\"\"\"\n",
            ),
        ] {
            let back = remove_entry(text, Syntax::Toml, &["mcp_servers"], "wasmgate").unwrap();
            assert_eq!(back, want, "{text:?}");
        }
        // Where toml_edit moves a line (dotted keys of one table apart),
        // no comment is put back twice.
        let text = "a.x = 1\nk1 = 2\n# about y\na.y = 3\n[mcp_servers.wasmgate]\ncommand = \"w\"\n";
        let back = remove_entry(text, Syntax::Toml, &["mcp_servers"], "wasmgate").unwrap();
        assert_eq!(back.matches("# about y").count(), 1, "{back}");
        // A file without a final line end keeps none, set and undone.
        for (syntax, path, text) in [
            (Syntax::Toml, "mcp_servers", "model = \"o3\""),
            (Syntax::Yaml, "extensions", "a: 1\nextensions:\n  b:\n    cmd: b"),
            (Syntax::Yaml, "extensions", "extensions:\r\n  b:\r\n    cmd: b"),
        ] {
            let out = set_entry(text, syntax, &[path], "wasmgate", &entry()).unwrap();
            assert!(out.starts_with(text) && !out.ends_with('\n'), "{out:?}");
            let back = remove_entry(&out, syntax, &[path], "wasmgate").unwrap();
            assert_eq!(back, text, "{out:?}");
        }
        // setup's own entry, set and undone, leaves no blank line behind.
        let text = "model = \"o3\"\n";
        let out = set_entry(text, Syntax::Toml, &["mcp_servers"], "wasmgate", &entry()).unwrap();
        let back = remove_entry(&out, Syntax::Toml, &["mcp_servers"], "wasmgate").unwrap();
        assert_eq!(back, text, "{out:?}");
    }

    #[test]
    fn a_toml_entry_set_again_changes_only_the_members_that_differ() {
        // The user's comment on an unchanged member, and their own
        // sub-table, stay as written; a changed member is set in place; a
        // member the new entry lacks goes.
        for text in [
            "[mcp_servers.wasmgate]\ncommand = \"/bin/x\" # mine\n# why\nargs = [\"old\"] # changed\nstale = 1\n\n[mcp_servers.wasmgate.env]\nK = \"v\" # keep\n",
            "mcp_servers.wasmgate = { command = \"/bin/x\", args = [\"old\"], stale = 1, env = { K = \"v\" } }\n",
        ] {
            let was = get(&decode(text, Syntax::Toml).unwrap(), &["mcp_servers"], "wasmgate")
                .cloned()
                .unwrap();
            let Value::Mapping(mut m) = was else { panic!() };
            m.shift_remove("stale");
            m.insert(
                Value::String("args".into()),
                Value::Sequence(vec![Value::String("serve".into())]),
            );
            let new = Value::Mapping(m);
            let out = set_entry(text, Syntax::Toml, &["mcp_servers"], "wasmgate", &new).unwrap();
            let back = get(&decode(&out, Syntax::Toml).unwrap(), &["mcp_servers"], "wasmgate")
                .cloned();
            assert_eq!(back.as_ref(), Some(&new), "{out}");
            assert!(!out.contains("stale") && !out.contains("old"), "{out}");
            if text.starts_with('[') {
                assert!(out.contains("command = \"/bin/x\" # mine"), "{out}");
                assert!(out.contains("# why\nargs = [\"serve\"] # changed"), "{out}");
                assert!(out.contains("[mcp_servers.wasmgate.env]\nK = \"v\" # keep"), "{out}");
            } else {
                assert_eq!(out.lines().count(), 1, "{out}");
            }
        }
    }

    #[test]
    fn one_line_json_stays_one_line() {
        for text in [
            "{\"mcpServers\":{\"b\":{\"command\":\"x\"}},\"z\":true}\n",
            "{\"mcpServers\": {}}",
            "{\"mcpServers\":{}}\r\n",
            "\u{feff}{\"mcpServers\":{}}\n",
        ] {
            let out = set_entry(text, Syntax::Json, &["mcpServers"], "wasmgate", &entry()).unwrap();
            assert_eq!(out.trim_end().lines().count(), 1, "{out}");
            // The line end and a byte order mark stay as they were.
            assert_eq!(out.ends_with('\n'), text.ends_with('\n'), "{out:?}");
            assert_eq!(out.ends_with("\r\n"), text.ends_with("\r\n"), "{out:?}");
            assert_eq!(out.starts_with('\u{feff}'), text.starts_with('\u{feff}'), "{out:?}");
            let back = remove_entry(&out, Syntax::Json, &["mcpServers"], "wasmgate").unwrap();
            // Whitespace inside the line may change (a compact file comes
            // back as it was).
            assert_eq!(
                decode(&back, Syntax::Json).unwrap(),
                decode(text, Syntax::Json).unwrap()
            );
            assert!(text.contains(": ") || back == text, "{back:?}");
        }
        // An empty file gets the pretty form; so does a byte order mark
        // alone, which it keeps.
        let out = set_entry("", Syntax::Json, &["mcpServers"], "wasmgate", &entry()).unwrap();
        assert!(out.lines().count() > 1, "{out}");
        let out = set_entry("\u{feff}", Syntax::Json, &["mcpServers"], "wasmgate", &entry()).unwrap();
        assert!(out.starts_with("\u{feff}{\n"), "{out:?}");
        let pretty = "\u{feff}{\n  \"mcpServers\": {}\n}\n";
        let out = set_entry(pretty, Syntax::Json, &["mcpServers"], "wasmgate", &entry()).unwrap();
        assert!(out.starts_with("\u{feff}{\n") && out.contains("wasmgate"), "{out:?}");
        // Codex's TOML is held to 64 levels here too.
        let deep = format!("a = {}{}\n", "[".repeat(70), "]".repeat(70));
        let e = set_entry(&deep, Syntax::Toml, &["mcp_servers"], "wasmgate", &entry()).unwrap_err();
        assert!(e.contains("deeper than 64 levels"), "{e}");
    }

    #[test]
    fn many_entries_are_set_in_one_edit_in_every_syntax() {
        let entries: Vec<(String, Value)> = (0..300)
            .map(|i| {
                let mut m = Mapping::new();
                m.insert("command".into(), Value::String(format!("/bin/s{i}")));
                (format!("s{i}"), Value::Mapping(m))
            })
            .collect();
        let mut all: Vec<(&str, &Value)> = entries.iter().map(|(n, e)| (n.as_str(), e)).collect();
        let cases = [
            (Syntax::Yaml, "# mine\nmcp_servers:\n  s7: {command: /bin/old}\n  mine: {command: /bin/mine}\nafter: 1\n"),
            (Syntax::Json, "{\n  \"mcp_servers\": {\"s7\": {\"command\": \"/bin/old\"}, \"mine\": {\"command\": \"/bin/mine\"}},\n  \"after\": 1\n}\n"),
            (Syntax::Jsonc, "{ // c\n  \"mcp_servers\": {\"s7\": {\"command\": \"/bin/old\"}, \"mine\": {\"command\": \"/bin/mine\"}},\n  \"after\": 1\n}\n"),
            (Syntax::Toml, "after = 1\n[mcp_servers.s7]\ncommand = \"/bin/old\"\n[mcp_servers.mine]\ncommand = \"/bin/mine\"\n"),
        ];
        for (syntax, text) in cases {
            let out = set_entries(text, syntax, &["mcp_servers"], &all).unwrap();
            let v = decode(&out, syntax).unwrap();
            for (name, entry) in &all {
                assert_eq!(get(&v, &["mcp_servers"], name), Some(*entry), "{syntax:?} {name}");
            }
            // The one there before is replaced, the other entry and key stay.
            assert_eq!(
                get(&v, &["mcp_servers"], "mine").and_then(|m| m.get("command")),
                Some(&Value::String("/bin/mine".into())),
                "{syntax:?}"
            );
            assert_eq!(v.get("after"), decode(text, syntax).unwrap().get("after"));
            assert!(!out.contains("/bin/old"), "{syntax:?}: {out}");
        }
        // Nothing to set: the text as it was; a name twice: refused.
        assert_eq!(set_entries("a: 1\n", Syntax::Yaml, &["mcp_servers"], &[]).unwrap(), "a: 1\n");
        all.push(all[0]);
        let e = set_entries("", Syntax::Yaml, &["mcp_servers"], &all).unwrap_err();
        assert_eq!(e, "the entry s0 is given twice");
    }

    #[test]
    fn yaml_edits_keep_crlf_take_a_commented_header_and_blame_themselves() {
        let text = "# mine\r\nmcp_servers:\r\n  a: {command: x}\r\nafter: 1\r\n";
        let out = set_entry(text, Syntax::Yaml, &["mcp_servers"], "wasmgate", &entry()).unwrap();
        assert!(!out.replace("\r\n", "").contains('\n'), "{out:?}");
        let back = remove_entry(&out, Syntax::Yaml, &["mcp_servers"], "wasmgate").unwrap();
        assert_eq!(back, text);
        // A byte order mark stays in front and does not hide the key.
        let text = "\u{feff}mcp_servers:\n  a: {command: x}\n";
        let out = set_entry(text, Syntax::Yaml, &["mcp_servers"], "wasmgate", &entry()).unwrap();
        assert!(out.starts_with(text), "{out:?}");
        assert_eq!(
            remove_entry(&out, Syntax::Yaml, &["mcp_servers"], "wasmgate").unwrap(),
            text
        );
        // `key: # note` heads a block.
        let text = "mcp_servers: # mine\n  a: {command: x}\n";
        let out = set_entry(text, Syntax::Yaml, &["mcp_servers"], "wasmgate", &entry()).unwrap();
        assert!(out.starts_with(text), "{out}");
        // A layout the text edit cannot handle (a one-line flow mapping):
        // refused as the edit's failure, not as a broken file.
        let e = set_entry(
            "{\"mcp_servers\": {\"a\": {\"command\": \"x\"}}}\n",
            Syntax::Yaml,
            &["mcp_servers"],
            "wasmgate",
            &entry(),
        )
        .unwrap_err();
        assert!(e.contains("cannot edit this file's layout"), "{e}");
    }
}
