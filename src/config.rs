//! Typed configuration: defaults, then an optional TOML file, then `FLOW_*` (and legacy) variables.

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::Path;

use serde::Deserialize;

mod effective;
mod validate;

/// Every environment variable the binary reads, for docs and for the docker-compose check.
pub const ENV_VARS: &[&str] = &[
    "FLOW_CONFIG",
    "FLOW_DATABASE_URL",
    "FLOW_LISTEN",
    "FLOW_LOG",
    "FLOW_LOG_FORMAT",
    "FLOW_MAX_BODY_BYTES",
    "FLOW_REQUEST_TIMEOUT_SECS",
    "FLOW_MIGRATE_ON_START",
    "FLOW_DEV_MODE",
    "FLOW_TEMPORAL_ADDRESS",
    "FLOW_TEMPORAL_NAMESPACE",
    "FLOW_TEMPORAL_TASK_QUEUE",
    "FLOW_SCHEDULE_TICK_MS",
    "FLOW_PSM_URL",
    "FLOW_PSM_TIMEOUT_SECS",
    "FLOW_COMPONENT_MANAGERS",
    "FLOW_SIM_LATENCY_MS",
    "FLOW_SIM_FIRMWARE_SECS",
    "FLOW_SIM_FAIL_SERIALS",
    "FLOW_SIM_SLOW_SERIALS",
    "FLOW_SIM_SLOW_MS",
    "FLOW_SIM_FAILURE_RATE",
    "FLOW_DRIFT_SYNC_INTERVAL_SECS",
    "FLOW_OBSERVE_TIMEOUT_SECS",
    "FLOW_DB_ACQUIRE_TIMEOUT_SECS",
    "FLOW_SHUTDOWN_GRACE_SECS",
    "FLOW_PSM_CA_FILE",
    "FLOW_PSM_CLIENT_CERT_FILE",
    "FLOW_PSM_CLIENT_KEY_FILE",
    "FLOW_REDFISH_SCHEME",
    "FLOW_REDFISH_PORT",
    "FLOW_REDFISH_USERNAME",
    "FLOW_REDFISH_PASSWORD",
    "FLOW_REDFISH_CREDENTIALS_FILE",
    "FLOW_REDFISH_CA_FILE",
    "FLOW_REDFISH_INSECURE",
    "FLOW_REDFISH_TIMEOUT_SECS",
    "FLOW_REDFISH_MAX_INFLIGHT_PER_BMC",
    "FLOW_FIRMWARE_CATALOG",
    "FLOW_AUTH",
    "FLOW_JWT_JWKS_URL",
    "FLOW_JWT_JWKS_FILE",
    "FLOW_JWT_ISSUER",
    "FLOW_JWT_AUDIENCE",
    "FLOW_JWT_ROLES_CLAIM",
    "FLOW_JWT_ROLE_MAP",
    "FLOW_METRICS_PUBLIC",
    "FLOW_AUDIT_RETENTION_DAYS",
    "FLOW_LOOKUP_BATCHING",
];

/// The original service's variable names, still accepted for operators moving over.
pub const LEGACY_ENV_VARS: &[&str] = &[
    "DB_ADDR",
    "DB_PORT",
    "DB_USER",
    "DB_PASSWORD",
    "DB_DATABASE",
    "TEMPORAL_HOST",
    "TEMPORAL_PORT",
    "TEMPORAL_NAMESPACE",
    "PSM_API_URL",
];

