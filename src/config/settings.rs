//! One definition per setting: its `FLOW_*` variable, its place in the tree, its default, its
//! checks and whether it is secret. The file key is the variable without `FLOW_`, in lower case
//! (`FLOW_PSM_TIMEOUT_SECS` → `psm_timeout_secs`), so a file and the environment spell a
//! setting alike. [`ENV_VARS`] is derived from this table.

use super::validate::check;

/// A check of one value; the error completes "`FLOW_X (x)` …".
pub type Check = fn(&str) -> Result<(), String>;

/// How a setting's value is read and checked.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// A string, with a check beyond "is a string" when given.
    Text {
        default: &'static str,
        check: Option<Check>,
    },
    /// A string that may be unset (no default), with a check when given.
    Optional {
        check: Option<Check>,
    },
    /// A whole number in `min..=max`: sizes, counts, durations in the variable's unit.
    Int {
        default: u64,
        min: u64,
        max: u64,
    },
    /// A number in `min..=max` (NaN is in no range).
    Float {
        default: f64,
        min: f64,
        max: f64,
    },
    Bool {
        default: bool,
    },
    /// A list; the variable is comma-separated and blanks are dropped.
    List,
}

/// How a variable's text becomes a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnvForm {
    /// An empty variable counts as unset.
    Plain,
    /// An empty variable is a value (no managers, no serials, an empty address to refuse).
    EmptyIsValue,
    /// Surrounding blanks dropped.
    Trimmed,
    /// Lower-cased.
    Lowercase,
}

/// What `flow config check` and `Debug` hide.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Redact {
    No,
    /// The whole value.
    Whole,
    /// The password of a `scheme://user:password@host` URL.
    UrlPassword,
}

/// One setting.
#[derive(Clone, Copy, Debug)]
pub struct Setting {
    pub env: &'static str,
    /// Dotted path in [`Config`](super::Config), e.g. `psm.timeout`.
    pub path: &'static str,
    pub kind: Kind,
    pub form: EnvForm,
    pub redact: Redact,
}

impl Setting {
    const fn new(env: &'static str, path: &'static str, kind: Kind) -> Self {
        Self {
            env,
            path,
            kind,
            form: EnvForm::Plain,
            redact: Redact::No,
        }
    }

    const fn form(mut self, form: EnvForm) -> Self {
        self.form = form;
        self
    }

    const fn redact(mut self, redact: Redact) -> Self {
        self.redact = redact;
        self
    }

    /// The file key: the variable without `FLOW_`, in lower case.
    pub fn key(&self) -> String {
        self.env
            .strip_prefix("FLOW_")
            .unwrap_or(self.env)
            .to_ascii_lowercase()
    }

    /// Both spellings, for messages: `FLOW_REQUEST_TIMEOUT_SECS (request_timeout_secs)`.
    pub fn name(&self) -> String {
        format!("{} ({})", self.env, self.key())
    }
}

const fn text(
    env: &'static str,
    path: &'static str,
    default: &'static str,
    check: Check,
) -> Setting {
    Setting::new(
        env,
        path,
        Kind::Text {
            default,
            check: Some(check),
        },
    )
}

/// Free text, checked (if at all) together with other settings.
const fn free(env: &'static str, path: &'static str, default: &'static str) -> Setting {
    Setting::new(
        env,
        path,
        Kind::Text {
            default,
            check: None,
        },
    )
    .form(EnvForm::Trimmed)
}

const fn optional(env: &'static str, path: &'static str) -> Setting {
    Setting::new(env, path, Kind::Optional { check: None })
}

const fn int(env: &'static str, path: &'static str, default: u64, min: u64, max: u64) -> Setting {
    Setting::new(env, path, Kind::Int { default, min, max })
}

const fn flag(env: &'static str, path: &'static str, default: bool) -> Setting {
    Setting::new(env, path, Kind::Bool { default })
}

const fn list(env: &'static str, path: &'static str) -> Setting {
    Setting::new(env, path, Kind::List).form(EnvForm::EmptyIsValue)
}

