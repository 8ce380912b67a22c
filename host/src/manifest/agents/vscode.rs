//! VS Code's MCP config (`docs/mcp-client.md` §1.4): `.vscode/mcp.json` or
//! the user's `mcp.json` with a top-level `servers` object (beside
//! `inputs`), or `settings.json` with `"mcp": {"servers": …}`.
//!
//! An entry: `type` (`stdio`, `http`; `sse` refused), `command`, `args`,
//! `env`, `envFile`, `url`, `headers`; `${input:ID}` is refused (wasmgate
//! cannot prompt), `dev` and the sandbox keys are refused by name.
//!
//! VS Code reads both files as JSONC (JSON with `//` and `/* */` comments
//! and trailing commas), so they are read with `jsonc-parser` here
//! ([`decode_jsonc`]: its scanner finds the comments and trailing commas,
//! which become spaces, and the rest is read as strict JSON); every other
//! agent's JSON is strict.

use super::{Builder, Decoded, Format, Places, entries, entry_mapping};
use crate::manifest::schema::ManifestContext;
use crate::document::{Mapping, Value};

const KNOWN: [&str; 7] = [
    "type", "command", "args", "env", "envFile", "url", "headers",
];

const UNSUPPORTED: [(&str, &str); 4] = [
    (
        "dev",
        "VS Code's watch-and-debug mode for server authors has no wasmgate counterpart",
    ),
    (
        "sandboxEnabled",
        "wasmgate does not sandbox a server process; leave it out",
    ),
    (
        "sandbox",
        "wasmgate does not sandbox a server process; leave it out",
    ),
    (
        "cwd",
        "wasmgate starts a server in its own working folder; give absolute paths in command and args",
    ),
];

/// The `servers` object of a VS Code file: top-level `servers`, or
/// `mcp.servers` of a settings.json.
pub fn servers_of(top: &Mapping) -> Option<&Mapping> {
    match top.get("servers") {
        Some(Value::Mapping(s)) => Some(s),
        _ => match top.get("mcp") {
            Some(Value::Mapping(mcp)) => match mcp.get("servers") {
                Some(Value::Mapping(s)) => Some(s),
                _ => None,
            },
            _ => None,
        },
    }
}

/// Converts every entry of `servers`.
pub fn decode(servers: &Mapping, ctx: &ManifestContext, places: &Places) -> Decoded {
    let mut b = Builder::default();
    for (name, entry) in entries(servers) {
        let res = entry_mapping(entry).map(|m| {
            super::mcpjson::convert_with(m, ctx, places, Format::VsCode, &KNOWN, &UNSUPPORTED)
        });
        b.add(ctx, &name, res);
    }
    b.finish(Format::VsCode)
}

