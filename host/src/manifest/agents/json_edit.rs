//! Setting and removing entries of one object in a strict JSON file as a
//! text edit. Claude Code's `~/.claude.json` keeps each project's history
//! and may be tens of megabytes: decoding it whole to add one entry took
//! gigabytes (a 63 MiB file, 7.6 GB). Here only the objects on the entry's
//! path are looked into (`serde_json`'s `RawValue` borrows every other
//! value as text, checked by the parser and never built), the entry's text
//! is spliced in with the file's own indent and line end, and every other
//! byte stays as it was.
//!
//! The result is read again the same way before it is returned: the
//! members off the path must be byte for byte what they were, in their
//! order, and the entries exactly what was asked (`super::edit`'s promise).

use crate::document::{Mapping, Value};
use serde::de::{self, Deserializer as _};
use serde_json::value::RawValue;
use super::super::load::not_json;

/// An object's members: each key (unescaped) and its value's text, a
/// slice of the file.
type Members<'a> = Vec<(String, &'a str)>;

/// What a value on the path is.
enum Node<'a> {
    Object(Members<'a>),
    Null,
    Other,
}

/// Reads the value `raw` (a slice of the file's text `whole`, no outer
/// whitespace): an object's members, unbuilt, or what else it is. A key
/// given twice on the path is refused, as the decoder refuses it, at its
/// place in `whole`.
fn node<'a>(whole: &str, raw: &'a str) -> Result<Node<'a>, String> {
    if raw == "null" {
        return Ok(Node::Null);
    }
    if !raw.starts_with('{') {
        return Ok(Node::Other);
    }
    struct Visit;
    impl<'de> de::Visitor<'de> for Visit {
        type Value = Members<'de>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: de::MapAccess<'de>>(self, mut a: A) -> Result<Members<'de>, A::Error> {
            let mut m: Members<'de> = Vec::new();
            let mut seen = std::collections::HashSet::new();
            while let Some(k) = a.next_key::<String>()? {
                if !seen.insert(k.clone()) {
                    return Err(de::Error::custom(format!("duplicate entry with key {k:?}")));
                }
                let v: &'de RawValue = a.next_value()?;
                m.push((k, v.get()));
            }
            Ok(m)
        }
    }
    let mut de = serde_json::Deserializer::from_str(raw);
    let m = de
        .deserialize_map(Visit)
        .and_then(|m| de.end().map(|()| m))
        .map_err(|e| not_json(whole, at(whole, raw), &e))?;
    Ok(Node::Object(m))
}

/// Why the top-level value `raw` is refused: not JSON at all (a second
/// byte order mark, a stray word), or JSON that is no object.
fn not_a_mapping(whole: &str, raw: &str) -> String {
    match serde_json::from_str::<de::IgnoredAny>(raw) {
        Err(e) => not_json(whole, at(whole, raw), &e),
        Ok(_) => "is not a mapping at its top level".into(),
    }
}

/// The byte offset of `part` (a slice of `text`) in `text`.
fn at(text: &str, part: &str) -> usize {
    let off = (part.as_ptr() as usize).wrapping_sub(text.as_ptr() as usize);
    debug_assert!(off <= text.len() && off + part.len() <= text.len());
    off
}

/// The file's layout: what an inserted member looks like beside the
/// others.
struct Layout {
    /// One indent step (the first indented line's whitespace; two spaces).
    unit: String,
    /// `\r\n` when the file uses it, `\r` when it has no other.
    nl: &'static str,
}

impl Layout {
    fn of(body: &str) -> Layout {
        Layout {
            unit: indent_unit(body),
            nl: if body.contains("\r\n") {
                "\r\n"
            } else if body.contains('\r') && !body.contains('\n') {
                "\r"
            } else {
                "\n"
            },
        }
    }