/// Every setting, in the order `flow config check` prints them.
pub const SETTINGS: &[Setting] = &[
    text(
        "FLOW_DATABASE_URL",
        "database.url",
        "sqlite://flow.db?mode=rwc",
        check::database_url,
    )
    .redact(Redact::UrlPassword),
    text(
        "FLOW_LISTEN",
        "server.listen",
        "0.0.0.0:8080",
        check::socket_addr,
    ),
    text("FLOW_LOG", "log.filter", "info", check::log_filter),
    text("FLOW_LOG_FORMAT", "log.format", "text", check::log_format),
    int(
        "FLOW_MAX_BODY_BYTES",
        "server.max_body_bytes",
        4 << 20,
        1024,
        1 << 30,
    ),
    int(
        "FLOW_REQUEST_TIMEOUT_SECS",
        "server.request_timeout",
        30,
        1,
        3600,
    ),
    flag("FLOW_MIGRATE_ON_START", "database.migrate_on_start", true),
    flag("FLOW_LOOKUP_BATCHING", "database.lookup_batching", true),
    flag("FLOW_DEV_MODE", "server.dev_mode", false),
    list("FLOW_TRUSTED_PROXIES", "server.trusted_proxies"),
    list("FLOW_BENCH_SKIP_MIDDLEWARE", "server.bench_skip_middleware"),
    int(
        "FLOW_MAX_EVENT_STREAMS",
        "server.max_event_streams",
        1000,
        10,
        1_000_000,
    ),
    int(
        "FLOW_HEADER_READ_TIMEOUT_SECS",
        "server.header_read_timeout",
        10,
        1,
        600,
    ),
    int(
        "FLOW_MAX_CONNECTIONS",
        "server.max_connections",
        10_000,
        1,
        1_000_000,
    ),
    // Empty is not "unset" here: it used to mean inventory-only, and silently falling back to
    // localhost would surprise whoever set it; the check refuses it.
    text(
        "FLOW_TEMPORAL_ADDRESS",
        "temporal.address",
        "http://localhost:7233",
        check::temporal,
    )
    .form(EnvForm::EmptyIsValue)
    .redact(Redact::UrlPassword),
    text(
        "FLOW_TEMPORAL_NAMESPACE",
        "temporal.namespace",
        "flow",
        check::not_blank,
    ),
    text(
        "FLOW_TEMPORAL_TASK_QUEUE",
        "temporal.task_queue",
        "flow",
        check::not_blank,
    ),
    optional("FLOW_TEMPORAL_TLS_CA_FILE", "temporal.tls_ca_file"),
    optional("FLOW_TEMPORAL_TLS_CERT_FILE", "temporal.tls_cert_file"),
    optional("FLOW_TEMPORAL_TLS_KEY_FILE", "temporal.tls_key_file"),
    optional("FLOW_TEMPORAL_TLS_SERVER_NAME", "temporal.tls_server_name"),
    optional("FLOW_TEMPORAL_API_KEY", "temporal.api_key").redact(Redact::Whole),
    int("FLOW_SCHEDULE_TICK_MS", "schedules.tick", 1000, 10, 60_000),
    text(
        "FLOW_PSM_URL",
        "psm.url",
        "http://localhost:50052",
        check::psm_url,
    )
    .redact(Redact::UrlPassword),
    int("FLOW_PSM_TIMEOUT_SECS", "psm.timeout", 30, 1, 600),
    // Empty is a value here: no managers.
    text(
        "FLOW_COMPONENT_MANAGERS",
        "components.managers",
        "",
        check::managers,
    )
    .form(EnvForm::EmptyIsValue),
    list(
        "FLOW_BMC_ALLOWED_NETWORKS",
        "components.bmc_allowed_networks",
    ),
    int("FLOW_SIM_LATENCY_MS", "sim.latency", 200, 0, 600_000),
    int("FLOW_SIM_FIRMWARE_SECS", "sim.firmware", 5, 0, 86_400),
    list("FLOW_SIM_FAIL_SERIALS", "sim.fail_serials"),
    list("FLOW_SIM_SLOW_SERIALS", "sim.slow_serials"),
    int("FLOW_SIM_SLOW_MS", "sim.slow", 2000, 0, 600_000),
    Setting::new(
        "FLOW_SIM_FAIL_BUNDLE",
        "sim.fail_bundle",
        Kind::Optional {
            check: Some(check::bundle_index),
        },
    ),
    Setting::new(
        "FLOW_SIM_FAILURE_RATE",
        "sim.failure_rate",
        Kind::Float {
            default: 0.0,
            min: 0.0,
            max: 1.0,
        },
    ),
    int(
        "FLOW_DRIFT_SYNC_INTERVAL_SECS",
        "drift.sync_interval",
        60,
        0,
        86_400,
    ),
    int(
        "FLOW_OBSERVE_TIMEOUT_SECS",
        "components.observe_timeout",
        10,
        1,
        600,
    ),
    int(
        "FLOW_DB_ACQUIRE_TIMEOUT_SECS",
        "database.acquire_timeout",
        2,
        1,
        60,
    ),
    int(
        "FLOW_SHUTDOWN_GRACE_SECS",
        "server.shutdown_grace",
        20,
        0,
        3600,
    ),
    optional("FLOW_PSM_CA_FILE", "psm.ca_file"),
    optional("FLOW_PSM_CLIENT_CERT_FILE", "psm.client_cert_file"),
    optional("FLOW_PSM_CLIENT_KEY_FILE", "psm.client_key_file"),
    text(
        "FLOW_REDFISH_SCHEME",
        "redfish.scheme",
        "https",
        check::redfish_scheme,
    )
    .form(EnvForm::Lowercase),
    int("FLOW_REDFISH_PORT", "redfish.port", 443, 0, 65_535),
    optional("FLOW_REDFISH_USERNAME", "redfish.username"),
    optional("FLOW_REDFISH_PASSWORD", "redfish.password").redact(Redact::Whole),
    optional("FLOW_REDFISH_CREDENTIALS_FILE", "redfish.credentials_file"),
    optional("FLOW_REDFISH_CA_FILE", "redfish.ca_file"),
    flag("FLOW_REDFISH_INSECURE", "redfish.insecure", false),
    int("FLOW_REDFISH_TIMEOUT_SECS", "redfish.timeout", 30, 1, 600),
    int(
        "FLOW_REDFISH_MAX_INFLIGHT_PER_BMC",
        "redfish.max_inflight_per_bmc",
        2,
        1,
        64,
    ),
    optional("FLOW_FIRMWARE_CATALOG", "redfish.firmware_catalog"),
    optional("FLOW_REDFISH_FIRMWARE_MEMBER", "redfish.firmware_member"),
    text("FLOW_AUTH", "auth.mode", "", check::auth_modes).form(EnvForm::Trimmed),
    Setting::new(
        "FLOW_JWT_JWKS_URL",
        "auth.jwt.jwks_url",
        Kind::Optional {
            check: Some(check::jwks_url),
        },
    )
    .form(EnvForm::Trimmed)
    .redact(Redact::UrlPassword),
    free("FLOW_JWT_JWKS_FILE", "auth.jwt.jwks_file", ""),
    free("FLOW_JWT_ISSUER", "auth.jwt.issuer", ""),
    free("FLOW_JWT_AUDIENCE", "auth.jwt.audience", ""),
    free("FLOW_JWT_ROLES_CLAIM", "auth.jwt.roles_claim", "roles"),
    free("FLOW_JWT_ROLE_MAP", "auth.jwt.role_map", ""),
    int(
        "FLOW_JWT_CACHE_SIZE",
        "auth.jwt.cache_size",
        10_000,
        0,
        1_000_000,
    ),
    int("FLOW_TOKEN_MAX_DAYS", "auth.token_max_days", 365, 1, 36_500),
    int("FLOW_TOKEN_CACHE_SECS", "auth.token_cache_ttl", 10, 0, 300),
    int(
        "FLOW_SESSION_IDLE_MINUTES",
        "auth.session_idle_minutes",
        30,
        1,
        1_440,
    ),
    int(
        "FLOW_SESSION_MAX_HOURS",
        "auth.session_max_hours",
        12,
        1,
        720,
    ),
    flag("FLOW_METRICS_PUBLIC", "metrics.public", true),
    int(
        "FLOW_METRICS_SAMPLE_SECS",
        "metrics.sample_interval",
        15,
        1,
        3600,
    ),
    int(
        "FLOW_AUDIT_RETENTION_DAYS",
        "audit.retention_days",
        365,
        1,
        36_500,
    ),
    text(
        "FLOW_LIMIT_RACKS_PER_REQUEST",
        "limits.racks_per_request",
        "",
        check::rack_limits,
    )
    .form(EnvForm::Trimmed),
];

/// Every environment variable the binary reads, for docs and for the docker-compose check:
/// `FLOW_CONFIG`, then each setting's variable.
pub const ENV_VARS: &[&str] = &env_vars();

const fn env_vars() -> [&'static str; SETTINGS.len() + 1] {
    let mut names = ["FLOW_CONFIG"; SETTINGS.len() + 1];
    let mut i = 0;
    while i < SETTINGS.len() {
        names[i + 1] = SETTINGS[i].env;
        i += 1;
    }
    names
}

/// The setting a file key names.
pub fn by_key(key: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.key() == key)
}

/// The setting a variable names.
pub fn by_env(env: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.env == env)
}
