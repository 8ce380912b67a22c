//! Validation of decoded manifests, declarations and config files: the
//! [`Problem`] every validator reports, the [`Cursor`] that tracks the field
//! path while a validator descends, and the one place each message shape is
//! written (`must be <what> (got <type>)`, unknown keys, "did you mean",
//! the offending value echoed after the path). Helpers over the decoded
//! document (`crate::document::Value`): Python-like falsiness (docs/declarations.md
//! §1.4, §2.2), scalar stringification.

use crate::document::{Mapping, Value};

/// `a string`, `a list`, `a mapping`, … — what an error says it got.
pub fn describe(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

/// The message for a value of the wrong type: `must be <what> (got <type>)`,
/// e.g. `must be a list of tool names (got a string)` (`docs/declarations.md`
/// §2: every error names what was expected and what was found).
pub fn must_be(what: &str, got: &Value) -> String {
    must_be_got(what, describe(got))
}

/// [`must_be`] when what was found is already in words (`nothing` for a
/// missing key, the type [`falsy_or_text`] names).
pub fn must_be_got(what: &str, got: &str) -> String {
    format!("must be {what} (got {got})")
}

/// `must be <what> (<note>; got <type>)`, for a type whose spelling needs a
/// word more: `must be a boolean (true or false; got a string)`.
pub fn must_be_noted(what: &str, note: &str, got: &Value) -> String {
    must_be_noted_got(what, note, describe(got))
}

/// [`must_be_noted`] when what was found is already in words.
pub fn must_be_noted_got(what: &str, note: &str, got: &str) -> String {
    format!("must be {what} ({note}; got {got})")
}

/// ` (got <type>)`: what follows a message that names what was expected
/// in its own words (`must be one of ('executable', 'bundle') (got a
/// number)`).
pub fn got_type(got: &Value) -> String {
    format!(" (got {})", describe(got))
}

/// One problem found while validating, before the `where` label of its
/// document (and its server) is attached. Declarations, manifests and
/// agents' config files all report through it. The offending value is not
/// kept here: it is read from the document at the path ([`echo_at`]) once
/// the problem becomes a `DeclarationError` or `ManifestError`, the one
/// place that has the whole document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The field path (`app.linux.location[0].name`, `oauth.idp.issuer`);
    /// empty for a problem of the whole entry or document.
    pub path: String,
    /// What is wrong, with a hint where one helps.
    pub message: String,
}

impl Problem {
    /// A problem at `path`.
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Problem {
        Problem {
            path: path.into(),
            message: message.into(),
        }
    }
}

/// One step of a field path: a mapping key or a list index.
#[derive(Debug, Clone, Copy)]
enum Seg<'a> {
    Key(&'a str),
    Index(usize),
}

/// The field path of the value a validator is looking at, as segments
/// pushed on the way down and popped on the way back, plus the problems
/// found so far. The path is rendered (`app.linux.location[0].name`) only
/// when a problem is recorded, so a valid document costs no path text.
#[derive(Debug, Default)]
pub struct Cursor<'a> {
    segs: Vec<Seg<'a>>,
    problems: Vec<Problem>,
}

impl<'a> Cursor<'a> {
    /// A cursor at the root of a document.
    pub fn new() -> Cursor<'a> {
        Cursor::default()
    }

    /// Steps into the mapping key `key`.
    pub fn key(&mut self, key: &'a str) -> &mut Self {
        self.segs.push(Seg::Key(key));
        self
    }

    /// Steps into the list item `i`.
    pub fn index(&mut self, i: usize) -> &mut Self {
        self.segs.push(Seg::Index(i));
        self
    }

    /// Steps back out of the last key or index.
    pub fn pop(&mut self) {
        self.segs.pop();
    }

    /// The current path, `rel` appended (`.rel`, or `rel` itself when it
    /// starts with `[` or the path is empty).
    pub fn path_to(&self, rel: &str) -> String {
        let mut out = String::new();
        for seg in &self.segs {
            match seg {
                Seg::Key(k) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(k);
                }
                Seg::Index(i) => {
                    use std::fmt::Write as _;
                    let _ = write!(out, "[{i}]");
                }
            }
        }
        if !rel.is_empty() {
            if !out.is_empty() && !rel.starts_with('[') {
                out.push('.');
            }
            out.push_str(rel);
        }
        out
    }

    /// The current path (`app.linux.location[0]`).
    pub fn path(&self) -> String {
        self.path_to("")
    }

    /// A problem at the current path, not recorded (a validator that stops
    /// at its first problem returns it).
    pub fn problem(&self, message: impl Into<String>) -> Problem {
        Problem::new(self.path(), message)
    }

    /// A problem at `rel` below the current path, not recorded.
    pub fn problem_at(&self, rel: &str, message: impl Into<String>) -> Problem {
        Problem::new(self.path_to(rel), message)
    }

    /// Records a problem at `rel` below the current path.
    pub fn report_at(&mut self, rel: &str, message: impl Into<String>) {
        let p = self.problem_at(rel, message);
        self.problems.push(p);
    }

    /// Records problems found elsewhere (paths already complete).
    pub fn extend(&mut self, problems: impl IntoIterator<Item = Problem>) {
        self.problems.extend(problems);
    }

    /// How many problems are recorded: a validator compares it before and
    /// after a part to know whether that part was clean.
    pub fn count(&self) -> usize {
        self.problems.len()
    }

    /// The recorded problems, in the order found; the cursor keeps none.
    pub fn take(&mut self) -> Vec<Problem> {
        std::mem::take(&mut self.problems)
    }
}

