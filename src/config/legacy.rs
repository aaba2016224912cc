//! The original service's variables (`DB_*`, `TEMPORAL_*`, `PSM_API_URL`), still accepted for
//! operators moving over. They fill the settings they describe after the file and before the
//! `FLOW_*` variables, which override them.

use std::collections::HashMap;

use super::settings::{Setting, by_env};

/// The original service's variable names.
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

/// The settings the legacy variables give values to, as variable text.
pub(super) fn values(env: &HashMap<String, String>) -> Vec<(&'static Setting, String)> {
    let get = |k: &str| env.get(k).filter(|v| !v.is_empty()).cloned();
    let mut values = Vec::new();
    if let Some(host) = get("DB_ADDR") {
        let port = get("DB_PORT").unwrap_or_else(|| "5432".into());
        let user = get("DB_USER").unwrap_or_else(|| "postgres".into());
        let password = get("DB_PASSWORD")
            .map(|p| format!(":{p}"))
            .unwrap_or_default();
        let database = get("DB_DATABASE").unwrap_or_else(|| "flow".into());
        let url = format!("postgres://{user}{password}@{host}:{port}/{database}");
        values.push(("FLOW_DATABASE_URL", url));
    }
    if let Some(host) = get("TEMPORAL_HOST") {
        let port = get("TEMPORAL_PORT").unwrap_or_else(|| "7233".into());
        values.push(("FLOW_TEMPORAL_ADDRESS", format!("http://{host}:{port}")));
    }
    if let Some(ns) = get("TEMPORAL_NAMESPACE") {
        values.push(("FLOW_TEMPORAL_NAMESPACE", ns));
    }
    if let Some(url) = get("PSM_API_URL") {
        let url = if url.contains("://") {
            url
        } else {
            format!("http://{url}")
        };
        values.push(("FLOW_PSM_URL", url));
    }
    // Each name above is a defined setting's variable.
    values
        .into_iter()
        .filter_map(|(name, text)| Some((by_env(name)?, text)))
        .collect()
}
