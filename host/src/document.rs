//! The manifest document: what a `plugin.yaml`, a `plugin.json`, an
//! agent's config file or a component's WIT record becomes before the one
//! validator (`crate::manifest`, `crate::declaration`) reads it.
//!
//! The shape is YAML's data model (null, booleans, numbers, strings,
//! sequences, mappings, tagged values), as `yaml_serde::Value` has it, so
//! a YAML file, a JSON file and a component's record give the same document
//! and therefore the same declaration and the same errors
//! (`docs/declarations.md` §2a). It is this crate's own type for speed
//! (`docs/performance.md`, "Manifest pipeline"): a mapping keeps its
//! entries in file order in one vector — manifests' mappings have a few
//! keys each, found faster by a scan than by hashing — and only a large
//! mapping (a manifest's `mcp_servers`) keeps a hash index beside them.
//! Decoding builds it in one pass from the parser, with no intermediate
//! value: YAML from libyaml's events (`crate::manifest` `yaml_events`),
//! and where that decode hands over, `yaml_serde` and `serde_json` drive
//! its [`Deserialize`]; a duplicate key is refused as `yaml_serde` refuses
//! it, with the same message.

use serde::de::{self, Deserialize, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess};
use serde::ser::{Serialize, SerializeMap, Serializer};
use std::collections::HashMap;
use std::fmt;

pub use yaml_serde::Number;

/// A decoded value (YAML's data model).
// `Key` is implemented for `str` and `String`, which makes the lint count
// the document's types as reachable; nothing outside the crate can name
// the trait (this module is private), so nothing there can reach them.
#[allow(unnameable_types)]
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Value {
    /// `null`, `~`, or nothing.
    #[default]
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An integer or a float.
    Number(Number),
    /// A string.
    String(String),
    /// A list.
    Sequence(Vec<Value>),
    /// A mapping, in file order.
    Mapping(Mapping),
    /// A value with a YAML tag (`!Ref x`).
    Tagged(Box<TaggedValue>),
}

/// A value with its YAML tag.
// `Key` is implemented for `str` and `String`, which makes the lint count
// the document's types as reachable; nothing outside the crate can name
// the trait (this module is private), so nothing there can reach them.
#[allow(unnameable_types)]
#[derive(Debug, Clone, PartialEq)]
pub struct TaggedValue {
    /// The tag without its `!`.
    pub tag: String,
    /// The tagged value.
    pub value: Value,
}

/// Entries of a mapping past which a lookup uses a hash index.
const INDEXED_FROM: usize = 16;

/// A mapping: its entries in file order, each key once.
// `Key` is implemented for `str` and `String`, which makes the lint count
// the document's types as reachable; nothing outside the crate can name
// the trait (this module is private), so nothing there can reach them.
#[allow(unnameable_types)]
#[derive(Default)]
pub struct Mapping {
    entries: Vec<(Value, Value)>,
    /// String key → position, kept while the mapping has at least
    /// [`INDEXED_FROM`] entries (boxed: most mappings have none, and a
    /// small `Value` moves faster).
    index: Option<Box<KeyIndex>>,
}

/// Every key of a large mapping → its position: string keys as they are,
/// any other key by [`other_key`], so no kind of key makes a lookup (or
/// the duplicate check of decoding) a scan.
#[derive(Clone, Default)]
struct KeyIndex {
    strings: HashMap<String, usize>,
    others: HashMap<String, usize>,
}

impl KeyIndex {
    fn add(&mut self, key: &Value, at: usize) {
        match key {
            Value::String(s) => self.strings.entry(s.clone()).or_insert(at),
            other => self.others.entry(other_key(other)).or_insert(at),
        };
    }

    fn find<K: Key + ?Sized>(&self, key: &K) -> Option<usize> {
        match key.as_key_str() {
            Some(s) => self.strings.get(s),
            None => self.others.get(&other_key(key.as_value()?)),
        }
        .copied()
    }
}

/// A key that is not a string, as text that is equal exactly when the
/// keys are equal ([`Value`]'s `PartialEq`: `0.0` is `-0.0`, a NaN is every
/// NaN, `1` is not `1.0`, mappings are equal in any order).
fn other_key(k: &Value) -> String {
    let mut out = String::new();
    canonical(k, &mut out);
    out
}