/// A mapping key as text for messages: strings as they are, anything else
/// rendered as compact YAML (`1`, `[a]`), so a non-string key is reported,
/// never a panic (decision 6).
pub fn key_text(k: &Value) -> String {
    match k {
        Value::String(s) => s.clone(),
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        // Written as YAML writes it (`!x a` for a tagged key).
        other => yaml_serde::to_string(&yaml_serde::Value::from(other))
            .map(|s| s.trim_end().replace('\n', " "))
            .unwrap_or_else(|_| describe(other).to_string()),
    }
}

/// Python truthiness of a decoded value: null, `false`, `0`, `""`, `[]`, `{}` are falsy.
pub fn is_falsy(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Sequence(s) => s.is_empty(),
        Value::Mapping(m) => m.is_empty(),
        Value::Tagged(_) => false,
    }
}

/// A scalar as text: strings as they are, numbers and booleans in their YAML
/// spelling (`8080`, `true`). `None` for null, lists, mappings and tagged values.
pub fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The "stringified, falsy gives `""`" rule (docs/declarations.md §1.4) for optional text
/// fields (`liveness.path`, `*_key`, `version.display_name_prefix`): a missing
/// or falsy value is `""`, a string or number is its text. `Err` with what was
/// found for `true`, lists and mappings (type confusion, decision 6).
pub fn falsy_or_text(v: Option<&Value>) -> Result<String, &'static str> {
    match v {
        None => Ok(String::new()),
        Some(v) if is_falsy(v) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Number(n)) => Ok(n.to_string()),
        Some(other) => Err(describe(other)),
    }
}

/// Most names a message lists ([`quoted_list`]); the rest are counted.
pub const LIST_MAX_NAMES: usize = 20;

/// Python-style list of quoted names: `['a', 'b']`. Each name is shown as
/// [`echo_name`] gives it, and after [`LIST_MAX_NAMES`] the rest are
/// counted (`… and 3 more`): a plugin's keys are its own, so a list of them
/// is bounded like any echoed value.
pub fn quoted_list<S: AsRef<str>>(items: &[S]) -> String {
    let mut inner: Vec<String> = items
        .iter()
        .take(LIST_MAX_NAMES)
        .map(|s| format!("'{}'", echo_name(s.as_ref())))
        .collect();
    if items.len() > LIST_MAX_NAMES {
        inner.push(format!("… and {} more", items.len() - LIST_MAX_NAMES));
    }
    format!("[{}]", inner.join(", "))
}

/// A name from the input (an unknown key, a bad server or variable name) as
/// a message shows it: redacted of token shapes and cut at
/// [`ECHO_MAX_CHARS`] characters with `…`, like an echoed value
/// (`docs/security.md`, "Redaction"). Quoting and escaping are the
/// caller's (messages put names in `'…'`; the terminal escapes at print).
pub fn echo_name(name: &str) -> String {
    crate::terminal::cut_chars(&crate::secret::redact_patterns(name), ECHO_MAX_CHARS)
}

