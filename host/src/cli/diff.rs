//! The diff `wasmgate setup` and `import --write` print of an edit to a
//! config file (`docs/mcp-client.md` §1.5): only the changed lines, each
//! redacted of the file's secrets (also as it reads unescaped), control
//! characters escaped, a long line shown by its head and tail
//! (`docs/security.md`, "Redaction").

use std::path::Path;

/// Prints [`diff_text`].
pub(super) fn print_diff(path: &Path, old: &str, new: &str, secrets: Vec<String>, then: &dyn Fn(&str) -> String) {
    print!("{}", diff_text(path, old, new, secrets, then));
}

/// The diff of an edit of `path`, each line redacted of `secrets` and then
/// by `then`. A file whose secrets come to more than
/// [`crate::secret::REDACTABLE_MAX_BYTES`] gets a line saying the diff is
/// not shown instead: finding that many in the changed lines would take
/// gigabytes or minutes (a file of 1.5 million short secrets).
pub(super) fn diff_text(path: &Path, old: &str, new: &str, secrets: Vec<String>, then: &dyn Fn(&str) -> String) -> String {
    let total: usize = secrets.iter().map(String::len).sum();
    if total > crate::secret::REDACTABLE_MAX_BYTES {
        return format!(
            "(the diff of {} is not shown: the file holds {total} bytes of secrets, more than \
             wasmgate redacts from a diff)\n",
            crate::terminal::line(&path.display().to_string())
        );
    }
    // Every secret in one text, to find a piece of one (a secret split
    // over lines: YAML's `"correcthorse\` then `batterystaple"`).
    let pieces = Pieces::new(&secrets);
    let redactor = crate::secret::Redactor::with_secrets(Vec::new(), secrets);
    shown_diff(path, old, new, &|l| redactor.redact_secrets(l), &|l| {
        pieces.redact(&credential_numbers(&then(l)))
    })
}

/// The file's secrets in one text, and how many more words of the diff
/// may be looked up in it (each lookup reads up to 2 MiB).
struct Pieces {
    all: String,
    budget: std::cell::Cell<usize>,
}

impl Pieces {
    fn new(secrets: &[String]) -> Pieces {
        Pieces {
            all: secrets.join("\0"),
            budget: std::cell::Cell::new(2048),
        }
    }

    /// `line` with each word (between spaces, quotes, escapes and
    /// punctuation) that is part of a secret redacted, when it is as long
    /// as a word `secret::printed_forms` takes of a multi-word secret
    /// ([`crate::secret::FOLDED_WORD_MIN_CHARS`]): a secret split over
    /// lines leaves a piece on each, which no whole-value search finds.
    /// Past the budget, words are not looked up (the whole values were
    /// still redacted).
    fn redact(&self, line: &str) -> String {
        if self.all.is_empty() {
            return line.to_string();
        }
        let is_edge = |c: char| c.is_whitespace() || "\"'\\,:;=()[]{}<>`".contains(c);
        let mut out = String::with_capacity(line.len());
        let mut rest = line;
        while !rest.is_empty() {
            let word_len = rest.find(is_edge).unwrap_or(rest.len());
            if word_len == 0 {
                let c = rest.chars().next().map_or(1, char::len_utf8);
                out.push_str(&rest[..c]);
                rest = &rest[c..];
                continue;
            }
            let word = &rest[..word_len];
            let secret_piece = word != crate::secret::REDACTED
                && word.chars().count() >= crate::secret::FOLDED_WORD_MIN_CHARS
                && self.budget.get() > 0
                && {
                    self.budget.set(self.budget.get() - 1);
                    memchr::memmem::find(self.all.as_bytes(), word.as_bytes()).is_some()
                };
            out.push_str(if secret_piece { crate::secret::REDACTED } else { word });
            rest = &rest[word_len..];
        }
        out
    }
}

