//! The single mapping from domain errors to RFC 9457 `application/problem+json` responses.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::{Code, Error, FieldError};

/// `Retry-After` of a `database_unavailable` answer: about two pool acquire timeouts.
const DATABASE_RETRY_AFTER_SECS: u64 = 5;
/// `Retry-After` of an `engine_unavailable` answer: the background reconnect's backoff ceiling.
const ENGINE_RETRY_AFTER_SECS: u64 = 10;

/// An RFC 9457 problem document.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(example = json!({
    "type": "urn:flow:problem:invalid_input",
    "title": "Invalid input",
    "status": 400,
    "detail": "components[2].bmcs[0].mac_address: not a MAC address",
    "code": "invalid_input",
    "errors": [{"field": "components[2].bmcs[0].mac_address", "message": "not a MAC address"}]
}))]
pub struct Problem {
    /// A URI naming the kind of problem: `urn:flow:problem:{code}`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Short summary of the kind of problem.
    pub title: String,
    /// The HTTP status code.
    pub status: u16,
    /// What went wrong in this occurrence.
    pub detail: String,
    /// The request path that failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
    /// Stable machine-readable code (`invalid_input`, `not_found`, `duplicate`, ...).
    #[schema(value_type = String)]
    pub code: Code,
    /// One entry per offending input field.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<FieldErrorDoc>,
    /// Seconds after which a retry may succeed; sent as the `Retry-After` header, not in the body.
    #[serde(skip)]
    pub retry_after: Option<u64>,
}

/// One invalid field.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FieldErrorDoc {
    /// JSON path of the field, e.g. `components[2].serial_number`.
    pub field: String,
    pub message: String,
}

impl From<FieldError> for FieldErrorDoc {
    fn from(e: FieldError) -> Self {
        Self {
            field: e.field,
            message: e.message,
        }
    }
}

impl Problem {
    pub fn new(status: StatusCode, code: Code, detail: impl Into<String>) -> Self {
        Self {
            kind: format!("urn:flow:problem:{code}"),
            title: status.canonical_reason().unwrap_or("Error").to_string(),
            status: status.as_u16(),
            detail: detail.into(),
            instance: None,
            code,
            errors: Vec::new(),
            retry_after: None,
        }
    }

    /// Adds a `Retry-After` header (seconds).
    pub fn retry_after(mut self, secs: u64) -> Self {
        self.retry_after = Some(secs);
        self
    }

    /// `503` for a dependency that is down: `database_unavailable`, `engine_unavailable` (Temporal)
    /// or `unavailable` (anything else), with a `Retry-After` hint.
    pub fn unavailable(service: &str) -> Self {
        let (code, retry) = match service {
            "database" => (Code::DatabaseUnavailable, DATABASE_RETRY_AFTER_SECS),
            "temporal" => (Code::EngineUnavailable, ENGINE_RETRY_AFTER_SECS),
            _ => (Code::Unavailable, ENGINE_RETRY_AFTER_SECS),
        };
        let detail = match service {
            "temporal" => {
                "the workflow engine (Temporal) is unavailable; retry later (an operation refused so created no task)"
                    .to_string()
            }
            other => format!("{other} is unavailable; retry later"),
        };
        Self::new(StatusCode::SERVICE_UNAVAILABLE, code, detail).retry_after(retry)
    }

    pub fn with_errors(mut self, errors: Vec<FieldError>) -> Self {
        self.errors = errors.into_iter().map(Into::into).collect();
        self
    }

    pub fn invalid(errors: Vec<FieldError>) -> Self {
        let detail = errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ");
        Self::new(StatusCode::BAD_REQUEST, Code::InvalidInput, detail).with_errors(errors)
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = serde_json::to_vec(&self).unwrap_or_default();
        let mut response = (status, body).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

impl From<Error> for Problem {
    fn from(err: Error) -> Self {
        match err {
            Error::Invalid(errors) => Problem::invalid(errors),
            Error::NotFound { kind, id } => Problem::new(
                StatusCode::NOT_FOUND,
                Code::NotFound,
                format!("{kind} {id} not found"),
            ),
            Error::Conflict {
                code,
                message,
                errors,
            } => {
                let detail = if errors.is_empty() {
                    message
                } else {
                    format!(
                        "{message}: {}",
                        errors
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join("; ")
                    )
                };
                Problem::new(StatusCode::CONFLICT, code, detail).with_errors(errors)
            }
            Error::Unprocessable {
                code,
                message,
                errors,
            } => Problem::new(StatusCode::UNPROCESSABLE_ENTITY, code, message).with_errors(errors),
            Error::Forbidden {
                code,
                message,
                errors,
            } => Problem::new(StatusCode::FORBIDDEN, code, message).with_errors(errors),
            e @ Error::PreconditionFailed { .. } => Problem::new(
                StatusCode::PRECONDITION_FAILED,
                Code::PreconditionFailed,
                e.to_string(),
            ),
            Error::Unavailable { service, message } => {
                tracing::warn!(service, %message, "dependency unavailable");
                Problem::unavailable(service)
            }
            Error::Db(e) if crate::db::is_outage(&e) => {
                tracing::warn!(error = %e, "database unavailable");
                Problem::unavailable("database")
            }
            e @ (Error::Db(_) | Error::Internal(_)) => {
                // The full chain goes to the log once; the client gets no internals.
                tracing::error!(error = %e, "request failed");
                Problem::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    Code::Internal,
                    "internal error; see the server log",
                )
            }
        }
    }
}

/// Handler result: a response or a problem.
pub type ApiResult<T> = Result<T, Problem>;
