//! Verified HTTPS to a `sushy-emulator` BMC whose certificate a test CA signed: with
//! `FLOW_REDFISH_CA_FILE` it passes; without it the call fails saying why; with
//! `FLOW_REDFISH_INSECURE` it passes unverified; a hostname-only certificate passes by its
//! credentials-file `pin_sha256` or `server_name`, and a wrong pin is refused.

use flow::components::{DeviceError, DevicePower};
use flow::domain::ComponentType;

use super::{Setup, tray};
use crate::support::redfish::{
    PASSWORD, Pki, Sushy, System, TempDir, USER, free_port, next_bmc_ip,
};

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

/// A BMC whose certificate names a hostname only (OpenBMC's default): verified by a pin of its
/// leaf certificate, or for its `server_name` against the CA, never by turning checks off.
#[tokio::test]
async fn a_hostname_only_certificate_verifies_by_pin_or_server_name() {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;

    let pki = Pki::new();
    let (ip, port) = (next_bmc_ip(), free_port());
    let leaf = pki.server(&["bmc-7.mgmt.example"]);
    let system = System {
        name: "pinned".into(),
        power: "On",
        mac: "02:00:00:00:dd:02".into(),
        bios_version: "1.0.0".into(),
    };
    let _bmc = Sushy::start(&ip, port, &system, Some(&leaf)).await;
    let der = CertificateDer::from_pem_slice(leaf.cert_pem.as_bytes()).unwrap();
    let pin = flow::clients::redfish::fingerprint(der.as_ref());
    let dir = TempDir::new();
    let ca = dir.write("ca.pem", &pki.ca_pem);
    let device = tray(ComponentType::Compute, Some(&ip), "x");
    let entry = |extra: &str| {
        format!(
            "[bmc.\"{}\"]\nusername = \"{USER}\"\npassword = \"{PASSWORD}\"\n{extra}\n",
            device.bmc_mac.as_deref().unwrap()
        )
    };
    let entry_text = |file: &str| match file {
        "pin.toml" => entry(&format!("pin_sha256 = \"{pin}\"")),
        "colons.toml" => entry(&format!(
            "pin_sha256 = \"{}\"",
            pin.as_bytes()
                .chunks(2)
                .map(|c| String::from_utf8_lossy(c).to_ascii_uppercase())
                .collect::<Vec<_>>()
                .join(":")
        )),
        "wrong.toml" => entry(&format!("pin_sha256 = \"{}\"", "ab".repeat(32))),
        "name.toml" => entry("server_name = \"bmc-7.mgmt.example\""),
        _ => entry(""),
    };
    let setup = |file: &str, ca: Option<&std::path::PathBuf>| {
        let mut s = Setup::http(port);
        s.scheme = "https";
        s.ca_file = ca.cloned();
        s.credentials_file = Some(dir.write(file, &entry_text(file)));
        s
    };
    let device = &device;
    let power = |s: Setup| async move { s.managers().status.unwrap().power_status(device).await };

    assert_eq!(power(setup("pin.toml", None)).await, Ok(DevicePower::On));
    assert_eq!(power(setup("colons.toml", None)).await, Ok(DevicePower::On));
    let err = power(setup("wrong.toml", Some(&ca))).await.unwrap_err();
    assert!(
        matches!(&err, DeviceError::Unreachable(m) if m.contains("pin_sha256")),
        "{err:?}"
    );
    assert_eq!(
        power(setup("name.toml", Some(&ca))).await,
        Ok(DevicePower::On)
    );
    // The CA alone checks the certificate against the IP, which it does not name.
    let err = power(setup("plain.toml", Some(&ca))).await.unwrap_err();
    assert!(
        err.to_string().to_ascii_lowercase().contains("certificate"),
        "{err}"
    );
}
