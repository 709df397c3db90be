use tower_layer::Layer;

use super::GrpcStatus;

/// Makes the errors of a seawall stack `tonic::Status`es with the server's
/// own code (see the [module docs](super)). Goes outermost, just under the
/// generated client.
#[derive(Debug, Clone, Copy, Default)]
pub struct GrpcStatusLayer {
    _private: (),
}

impl GrpcStatusLayer {
    /// The layer.
    pub fn new() -> Self {
        GrpcStatusLayer::default()
    }
}

impl<S> Layer<S> for GrpcStatusLayer {
    type Service = GrpcStatus<S>;

    fn layer(&self, inner: S) -> GrpcStatus<S> {
        GrpcStatus::new(inner)
    }
}
