//! Typed configuration, loaded once at start-up as a tree of sections (server, database,
//! temporal, psm, redfish, sim, …).
//!
//! Each setting is defined once, in `settings`: its `FLOW_*` variable (the file key is the same
//! name without `FLOW_`, in lower case), its place in the tree, its default, its checks and
//! whether it is secret. The loader (`load`) layers defaults, then the TOML file `FLOW_CONFIG`
//! names, then the original service's variables (`legacy`), then `FLOW_*` variables; every
//! value is checked against its definition before the tree is built, so an error names the
//! variable. The sections themselves are in `tree`.

use std::collections::HashMap;

mod effective;
mod legacy;
mod load;
mod managers;
mod roles;
mod secret;
mod settings;
mod tree;
mod units;
mod validate;

pub use legacy::LEGACY_ENV_VARS;
pub use managers::{Managers, ProviderKind, parse_spec};
pub use roles::{Modes, RackLimits, parse_role_map};
pub use secret::Secret;
pub use settings::ENV_VARS;
pub use tree::{
    Audit, Auth, Components, Config, Database, Drift, Jwt, Limits, Log, Metrics, Psm, Redfish,
    Schedules, Server, Sim, Temporal,
};

/// Hides the password in `scheme://user:password@host/db`, and the values of query parameters
/// that name a secret (`?password=…`, `sslpassword`, `token`, `api_key`, …).
pub fn redact_url(url: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let mut out = redact_userinfo(base);
    if let Some(query) = query {
        let pairs: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((key, _)) if names_secret(key) => format!("{key}=***"),
                _ => pair.to_string(),
            })
            .collect();
        out.push('?');
        out.push_str(&pairs.join("&"));
    }
    out
}

/// Whether a query parameter's name says its value is a secret.
fn names_secret(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    [
        "pass",
        "pwd",
        "secret",
        "token",
        "key",
        "auth",
        "credential",
        "signature",
    ]
    .iter()
    .any(|word| key.contains(word))
}

fn redact_userinfo(url: &str) -> String {
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

/// Parses addresses and CIDRs (`10.0.0.0/8`, `fd00::/48`, `127.0.0.1`; a bare address is a
/// network of one).
pub fn parse_networks(items: &[String]) -> Result<Vec<ipnet::IpNet>, String> {
    items
        .iter()
        .map(|item| {
            let item = item.trim();
            item.parse::<ipnet::IpNet>()
                .or_else(|_| item.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
                .map_err(|_| format!("{item:?} is not an address or CIDR"))
        })
        .collect()
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
        let config = load::layered(env)?;
        config.validate()?;
        crate::telemetry::trace::check_env(env).map_err(ConfigError)?;
        Ok(config)
    }

    /// `FLOW_LIMIT_RACKS_PER_REQUEST` as parsed (checked at load, so a bad value cannot reach
    /// here).
    pub fn rack_limits(&self) -> RackLimits {
        RackLimits::parse(&self.limits.racks_per_request).unwrap_or_default()
    }

    /// The parsed `FLOW_AUTH`, or `None` while it is unset.
    pub fn auth_modes(&self) -> Option<Modes> {
        self.auth.modes()
    }
}

impl Auth {
    /// `FLOW_AUTH` as modes; `None` when unset (or not one `Config::validate` accepts).
    pub fn modes(&self) -> Option<Modes> {
        Modes::parse(&self.mode).filter(|_| !self.mode.is_empty())
    }
}

impl Default for Config {
    /// Every setting at its defined default.
    fn default() -> Self {
        load::defaults()
    }
}

#[cfg(test)]
mod tests;
