use tower_layer::Layer;

use super::CanonicalEncoding;

/// Applies [`CanonicalEncoding`] to a service. See the
/// [module docs](crate::encoding).
#[derive(Debug, Clone, Copy, Default)]
pub struct CanonicalEncodingLayer {
    decoded: Option<&'static str>,
}

impl CanonicalEncodingLayer {
    /// The layer. It leaves requests as they are.
    pub fn new() -> Self {
        CanonicalEncodingLayer::default()
    }

    /// Asks only for the codings in `decoded` (a comma-separated list, as
    /// the decompression above this layer writes it, e.g.
    /// `"gzip,deflate,br"`): a request whose `accept-encoding` asks for any
    /// other (`zstd`, `*`) has it replaced by `decoded`. See the
    /// [module docs](crate::encoding).
    pub fn asking_only_for(mut self, decoded: &'static str) -> Self {
        self.decoded = Some(decoded);
        self
    }
}

impl<S> Layer<S> for CanonicalEncodingLayer {
    type Service = CanonicalEncoding<S>;

    fn layer(&self, inner: S) -> Self::Service {
        CanonicalEncoding {
            inner,
            decoded: self.decoded,
        }
    }
}