/// The whole configuration, loaded once at start-up.
#[derive(Clone, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub database_url: String,
    pub listen: SocketAddr,
    /// `tracing` filter directives, e.g. `info,flow=debug`.
    pub log: String,
    /// `text` or `json`.
    pub log_format: String,
    pub max_body_bytes: usize,
    pub request_timeout_secs: u64,
    pub migrate_on_start: bool,
    /// Debug logging and permissive CORS, for local development.
    pub dev_mode: bool,
    pub temporal_address: String,
    pub temporal_namespace: String,
    pub temporal_task_queue: String,
    /// How often each process's schedule dispatcher looks for due schedules.
    pub schedule_tick_ms: u64,
    pub psm_url: String,
    /// Deadline of every PSM call.
    pub psm_timeout_secs: u64,
    /// Provider per component type, e.g. `powershelf=psm,nvswitch=sim,compute=sim`; empty = none.
    pub component_managers: String,
    /// Simulated devices (`sim` provider): delay of every call.
    pub sim_latency_ms: u64,
    /// Simulated time a firmware update takes.
    pub sim_firmware_secs: u64,
    /// Serial numbers whose every call is rejected.
    pub sim_fail_serials: Vec<String>,
    /// Serial numbers that answer `sim_slow_ms` later.
    pub sim_slow_serials: Vec<String>,
    pub sim_slow_ms: u64,
    /// Share of calls (0..=1) that fail as unreachable, chosen reproducibly.
    pub sim_failure_rate: f64,
    /// How often the drift sync compares the inventory with the managers; 0 turns it off.
    pub drift_sync_interval_secs: u64,
    /// Deadline of one manager's inventory report (validation and drift sync).
    pub observe_timeout_secs: u64,
    /// How long a request waits for a database connection before answering 503.
    pub db_acquire_timeout_secs: u64,
    /// After SIGTERM: how long in-flight requests and event streams get before the process exits.
    pub shutdown_grace_secs: u64,
    /// PEM CA bundle that verifies an `https://` PSM.
    pub psm_ca_file: Option<String>,
    /// PEM client certificate (and its key, below) Flow presents to PSM: mutual TLS.
    pub psm_client_cert_file: Option<String>,
    pub psm_client_key_file: Option<String>,
    /// `https` (default) or `http`: how BMCs are reached.
    pub redfish_scheme: String,
    pub redfish_port: u16,
    /// Default BMC login, when the credentials file has nothing more specific.
    pub redfish_username: Option<String>,
    pub redfish_password: Option<String>,
    /// TOML file of BMC logins per BMC MAC, per manufacturer and default.
    pub redfish_credentials_file: Option<String>,
    /// PEM CA bundle that verifies BMC certificates.
    pub redfish_ca_file: Option<String>,
    /// Skip BMC certificate verification (logged as a warning at start).
    pub redfish_insecure: bool,
    /// Deadline of every Redfish call.
    pub redfish_timeout_secs: u64,
    pub redfish_max_inflight_per_bmc: usize,
    /// TOML file: component type + optional model + version -> image URI (+ checksum).
    pub firmware_catalog: Option<String>,
    /// Accepted credentials: `jwt`, `token`, `jwt,token` or `none`; empty = unset, which
    /// `flow serve` and `flow worker` refuse.
    pub auth: String,
    /// The identity provider's key set, fetched (and refetched on an unknown key id)...
    pub jwt_jwks_url: String,
    /// ...or read from a file.
    pub jwt_jwks_file: String,
    /// Required `iss` of JWTs.
    pub jwt_issuer: String,
    /// Required `aud` of JWTs.
    pub jwt_audience: String,
    /// The claim holding the caller's groups or roles (a list or a space-separated string;
    /// dots reach into nested objects).
    pub jwt_roles_claim: String,
    /// Claim value to Flow role, e.g. `dc-admins=admin,noc=operator`; empty = values are role names.
    pub jwt_role_map: String,
    /// Whether `/metrics` answers without credentials.
    pub metrics_public: bool,
    /// Audit entries older than this many days are deleted.
    pub audit_retention_days: u64,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            database_url: "sqlite://flow.db?mode=rwc".into(),
            listen: SocketAddr::from(([0, 0, 0, 0], 8080)),
            log: "info".into(),
            log_format: "text".into(),
            max_body_bytes: 4 * 1024 * 1024,
            request_timeout_secs: 30,
            migrate_on_start: true,
            dev_mode: false,
            temporal_address: "http://localhost:7233".into(),
            temporal_namespace: "flow".into(),
            temporal_task_queue: "flow".into(),
            schedule_tick_ms: 1000,
            psm_url: "http://localhost:50052".into(),
            psm_timeout_secs: 30,
            component_managers: String::new(),
            sim_latency_ms: 200,
            sim_firmware_secs: 5,
            sim_fail_serials: Vec::new(),
            sim_slow_serials: Vec::new(),
            sim_slow_ms: 2000,
            sim_failure_rate: 0.0,
            drift_sync_interval_secs: 60,
            observe_timeout_secs: 10,
            db_acquire_timeout_secs: 2,
            shutdown_grace_secs: 20,
            psm_ca_file: None,
            psm_client_cert_file: None,
            psm_client_key_file: None,
            redfish_scheme: "https".into(),
            redfish_port: 443,
            redfish_username: None,
            redfish_password: None,
            redfish_credentials_file: None,
            redfish_ca_file: None,
            redfish_insecure: false,
            redfish_timeout_secs: 30,
            redfish_max_inflight_per_bmc: 2,
            firmware_catalog: None,
            auth: String::new(),
            jwt_jwks_url: String::new(),
            jwt_jwks_file: String::new(),
            jwt_issuer: String::new(),
            jwt_audience: String::new(),
            jwt_roles_claim: "roles".into(),
            jwt_role_map: String::new(),
            metrics_public: true,
            audit_retention_days: 365,
        }
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("database_url", &redact_url(&self.database_url))
            .field("listen", &self.listen)
            .field("log", &self.log)
            .field("log_format", &self.log_format)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("request_timeout_secs", &self.request_timeout_secs)
            .field("migrate_on_start", &self.migrate_on_start)
            .field("dev_mode", &self.dev_mode)
            .field("temporal_address", &self.temporal_address)
            .field("temporal_namespace", &self.temporal_namespace)
            .field("temporal_task_queue", &self.temporal_task_queue)
            .field("schedule_tick_ms", &self.schedule_tick_ms)
            .field("psm_url", &self.psm_url)
            .field("psm_timeout_secs", &self.psm_timeout_secs)
            .field("component_managers", &self.component_managers)
            .field("sim_latency_ms", &self.sim_latency_ms)
            .field("sim_firmware_secs", &self.sim_firmware_secs)
            .field("sim_fail_serials", &self.sim_fail_serials)
            .field("sim_slow_serials", &self.sim_slow_serials)
            .field("sim_slow_ms", &self.sim_slow_ms)
            .field("sim_failure_rate", &self.sim_failure_rate)
            .field("drift_sync_interval_secs", &self.drift_sync_interval_secs)
            .field("observe_timeout_secs", &self.observe_timeout_secs)
            .field("db_acquire_timeout_secs", &self.db_acquire_timeout_secs)
            .field("shutdown_grace_secs", &self.shutdown_grace_secs)
            .field("psm_ca_file", &self.psm_ca_file)
            .field("psm_client_cert_file", &self.psm_client_cert_file)
            .field("psm_client_key_file", &self.psm_client_key_file)
            .field("redfish_scheme", &self.redfish_scheme)
            .field("redfish_port", &self.redfish_port)
            .field("redfish_username", &self.redfish_username)
            .field(
                "redfish_password",
                &self.redfish_password.as_ref().map(|_| "***"),
            )
            .field("redfish_credentials_file", &self.redfish_credentials_file)
            .field("redfish_ca_file", &self.redfish_ca_file)
            .field("redfish_insecure", &self.redfish_insecure)
            .field("redfish_timeout_secs", &self.redfish_timeout_secs)
            .field(
                "redfish_max_inflight_per_bmc",
                &self.redfish_max_inflight_per_bmc,
            )
            .field("firmware_catalog", &self.firmware_catalog)
            .field("auth", &self.auth)
            .field("jwt_jwks_url", &redact_url(&self.jwt_jwks_url))
            .field("jwt_jwks_file", &self.jwt_jwks_file)
            .field("jwt_issuer", &self.jwt_issuer)
            .field("jwt_audience", &self.jwt_audience)
            .field("jwt_roles_claim", &self.jwt_roles_claim)
            .field("jwt_role_map", &self.jwt_role_map)
            .field("metrics_public", &self.metrics_public)
            .field("audit_retention_days", &self.audit_retention_days)
            .finish()
    }
}

