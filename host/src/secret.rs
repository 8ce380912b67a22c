//! Credential redaction (`docs/mcp-client.md` §4): every text that may carry
//! a secret — MCP errors, status, log lines, manifest and config problems,
//! agents' config files — passes here before it is cut or printed.
//!
//! Error texts, status and log lines go through [`Redactor::redact`]: the
//! literal values of the server's own `env` and `headers`, `Authorization`
//! values (Bearer, Basic), and common token shapes (`ghp_`, `github_pat_`,
//! `gho_`, `sk-`, `xox?-`, `AKIA…`, `AIza…`, JWTs, and `token` / `key` /
//! `api_key` / `password` / `secret` followed by `=` or `:`, also as JSON
//! keys). Every pattern has word boundaries so ordinary words survive
//! (`monkey=1`, "bearer of news", `risk-based`). Successful tool results
//! only get [`Redactor::redact_secrets`]: only values that are secrets (a
//! header value, a value that came from `${VAR}`, an `env` value whose name
//! looks like a credential, a configured URL's query values and userinfo) —
//! never an ordinary configured value (`TZ: Europe/Berlin`, `PORT: "8080"`),
//! and a file the user asked to read is not rewritten (docs/security.md,
//! "Redaction").

use crate::manifest::server::{ServerSpec, Transport};
use regex::{Regex, RegexSet};
use std::sync::LazyLock;

/// What a redacted secret is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// Shortest configured value that is redacted literally, in characters;
/// shorter values (`1`, `on`) would erase ordinary text and are not secrets.
pub const MIN_LITERAL_LEN: usize = 4;

/// Whole-match token shapes. The distinctive prefixes (`ghp_`, `glpat-`,
/// `hf_`, `AKIA`, …) match even right after a letter or an escape
/// (`\u001bghp_…`, `xghp_…`); `sk-` and JWTs need a word boundary, since
/// `sk-` also ends ordinary words (`task-…`, `risk-…`).
static TOKEN_SHAPES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?:",
        r"gh[pousr]_[A-Za-z0-9_]{16,}",
        r"|github_pat_[A-Za-z0-9_]{20,}",
        r"|glpat-[A-Za-z0-9_-]{20,}",
        r"|hf_[A-Za-z0-9]{30,}",
        r"|xox[abposr]-[A-Za-z0-9-]{10,}",
        r"|(?:AKIA|ASIA)[A-Z0-9]{16}",
        r"|AIza[0-9A-Za-z_-]{30,}",
        r"|\b(?:",
        r"sk-[A-Za-z0-9_-]{10,}",
        // A short key with dots (`sk-proj.abc_DEF-9`); one without a digit
        // or `_` (`sk-learn.preprocessing`) is a word, see `redact_patterns`.
        r"|sk-[A-Za-z0-9_-]+\.[A-Za-z0-9_.-]{6,}",
        r"|eyJ[A-Za-z0-9_-]{6,}\.eyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]*",
        r")",
        // An ASCII word boundary: a token followed by a non-ASCII letter
        // (`ghp_…は`) still ends there.
        r")(?-u:\b)"
    ))
    .expect("token shape pattern")
});

/// A command-line flag naming a credential followed by its value after a
/// space (`--api-key X`, `--token X`, `-password X`) or as the next item
/// of a quoted list (`["--token", "X"]`, as `args` are echoed): the value
/// is the next word, unless it is the next flag.
static FLAG_VALUE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        "{}{}{}{}",
        r#"(?i)((?:^|[\s"'\[,(])"#,
        CREDENTIAL_FLAG,
        // After a space, or as the next item of a quoted list (`"--token", "X"`).
        r#")(\s+|["']\s*,\s*["'])"#,
        // A `${…}` inside the value is part of it (its `}` does not end it).
        r#"((?:\$\{[^}\s]*\}|[^\s"'&,;}\]\-])(?:\$\{[^}\s]*\}|[^\s"'&,;}\]])*)"#
    ))
    .expect("flag pattern")
});

/// A command-line flag naming a credential (`--api-key`, `-token`), the one
/// spelling [`FLAG_VALUE`] and [`FLAG_NAME`] share.
const CREDENTIAL_FLAG: &str =
    r"--?(?:[a-z0-9]+[_-])*(?:token|key|apikey|password|passwd|secret|pat)s?";

/// `Authorization: <anything to end of line or quote>`.
static AUTHORIZATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)(\b(?:proxy-)?authorization\b["']?\s*[:=]\s*["']?)((?:\$\{[^}\r\n]*\}|[^\r\n"',;}])+)"#)
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
        r#"((?:\$\{[^}\s]*\}|[^\s"'&,;}\]])+)"#
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
        FLAG_VALUE.as_str(),
    ])
    .expect("pattern set")
});

/// Flag names that end like a credential's but count or name something
/// else: `--max-tokens=4096`, `--max-token`, `--primary-key=id`.
fn is_not_a_credential_name(name: &str) -> bool {
    static NOT: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)^-*(?:max|min|num)[_-]?token$|^-*(?:primary|foreign|sort|partition|shard|group|order)[_-]?keys?$")
            .expect("not-a-credential pattern")
    });
    is_token_count(name) || NOT.is_match(name)
}

/// A name that counts tokens (`MAX_TOKENS`, `MAX_OUTPUT_TOKENS`,
/// `--max-completion-tokens`): plural only, so `CONTEXT_TOKEN` and
/// `INPUT_TOKEN` stay credentials.
fn is_token_count(name: &str) -> bool {
    static COUNT: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"(?i)^-*(?:(?:max|min|num|total|context|output|input|completion|prompt)[_-]?)+tokens$",
        )
        .expect("token-count pattern")
    });
    COUNT.is_match(name)
}

