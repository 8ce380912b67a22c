//! The fast YAML decode: libyaml's events straight into the manifest
//! document (`crate::document`), without `yaml_serde`'s event loader in
//! between (`docs/performance.md`, "2026-12-05, libyaml's events straight
//! into the document").
//!
//! It is the same parser (`libyaml-rs`, the one `yaml_serde` drives, at
//! the same version) with the same settings, and the same rules for what a
//! plain scalar is (null, boolean, integer, float or string: `yaml_serde`
//! 0.10's, ported in [`plain`]). It decodes only what it knows it decodes
//! alike: on anything else — a parse error, an anchor, an alias, a tag, a
//! key given twice, an integer past 64 bits, a hex/octal/binary integer,
//! `.inf`/`.nan`, a text that is not one document — [`decode`] returns
//! `None` and the caller decodes the text with `yaml_serde` as before, so
//! every error message and every rare form stays `yaml_serde`'s own. A test
//! holds the two decodes equal on every YAML file of this repository and
//! on generated scalars.

use crate::document::{Mapping, Value};
use libyaml_rs as sys;
use std::mem::MaybeUninit;

/// Levels past which the decode hands over (`yaml_serde` refuses past
/// 128; the depth check before it stops at 64).
const MAX_LEVELS: usize = 128;

/// `text` as one document, or `None` when `yaml_serde` must decode it.
pub(crate) fn decode(text: &str) -> Option<Value> {
    let mut events = Events::new(text)?;
    if !matches!(events.next()?, Event::StreamStart) || !matches!(events.next()?, Event::DocumentStart) {
        return None;
    }
    let root = build(&mut events)?;
    if !matches!(events.next()?, Event::DocumentEnd) || !matches!(events.next()?, Event::StreamEnd) {
        return None;
    }
    Some(root)
}

/// One open collection while the tree is built.
enum Open {
    Sequence(Vec<Value>),
    /// A mapping, and its key waiting for a value.
    Mapping(Mapping, Option<Value>),
}

/// The next node, built from its events (no recursion: the open
/// collections are on a stack).
fn build(events: &mut Events<'_>) -> Option<Value> {
    let mut stack: Vec<Open> = Vec::new();
    loop {
        let done = match events.next()? {
            Event::Scalar { value, plain } => {
                if plain {
                    self::plain(value)?
                } else {
                    Value::String(value)
                }
            }
            Event::SequenceStart => {
                if stack.len() == MAX_LEVELS {
                    return None;
                }
                stack.push(Open::Sequence(Vec::new()));
                continue;
            }
            Event::MappingStart => {
                if stack.len() == MAX_LEVELS {
                    return None;
                }
                stack.push(Open::Mapping(Mapping::new(), None));
                continue;
            }
            Event::SequenceEnd => match stack.pop()? {
                Open::Sequence(v) => Value::Sequence(v),
                Open::Mapping(..) => return None,
            },
            Event::MappingEnd => match stack.pop()? {
                Open::Mapping(m, None) => Value::Mapping(m),
                Open::Mapping(_, Some(_)) | Open::Sequence(_) => return None,
            },
            _ => return None,
        };
        // Hand the finished node to its parent, or return it.
        match stack.last_mut() {
            None => return Some(done),
            Some(Open::Sequence(v)) => v.push(done),
            Some(Open::Mapping(m, key @ None)) => {
                // A key given twice: `yaml_serde` words the error.
                if m.contains_key(&done) {
                    return None;
                }
                *key = Some(done);
            }
            Some(Open::Mapping(m, key)) => {
                let k = key.take()?;
                m.push_new(k, done);
            }
        }
    }
}

