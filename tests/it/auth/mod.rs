//! Authentication, roles and the audit log, through HTTP: JWTs signed by keys generated here and
//! served from an in-test JWKS endpoint, API tokens, the role matrix, and audit rows.

mod actors;
mod audit;
mod caching;
mod cli;
mod credentials;
mod hardening;
mod holds;
mod matrix;
mod openapi;
mod provenance;
mod retention;
mod rs256;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::Method;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::Utc;
use flow::auth::Role;
use flow::auth::tokens::{self, NewToken};
use flow::config::Config;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, Ed25519KeyPair, KeyPair};
use serde_json::{Value, json};

use crate::support::{Backend, TestApp, TestResponse};

pub const ISSUER: &str = "https://idp.test";
pub const AUDIENCE: &str = "flow";

/// A signing key of the test identity provider.
pub enum SigningKey {
    Es256(EcdsaKeyPair),
    EdDsa(Ed25519KeyPair),
}

/// One key with its id.
pub struct TestKey {
    pub kid: String,
    pub key: SigningKey,
}

impl TestKey {
    pub fn es256(kid: &str) -> Self {
        let rng = SystemRandom::new();
        let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(alg, &rng).unwrap();
        let key = EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng).unwrap();
        Self {
            kid: kid.into(),
            key: SigningKey::Es256(key),
        }
    }

    pub fn eddsa(kid: &str) -> Self {
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).unwrap();
        let key = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
        Self {
            kid: kid.into(),
            key: SigningKey::EdDsa(key),
        }
    }

    pub fn alg(&self) -> &'static str {
        match self.key {
            SigningKey::Es256(_) => "ES256",
            SigningKey::EdDsa(_) => "EdDSA",
        }
    }

    pub fn public_bytes(&self) -> Vec<u8> {
        match &self.key {
            SigningKey::Es256(k) => k.public_key().as_ref().to_vec(),
            SigningKey::EdDsa(k) => k.public_key().as_ref().to_vec(),
        }
    }

    /// The public half as a JWK.
    pub fn jwk(&self) -> Value {
        let public = self.public_bytes();
        match self.key {
            SigningKey::Es256(_) => json!({
                "kty": "EC", "crv": "P-256", "kid": self.kid, "use": "sig", "alg": "ES256",
                "x": URL_SAFE_NO_PAD.encode(&public[1..33]), "y": URL_SAFE_NO_PAD.encode(&public[33..65]),
            }),
            SigningKey::EdDsa(_) => json!({
                "kty": "OKP", "crv": "Ed25519", "kid": self.kid, "use": "sig", "alg": "EdDSA",
                "x": URL_SAFE_NO_PAD.encode(&public),
            }),
        }
    }

    /// A compact JWS of `claims`, with this key's id and algorithm.
    pub fn sign(&self, claims: &Value) -> String {
        let header = json!({"alg": self.alg(), "typ": "JWT", "kid": self.kid});
        let signing_input = format!("{}.{}", b64(&header), b64(claims));
        let sig = match &self.key {
            SigningKey::Es256(k) => k
                .sign(&SystemRandom::new(), signing_input.as_bytes())
                .unwrap()
                .as_ref()
                .to_vec(),
            SigningKey::EdDsa(k) => k.sign(signing_input.as_bytes()).as_ref().to_vec(),
        };
        format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(sig))
    }
}

pub fn b64(value: &Value) -> String {
    URL_SAFE_NO_PAD.encode(value.to_string())
}

/// Valid claims for `sub` with these roles, expiring in an hour.
pub fn claims(sub: &str, roles: &[&str]) -> Value {
    let now = Utc::now().timestamp();
    json!({"iss": ISSUER, "aud": AUDIENCE, "sub": sub, "iat": now, "nbf": now - 5,
        "exp": now + 3600, "roles": roles})
}

/// The keys the test IdP publishes, how often they were fetched, and whether it fails.
type Published = (Arc<Mutex<Vec<Value>>>, Arc<AtomicUsize>, Arc<AtomicBool>);

