//! Typed configuration: defaults, then an optional TOML file, then `FLOW_*` (and legacy) variables.

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::Path;

use serde::Deserialize;

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
    "FLOW_PSM_URL",
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
#[derive(Clone, Deserialize, PartialEq, Eq)]
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
    pub psm_url: String,
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
            psm_url: "http://localhost:50052".into(),
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
            .field("psm_url", &self.psm_url)
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
            if v != "text" && v != "json" {
                return Err(ConfigError(format!(
                    "FLOW_LOG_FORMAT must be text or json, not {v:?}"
                )));
            }
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
        let c = Config::load(&env(&[
            ("DB_ADDR", "db"),
            ("FLOW_DATABASE_URL", "sqlite://x.db"),
        ]))
        .unwrap();
        assert_eq!(c.database_url, "sqlite://x.db");
    }

    #[test]
    fn bad_values_name_the_variable() {
        let err = Config::load(&env(&[("FLOW_LISTEN", "nope")])).unwrap_err();
        assert!(err.to_string().contains("FLOW_LISTEN"), "{err}");
    }
}
