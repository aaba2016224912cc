//! Fire times: parsing interval, cron and one-time specs, and the next fire after a moment.
//!
//! Cron expressions are standard five-field ones (`min hour dom month dow`, names and `@daily`
//! style nicknames allowed), parsed by `croner` and evaluated in the schedule's IANA zone
//! (`chrono-tz`). Around daylight-saving changes a fixed-time job whose local time does not exist
//! (spring forward) fires at the first valid minute after the gap, and one whose local time
//! occurs twice (fall back) fires once, at the first occurrence; wildcard and step jobs skip the
//! missing hour and fire in both copies of the repeated one.

use std::time::Duration;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};

use super::model::{SpecKind, TimerSpec};
use crate::error::{Result, Violations};

/// Shortest interval accepted: below it a schedule would mostly measure the dispatcher's tick.
pub const MIN_INTERVAL: Duration = Duration::from_secs(2);

/// A validated timer, ready to compute fire times.
#[derive(Debug, Clone)]
pub enum Timer {
    Interval(Duration),
    Cron(Box<Cron>, Tz),
    OneTime(DateTime<Utc>),
}

/// Parses a Go-style duration: one or more `<number><unit>` with units `ns`, `us`/`µs`, `ms`,
/// `s`, `m`, `h` (`90s`, `1m30s`, `1.5h`). No sign and no bare numbers.
pub fn parse_duration(input: &str) -> std::result::Result<Duration, String> {
    let text = input.trim();
    if text.is_empty() {
        return Err("empty duration".into());
    }
    let mut total = 0f64;
    let mut rest = text;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| format!("{text:?}: missing unit (ns, us, ms, s, m, h)"))?;
        let number: f64 = rest[..number_len]
            .parse()
            .map_err(|_| format!("{text:?}: bad number"))?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            unit => return Err(format!("{text:?}: unknown unit {unit:?}")),
        };
        total += number * seconds;
        rest = &rest[unit_len..];
    }
    Duration::try_from_secs_f64(total).map_err(|e| format!("{text:?}: {e}"))
}

/// Parses an IANA time zone name (`Europe/Berlin`, `UTC`); abbreviations such as `PST` fail.
pub fn parse_zone(name: &str) -> Option<Tz> {
    name.trim().parse().ok()
}

impl Timer {
    /// Checks a new or changed spec; errors name `spec.spec` or `spec.timezone`. A one-time
    /// instant must lie after `now`.
    pub fn parse_new(spec: &TimerSpec, now: DateTime<Utc>) -> Result<Self> {
        Self::parse_checked(spec, Some(now))
    }

    /// Reads a stored spec (a stored one-time instant may have passed).
    pub fn parse(spec: &TimerSpec) -> Result<Self> {
        Self::parse_checked(spec, None)
    }

    fn parse_checked(spec: &TimerSpec, now: Option<DateTime<Utc>>) -> Result<Self> {
        let mut v = Violations::default();
        let zone = parse_zone(&spec.timezone);
        if zone.is_none() {
            v.push(
                "spec.timezone",
                format!("{:?} is not an IANA time zone name", spec.timezone),
            );
        }
        let raw = spec.spec.trim();
        let timer = match spec.kind {
            SpecKind::Interval => match parse_duration(raw) {
                Ok(d) if d < MIN_INTERVAL => {
                    v.push(
                        "spec.spec",
                        format!("the interval must be at least {}s", MIN_INTERVAL.as_secs()),
                    );
                    None
                }
                Ok(d) => Some(Self::Interval(d)),
                Err(e) => {
                    v.push("spec.spec", e);
                    None
                }
            },
            SpecKind::Cron => {
                let parser = CronParser::builder()
                    .seconds(Seconds::Disallowed)
                    .year(Year::Disallowed)
                    .build();
                match parser.parse(raw) {
                    Ok(cron) => zone.map(|z| Self::Cron(Box::new(cron), z)),
                    Err(e) => {
                        v.push(
                            "spec.spec",
                            format!("not a five-field cron expression: {e}"),
                        );
                        None
                    }
                }
            }
            SpecKind::OneTime => match DateTime::parse_from_rfc3339(raw) {
                Ok(at) if now.is_some_and(|now| at.with_timezone(&Utc) <= now) => {
                    v.push("spec.spec", "the time is in the past");
                    None
                }
                Ok(at) => Some(Self::OneTime(at.with_timezone(&Utc))),
                Err(e) => {
                    v.push("spec.spec", format!("not an RFC 3339 time: {e}"));
                    None
                }
            },
        };
        v.finish()?;
        timer.ok_or_else(|| crate::error::Error::invalid("spec", "invalid"))
    }

