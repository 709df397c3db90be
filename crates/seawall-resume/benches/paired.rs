//! The same comparison as `benches/resume.rs`, paired: the guard alone and
//! the guard with the ResumeLayer alternate, and the best of 15 runs of
//! each is kept, so a machine busy with other work slows both alike.
//!
//! `cargo bench -p seawall-resume --bench paired`

mod common;

use std::time::Instant;

use bytes::Bytes;
use common::{CHUNK, drain, request, response};
use http_body_util::Full;
use seawall_resume::{ResumeLayer, ResumeRequestBody};
use seawall_stream::StreamGuardLayer;
use tower::{ServiceBuilder, ServiceExt, service_fn};

const TOTAL: usize = 64 << 20;

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (mut a, mut b) = (f64::MAX, f64::MAX);
    let only = std::env::var("ONLY").unwrap_or_default();
    for _ in 0..15 {
        let t = Instant::now();
        if only != "b" {
            rt.block_on(async {
                let s = ServiceBuilder::new()
                    .layer(StreamGuardLayer::interactive())
                    .service(service_fn(|_r: http::Request<Full<Bytes>>| async {
                        Ok::<_, std::convert::Infallible>(response(TOTAL / CHUNK.len()))
                    }));
                drain(s.oneshot(request()).await.unwrap().into_body())
                    .await
                    .1
            });
        }
        a = a.min(t.elapsed().as_secs_f64());
        let t = Instant::now();
        if only != "a" {
            rt.block_on(async {
                let s = ServiceBuilder::new()
                    .layer(ResumeLayer::new())
                    .layer(StreamGuardLayer::interactive())
                    .service(service_fn(
                        |_r: http::Request<ResumeRequestBody<Full<Bytes>>>| async {
                            Ok::<_, std::convert::Infallible>(response(TOTAL / CHUNK.len()))
                        },
                    ));
                drain(s.oneshot(request()).await.unwrap().into_body())
                    .await
                    .1
            });
        }
        b = b.min(t.elapsed().as_secs_f64());
    }
    println!(
        "guard {:.1} ms ({:.0} MiB/s), guard+resume {:.1} ms ({:.0} MiB/s), ratio {:.3}",
        a * 1e3,
        64.0 / a,
        b * 1e3,
        64.0 / b,
        a / b
    );
}
