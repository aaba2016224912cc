//! The HTTP server's accept loop, bounded: at most `FLOW_MAX_CONNECTIONS` connections are open
//! at once (the next client waits in the listen backlog until one closes), and a connection that
//! has not sent a request's headers within `FLOW_HEADER_READ_TIMEOUT_SECS` is closed, so slow or
//! idle clients cannot pile up. On shutdown it stops accepting, asks every connection to finish
//! its requests and close, and returns once all have.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tower::ServiceExt;

/// Wait before accepting again after an accept error (out of file descriptors, say).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// The bounds of [`serve`].
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_connections: usize,
    pub header_read_timeout: Duration,
}

/// Serves `router` on `listener` until `shutdown` resolves and every connection has closed.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    tokio::pin!(shutdown);
    loop {
        // A slot first, then the connection: at the cap, clients queue in the kernel.
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot,
            () = &mut shutdown => break,
        };
        let Ok(slot) = slot else { break };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let builder = builder.clone();
        let router = router.clone();
        let mut stop = stop_rx.clone();
        tokio::spawn(async move {
            let _slot = slot;
            // hyper's header timer starts once it knows the protocol, which takes a first
            // byte: a client that sends nothing at all is bounded here.
            let mut byte = [0_u8; 1];
            let first_byte = tokio::select! {
                peeked = tokio::time::timeout(limits.header_read_timeout, stream.peek(&mut byte)) => {
                    matches!(peeked, Ok(Ok(n)) if n > 0)
                }
                _ = stop.wait_for(|s| *s) => false,
            };
            if first_byte {
                connection(&builder, stream, peer, router, &mut stop).await;
            }
        });
    }
    drop(listener);
    stop_tx.send_replace(true);
    // Every slot back means every connection closed.
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    let _ = slots.acquire_many(all).await;
}

/// One connection, until the client closes it or shutdown finishes its requests.
async fn connection(
    builder: &auto::Builder<TokioExecutor>,
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    router: Router,
    stop: &mut watch::Receiver<bool>,
) {
    // What `into_make_service_with_connect_info` gives handlers: the peer address.
    let service = router.map_request(move |mut request: axum::http::Request<axum::body::Body>| {
        request.extensions_mut().insert(ConnectInfo(peer));
        request
    });
    let service = TowerToHyperService::new(service.map_request(
        |request: axum::http::Request<hyper::body::Incoming>| request.map(axum::body::Body::new),
    ));
    let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
    tokio::pin!(conn);
    let stopping = tokio::select! {
        result = conn.as_mut() => {
            if let Err(e) = result {
                tracing::debug!(error = %e, %peer, "connection ended with an error");
            }
            false
        }
        _ = stop.wait_for(|s| *s) => true,
    };
    if stopping {
        conn.as_mut().graceful_shutdown();
        let _ = conn.await;
    }
}