/// Hides the password in `scheme://user:password@host/db`.
pub fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            let creds = &url[scheme_end + 3..at];
            match creds.find(':') {
                Some(colon) => format!(
                    "{}{}:***{}",
                    &url[..scheme_end + 3],
                    &creds[..colon],
                    &url[at..]
                ),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

/// A configuration problem, naming the variable or file key at fault.
#[derive(Debug, thiserror::Error)]
#[error("configuration: {0}")]
pub struct ConfigError(String);

impl Config {
    /// Loads from the process environment (and the file `FLOW_CONFIG` names, if any).
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::load(&std::env::vars().collect())
    }

    /// Loads from the given variables: defaults, then the file, then variables.
    pub fn load(env: &HashMap<String, String>) -> Result<Self, ConfigError> {
        let mut config = match env.get("FLOW_CONFIG") {
            Some(path) => Self::from_file(Path::new(path))?,
            None => Self::default(),
        };
        config.apply_legacy(env)?;
        config.apply_env(env)?;
        config.validate()?;
        crate::telemetry::trace::check_env(env).map_err(ConfigError)?;
        Ok(config)
    }

    fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError(format!("{}: {e}", path.display())))?;
        toml::from_str(&text).map_err(|e| ConfigError(format!("{}: {e}", path.display())))
    }

    fn apply_env(&mut self, env: &HashMap<String, String>) -> Result<(), ConfigError> {
        let get = |k: &str| env.get(k).filter(|v| !v.is_empty());
        if let Some(v) = get("FLOW_DATABASE_URL") {
            self.database_url = v.clone();
        }
        if let Some(v) = get("FLOW_LISTEN") {
            self.listen = parse("FLOW_LISTEN", v)?;
        }
        if let Some(v) = get("FLOW_LOG") {
            self.log = v.clone();
        }
        if let Some(v) = get("FLOW_LOG_FORMAT") {
            self.log_format = v.clone();
        }
        if let Some(v) = get("FLOW_MAX_BODY_BYTES") {
            self.max_body_bytes = parse("FLOW_MAX_BODY_BYTES", v)?;
        }
        if let Some(v) = get("FLOW_REQUEST_TIMEOUT_SECS") {
            self.request_timeout_secs = parse("FLOW_REQUEST_TIMEOUT_SECS", v)?;
        }
        if let Some(v) = get("FLOW_MIGRATE_ON_START") {
            self.migrate_on_start = parse("FLOW_MIGRATE_ON_START", v)?;
        }
        if let Some(v) = get("FLOW_DEV_MODE") {
            self.dev_mode = parse("FLOW_DEV_MODE", v)?;
        }
        if let Some(v) = get("FLOW_SCHEDULE_TICK_MS") {
            self.schedule_tick_ms = parse("FLOW_SCHEDULE_TICK_MS", v)?;
        }
        for (key, field) in [
            (
                "FLOW_DB_ACQUIRE_TIMEOUT_SECS",
                &mut self.db_acquire_timeout_secs,
            ),
            ("FLOW_SHUTDOWN_GRACE_SECS", &mut self.shutdown_grace_secs),
        ] {
            if let Some(v) = get(key) {
                *field = parse(key, v)?;
            }
        }
        // Empty is not "unset" here: it used to mean inventory-only, and silently falling back
        // to localhost would surprise whoever set it.
        if env
            .get("FLOW_TEMPORAL_ADDRESS")
            .is_some_and(|v| v.trim().is_empty())
        {
            return Err(ConfigError(
                "FLOW_TEMPORAL_ADDRESS is empty: set the Temporal frontend address, or `none` for an inventory-only process".into(),
            ));
        }
        for (key, field) in [
            ("FLOW_TEMPORAL_ADDRESS", &mut self.temporal_address),
            ("FLOW_TEMPORAL_NAMESPACE", &mut self.temporal_namespace),
            ("FLOW_TEMPORAL_TASK_QUEUE", &mut self.temporal_task_queue),
            ("FLOW_PSM_URL", &mut self.psm_url),
        ] {
            if let Some(v) = get(key) {
                *field = v.clone();
            }
        }
        self.apply_component_env(env)?;
        self.apply_auth_env(env)
    }

    /// Authentication and audit settings.
    fn apply_auth_env(&mut self, env: &HashMap<String, String>) -> Result<(), ConfigError> {
        let get = |k: &str| env.get(k).filter(|v| !v.is_empty());
        for (key, field) in [
            ("FLOW_AUTH", &mut self.auth),
            ("FLOW_JWT_JWKS_URL", &mut self.jwt_jwks_url),
            ("FLOW_JWT_JWKS_FILE", &mut self.jwt_jwks_file),
            ("FLOW_JWT_ISSUER", &mut self.jwt_issuer),
            ("FLOW_JWT_AUDIENCE", &mut self.jwt_audience),
            ("FLOW_JWT_ROLES_CLAIM", &mut self.jwt_roles_claim),
            ("FLOW_JWT_ROLE_MAP", &mut self.jwt_role_map),
        ] {
            if let Some(v) = get(key) {
                *field = v.trim().to_string();
            }
        }
        if let Some(v) = get("FLOW_METRICS_PUBLIC") {
            self.metrics_public = parse("FLOW_METRICS_PUBLIC", v)?;
        }
        if let Some(v) = get("FLOW_AUDIT_RETENTION_DAYS") {
            self.audit_retention_days = parse("FLOW_AUDIT_RETENTION_DAYS", v)?;
        }
        Ok(())
    }

    /// The parsed `FLOW_AUTH`, or `None` while it is unset.
    pub fn auth_modes(&self) -> Option<crate::auth::Modes> {
        crate::auth::Modes::parse(&self.auth).filter(|_| !self.auth.is_empty())
    }

    /// `FLOW_AUTH` and what its modes need, checked together.
    fn validate_auth(&self) -> Result<(), ConfigError> {
        if !(1..=36_500).contains(&self.audit_retention_days) {
            return Err(ConfigError(format!(
                "FLOW_AUDIT_RETENTION_DAYS must be between 1 and 36500, not {}",
                self.audit_retention_days
            )));
        }
        if self.auth.is_empty() {
            return Ok(());
        }
        let modes = self.auth_modes().ok_or_else(|| {
            ConfigError(format!(
                "FLOW_AUTH must be jwt, token, jwt,token or none, not {:?}",
                self.auth
            ))
        })?;
        if modes.jwt {
            match (self.jwt_jwks_url.is_empty(), self.jwt_jwks_file.is_empty()) {
                (true, true) => {
                    return Err(ConfigError(
                        "FLOW_AUTH=jwt needs FLOW_JWT_JWKS_URL or FLOW_JWT_JWKS_FILE".into(),
                    ));
                }
                (false, false) => {
                    return Err(ConfigError(
                        "set only one of FLOW_JWT_JWKS_URL and FLOW_JWT_JWKS_FILE".into(),
                    ));
                }
                _ => {}
            }
            let url = &self.jwt_jwks_url;
            let web = url.starts_with("https://") || url.starts_with("http://");
            if !url.is_empty() && !web {
                return Err(ConfigError(format!(
                    "FLOW_JWT_JWKS_URL must be an http(s) URL, not {:?}",
                    self.jwt_jwks_url
                )));
            }
            for (key, value) in [
                ("FLOW_JWT_ISSUER", &self.jwt_issuer),
                ("FLOW_JWT_AUDIENCE", &self.jwt_audience),
                ("FLOW_JWT_ROLES_CLAIM", &self.jwt_roles_claim),
            ] {
                if value.is_empty() {
                    return Err(ConfigError(format!("FLOW_AUTH=jwt needs {key}")));
                }
            }
            crate::auth::jwt::parse_role_map(&self.jwt_role_map)
                .map_err(|e| ConfigError(format!("FLOW_JWT_ROLE_MAP: {e}")))?;
        }
        Ok(())
    }

    /// Component managers and the simulator. An empty `FLOW_COMPONENT_MANAGERS` is a value (no
    /// managers), unlike the other variables where empty means unset.
    fn apply_component_env(&mut self, env: &HashMap<String, String>) -> Result<(), ConfigError> {
        let get = |k: &str| env.get(k).filter(|v| !v.is_empty());
        if let Some(v) = env.get("FLOW_COMPONENT_MANAGERS") {
            self.component_managers = v.clone();
        }
        if let Some(v) = get("FLOW_PSM_TIMEOUT_SECS") {
            self.psm_timeout_secs = parse("FLOW_PSM_TIMEOUT_SECS", v)?;
        }
        for (key, field) in [
            ("FLOW_SIM_LATENCY_MS", &mut self.sim_latency_ms),
            ("FLOW_SIM_FIRMWARE_SECS", &mut self.sim_firmware_secs),
            ("FLOW_SIM_SLOW_MS", &mut self.sim_slow_ms),
        ] {
            if let Some(v) = get(key) {
                *field = parse(key, v)?;
            }
        }
        for (key, field) in [
            ("FLOW_SIM_FAIL_SERIALS", &mut self.sim_fail_serials),
            ("FLOW_SIM_SLOW_SERIALS", &mut self.sim_slow_serials),
        ] {
            if let Some(v) = env.get(key) {
                *field = v
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect();
            }
        }
        if let Some(v) = get("FLOW_SIM_FAILURE_RATE") {
            self.sim_failure_rate = parse("FLOW_SIM_FAILURE_RATE", v)?;
        }
        for (key, field) in [
            (
                "FLOW_DRIFT_SYNC_INTERVAL_SECS",
                &mut self.drift_sync_interval_secs,
            ),
            ("FLOW_OBSERVE_TIMEOUT_SECS", &mut self.observe_timeout_secs),
        ] {
            if let Some(v) = get(key) {
                *field = parse(key, v)?;
            }
        }
        self.apply_redfish_env(env)
    }

    /// Redfish, PSM TLS and the firmware catalog.
    fn apply_redfish_env(&mut self, env: &HashMap<String, String>) -> Result<(), ConfigError> {
        let get = |k: &str| env.get(k).filter(|v| !v.is_empty());
        for (key, field) in [
            ("FLOW_PSM_CA_FILE", &mut self.psm_ca_file),
            ("FLOW_PSM_CLIENT_CERT_FILE", &mut self.psm_client_cert_file),
            ("FLOW_PSM_CLIENT_KEY_FILE", &mut self.psm_client_key_file),
            ("FLOW_REDFISH_USERNAME", &mut self.redfish_username),
            ("FLOW_REDFISH_PASSWORD", &mut self.redfish_password),
            (
                "FLOW_REDFISH_CREDENTIALS_FILE",
                &mut self.redfish_credentials_file,
            ),
            ("FLOW_REDFISH_CA_FILE", &mut self.redfish_ca_file),
            ("FLOW_FIRMWARE_CATALOG", &mut self.firmware_catalog),
        ] {
            if let Some(v) = get(key) {
                *field = Some(v.clone());
            }
        }
        if let Some(v) = get("FLOW_REDFISH_SCHEME") {
            self.redfish_scheme = v.to_ascii_lowercase();
        }
        if let Some(v) = get("FLOW_REDFISH_PORT") {
            self.redfish_port = parse("FLOW_REDFISH_PORT", v)?;
        }
        if let Some(v) = get("FLOW_REDFISH_INSECURE") {
            self.redfish_insecure = parse("FLOW_REDFISH_INSECURE", v)?;
        }
        if let Some(v) = get("FLOW_REDFISH_TIMEOUT_SECS") {
            self.redfish_timeout_secs = parse("FLOW_REDFISH_TIMEOUT_SECS", v)?;
        }
        if let Some(v) = get("FLOW_REDFISH_MAX_INFLIGHT_PER_BMC") {
            self.redfish_max_inflight_per_bmc = parse("FLOW_REDFISH_MAX_INFLIGHT_PER_BMC", v)?;
        }
        Ok(())
    }

    /// Redfish settings that cannot work, and a Redfish manager with no login to send.
    fn validate_redfish(&self) -> Result<(), ConfigError> {
        if !matches!(self.redfish_scheme.as_str(), "https" | "http") {
            return Err(ConfigError(format!(
                "FLOW_REDFISH_SCHEME must be https or http, not {:?}",
                self.redfish_scheme
            )));
        }
        if self.redfish_timeout_secs == 0 {
            return Err(ConfigError(
                "FLOW_REDFISH_TIMEOUT_SECS must be at least 1".into(),
            ));
        }
        if self.redfish_max_inflight_per_bmc == 0 {
            return Err(ConfigError(
                "FLOW_REDFISH_MAX_INFLIGHT_PER_BMC must be at least 1".into(),
            ));
        }
        if self.psm_client_cert_file.is_some() != self.psm_client_key_file.is_some() {
            return Err(ConfigError(
                "FLOW_PSM_CLIENT_CERT_FILE and FLOW_PSM_CLIENT_KEY_FILE go together".into(),
            ));
        }
        let uses_redfish = crate::components::registry::parse_spec(&self.component_managers)
            .unwrap_or_default()
            .iter()
            .any(|(_, p)| *p == crate::components::registry::ProviderKind::Redfish);
        let has_default = self.redfish_username.is_some() && self.redfish_password.is_some();
        if uses_redfish && !has_default && self.redfish_credentials_file.is_none() {
            return Err(ConfigError(
                "FLOW_COMPONENT_MANAGERS uses redfish but no BMC credentials are set: set \
                 FLOW_REDFISH_USERNAME and FLOW_REDFISH_PASSWORD, or FLOW_REDFISH_CREDENTIALS_FILE"
                    .into(),
            ));
        }
        Ok(())
    }

    /// The original's `DB_*`, `TEMPORAL_*` and `PSM_API_URL`; `FLOW_*` values override them.
    fn apply_legacy(&mut self, env: &HashMap<String, String>) -> Result<(), ConfigError> {
        let get = |k: &str| env.get(k).filter(|v| !v.is_empty()).cloned();
        if let Some(host) = get("DB_ADDR") {
            let port = get("DB_PORT").unwrap_or_else(|| "5432".into());
            let user = get("DB_USER").unwrap_or_else(|| "postgres".into());
            let password = get("DB_PASSWORD")
                .map(|p| format!(":{p}"))
                .unwrap_or_default();
            let database = get("DB_DATABASE").unwrap_or_else(|| "flow".into());
            self.database_url = format!("postgres://{user}{password}@{host}:{port}/{database}");
        }
        if let Some(host) = get("TEMPORAL_HOST") {
            let port = get("TEMPORAL_PORT").unwrap_or_else(|| "7233".into());
            self.temporal_address = format!("http://{host}:{port}");
        }
        if let Some(ns) = get("TEMPORAL_NAMESPACE") {
            self.temporal_namespace = ns;
        }
        if let Some(url) = get("PSM_API_URL") {
            self.psm_url = if url.contains("://") {
                url
            } else {
                format!("http://{url}")
            };
        }
        Ok(())
    }
}

