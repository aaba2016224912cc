//! The console's static files, compiled into the binary so it works with no network: the
//! vendored htmx and SSE extension (versions in `assets/vendor/README.md`) and our stylesheet.

use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

const HTMX: &str = include_str!("../../assets/vendor/htmx-2.0.11.min.js");
const HTMX_SSE: &str = include_str!("../../assets/vendor/htmx-ext-sse-2.2.4.min.js");
const CSS: &str = include_str!("console.css");

/// Serves one asset; names carry the version, so browsers may cache them for a day.
pub async fn serve(Path(file): Path<String>) -> Response {
    let (body, kind) = match file.as_str() {
        "htmx-2.0.11.js" => (HTMX, "text/javascript; charset=utf-8"),
        "htmx-ext-sse-2.2.4.js" => (HTMX_SSE, "text/javascript; charset=utf-8"),
        "console.css" => (CSS, "text/css; charset=utf-8"),
        _ => return (StatusCode::NOT_FOUND, "no such asset").into_response(),
    };
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "public, max-age=86400"),
        ],
        body,
    )
        .into_response()
}