    /// `v` as JSON text starting at a line indented by `indent`: pretty
    /// (continuation lines indented), or on one line when `compact`.
    fn render(&self, v: &Value, indent: &str, compact: bool) -> Result<String, String> {
        use serde::Serialize;
        if compact {
            return serde_json::to_string(v).map_err(|e| e.to_string());
        }
        let mut out = Vec::new();
        let fmt = serde_json::ser::PrettyFormatter::with_indent(self.unit.as_bytes());
        let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
        v.serialize(&mut ser).map_err(|e| e.to_string())?;
        let s = String::from_utf8(out).map_err(|e| e.to_string())?;
        // A JSON string never holds a raw line break: every `\n` here is
        // the formatter's.
        Ok(s.replace('\n', &format!("{}{indent}", self.nl)))
    }
}

/// One indent step of `text`: its first indented line's whitespace, two
/// spaces when it has none.
pub(super) fn indent_unit(text: &str) -> String {
    text.split(['\n', '\r'])
        .skip(1)
        .find_map(|l| {
            let ws: String = l.chars().take_while(|c| *c == ' ' || *c == '\t').collect();
            (!ws.is_empty()).then_some(ws)
        })
        .unwrap_or_else(|| "  ".into())
}

/// The whitespace that opens the line holding byte `pos` of `text`.
fn line_indent(text: &str, pos: usize) -> &str {
    let start = text[..pos].rfind(['\n', '\r']).map_or(0, |i| i + 1);
    let line = &text[start..pos];
    let n = line.len() - line.trim_start_matches([' ', '\t']).len();
    &line[..n]
}

/// The offset of the first byte at or after `pos` that is not JSON
/// whitespace.
fn skip_ws(text: &str, pos: usize) -> usize {
    text[pos..]
        .find(|c: char| !matches!(c, ' ' | '\t' | '\n' | '\r'))
        .map_or(text.len(), |i| pos + i)
}

/// A replacement of the bytes `start..end` of the body.
type Splice = (usize, usize, String);

/// The splice that adds `added` (key, value) at the end of the object
/// `obj` (a slice of `body`) with members `ms`.
fn append(
    body: &str,
    obj: &str,
    ms: &Members<'_>,
    added: &[(&str, &Value)],
    layout: &Layout,
) -> Result<Splice, String> {
    let start = at(body, obj);
    let end = start + obj.len();
    let key = |k: &str| serde_json::to_string(k).map_err(|e| e.to_string());
    let one_line = !obj.contains(['\n', '\r']);
    // An empty `{}` in a laid-out file opens up; one that stands in a
    // one-line file, or a one-line object with members, stays one line.
    let compact = one_line && (!ms.is_empty() || !body.trim().contains(['\n', '\r']));
    if compact {
        let sep = if obj.contains(", ") || body.contains(", \"") { ", " } else { "," };
        let colon = if body.contains("\": ") { ": " } else { ":" };
        let mut text = String::new();
        for (i, (k, v)) in added.iter().enumerate() {
            if i > 0 || !ms.is_empty() {
                text.push_str(sep);
            }
            text.push_str(&key(k)?);
            text.push_str(colon);
            text.push_str(&layout.render(v, "", true)?);
        }
        return Ok(match ms.last() {
            Some((_, last)) => {
                let after = at(body, last) + last.len();
                (after, after, text)
            }
            None => (start + 1, end - 1, text),
        });
    }
    // Each member on a line of its own at `indent`, a comma before each
    // but the first unless `comma_first`.
    let members = |indent: &str, comma_first: bool| -> Result<String, String> {
        let mut text = String::new();
        for (i, (k, v)) in added.iter().enumerate() {
            if i > 0 || comma_first {
                text.push(',');
            }
            text.push_str(layout.nl);
            text.push_str(indent);
            text.push_str(&key(k)?);
            text.push_str(": ");
            text.push_str(&layout.render(v, indent, false)?);
        }
        Ok(text)
    };
    match ms.last() {
        Some((_, last)) => {
            let after = at(body, last) + last.len();
            // The last member's own indent (its value starts on its key's line).
            let indent = line_indent(body, after - last.len());
            Ok((after, after, members(indent, true)?))
        }
        None => {
            let outer = line_indent(body, start);
            let text = members(&format!("{outer}{}", layout.unit), false)?;
            Ok((start + 1, end - 1, format!("{text}{}{outer}", layout.nl)))
        }
    }
}

