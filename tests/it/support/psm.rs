//! A fake Powershelf Manager: a real tonic server on 127.0.0.1 speaking the PSM proto, with
//! per-shelf state, a log of received calls, and switches for failing shelves and stalling.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

mod service;

use flow::clients::psm::pb;
use flow::clients::psm::pb::powershelf_manager_server::PowershelfManagerServer;
use flow::components::DevicePower;
use tokio::sync::{oneshot, watch};

/// PSUs a shelf gets when it registers.
pub const PSUS_PER_SHELF: usize = 6;

/// One RPC the fake received, logged when it arrived (before any stall).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PsmCall {
    pub rpc: &'static str,
    /// The PMC MACs the request named, lower-case, in request order.
    pub macs: Vec<String>,
    pub at: Instant,
}

/// A firmware update the fake is running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeUpdate {
    pub components: Vec<pb::PowershelfComponent>,
    pub version: String,
    /// Status queries answered since the update started.
    pub polls: u32,
}

#[derive(Debug, Clone, Default)]
struct Shelf {
    psus: Vec<bool>,
    update: Option<FakeUpdate>,
    /// PMC firmware `GetPowershelves` reports (empty = not reported).
    firmware: String,
}

#[derive(Debug, Default)]
struct State {
    shelves: BTreeMap<String, Shelf>,
    calls: Vec<PsmCall>,
    failing: BTreeSet<String>,
    registrations: Vec<pb::RegisterPowershelfRequest>,
    upgrades: Vec<pb::UpdatePowershelfFirmwareRequest>,
    dry_run: bool,
    /// The W3C `traceparent` of every call that carried one, oldest first.
    traceparents: Vec<String>,
}

/// A running fake PSM; it stops when dropped.
pub struct PsmServer {
    /// `http://127.0.0.1:<port>`, for `FLOW_PSM_URL` / `PsmSettings::url`.
    pub url: String,
    state: Arc<Mutex<State>>,
    stall: watch::Sender<bool>,
    shutdown: Option<oneshot::Sender<()>>,
}

impl PsmServer {
    /// Starts a fake with no shelves on a free port.
    pub async fn start() -> Self {
        Self::start_with(None).await
    }

    /// Starts a fake that speaks TLS only (mutual TLS when the config asks for client certs),
    /// at `https://127.0.0.1:<port>`.
    pub async fn start_tls(tls: tonic::transport::ServerTlsConfig) -> Self {
        Self::start_with(Some(tls)).await
    }

    async fn start_with(tls: Option<tonic::transport::ServerTlsConfig>) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let scheme = if tls.is_some() { "https" } else { "http" };
        let url = format!("{scheme}://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State::default()));
        let (stall, stalled) = watch::channel(false);
        let (shutdown, stop) = oneshot::channel::<()>();
        let fake = service::Fake::new(state.clone(), stalled);
        let incoming = tonic::transport::server::TcpIncoming::from(listener);
        let seen = state.clone();
        let record_trace = move |request: tonic::Request<()>| {
            if let Some(parent) = request.metadata().get("traceparent")
                && let Ok(parent) = parent.to_str()
            {
                seen.lock().unwrap().traceparents.push(parent.to_string());
            }
            Ok(request)
        };
        let mut builder = tonic::transport::Server::builder();
        if let Some(tls) = tls {
            builder = builder.tls_config(tls).unwrap();
        }
        tokio::spawn(builder.serve_with_incoming_shutdown(
            PowershelfManagerServer::with_interceptor(fake, record_trace),
            incoming,
            async {
                let _ = stop.await;
            },
        ));
        Self {
            url,
            state,
            stall,
            shutdown: Some(shutdown),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }

    /// Registers a shelf directly (not logged), all PSUs off.
    pub fn add_shelf(&self, mac: &str) {
        self.lock().shelves.insert(
            mac.to_ascii_lowercase(),
            Shelf {
                psus: vec![false; PSUS_PER_SHELF],
                ..Shelf::default()
            },
        );
    }

    /// Sets the PMC firmware version a registered shelf reports.
    pub fn set_firmware(&self, mac: &str, version: &str) {
        self.lock()
            .shelves
            .get_mut(&mac.to_ascii_lowercase())
            .expect("shelf is registered")
            .firmware = version.to_string();
    }

    /// Sets each PSU's power of a registered shelf (for mixed states).
    pub fn set_psus(&self, mac: &str, psus: Vec<bool>) {
        self.lock()
            .shelves
            .get_mut(&mac.to_ascii_lowercase())
            .expect("shelf is registered")
            .psus = psus;
    }

    /// Makes every per-shelf answer for this MAC `INTERNAL_ERROR`.
    pub fn fail_shelf(&self, mac: &str) {
        self.lock().failing.insert(mac.to_ascii_lowercase());
    }

    /// Undoes [`fail_shelf`](Self::fail_shelf).
    pub fn heal_shelf(&self, mac: &str) {
        self.lock().failing.remove(&mac.to_ascii_lowercase());
    }

    /// Holds every call after logging it, until [`resume`](Self::resume) (or drop).
    pub fn stall(&self) {
        self.stall.send_replace(true);
    }

    /// Lets stalled and new calls through.
    pub fn resume(&self) {
        self.stall.send_replace(false);
    }

    /// The `traceparent` of every call that carried one, oldest first.
    pub fn traceparents(&self) -> Vec<String> {
        self.lock().traceparents.clone()
    }

    /// Every call received, oldest first.
    pub fn calls(&self) -> Vec<PsmCall> {
        self.lock().calls.clone()
    }

    /// Power of a shelf as PSM would report it (`None` if not registered).
    pub fn shelf_power(&self, mac: &str) -> Option<DevicePower> {
        self.lock().shelves.get(&mac.to_ascii_lowercase()).map(|s| {
            match s.psus.iter().filter(|on| **on).count() {
                0 => DevicePower::Off,
                n if n == s.psus.len() => DevicePower::On,
                _ => DevicePower::Unknown,
            }
        })
    }

    /// Whether a shelf is registered.
    pub fn is_registered(&self, mac: &str) -> bool {
        self.lock().shelves.contains_key(&mac.to_ascii_lowercase())
    }

    /// The firmware update running on a shelf, if any.
    pub fn update_of(&self, mac: &str) -> Option<FakeUpdate> {
        self.lock()
            .shelves
            .get(&mac.to_ascii_lowercase())
            .and_then(|s| s.update.clone())
    }

    /// Every registration request received, as sent.
    pub fn registrations(&self) -> Vec<pb::RegisterPowershelfRequest> {
        self.lock().registrations.clone()
    }

    /// Every per-shelf firmware upgrade received, as sent.
    pub fn upgrades(&self) -> Vec<pb::UpdatePowershelfFirmwareRequest> {
        self.lock().upgrades.clone()
    }

    /// Whether a client switched dry-run on.
    pub fn dry_run(&self) -> bool {
        self.lock().dry_run
    }
}

impl Drop for PsmServer {
    fn drop(&mut self) {
        self.resume();
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}

/// An address where nothing listens (a port just freed), for "PSM is down" tests.
pub async fn closed_url() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    format!("http://{}", listener.local_addr().unwrap())
}
