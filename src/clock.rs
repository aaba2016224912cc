//! Where "now" comes from. A low-level module every layer may use: domain services take an
//! `Arc<dyn Clock>` injected by the application builder, so tests and replays can pin or move
//! time instead of sleeping.

use std::sync::Mutex;

use chrono::{DateTime, Duration, SubsecRound, Utc};

/// Where "now" comes from, so tests and replays can pin time.
pub trait Clock: Send + Sync {
    fn now(&self) -> DateTime<Utc>;
}

/// The wall clock.
#[derive(Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        // PostgreSQL keeps microseconds; truncating here makes both backends return the same value.
        Utc::now().trunc_subsecs(6)
    }
}

/// A clock that stands still until told to move: tests set or advance it instead of sleeping.
#[derive(Debug)]
pub struct ManualClock(Mutex<DateTime<Utc>>);

impl ManualClock {
    /// A clock stopped at `at` (truncated to microseconds, as [`SystemClock`] is).
    pub fn new(at: DateTime<Utc>) -> Self {
        Self(Mutex::new(at.trunc_subsecs(6)))
    }

    /// A clock stopped at the current wall-clock time.
    pub fn starting_now() -> Self {
        Self::new(SystemClock.now())
    }

    /// Moves the clock to `at` (backwards too: a replay may need it).
    pub fn set(&self, at: DateTime<Utc>) {
        *self.lock() = at.trunc_subsecs(6);
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let mut now = self.lock();
        *now = (*now + by).trunc_subsecs(6);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, DateTime<Utc>> {
        // A panic while holding the lock cannot leave a half-written instant: keep going.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.lock()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_told() {
        let start = DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let clock = ManualClock::new(start);
        assert_eq!(clock.now(), start);
        assert_eq!(clock.now(), start, "no time passes on its own");
        clock.advance(Duration::milliseconds(1500));
        assert_eq!(clock.now(), start + Duration::milliseconds(1500));
        clock.set(start);
        assert_eq!(clock.now(), start);
    }

    #[test]
    fn the_system_clock_keeps_microseconds_only() {
        let now = SystemClock.now();
        assert_eq!(now, now.trunc_subsecs(6));
    }
}