fn canonical(v: &Value, out: &mut String) {
    use std::fmt::Write as _;
    match v {
        Value::Null => out.push('z'),
        Value::Bool(b) => out.push_str(if *b { "b1" } else { "b0" }),
        Value::Number(n) => {
            let _ = match (n.as_u64(), n.as_i64(), n.as_f64()) {
                (Some(u), _, _) if !n.is_f64() => write!(out, "u{u}"),
                (_, Some(i), _) if !n.is_f64() => write!(out, "i{i}"),
                (_, _, Some(f)) if f.is_nan() => write!(out, "fnan"),
                // `-0.0 == 0.0`: one key.
                (_, _, Some(f)) => write!(out, "f{:x}", (f + 0.0).to_bits()),
                _ => write!(out, "n{n}"),
            };
        }
        // Length-prefixed, so no string can end where another part begins.
        Value::String(s) => {
            let _ = write!(out, "s{}:{s}", s.len());
        }
        Value::Sequence(items) => {
            let _ = write!(out, "l{}[", items.len());
            items.iter().for_each(|i| canonical(i, out));
            out.push(']');
        }
        Value::Mapping(m) => {
            let mut entries: Vec<String> = m
                .iter()
                .map(|(k, v)| {
                    let mut e = String::new();
                    canonical(k, &mut e);
                    canonical(v, &mut e);
                    e
                })
                .collect();
            entries.sort();
            let _ = write!(out, "m{}{{", entries.len());
            for e in entries {
                let _ = write!(out, "{}:{e}", e.len());
            }
            out.push('}');
        }
        Value::Tagged(t) => {
            let _ = write!(out, "t{}:{}", t.tag.len(), t.tag);
            canonical(&t.value, out);
        }
    }
}


impl Clone for Mapping {
    fn clone(&self) -> Self {
        Mapping {
            entries: self.entries.clone(),
            index: self.index.clone(),
        }
    }
}

/// Equal when they hold the same keys with equal values, in any order
/// (as `yaml_serde`'s mapping compares): `{a: 1, b: 2}` is `{b: 2, a: 1}`.
impl PartialEq for Mapping {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().all(|(k, v)| other.get(k) == Some(v))
    }
}

impl fmt::Debug for Mapping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.entries.iter().map(|(k, v)| (k, v)))
            .finish()
    }
}

/// What a mapping can be searched by: a string (`m.get("kind")`) or a key
/// value.
// `Key` is implemented for `str` and `String`, which makes the lint count
// the document's types as reachable; nothing outside the crate can name
// the trait (this module is private), so nothing there can reach them.
#[allow(unnameable_types)]
pub trait Key {
    /// The key as a string, when it is one.
    fn as_key_str(&self) -> Option<&str>;
    /// The key as a value, when it is one (a key that is not a string is
    /// always a value).
    fn as_value(&self) -> Option<&Value> {
        None
    }
    /// Whether `k` is this key.
    fn is(&self, k: &Value) -> bool;
}

impl Key for str {
    fn as_key_str(&self) -> Option<&str> {
        Some(self)
    }
    fn is(&self, k: &Value) -> bool {
        // Length and first byte before the whole compare: the keys of a
        // manifest's small mappings mostly differ in one of them, and a
        // call to `memcmp` per key tried was a tenth of validation
        // (`docs/performance.md`, "2026-12-05 (evening)").
        matches!(k, Value::String(s) if s.len() == self.len()
            && s.as_bytes().first() == self.as_bytes().first()
            && s == self)
    }
}

impl Key for String {
    fn as_key_str(&self) -> Option<&str> {
        Some(self)
    }
    fn is(&self, k: &Value) -> bool {
        self.as_str().is(k)
    }
}

impl Key for Value {
    fn as_key_str(&self) -> Option<&str> {
        self.as_str()
    }
    fn as_value(&self) -> Option<&Value> {
        Some(self)
    }
    fn is(&self, k: &Value) -> bool {
        self == k
    }
}

impl<T: Key + ?Sized> Key for &T {
    fn as_key_str(&self) -> Option<&str> {
        (**self).as_key_str()
    }
    fn as_value(&self) -> Option<&Value> {
        (**self).as_value()
    }
    fn is(&self, k: &Value) -> bool {
        (**self).is(k)
    }
}

impl Mapping {
    /// An empty mapping.
    pub fn new() -> Mapping {
        Mapping::default()
    }

