//! Start-up checks of every setting, wherever it came from (defaults, file, variables). Each
//! error names the variable and its file key, so the operator knows what to change; values that
//! would make the service useless (a zero request timeout answers every request 408, a zero body
//! limit refuses every body) are refused instead of being discovered in production.

use std::ops::RangeInclusive;
use std::path::Path;

use super::{Config, ConfigError};

/// One setting's two spellings, for messages: `FLOW_REQUEST_TIMEOUT_SECS (request_timeout_secs)`.
fn name(key: &str) -> String {
    format!("FLOW_{} ({key})", key.to_ascii_uppercase())
}

fn range<T: PartialOrd + std::fmt::Display>(
    key: &str,
    value: T,
    allowed: RangeInclusive<T>,
) -> Result<(), ConfigError> {
    if allowed.contains(&value) {
        Ok(())
    } else {
        Err(ConfigError(format!(
            "{} must be between {} and {}, not {value}",
            name(key),
            allowed.start(),
            allowed.end()
        )))
    }
}

/// An `http://` or `https://` URL with a host.
pub(super) fn http_url(setting: &str, value: &str) -> Result<(), ConfigError> {
    let url = reqwest::Url::parse(value)
        .map_err(|e| ConfigError(format!("{setting} is not a URL ({value:?}): {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ConfigError(format!(
            "{setting} must be an http:// or https:// URL, not {value:?}"
        )));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(ConfigError(format!("{setting} has no host: {value:?}")));
    }
    Ok(())
}

/// `postgres://…` or `sqlite:…`; a SQLite file's directory must exist (SQLite creates the file,
/// not its directory, and fails with an opaque "unable to open database file").
fn database_url(value: &str) -> Result<(), ConfigError> {
    let setting = name("database_url");
    if value.starts_with("postgres://") || value.starts_with("postgresql://") {
        return reqwest::Url::parse(value).map(|_| ()).map_err(|e| {
            ConfigError(format!(
                "{setting} is not a URL ({}): {e}",
                super::redact_url(value)
            ))
        });
    }
    let Some(rest) = value.strip_prefix("sqlite:") else {
        return Err(ConfigError(format!(
            "{setting} must start with postgres://, postgresql:// or sqlite:, not {:?}",
            super::redact_url(value)
        )));
    };
    let path = rest.trim_start_matches("//");
    let path = path.split('?').next().unwrap_or_default();
    if path.is_empty() || path.starts_with(':') {
        return Ok(()); // in memory
    }
    let dir = Path::new(path)
        .parent()
        .filter(|d| !d.as_os_str().is_empty());
    if let Some(dir) = dir
        && !dir.is_dir()
    {
        return Err(ConfigError(format!(
            "{setting}: the directory {} of the SQLite file does not exist",
            dir.display()
        )));
    }
    Ok(())
}

impl Config {
    /// Checks every value, naming the first setting at fault.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        database_url(&self.database_url)?;
        if let Err(e) = tracing_subscriber::EnvFilter::builder().parse(&self.log) {
            return Err(ConfigError(format!(
                "{} is not a valid log filter ({:?}): {e}",
                name("log"),
                self.log
            )));
        }
        if self.log_format != "text" && self.log_format != "json" {
            return Err(ConfigError(format!(
                "{} must be text or json, not {:?}",
                name("log_format"),
                self.log_format
            )));
        }
        range("max_body_bytes", self.max_body_bytes, 1024..=1 << 30)?;
        range("request_timeout_secs", self.request_timeout_secs, 1..=3600)?;
        // Empty is a mistake (an unset variable in a template), not the inventory-only switch.
        if self.temporal_address.trim().is_empty() {
            return Err(ConfigError(format!(
                "{} is empty: set the Temporal frontend address, or `none` for an inventory-only process",
                name("temporal_address")
            )));
        }
        if self.temporal_address != "none" {
            http_url(&name("temporal_address"), &self.temporal_address)?;
        }
        for (key, value) in [
            ("temporal_namespace", &self.temporal_namespace),
            ("temporal_task_queue", &self.temporal_task_queue),
        ] {
            if value.trim().is_empty() {
                return Err(ConfigError(format!("{} must not be empty", name(key))));
            }
        }
        range("schedule_tick_ms", self.schedule_tick_ms, 10..=60_000)?;
        // `host:port` is accepted as plain HTTP/2, as the PSM client reads it.
        let psm = if self.psm_url.contains("://") {
            self.psm_url.clone()
        } else {
            format!("http://{}", self.psm_url)
        };
        http_url(&name("psm_url"), &psm)?;
        range("psm_timeout_secs", self.psm_timeout_secs, 1..=600)?;
        crate::components::registry::parse_spec(&self.component_managers)
            .map_err(|e| ConfigError(format!("{}: {e}", name("component_managers"))))?;
        range("sim_latency_ms", self.sim_latency_ms, 0..=600_000)?;
        range("sim_firmware_secs", self.sim_firmware_secs, 0..=86_400)?;
        range("sim_slow_ms", self.sim_slow_ms, 0..=600_000)?;
        // NaN is outside every range.
        range("sim_failure_rate", self.sim_failure_rate, 0.0..=1.0)?;
        range(
            "drift_sync_interval_secs",
            self.drift_sync_interval_secs,
            0..=86_400,
        )?;
        range("observe_timeout_secs", self.observe_timeout_secs, 1..=600)?;
        range(
            "db_acquire_timeout_secs",
            self.db_acquire_timeout_secs,
            1..=60,
        )?;
        range("shutdown_grace_secs", self.shutdown_grace_secs, 0..=3600)?;
        range("redfish_timeout_secs", self.redfish_timeout_secs, 1..=600)?;
        range(
            "redfish_max_inflight_per_bmc",
            self.redfish_max_inflight_per_bmc,
            1..=64,
        )?;
        self.validate_redfish()?;
        self.validate_auth()?;
        Ok(())
    }
}
