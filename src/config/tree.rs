//! The configuration's sections. Types only: what each setting's variable, default and checks
//! are is written once in [`super::settings`], and the loader builds this tree from there.
//! Durations are [`Duration`]s here; their variables keep their `_SECS`/`_MS` units.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use reqwest::Url;
use serde::{Deserialize, Serialize};

use super::units::{millis, secs};
use super::{Managers, Secret};

/// The whole configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub server: Server,
    pub log: Log,
    pub database: Database,
    pub temporal: Temporal,
    pub schedules: Schedules,
    pub components: Components,
    pub psm: Psm,
    pub sim: Sim,
    pub drift: Drift,
    pub redfish: Redfish,
    pub auth: Auth,
    pub metrics: Metrics,
    pub audit: Audit,
    pub limits: Limits,
}

/// The HTTP server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Server {
    pub listen: SocketAddr,
    pub max_body_bytes: usize,
    #[serde(with = "secs")]
    pub request_timeout: Duration,
    /// Debug logging and permissive CORS, for local development.
    pub dev_mode: bool,
    /// After SIGTERM: how long in-flight requests and event streams get before the process exits.
    #[serde(with = "secs")]
    pub shutdown_grace: Duration,
    /// Addresses or CIDRs of reverse proxies whose `X-Forwarded-For` / `Forwarded` header
    /// names the client; from anyone else those headers are ignored.
    pub trusted_proxies: Vec<String>,
    /// Open task and rollout event streams allowed in all (a tenth of it per identity).
    pub max_event_streams: usize,
    /// A connection that has not sent a request's headers within this is closed.
    #[serde(with = "secs")]
    pub header_read_timeout: Duration,
    /// Open connections allowed at once; further clients wait in the listen backlog.
    pub max_connections: usize,
    /// For `scripts/bench` only: middleware left out of the stack to measure what it costs
    /// (`metrics`, `trace`, `request_id`); empty in production.
    pub bench_skip_middleware: Vec<String>,
}

/// Logging.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Log {
    /// `tracing` filter directives, e.g. `info,flow=debug`.
    pub filter: String,
    /// `text` or `json`.
    pub format: String,
}

/// The database.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Database {
    /// May hold a password.
    pub url: Secret,
    pub migrate_on_start: bool,
    /// How long a request waits for a database connection before answering 503.
    #[serde(with = "secs")]
    pub acquire_timeout: Duration,
    /// Whether concurrent lookups by serial share one statement (PostgreSQL); off, each goes
    /// alone (the benchmark's comparison).
    pub lookup_batching: bool,
}

/// The Temporal frontend.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Temporal {
    /// An `http(s)://` URL, or `none` for an inventory-only process.
    pub address: String,
    pub namespace: String,
    pub task_queue: String,
    /// PEM CA bundle that verifies an `https://` frontend (unset: the system's roots).
    pub tls_ca_file: Option<PathBuf>,
    /// Flow's client certificate and key for mutual TLS; set both or neither.
    pub tls_cert_file: Option<PathBuf>,
    pub tls_key_file: Option<PathBuf>,
    /// The name the frontend's certificate is checked against, when not the address's host.
    pub tls_server_name: Option<String>,
    /// Sent as `Authorization: Bearer` on every call (Temporal Cloud, an authorizer).
    pub api_key: Option<Secret>,
}

/// Task schedules.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Schedules {
    /// How often each process's schedule dispatcher looks for due schedules.
    #[serde(with = "millis")]
    pub tick: Duration,
}

/// Which provider manages each component type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Components {
    /// Provider per component type; empty = none.
    pub managers: Managers,
    /// The management network: CIDRs (or addresses) BMC and PMC addresses must be inside, at
    /// write time and before any login is sent; empty = unset, which `flow serve` and `flow
    /// worker` refuse when a `redfish` or `psm` manager is configured.
    pub bmc_allowed_networks: Vec<String>,
    /// Deadline of one manager's inventory report (validation and drift sync).
    #[serde(with = "secs")]
    pub observe_timeout: Duration,
}

/// The power-shelf manager.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Psm {
    /// gRPC endpoint; a bare `host:port` means plain HTTP/2.
    pub url: String,
    /// Deadline of every PSM call.
    #[serde(with = "secs")]
    pub timeout: Duration,
    /// PEM CA bundle that verifies an `https://` PSM.
    pub ca_file: Option<PathBuf>,
    /// PEM client certificate (and its key, below) Flow presents to PSM: mutual TLS.
    pub client_cert_file: Option<PathBuf>,
    pub client_key_file: Option<PathBuf>,
}

