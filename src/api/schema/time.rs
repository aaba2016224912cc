//! Timestamps of inventory answers, written byte for byte as chrono's `Serialize` writes them
//! (RFC 3339 in UTC with `Z`, the fraction in 0, 3, 6 or 9 digits, as many as are not zero)
//! but from a stack buffer instead of through `core::fmt`: a component carries three, and
//! chrono's formatter cost a lookup answer about 4 % of its instructions (callgrind). Years
//! outside 0–9999 and leap seconds, which need chrono's special forms, go through chrono.

use chrono::{DateTime, Datelike, Timelike, Utc};
use serde::{Serialize, Serializer};

/// Longest text written here: `9999-12-31T23:59:59.999999999Z`.
const MAX_LEN: usize = 30;

/// `serialize_with` for a `DateTime<Utc>` field.
pub fn rfc3339<S: Serializer>(at: &DateTime<Utc>, serializer: S) -> Result<S::Ok, S::Error> {
    let mut buf = [0u8; MAX_LEN];
    // Only ASCII digits and punctuation are ever written, so the text is always UTF-8.
    match write(at, &mut buf).and_then(|len| std::str::from_utf8(&buf[..len]).ok()) {
        Some(text) => serializer.serialize_str(text),
        None => at.serialize(serializer),
    }
}

/// `serialize_with` for an `Option<DateTime<Utc>>` field.
pub fn rfc3339_opt<S: Serializer>(
    at: &Option<DateTime<Utc>>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match at {
        Some(at) => rfc3339(at, serializer),
        None => serializer.serialize_none(),
    }
}

/// Writes `at` into `buf`, returning its length; `None` for what only chrono writes.
fn write(at: &DateTime<Utc>, buf: &mut [u8; MAX_LEN]) -> Option<usize> {
    let year = u32::try_from(at.year()).ok().filter(|y| *y <= 9999)?;
    let nanos = at.nanosecond();
    if nanos >= 1_000_000_000 {
        return None;
    }
    let mut out = Cursor { buf, len: 0 };
    out.digits(year, 4);
    out.byte(b'-');
    out.digits(at.month(), 2);
    out.byte(b'-');
    out.digits(at.day(), 2);
    out.byte(b'T');
    out.digits(at.hour(), 2);
    out.byte(b':');
    out.digits(at.minute(), 2);
    out.byte(b':');
    out.digits(at.second(), 2);
    if nanos != 0 {
        out.byte(b'.');
        if nanos.is_multiple_of(1_000_000) {
            out.digits(nanos / 1_000_000, 3);
        } else if nanos.is_multiple_of(1_000) {
            out.digits(nanos / 1_000, 6);
        } else {
            out.digits(nanos, 9);
        }
    }
    out.byte(b'Z');
    Some(out.len)
}

struct Cursor<'a> {
    buf: &'a mut [u8; MAX_LEN],
    len: usize,
}

impl Cursor<'_> {
    fn byte(&mut self, b: u8) {
        self.buf[self.len] = b;
        self.len += 1;
    }

    /// `value` as exactly `width` decimal digits (zero-padded; `value` has no more).
    fn digits(&mut self, mut value: u32, width: usize) {
        for i in (0..width).rev() {
            self.buf[self.len + i] = b'0' + (value % 10) as u8;
            value /= 10;
        }
        self.len += width;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[derive(Serialize)]
    struct Ours(#[serde(serialize_with = "rfc3339")] DateTime<Utc>);

    fn same_as_chrono(at: DateTime<Utc>) {
        let ours = serde_json::to_string(&Ours(at)).unwrap();
        let chrono = serde_json::to_string(&at).unwrap();
        assert_eq!(ours, chrono, "{at:?}");
    }

    #[test]
    fn every_fraction_width_and_edge_is_written_as_chrono_writes_it() {
        let base = Utc.with_ymd_and_hms(2026, 12, 6, 3, 4, 5).unwrap();
        for nanos in [
            0,
            1,
            10,
            999,
            1_000,
            120_000,
            999_000,
            1_000_000,
            500_000_000,
            999_999_999,
        ] {
            same_as_chrono(base.with_nanosecond(nanos).unwrap());
        }
        for (y, mo, d, h, mi, s) in [
            (0, 1, 1, 0, 0, 0),
            (1, 2, 3, 4, 5, 6),
            (1970, 1, 1, 0, 0, 0),
            (9999, 12, 31, 23, 59, 59),
            (10000, 1, 1, 0, 0, 0),
            (-1, 6, 30, 12, 0, 0),
        ] {
            same_as_chrono(Utc.with_ymd_and_hms(y, mo, d, h, mi, s).unwrap());
        }
        // A leap second (nanoseconds past 1e9) goes through chrono.
        let leap = chrono::NaiveDate::from_ymd_opt(2016, 12, 31)
            .unwrap()
            .and_hms_nano_opt(23, 59, 59, 1_500_000_000)
            .unwrap()
            .and_utc();
        same_as_chrono(leap);
    }

    #[test]
    fn instants_across_two_centuries_are_written_as_chrono_writes_them() {
        // A fixed walk rather than a random one: the same instants on every run.
        let mut seconds: i64 = 0;
        let mut nanos: u32 = 7;
        for _ in 0..20_000 {
            seconds = (seconds + 312_211_537) % 6_311_390_400; // within 1970-2169
            nanos = nanos.wrapping_mul(2_654_435_761) % 1_000_000_000;
            let micros = nanos - nanos % 1_000;
            for n in [nanos, micros, micros - micros % 1_000_000, 0] {
                same_as_chrono(Utc.timestamp_opt(seconds, n).unwrap());
            }
        }
    }
}