/// Redacts the token shapes of §4 in each argument of a command line, and
/// the argument after a credential flag given as its own argument
/// (`[--api-key, X]`): each argument alone would not show the pair.
pub fn redact_args(args: &[String]) -> Vec<String> {
    let secret = credential_args(args);
    args.iter()
        .enumerate()
        .map(|(i, a)| {
            if secret.contains(&i) {
                REDACTED.to_string()
            } else {
                redact_patterns(a)
            }
        })
        .collect()
}

/// The indexes of the arguments that follow a credential flag given as its
/// own argument (`[--api-key, X]`): not another flag, and not a value that
/// is only a `${VAR}` reference (it names the secret without holding it,
/// and is kept as everywhere a configured value is shown).
/// Whether `arg` is a credential flag given alone (`--api-key`, `-token`),
/// so that the argument after it is a secret ([`credential_args`]).
pub(crate) fn is_credential_flag(arg: &str) -> bool {
    FLAG_NAME.is_match(arg) && !is_not_a_credential_name(arg)
}

pub(crate) fn credential_args(args: &[String]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut after_flag = false;
    for (i, a) in args.iter().enumerate() {
        if after_flag && !a.starts_with('-') && !is_reference(a) {
            out.push(i);
        }
        after_flag = is_credential_flag(a);
    }
    out
}

/// One `${NAME}` (or `${env:NAME}`) reference, as `${VAR}` expansion
/// reads it: a name only, no `:-default` (which may hold a literal).
static REFERENCE_TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\$\{(?:env:)?[A-Za-z_][A-Za-z0-9_]*\}").expect("reference token pattern")
});

/// Whether `value` is exactly one `${VAR}` reference.
pub(crate) fn is_reference(value: &str) -> bool {
    REFERENCE_TOKEN
        .find(value)
        .is_some_and(|m| m.start() == 0 && m.end() == value.len())
}

/// The `${VAR}` references of `text`, as byte ranges, in order.
pub(crate) fn references(text: &str) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
    REFERENCE_TOKEN.find_iter(text).map(|m| m.range())
}

/// The shortest word of a secret of several words that [`printed_forms`]
/// redacts on its own, in characters.
pub(crate) const FOLDED_WORD_MIN_CHARS: usize = 8;

/// The texts a secret `value` may be printed as, each to be redacted as a
/// literal: the value (or, where it holds `${VAR}` references, which are
/// printed as written, each literal piece between them, without a lone
/// `Bearer`/`Basic`), each as JSON and YAML's double quotes escape it, each
/// line of a multi-line one (a YAML block scalar prints it a line at a
/// time, indented), and each word of at least 8 characters of one with
/// spaces (a folded scalar prints its words over several lines).
pub(crate) fn printed_forms(value: &str) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut at = 0;
    for r in references(value) {
        pieces.push(&value[at..r.start]);
        at = r.end;
    }
    pieces.push(&value[at..]);
    let mut out = Vec::new();
    for piece in pieces {
        let piece = piece.trim();
        if piece.is_empty()
            || piece.eq_ignore_ascii_case("bearer")
            || piece.eq_ignore_ascii_case("basic")
        {
            continue;
        }
        if let Ok(j) = serde_json::to_string(piece) {
            out.push(j[1..j.len() - 1].to_string());
        }
        if piece.contains('\n') {
            out.extend(piece.lines().map(|l| l.trim().to_string()));
        }
        // A folded YAML scalar (`KEY: >`) joins its lines with spaces: its
        // lines as written are unknown, so each long word stands for them.
        if piece.contains(char::is_whitespace) {
            out.extend(
                piece
                    .split_whitespace()
                    .filter(|w| w.chars().count() >= FOLDED_WORD_MIN_CHARS)
                    .map(str::to_string),
            );
        }
        out.push(piece.to_string());
    }
    out
}

/// An argument that is a credential flag by itself (`--api-key`, `-token`).
static FLAG_NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!("(?i)^{CREDENTIAL_FLAG}$")).expect("flag name pattern"));

/// Redacts the token shapes of §4 (no literal values).
pub fn redact_patterns(text: &str) -> String {
    if !ANY.is_match(text) {
        return text.to_string();
    }
    // A value that is only a `${VAR}` reference (after `Bearer `, or
    // alone) names the secret without holding it: kept, as `redact_args`
    // keeps it. Text around it, or a `:-default` (which may be a literal),
    // makes it a value like any other. The value patterns take a `${…}`
    // whole, so a tail after its `}` is part of the value.
    let reference = |value: &str| {
        let value = value.trim_end();
        // After an optional scheme word and its white space.
        let after_scheme = ["bearer", "basic"].iter().find_map(|scheme| {
            let head = value.get(..scheme.len())?;
            let rest = value[scheme.len()..].trim_start();
            (head.eq_ignore_ascii_case(scheme) && rest.len() < value.len() - scheme.len())
                .then_some(rest)
        });
        is_reference(after_scheme.unwrap_or(value))
    };
    let t = AUTHORIZATION.replace_all(text, |c: &regex::Captures<'_>| {
        if reference(&c[2]) {
            c[0].to_string()
        } else {
            format!("{}{REDACTED}", &c[1])
        }
    });
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
            || reference(&c[4])
            || is_not_a_credential_name(&c[2])
            || (quoted_name && unquoted_value && plain_word)
        {
            c[0].to_string()
        } else {
            format!("{}{}{}{REDACTED}", &c[1], &c[2], &c[3])
        }
    });
    let t = FLAG_VALUE.replace_all(&t, |c: &regex::Captures<'_>| {
        let name = c[1].trim_start_matches(|ch: char| !ch.is_ascii_alphanumeric() && ch != '-');
        if c[3].starts_with("[REDACTED") || reference(&c[3]) || is_not_a_credential_name(name) {
            c[0].to_string()
        } else {
            format!("{}{}{REDACTED}", &c[1], &c[2])
        }
    });
    TOKEN_SHAPES
        .replace_all(&t, |c: &regex::Captures<'_>| {
            let m = &c[0];
            let dotted_word = m.starts_with("sk-")
                && m.contains('.')
                && !m[3..].chars().any(|ch| ch.is_ascii_digit() || ch == '_');
            if dotted_word {
                m.to_string()
            } else {
                REDACTED.to_string()
            }
        })
        .into_owned()
}

