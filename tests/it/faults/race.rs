//! Twenty concurrent writes with the same `If-Match`: exactly one wins, the rest answer 412,
//! and the revision advances by one.

use axum::http::Method;
use futures::future::join_all;
use serde_json::json;

use crate::on_both_backends;
use crate::support::TestApp;
use crate::support::fixtures::readme_rack;

on_both_backends!(
    twenty_rack_patches_with_one_if_match_have_exactly_one_winner,
    twenty_component_patches_with_one_if_match_have_exactly_one_winner,
);

const RACERS: usize = 20;

/// Sends the patches side by side; returns (count of 200, count of 412).
async fn race(app: &TestApp, path: &str, field: &str) -> (usize, usize) {
    let answers = join_all((0..RACERS).map(|i| {
        let body = json!({ field: format!("writer {i}") });
        async move {
            app.call(Method::PATCH, path, Some(&body), &[("if-match", "\"1\"")])
                .await
        }
    }))
    .await;
    let won = answers.iter().filter(|r| r.status == 200).count();
    let lost = answers.iter().filter(|r| r.status == 412).count();
    assert_eq!(
        won + lost,
        RACERS,
        "every answer is 200 or 412: {:?}",
        answers
            .iter()
            .map(|r| (r.status, r.text.clone()))
            .collect::<Vec<_>>()
    );
    (won, lost)
}

async fn twenty_rack_patches_with_one_if_match_have_exactly_one_winner(app: TestApp) {
    let rack = app.create_rack(&readme_rack()).await;
    let path = format!("/v1/racks/{}", rack["id"].as_str().unwrap());
    let (won, lost) = race(&app, &path, "description").await;
    assert_eq!((won, lost), (1, RACERS - 1));
    let after = app.get(&path).await;
    assert_eq!(after.header("etag"), Some("\"2\""), "{}", after.text);
}

async fn twenty_component_patches_with_one_if_match_have_exactly_one_winner(app: TestApp) {
    let r = app
        .post(
            "/v1/components",
            &json!({"type": "cdu", "name": "cdu-1", "manufacturer": "Vertiv", "serial_number": "CDU-RACE"}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let path = format!("/v1/components/{}", r.body["id"].as_str().unwrap());
    let (won, lost) = race(&app, &path, "firmware_version").await;
    assert_eq!((won, lost), (1, RACERS - 1));
    let after = app.get(&path).await;
    assert_eq!(after.header("etag"), Some("\"2\""), "{}", after.text);
}
