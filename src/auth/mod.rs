//! Who is calling: Flow's roles, the identities bearer credentials resolve to (OIDC JWTs and
//! API tokens), and the `FLOW_AUTH` modes. Knows nothing of HTTP; `api::access` applies it.

pub mod cache;
pub mod jwks;
pub mod jwt;
mod strict_json;
pub mod tokens;

use std::fmt;
use std::sync::Arc;

use sea_orm::DatabaseConnection;

use crate::clock::Clock;
use crate::config;
pub use crate::config::Modes;
pub use crate::domain::Role;

/// A caller whose credentials checked out, or the system acting on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// As the audit log and `created_by` show it: `user:<sub>`, `token:<name>`,
    /// `schedule:<name>`, `anonymous` (`FLOW_AUTH=none`).
    pub actor: String,
    /// Every Flow role the credentials carry (an IdP user may be in several groups).
    pub roles: Vec<Role>,
}

impl Identity {
    pub fn new(actor: impl Into<String>, roles: Vec<Role>) -> Self {
        Self {
            actor: actor.into(),
            roles,
        }
    }

    /// `FLOW_AUTH=none`: everyone may do everything, recorded as `anonymous`.
    pub fn anonymous() -> Self {
        Self::new("anonymous", vec![Role::Admin])
    }

    /// A schedule firing, cancelling or submitting on its own timer.
    pub fn schedule(name: &str) -> Self {
        Self::new(format!("schedule:{name}"), vec![Role::Operator])
    }

    /// The role that allows `needed`, if any (the one the audit log records).
    pub fn role_for(&self, needed: Role) -> Option<Role> {
        if self.roles.contains(&needed) {
            return Some(needed);
        }
        self.roles.iter().copied().find(|r| r.grants(needed))
    }

    /// The strongest role held, for the audit log of requests that were refused.
    pub fn main_role(&self) -> Option<Role> {
        [Role::Admin, Role::Editor, Role::Operator, Role::Viewer]
            .into_iter()
            .find(|r| self.roles.contains(r))
    }
}

/// Why a bearer credential was not accepted. Unknown and wrong tokens are both `Invalid` with the
/// same message, so an answer never tells which secrets exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("missing bearer token")]
    Missing,
    #[error("the token has expired")]
    Expired,
    #[error("invalid token")]
    Invalid,
    /// The identity provider's keys could not be fetched.
    #[error("the identity provider's keys are unavailable")]
    KeysUnavailable,
}

/// What `flow serve` and `flow worker` check of the JWT settings before they start: a JWKS file
/// that cannot be read or parsed is an error (not a 503 on every JWT later), and a JWKS URL
/// over plain `http://` is warned about (keys fetched that way can be replaced in transit).
pub fn check_at_start(config: &config::Auth) -> Result<(), String> {
    if !config.modes().is_some_and(|m| m.jwt) {
        return Ok(());
    }
    let jwt = &config.jwt;
    if let Some(url) = &jwt.jwks_url
        && url.scheme() == "http"
    {
        tracing::warn!(url = %url, "FLOW_JWT_JWKS_URL is plain http://: whoever sits between Flow and the identity provider can substitute its keys; use https://");
    }
    if jwt.jwks_url.is_none() {
        jwks::read_file(&jwt.jwks_file).map_err(|e| format!("FLOW_JWT_JWKS_FILE: {e}"))?;
    }
    Ok(())
}

/// Resolves bearer credentials to identities according to `FLOW_AUTH`.
pub struct Authenticator {
    modes: Modes,
    jwt: Option<jwt::JwtVerifier>,
    tokens: tokens::CheckedTokens,
    db: DatabaseConnection,
    clock: Arc<dyn Clock>,
}

impl fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Authenticator")
            .field("modes", &self.modes)
            .finish_non_exhaustive()
    }
}

impl Authenticator {
    /// From the configuration; an unset `FLOW_AUTH` means `none` here (library use and tests),
    /// `flow serve` and `flow worker` refuse it before they get this far.
    pub fn new(config: &config::Auth, db: DatabaseConnection, clock: Arc<dyn Clock>) -> Self {
        let modes = config.modes().unwrap_or(Modes {
            jwt: false,
            token: false,
        });
        let jwt = modes
            .jwt
            .then(|| jwt::JwtVerifier::from_config(&config.jwt));
        Self {
            modes,
            jwt,
            tokens: tokens::CheckedTokens::new(config.token_cache_ttl),
            db,
            clock,
        }
    }

    /// Forgets what this process remembers of an API token: it was revoked here, so it stops
    /// working at once rather than after `FLOW_TOKEN_CACHE_SECS`.
    pub fn forget_token(&self, id: crate::ids::TokenId) {
        self.tokens.forget(id);
    }

    /// How many verified JWTs this process remembers.
    pub fn cached_jwts(&self) -> usize {
        self.jwt.as_ref().map_or(0, jwt::JwtVerifier::cached_tokens)
    }

    pub fn modes(&self) -> Modes {
        self.modes
    }

    /// The identity provider's keys, when JWTs are accepted.
    pub async fn key_health(&self) -> Option<jwks::KeyHealth> {
        match &self.jwt {
            Some(verifier) => Some(verifier.health().await),
            None => None,
        }
    }

    /// Checks a bearer credential. API tokens are told apart from JWTs by their `flow_` prefix.
    pub async fn authenticate(&self, bearer: &str) -> Result<Identity, AuthError> {
        if self.modes.token && bearer.starts_with(tokens::PREFIX) {
            return self.tokens.verify(&self.db, bearer, self.clock.now()).await;
        }
        match &self.jwt {
            Some(verifier) => verifier.verify(bearer, self.clock.now()).await,
            None => Err(AuthError::Invalid),
        }
    }
}
