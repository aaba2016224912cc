//! Examples for parameters and schemas that have none, built from what the schema says (enum,
//! format, bounds, property examples) and from names operators know (`serial_number`, `mac`).

use serde_json::{Map, Value, json};

const EXAMPLE_ID: &str = "0194a3c2-7f00-7000-8000-000000000001";

/// An example of a string by its name, when the name says what it holds.
fn by_name(name: &str) -> Option<Value> {
    let name = name.to_ascii_lowercase();
    let value = match name.as_str() {
        "mac" | "bmc_mac" | "mac_address" => "a0:88:c2:12:34:56",
        "serial_number" => "1821623000123",
        "manufacturer" => "NVIDIA",
        "model" => "GB200 NVL72",
        "name" | "rack_name" | "rack" => "g10",
        "id_or_name" | "nvl_domain" => "nvl-a",
        "region" => "us-west",
        "datacenter" => "sjc1",
        "room" => "hall-2",
        "position" => "r12",
        "external_id" => "fm100ht0q1rh8kbg7avl5fgm5ll6n0pp",
        "cursor" => "eyJrIjoiZzEwIiwiaWQiOiIwMTk0YTNjMi03ZjAwIn0",
        "if-match" => "\"3\"",
        "idempotency-key" => "c0ffee-2026-12-01-power-on-g10",
        "operation" => "power_on",
        "kind" => "mismatch",
        "type" => "compute",
        "status" => "running",
        _ => return None,
    };
    Some(json!(value))
}

/// Resolves a local `$ref` to its schema.
fn resolve<'a>(schema: &'a Value, schemas: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => r
            .strip_prefix("#/components/schemas/")
            .and_then(|name| schemas.get(name))
            .unwrap_or(schema),
        None => schema,
    }
}

/// An example of a value of `schema`, named `name`; `depth` stops recursive schemas.
fn of(name: &str, schema: &Value, schemas: &Value, depth: usize) -> Value {
    let schema = resolve(schema, schemas);
    if let Some(example) = schema.get("example") {
        return example.clone();
    }
    if let Some(first) = schema.get("examples").and_then(|e| e.get(0)) {
        return first.clone();
    }
    if let Some(first) = schema.get("enum").and_then(|e| e.get(0)) {
        return first.clone();
    }
    if let Some(default) = schema.get("default") {
        return default.clone();
    }
    for key in ["oneOf", "anyOf", "allOf"] {
        if let Some(first) = schema.get(key).and_then(|e| e.get(0)) {
            return of(name, first, schemas, depth + 1);
        }
    }
    let kind = match schema.get("type") {
        Some(Value::Array(types)) => types
            .iter()
            .find(|t| *t != "null")
            .and_then(Value::as_str)
            .unwrap_or("null"),
        Some(Value::String(t)) => t.as_str(),
        _ if schema.get("properties").is_some() => "object",
        _ => "string",
    };
    match kind {
        "integer" | "number" => schema.get("minimum").cloned().map_or(json!(1), |m| {
            if m.as_f64().is_some_and(|v| v > 0.0) {
                m
            } else {
                json!(1)
            }
        }),
        "boolean" => json!(true),
        "array" if depth < 12 => match schema.get("items") {
            Some(items) => json!([of(name, items, schemas, depth + 1)]),
            None => json!([]),
        },
        "object" if depth < 12 => object(schema, schemas, depth),
        "null" => Value::Null,
        "string" => string(name, schema),
        _ => json!({}),
    }
}

fn string(name: &str, schema: &Value) -> Value {
    match schema.get("format").and_then(Value::as_str) {
        Some("uuid") => json!(EXAMPLE_ID),
        Some("date-time") => json!("2026-12-01T08:00:00Z"),
        Some("date") => json!("2026-12-01"),
        Some("uri" | "url") => json!("https://flow.example.net/"),
        Some("ipv4" | "ip") => json!("10.0.12.7"),
        _ => by_name(name).unwrap_or_else(|| json!("example")),
    }
}

/// An object with every required property (and the optional ones that have examples).
fn object(schema: &Value, schemas: &Value, depth: usize) -> Value {
    let mut out = Map::new();
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (key, prop) in props {
            let documented = prop.get("example").is_some() || prop.get("examples").is_some();
            if required.contains(&key.as_str()) || documented {
                out.insert(key.clone(), of(key, prop, schemas, depth + 1));
            }
        }
    }
    Value::Object(out)
}

/// An example for a parameter of this name and schema.
pub fn for_parameter(name: &str, schema: &Value, schemas: &Value) -> Value {
    let resolved = resolve(schema, schemas);
    let is_string = resolved.get("type").is_none_or(|t| t == "string");
    if is_string
        && resolved.get("format").is_none()
        && resolved.get("enum").is_none()
        && let Some(v) = by_name(name)
    {
        return v;
    }
    of(name, schema, schemas, 0)
}

/// Every component schema without an example gets one.
pub fn schemas(doc: &mut Value) {
    let all = doc["components"]["schemas"].clone();
    let Some(schemas) = doc["components"]["schemas"].as_object_mut() else {
        return;
    };
    for (name, schema) in schemas.iter_mut() {
        if schema.get("example").is_none() && schema.get("examples").is_none() {
            let example = of(name, schema, &all, 0);
            if let Some(s) = schema.as_object_mut() {
                s.insert("example".into(), example);
            }
        }
    }
}

/// Success responses whose schema is written inline (a bare array, a string) get an example
/// of their own; those that reference a component schema show that schema's example.
pub fn responses(doc: &mut Value) {
    let all = doc["components"]["schemas"].clone();
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    for op in paths
        .values_mut()
        .filter_map(Value::as_object_mut)
        .flat_map(|ops| ops.values_mut())
    {
        let Some(responses) = op.get_mut("responses").and_then(Value::as_object_mut) else {
            continue;
        };
        for media in responses
            .values_mut()
            .filter_map(|r| r.get_mut("content").and_then(Value::as_object_mut))
            .flat_map(|c| c.values_mut())
        {
            let inline = media.get("schema").is_some_and(|s| s.get("$ref").is_none());
            if inline && media.get("example").is_none() && media.get("examples").is_none() {
                let example = of("response", &media["schema"], &all, 0);
                media["example"] = example;
            }
        }
    }
}
