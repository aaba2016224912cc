//! The refusals the guard answers with: 401 with its challenge (counted by reason), and 403
//! naming the role needed and the roles held.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::api::problem::Problem;
use crate::auth::{AuthError, Identity, Role};
use crate::error::Code;

/// `401` with the challenge RFC 6750 defines; `error=` says why a presented token failed.
pub(super) fn unauthorized(err: &AuthError) -> Response {
    auth_failed(err);
    let challenge = match err {
        AuthError::Missing => "Bearer realm=\"flow\"".to_string(),
        other => {
            format!("Bearer realm=\"flow\", error=\"invalid_token\", error_description=\"{other}\"")
        }
    };
    let mut response = Problem::new(
        StatusCode::UNAUTHORIZED,
        Code::Unauthorized,
        err.to_string(),
    )
    .into_response();
    if let Ok(value) = challenge.parse() {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// Counts a refused credential in `flow_auth_failures_total`.
pub(super) fn auth_failed(err: &AuthError) {
    let reason = match err {
        AuthError::Missing => "missing",
        AuthError::Expired => "expired",
        AuthError::Invalid | AuthError::KeysUnavailable => "invalid",
    };
    crate::telemetry::metrics::auth_failure(reason);
}

pub(super) fn forbidden_problem(identity: &Identity, needed: Role) -> Problem {
    let held = identity
        .roles
        .iter()
        .map(|r| r.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let held = if held.is_empty() {
        "no Flow role".to_string()
    } else {
        held
    };
    let also = if needed == Role::Admin {
        ""
    } else {
        " (or admin)"
    };
    Problem::new(
        StatusCode::FORBIDDEN,
        Code::Forbidden,
        format!(
            "this needs the {needed} role{also}; {} has {held}",
            identity.actor
        ),
    )
}
