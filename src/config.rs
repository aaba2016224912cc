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
            ("FLOW_TEMPORAL_ADDRESS", &mut self.temporal_address),
            ("FLOW_TEMPORAL_NAMESPACE", &mut self.temporal_namespace),
            ("FLOW_TEMPORAL_TASK_QUEUE", &mut self.temporal_task_queue),
            ("FLOW_PSM_URL", &mut self.psm_url),
        ] {
            if let Some(v) = get(key) {
                *field = v.clone();
            }
        }
        self.apply_component_env(env)
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
