//! A layer that is in the stack or not, decided when the router is built, without changing the
//! stack's type: the whole middleware stack is then one concrete service, applied to the router
//! once (see `api::build`).

use std::convert::Infallible;
use std::task::{Context, Poll};

use axum::response::{IntoResponse, Response};
use futures::future::{Either, MapOk, TryFutureExt};
use tower::{Layer, Service};

/// `Some(layer)` wraps the inner service in it; `None` passes requests straight through.
#[derive(Debug, Clone)]
pub struct Toggle<L>(pub Option<L>);

impl<L: Layer<S>, S> Layer<S> for Toggle<L> {
    type Service = Toggled<L::Service, S>;

    fn layer(&self, inner: S) -> Self::Service {
        match &self.0 {
            Some(layer) => Toggled::On(layer.layer(inner)),
            None => Toggled::Off(inner),
        }
    }
}

/// The service of a [`Toggle`]: the layered service, or the inner one alone.
#[derive(Debug, Clone)]
pub enum Toggled<A, B> {
    On(A),
    Off(B),
}

type Answer<T> = fn(T) -> Response;

impl<A, B, R> Service<R> for Toggled<A, B>
where
    A: Service<R, Error = Infallible>,
    A::Response: IntoResponse,
    B: Service<R, Error = Infallible>,
    B::Response: IntoResponse,
{
    type Response = Response;
    type Error = Infallible;
    type Future =
        Either<MapOk<A::Future, Answer<A::Response>>, MapOk<B::Future, Answer<B::Response>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        match self {
            Toggled::On(a) => a.poll_ready(cx),
            Toggled::Off(b) => b.poll_ready(cx),
        }
    }

    fn call(&mut self, request: R) -> Self::Future {
        match self {
            Toggled::On(a) => {
                Either::Left(a.call(request).map_ok(IntoResponse::into_response as _))
            }
            Toggled::Off(b) => {
                Either::Right(b.call(request).map_ok(IntoResponse::into_response as _))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::{Request, StatusCode};
    use tower::ServiceExt;

    async fn mark(mut response: Response) -> Response {
        response
            .headers_mut()
            .insert("x-toggled", axum::http::HeaderValue::from_static("1"));
        response
    }

    async fn answer(on: bool) -> Response {
        let inner = tower::service_fn(|_: Request<axum::body::Body>| async {
            Ok::<_, Infallible>(StatusCode::NO_CONTENT.into_response())
        });
        let toggle = Toggle(on.then(|| axum::middleware::map_response(mark)));
        toggle
            .layer(inner)
            .oneshot(Request::new(axum::body::Body::empty()))
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn an_absent_layer_passes_through_and_a_present_one_applies() {
        let on = answer(true).await;
        assert_eq!(on.status(), StatusCode::NO_CONTENT);
        assert_eq!(on.headers()["x-toggled"], "1");
        let off = answer(false).await;
        assert_eq!(off.status(), StatusCode::NO_CONTENT);
        assert!(!off.headers().contains_key("x-toggled"));
    }
}