/// A plain scalar as `yaml_serde` 0.10 resolves it (its
/// `visit_untagged_scalar`): null, boolean, a 64-bit integer, a finite
/// float, else a string; `None` for the forms it words or builds
/// differently (hex/octal/binary, past 64 bits, `.inf`, `.nan`).
fn plain(v: String) -> Option<Value> {
    match v.as_str() {
        "" | "~" | "null" | "Null" | "NULL" => return Some(Value::Null),
        "true" | "True" | "TRUE" => return Some(Value::Bool(true)),
        "false" | "False" | "FALSE" => return Some(Value::Bool(false)),
        _ => {}
    }
    let first = v.as_bytes()[0];
    // Neither an integer nor a finite float starts otherwise (Rust's float
    // syntax allows letters only for `inf` and `nan`, which are not finite).
    if !(first.is_ascii_digit() || matches!(first, b'+' | b'-' | b'.')) {
        return Some(Value::String(v));
    }
    // One `+` may lead; a sign after it makes a string.
    let unpositive = match v.strip_prefix('+') {
        Some(rest) if rest.starts_with(['+', '-']) => return Some(Value::String(v)),
        Some(rest) => rest,
        None => v.as_str(),
    };
    let magnitude = unpositive.strip_prefix('-').unwrap_or(unpositive);
    if ["0x", "0o", "0b"].iter().any(|p| magnitude.starts_with(p))
        || magnitude.starts_with('.') && magnitude[1..].starts_with(['i', 'I', 'n', 'N'])
    {
        return None;
    }
    // Leading zeros before digits only: a string in YAML 1.2.
    if magnitude.len() > 1
        && magnitude.starts_with('0')
        && magnitude[1..].bytes().all(|b| b.is_ascii_digit())
    {
        return Some(Value::String(v));
    }
    if !magnitude.is_empty() && magnitude.bytes().all(|b| b.is_ascii_digit()) {
        // Past 64 bits yaml_serde refuses or makes a float: it decides.
        return if unpositive.starts_with('-') {
            unpositive.parse::<i64>().ok().map(|i| Value::Number(i.into()))
        } else {
            unpositive.parse::<u64>().ok().map(|u| Value::Number(u.into()))
        };
    }
    match unpositive.parse::<f64>() {
        Ok(f) if f.is_finite() => Some(Value::Number(f.into())),
        // `1e400`, `-inf`: yaml_serde decides.
        Ok(_) => None,
        Err(_) => Some(Value::String(v)),
    }
}

/// What the decode reads of an event.
enum Event {
    StreamStart,
    StreamEnd,
    DocumentStart,
    DocumentEnd,
    SequenceStart,
    SequenceEnd,
    MappingStart,
    MappingEnd,
    /// An untagged scalar without an anchor, and whether it is plain.
    Scalar {
        value: String,
        plain: bool,
    },
    /// An alias, an anchor, a tag, or a scalar that is not UTF-8.
    Other,
}

/// libyaml's parser over a text. The parser lives in a box (libyaml's
/// structures are not moved after initialisation) and is deleted on drop.
struct Events<'t> {
    parser: Box<MaybeUninit<sys::yaml_parser_t>>,
    _text: std::marker::PhantomData<&'t str>,
}

