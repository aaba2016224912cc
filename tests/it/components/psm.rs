//! The `psm` provider against a real tonic server speaking the PSM proto.

use std::sync::Arc;
use std::time::{Duration, Instant};

use flow::clients::psm::PsmClient;
use flow::components::providers::{Providers, PsmSettings, SimConfig, SimDevices};
use flow::components::registry::Registry;
use flow::components::{
    DeviceError, DevicePower, FirmwareRequest, FirmwareState, ManagerSet, PowerOp,
};
use flow::domain::ComponentType;

use super::{MAC, device, shelf};
use crate::support::psm::{PsmServer, closed_url};

/// The power-shelf managers of a registry whose only entry is `powershelf=psm`.
fn psm_managers(url: &str, timeout: Duration) -> ManagerSet {
    let providers = Providers {
        sim: Arc::new(SimDevices::new(SimConfig::default())),
        psm: PsmSettings {
            url: url.into(),
            timeout,
            pmc_credentials: None,
            allowed_networks: crate::support::bmc_networks(),
            ..Default::default()
        },
        redfish: Default::default(),
    };
    let registry = Registry::from_spec("powershelf=psm", &providers).unwrap();
    registry.get(ComponentType::PowerShelf).unwrap().clone()
}

#[tokio::test]
async fn psm_turns_a_shelf_on_and_off_and_reads_its_power() {
    let psm = PsmServer::start().await;
    psm.add_shelf(MAC);
    let m = psm_managers(&psm.url, Duration::from_secs(5));
    let (power, status) = (m.power.unwrap(), m.status.unwrap());

    assert_eq!(status.power_status(&shelf()).await, Ok(DevicePower::Off));
    power.set_power(&shelf(), PowerOp::On).await.unwrap();
    assert_eq!(psm.shelf_power(MAC), Some(DevicePower::On));
    assert_eq!(status.power_status(&shelf()).await, Ok(DevicePower::On));
    power.set_power(&shelf(), PowerOp::ForceOff).await.unwrap();
    assert_eq!(psm.shelf_power(MAC), Some(DevicePower::Off));
    psm.set_psus(MAC, vec![true, false, true, true, true, true]);
    assert_eq!(
        status.power_status(&shelf()).await,
        Ok(DevicePower::Unknown)
    );

    let calls: Vec<_> = psm
        .calls()
        .iter()
        .map(|c| (c.rpc, c.macs.clone()))
        .collect();
    let one = || vec![MAC.to_string()];
    assert_eq!(
        calls,
        [
            ("GetPowershelves", one()),
            ("PowerOn", one()),
            ("GetPowershelves", one()),
            ("PowerOff", one()),
            ("GetPowershelves", one()),
        ]
    );
}

#[tokio::test]
async fn psm_shelf_errors_are_rejections_naming_the_shelf() {
    let psm = PsmServer::start().await;
    psm.add_shelf(MAC);
    psm.fail_shelf(MAC);
    let m = psm_managers(&psm.url, Duration::from_secs(5));

    let err = m
        .power
        .unwrap()
        .set_power(&shelf(), PowerOp::On)
        .await
        .unwrap_err();
    let DeviceError::Rejected(text) = &err else {
        panic!("expected a rejection, got {err:?}");
    };
    assert!(
        text.contains(MAC) && text.contains("INTERNAL_ERROR"),
        "{text}"
    );
    assert!(!err.is_retryable());

    let stranger = device(ComponentType::PowerShelf, "PS-2", Some("0c:42:a1:00:00:99"));
    let err = m
        .status
        .clone()
        .unwrap()
        .power_status(&stranger)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, DeviceError::Rejected(t) if t.contains("not registered with PSM")),
        "{err:?}"
    );

    let no_mac = device(ComponentType::PowerShelf, "PS-3", None);
    let err = m.status.unwrap().power_status(&no_mac).await.unwrap_err();
    assert_eq!(
        err,
        DeviceError::Rejected("power shelf has no PMC MAC".into())
    );
    assert_eq!(
        psm.calls().len(),
        2,
        "a shelf without MAC is refused before any call"
    );
}

