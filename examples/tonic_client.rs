//! seawall under a tonic channel: each layer stacked with `ServiceBuilder`,
//! against a local gRPC health server that is unavailable once.
//!
//! ```text
//! cargo run --example tonic_client --features tonic
//! ```
//!
//! The one thing tonic needs: the retry layer hands the channel a
//! `ReplayBody` (so the next attempt can send the same request again), and
//! a `Channel` takes tonic's own body type, so one `map_request` wraps it.
//! The deadline travels to the server as `grpc-timeout`: what is left of
//! the operation when each attempt starts (not the attempt's own bound,
//! which covers only the wait for the answer to begin), and never more
//! than is left of a caller's own `set_timeout`: tonic's channel has no
//! timer for it but that header. Outermost, `GrpcStatusLayer` (feature
//! `tonic`) gives the caller a `Status` with the server's own code
//! instead of tonic's `Unknown` for an error it does not know; the same
//! feature lets the classification read the channel's own `grpc-timeout`
//! expiry as a timeout.

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use seawall::classify::ClassifyLayer;
use seawall::core::recording::ReplayBody;
use seawall::core::{Failure, Receipt};
use seawall::deadline::{DeadlineLayer, WireTimeout};
use seawall::retry::{Backoff, Budget, RetryBudgetLayer, RetryPolicy};
use seawall::tonic::GrpcStatusLayer;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::transport::{Channel, Server};
use tonic::{Request, Response, Status};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::health_server::{Health, HealthServer};
use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};
use tower::ServiceBuilder;

/// A health service that is unavailable on its first call.
#[derive(Default)]
struct Flaky(AtomicUsize);

type Watch = Pin<Box<dyn tokio_stream::Stream<Item = Result<HealthCheckResponse, Status>> + Send>>;

#[tonic::async_trait]
impl Health for Flaky {
    async fn check(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<HealthCheckResponse>, Status> {
        let timeout = request.metadata().get("grpc-timeout").cloned();
        println!("server: call with grpc-timeout {timeout:?}");
        if self.0.fetch_add(1, Ordering::SeqCst) == 0 {
            return Err(Status::unavailable("warming up"));
        }
        Ok(Response::new(HealthCheckResponse {
            status: ServingStatus::Serving as i32,
        }))
    }

    type WatchStream = Watch;

    async fn watch(
        &self,
        _request: Request<HealthCheckRequest>,
    ) -> Result<Response<Watch>, Status> {
        Err(Status::unimplemented("watch"))
    }
}

#[tokio::main]
async fn main() -> Result<(), tower::BoxError> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(
        Server::builder()
            .add_service(HealthServer::new(Flaky::default()))
            .serve_with_incoming(TcpListenerStream::new(listener)),
    );

    let channel = Channel::from_shared(url)?.connect().await?;
    let service = ServiceBuilder::new()
        // Failures as `tonic::Status`es with the server's code.
        .layer(GrpcStatusLayer::new())
        // The operation: 10 s, whatever the ladder does, or less where the
        // caller's own `grpc-timeout` (`Request::set_timeout`) says so;
        // what is left of it goes to the server with each attempt.
        .layer(
            DeadlineLayer::new(Duration::from_secs(10))
                .read_incoming(WireTimeout::grpc())
                .carry_to_attempts(),
        )
        // Three attempts, short backoff, at most 20 % retries.
        .layer(RetryBudgetLayer::new(
            RetryPolicy::interactive().backoff(Backoff::exponential(
                Duration::from_millis(50),
                Duration::from_secs(1),
            )),
            Budget::ratio(0.2, 10, Duration::from_secs(10)),
        ))
        // Each attempt: 2 s for its answer to begin; the server is told the
        // operation's time left as `grpc-timeout`.
        .layer(DeadlineLayer::per_attempt(Duration::from_secs(2)).propagate_grpc_timeout())
        // `grpc-status` in headers or trailers, `RetryInfo` honoured.
        .layer(ClassifyLayer::grpc())
        // The body mapping tonic needs.
        .map_request(|request: http::Request<ReplayBody<tonic::body::Body>>| {
            request.map(tonic::body::Body::new)
        })
        .service(channel);

    let mut client = HealthClient::new(service);
    match client
        .check(HealthCheckRequest {
            service: String::new(),
        })
        .await
    {
        Ok(response) => {
            println!("client: {:?}", response.get_ref());
            if let Some(receipt) = response.extensions().get::<Receipt>() {
                for attempt in &receipt.attempts {
                    let code = attempt.code.map_or("ok", |c| c.as_str());
                    println!("client: attempt {code} after {:?}", attempt.delay);
                }
            }
        }
        // The server's code, message and details; seawall's verdict is
        // the status's source.
        Err(status) => {
            let failure = std::error::Error::source(&status).and_then(Failure::find);
            println!("client: failed: {:?}: {failure:?}", status.code());
        }
    }
    Ok(())
}
