//! The `sim` provider: power and firmware state, reproducible faults, timeouts and the event log.

use std::sync::Arc;
use std::time::{Duration, Instant};

use flow::components::providers::{SimConfig, SimDevices};
use flow::components::registry::Registry;
use flow::components::{
    Device, DeviceError, DevicePower, FirmwareControl, FirmwareRequest, FirmwareState,
    PowerControl, PowerOp, PowerStatus,
};
use flow::config::Config;
use flow::domain::ComponentType;

use super::device;

fn sim(config: SimConfig) -> Arc<SimDevices> {
    Arc::new(SimDevices::new(config))
}

#[tokio::test]
async fn sim_devices_follow_power_operations_and_log_them_in_order() {
    let sim = sim(SimConfig::default());
    let mut config = Config::default();
    config.components.managers = "compute=sim,nvswitch=sim".parse().unwrap();
    let registry = Registry::from_config(
        &config.components,
        &config.redfish,
        &config.psm,
        sim.clone(),
    )
    .unwrap();
    let tray = device(ComponentType::Compute, "C-1", None);
    let switch = device(ComponentType::NvSwitch, "S-1", None);
    let compute = registry.get(ComponentType::Compute).unwrap();
    let nvswitch = registry.get(ComponentType::NvSwitch).unwrap();
    assert!(registry.get(ComponentType::PowerShelf).is_none());

    assert_eq!(
        compute.status.as_ref().unwrap().power_status(&tray).await,
        Ok(DevicePower::Off)
    );
    nvswitch
        .power
        .as_ref()
        .unwrap()
        .set_power(&switch, PowerOp::On)
        .await
        .unwrap();
    compute
        .power
        .as_ref()
        .unwrap()
        .set_power(&tray, PowerOp::WarmReset)
        .await
        .unwrap();
    compute
        .power
        .as_ref()
        .unwrap()
        .set_power(&tray, PowerOp::ForceOff)
        .await
        .unwrap();
    compute
        .registration
        .as_ref()
        .unwrap()
        .register(&tray)
        .await
        .unwrap();

    assert_eq!(sim.power_of(switch.component_id), Some(DevicePower::On));
    assert_eq!(sim.power_of(tray.component_id), Some(DevicePower::Off));
    assert!(sim.is_registered(tray.component_id));
    assert_eq!(
        sim.external_id_of(tray.component_id).as_deref(),
        Some("sim-C-1")
    );
    let events = sim.events();
    let log: Vec<_> = events
        .iter()
        .map(|e| (e.serial.as_str(), e.kind, e.op))
        .collect();
    assert_eq!(
        log,
        [
            ("C-1", ComponentType::Compute, "power_status"),
            ("S-1", ComponentType::NvSwitch, "power_on"),
            ("C-1", ComponentType::Compute, "warm_reset"),
            ("C-1", ComponentType::Compute, "force_power_off"),
            ("C-1", ComponentType::Compute, "register"),
        ]
    );
    assert!(events.iter().all(|e| e.outcome.is_ok()));
    assert!(events.windows(2).all(|w| w[0].at <= w[1].at));
}

