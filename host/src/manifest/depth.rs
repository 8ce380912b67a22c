//! The nesting cap of YAML and JSON input (docs/security.md, "MCP client
//! bounds"): the YAML parser takes time quadratic in the nesting depth
//! (100,000 levels of `[`, 200 KB, took 35 s), and a deep tree costs a
//! stack frame a level in every walk over it, so every YAML or JSON text
//! the host reads — config, `plugin.yaml`, `plugin.json`, a simulated
//! host's `host.yaml`, a skill's front matter, VS Code's JSONC — is
//! refused when it nests deeper than [`MAX_DEPTH`].
//!
//! YAML's depth is counted on libyaml's own events, which stop the parse at
//! the limit (`yaml_events`; [`check_yaml_depth`] for texts decoded
//! otherwise than by `decode_yaml`). JSON and JSONC are measured first by
//! one linear walk over the brackets outside strings and comments,
//! [`check_json_depth`] (`serde_json` would stop only at 128 levels, and
//! `jsonc-parser` not at all). Real files nest fewer than 15 levels.

/// Deepest nesting accepted, in levels.
pub const MAX_DEPTH: usize = 64;

/// The nesting of a YAML text that is then decoded other than by
/// `manifest::load::decode_yaml` (skill front matter, a simulated host's
/// `host.yaml`), counted on the parser's events, which stop at the limit:
/// deep nesting must not reach the decode (which takes time quadratic in
/// the depth). `decode_yaml` counts the same way as it decodes.
pub(crate) fn check_yaml_depth(text: &str, max: usize) -> Result<(), String> {
    super::yaml_events::nesting(text, max)
}

/// The bytes [`check_json_depth`] stops at; all ASCII, so none is part of
/// a character past ASCII in UTF-8.
const SIGNIFICANT: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    let set = b"\n\"/[]{}";
    while i < set.len() {
        t[set[i] as usize] = true;
        i += 1;
    }
    t
};