#[tokio::test]
async fn psm_cannot_reset_a_shelf() {
    let psm = PsmServer::start().await;
    let power = psm_managers(&psm.url, Duration::from_secs(5))
        .power
        .unwrap();
    for op in [
        PowerOp::Restart,
        PowerOp::ForceRestart,
        PowerOp::WarmReset,
        PowerOp::ColdReset,
    ] {
        let err = power.set_power(&shelf(), op).await.unwrap_err();
        assert!(
            matches!(err, DeviceError::Unsupported(_)),
            "{op:?}: {err:?}"
        );
    }
    assert!(psm.calls().is_empty());
}

#[tokio::test]
async fn a_psm_that_is_down_is_unreachable_at_once() {
    let url = closed_url().await;
    // Building the registry does not connect, so start-up survives a missing PSM.
    let m = psm_managers(&url, Duration::from_secs(10));
    let started = Instant::now();
    let err = m
        .power
        .unwrap()
        .set_power(&shelf(), PowerOp::On)
        .await
        .unwrap_err();
    assert!(matches!(err, DeviceError::Unreachable(_)), "{err:?}");
    assert!(err.is_retryable());
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_stalled_psm_is_unreachable_after_the_call_timeout() {
    let psm = PsmServer::start().await;
    psm.add_shelf(MAC);
    let timeout = Duration::from_millis(300);
    let m = psm_managers(&psm.url, timeout);
    psm.stall();

    let started = Instant::now();
    let err = m.status.unwrap().power_status(&shelf()).await.unwrap_err();
    let waited = started.elapsed();
    assert!(matches!(err, DeviceError::Unreachable(_)), "{err:?}");
    assert!(
        waited >= timeout && waited < Duration::from_secs(3),
        "{waited:?}"
    );
    assert_eq!(
        psm.calls().len(),
        1,
        "the call reached the server before it stalled"
    );

    psm.resume();
    let power = m.power.unwrap();
    power.set_power(&shelf(), PowerOp::On).await.unwrap();
    assert_eq!(psm.shelf_power(MAC), Some(DevicePower::On));
}

#[tokio::test]
async fn psm_firmware_update_is_queued_then_verified_then_completed() {
    let psm = PsmServer::start().await;
    psm.add_shelf(MAC);
    let firmware = psm_managers(&psm.url, Duration::from_secs(5))
        .firmware
        .unwrap();

    let no_version = FirmwareRequest::default();
    let err = firmware
        .start_update(&shelf(), &no_version)
        .await
        .unwrap_err();
    assert!(matches!(err, DeviceError::Rejected(_)), "{err:?}");
    let bad_part = FirmwareRequest {
        target_version: Some("1.2.3".into()),
        sub_targets: vec!["bios".into()],
    };
    assert!(firmware.start_update(&shelf(), &bad_part).await.is_err());
    assert!(psm.calls().is_empty());

    let request = FirmwareRequest {
        target_version: Some("1.2.3".into()),
        sub_targets: vec!["PSU".into(), "pmc".into()],
    };
    firmware.start_update(&shelf(), &request).await.unwrap();
    assert_eq!(psm.update_of(MAC).unwrap().version, "1.2.3");
    let sent = psm.upgrades();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].pmc_mac_address, MAC);
    let parts: Vec<_> = sent[0]
        .components
        .iter()
        .map(|c| (c.component, c.upgrade_to.clone().unwrap().version))
        .collect();
    assert_eq!(parts, [(1, "1.2.3".to_string()), (0, "1.2.3".to_string())]);

    let mut states = Vec::new();
    for _ in 0..4 {
        states.push(firmware.update_status(&shelf()).await.unwrap().state);
    }
    use FirmwareState::*;
    assert_eq!(states, [Queued, Verifying, Completed, Completed]);

    let default_part = FirmwareRequest {
        target_version: Some("fail".into()),
        sub_targets: vec![],
    };
    firmware
        .start_update(&shelf(), &default_part)
        .await
        .unwrap();
    assert_eq!(
        psm.upgrades()[1].components[0].component,
        0,
        "PMC by default"
    );
    let mut last = firmware.update_status(&shelf()).await.unwrap();
    while last.state != Failed {
        assert_ne!(last.state, Completed);
        last = firmware.update_status(&shelf()).await.unwrap();
    }
    assert!(last.error.unwrap().contains("rejected"));
}

