//! Responses every operation can give, the event stream's media type, and links from create
//! operations to the reads of what they created.

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::responses_mut;
use crate::error::Code;

const PROBLEM: &str = "application/problem+json";

/// The code and detail of the example problem of each status.
fn example_of(status: u16) -> Value {
    let (code, detail) = match status {
        400 => (Code::InvalidInput, "limit: invalid digit found in string"),
        401 => (Code::Unauthorized, "missing or invalid credentials"),
        403 => (Code::Forbidden, "this token may not do that"),
        404 => (
            Code::NotFound,
            "rack 0194a3c2-7f00-7000-8000-000000000001 not found",
        ),
        405 => (
            Code::MethodNotAllowed,
            "this method is not allowed on this path",
        ),
        408 => (
            Code::RequestTimeout,
            "the request took longer than this server allows",
        ),
        409 => (
            Code::Duplicate,
            "a rack with this serial number already exists",
        ),
        412 => (
            Code::PreconditionFailed,
            "the resource changed since If-Match's revision",
        ),
        413 => (
            Code::PayloadTooLarge,
            "the request body is larger than this server accepts",
        ),
        415 => (
            Code::UnsupportedMediaType,
            "expected a JSON body with Content-Type: application/json",
        ),
        422 => (
            Code::Unsupported,
            "no component manager can run this operation",
        ),
        503 => (Code::Unavailable, "temporal is unavailable"),
        _ => (Code::Internal, "internal error; see the server log"),
    };
    let title = StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("Error");
    let mut example = json!({
        "type": format!("urn:flow:problem:{code}"),
        "title": title,
        "status": status,
        "detail": detail,
        "code": code.as_str(),
    });
    if status == 400 {
        example["errors"] = json!([{"field": "limit", "message": "invalid digit found in string"}]);
    }
    example
}

fn description_of(status: u16) -> &'static str {
    match status {
        400 => {
            "Bad input: a malformed path parameter, query parameter, header or body; `errors` names each field"
        }
        404 => "No such resource",
        408 => "The request took longer than FLOW_REQUEST_TIMEOUT_SECS",
        413 => "The body is larger than FLOW_MAX_BODY_BYTES",
        415 => "The body's Content-Type is not one this operation reads",
        503 => "A dependency (the database or Temporal) is unavailable; retry later",
        _ => "Internal error; the details are in the server log",
    }
}

/// Adds the statuses the middleware and extractors can answer, and gives every error response
/// a problem+json body with an example of its own status.
pub fn generic(op: &mut Value) {
    let params = op["parameters"].as_array().cloned().unwrap_or_default();
    let in_place = |place: &str| params.iter().any(|p| p["in"] == place);
    let has_body = op.get("requestBody").is_some();
    let mut added: Vec<u16> = vec![408, 500, 503];
    if has_body || in_place("path") || in_place("query") || in_place("header") {
        added.push(400);
    }
    if in_place("path") {
        added.push(404);
    }
    if has_body {
        added.extend([413, 415]);
    }
    let Some(responses) = responses_mut(op) else {
        return;
    };
    for status in added {
        responses
            .entry(status.to_string())
            .or_insert_with(|| json!({"description": description_of(status)}));
    }
    for (status, response) in responses.iter_mut() {
        let Some(status) = status.parse::<u16>().ok().filter(|s| *s >= 400) else {
            continue;
        };
        let content = response
            .as_object_mut()
            .map(|r| r.entry("content").or_insert_with(|| json!({})));
        let Some(content) = content.and_then(Value::as_object_mut) else {
            continue;
        };
        let media = content
            .entry(PROBLEM)
            .or_insert_with(|| json!({"schema": {"$ref": "#/components/schemas/Problem"}}));
        if media.get("example").is_none() && media.get("examples").is_none() {
            media["example"] = example_of(status);
        }
    }
}

/// A `text/event-stream` answer is a sequence of events whose `data:` holds one JSON document
/// of the schema the handler declared. Described the way OpenAPI 3.1 tools read it: each event
/// as an object (`event`, `id`, `retry`, and `data` with `contentMediaType`/`contentSchema`),
/// which stream-aware testers validate event by event; or the raw text, which is what SDK
/// generators that do not read streams hand to their callers.
pub fn event_stream(op: &mut Value) {
    let Some(responses) = responses_mut(op) else {
        return;
    };
    for (_, response) in responses.iter_mut() {
        let Some(media) = response.pointer_mut("/content/text~1event-stream") else {
            continue;
        };
        let Some(payload) = media.get("schema").cloned() else {
            continue;
        };
        if payload.get("anyOf").is_some() {
            continue;
        }
        media["schema"] = json!({
            "description": "One Server-Sent Event (stream-aware clients), or the raw stream as text (the others).",
            "anyOf": [
                {"type": "string", "description": "The raw `text/event-stream` text"},
                {
                    "type": "object",
                    "description": "One event; its `data` is one JSON document of the `contentSchema`",
                    "required": ["data"],
                    "properties": {
                        "event": {"type": "string", "description": "The event type"},
                        "id": {"type": "string"},
                        "retry": {"type": "integer", "minimum": 0},
                        "data": {
                            "type": "string",
                            "contentMediaType": "application/json",
                            "contentSchema": payload,
                        },
                    },
                },
            ],
        });
        media["example"] = json!(
            "event: task\ndata: {\"id\":\"0194a3c2-7f00-7000-8000-000000000001\",\"status\":\"running\"}\n\n"
        );
    }
}

/// The read of a path: `GET {path}/{param}`, or the alias the API uses (`/v1/expected-racks`
/// creates what `/v1/racks/{id}` reads).
fn read_of(paths: &serde_json::Map<String, Value>, path: &str) -> Option<(String, String, String)> {
    let base = if path == "/v1/expected-racks" {
        "/v1/racks"
    } else {
        path
    };
    paths.iter().find_map(|(p, item)| {
        let param = p
            .strip_prefix(base)?
            .strip_prefix("/{")?
            .strip_suffix('}')?;
        if param.contains('/') {
            return None;
        }
        let id = item.pointer("/get/operationId")?.as_str()?;
        Some((id.to_string(), param.to_string(), p.clone()))
    })
}

/// OpenAPI `links` from each create (`POST` answering 201 with an `id`) to the read of what it
/// created, and from each submission (202 with `task_ids`) to its first task.
pub fn links(doc: &mut Value) {
    let Some(paths) = doc.get("paths").and_then(Value::as_object).cloned() else {
        return;
    };
    let task_read = paths
        .get("/v1/tasks/{id}")
        .and_then(|i| i.pointer("/get/operationId"))
        .cloned();
    for (path, _) in paths.iter() {
        let read = read_of(&paths, path);
        let Some(post) = doc
            .pointer_mut(&format!(
                "/paths/{}/post/responses",
                path.replace('~', "~0").replace('/', "~1")
            ))
            .and_then(Value::as_object_mut)
        else {
            continue;
        };
        if let (Some((operation, param, _)), Some(created)) = (&read, post.get_mut("201")) {
            created["links"] = json!({
                "read": {
                    "operationId": operation,
                    "parameters": {param: "$response.body#/id"},
                    "description": "Read what this call created",
                }
            });
        }
        if let (Some(operation), Some(accepted)) = (&task_read, post.get_mut("202")) {
            accepted["links"] = json!({
                "task": {
                    "operationId": operation,
                    "parameters": {"id": "$response.body#/task_ids/0"},
                    "description": "Follow the first task this submission created",
                }
            });
        }
    }
}