/// The splices that make the object `raw` (a slice of `body`) hold the
/// members of `value`, member by member: one whose value reads the same
/// stays as written (its layout, a number past 64 bits that a rewrite
/// would print as a float), one that differs gets the new value in its
/// place, one `value` lacks goes, and new ones are added at its end.
/// `None` when `raw` or `value` is no object, or when no member stays
/// (the caller then writes the value whole).
fn member_splices(
    body: &str,
    raw: &str,
    value: &Value,
    layout: &Layout,
) -> Result<Option<Vec<Splice>>, String> {
    let (Value::Mapping(new), Node::Object(ms)) = (value, node(body, raw)?) else {
        return Ok(None);
    };
    let value_end = |j: usize| at(body, ms[j].1) + ms[j].1.len();
    // The first member kept; none: the value is written whole.
    let Some(first) = ms.iter().position(|(k, _)| new.contains_key(k.as_str())) else {
        return Ok(None);
    };
    let mut splices = Vec::new();
    if first > 0 {
        // The members before it, from the first key to its key (after
        // the comma before it), which takes the first key's place.
        let key = skip_ws(body, skip_ws(body, value_end(first - 1)) + 1);
        splices.push((skip_ws(body, at(body, raw) + 1), key, String::new()));
    }
    for (i, (k, v)) in ms.iter().enumerate().skip(first) {
        match new.get(k.as_str()) {
            // From the end of the member before: `, "k": value`.
            None => splices.push((value_end(i - 1), value_end(i), String::new())),
            Some(want) if super::super::load::decode_json_within(body, v).as_ref() == Ok(want) => {}
            Some(want) => {
                let start = at(body, v);
                let compact = !raw.contains(['\n', '\r']);
                let text = layout.render(want, line_indent(body, start), compact)?;
                splices.push((start, start + v.len(), text));
            }
        }
    }
    let added: Vec<(&str, &Value)> = new
        .iter()
        .filter_map(|(k, v)| k.as_str().map(|k| (k, v)))
        .filter(|(k, _)| find(&ms, k).is_none())
        .collect();
    if !added.is_empty() {
        splices.push(append(body, raw, &ms, &added, layout)?);
    }
    Ok(Some(splices))
}

/// The object holding `rest` of the path, then the entries.
fn nested(rest: &[&str], entries: &[(&str, &Value)]) -> Value {
    let mut m = Mapping::new();
    match rest.split_first() {
        Some((p, more)) => {
            m.insert(Value::String((*p).into()), nested(more, entries));
        }
        None => {
            for (k, v) in entries {
                m.insert(Value::String((*k).into()), (*v).clone());
            }
        }
    }
    Value::Mapping(m)
}

/// `text`'s byte order mark (or `""`) and the text after it.
pub(super) fn split_bom(text: &str) -> (&str, &str) {
    match text.strip_prefix('\u{feff}') {
        Some(rest) => ("\u{feff}", rest),
        None => ("", text),
    }
}

/// `text` as it is parsed: a lone surrogate's escape read as U+FFFD's,
/// at the same length (`load::lone_surrogates_replaced`).
fn readable(text: &str) -> std::borrow::Cow<'_, str> {
    super::super::load::lone_surrogates_replaced(text)
}

/// The top-level value of `body` (no outer whitespace), its syntax and
/// depth checked as the decoder checks them.
fn root(body: &str) -> Result<&str, String> {
    super::super::depth::check_json_depth(body, super::super::depth::MAX_DEPTH)?;
    Ok(body.trim_matches([' ', '\t', '\n', '\r']))
}

