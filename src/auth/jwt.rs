//! OIDC access tokens: a JWS in compact form, signed with RS256, ES256 or EdDSA by a key from the
//! identity provider's JWKS, with issuer, audience, expiry and not-before checked. `none` and
//! HMAC algorithms are refused outright, so a public key can never serve as an HMAC secret.
//! A verified token is remembered by the SHA-256 of the whole token until its `exp`, so that a
//! client sending the same token again costs a hash and a map lookup instead of a signature
//! check: bounded (`FLOW_JWT_CACHE_SIZE`, least recently used evicted), and an entry whose key
//! left the JWKS is dropped (see `JwtVerifier::cached`).

use std::collections::HashMap;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use ring::signature::{self, RsaPublicKeyComponents, UnparsedPublicKey};
use serde_json::Value;

use super::cache::{self, Digest, Lru};
use super::jwks::{self, Key, KeyHealth, KeySource, RemoteKeys};
use super::{AuthError, Identity, Role};
use crate::config::Jwt;
pub use crate::config::parse_role_map;

/// Clock skew tolerated between Flow and the identity provider.
pub const LEEWAY_SECS: i64 = 60;

/// Verifies bearer JWTs for one issuer and audience.
#[derive(Debug)]
pub struct JwtVerifier {
    keys: KeySource,
    issuer: String,
    audience: String,
    roles_claim: String,
    role_map: HashMap<String, Role>,
    /// Tokens verified before, by digest of the whole token.
    verified: Lru<Verified>,
    /// The key-set generation `verified` was last checked against.
    checked_generation: std::sync::atomic::AtomicU64,
}

/// What the cache keeps of a verified token: who it is, until when, and with which key.
#[derive(Debug, Clone)]
struct Verified {
    identity: Identity,
    exp: i64,
    key: Digest,
}

impl JwtVerifier {
    /// From its validated section (`Config::validate` checked every `FLOW_JWT_*` value).
    pub fn from_config(config: &Jwt) -> Self {
        let keys = if let Some(url) = &config.jwks_url {
            KeySource::Remote(RemoteKeys::new(url.to_string()))
        } else {
            KeySource::Static(jwks::read_file(&config.jwks_file))
        };
        Self {
            keys,
            issuer: config.issuer.clone(),
            audience: config.audience.clone(),
            roles_claim: config.roles_claim.clone(),
            role_map: parse_role_map(&config.role_map).unwrap_or_default(),
            verified: Lru::new(config.cache_size),
            checked_generation: Default::default(),
        }
    }

    /// Whether the keys are at hand, for `/readyz`.
    pub async fn health(&self) -> KeyHealth {
        self.keys.health().await
    }

    /// The identity of a bearer JWT: from the cache when this very token was verified before
    /// (and is neither expired nor signed by a key that left the JWKS), else verified in full.
    /// Only tokens that pass every check are cached.
    pub async fn verify(&self, token: &str, now: DateTime<Utc>) -> Result<Identity, AuthError> {
        let digest = cache::digest(token);
        if let Some(answer) = self.cached(&digest, now).await {
            return answer;
        }
        let verified = self.verify_fully(token, now).await?;
        let identity = verified.identity.clone();
        self.verified.insert(digest, verified);
        Ok(identity)
    }

    /// The cached answer for a token digest, if any. Entries signed by a key the JWKS no longer
    /// holds are dropped first (once per change of the set); an expired entry is dropped and
    /// answers `Expired`, as verifying it again would. While a fetched key set is older than
    /// the JWKS refresh interval nothing is answered from here, so the next token verified in
    /// full fetches the set again and a revoked key is noticed.
    async fn cached(
        &self,
        digest: &Digest,
        now: DateTime<Utc>,
    ) -> Option<Result<Identity, AuthError>> {
        use std::sync::atomic::Ordering;
        if !self.keys.is_fresh() {
            return None;
        }
        let generation = self.keys.generation();
        if self.checked_generation.load(Ordering::Acquire) != generation {
            let live = self.keys.fingerprints().await;
            self.verified.retain(|v| live.contains(&v.key));
            self.checked_generation.store(generation, Ordering::Release);
        }
        let hit = self.verified.get(digest)?;
        if now.timestamp() > hit.exp + LEEWAY_SECS {
            self.verified.remove(digest);
            return Some(Err(AuthError::Expired));
        }
        Some(Ok(hit.identity))
    }

    /// How many verified tokens are cached.
    pub fn cached_tokens(&self) -> usize {
        self.verified.len()
    }

