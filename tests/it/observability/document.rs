//! The OpenAPI document is exact: the statuses every operation can answer with an example of
//! each, list items by reference, enums for closed sets, real `limit` bounds, plain string
//! headers, examples everywhere, the event stream as text, servers and links; and the filters
//! the document describes behave the same everywhere.

use serde_json::Value;

use crate::on_both_backends;
use crate::support::TestApp;

fn document() -> Value {
    flow::api::openapi().0
}

fn operations(doc: &Value) -> Vec<(String, &Value)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            out.push((format!("{} {path}", method.to_uppercase()), op));
        }
    }
    out
}

#[test]
fn every_operation_documents_the_generic_statuses_each_with_an_example_of_its_own() {
    let doc = document();
    for (at, op) in operations(&doc) {
        let responses = op["responses"].as_object().unwrap();
        for status in ["408", "500", "503"] {
            assert!(responses.contains_key(status), "{at} lacks {status}");
        }
        let params = op["parameters"].as_array().cloned().unwrap_or_default();
        if params
            .iter()
            .any(|p| p["in"] == "path" || p["in"] == "query")
        {
            assert!(responses.contains_key("400"), "{at} lacks 400");
        }
        if op.get("requestBody").is_some() {
            for status in ["400", "413", "415"] {
                assert!(responses.contains_key(status), "{at} lacks {status}");
            }
        }
        for (status, response) in responses {
            let code: u16 = status.parse().unwrap();
            if code < 400 {
                continue;
            }
            let example = &response["content"]["application/problem+json"]["example"];
            assert_eq!(example["status"], code, "{at} {status}: {example}");
            let title = axum::http::StatusCode::from_u16(code)
                .unwrap()
                .canonical_reason()
                .unwrap();
            assert_eq!(example["title"], title, "{at} {status}");
            assert_eq!(
                example["type"],
                format!("urn:flow:problem:{}", example["code"].as_str().unwrap())
            );
        }
    }
}

#[test]
fn parameters_have_examples_real_bounds_and_headers_are_plain_strings() {
    let doc = document();
    let mut limits = 0;
    for (at, op) in operations(&doc) {
        for param in op["parameters"].as_array().into_iter().flatten() {
            let name = param["name"].as_str().unwrap();
            if ["cursor", "dry_run", "Idempotency-Key", "count"].contains(&name) {
                // Swagger UI's try-out would send an example as pre-filled: it is described.
                assert!(param.get("example").is_none(), "{at} {name} is pre-filled");
                assert!(param["schema"].get("example").is_none(), "{at} {name}");
                let description = param["description"].as_str().unwrap_or_default();
                assert!(
                    description.contains("Example: `"),
                    "{at} {name}: {description}"
                );
                continue;
            }
            assert!(param.get("example").is_some(), "{at} {name} has no example");
            if param["in"] == "header" {
                assert_eq!(param["schema"]["type"], "string", "{at} {name}");
            }
            if param["in"] == "query" && name == "limit" {
                limits += 1;
                let s = &param["schema"];
                assert_eq!(
                    (&s["minimum"], &s["maximum"], &s["default"]),
                    (&1.into(), &1000.into(), &100.into()),
                    "{at}"
                );
            }
        }
    }
    assert!(limits >= 5, "{limits} limit parameters");
}

#[test]
fn schemas_have_examples_lists_reference_items_and_closed_sets_are_enums() {
    let doc = document();
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for (name, schema) in schemas {
        assert!(schema.get("example").is_some(), "{name} has no example");
        if let Some(item) = name.strip_prefix("ListResponse_") {
            assert_eq!(
                schema["properties"]["items"]["items"]["$ref"],
                format!("#/components/schemas/{item}"),
                "{name}"
            );
        }
    }
    let operation = &schemas["TaskDoc"]["properties"]["operation"]["enum"];
    assert!(
        operation.as_array().unwrap().contains(&"power_on".into()),
        "{operation}"
    );
    for (schema, property, value) in [
        ("ComponentStepDoc", "status", "succeeded"),
        ("StageDoc", "status", "running"),
        ("RackPlanDoc", "outcome", "queue"),
    ] {
        let values = &schemas[schema]["properties"][property]["enum"];
        assert!(
            values.as_array().is_some_and(|v| v.contains(&value.into())),
            "{schema}.{property}: {values}"
        );
    }
}

#[test]
fn the_event_stream_servers_links_and_yaml_bodies_are_described_for_generators() {
    let doc = document();
    assert!(!doc["servers"].as_array().unwrap().is_empty());
    let stream = &doc["paths"]["/v1/tasks/{id}/events"]["get"]["responses"]["200"]["content"]["text/event-stream"];
    let forms = &stream["schema"]["anyOf"];
    assert_eq!(forms[0]["type"], "string", "{stream}");
    assert_eq!(
        forms[1]["properties"]["data"]["contentSchema"]["$ref"],
        "#/components/schemas/TaskDoc"
    );
    let created = &doc["paths"]["/v1/expected-racks"]["post"]["responses"]["201"]["links"]["read"];
    assert_eq!(created["operationId"], "get_rack", "{created}");
    assert_eq!(created["parameters"]["id"], "$response.body#/id");
    let accepted =
        &doc["paths"]["/v1/operations/power-on"]["post"]["responses"]["202"]["links"]["task"];
    assert_eq!(accepted["operationId"], "get_task", "{accepted}");
    let body = doc["paths"]["/v1/operation-rules"]["post"]["requestBody"]["content"]
        .as_object()
        .unwrap();
    assert_eq!(
        body.keys().next().map(String::as_str),
        Some("application/json")
    );
    assert_eq!(body["application/yaml"]["schema"]["type"], "string");
    // /metrics is part of the API, as plain text.
    assert!(
        doc["paths"]["/metrics"]["get"]["responses"]["200"]["content"]
            .as_object()
            .unwrap()
            .keys()
            .any(|k| k.starts_with("text/plain"))
    );
}

on_both_backends!(
    unknown_operation_filters_are_400_everywhere,
    an_unknown_racks_tasks_are_404_and_a_known_racks_empty_list_is_200,
);

async fn unknown_operation_filters_are_400_everywhere(app: TestApp) {
    for path in [
        "/v1/tasks?operation=bogus",
        "/v1/operation-rules?operation=bogus",
    ] {
        let r = app.get(path).await;
        r.assert_problem(400, "invalid_input");
        assert_eq!(r.error_fields(), vec!["operation"], "{path}");
    }
    assert_eq!(app.get("/v1/tasks?operation=power_on").await.status, 200);
}

async fn an_unknown_racks_tasks_are_404_and_a_known_racks_empty_list_is_200(app: TestApp) {
    let unknown = "0194a3c2-7f00-7000-8000-000000000001";
    app.get(&format!("/v1/racks/{unknown}/tasks"))
        .await
        .assert_problem(404, "not_found");
    let rack = app
        .create_rack(&crate::support::fixtures::gb200_rack(1, 1))
        .await;
    let id = rack["id"].as_str().unwrap();
    let r = app.get(&format!("/v1/racks/{id}/tasks")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["items"], serde_json::json!([]));
}
