//! The redacting log writer (docs/security.md, "Redaction"): every line the
//! CLI logs — wasmgate's own and those of its libraries (rmcp logs a 401's
//! `WWW-Authenticate` echo, reqwest a URL) — passes through the redactor
//! before it is written: the literal secrets of every configured server
//! ([`register_secrets`]), then the token shapes of
//! [`crate::secret::redact_patterns`]. A line break inside one event
//! is shown as `\n` (a server cannot forge log lines), and control
//! characters other than the formatter's own colour codes are escaped.
//!
//! ```no_run
//! tracing_subscriber::fmt()
//!     .with_writer(wasmgate::RedactingStderr)
//!     .init();
//! ```

use std::io::Write;
use std::sync::{LazyLock, RwLock};

use crate::secret::{REDACTED, Redactor};

/// Most literal values remembered (a config cannot grow it without bound).
const MAX_SECRETS: usize = 4096;

static SECRETS: LazyLock<RwLock<Vec<String>>> = LazyLock::new(|| RwLock::new(Vec::new()));

/// Adds a server's literal values to those every log line is redacted with.
pub fn register_secrets(r: &Redactor) {
    let lits: Vec<&String> = r.literals().collect();
    if lits.is_empty() {
        return;
    }
    let mut s = SECRETS.write().unwrap_or_else(|p| p.into_inner());
    for l in lits {
        if s.len() >= MAX_SECRETS {
            break;
        }
        if !s.contains(l) {
            s.push(String::clone(l));
        }
    }
    // Longest first, so a value containing another is replaced whole.
    s.sort_by_key(|v| std::cmp::Reverse(v.len()));
}

/// One formatted log line made safe: literal secrets and token shapes
/// redacted, inner line breaks and control characters escaped (the SGR
/// colour codes `ESC [ … m` of the formatter kept), one final line break.
pub fn clean_line(raw: &str) -> String {
    let body = raw.strip_suffix('\n').unwrap_or(raw);
    let mut text = body.to_string();
    {
        let s = SECRETS.read().unwrap_or_else(|p| p.into_inner());
        for lit in s.iter() {
            if text.contains(lit.as_str()) {
                text = text.replace(lit.as_str(), REDACTED);
            }
        }
    }
    let text = crate::secret::redact_patterns(&text);
    let mut out = String::with_capacity(text.len() + 1);
    let mut rest = text.as_str();
    // Bidi overrides too (a server name may hold one): they reorder what
    // the terminal shows of the rest of the line.
    while let Some(i) = rest.find(crate::terminal::is_unsafe) {
        out.push_str(&rest[..i]);
        let after = &rest[i..];
        if let Some(sgr) = sgr_len(after) {
            out.push_str(&after[..sgr]);
            rest = &after[sgr..];
            continue;
        }
        let c = after.chars().next().expect("a control character");
        out.push_str(&crate::terminal::line(&after[..c.len_utf8()]));
        rest = &after[c.len_utf8()..];
    }
    out.push_str(rest);
    out.push('\n');
    out
}

/// The length of an SGR sequence (`ESC [ digits/; m`) at the start of `s`.
fn sgr_len(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    if b.len() < 3 || b[0] != 0x1b || b[1] != b'[' {
        return None;
    }
    let n = b[2..]
        .iter()
        .take_while(|c| c.is_ascii_digit() || **c == b';')
        .count();
    (b.get(2 + n) == Some(&b'm')).then_some(3 + n)
}

/// A `tracing_subscriber` writer to stderr that cleans each event: the
/// literal secrets of every configured server and the token shapes of
/// `docs/mcp-client.md` §4 become `[REDACTED]`, a line break inside an
/// event is shown as `\n`, and control characters are escaped
/// (`docs/security.md`, "Redaction").
#[derive(Debug, Clone, Copy, Default)]
pub struct RedactingStderr;

/// One event's bytes, cleaned and written when dropped.
#[derive(Debug, Default)]
pub struct EventBuffer {
    buf: Vec<u8>,
}

impl Write for EventBuffer {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for EventBuffer {
    fn drop(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let line = clean_line(&String::from_utf8_lossy(&self.buf));
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for RedactingStderr {
    type Writer = EventBuffer;
    fn make_writer(&'a self) -> EventBuffer {
        EventBuffer::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_redacted_and_cannot_be_forged() {
        register_secrets(&Redactor::new(["hunter2-literal".to_string()]));
        let out = clean_line(
            "WARN rmcp: auth required: Bearer realm=\"x\", token hunter2-literal\nFAKE ERROR line\u{1b}]0;t\u{7}\n",
        );
        assert!(!out.contains("hunter2-literal"), "{out}");
        assert_eq!(out.matches('\n').count(), 1, "{out}");
        assert!(out.contains("\\nFAKE ERROR"), "{out}");
        assert!(!out.contains('\u{1b}'), "{out}");
        // The formatter's own colours stay.
        let coloured = clean_line("\u{1b}[33m WARN\u{1b}[0m ok\n");
        assert_eq!(coloured, "\u{1b}[33m WARN\u{1b}[0m ok\n");
        assert!(!clean_line("key sk-proj.abc_DEF-9 leaked\n").contains("abc_DEF"));
        assert_eq!(
            clean_line("server 'srv\u{202e}evil' failed\n"),
            "server 'srv\\u{202e}evil' failed\n"
        );
    }
}
