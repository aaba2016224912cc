//! A captured BMC tree (tests/mockups, one gzip'd `{path: body}` object) and what bmcweb
//! checks before running an action: the target names an action of some resource, and its
//! `ResetType` is one the tree lists inline or in the action's `@Redfish.ActionInfo`.

use std::collections::HashMap;
use std::io::Read;

use serde_json::{Value, json};

/// The two captures: a GB200 NVL compute tray's BMC and a GB200 NVLink switch tray's BMC.
pub const GB200: &str = "nvidia_gb200";
pub const GBSWITCH: &str = "nvidia_gbswitch";

/// Resources by path, without a trailing slash (`/redfish/v1`, `/redfish/v1/Systems`).
pub struct Tree(pub HashMap<String, Value>);

/// An action a POST target names: the resource that offers it and the action's name.
pub struct Offered {
    pub resource: String,
    pub name: String,
    pub allowed: Option<Vec<String>>,
}

pub fn key(path: &str) -> String {
    let path = path.split('?').next().unwrap_or_default();
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        "/".into()
    } else {
        trimmed.into()
    }
}

/// A Redfish error body as bmcweb sends it.
pub fn error(message_id: &str, message: &str) -> Value {
    json!({"error": {"code": format!("Base.1.16.{message_id}"), "message": message,
        "@Message.ExtendedInfo": [{"@odata.type": "#Message.v1_1_1.Message",
            "MessageId": format!("Base.1.16.{message_id}"), "Message": message,
            "Severity": "Warning", "Resolution": "Correct the request and resubmit."}]}})
}

impl Tree {
    pub fn load(name: &str) -> Self {
        let path = format!(
            "{}/tests/mockups/{name}.json.gz",
            env!("CARGO_MANIFEST_DIR")
        );
        let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let mut text = String::new();
        flate2::read::GzDecoder::new(file)
            .read_to_string(&mut text)
            .unwrap();
        Self(serde_json::from_str(&text).unwrap())
    }

    pub fn get(&self, path: &str) -> Option<&Value> {
        self.0.get(&key(path))
    }

    /// Sets `pointer` (e.g. `/SerialNumber`) of the resource at `path`.
    pub fn set(&mut self, path: &str, pointer: &str, value: Value) {
        let resource = self
            .0
            .get_mut(&key(path))
            .unwrap_or_else(|| panic!("no {path} in the tree"));
        match resource.pointer_mut(pointer) {
            Some(slot) => *slot = value,
            None => {
                let field = pointer.trim_start_matches('/');
                resource[field] = value;
            }
        }
    }

    /// The resource offering the action whose target is `path`.
    pub fn offered(&self, path: &str) -> Option<Offered> {
        let path = key(path);
        for (resource, body) in &self.0 {
            let Some(actions) = body.get("Actions").and_then(Value::as_object) else {
                continue;
            };
            for (name, action) in actions {
                if action.get("target").and_then(Value::as_str) != Some(path.as_str()) {
                    continue;
                }
                let allowed = match action.get("ResetType@Redfish.AllowableValues") {
                    Some(values) => strings(values),
                    None => action
                        .get("@Redfish.ActionInfo")
                        .and_then(Value::as_str)
                        .and_then(|info| self.get(info))
                        .and_then(|info| info.get("Parameters")?.as_array().cloned())
                        .and_then(|ps| {
                            ps.into_iter()
                                .find(|p| p["Name"] == "ResetType")
                                .and_then(|p| strings(&p["AllowableValues"]))
                        }),
                };
                return Some(Offered {
                    resource: resource.clone(),
                    name: name.trim_start_matches('#').to_string(),
                    allowed,
                });
            }
        }
        None
    }
}

fn strings(values: &Value) -> Option<Vec<String>> {
    values.as_array().map(|a| {
        a.iter()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect()
    })
}

impl Offered {
    /// bmcweb's answer to a reset body: `Ok(type)` or the 400 body it would send.
    pub fn check(&self, body: &Value) -> Result<String, Value> {
        let Some(kind) = body.get("ResetType").and_then(Value::as_str) else {
            return Err(error(
                "ActionParameterMissing",
                &format!(
                    "The action {} requires the parameter ResetType to be present in the \
                     request body.",
                    self.name
                ),
            ));
        };
        if self
            .allowed
            .as_ref()
            .is_some_and(|a| !a.iter().any(|t| t == kind))
        {
            return Err(error(
                "ActionParameterNotSupported",
                &format!(
                    "The parameter ResetType for the action {} is not supported on the target \
                     resource: the value '{kind}' is not in the list of acceptable values.",
                    self.name
                ),
            ));
        }
        Ok(kind.to_string())
    }
}