impl<'t> Events<'t> {
    fn new(text: &'t str) -> Option<Events<'t>> {
        let mut parser = Box::new(MaybeUninit::<sys::yaml_parser_t>::uninit());
        let p = parser.as_mut_ptr();
        // SAFETY: libyaml's C API as documented: initialise before use (on
        // failure nothing was allocated and the parser is never used or
        // deleted), then point it at `text`, which outlives `Events`
        // (`'t`). The box keeps the parser's address fixed.
        unsafe {
            if sys::yaml_parser_initialize(p).fail {
                return None;
            }
            sys::yaml_parser_set_encoding(p, sys::YAML_UTF8_ENCODING);
            sys::yaml_parser_set_input_string(p, text.as_ptr(), text.len() as u64);
        }
        Some(Events {
            parser,
            _text: std::marker::PhantomData,
        })
    }

    /// The next event; `None` on a parse error.
    fn next(&mut self) -> Option<Event> {
        let p = self.parser.as_mut_ptr();
        let mut raw = MaybeUninit::<sys::yaml_event_t>::uninit();
        let e = raw.as_mut_ptr();
        // SAFETY: the parser was initialised in `new`. A failed parse
        // writes no event, so nothing is read or deleted (and `decode`
        // stops at the first `None`); after a successful one the event is
        // read by its type (the union member that type names) and deleted
        // once, before returning.
        unsafe {
            if sys::yaml_parser_parse(p, e).fail {
                return None;
            }
            let event = &*e;
            let out = match event.type_ {
                sys::YAML_STREAM_START_EVENT => Event::StreamStart,
                sys::YAML_STREAM_END_EVENT => Event::StreamEnd,
                sys::YAML_DOCUMENT_START_EVENT => Event::DocumentStart,
                sys::YAML_DOCUMENT_END_EVENT => Event::DocumentEnd,
                sys::YAML_SEQUENCE_END_EVENT => Event::SequenceEnd,
                sys::YAML_MAPPING_END_EVENT => Event::MappingEnd,
                sys::YAML_SEQUENCE_START_EVENT => {
                    let s = event.data.sequence_start;
                    if s.anchor.is_null() && s.tag.is_null() {
                        Event::SequenceStart
                    } else {
                        Event::Other
                    }
                }
                sys::YAML_MAPPING_START_EVENT => {
                    let m = event.data.mapping_start;
                    if m.anchor.is_null() && m.tag.is_null() {
                        Event::MappingStart
                    } else {
                        Event::Other
                    }
                }
                sys::YAML_SCALAR_EVENT => {
                    let s = event.data.scalar;
                    if !s.anchor.is_null() || !s.tag.is_null() {
                        Event::Other
                    } else {
                        let bytes = if s.length == 0 {
                            &[][..]
                        } else {
                            std::slice::from_raw_parts(s.value, s.length as usize)
                        };
                        match std::str::from_utf8(bytes) {
                            Ok(value) => Event::Scalar {
                                value: value.to_owned(),
                                plain: s.style == sys::YAML_PLAIN_SCALAR_STYLE,
                            },
                            Err(_) => Event::Other,
                        }
                    }
                }
                _ => Event::Other,
            };
            sys::yaml_event_delete(e);
            Some(out)
        }
    }
}

impl Drop for Events<'_> {
    fn drop(&mut self) {
        // SAFETY: initialised in `new` (an `Events` exists only then) and
        // deleted only here.
        unsafe { sys::yaml_parser_delete(self.parser.as_mut_ptr()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast decode against `yaml_serde`'s: equal whenever it answers.
    fn same(text: &str) -> bool {
        let fast = decode(text);
        let slow = yaml_serde::from_str::<Value>(text);
        match (&fast, &slow) {
            (Some(f), Ok(s)) => {
                assert_eq!(f, s, "{text:?}");
                true
            }
            (Some(f), Err(e)) => panic!("{text:?}: fast {f:?}, yaml_serde refuses: {e}"),
            (None, _) => false,
        }
    }

    #[test]
    fn plain_scalars_resolve_as_yaml_serde_resolves_them() {
        let answered = [
            "", "~", "null", "Null", "NULL", "nULL", "true", "True", "TRUE", "tRUE", "false",
            "no", "yes", "on", "0", "00", "007", "-0", "-00", "+0", "+007", "1", "-1", "+1",
            "18446744073709551615", "-9223372036854775808", "1.0", "1.0.0", "-1.5", "+1.5",
            ".5", "-.5", "+.5", "5.", "1e5", "1E5", "1e-5", "-1e5", "1_000", "1,000",
            "0.1.2", "1-2", "+", ".", "..", "-.", "+-1", "-+1", "inf", "nan", "infinity",
            "0.", "00.5", "-00.5", "1e", "e1", "12abc", "abc", "/opt/x", "-x", ".x", "0:0", "-x0", "+x",
        ];
        for s in answered {
            assert!(same(&format!("k: {s}\n")), "{s:?} handed over");
            assert!(s.is_empty() || same(&format!("{s}: k\n- x\n")) || decode(&format!("{s}: k\n")).is_some());
        }
        // Handed over: yaml_serde decides (and words) these.
        for s in [
            "0x1F", "0o17", "0b101", "-0x1F", "+0x1F", "18446744073709551616",
            "-9223372036854775809", ".inf", "-.inf", ".NaN", "+.inf", "1e400", "-inf",
        ] {
            assert!(decode(&format!("k: {s}\n")).is_none(), "{s:?}");
        }
    }

    #[test]
    fn generated_scalars_resolve_alike() {
        // Every string of up to four characters from an alphabet of the
        // characters that matter to number syntax.
        let alphabet = ['0', '1', '9', '+', '-', '.', 'e', 'E', '_', 'x', 'o', 'b', 'i', 'n'];
        let mut answered = 0;
        let mut texts = vec![String::new()];
        for _ in 0..4 {
            let mut next = Vec::new();
            for t in &texts {
                for c in alphabet {
                    let s = format!("{t}{c}");
                    let doc = format!("k: {s}\nl: [{s}]\n");
                    if same(&doc) {
                        answered += 1;
                    }
                    next.push(s);
                }
            }
            texts = next;
        }
        // Most of them are answered here, not handed over.
        assert!(answered > 15_000, "{answered}");
    }

    #[test]
    fn every_yaml_file_of_the_repository_decodes_alike() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut files = Vec::new();
        let mut dirs = vec![root.clone()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let path = entry.path();
                let name = entry.file_name().to_string_lossy().into_owned();
                let kind = entry.file_type().unwrap();
                if kind.is_dir() {
                    if !name.starts_with('.') && name != "target" && name != "node_modules" {
                        dirs.push(path);
                    }
                } else if kind.is_file() && (name.ends_with(".yaml") || name.ends_with(".yml")) {
                    files.push(path);
                }
            }
        }
        assert!(files.len() >= 5, "{} YAML files", files.len());
        let mut answered = 0;
        for f in &files {
            let text = std::fs::read_to_string(f).unwrap();
            if same(&text) {
                answered += 1;
            }
        }
        assert!(answered * 2 > files.len(), "{answered} of {}", files.len());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(20_000))]
        /// Texts of YAML's significant characters: whatever the fast
        /// decode answers, yaml_serde answers the same.
        #[test]
        fn random_texts_decode_alike(text in "[a0-9x.+\\-:,\\[\\]{}'\"#\n !&*?|>~e_]{0,40}") {
            same(&text);
        }
    }

    #[test]
    fn forms_it_does_not_build_are_handed_over() {
        for text in [
            "a: &x 1\nb: *x\n",
            "a: !tag 1\n",
            "a: !!str 1\n",
            "a: 1\na: 2\n",
            "--- 1\n--- 2\n",
            "",
            "# only a comment\n",
            "a: [1, 2\n",
            "a: b: c\n",
            "{a: 1, a: 1}\n",
        ] {
            assert!(decode(text).is_none(), "{text:?}");
        }
        // Collections: nested, flow and block, keys of every kind.
        for text in [
            "a:\n  - 1\n  - [x, {y: z}]\n  - {}\n  - []\nb: null\n",
            "? [a, b]\n: 1\n? {c: d}\n: 2\n1: x\n1.5: y\ntrue: z\n~: w\n",
            "- |\n  text\n  more\n- >\n  folded\n  line\n- 'q''s'\n- \"\\u00e9\\t\"\n",
            "plain scalar\n",
            "%YAML 1.2\n---\na: 1\n...\n",
            "---\n",
            "--- |\n  x\n",
            "a:\r\n  - b\r\n",
            "\u{feff}a: 1\n",
        ] {
            assert!(same(text), "{text:?}");
        }
    }
}
