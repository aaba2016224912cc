//! JSON answers written once, straight from the answer type into one buffer sized for the
//! usual answer, instead of a small buffer grown (and copied) several times on the way.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::problem::Problem;
use crate::error::Code;

/// About a component with its BMCs and rack: the hottest answers fit without regrowing.
const USUAL_ANSWER: usize = 1536;

/// A JSON body (`application/json`) serialized once into a pre-sized buffer.
#[derive(Debug, Clone)]
pub struct JsonAnswer<T>(pub T);

impl<T: Serialize> IntoResponse for JsonAnswer<T> {
    fn into_response(self) -> Response {
        let mut body = Vec::with_capacity(USUAL_ANSWER);
        match serde_json::to_writer(&mut body, &self.0) {
            Ok(()) => (
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                )],
                body,
            )
                .into_response(),
            Err(error) => {
                tracing::error!(%error, "an answer could not be written as JSON");
                Problem::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    Code::Internal,
                    "internal error; see the server log",
                )
                .into_response()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_answer_is_json_with_its_content_type() {
        let response = JsonAnswer(serde_json::json!({"a": [1, 2]})).into_response();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        assert_eq!(&body[..], br#"{"a":[1,2]}"#);
    }
}