/// The advice for a number where a string of `what` is needed
/// (`version: 1.0`), in the syntax of the file: YAML's, or JSON's for a
/// `plugin.json` (`"version": "1.0"`).
pub fn quote_the_number(what: &str, field: &str, n: &impl std::fmt::Display, json: bool) -> String {
    if json {
        format!("must be {what}, but {n} is a JSON number; quote it: \"{field}\": \"{n}\"")
    } else {
        format!("must be {what}, but YAML read {n} as a number; quote it: {field}: \"{n}\"")
    }
}

/// Longest word [`did_you_mean`] looks at, in bytes.
const HINT_MAX_BYTES: usize = 64;

/// The closest allowed name to a near miss (`versoin` → `version`,
/// `Linux` → `linux`), when it is close enough to be a likely typo.
pub fn did_you_mean<'a>(word: &str, allowed: &[&'a str]) -> Option<&'a str> {
    // No allowed name is this long, and the edit distance is quadratic: a
    // multi-megabyte key would cost seconds for a hint it cannot get.
    if word.len() > HINT_MAX_BYTES {
        return None;
    }
    let lower = word.to_ascii_lowercase();
    let mut best: Option<(usize, &'a str)> = None;
    for cand in allowed {
        let c = cand.to_ascii_lowercase();
        let d = if lower == c {
            0
        } else if lower.len() >= 4 && (c.starts_with(&lower) || lower.starts_with(&c)) {
            // `endpoint` for `endpoint_path`, `versions` for `version`.
            1
        } else {
            strsim::damerau_levenshtein(&lower, cand)
        };
        let limit = (cand.chars().count() / 3).max(1);
        if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, cand));
        }
    }
    best.map(|(_, c)| c)
}

/// `did you mean 'version'?` for one near miss, or `did you mean 'version'
/// for 'versoin', 'kind' for 'knid'?` for several; `None` when nothing is close.
pub fn hint_for(unknown: &[String], allowed: &[&str]) -> Option<String> {
    let hints: Vec<(String, &str)> = unknown
        .iter()
        .filter_map(|u| did_you_mean(u, allowed).map(|c| (u.clone(), c)))
        .collect();
    match hints.as_slice() {
        [] => None,
        [(_, c)] if unknown.len() == 1 => Some(format!("did you mean '{c}'?")),
        _ => {
            let parts: Vec<String> = hints
                .iter()
                .take(LIST_MAX_NAMES)
                .map(|(u, c)| format!("'{c}' for '{}'", echo_name(u)))
                .collect();
            Some(format!("did you mean {}?", parts.join(", ")))
        }
    }
}

/// Checks a mapping's keys against `allowed` (decision 1: unknown keys are
/// errors at every level). `Err(message)` names every unknown key, sorted,
/// with a "did you mean" hint for near misses and the allowed keys.
pub fn unknown_keys_message(m: &Mapping, allowed: &[&str]) -> Option<String> {
    let mut unknown: Vec<String> = m
        .keys()
        .filter(|k| !matches!(k, Value::String(s) if allowed.contains(&s.as_str())))
        .map(key_text)
        .collect();
    if unknown.is_empty() {
        return None;
    }
    unknown.sort();
    let mut msg = format!("has unknown keys {}", quoted_list(&unknown));
    if let Some(hint) = hint_for(&unknown, allowed) {
        msg.push_str(&format!(" ({hint})"));
    }
    msg.push_str(&format!("; allowed: {}", allowed.join(", ")));
    // YAML 1.1's merge key is no key of YAML 1.2 (which this decoder
    // reads): say so, rather than leave it looking like a typo.
    if m.contains_key("<<") {
        msg.push_str(
            "; `<<` is a YAML merge key, which wasmgate does not expand: write the merged keys out",
        );
    }
    Some(msg)
}

/// Longest offending value an error echoes, in characters (longer ones are
/// cut and end with `…`).
pub const ECHO_MAX_CHARS: usize = 60;

/// Fields whose values are never echoed: `env` and `headers` carry secrets,
/// and a bad `url` is explained without repeating it (it may hold a password).
const NOT_ECHOED: [&str; 3] = ["env", "headers", "url"];

/// URL fields below the top level, explained without repeating them for
/// the same reason as `url` (their messages show the URL redacted).
const URLS_NOT_ECHOED: [&str; 3] = [
    "oauth.client_metadata_url",
    "oauth.idp.issuer",
    "oauth.idp.token_endpoint",
];