    /// An empty mapping with room for `n` entries.
    pub fn with_capacity(n: usize) -> Mapping {
        Mapping {
            entries: Vec::with_capacity(n),
            index: None,
        }
    }

    fn position<K: Key + ?Sized>(&self, key: &K) -> Option<usize> {
        if let Some(ix) = &self.index {
            return ix.find(key);
        }
        self.entries.iter().position(|(k, _)| key.is(k))
    }

    /// The index of a mapping with [`INDEXED_FROM`] entries or more, built
    /// anew after a removal.
    fn reindex(&mut self) {
        self.index = (self.entries.len() >= INDEXED_FROM).then(|| {
            let mut ix = KeyIndex::default();
            for (i, (k, _)) in self.entries.iter().enumerate() {
                ix.add(k, i);
            }
            Box::new(ix)
        });
    }

    /// A mapping of `entries`, whose keys the caller knows to be
    /// distinct (the decoder checked each as it came), with its index when
    /// it is large enough for one.
    pub(crate) fn from_distinct(entries: Vec<(Value, Value)>) -> Mapping {
        let mut m = Mapping {
            entries,
            index: None,
        };
        m.reindex();
        m
    }

    /// Largest number of entries a mapping may have without an index: the
    /// decoder keeps smaller ones on its stack ([`Mapping::from_distinct`]).
    pub(crate) const UNINDEXED_MAX: usize = INDEXED_FROM - 1;

    /// The value of `key`.
    pub fn get<K: Key + ?Sized>(&self, key: &K) -> Option<&Value> {
        self.position(key).map(|i| &self.entries[i].1)
    }

    /// The value of `key`, to change it.
    pub fn get_mut<K: Key + ?Sized>(&mut self, key: &K) -> Option<&mut Value> {
        let i = self.position(key)?;
        Some(&mut self.entries[i].1)
    }

    /// Whether `key` is there.
    pub fn contains_key<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.position(key).is_some()
    }

    /// Sets `key` to `value`: in its place when the key is there (the old
    /// value is returned), else at the end.
    pub fn insert(&mut self, key: Value, value: Value) -> Option<Value> {
        match self.position(&key) {
            Some(i) => Some(std::mem::replace(&mut self.entries[i].1, value)),
            None => {
                self.push_new(key, value);
                None
            }
        }
    }

    /// Appends a key known not to be there, keeping the index (when there
    /// is one) up to date, so building a large mapping stays linear.
    pub(crate) fn push_new(&mut self, key: Value, value: Value) {
        if let Some(ix) = &mut self.index {
            ix.add(&key, self.entries.len());
        }
        self.entries.push((key, value));
        if self.index.is_none() && self.entries.len() == INDEXED_FROM {
            self.reindex();
        }
    }

    /// Removes `key`, keeping the order of the others.
    pub fn shift_remove<K: Key + ?Sized>(&mut self, key: &K) -> Option<Value> {
        let i = self.position(key)?;
        let (_, v) = self.entries.remove(i);
        self.reindex();
        Some(v)
    }

    /// Keeps the entries for which `f` holds.
    pub fn retain(&mut self, mut f: impl FnMut(&Value, &mut Value) -> bool) {
        self.entries.retain_mut(|(k, v)| f(k, v));
        self.reindex();
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it has no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries in order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&Value, &Value)> + ExactSizeIterator {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    /// The keys in order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &Value> + ExactSizeIterator {
        self.entries.iter().map(|(k, _)| k)
    }

    /// The values in order, to change them.
    pub fn values_mut(&mut self) -> impl DoubleEndedIterator<Item = &mut Value> + ExactSizeIterator {
        self.entries.iter_mut().map(|(_, v)| v)
    }

    /// The values in order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &Value> + ExactSizeIterator {
        self.entries.iter().map(|(_, v)| v)
    }
}

impl<'a> IntoIterator for &'a Mapping {
    type Item = (&'a Value, &'a Value);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (Value, Value)>,
        fn(&'a (Value, Value)) -> (&'a Value, &'a Value),
    >;
    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter().map(|(k, v)| (k, v))
    }
}

