//! The identity provider's signing keys (a JWKS): read from a file once, or fetched from a URL,
//! cached, and fetched again when a token names a key id the cache does not hold (key rotation).
//! A fetch that drops a key moves the set's generation on, so that tokens verified with that key
//! are no longer taken from [`super::jwt`]'s cache of verified tokens.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;
use tokio::sync::Mutex;

use super::AuthError;
use super::cache::Digest;

/// Deadline of one JWKS fetch.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// A refresh for an unknown key id happens at most this often, so a stream of tokens with made-up
/// key ids cannot turn Flow into a load generator against the identity provider.
const MIN_REFRESH: Duration = Duration::from_secs(10);
/// Keys are fetched again after this long even when every key id is known (revoked keys go).
const MAX_AGE: Duration = Duration::from_secs(3600);

/// One verification key, decoded from its JWK.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key {
    /// RS256: modulus and exponent, big-endian.
    Rsa { n: Vec<u8>, e: Vec<u8> },
    /// ES256: the uncompressed P-256 point `04 || x || y`.
    P256 { point: Vec<u8> },
    /// EdDSA: the 32-byte Ed25519 public key.
    Ed25519 { x: Vec<u8> },
}

impl Key {
    /// The only JWS algorithm this key verifies.
    pub fn alg(&self) -> &'static str {
        match self {
            Key::Rsa { .. } => "RS256",
            Key::P256 { .. } => "ES256",
            Key::Ed25519 { .. } => "EdDSA",
        }
    }

    /// SHA-256 of the algorithm and the key material: what a cached verification remembers of
    /// the key that made it.
    pub fn fingerprint(&self) -> Digest {
        let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
        ctx.update(self.alg().as_bytes());
        let parts: [&[u8]; 2] = match self {
            Key::Rsa { n, e } => [n, e],
            Key::P256 { point } => [point, &[]],
            Key::Ed25519 { x } => [x, &[]],
        };
        for part in parts {
            // Lengths first, so no two different keys hash the same bytes.
            ctx.update(&(part.len() as u64).to_be_bytes());
            ctx.update(part);
        }
        let mut out = [0u8; 32];
        out.copy_from_slice(ctx.finish().as_ref());
        out
    }
}

/// A parsed key set: by key id, plus the keys without one.
#[derive(Debug, Clone, Default)]
pub struct KeySet {
    by_kid: HashMap<String, Key>,
    anonymous: Vec<Key>,
}

#[derive(Deserialize)]
struct JwkDoc {
    keys: Vec<serde_json::Value>,
}

impl KeySet {
    /// Parses a JWKS document, skipping keys Flow cannot use (encryption keys, HMAC secrets,
    /// other curves) rather than failing on them: IdPs publish such keys beside signing keys.
    pub fn parse(text: &str) -> Result<KeySet, String> {
        let doc: JwkDoc = serde_json::from_str(text).map_err(|e| format!("not a JWKS: {e}"))?;
        let mut set = KeySet::default();
        for jwk in doc.keys {
            let s = |name: &str| jwk.get(name).and_then(|v| v.as_str());
            if s("use").is_some_and(|u| u != "sig") {
                continue;
            }
            let b64 = |name: &str| s(name).and_then(|v| URL_SAFE_NO_PAD.decode(v).ok());
            let key = match (s("kty"), s("crv")) {
                (Some("RSA"), _) => match (b64("n"), b64("e")) {
                    (Some(n), Some(e)) => Key::Rsa { n, e },
                    _ => continue,
                },
                (Some("EC"), Some("P-256")) => match (b64("x"), b64("y")) {
                    (Some(x), Some(y)) if x.len() == 32 && y.len() == 32 => {
                        let mut point = vec![4u8];
                        point.extend(x);
                        point.extend(y);
                        Key::P256 { point }
                    }
                    _ => continue,
                },
                (Some("OKP"), Some("Ed25519")) => match b64("x") {
                    Some(x) if x.len() == 32 => Key::Ed25519 { x },
                    _ => continue,
                },
                _ => continue,
            };
            // A key published for one algorithm is never used with another.
            if s("alg").is_some_and(|alg| alg != key.alg()) {
                continue;
            }
            match s("kid") {
                Some(kid) => {
                    set.by_kid.insert(kid.to_string(), key);
                }
                None => set.anonymous.push(key),
            }
        }
        Ok(set)
    }

    /// The fingerprints of every key in the set.
    pub fn fingerprints(&self) -> HashSet<Digest> {
        self.by_kid
            .values()
            .chain(self.anonymous.iter())
            .map(Key::fingerprint)
            .collect()
    }

    /// Whether no usable key was found.
    pub fn is_empty(&self) -> bool {
        self.by_kid.is_empty() && self.anonymous.is_empty()
    }

