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

    /// [`effective`](Self::effective) as the text of a TOML file.
    pub fn effective_toml(&self) -> String {
        self.effective()
            .into_iter()
            .map(|(key, value)| format!("{key} = {value}\n"))
            .collect()
    }
}
