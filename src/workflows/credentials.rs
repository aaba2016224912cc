//! How Flow presents itself to Temporal: TLS (the CA that verifies the frontend, a client
//! certificate for mutual TLS, the name to check) and an API key, from the `FLOW_TEMPORAL_*`
//! settings. The client and the worker share one connection, so both carry the same ones.

use std::path::Path;
use std::time::Duration;

use temporalio_client::{ClientTlsOptions, ConnectionOptions, TlsOptions, Url};

use crate::config::Temporal;
use crate::error::{Error, Result};

/// The options of one connection to `settings.address`, files read now (a file that cannot
/// be read names its setting).
pub fn connection_options(settings: &Temporal, timeout: Duration) -> Result<ConnectionOptions> {
    let url = Url::parse(&settings.address)
        .map_err(|e| Error::invalid("FLOW_TEMPORAL_ADDRESS", e.to_string()))?;
    let tls = if url.scheme() == "https" {
        Some(tls_options(settings)?)
    } else {
        None
    };
    Ok(ConnectionOptions::new(url)
        .identity(format!("flow-{}", std::process::id()))
        .connect_timeout(timeout)
        .maybe_tls_options(tls)
        .maybe_api_key(settings.api_key.as_ref().map(|k| k.expose().to_string()))
        .build())
}

fn tls_options(settings: &Temporal) -> Result<TlsOptions> {
    let ca = settings
        .tls_ca_file
        .as_deref()
        .map(|p| read("FLOW_TEMPORAL_TLS_CA_FILE", p))
        .transpose()?;
    let client = match (&settings.tls_cert_file, &settings.tls_key_file) {
        (Some(cert), Some(key)) => Some(
            ClientTlsOptions::builder()
                .client_cert(read("FLOW_TEMPORAL_TLS_CERT_FILE", cert)?)
                .client_private_key(read("FLOW_TEMPORAL_TLS_KEY_FILE", key)?)
                .build(),
        ),
        (None, None) => None,
        _ => {
            return Err(Error::invalid(
                "FLOW_TEMPORAL_TLS_CERT_FILE",
                "FLOW_TEMPORAL_TLS_CERT_FILE and FLOW_TEMPORAL_TLS_KEY_FILE go together",
            ));
        }
    };
    Ok(TlsOptions::builder()
        .maybe_server_root_ca_cert(ca)
        .maybe_domain(settings.tls_server_name.clone())
        .maybe_client_tls_options(client)
        .build())
}

fn read(setting: &'static str, path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path)
        .map_err(|e| Error::invalid(setting, format!("cannot read {}: {e}", path.display())))
}

/// A connection failure as the operator should read it: a certificate the frontend's does not
/// match points at the settings that decide which one is expected.
pub fn explain(settings: &Temporal, failure: String) -> String {
    let lower = failure.to_ascii_lowercase();
    let about_tls = ["certificate", "tls", "handshake", "unknownissuer"]
        .iter()
        .any(|word| lower.contains(word));
    if settings.address.starts_with("https://") && about_tls {
        format!(
            "TLS with {} failed (check FLOW_TEMPORAL_TLS_CA_FILE and \
             FLOW_TEMPORAL_TLS_SERVER_NAME): {failure}",
            settings.address
        )
    } else {
        failure
    }
}
