//! Service-level behaviour: version, health, request ids, the OpenAPI document, Swagger UI and
//! the docker-compose file.

use std::collections::BTreeSet;

use axum::http::Method;
use flow::config::{ENV_VARS, LEGACY_ENV_VARS};

use crate::support::{Backend, TestApp};

#[tokio::test]
async fn version_health_and_readiness_answer() {
    let app = TestApp::new(Backend::Sqlite).await;
    let v = app.get("/v1/version").await;
    assert_eq!(v.status, 200);
    assert_eq!(v.body["version"], env!("CARGO_PKG_VERSION"));
    assert!(v.body["git_commit"].is_string());
    assert_eq!(app.get("/healthz").await.body["status"], "ok");
    let ready = app.get("/readyz").await;
    assert_eq!(ready.body["status"], "ready", "{}", ready.text);
    assert_eq!(ready.body["checks"]["database"]["status"], "up");
}

#[tokio::test]
async fn readiness_fails_with_503_when_the_database_is_gone() {
    let app = TestApp::new(Backend::Postgres).await;
    let cleanup = app.db.cleanup();
    app.db.db.clone().close().await.expect("close pool");
    let ready = app.get("/readyz").await;
    assert_eq!(ready.status, 503, "{}", ready.text);
    assert_eq!(ready.body["status"], "not_ready");
    assert_eq!(ready.body["checks"]["database"]["status"], "down");
    cleanup.run().await;
}

#[tokio::test]
async fn a_request_id_is_generated_or_echoed() {
    let app = TestApp::new(Backend::Sqlite).await;
    let generated = app.get("/healthz").await;
    assert_eq!(generated.header("x-request-id").map(str::len), Some(36));
    let echoed = app
        .call(
            Method::GET,
            "/v1/racks/nope",
            None,
            &[("x-request-id", "req-42")],
        )
        .await;
    assert_eq!(echoed.header("x-request-id"), Some("req-42"));
}

fn committed_openapi() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/openapi/openapi.json"))
        .expect("openapi/openapi.json is committed")
}

#[tokio::test]
async fn the_committed_openapi_document_is_what_the_server_serves() {
    let generated = flow::api::openapi().to_pretty_json().expect("serialize") + "\n";
    assert!(
        committed_openapi() == generated,
        "openapi/openapi.json is stale: regenerate it with `make openapi` (cargo run -- openapi > openapi/openapi.json)"
    );
    let app = TestApp::new(Backend::Sqlite).await;
    let served = app.get("/openapi.json").await;
    assert_eq!(served.status, 200);
    let committed: serde_json::Value =
        serde_json::from_str(&committed_openapi()).expect("valid JSON");
    assert_eq!(served.body, committed);
    assert_eq!(committed["openapi"], "3.1.0");
}

#[tokio::test]
async fn every_operation_is_documented_with_summary_description_and_errors() {
    let doc: serde_json::Value = serde_json::from_str(&committed_openapi()).expect("valid JSON");
    let mut count = 0;
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("path item") {
            count += 1;
            let at = format!("{method} {path}");
            assert!(
                op["summary"].as_str().is_some_and(|s| !s.is_empty()),
                "{at} has no summary"
            );
            assert!(
                op["description"].as_str().is_some_and(|s| !s.is_empty()),
                "{at} has no description"
            );
            let responses = op["responses"].as_object().expect("responses");
            if path.starts_with("/v1/") && path != "/v1/version" {
                assert!(
                    responses.keys().any(|code| code.starts_with('4')),
                    "{at} documents no error response"
                );
            }
        }
    }
    assert!(count >= 23, "only {count} operations documented");
    let example = &doc["components"]["schemas"]["CreateRackRequest"]["example"];
    assert_eq!(example["name"], "g10");
}

#[tokio::test]
async fn swagger_ui_is_served_from_vendored_assets() {
    let app = TestApp::new(Backend::Sqlite).await;
    let index = app.get("/swagger-ui/").await;
    assert_eq!(index.status, 200);
    assert!(index.text.contains("swagger-ui"), "{}", index.text);
    let bundle = app.get("/swagger-ui/swagger-ui-bundle.js").await;
    assert_eq!(bundle.status, 200);
    assert!(
        bundle.text.len() > 100_000,
        "the bundle is served from the binary"
    );
    let init = app.get("/swagger-ui/swagger-initializer.js").await;
    assert!(init.text.contains("/openapi.json"), "{}", init.text);
}

#[test]
fn docker_compose_sets_only_variables_the_binary_reads() {
    let root = env!("CARGO_MANIFEST_DIR");
    let text =
        std::fs::read_to_string(format!("{root}/docker-compose.yml")).expect("docker-compose.yml");
    let compose: serde_yaml::Value =
        serde_yaml::from_str(&text).expect("docker-compose.yml is valid YAML");
    let services = compose["services"].as_mapping().expect("services");
    for name in ["postgres", "temporal", "flow"] {
        assert!(services.contains_key(name), "service {name} is missing");
    }
    let flow = &compose["services"]["flow"];
    assert!(
        flow["build"].is_mapping() || flow["build"].is_string(),
        "flow is built from the Dockerfile"
    );
    assert!(std::path::Path::new(&format!("{root}/Dockerfile")).exists());
    let known: BTreeSet<&str> = ENV_VARS.iter().chain(LEGACY_ENV_VARS).copied().collect();
    let mut flow_vars = BTreeSet::new();
    for (service, body) in services {
        let Some(env) = body["environment"].as_mapping() else {
            continue;
        };
        for key in env.keys().filter_map(|k| k.as_str()) {
            if key.starts_with("FLOW_") {
                assert!(
                    known.contains(key),
                    "{service:?} sets {key}, which flow does not read"
                );
                flow_vars.insert(key.to_string());
            }
        }
    }
    let env = flow["environment"].as_mapping().expect("flow environment");
    let url = env
        .get("FLOW_DATABASE_URL")
        .and_then(|v| v.as_str())
        .expect("FLOW_DATABASE_URL");
    assert!(
        url.starts_with("postgres://") && url.contains("@postgres:"),
        "flow uses the compose PostgreSQL: {url}"
    );
    let temporal = env
        .get("FLOW_TEMPORAL_ADDRESS")
        .and_then(|v| v.as_str())
        .expect("FLOW_TEMPORAL_ADDRESS");
    assert!(temporal.contains("temporal:7233"), "{temporal}");
    // Every value must also be accepted by the configuration loader.
    let vars = env
        .iter()
        .filter_map(|(k, v)| {
            Some((
                k.as_str()?.to_string(),
                v.as_str()
                    .map(String::from)
                    .or_else(|| v.as_u64().map(|n| n.to_string()))?,
            ))
        })
        .collect();
    flow::config::Config::load(&vars).expect("compose environment is a valid configuration");
    assert!(flow_vars.contains("FLOW_LISTEN"));
}
