//! The client side of the gRPC suites (`tests/tonic.rs`,
//! `tests/grpc_hostile.rs`): tonic's health client over a channel wrapped
//! in the seawall stack, and how a test reads seawall's verdict out of the
//! `Status` tonic gives.

use std::time::Duration;

use seawall::classify::{ClassifyLayer, ProviderClassifier};
use seawall::core::Failure;
use seawall::core::recording::ReplayBody;
use seawall::deadline::WireTimeout;
use seawall::retry::{Backoff, Budget, RetryPolicy};
use seawall::stack::{Seawall, Stack};
use tonic::Status;
use tonic::transport::Channel;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};
use tower::util::MapRequest;

/// The interactive stack with room for a few quick retries, the deadline
/// sent as `grpc-timeout`.
pub(crate) fn stack() -> Stack {
    Stack::interactive()
        .total_deadline(Duration::from_secs(10))
        .attempt_timeout(Duration::from_secs(3))
        .retry_policy(
            RetryPolicy::interactive()
                .backoff(Backoff::exponential(
                    Duration::from_millis(5),
                    Duration::from_millis(20),
                ))
                .min_attempt_time(Duration::from_millis(10)),
        )
        .budget(Budget::unlimited())
        .propagate_deadline(WireTimeout::grpc())
}

/// The channel as the stack takes it: the stack hands the channel a
/// `ReplayBody` (so a retry can send the request again), which tonic's own
/// body type wraps.
pub(crate) type Mapped = MapRequest<
    Channel,
    fn(http::Request<ReplayBody<tonic::body::Body>>) -> http::Request<tonic::body::Body>,
>;

/// The stack around a channel to `url` (connected on first use).
pub(crate) fn service(url: &str, stack: Stack) -> Seawall<Mapped, ProviderClassifier> {
    let channel = Channel::from_shared(url.to_owned()).unwrap().connect_lazy();
    let to_tonic: fn(_) -> _ =
        |request: http::Request<ReplayBody<tonic::body::Body>>| request.map(tonic::body::Body::new);
    stack.build(&ClassifyLayer::grpc(), MapRequest::new(channel, to_tonic))
}

/// tonic's client over a seawall-wrapped channel.
pub(crate) fn client(url: &str, stack: Stack) -> HealthClient<Seawall<Mapped, ProviderClassifier>> {
    HealthClient::new(service(url, stack))
}

/// seawall's failure inside the status tonic gives, if there is one.
pub(crate) fn failure_of(status: &Status) -> Option<&Failure> {
    use std::error::Error;
    let mut source: Option<&(dyn Error + 'static)> = status.source();
    while let Some(error) = source {
        if let Some(failure) = Failure::find(error) {
            return Some(failure);
        }
        source = error.source();
    }
    None
}

/// A health check of the whole server.
pub(crate) fn ask() -> HealthCheckRequest {
    HealthCheckRequest {
        service: String::new(),
    }
}

/// The answer of a healthy server.
pub(crate) fn serving() -> HealthCheckResponse {
    HealthCheckResponse {
        status: ServingStatus::Serving as i32,
    }
}

/// Raw bytes as gRPC messages, for a call no generated client makes (a
/// client or bidirectional stream tonic has no stub for here).
#[derive(Clone, Copy, Default)]
pub(crate) struct Raw;

impl tonic::codec::Encoder for Raw {
    type Item = bytes::Bytes;
    type Error = Status;

    fn encode(
        &mut self,
        item: bytes::Bytes,
        dst: &mut tonic::codec::EncodeBuf<'_>,
    ) -> Result<(), Status> {
        bytes::BufMut::put_slice(dst, &item);
        Ok(())
    }
}

impl tonic::codec::Decoder for Raw {
    type Item = bytes::Bytes;
    type Error = Status;

    fn decode(
        &mut self,
        src: &mut tonic::codec::DecodeBuf<'_>,
    ) -> Result<Option<bytes::Bytes>, Status> {
        let len = bytes::Buf::remaining(src);
        Ok(Some(bytes::Buf::copy_to_bytes(src, len)))
    }
}

impl tonic::codec::Codec for Raw {
    type Encode = bytes::Bytes;
    type Decode = bytes::Bytes;
    type Encoder = Raw;
    type Decoder = Raw;

    fn encoder(&mut self) -> Raw {
        Raw
    }

    fn decoder(&mut self) -> Raw {
        Raw
    }
}
