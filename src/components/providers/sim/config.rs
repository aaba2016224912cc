//! How simulated devices behave, and the reproducible choice of which calls fail.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::components::DevicePower;
use crate::components::providers::redfish::Catalog;
use crate::config::Sim;

/// How the simulated devices behave. `Default` is instant and fault-free, for tests.
#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    /// Delay before every answer.
    pub latency: Duration,
    /// A call whose delay would exceed this fails as unreachable after this long instead.
    pub call_timeout: Duration,
    /// Simulated time a firmware update takes.
    pub firmware_duration: Duration,
    /// Power of a device the simulator has not seen before.
    pub initial_power: DevicePower,
    /// Version installed when a request names none.
    pub desired_firmware: String,
    /// Versions whose installation fails (besides `fail`).
    pub bad_versions: BTreeSet<String>,
    /// Devices whose every call is rejected.
    pub fail_serials: BTreeSet<String>,
    /// Devices that answer `slow_latency` later than the others.
    pub slow_serials: BTreeSet<String>,
    pub slow_latency: Duration,
    /// Share of calls (0..=1) that fail as unreachable.
    pub failure_rate: f64,
    /// The firmware recipes the simulated devices install (`FLOW_FIRMWARE_CATALOG`).
    pub catalog: Catalog,
    /// The recipe bundle (index from 0) whose install fails (`FLOW_SIM_FAIL_BUNDLE`).
    pub fail_bundle: Option<u32>,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            latency: Duration::ZERO,
            call_timeout: Duration::from_secs(30),
            firmware_duration: Duration::from_secs(3),
            initial_power: DevicePower::Off,
            desired_firmware: "2.0.0".into(),
            bad_versions: BTreeSet::new(),
            fail_serials: BTreeSet::new(),
            slow_serials: BTreeSet::new(),
            slow_latency: Duration::from_secs(2),
            failure_rate: 0.0,
            catalog: Catalog::default(),
            fail_bundle: None,
        }
    }
}

impl SimConfig {
    /// The `FLOW_SIM_*` settings.
    pub fn from_config(config: &Sim) -> Self {
        Self {
            latency: config.latency,
            firmware_duration: config.firmware,
            fail_serials: config.fail_serials.iter().cloned().collect(),
            slow_serials: config.slow_serials.iter().cloned().collect(),
            slow_latency: config.slow,
            failure_rate: config.failure_rate,
            fail_bundle: config
                .fail_bundle
                .as_deref()
                .and_then(|b| b.trim().parse().ok()),
            ..Self::default()
        }
    }
}

/// Whether a call is one of the `rate` share that fails, decided by hashing (serial, operation,
/// call number) so that the same sequence of calls fails the same way on every run.
pub(super) fn dropped(rate: f64, serial: &str, op: &str, call: u64) -> bool {
    if rate <= 0.0 {
        return false;
    }
    let mut bytes = Vec::with_capacity(serial.len() + op.len() + 10);
    bytes.extend_from_slice(serial.as_bytes());
    bytes.push(0xff);
    bytes.extend_from_slice(op.as_bytes());
    bytes.push(0xff);
    bytes.extend_from_slice(&call.to_le_bytes());
    let fraction = (mix(fnv1a(&bytes)) >> 11) as f64 / (1u64 << 53) as f64;
    fraction < rate
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// splitmix64's finaliser: FNV's high bits alone are too regular for a fraction.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_failure_rate_is_met_and_decided_by_the_inputs_alone() {
        let picks: Vec<bool> = (0..4000)
            .map(|n| dropped(0.25, "SN1", "power_on", n))
            .collect();
        let again: Vec<bool> = (0..4000)
            .map(|n| dropped(0.25, "SN1", "power_on", n))
            .collect();
        assert_eq!(picks, again);
        let share = picks.iter().filter(|p| **p).count() as f64 / picks.len() as f64;
        assert!((0.22..0.28).contains(&share), "{share}");
        assert!((0..1000).all(|n| !dropped(0.0, "SN1", "power_on", n)));
        assert!((0..1000).all(|n| dropped(1.0, "SN1", "power_on", n)));
    }

    #[test]
    fn the_settings_come_from_the_flow_sim_variables() {
        let config = crate::config::Config {
            sim: crate::config::Sim {
                latency: Duration::from_millis(7),
                firmware: Duration::from_secs(9),
                fail_serials: vec!["A".into()],
                slow_serials: vec!["B".into()],
                slow: Duration::from_millis(11),
                failure_rate: 0.5,
                fail_bundle: Some("1".into()),
            },
            ..crate::config::Config::default()
        };
        let sim = SimConfig::from_config(&config.sim);
        assert_eq!(sim.latency, Duration::from_millis(7));
        assert_eq!(sim.firmware_duration, Duration::from_secs(9));
        assert!(sim.fail_serials.contains("A") && sim.slow_serials.contains("B"));
        assert_eq!(sim.fail_bundle, Some(1));
        assert_eq!(
            (sim.slow_latency, sim.failure_rate),
            (Duration::from_millis(11), 0.5)
        );
    }
}