    /// The first fire strictly after `now`, or None for a one-time schedule whose instant passed.
    /// Intervals count from `now`, not from the missed time: a schedule that was due while
    /// every Flow process was down fires once on recovery, then keeps its rhythm from there.
    pub fn next_after(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self {
            // From the whole second: a fire time keeps no fraction of the moment a schedule
            // was created or resumed, so intervals sit on a grid of whole seconds.
            Self::Interval(d) => chrono::Duration::from_std(*d)
                .ok()
                .map(|d| chrono::SubsecRound::trunc_subsecs(now, 0) + d),
            Self::Cron(cron, zone) => cron
                .find_next_occurrence(&now.with_timezone(zone), false)
                .ok()
                .map(|t| t.with_timezone(&Utc)),
            Self::OneTime(at) => (*at > now).then_some(*at),
        }
    }

    /// The fire after the one that was due at `due`, fired at `now`: an interval stays on its
    /// grid (`due + interval`, not "interval after the dispatcher noticed", which drifted by a
    /// tick per fire), skipping grid points already past (fires missed while every process
    /// was down collapse into the one just made). Cron and one-time timers as [`next_after`].
    ///
    /// [`next_after`]: Self::next_after
    pub fn next_due(&self, due: DateTime<Utc>, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let Self::Interval(d) = self else {
            return self.next_after(now);
        };
        let step = chrono::Duration::from_std(*d).ok()?.num_milliseconds();
        if step <= 0 {
            return self.next_after(now);
        }
        let next = due.checked_add_signed(chrono::Duration::milliseconds(step))?;
        if next > now {
            return Some(next);
        }
        let missed = (now - next).num_milliseconds() / step + 1;
        next.checked_add_signed(chrono::Duration::milliseconds(step.checked_mul(missed)?))
    }