/// A credential-named key and the number after it, unquoted (`SESSION_ID:
/// 3.750e+7`, `AUTH_PIN = 0xdead_beef`, `"PIN": 1e3`).
static CREDENTIAL_NUMBER: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r#"(^|[^A-Za-z0-9_.-])([A-Za-z0-9_.-]+)(["']?\s*[:=]\s*)([-+]?\.?[0-9][0-9A-Za-z_.+-]*)"#)
        .expect("credential number pattern")
});

/// `line` with the number after each credential-named key
/// ([`crate::secret::is_credential_name`]) redacted: the file's secrets
/// hold such a number as it decodes (`37500000`), and YAML and TOML write
/// it in forms no list of them can know (`3.750e+7`, `0o7654321`,
/// `0xdead_beef`).
fn credential_numbers(line: &str) -> String {
    CREDENTIAL_NUMBER
        .replace_all(line, |c: &regex::Captures<'_>| {
            if crate::secret::is_credential_name(&c[2]) {
                format!("{}{}{}{}", &c[1], &c[2], &c[3], crate::secret::REDACTED)
            } else {
                c[0].to_string()
            }
        })
        .into_owned()
}

/// `line` redacted of the file's `secrets`, and then by `then` (the token
/// shapes and credential-key patterns); a line with escapes
/// (`"s\u0065cret"`, as JSON, TOML and YAML may write a value) is also
/// redacted of them as it reads unescaped, and shown so when that finds
/// more: a secret written with escapes matched none of the forms the
/// redactor knows. `then` comes last either way: a pattern that stopped
/// at a `,` of a secret still written with escapes would leave the rest
/// for the unescaped reading to miss.
fn redact_escaped(line: &str, secrets: &dyn Fn(&str) -> String, then: &dyn Fn(&str) -> String) -> String {
    // Read again from what a pass left (a secret it found stays found:
    // `'a\x41b'` in single quotes is the secret as written).
    let read = |t: &str| {
        let mut d = t.to_string();
        if t.contains('\\') {
            d = unescaped(&d);
        }
        // YAML's single quotes write `'` as `''`.
        if t.contains("''") {
            d = d.replace("''", "'");
        }
        d
    };
    let plain = secrets(line);
    let decoded = read(&plain);
    if decoded != plain {
        let found = secrets(&decoded);
        if found != decoded {
            return then(&found);
        }
    }
    // The file's secrets found nothing more unescaped: the patterns, on
    // the line as written and as it reads.
    let written = then(&plain);
    let decoded = read(&written);
    if decoded == written {
        return written;
    }
    let redacted = then(&decoded);
    if redacted != decoded { redacted } else { written }
}