impl IntoIterator for Mapping {
    type Item = (Value, Value);
    type IntoIter = std::vec::IntoIter<(Value, Value)>;
    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

impl Extend<(Value, Value)> for Mapping {
    fn extend<I: IntoIterator<Item = (Value, Value)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

impl FromIterator<(Value, Value)> for Mapping {
    fn from_iter<I: IntoIterator<Item = (Value, Value)>>(iter: I) -> Self {
        let mut m = Mapping::new();
        m.extend(iter);
        m
    }
}

impl Value {
    /// The string, when it is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The mapping, when it is one.
    pub fn as_mapping(&self) -> Option<&Mapping> {
        match self {
            Value::Mapping(m) => Some(m),
            _ => None,
        }
    }

    /// The list, when it is one.
    pub fn as_sequence(&self) -> Option<&Vec<Value>> {
        match self {
            Value::Sequence(s) => Some(s),
            _ => None,
        }
    }

    /// The boolean, when it is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The number as an `i64`, when it is an integer in range.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Number(n) => n.as_i64(),
            _ => None,
        }
    }

    /// The number as a `u64`, when it is a non-negative integer in range.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Value::Number(n) => n.as_u64(),
            _ => None,
        }
    }

    /// The number as an `f64`, when it is a number.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(n) => n.as_f64(),
            _ => None,
        }
    }

    /// Whether it is `null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// Whether it is a string.
    pub fn is_string(&self) -> bool {
        matches!(self, Value::String(_))
    }

    /// Whether it is a boolean.
    pub fn is_bool(&self) -> bool {
        matches!(self, Value::Bool(_))
    }

    /// Whether it is a mapping.
    pub fn is_mapping(&self) -> bool {
        matches!(self, Value::Mapping(_))
    }

    /// The value of a mapping's key (`v.get("args")`) or a list's item
    /// (`v.get(0)`).
    pub fn get<I: Index>(&self, index: I) -> Option<&Value> {
        index.index_into(self)
    }

    /// [`Value::get`], to change it.
    pub fn get_mut<I: Index>(&mut self, index: I) -> Option<&mut Value> {
        index.index_into_mut(self)
    }
}

/// `v["key"]`, `v[0]`: the value there, or `null` when there is none (as
/// `yaml_serde` indexes).
impl<I: Index> std::ops::Index<I> for Value {
    type Output = Value;
    fn index(&self, index: I) -> &Value {
        static NULL: Value = Value::Null;
        index.index_into(self).unwrap_or(&NULL)
    }
}

/// `v["key"] = …` for building documents in tests, as `yaml_serde`
/// does: a missing key is added (a `null` becomes a mapping first).
/// Panics on a list index out of range or a key into a scalar, so it is
/// never compiled into the product.
#[cfg(any(test, feature = "internals"))]
impl std::ops::IndexMut<&str> for Value {
    fn index_mut(&mut self, key: &str) -> &mut Value {
        if self.is_null() {
            *self = Value::Mapping(Mapping::new());
        }
        match self {
            Value::Mapping(m) => {
                if !m.contains_key(key) {
                    m.insert(key.into(), Value::Null);
                }
                m.get_mut(key).expect("just inserted")
            }
            _ => panic!("cannot access key {key:?} in a non-mapping"),
        }
    }
}

#[cfg(any(test, feature = "internals"))]
impl std::ops::IndexMut<usize> for Value {
    fn index_mut(&mut self, i: usize) -> &mut Value {
        match self {
            Value::Sequence(s) => &mut s[i],
            _ => panic!("cannot access index {i} of a non-sequence"),
        }
    }
}

/// What [`Value::get`] takes: a position in a list, or a mapping's key.
// Implemented for `usize`: reachable for the lint, unnameable outside (see `Key`).
#[allow(unnameable_types)]
pub trait Index {
    /// The value at this index of `v`.
    fn index_into<'v>(&self, v: &'v Value) -> Option<&'v Value>;
    /// The value at this index of `v`, to change it.
    fn index_into_mut<'v>(&self, v: &'v mut Value) -> Option<&'v mut Value>;
}

impl Index for usize {
    fn index_into<'v>(&self, v: &'v Value) -> Option<&'v Value> {
        v.as_sequence()?.get(*self)
    }
    fn index_into_mut<'v>(&self, v: &'v mut Value) -> Option<&'v mut Value> {
        match v {
            Value::Sequence(s) => s.get_mut(*self),
            _ => None,
        }
    }
}

