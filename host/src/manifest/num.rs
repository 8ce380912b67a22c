//! Numbers in manifests (`docs/mcp-client.md` §1): a quoted number is read
//! as a number (`"120"` → 120); anything else that is not a number is an error.

use crate::validation::must_be;
use std::time::Duration;
use crate::document::Value;

/// Shortest duration a seconds field accepts: 1 ms. Anything shorter is a
/// typo (`1e-10`) that would round to zero and make every call time out.
pub const MIN_SECONDS: Duration = Duration::from_millis(1);

/// A number of seconds of at least [`MIN_SECONDS`] (integer or decimal, or
/// such a number as a string). `Err` says why: not a number, not finite,
/// zero/negative, below 1 ms, out of range.
pub fn parse_seconds(v: &Value) -> Result<Duration, String> {
    let f = match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => plain_decimal(s.trim()),
        other => {
            return Err(must_be("a number of seconds", other));
        }
    };
    let Some(f) = f.filter(|f| f.is_finite()) else {
        return Err("must be a number of seconds".into());
    };
    if f <= 0.0 {
        return Err("must be a positive number of seconds".into());
    }
    if f < MIN_SECONDS.as_secs_f64() {
        return Err(format!("must be at least 0.001 seconds (1 ms; got {f} s)"));
    }
    Duration::try_from_secs_f64(f).map_err(|_| {
        format!(
            "is out of range (at most {} seconds)",
            Duration::MAX.as_secs()
        )
    })
}

/// A non-negative integer (or such an integer as a string). Digits beyond
/// 64 bits (a string, or an integer `decode_yaml` quoted) are "out of range".
pub fn parse_uint(v: &Value) -> Result<u64, String> {
    let n = match v {
        Value::Number(n) => n.as_u64().or_else(|| {
            // 1024.0 is an integer written as a float.
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 1.8e19)
                .map(|f| f as u64)
        }),
        Value::String(s) => {
            let t = s.trim();
            if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
                match t.parse() {
                    Ok(n) => Some(n),
                    Err(_) => return Err(format!("is out of range (at most {})", u64::MAX)),
                }
            } else {
                None
            }
        }
        other => {
            return Err(must_be("a non-negative integer", other));
        }
    };
    n.ok_or_else(|| "must be a non-negative integer".into())
}

/// `123`, `-1.5`, `0.25`: digits with an optional sign and one dot. Rejects
/// `inf`, `nan` and exponents that `f64::from_str` would take.
fn plain_decimal(s: &str) -> Option<f64> {
    let body = s.strip_prefix(['-', '+']).unwrap_or(s);
    let mut dots = 0;
    let ok = !body.is_empty()
        && body.bytes().all(|b| {
            if b == b'.' {
                dots += 1;
                true
            } else {
                b.is_ascii_digit()
            }
        })
        && dots <= 1
        && body != ".";
    if ok { s.parse().ok() } else { None }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(y: &str) -> Value {
        yaml_serde::from_str(y).unwrap()
    }

    #[test]
    fn seconds() {
        assert_eq!(parse_seconds(&v("120")).unwrap(), Duration::from_secs(120));
        assert_eq!(
            parse_seconds(&v("'120'")).unwrap(),
            Duration::from_secs(120)
        );
        assert_eq!(
            parse_seconds(&v("0.5")).unwrap(),
            Duration::from_millis(500)
        );
        for bad in [
            "abc", "'-1'", "-1", "0", "'inf'", ".inf", "'1e3'", "true", "[1]", "1e300", "1e-10",
            "0.0009", "'0.0001'",
        ] {
            assert!(parse_seconds(&v(bad)).is_err(), "{bad}");
        }
        assert_eq!(parse_seconds(&v("0.001")).unwrap(), MIN_SECONDS);
        assert_eq!(
            parse_seconds(&v("1e-10")).unwrap_err(),
            "must be at least 0.001 seconds (1 ms; got 0.0000000001 s)"
        );
        assert_eq!(
            parse_seconds(&v("'99999999999999999999999'")).unwrap_err(),
            "is out of range (at most 18446744073709551615 seconds)"
        );
    }

    #[test]
    fn uints() {
        assert_eq!(parse_uint(&v("8388608")).unwrap(), 8388608);
        assert_eq!(parse_uint(&v("'42'")).unwrap(), 42);
        assert_eq!(parse_uint(&v("1024.0")).unwrap(), 1024);
        for bad in ["-1", "1.5", "'x'", "null", "'-3'"] {
            assert!(parse_uint(&v(bad)).is_err(), "{bad}");
        }
        assert_eq!(
            parse_uint(&v("'99999999999999999999999'")).unwrap_err(),
            "is out of range (at most 18446744073709551615)"
        );
    }
}
