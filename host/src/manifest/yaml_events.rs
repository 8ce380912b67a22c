//! The fast YAML decode: libyaml's events straight into the manifest
//! document (`crate::document`), without `yaml_serde`'s event loader in
//! between (`docs/performance.md`, "2026-12-05 (later), libyaml's events
//! straight into the document"), and the guards on those events that
//! every YAML text passes before `yaml_serde` sees it (`docs/security.md`,
//! "MCP client bounds").
//!
//! It is the same parser (`libyaml-rs`, the one `yaml_serde` drives, at
//! the same version) with the same settings, and the same rules for what a
//! plain scalar is (null, boolean, integer, float or string: `yaml_serde`
//! 0.10's, ported in [`plain`]); an integer past 64 bits that fits 128,
//! not a key, becomes the string `decode_yaml`'s quoting makes of it (at
//! most `MAX_QUOTED_INTEGERS` of them). It decodes only what it knows it
//! decodes alike: on anything else — a parse error, an anchor, an alias,
//! a tag, a key given twice, a hex/octal/binary integer, `.inf`/`.nan`,
//! past 128 bits, a text that is not one document — [`decode`] returns
//! [`Decoded::HandOver`] and the caller decodes the text with `yaml_serde`
//! as before, so every error message and every rare form stays
//! `yaml_serde`'s own. For the whole text, also past a form it hands
//! over, it counts the nesting ([`Decoded::TooDeep`]; a text scan that
//! ran before it until 2026-12-05 could be fooled) and what aliases expand
//! the text to, anchors given twice, recursive aliases and collections
//! as keys ([`Guards`]), and it refuses more than
//! [`MAX_DIRECTIVES`] directive lines before the parser starts
//! ([`Decoded::Refused`]); [`nesting`] applies the same guards to texts
//! decoded otherwise. Tests hold the two decodes equal on every YAML file
//! of this repository, on generated scalars and on 20,000 random texts.

use super::load::MAX_QUOTED_INTEGERS;
use crate::document::{Mapping, Value};
use libyaml_rs as sys;
use std::mem::MaybeUninit;

/// What [`decode`] made of a text.
pub(crate) enum Decoded {
    /// The one document, built as `yaml_serde` builds it.
    Value(Value),
    /// Collections nest deeper than the limit; the 1-based line where they
    /// pass it. The parse stops there, so no deep text costs more than
    /// the levels it is allowed.
    TooDeep { line: usize },
    /// Decode with `yaml_serde`: a parse error (its words), or a form this
    /// decode does not build. The whole text was parsed and nests no
    /// deeper than the limit (up to the error, where there is one).
    /// `quote`: byte offsets of the plain integers past 64 bits that
    /// `decode_yaml`'s quoting would quote first, in that order (at most
    /// [`MAX_QUOTED_INTEGERS`]; empty where the order is not certain: an
    /// alias, an anchor or tag, a hex/octal/binary scalar, such an integer
    /// as a key, a parse error, more than one document), so they are
    /// quoted at once instead of by one parse each.
    HandOver { quote: Vec<usize> },
    /// Refused before anything is built or handed over, with the message:
    /// more than [`MAX_DIRECTIVES`] directive lines, aliases that expand
    /// the text past its budget or another of the [`Guards`], or a parser that could not
    /// be set up (it allocates; in practice an allocation failure aborts
    /// first).
    Refused(String),
}

/// The error when libyaml's parser cannot be set up: nothing was counted,
/// so nothing may be handed over.
const NO_PARSER: &str = "could not be read: the YAML parser could not be started";

/// Directive lines (`%TAG …`, `%YAML …`) a text may have. libyaml compares
/// each `%TAG` with every earlier one inside a single parse call, before
/// any event (60,000 of them took 7 s, a 4 MB file minutes), so they are
/// counted in the text first; real files have none or one or two.
pub(crate) const MAX_DIRECTIVES: usize = 64;

/// `Err(message)` when more than [`MAX_DIRECTIVES`] lines of `text` start
/// with `%`, after any line break libyaml reads (LF, CR, NEL, U+2028,
/// U+2029) or at the start. A `%` at a line's start inside a block or
/// quoted scalar counts too: refusing such a rare file is the safe side.
fn directives(text: &str) -> Result<(), String> {
    let b = text.as_bytes();
    let at_line_start = |i: usize| {
        i == 0
            || matches!(b[i - 1], b'\n' | b'\r')
            || (i >= 2 && b[i - 2..i] == [0xC2, 0x85])
            || (i >= 3 && matches!(b[i - 3..i], [0xE2, 0x80, 0xA8 | 0xA9]))
            || (i == 3 && b[..3] == [0xEF, 0xBB, 0xBF])
    };
    let mut count = 0usize;
    for i in memchr::memchr_iter(b'%', b) {
        if at_line_start(i) {
            count += 1;
            if count > MAX_DIRECTIVES {
                return Err(format!(
                    "has more than {MAX_DIRECTIVES} directive lines starting with % (at line {}); \
                     wasmgate reads at most {MAX_DIRECTIVES}",
                    line_of(text, i)
                ));
            }
        }
    }
    Ok(())
}

/// The 1-based line of byte `at`, counting line breaks as libyaml does
/// (CR LF is one).
fn line_of(text: &str, at: usize) -> usize {
    let mut line = 1;
    let mut prev = '\0';
    for c in text[..at.min(text.len())].chars() {
        if matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}') && !(c == '\n' && prev == '\r') {
            line += 1;
        }
        prev = c;
    }
    line
}

/// What a node costs in [`Guards`], in bytes, besides a scalar's text.
const NODE_COST: u64 = 32;

/// [`Guards`]' budget: this many times the text's length, plus
/// [`EXPANSION_FLOOR`]. A text without aliases or `%TAG` prefixes costs
/// at most about 17 times its length (every node takes two bytes or more),
/// so only those reach it.
pub(crate) const EXPANSION_PER_BYTE: u64 = 40;

/// [`Guards`]' budget for any text, however short.
const EXPANSION_FLOOR: u64 = 1 << 20;