/// Whether an `env` name looks like it holds a credential (`GITHUB_TOKEN`,
/// `OPENAI_API_KEY`, `DB_PASSWORD`, `AWS_SECRET_ACCESS_KEY`, …): its value
/// is then a secret also in successful results.
pub fn is_credential_name(name: &str) -> bool {
    const MARKS: &[&str] = &[
        "TOKEN",
        "KEY",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "PASSPHRASE",
        "CREDENTIAL",
        "AUTH",
        "COOKIE",
        "SESSION",
        "PRIVATE",
        "SIGNATURE",
        "PWD",
        "BEARER",
    ];
    // Marks that are parts of other words (`PATH`, `DSN` in few,
    // `PASSTHROUGH`, `COMPASS`) count only as a whole part of the name:
    // `GITHUB_PAT`, `SENTRY_DSN`, `DB_PASS`.
    const WORDS: &[&str] = &["PAT", "DSN", "PASS"];
    let upper = name.to_ascii_uppercase();
    // `PWD` is also the shell's working directory, not a secret.
    // A count of tokens (`MAX_TOKENS=4096`) is no secret: its value, a
    // secret, was redacted wherever it appeared (every `4096` of a result).
    upper != "PWD"
        && upper != "OLDPWD"
        && !is_token_count(name)
        && (MARKS.iter().any(|m| upper.contains(m))
            || upper
                .split(|c: char| !c.is_ascii_alphanumeric())
                .any(|w| WORDS.contains(&w)))
}

/// Every URL inside `text`, from its scheme to the first white space,
/// quote or angle bracket: also one inside an argument
/// (`DATABASE_URL=postgres://u:pw@h/db`, `--dsn=mysql://…`), which
/// [`url_secrets`] of the whole argument misses.
pub fn urls_in(text: &str) -> impl Iterator<Item = &str> {
    let scheme_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.');
    text.match_indices("://").filter_map(move |(at, _)| {
        let start = text[..at]
            .char_indices()
            .rev()
            .find(|(_, c)| !scheme_char(*c))
            .map_or(0, |(i, c)| i + c.len_utf8());
        // A scheme starts with a letter (`--x=+x://` is `x://`).
        let start = text[start..at]
            .find(|c: char| c.is_ascii_alphabetic())
            .map_or(at, |i| start + i);
        let end = text[at..]
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`'))
            .map_or(text.len(), |i| at + i);
        (start < at).then(|| &text[start..end])
    })
}

/// `text` with the secrets of every URL in it ([`urls_in`],
/// [`url_secrets`]) replaced by [`REDACTED`].
pub fn redact_urls(text: &str) -> String {
    let secrets: Vec<String> = urls_in(text).flat_map(url_secrets).collect();
    if secrets.is_empty() {
        return text.to_string();
    }
    Redactor::with_secrets(Vec::new(), secrets).redact_secrets(text)
}

/// The secrets a URL carries: every query value and the userinfo (user
/// name and password), decoded and as written. Also of what the `url`
/// crate refuses or writes otherwise, read by hand from the text: a
/// MongoDB URI of several hosts, a Go MySQL DSN (`root:pw@tcp(h:3306)/db`),
/// a port past 65535, a password with `|` (which the crate gives back
/// percent-encoded, a form the file does not hold).
pub fn url_secrets(url: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Some((_, rest)) = url.split_once("://") {
        // Up to the path: a password may hold `?` or `#` (libpq reads the
        // userinfo up to its last `@`).
        let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
        if let Some((userinfo, _)) = authority.rsplit_once('@') {
            let (user, password) = match userinfo.split_once(':') {
                Some((u, p)) => (u, Some(p)),
                None => (userinfo, None),
            };
            for v in [Some(user), password]
                .into_iter()
                .flatten()
                .filter(|v| !v.is_empty())
            {
                out.push(v.to_string());
                let decoded = percent_encoding::percent_decode_str(v).decode_utf8_lossy();
                if decoded != v {
                    out.push(decoded.into_owned());
                }
            }
        }
    }
    if let Some((_, q)) = url.split_once('?') {
        let q = q.split('#').next().unwrap_or("");
        out.extend(
            q.split('&')
                .filter_map(|kv| kv.split_once('=').map(|(_, v)| v.to_string())),
        );
    }
    let Ok(u) = url::Url::parse(url) else {
        return out;
    };
    if !u.username().is_empty() {
        out.push(u.username().to_string());
    }
    if let Some(p) = u.password() {
        out.push(p.to_string());
    }
    if let Some(q) = u.query() {
        out.extend(
            q.split('&')
                .filter_map(|kv| kv.split_once('=').map(|(_, v)| v.to_string())),
        );
    }
    out.extend(u.query_pairs().map(|(_, v)| v.into_owned()));
    out.sort();
    out.dedup();
    out
}

/// [`url_secrets`] of a value that is a URL (read whole: its password may
/// hold a quote or a space) and of every URL inside it
/// (`--url=postgres://u:pw@h/db`, [`urls_in`]).
pub fn value_url_secrets(value: &str) -> Vec<String> {
    let mut out: Vec<String> = urls_in(value).flat_map(url_secrets).collect();
    if value.contains("://") {
        out.extend(url_secrets(value));
    }
    out.sort();
    out.dedup();
    out
}

/// A URL fit to print: its userinfo left out and every query value
/// replaced with [`REDACTED`] (`https://h/mcp?sig=[REDACTED]`). Text that is
/// not a URL is returned as it is.
pub fn display_url(url: &str) -> String {
    let Ok(mut u) = url::Url::parse(url) else {
        return url.to_string();
    };
    let _ = u.set_username("");
    let _ = u.set_password(None);
    if let Some(q) = u.query().map(str::to_string) {
        let q: Vec<String> = q
            .split('&')
            .map(|kv| match kv.split_once('=') {
                Some((k, _)) => format!("{k}={REDACTED}"),
                None => kv.to_string(),
            })
            .collect();
        u.set_query(Some(&q.join("&")));
    }
    u.to_string()
}

/// Redaction for one server: its literal secrets plus the patterns.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// Literal values, longest first (so a value containing another is
    /// replaced whole).
    literals: Literals,
    /// The literals that are secrets (also redacted in successful results),
    /// longest first.
    secrets: Literals,
}

