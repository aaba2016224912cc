//! API tokens for automation: `flow_` + 256 random bits, shown once at creation and stored only
//! as a SHA-256 hash. A presented token is found by its hash and compared in constant time.
//! A token that checked out is remembered for a short while ([`CheckedTokens`],
//! `FLOW_TOKEN_CACHE_SECS`), so a busy client costs a map lookup per request, not a query.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Duration, Utc};
use ring::rand::{SecureRandom, SystemRandom};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, Condition, ConnectionTrait, DatabaseConnection, EntityTrait,
    QueryFilter, QueryOrder,
};
use subtle::ConstantTimeEq;

use super::cache::{self, Digest, Lru};
use super::{AuthError, Identity, Role};
use crate::audit::{self, Change};
use crate::db::entities::api_tokens;
use crate::error::{Code, Error, Result};
use crate::ids::TokenId;

/// Every API token starts with this, so scanners can spot leaked ones and Flow can tell them
/// from JWTs without trying both.
pub const PREFIX: &str = "flow_";
/// How many characters of a token are kept in clear to recognise it in lists.
const SHOWN: usize = 12;
/// `last_used_at` is written at most this often per token: a write per request would double the
/// cost of every read.
const LAST_USED_GRANULARITY_SECS: i64 = 60;

/// A stored token, without its secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiToken {
    pub id: TokenId,
    pub name: String,
    pub role: Role,
    /// The first characters of the secret (`flow_AbCdEfG`), to recognise it.
    pub prefix: String,
    pub created_at: DateTime<Utc>,
    pub created_by: Option<String>,
    pub expires_at: Option<DateTime<Utc>>,
    pub last_used_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
}

/// A token just created: the only time its secret exists outside the caller's hands.
/// No `Debug`: it holds the secret.
pub struct Created {
    pub token: ApiToken,
    pub secret: String,
}

/// What `create` needs.
#[derive(Debug, Clone)]
pub struct NewToken {
    pub name: String,
    pub role: Role,
    pub expires_in: Option<Duration>,
}

/// Most API tokens remembered at once: deployments hold a few dozen.
const CHECKED_TOKENS: usize = 1024;

fn hash(secret: &str) -> String {
    hex(&cache::digest(secret))
}

fn hex(digest: &Digest) -> String {
    use std::fmt::Write;
    digest.iter().fold(String::with_capacity(64), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

fn from_row(row: api_tokens::Model) -> Result<ApiToken> {
    Ok(ApiToken {
        id: row.id.into(),
        name: row.name,
        role: Role::parse(&row.role)
            .ok_or_else(|| Error::Internal(format!("stored token role {:?}", row.role)))?,
        prefix: row.prefix,
        created_at: row.created_at,
        created_by: row.created_by,
        expires_at: row.expires_at,
        last_used_at: row.last_used_at,
        revoked_at: row.revoked_at,
    })
}

/// Parses `90d`, `12h`, `30m` (token lifetimes).
pub fn parse_lifetime(text: &str) -> Option<Duration> {
    let text = text.trim();
    let (number, unit) = text.split_at(text.len().checked_sub(1)?);
    let n: i64 = number.parse().ok().filter(|n| *n > 0)?;
    match unit {
        "d" => Duration::try_days(n),
        "h" => Duration::try_hours(n),
        "m" => Duration::try_minutes(n),
        _ => None,
    }
}

/// The lifetime of a new token: `expires` (`90d`, `12h`, `30m`) up to `max_days`, or
/// `max_days` when absent. Anything else is a 400 naming `expires`, checked before the expiry
/// is computed (a lifetime past the calendar's end would otherwise overflow it).
pub fn lifetime(expires: Option<&str>, max_days: u64) -> Result<Duration> {
    let max =
        Duration::try_days(i64::try_from(max_days).unwrap_or(i64::MAX)).unwrap_or(Duration::MAX);
    let Some(text) = expires else {
        return Ok(max);
    };
    parse_lifetime(text)
        .filter(|lifetime| *lifetime <= max)
        .ok_or_else(|| {
            Error::invalid(
                "expires",
                format!(
                    "must be a lifetime such as 90d, 12h or 30m, at most {max_days}d \
                     (FLOW_TOKEN_MAX_DAYS)"
                ),
            )
        })
}

/// The audit document of a token: never its secret or hash.
pub fn audit_doc(token: &ApiToken) -> serde_json::Value {
    serde_json::json!({
        "id": token.id,
        "name": token.name,
        "role": token.role,
        "prefix": token.prefix,
        "expires_at": token.expires_at,
        "revoked_at": token.revoked_at,
    })
}

/// Creates a token and audits it in one transaction; the caller shows `secret` once. Names are
/// unique (409 otherwise).
pub async fn create(
    db: &DatabaseConnection,
    new: &NewToken,
    created_by: &str,
    now: DateTime<Utc>,
) -> Result<Created> {
    let txn = crate::db::begin_write(db).await?;
    let created = insert(&txn, new, created_by, now).await?;
    let change = Change::new("token", created.token.id).after(Some(audit_doc(&created.token)));
    audit::record(&txn, change, now).await?;
    txn.commit().await?;
    Ok(created)
}

async fn insert(
    db: &impl ConnectionTrait,
    new: &NewToken,
    created_by: &str,
    now: DateTime<Utc>,
) -> Result<Created> {
    let name = new.name.trim();
    if name.is_empty() || name.len() > 128 {
        return Err(Error::invalid("name", "must be 1 to 128 characters"));
    }
    let mut bytes = [0u8; 32];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| Error::Internal("no system randomness".into()))?;
    let secret = format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(bytes));
    let token = ApiToken {
        id: TokenId::new(),
        name: name.to_string(),
        role: new.role,
        prefix: secret[..SHOWN].to_string(),
        created_at: now,
        created_by: Some(created_by.to_string()),
        expires_at: new.expires_in.map(|d| now + d),
        last_used_at: None,
        revoked_at: None,
    };
    let row = api_tokens::ActiveModel {
        id: Set(token.id.into()),
        name: Set(token.name.clone()),
        role: Set(token.role.as_str().to_string()),
        token_hash: Set(hash(&secret)),
        prefix: Set(token.prefix.clone()),
        created_at: Set(now),
        created_by: Set(token.created_by.clone()),
        expires_at: Set(token.expires_at),
        last_used_at: Set(None),
        revoked_at: Set(None),
    };
    match api_tokens::Entity::insert(row)
        .exec_without_returning(db)
        .await
    {
        Ok(_) => {}
        Err(e) if crate::db::is_unique_violation(&e) => {
            return Err(Error::Conflict {
                code: Code::Duplicate,
                message: format!("a token named {name:?} already exists"),
                errors: vec![crate::error::FieldError::new("name", "already taken")],
            });
        }
        Err(e) => return Err(e.into()),
    }
    Ok(Created { token, secret })
}

