//! The small holes a hostile review found, each performed: HEAD needing admin, `/readyz` naming
//! Temporal's address to anyone, a JWKS outage locking every JWT out, JWT headers and payloads
//! read two ways (`crit`, a numeric `kid`, duplicate keys), an empty group mapped to a role,
//! and token lifetimes past the calendar's end.

use std::sync::Arc;

use axum::http::Method;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use flow::app::App;
use flow::auth::Role;
use flow::workflows::{LinkedEngine, TemporalLink};
use ring::rand::SystemRandom;
use serde_json::{Value, json};

use super::{
    AUDIENCE, ISSUER, Jwks, SigningKey, TestKey, api_token, auth_config, bearer, call_as, claims,
    get_racks, secured_app,
};
use crate::support::{Backend, TestApp, TestDb};

async fn head_takes_the_role_of_get_and_probes_stay_open(backend: Backend) {
    let key = TestKey::es256("k1");
    let (app, _jwks) = secured_app(backend, &key).await;
    let viewer = bearer(&key.sign(&claims("vic", &["viewer"])));
    for path in ["/healthz", "/readyz"] {
        let r = app.call(Method::HEAD, path, None, &[]).await;
        assert_eq!(r.status, 200, "HEAD {path} without credentials: {}", r.text);
        assert!(r.text.is_empty(), "HEAD has no body");
    }
    let r = app
        .call(
            Method::HEAD,
            "/v1/racks",
            None,
            &[("authorization", &viewer)],
        )
        .await;
    assert_eq!(r.status, 200, "HEAD /v1/racks as a viewer");
    let r = app.call(Method::HEAD, "/v1/racks", None, &[]).await;
    assert_eq!(r.status, 401, "HEAD still needs credentials");
    let r = app
        .call(
            Method::HEAD,
            "/v1/tokens",
            None,
            &[("authorization", &viewer)],
        )
        .await;
    assert_eq!(r.status, 403, "HEAD /v1/tokens needs admin, as GET does");
    app.db.cleanup().run().await;
}

/// An app whose Temporal link points at a port nobody serves, so `/readyz` has a down
/// dependency whose error names an internal address.
async fn app_with_unreachable_temporal(backend: Backend, jwks: &Jwks) -> (TestApp, String) {
    let db = TestDb::new(backend).await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let address = format!("http://127.0.0.1:{port}");
    let link = TemporalLink::new(address.clone(), "flow");
    let state = App::builder(db.db.clone(), auth_config(jwks))
        .engine(Arc::new(LinkedEngine::new(link, "q")))
        .build()
        .into_state();
    let router = flow::api::router(state);
    (TestApp { router, db }, address)
}

async fn readiness_tells_anonymous_callers_statuses_only_and_viewers_why(backend: Backend) {
    let key = TestKey::es256("k1");
    let jwks = Jwks::serve(&[&key]).await;
    let (app, address) = app_with_unreachable_temporal(backend, &jwks).await;
    let port = address.rsplit(':').next().unwrap().to_string();

    let anonymous = app.get("/readyz").await;
    assert_eq!(anonymous.status, 503, "{}", anonymous.text);
    assert_eq!(anonymous.body["checks"]["temporal"]["status"], "down");
    assert!(
        !anonymous.text.contains(&port) && !anonymous.text.contains("error"),
        "an anonymous caller learns statuses only: {}",
        anonymous.text
    );
    // Bad credentials are no credentials: still statuses only, and no 401 for a probe.
    let forged = app
        .call(
            Method::GET,
            "/readyz",
            None,
            &[("authorization", "Bearer flow_nope")],
        )
        .await;
    assert_eq!(forged.status, 503);
    assert!(!forged.text.contains(&port), "{}", forged.text);

    let viewer = bearer(&key.sign(&claims("vic", &["viewer"])));
    let told = app
        .call(Method::GET, "/readyz", None, &[("authorization", &viewer)])
        .await;
    assert_eq!(told.status, 503);
    let why = told.body["checks"]["temporal"]["error"].as_str().unwrap();
    assert!(why.contains(&port), "a viewer is told why: {}", told.text);
    assert_eq!(told.body["checks"]["jwks"]["status"], "up", "{}", told.text);
    app.db.cleanup().run().await;
}

