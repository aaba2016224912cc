//! The access table's HEAD rule, and the guard around a panicking handler.

use axum::http::{StatusCode, header};

use super::*;

#[test]
fn head_takes_the_decision_of_get_everywhere() {
    for (method, path, access) in routes() {
        if method == "GET" {
            assert_eq!(access_for("HEAD", path), Some(*access), "{path}");
        }
    }
    assert_eq!(access_for("HEAD", "/healthz"), Some(Public));
    assert_eq!(access_for("HEAD", "/ui/racks"), Some(Session(Viewer)));
    assert_eq!(access_for("HEAD", "/no/such/route"), None);
}

async fn boom() -> &'static str {
    panic!("boom in a handler")
}

#[tokio::test]
async fn a_panicking_handler_answers_500_and_its_attempted_change_is_audited() {
    use tower::ServiceExt;
    let path = std::env::temp_dir().join(format!("flow-panic-{}.db", uuid::Uuid::new_v4()));
    let url = format!("sqlite://{}?mode=rwc", path.display());
    let db = crate::db::connect(&crate::db::DbOptions::new(url))
        .await
        .unwrap();
    crate::db::migrate(&db).await.unwrap();
    let config = crate::config::Config::default();
    let state = crate::app::App::builder(db.clone(), config)
        .build()
        .into_state();
    // The real guard and the real panic layer around a handler that panics.
    let router = axum::Router::new()
        .route("/v1/racks/{id}", axum::routing::patch(boom))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), guard))
        .with_state(state)
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(
            crate::api::panic_answer as crate::api::PanicAnswer,
        ));
    let request = axum::http::Request::patch("/v1/racks/x")
        .header("x-request-id", "req-panic-1")
        .body(axum::body::Body::empty())
        .unwrap();
    let answer = router.oneshot(request).await.unwrap();
    assert_eq!(answer.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(
        answer.headers()[header::CONTENT_TYPE],
        "application/problem+json"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let row = loop {
        let rows = crate::audit::query::list(&db, &Default::default(), 10)
            .await
            .unwrap();
        if let Some(row) = rows.into_iter().find(|r| r.route == "/v1/racks/{id}") {
            break row;
        }
        assert!(std::time::Instant::now() < deadline, "no audit row");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_eq!(row.status, Some(500));
    assert_eq!(row.method, "PATCH");
    assert_eq!(row.request_id.as_deref(), Some("req-panic-1"));
    db.close().await.ok();
    let _ = std::fs::remove_file(&path);
}