/// The test identity provider's JWKS endpoint: the keys it publishes can change (rotation),
/// and it counts how often Flow fetched them.
#[derive(Clone)]
pub struct Jwks {
    pub url: String,
    keys: Arc<Mutex<Vec<Value>>>,
    fetches: Arc<AtomicUsize>,
    failing: Arc<AtomicBool>,
}

impl Jwks {
    pub async fn serve(keys: &[&TestKey]) -> Self {
        let published = Arc::new(Mutex::new(keys.iter().map(|k| k.jwk()).collect()));
        let fetches = Arc::new(AtomicUsize::new(0));
        let failing = Arc::new(AtomicBool::new(false));
        let state = (published.clone(), fetches.clone(), failing.clone());
        let app = axum::Router::new()
            .route(
                "/jwks",
                axum::routing::get(
                    |State((keys, count, failing)): State<Published>| async move {
                        count.fetch_add(1, Ordering::SeqCst);
                        if failing.load(Ordering::SeqCst) {
                            return Err(axum::http::StatusCode::INTERNAL_SERVER_ERROR);
                        }
                        Ok(axum::Json(json!({"keys": *keys.lock().unwrap()})))
                    },
                ),
            )
            .with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/jwks", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self {
            url,
            keys: published,
            fetches,
            failing,
        }
    }

    /// From now on every fetch answers 500 (`false`: serves the keys again).
    pub fn fail(&self, failing: bool) {
        self.failing.store(failing, Ordering::SeqCst);
    }

    pub fn publish(&self, key: &TestKey) {
        self.publish_jwk(key.jwk());
    }

    /// Publishes a JWK as given (a test may strip its `kid`).
    pub fn publish_jwk(&self, jwk: Value) {
        self.keys.lock().unwrap().push(jwk);
    }

    /// Stops publishing the key with this id (the IdP rotated it away).
    pub fn unpublish(&self, kid: &str) {
        self.keys.lock().unwrap().retain(|k| k["kid"] != kid);
    }

    pub fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }
}

/// Configuration accepting JWTs from `jwks` and API tokens.
pub fn auth_config(jwks: &Jwks) -> Config {
    let mut config = Config::default();
    config.auth.mode = "jwt,token".into();
    config.auth.jwt.jwks_url = jwks.url.parse().ok();
    config.auth.jwt.issuer = ISSUER.into();
    config.auth.jwt.audience = AUDIENCE.into();
    config
}

/// A TestApp with `FLOW_AUTH=jwt,token` against an in-test IdP whose first key is `key`.
pub async fn secured_app(backend: Backend, key: &TestKey) -> (TestApp, Jwks) {
    let jwks = Jwks::serve(&[key]).await;
    let app = TestApp::with_config(backend, auth_config(&jwks)).await;
    (app, jwks)
}

/// Creates an API token straight in the database; returns its secret.
pub async fn api_token(app: &TestApp, name: &str, role: Role) -> String {
    let new = NewToken {
        name: name.into(),
        role,
        expires_in: None,
    };
    tokens::create(&app.db.db, &new, "test", Utc::now())
        .await
        .unwrap()
        .secret
}

pub fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// A request with `token` as the bearer.
pub async fn call_as(
    app: &TestApp,
    token: &str,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> TestResponse {
    app.call(method, path, body, &[("authorization", &bearer(token))])
        .await
}

/// `GET /v1/racks` with `token` as the bearer: the request every credential test makes.
pub async fn get_racks(app: &TestApp, token: &str) -> TestResponse {
    call_as(app, token, Method::GET, "/v1/racks", None).await
}

/// Runs an async test body on both backends with a secured app.
#[macro_export]
macro_rules! on_both_secured {
    ($($name:ident),* $(,)?) => {
        mod postgres {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name($crate::support::Backend::Postgres).await;
                }
            )*
        }
        mod sqlite {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name($crate::support::Backend::Sqlite).await;
                }
            )*
        }
    };
}