/// `Err(message)` naming the line (1-based, counted at `\n` as the JSON
/// parsers count) where the brackets of a JSON or JSONC text nest deeper
/// than `max`. Brackets inside strings (escapes included) and inside
/// comments (`//` to the end of the line, which a lone `\r` also ends as
/// `jsonc-parser` reads it, and `/* … */`) do not count; nothing else in
/// JSON nests. Strict JSON has no comments: where this walk skips one,
/// `serde_json` stops with an error at its `/`, before any bracket after
/// it. An unterminated string or comment ends the walk (`Ok`): the parser
/// words that error.
pub(crate) fn check_json_depth(text: &str, max: usize) -> Result<(), String> {
    let b = text.as_bytes();
    let (mut depth, mut line, mut i) = (0usize, 1usize, 0usize);
    while let Some(skip) = b[i..].iter().position(|&c| SIGNIFICANT[usize::from(c)]) {
        i += skip;
        match b[i] {
            b'\n' => line += 1,
            b'"' => {
                i += 1;
                loop {
                    // `get`: an escape may be the text's last byte.
                    let Some(k) = b.get(i..).and_then(|r| memchr::memchr3(b'"', b'\\', b'\n', r))
                    else {
                        return Ok(());
                    };
                    i += k;
                    match b[i] {
                        b'"' => break,
                        b'\\' => i += 1,
                        _ => line += 1,
                    }
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                // To the line break, which the next round reads.
                let Some(k) = memchr::memchr2(b'\n', b'\r', &b[i..]) else {
                    return Ok(());
                };
                i += k;
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                loop {
                    let Some(k) = memchr::memchr2(b'*', b'\n', &b[i..]) else {
                        return Ok(());
                    };
                    i += k;
                    if b[i] == b'\n' {
                        line += 1;
                    } else if b.get(i + 1) == Some(&b'/') {
                        i += 1;
                        break;
                    }
                    i += 1;
                }
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return Err(too_deep(line, max));
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
        if i >= b.len() {
            break;
        }
    }
    Ok(())
}

/// The message for text nested deeper than `max` at `line` (1-based).
pub(crate) fn too_deep(line: usize, max: usize) -> String {
    format!(
        "is nested deeper than {max} levels (at line {line}); wasmgate reads at most {max} levels of YAML or JSON"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `levels` lists, one inside the next, around `1`.
    fn lists(levels: usize) -> serde_json::Value {
        (0..levels).fold(serde_json::json!(1), |v, _| serde_json::json!([v]))
    }

    /// The nesting of a decoded value, in levels (a scalar: 0).
    fn depth_of(v: &serde_json::Value) -> usize {
        match v {
            serde_json::Value::Array(a) => 1 + a.iter().map(depth_of).max().unwrap_or(0),
            serde_json::Value::Object(o) => 1 + o.values().map(depth_of).max().unwrap_or(0),
            _ => 0,
        }
    }

    #[test]
    fn json_at_the_limit_is_read_and_one_level_more_is_refused_with_its_line() {
        for pretty in [false, true] {
            for levels in [MAX_DEPTH, MAX_DEPTH + 1] {
                // An object holding the lists: `levels` in all.
                let doc = serde_json::json!({"name": "p", "x": lists(levels - 1)});
                let text = if pretty {
                    serde_json::to_string_pretty(&doc).unwrap()
                } else {
                    serde_json::to_string(&doc).unwrap()
                };
                let got = check_json_depth(&text, MAX_DEPTH);
                if levels == MAX_DEPTH {
                    got.unwrap();
                } else {
                    // Pretty: `{`, `"name"`, then one line per opening.
                    let line = if pretty { MAX_DEPTH + 2 } else { 1 };
                    assert_eq!(got.unwrap_err(), too_deep(line, MAX_DEPTH), "pretty: {pretty}");
                }
            }
        }
    }

    #[test]
    fn brackets_in_strings_and_comments_do_not_count() {
        let quiet = format!(
            "{{\"a\": \"\\\"{}\\\\\", \"é\": \"ü{}\" // {}\n /* {} */ }}",
            "[".repeat(100),
            "{".repeat(100),
            "[".repeat(100),
            "{\n".repeat(100)
        );
        check_json_depth(&quiet, 2).unwrap();
        // A line comment ends at a lone CR (as jsonc-parser reads it): the
        // brackets after it count.
        let deep = format!("// x\r{}{}", "[".repeat(100), "]".repeat(100));
        assert_eq!(check_json_depth(&deep, 64).unwrap_err(), too_deep(1, 64));
        // Lines inside a block comment count toward the line named.
        let text = format!("/*\n\n*/ {}", "[".repeat(3));
        assert_eq!(check_json_depth(&text, 2).unwrap_err(), too_deep(3, 2));
        // `/*/` does not close the comment it opens.
        check_json_depth("/*/ [[[ */ []", 1).unwrap();
        // Unterminated strings and comments end the walk.
        for text in ["[\"[[[", "[\"\\", "[/* [[[", "[/* *", "[// [[["] {
            check_json_depth(text, 1).unwrap();
        }
    }

    /// A JSON value whose strings hold what the walk must skip.
    fn json_value() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::Bool),
            any::<i64>().prop_map(|n| serde_json::json!(n)),
            "[\\[\\]{}\"\\\\/*\n\ra-zé]{0,12}".prop_map(serde_json::Value::String),
        ];
        leaf.prop_recursive(12, 200, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::Array),
                prop::collection::vec(("[\\[{\"\\\\/*a-z]{0,6}", inner), 0..4)
                    .prop_map(|kv| serde_json::Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// The walk finds the depth of every JSON text, compact or pretty:
        /// it accepts the text at its own depth and refuses it one below.
        #[test]
        fn the_walk_measures_what_the_parser_builds(v in json_value(), pretty in any::<bool>()) {
            let text = if pretty {
                serde_json::to_string_pretty(&v).unwrap()
            } else {
                serde_json::to_string(&v).unwrap()
            };
            let d = depth_of(&v);
            prop_assert!(check_json_depth(&text, d).is_ok(), "{text}");
            if d > 0 {
                prop_assert!(check_json_depth(&text, d - 1).is_err(), "{text}");
            }
        }
    }
}
