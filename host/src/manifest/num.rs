//! Numbers in manifests (`spec/mcp-client.md` §1): a quoted number is read
//! as a number (`"120"` → 120); anything else that is not a number is an error.

use crate::declaration::value::describe;
use std::time::Duration;
use yaml_serde::Value;

/// A positive number of seconds (integer or decimal, or such a number as a
/// string). `Err` says why: not a number, not finite, zero/negative, too large.
pub fn parse_seconds(v: &Value) -> Result<Duration, String> {
    let f = match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => plain_decimal(s.trim()),
        other => {
            return Err(format!(
                "must be a number of seconds (got {})",
                describe(other)
            ));
        }
    };
    let Some(f) = f.filter(|f| f.is_finite()) else {
        return Err("must be a number of seconds".into());
    };
    if f <= 0.0 {
        return Err("must be a positive number of seconds".into());
    }
    Duration::try_from_secs_f64(f).map_err(|_| "is too large a number of seconds".into())
}

/// A non-negative integer (or such an integer as a string).
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
                t.parse().ok()
            } else {
                None
            }
        }
        other => {
            return Err(format!(
                "must be a non-negative integer (got {})",
                describe(other)
            ));
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
            "abc", "'-1'", "-1", "0", "'inf'", ".inf", "'1e3'", "true", "[1]", "1e300",
        ] {
            assert!(parse_seconds(&v(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn uints() {
        assert_eq!(parse_uint(&v("8388608")).unwrap(), 8388608);
        assert_eq!(parse_uint(&v("'42'")).unwrap(), 42);
        assert_eq!(parse_uint(&v("1024.0")).unwrap(), 1024);
        for bad in ["-1", "1.5", "'x'", "null", "'-3'"] {
            assert!(parse_uint(&v(bad)).is_err(), "{bad}");
        }
    }
}