impl<K: Key + ?Sized> Index for &K {
    fn index_into<'v>(&self, v: &'v Value) -> Option<&'v Value> {
        v.as_mapping()?.get(*self)
    }
    fn index_into_mut<'v>(&self, v: &'v mut Value) -> Option<&'v mut Value> {
        match v {
            Value::Mapping(m) => m.get_mut(*self),
            _ => None,
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::String(s.to_string())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::String(s)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}

impl From<Mapping> for Value {
    fn from(m: Mapping) -> Value {
        Value::Mapping(m)
    }
}

impl From<Vec<Value>> for Value {
    fn from(s: Vec<Value>) -> Value {
        Value::Sequence(s)
    }
}

/// `yaml_serde`'s value (an agent's config edited in place, a front
/// matter) as a document.
impl From<yaml_serde::Value> for Value {
    fn from(v: yaml_serde::Value) -> Value {
        match v {
            yaml_serde::Value::Null => Value::Null,
            yaml_serde::Value::Bool(b) => Value::Bool(b),
            yaml_serde::Value::Number(n) => Value::Number(n),
            yaml_serde::Value::String(s) => Value::String(s),
            yaml_serde::Value::Sequence(s) => Value::Sequence(s.into_iter().map(Value::from).collect()),
            yaml_serde::Value::Mapping(m) => Value::Mapping(
                m.into_iter()
                    .map(|(k, v)| (Value::from(k), Value::from(v)))
                    .collect(),
            ),
            yaml_serde::Value::Tagged(t) => Value::Tagged(Box::new(TaggedValue {
                tag: t.tag.to_string().trim_start_matches('!').to_string(),
                value: Value::from(t.value),
            })),
        }
    }
}

/// A document as `yaml_serde`'s value, for writing YAML, JSON and TOML
/// files (`crate::manifest::agents::edit`).
impl From<&Value> for yaml_serde::Value {
    fn from(v: &Value) -> yaml_serde::Value {
        match v {
            Value::Null => yaml_serde::Value::Null,
            Value::Bool(b) => yaml_serde::Value::Bool(*b),
            Value::Number(n) => yaml_serde::Value::Number(n.clone()),
            Value::String(s) => yaml_serde::Value::String(s.clone()),
            Value::Sequence(s) => yaml_serde::Value::Sequence(s.iter().map(Into::into).collect()),
            Value::Mapping(m) => yaml_serde::Value::Mapping(
                m.iter().map(|(k, v)| (k.into(), v.into())).collect(),
            ),
            Value::Tagged(t) => yaml_serde::Value::Tagged(Box::new(yaml_serde::value::TaggedValue {
                tag: yaml_serde::value::Tag::new(t.tag.clone()),
                value: (&t.value).into(),
            })),
        }
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(ValueVisitor(Keep::All))
    }
}

/// Which parts of a text [`Pruned`] builds. A config file may be large
/// for reasons of its own (Claude Code keeps each project's history in
/// `~/.claude.json`) while its reader looks at a few keys: what it never
/// reads is checked by the parser and not built (`docs/security.md`,
/// "MCP client bounds", the config file row).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Keep {
    /// Everything.
    All,
    /// In a mapping, the values of these keys, each as its `Keep` says;
    /// any other key stays, with a null value. A list here is read and
    /// dropped (an empty list stands for it): the readers look only into
    /// a mapping (a 63 MiB `projects` list took 1.3 GB when built).
    Keys(&'static [(&'static str, Keep)]),
    /// In a mapping, every value as the `Keep` says; a list, as for
    /// `Keys`.
    Values(&'static Keep),
}

/// A [`Value`] decoded with only the parts its [`Keep`] names built; the
/// rest is parsed (its syntax, and a duplicate key where it is built,
/// refused alike) and dropped as it is read.
pub(crate) struct Pruned(pub(crate) Keep);

impl<'de> de::DeserializeSeed<'de> for Pruned {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(ValueVisitor(self.0))
    }
}

struct ValueVisitor(Keep);

impl<'de> de::Visitor<'de> for ValueVisitor {
    type Value = Value;

    // The same words as yaml_serde's, so a number beyond 64 bits is
    // reported (and quoted, `crate::manifest::load::decode_yaml`) alike.
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E>(self, i: i64) -> Result<Value, E> {
        Ok(Value::Number(i.into()))
    }

    fn visit_u64<E>(self, u: u64) -> Result<Value, E> {
        Ok(Value::Number(u.into()))
    }

