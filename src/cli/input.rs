//! What the CLI reads: JSON or YAML bodies from files or stdin, `--set` patches, racks by name or id.

use std::io::Read;

use serde_json::{Map, Value};
use uuid::Uuid;

use super::client::{CliError, Client};

/// The text of a file, or of stdin for `-`.
pub fn read_text(path: &str) -> Result<String, CliError> {
    if path == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| CliError::Input(format!("reading stdin: {e}")))?;
        Ok(text)
    } else {
        std::fs::read_to_string(path).map_err(|e| CliError::Input(format!("{path}: {e}")))
    }
}

/// A request body from a JSON or YAML file, or stdin for `-`.
pub fn read_body(path: &str) -> Result<Value, CliError> {
    let text = read_text(path)?;
    // JSON first for its precise error messages; YAML (a superset) when that fails.
    serde_json::from_str(&text).or_else(|json_error| {
        serde_yaml::from_str::<Value>(&text).map_err(|yaml_error| {
            CliError::Input(format!(
                "{path}: neither JSON ({json_error}) nor YAML ({yaml_error})"
            ))
        })
    })
}

/// A merge patch from `key=value` (a string) and `key:=json` (any JSON value, e.g. `null` or a
/// number); dotted keys reach into objects: `location.room=EW-F00-DH-03`, `position.slot_id:=37`.
pub fn set_patch(assignments: &[String]) -> Result<Value, CliError> {
    let mut patch = Map::new();
    for assignment in assignments {
        let (key, value) = if let Some((key, json)) = assignment.split_once(":=") {
            let value = serde_json::from_str(json)
                .map_err(|e| CliError::Usage(format!("--set {assignment}: not JSON: {e}")))?;
            (key, value)
        } else if let Some((key, text)) = assignment.split_once('=') {
            (key, Value::String(text.to_string()))
        } else {
            return Err(CliError::Usage(format!(
                "--set {assignment}: expected key=value or key:=json"
            )));
        };
        let mut keys: Vec<&str> = key.split('.').collect();
        let last = keys.pop().filter(|k| !k.is_empty());
        let Some(last) = last else {
            return Err(CliError::Usage(format!("--set {assignment}: empty key")));
        };
        let mut object = &mut patch;
        for k in keys {
            let entry = object
                .entry(k.to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            object = match entry {
                Value::Object(map) => map,
                _ => {
                    return Err(CliError::Usage(format!(
                        "--set {assignment}: {k} is already set to a value"
                    )));
                }
            };
        }
        object.insert(last.to_string(), value);
    }
    Ok(Value::Object(patch))
}

/// The body of `-f FILE` or of `--set` assignments: exactly one of the two.
pub fn body_or_set(file: Option<&str>, set: &[String]) -> Result<Value, CliError> {
    match (file, set.is_empty()) {
        (Some(path), true) => read_body(path),
        (None, false) => set_patch(set),
        (Some(_), false) => Err(CliError::Usage("give -f FILE or --set, not both".into())),
        (None, true) => Err(CliError::Usage("give -f FILE or --set key=value".into())),
    }
}

/// A rack reference for operations and NVL domains: `{"id": ..}` for a UUID, else `{"name": ..}`.
pub fn rack_ref(rack: &str) -> Value {
    if Uuid::parse_str(rack).is_ok() {
        serde_json::json!({ "id": rack })
    } else {
        serde_json::json!({ "name": rack })
    }
}

/// The id of a rack given by id or by name (names are unique among live racks).
pub async fn rack_id(client: &Client, rack: &str) -> Result<String, CliError> {
    if Uuid::parse_str(rack).is_ok() {
        return Ok(rack.to_string());
    }
    let reply = client
        .get(
            "/v1/racks",
            &[("name", rack.to_string()), ("limit", "2".into())],
        )
        .await?;
    let items = reply.body["items"].as_array().cloned().unwrap_or_default();
    match items.as_slice() {
        [one] if one["name"] == rack => Ok(one["id"].as_str().unwrap_or_default().to_string()),
        _ => Err(CliError::NotFound(format!("no rack named {rack:?}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_builds_a_nested_merge_patch() {
        let patch = set_patch(&[
            "model=GB300".into(),
            "location.room=EW-F00-DH-03".into(),
            "location.region:=null".into(),
            "position.slot_id:=37".into(),
        ])
        .unwrap();
        assert_eq!(
            patch,
            serde_json::json!({"model": "GB300", "location": {"room": "EW-F00-DH-03", "region": null},
                               "position": {"slot_id": 37}})
        );
        assert!(set_patch(&["nothing".into()]).is_err());
    }
}
