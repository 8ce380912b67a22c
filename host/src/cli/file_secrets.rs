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
    fn walk(v: &Value, secret: bool, out: &mut Vec<String>) {
        match v {
            Value::String(s) => string(s, secret, out),
            Value::Sequence(items) => {
                let mut after_flag = false;
                for i in items {
                    walk(i, secret || after_flag, out);
                    after_flag = i.as_str().is_some_and(crate::secret::is_credential_flag);
                }
            }
            Value::Mapping(m) => {
                for (k, i) in m {
                    walk(i, secret || secret_under(&crate::validation::key_text(k)), out);
                }
            }
            Value::Tagged(t) => walk(&t.value, secret, out),
            Value::Number(n) if secret => out.push(n.to_string()),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(v, false, &mut out);
    out
}

/// Whether every value under the key `k` is a secret: a credential name,
/// or a map of header values (`headers`, Codex's `http_headers`).
fn secret_under(k: &str) -> bool {
    k == "headers" || k == "http_headers" || crate::secret::is_credential_name(k)
}

/// The secrets of the string `s` (a secret itself when `secret`): its URLs'
/// (also one inside a longer value, `--url=postgres://…`), each in every
/// printed form.
fn string(s: &str, secret: bool, out: &mut Vec<String>) {
    let mut found = crate::secret::value_url_secrets(s);
    if secret {
        found.push(s.to_string());
    }
    for f in found {
        out.extend(crate::secret::printed_forms(&f));
    }
}

/// [`value_secrets`] of the JSON `text`, read as it streams: nothing of
/// the file is built.
///
/// # Errors
/// The text is not JSON.
pub(super) fn json_secrets(text: &str) -> Result<Vec<String>, String> {
    use serde::de::{self, DeserializeSeed, Deserializer as _};
    /// One value walked under `secret`; it gives back its text when it is
    /// a short string, for the list around it to tell a credential flag
    /// (`["--api-key", "X"]`: the argument after it is a secret).
    struct Walk<'a> {
        secret: bool,
        out: &'a mut Vec<String>,
    }
    impl<'de> DeserializeSeed<'de> for Walk<'_> {
        type Value = Option<String>;
        fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Option<String>, D::Error> {
            d.deserialize_any(self)
        }
    }
    impl Walk<'_> {
        // A number under a credential name (`"SESSION_ID": 987654321`).
        fn number(self, n: impl ToString) -> Option<String> {
            if self.secret {
                self.out.push(n.to_string());
            }
            None
        }
    }
    /// The secrets of `raw`, a value under a credential name: a number as
    /// it is written (`1e3`, `8675309.25`, an id past 64 bits, which the
    /// walk reads as a float) and as a rewrite of it prints it, then what
    /// the value holds.
    fn secret_raw(raw: &str, out: &mut Vec<String>) -> Result<(), serde_json::Error> {
        if raw.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
            out.push(raw.to_string());
            if let Ok(f) = raw.parse::<f64>() {
                out.push(f.to_string());
                out.extend(serde_json::to_string(&f).ok());
            }
        }
        let mut de = serde_json::Deserializer::from_str(raw);
        de.deserialize_any(Walk { secret: true, out }).map(drop)
    }
    impl<'de> de::Visitor<'de> for Walk<'_> {
        type Value = Option<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_bool<E>(self, _: bool) -> Result<Option<String>, E> {
            Ok(None)
        }
        fn visit_i64<E>(self, n: i64) -> Result<Option<String>, E> {
            Ok(self.number(n))
        }
        fn visit_u64<E>(self, n: u64) -> Result<Option<String>, E> {
            Ok(self.number(n))
        }
        fn visit_f64<E>(self, n: f64) -> Result<Option<String>, E> {
            if self.secret {
                self.out.extend(serde_json::to_string(&n).ok());
            }
            Ok(self.number(n))
        }
        fn visit_unit<E>(self) -> Result<Option<String>, E> {
            Ok(None)
        }
        fn visit_str<E>(self, s: &str) -> Result<Option<String>, E> {
            string(s, self.secret, self.out);
            Ok((s.len() <= 64).then(|| s.to_string()))
        }
        fn visit_seq<A: de::SeqAccess<'de>>(self, mut a: A) -> Result<Option<String>, A::Error> {
            let Walk { secret, out } = self;
            let mut after_flag = false;
            while let Some(item) = a.next_element_seed(Walk {
                secret: secret || after_flag,
                out: &mut *out,
            })? {
                after_flag = item.is_some_and(|a| crate::secret::is_credential_flag(&a));
            }
            Ok(None)
        }
        fn visit_map<A: de::MapAccess<'de>>(self, mut a: A) -> Result<Option<String>, A::Error> {
            let Walk { secret, out } = self;
            while let Some(k) = a.next_key::<std::borrow::Cow<'de, str>>()? {
                if !secret && secret_under(&k) {
                    // Its text too: a number's digits are known only there.
                    let raw: &'de serde_json::value::RawValue = a.next_value()?;
                    // Placed where the walk stands (after the value), not
                    // in the value read alone (`1e999`: out of range).
                    secret_raw(raw.get(), out).map_err(|e| {
                        de::Error::custom(crate::manifest::load::json_error_what(&e).unwrap_or_else(|| e.to_string()))
                    })?;
                } else {
                    a.next_value_seed(Walk { secret, out: &mut *out })?;
                }
            }
            Ok(None)
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
    .map_err(|e| crate::manifest::load::not_json(&body, 0, &e))?;
    Ok(out)
}


#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_numbers_under_credential_names_are_secrets_as_written_and_as_reprinted() {
        let text = r#"{"env": {"SECRET_PIN": 8675309.25, "SESSION_ID": 18446744073709551616,
            "AUTH_CODE": 4.2e21, "N": {"API_KEY": [12345678, 2.5e10]}, "PORT": 8080123}}"#;
        let found = json_secrets(text).unwrap();
        for want in [
            "8675309.25",
            "18446744073709551616",
            "4.2e21",
            "4200000000000000000000",
            "12345678",
            // Inside a list under the name: as its value reprints (the
            // written `2.5e10` is known only for the name's own value).
            "25000000000",
        ] {
            assert!(found.iter().any(|f| f == want), "{want}: {found:?}");
        }
        assert!(!found.iter().any(|f| f.contains("8080123")), "{found:?}");
        // The same file decoded: the walk of a built document agrees on
        // what it can know (a number's value, not its written form).
        let v = crate::manifest::load::decode_json(text).unwrap();
        let built = value_secrets(&v);
        assert!(built.iter().any(|f| f == "12345678"), "{built:?}");
        // A number the walk cannot read is placed in the file.
        let e = json_secrets("{\n  \"a\": 1,\n  \"env\": {\"DB_PASSWORD\": 1e999}\n}").unwrap_err();
        assert!(e.ends_with("number out of range at line 3 column 31"), "{e}");
    }
}