/// A list of literal values and, built at its first use, one automaton
/// that finds all of them in a single pass over a text (an `import` of
/// thousands of servers has thousands of secrets; a scan per value made
/// that quadratic).
#[derive(Debug, Clone, Default)]
struct Literals {
    /// Values up to [`LONG_LITERAL_BYTES`], for the automaton.
    values: Vec<String>,
    /// Longer values (a PEM key, a whole file in one variable), and those
    /// past [`AUTOMATON_MAX_BYTES`], each found by `memchr::memmem`: an
    /// automaton of a 16 MiB value took 8 GiB to build and one of 128 KiB
    /// of `a`s a minute.
    long: Vec<String>,
    finder: std::sync::OnceLock<Option<std::sync::Arc<Finder>>>,
}

/// The longest value [`Literals`] puts in its automaton, in bytes.
const LONG_LITERAL_BYTES: usize = 4096;

/// The most bytes of values [`Literals`] puts in its automaton (which takes
/// tens of bytes for each: 12,000 secrets of 4 KiB took 4.7 GB); the
/// longest of the rest are searched for one by one, as long ones are.
const AUTOMATON_MAX_BYTES: usize = 2 * 1024 * 1024;

/// The most bytes of secrets a caller should hand one redactor for a large
/// text: all of them fit its automaton, so the walk stays linear (past it,
/// each value beyond is searched for on its own).
pub(crate) const REDACTABLE_MAX_BYTES: usize = AUTOMATON_MAX_BYTES;

/// The most bytes of values [`Literals`] lets its quick search build a
/// DFA of (at most a few megabytes of table).
const DFA_MAX_BYTES: usize = 16 * 1024;

/// The automaton of a [`Literals`], and the longest value of each of its
/// match states, learnt as texts are walked and kept for the next text (a
/// state where many values end, as nested values make, is summed up once,
/// not once per text).
#[derive(Debug)]
struct Finder {
    /// The same values for a quick first look (memchr and SIMD
    /// prefilters): most texts hold none of them, and those cost no walk.
    first: aho_corasick::AhoCorasick,
    nfa: aho_corasick::nfa::contiguous::NFA,
    longest: std::sync::Mutex<std::collections::HashMap<aho_corasick::automaton::StateID, usize>>,
}

impl Literals {
    /// `values` without short ones, longest first, without duplicates.
    fn new(values: impl IntoIterator<Item = String>) -> Self {
        let mut values: Vec<String> = values
            .into_iter()
            .filter(|v| v.chars().count() >= MIN_LITERAL_LEN)
            .collect();
        values.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
        values.dedup();
        // Sorted longest first: the long ones lead. Past the automaton's
        // budget, the longest of the rest join them.
        let mut long = values
            .iter()
            .take_while(|v| v.len() > LONG_LITERAL_BYTES)
            .count();
        let mut budget = values[long..].iter().map(String::len).sum::<usize>();
        while budget > AUTOMATON_MAX_BYTES && long < values.len() {
            budget -= values[long].len();
            long += 1;
        }
        let values_short = values.split_off(long);
        Literals {
            values: values_short,
            long: values,
            finder: std::sync::OnceLock::new(),
        }
    }

    /// Every value, longest first.
    fn all(&self) -> impl Iterator<Item = &String> {
        self.long.iter().chain(&self.values)
    }

