use tower_layer::Layer;

use super::CanonicalEncoding;

/// Applies [`CanonicalEncoding`] to a service. See the
/// [module docs](crate::encoding).
#[derive(Debug, Clone, Copy, Default)]
pub struct CanonicalEncodingLayer {
    _private: (),
}

impl CanonicalEncodingLayer {
    /// The layer.
    pub fn new() -> Self {
        CanonicalEncodingLayer::default()
    }
}

impl<S> Layer<S> for CanonicalEncodingLayer {
    type Service = CanonicalEncoding<S>;

    fn layer(&self, inner: S) -> Self::Service {
        CanonicalEncoding::new(inner)
    }
}
