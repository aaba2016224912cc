//! The effective configuration as TOML lines (what `flow config check` prints), secrets redacted
//! as their definitions say: the same file keys `FLOW_CONFIG` accepts, so the output can seed a
//! config file.

use toml::Value;

use super::settings::{Redact, SETTINGS};
use super::{Config, load, redact_url};

/// A value as TOML text: strings and lists quoted as JSON (which TOML reads alike).
fn render(value: &Value) -> String {
    match value {
        Value::String(s) => serde_json::to_string(s).unwrap_or_default(),
        Value::Float(x) => format!("{x:?}"),
        Value::Array(items) => {
            let items: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
            serde_json::to_string(&items).unwrap_or_default()
        }
        Value::Integer(n) => n.to_string(),
        Value::Boolean(b) => b.to_string(),
        other => other.type_str().to_string(), // no setting has dates or tables
    }
}

impl Config {
    /// `key = value` per setting, in definition order, secrets redacted; unset optional
    /// settings are left out (an empty string would read back as a set, empty path).
    pub fn effective(&self) -> Vec<(String, String)> {
        let tree = match Value::try_from(self) {
            Ok(Value::Table(tree)) => tree,
            _ => return Vec::new(), // every field is a plain value: does not happen
        };
        SETTINGS
            .iter()
            .filter_map(|setting| {
                let value = load::get(&tree, setting.path)?;
                let value = match (setting.redact, value) {
                    (Redact::Whole, _) => Value::String("***".into()),
                    (Redact::UrlPassword, Value::String(url)) => Value::String(redact_url(url)),
                    _ => value.clone(),
                };
                Some((setting.key(), render(&value)))
            })
            .collect()
    }

    /// [`effective`](Self::effective) on one line, for the start-up log: the same redaction
    /// as `flow config check` (passwords and secret query parameters of URLs hidden).
    pub fn effective_line(&self) -> String {
        self.effective()
            .into_iter()
            .map(|(key, value)| format!("{key}={value}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// [`effective`](Self::effective) as the text of a TOML file.
    pub fn effective_toml(&self) -> String {
        self.effective()
            .into_iter()
            .map(|(key, value)| format!("{key} = {value}\n"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::settings::{self, Kind};
    use super::super::tests::env;
    use super::super::{Config, ENV_VARS};

    #[test]
    fn every_setting_has_one_variable_and_a_place_in_the_tree() {
        let names: std::collections::BTreeSet<&str> = ENV_VARS.iter().copied().collect();
        assert_eq!(names.len(), ENV_VARS.len(), "a variable defined twice");
        assert_eq!(ENV_VARS.len(), settings::SETTINGS.len() + 1);
        // A readable file: the Temporal certificate files are opened at load.
        let file = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
        let mut optional: Vec<(&str, &str)> = settings::SETTINGS
            .iter()
            .filter(|s| matches!(s.kind, Kind::Optional { .. }))
            .map(|s| match s.env {
                e if e.ends_with("_URL") => (e, "https://idp.example/keys"),
                // A bundle index, not a path.
                "FLOW_SIM_FAIL_BUNDLE" => (s.env, "0"),
                e => (e, file),
            })
            .collect();
        // TLS settings need an https:// frontend.
        optional.push(("FLOW_TEMPORAL_ADDRESS", "https://temporal.example:7233"));
        let c = Config::load(&env(&optional)).unwrap();
        let effective = c.effective();
        assert_eq!(effective.len(), settings::SETTINGS.len());
        assert!(effective.contains(&("redfish_password".into(), "\"***\"".into())));
    }

    #[test]
    fn the_effective_configuration_reads_back_as_the_same_configuration() {
        let c = Config::load(&env(&[
            ("FLOW_DATABASE_URL", "postgres://flow@db/flow"),
            ("FLOW_COMPONENT_MANAGERS", "powershelf=psm,compute=sim"),
            ("FLOW_SIM_SLOW_SERIALS", "SN3,SN4"),
            ("FLOW_SIM_FAILURE_RATE", "0.25"),
            ("FLOW_SCHEDULE_TICK_MS", "250"),
            ("FLOW_AUTH", "token"),
        ]))
        .unwrap();
        let dir = std::env::temp_dir().join(format!("flow-config-back-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("effective.toml");
        std::fs::write(&file, c.effective_toml()).unwrap();
        let again = Config::load(&env(&[("FLOW_CONFIG", file.to_str().unwrap())])).unwrap();
        assert_eq!(again, c);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn debug_output_hides_every_secret() {
        let c = Config::load(&env(&[
            ("FLOW_DATABASE_URL", "postgres://flow:db-s3cret@db/flow"),
            ("FLOW_REDFISH_USERNAME", "admin"),
            ("FLOW_REDFISH_PASSWORD", "bmc-s3cret"),
        ]))
        .unwrap();
        let text = format!("{c:?}{}", c.effective_toml());
        assert!(!text.contains("s3cret"), "{text}");
        assert!(text.contains("postgres://flow:***@db/flow"), "{text}");
    }

    #[test]
    fn the_start_up_line_hides_url_passwords_and_secret_query_parameters() {
        let c = Config::load(&env(&[
            (
                "FLOW_DATABASE_URL",
                "postgres://flow@db/flow?password=db-s3cret",
            ),
            ("FLOW_TEMPORAL_ADDRESS", "https://u:t-s3cret@temporal:7233"),
            (
                "FLOW_JWT_JWKS_URL",
                "https://idp.example/keys?token=j-s3cret",
            ),
            ("FLOW_REDFISH_PASSWORD", "bmc-s3cret"),
        ]))
        .unwrap();
        let line = c.effective_line();
        assert!(!line.contains("s3cret"), "{line}");
        assert!(
            line.contains("password=***") && line.contains("token=***"),
            "{line}"
        );
        assert!(!line.contains('\n'));
    }
}