/// The guards on a text's events that `yaml_serde` does not keep (found by
/// attackers), for [`decode`] and [`nesting`] alike:
///
/// - what aliases and tags expand the text to: a node costs [`NODE_COST`]
///   and its scalar and its tag (a `%TAG` prefix expanded, as libyaml
///   gives it) their length more, and an alias what its anchor's node
///   cost, as `yaml_serde` builds a copy of it for each alias and keeps
///   each tag; past the budget the text is refused before `yaml_serde`
///   expands anything (a 2.4 KB file of nested aliases took 1.4 GB, a 1 MB
///   string or tag anchored and aliased 3,000 times 3.3 GB, as did a 1 MB
///   `%TAG` prefix used 3,000 times);
/// - an anchor name defined twice: `yaml_serde` 0.10 numbers anchors by how
///   many names it has seen, so a redefined name made a later anchor share
///   an earlier one's number and `*a` repeat another node (a 1 MB one, 7,000
///   times: 7.7 GB);
/// - an alias inside the node its anchor names: `yaml_serde` rebuilds it
///   level after level until its recursion limit (2.8 GB before the error);
/// - a list or mapping as a mapping key: comparing such keys costs time
///   exponential in their nesting (a 1 MB file took 11 s), and no manifest
///   or config has one;
/// - nesting through aliases: an alias of a collection is one event, but
///   `yaml_serde` builds the whole node there, so its height counts at the
///   alias's depth (aliases of 40-level lists inside each other built 122
///   levels under the limit of 64).
struct Guards {
    /// Each finished anchor's node: its cost, its height (0 for a scalar),
    /// and whether it is a collection.
    anchors: std::collections::HashMap<Box<[u8]>, Anchored>,
    /// Each open collection (innermost last).
    open: Vec<OpenNode>,
    total: u64,
    limit: u64,
    max_depth: usize,
}

/// What an anchor names, for its aliases: its cost, its height in levels
/// (0 for a scalar), whether it is a collection.
type Anchored = (u64, usize, bool);

/// An open collection for [`Guards`].
struct OpenNode {
    anchor: Option<Box<[u8]>>,
    /// Its cost so far.
    cost: u64,
    /// For a mapping, whether it waits for a key; `None` for a sequence.
    key_next: Option<bool>,
    /// The greatest height of its children so far (0: none, or scalars).
    below: usize,
}

impl Guards {
    fn new(text: &str, max_depth: usize) -> Guards {
        Guards {
            anchors: std::collections::HashMap::new(),
            open: Vec::new(),
            total: 0,
            limit: (text.len() as u64)
                .saturating_mul(EXPANSION_PER_BYTE)
                .saturating_add(EXPANSION_FLOOR),
            max_depth,
        }
    }

    /// Anchors belong to their document. A fresh table, not `clear()`:
    /// clearing keeps the capacity and walks it at every document (240,000
    /// anchors and as many empty documents took 9 s).
    fn new_document(&mut self) {
        self.anchors = std::collections::HashMap::new();
    }

    /// How many collections are open: the nesting depth.
    fn depth(&self) -> usize {
        self.open.len()
    }

    /// Whether the next node is a key of the innermost mapping.
    fn is_key(&self) -> bool {
        matches!(
            self.open.last(),
            Some(OpenNode {
                key_next: Some(true),
                ..
            })
        )
    }

    /// A node of the innermost collection is complete: in a mapping, a key
    /// is followed by its value and a value by the next key.
    fn turn(&mut self) {
        if let Some(OpenNode {
            key_next: Some(k), ..
        }) = self.open.last_mut()
        {
            *k = !*k;
        }
    }

    /// A child of `height` levels is complete in the innermost collection.
    fn below(&mut self, height: usize) {
        if let Some(o) = self.open.last_mut() {
            o.below = o.below.max(height);
        }
    }

    /// Counts `cost` in the text and in the innermost open collection.
    fn add(&mut self, cost: u64, line: usize) -> Result<(), String> {
        self.total = self.total.saturating_add(cost);
        if let Some(o) = self.open.last_mut() {
            o.cost = o.cost.saturating_add(cost);
        }
        if self.total > self.limit {
            return Err(format!(
                "expands through its aliases (*name) or tag prefixes (%TAG) to more than \
                 {EXPANSION_PER_BYTE} times its size (at line {line}); wasmgate refuses such YAML \
                 before building it"
            ));
        }
        Ok(())
    }

    fn collection_key(line: usize) -> String {
        format!(
            "has a list or mapping as a mapping key (at line {line}); wasmgate reads only \
             strings, numbers, booleans and null as keys"
        )
    }

    /// An anchor's name may be given once.
    fn define(&self, anchor: Option<&[u8]>, line: usize) -> Result<(), String> {
        let Some(a) = anchor else { return Ok(()) };
        if self.anchors.contains_key(a) || self.open.iter().any(|o| o.anchor.as_deref() == Some(a)) {
            return Err(format!(
                "defines the anchor &{} twice (at line {line}); give each anchor its own name",
                String::from_utf8_lossy(a)
            ));
        }
        Ok(())
    }

    /// A collection starts; `tag`: its tag's length (it is kept with the
    /// node, so it counts in its cost).
    fn start(
        &mut self,
        anchor: Option<Box<[u8]>>,
        mapping: bool,
        tag: usize,
        line: usize,
    ) -> Result<(), String> {
        if self.is_key() {
            return Err(Self::collection_key(line));
        }
        self.define(anchor.as_deref(), line)?;
        let cost = NODE_COST.saturating_add(tag as u64);
        self.add(cost, line)?;
        self.open.push(OpenNode {
            anchor,
            cost,
            key_next: mapping.then_some(true),
            below: 0,
        });
        Ok(())
    }

    fn end(&mut self) {
        if let Some(OpenNode {
            anchor,
            cost,
            below,
            ..
        }) = self.open.pop()
        {
            let height = below + 1;
            // The parent already counted the children in the total.
            if let Some(o) = self.open.last_mut() {
                o.cost = o.cost.saturating_add(cost);
            }
            self.below(height);
            if let Some(a) = anchor {
                self.anchors.insert(a, (cost, height, true));
            }
        }
        self.turn();
    }

    fn scalar(&mut self, anchor: Option<Box<[u8]>>, len: usize, line: usize) -> Result<(), String> {
        self.define(anchor.as_deref(), line)?;
        let cost = NODE_COST.saturating_add(len as u64);
        if let Some(a) = anchor {
            self.anchors.insert(a, (cost, 0, false));
        }
        self.turn();
        self.add(cost, line)
    }

    /// An alias costs what its anchor did (an unknown one is
    /// `yaml_serde`'s error; it costs a node here), and nests as deep.
    fn alias(&mut self, anchor: &[u8], line: usize) -> Result<(), String> {
        if self.open.iter().any(|o| o.anchor.as_deref() == Some(anchor)) {
            return Err(format!(
                "uses the alias *{} inside the node its anchor names (at line {line}); \
                 wasmgate refuses recursive YAML",
                String::from_utf8_lossy(anchor)
            ));
        }
        let (cost, height, collection) =
            self.anchors.get(anchor).copied().unwrap_or((NODE_COST, 0, false));
        if collection && self.is_key() {
            return Err(Self::collection_key(line));
        }
        if self.depth() + height > self.max_depth {
            return Err(super::depth::too_deep(line, self.max_depth));
        }
        self.below(height);
        self.turn();
        self.add(cost, line)
    }
}

