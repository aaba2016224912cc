//! Every way a credential can be wrong answers 401 with `WWW-Authenticate: Bearer`; key rotation
//! is picked up by fetching the JWKS again; revoked API tokens stop working at once.

use axum::http::Method;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::Utc;
use flow::auth::Role;
use ring::hmac;
use serde_json::json;

use super::{Jwks, TestKey, api_token, b64, call_as, claims, get_racks, secured_app};
use crate::support::{Backend, TestApp, TestResponse};

fn assert_invalid(r: &TestResponse, what: &str) {
    assert_eq!(r.status, 401, "{what}: {}", r.text);
    r.assert_problem(401, "unauthorized");
    let challenge = r.header("www-authenticate").unwrap_or_default();
    assert!(
        challenge.starts_with("Bearer ") && challenge.contains("error=\"invalid_token\""),
        "{what}: {challenge}"
    );
}

async fn forged_expired_and_misaddressed_jwts_are_refused(backend: Backend) {
    let key = TestKey::es256("k1");
    let (app, _jwks) = secured_app(backend, &key).await;
    let good = key.sign(&claims("alice", &["viewer"]));
    assert_eq!(get_racks(&app, &good).await.status, 200);
    let now = Utc::now().timestamp();

    let mut expired = claims("alice", &["viewer"]);
    expired["exp"] = json!(now - 3600);
    let r = get_racks(&app, &key.sign(&expired)).await;
    assert_invalid(&r, "expired");
    assert!(r.header("www-authenticate").unwrap().contains("expired"));

    let mut early = claims("alice", &["viewer"]);
    early["nbf"] = json!(now + 3600);
    assert_invalid(&get_racks(&app, &key.sign(&early)).await, "not yet valid");

    let mut wrong_iss = claims("alice", &["viewer"]);
    wrong_iss["iss"] = json!("https://evil.test");
    assert_invalid(
        &get_racks(&app, &key.sign(&wrong_iss)).await,
        "wrong issuer",
    );

    let mut wrong_aud = claims("alice", &["viewer"]);
    wrong_aud["aud"] = json!(["other-service"]);
    assert_invalid(
        &get_racks(&app, &key.sign(&wrong_aud)).await,
        "wrong audience",
    );

    let body = claims("alice", &["admin"]);
    let none = format!(
        "{}.{}.",
        b64(&json!({"alg": "none", "typ": "JWT"})),
        b64(&body)
    );
    assert_invalid(&get_racks(&app, &none).await, "alg none");

    // The classic confusion: HS256 keyed with the public key the JWKS publishes.
    let header = json!({"alg": "HS256", "typ": "JWT", "kid": "k1"});
    let input = format!("{}.{}", b64(&header), b64(&body));
    let mac_key = hmac::Key::new(hmac::HMAC_SHA256, &key.public_bytes());
    let tag = hmac::sign(&mac_key, input.as_bytes());
    let hs = format!("{input}.{}", URL_SAFE_NO_PAD.encode(tag.as_ref()));
    assert_invalid(&get_racks(&app, &hs).await, "HMAC with the public key");

    // A viewer's token with the payload swapped for an admin's, signature kept.
    let parts: Vec<&str> = good.split('.').collect();
    let tampered = format!("{}.{}.{}", parts[0], b64(&body), parts[2]);
    assert_invalid(&get_racks(&app, &tampered).await, "tampered");

    let other = TestKey::es256("k1");
    let foreign = other.sign(&claims("mallory", &["admin"]));
    assert_invalid(&get_racks(&app, &foreign).await, "signed by another key");

    assert_invalid(&get_racks(&app, "not-a-jwt").await, "garbage");
    app.db.cleanup().run().await;
}

async fn a_rotated_key_is_fetched_once_and_made_up_key_ids_do_not_hammer_the_idp(backend: Backend) {
    let old = TestKey::es256("2026-11");
    let (app, jwks) = secured_app(backend, &old).await;
    assert_eq!(
        get_racks(&app, &old.sign(&claims("a", &["viewer"])))
            .await
            .status,
        200
    );
    assert_eq!(
        get_racks(&app, &old.sign(&claims("a", &["viewer"])))
            .await
            .status,
        200
    );
    assert_eq!(jwks.fetches(), 1, "the key set is cached");

    let new = TestKey::eddsa("2026-12");
    jwks.publish(&new);
    let r = get_racks(&app, &new.sign(&claims("b", &["viewer"]))).await;
    assert_eq!(r.status, 200, "the new kid is fetched: {}", r.text);
    assert_eq!(jwks.fetches(), 2);

    let stranger = TestKey::es256("made-up-1");
    assert_invalid(
        &get_racks(&app, &stranger.sign(&claims("c", &["admin"]))).await,
        "unknown kid",
    );
    let stranger = TestKey::es256("made-up-2");
    assert_invalid(
        &get_racks(&app, &stranger.sign(&claims("c", &["admin"]))).await,
        "unknown kid",
    );
    assert!(
        jwks.fetches() <= 3,
        "unknown kids refetch at most once per interval: {}",
        jwks.fetches()
    );
    app.db.cleanup().run().await;
}

