//! Small helpers over the decoded value (`yaml_serde::Value`) shared by the
//! declaration parser and the manifest validator: describing a value's type
//! in an error, Python-like falsiness (docs/declarations.md §1.4, §2.2), scalar
//! stringification, and the "did you mean" hint of `docs/declarations.md` §2
//! decision 1.

use yaml_serde::{Mapping, Value};

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

/// One problem found while validating, before the `where` label of its
/// document is attached: (field path, message). Declarations, manifests
/// and agents' config files all report through it.
pub(crate) type Fail = (String, String);

/// The message for a value of the wrong type: `must be <what> (got <type>)`,
/// e.g. `must be a list of tool names (got a string)` (`docs/declarations.md`
/// §2: every error names what was expected and what was found).
pub fn must_be(what: &str, got: &Value) -> String {
    format!("must be {what} (got {})", describe(got))
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
        other => yaml_serde::to_string(other)
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

/// Python-style list of quoted names: `['a', 'b']`.
pub fn quoted_list<S: AsRef<str>>(items: &[S]) -> String {
    let inner: Vec<String> = items.iter().map(|s| format!("'{}'", s.as_ref())).collect();
    format!("[{}]", inner.join(", "))
}

/// The closest allowed name to a near miss (`versoin` → `version`,
/// `Linux` → `linux`), when it is close enough to be a likely typo.
pub fn did_you_mean<'a>(word: &str, allowed: &[&'a str]) -> Option<&'a str> {
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
                .map(|(u, c)| format!("'{c}' for '{u}'"))
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
        Value::Sequence(_) | Value::Mapping(_) if path.ends_with(']') => {
            serde_json::to_string(v).unwrap_or_else(|_| key_text(v))
        }
        Value::Sequence(_) | Value::Mapping(_) => return None,
    };
    let text = crate::secret::redact_patterns(&text);
    let cut: String = text.chars().take(ECHO_MAX_CHARS).collect();
    let more = if cut.len() < text.len() { "…" } else { "" };
    Some(match v {
        Value::String(_) => format!("{cut:?}{more}"),
        // Compact JSON: its strings already have their control characters escaped.
        _ => format!("{cut}{more}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
