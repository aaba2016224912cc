//! Request extractors whose every rejection is a problem+json naming the field at fault.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

use super::problem::Problem;
use crate::error::FieldError;

mod body;
mod query;

pub use body::{Document, Json, MaybeJson};
pub use query::{Query, uuid_param};

/// The field a serde error is about: its path, extended by the name in "missing field `x`" and
/// "unknown field `x`" messages, which serde reports at the enclosing object.
fn field_path(path: &str, message: &str) -> String {
    let named = ["missing field `", "unknown field `"]
        .iter()
        .find_map(|prefix| message.strip_prefix(prefix))
        .and_then(|rest| rest.split('`').next());
    match (path, named) {
        (".", Some(name)) => name.to_string(),
        (".", None) => "body".to_string(),
        // Unknown fields already carry their own name in the path.
        (_, Some(name)) if path == name || path.ends_with(&format!(".{name}")) => path.to_string(),
        (_, Some(name)) => format!("{path}.{name}"),
        (_, None) => path.to_string(),
    }
}

/// The client's `If-Match`: `None` when absent or `*`. A tag that is not one of ours can never
/// match, so it maps to a revision no resource has.
#[derive(Debug, Clone, Copy)]
pub struct IfMatch(pub Option<i64>);

impl<S: Send + Sync> FromRequestParts<S> for IfMatch {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let Some(value) = parts.headers.get(header::IF_MATCH) else {
            return Ok(Self(None));
        };
        let text = value.to_str().map_err(|_| {
            Problem::invalid(vec![FieldError::new(
                "If-Match",
                "not a valid header value",
            )])
        })?;
        let tag = text.trim();
        if tag == "*" {
            return Ok(Self(None));
        }
        let bare = tag.trim_start_matches("W/").trim_matches('"');
        Ok(Self(Some(bare.parse().unwrap_or(-1))))
    }
}

/// The `ETag` for a resource at a revision.
pub fn etag(revision: i64) -> HeaderValue {
    HeaderValue::from_str(&format!("\"{revision}\""))
        .unwrap_or_else(|_| HeaderValue::from_static("\"0\""))
}

/// `response` with a `Location` header naming the resource it created. A location that is no
/// valid header value (ids are UUIDs, so none is) is left out rather than failing a stored write.
pub fn with_location(response: impl IntoResponse, location: &str) -> Response {
    let mut response = response.into_response();
    if let Ok(value) = location.parse() {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response
}

/// Accepts `Option<Option<T>>` fields: absent keeps, `null` clears, a value sets.
pub fn double_option<'de, T, D>(de: D) -> Result<Option<Option<T>>, D::Error>
where
    T: serde::Deserialize<'de>,
    D: serde::Deserializer<'de>,
{
    <Option<T> as serde::Deserialize>::deserialize(de).map(Some)
}