/// `text` as one document nested at most `max_depth` collections deep.
///
/// The depth is counted on the parser's own events, for the whole text,
/// also after a form that is handed over: no guess at YAML's quotes and
/// comments (the text scan that ran first until 2026-12-05 made them) may
/// let deep nesting reach `yaml_serde`'s parse (which takes time quadratic
/// in the depth).
pub(crate) fn decode(text: &str, max_depth: usize) -> Decoded {
    let unsure = || Decoded::HandOver { quote: Vec::new() };
    if let Err(m) = directives(text) {
        return Decoded::Refused(m);
    }
    let Some(mut events) = Events::new(text) else {
        return Decoded::Refused(NO_PARSER.to_string());
    };
    let mut guards = Guards::new(text, max_depth);
    let mut documents = 0usize;
    // Cleared when a form is found that `yaml_serde` must decode; the
    // events are then only counted.
    let mut building = true;
    let mut stack: Vec<Open> = Vec::new();
    // The children of every open collection, innermost last (`Open`).
    let mut children: Vec<Value> = Vec::new();
    let mut root: Option<Value> = None;
    // Plain integers past 64 bits (not keys), by byte offset, and whether
    // anything makes the quoting's order uncertain.
    let mut out_of_range: Vec<usize> = Vec::new();
    let mut uncertain = false;
    loop {
        let Some((event, line, at)) = events.next() else {
            return unsure();
        };
        // Kept in every mode (by the guards): whether this node is a key.
        let is_key = guards.is_key();
        let node = match event {
            Event::StreamStart | Event::DocumentEnd => continue,
            Event::StreamEnd => break,
            Event::DocumentStart => {
                documents += 1;
                building &= documents == 1;
                guards.new_document();
                continue;
            }
            Event::Start {
                anchor,
                tag,
                mapping,
            } => {
                if guards.depth() >= max_depth {
                    return Decoded::TooDeep { line };
                }
                // An anchor or alias does not change the order in which the
                // quoting meets the integers (an alias comes after its
                // anchor, whose integers are met there first); a tag may.
                uncertain |= tag > 0;
                building &= anchor.is_none() && tag == 0;
                if let Err(m) = guards.start(anchor, mapping, tag, line) {
                    return Decoded::Refused(m);
                }
                if building {
                    stack.push(Open::new(mapping, &children));
                }
                continue;
            }
            Event::End => {
                guards.end();
                if !building {
                    continue;
                }
                match stack.pop().and_then(|o| o.finish(&mut children)) {
                    Some(node) => node,
                    None => {
                        building = false;
                        continue;
                    }
                }
            }
            Event::Scalar {
                value: Some(value),
                len,
                plain,
                anchor,
            } => {
                // yaml_serde builds what an anchor names (and its aliases).
                building &= anchor.is_none();
                if let Err(m) = guards.scalar(anchor, len, line) {
                    return Decoded::Refused(m);
                }
                let resolved = if plain {
                    self::plain(value)
                } else {
                    Plain::Value(Value::String(value))
                };
                match resolved {
                    Plain::Value(v) if building => v,
                    Plain::Value(_) => continue,
                    // What decode_yaml's quoting makes of it, without a
                    // parse per integer; past its limit, yaml_serde words
                    // the error. A key is yaml_serde's to decide (it does
                    // not always name a place for one).
                    Plain::OutOfRange(text) if !is_key => {
                        out_of_range.push(at);
                        if building && out_of_range.len() <= MAX_QUOTED_INTEGERS {
                            Value::String(text)
                        } else {
                            building = false;
                            continue;
                        }
                    }
                    Plain::OutOfRange(_) | Plain::Prefixed => {
                        uncertain = true;
                        building = false;
                        continue;
                    }
                    Plain::HandOver => {
                        building = false;
                        continue;
                    }
                }
            }
            Event::Alias { anchor } => {
                building = false;
                if let Err(m) = guards.alias(&anchor, line) {
                    return Decoded::Refused(m);
                }
                continue;
            }
            Event::Scalar {
                value: None,
                len,
                anchor,
                ..
            } => {
                uncertain = true;
                building = false;
                if let Err(m) = guards.scalar(anchor, len, line) {
                    return Decoded::Refused(m);
                }
                continue;
            }
        };
        building &= hand_up(&mut stack, &mut children, &mut root, node);
        if !building {
            // Nothing built is used any more; free it while counting on.
            stack = Vec::new();
            children = Vec::new();
            root = None;
        }
    }
    match root {
        Some(v) if building && documents == 1 && stack.is_empty() => Decoded::Value(v),
        _ if uncertain || documents != 1 => unsure(),
        _ => {
            out_of_range.truncate(MAX_QUOTED_INTEGERS);
            Decoded::HandOver {
                quote: out_of_range,
            }
        }
    }
}

/// `Err(message)` naming the line where the collections of `text` nest
/// deeper than `max_depth`, counted on the parser's events (the parse
/// stops there); also [`decode`]'s other refusals (directives, aliases'
/// expansion, no parser). A parse error ends the count (`Ok`): the
/// caller's own parse stops at the same place.
pub(crate) fn nesting(text: &str, max_depth: usize) -> Result<(), String> {
    directives(text)?;
    let Some(mut events) = Events::new(text) else {
        return Err(NO_PARSER.to_string());
    };
    let mut guards = Guards::new(text, max_depth);
    while let Some((event, line, _)) = events.next() {
        match event {
            Event::Start {
                anchor,
                mapping,
                tag,
            } => {
                if guards.depth() >= max_depth {
                    return Err(super::depth::too_deep(line, max_depth));
                }
                guards.start(anchor, mapping, tag, line)?;
            }
            Event::End => guards.end(),
            Event::Scalar { len, anchor, .. } => guards.scalar(anchor, len, line)?,
            Event::Alias { anchor } => guards.alias(&anchor, line)?,
            Event::DocumentStart => guards.new_document(),
            Event::StreamEnd => break,
            Event::StreamStart | Event::DocumentEnd => {}
        }
    }
    Ok(())
}