/// The value at a field path (`app.linux.location[2]`, `skills[0]`,
/// `requires.min_version`) inside `root`, when there is one.
pub fn value_at<'a>(root: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = root;
    for part in path.split('.') {
        let (key, mut rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !key.is_empty() {
            cur = cur.as_mapping()?.get(key)?;
        }
        while let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']')?;
            let i: usize = after[..end].parse().ok()?;
            cur = cur.as_sequence()?.get(i)?;
            rest = &after[end + 1..];
        }
        if !rest.is_empty() {
            return None;
        }
    }
    Some(cur)
}

/// The offending value of an error at `path` inside `root`, as the error
/// shows it after its field path (`app.linux.location[2] ("~/x*y*") …`):
/// the one place every error's value is formatted. Strings are quoted and
/// escaped (control characters, quotes), numbers as written,
/// a list item that is a list or mapping as compact JSON; cut at
/// [`ECHO_MAX_CHARS`] and redacted of token shapes (`docs/security.md`).
/// `None` when there is nothing useful to show: no value at the path, null,
/// a boolean,
/// a whole mapping or list that is not a list item, or a field in
/// `env` / `headers` / `url` or one of the OAuth URLs.
pub fn echo_at(root: &Value, path: &str) -> Option<String> {
    let head = path.split(['.', '[']).next().unwrap_or("");
    if path.is_empty() || NOT_ECHOED.contains(&head) || URLS_NOT_ECHOED.contains(&path) {
        return None;
    }
    let v = value_at(root, path)?;
    let text = match v {
        // A boolean says nothing the message does not (`must be a boolean`
        // is only said of non-booleans).
        Value::Null | Value::Tagged(_) | Value::Bool(_) => return None,
        Value::String(s) => s.clone(),
        Value::Number(n) => return Some(n.to_string()),
        // Redacted before it is encoded: JSON's escaping (`\"`) would hide
        // a `password="…"` from the patterns.
        Value::Sequence(_) | Value::Mapping(_) if path.ends_with(']') => {
            let v = redacted_strings(v);
            serde_json::to_string(&v).unwrap_or_else(|_| key_text(&v))
        }
        Value::Sequence(_) | Value::Mapping(_) => return None,
    };
    let text = crate::secret::redact_urls(&crate::secret::redact_patterns(&text));
    let cut: String = text.chars().take(ECHO_MAX_CHARS).collect();
    let more = if cut.len() < text.len() { "…" } else { "" };
    Some(match v {
        Value::String(_) => format!("{cut:?}{more}"),
        // Compact JSON: its strings already have their control characters escaped.
        _ => format!("{cut}{more}"),
    })
}