/// Simulated devices (the `sim` provider).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sim {
    /// Delay of every call.
    #[serde(with = "millis")]
    pub latency: Duration,
    /// Simulated time a firmware update takes.
    #[serde(with = "secs")]
    pub firmware: Duration,
    /// Serial numbers whose every call is rejected.
    pub fail_serials: Vec<String>,
    /// Serial numbers that answer `slow` later.
    pub slow_serials: Vec<String>,
    #[serde(with = "millis")]
    pub slow: Duration,
    /// Share of calls (0..=1) that fail as unreachable, chosen reproducibly.
    pub failure_rate: f64,
    /// The firmware recipe bundle (index from 0) whose install fails on every device.
    pub fail_bundle: Option<String>,
}

/// The drift sync.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Drift {
    /// How often the inventory is compared with the managers; zero turns the sync off.
    #[serde(with = "secs")]
    pub sync_interval: Duration,
}

/// BMCs over Redfish, and the firmware catalog their updates use.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Redfish {
    /// `https` (default) or `http`: how BMCs are reached.
    pub scheme: String,
    pub port: u16,
    /// Default BMC login, when the credentials file has nothing more specific.
    pub username: Option<String>,
    pub password: Option<Secret>,
    /// TOML file of BMC logins per BMC MAC, per manufacturer and default.
    pub credentials_file: Option<PathBuf>,
    /// PEM CA bundle that verifies BMC certificates.
    pub ca_file: Option<PathBuf>,
    /// Skip BMC certificate verification (logged as a warning at start).
    pub insecure: bool,
    /// Deadline of every Redfish call.
    #[serde(with = "secs")]
    pub timeout: Duration,
    pub max_inflight_per_bmc: usize,
    /// TOML file: component type + optional model + version -> image URI (+ checksum).
    pub firmware_catalog: Option<PathBuf>,
    /// Per type, the FirmwareInventory member whose version is the tray's observed firmware
    /// (`compute=FW_BMC_0,nvswitch=MGX_FW_BMC_0`).
    pub firmware_member: Option<String>,
}

/// Who may call the API.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Auth {
    /// Accepted credentials: `jwt`, `token`, `jwt,token` or `none`; empty = unset, which
    /// `flow serve` and `flow worker` refuse.
    pub mode: String,
    pub jwt: Jwt,
    /// The longest lifetime an API token may be given, and the lifetime of one created
    /// without `expires`.
    pub token_max_days: u64,
    /// How long a checked API token is taken from memory before the database is asked again
    /// (seconds; 0: every request asks). A token revoked elsewhere (another replica, the
    /// database) stops working within this long; revoked through this process, at once.
    #[serde(with = "secs")]
    pub token_cache_ttl: Duration,
    /// A console session unused this long ends (minutes).
    pub session_idle_minutes: u64,
    /// A console session ends this long after sign-in, however busy (hours).
    pub session_max_hours: u64,
}

/// JWTs from an identity provider.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Jwt {
    /// The identity provider's key set, fetched (and refetched on an unknown key id)...
    #[serde(default, with = "super::units::optional_url")]
    pub jwks_url: Option<Url>,
    /// ...or read from a file.
    pub jwks_file: String,
    /// Required `iss`.
    pub issuer: String,
    /// Required `aud`.
    pub audience: String,
    /// The claim holding the caller's groups or roles (a list or a space-separated string;
    /// dots reach into nested objects).
    pub roles_claim: String,
    /// Claim value to Flow role, e.g. `dc-admins=admin,noc=operator`; empty = values are role names.
    pub role_map: String,
    /// Verified tokens remembered (by SHA-256 of the token, until their `exp`, least recently
    /// used evicted first); 0 verifies every request's signature.
    pub cache_size: usize,
}

/// The `/metrics` endpoint.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metrics {
    /// Whether `/metrics` answers without credentials.
    pub public: bool,
    /// How often the background sampler refreshes the database-backed gauges.
    #[serde(with = "secs")]
    pub sample_interval: Duration,
}

/// The audit log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Audit {
    /// Entries older than this many days are deleted.
    pub retention_days: u64,
}

/// Blast-radius limits of operation requests.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Racks one request may touch, per role (`operator=8,admin=64`); a role left out, or
    /// `0`, is unlimited. Parsed by [`super::RackLimits`].
    pub racks_per_request: String,
}

/// Each section's default is its part of [`Config::default`], so a test can write
/// `Server { max_body_bytes: 2048, ..Default::default() }`.
macro_rules! section_defaults {
    ($($section:ident: $field:ident),* $(,)?) => {
        $(impl Default for $section {
            fn default() -> Self {
                Config::default().$field
            }
        })*
    };
}

section_defaults!(
    Server: server,
    Log: log,
    Database: database,
    Temporal: temporal,
    Schedules: schedules,
    Components: components,
    Psm: psm,
    Sim: sim,
    Drift: drift,
    Redfish: redfish,
    Auth: auth,
    Metrics: metrics,
    Audit: audit,
    Limits: limits,
);

impl Default for Jwt {
    fn default() -> Self {
        Config::default().auth.jwt
    }
}
