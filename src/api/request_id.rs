//! `x-request-id`: a caller's id is checked and kept, a missing one is made (a UUID), and the
//! answer carries it back ([`super::edge::Edge`] does all three), so the request span, the log lines,
//! the audit rows and the answer all name the same id.

use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue};

use super::problem::Problem;
use crate::error::FieldError;

/// The header, as callers and proxies send it.
pub const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Longest `x-request-id` accepted (a UUID is 36; tracing ids are at most 64).
pub const MAX_REQUEST_ID_LEN: usize = 128;

/// The request's `x-request-id`: the caller's when it is 1 to [`MAX_REQUEST_ID_LEN`] visible
/// ASCII characters (it is echoed and logged, so it must not smuggle a megabyte or terminal
/// control sequences), else refused; a new UUID, set on the request, when there is none.
pub fn take(request: &mut Request) -> Result<HeaderValue, Problem> {
    match request.headers().get(X_REQUEST_ID) {
        Some(value) if acceptable(value.as_bytes()) => Ok(value.clone()),
        Some(_) => Err(refused()),
        None => {
            let mut text = uuid::Uuid::encode_buffer();
            let text = uuid::Uuid::new_v4().hyphenated().encode_lower(&mut text);
            // Hex digits and hyphens are always a valid header value.
            let id = HeaderValue::from_str(text).unwrap_or(HeaderValue::from_static("-"));
            request.headers_mut().insert(X_REQUEST_ID, id.clone());
            Ok(id)
        }
    }
}

fn acceptable(bytes: &[u8]) -> bool {
    !bytes.is_empty() && bytes.len() <= MAX_REQUEST_ID_LEN && bytes.iter().all(u8::is_ascii_graphic)
}

fn refused() -> Problem {
    Problem::invalid(vec![FieldError::new(
        "x-request-id",
        format!("must be 1 to {MAX_REQUEST_ID_LEN} visible ASCII characters"),
    )])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_visible_ascii_of_bounded_length() {
        assert!(acceptable(b"req-42"));
        assert!(acceptable(&[b'a'; MAX_REQUEST_ID_LEN]));
        assert!(!acceptable(&[b'a'; MAX_REQUEST_ID_LEN + 1]));
        assert!(!acceptable(b""));
        assert!(!acceptable(b"a b"));
        assert!(!acceptable(b"\x1b[31m"));
    }
}