/// The JSONC VS Code accepts: comments and trailing commas, otherwise
/// strict JSON (no single quotes, bare names, hex or `NaN`).
fn jsonc_options() -> jsonc_parser::ParseOptions {
    jsonc_parser::ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

/// The message for text `jsonc-parser` refuses: its own words, which may
/// quote a key (one given twice), redacted.
fn not_jsonc(e: impl std::fmt::Display) -> String {
    format!(
        "is not valid JSON with comments (JSONC): {}",
        crate::secret::redact_patterns(&e.to_string())
    )
}

/// Decodes VS Code's JSONC into the universal value type, keeping key
/// order. The nesting is measured first
/// ([`crate::manifest::depth::check_json_depth`]) and refused past
/// [`crate::manifest::depth::MAX_DEPTH`], as for every JSON or YAML text
/// (docs/security.md, "MCP client bounds"); the caller bounds the bytes.
///
/// # Errors
/// The message after the file name (too deep, or not valid JSONC with the
/// parser's line and column).
pub fn decode_jsonc(text: &str) -> Result<Value, String> {
    decode_jsonc_pruned(text, crate::document::Keep::All)
}

/// [`decode_jsonc`] building only what `keep` names (the rest is parsed
/// and dropped), as strict JSON is read: `jsonc-parser`'s scanner finds
/// the comments and trailing commas, which become spaces (so every other
/// byte, and every line and column, stays where it was), and the text is
/// then decoded as strict JSON. Its syntax tree took about 20 times the
/// file's size.
pub(crate) fn decode_jsonc_pruned(text: &str, keep: crate::document::Keep) -> Result<Value, String> {
    // VS Code reads a file that starts with a byte order mark.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    crate::manifest::depth::check_json_depth(text, crate::manifest::depth::MAX_DEPTH)?;
    // Before the scanner, which refuses a lone surrogate's escape too.
    let text = crate::manifest::load::lone_surrogates_replaced(text);
    let strict = as_strict_json(&text)?;
    crate::manifest::load::decode_json_pruned(&strict, keep).map_err(|e| {
        format!(
            "is not valid JSON with comments (JSONC): {}",
            e.strip_prefix("is not valid JSON: ").unwrap_or(&e)
        )
    })
}

/// Whether `text` has a comment before anything the scanner refuses, so
/// that JSONC's error, not strict JSON's at the comment, says what is
/// wrong with it.
pub(crate) fn has_comment(text: &str) -> bool {
    use jsonc_parser::tokens::Token;
    let text = crate::manifest::load::lone_surrogates_replaced(text);
    let mut scanner = jsonc_parser::Scanner::new(&text, &jsonc_parser::ScannerOptions::default());
    while let Ok(Some(token)) = scanner.scan() {
        if matches!(token, Token::CommentLine(_) | Token::CommentBlock(_)) {
            return true;
        }
    }
    false
}

/// `text` with its comments and trailing commas blanked: each of their
/// bytes a space, a line break inside a block comment kept.
fn as_strict_json(text: &str) -> Result<String, String> {
    use jsonc_parser::tokens::Token;
    // The scanner's share of the one set of options VS Code's JSONC has.
    let p = jsonc_options();
    let options = jsonc_parser::ScannerOptions {
        allow_single_quoted_strings: p.allow_single_quoted_strings,
        allow_hexadecimal_numbers: p.allow_hexadecimal_numbers,
        allow_unary_plus_numbers: p.allow_unary_plus_numbers,
        allow_bare_decimal_point_numbers: p.allow_bare_decimal_point_numbers,
        allow_non_finite_numbers: p.allow_non_finite_numbers,
        allow_extended_string_escapes: p.allow_extended_string_escapes,
    };
    let mut out = text.as_bytes().to_vec();
    let mut blank = |from: usize, to: usize| {
        for b in &mut out[from..to] {
            if !matches!(*b, b'\n' | b'\r') {
                *b = b' ';
            }
        }
    };
    let mut scanner = jsonc_parser::Scanner::new(text, &options);
    // Where the last comma stands, when it followed a value and nothing
    // but comments came after it (`[,]` and `{"a": 1,,}` stay refused).
    let mut comma: Option<usize> = None;
    let mut after_value = false;
    while let Some(token) = scanner.scan().map_err(not_jsonc)? {
        match token {
            Token::CommentLine(_) | Token::CommentBlock(_) => {
                blank(scanner.token_start(), scanner.token_end());
                continue;
            }
            Token::CloseBrace | Token::CloseBracket => {
                if let Some(at) = comma.take() {
                    blank(at, at + 1);
                }
            }
            Token::Comma if after_value => comma = Some(scanner.token_start()),
            _ => comma = None,
        }
        after_value = !matches!(
            token,
            Token::OpenBrace | Token::OpenBracket | Token::Comma | Token::Colon
        );
    }
    // Every byte changed was ASCII (or a whole comment): still UTF-8.
    String::from_utf8(out).map_err(|e| e.to_string())
}

/// The concrete syntax tree of a JSONC text, for edits that keep its
/// comments (`wasmgate setup vscode`, docs/mcp-client.md §1.5).
///
/// # Errors
/// As [`decode_jsonc`].
pub fn parse_cst(text: &str) -> Result<jsonc_parser::cst::CstRootNode, String> {
    crate::manifest::depth::check_json_depth(text, crate::manifest::depth::MAX_DEPTH)?;
    jsonc_parser::cst::CstRootNode::parse(text, &jsonc_options())
        .map_err(not_jsonc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonc_comments_and_trailing_commas_are_read_and_depth_is_bounded() {
        let v = decode_jsonc(
            "// don't \"quote\" me [[[[\n{\n  /* a { */ \"servers\": {\"a\": {\"command\": \"x\",},}, // end\n}\n",
        )
        .unwrap();
        assert_eq!(v["servers"]["a"]["command"], Value::String("x".into()));
        // Strict-JSON extras VS Code does not accept stay refused.
        assert!(decode_jsonc("{'a': 1}").is_err());
        assert!(decode_jsonc("{a: 1}").is_err());
        for bad in ["[,]", "{,}", "{\"a\": 1,,}", "[1,,]", "{\"a\",: 1}", "[0x1]", "[NaN]", "[+1]"] {
            assert!(decode_jsonc(bad).is_err(), "{bad}");
        }
        // Comments (with any characters) and trailing commas become
        // spaces: an error past them keeps its line and column.
        let v = decode_jsonc("[1, /* é ✓ */ 2, // x\n 3,\n]").unwrap();
        assert_eq!(v, decode_jsonc("[1, 2, 3]").unwrap());
        // A lone surrogate's escape reads as U+FFFD, as in strict JSON.
        let v = decode_jsonc("// c\n{\"a\": \"x\\ud83d\",}").unwrap();
        assert_eq!(v["a"], Value::String("x\u{fffd}".into()));
        let e = decode_jsonc("// one\n/* two\n three */ {\"a\": tru}").unwrap_err();
        assert!(e.starts_with("is not valid JSON with comments (JSONC): ") && e.contains("line 3"), "{e}");
        let deep = format!("{}{}", "[".repeat(100), "]".repeat(100));
        assert!(decode_jsonc(&deep).unwrap_err().contains("deeper than"));
        // Brackets inside strings and comments do not count.
        let quiet = format!(
            "{{\"a\": \"{}\" /* {} */}}",
            "[".repeat(100),
            "{".repeat(100)
        );
        decode_jsonc(&quiet).unwrap();
    }

    #[test]
    fn a_line_comment_ended_by_a_lone_carriage_return_does_not_hide_nesting() {
        // The parser reads the brackets after `\r` as JSON; so must the
        // depth bound.
        let deep = format!("// x\r{}{}", "[".repeat(100), "]".repeat(100));
        assert!(decode_jsonc(&deep).unwrap_err().contains("deeper than"));
        assert!(parse_cst(&deep).unwrap_err().contains("deeper than"));
    }
}
