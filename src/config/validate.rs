//! Start-up checks. [`check`] holds the checks of single values, which the settings table names
//! and the loader runs on every value wherever it came from (defaults, file, variables); the
//! rest of this module checks settings that only make sense together (the PSM client key pair,
//! Temporal's credentials and TLS, a Redfish manager with no login, `FLOW_AUTH` and what its modes need). Values that would
//! make the service useless (a zero request timeout answers every request 408, a zero body
//! limit refuses every body) are refused instead of being discovered in production.

use super::ProviderKind;
use super::{Config, ConfigError};

/// Checks of one value; the error completes "`FLOW_X (x)` …".
pub(super) mod check {
    use std::path::Path;

    use super::super::redact_url;

    /// An `http://` or `https://` URL with a host.
    fn http_url(value: &str) -> Result<(), String> {
        let url =
            reqwest::Url::parse(value).map_err(|e| format!("is not a URL ({value:?}): {e}"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!("must be an http:// or https:// URL, not {value:?}"));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(format!("has no host: {value:?}"));
        }
        Ok(())
    }

    /// `postgres://…` or `sqlite:…`; a SQLite file's directory must exist (SQLite creates the
    /// file, not its directory, and fails with an opaque "unable to open database file").
    pub fn database_url(value: &str) -> Result<(), String> {
        if value.starts_with("postgres://") || value.starts_with("postgresql://") {
            return reqwest::Url::parse(value)
                .map(|_| ())
                .map_err(|e| format!("is not a URL ({}): {e}", redact_url(value)));
        }
        let Some(rest) = value.strip_prefix("sqlite:") else {
            return Err(format!(
                "must start with postgres://, postgresql:// or sqlite:, not {:?}",
                redact_url(value)
            ));
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
            return Err(format!(
                ": the directory {} of the SQLite file does not exist",
                dir.display()
            ));
        }
        Ok(())
    }

    /// Whether `value` reads as a `T`; when not, the parser's reason.
    fn parses<T: std::str::FromStr>(value: &str) -> Result<(), T::Err> {
        value.parse::<T>().map(|_| ())
    }

    pub fn socket_addr(value: &str) -> Result<(), String> {
        parses::<std::net::SocketAddr>(value)
            .map_err(|e| format!("is not an address and port ({value:?}): {e}"))
    }

    pub fn log_filter(value: &str) -> Result<(), String> {
        tracing_subscriber::EnvFilter::builder()
            .parse(value)
            .map(|_| ())
            .map_err(|e| format!("is not a valid log filter ({value:?}): {e}"))
    }

    pub fn log_format(value: &str) -> Result<(), String> {
        match value {
            "text" | "json" => Ok(()),
            _ => Err(format!("must be text or json, not {value:?}")),
        }
    }

    /// An URL, or `none` for an inventory-only process. Empty is a mistake (an unset variable
    /// in a template), not the inventory-only switch.
    pub fn temporal(value: &str) -> Result<(), String> {
        match value.trim() {
            "" => Err(
                "is empty: set the Temporal frontend address, or `none` for an \
                       inventory-only process"
                    .into(),
            ),
            "none" => Ok(()),
            _ => http_url(value),
        }
    }

    /// A firmware recipe's bundle index: a whole number from 0.
    pub fn bundle_index(value: &str) -> Result<(), String> {
        value
            .trim()
            .parse::<u32>()
            .map(|_| ())
            .map_err(|_| "must be a bundle index: a whole number from 0".into())
    }

    pub fn not_blank(value: &str) -> Result<(), String> {
        if value.trim().is_empty() {
            Err("must not be empty".into())
        } else {
            Ok(())
        }
    }

    /// `host:port` is accepted as plain HTTP/2, as the PSM client reads it.
    pub fn psm_url(value: &str) -> Result<(), String> {
        if value.contains("://") {
            http_url(value)
        } else {
            http_url(&format!("http://{value}"))
        }
    }

    pub fn managers(value: &str) -> Result<(), String> {
        parses::<super::super::Managers>(value).map_err(|e| format!(": {e}"))
    }

    /// An `http(s)://` URL; empty (as older `flow config check` output has it) is unset.
    pub fn jwks_url(value: &str) -> Result<(), String> {
        if value.is_empty() {
            Ok(())
        } else {
            http_url(value)
        }
    }

    pub fn redfish_scheme(value: &str) -> Result<(), String> {
        match value {
            "https" | "http" => Ok(()),
            _ => Err(format!("must be https or http, not {value:?}")),
        }
    }

    /// `role=count,…`; empty is no limit.
    pub fn rack_limits(value: &str) -> Result<(), String> {
        super::super::RackLimits::parse(value)
            .map(drop)
            .map_err(|e| format!(": {e}"))
    }

    /// Empty is "unset", which `flow serve` and `flow worker` refuse later with advice.
    pub fn auth_modes(value: &str) -> Result<(), String> {
        if value.is_empty() || super::super::Modes::parse(value).is_some() {
            Ok(())
        } else {
            Err(format!(
                "must be jwt, token, jwt,token or none, not {value:?}"
            ))
        }
    }
}