    /// The key a token's header names: by `kid`, or without one, the only key for its algorithm.
    pub fn find(&self, kid: Option<&str>, alg: &str) -> Option<&Key> {
        match kid {
            Some(kid) => self.by_kid.get(kid).filter(|k| k.alg() == alg),
            None => {
                let mut candidates = self
                    .by_kid
                    .values()
                    .chain(self.anonymous.iter())
                    .filter(|k| k.alg() == alg);
                let first = candidates.next();
                if candidates.next().is_some() {
                    None
                } else {
                    first
                }
            }
        }
    }
}

/// Where the keys come from.
#[derive(Debug)]
pub enum KeySource {
    /// `FLOW_JWT_JWKS_FILE`, read at start-up (or the error it gave).
    Static(Result<KeySet, String>),
    /// `FLOW_JWT_JWKS_URL`, fetched on first use and on unknown key ids.
    Remote(RemoteKeys),
}

/// A JWKS URL and what was last fetched from it.
#[derive(Debug)]
pub struct RemoteKeys {
    url: String,
    http: reqwest::Client,
    cache: Mutex<Cache>,
    /// Moves on whenever a fetch drops a key the set held before.
    generation: AtomicU64,
    /// When the set in `cache` was fetched: milliseconds since `born`, plus one (0: never).
    fetched_at: AtomicU64,
    born: Instant,
}

#[derive(Debug, Default)]
struct Cache {
    keys: Option<(KeySet, Instant)>,
    /// When an unknown key id last made Flow fetch again.
    last_forced: Option<Instant>,
    /// Why the last fetch failed, and when; cleared by a fetch that works.
    failure: Option<(String, Instant)>,
}

/// How the identity provider's keys stand, for `/readyz`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyHealth {
    /// The last fetch worked (or none was needed yet).
    Fresh,
    /// The last fetch failed; the keys fetched before it are still used.
    Stale(String),
    /// No key set was ever fetched: JWTs cannot be checked.
    Unavailable(String),
}

impl RemoteKeys {
    pub fn new(url: String) -> Self {
        // reqwest runs on rustls with ring only: a provider must be installed once per process.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .connect_timeout(FETCH_TIMEOUT)
            .build()
            .unwrap_or_default();
        Self {
            url,
            http,
            cache: Mutex::new(Cache::default()),
            generation: AtomicU64::new(0),
            fetched_at: AtomicU64::new(0),
            born: Instant::now(),
        }
    }

