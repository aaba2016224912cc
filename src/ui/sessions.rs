//! Server-side console sessions. Signing in opens one: a random id (256 bits) goes to the
//! browser, only its SHA-256 is stored, with the identity it was opened for, an absolute expiry
//! (`FLOW_SESSION_MAX_HOURS`) and the time it was last used (`FLOW_SESSION_IDLE_MINUTES`).
//! A session opened with an API token is bound to that token: revoked or expired, the session
//! ends with it. Signing out deletes the row. Also the console's CSRF key ([`key`]), kept in the
//! database so that every replica derives the same tokens.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Duration, Utc};
use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, Condition, ConnectionTrait, EntityTrait, QueryFilter,
};

use crate::app::AppState;
use crate::auth::{Identity, Role};
use crate::config::Config;
use crate::db::entities::{api_tokens, console_keys, console_sessions};
use crate::error::{Error, Result};
use crate::ids::TokenId;

/// Length of a session id: 32 random bytes, base64url without padding.
const ID_LEN: usize = 43;
/// The row holding the CSRF key.
const CSRF_KEY: &str = "csrf";

/// How long sessions live.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub idle: Duration,
    pub max: Duration,
}

impl Limits {
    pub fn from_config(config: &Config) -> Self {
        let minutes = i64::try_from(config.auth.session_idle_minutes).unwrap_or(i64::MAX);
        let hours = i64::try_from(config.auth.session_max_hours).unwrap_or(i64::MAX);
        Self {
            idle: Duration::try_minutes(minutes).unwrap_or(Duration::MAX),
            max: Duration::try_hours(hours).unwrap_or(Duration::MAX),
        }
    }

    /// `last_seen_at` is written at most this often (a write per page view would double the
    /// cost of every read); a quarter of the idle limit keeps the idle expiry honest.
    fn touch_every(self) -> Duration {
        (self.idle / 4).min(Duration::minutes(1))
    }
}

fn random(bytes: &mut [u8]) -> Result<()> {
    SystemRandom::new()
        .fill(bytes)
        .map_err(|_| Error::Internal("no system randomness".into()))
}

