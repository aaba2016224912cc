//! The effective configuration as TOML lines (what `flow config check` prints), secrets redacted:
//! the same file keys `FLOW_CONFIG` accepts, so the output can seed a config file.

use super::{Config, redact_url};

fn quoted(value: &str) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// Marks an unset optional setting, which the TOML output leaves out (an empty string would
/// read back as a set, empty path).
const UNSET: &str = "";

fn optional(value: &Option<String>) -> String {
    value.as_deref().map(quoted).unwrap_or_else(|| UNSET.into())
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
            (
                "db_acquire_timeout_secs",
                self.db_acquire_timeout_secs.to_string(),
            ),
            ("shutdown_grace_secs", self.shutdown_grace_secs.to_string()),
            ("psm_ca_file", optional(&self.psm_ca_file)),
            ("psm_client_cert_file", optional(&self.psm_client_cert_file)),
            ("psm_client_key_file", optional(&self.psm_client_key_file)),
            ("redfish_scheme", quoted(&self.redfish_scheme)),
            ("redfish_port", self.redfish_port.to_string()),
            ("redfish_username", optional(&self.redfish_username)),
            (
                "redfish_password",
                optional(&self.redfish_password.as_ref().map(|_| "***".to_string())),
            ),
            (
                "redfish_credentials_file",
                optional(&self.redfish_credentials_file),
            ),
            ("redfish_ca_file", optional(&self.redfish_ca_file)),
            ("redfish_insecure", self.redfish_insecure.to_string()),
            (
                "redfish_timeout_secs",
                self.redfish_timeout_secs.to_string(),
            ),
            (
                "redfish_max_inflight_per_bmc",
                self.redfish_max_inflight_per_bmc.to_string(),
            ),
            ("firmware_catalog", optional(&self.firmware_catalog)),
            ("auth", quoted(&self.auth)),
            ("jwt_jwks_url", quoted(&self.jwt_jwks_url)),
            ("jwt_jwks_file", quoted(&self.jwt_jwks_file)),
            ("jwt_issuer", quoted(&self.jwt_issuer)),
            ("jwt_audience", quoted(&self.jwt_audience)),
            ("jwt_roles_claim", quoted(&self.jwt_roles_claim)),
            ("jwt_role_map", quoted(&self.jwt_role_map)),
            ("metrics_public", self.metrics_public.to_string()),
            (
                "audit_retention_days",
                self.audit_retention_days.to_string(),
            ),
        ]
    }

    /// [`effective`](Self::effective) as the text of a TOML file.
    pub fn effective_toml(&self) -> String {
        self.effective()
            .into_iter()
            .filter(|(_, value)| value != UNSET)
            .map(|(key, value)| format!("{key} = {value}\n"))
            .collect()
    }
}
