//! Text a server (or a plugin) controls, made safe to print on a terminal
//! (docs/security.md, "MCP client bounds"): control characters — ANSI/OSC
//! escapes, carriage returns, line breaks, bidi overrides — are shown as
//! escapes (`\u{1b}`, `\n`) instead of acting on the terminal or forging
//! lines. Every printer of server-controlled text (`tools`, `status`,
//! `call`, error texts, log lines) goes through [`line`] or [`text`].

use std::borrow::Cow;

/// Whether `c` must not reach a terminal raw: C0 and C1 controls, DEL, the
/// Unicode format characters that reorder or hide text (bidi marks,
/// embeddings, overrides and isolates, the Arabic letter mark, the
/// zero-width space, word joiner and invisible operators, the byte-order
/// mark) and the line and paragraph separators, which some terminals and
/// viewers break lines at. Zero-width (non-)joiners are kept: emoji and
/// several scripts need them.
pub(crate) fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}'
                | '\u{200B}'
                | '\u{200E}'
                | '\u{200F}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{2069}'
                | '\u{FEFF}'
        )
}

fn escape(s: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !s.chars().any(|c| is_unsafe(c) && !keep(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if !is_unsafe(c) || keep(c) {
            out.push(c);
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    Cow::Owned(out)
}

/// One line of output: every control character escaped, line breaks and
/// tabs included (a tool name, a server name, an error text, a log line).
pub fn line(s: &str) -> Cow<'_, str> {
    // Bytes bound characters from above: only a long line is counted.
    if s.len() > LINE_MAX_CHARS && s.chars().nth(LINE_MAX_CHARS).is_some() {
        let more = s.chars().count() - LINE_MAX_CHARS;
        let cut: String = s.chars().take(LINE_MAX_CHARS).collect();
        return Cow::Owned(format!(
            "{}… ({more} more characters)",
            escape(&cut, |_| false)
        ));
    }
    escape(s, |_| false)
}

/// Longest one-line field or message [`line`] shows, in characters: every
/// message and name that reaches it is bounded where it is made, and this
/// keeps one line a screenful whatever a message forgets.
pub const LINE_MAX_CHARS: usize = 16 * 1024;

/// Multi-line text (a tool's text result): line breaks and tabs kept, every
/// other control character (escape sequences, `\r`) escaped.
pub fn text(s: &str) -> Cow<'_, str> {
    escape(s, |c| c == '\n' || c == '\t')
}

/// The first `max` characters of `s`, with `…` when something was cut.
pub fn cut_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// JSON text for a terminal (`--json` output): every character
/// [`is_unsafe`] flags inside a string is written as a `\uXXXX` escape.
/// `serde_json` escapes only the C0 controls, so a C1 control (U+009B is a
/// CSI to some terminals), a bidi override or a line separator a plugin or
/// server chose reached the terminal raw; a JSON reader gets the same
/// strings back. Outside strings JSON text holds only ASCII punctuation,
/// spaces and the formatter's line breaks, which stay.
pub(crate) fn json_text(s: String) -> String {
    if !s.chars().any(|c| is_unsafe(c) && c != '\n') {
        return s;
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if is_unsafe(c) && c != '\n' {
            // Every such character is in the Basic Multilingual Plane.
            let _ = std::fmt::Write::write_fmt(&mut out, format_args!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// How many problems (or warnings) a text report lists before it counts
/// the rest: a file of thousands of bad entries printed a line each (20,000
/// refused servers: 13 MB on stderr, or in an agent's MCP log from
/// `serve`). A command's `--json` output lists every one.
pub(crate) const LISTED_MAX: usize = 100;

/// The text of each of the first [`LISTED_MAX`] of `items`, then, when
/// some are left out, the line that counts them, ending with `hint` (where
/// to see all). A caller prints each line as it prints an item.
pub(crate) fn listed<T: std::fmt::Display>(
    items: &[T],
    hint: &str,
) -> impl Iterator<Item = String> {
    let more = items.len().saturating_sub(LISTED_MAX);
    items
        .iter()
        .take(LISTED_MAX)
        .map(ToString::to_string)
        .chain((more > 0).then(|| format!("… and {more} more not listed{hint}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_for_a_terminal_escapes_what_serde_json_leaves_raw() {
        let v = serde_json::json!({"a": "x\u{9b}31m\u{202e}\u{2028}\u{7f}é\n", "b": [1]});
        let t = json_text(serde_json::to_string_pretty(&v).unwrap());
        assert!(t.contains('é'), "{t}");
        assert!(!t.chars().any(|c| is_unsafe(c) && c != '\n'), "{t:?}");
        assert!(
            t.contains("\\u009b") && t.contains("\\u202e") && t.contains("\\n"),
            "{t}"
        );
        // The same document for a JSON reader.
        assert_eq!(serde_json::from_str::<serde_json::Value>(&t).unwrap(), v);
    }

    #[test]
    fn escapes_and_line_breaks_are_shown_not_acted_on() {
        assert_eq!(
            line("evil\u{1b}]0;owned\u{7}\u{1b}[2J\nname"),
            "evil\\u{1b}]0;owned\\u{7}\\u{1b}[2J\\nname"
        );
        assert_eq!(line("a\r\tb\u{9b}c\u{202e}d"), "a\\r\\tb\\u{9b}c\\u{202e}d");
        assert!(matches!(line("plain café ✓"), Cow::Borrowed(_)));
        assert_eq!(text("one\ntwo\t\u{1b}[31m"), "one\ntwo\t\\u{1b}[31m");
    }

    #[test]
    fn invisible_and_line_separating_characters_are_shown() {
        assert_eq!(
            line("abs\u{61c}X\u{2028}FAKE\u{200b}\u{2060}\u{feff}"),
            "abs\\u{61c}X\\u{2028}FAKE\\u{200b}\\u{2060}\\u{feff}"
        );
        // Joiners stay: a family emoji and Persian words need them.
        assert!(matches!(
            line("👨\u{200d}👩 می\u{200c}خواهم"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn cut_counts_characters() {
        assert_eq!(cut_chars("ééé", 2), "éé…");
        assert_eq!(cut_chars("ab", 2), "ab");
    }
}
