//! The last pass over the generated OpenAPI document: what holds for every operation, done once
//! here so endpoints added later get it without a line of their own. It documents the statuses
//! the middleware and extractors can answer (400 for a malformed path or query, 408, 413, 415,
//! 500, 503) with an example per status, gives every parameter and schema an example, bounds
//! `limit`, types headers as plain strings, references list items instead of inlining them,
//! turns closed value sets into enums, describes the event stream, and links create operations
//! to their reads so stateful testers and SDKs can chain them.

mod examples;
mod responses;

use serde_json::{Map, Value, json};

/// Page size bounds the list endpoints enforce (`db::page::PageRequest`).
pub const LIMIT_MIN: u64 = 1;
pub const LIMIT_MAX: u64 = 1000;
pub const LIMIT_DEFAULT: u64 = 100;

/// The finished document, as served. It stays JSON: utoipa's types cannot hold everything
/// OpenAPI 3.1 says (`links` by operation id, `contentSchema`).
#[derive(Debug, Clone, PartialEq)]
pub struct Document(pub Value);

impl Document {
    /// The document as pretty-printed JSON (what `flow openapi` prints).
    pub fn to_pretty_json(&self) -> serde_json::Result<String> {
        serde_json::to_string_pretty(&self.0)
    }
}

/// Applies every rule to the generated document.
pub fn finish(doc: &utoipa::openapi::OpenApi) -> Document {
    // Serializing utoipa's own types cannot fail: they are plain data with string keys.
    let mut value = serde_json::to_value(doc).unwrap_or_default();
    apply(&mut value);
    Document(value)
}

/// The rules, on the document as JSON.
pub fn apply(doc: &mut Value) {
    if doc.get("servers").is_none() {
        doc["servers"] =
            json!([{"url": "/", "description": "The Flow server that serves this document"}]);
    }
    list_items_by_reference(doc);
    closed_sets(doc);
    let schemas = doc["components"]["schemas"].clone();
    for (_, item) in object_mut(doc, "paths") {
        let Some(ops) = item.as_object_mut() else {
            continue;
        };
        for (_, op) in ops.iter_mut() {
            parameters(op, &schemas);
            yaml_bodies(op);
            responses::generic(op);
            responses::event_stream(op);
        }
    }
    responses::links(doc);
    examples::schemas(doc);
    examples::responses(doc);
}

/// The object under `key`, created empty when missing, as an iterator of mutable entries.
fn object_mut<'a>(
    doc: &'a mut Value,
    key: &str,
) -> impl Iterator<Item = (&'a String, &'a mut Value)> {
    doc.get_mut(key)
        .and_then(Value::as_object_mut)
        .into_iter()
        .flat_map(|m| m.iter_mut())
}

/// `ListResponse_X.items` refers to `X` instead of a copy, so SDKs get one `X` type.
fn list_items_by_reference(doc: &mut Value) {
    let Some(schemas) = doc["components"]["schemas"].as_object_mut() else {
        return;
    };
    let names: Vec<String> = schemas.keys().cloned().collect();
    for name in &names {
        let Some(item) = name.strip_prefix("ListResponse_") else {
            continue;
        };
        if names.iter().any(|n| n == item)
            && let Some(items) = schemas
                .get_mut(name)
                .and_then(|s| s.pointer_mut("/properties/items/items"))
        {
            *items = json!({"$ref": format!("#/components/schemas/{item}")});
        }
    }
}

/// Strings whose values form a closed set, as enums: `(schema, property, values)`.
fn closed_sets(doc: &mut Value) {
    let operation_codes: Vec<&str> = crate::domain::OperationCode::ALL
        .iter()
        .map(|c| c.as_str())
        .collect();
    let step_statuses: Vec<&str> =
        ["pending", "running", "succeeded", "failed", "cancelled"].to_vec();
    let task_statuses: Vec<&str> = crate::tasks::model::TaskStatus::ALL
        .iter()
        .map(|s| s.as_str())
        .collect();
    let problem_codes: Vec<&str> = crate::error::Code::ALL.iter().map(|c| c.as_str()).collect();
    // Every reason a rack can be refused with, `unsupported` and `engine_unavailable` included.
    let refusal_codes: Vec<&str> = crate::tasks::submission::RefusalCode::ALL
        .iter()
        .map(|c| c.as_str())
        .collect();
    let sets: Vec<(&str, &str, Vec<&str>)> = vec![
        ("Problem", "code", problem_codes),
        ("TaskDoc", "operation", operation_codes.clone()),
        ("RuleDoc", "operation", operation_codes.clone()),
        ("RuleRequestDoc", "operation", operation_codes.clone()),
        ("AssociationDoc", "operation", operation_codes.clone()),
        ("BlockerDoc", "operation", operation_codes.clone()),
        ("OperationTemplateDoc", "code", operation_codes.clone()),
        ("BlockerDoc", "status", task_statuses.clone()),
        ("ComponentStepDoc", "status", step_statuses.clone()),
        ("StageDoc", "status", step_statuses),
        ("RackPlanDoc", "outcome", vec!["start", "queue", "reject"]),
        ("RejectionDoc", "code", refusal_codes),
        (
            "ComponentChangeDoc",
            "result",
            vec!["added", "patched", "no_change"],
        ),
        ("RunDoc", "status", vec!["submitting", "done"]),
        ("RunDoc", "trigger", vec!["schedule", "manual"]),
    ];
    for (schema, property, values) in sets {
        if let Some(prop) = doc
            .pointer_mut(&format!(
                "/components/schemas/{schema}/properties/{property}"
            ))
            .and_then(Value::as_object_mut)
            && prop.get("type") == Some(&json!("string"))
        {
            prop.insert("enum".into(), json!(values));
        }
    }
}