#[tokio::test]
async fn psm_registration_carries_mac_ip_and_vendor() {
    let psm = PsmServer::start().await;
    let registration = psm_managers(&psm.url, Duration::from_secs(5))
        .registration
        .unwrap();
    let mut delta = device(ComponentType::PowerShelf, "PS-9", Some("0C:42:A1:00:00:09"));
    delta.manufacturer = "Delta".into();
    delta.bmc_ip = None;

    registration.register(&shelf()).await.unwrap();
    registration.register(&delta).await.unwrap();
    assert!(psm.is_registered(MAC) && psm.is_registered("0c:42:a1:00:00:09"));
    let sent: Vec<_> = psm
        .registrations()
        .into_iter()
        .map(|r| {
            (
                r.pmc_mac_address,
                r.pmc_ip_address,
                r.pmc_vendor,
                r.pmc_credentials.is_some(),
            )
        })
        .collect();
    assert_eq!(
        sent,
        [
            (MAC.to_string(), "10.0.0.7".to_string(), 1, false),
            // Delta shelves carry the newer vendor value PMC_TYPE_DELTA = 2.
            ("0c:42:a1:00:00:09".to_string(), String::new(), 2, false),
        ]
    );

    psm.fail_shelf(MAC);
    let err = registration.register(&shelf()).await.unwrap_err();
    assert!(
        matches!(&err, DeviceError::Rejected(t) if t.contains(MAC)),
        "{err:?}"
    );
    psm.heal_shelf(MAC);
    registration.register(&shelf()).await.unwrap();
}

#[tokio::test]
async fn the_psm_client_reaches_the_rpcs_flow_does_not_use_for_devices() {
    let psm = PsmServer::start().await;
    let client = PsmClient::new(&psm.url, Duration::from_secs(5), &Default::default()).unwrap();
    client.set_dry_run(true).await.unwrap();
    assert!(psm.dry_run());
    let available = client.list_available_firmware(vec![]).await.unwrap();
    assert!(available.upgrades.is_empty());
    let rpcs: Vec<_> = psm.calls().iter().map(|c| c.rpc).collect();
    assert_eq!(rpcs, ["SetDryRun", "ListAvailableFirmware"]);
    // `host:port` without a scheme is plain HTTP/2, as the original's PSM_API_URL.
    let bare = PsmClient::new(
        psm.url.trim_start_matches("http://"),
        Duration::from_secs(5),
        &Default::default(),
    )
    .unwrap();
    assert_eq!(bare.url(), psm.url);
    bare.set_dry_run(false).await.unwrap();
    assert!(!psm.dry_run());
}

/// An editor who sets a shelf's PMC address to one of their own gets no registration: PSM
/// would log in there with the PMC login Flow sends along.
#[tokio::test]
async fn a_pmc_outside_the_management_network_is_not_registered() {
    let psm = PsmServer::start().await;
    let registration = psm_managers(&psm.url, Duration::from_secs(5))
        .registration
        .unwrap();
    for ip in ["192.168.66.6", "169.254.169.254", "0.0.0.0"] {
        let mut shelf = shelf();
        shelf.bmc_ip = Some(ip.into());
        let err = registration.register(&shelf).await.unwrap_err();
        assert!(
            matches!(&err, DeviceError::Rejected(t)
                if t.contains("not registered") && t.contains("FLOW_BMC_ALLOWED_NETWORKS")),
            "{ip}: {err:?}"
        );
    }
    assert!(psm.registrations().is_empty());
}
