//! The nesting cap of YAML and JSON input (docs/security.md, "MCP client
//! bounds"): the YAML parser takes time quadratic in the nesting depth
//! (100,000 levels of `[`, 200 KB, took 35 s), so every YAML or JSON text
//! the host reads — config, `plugin.yaml`, `plugin.json`, a simulated
//! host's `host.yaml`, a skill's front matter — is refused when it nests
//! deeper than [`MAX_DEPTH`].
//!
//! YAML's depth is counted on libyaml's own events, which stop the parse at
//! the limit (`yaml_events`; [`check_yaml_depth`] for texts decoded
//! otherwise than by `decode_yaml`). JSON is measured first by one linear
//! text scan, [`check_depth`] (JSON's own parser would stop only at 128
//! levels). The scan reads YAML's block structure too — a level is a flow
//! bracket (`[`, `{`) outside quotes and comments, a block indentation
//! step, or a compact `- ` / `? ` entry; block scalars (`|`, `>`) and
//! quoted scalars are skipped — but it guesses at quotes, comments and line
//! breaks where YAML does not always read them so (a lone CR, a quote
//! inside a plain scalar, U+00A0 before `#`), which is why YAML no longer
//! relies on it. Real files nest fewer than 15 levels.

/// Deepest nesting accepted, in levels.
pub const MAX_DEPTH: usize = 64;

/// `Err(message)` naming the line where the nesting passes `max`.
pub fn check_depth(text: &str, max: usize) -> Result<(), String> {
    scan(text, max, walk)
}

/// The walk of one line's text after its indentation and compact entries:
/// it opens and closes flow brackets and quotes, and stops at a comment;
/// `Err(())` when the flow brackets plus the `blocks` levels pass `max`.
type Walk = fn(&str, &mut Option<u8>, &mut usize, usize, usize) -> Result<(), ()>;

/// The line structure (block levels, compact entries, block scalars), with
/// `walk` for what is inside a line.
fn scan(text: &str, max: usize, walk: Walk) -> Result<(), String> {
    let mut flow = 0usize;
    let mut blocks: Vec<usize> = Vec::new();
    // Inside a quoted scalar that spans lines: its quote character.
    let mut quote: Option<u8> = None;
    // Inside a block scalar: the indentation of the line that opened it.
    let mut block_scalar: Option<usize> = None;
    for (n, raw) in text.lines().enumerate() {
        let line_no = n + 1;
        let indent = raw.len() - raw.trim_start_matches(' ').len();
        let content = &raw[indent..];
        if let Some(parent) = block_scalar {
            if content.trim().is_empty() || indent > parent {
                continue;
            }
            block_scalar = None;
        }
        let mut col = indent;
        let mut rest = content;
        if quote.is_none() && flow == 0 {
            if content.is_empty() || content.starts_with('#') {
                continue;
            }
            while blocks.last().is_some_and(|&b| b >= indent) {
                blocks.pop();
            }
            blocks.push(indent);
            // Compact entries: `- - - x` nests one level per marker.
            while let Some(r) = rest.strip_prefix("- ").or_else(|| rest.strip_prefix("? ")) {
                let skipped = rest.len() - r.trim_start_matches(' ').len();
                col += skipped;
                rest = r.trim_start_matches(' ');
                blocks.push(col);
            }
        }
        walk(rest, &mut quote, &mut flow, blocks.len(), max).map_err(|()| too_deep(line_no, max))?;
        if flow + blocks.len() > max {
            return Err(too_deep(line_no, max));
        }
        // A block scalar indicator ends the line: the lines below that are
        // indented more are text, not structure.
        if quote.is_none() && flow == 0 && rest.bytes().any(|b| b == b'|' || b == b'>') {
            let code = match rest.find(" #") {
                Some(i) => &rest[..i],
                None => rest,
            };
            let t = code.trim_end();
            let ind = t.trim_end_matches(|c: char| c.is_ascii_digit() || c == '-' || c == '+');
            if (ind.ends_with('|') || ind.ends_with('>'))
                && (ind.len() == 1 || ind[..ind.len() - 1].ends_with([' ', ':', '-']))
            {
                block_scalar = Some(indent);
            }
        }
    }
    Ok(())
}

/// [`Walk`] a byte at a time, jumping between the bytes that matter.
fn walk(
    rest: &str,
    quote: &mut Option<u8>,
    flow: &mut usize,
    blocks: usize,
    max: usize,
) -> Result<(), ()> {
    // Jump from one byte that can change something to the next:
    // brackets, quotes and comments are ASCII. What a quote or `#`
    // depends on is the character before it (whitespace, or one of
    // `[{,:`), decoded there when it is past ASCII.
    let bytes = rest.as_bytes();
    let mut prev_space = true;
    let mut prev = b' ';
    let mut i = 0;
    while i < bytes.len() {
        let skip = match *quote {
            None => bytes[i..].iter().position(|&b| SIGNIFICANT[usize::from(b)]),
            Some(b'"') => memchr::memchr2(b'"', b'\\', &bytes[i..]),
            Some(_) => memchr::memchr(b'\'', &bytes[i..]),
        };
        let Some(skip) = skip else { break };
        let at = i + skip;
        if skip > 0 {
            match bytes[at - 1] {
                b if b < 0x80 => {
                    prev = b;
                    prev_space = b.is_ascii_whitespace() || b == 0x0b;
                }
                _ => {
                    let ch = rest[..at].chars().next_back().unwrap_or(' ');
                    prev = 0x80;
                    prev_space = ch.is_whitespace();
                }
            }
        }
        let c = bytes[at];
        i = at + 1;
        match *quote {
            Some(b'"') => {
                if c == b'\\' {
                    i += 1;
                } else {
                    *quote = None;
                }
            }
            Some(_) => {
                if bytes.get(i) == Some(&b'\'') {
                    i += 1;
                } else {
                    *quote = None;
                }
            }
            None => {
                let token_start = prev_space || matches!(prev, b'[' | b'{' | b',');
                match c {
                    b'#' if prev_space => break,
                    b'"' | b'\'' if token_start || prev == b':' => *quote = Some(c),
                    b'[' | b'{' => {
                        *flow += 1;
                        if *flow + blocks > max {
                            return Err(());
                        }
                    }
                    b']' | b'}' => *flow = flow.saturating_sub(1),
                    _ => {}
                }
            }
        }
        prev = c;
        prev_space = false;
    }
    Ok(())
}