fn hash(id: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, id.as_bytes());
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether a cookie value could be a session id (anything else is not looked up).
pub fn well_formed(id: &str) -> bool {
    id.len() == ID_LEN
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// What a session is opened for: the identity, the API token it signed in with (the session
/// ends with it), and the end of the credential's own validity (a JWT's `exp`).
#[derive(Debug, Clone)]
pub struct Opening {
    pub identity: Identity,
    pub token: Option<TokenId>,
    pub until: Option<DateTime<Utc>>,
}

/// Opens a session; returns the id for the cookie. Sessions that have ended are swept on the
/// way.
pub async fn open(
    db: &impl ConnectionTrait,
    opening: &Opening,
    now: DateTime<Utc>,
    limits: Limits,
) -> Result<String> {
    let Opening {
        identity,
        token,
        until,
    } = opening;
    sweep(db, now, limits).await?;
    let mut bytes = [0u8; 32];
    random(&mut bytes)?;
    let id = URL_SAFE_NO_PAD.encode(bytes);
    let roles: Vec<&str> = identity.roles.iter().map(|r| r.as_str()).collect();
    let max_end = now
        .checked_add_signed(limits.max)
        .unwrap_or(DateTime::<Utc>::MAX_UTC);
    let row = console_sessions::ActiveModel {
        id_hash: Set(hash(&id)),
        token_id: Set(token.map(Into::into)),
        actor: Set(identity.actor.clone()),
        roles: Set(roles.join(",")),
        created_at: Set(now),
        last_seen_at: Set(now),
        expires_at: Set(until.map_or(max_end, |until| until.min(max_end))),
    };
    console_sessions::Entity::insert(row)
        .exec_without_returning(db)
        .await?;
    Ok(id)
}

/// Ends a session (signing out); an unknown id is no error.
pub async fn close(db: &impl ConnectionTrait, id: &str) -> Result<()> {
    console_sessions::Entity::delete_by_id(hash(id))
        .exec(db)
        .await?;
    Ok(())
}

/// Deletes every session past its absolute or idle expiry.
async fn sweep(db: &impl ConnectionTrait, now: DateTime<Utc>, limits: Limits) -> Result<()> {
    console_sessions::Entity::delete_many()
        .filter(
            Condition::any()
                .add(console_sessions::Column::ExpiresAt.lte(now))
                .add(console_sessions::Column::LastSeenAt.lte(now - limits.idle)),
        )
        .exec(db)
        .await?;
    Ok(())
}

/// The identity of a live session, or `None` (unknown, expired, idle too long, or its token
/// revoked or expired: such a row is deleted). Keeps the session alive.
pub async fn find(
    db: &impl ConnectionTrait,
    id: &str,
    now: DateTime<Utc>,
    limits: Limits,
) -> Result<Option<Identity>> {
    let key = hash(id);
    let Some(row) = console_sessions::Entity::find_by_id(key.clone())
        .one(db)
        .await?
    else {
        return Ok(None);
    };
    let identity = if now >= row.expires_at || now >= row.last_seen_at + limits.idle {
        None
    } else {
        match row.token_id {
            Some(token) => token_identity(db, token.into(), now).await?,
            None => Some(Identity::new(
                row.actor.clone(),
                row.roles.split(',').filter_map(Role::parse).collect(),
            )),
        }
    };
    let Some(identity) = identity else {
        close(db, id).await?;
        return Ok(None);
    };
    if now - row.last_seen_at >= limits.touch_every() {
        // Compare-and-set: of concurrent requests, one writes.
        console_sessions::Entity::update_many()
            .col_expr(console_sessions::Column::LastSeenAt, Expr::value(now))
            .filter(console_sessions::Column::IdHash.eq(key))
            .filter(console_sessions::Column::LastSeenAt.eq(row.last_seen_at))
            .exec(db)
            .await?;
    }
    Ok(Some(identity))
}

/// The identity of a session's token as it is now (its role may have been read anew), or
/// `None` once it is revoked or expired.
async fn token_identity(
    db: &impl ConnectionTrait,
    token: TokenId,
    now: DateTime<Utc>,
) -> Result<Option<Identity>> {
    let Some(row) = api_tokens::Entity::find_by_id(token).one(db).await? else {
        return Ok(None);
    };
    let live = row.revoked_at.is_none() && row.expires_at.is_none_or(|at| at > now);
    Ok(live
        .then(|| Role::parse(&row.role))
        .flatten()
        .map(|role| Identity::new(format!("token:{}", row.name), vec![role])))
}

/// The console's CSRF key: read from the database once per process; the first process to
/// need it creates it (a second racing one finds the first one's row and uses that).
pub async fn key(state: &AppState) -> Result<hmac::Key> {
    state
        .session_key()
        .get_or_try_init(|| load_key(state.db(), state.now()))
        .await
        .cloned()
}

async fn load_key(db: &impl ConnectionTrait, now: DateTime<Utc>) -> Result<hmac::Key> {
    let stored = |row: console_keys::Model| -> Result<hmac::Key> {
        let bytes = URL_SAFE_NO_PAD
            .decode(row.secret.as_bytes())
            .map_err(|_| Error::Internal("the stored console key is not base64url".into()))?;
        Ok(hmac::Key::new(hmac::HMAC_SHA256, &bytes))
    };
    if let Some(row) = console_keys::Entity::find_by_id(CSRF_KEY).one(db).await? {
        return stored(row);
    }
    let mut bytes = [0u8; 32];
    random(&mut bytes)?;
    let row = console_keys::ActiveModel {
        name: Set(CSRF_KEY.into()),
        secret: Set(URL_SAFE_NO_PAD.encode(bytes)),
        created_at: Set(now),
    };
    match console_keys::Entity::insert(row)
        .exec_without_returning(db)
        .await
    {
        Ok(_) => {}
        Err(e) if crate::db::is_unique_violation(&e) => {}
        Err(e) => return Err(e.into()),
    }
    let row = console_keys::Entity::find_by_id(CSRF_KEY)
        .one(db)
        .await?
        .ok_or_else(|| Error::Internal("the console key vanished".into()))?;
    stored(row)
}