/// The entry `name` under `path` of the JSON `text` (built alone); `None`
/// when the file, the path or the entry is absent, or `null`.
///
/// # Errors
/// The file is not JSON, or not an object at its top level.
pub(super) fn entry(text: &str, path: &[&str], name: &str) -> Result<Option<Value>, String> {
    let (_, body) = split_bom(text);
    if body.trim().is_empty() {
        return Ok(None);
    }
    let view = readable(body);
    let body: &str = &view;
    let top = root(body)?;
    let mut ms = match node(body, top)? {
        Node::Object(ms) => ms,
        Node::Null => return Ok(None),
        Node::Other => return Err(not_a_mapping(body, top)),
    };
    for p in path {
        let Some(raw) = find(&ms, p) else {
            return Ok(None);
        };
        match node(body, raw)? {
            Node::Object(inner) => ms = inner,
            Node::Null | Node::Other => return Ok(None),
        }
    }
    find(&ms, name)
        .filter(|raw| *raw != "null")
        .map(|raw| super::super::load::decode_json_within(body, raw))
        .transpose()
}

/// `text` with each of `entries` set under `path`: a member there gets
/// the new value in its place, the others are added at the end of the
/// object; an absent (or `null`) object on the path is created. `None`
/// when the file holds no object to edit (empty, or `null`): the caller
/// writes a new one.
///
/// # Errors
/// The file is not JSON or not an object; a value on the path is no
/// object; the edited text does not read back as asked.
pub(super) fn set_entries(
    text: &str,
    path: &[&str],
    entries: &[(&str, &Value)],
) -> Result<Option<String>, String> {
    let (bom, text) = split_bom(text);
    if text.trim().is_empty() {
        return Ok(None);
    }
    // Read through its readable view; the splices' offsets are the same in
    // the text, which they are made in.
    let view = readable(text);
    let body: &str = &view;
    let layout = Layout::of(body);
    let top = root(body)?;
    let mut obj = top;
    let mut ms = match node(body, top)? {
        Node::Object(ms) => ms,
        Node::Null => return Ok(None),
        Node::Other => return Err(not_a_mapping(body, top)),
    };
    let mut splices: Vec<Splice> = Vec::new();
    let mut done = false;
    for (depth, p) in path.iter().enumerate() {
        let Some(raw) = find(&ms, p) else {
            let value = nested(&path[depth + 1..], entries);
            splices.push(append(body, obj, &ms, &[(p, &value)], &layout)?);
            done = true;
            break;
        };
        match node(body, raw)? {
            Node::Object(inner) => {
                obj = raw;
                ms = inner;
            }
            Node::Null => {
                let value = nested(&path[depth + 1..], entries);
                let start = at(body, raw);
                let compact = !body.trim().contains(['\n', '\r']);
                let text = layout.render(&value, line_indent(body, start), compact)?;
                splices.push((start, start + raw.len(), text));
                done = true;
                break;
            }
            Node::Other => return Err(format!("{} is not an object", path[..=depth].join("."))),
        }
    }
    if !done {
        let mut added = Vec::new();
        for (name, value) in entries {
            match find(&ms, name) {
                Some(raw) => {
                    if let Some(inner) = member_splices(body, raw, value, &layout)? {
                        splices.extend(inner);
                        continue;
                    }
                    let start = at(body, raw);
                    let compact = !obj.contains(['\n', '\r']);
                    let text = layout.render(value, line_indent(body, start), compact)?;
                    splices.push((start, start + raw.len(), text));
                }
                None => added.push((*name, *value)),
            }
        }
        if !added.is_empty() {
            splices.push(append(body, obj, &ms, &added, &layout)?);
        }
    }
    let out = format!("{bom}{}", apply(text, splices));
    let after = readable(split_bom(&out).1);
    if !same_except(Some(top), root(&after).map_err(super::edit::edit_not_decoded)?, path, entries, None)? {
        return Err(super::edit::changed_more(entries.len()));
    }
    Ok(Some(out))
}