/// The nesting of a YAML text that is then decoded other than by
/// `manifest::load::decode_yaml` (skill front matter, a simulated host's
/// `host.yaml`), counted on the parser's events, which stop at the limit:
/// deep nesting must not reach the decode (which takes time quadratic in
/// the depth). `decode_yaml` counts the same way as it decodes.
pub(crate) fn check_yaml_depth(text: &str, max: usize) -> Result<(), String> {
    super::yaml_events::nesting(text, max)
}

/// The bytes the walk stops at outside quotes.
const SIGNIFICANT: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    let set = b"#\"'[]{}";
    while i < set.len() {
        t[set[i] as usize] = true;
        i += 1;
    }
    t
};

/// The message for text nested deeper than `max` at `line` (1-based).
pub(crate) fn too_deep(line: usize, max: usize) -> String {
    format!(
        "is nested deeper than {max} levels (at line {line}); wasmgate reads at most {max} levels of YAML or JSON"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The walk as it was written first, a character at a time: the
    /// byte-jumping walk must agree with it on every text.
    fn walk_chars(
        rest: &str,
        quote: &mut Option<u8>,
        flow: &mut usize,
        blocks: usize,
        max: usize,
    ) -> Result<(), ()> {
        let mut prev = ' ';
        let mut chars = rest.chars().peekable();
        while let Some(c) = chars.next() {
            match *quote {
                Some(b'"') => {
                    if c == '\\' {
                        chars.next();
                    } else if c == '"' {
                        *quote = None;
                    }
                }
                Some(_) => {
                    if c == '\'' {
                        if chars.peek() == Some(&'\'') {
                            chars.next();
                        } else {
                            *quote = None;
                        }
                    }
                }
                None => {
                    let token_start = prev.is_whitespace() || matches!(prev, '[' | '{' | ',');
                    match c {
                        '#' if prev.is_whitespace() => break,
                        '"' | '\'' if token_start || prev == ':' => *quote = Some(c as u8),
                        '[' | '{' => {
                            *flow += 1;
                            if *flow + blocks > max {
                                return Err(());
                            }
                        }
                        ']' | '}' => *flow = flow.saturating_sub(1),
                        _ => {}
                    }
                }
            }
            prev = c;
        }
        Ok(())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(20_000))]
        #[test]
        fn the_scan_agrees_with_the_character_walk(
            text in "[a: \\-?#\"'\\\\\\[\\]{},|>\n\t\u{a0}\u{3000}é]{0,60}",
            max in 1usize..6,
        ) {
            proptest::prop_assert_eq!(check_depth(&text, max), scan(&text, max, walk_chars));
        }
    }

    #[test]
    fn ordinary_files_pass() {
        let config = "mcp_servers:\n  git:\n    command: git-mcp-server\n    args: [\"--x\", '[[[', \"]]\"]\n    env:\n      A: \"{{{{\"  # {{{{ [[[\n    script: |\n      [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n    after: ok\n";
        check_depth(config, 8).unwrap();
        check_depth("{\"a\": {\"b\": [1, 2, {\"c\": \"[[[[[[[[[[[[\"}]}}", 8).unwrap();
        check_depth("- don't [stop\n", 8).unwrap();
        check_depth("k: \"é\\\"[[[[[[[[[[\"\nl: 'ü''[[[[[[[[[['\n", 8).unwrap();
    }

    #[test]
    fn a_character_past_ascii_counts_as_the_character_it_is() {
        // U+3000 is whitespace: the `#` after it starts a comment, so the
        // `"` does not open a quote and the brackets below are counted.
        let deep = format!("k:\u{3000}# \"\nl: {}\n", "[".repeat(20));
        assert!(check_depth(&deep, 8).is_err());
        // U+00E9 is not: `é#` is no comment, and the quote right after
        // it is no quote either (it does not start a token).
        let text = format!("k: é#\"{}\n", "[".repeat(20));
        assert!(check_depth(&text, 8).is_err());
    }

    #[test]
    fn deep_nesting_is_refused_with_its_line() {
        let flow = format!("a: 1\nb: {}1{}\n", "[".repeat(100_000), "]".repeat(100_000));
        let e = check_depth(&flow, MAX_DEPTH).unwrap_err();
        assert!(e.contains("at line 2"), "{e}");
        let compact = format!("{}x\n", "- ".repeat(100));
        assert!(check_depth(&compact, MAX_DEPTH).is_err());
        let mut block = String::new();
        for i in 0..100 {
            block.push_str(&format!("{}k{i}:\n", " ".repeat(i)));
        }
        let e = check_depth(&block, MAX_DEPTH).unwrap_err();
        assert!(e.contains(&format!("at line {}", MAX_DEPTH + 1)), "{e}");
    }
}
