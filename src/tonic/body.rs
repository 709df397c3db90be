use http_body::Body;
use http_body_util::BodyExt;
use http_body_util::combinators::MapErr;
use seawall_core::BoxError;

use super::into_status;

/// A response body whose errors (a stream interrupted after messages) are
/// `tonic::Status`es where they carry a seawall failure: http-body-util's
/// [`MapErr`] with [`into_status`](super::into_status).
pub type StatusBody<B> = MapErr<B, fn(<B as Body>::Error) -> BoxError>;

/// `body`, its errors made statuses.
pub(crate) fn status_body<B>(body: B) -> StatusBody<B>
where
    B: Body,
    B::Error: Into<BoxError>,
{
    body.map_err(body_error::<B::Error> as fn(B::Error) -> BoxError)
}

fn body_error<E: Into<BoxError>>(error: E) -> BoxError {
    into_status(error.into())
}
