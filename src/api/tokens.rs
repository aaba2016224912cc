//! API token endpoints (admin): create (the secret is answered once), list, revoke.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::extract::{Json, uuid_param};
use super::openapi::AUTH;
use super::problem::{ApiResult, Problem};
use crate::app::AppState;
use crate::audit;
use crate::auth::Role;
use crate::auth::tokens::{self, ApiToken, NewToken};
use crate::error::Error;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_token, list_tokens))
        .routes(routes!(revoke_token))
}

/// A new API token.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"name": "ci-firmware", "role": "operator", "expires": "90d"}))]
pub struct CreateTokenRequest {
    /// Unique name; the audit log shows the token's actions as `token:<name>`.
    pub name: String,
    /// `viewer`, `operator`, `editor` or `admin`.
    pub role: String,
    /// Lifetime such as `90d`, `12h` or `30m`, at most `FLOW_TOKEN_MAX_DAYS` days (default
    /// 365); absent = that maximum. Longer is a `400` naming `expires`.
    pub expires: Option<String>,
}

/// A stored API token (never its secret).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(example = json!({"id": "0192f3a0-0000-7000-8000-0000000000c1", "name": "ci-firmware", "role": "operator",
    "prefix": "flow_Xy3kP9a", "created_at": "2026-12-01T08:00:00Z", "created_by": "user:alice",
    "expires_at": "2027-03-01T08:00:00Z", "last_used_at": null, "revoked_at": null}))]
pub struct TokenDoc {
    pub id: Uuid,
    pub name: String,
    /// `viewer`, `operator`, `editor` or `admin`.
    pub role: String,
    /// The secret's first characters, to recognise it.
    pub prefix: String,
    pub created_at: DateTime<Utc>,
    pub created_by: Option<String>,
    pub expires_at: Option<DateTime<Utc>>,
    pub last_used_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
}

impl From<ApiToken> for TokenDoc {
    fn from(t: ApiToken) -> Self {
        Self {
            id: t.id.into(),
            name: t.name,
            role: t.role.as_str().to_string(),
            prefix: t.prefix,
            created_at: t.created_at,
            created_by: t.created_by,
            expires_at: t.expires_at,
            last_used_at: t.last_used_at,
            revoked_at: t.revoked_at,
        }
    }
}

/// A token just created, with its secret: store it now, it is never shown again.
#[derive(Serialize, ToSchema)]
// Its own example: the flattened token's alone lacks the required `secret` (Redocly's
// no-invalid-schema-examples).
#[schema(example = json!({"id": "0192f3a0-0000-7000-8000-0000000000c1", "name": "ci-firmware", "role": "operator",
    "prefix": "flow_Xy3kP9a", "created_at": "2026-12-01T08:00:00Z", "created_by": "user:alice",
    "expires_at": "2027-03-01T08:00:00Z", "last_used_at": null, "revoked_at": null,
    "secret": "flow_Xy3kP9a-example-only"}))]
pub struct CreatedTokenDoc {
    #[serde(flatten)]
    pub token: TokenDoc,
    /// The bearer secret (`flow_…`).
    pub secret: String,
}

/// Every API token.
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenListDoc {
    pub items: Vec<TokenDoc>,
}

/// Create an API token
///
/// Creates a token for automation with one role, expiring after `expires` (at most, and by
/// default, `FLOW_TOKEN_MAX_DAYS`). The answer carries the secret, the only time it is shown;
/// Flow stores only its hash.
#[utoipa::path(post, path = "/v1/tokens", tag = AUTH, security(("access" = ["admin"])), request_body = CreateTokenRequest,
    responses(
        (status = 201, description = "Created; `secret` is shown only now", body = CreatedTokenDoc),
        (status = 400, description = "Invalid input", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "A token with this name exists", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn create_token(
    State(state): State<AppState>,
    Json(body): Json<CreateTokenRequest>,
) -> ApiResult<(
    StatusCode,
    [(axum::http::HeaderName, &'static str); 1],
    axum::Json<CreatedTokenDoc>,
)> {
    let role = Role::parse(&body.role)
        .ok_or_else(|| Error::invalid("role", "must be viewer, operator, editor or admin"))?;
    let max_days = state.config().auth.token_max_days;
    let expires_in = Some(tokens::lifetime(body.expires.as_deref(), max_days)?);
    let new = NewToken {
        name: body.name,
        role,
        expires_in,
    };
    let created = tokens::create(state.db(), &new, &audit::actor(), state.now()).await?;
    Ok((
        StatusCode::CREATED,
        // The secret must not stay in any cache between Flow and the caller.
        [(axum::http::header::CACHE_CONTROL, "no-store")],
        axum::Json(CreatedTokenDoc {
            token: created.token.into(),
            secret: created.secret,
        }),
    ))
}

/// List API tokens
///
/// Every token, newest first, revoked ones included.
#[utoipa::path(get, path = "/v1/tokens", tag = AUTH, security(("access" = ["admin"])),
    responses((status = 200, description = "Every token", body = TokenListDoc)))]
pub async fn list_tokens(State(state): State<AppState>) -> ApiResult<axum::Json<TokenListDoc>> {
    let items = tokens::list(state.db()).await?;
    Ok(axum::Json(TokenListDoc {
        items: items.into_iter().map(Into::into).collect(),
    }))
}

/// Revoke an API token
///
/// The token stops working at once on the replica that revoked it, and within
/// `FLOW_TOKEN_CACHE_SECS` (default 10 s) on any other; revoking a revoked token changes nothing.
#[utoipa::path(delete, path = "/v1/tokens/{id}", tag = AUTH, security(("access" = ["admin"])),
    params(("id" = Uuid, Path, description = "Token id")),
    responses(
        (status = 200, description = "Revoked", body = TokenDoc),
        (status = 404, description = "No such token", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn revoke_token(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<TokenDoc>> {
    let id = uuid_param("id", &id)?;
    let token = tokens::revoke(state.db(), id.into(), state.now()).await?;
    state.authenticator().forget_token(id.into());
    Ok(axum::Json(token.into()))
}
