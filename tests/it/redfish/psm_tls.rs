//! PSM over mutual TLS: the in-test tonic PSM server requires a client certificate from the
//! test CA; Flow presents one from `FLOW_PSM_CLIENT_CERT_FILE` / `FLOW_PSM_CLIENT_KEY_FILE`
//! and verifies the server with `FLOW_PSM_CA_FILE`.

use std::time::Duration;

use flow::components::providers::{PsmManager, PsmSettings, PsmTls};
use flow::components::{DeviceError, DevicePower, PowerControl, PowerOp};
use tonic::transport::{Certificate, Identity, ServerTlsConfig};

use crate::components::shelf;
use crate::support::psm::PsmServer;
use crate::support::redfish::{Pki, TempDir};

#[tokio::test]
async fn psm_is_reached_over_mutual_tls_and_refused_without_a_client_certificate() {
    let pki = Pki::new();
    let server = pki.server(&["127.0.0.1"]);
    let tls = ServerTlsConfig::new()
        .identity(Identity::from_pem(&server.cert_pem, &server.key_pem))
        .client_ca_root(Certificate::from_pem(&pki.ca_pem));
    let psm = PsmServer::start_tls(tls).await;
    psm.add_shelf(crate::components::MAC);
    let dir = TempDir::new();
    let client = pki.client("flow");
    let full = PsmTls {
        ca_file: Some(dir.write("ca.pem", &pki.ca_pem)),
        client_cert_file: Some(dir.write("client.pem", &client.cert_pem)),
        client_key_file: Some(dir.write("client.key", &client.key_pem)),
    };
    let settings = |tls: PsmTls| PsmSettings {
        url: psm.url.clone(),
        timeout: Duration::from_secs(5),
        tls,
        allowed_networks: crate::support::bmc_networks(),
        ..Default::default()
    };

    let manager = PsmManager::new(&settings(full.clone())).unwrap();
    manager.set_power(&shelf(), PowerOp::On).await.unwrap();
    assert_eq!(
        psm.shelf_power(crate::components::MAC),
        Some(DevicePower::On)
    );

    let no_identity = PsmTls {
        client_cert_file: None,
        client_key_file: None,
        ..full.clone()
    };
    let err = PsmManager::new(&settings(no_identity))
        .unwrap()
        .set_power(&shelf(), PowerOp::Off)
        .await
        .unwrap_err();
    assert!(matches!(err, DeviceError::Unreachable(_)), "{err:?}");
    assert_eq!(
        psm.shelf_power(crate::components::MAC),
        Some(DevicePower::On)
    );

    let err = PsmManager::new(&settings(PsmTls::default())).unwrap_err();
    assert!(err.contains("FLOW_PSM_CA_FILE"), "{err}");
    let unreadable = PsmTls {
        client_key_file: Some(dir.0.join("missing.key")),
        ..full
    };
    let err = PsmManager::new(&settings(unreadable)).unwrap_err();
    assert!(err.contains("FLOW_PSM_CLIENT_KEY_FILE"), "{err}");
}

#[tokio::test]
async fn psm_registrations_carry_the_pmc_login_from_the_credentials_source() {
    use flow::clients::redfish::{Credentials, Login};
    use flow::components::Registration;
    let psm = PsmServer::start().await;
    let dir = TempDir::new();
    let file = dir.write(
        "credentials.toml",
        &format!(
            "[manufacturer.liteon]\nusername = \"pmc-admin\"\npassword = \"pmc-pw\"\n\
             [bmc.\"{}\"]\nusername = \"this-shelf\"\npassword = \"shelf-pw\"\n",
            crate::components::MAC.to_ascii_uppercase()
        ),
    );
    let default = Login {
        username: "root".into(),
        password: "default-pw".into(),
    };
    let logins = std::sync::Arc::new(Credentials::new(Some(default), Some(file)).unwrap());
    let settings = PsmSettings {
        url: psm.url.clone(),
        timeout: Duration::from_secs(5),
        logins: Some(logins),
        allowed_networks: crate::support::bmc_networks(),
        ..Default::default()
    };
    let manager = PsmManager::new(&settings).unwrap();
    manager.register(&shelf()).await.unwrap();
    let other = crate::components::device(
        flow::domain::ComponentType::PowerShelf,
        "PS-9",
        Some("0c:42:a1:00:00:09"),
    );
    manager.register(&other).await.unwrap();
    let logins: Vec<(String, String)> = psm
        .registrations()
        .iter()
        .map(|r| {
            let c = r.pmc_credentials.clone().unwrap_or_default();
            (c.username, c.password)
        })
        .collect();
    assert_eq!(
        logins,
        [
            ("this-shelf".to_string(), "shelf-pw".to_string()),
            ("pmc-admin".to_string(), "pmc-pw".to_string())
        ],
        "the shelf's own MAC first, then its manufacturer (LITEON)"
    );
}