/// Every token, newest first (revoked ones included, with `revoked_at`).
pub async fn list(db: &impl ConnectionTrait) -> Result<Vec<ApiToken>> {
    api_tokens::Entity::find()
        .order_by_desc(api_tokens::Column::Id)
        .all(db)
        .await?
        .into_iter()
        .map(from_row)
        .collect()
}

pub async fn get(db: &impl ConnectionTrait, id: TokenId) -> Result<ApiToken> {
    api_tokens::Entity::find_by_id(id)
        .one(db)
        .await?
        .map(from_row)
        .transpose()?
        .ok_or_else(|| Error::not_found("token", id))
}

/// Revokes a token: it stops working at once. Revoking twice is a no-op.
pub async fn revoke(db: &DatabaseConnection, id: TokenId, now: DateTime<Utc>) -> Result<ApiToken> {
    let txn = crate::db::begin_write(db).await?;
    let before = get(&txn, id).await?;
    let revoked = api_tokens::Entity::update_many()
        .col_expr(api_tokens::Column::RevokedAt, Expr::value(now))
        .filter(api_tokens::Column::Id.eq(id))
        .filter(api_tokens::Column::RevokedAt.is_null())
        .exec(&txn)
        .await?;
    let after = get(&txn, id).await?;
    if revoked.rows_affected == 1 {
        let change = Change::new("token", id)
            .before(Some(audit_doc(&before)))
            .after(Some(audit_doc(&after)));
        audit::record(&txn, change, now).await?;
    }
    txn.commit().await?;
    Ok(after)
}

/// The id of the token a secret belongs to, if any (a console session is bound to it).
pub async fn id_of(db: &impl ConnectionTrait, secret: &str) -> Result<Option<TokenId>> {
    Ok(api_tokens::Entity::find()
        .filter(api_tokens::Column::TokenHash.eq(hash(secret)))
        .one(db)
        .await?
        .map(|row| row.id.into()))
}

/// API tokens that checked out lately, by the SHA-256 of the presented secret: each is taken
/// from here for `ttl` after the database last said yes, then asked again. So a token revoked
/// by another replica (or straight in the database) stops working within `ttl`; one revoked
/// through this process at once ([`CheckedTokens::forget`]). Expiry is checked on every use.
/// Only successful checks are remembered.
#[derive(Debug)]
pub struct CheckedTokens {
    ttl: Duration,
    checked: Lru<Checked>,
}

#[derive(Debug, Clone)]
struct Checked {
    id: uuid::Uuid,
    identity: Identity,
    expires_at: Option<DateTime<Utc>>,
    at: DateTime<Utc>,
}

impl CheckedTokens {
    /// Remembers tokens for `ttl` (zero: never, every request asks the database).
    pub fn new(ttl: std::time::Duration) -> Self {
        let ttl = Duration::from_std(ttl).unwrap_or(Duration::zero());
        let size = if ttl.is_zero() { 0 } else { CHECKED_TOKENS };
        Self {
            ttl,
            checked: Lru::new(size),
        }
    }

