use tower_layer::Layer;

use super::GrpcStatus;

/// Makes the errors of a seawall stack `tonic::Status`es with the server's
/// own code (see the [module docs](super)). Goes outermost, just under the
/// generated client; [`GrpcStatusLayer::server`] on a tonic server.
#[derive(Debug, Clone, Copy, Default)]
pub struct GrpcStatusLayer {
    server: bool,
}

impl GrpcStatusLayer {
    /// The layer, for a client.
    pub fn new() -> Self {
        GrpcStatusLayer::default()
    }

    /// The layer, for a tonic server with seawall layers of its own
    /// (`Server::builder().layer(GrpcStatusLayer::server()).layer(..)`):
    /// a failure before the response is a `Status` tonic answers with, and
    /// one in a streamed body (a bound that fires after messages) ends the
    /// body with its status as the trailers. An error in the body would
    /// reset the stream, which the caller reads as `INTERNAL`.
    pub fn server() -> Self {
        GrpcStatusLayer { server: true }
    }
}

impl<S> Layer<S> for GrpcStatusLayer {
    type Service = GrpcStatus<S>;

    fn layer(&self, inner: S) -> GrpcStatus<S> {
        if self.server {
            GrpcStatus::server(inner)
        } else {
            GrpcStatus::new(inner)
        }
    }
}