async fn a_jwks_url_that_fails_later_keeps_the_last_good_keys_and_readyz_says_so(backend: Backend) {
    let key = TestKey::es256("k1");
    let (app, jwks) = secured_app(backend, &key).await;
    let token = key.sign(&claims("vic", &["viewer"]));
    assert_eq!(get_racks(&app, &token).await.status, 200);

    jwks.fail(true);
    // A token naming a key id Flow lacks makes it fetch again; that fetch fails.
    let rotated = TestKey::es256("k2");
    let r = get_racks(&app, &rotated.sign(&claims("eve", &["viewer"]))).await;
    assert_eq!(r.status, 401, "an unknown key stays unknown: {}", r.text);
    assert!(jwks.fetches() >= 2, "the failing fetch happened");
    assert_eq!(
        get_racks(&app, &token).await.status,
        200,
        "the keys fetched before the outage still verify"
    );
    let admin = api_token(&app, "ops", Role::Admin).await;
    let ready = call_as(&app, &admin, Method::GET, "/readyz", None).await;
    assert_eq!(ready.status, 200, "a stale key set is reported, not fatal");
    assert_eq!(
        ready.body["checks"]["jwks"]["status"], "stale",
        "{}",
        ready.text
    );
    let why = ready.body["checks"]["jwks"]["error"].as_str().unwrap();
    assert!(why.contains("500"), "{why}");
    let anonymous = app.get("/readyz").await;
    assert_eq!(anonymous.body["checks"]["jwks"]["status"], "stale");
    assert!(anonymous.body["checks"]["jwks"].get("error").is_none());

    jwks.fail(false);
    app.db.cleanup().run().await;
}

/// `header` and `payload` signed by `key` exactly as given (no JSON re-encoding, so duplicate
/// keys survive).
fn sign_raw(key: &TestKey, header: &str, payload: &str) -> String {
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header),
        URL_SAFE_NO_PAD.encode(payload)
    );
    let sig = match &key.key {
        SigningKey::Es256(k) => k
            .sign(&SystemRandom::new(), input.as_bytes())
            .unwrap()
            .as_ref()
            .to_vec(),
        SigningKey::EdDsa(k) => k.sign(input.as_bytes()).as_ref().to_vec(),
    };
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig))
}

