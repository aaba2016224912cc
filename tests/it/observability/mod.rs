//! Running Flow in production: Prometheus metrics, traces across the API, Temporal and the
//! devices, the configuration check, the exact OpenAPI document, and the deploy/ files.

mod config_check;
mod deploy;
mod document;
mod fresh;
mod metrics;
mod otlp;
mod trace;

/// Parses a Prometheus text exposition into `(series, value)` pairs, series as written
/// (`name{label="value",...}`).
pub fn samples(text: &str) -> Vec<(String, f64)> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            Some((series.to_string(), value.parse().ok()?))
        })
        .collect()
}

/// The value of the series named `name` whose labels include every `labels` pair (summed over
/// the other labels), 0 when there is none.
pub fn value(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    samples(text)
        .into_iter()
        .filter(|(series, _)| {
            let (n, rest) = series.split_once('{').unwrap_or((series.as_str(), ""));
            n == name
                && labels
                    .iter()
                    .all(|(k, v)| rest.contains(&format!("{k}=\"{v}\"")))
        })
        .map(|(_, v)| v)
        .sum()
}