#[tokio::test]
async fn sim_firmware_completes_once_its_duration_has_passed() {
    let sim = sim(SimConfig {
        firmware_duration: Duration::from_secs(60),
        bad_versions: ["3.0.0".to_string()].into(),
        ..SimConfig::default()
    });
    let mut tray = device(ComponentType::Compute, "C-1", None);
    tray.firmware_version = Some("1.4.0".into());
    let to = |v: &str| FirmwareRequest {
        target_version: Some(v.into()),
        sub_targets: vec![],
    };

    assert_eq!(
        sim.update_status(&tray).await.unwrap().state,
        FirmwareState::Unknown
    );
    sim.start_update(&tray, &to("2.1.0")).await.unwrap();
    sim.start_update(&tray, &to("2.1.0")).await.unwrap();
    assert!(matches!(
        sim.start_update(&tray, &to("2.2.0")).await,
        Err(DeviceError::Rejected(_))
    ));
    let status = sim.update_status(&tray).await.unwrap();
    assert_eq!(
        (status.state, status.version.as_deref()),
        (FirmwareState::InProgress, Some("1.4.0"))
    );

    sim.advance(Duration::from_secs(60));
    assert_eq!(sim.firmware_of(tray.component_id).as_deref(), Some("2.1.0"));
    let status = sim.update_status(&tray).await.unwrap();
    assert_eq!(
        (status.state, status.version.as_deref()),
        (FirmwareState::Completed, Some("2.1.0"))
    );

    for bad in ["fail", "3.0.0"] {
        sim.start_update(&tray, &to(bad)).await.unwrap();
        sim.advance(Duration::from_secs(60));
        let status = sim.update_status(&tray).await.unwrap();
        assert_eq!(status.state, FirmwareState::Failed, "{bad}");
        assert!(status.error.unwrap().contains(bad));
        assert_eq!(sim.firmware_of(tray.component_id).as_deref(), Some("2.1.0"));
    }
    let ops: Vec<_> = sim.events().iter().map(|e| e.op).collect();
    assert_eq!(ops.iter().filter(|op| **op == "firmware_start").count(), 5);
}

/// Runs the same calls against a fresh simulator and reports each outcome by serial.
async fn outcomes(config: SimConfig, devices: &[Device]) -> Vec<(String, Result<(), DeviceError>)> {
    let sim = sim(config);
    let mut out = Vec::new();
    for round in 0..10 {
        for d in devices {
            let op = if round % 2 == 0 {
                PowerOp::On
            } else {
                PowerOp::Off
            };
            out.push((d.serial_number.clone(), sim.set_power(d, op).await));
            let status = sim.power_status(d).await.map(|_| ());
            out.push((d.serial_number.clone(), status));
        }
    }
    out
}

#[tokio::test]
async fn sim_fault_injection_is_reproducible() {
    let devices: Vec<_> = (0..6)
        .map(|i| device(ComponentType::Compute, &format!("C-{i}"), None))
        .collect();
    let config = SimConfig {
        failure_rate: 0.3,
        fail_serials: ["C-5".to_string()].into(),
        ..SimConfig::default()
    };
    let first = outcomes(config.clone(), &devices).await;
    let second = outcomes(config, &devices).await;
    assert_eq!(first, second, "same calls, same faults");

    let (listed, others): (Vec<_>, Vec<_>) = first.iter().partition(|(serial, _)| serial == "C-5");
    assert!(
        listed
            .iter()
            .all(|(_, r)| matches!(r, Err(DeviceError::Rejected(_))))
    );
    let dropped = others
        .iter()
        .filter(|(_, r)| matches!(r, Err(DeviceError::Unreachable(_))))
        .count();
    assert!(
        dropped > 0 && dropped < others.len(),
        "{dropped} of {}",
        others.len()
    );
    assert!(
        others
            .iter()
            .all(|(_, r)| !matches!(r, Err(DeviceError::Rejected(_))))
    );
}

#[tokio::test]
async fn a_slow_sim_device_times_out_instead_of_hanging() {
    let sim = sim(SimConfig {
        latency: Duration::from_millis(5),
        slow_serials: ["SLOW".to_string()].into(),
        slow_latency: Duration::from_secs(600),
        call_timeout: Duration::from_millis(100),
        ..SimConfig::default()
    });
    let slow = device(ComponentType::NvSwitch, "SLOW", None);
    let quick = device(ComponentType::NvSwitch, "QUICK", None);

    let started = Instant::now();
    let err = sim.set_power(&slow, PowerOp::On).await.unwrap_err();
    assert!(matches!(err, DeviceError::Unreachable(_)), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(sim.power_of(slow.component_id), Some(DevicePower::Off));
    sim.set_power(&quick, PowerOp::On).await.unwrap();
    let events = sim.events();
    assert_eq!(events.len(), 2);
    assert!(events[0].outcome.is_err() && events[1].outcome.is_ok());
    assert!(events[1].at - events[1].started >= Duration::from_millis(5));
}