    fn visit_f64<E>(self, f: f64) -> Result<Value, E> {
        Ok(Value::Number(f.into()))
    }

    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_owned()))
    }

    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Value::deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Value, A::Error> {
        if !matches!(self.0, Keep::All) {
            while a.next_element::<de::IgnoredAny>()?.is_some() {}
            // Still a list (empty): "must be a mapping (got a list)".
            return Ok(Value::Sequence(Vec::new()));
        }
        let mut v = Vec::with_capacity(a.size_hint().unwrap_or(0).min(1024));
        while let Some(x) = a.next_element::<Value>()? {
            v.push(x);
        }
        Ok(Value::Sequence(v))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Value, A::Error> {
        let mut m = Mapping::with_capacity(a.size_hint().unwrap_or(0).min(1024));
        while let Some(key) = a.next_key::<Value>()? {
            // Refused where yaml_serde refuses it (before the value), with
            // its words: `decode_yaml` turns them into a message with lines.
            // Named as the first entry has it (`0.0` for a later `-0.0`).
            if let Some(i) = m.position(&key) {
                return Err(de::Error::custom(DuplicateKey(&m.entries[i].0)));
            }
            let keep = match self.0 {
                Keep::All => Some(Keep::All),
                Keep::Values(k) => Some(*k),
                Keep::Keys(keys) => key
                    .as_str()
                    .and_then(|s| keys.iter().find(|(n, _)| *n == s))
                    .map(|(_, k)| *k),
            };
            let value = match keep {
                Some(k) => a.next_value_seed(Pruned(k))?,
                None => {
                    a.next_value::<de::IgnoredAny>()?;
                    Value::Null
                }
            };
            m.push_new(key, value);
        }
        Ok(Value::Mapping(m))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, a: A) -> Result<Value, A::Error> {
        let (tag, contents) = a.variant::<String>()?;
        let value = contents.newtype_variant::<Value>()?;
        Ok(Value::Tagged(Box::new(TaggedValue {
            tag: tag.trim_start_matches('!').to_string(),
            value,
        })))
    }
}

/// yaml_serde's message for a key given twice.
struct DuplicateKey<'a>(&'a Value);

impl fmt::Display for DuplicateKey<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("duplicate entry ")?;
        match self.0 {
            Value::Null => f.write_str("with null key"),
            Value::Bool(b) => write!(f, "with key `{b}`"),
            Value::Number(n) => write!(f, "with key {n}"),
            Value::String(s) => write!(f, "with key {s:?}"),
            Value::Sequence(_) | Value::Mapping(_) | Value::Tagged(_) => f.write_str("in YAML map"),
        }
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Null => s.serialize_unit(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Number(n) => n.serialize(s),
            Value::String(v) => s.serialize_str(v),
            Value::Sequence(v) => v.serialize(s),
            Value::Mapping(m) => m.serialize(s),
            // As yaml_serde writes a tagged value outside YAML: `{"!tag": value}`.
            Value::Tagged(t) => {
                // A one-entry map whose key is collected as a string
                // starting with `!`: how yaml_serde's serializer is told
                // to write a tag (`!custom 5`, not `'!custom': 5`); JSON
                // gets the map.
                struct TagKey<'a>(&'a str);
                impl Serialize for TagKey<'_> {
                    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                        s.collect_str(&format_args!("!{}", self.0))
                    }
                }
                let mut map = s.serialize_map(Some(1))?;
                map.serialize_entry(&TagKey(&t.tag), &t.value)?;
                map.end()
            }
        }
    }
}