/// `text` without the member `name` of the object at `path`; the other
/// bytes as they were.
///
/// # Errors
/// As [`set_entries`]; also when there is no such entry.
pub(super) fn remove_entry(text: &str, path: &[&str], name: &str) -> Result<String, String> {
    let (bom, text) = split_bom(text);
    let missing = || format!("has no entry {name} under {}", path.join("."));
    if text.trim().is_empty() {
        return Err(missing());
    }
    let view = readable(text);
    let body: &str = &view;
    let top = root(body)?;
    let mut obj = top;
    let mut ms = match node(body, top)? {
        Node::Object(ms) => ms,
        Node::Null => return Err(missing()),
        Node::Other => return Err(not_a_mapping(body, top)),
    };
    for p in path {
        let raw = find(&ms, p).ok_or_else(missing)?;
        match node(body, raw)? {
            Node::Object(inner) => {
                obj = raw;
                ms = inner;
            }
            _ => return Err(missing()),
        }
    }
    let i = ms.iter().position(|(k, _)| k == name).ok_or_else(missing)?;
    let value_end = |j: usize| at(body, ms[j].1) + ms[j].1.len();
    // The key that follows member `j`'s value (after its comma).
    let next_key = |j: usize| {
        let comma = skip_ws(body, value_end(j));
        skip_ws(body, comma + 1)
    };
    let start = at(body, obj);
    let splice = if ms.len() == 1 {
        // The object's inside goes: `{}`.
        (start + 1, start + obj.len() - 1, String::new())
    } else if i > 0 {
        // From the end of the member before: `, "name": value`.
        (value_end(i - 1), value_end(i), String::new())
    } else {
        // The first member up to the next one's key, which takes its place.
        (skip_ws(body, start + 1), next_key(0), String::new())
    };
    let out = format!("{bom}{}", apply(text, vec![splice]));
    let after = readable(split_bom(&out).1);
    if !same_except(Some(top), root(&after).map_err(super::edit::edit_not_decoded)?, path, &[], Some(name))? {
        return Err(super::edit::changed_more(1));
    }
    Ok(out)
}

/// The value text of member `key` of `m`.
fn find<'a>(m: &Members<'a>, key: &str) -> Option<&'a str> {
    m.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
}

/// `body` with the splices (which do not overlap) made.
fn apply(body: &str, mut splices: Vec<Splice>) -> String {
    splices.sort_by_key(|s| s.0);
    let mut out = String::with_capacity(body.len() + splices.iter().map(|s| s.2.len()).sum::<usize>());
    let mut pos = 0;
    for (start, end, text) in splices {
        out.push_str(&body[pos..start]);
        out.push_str(&text);
        pos = end;
    }
    out.push_str(&body[pos..]);
    out
}