    async fn verify_fully(&self, token: &str, now: DateTime<Utc>) -> Result<Verified, AuthError> {
        let mut parts = token.split('.');
        let (Some(header), Some(payload), Some(sig), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(AuthError::Invalid);
        };
        let header: Value = decode_json(header)?;
        let alg = header["alg"].as_str().ok_or(AuthError::Invalid)?;
        if !matches!(alg, "RS256" | "ES256" | "EdDSA") {
            return Err(AuthError::Invalid);
        }
        // Flow implements no JWS extension, so any critical one is one it cannot honour
        // (RFC 7515 §4.1.11).
        if header.get("crit").is_some() {
            return Err(AuthError::Invalid);
        }
        // A key id that is not a string must not fall back to "the only key".
        let kid = match header.get("kid") {
            None => None,
            Some(Value::String(kid)) => Some(kid.as_str()),
            Some(_) => return Err(AuthError::Invalid),
        };
        let key = self.keys.find(kid, alg).await?.ok_or(AuthError::Invalid)?;
        let signature = URL_SAFE_NO_PAD
            .decode(sig)
            .map_err(|_| AuthError::Invalid)?;
        let signed = &token[..header_len(token)];
        verify_signature(&key, signed.as_bytes(), &signature)?;
        let claims: Value = decode_json(payload)?;
        let exp = self.check_claims(&claims, now)?;
        let subject = claims["sub"].as_str().ok_or(AuthError::Invalid)?;
        Ok(Verified {
            identity: Identity::new(format!("user:{subject}"), self.roles(&claims)),
            exp,
            key: key.fingerprint(),
        })
    }

    /// Checks the claims; the token's `exp` when they pass.
    fn check_claims(&self, claims: &Value, now: DateTime<Utc>) -> Result<i64, AuthError> {
        let now = now.timestamp();
        // An access token without an expiry would be valid forever: refused.
        let exp = claims["exp"].as_i64().ok_or(AuthError::Invalid)?;
        if now > exp + LEEWAY_SECS {
            return Err(AuthError::Expired);
        }
        if let Some(nbf) = claims.get("nbf") {
            let nbf = nbf.as_i64().ok_or(AuthError::Invalid)?;
            if now + LEEWAY_SECS < nbf {
                return Err(AuthError::Invalid);
            }
        }
        if claims["iss"].as_str() != Some(self.issuer.as_str()) {
            return Err(AuthError::Invalid);
        }
        let audience_ok = match &claims["aud"] {
            Value::String(aud) => *aud == self.audience,
            Value::Array(auds) => auds.iter().any(|a| a.as_str() == Some(&self.audience)),
            _ => false,
        };
        if !audience_ok {
            return Err(AuthError::Invalid);
        }
        Ok(exp)
    }

    /// The Flow roles of the configured claim's values (a list, or a space-separated string; a
    /// dotted name such as `realm_access.roles` reaches into nested objects). Without a role
    /// map the values must be Flow role names; with one, only mapped values count.
    fn roles(&self, claims: &Value) -> Vec<Role> {
        let mut value = claims;
        for step in self.roles_claim.split('.') {
            value = &value[step];
        }
        let names: Vec<&str> = match value {
            Value::String(s) => s.split_whitespace().collect(),
            Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let mut roles: Vec<Role> = names
            .into_iter()
            .filter_map(|name| {
                if self.role_map.is_empty() {
                    Role::parse(name)
                } else {
                    self.role_map.get(name).copied()
                }
            })
            .collect();
        roles.dedup();
        roles
    }
}

/// Length of `header.payload`, the signed part of a compact JWS.
fn header_len(token: &str) -> usize {
    token.rfind('.').unwrap_or(0)
}

/// A header or payload: JSON whose objects name each key once, as RFC 7515 §4 requires (a
/// parser that keeps the last of two `sub`s would read a token unlike one that keeps the first).
fn decode_json(part: &str) -> Result<Value, AuthError> {
    let bytes = URL_SAFE_NO_PAD
        .decode(part)
        .map_err(|_| AuthError::Invalid)?;
    super::strict_json::parse(&bytes).map_err(|_| AuthError::Invalid)
}

fn verify_signature(key: &Key, message: &[u8], sig: &[u8]) -> Result<(), AuthError> {
    let result = match key {
        Key::Rsa { n, e } => RsaPublicKeyComponents { n, e }.verify(
            &signature::RSA_PKCS1_2048_8192_SHA256,
            message,
            sig,
        ),
        Key::P256 { point } => {
            UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, point).verify(message, sig)
        }
        Key::Ed25519 { x } => UnparsedPublicKey::new(&signature::ED25519, x).verify(message, sig),
    };
    result.map_err(|_| AuthError::Invalid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_maps_parse_and_name_bad_roles() {
        let map = parse_role_map("dc-admins=admin, noc=operator").unwrap();
        assert_eq!(map["dc-admins"], Role::Admin);
        assert_eq!(map["noc"], Role::Operator);
        assert!(parse_role_map("noc=root").unwrap_err().contains("root"));
        assert!(parse_role_map("noc").is_err());
        assert!(parse_role_map("=admin").unwrap_err().contains("empty"));
        assert!(parse_role_map(" =viewer").is_err());
    }

    #[test]
    fn roles_come_from_lists_strings_and_nested_claims() {
        let mut v = JwtVerifier {
            keys: KeySource::Static(Ok(jwks::KeySet::default())),
            issuer: "i".into(),
            audience: "a".into(),
            roles_claim: "roles".into(),
            role_map: HashMap::new(),
            verified: Lru::new(1),
            checked_generation: Default::default(),
        };
        let claims = serde_json::json!({"roles": "viewer editor bogus"});
        assert_eq!(v.roles(&claims), [Role::Viewer, Role::Editor]);
        v.roles_claim = "realm_access.roles".into();
        v.role_map = parse_role_map("noc=operator").unwrap();
        let claims = serde_json::json!({"realm_access": {"roles": ["noc", "admin"]}});
        assert_eq!(v.roles(&claims), [Role::Operator]);
    }
}