impl Serialize for Mapping {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.len()))?;
        for (k, v) in self {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaml(s: &str) -> Result<Value, String> {
        yaml_serde::from_str::<Value>(s).map_err(|e| e.to_string())
    }

    #[test]
    fn decodes_what_yaml_serde_decodes_in_the_same_order() {
        let text = "b: 1\na: [x, 2.5, null, true]\nc: {d: ~, e: !Ref f}\n7: seven\n";
        let ours = yaml(text).unwrap();
        let theirs: yaml_serde::Value = yaml_serde::from_str(text).unwrap();
        assert_eq!(ours, Value::from(theirs.clone()));
        assert_eq!(yaml_serde::Value::from(&ours), theirs);
        let keys: Vec<_> = ours.as_mapping().unwrap().keys().cloned().collect();
        assert_eq!(
            keys,
            [
                Value::from("b"),
                Value::from("a"),
                Value::from("c"),
                Value::Number(7.into())
            ]
        );
    }

    #[test]
    fn duplicate_keys_and_huge_integers_are_refused_in_yaml_serdes_words() {
        for (text, _) in [("a: 1\na: 2\n", ()), ("x:\n  k: 1\n  k: 2\n", ())] {
            let ours = yaml(text).unwrap_err();
            let theirs = yaml_serde::from_str::<yaml_serde::Value>(text)
                .unwrap_err()
                .to_string();
            assert_eq!(ours, theirs);
        }
        let text = "args: [99999999999999999999999]\n";
        assert_eq!(
            yaml(text).unwrap_err(),
            yaml_serde::from_str::<yaml_serde::Value>(text)
                .unwrap_err()
                .to_string()
        );
    }

    #[test]
    fn a_large_mapping_is_found_through_its_index_and_kept_in_order() {
        let mut m = Mapping::new();
        for i in 0..100 {
            m.insert(Value::from(format!("k{i}")), Value::Number(i.into()));
        }
        assert_eq!(m.get("k42"), Some(&Value::Number(42.into())));
        m.insert("k42".into(), Value::Null);
        assert_eq!(m.get("k42"), Some(&Value::Null));
        assert_eq!(m.shift_remove("k0"), Some(Value::Number(0.into())));
        assert_eq!(m.get("k1"), Some(&Value::Number(1.into())));
        assert_eq!(m.keys().next(), Some(&Value::from("k1")));
        assert_eq!(m.len(), 99);
        assert!(!m.contains_key("k0"));
    }

    #[test]
    fn mappings_are_equal_in_any_order() {
        assert_eq!(yaml("{a: 1, b: [x]}").unwrap(), yaml("{b: [x], a: 1}").unwrap());
        assert_ne!(yaml("{a: 1, b: 2}").unwrap(), yaml("{a: 1, b: 3}").unwrap());
        assert_ne!(yaml("{a: 1}").unwrap(), yaml("{a: 1, b: 2}").unwrap());
    }

    #[test]
    fn keys_that_are_not_strings_are_indexed_too() {
        // 5,000 integer keys and a duplicate: found through the index (a
        // scan per key would make a 4 MiB file of them quadratic).
        let mut text: String = (0..5000).map(|i| format!("{i}: x\n")).collect();
        let v = yaml(&text).unwrap();
        let m = v.as_mapping().unwrap();
        let ix = m.index.as_ref().expect("a large mapping is indexed");
        assert_eq!(ix.others.len(), 5000);
        assert_eq!(m.get(&Value::Number(4999.into())), Some(&Value::from("x")));
        text.push_str("17: y\n");
        assert!(yaml(&text).unwrap_err().starts_with("duplicate entry with key 17"));
        let text: String = (0..40).map(|i| format!("? [{i}]\n: x\n")).collect::<String>() + "? [3]\n: y\n";
        assert!(yaml(&text).unwrap_err().starts_with("duplicate entry in YAML map"));
        // Keys equal as values are one key, also in an indexed mapping,
        // and the message names the first.
        let many: String = (0..20).map(|i| format!("k{i}: x\n")).collect();
        for (dup, first) in [("0.0: a\n-0.0: b\n", "0.0"), ("? {a: 1, b: 2}\n: x\n? {b: 2, a: 1}\n: y\n", "")] {
            for text in [dup.to_string(), format!("{many}{dup}")] {
                let e = yaml(&text).unwrap_err();
                let theirs = yaml_serde::from_str::<yaml_serde::Value>(&text)
                    .unwrap_err()
                    .to_string();
                assert_eq!(e, theirs, "{text}");
                assert!(first.is_empty() || e.contains(first), "{e}");
            }
        }
    }

    #[test]
    fn json_decodes_to_the_same_document() {
        let ours: Value = serde_json::from_str(r#"{"b": 1, "a": ["x", 2.5, null, true]}"#).unwrap();
        assert_eq!(ours, yaml("b: 1\na: [x, 2.5, null, true]").unwrap());
        assert_eq!(
            serde_json::to_string(&ours).unwrap(),
            r#"{"b":1,"a":["x",2.5,null,true]}"#
        );
    }
}