/// Header parameters are plain strings (absent, not null, when not sent); `limit` has its real
/// bounds and default; every parameter gets an example.
fn parameters(op: &mut Value, schemas: &Value) {
    let Some(params) = op.get_mut("parameters").and_then(Value::as_array_mut) else {
        return;
    };
    for param in params {
        let (Some(name), Some(place)) = (
            param["name"].as_str().map(str::to_string),
            param["in"].as_str().map(str::to_string),
        ) else {
            continue;
        };
        if place == "header" {
            let description = param["schema"].get("description").cloned();
            param["schema"] = json!({"type": "string"});
            if let Some(d) = description {
                param["schema"]["description"] = d;
            }
        }
        if place == "query" && name == "limit" {
            param["schema"] = json!({
                "type": "integer", "format": "int64",
                "minimum": LIMIT_MIN, "maximum": LIMIT_MAX, "default": LIMIT_DEFAULT,
            });
        }
        if NOT_PREFILLED.contains(&name.to_ascii_lowercase().as_str()) {
            example_in_description(param, &name, schemas);
        } else if param.get("example").is_none() && param.get("examples").is_none() {
            let schema = param["schema"].clone();
            param["example"] = examples::for_parameter(&name, &schema, schemas);
        }
    }
}

/// Parameters whose example Swagger UI's try-out must not send as pre-filled: an example
/// cursor is refused (400), `dry_run=true` plans instead of running, a fixed
/// `Idempotency-Key` replays the first answer, and `count` would make every tried page count
/// its whole list. Their example is given in the description.
const NOT_PREFILLED: &[&str] = &["cursor", "dry_run", "idempotency-key", "count"];

fn example_in_description(param: &mut Value, name: &str, schemas: &Value) {
    let schema = param["schema"].clone();
    let example = match name {
        "dry_run" => json!(true),
        _ => examples::for_parameter(name, &schema, schemas),
    };
    if let Some(fields) = param.as_object_mut() {
        fields.remove("example");
        fields.remove("examples");
    }
    if let Some(fields) = param["schema"].as_object_mut() {
        fields.remove("example");
        fields.remove("examples");
    }
    let shown = example
        .as_str()
        .map_or_else(|| example.to_string(), str::to_string);
    let description = param["description"].as_str().unwrap_or_default().trim_end();
    let sep = match description.chars().last() {
        None => "",
        Some('.') => " ",
        Some(_) => ". ",
    };
    param["description"] = json!(format!("{description}{sep}Example: `{shown}`."));
}

/// `Map` helper: the operation's responses, created when missing.
fn responses_mut(op: &mut Value) -> Option<&mut Map<String, Value>> {
    op.get_mut("responses").and_then(Value::as_object_mut)
}

/// A YAML request body is offered to generators as what it is on the wire, a text document
/// (SDKs send it as bytes with `Content-Type: application/yaml`); the JSON media type, listed
/// first, carries the schema.
fn yaml_bodies(op: &mut Value) {
    let Some(content) = op
        .pointer_mut("/requestBody/content")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    let described = content
        .get("application/json")
        .and_then(|m| m.pointer("/schema/$ref"))
        .and_then(Value::as_str)
        .and_then(|r| r.rsplit('/').next())
        .map(str::to_string);
    for (media, body) in content.iter_mut() {
        if media == "application/yaml" || media == "application/x-yaml" {
            let what = described.as_deref().unwrap_or("the JSON body");
            body["schema"] = json!({
                "type": "string",
                "format": "binary",
                "description": format!("The same document as {what}, written in YAML"),
            });
            body.as_object_mut().map(|b| b.remove("example"));
        }
    }
}
