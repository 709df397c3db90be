//! An error whose source chain leads back to itself (a wrapper that names
//! itself as its source, by mistake) is read in bounded time: every walk
//! of a chain stops at seawall's depth bound.

use std::error::Error as StdError;
use std::fmt;
use std::io;
use std::sync::mpsc;
use std::time::Duration;

use seawall_classify::transport_failure;
use seawall_core::Code;

#[derive(Debug)]
struct Spin;

impl fmt::Display for Spin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a chain that leads back to itself")
    }
}

impl StdError for Spin {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(self)
    }
}

/// `read`'s result, or a panic when it has not ended within seconds (a
/// walk that never ends spins on in its thread).
fn ends<T: Send + 'static>(read: impl FnOnce() -> T + Send + 'static) -> T {
    let (sent, result) = mpsc::channel();
    std::thread::spawn(move || sent.send(read()));
    result
        .recv_timeout(Duration::from_secs(10))
        .expect("the walk of a cyclic chain ended")
}

#[test]
fn a_reset_over_a_cyclic_chain_is_read() {
    let code = ends(|| {
        let reset = io::Error::new(io::ErrorKind::ConnectionReset, Spin);
        transport_failure(&reset).map(|failure| failure.code())
    });
    assert_eq!(code, Some(Code::Transport));
}

/// The layer looks for a `tonic::Status` in the chain before the
/// transport rules.
#[cfg(feature = "tonic")]
#[test]
fn a_cyclic_chain_under_the_layer_is_unknown() {
    use seawall_classify::ClassifyLayer;
    use seawall_core::Failure;
    use tower::{BoxError, Layer, ServiceExt, service_fn};

    let code = ends(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(async {
            let inner = service_fn(|_: http::Request<()>| async {
                Err::<http::Response<http_body_util::Empty<bytes::Bytes>>, BoxError>(Box::new(Spin))
            });
            let error = ClassifyLayer::openai()
                .layer(inner)
                .oneshot(http::Request::new(()))
                .await
                .map(|_| ())
                .unwrap_err();
            Failure::find(&*error).map(Failure::code)
        })
    });
    assert_eq!(code, Some(Code::Unknown));
}
