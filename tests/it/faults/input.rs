//! Hostile input: control characters, huge lists, foreign charsets, oversized request ids, a
//! full queue — each refused with the status and the field it is about.

use axum::body::Body;
use axum::http::{Method, Request};
use serde_json::json;

use crate::on_both_backends;
use crate::support::TestApp;
use crate::support::fixtures::{gb200_rack, readme_rack};

on_both_backends!(
    control_characters_in_bodies_and_filters_are_refused_naming_the_field,
    line_breaks_in_a_description_are_kept,
    racks_with_too_many_components_or_bmcs_are_refused,
    a_json_body_in_another_charset_is_415_and_a_long_request_id_400,
);

async fn control_characters_in_bodies_and_filters_are_refused_naming_the_field(app: TestApp) {
    for (field, bad) in [
        ("name", "g10\u{0}"),
        ("name", "g10\nrack"),
        ("serial_number", "SN\u{1b}[2J"),
        ("name", "bell\u{7}"),
        ("name", "c1\u{85}"),
    ] {
        let mut body = readme_rack();
        body[field] = json!(bad);
        let r = app.post("/v1/expected-racks", &body).await;
        r.assert_problem(400, "invalid_input");
        assert_eq!(r.error_fields(), vec![field.to_string()], "{}", r.text);
    }
    let mut body = readme_rack();
    body["components"][0]["bmcs"][0]["mac_address"] = json!("d8:19:09:00:04:af\u{0}");
    let r = app.post("/v1/expected-racks", &body).await;
    r.assert_problem(400, "invalid_input");
    assert_eq!(
        r.error_fields(),
        vec!["components[0].bmcs[0].mac_address".to_string()]
    );
    let r = app.get("/v1/racks?name=g%00").await;
    r.assert_problem(400, "invalid_input");
    assert_eq!(r.error_fields(), vec!["name".to_string()], "{}", r.text);
    assert_eq!(app.count_rows("racks").await, 0);
}

async fn line_breaks_in_a_description_are_kept(app: TestApp) {
    let mut body = readme_rack();
    body["description"] = json!("line one\nline two\tend");
    let r = app.post("/v1/expected-racks", &body).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.body["description"], "line one\nline two\tend");
    body["name"] = json!("g11");
    body["serial_number"] = json!("other");
    body["description"] = json!("escape \u{1b}[31m");
    app.post("/v1/expected-racks", &body)
        .await
        .assert_problem(400, "invalid_input");
}

async fn racks_with_too_many_components_or_bmcs_are_refused(app: TestApp) {
    let mut body = gb200_rack(1, 1);
    let template = body["components"][0].clone();
    let many: Vec<_> = (0..1025)
        .map(|i| {
            let mut c = template.clone();
            c["serial_number"] = json!(format!("SN-{i}"));
            c["name"] = json!(format!("c-{i}"));
            c["bmcs"] = json!([]);
            c
        })
        .collect();
    body["components"] = json!(many);
    let r = app.post("/v1/expected-racks", &body).await;
    r.assert_problem(400, "invalid_input");
    assert_eq!(
        r.error_fields(),
        vec!["components".to_string()],
        "{}",
        r.text
    );
    // A full rack takes no more components, added one by one either.
    body["components"] = json!(many[..1024]);
    let full = app.create_rack(&body).await;
    let r = app
        .post(
            "/v1/components",
            &json!({"rack_id": full["id"], "type": "cdu", "name": "cdu", "manufacturer": "Vertiv", "serial_number": "CDU-FULL"}),
        )
        .await;
    r.assert_problem(400, "invalid_input");
    assert_eq!(r.error_fields(), vec!["rack_id".to_string()], "{}", r.text);
    assert_eq!(app.count_rows("components").await, 1024);

    let mut body = readme_rack();
    let bmcs: Vec<_> = (0..9)
        .map(|i| json!({"type": "dpu", "mac_address": format!("02:00:00:00:00:{i:02x}")}))
        .collect();
    body["components"][0]["bmcs"] = json!(bmcs);
    let r = app.post("/v1/expected-racks", &body).await;
    r.assert_problem(400, "invalid_input");
    assert_eq!(
        r.error_fields(),
        vec!["components[0].bmcs".to_string()],
        "{}",
        r.text
    );
    assert_eq!(app.count_rows("racks").await, 1);
}

async fn a_json_body_in_another_charset_is_415_and_a_long_request_id_400(app: TestApp) {
    let request = Request::builder()
        .method(Method::POST)
        .uri("/v1/expected-racks")
        .header("content-type", "application/json; charset=utf-16")
        .body(Body::from(readme_rack().to_string()))
        .unwrap();
    app.send(request)
        .await
        .assert_problem(415, "unsupported_media_type");
    let request = Request::builder()
        .method(Method::POST)
        .uri("/v1/expected-racks")
        .header("content-type", "application/json; charset=UTF-8")
        .body(Body::from(readme_rack().to_string()))
        .unwrap();
    assert_eq!(app.send(request).await.status, 201);

    let long = "r".repeat(100_000);
    let r = app
        .call(Method::GET, "/healthz", None, &[("x-request-id", &long)])
        .await;
    r.assert_problem(400, "invalid_input");
    assert_eq!(r.error_fields(), vec!["x-request-id".to_string()]);
    assert!(r.header("x-request-id").is_none_or(|v| v.len() <= 128));
    let ok = "r".repeat(128);
    let r = app
        .call(Method::GET, "/healthz", None, &[("x-request-id", &ok)])
        .await;
    assert_eq!(r.header("x-request-id"), Some(ok.as_str()));
}
