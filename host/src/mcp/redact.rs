//! Credential redaction (`docs/mcp-client.md` §4).
//!
//! Error texts, status and log lines go through [`Redactor::redact`]: the
//! literal values of the server's own `env` and `headers`, `Authorization`
//! values (Bearer, Basic), and common token shapes (`ghp_`, `github_pat_`,
//! `gho_`, `sk-`, `xox?-`, `AKIA…`, `AIza…`, JWTs, and `token` / `key` /
//! `api_key` / `password` / `secret` followed by `=` or `:`, also as JSON
//! keys). Every pattern has word boundaries so ordinary words survive
//! (`monkey=1`, "bearer of news", `risk-based`). Successful tool results
//! only get [`Redactor::redact_literals`]: a file the user asked to read is
//! not rewritten.

use crate::manifest::server::{ServerSpec, Transport};
use regex::{Regex, RegexSet};
use std::sync::LazyLock;

/// What a redacted secret is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// Shortest configured value that is redacted literally, in characters;
/// shorter values (`1`, `on`) would erase ordinary text and are not secrets.
pub const MIN_LITERAL_LEN: usize = 4;

/// Whole-match token shapes.
static TOKEN_SHAPES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"\b(?:",
        r"gh[pousr]_[A-Za-z0-9_]{16,}",
        r"|github_pat_[A-Za-z0-9_]{20,}",
        r"|sk-[A-Za-z0-9_-]{10,}",
        r"|xox[abposr]-[A-Za-z0-9-]{10,}",
        r"|(?:AKIA|ASIA)[A-Z0-9]{16}",
        r"|AIza[0-9A-Za-z_-]{30,}",
        r"|eyJ[A-Za-z0-9_-]{6,}\.eyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]*",
        r")\b"
    ))
    .expect("token shape pattern")
});

/// `Authorization: <anything to end of line or quote>`.
static AUTHORIZATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)(\b(?:proxy-)?authorization\b["']?\s*[:=]\s*["']?)([^\r\n"',;}]+)"#)
        .expect("authorization pattern")
});

/// `Bearer <token>` / `Basic <token>` — the token must look like one (at least
/// 8 token characters, one of them not a letter), so "bearer of news" and
/// "basic configuration" survive.
static SCHEME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(bearer|basic)(\s+)([A-Za-z0-9._~+/=-]{8,})").expect("scheme pattern")
});

/// `token=…`, `API_KEY: …`, `"password": "…"`; the name must start at a
/// non-alphanumeric character (so `monkey=1` survives; `GITHUB_TOKEN=` does not).
static KEY_VALUE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r#"(?i)(^|[^a-z0-9])"#,
        r#"((?:[a-z0-9]+[_-])*(?:token|key|api_key|apikey|password|passwd|secret)s?)"#,
        r#"(["']?\s*[:=]\s*["']?)"#,
        r#"([^\s"'&,;}\]]+)"#
    ))
    .expect("key/value pattern")
});

/// Quick test whether any pattern could match (avoids allocations).
static ANY: LazyLock<RegexSet> = LazyLock::new(|| {
    RegexSet::new([
        TOKEN_SHAPES.as_str(),
        AUTHORIZATION.as_str(),
        SCHEME.as_str(),
        KEY_VALUE.as_str(),
    ])
    .expect("pattern set")
});

/// Redacts the token shapes of §4 (no literal values).
pub fn redact_patterns(text: &str) -> String {
    if !ANY.is_match(text) {
        return text.to_string();
    }
    let t = AUTHORIZATION.replace_all(text, format!("${{1}}{REDACTED}"));
    let t = SCHEME.replace_all(&t, |c: &regex::Captures<'_>| {
        if c[3].chars().all(|ch| ch.is_ascii_alphabetic()) {
            c[0].to_string()
        } else {
            format!("{}{}{REDACTED}", &c[1], &c[2])
        }
    });
    let t = KEY_VALUE.replace_all(&t, |c: &regex::Captures<'_>| {
        // `server 'token': refused`: a quoted name in prose followed by an
        // unquoted plain word is a sentence, not a credential (a quoted key
        // with a secret has a quoted value, or one with digits).
        let quoted_name = c[1].ends_with(['"', '\'']);
        let unquoted_value = !c[3].trim_end().ends_with(['"', '\'']);
        let plain_word = c[4].chars().all(|ch| ch.is_ascii_alphabetic());
        if &c[4] == REDACTED
            || c[4].starts_with("[REDACTED")
            || (quoted_name && unquoted_value && plain_word)
        {
            c[0].to_string()
        } else {
            format!("{}{}{}{REDACTED}", &c[1], &c[2], &c[3])
        }
    });
    TOKEN_SHAPES.replace_all(&t, REDACTED).into_owned()
}

/// Redaction for one server: its literal secrets plus the patterns.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// Literal values, longest first (so a value containing another is
    /// replaced whole).
    literals: Vec<String>,
}

impl Redactor {
    /// A redactor for the given literal values (values shorter than
    /// [`MIN_LITERAL_LEN`] are ignored).
    pub fn new(literals: impl IntoIterator<Item = String>) -> Self {
        let mut literals: Vec<String> = literals
            .into_iter()
            .filter(|v| v.chars().count() >= MIN_LITERAL_LEN)
            .collect();
        literals.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
        literals.dedup();
        Redactor { literals }
    }

