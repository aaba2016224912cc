//! The effective configuration as TOML lines (what `flow config check` prints), secrets redacted:
//! the same file keys `FLOW_CONFIG` accepts, so the output can seed a config file.

use super::{Config, redact_url};

fn quoted(value: &str) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

fn list(values: &[String]) -> String {
    serde_json::to_string(values).unwrap_or_default()
}

impl Config {
    /// `key = value` per setting, in file-key order; passwords in URLs are replaced by `***`.
    pub fn effective(&self) -> Vec<(&'static str, String)> {
        vec![
            ("database_url", quoted(&redact_url(&self.database_url))),
            ("listen", quoted(&self.listen.to_string())),
            ("log", quoted(&self.log)),
            ("log_format", quoted(&self.log_format)),
            ("max_body_bytes", self.max_body_bytes.to_string()),
            (
                "request_timeout_secs",
                self.request_timeout_secs.to_string(),
            ),
            ("migrate_on_start", self.migrate_on_start.to_string()),
            ("dev_mode", self.dev_mode.to_string()),
            (
                "temporal_address",
                quoted(&redact_url(&self.temporal_address)),
            ),
            ("temporal_namespace", quoted(&self.temporal_namespace)),
            ("temporal_task_queue", quoted(&self.temporal_task_queue)),
            ("schedule_tick_ms", self.schedule_tick_ms.to_string()),
            ("psm_url", quoted(&redact_url(&self.psm_url))),
            ("psm_timeout_secs", self.psm_timeout_secs.to_string()),
            ("component_managers", quoted(&self.component_managers)),
            ("sim_latency_ms", self.sim_latency_ms.to_string()),
            ("sim_firmware_secs", self.sim_firmware_secs.to_string()),
            ("sim_fail_serials", list(&self.sim_fail_serials)),
            ("sim_slow_serials", list(&self.sim_slow_serials)),
            ("sim_slow_ms", self.sim_slow_ms.to_string()),
            ("sim_failure_rate", format!("{:?}", self.sim_failure_rate)),
            (
                "drift_sync_interval_secs",
                self.drift_sync_interval_secs.to_string(),
            ),
            (
                "observe_timeout_secs",
                self.observe_timeout_secs.to_string(),
            ),
        ]
    }

    /// [`effective`](Self::effective) as the text of a TOML file.
    pub fn effective_toml(&self) -> String {
        self.effective()
            .into_iter()
            .map(|(key, value)| format!("{key} = {value}\n"))
            .collect()
    }
}