    /// The identity behind a presented secret, from memory while fresh, else from the
    /// database ([`verify`]).
    pub async fn verify(
        &self,
        db: &impl ConnectionTrait,
        secret: &str,
        now: DateTime<Utc>,
    ) -> std::result::Result<Identity, AuthError> {
        let digest = cache::digest(secret);
        if let Some(hit) = self.checked.get(&digest) {
            // A clock moved backwards counts as stale too.
            if now >= hit.at && now - hit.at < self.ttl {
                if hit.expires_at.is_some_and(|at| at <= now) {
                    self.checked.remove(&digest);
                    return Err(AuthError::Expired);
                }
                return Ok(hit.identity);
            }
            self.checked.remove(&digest);
        }
        let (row, identity) = check(db, &hex(&digest), now).await?;
        let checked = Checked {
            id: row.id,
            identity: identity.clone(),
            expires_at: row.expires_at,
            at: now,
        };
        self.checked.insert(digest, checked);
        Ok(identity)
    }

    /// Drops what is remembered of a token (it was just revoked).
    pub fn forget(&self, id: TokenId) {
        let id = uuid::Uuid::from(id);
        self.checked.retain(|c| c.id != id);
    }
}

/// The identity behind a presented secret. Unknown, revoked and expired-but-wrong tokens all
/// answer `Invalid`; only a genuine token past its expiry answers `Expired`.
pub async fn verify(
    db: &impl ConnectionTrait,
    secret: &str,
    now: DateTime<Utc>,
) -> std::result::Result<Identity, AuthError> {
    check(db, &hash(secret), now)
        .await
        .map(|(_, identity)| identity)
}

/// [`verify`] by the secret's hex SHA-256; the row too.
async fn check(
    db: &impl ConnectionTrait,
    presented: &str,
    now: DateTime<Utc>,
) -> std::result::Result<(api_tokens::Model, Identity), AuthError> {
    let row = api_tokens::Entity::find()
        .filter(api_tokens::Column::TokenHash.eq(presented))
        .one(db)
        .await
        .map_err(|e| {
            tracing::warn!(error = %e, "looking up an API token failed");
            AuthError::KeysUnavailable
        })?;
    let Some(row) = row else {
        return Err(AuthError::Invalid);
    };
    if !bool::from(row.token_hash.as_bytes().ct_eq(presented.as_bytes())) {
        return Err(AuthError::Invalid);
    }
    if row.revoked_at.is_some() {
        return Err(AuthError::Invalid);
    }
    if row.expires_at.is_some_and(|at| at <= now) {
        return Err(AuthError::Expired);
    }
    let role = Role::parse(&row.role).ok_or(AuthError::Invalid)?;
    // A conditional write: concurrent requests with the same token update it once a minute.
    let stale = now - Duration::seconds(LAST_USED_GRANULARITY_SECS);
    let touched = api_tokens::Entity::update_many()
        .col_expr(api_tokens::Column::LastUsedAt, Expr::value(now))
        .filter(api_tokens::Column::Id.eq(row.id))
        .filter(
            Condition::any()
                .add(api_tokens::Column::LastUsedAt.is_null())
                .add(api_tokens::Column::LastUsedAt.lt(stale)),
        )
        .exec(db)
        .await;
    if let Err(e) = touched {
        tracing::warn!(error = %e, token = %row.name, "recording last_used_at failed");
    }
    let identity = Identity::new(format!("token:{}", row.name), vec![role]);
    Ok((row, identity))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifetimes_parse_days_hours_and_minutes() {
        assert_eq!(parse_lifetime("90d"), Duration::try_days(90));
        assert_eq!(parse_lifetime("12h"), Duration::try_hours(12));
        assert_eq!(parse_lifetime("30m"), Duration::try_minutes(30));
        for bad in ["", "d", "0d", "-1d", "10", "5w", "1.5d"] {
            assert_eq!(parse_lifetime(bad), None, "{bad}");
        }
    }

    #[test]
    fn lifetimes_are_capped_and_default_to_the_cap() {
        assert_eq!(lifetime(None, 365).unwrap(), Duration::days(365));
        assert_eq!(lifetime(Some("30d"), 365).unwrap(), Duration::days(30));
        assert_eq!(lifetime(Some("365d"), 365).unwrap(), Duration::days(365));
        for bad in [
            "366d",
            "8761h",
            "99999999d",
            "99999999999999999999d",
            "1.5d",
            "x",
        ] {
            assert!(lifetime(Some(bad), 365).is_err(), "{bad}");
        }
    }

    #[test]
    fn hashes_are_hex_sha256() {
        assert_eq!(hash("abc").len(), 64);
        assert_ne!(hash("flow_a"), hash("flow_b"));
    }
}
