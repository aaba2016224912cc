//! Durations as operators write them in rules: `90s`, `1m30s`, `2h`, `500ms` (Go's syntax, no days).

use std::time::Duration;

/// Parses a duration such as `1h30m`, `45s` or `250ms`. A bare `0` is zero; negative values and
/// numbers without a unit are refused so a typo never becomes nanoseconds.
pub fn parse(text: &str) -> Result<Duration, String> {
    let s = text.trim();
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    if s.is_empty() {
        return Err("must not be empty".into());
    }
    if s.starts_with('-') {
        return Err("must not be negative".into());
    }
    let mut total = 0f64;
    let mut rest = s.strip_prefix('+').unwrap_or(s);
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..number_len]
            .parse()
            .map_err(|_| format!("'{text}' is not a duration such as 90s, 1m30s or 2h"))?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let nanos_per_unit = match &rest[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            "" => return Err(format!("'{text}' needs a unit (ms, s, m or h)")),
            other => {
                return Err(format!(
                    "unknown unit '{other}' in '{text}' (use ms, s, m or h)"
                ));
            }
        };
        total += number * nanos_per_unit;
        rest = &rest[unit_len..];
    }
    if total > 366.0 * 24.0 * 3600e9 {
        return Err(format!("'{text}' is longer than a year"));
    }
    Ok(Duration::from_nanos(total.round() as u64))
}

/// Writes a duration the way [`parse`] reads it, e.g. `1h5m`, `30s`, `1m0.5s` or `250ms`.
pub fn format(d: Duration) -> String {
    if d.is_zero() {
        return "0s".into();
    }
    if d < Duration::from_secs(1) {
        return format!("{}ms", d.as_millis());
    }
    let secs = d.as_secs();
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    let millis = d.subsec_millis();
    let mut out = String::new();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if m > 0 {
        out.push_str(&format!("{m}m"));
    }
    if s > 0 || millis > 0 {
        if millis > 0 {
            out.push_str(&format!("{s}.{millis:03}s"));
        } else {
            out.push_str(&format!("{s}s"));
        }
    }
    out
}

/// Serde adapter: a duration as its text form.
pub mod text {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format(*d))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(d)?;
        super::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_go_style_durations() {
        assert_eq!(parse("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse("0"), Ok(Duration::ZERO));
        for bad in ["", "10", "-5s", "3d", "s", "1m30", "abc"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn writes_what_it_reads() {
        for d in [
            Duration::from_secs(90),
            Duration::from_secs(3600 + 5 * 60),
            Duration::from_millis(250),
            Duration::from_millis(1500),
            Duration::from_secs(45 * 60),
        ] {
            assert_eq!(parse(&format(d)), Ok(d), "{}", format(d));
        }
        assert_eq!(format(Duration::from_secs(90)), "1m30s");
        assert_eq!(format(Duration::from_millis(1500)), "1.500s");
    }
}
