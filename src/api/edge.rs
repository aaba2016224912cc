//! The outermost middleware, written as plain services: the request's client address, its
//! `x-request-id`, the headers every answer carries and a 408's problem body ([`Edge`]), and the request metrics
//! ([`Count`]). Each runs inside the call of the service it wraps, with no boxed `Next` and no
//! copy of the stack behind it per request, as `from_fn` middleware needs.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Instant;

use axum::extract::{ConnectInfo, MatchedPath, Request};
use axum::http::{HeaderValue, Method, header};
use axum::response::{IntoResponse, Response};
use tower::{Layer, Service};

use super::client::{ClientAddr, TrustedProxies};
use super::request_id::{self, X_REQUEST_ID};
use crate::telemetry::metrics;

/// The route label of requests no route matched (404s for arbitrary paths).
const UNMATCHED: &str = "unmatched";

/// Makes [`Edge`]: `request_ids` off only for the benchmark's middleware-off runs.
#[derive(Debug, Clone)]
pub struct EdgeLayer {
    pub trusted: TrustedProxies,
    pub request_ids: bool,
}

impl<S> Layer<S> for EdgeLayer {
    type Service = Edge<S>;

    fn layer(&self, inner: S) -> Edge<S> {
        Edge {
            inner,
            layer: self.clone(),
        }
    }
}

/// Records the client address ([`ClientAddr`], for the span, logs and audit); checks, makes
/// and echoes `x-request-id` ([`request_id`]); and marks every answer `nosniff` (a JSON answer
/// is never run as a script) and `no-referrer` (no `Referer` carries Flow's URLs, with their
/// ids and filters, to wherever a link leads).
#[derive(Debug, Clone)]
pub struct Edge<S> {
    inner: S,
    layer: EdgeLayer,
}

impl<S> Service<Request> for Edge<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = EdgeFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        let peer = request
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(addr)| addr.ip());
        if let Some(peer) = peer {
            let client = self.layer.trusted.client(peer, request.headers());
            request.extensions_mut().insert(ClientAddr(client));
        }
        let id = if self.layer.request_ids {
            match request_id::take(&mut request) {
                Ok(id) => Some(id),
                Err(refused) => return EdgeFuture::refused(refused.into_response()),
            }
        } else {
            None
        };
        EdgeFuture::Running {
            future: self.inner.call(request),
            id,
        }
    }
}

pin_project_lite::pin_project! {
    /// The answer of [`Edge`]: the inner service's, or a refusal made before calling it.
    #[project = EdgeProj]
    pub enum EdgeFuture<F> {
        Running { #[pin] future: F, id: Option<HeaderValue> },
        Refused { response: Option<Response> },
    }
}

impl<F> EdgeFuture<F> {
    fn refused(response: Response) -> Self {
        Self::Refused {
            response: Some(response),
        }
    }
}

impl<F: Future<Output = Result<Response, Infallible>>> Future for EdgeFuture<F> {
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut response = match self.project() {
            EdgeProj::Running { future, id } => {
                let Ok(response) = ready!(future.poll(cx));
                // First the problem body, which replaces the response, then the id on it.
                let mut response = super::timeout_problem(response);
                if let Some(id) = id.take() {
                    response.headers_mut().entry(X_REQUEST_ID).or_insert(id);
                }
                response
            }
            EdgeProj::Refused { response } => response.take().unwrap_or_default(),
        };
        let headers = response.headers_mut();
        headers.insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        headers.insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        );
        Poll::Ready(Ok(response))
    }
}

/// Makes [`Count`].
#[derive(Debug, Clone, Copy)]
pub struct CountLayer;

impl<S> Layer<S> for CountLayer {
    type Service = Count<S>;

    fn layer(&self, inner: S) -> Count<S> {
        Count { inner }
    }
}

/// Counts and times a request under its route template (`/v1/racks/{rack}`), never the raw
/// path, so label values stay a closed set whatever paths clients send.
#[derive(Debug, Clone)]
pub struct Count<S> {
    inner: S,
}

impl<S> Service<Request> for Count<S>
where
    S: Service<Request, Error = Infallible>,
    S::Response: IntoResponse,
{
    type Response = Response;
    type Error = Infallible;
    type Future = CountFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        CountFuture {
            started: Instant::now(),
            method: request.method().clone(),
            // A shared string: cloning it allocates nothing.
            route: request.extensions().get::<MatchedPath>().cloned(),
            future: self.inner.call(request),
        }
    }
}

pin_project_lite::pin_project! {
    /// The answer of [`Count`], counted when it is ready.
    pub struct CountFuture<F> {
        #[pin]
        future: F,
        started: Instant,
        method: Method,
        route: Option<MatchedPath>,
    }
}

impl<F, R> Future for CountFuture<F>
where
    F: Future<Output = Result<R, Infallible>>,
    R: IntoResponse,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let Ok(answer) = ready!(this.future.poll(cx));
        let response = answer.into_response();
        metrics::http_request(
            this.method.as_str(),
            this.route.as_ref().map_or(UNMATCHED, MatchedPath::as_str),
            response.status().as_str(),
            this.started.elapsed(),
        );
        Poll::Ready(Ok(response))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;
    use tower::ServiceExt;

    fn edge(
        status: StatusCode,
    ) -> Edge<impl Service<Request, Response = Response, Error = Infallible>> {
        let inner = tower::service_fn(move |_: Request| async move {
            Ok::<_, Infallible>(status.into_response())
        });
        EdgeLayer {
            trusted: TrustedProxies::default(),
            request_ids: true,
        }
        .layer(inner)
    }

    fn request(id: Option<&str>) -> Request {
        let mut builder = Request::get("/x");
        if let Some(id) = id {
            builder = builder.header(X_REQUEST_ID, id);
        }
        builder.body(axum::body::Body::empty()).unwrap()
    }

    #[tokio::test]
    async fn a_bare_408_leaves_as_a_problem_with_the_request_id_and_security_headers() {
        let answer = edge(StatusCode::REQUEST_TIMEOUT)
            .oneshot(request(Some("req-7")))
            .await
            .unwrap();
        assert_eq!(answer.status(), StatusCode::REQUEST_TIMEOUT);
        assert_eq!(
            answer.headers()[header::CONTENT_TYPE],
            "application/problem+json"
        );
        assert_eq!(answer.headers()[X_REQUEST_ID], "req-7");
        assert_eq!(answer.headers()[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        assert_eq!(answer.headers()[header::REFERRER_POLICY], "no-referrer");
    }

    #[tokio::test]
    async fn a_refused_request_id_is_answered_before_the_inner_service_with_the_headers() {
        let answer = edge(StatusCode::OK)
            .oneshot(request(Some("a b")))
            .await
            .unwrap();
        assert_eq!(answer.status(), StatusCode::BAD_REQUEST);
        assert!(!answer.headers().contains_key(X_REQUEST_ID));
        assert_eq!(answer.headers()[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        let made = edge(StatusCode::OK).oneshot(request(None)).await.unwrap();
        assert_eq!(made.headers()[X_REQUEST_ID].len(), 36, "a UUID");
    }
}