    /// The first fire of a new or resumed schedule.
    pub fn first_after(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self {
            Self::OneTime(at) => Some(*at),
            other => other.next_after(now),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn spec(kind: SpecKind, spec: &str, tz: &str) -> TimerSpec {
        TimerSpec {
            kind,
            spec: spec.into(),
            timezone: tz.into(),
        }
    }

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn go_durations_parse_and_junk_does_not() {
        assert_eq!(parse_duration("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("1.5h").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        for bad in ["", "10", "5d", "-5s", "s", "1m30"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn bad_specs_name_the_field() {
        let now = Utc::now();
        let field = |s: TimerSpec| match Timer::parse_new(&s, now) {
            Err(crate::error::Error::Invalid(e)) => e[0].field.clone(),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            field(spec(SpecKind::Cron, "61 * * * *", "UTC")),
            "spec.spec"
        );
        assert_eq!(
            field(spec(SpecKind::Cron, "0 0 * * * *", "UTC")),
            "spec.spec"
        );
        assert_eq!(
            field(spec(SpecKind::Cron, "0 3 * * *", "PST")),
            "spec.timezone"
        );
        assert_eq!(
            field(spec(SpecKind::Cron, "0 3 * * *", "Mars/Olympus")),
            "spec.timezone"
        );
        assert_eq!(field(spec(SpecKind::Interval, "1s", "UTC")), "spec.spec");
        assert_eq!(field(spec(SpecKind::Interval, "soon", "UTC")), "spec.spec");
        assert_eq!(
            field(spec(SpecKind::OneTime, "2001-01-01T00:00:00Z", "UTC")),
            "spec.spec"
        );
        assert_eq!(
            field(spec(SpecKind::OneTime, "tomorrow", "UTC")),
            "spec.spec"
        );
        assert!(Timer::parse_new(&spec(SpecKind::Cron, "@daily", "Europe/Berlin"), now).is_ok());
        assert!(Timer::parse_new(&spec(SpecKind::Interval, "2s", "UTC"), now).is_ok());
    }

    #[test]
    fn intervals_count_from_now_so_missed_fires_collapse_into_one() {
        let timer = Timer::parse(&spec(SpecKind::Interval, "5m", "UTC")).unwrap();
        let now = utc("2026-03-01T12:00:00Z");
        assert_eq!(timer.next_after(now), Some(utc("2026-03-01T12:05:00Z")));
    }

    #[test]
    fn an_interval_created_mid_second_fires_on_whole_seconds() {
        let timer = Timer::parse(&spec(SpecKind::Interval, "1h", "UTC")).unwrap();
        let now = utc("2026-03-01T12:00:07.123456Z");
        let first = timer.first_after(now).unwrap();
        assert_eq!(first, utc("2026-03-01T13:00:07Z"));
        assert_eq!(
            timer.next_due(first, first),
            Some(utc("2026-03-01T14:00:07Z"))
        );
    }

    #[test]
    fn intervals_stay_on_their_grid_however_late_each_fire_is_noticed() {
        let timer = Timer::parse(&spec(SpecKind::Interval, "4s", "UTC")).unwrap();
        let start = utc("2026-03-01T12:00:00Z");
        // Each fire noticed 700 ms late (a dispatcher tick): 14 fires in 56 s, not 12.
        let mut due = start;
        let mut fires = 0;
        while due < start + chrono::Duration::seconds(56) {
            fires += 1;
            due = timer
                .next_due(due, due + chrono::Duration::milliseconds(700))
                .unwrap();
        }
        assert_eq!(fires, 14);
        assert_eq!(due, utc("2026-03-01T12:00:56Z"));
        // Missed grid points collapse into the fire made now; the grid is kept.
        let timer = Timer::parse(&spec(SpecKind::Interval, "5m", "UTC")).unwrap();
        assert_eq!(
            timer.next_due(start, utc("2026-03-01T12:10:01Z")),
            Some(utc("2026-03-01T12:15:00Z"))
        );
    }

    #[test]
    fn a_daily_0230_berlin_job_across_both_dst_changes() {
        let timer = Timer::parse(&spec(SpecKind::Cron, "30 2 * * *", "Europe/Berlin")).unwrap();
        // A normal winter day: 02:30 CET is 01:30 UTC.
        assert_eq!(
            timer.next_after(utc("2026-03-27T12:00:00Z")),
            Some(utc("2026-03-28T01:30:00Z"))
        );
        // 29 March 2026, clocks jump from 02:00 to 03:00 CEST: 02:30 does not exist, so the job
        // fires at the first minute after the gap, 03:00 CEST (01:00 UTC), the same day.
        assert_eq!(
            timer.next_after(utc("2026-03-28T12:00:00Z")),
            Some(utc("2026-03-29T01:00:00Z"))
        );
        // The day after: 02:30 CEST is 00:30 UTC.
        assert_eq!(
            timer.next_after(utc("2026-03-29T12:00:00Z")),
            Some(utc("2026-03-30T00:30:00Z"))
        );
        // 25 October 2026, clocks fall back from 03:00 CEST to 02:00 CET: 02:30 happens twice;
        // the job fires once, at the first (00:30 UTC) ...
        let first = utc("2026-10-25T00:30:00Z");
        assert_eq!(timer.next_after(utc("2026-10-24T12:00:00Z")), Some(first));
        // ... and not again at the second 02:30 (01:30 UTC), but the next day at 01:30 UTC.
        assert_eq!(
            timer.next_after(first),
            Some(Utc.with_ymd_and_hms(2026, 10, 26, 1, 30, 0).unwrap())
        );
    }

    #[test]
    fn one_time_schedules_fire_once() {
        let now = utc("2026-03-01T12:00:00Z");
        let timer = Timer::parse_new(
            &spec(SpecKind::OneTime, "2026-03-01T14:00:00+01:00", "UTC"),
            now,
        )
        .unwrap();
        assert_eq!(timer.first_after(now), Some(utc("2026-03-01T13:00:00Z")));
        assert_eq!(timer.next_after(utc("2026-03-01T13:00:00Z")), None);
    }
}