    /// `text` with every stretch that any value covers replaced by
    /// [`REDACTED`]: occurrences that overlap are one stretch, so no part
    /// of a value survives because another value overlapped it.
    ///
    /// One walk of the automaton over the text: at each byte, the longest
    /// value ending there (every shorter one ending there lies inside it),
    /// so the work is linear in the text even where values nest (a text of
    /// `a`s against the values `aaaa`, `aaaaa`, … would otherwise yield
    /// every nested occurrence).
    fn replace_all(&self, text: &str) -> String {
        use aho_corasick::Anchored;
        use aho_corasick::automaton::Automaton;
        if self.values.is_empty() && self.long.is_empty() {
            return text.to_string();
        }
        let finder = self.finder.get_or_init(|| {
            // A DFA (the default for up to 100 values) only for a few
            // short values: its size grows with their length times the
            // alphabet, and its build with their self-overlap (a 16 MiB
            // value took 8 GiB). Most texts cost only the prefilter either
            // way (a third faster with the DFA: 2.8 against 2.0 GB/s).
            let total: usize = self.values.iter().map(String::len).sum();
            let kind =
                (total > DFA_MAX_BYTES).then_some(aho_corasick::AhoCorasickKind::ContiguousNFA);
            let first = aho_corasick::AhoCorasick::builder()
                .kind(kind)
                .build(&self.values)
                .ok()?;
            let nfa = aho_corasick::nfa::contiguous::NFA::new(&self.values).ok()?;
            Some(std::sync::Arc::new(Finder {
                first,
                nfa,
                longest: std::sync::Mutex::default(),
            }))
        });
        let start = finder
            .as_ref()
            .and_then(|f| f.nfa.start_state(Anchored::No).ok().map(|s| (f, s)));
        let Some((finder, mut sid)) = start else {
            // The automaton could not be built (a size limit): one scan
            // per value, longest first.
            let mut out = text.to_string();
            for v in self.all() {
                if out.contains(v.as_str()) {
                    out = out.replace(v.as_str(), REDACTED);
                }
            }
            return out;
        };
        let nfa = &finder.nfa;
        let root = sid;
        let longest_value = self.values.first().map_or(0, String::len);
        // The shared table when no other text is being walked with it
        // (then a table of this walk's own: redaction never waits).
        let mut own = std::collections::HashMap::new();
        let mut shared = finder.longest.try_lock().ok();
        let longest = match shared.as_deref_mut() {
            Some(table) => table,
            None => &mut own,
        };
        // Disjoint stretches in order; each new one absorbs those it overlaps.
        let mut stretches: Vec<(usize, usize)> = Vec::new();
        let bytes = text.as_bytes();
        let (mut i, mut known_end) = (0, 0);
        while i < bytes.len() && !self.values.is_empty() {
            // At the root no value is part-way matched, so every match
            // to come starts here or later: the quick search finds the
            // first of them to end, and no match starts earlier than the
            // longest value's length before that end. Skip to there (most
            // texts hold no value at all and cost only the quick search).
            if sid == root && i >= known_end {
                let Some(m) = finder.first.find(aho_corasick::Input::new(text).range(i..)) else {
                    break;
                };
                known_end = m.end();
                i = i.max(m.end().saturating_sub(longest_value));
            }
            sid = nfa.next_state(Anchored::No, sid, bytes[i]);
            i += 1;
            if !nfa.is_special(sid) || !nfa.is_match(sid) {
                continue;
            }
            let len = *longest.entry(sid).or_insert_with(|| {
                (0..nfa.match_len(sid))
                    .map(|k| nfa.pattern_len(nfa.match_pattern(sid, k)))
                    .max()
                    .unwrap_or(0)
            });
            let end = i;
            let mut start = end - len.min(end);
            while let Some(&(s, e)) = stretches.last() {
                if e <= start {
                    break;
                }
                start = start.min(s);
                stretches.pop();
            }
            stretches.push((start, end));
        }
        if !self.long.is_empty() {
            // Each long value's occurrences, merged with the automaton's
            // stretches. Not those that overlap an earlier one of the same
            // value (only a value that repeats itself, `aaaa…`, has them):
            // every occurrence found is whole, and finding each start
            // would cost a search per byte.
            for v in self.long.iter().filter(|v| v.len() <= bytes.len()) {
                stretches.extend(
                    memchr::memmem::find_iter(bytes, v.as_bytes()).map(|s| (s, s + v.len())),
                );
            }
            stretches.sort_unstable();
            let mut merged: Vec<(usize, usize)> = Vec::with_capacity(stretches.len());
            for (s, e) in stretches {
                match merged.last_mut() {
                    // Overlapping, not touching: as the automaton's walk.
                    Some(last) if s < last.1 => last.1 = last.1.max(e),
                    _ => merged.push((s, e)),
                }
            }
            stretches = merged;
        }
        if stretches.is_empty() {
            return text.to_string();
        }
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (start, end) in stretches {
            // Values and text are UTF-8, so a match starts and ends on
            // character boundaries; `get` keeps that from being a panic.
            out.push_str(text.get(at..start).unwrap_or_default());
            out.push_str(REDACTED);
            at = end;
        }
        out.push_str(text.get(at..).unwrap_or_default());
        out
    }
}

impl Redactor {
    /// A redactor for the given literal values, all of them secrets
    /// (values shorter than [`MIN_LITERAL_LEN`] are ignored); the tests' shortcut.
    #[cfg(test)]
    pub(crate) fn new(literals: impl IntoIterator<Item = String>) -> Self {
        let literals = Literals::new(literals);
        Redactor {
            secrets: literals.clone(),
            literals,
        }
    }

    /// A redactor for `literals` (redacted in error texts, status and
    /// logs) of which `secrets` are also redacted in successful results.
    pub fn with_secrets(
        literals: impl IntoIterator<Item = String>,
        secrets: impl IntoIterator<Item = String>,
    ) -> Self {
        let secrets = Literals::new(secrets);
        Redactor {
            literals: Literals::new(literals.into_iter().chain(secrets.all().cloned())),
            secrets,
        }
    }

    /// The redactor of a server: every value of its `env` and `headers`,
    /// its URL's query values and userinfo, and the values its `${VAR}`s
    /// stood for ([`ServerSpec::secrets`]). Secrets among them: header
    /// values (and the token after `Bearer `), URL query values and
    /// userinfo, `${VAR}` values, and `env` values whose name
    /// [`is_credential_name`].
    pub fn for_spec(spec: &ServerSpec) -> Self {
        let mut literals = Vec::new();
        let mut secrets: Vec<String> = spec.secrets.clone();
        match &spec.transport {
            Transport::Stdio { env, .. } => {
                for (k, v) in env {
                    literals.push(v.clone());
                    if is_credential_name(k) {
                        secrets.push(v.clone());
                    }
                }
            }
            Transport::Http { url, headers } => {
                for v in headers.values() {
                    // `Bearer abc` also redacts a bare `abc`.
                    secrets.push(v.clone());
                    if let Some((_, token)) = v.split_once(' ') {
                        secrets.push(token.trim().to_string());
                    }
                }
                secrets.extend(url_secrets(url));
            }
            Transport::AppEndpoint => {}
        }
        Self::with_secrets(literals, secrets)
    }

