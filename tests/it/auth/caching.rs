//! Verified credentials are remembered, never beyond what they allow: a cached JWT is refused
//! once it expires or once its key left the JWKS, a forged or altered token is never answered
//! from the cache (its key is the digest of the whole token; failures are not kept), and an API
//! token revoked behind this process's back stops working within `FLOW_TOKEN_CACHE_SECS`. The
//! clock is moved by the test, never waited for.

use std::sync::Arc;

use chrono::Duration;
use flow::app::{App, AppState};
use flow::auth::Role;
use flow::auth::tokens::{self, NewToken};
use flow::clock::{Clock, ManualClock};
use flow::config::Config;
use serde_json::json;

use super::{Jwks, TestKey, auth_config, b64, claims, get_racks};
use crate::support::{Backend, TestApp, TestDb};

/// A secured app (JWTs from `jwks`, API tokens) on a clock the test moves, with its state.
async fn on_a_clock(backend: Backend, config: Config) -> (TestApp, AppState, Arc<ManualClock>) {
    let db = TestDb::new(backend).await;
    let clock = Arc::new(ManualClock::starting_now());
    let state = App::builder(db.db.clone(), config)
        .clock(clock.clone())
        .build()
        .into_state();
    let router = flow::service::router(state.clone());
    (TestApp { router, db }, state, clock)
}

async fn a_cached_jwt_is_refused_once_it_expires(backend: Backend) {
    let key = TestKey::es256("k1");
    let jwks = Jwks::serve(&[&key]).await;
    let (app, state, clock) = on_a_clock(backend, auth_config(&jwks)).await;
    let mut short = claims("alice", &["viewer"]);
    short["exp"] = json!(clock.now().timestamp() + 120);
    let token = key.sign(&short);
    assert_eq!(get_racks(&app, &token).await.status, 200);
    assert_eq!(get_racks(&app, &token).await.status, 200);
    assert_eq!(
        state.authenticator().cached_jwts(),
        1,
        "verified once, kept"
    );
    // Past exp and the 60 s leeway: the cached entry answers what a full check would.
    clock.advance(Duration::seconds(120 + 61));
    let r = get_racks(&app, &token).await;
    assert_eq!(r.status, 401, "{}", r.text);
    assert!(r.header("www-authenticate").unwrap().contains("expired"));
    assert_eq!(
        state.authenticator().cached_jwts(),
        0,
        "the expired entry is dropped"
    );
    app.db.cleanup().run().await;
}

async fn a_cached_jwt_whose_key_left_the_jwks_is_refused(backend: Backend) {
    let old = TestKey::es256("2026-11");
    let jwks = Jwks::serve(&[&old]).await;
    let (app, state, _clock) = on_a_clock(backend, auth_config(&jwks)).await;
    let before = old.sign(&claims("alice", &["viewer"]));
    assert_eq!(get_racks(&app, &before).await.status, 200);
    assert_eq!(state.authenticator().cached_jwts(), 1);
    // The IdP rotates: the new key is published, the old one withdrawn. The first token signed
    // with the new key makes Flow fetch the set again.
    let new = TestKey::eddsa("2026-12");
    jwks.publish(&new);
    jwks.unpublish(&old.kid);
    let after = new.sign(&claims("bob", &["viewer"]));
    assert_eq!(get_racks(&app, &after).await.status, 200);
    let r = get_racks(&app, &before).await;
    assert_eq!(
        r.status, 401,
        "a cached token of a withdrawn key: {}",
        r.text
    );
    assert_eq!(
        state.authenticator().cached_jwts(),
        1,
        "only the new key's token"
    );
    assert_eq!(get_racks(&app, &after).await.status, 200);
    app.db.cleanup().run().await;
}

async fn forged_tokens_are_never_served_from_the_cache(backend: Backend) {
    let key = TestKey::es256("k1");
    let jwks = Jwks::serve(&[&key]).await;
    let (app, state, _clock) = on_a_clock(backend, auth_config(&jwks)).await;
    let good = key.sign(&claims("alice", &["viewer"]));
    assert_eq!(get_racks(&app, &good).await.status, 200);
    let parts: Vec<&str> = good.split('.').collect();
    let admin = b64(&claims("alice", &["admin"]));
    // One bit of the signature's middle flipped (a valid base64 character either way).
    let mut sig = parts[2].to_string();
    let flipped = if &sig[10..11] == "A" { "B" } else { "A" };
    sig.replace_range(10..11, flipped);
    let header = b64(&json!({"alg": "ES256", "typ": "JWT", "kid": "k1", "x": 1}));
    let forgeries = [
        format!("{}.{admin}.{}", parts[0], parts[2]),
        format!("{}.{}.{sig}", parts[0], parts[1]),
        format!("{header}.{}.{}", parts[1], parts[2]),
        format!("{good}."),
        format!("{good}A"),
        good[..good.len() - 1].to_string(),
    ];
    for forged in &forgeries {
        // Twice: a refusal is not remembered either way.
        for _ in 0..2 {
            let r = get_racks(&app, forged).await;
            assert_eq!(r.status, 401, "{forged}: {}", r.text);
        }
    }
    assert_eq!(
        state.authenticator().cached_jwts(),
        1,
        "only the genuine token is cached"
    );
    assert_eq!(get_racks(&app, &good).await.status, 200);
    app.db.cleanup().run().await;
}

async fn a_revoked_api_token_is_refused_within_the_cache_ttl(backend: Backend) {
    let key = TestKey::es256("k1");
    let jwks = Jwks::serve(&[&key]).await;
    let mut config = auth_config(&jwks);
    config.auth.token_cache_ttl = std::time::Duration::from_secs(10);
    let (app, _state, clock) = on_a_clock(backend, config).await;
    let new = NewToken {
        name: "ci".into(),
        role: Role::Viewer,
        expires_in: None,
    };
    let created = tokens::create(&app.db.db, &new, "test", clock.now())
        .await
        .unwrap();
    assert_eq!(get_racks(&app, &created.secret).await.status, 200);
    // Revoked straight in the database, as another replica would: this process learns it
    // when its memory of the token is older than the TTL.
    tokens::revoke(&app.db.db, created.token.id, clock.now())
        .await
        .unwrap();
    clock.advance(Duration::seconds(5));
    assert_eq!(
        get_racks(&app, &created.secret).await.status,
        200,
        "within the TTL the remembered check stands"
    );
    clock.advance(Duration::seconds(6));
    let r = get_racks(&app, &created.secret).await;
    assert_eq!(r.status, 401, "past the TTL: {}", r.text);
    // Expiry is checked on every use, remembered or not.
    let brief = NewToken {
        name: "brief".into(),
        role: Role::Viewer,
        expires_in: Some(Duration::seconds(3)),
    };
    let brief = tokens::create(&app.db.db, &brief, "test", clock.now())
        .await
        .unwrap();
    assert_eq!(get_racks(&app, &brief.secret).await.status, 200);
    clock.advance(Duration::seconds(4));
    let r = get_racks(&app, &brief.secret).await;
    assert_eq!(r.status, 401, "expired while remembered: {}", r.text);
    assert!(r.header("www-authenticate").unwrap().contains("expired"));
    app.db.cleanup().run().await;
}

crate::on_both_secured!(
    a_cached_jwt_is_refused_once_it_expires,
    a_cached_jwt_whose_key_left_the_jwks_is_refused,
    forged_tokens_are_never_served_from_the_cache,
    a_revoked_api_token_is_refused_within_the_cache_ttl,
);