/// `v` with every string (keys too) redacted of token shapes and of the
/// secrets of the URLs in it (a connection string's password).
fn redacted_strings(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(crate::secret::redact_urls(
            &crate::secret::redact_patterns(s),
        )),
        Value::Sequence(items) => Value::Sequence(items.iter().map(redacted_strings).collect()),
        Value::Mapping(m) => Value::Mapping(
            m.iter()
                .map(|(k, v)| (redacted_strings(k), redacted_strings(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_item_is_redacted_before_it_is_encoded() {
        let v: Value = yaml_serde::from_str(r#"location: [["password=\"hunter22\""]]"#).unwrap();
        let e = echo_at(&v, "location[0]").unwrap();
        assert!(!e.contains("hunter22"), "{e}");
    }

    #[test]
    fn a_url_password_inside_an_echoed_value_is_redacted() {
        let v: Value = yaml_serde::from_str(
            r#"command: "~/bin/srv postgres://admin:hunter2pw@db/x?sslkey=qqsecretqq""#,
        )
        .unwrap();
        let e = echo_at(&v, "command").unwrap();
        assert!(!e.contains("hunter2pw") && !e.contains("qqsecretqq"), "{e}");
        assert!(e.contains("~/bin/srv postgres://"), "{e}");
    }

    #[test]
    fn a_tagged_key_is_named_as_yaml_writes_it() {
        let v: Value = yaml_serde::from_str("!x a").unwrap();
        assert_eq!(key_text(&v), "!x a");
    }

    #[test]
    fn a_merge_key_is_named_as_one_through_a_plugin_yaml() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("plugin.yaml");
        std::fs::write(
            &file,
            "name: p\nversion: 1.0.0\nmcp_servers:\n  a: &base {command: /bin/a}\n  b:\n    <<: *base\n    timeout: 5\n",
        )
        .unwrap();
        let r = crate::manifest::load_plugin_yaml(&file);
        let e = r
            .errors
            .iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join("\n");
        assert!(e.contains("has unknown keys ['<<']"), "{e}");
        assert!(
            e.contains("`<<` is a YAML merge key, which wasmgate does not expand"),
            "{e}"
        );
        // Other unknown keys keep their message without it.
        let m: Value = yaml_serde::from_str("{zzz: 1}").unwrap();
        let Value::Mapping(m) = m else { panic!() };
        assert!(!unknown_keys_message(&m, &["a"]).unwrap().contains("merge"));
    }

    #[test]
    fn near_misses_get_a_hint() {
        let allowed = ["presence", "location", "version", "liveness"];
        assert_eq!(did_you_mean("versoin", &allowed), Some("version"));
        assert_eq!(did_you_mean("Location", &allowed), Some("location"));
        assert_eq!(did_you_mean("zzz", &allowed), None);
        assert_eq!(
            did_you_mean("endpoint", &["kind", "endpoint_path"]),
            Some("endpoint_path")
        );
        assert_eq!(
            did_you_mean("Linux", &["win32", "darwin", "linux"]),
            Some("linux")
        );
    }

    #[test]
    fn the_offending_value_is_echoed_cut_and_escaped() {
        let v: Value = yaml_serde::from_str(
            "app: {linux: {location: [a, b, \"~/x*y*\", {kind: path}]}}\nenv: {K: secret}\nn: 3",
        )
        .unwrap();
        assert_eq!(
            echo_at(&v, "app.linux.location[2]").as_deref(),
            Some("\"~/x*y*\"")
        );
        assert_eq!(
            echo_at(&v, "app.linux.location[3]").as_deref(),
            Some("{\"kind\":\"path\"}")
        );
        assert_eq!(echo_at(&v, "app.linux").as_deref(), None);
        assert_eq!(echo_at(&v, "env.K"), None);
        assert_eq!(echo_at(&v, "n").as_deref(), Some("3"));
        assert_eq!(echo_at(&v, "app.linux.location[9]"), None);
        assert_eq!(echo_at(&v, ""), None);
        let long: Value =
            yaml_serde::from_str(&format!("x: \"a\\nb{}\"", "c".repeat(100))).unwrap();
        let e = echo_at(&long, "x").unwrap();
        assert!(e.starts_with("\"a\\nbccc") && e.ends_with("\"…"), "{e}");
        // 60 characters, `\n` written as two, two quotes and the ellipsis.
        assert_eq!(e.chars().count(), ECHO_MAX_CHARS + 4, "{e}");
    }

    #[test]
    fn the_cursor_renders_its_path_only_for_a_problem() {
        let mut cur = Cursor::new();
        assert_eq!(cur.path(), "");
        cur.report_at("oauth.idp", "m0");
        cur.key("app").key("linux").key("location").index(2);
        assert_eq!(cur.path(), "app.linux.location[2]");
        assert_eq!(
            cur.problem_at("name", "m").path,
            "app.linux.location[2].name"
        );
        assert_eq!(cur.problem_at("[0]", "m").path, "app.linux.location[2][0]");
        cur.pop();
        cur.pop();
        cur.report_at("", "m1");
        cur.report_at("", "m2");
        assert_eq!(cur.count(), 3);
        let problems = cur.take();
        let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(paths, ["oauth.idp", "app.linux", "app.linux"]);
        assert_eq!(problems[1], Problem::new("app.linux", "m1"));
        assert_eq!(cur.count(), 0);
    }

    #[test]
    fn each_message_shape_reads_as_before() {
        let s = Value::String("x".into());
        assert_eq!(must_be("a list", &s), "must be a list (got a string)");
        assert_eq!(
            must_be_noted("a boolean", "true or false", &s),
            "must be a boolean (true or false; got a string)"
        );
        assert_eq!(got_type(&Value::Null), " (got null)");
        assert_eq!(
            must_be_got("a string", "nothing"),
            "must be a string (got nothing)"
        );
    }

    #[test]
    fn falsy_values_follow_python() {
        for y in ["null", "false", "0", "0.0", "''", "[]", "{}"] {
            let v: Value = yaml_serde::from_str(y).unwrap();
            assert!(is_falsy(&v), "{y}");
        }
        for y in ["true", "1", "'x'", "[1]", "{a: 1}"] {
            let v: Value = yaml_serde::from_str(y).unwrap();
            assert!(!is_falsy(&v), "{y}");
        }
    }
}
