//! Every route of the OpenAPI document declares its access (read back into the guard's table), and the document
//! carries it: `bearerAuth`, `security` on every operation, the role, 401/403.

use std::collections::BTreeSet;

use flow::api::access::{access_for, routes};

fn operations() -> Vec<(String, String, serde_json::Value)> {
    let doc = flow::api::openapi().0;
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if ["get", "post", "put", "patch", "delete"].contains(&method.as_str()) {
                out.push((method.to_uppercase(), path.clone(), op.clone()));
            }
        }
    }
    out
}

#[test]
fn every_route_of_the_document_has_an_access_decision() {
    let missing: Vec<String> = operations()
        .into_iter()
        .filter(|(m, p, _)| access_for(m, p).is_none())
        .map(|(m, p, _)| format!("{m} {p}"))
        .collect();
    assert!(
        missing.is_empty(),
        "declare `security((\"access\" = [..]))` in the `#[utoipa::path]` of: {missing:?}"
    );
    let mut seen = BTreeSet::new();
    for (method, path, _) in routes() {
        assert!(
            seen.insert((method, path)),
            "{method} {path} is listed twice"
        );
    }
}

#[test]
fn every_operation_says_how_it_is_secured() {
    let doc = flow::api::openapi().0;
    let scheme = &doc["components"]["securitySchemes"]["bearerAuth"];
    assert_eq!(scheme["type"], "http");
    assert_eq!(scheme["scheme"], "bearer");
    for (method, path, op) in operations() {
        let security = op["security"]
            .as_array()
            .unwrap_or_else(|| panic!("{method} {path}: no security"));
        // `/metrics` is public by default (`FLOW_METRICS_PUBLIC=true`), and the document says so.
        let public = ["/healthz", "/readyz", "/metrics"].contains(&path.as_str());
        if public {
            assert!(security.is_empty(), "{method} {path} is public");
            continue;
        }
        assert_eq!(
            security[0]["bearerAuth"],
            serde_json::json!([]),
            "{method} {path}"
        );
        let description = op["description"].as_str().unwrap_or_default();
        assert!(
            description.contains("Requires the `"),
            "{method} {path}: {description}"
        );
        for status in ["401", "403"] {
            assert!(
                op["responses"][status].is_object(),
                "{method} {path} lacks {status}"
            );
        }
    }
    let power_off = operations()
        .into_iter()
        .find(|(m, p, _)| m == "POST" && p == "/v1/operations/power-off")
        .unwrap();
    assert!(
        power_off.2["description"]
            .as_str()
            .unwrap()
            .contains("`operator`")
    );
}

/// The served document follows `FLOW_METRICS_PUBLIC`: public by default, `viewer` when false.
#[tokio::test]
async fn the_served_document_marks_metrics_public_only_when_it_is() {
    use crate::support::{Backend, TestApp};
    let mut config = flow::config::Config::default();
    let open = TestApp::with_config(Backend::Sqlite, config.clone()).await;
    let doc = open.get("/openapi.json").await.body;
    assert_eq!(
        doc["paths"]["/metrics"]["get"]["security"],
        serde_json::json!([])
    );
    config.metrics.public = false;
    let closed = TestApp::with_config(Backend::Sqlite, config).await;
    let doc = closed.get("/openapi.json").await.body;
    let op = &doc["paths"]["/metrics"]["get"];
    assert_eq!(op["security"][0]["bearerAuth"], serde_json::json!([]));
    assert!(
        op["description"].as_str().unwrap().contains("`viewer`"),
        "{op}"
    );
    assert!(op["responses"]["401"].is_object(), "{op}");
}