    fn millis(&self) -> u64 {
        u64::try_from(self.born.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Whether the set in use was fetched less than `MAX_AGE` ago (read without the lock: it
    /// is asked on every request a cached verification answers).
    pub fn is_fresh(&self) -> bool {
        let at = self.fetched_at.load(Ordering::Acquire);
        let max_age = u64::try_from(MAX_AGE.as_millis()).unwrap_or(u64::MAX);
        at != 0 && self.millis().saturating_sub(at - 1) < max_age
    }

    async fn fetch(&self) -> Result<KeySet, String> {
        let response = self.http.get(&self.url).send().await;
        let response = response
            .and_then(reqwest::Response::error_for_status)
            .map_err(|e| e.without_url().to_string())?;
        let text = response.text().await.map_err(|e| e.to_string())?;
        KeySet::parse(&text)
    }

    /// The key for `kid`/`alg`. The set is fetched when there is none yet or it is old, and
    /// again when a token names a key id it lacks (a rotation), at most once per
    /// `MIN_REFRESH` for that last reason. A fetch that fails keeps the keys fetched before it
    /// (an identity provider down for a while must not lock every caller out) and is not tried
    /// again for `MIN_REFRESH`.
    pub async fn find(&self, kid: Option<&str>, alg: &str) -> Result<Option<Key>, AuthError> {
        let mut cache = self.cache.lock().await;
        let failing = cache
            .failure
            .as_ref()
            .is_some_and(|(_, at)| at.elapsed() < MIN_REFRESH);
        if let Some((set, fetched)) = cache.keys.as_ref()
            && (fetched.elapsed() < MAX_AGE || failing)
        {
            if let Some(key) = set.find(kid, alg) {
                return Ok(Some(key.clone()));
            }
            if failing
                || cache
                    .last_forced
                    .is_some_and(|at| at.elapsed() < MIN_REFRESH)
            {
                return Ok(None);
            }
            cache.last_forced = Some(Instant::now());
        }
        match self.fetch().await {
            Ok(set) => {
                let key = set.find(kid, alg).cloned();
                let dropped = cache
                    .keys
                    .as_ref()
                    .is_some_and(|(old, _)| !old.fingerprints().is_subset(&set.fingerprints()));
                if dropped {
                    self.generation.fetch_add(1, Ordering::AcqRel);
                }
                self.fetched_at.store(self.millis() + 1, Ordering::Release);
                cache.keys = Some((set, Instant::now()));
                cache.failure = None;
                Ok(key)
            }
            Err(error) => {
                let kept = cache.keys.is_some();
                tracing::warn!(url = %self.url, %error, kept_previous_keys = kept, "fetching the JWKS failed");
                cache.failure = Some((error, Instant::now()));
                match cache.keys.as_ref() {
                    Some((set, _)) => Ok(set.find(kid, alg).cloned()),
                    None => Err(AuthError::KeysUnavailable),
                }
            }
        }
    }

    /// Whether the last fetch worked, and if not, whether older keys are in use.
    pub async fn health(&self) -> KeyHealth {
        let cache = self.cache.lock().await;
        match (&cache.failure, &cache.keys) {
            (None, _) => KeyHealth::Fresh,
            (Some((error, _)), Some(_)) => KeyHealth::Stale(format!(
                "fetching the JWKS failed ({error}); the keys fetched before are used"
            )),
            (Some((error, _)), None) => {
                KeyHealth::Unavailable(format!("fetching the JWKS failed ({error})"))
            }
        }
    }
}

/// Reads and parses a JWKS file: unreadable, unparseable or without a key Flow can use is an
/// error, told at start-up rather than as a 503 on every JWT.
pub fn read_file(path: &str) -> Result<KeySet, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let set = KeySet::parse(&text).map_err(|e| format!("{path}: {e}"))?;
    if set.is_empty() {
        return Err(format!(
            "{path} holds no signing key Flow can use (RS256, ES256 or EdDSA)"
        ));
    }
    Ok(set)
}

impl KeySource {
    /// The remote keys' state; a file read at start-up is always fresh.
    pub async fn health(&self) -> KeyHealth {
        match self {
            KeySource::Static(Ok(_)) => KeyHealth::Fresh,
            KeySource::Static(Err(e)) => KeyHealth::Unavailable(e.clone()),
            KeySource::Remote(remote) => remote.health().await,
        }
    }

    /// Moves on whenever a key is dropped from the set (a file's set never changes).
    pub fn generation(&self) -> u64 {
        match self {
            KeySource::Static(_) => 0,
            KeySource::Remote(remote) => remote.generation.load(Ordering::Acquire),
        }
    }

    /// Whether verifications made with these keys may still be taken from the cache: always
    /// for a file; for a URL, while the set is younger than `MAX_AGE` (after that the next
    /// token is verified afresh, which fetches the set again).
    pub fn is_fresh(&self) -> bool {
        match self {
            KeySource::Static(set) => set.is_ok(),
            KeySource::Remote(remote) => remote.is_fresh(),
        }
    }

    /// The fingerprints of the keys now in use.
    pub async fn fingerprints(&self) -> HashSet<Digest> {
        match self {
            KeySource::Static(Ok(set)) => set.fingerprints(),
            KeySource::Static(Err(_)) => HashSet::new(),
            KeySource::Remote(remote) => {
                let cache = remote.cache.lock().await;
                cache
                    .keys
                    .as_ref()
                    .map(|(set, _)| set.fingerprints())
                    .unwrap_or_default()
            }
        }
    }

    pub async fn find(&self, kid: Option<&str>, alg: &str) -> Result<Option<Key>, AuthError> {
        match self {
            KeySource::Static(Ok(set)) => Ok(set.find(kid, alg).cloned()),
            KeySource::Static(Err(_)) => Err(AuthError::KeysUnavailable),
            KeySource::Remote(remote) => remote.find(kid, alg).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_signing_keys_of_supported_algorithms_are_kept() {
        let x = URL_SAFE_NO_PAD.encode([7u8; 32]);
        let text = serde_json::json!({"keys": [
            {"kty": "OKP", "crv": "Ed25519", "kid": "ed", "x": x},
            {"kty": "OKP", "crv": "Ed25519", "kid": "enc", "use": "enc", "x": x},
            {"kty": "oct", "kid": "hmac", "k": x},
            {"kty": "OKP", "crv": "Ed25519", "kid": "wrong-alg", "alg": "RS256", "x": x},
            {"kty": "EC", "crv": "P-384", "kid": "p384", "x": x, "y": x},
            {"kty": "RSA", "kid": "rsa", "n": x, "e": "AQAB"},
        ]})
        .to_string();
        let set = KeySet::parse(&text).unwrap();
        assert_eq!(set.find(Some("ed"), "EdDSA").map(Key::alg), Some("EdDSA"));
        assert!(
            set.find(Some("ed"), "ES256").is_none(),
            "a key verifies one algorithm"
        );
        for kid in ["enc", "hmac", "wrong-alg", "p384"] {
            assert!(set.find(Some(kid), "EdDSA").is_none(), "{kid}");
        }
        assert_eq!(set.find(Some("rsa"), "RS256").map(Key::alg), Some("RS256"));
        assert!(
            set.find(None, "RS256").is_some(),
            "the only RS256 key, without a kid"
        );
        assert!(KeySet::parse("{}").is_err());
    }
}