    /// The literal values of a server's `env` and `headers`.
    pub fn for_spec(spec: &ServerSpec) -> Self {
        match &spec.transport {
            Transport::Stdio { env, .. } => Self::new(env.values().cloned()),
            Transport::Http { headers, .. } => Self::new(headers.values().flat_map(|v| {
                // `Bearer abc` also redacts a bare `abc`.
                let mut vals = vec![v.clone()];
                if let Some((_, token)) = v.split_once(' ') {
                    vals.push(token.trim().to_string());
                }
                vals
            })),
            Transport::AppEndpoint => Self::default(),
        }
    }

    /// This redactor plus one more literal value (the app-endpoint token,
    /// known only once the application's `server_json` is read).
    pub fn with_literal(&self, value: &str) -> Self {
        Self::new(self.literals.iter().cloned().chain([value.to_string()]))
    }

    /// Replaces only the literal configured values (for successful tool results).
    pub fn redact_literals(&self, text: &str) -> String {
        let mut out = text.to_string();
        for lit in &self.literals {
            if out.contains(lit.as_str()) {
                out = out.replace(lit.as_str(), REDACTED);
            }
        }
        out
    }

    /// Literal values, then the token shapes (error texts, status, logs).
    pub fn redact(&self, text: &str) -> String {
        redact_patterns(&self.redact_literals(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_shapes_are_redacted() {
        let cases = [
            "ghp_abcdefghijklmnopqrstuvwxyz0123",
            "github_pat_11ABCDEFG0123456789_abcdefghijkl",
            "gho_abcdefghijklmnopqrstu",
            "sk-proj-abcdefghijklmnop",
            "sk-ant-api03-abcdefghijk",
            "xoxb-1234567890-abcdefghij",
            "AKIAIOSFODNN7EXAMPLE",
            "AIzaSyA1234567890abcdefghijklmnopqrstu",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        ];
        for secret in cases {
            let out = redact_patterns(&format!("error: bad credential {secret} given"));
            assert!(!out.contains(secret), "{secret} survived: {out}");
            assert!(out.contains(REDACTED), "{out}");
        }
    }

    #[test]
    fn a_server_named_like_a_key_keeps_its_sentence() {
        for text in [
            "failed to connect to MCP server 'token': refused at http://127.0.0.1:9/mcp",
            "failed to connect to MCP server \"secret\": timed out",
        ] {
            assert_eq!(redact_patterns(text), text);
        }
        for (input, secret) in [
            (r#"{"token": 12345678}"#, "12345678"),
            (r#"{"token": "abcdef"}"#, "abcdef"),
            ("'api_key': 'hunter2'", "hunter2"),
        ] {
            let out = redact_patterns(input);
            assert!(!out.contains(secret), "{input} -> {out}");
        }
    }

    #[test]
    fn key_value_forms() {
        for (input, secret) in [
            ("token=abc123def", "abc123def"),
            ("GITHUB_TOKEN=zzz9", "zzz9"),
            ("api_key: hunter22", "hunter22"),
            ("url?key=s3cr3t&x=1", "s3cr3t"),
            (r#"{"password": "p4ssw0rd!", "user": "me"}"#, "p4ssw0rd!"),
            ("client_secret='q1w2e3'", "q1w2e3"),
            ("Authorization: Bearer abc.def.ghi.jkl", "abc.def.ghi.jkl"),
            ("authorization: Basic dXNlcjpwYXNz", "dXNlcjpwYXNz"),
            ("sent Bearer abcdefgh12345 to host", "abcdefgh12345"),
        ] {
            let out = redact_patterns(input);
            assert!(!out.contains(secret), "{input} -> {out}");
            assert!(out.contains(REDACTED), "{input} -> {out}");
        }
        assert_eq!(
            redact_patterns(r#"{"password": "p4ss", "user": "me"}"#),
            r#"{"password": "[REDACTED]", "user": "me"}"#
        );
        assert_eq!(redact_patterns("x&key=abc&y=2"), "x&key=[REDACTED]&y=2");
    }

    #[test]
    fn ordinary_words_survive() {
        for text in [
            "monkey=1",
            "the bearer of news",
            "a risk-based approach",
            "turkey: 3 pounds",
            "basic idea",
            "basic configuration",
            "keyboard layout",
            "skeleton key holder",
            "desk-lamp",
        ] {
            assert_eq!(redact_patterns(text), text);
        }
    }

    #[test]
    fn literals_from_the_spec() {
        let r = Redactor::new(["supersecretvalue".to_string(), "on".to_string()]);
        assert_eq!(
            r.redact_literals("got supersecretvalue, on"),
            "got [REDACTED], on"
        );
        assert_eq!(
            r.redact("x supersecretvalue token=aa1"),
            "x [REDACTED] token=[REDACTED]"
        );
        // Results: only literals, token shapes stay.
        assert_eq!(r.redact_literals("token=aa1"), "token=aa1");
    }
}