/// A key as `yaml_serde` prints it in a duplicate-key error (`with key
/// "a"`, `` with key `true` ``, `with key 1`, `with null key`).
pub(crate) enum PrintedKey<'a> {
    /// A string, its quotes taken off.
    Str(&'a str),
    /// `null`.
    Null,
    /// A boolean or a number, as printed.
    Scalar(&'a str),
}

/// The 1-based lines of the direct keys equal to `key` in the mapping that
/// starts at `place` (1-based line and column, as `yaml_serde` names a
/// mapping with a key given twice; `None`: the root mapping), read on the
/// parser's events, so a line inside a quoted or block scalar that looks
/// like `key:` is not one. A key is compared as decoded: `'1'` is a
/// string and `1` a number, `~` and `null` are one key; a key this decode
/// hands over (`0x1`, a tag, an alias) is not found. A parse error ends
/// the search with what it found.
pub(crate) fn key_lines(text: &str, place: Option<(usize, usize)>, key: PrintedKey<'_>) -> Vec<usize> {
    let wanted = match key {
        PrintedKey::Str(s) => Value::String(s.to_string()),
        PrintedKey::Null => Value::Null,
        PrintedKey::Scalar(t) => match plain(t.to_string()) {
            Plain::Value(v) => v,
            _ => return Vec::new(),
        },
    };
    let mut found = Vec::new();
    let Some(mut events) = Events::new(text) else {
        return found;
    };
    // The guards keep the depth and whether the next node is a key; the
    // text passed them already, so they refuse nothing here.
    let mut guards = Guards::new(text, usize::MAX);
    // The depth of the mapping searched, once it has started.
    let mut target: Option<usize> = None;
    while let Some((event, line, col, _)) = events.next_at() {
        let depth = guards.depth();
        let in_target = target == Some(depth);
        let step = match event {
            Event::Start {
                anchor,
                tag,
                mapping,
            } => {
                if target.is_none() && mapping && place.map_or(depth == 0, |p| p == (line, col)) {
                    target = Some(depth + 1);
                }
                guards.start(anchor, mapping, tag, line)
            }
            Event::End if in_target => break,
            Event::End => {
                guards.end();
                Ok(())
            }
            Event::Scalar {
                value,
                len,
                plain: is_plain,
                anchor,
            } => {
                let decoded = value.and_then(|v| {
                    if is_plain {
                        match plain(v) {
                            Plain::Value(v) => Some(v),
                            _ => None,
                        }
                    } else {
                        Some(Value::String(v))
                    }
                });
                if in_target && guards.is_key() && decoded.as_ref() == Some(&wanted) {
                    found.push(line);
                }
                guards.scalar(anchor, len, line)
            }
            Event::Alias { anchor } => guards.alias(&anchor, line),
            Event::DocumentStart => {
                guards.new_document();
                Ok(())
            }
            Event::StreamEnd => break,
            Event::StreamStart | Event::DocumentEnd => Ok(()),
        };
        if step.is_err() {
            break;
        }
    }
    found
}

/// One open collection while the tree is built.
enum Open {
    /// A sequence, or a mapping of at most [`Mapping::UNINDEXED_MAX`]
    /// entries: its children sit on the shared stack from `start` (a
    /// mapping's as key, value, key, …) until it ends, and then move into
    /// a vector of exactly their number — most of a manifest's mappings
    /// have one to three entries, and a vector grown by pushes would hold
    /// room for four (a third of a load's memory, `docs/performance.md`).
    Stacked { start: usize, mapping: bool },
    /// A larger mapping, built in place with its index (a lookup per key
    /// instead of a scan), and its key waiting for a value.
    Indexed(Mapping, Option<Value>),
}

impl Open {
    fn new(mapping: bool, children: &[Value]) -> Open {
        Open::Stacked {
            start: children.len(),
            mapping,
        }
    }

    /// The finished node; `None` for a mapping left with a key that has no
    /// value (libyaml never ends one so).
    fn finish(self, children: &mut Vec<Value>) -> Option<Value> {
        match self {
            Open::Stacked {
                start,
                mapping: false,
            } => Some(Value::Sequence(children.drain(start..).collect())),
            Open::Stacked {
                start,
                mapping: true,
            } => {
                if !(children.len() - start).is_multiple_of(2) {
                    return None;
                }
                let mut entries = Vec::with_capacity((children.len() - start) / 2);
                let mut drain = children.drain(start..);
                while let (Some(k), Some(v)) = (drain.next(), drain.next()) {
                    entries.push((k, v));
                }
                Some(Value::Mapping(Mapping::from_distinct(entries)))
            }
            Open::Indexed(m, None) => Some(Value::Mapping(m)),
            Open::Indexed(_, Some(_)) => None,
        }
    }
}

/// Gives a finished node to the collection it is in (or makes it the
/// root); `false` when `yaml_serde` must decode the text instead (a key
/// given twice: it words the error).
fn hand_up(
    stack: &mut [Open],
    children: &mut Vec<Value>,
    root: &mut Option<Value>,
    node: Value,
) -> bool {
    let Some(open) = stack.last_mut() else {
        if root.is_some() {
            return false;
        }
        *root = Some(node);
        return true;
    };
    match open {
        Open::Stacked {
            mapping: false, ..
        } => children.push(node),
        Open::Stacked {
            start,
            mapping: true,
        } => {
            let held = &children[*start..];
            // A value: the number held is odd (a key waits).
            if !held.len().is_multiple_of(2) {
                children.push(node);
                return true;
            }
            if held.iter().step_by(2).any(|k| *k == node) {
                return false;
            }
            if held.len() / 2 < Mapping::UNINDEXED_MAX {
                children.push(node);
                return true;
            }
            // One entry more than a mapping without an index holds: build
            // it in place from here on.
            let mut m = Mapping::with_capacity(held.len());
            let mut drain = children.drain(*start..);
            while let (Some(k), Some(v)) = (drain.next(), drain.next()) {
                m.push_new(k, v);
            }
            drop(drain);
            *open = Open::Indexed(m, Some(node));
        }
        Open::Indexed(m, key @ None) => {
            if m.contains_key(&node) {
                return false;
            }
            *key = Some(node);
        }
        Open::Indexed(m, key) => match key.take() {
            Some(k) => m.push_new(k, node),
            None => return false,
        },
    }
    true
}

/// What a plain scalar is.
enum Plain {
    /// Resolved as `yaml_serde` resolves it.
    Value(Value),
    /// An integer past 64 bits that fits 128 (its text): `yaml_serde`
    /// refuses it and `decode_yaml` quotes it, so it becomes this string.
    OutOfRange(String),
    /// Hex, octal or binary: for `yaml_serde` to decide (and, past 64
    /// bits, for `decode_yaml` to quote).
    Prefixed,
    /// For `yaml_serde` to decide (`.inf`, `.nan`, `1e400`, past 128 bits;
    /// none of them an error).
    HandOver,
}

/// A plain scalar as `yaml_serde` 0.10 resolves it (its
/// `visit_untagged_scalar`): null, boolean, a 64-bit integer, a finite
/// float, else a string; the forms it words or builds differently
/// (hex/octal/binary, past 128 bits, `.inf`, `.nan`) are handed over.
fn plain(v: String) -> Plain {
    let resolved = |x| Plain::Value(x);
    match v.as_str() {
        "" | "~" | "null" | "Null" | "NULL" => return resolved(Value::Null),
        "true" | "True" | "TRUE" => return resolved(Value::Bool(true)),
        "false" | "False" | "FALSE" => return resolved(Value::Bool(false)),
        _ => {}
    }
    let first = v.as_bytes()[0];
    // Neither an integer nor a finite float starts otherwise (Rust's float
    // syntax allows letters only for `inf` and `nan`, which are not finite).
    if !(first.is_ascii_digit() || matches!(first, b'+' | b'-' | b'.')) {
        return resolved(Value::String(v));
    }
    // One `+` may lead; a sign after it makes a string.
    let unpositive = match v.strip_prefix('+') {
        Some(rest) if rest.starts_with(['+', '-']) => return resolved(Value::String(v)),
        Some(rest) => rest,
        None => v.as_str(),
    };
    let magnitude = unpositive.strip_prefix('-').unwrap_or(unpositive);
    if ["0x", "0o", "0b"].iter().any(|p| magnitude.starts_with(p)) {
        return Plain::Prefixed;
    }
    if magnitude.starts_with('.') && magnitude[1..].starts_with(['i', 'I', 'n', 'N']) {
        return Plain::HandOver;
    }
    // Leading zeros before digits only: a string in YAML 1.2.
    if magnitude.len() > 1
        && magnitude.starts_with('0')
        && magnitude[1..].bytes().all(|b| b.is_ascii_digit())
    {
        return resolved(Value::String(v));
    }
    if !magnitude.is_empty() && magnitude.bytes().all(|b| b.is_ascii_digit()) {
        let negative = unpositive.starts_with('-');
        let number = if negative {
            unpositive.parse::<i64>().ok().map(|i| Value::Number(i.into()))
        } else {
            unpositive.parse::<u64>().ok().map(|u| Value::Number(u.into()))
        };
        let wide = if negative {
            unpositive.parse::<i128>().is_ok()
        } else {
            unpositive.parse::<u128>().is_ok()
        };
        return match number {
            Some(n) => Plain::Value(n),
            None if wide => Plain::OutOfRange(v),
            // Past 128 bits yaml_serde makes a float (or a string).
            None => Plain::HandOver,
        };
    }
    match unpositive.parse::<f64>() {
        Ok(f) if f.is_finite() => resolved(Value::Number(f.into())),
        // `1e400`, `-inf`: yaml_serde decides.
        Ok(_) => Plain::HandOver,
        Err(_) => resolved(Value::String(v)),
    }
}

/// What the decode reads of an event.
enum Event {
    StreamStart,
    StreamEnd,
    DocumentStart,
    DocumentEnd,
    /// A sequence or mapping starts: its anchor's name, its tag's length
    /// in bytes (0: none; libyaml gives it with its `%TAG` prefix
    /// expanded), whether it is a mapping.
    Start {
        anchor: Option<Box<[u8]>>,
        tag: usize,
        mapping: bool,
    },
    /// A sequence or mapping ends.
    End,
    /// A scalar: its text when it is UTF-8 without a tag, its length in
    /// bytes, whether it is plain, and its anchor's name.
    Scalar {
        value: Option<String>,
        len: usize,
        plain: bool,
        anchor: Option<Box<[u8]>>,
    },
    /// An alias, with the name of the anchor it repeats.
    Alias { anchor: Box<[u8]> },
}

/// The length of libyaml's NUL-terminated tag string (0 for null).
///
/// # Safety
/// As [`anchor_name`].
unsafe fn tag_len(p: *const u8) -> usize {
    if p.is_null() {
        return 0;
    }
    // SAFETY: as the caller promises.
    unsafe { std::ffi::CStr::from_ptr(p.cast()) }.to_bytes().len()
}

/// An anchor's name from libyaml's NUL-terminated string (`None` for null).
///
/// # Safety
/// `p` is null or points at a NUL-terminated string that libyaml owns
/// until the event is deleted.
unsafe fn anchor_name(p: *const u8) -> Option<Box<[u8]>> {
    // SAFETY: as the caller promises; the bytes are copied out before the
    // event is deleted.
    (!p.is_null()).then(|| unsafe { std::ffi::CStr::from_ptr(p.cast()) }.to_bytes().into())
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

    /// The next event, its 1-based line and its byte offset; `None` on a
    /// parse error.
    fn next(&mut self) -> Option<(Event, usize, usize)> {
        self.next_at().map(|(e, line, _, at)| (e, line, at))
    }

    /// [`Events::next`] with the event's 1-based column as well.
    fn next_at(&mut self) -> Option<(Event, usize, usize, usize)> {
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
                sys::YAML_SEQUENCE_END_EVENT | sys::YAML_MAPPING_END_EVENT => Event::End,
                sys::YAML_SEQUENCE_START_EVENT => {
                    let s = event.data.sequence_start;
                    Event::Start {
                        anchor: anchor_name(s.anchor),
                        tag: tag_len(s.tag),
                        mapping: false,
                    }
                }
                sys::YAML_MAPPING_START_EVENT => {
                    let m = event.data.mapping_start;
                    Event::Start {
                        anchor: anchor_name(m.anchor),
                        tag: tag_len(m.tag),
                        mapping: true,
                    }
                }
                sys::YAML_SCALAR_EVENT => {
                    let s = event.data.scalar;
                    let value = if !s.tag.is_null() {
                        None
                    } else if s.length == 0 {
                        Some(String::new())
                    } else {
                        let bytes = std::slice::from_raw_parts(s.value, s.length as usize);
                        std::str::from_utf8(bytes).ok().map(str::to_owned)
                    };
                    Event::Scalar {
                        value,
                        // A tag is built and kept with its node (yaml_serde's
                        // `TaggedValue`): it counts as the node's text.
                        len: (s.length as usize).saturating_add(tag_len(s.tag)),
                        plain: s.style == sys::YAML_PLAIN_SCALAR_STYLE,
                        anchor: anchor_name(s.anchor),
                    }
                }
                sys::YAML_ALIAS_EVENT => Event::Alias {
                    anchor: anchor_name(event.data.alias.anchor).unwrap_or_default(),
                },
                // No other type follows a successful parse; as an alias it
                // hands the text over.
                _ => Event::Alias {
                    anchor: Box::default(),
                },
            };
            let line = usize::try_from(event.start_mark.line).map_or(usize::MAX, |l| l.saturating_add(1));
            let col = usize::try_from(event.start_mark.column).map_or(usize::MAX, |c| c.saturating_add(1));
            let at = usize::try_from(event.start_mark.index).unwrap_or(usize::MAX);
            sys::yaml_event_delete(e);
            Some((out, line, col, at))
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

    /// The fast decode's value, `None` when it hands over.
    fn fast(text: &str) -> Option<Value> {
        match decode(text, 64) {
            Decoded::Value(v) => Some(v),
            Decoded::TooDeep { line } => panic!("{text:?}: too deep at line {line}"),
            // A guard's refusal (a collection as a key, an anchor twice)
            // answers nothing about decoding alike.
            Decoded::HandOver { .. } | Decoded::Refused(_) => None,
        }
    }

    /// The fast decode against `yaml_serde`'s (with `decode_yaml`'s
    /// quoting of integers past 64 bits): equal whenever it answers.
    fn same(text: &str) -> bool {
        let fast = fast(text);
        let slow = crate::manifest::load::decode_with_yaml_serde(text, &[]);
        match (&fast, &slow) {
            (Some(f), Ok(s)) => {
                assert_eq!(f, s, "{text:?}");
                true
            }
            (Some(f), Err(e)) => panic!("{text:?}: fast {f:?}, yaml_serde refuses: {e}"),
            (None, _) => false,
        }
    }

    /// Mappings are kept on the decoder's stack up to
    /// `Mapping::UNINDEXED_MAX` entries and built with their index past it:
    /// both sides of the switch, nested in lists and in each other, decode
    /// as `yaml_serde` decodes them, find every key, and hand a key given
    /// twice (early or late) over to `yaml_serde`, which words the error.
    #[test]
    fn mappings_on_both_sides_of_the_index_decode_alike() {
        for n in [1, 2, 14, 15, 16, 17, 40] {
            let block: String = (0..n)
                .map(|i| format!("k{i}: [{i}, {{a: {i}, b: [x, {{c: {i}}}]}}]\n"))
                .collect();
            let flow = format!(
                "[{{{}}}, tail]",
                (0..n).map(|i| format!("k{i}: {{n: {i}}}")).collect::<Vec<_>>().join(", ")
            );
            for text in [&block, &flow] {
                assert!(same(text), "{text:?} was handed over");
                let m = match fast(text) {
                    Some(Value::Mapping(m)) => m,
                    Some(Value::Sequence(mut items)) => match items.remove(0) {
                        Value::Mapping(m) => m,
                        other => panic!("{other:?}"),
                    },
                    other => panic!("{other:?}"),
                };
                assert_eq!(m.len(), n);
                for i in 0..n {
                    assert!(m.get(format!("k{i}").as_str()).is_some(), "k{i} of {n}");
                }
            }
            for dup in [0, n - 1] {
                let text = format!("{block}k{dup}: again\n");
                assert!(fast(&text).is_none(), "{text:?}");
                assert!(crate::manifest::load::decode_with_yaml_serde(&text, &[]).is_err());
            }
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
            "0.", "00.5", "-00.5", "1e", "e1", "12abc", "abc", "/opt/x", "-x", ".x", "0:0",
            "18446744073709551616", "+18446744073709551616", "-9223372036854775809",
            "340282366920938463463374607431768211455",
            "-170141183460469231731687303715884105728", "-x0", "+x",
        ];
        for s in answered {
            assert!(same(&format!("k: {s}\n")), "{s:?} handed over");
            // As a key too (an integer past 64 bits as a key is handed over).
            assert!(
                s.is_empty()
                    || s.len() > 19
                    || same(&format!("{s}: k\n- x\n"))
                    || fast(&format!("{s}: k\n")).is_some()
            );
        }
        // Handed over: yaml_serde decides (and words) these.
        for s in [
            "0x1F", "0o17", "0b101", "-0x1F", "+0x1F", ".inf", "-.inf", ".NaN", "+.inf",
            "1e400", "-inf", "1000000000000000000000000000000000000000",
            "-1000000000000000000000000000000000000000",
        ] {
            assert!(fast(&format!("k: {s}\n")).is_none(), "{s:?}");
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

    /// Texts whose nesting the text scan that ran before the parser until
    /// 2026-12-05 misjudged (found by an attacker): a lone CR ends libyaml's line but not the
    /// scan's, so `#` hides the rest; a quote inside a plain scalar opens
    /// nothing in YAML; U+00A0 is no whitespace to YAML.
    fn hidden_depth(n: usize) -> Vec<String> {
        let deep = format!("{}{}", "[".repeat(n), "]".repeat(n));
        vec![
            format!("name: p\nk: [ #\r{deep}]\n"),
            format!("k: a 'b\nl: {deep}\nm: x'\n"),
            format!("k: [a\u{a0}#, {deep}]\n"),
            // After a form that is handed over, the count goes on.
            format!("a: &x 1\nb: *x\nc: [ #\r{deep}]\n"),
            format!("a: !t 1\nc: [ #\r{deep}]\n"),
        ]
    }

    #[test]
    fn depth_is_counted_on_the_events_where_a_text_scan_misjudged_it() {
        for text in hidden_depth(100) {
            assert!(matches!(decode(&text, 64), Decoded::TooDeep { .. }), "{text:?}");
            assert!(nesting(&text, 64).is_err(), "{text:?}");
            let e = crate::manifest::load::decode_yaml(&text).unwrap_err();
            assert!(e.contains("is nested deeper than 64 levels (at line"), "{e}");
            assert!(crate::manifest::depth::check_yaml_depth(&text, 64).is_err());
        }
        // Where it passes the limit: the line of the 65th opening, as
        // libyaml counts lines (the lone CR ends line 2).
        let text = format!("a: 1\nb: [ #\r{}\n", "[".repeat(100));
        assert!(matches!(decode(&text, 64), Decoded::TooDeep { line: 3 }));
        // At the limit, it is decoded (or handed over), not refused.
        for text in hidden_depth(60) {
            assert!(!matches!(decode(&text, 64), Decoded::TooDeep { .. }), "{text:?}");
            assert!(nesting(&text, 64).is_ok());
        }
        // Hundreds of thousands of levels stop at the 65th: no parse of
        // the rest (it took 40 s through yaml_serde at 100,000).
        let huge = &hidden_depth(400_000)[0];
        assert!(matches!(decode(huge, 64), Decoded::TooDeep { .. }));
    }

    /// Three levels of 290 aliases: 2.4 KB of text that `yaml_serde`
    /// expanded to 1.4 GB (found by an attacker).
    fn alias_bomb() -> String {
        let list = |item: &str| format!("[{}]", vec![item; 290].join(", "));
        format!(
            "a: &a {}\nb: &b {}\nc: {}\n",
            list("1"),
            list("*a"),
            list("*b")
        )
    }

    #[test]
    fn aliases_that_expand_past_the_budget_are_refused_before_yaml_serde() {
        let text = alias_bomb();
        assert!(text.len() < 4096);
        let Decoded::Refused(m) = decode(&text, 64) else {
            panic!("not refused")
        };
        assert!(m.contains("expands through its aliases") && m.contains("(at line 2)"), "{m}");
        assert!(nesting(&text, 64).unwrap_err().contains("expands through its aliases"));
        let e = crate::manifest::load::decode_yaml(&text).unwrap_err();
        assert!(e.contains("expands through its aliases"), "{e}");
        // One large anchored string, aliased many times: its length counts.
        let s = format!("s: &s {}\nl: [{}]\n", "x".repeat(100_000), vec!["*s"; 500].join(", "));
        assert!(matches!(decode(&s, 64), Decoded::Refused(_)));
        // Anchors as configs use them are decoded as before (by yaml_serde).
        let shared = "d: &d {command: x, env: {A: '1'}}\ns1: *d\ns2: *d\nl: &l [1, 2]\nm: [*l, *l]\n";
        assert!(matches!(decode(shared, 64), Decoded::HandOver { .. }));
        let v = crate::manifest::load::decode_yaml(shared).unwrap();
        assert_eq!(v["s2"]["command"], Value::String("x".into()));
        assert!(nesting(shared, 64).is_ok());
        // Just under the budget (a 1 KiB string 1,000 times: 1 MB of the
        // 1 MiB floor plus 40 times the text) is decoded; the next level is not.
        let under = format!("s: &s {}\nl: &l [{}]\n", "x".repeat(1000), vec!["*s"; 1000].join(", "));
        assert!(matches!(decode(&under, 64), Decoded::HandOver { .. }));
        let over = format!("{under}m: [*l, *l]\n");
        assert!(matches!(decode(&over, 64), Decoded::Refused(_)));
    }

    /// `Refused`'s message, or a panic naming what came instead.
    fn refused(text: &str) -> String {
        match decode(text, 64) {
            Decoded::Refused(m) => {
                assert_eq!(nesting(text, 64).unwrap_err(), m, "{text:?}");
                m
            }
            _ => panic!("{text:?} not refused"),
        }
    }

    #[test]
    fn the_second_attackers_forms_are_refused_on_the_events() {
        let big = "x".repeat(100_000);
        // An anchor name given twice (yaml_serde numbered the third anchor
        // like the second `&a`, so `*a` repeated the large node).
        let m = refused(&format!("args: [&a x, &b y, &a z, &c {big}, *a, *a]\n"));
        assert!(m.contains("defines the anchor &a twice (at line 1)"), "{m}");
        // An alias inside its own anchor's node.
        let m = refused("a: &a [1, *a]\n");
        assert!(m.contains("uses the alias *a inside the node its anchor names"), "{m}");
        let m = refused("a: &a {k: [*a]}\n");
        assert!(m.contains("*a inside"), "{m}");
        // A collection as a key, with or without aliases.
        let m = refused("? {a: {b: 1}}\n: x\n");
        assert!(m.contains("has a list or mapping as a mapping key (at line 1)"), "{m}");
        assert!(refused("{[1]: 2}\n").contains("as a mapping key"));
        // Also through an alias to a collection; an alias to a scalar stays
        // a key.
        assert!(refused("a: &k {b: 1}\nc: {*k : 2}\n").contains("as a mapping key (at line 2)"));
        assert!(matches!(decode("a: &k b\nc: {*k : 2}\n", 64), Decoded::HandOver { .. }));
        // Scalars keep being keys, values keep being collections.
        assert!(fast("? a\n: [1, {b: 2}]\n").is_some());
        // Anchors are per document: the same name in the next one is
        // yaml_serde's to judge (it refuses a second document).
        assert!(matches!(decode("--- &a 1\n--- &a 2\n", 64), Decoded::HandOver { .. }));
    }

    #[test]
    fn tags_count_in_what_a_text_expands_to() {
        // A long tag on an anchored node, aliased (each copy keeps it).
        let tag = "t".repeat(100_000);
        let m = refused(&format!("x: &a !{tag} ~\nl: [{}]\n", vec!["*a"; 500].join(", ")));
        assert!(m.contains("expands through its aliases (*name) or tag prefixes"), "{m}");
        // A `%TAG` prefix that libyaml expands on every use, no alias at all.
        let t = format!(
            "%TAG !e! tag:{}:\n---\n[{}]\n",
            "p".repeat(100_000),
            vec!["!e!x ~"; 500].join(", ")
        );
        assert!(refused(&t).contains("tag prefixes (%TAG)"));
        assert!(refused(&format!("%TAG !e! tag:{}:\n---\n[{}]\n", "p".repeat(100_000), vec!["!e!x [1]"; 500].join(", ")))
            .contains("(%TAG)"));
        // Short tags as configs use them are handed over as before.
        assert!(matches!(decode("a: !env HOME\nb: !!str 1\n", 64), Decoded::HandOver { .. }));
    }

    /// An alias of a collection nests as deep as the node it repeats
    /// (found by an attacker: aliases of 40-level lists inside each other
    /// built 122 levels, which `yaml_serde` stopped only at 128).
    #[test]
    fn nesting_through_aliases_counts_the_aliased_nodes_height() {
        let lists = |n: usize, inner: &str| format!("{}{inner}{}", "[".repeat(n), "]".repeat(n));
        let chain = format!(
            "x:\n  - &a0 {}\n  - &a1 {}\n  - &a2 {}\n",
            lists(40, "1"),
            lists(40, "*a0"),
            lists(40, "*a1")
        );
        let m = refused(&chain);
        assert_eq!(m, crate::manifest::depth::too_deep(3, 64), "{m}");
        let e = crate::manifest::load::decode_yaml(&chain).unwrap_err();
        assert!(e.contains("is nested deeper than 64 levels (at line 3)"), "{e}");
        // At the limit: a 30-level list aliased 34 levels deep is 64 levels.
        for (outer, ok) in [(34, true), (35, false)] {
            let text = format!("a: &l {}\nb: {}\n", lists(30, "1"), lists(outer - 1, "*l"));
            match decode(&text, 64) {
                Decoded::Refused(m) => {
                    assert!(!ok, "{outer}: {m}");
                    assert_eq!(m, crate::manifest::depth::too_deep(2, 64));
                }
                other => assert!(ok, "{outer}: {}", matches!(other, Decoded::HandOver { .. })),
            }
            assert_eq!(nesting(&text, 64).is_ok(), ok, "{outer}");
        }
        // A scalar's alias adds no level.
        let text = format!("a: &s 1\nb: {}\n", lists(63, "*s"));
        assert!(nesting(&text, 64).is_ok());
    }

    #[test]
    fn a_new_document_starts_an_empty_anchor_table_without_its_old_capacity() {
        // `clear()` kept the capacity and walked it at every document: 240,000
        // anchors and as many empty documents took 9 s.
        let mut g = Guards::new("", 64);
        for i in 0..1000 {
            g.scalar(Some(format!("a{i}").into_bytes().into()), 1, 1).unwrap();
        }
        g.new_document();
        assert_eq!(g.anchors.capacity(), 0);
        // The same name in the next document is no redefinition.
        g.scalar(Some(b"a1".to_vec().into()), 1, 2).unwrap();
    }

    #[test]
    fn more_directives_than_the_limit_are_refused_before_the_parser() {
        let tags = |n: usize| {
            (0..n)
                .map(|i| format!("%TAG !t{i}! tag:example.com,2026:{i}:\n"))
                .collect::<String>()
        };
        let ok = format!("{}---\na: 1\n", tags(MAX_DIRECTIVES));
        assert!(matches!(decode(&ok, 64), Decoded::Value(_)));
        assert!(nesting(&ok, 64).is_ok());
        let bad = format!("{}---\na: 1\n", tags(MAX_DIRECTIVES + 1));
        let Decoded::Refused(m) = decode(&bad, 64) else {
            panic!("not refused")
        };
        assert!(m.contains("more than 64 directive lines") && m.contains("(at line 65)"), "{m}");
        assert!(nesting(&bad, 64).is_err());
        // Lone carriage returns break lines for libyaml, so they count.
        let cr = format!("{}---\ra: 1\r", tags(MAX_DIRECTIVES + 1).replace('\n', "\r"));
        assert!(matches!(decode(&cr, 64), Decoded::Refused(_)));
        // Every line break libyaml reads counts: NEL, U+2028, U+2029.
        for sep in ["\u{85}", "\u{2028}", "\u{2029}"] {
            let t = format!("{}---\na: 1\n", tags(MAX_DIRECTIVES + 1).replace('\n', sep));
            let Decoded::Refused(m) = decode(&t, 64) else {
                panic!("{sep:?} not refused")
            };
            assert!(m.contains("(at line 65)"), "{m}");
        }
        // 100,000 of them are refused at once (60,000 took 7 s in libyaml).
        let many = format!("{}---\na: 1\n", tags(100_000));
        assert!(matches!(decode(&many, 64), Decoded::Refused(_)));
    }

    #[test]
    fn integers_past_64_bits_become_what_the_quoting_makes_of_them() {
        let big = "99999999999999999999999";
        for text in [
            format!("args: [{big}, -{big}, +{big}]\n"),
            format!("y: {{a: {big}}}\n"),
            format!("--- {big}\n"),
            format!("a:\n  - {big} # note\n  - 1\n"),
        ] {
            assert!(same(&text), "{text:?} handed over");
        }
        // As a key it is yaml_serde's to decide (it does not always name
        // a place for one, and then there is nothing to quote).
        for text in [format!("{big}: x\n"), format!("y: {{{big}: 1}}\n")] {
            assert!(fast(&text).is_none(), "{text:?}");
        }
        // As many as decode_yaml quotes, and one more: yaml_serde words
        // the error (after its parses, as before).
        let limit = MAX_QUOTED_INTEGERS;
        assert!(same(&format!("- {big}\n").repeat(limit)));
        let over = format!("- {big}\n").repeat(limit + 1);
        assert!(fast(&over).is_none());
        let e = crate::manifest::load::decode_yaml(&over).unwrap_err();
        assert!(e.contains("is out of range"), "{e}");
    }

    /// What is handed over with integers past 64 bits decodes as the loop
    /// that quotes them one parse at a time decodes it: the same value or
    /// the same message, with those integers quoted at once.
    #[test]
    fn handed_over_texts_with_integers_past_64_bits_decode_as_the_loop_does() {
        let big = "99999999999999999999999";
        let ints = |n: usize| format!("- {big}\n").repeat(n);
        let cases = [
            // One more than the loop quotes: its message, naming the 65th.
            format!("a:\n{}", ints(MAX_QUOTED_INTEGERS + 1)),
            format!("a: [{big}]\nb:\n{}", ints(MAX_QUOTED_INTEGERS + 3)),
            // Handed over for another reason.
            format!("a:\n{}b: .inf\n", ints(MAX_QUOTED_INTEGERS)),
            format!("a:\n{}b: 1e400\n", ints(3)),
            format!("a: [{big}, {big}]\nb: 1\nb: 2\n"),
            format!("a: [{big}, {{k: 1, k: 2}}, {big}]\n"),
            // Anchors and aliases do not change the order.
            format!("a: &x {big}\nb: *x\nc: [{big}]\n"),
            format!("a:\n{}- [&a x, *a]\n", ints(MAX_QUOTED_INTEGERS + 1)),
            format!("a: &y [{big}, 1]\nb: *y\nc:\n{}", ints(MAX_QUOTED_INTEGERS)),
            // The order is not certain: the loop alone.
            format!("a: [{big}, 0x{big}]\nb: .nan\n"),
            format!("a: !!str {big}\nb: [{big}]\n"),
            format!("{big}: 1\nb: [{big}]\nc: .inf\n"),
            format!("a: [{big}, ]]\n"),
            format!("--- [{big}]\n--- 1\n"),
        ];
        for text in &cases {
            let quote = match decode(text, 64) {
                Decoded::HandOver { quote } => quote,
                _ => panic!("{text:?} not handed over"),
            };
            let at_once = crate::manifest::load::decode_with_yaml_serde(text, &quote);
            let one_by_one = crate::manifest::load::decode_with_yaml_serde(text, &[]);
            assert_eq!(at_once, one_by_one, "{text:?}");
        }
        // These are quoted at once (no parse each).
        for text in [&cases[0], &cases[1], &cases[2], &cases[7], &cases[8]] {
            assert!(
                matches!(decode(text, 64), Decoded::HandOver { quote } if quote.len() == MAX_QUOTED_INTEGERS),
                "{text:?}"
            );
        }
        for text in &cases[9..] {
            assert!(
                matches!(decode(text, 64), Decoded::HandOver { quote } if quote.is_empty()),
                "{text:?}"
            );
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
            assert!(fast(text).is_none(), "{text:?}");
        }
        // Collections: nested, flow and block, keys of every scalar kind.
        for text in [
            "a:\n  - 1\n  - [x, {y: z}]\n  - {}\n  - []\nb: null\n",
            "? a\n: 1\n1: x\n1.5: y\ntrue: z\n~: w\n",
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