fn parse<T: std::str::FromStr>(key: &str, value: &str) -> Result<T, ConfigError>
where
    T::Err: fmt::Display,
{
    value
        .parse()
        .map_err(|e| ConfigError(format!("{key}={value:?}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_use_the_embedded_sqlite_database() {
        let c = Config::load(&env(&[])).unwrap();
        assert_eq!(c.database_url, "sqlite://flow.db?mode=rwc");
        assert_eq!(c.listen.port(), 8080);
    }

    #[test]
    fn legacy_variables_build_urls_and_flow_variables_win() {
        let c = Config::load(&env(&[
            ("DB_ADDR", "db"),
            ("DB_USER", "flow"),
            ("DB_PASSWORD", "s3cret"),
            ("DB_DATABASE", "inventory"),
            ("TEMPORAL_HOST", "temporal"),
            ("PSM_API_URL", "psm:50052"),
        ]))
        .unwrap();
        assert_eq!(c.database_url, "postgres://flow:s3cret@db:5432/inventory");
        assert_eq!(c.temporal_address, "http://temporal:7233");
        assert_eq!(c.psm_url, "http://psm:50052");
        assert!(!format!("{c:?}").contains("s3cret"));
        let bare = Config::load(&env(&[("FLOW_PSM_URL", "psm.internal:50052")])).unwrap();
        assert_eq!(bare.psm_url, "psm.internal:50052");
        let c = Config::load(&env(&[
            ("DB_ADDR", "db"),
            ("FLOW_DATABASE_URL", "sqlite://x.db"),
        ]))
        .unwrap();
        assert_eq!(c.database_url, "sqlite://x.db");
    }

    #[test]
    fn bad_values_name_the_variable() {
        for (key, value) in [
            ("FLOW_LISTEN", "nope"),
            ("FLOW_COMPONENT_MANAGERS", "compute=nico"),
            ("FLOW_COMPONENT_MANAGERS", "gpu=sim"),
            ("FLOW_PSM_TIMEOUT_SECS", "soon"),
            ("FLOW_PSM_TIMEOUT_SECS", "0"),
            ("FLOW_SIM_LATENCY_MS", "-1"),
            ("FLOW_SIM_FIRMWARE_SECS", "5s"),
            ("FLOW_SIM_SLOW_MS", "x"),
            ("FLOW_SIM_FAILURE_RATE", "1.5"),
            ("FLOW_SIM_FAILURE_RATE", "NaN"),
            ("FLOW_SIM_FAILURE_RATE", "often"),
            ("FLOW_DRIFT_SYNC_INTERVAL_SECS", "1m"),
            ("FLOW_OBSERVE_TIMEOUT_SECS", "0"),
            ("FLOW_SCHEDULE_TICK_MS", "0"),
            ("FLOW_SCHEDULE_TICK_MS", "1s"),
            ("FLOW_TEMPORAL_ADDRESS", ""),
            ("FLOW_TEMPORAL_ADDRESS", "  "),
            ("FLOW_DB_ACQUIRE_TIMEOUT_SECS", "0"),
            ("FLOW_DB_ACQUIRE_TIMEOUT_SECS", "2s"),
            ("FLOW_SHUTDOWN_GRACE_SECS", "-1"),
            ("FLOW_REQUEST_TIMEOUT_SECS", "0"),
            ("FLOW_MAX_BODY_BYTES", "0"),
            ("FLOW_LOG", "info,flow=loud"),
            ("FLOW_LOG_FORMAT", "xml"),
            ("FLOW_DATABASE_URL", "mysql://db/flow"),
            ("FLOW_TEMPORAL_ADDRESS", "ftp://temporal:7233"),
            ("FLOW_TEMPORAL_NAMESPACE", " "),
            ("FLOW_PSM_URL", "ftp://psm:50052"),
            ("FLOW_PSM_URL", "psm host:50052"),
            ("FLOW_SIM_FIRMWARE_SECS", "1000000"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318"),
        ] {
            let err = Config::load(&env(&[(key, value)])).unwrap_err();
            assert!(err.to_string().contains(key), "{key}={value}: {err}");
        }
    }

    #[test]
    fn component_and_simulator_settings_come_from_variables() {
        let c = Config::load(&env(&[])).unwrap();
        assert_eq!(c.component_managers, "");
        assert_eq!(
            (c.psm_timeout_secs, c.sim_latency_ms, c.sim_firmware_secs),
            (30, 200, 5)
        );
        assert_eq!((c.sim_slow_ms, c.sim_failure_rate), (2000, 0.0));
        let c = Config::load(&env(&[
            ("FLOW_COMPONENT_MANAGERS", "powershelf=psm,compute=sim"),
            ("FLOW_PSM_TIMEOUT_SECS", "45"),
            ("FLOW_SIM_LATENCY_MS", "0"),
            ("FLOW_SIM_FIRMWARE_SECS", "1"),
            ("FLOW_SIM_FAIL_SERIALS", "SN1, SN2,"),
            ("FLOW_SIM_SLOW_SERIALS", "SN3"),
            ("FLOW_SIM_SLOW_MS", "10"),
            ("FLOW_SIM_FAILURE_RATE", "0.25"),
        ]))
        .unwrap();
        assert_eq!(c.component_managers, "powershelf=psm,compute=sim");
        assert_eq!(
            (c.psm_timeout_secs, c.sim_latency_ms, c.sim_firmware_secs),
            (45, 0, 1)
        );
        assert_eq!(c.sim_fail_serials, ["SN1", "SN2"]);
        assert_eq!(c.sim_slow_serials, ["SN3"]);
        assert_eq!((c.sim_slow_ms, c.sim_failure_rate), (10, 0.25));
    }

    #[test]
    fn fault_settings_have_prompt_defaults_and_none_means_inventory_only() {
        let c = Config::load(&env(&[])).unwrap();
        assert_eq!((c.db_acquire_timeout_secs, c.shutdown_grace_secs), (2, 20));
        let c = Config::load(&env(&[
            ("FLOW_DB_ACQUIRE_TIMEOUT_SECS", "5"),
            ("FLOW_SHUTDOWN_GRACE_SECS", "3"),
            ("FLOW_TEMPORAL_ADDRESS", "none"),
        ]))
        .unwrap();
        assert_eq!((c.db_acquire_timeout_secs, c.shutdown_grace_secs), (5, 3));
        assert_eq!(c.temporal_address, "none");
    }

    #[test]
    fn redfish_settings_come_from_variables_and_the_password_stays_hidden() {
        let c = Config::load(&env(&[])).unwrap();
        assert_eq!((c.redfish_scheme.as_str(), c.redfish_port), ("https", 443));
        assert_eq!(
            (c.redfish_timeout_secs, c.redfish_max_inflight_per_bmc),
            (30, 2)
        );
        let c = Config::load(&env(&[
            ("FLOW_COMPONENT_MANAGERS", "compute=redfish,powershelf=psm"),
            ("FLOW_REDFISH_SCHEME", "HTTP"),
            ("FLOW_REDFISH_PORT", "8000"),
            ("FLOW_REDFISH_USERNAME", "admin"),
            ("FLOW_REDFISH_PASSWORD", "bmc-s3cret"),
            ("FLOW_REDFISH_INSECURE", "true"),
            ("FLOW_REDFISH_MAX_INFLIGHT_PER_BMC", "4"),
            ("FLOW_FIRMWARE_CATALOG", "/etc/flow/firmware.toml"),
            ("FLOW_PSM_CA_FILE", "/etc/flow/psm-ca.pem"),
            ("FLOW_PSM_CLIENT_CERT_FILE", "/etc/flow/c.pem"),
            ("FLOW_PSM_CLIENT_KEY_FILE", "/etc/flow/c.key"),
        ]))
        .unwrap();
        assert_eq!((c.redfish_scheme.as_str(), c.redfish_port), ("http", 8000));
        assert!(c.redfish_insecure);
        assert_eq!(c.redfish_max_inflight_per_bmc, 4);
        assert_eq!(c.redfish_password.as_deref(), Some("bmc-s3cret"));
        assert!(!format!("{c:?}").contains("bmc-s3cret"));
    }

    #[test]
    fn redfish_without_credentials_or_with_bad_settings_refuses_to_start() {
        for (pairs, key) in [
            (
                vec![("FLOW_COMPONENT_MANAGERS", "compute=redfish")],
                "FLOW_REDFISH_USERNAME",
            ),
            (
                vec![
                    ("FLOW_COMPONENT_MANAGERS", "nvswitch=redfish"),
                    ("FLOW_REDFISH_USERNAME", "admin"),
                ],
                "FLOW_REDFISH_CREDENTIALS_FILE",
            ),
            (vec![("FLOW_REDFISH_SCHEME", "ftp")], "FLOW_REDFISH_SCHEME"),
            (vec![("FLOW_REDFISH_PORT", "70000")], "FLOW_REDFISH_PORT"),
            (
                vec![("FLOW_REDFISH_MAX_INFLIGHT_PER_BMC", "0")],
                "FLOW_REDFISH_MAX_INFLIGHT_PER_BMC",
            ),
            (
                vec![("FLOW_REDFISH_INSECURE", "maybe")],
                "FLOW_REDFISH_INSECURE",
            ),
            (
                vec![("FLOW_PSM_CLIENT_CERT_FILE", "/c.pem")],
                "FLOW_PSM_CLIENT_KEY_FILE",
            ),
            (
                vec![("FLOW_COMPONENT_MANAGERS", "compute=bmc")],
                "FLOW_COMPONENT_MANAGERS",
            ),
        ] {
            let err = Config::load(&env(&pairs)).unwrap_err().to_string();
            assert!(err.contains(key), "{pairs:?}: {err}");
        }
        let with_file = Config::load(&env(&[
            ("FLOW_COMPONENT_MANAGERS", "compute=redfish"),
            ("FLOW_REDFISH_CREDENTIALS_FILE", "/etc/flow/bmc.toml"),
        ]));
        assert!(with_file.is_ok());
    }

    #[test]
    fn drift_sync_settings_come_from_variables_and_zero_turns_the_sync_off() {
        let c = Config::load(&env(&[])).unwrap();
        assert_eq!(
            (c.drift_sync_interval_secs, c.observe_timeout_secs),
            (60, 10)
        );
        let c = Config::load(&env(&[
            ("FLOW_DRIFT_SYNC_INTERVAL_SECS", "0"),
            ("FLOW_OBSERVE_TIMEOUT_SECS", "3"),
        ]))
        .unwrap();
        assert_eq!((c.drift_sync_interval_secs, c.observe_timeout_secs), (0, 3));
    }

    #[test]
    fn auth_settings_are_checked_together_and_name_the_variable() {
        let c = Config::load(&env(&[])).unwrap();
        assert_eq!((c.auth_modes(), c.audit_retention_days), (None, 365));
        let c = Config::load(&env(&[("FLOW_AUTH", "none")])).unwrap();
        assert!(c.auth_modes().unwrap().is_none());
        let c = Config::load(&env(&[
            ("FLOW_AUTH", "jwt,token"),
            ("FLOW_JWT_JWKS_URL", "https://idp.example/jwks"),
            ("FLOW_JWT_ISSUER", "https://idp.example"),
            ("FLOW_JWT_AUDIENCE", "flow"),
            ("FLOW_JWT_ROLE_MAP", "dc-admins=admin,noc=operator"),
        ]))
        .unwrap();
        let modes = c.auth_modes().unwrap();
        assert!(modes.jwt && modes.token);
        for (pairs, key) in [
            (vec![("FLOW_AUTH", "basic")], "FLOW_AUTH"),
            (vec![("FLOW_AUTH", "jwt")], "FLOW_JWT_JWKS_URL"),
            (
                vec![
                    ("FLOW_AUTH", "jwt"),
                    ("FLOW_JWT_JWKS_FILE", "/k.json"),
                    ("FLOW_JWT_ISSUER", "i"),
                ],
                "FLOW_JWT_AUDIENCE",
            ),
            (
                vec![
                    ("FLOW_AUTH", "jwt"),
                    ("FLOW_JWT_JWKS_FILE", "/k.json"),
                    ("FLOW_JWT_ISSUER", "i"),
                    ("FLOW_JWT_AUDIENCE", "a"),
                    ("FLOW_JWT_ROLE_MAP", "noc=root"),
                ],
                "FLOW_JWT_ROLE_MAP",
            ),
            (
                vec![("FLOW_AUDIT_RETENTION_DAYS", "0")],
                "FLOW_AUDIT_RETENTION_DAYS",
            ),
        ] {
            let err = Config::load(&env(&pairs)).unwrap_err();
            assert!(err.to_string().contains(key), "{pairs:?}: {err}");
        }
    }

    #[test]
    fn the_config_file_takes_component_settings_and_rejects_unknown_keys() {
        let dir = std::env::temp_dir().join(format!("flow-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.toml");
        std::fs::write(
            &good,
            "component_managers = \"nvswitch=sim\"\nsim_fail_serials = [\"SN9\"]\nsim_failure_rate = 0.5\n",
        )
        .unwrap();
        let c = Config::load(&env(&[("FLOW_CONFIG", good.to_str().unwrap())])).unwrap();
        assert_eq!(c.component_managers, "nvswitch=sim");
        assert_eq!(c.sim_fail_serials, ["SN9"]);
        let bad = dir.join("bad.toml");
        std::fs::write(&bad, "component_manager = \"nvswitch=sim\"\n").unwrap();
        assert!(Config::load(&env(&[("FLOW_CONFIG", bad.to_str().unwrap())])).is_err());
        let invalid = dir.join("invalid.toml");
        std::fs::write(&invalid, "component_managers = \"nvswitch=nsm\"\n").unwrap();
        let err = Config::load(&env(&[("FLOW_CONFIG", invalid.to_str().unwrap())])).unwrap_err();
        assert!(err.to_string().contains("FLOW_COMPONENT_MANAGERS"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