    /// This redactor plus one more secret (the app-endpoint token, known
    /// only once the application's `server_json` is read).
    pub fn with_literal(&self, value: &str) -> Self {
        Self::with_secrets(
            self.literals.all().cloned(),
            self.secrets.all().cloned().chain([value.to_string()]),
        )
    }

    /// Every literal value this redactor replaces (for the log redactor,
    /// [`crate::logging`]).
    pub fn literals(&self) -> impl Iterator<Item = &String> {
        self.literals.all()
    }

    /// Replaces every literal configured value.
    pub fn redact_literals(&self, text: &str) -> String {
        self.literals.replace_all(text)
    }

    /// Replaces only the secrets (for successful tool results): an ordinary
    /// configured value such as `TZ: Europe/Berlin` is left as it is.
    pub fn redact_secrets(&self, text: &str) -> String {
        self.secrets.replace_all(text)
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
    fn credential_names_include_whole_word_marks_but_not_path() {
        for yes in [
            "GITHUB_PAT",
            "pat",
            "SENTRY_DSN",
            "BEARER",
            "X_BEARER_VALUE",
            "API_KEY",
            "TOKENS_SECRET",
            "MAX_TOKENS_KEY",
            "DB_PASS",
            "smtp_pass",
            "CONTEXT_TOKEN",
            "INPUT_TOKEN",
            "GROUP_KEY",
        ] {
            assert!(is_credential_name(yes), "{yes}");
        }
        for no in [
            "PATH",
            "PATTERN",
            "XDG_DATA_DIRS",
            "PWD",
            "TZ",
            "DSNX",
            "MAX_TOKENS",
            "MAX_OUTPUT_TOKENS",
            "max_completion_tokens",
            "ENV_PASSTHROUGH",
            "COMPASS_DIR",
        ] {
            assert!(!is_credential_name(no), "{no}");
        }
    }

    #[test]
    fn a_secret_of_several_words_is_also_printed_word_by_word() {
        // A folded YAML scalar prints these words on lines of their own.
        let forms = printed_forms("foldedsecretpartone foldedsecretparttwo");
        for w in ["foldedsecretpartone", "foldedsecretparttwo"] {
            assert!(forms.iter().any(|f| f == w), "{forms:?}");
        }
        // Short words are no secrets alone (`Bearer`, `and`).
        assert!(
            !printed_forms("Bearer abc and longtokenvalue")
                .iter()
                .any(|f| f == "and")
        );
    }

    #[test]
    fn userinfo_is_read_from_urls_the_url_crate_refuses_or_rewrites() {
        for (url, want) in [
            (
                "mongodb://admin:S3cretPass@db1:27017,db2:27017/?replicaSet=rs0",
                &["admin", "S3cretPass", "rs0"][..],
            ),
            (
                "mysql://root:PW-9911@tcp(127.0.0.1:3306)/app",
                &["root", "PW-9911"][..],
            ),
            ("https://app:PW-8822@host:99999/", &["app", "PW-8822"][..]),
            ("postgres://app:Pa|ssw0rd@db/app", &["app", "Pa|ssw0rd"][..]),
            (
                "postgres://app:p%40ss@db/app",
                &["app", "p%40ss", "p@ss"][..],
            ),
            // libpq reads the userinfo up to its last `@`.
            (
                "postgres://user2:pw2#hashB@db/app",
                &["user2", "pw2#hashB"][..],
            ),
            ("postgres://user3:pw3?qC@db/app", &["user3", "pw3?qC"][..]),
        ] {
            let got = url_secrets(url);
            for w in want {
                assert!(got.iter().any(|g| g == w), "{url}: {w} not in {got:?}");
            }
        }
    }

    #[test]
    fn urls_inside_arguments_are_found_and_their_secrets_redacted() {
        let text = "DATABASE_URL=postgres://user:dockpw111@db:5432/app --dsn=mysql://root:dsnpw222@h/db \"é+x://a:bbbbpw@h\" ://nothing";
        let found: Vec<&str> = urls_in(text).collect();
        assert_eq!(
            found,
            [
                "postgres://user:dockpw111@db:5432/app",
                "mysql://root:dsnpw222@h/db",
                "x://a:bbbbpw@h",
            ]
        );
        let r = redact_urls(text);
        for pw in ["dockpw111", "dsnpw222", "bbbbpw"] {
            assert!(!r.contains(pw), "{r}");
        }
        assert!(r.starts_with("DATABASE_URL=postgres://"), "{r}");
        assert_eq!(redact_urls("no url here"), "no url here");
    }

    #[test]
    fn overlapping_secrets_are_redacted_whole_and_thousands_in_one_pass() {
        let r = Redactor::new(["abcdef".to_string(), "xabc".to_string(), "wxyz".to_string()]);
        // Each alone, as before; overlapping ones as one stretch, so no
        // tail of the longer one is left ("def" after "xabc").
        assert_eq!(r.redact_secrets("a abcdef b"), "a [REDACTED] b");
        assert_eq!(r.redact_secrets("xabcdefz"), "[REDACTED]z");
        assert_eq!(r.redact_secrets("abcdefwxyz"), "[REDACTED][REDACTED]");
        assert_eq!(r.redact_secrets("nothing here"), "nothing here");
        // A value that starts before the first one to end, far into a text.
        let r2 = Redactor::new(["abcdefgh".to_string(), "cdef".to_string()]);
        assert_eq!(
            r2.redact_secrets("0123456789abcdefghyy cdef"),
            format!("0123456789{REDACTED}yy {REDACTED}")
        );
        assert_eq!(r.redact_literals("abc"), "abc");
        let values: Vec<String> = (0..5000).map(|i| format!("secret-value-{i:05}")).collect();
        let r = Redactor::with_secrets(Vec::new(), values.clone());
        let text = values.join(" and ");
        let out = r.redact_secrets(&text);
        assert!(!out.contains("secret-value"), "{}", &out[..200]);
        assert_eq!(out.matches(REDACTED).count(), 5000);
        // A clone shares nothing that changes what it redacts.
        assert_eq!(r.clone().redact_secrets(&values[7]), REDACTED);
        // Nested values (`aaaa`, `aaaaa`, …) in a long run of them: one
        // stretch, found in one walk (every nested occurrence would be
        // quadratic in the run and the values).
        let r = Redactor::new((4..1500).map(|k| "a".repeat(k)));
        let text = format!("x {} y", "a".repeat(200_000));
        assert_eq!(r.redact_secrets(&text), format!("x {REDACTED} y"));
    }

    /// Every occurrence of every value in `text`, overlapping ones joined,
    /// each stretch replaced: what [`Literals::replace_all`] must give.
    fn brute_force(values: &[String], text: &str) -> String {
        let mut spans: Vec<(usize, usize)> = Vec::new();
        for v in values {
            for (at, _) in text.match_indices(v.as_str()) {
                spans.push((at, at + v.len()));
            }
            // Overlapping occurrences of one value too.
            let mut from = 0;
            while let Some(at) = text.get(from..).and_then(|t| t.find(v.as_str())) {
                spans.push((from + at, from + at + v.len()));
                from += at + text[from + at..].chars().next().map_or(1, char::len_utf8);
            }
        }
        spans.sort();
        let mut joined: Vec<(usize, usize)> = Vec::new();
        for (s, e) in spans {
            match joined.last_mut() {
                Some(last) if s < last.1 => last.1 = last.1.max(e),
                _ => joined.push((s, e)),
            }
        }
        let mut want = String::new();
        let mut at = 0;
        for (s, e) in joined {
            want.push_str(&text[at..s]);
            want.push_str(REDACTED);
            at = e;
        }
        want.push_str(&text[at..]);
        want
    }

    #[test]
    fn values_longer_than_the_automaton_takes_are_found_too() {
        // A 16 MiB value made an 8 GiB automaton, 128 KiB of `a`s a minute
        // of building: long values are searched for on their own.
        let mut seed = 7u64;
        let long: String = (0..6000)
            .map(|_| {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ["q", "r", "s", "é"][(seed >> 33) as usize % 4]
            })
            .collect();
        let tail: String = long
            .chars()
            .rev()
            .take(8)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        let short = format!("{tail}zz-short");
        let runs = "a".repeat(200_000);
        let values = vec![
            long.clone(),
            short.clone(),
            runs.clone(),
            "zz-short-2".to_string(),
        ];
        for text in [
            format!("x {long} y {long}{long} z"),
            format!("{long}zz-short and zz-short-2"),
            "nothing".to_string(),
        ] {
            let r = Redactor::new(values.clone());
            assert_eq!(
                r.redact_secrets(&text),
                brute_force(&values, &text),
                "{}",
                text.len()
            );
        }
        // A long value overlapping itself: each occurrence found is
        // redacted (not their union, which would cost a search per start).
        let text = format!("b{}b", "a".repeat(450_000));
        for values in [values, vec![runs.clone()]] {
            let out = Redactor::new(values).redact_secrets(&text);
            assert_eq!(out.len(), 2 + 2 * REDACTED.len() + 50_000);
            assert!(out.starts_with(&format!("b{REDACTED}{REDACTED}a")) && !out.contains(&runs));
        }
    }

    #[test]
    fn literal_redaction_equals_the_union_of_every_occurrence() {
        // Against a brute force over small random texts and values: every
        // occurrence of every value found, overlapping ones joined.
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for _ in 0..3000 {
            let word = |len: u64, next: &mut dyn FnMut(u64) -> u64| -> String {
                // `x` appears in no value, so the walk often returns to
                // the root and skips ahead.
                (0..len)
                    .map(|_| ["a", "b", "é", "x", "x"][next(5) as usize])
                    .collect()
            };
            let values: Vec<String> = (0..1 + next(4))
                .map(|_| {
                    let l = 4 + next(4);
                    word(l, &mut next).replace('x', "a")
                })
                .collect();
            let text = {
                let l = next(160);
                word(l, &mut next)
            };
            let want = brute_force(&values, &text);
            let r = Redactor::new(values.clone());
            assert_eq!(r.redact_secrets(&text), want, "{values:?} in {text:?}");
        }
    }

    #[test]
    fn a_variable_reference_is_kept_and_a_value_beside_it_is_not() {
        for kept in [
            "give a bearer token in headers (\"Authorization\": \"Bearer ${TOKEN}\")",
            "Authorization: Bearer ${GITHUB_TOKEN}",
            "\"api_key\": \"${OPENAI_API_KEY}\"",
            "token=${T}",
            "run --api-key ${API_KEY} now",
            "Authorization: Bearer ${env:GH_TOKEN}",
        ] {
            assert_eq!(redact_patterns(kept), kept);
        }
        for (text, secret) in [
            (
                "Authorization: Bearer ${TOKEN:-abcdef0123456789}",
                "abcdef0123456789",
            ),
            (
                "\"Authorization\": \"Bearer abcdef0123456789\"",
                "abcdef0123456789",
            ),
            ("token=${T}abcdef0123 and token=zz${T}", "abcdef0123"),
            ("token=${T}abcdef0123 and token=zz${T}", "zz"),
            ("run --api-key ${K}TAIL2SECRET now", "TAIL2SECRET"),
            ("Authorization: Bearer ${X}abcdefSECRET", "abcdefSECRET"),
            ("\"NOTE\": \"token=${T}NOTETAIL55\"", "NOTETAIL55"),
            ("\"password\": \"${PW:-hunter22}\"", "hunter22"),
        ] {
            let out = redact_patterns(text);
            assert!(!out.contains(secret), "{text} -> {out}");
        }
    }

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
            "glpat-abcdefghij0123456789",
            "hf_abcdefghijklmnopqrstuvwxyz0123456789",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        ];
        for secret in cases {
            let out = redact_patterns(&format!("error: bad credential {secret} given"));
            assert!(!out.contains(secret), "{secret} survived: {out}");
            assert!(out.contains(REDACTED), "{out}");
        }
    }

    #[test]
    fn distinctive_tokens_are_redacted_right_after_a_letter_or_an_escape() {
        for (input, secret) in [
            (
                "xghp_abcdefghijklmnopqrstuvwxyz0123",
                "abcdefghijklmnopqrstuvwxyz0123",
            ),
            (
                r"\u001bghp_abcdefghijklmnopqrstuvwxyz0123",
                "abcdefghijklmnopqrstuvwxyz0123",
            ),
            (
                "\u{1b}[31mglpat-abcdefghij0123456789",
                "abcdefghij0123456789",
            ),
            (
                "idhf_abcdefghijklmnopqrstuvwxyz0123456789",
                "abcdefghijklmnopqrstuvwxyz0123456789",
            ),
        ] {
            let out = redact_patterns(input);
            assert!(!out.contains(secret), "{input} -> {out}");
            assert!(out.contains(REDACTED), "{input} -> {out}");
        }
    }

    #[test]
    fn credential_flags_lose_the_word_after_them() {
        for (input, secret) in [
            ("npx server --api-key abc123def", "abc123def"),
            ("args: [\"--token\", \"zzz9zzz\"]", "zzz9zzz"),
            ("run -password hunter2 -v", "hunter2"),
            ("--client-secret  s3cr3t", "s3cr3t"),
            ("cli --PAT x1y2z3", "x1y2z3"),
        ] {
            let out = redact_patterns(input);
            assert!(!out.contains(secret), "{input} -> {out}");
            assert!(out.contains(REDACTED), "{input} -> {out}");
        }
        assert_eq!(
            redact_args(&[
                "--api-key".into(),
                "plainsecret123".into(),
                "--token".into(),
                "--verbose".into(),
                "-password".into(),
                "p4ss".into(),
                "--token".into(),
                "${GH_TOKEN}".into(),
                "--max-tokens".into(),
                "4096".into(),
            ]),
            [
                "--api-key",
                REDACTED,
                "--token",
                "--verbose",
                "-password",
                REDACTED,
                "--token",
                "${GH_TOKEN}",
                "--max-tokens",
                "4096"
            ]
        );
        for text in [
            "--max-tokens=4096",
            "--max-tokens 4096",
            "--primary-key=id",
            "max_tokens: 512",
            "--token-file /etc/x",
            "--key-file path",
            "--no-password --verbose",
            "--api-key --other",
            "a monkey jumps",
        ] {
            assert_eq!(redact_patterns(text), text);
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
    fn short_dotted_sk_keys_are_redacted_but_dotted_words_are_not() {
        for secret in ["sk-proj.abc_DEF-9", "sk-a1.b2c3d4e5"] {
            let out = redact_patterns(&format!("error: key {secret} refused."));
            assert!(!out.contains(secret), "{out}");
            assert!(out.ends_with("refused."), "{out}");
        }
        assert_eq!(
            redact_patterns("uses sk-learn.preprocessing"),
            "uses sk-learn.preprocessing"
        );
    }

    #[test]
    fn successful_results_lose_only_secrets() {
        use crate::manifest::server::{ServerSpec, Transport};
        let mut spec = ServerSpec::new("s", Transport::stdio("x", &[] as &[&str]));
        if let Transport::Stdio { env, .. } = &mut spec.transport {
            env.insert("TZ".into(), "Europe/Berlin".into());
            env.insert("PORT".into(), "8080".into());
            env.insert("GITHUB_TOKEN".into(), "tok-value-1".into());
            env.insert("FROM_VAR".into(), "var-value-2".into());
        }
        spec.secrets = vec!["var-value-2".into()];
        let r = Redactor::for_spec(&spec);
        let text = "Europe/Berlin 8080 tok-value-1 var-value-2";
        assert_eq!(
            r.redact_secrets(text),
            "Europe/Berlin 8080 [REDACTED] [REDACTED]"
        );
        // Errors keep the strict rule.
        assert_eq!(
            r.redact(text),
            "[REDACTED] [REDACTED] [REDACTED] [REDACTED]"
        );
        let http = ServerSpec::new(
            "h",
            Transport::Http {
                url: "https://h.example/mcp?sig=abcd1234&access=zz99zz".into(),
                headers: [("X-Api".to_string(), "hdr-value-3".to_string())].into(),
            },
        );
        let r = Redactor::for_spec(&http);
        assert_eq!(
            r.redact_secrets("abcd1234 zz99zz hdr-value-3"),
            "[REDACTED] [REDACTED] [REDACTED]"
        );
        assert_eq!(
            display_url("https://u:p@h.example/mcp?sig=abcd1234&x"),
            "https://h.example/mcp?sig=[REDACTED]&x"
        );
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
