//! A TLS-terminating gRPC proxy in front of the shared Temporal dev server (which serves plain
//! HTTP/2 only): it presents a test CA's certificate, can demand a client certificate from the
//! same CA, forwards every call unchanged and remembers each call's `authorization` metadata.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

use crate::support::redfish::Leaf;

/// What the proxy saw.
#[derive(Default)]
pub struct Seen {
    /// The `authorization` value of every call (`""` when absent).
    pub authorizations: Mutex<Vec<String>>,
    /// Handshakes that failed (a client that refused the certificate, or sent none).
    pub refused: AtomicUsize,
}

/// A running proxy; stops when dropped.
pub struct TlsProxy {
    pub addr: SocketAddr,
    pub seen: Arc<Seen>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TlsProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn server_config(leaf: &Leaf, client_ca: Option<&str>) -> rustls::ServerConfig {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = match client_ca {
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            roots
                .add(CertificateDer::from_pem_slice(ca.as_bytes()).unwrap())
                .unwrap();
            let verifier =
                rustls::server::WebPkiClientVerifier::builder_with_provider(roots.into(), provider)
                    .build()
                    .unwrap();
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let certs = CertificateDer::pem_slice_iter(leaf.cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_slice(leaf.key_pem.as_bytes()).unwrap();
    let mut config = builder.with_single_cert(certs, key).unwrap();
    config.alpn_protocols = vec![b"h2".to_vec()];
    config
}

impl TlsProxy {
    /// Listens on `ip` (a free port), presenting `leaf`; with `client_ca`, only clients with a
    /// certificate from that CA get through.
    pub async fn start(ip: &str, leaf: &Leaf, client_ca: Option<&str>, upstream: &str) -> Self {
        let listener = TcpListener::bind((ip, 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let acceptor = TlsAcceptor::from(Arc::new(server_config(leaf, client_ca)));
        let upstream: SocketAddr = upstream.parse().unwrap();
        let seen = Arc::new(Seen::default());
        let task = tokio::spawn(accept_loop(listener, acceptor, upstream, seen.clone()));
        Self { addr, seen, task }
    }

    /// Every call's `authorization` value so far.
    pub fn authorizations(&self) -> Vec<String> {
        self.seen.authorizations.lock().unwrap().clone()
    }
}

async fn accept_loop(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    upstream: SocketAddr,
    seen: Arc<Seen>,
) {
    while let Ok((tcp, _)) = listener.accept().await {
        let acceptor = acceptor.clone();
        let seen = seen.clone();
        tokio::spawn(async move {
            match acceptor.accept(tcp).await {
                Ok(tls) => relay(tls, upstream, seen).await,
                Err(_) => {
                    seen.refused.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
    }
}

/// One client connection: its calls go out on one plain HTTP/2 connection to the upstream.
async fn relay(
    tls: tokio_rustls::server::TlsStream<TcpStream>,
    upstream: SocketAddr,
    seen: Arc<Seen>,
) {
    let Ok(tcp) = TcpStream::connect(upstream).await else {
        return;
    };
    let Ok((sender, connection)) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp)).await
    else {
        return;
    };
    tokio::spawn(connection);
    let service = service_fn(move |request: Request<Incoming>| {
        let authorization = request
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        seen.authorizations.lock().unwrap().push(authorization);
        let mut sender = sender.clone();
        async move {
            let answer: Result<Response<Incoming>, hyper::Error> =
                sender.send_request(request).await;
            answer
        }
    });
    let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
        .serve_connection(TokioIo::new(tls), service)
        .await;
}
