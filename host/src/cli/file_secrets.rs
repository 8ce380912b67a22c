//! The secrets a config file holds, gathered to redact what `setup` and
//! `import --write` print of it (`docs/security.md`, "Redaction"): from a
//! decoded document, or from a JSON text as it streams (a
//! `~/.claude.json` of history is not built).

use crate::document::Value;

/// The secrets an agent's or wasmgate's config file holds, to redact from
/// what is printed of it: the values (strings and numbers) under
/// credential-named keys ([`crate::secret::is_credential_name`]) and in
/// every `headers` mapping, the argument after a credential flag, and the
/// userinfo and query values of every URL, also one inside a longer value
/// — each in every form it may be printed in
/// ([`crate::secret::printed_forms`]).
pub(super) fn value_secrets(v: &Value) -> Vec<String> {
    use crate::secret::is_credential_name;
    fn walk(v: &Value, secret: bool, out: &mut Vec<String>) {
        match v {
            Value::String(s) => {
                // Also a URL inside a longer value (`--url=postgres://…`).
                let mut found = crate::secret::value_url_secrets(s);
                if secret {
                    found.push(s.clone());
                }
                for f in found {
                    out.extend(crate::secret::printed_forms(&f));
                }
            }
            Value::Sequence(items) => {
                // The argument after a credential flag (`[--api-key, X]`).
                let mut after_flag = false;
                for i in items {
                    walk(i, secret || after_flag, out);
                    after_flag = i.as_str().is_some_and(crate::secret::is_credential_flag);
                }
            }
            Value::Mapping(m) => {
                for (k, i) in m {
                    let k = crate::validation::key_text(k);
                    walk(i, secret || k == "headers" || is_credential_name(&k), out);
                }
            }
            Value::Tagged(t) => walk(&t.value, secret, out),
            // A number under a credential name (`SESSION_ID: 987654321`).
            Value::Number(n) if secret => out.push(n.to_string()),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(v, false, &mut out);
    out
}

/// [`value_secrets`] of the JSON `text`, read as it streams: nothing of
/// the file is built.
///
/// # Errors
/// The text is not JSON.
pub(super) fn json_secrets(text: &str) -> Result<Vec<String>, String> {
    use serde::de::{self, DeserializeSeed, Deserializer as _};
    struct Walk<'a> {
        secret: bool,
        out: &'a mut Vec<String>,
    }
    impl<'de> DeserializeSeed<'de> for Walk<'_> {
        type Value = ();
        fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_any(self)
        }
    }
    impl<'de> de::Visitor<'de> for Walk<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_bool<E>(self, _: bool) -> Result<(), E> {
            Ok(())
        }
        // A number under a credential name (`"SESSION_ID": 987654321`).
        fn visit_i64<E>(self, n: i64) -> Result<(), E> {
            if self.secret {
                self.out.push(n.to_string());
            }
            Ok(())
        }
        fn visit_u64<E>(self, n: u64) -> Result<(), E> {
            if self.secret {
                self.out.push(n.to_string());
            }
            Ok(())
        }
        fn visit_f64<E>(self, _: f64) -> Result<(), E> {
            Ok(())
        }
        fn visit_unit<E>(self) -> Result<(), E> {
            Ok(())
        }
        fn visit_str<E>(self, s: &str) -> Result<(), E> {
            // Also a URL inside a longer value (`--url=postgres://…`).
            let mut found = crate::secret::value_url_secrets(s);
            if self.secret {
                found.push(s.to_string());
            }
            for f in found {
                self.out.extend(crate::secret::printed_forms(&f));
            }
            Ok(())
        }
        fn visit_seq<A: de::SeqAccess<'de>>(self, mut a: A) -> Result<(), A::Error> {
            let Walk { secret, out } = self;
            // The argument after a credential flag (`["--api-key", "X"]`).
            let mut after_flag = false;
            while let Some(arg) = a.next_element_seed(Arg {
                secret: secret || after_flag,
                out: &mut *out,
            })? {
                after_flag = arg.is_some_and(|a| crate::secret::is_credential_flag(&a));
            }
            Ok(())
        }
        fn visit_map<A: de::MapAccess<'de>>(self, mut a: A) -> Result<(), A::Error> {
            let Walk { secret, out } = self;
            while let Some(k) = a.next_key::<std::borrow::Cow<'de, str>>()? {
                let secret = secret || k == "headers" || crate::secret::is_credential_name(&k);
                a.next_value_seed(Walk { secret, out: &mut *out })?;
            }
            Ok(())
        }
    }
    /// An element of a list: walked as [`Walk`], and its text when it is a
    /// short string (a flag such as `--api-key`).
    struct Arg<'a> {
        secret: bool,
        out: &'a mut Vec<String>,
    }
    impl<'de> DeserializeSeed<'de> for Arg<'_> {
        type Value = Option<String>;
        fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Option<String>, D::Error> {
            d.deserialize_any(self)
        }
    }
    impl<'de> de::Visitor<'de> for Arg<'_> {
        type Value = Option<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Option<String>, E> {
            Ok(None)
        }
        fn visit_i64<E: de::Error>(self, n: i64) -> Result<Option<String>, E> {
            Walk { secret: self.secret, out: self.out }.visit_i64(n).map(|()| None)
        }
        fn visit_u64<E: de::Error>(self, n: u64) -> Result<Option<String>, E> {
            Walk { secret: self.secret, out: self.out }.visit_u64(n).map(|()| None)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Option<String>, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Option<String>, E> {
            Ok(None)
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<Option<String>, E> {
            Walk { secret: self.secret, out: self.out }.visit_str::<E>(s)?;
            Ok((s.len() <= 64).then(|| s.to_string()))
        }
        fn visit_seq<A: de::SeqAccess<'de>>(self, a: A) -> Result<Option<String>, A::Error> {
            Walk { secret: self.secret, out: self.out }.visit_seq(a).map(|()| None)
        }
        fn visit_map<A: de::MapAccess<'de>>(self, a: A) -> Result<Option<String>, A::Error> {
            Walk { secret: self.secret, out: self.out }.visit_map(a).map(|()| None)
        }
    }
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = Vec::new();
    if body.trim().is_empty() {
        return Ok(out);
    }
    let body = crate::manifest::load::lone_surrogates_replaced(body);
    let mut de = serde_json::Deserializer::from_str(&body);
    de.deserialize_any(Walk {
        secret: false,
        out: &mut out,
    })
    .map_err(|e| format!("is not valid JSON: {}", crate::secret::redact_patterns(&e.to_string())))?;
    Ok(out)
}

