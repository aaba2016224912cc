//! RS256, the algorithm most identity providers sign with: a token signed by a fixed RSA key is
//! accepted when the key is published in a JWKS file (`FLOW_JWT_JWKS_FILE`), and refused once
//! its signature no longer matches.
//!
//! `rs256-test-key.pem` and `rs256-test-jwks.json` beside this file are TEST-ONLY: an RSA key
//! generated once with `openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048` and its
//! public half. They are committed (rather than generated per run, as the ES256 and EdDSA keys
//! are) because ring cannot generate RSA keys.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use flow::config::Config;
use ring::rand::SystemRandom;
use ring::signature::{self, RsaKeyPair};
use serde_json::{Value, json};

use super::{AUDIENCE, ISSUER, b64, claims, get_racks};
use crate::support::{Backend, TestApp};

const KEY_PEM: &str = include_str!("rs256-test-key.pem");
const JWKS_FILE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/it/auth/rs256-test-jwks.json"
);
const KID: &str = "test-only-rs256";

/// The PKCS#8 DER inside the committed PEM (the lines between its BEGIN and END markers).
fn test_key() -> RsaKeyPair {
    let body: String = KEY_PEM
        .lines()
        .skip_while(|l| !l.starts_with("-----BEGIN PRIVATE KEY-----"))
        .skip(1)
        .take_while(|l| !l.starts_with("-----END"))
        .collect();
    let der = STANDARD.decode(body).expect("the test key's base64");
    RsaKeyPair::from_pkcs8(&der).expect("the test key is PKCS#8 RSA")
}

/// A compact JWS of `claims` signed RS256 (RSASSA-PKCS1-v1_5 with SHA-256) by the test key.
fn sign_rs256(claims: &Value) -> String {
    let key = test_key();
    let header = json!({"alg": "RS256", "typ": "JWT", "kid": KID});
    let input = format!("{}.{}", b64(&header), b64(claims));
    let mut sig = vec![0; key.public().modulus_len()];
    key.sign(
        &signature::RSA_PKCS1_SHA256,
        &SystemRandom::new(),
        input.as_bytes(),
        &mut sig,
    )
    .expect("signing");
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig))
}

async fn rs256_tokens_from_a_jwks_file_are_accepted(backend: Backend) {
    let mut config = Config::default();
    config.auth.mode = "jwt".into();
    config.auth.jwt.jwks_file = JWKS_FILE.into();
    config.auth.jwt.issuer = ISSUER.into();
    config.auth.jwt.audience = AUDIENCE.into();
    let app = TestApp::with_config(backend, config).await;
    let token = sign_rs256(&claims("carol", &["viewer"]));
    assert_eq!(
        get_racks(&app, &token).await.status,
        200,
        "RS256 token refused"
    );

    // The same token with one claim changed keeps its signature, which no longer matches.
    let mut parts: Vec<String> = token.split('.').map(str::to_string).collect();
    parts[1] = b64(&claims("mallory", &["admin"]));
    assert_eq!(
        get_racks(&app, &parts.join(".")).await.status,
        401,
        "tampered"
    );
    // Signed by the right key but for someone else's audience.
    let mut other = claims("carol", &["viewer"]);
    other["aud"] = json!("other-service");
    assert_eq!(
        get_racks(&app, &sign_rs256(&other)).await.status,
        401,
        "audience"
    );
}

crate::on_both_secured!(rs256_tokens_from_a_jwks_file_are_accepted);