/// Whether the object `after` is the object `before` (`None`: absent)
/// with, under `path`, exactly `set` set and `removed` gone: every other
/// member, on each level, the same bytes in the same order.
fn same_except(
    before: Option<&str>,
    after: &str,
    path: &[&str],
    set: &[(&str, &Value)],
    removed: Option<&str>,
) -> Result<bool, String> {
    let bm = match before.map(|b| node(b, b)).transpose()? {
        Some(Node::Object(m)) => m,
        None | Some(Node::Null) => Vec::new(),
        Some(Node::Other) => return Ok(false),
    };
    let Node::Object(am) = node(after, after)? else {
        return Ok(false);
    };
    let skipped = |k: &str| match path.first() {
        Some(p) => k == *p,
        None => removed == Some(k) || set.iter().any(|(n, _)| *n == k),
    };
    if !bm
        .iter()
        .filter(|(k, _)| !skipped(k))
        .eq(am.iter().filter(|(k, _)| !skipped(k)))
    {
        return Ok(false);
    }
    match path.split_first() {
        Some((p, rest)) => match find(&am, p) {
            Some(a) => same_except(find(&bm, p), a, rest, set, removed),
            None => Ok(false),
        },
        None => {
            for (name, value) in set {
                match find(&am, name) {
                    Some(raw) if super::super::load::decode_json(raw).as_ref() == Ok(*value) => {}
                    _ => return Ok(false),
                }
            }
            Ok(removed.is_none_or(|r| find(&am, r).is_none()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ours() -> Value {
        yaml_serde::from_str("{command: /bin/wasmgate, args: [serve]}").unwrap()
    }

    #[test]
    fn an_entry_set_again_changes_only_the_members_that_differ() {
        let text = "{\"mcpServers\": {\n  \"wasmgate\": {\n    \"command\": \"/old\",\n    \"url\": \"http://x\",\n    \"env\": {\"K\": 98765432109876543210987, \"T\": 1e3},\n    \"args\": [\"serve\"]\n  }\n}}\n";
        let was = entry(text, &["mcpServers"], "wasmgate").unwrap().unwrap();
        let Value::Mapping(mut m) = was else { panic!() };
        m.shift_remove("url");
        m.insert(Value::String("command".into()), Value::String("/new".into()));
        m.insert(Value::String("type".into()), Value::String("stdio".into()));
        let new = Value::Mapping(m);
        let out = set_entries(text, &["mcpServers"], &[("wasmgate", &new)]).unwrap().unwrap();
        // The kept members as written: the 23-digit number, `1e3`, the
        // one-line list; the changed one in its place; the new one last.
        assert_eq!(
            out,
            "{\"mcpServers\": {\n  \"wasmgate\": {\n    \"command\": \"/new\",\n    \"env\": {\"K\": 98765432109876543210987, \"T\": 1e3},\n    \"args\": [\"serve\"],\n    \"type\": \"stdio\"\n  }\n}}\n"
        );
        assert_eq!(entry(&out, &["mcpServers"], "wasmgate").unwrap(), Some(new.clone()));
        // Its first members gone: the next key takes their place, the
        // rest as written.
        let Value::Mapping(mut m) = new else { panic!() };
        m.shift_remove("command");
        let new = Value::Mapping(m);
        let out2 = set_entries(&out, &["mcpServers"], &[("wasmgate", &new)]).unwrap().unwrap();
        assert_eq!(entry(&out2, &["mcpServers"], "wasmgate").unwrap(), Some(new.clone()));
        assert!(out2.contains("{\n    \"env\": {\"K\": 98765432109876543210987, \"T\": 1e3},\n"), "{out2}");
        let Value::Mapping(mut m) = new else { panic!() };
        m.shift_remove("env");
        m.shift_remove("args");
        let new = Value::Mapping(m);
        let out3 = set_entries(&out2, &["mcpServers"], &[("wasmgate", &new)]).unwrap().unwrap();
        assert!(out3.contains("\"wasmgate\": {\n    \"type\": \"stdio\"\n  }"), "{out3}");
        // None kept: written whole.
        let none = Value::Mapping(Mapping::new());
        let out4 = set_entries(&out3, &["mcpServers"], &[("wasmgate", &none)]).unwrap().unwrap();
        assert_eq!(entry(&out4, &["mcpServers"], "wasmgate").unwrap(), Some(none));
    }

    #[test]
    fn a_key_given_twice_deep_in_the_file_is_placed_in_the_file() {
        let text = "\n{\n  \"x\": \"ééé\",\n  \"mcpServers\": {\n    \"a\": {},\n    \"a\": {}\n  }\n}\n";
        for e in [
            entry(text, &["mcpServers"], "wasmgate").unwrap_err(),
            set_entries(text, &["mcpServers"], &[("wasmgate", &ours())]).unwrap_err(),
            remove_entry(text, &["mcpServers"], "a").unwrap_err(),
        ] {
            assert!(e.contains("duplicate entry with key \"a\" at line 6 column 7"), "{e}");
        }
        // Inside the entry itself, which is decoded alone.
        let text = "\n\n{\"mcpServers\": {\n  \"wasmgate\": {\"command\": \"wasmgate\",\n    \"env\": {\"A\": \"1\", \"A\": \"2\"}}}}\n";
        let e = entry(text, &["mcpServers"], "wasmgate").unwrap_err();
        assert!(e.contains("at line 5 column 25"), "{e}");
    }

    fn set(text: &str, path: &[&str]) -> String {
        set_entries(text, path, &[("wasmgate", &ours())])
            .unwrap()
            .expect("an object to edit")
    }

    #[test]
    fn an_entry_set_then_removed_gives_back_every_byte() {
        for text in [
            "{\n  \"z\": 1.0,\n  \"mcpServers\": {\n    \"b\": {\"command\": \"x\"}\n  },\n  \"n\": 123456789012345678901234567890\n}\n",
            "{\n    \"mcpServers\": {\n        \"b\": {}\n    }\n}",
            "{\n\t\"mcpServers\": {\n\t\t\"b\": {}\n\t}\n}\n",
            "{\r\n  \"mcpServers\": {\r\n    \"b\": {}\r\n  }\r\n}\r\n",
            "{\n  \"mcpServers\": {},\n  \"e\": \"\\u00e9\"\n}\n",
            "{\"mcpServers\":{\"b\":{\"command\":\"x\"}},\"z\":true}",
            "{\"mcpServers\": {\"b\": {\"command\": \"x\"}}, \"z\": true}\n",
            "\u{feff}{\"mcpServers\":{}}\r\n",
            "  {\"mcp\\u0053ervers\": {\"b\": 1}}  ",
        ] {
            let out = set(text, &["mcpServers"]);
            assert_eq!(
                entry_of(&out),
                Some(ours()),
                "{text:?} gave {out:?}"
            );
            assert_eq!(remove_entry(&out, &["mcpServers"], "wasmgate").unwrap(), text);
            // A one-line file stays one line; CRLF stays CRLF.
            if !text.trim().contains('\n') {
                assert_eq!(out.trim().lines().count(), 1, "{out:?}");
            }
            assert_eq!(out.contains("\r\n"), text.contains("\r\n"), "{out:?}");
            assert!(!out.replace("\r\n", "").contains('\r'), "{out:?}");
        }
    }

    fn entry_of(text: &str) -> Option<Value> {
        entry(text, &["mcpServers"], "wasmgate").unwrap()
    }

    #[test]
    fn a_lone_surrogate_elsewhere_is_kept_as_written() {
        // JavaScript writes one for a string cut inside a character;
        // serde_json refused the whole file over it.
        let text = "{\n  \"h\": \"abc\\ud83d\", \"p\": \"\\ud83d\\ude00\\udc00\",\n  \"mcpServers\": {}\n}\n";
        let out = set(text, &["mcpServers"]);
        assert!(out.contains("\"abc\\ud83d\"") && out.contains("wasmgate"), "{out}");
        assert_eq!(entry_of(&out), Some(ours()));
        assert_eq!(remove_entry(&out, &["mcpServers"], "wasmgate").unwrap(), text);
    }

    #[test]
    fn a_file_with_only_carriage_returns_keeps_them() {
        let text = "{\r  \"mcpServers\": {\r    \"b\": 1\r  }\r}\r";
        let out = set(text, &["mcpServers"]);
        assert!(!out.contains('\n') && out.contains("\r    \"wasmgate\": {\r"), "{out:?}");
        assert_eq!(remove_entry(&out, &["mcpServers"], "wasmgate").unwrap(), text);
    }

    #[test]
    fn the_entry_lands_with_its_neighbours_indent() {
        let text = "{\n  \"a\": [1, 2],\n  \"mcpServers\": {\n    \"b\": {\n      \"command\": \"x\"\n    }\n  }\n}\n";
        assert_eq!(
            set(text, &["mcpServers"]),
            "{\n  \"a\": [1, 2],\n  \"mcpServers\": {\n    \"b\": {\n      \"command\": \"x\"\n    },\n    \"wasmgate\": {\n      \"command\": \"/bin/wasmgate\",\n      \"args\": [\n        \"serve\"\n      ]\n    }\n  }\n}\n"
        );
        // An empty object opens up; an absent one is added; `null` is replaced.
        assert_eq!(
            set("{\n  \"mcpServers\": {}\n}\n", &["mcpServers"]),
            "{\n  \"mcpServers\": {\n    \"wasmgate\": {\n      \"command\": \"/bin/wasmgate\",\n      \"args\": [\n        \"serve\"\n      ]\n    }\n  }\n}\n"
        );
        assert_eq!(
            set("{\n  \"a\": 1\n}\n", &["mcp", "servers"]),
            "{\n  \"a\": 1,\n  \"mcp\": {\n    \"servers\": {\n      \"wasmgate\": {\n        \"command\": \"/bin/wasmgate\",\n        \"args\": [\n          \"serve\"\n        ]\n      }\n    }\n  }\n}\n"
        );
        assert_eq!(
            set("{\"mcpServers\": null}", &["mcpServers"]),
            "{\"mcpServers\": {\"wasmgate\":{\"command\":\"/bin/wasmgate\",\"args\":[\"serve\"]}}}"
        );
        // A value there is replaced where it stands.
        let text = "{\"mcpServers\": {\"wasmgate\": 1, \"b\": 2}}";
        assert_eq!(
            set(text, &["mcpServers"]),
            "{\"mcpServers\": {\"wasmgate\": {\"command\":\"/bin/wasmgate\",\"args\":[\"serve\"]}, \"b\": 2}}"
        );
    }

    #[test]
    fn each_member_is_removed_from_where_it_stands() {
        let e = "{\"command\": \"w\"}";
        for (text, want) in [
            (
                format!("{{\n  \"s\": {{\n    \"wasmgate\": {e},\n    \"b\": 1\n  }}\n}}"),
                "{\n  \"s\": {\n    \"b\": 1\n  }\n}",
            ),
            (
                format!("{{\n  \"s\": {{\n    \"a\": 0,\n    \"wasmgate\": {e},\n    \"b\": 1\n  }}\n}}"),
                "{\n  \"s\": {\n    \"a\": 0,\n    \"b\": 1\n  }\n}",
            ),
            (
                format!("{{\"s\":{{\"a\":0,\"wasmgate\":{e}}}}}"),
                "{\"s\":{\"a\":0}}",
            ),
            (format!("{{\"s\": {{ \"wasmgate\": {e} }}}}"), "{\"s\": {}}"),
        ] {
            assert_eq!(remove_entry(&text, &["s"], "wasmgate").unwrap(), want, "{text}");
        }
        let e = remove_entry("{\"s\": {}}", &["s"], "wasmgate").unwrap_err();
        assert_eq!(e, "has no entry wasmgate under s");
    }

    #[test]
    fn what_is_not_an_object_to_edit_is_refused_by_name() {
        let e = set_entries("{\"mcpServers\": [1]}", &["mcpServers"], &[("w", &ours())]).unwrap_err();
        assert_eq!(e, "mcpServers is not an object");
        let e = set_entries("[1]", &["mcpServers"], &[("w", &ours())]).unwrap_err();
        assert_eq!(e, "is not a mapping at its top level");
        assert_eq!(entry("[1]", &["mcpServers"], "w").unwrap_err(), "is not a mapping at its top level");
        // A second byte order mark is no JSON, not a non-object.
        let e = entry("\u{feff}\u{feff}{}", &["s"], "w").unwrap_err();
        assert!(e.starts_with("is not valid JSON: "), "{e}");
        let e = set_entries("{\"a\": 1,\n \"b\": tru}", &["mcpServers"], &[("w", &ours())]).unwrap_err();
        assert!(e.starts_with("is not valid JSON: ") && e.contains("line 2"), "{e}");
        // A key twice on the path: which one the agent reads is its own
        // choice; not guessed.
        let e = set_entries("{\"mcpServers\": {}, \"mcpServers\": {}}", &["mcpServers"], &[("w", &ours())])
            .unwrap_err();
        assert!(e.contains("duplicate entry with key \"mcpServers\""), "{e}");
        // Trailing text, and nesting past the bound, as the decoder refuses them.
        assert!(entry("{} x", &["s"], "w").unwrap_err().contains("trailing"));
        let deep = format!("{{\"a\": {}{}}}", "[".repeat(200), "]".repeat(200));
        assert!(set_entries(&deep, &["s"], &[("w", &ours())]).is_err());
        // Nothing to edit: the caller writes a new file.
        assert_eq!(set_entries(" \n", &["s"], &[("w", &ours())]).unwrap(), None);
        assert_eq!(set_entries("null", &["s"], &[("w", &ours())]).unwrap(), None);
        assert_eq!(entry("null", &["s"], "w").unwrap(), None);
        assert_eq!(entry("{\"s\": 3}", &["s"], "w").unwrap(), None);
    }
}