impl Config {
    /// Checks the settings that go together, naming the first one at fault.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if let Err(e) = crate::config::parse_networks(&self.server.trusted_proxies) {
            return Err(ConfigError(format!("FLOW_TRUSTED_PROXIES: {e}")));
        }
        if let Some(bad) = self
            .server
            .bench_skip_middleware
            .iter()
            .find(|m| !matches!(m.as_str(), "metrics" | "trace" | "request_id"))
        {
            return Err(ConfigError(format!(
                "FLOW_BENCH_SKIP_MIDDLEWARE: {bad:?} is none of metrics, trace, request_id"
            )));
        }
        if let Err(e) =
            crate::domain::ManagementNetworks::parse(&self.components.bmc_allowed_networks)
        {
            return Err(ConfigError(format!("FLOW_BMC_ALLOWED_NETWORKS: {e}")));
        }
        self.validate_redfish()?;
        self.validate_temporal()?;
        self.validate_auth()
    }

    /// The management network as parsed (checked at load, so a bad list cannot reach here).
    pub fn bmc_networks(&self) -> crate::domain::ManagementNetworks {
        crate::domain::ManagementNetworks::parse(&self.components.bmc_allowed_networks)
            .unwrap_or_default()
    }

    /// What `flow serve` and `flow worker` refuse: a manager that sends logins to BMCs or PMCs
    /// (`redfish`, `psm`) with no management network to confine them to.
    pub fn check_bmc_confinement(&self) -> Result<(), ConfigError> {
        let managers = &self.components.managers;
        let sends_logins = managers.uses(ProviderKind::Redfish) || managers.uses(ProviderKind::Psm);
        if sends_logins && self.components.bmc_allowed_networks.is_empty() {
            return Err(ConfigError(
                "FLOW_BMC_ALLOWED_NETWORKS is not set: FLOW_COMPONENT_MANAGERS uses redfish or psm, \
                 which send BMC/PMC logins; list the management network's CIDRs (e.g. \
                 FLOW_BMC_ALLOWED_NETWORKS=10.20.0.0/16,fd00:20::/48), and nothing outside it is \
                 ever contacted"
                    .into(),
            ));
        }
        Ok(())
    }

    /// Temporal's credentials: the key pair together, readable files, and TLS under every
    /// credential (an API key sent in clear text would be one for anyone on the path).
    fn validate_temporal(&self) -> Result<(), ConfigError> {
        let t = &self.temporal;
        if t.tls_cert_file.is_some() != t.tls_key_file.is_some() {
            return Err(ConfigError(
                "FLOW_TEMPORAL_TLS_CERT_FILE and FLOW_TEMPORAL_TLS_KEY_FILE go together".into(),
            ));
        }
        let files = [
            ("FLOW_TEMPORAL_TLS_CA_FILE", &t.tls_ca_file),
            ("FLOW_TEMPORAL_TLS_CERT_FILE", &t.tls_cert_file),
            ("FLOW_TEMPORAL_TLS_KEY_FILE", &t.tls_key_file),
        ];
        for (env, path) in files.iter().filter_map(|(env, p)| Some((env, p.as_ref()?))) {
            if let Err(e) = std::fs::File::open(path) {
                return Err(ConfigError(format!(
                    "{env}: cannot read {}: {e}",
                    path.display()
                )));
            }
        }
        let wants_tls = files.iter().any(|(_, p)| p.is_some())
            || t.tls_server_name.is_some()
            || t.api_key.is_some();
        let address = t.address.trim();
        if wants_tls && address != "none" && !address.starts_with("https://") {
            return Err(ConfigError(
                "FLOW_TEMPORAL_TLS_* and FLOW_TEMPORAL_API_KEY need an https:// \
                 FLOW_TEMPORAL_ADDRESS"
                    .into(),
            ));
        }
        Ok(())
    }

    /// PSM's client key pair, and a Redfish manager with no login to send.
    fn validate_redfish(&self) -> Result<(), ConfigError> {
        if self.psm.client_cert_file.is_some() != self.psm.client_key_file.is_some() {
            return Err(ConfigError(
                "FLOW_PSM_CLIENT_CERT_FILE and FLOW_PSM_CLIENT_KEY_FILE go together".into(),
            ));
        }
        let redfish = &self.redfish;
        let has_default = redfish.username.is_some() && redfish.password.is_some();
        if self.components.managers.uses(ProviderKind::Redfish)
            && !has_default
            && redfish.credentials_file.is_none()
        {
            return Err(ConfigError(
                "FLOW_COMPONENT_MANAGERS uses redfish but no BMC credentials are set: set \
                 FLOW_REDFISH_USERNAME and FLOW_REDFISH_PASSWORD, or FLOW_REDFISH_CREDENTIALS_FILE"
                    .into(),
            ));
        }
        Ok(())
    }

    /// `FLOW_AUTH` and what its modes need, checked together.
    fn validate_auth(&self) -> Result<(), ConfigError> {
        let Some(modes) = self.auth_modes() else {
            return Ok(());
        };
        if !modes.jwt {
            return Ok(());
        }
        let jwt = &self.auth.jwt;
        match (jwt.jwks_url.is_none(), jwt.jwks_file.is_empty()) {
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
        for (key, value) in [
            ("FLOW_JWT_ISSUER", &jwt.issuer),
            ("FLOW_JWT_AUDIENCE", &jwt.audience),
            ("FLOW_JWT_ROLES_CLAIM", &jwt.roles_claim),
        ] {
            if value.is_empty() {
                return Err(ConfigError(format!("FLOW_AUTH=jwt needs {key}")));
            }
        }
        super::parse_role_map(&jwt.role_map)
            .map_err(|e| ConfigError(format!("FLOW_JWT_ROLE_MAP: {e}")))?;
        Ok(())
    }
}
