//! Bad input of every kind gets a 4xx problem+json naming the field, and stores nothing.

use axum::body::Body;
use axum::http::{Method, Request};
use flow::config::Config;
use serde_json::json;

use crate::on_both_backends;
use crate::support::fixtures::{gb200_rack, readme_rack};
use crate::support::{Backend, TestApp};

on_both_backends!(
    a_rack_whose_third_component_is_bad_leaves_nothing_behind,
    each_kind_of_malformed_body_names_its_field,
    duplicates_inside_one_request_are_named,
    wrong_content_type_unknown_routes_and_methods_are_problems,
);

async fn assert_nothing_stored(app: &TestApp) {
    for table in ["racks", "components", "bmcs"] {
        assert_eq!(app.count_rows(table).await, 0, "{table} must stay empty");
    }
}

async fn a_rack_whose_third_component_is_bad_leaves_nothing_behind(app: TestApp) {
    let mut body = gb200_rack(1, 4);
    body["components"][2]["bmcs"][1]["mac_address"] = json!("not-a-mac");
    let r = app.post("/v1/expected-racks", &body).await;
    r.assert_problem(400, "invalid_input");
    assert_eq!(r.error_fields(), vec!["components[2].bmcs[1].mac_address"]);
    assert_nothing_stored(&app).await;

    // A clash found in the database rolls the whole rack back too.
    app.create_rack(&readme_rack()).await;
    let mut clash = gb200_rack(2, 4);
    clash["components"][2]["bmcs"][0]["mac_address"] = json!("d8:19:09:00:04:af");
    let r = app.post("/v1/expected-racks", &clash).await;
    r.assert_problem(409, "duplicate");
    assert_eq!(r.error_fields(), vec!["components[2].bmcs[0].mac_address"]);
    assert_eq!(app.count_rows("racks").await, 1);
    assert_eq!(app.count_rows("components").await, 1);
    assert_eq!(app.count_rows("bmcs").await, 3);
}

async fn each_kind_of_malformed_body_names_its_field(app: TestApp) {
    let cases = [
        (
            json!({"name": "r", "manufacturer": "m", "serial_number": 5}),
            "serial_number",
        ),
        (json!({"name": "r", "manufacturer": "m"}), "serial_number"),
        (
            json!({"name": "r", "manufacturer": "m", "serial_number": "s", "components": [{"type": "gpu", "name": "x", "manufacturer": "m", "serial_number": "c"}]}),
            "components[0].type",
        ),
        (
            json!({"name": "r", "manufacturer": "m", "serial_number": "s", "components": [{"type": "compute", "name": "x", "manufacturer": "m", "serial_number": "c", "bmcs": [{"type": "bmc", "mac_address": "d8:19:09:00:04:af"}]}]}),
            "components[0].bmcs[0].type",
        ),
        (
            json!({"name": "r", "manufacturer": "m", "serial_number": "s", "components": [{"type": "compute", "name": "x", "manufacturer": "m", "serial_number": "c", "bmcs": [{"type": "host", "mac_address": "d8:19:09:00:04:af", "ip_address": "999.1.1.1"}]}]}),
            "components[0].bmcs[0].ip_address",
        ),
        (
            json!({"name": "r", "manufacturer": "m", "serial_number": "s", "components": [{"type": "compute", "name": "x", "manufacturer": "m", "serial_number": "c", "position": {"slot_id": -1}}]}),
            "components[0].position.slot_id",
        ),
        (
            json!({"name": "r", "manufacturer": "m", "serial_number": "s", "components": [{"type": "compute", "name": "x", "manufacturer": "m", "serial_number": "c", "rack_id": "nope"}]}),
            "components[0].rack_id",
        ),
        (
            json!({"name": "", "manufacturer": "m", "serial_number": "s"}),
            "name",
        ),
        (
            json!({"name": "r", "manufacturer": "m", "serial_number": "s", "colour": "red"}),
            "colour",
        ),
        (
            json!({"name": "r", "manufacturer": "m", "serial_number": "s", "location": {"row": 1}}),
            "location.row",
        ),
        (json!([1, 2]), "body"),
    ];
    for (body, field) in cases {
        let r = app.post("/v1/expected-racks", &body).await;
        r.assert_invalid_field(field, &body);
    }
    let r = app
        .call(
            Method::POST,
            "/v1/expected-racks",
            None,
            &[("content-type", "application/json")],
        )
        .await;
    r.assert_problem(400, "invalid_input");
    let broken = Request::post("/v1/expected-racks")
        .header("content-type", "application/json")
        .body(Body::from("{\"name\": \"r\","))
        .unwrap();
    let r = app.send(broken).await;
    r.assert_problem(400, "invalid_input");
    assert_eq!(r.error_fields(), vec!["body"]);
    assert_nothing_stored(&app).await;
}

async fn duplicates_inside_one_request_are_named(app: TestApp) {
    let mut body = gb200_rack(1, 3);
    body["components"][2]["serial_number"] = body["components"][0]["serial_number"].clone();
    body["components"][1]["bmcs"][2]["mac_address"] =
        body["components"][0]["bmcs"][0]["mac_address"].clone();
    let r = app.post("/v1/expected-racks", &body).await;
    r.assert_problem(400, "invalid_input");
    assert_eq!(
        r.error_fields(),
        vec![
            "components[1].bmcs[2].mac_address",
            "components[2].serial_number"
        ]
    );
    assert_nothing_stored(&app).await;
}

async fn wrong_content_type_unknown_routes_and_methods_are_problems(app: TestApp) {
    let form = Request::post("/v1/expected-racks")
        .header("content-type", "text/plain")
        .body(Body::from(readme_rack().to_string()))
        .unwrap();
    app.send(form)
        .await
        .assert_problem(415, "unsupported_media_type");
    app.get("/v1/nope").await.assert_problem(404, "not_found");
    app.call(Method::PUT, "/v1/racks", None, &[])
        .await
        .assert_problem(405, "method_not_allowed");
    assert_nothing_stored(&app).await;
}

#[tokio::test]
async fn an_oversized_body_is_refused_with_413_and_nothing_stored() {
    for backend in [Backend::Postgres, Backend::Sqlite] {
        let mut config = Config::default();
        config.server.max_body_bytes = 2048;
        let app = TestApp::with_config(backend, config).await;
        let r = app.post("/v1/expected-racks", &gb200_rack(1, 8)).await;
        r.assert_problem(413, "payload_too_large");
        assert_nothing_stored(&app).await;
        assert_eq!(
            app.post("/v1/expected-racks", &readme_rack()).await.status,
            201,
            "small bodies still pass"
        );
        let cleanup = app.db.cleanup();
        drop(app);
        cleanup.run().await;
    }
}