async fn api_tokens_work_until_revoked_and_unknown_or_revoked_ones_look_the_same(backend: Backend) {
    let key = TestKey::es256("k1");
    let (app, _jwks) = secured_app(backend, &key).await;
    let admin = api_token(&app, "admin", Role::Admin).await;
    assert!(admin.starts_with("flow_") && admin.len() >= 40, "{admin}");
    let created = call_as(
        &app,
        &admin,
        Method::POST,
        "/v1/tokens",
        Some(&json!({"name": "ci", "role": "viewer", "expires": "90d"})),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.text);
    let secret = created.body["secret"].as_str().unwrap().to_string();
    let id = created.body["id"].as_str().unwrap().to_string();
    assert!(created.body["expires_at"].is_string());
    assert_eq!(get_racks(&app, &secret).await.status, 200);

    let list = call_as(&app, &admin, Method::GET, "/v1/tokens", None).await;
    assert_eq!(list.status, 200);
    assert!(!list.text.contains(&secret), "lists never show secrets");
    let ci = list.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "ci")
        .unwrap()
        .clone();
    assert!(ci["last_used_at"].is_string(), "use is recorded: {ci}");
    assert!(secret.starts_with(ci["prefix"].as_str().unwrap()));

    let revoked = call_as(
        &app,
        &admin,
        Method::DELETE,
        &format!("/v1/tokens/{id}"),
        None,
    )
    .await;
    assert_eq!(revoked.status, 200, "{}", revoked.text);
    assert!(revoked.body["revoked_at"].is_string());
    let after = get_racks(&app, &secret).await;
    assert_invalid(&after, "revoked");
    let mut unknown = secret.clone();
    unknown.replace_range(10..14, "AAAA");
    let never = get_racks(&app, &unknown).await;
    assert_invalid(&never, "unknown");
    assert_eq!(after.body["detail"], never.body["detail"]);
    assert_eq!(
        after.header("www-authenticate"),
        never.header("www-authenticate")
    );

    let bad = call_as(
        &app,
        &admin,
        Method::POST,
        "/v1/tokens",
        Some(&json!({"name": "x", "role": "root", "expires": "soon"})),
    )
    .await;
    bad.assert_problem(400, "invalid_input");
    app.db.cleanup().run().await;
}

async fn a_token_only_deployment_refuses_jwts(backend: Backend) {
    let key = TestKey::es256("k1");
    let jwks = Jwks::serve(&[&key]).await;
    let mut config = super::auth_config(&jwks);
    config.auth.mode = "token".into();
    let app = TestApp::with_config(backend, config).await;
    assert_invalid(
        &get_racks(&app, &key.sign(&claims("a", &["admin"]))).await,
        "jwt off",
    );
    let token = api_token(&app, "v", Role::Viewer).await;
    assert_eq!(get_racks(&app, &token).await.status, 200);
    app.db.cleanup().run().await;
}

async fn keys_can_come_from_a_jwks_file(backend: Backend) {
    let key = TestKey::eddsa("file-key");
    let path = std::env::temp_dir().join(format!("flow-jwks-{}.json", uuid::Uuid::new_v4()));
    std::fs::write(&path, json!({"keys": [key.jwk()]}).to_string()).unwrap();
    let mut config = flow::config::Config::default();
    config.auth.mode = "jwt".into();
    config.auth.jwt.jwks_file = path.display().to_string();
    config.auth.jwt.issuer = super::ISSUER.into();
    config.auth.jwt.audience = super::AUDIENCE.into();
    let app = TestApp::with_config(backend, config).await;
    let r = get_racks(&app, &key.sign(&claims("f", &["viewer"]))).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let stranger = TestKey::eddsa("other");
    assert_invalid(
        &get_racks(&app, &stranger.sign(&claims("f", &["viewer"]))).await,
        "not in the file",
    );
    std::fs::remove_file(&path).unwrap();
    app.db.cleanup().run().await;
}

crate::on_both_secured!(
    keys_can_come_from_a_jwks_file,
    forged_expired_and_misaddressed_jwts_are_refused,
    a_rotated_key_is_fetched_once_and_made_up_key_ids_do_not_hammer_the_idp,
    api_tokens_work_until_revoked_and_unknown_or_revoked_ones_look_the_same,
    a_token_only_deployment_refuses_jwts,
);
