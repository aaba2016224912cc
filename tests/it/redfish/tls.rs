//! Verified HTTPS to a `sushy-emulator` BMC whose certificate a test CA signed: with
//! `FLOW_REDFISH_CA_FILE` it passes; without it the call fails saying why; with
//! `FLOW_REDFISH_INSECURE` it passes unverified.

use flow::components::{DeviceError, DevicePower};
use flow::domain::ComponentType;

use super::{Setup, tray};
use crate::support::redfish::{Pki, Sushy, System, TempDir, free_port, next_bmc_ip};

#[tokio::test]
async fn verified_tls_passes_with_the_ca_file_and_fails_saying_why_without_it() {
    let pki = Pki::new();
    let (ip, port) = (next_bmc_ip(), free_port());
    let leaf = pki.server(&[&ip]);
    let system = System {
        name: "tls".into(),
        power: "On",
        mac: "02:00:00:00:dd:01".into(),
        bios_version: "1.0.0".into(),
    };
    let _bmc = Sushy::start(&ip, port, &system, Some(&leaf)).await;
    let dir = TempDir::new();
    let device = tray(ComponentType::Compute, Some(&ip), "x");

    let mut verified = Setup::http(port);
    verified.scheme = "https";
    verified.ca_file = Some(dir.write("ca.pem", &pki.ca_pem));
    let status = verified.managers().status.unwrap();
    assert_eq!(status.power_status(&device).await, Ok(DevicePower::On));

    let mut unverified = Setup::http(port);
    unverified.scheme = "https";
    let err = unverified
        .managers()
        .status
        .unwrap()
        .power_status(&device)
        .await
        .unwrap_err();
    let DeviceError::Unreachable(text) = &err else {
        panic!("{err:?}");
    };
    assert!(
        text.contains(&ip) && text.to_ascii_lowercase().contains("certificate"),
        "{text}"
    );

    let mut insecure = Setup::http(port);
    insecure.scheme = "https";
    insecure.insecure = true;
    let status = insecure.managers().status.unwrap();
    assert_eq!(status.power_status(&device).await, Ok(DevicePower::On));

    let mut missing = Setup::http(port);
    missing.ca_file = Some(dir.0.join("nope.pem"));
    let err = missing.redfish_setup().manager().unwrap_err();
    assert!(err.contains("FLOW_REDFISH_CA_FILE"), "{err}");
}