/// `s` with the escapes of JSON, TOML and YAML double-quoted strings read
/// (`\uXXXX` with surrogate pairs, a lone surrogate as U+FFFD as the
/// decoders read it, `\UXXXXXXXX`, `\xXX`, `\n`, `\t`, YAML's `\_`,
/// `\N`, `\L`, `\P`, …); one it does not know stays as written.
fn unescaped(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        // The `n` hex digits from byte `at` of what follows the backslash.
        let hex = |at: usize, n: usize| {
            after
                .get(at..at + n)
                .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
                .and_then(|h| u32::from_str_radix(h, 16).ok())
        };
        let (c, used) = match after.chars().next() {
            Some('u') => match hex(1, 4) {
                // A surrogate pair: the low half follows as `\uXXXX`.
                Some(hi @ 0xD800..=0xDBFF) => match hex(7, 4).filter(|_| after.get(5..7) == Some("\\u")) {
                    Some(lo @ 0xDC00..=0xDFFF) => {
                        (char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)), 11)
                    }
                    // A lone surrogate, read as the decoders read it.
                    _ => (Some('\u{fffd}'), 5),
                },
                Some(0xDC00..=0xDFFF) => (Some('\u{fffd}'), 5),
                Some(v) => (char::from_u32(v), 5),
                None => (None, 0),
            },
            Some('U') => (hex(1, 8).and_then(char::from_u32), 9),
            Some('x') => (hex(1, 2).and_then(char::from_u32), 3),
            Some('n') => (Some('\n'), 1),
            Some('t') => (Some('\t'), 1),
            Some('r') => (Some('\r'), 1),
            Some('b') => (Some('\u{8}'), 1),
            Some('f') => (Some('\u{c}'), 1),
            Some('e') => (Some('\u{1b}'), 1),
            Some('0') => (Some('\0'), 1),
            Some('a') => (Some('\u{7}'), 1),
            Some('v') => (Some('\u{b}'), 1),
            Some('_') => (Some('\u{a0}'), 1),
            Some('N') => (Some('\u{85}'), 1),
            Some('L') => (Some('\u{2028}'), 1),
            Some('P') => (Some('\u{2029}'), 1),
            Some('\t') => (Some('\t'), 1),
            Some(c @ ('"' | '\\' | '/' | '\'' | ' ')) => (Some(c), 1),
            _ => (None, 0),
        };
        match c {
            Some(c) => {
                out.push(c);
                rest = &after[used..];
            }
            None => {
                out.push('\\');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The unified diff of an edit (the file's name in its header) as
/// printed, a line at a time: each line redacted by `redact` first, then
/// its control characters escaped and, when longer than
/// [`crate::terminal::LINE_MAX_CHARS`], shown by its head and tail with
/// what lies between counted (a config saved on one line is one line of
/// the diff: 134 MB were printed for a 63 MiB file; its tail holds what an
/// entry added at the end changed). Nothing of the whole diff is built
/// beyond the line in hand.
fn shown_diff(
    path: &Path,
    old: &str,
    new: &str,
    secrets: &dyn Fn(&str) -> String,
    then: &dyn Fn(&str) -> String,
) -> String {
    let half = crate::terminal::LINE_MAX_CHARS / 2;
    // Escaped whole: a line break in the path would forge a header line.
    let name = crate::terminal::line(&path.display().to_string()).into_owned();
    let diff = similar::TextDiff::from_lines(old, new);
    let mut out = String::new();
    let mut line = |sign: &str, body: &str| {
        let body = redact_escaped(body, secrets, then);
        let count = body.chars().count();
        out.push_str(sign);
        if count > 2 * half {
            let head = body.char_indices().nth(half).map_or(body.len(), |(i, _)| i);
            let tail = body.char_indices().nth(count - half).map_or(body.len(), |(i, _)| i);
            out.push_str(&crate::terminal::text(&body[..head]));
            out.push_str(&format!(" … ({} characters left out) … ", count - 2 * half));
            out.push_str(&crate::terminal::text(&body[tail..]));
        } else {
            out.push_str(&crate::terminal::text(&body));
        }
        out.push('\n');
    };
    // No context lines: they would print the neighbouring entries, whose
    // secrets may be written in forms no redaction can know (split over
    // lines, escaped, folded); the hunk header says where the change is.
    for (i, hunk) in diff.unified_diff().context_radius(0).iter_hunks().enumerate() {
        if i == 0 {
            line("--- ", &name);
            line("+++ ", &name);
        }
        line("", &hunk.header().to_string());
        for c in hunk.iter_changes() {
            let v = c.value();
            // The line's own end (`\n`, `\r\n`) is the printed line's.
            let v = v.strip_suffix('\n').unwrap_or(v);
            line(&c.tag().to_string(), v.strip_suffix('\r').unwrap_or(v));
            if c.missing_newline() {
                line("", "\\ No newline at end of file");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_read_as_json_toml_and_yaml_write_them() {
        assert_eq!(
            unescaped(r#"a\u0065\x41\U0001F600\ud83d\ude00\n\t\"\\\/ \q\u12"#),
            "aeA😀😀\n\t\"\\/ \\q\\u12"
        );
        // A lone surrogate reads as U+FFFD, as the decoders read it; a bad
        // escape stays as written. YAML's own escapes are read too.
        assert_eq!(unescaped(r"\ud83d x \udc00 \u00zz"), "\u{fffd} x \u{fffd} \\u00zz");
        assert_eq!(unescaped(r"a\_b\Nc\Ld\Pe\af\vg"), "a\u{a0}b\u{85}c\u{2028}d\u{2029}e\u{7}f\u{b}g");
        // What the plain pass found stays found (`'a\x41b'` in single
        // quotes is the secret as written), and `''` is a quote.
        let same = |s: &str| s.to_string();
        let secrets = |s: &str| s.replace(r"Raw1\x41Raw2", "[REDACTED]").replace("secretB", "[REDACTED]").replace("it's-a-secret", "[REDACTED]");
        assert_eq!(
            redact_escaped(r#"{S: 'Raw1\x41Raw2', B: "s\u0065cretB"}"#, &secrets, &same),
            r#"{S: '[REDACTED]', B: "[REDACTED]"}"#
        );
        assert_eq!(redact_escaped("P: 'it''s-a-secret'", &secrets, &same), "P: '[REDACTED]'");
        let redact = |s: &str| s.replace("secret", "[REDACTED]");
        assert_eq!(
            redact_escaped(r#""K": "s\u0065cret", "n": "\u0041""#, &redact, &same),
            "\"K\": \"[REDACTED]\", \"n\": \"A\""
        );
        // Nothing found unescaped: the line as written.
        assert_eq!(redact_escaped(r#""n": "\u0041""#, &redact, &same), r#""n": "\u0041""#);
        // A secret with escapes and a comma: found whole before a pattern
        // that stops at the comma (`then`) cuts it.
        let comma = |s: &str| s.replace("pässw0rd,tail-of-it", "[REDACTED]");
        let cut = |s: &str| s.replace("p\\u00e4ssw0rd", "[REDACTED]");
        assert_eq!(
            redact_escaped(r#""DB_PASSWORD": "p\u00e4ssw0rd,tail-of-it""#, &comma, &cut),
            r#""DB_PASSWORD": "[REDACTED]""#
        );
    }

    #[test]
    fn a_piece_of_a_secret_split_over_lines_is_redacted() {
        let p = Pieces::new(&["correcthorsebatterystaple".to_string(), "short".to_string()]);
        assert_eq!(p.redact(r#"    DB_PASSWORD: "correcthorse\"#), r#"    DB_PASSWORD: "[REDACTED]\"#);
        assert_eq!(p.redact(r#"      batterystaple""#), r#"      [REDACTED]""#);
        // Short words, and words of no secret, stay.
        assert_eq!(p.redact("horse: staple, wasmgate"), "horse: staple, wasmgate");
    }

    #[test]
    fn numbers_after_credential_names_are_redacted_in_any_form() {
        assert_eq!(
            credential_numbers("envs: {SESSION_ID: 3.750e+7, AUTH_PIN = 0xdead_beef, \"PIN\": 1e3, PORT: 8080, max_tokens: 4096}"),
            // `PIN` alone, a port and a token count are no credentials.
            "envs: {SESSION_ID: [REDACTED], AUTH_PIN = [REDACTED], \"PIN\": 1e3, PORT: 8080, max_tokens: 4096}"
        );
        assert_eq!(credential_numbers("\"SECRET_PIN\": 8675309.25,"), "\"SECRET_PIN\": [REDACTED],");
        assert_eq!(credential_numbers("PRIVATE_PIN: 0o7654321"), "PRIVATE_PIN: [REDACTED]");
        assert_eq!(credential_numbers("API_KEY: abc"), "API_KEY: abc");
    }

    #[test]
    fn a_diff_shows_crlf_lines_without_their_cr_and_a_path_on_its_own_line() {
        let d = shown_diff(
            Path::new("/tmp/x\n+++ FORGED/c.json"),
            "a\r\nb\r\n",
            "a\r\nc\r\n",
            &|s| s.to_string(),
            &|s| s.to_string(),
        );
        assert_eq!(
            d,
            "--- /tmp/x\\n+++ FORGED/c.json\n+++ /tmp/x\\n+++ FORGED/c.json\n@@ -2 +2 @@\n-b\n+c\n"
        );
    }
}
