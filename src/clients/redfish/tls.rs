//! Per-BMC certificate checks from the credentials file, for BMCs whose certificate names no IP
//! (OpenBMC's default names a hostname): `pin_sha256` accepts exactly the certificate with that
//! SHA-256 fingerprint; `server_name` verifies the chain against `FLOW_REDFISH_CA_FILE` for that
//! name instead of the address. Either way the handshake's signature is still checked, so only
//! the holder of the certificate's key passes.

use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, OtherError, SignatureScheme};

/// How one BMC's certificate is checked when the default (CA + IP) does not fit.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CertCheck {
    /// The leaf's SHA-256, 64 lower-case hex digits.
    Pin(String),
    /// Verify the chain for this DNS name.
    Name(String),
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn other(why: String) -> rustls::Error {
    rustls::Error::InvalidCertificate(CertificateError::Other(OtherError(Arc::new(
        std::io::Error::other(why),
    ))))
}

/// Lower-case hex SHA-256 of a certificate's DER.
pub fn fingerprint(der: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, der)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[derive(Debug)]
struct Pinned {
    pin: String,
    provider: Arc<CryptoProvider>,
}

#[derive(Debug)]
struct Named {
    name: ServerName<'static>,
    inner: Arc<WebPkiServerVerifier>,
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if fingerprint(end_entity.as_ref()) == self.pin {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(other(
                "the certificate does not match the BMC's pin_sha256".into(),
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        verify_tls12_signature(message, cert, dss, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        verify_tls13_signature(message, cert, dss, algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

impl ServerCertVerifier for Named {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        // The configured name stands in for the IP the connection was made to.
        self.inner
            .verify_server_cert(end_entity, intermediates, &self.name, ocsp, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// The TLS configuration for one check; `ca_pem` is `FLOW_REDFISH_CA_FILE`'s content, which
/// a `server_name` needs.
pub fn client_config(
    check: &CertCheck,
    ca_pem: Option<&[u8]>,
) -> Result<rustls::ClientConfig, String> {
    let provider = provider();
    let verifier: Arc<dyn ServerCertVerifier> = match check {
        CertCheck::Pin(pin) => Arc::new(Pinned {
            pin: pin.clone(),
            provider: provider.clone(),
        }),
        CertCheck::Name(name) => {
            let pem = ca_pem.ok_or("server_name needs FLOW_REDFISH_CA_FILE to verify against")?;
            let mut roots = rustls::RootCertStore::empty();
            for cert in CertificateDer::pem_slice_iter(pem) {
                let cert = cert.map_err(|e| format!("FLOW_REDFISH_CA_FILE: {e}"))?;
                roots
                    .add(cert)
                    .map_err(|e| format!("FLOW_REDFISH_CA_FILE: {e}"))?;
            }
            let inner =
                WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                    .build()
                    .map_err(|e| format!("FLOW_REDFISH_CA_FILE: {e}"))?;
            let name = ServerName::try_from(name.clone())
                .map_err(|_| format!("server_name {name:?} is not a DNS name"))?;
            Arc::new(Named { name, inner })
        }
    };
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth())
}