async fn jwts_with_crit_a_numeric_kid_or_duplicate_keys_are_refused(backend: Backend) {
    // One key without a kid in the set: a numeric kid used to fall back to "the only key".
    let key = TestKey::es256("k1");
    let mut jwk = key.jwk();
    jwk.as_object_mut().unwrap().remove("kid");
    let jwks = Jwks::serve(&[]).await;
    jwks.publish_jwk(jwk);
    let app = TestApp::with_config(backend, auth_config(&jwks)).await;
    let payload = claims("vic", &["viewer"]).to_string();
    let plain = sign_raw(&key, r#"{"alg":"ES256","typ":"JWT"}"#, &payload);
    assert_eq!(get_racks(&app, &plain).await.status, 200, "the control");

    let crit = sign_raw(
        &key,
        r#"{"alg":"ES256","typ":"JWT","crit":["exp"],"exp":1}"#,
        &payload,
    );
    assert_eq!(get_racks(&app, &crit).await.status, 401, "crit");
    let numeric = sign_raw(&key, r#"{"alg":"ES256","typ":"JWT","kid":7}"#, &payload);
    assert_eq!(get_racks(&app, &numeric).await.status, 401, "numeric kid");

    // `sub` twice: a parser keeping the first reads "vic", one keeping the last "root".
    let twice = payload.replacen("{", r#"{"sub":"root","roles":["admin"],"#, 1);
    assert!(serde_json::from_str::<Value>(&twice).is_ok(), "{twice}");
    let dup = sign_raw(&key, r#"{"alg":"ES256","typ":"JWT"}"#, &twice);
    assert_eq!(get_racks(&app, &dup).await.status, 401, "duplicate claims");
    let dup_header = sign_raw(
        &key,
        r#"{"alg":"ES256","alg":"ES256","typ":"JWT"}"#,
        &payload,
    );
    assert_eq!(
        get_racks(&app, &dup_header).await.status,
        401,
        "duplicate header"
    );
    app.db.cleanup().run().await;
}

async fn an_empty_claim_value_never_maps_to_a_role(backend: Backend) {
    let key = TestKey::es256("k1");
    let jwks = Jwks::serve(&[&key]).await;
    let mut config = auth_config(&jwks);
    config.auth.jwt.role_map = "=admin,noc=operator".into();
    let refused = flow::config::Config::load(
        &[
            ("FLOW_AUTH", "jwt"),
            ("FLOW_JWT_JWKS_URL", jwks.url.as_str()),
            ("FLOW_JWT_ISSUER", ISSUER),
            ("FLOW_JWT_AUDIENCE", AUDIENCE),
            ("FLOW_JWT_ROLE_MAP", "=admin,noc=operator"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        refused.contains("FLOW_JWT_ROLE_MAP") && refused.contains("empty"),
        "{refused}"
    );
    // Even given to the app directly, the map grants nothing to an empty group.
    let app = TestApp::with_config(backend, config).await;
    let token = key.sign(&json!({"iss": ISSUER, "aud": AUDIENCE, "sub": "x",
        "exp": chrono::Utc::now().timestamp() + 600, "roles": [""]}));
    let r = call_as(&app, &token, Method::GET, "/v1/tokens", None).await;
    assert_ne!(r.status, 200, "{}", r.text);
    app.db.cleanup().run().await;
}

async fn token_lifetimes_are_capped_and_absurd_ones_are_a_400_with_an_audit_row(backend: Backend) {
    let key = TestKey::es256("k1");
    let jwks = Jwks::serve(&[&key]).await;
    let mut config = auth_config(&jwks);
    config.auth.token_max_days = 30;
    let app = TestApp::with_config(backend, config).await;
    let admin = api_token(&app, "root", Role::Admin).await;
    let create = |name: &str, expires: Option<&str>| {
        let mut body = json!({"name": name, "role": "viewer"});
        if let Some(expires) = expires {
            body["expires"] = json!(expires);
        }
        body
    };
    for expires in ["99999999d", "99999999999999999999d", "31d", "745h"] {
        let body = create(&format!("t-{expires}"), Some(expires));
        let r = call_as(&app, &admin, Method::POST, "/v1/tokens", Some(&body)).await;
        r.assert_invalid_field("expires", &body);
        assert!(
            r.body["errors"][0]["message"]
                .as_str()
                .unwrap()
                .contains("30d")
        );
    }
    let audit = call_as(
        &app,
        &admin,
        Method::GET,
        "/v1/audit?actor=token:root",
        None,
    )
    .await;
    let refused = audit.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|row| row["route"] == "/v1/tokens" && row["status"] == 400)
        .count();
    assert_eq!(refused, 4, "each refusal is audited: {}", audit.text);

    let now = chrono::Utc::now();
    let r = call_as(
        &app,
        &admin,
        Method::POST,
        "/v1/tokens",
        Some(&create("d", None)),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let expires: chrono::DateTime<chrono::Utc> =
        r.body["expires_at"].as_str().unwrap().parse().unwrap();
    let days = (expires - now).num_hours() as f64 / 24.0;
    assert!(
        (29.9..=30.1).contains(&days),
        "absent = the maximum: {days}"
    );
    let body = create("ok", Some("30d"));
    let r = call_as(&app, &admin, Method::POST, "/v1/tokens", Some(&body)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    app.db.cleanup().run().await;
}

#[tokio::test]
async fn an_unreadable_or_unparseable_jwks_file_stops_flow_serve_at_start() {
    let dir = std::env::temp_dir().join(format!("flow-jwks-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let garbage = dir.join("garbage.json");
    std::fs::write(&garbage, "{not json").unwrap();
    let empty = dir.join("empty.json");
    std::fs::write(&empty, r#"{"keys": []}"#).unwrap();
    let missing = dir.join("missing.json");
    for file in [&garbage, &empty, &missing] {
        let mut config = flow::config::Config::default();
        config.auth.mode = "jwt".into();
        config.auth.jwt.jwks_file = file.display().to_string();
        config.auth.jwt.issuer = ISSUER.into();
        config.auth.jwt.audience = AUDIENCE.into();
        config.database.url = "sqlite::memory:".into();
        config.server.listen = "127.0.0.1:0".parse().unwrap();
        let roles = flow::service::Roles {
            api: true,
            worker: false,
        };
        let started = flow::service::run(config, roles, std::future::pending());
        let result = tokio::time::timeout(std::time::Duration::from_secs(20), started)
            .await
            .expect("refused at once, not served");
        let error = result.unwrap_err().to_string();
        assert!(
            error.contains("FLOW_JWT_JWKS_FILE") && error.contains(&file.display().to_string()),
            "{error}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_plain_http_jwks_url_is_warned_about_at_start() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_flow"))
        .args(["serve", "--no-worker"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("FLOW_AUTH", "jwt")
        .env("FLOW_JWT_JWKS_URL", "http://127.0.0.1:9/jwks")
        .env("FLOW_JWT_ISSUER", ISSUER)
        .env("FLOW_JWT_AUDIENCE", AUDIENCE)
        .env("FLOW_TEMPORAL_ADDRESS", "none")
        // Stops right after the start-up checks: nothing listens on port 9.
        .env("FLOW_DATABASE_URL", "postgres://postgres@127.0.0.1:9/none")
        .env("FLOW_DB_ACQUIRE_TIMEOUT_SECS", "1")
        .output()
        .expect("run flow serve");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!output.status.success(), "{text}");
    assert!(
        text.contains("FLOW_JWT_JWKS_URL is plain http://"),
        "{text}"
    );
}

crate::on_both_secured!(
    head_takes_the_role_of_get_and_probes_stay_open,
    readiness_tells_anonymous_callers_statuses_only_and_viewers_why,
    a_jwks_url_that_fails_later_keeps_the_last_good_keys_and_readyz_says_so,
    jwts_with_crit_a_numeric_kid_or_duplicate_keys_are_refused,
    an_empty_claim_value_never_maps_to_a_role,
    token_lifetimes_are_capped_and_absurd_ones_are_a_400_with_an_audit_row,
);
