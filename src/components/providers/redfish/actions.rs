//! A resource's actions and the values each allows. bmcweb lists them in a separate
//! `@Redfish.ActionInfo` resource rather than inline (`ResetType@Redfish.AllowableValues`), and
//! refuses a POST without a listed value; both forms are read, the ActionInfo once per BMC.

use serde_json::Value;

use super::RedfishManager;
use crate::components::{Device, DeviceError};

/// One action of one resource: where to post it and the `ResetType`s it allows (`None`: the BMC
/// lists none, which Redfish reads as "any").
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Action {
    pub target: String,
    pub allowed: Option<Vec<String>>,
}

impl Action {
    pub fn allows(&self, kind: &str) -> bool {
        self.allowed
            .as_ref()
            .is_none_or(|a| a.iter().any(|t| t == kind))
    }

    /// The first of `wanted` that the BMC allows.
    pub fn first_allowed<'a>(&self, wanted: &[&'a str]) -> Option<&'a str> {
        wanted.iter().copied().find(|k| self.allows(k))
    }

    /// The allowed values for messages.
    pub fn listed(&self) -> String {
        self.allowed
            .as_deref()
            .map(|a| a.join(", "))
            .unwrap_or_else(|| "any".into())
    }
}

fn strings(values: &Value) -> Option<Vec<String>> {
    values.as_array().map(|v| {
        v.iter()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect()
    })
}

/// `ResetType`'s allowed values in an ActionInfo resource.
fn info_values(info: &Value, parameter: &str) -> Option<Vec<String>> {
    info.get("Parameters")?
        .as_array()?
        .iter()
        .find(|p| p.get("Name").and_then(Value::as_str) == Some(parameter))
        .and_then(|p| p.get("AllowableValues"))
        .and_then(strings)
}

impl RedfishManager {
    /// The action `name` (e.g. `ComputerSystem.Reset`) of `resource`, with its allowed
    /// `ResetType`s; `None` when the resource does not offer it.
    pub(super) async fn action(
        &self,
        device: &Device,
        resource: &Value,
        name: &str,
    ) -> Result<Option<Action>, DeviceError> {
        let Some(a) = resource.pointer(&format!("/Actions/#{name}")) else {
            return Ok(None);
        };
        let Some(target) = a.get("target").and_then(Value::as_str) else {
            return Ok(None);
        };
        let inline = a.get("ResetType@Redfish.AllowableValues").and_then(strings);
        let allowed = match (inline, a.get("@Redfish.ActionInfo").and_then(Value::as_str)) {
            (Some(values), _) => Some(values),
            (None, Some(info)) => self.action_info(device, info).await?,
            (None, None) => None,
        };
        Ok(Some(Action {
            target: target.to_string(),
            allowed,
        }))
    }

    /// An ActionInfo's `ResetType` values, read once per BMC and resource.
    async fn action_info(
        &self,
        device: &Device,
        path: &str,
    ) -> Result<Option<Vec<String>>, DeviceError> {
        let key = (super::bmc_ip(device)?.to_string(), path.to_string());
        if let Some(found) = self
            .action_infos
            .lock()
            .ok()
            .and_then(|c| c.get(&key).cloned())
        {
            return Ok(found);
        }
        let info = self.get(device, path).await?;
        let values = info_values(&info, "ResetType");
        if let Ok(mut cache) = self.action_infos.lock() {
            cache.insert(key, values.clone());
        }
        Ok(values)
    }

    /// `unsupported`: the BMC does not offer `what` with any of the types an operation needs.
    pub(super) fn not_offered(
        device: &Device,
        what: &str,
        wanted: &[&str],
        action: &Action,
    ) -> DeviceError {
        DeviceError::Unsupported(format!(
            "{} {}: the BMC does not offer {what} ResetType {} (it allows {})",
            device.kind,
            device.name,
            wanted.join(" or "),
            action.listed()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn action_info_values_are_read_by_parameter_name() {
        let info = serde_json::json!({"Parameters": [
            {"Name": "Other", "AllowableValues": ["X"]},
            {"Name": "ResetType", "AllowableValues": ["GracefulRestart", "ForceRestart"]}]});
        assert_eq!(
            info_values(&info, "ResetType"),
            Some(vec!["GracefulRestart".into(), "ForceRestart".into()])
        );
        assert_eq!(info_values(&serde_json::json!({}), "ResetType"), None);
        let action = Action {
            target: "t".into(),
            allowed: Some(vec!["ForceOn".into()]),
        };
        assert_eq!(action.first_allowed(&["On", "ForceOn"]), Some("ForceOn"));
        assert!(!action.allows("On"));
    }
}
