//! Where a change came from: the audit row names the client (the socket's peer, or the client
//! a trusted proxy forwarded for, never a header from anyone else), and refused credentials are
//! counted in `flow_auth_failures_total`.

use std::net::SocketAddr;

use flow::app::App;
use flow::auth::Role;
use serde_json::Value;

use super::{Jwks, TestKey, api_token, auth_config};
use crate::support::fixtures::gb200_rack;
use crate::support::{Backend, TestDb};

/// Flow over real TCP (so the peer address is a socket's), with these trusted proxies.
async fn serve(db: &TestDb, jwks: &Jwks, trusted: &[&str]) -> String {
    let mut config = auth_config(jwks);
    config.server.trusted_proxies = trusted.iter().map(|s| s.to_string()).collect();
    let state = App::builder(db.db.clone(), config).build().into_state();
    let app = flow::api::router(state).into_make_service_with_connect_info::<SocketAddr>();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}

async fn client_of_last_change(base: &str, admin: &str) -> Value {
    let http = reqwest::Client::new();
    let log: Value = http
        .get(format!("{base}/v1/audit?resource=rack"))
        .bearer_auth(admin)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    log["items"][0]["client_addr"].clone()
}

async fn audit_rows_name_the_client_and_forwarded_headers_count_only_from_trusted_proxies(
    backend: Backend,
) {
    let key = TestKey::es256("k1");
    let jwks = Jwks::serve(&[&key]).await;
    let db = TestDb::new(backend).await;
    let direct = serve(&db, &jwks, &[]).await;
    let proxied = serve(&db, &jwks, &["127.0.0.0/8"]).await;
    let app_for_tokens = crate::support::TestApp {
        router: flow::api::router(
            App::builder(db.db.clone(), auth_config(&jwks))
                .build()
                .into_state(),
        ),
        db,
    };
    let admin = api_token(&app_for_tokens, "root", Role::Admin).await;
    let http = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(10))
        .build()
        .unwrap();
    let forged = "6.6.6.6, 198.51.100.7";

    let rack = gb200_rack(1, 1);
    let r = http
        .post(format!("{direct}/v1/expected-racks"))
        .bearer_auth(&admin)
        .header("x-forwarded-for", forged)
        .json(&rack)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    assert_eq!(
        client_of_last_change(&direct, &admin).await,
        "127.0.0.1",
        "a header from an untrusted peer is ignored"
    );

    let rack = gb200_rack(2, 1);
    let r = http
        .post(format!("{proxied}/v1/expected-racks"))
        .bearer_auth(&admin)
        .header("x-forwarded-for", forged)
        .json(&rack)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    assert_eq!(
        client_of_last_change(&proxied, &admin).await,
        "198.51.100.7",
        "the nearest hop the trusted proxy names, not the one the client prepended"
    );
    app_for_tokens.db.cleanup().run().await;
}

fn failures(metrics: &str, reason: &str) -> u64 {
    let series = format!("flow_auth_failures_total{{reason=\"{reason}\"}} ");
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(&series))
        .map_or(0, |n| n.trim().parse().unwrap())
}

async fn refused_credentials_are_counted_by_reason(backend: Backend) {
    let key = TestKey::es256("k1");
    let (app, _jwks) = super::secured_app(backend, &key).await;
    let before = app.get("/metrics").await.text;
    assert_eq!(app.get("/v1/racks").await.status, 401);
    let r = super::get_racks(&app, "flow_not-a-token").await;
    assert_eq!(r.status, 401);
    let after = app.get("/metrics").await.text;
    // Other tests in this process count too: at least ours.
    assert!(
        failures(&after, "missing") > failures(&before, "missing"),
        "{after}"
    );
    assert!(
        failures(&after, "invalid") > failures(&before, "invalid"),
        "{after}"
    );
    app.db.cleanup().run().await;
}

crate::on_both_secured!(
    audit_rows_name_the_client_and_forwarded_headers_count_only_from_trusted_proxies,
    refused_credentials_are_counted_by_reason,
);
