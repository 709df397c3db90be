//! A call refused on this side never reached the member the route set
//! chose: a local `LoadShed` past its limit (shared by every member, as
//! they share one client), or the breaker refusing a member whose half-open
//! trials filled after it was chosen. The set learns nothing of the member
//! from it: no demotion, and its few microseconds are no latency sample.
//! On tokio's paused clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use seawall_core::{BoxError, ClosedBy, Code, Failure, RouteId};
use seawall_fallback::{Member, MemberState, RouteSetHandle, RouteSetLayer};
use tower::{Layer, Service, ServiceExt};

/// How long an answered call takes.
const ANSWER: Duration = Duration::from_millis(50);

/// A provider behind a local concurrency limit of one: a call made while
/// another is in flight is shed unsent, as the classifier reads tower's
/// `LoadShed` (`overloaded`, closed by us, no status). With `refuse` set,
/// every call is refused at once as a breaker refuses it.
#[derive(Clone, Default)]
struct Provider {
    in_flight: Arc<AtomicU32>,
    refuse: Arc<AtomicBool>,
}

impl Provider {
    fn service(
        &self,
    ) -> impl Service<
        http::Request<()>,
        Response = http::Response<Full<Bytes>>,
        Error = BoxError,
        Future = impl Send,
    > + Clone {
        let provider = self.clone();
        tower::service_fn(move |_: http::Request<()>| {
            let refused = provider.refuse.load(Ordering::SeqCst);
            // Taken when called, as tower's `ConcurrencyLimit` takes its
            // permit: a held call keeps the slot without being polled.
            let shed = !refused && provider.in_flight.fetch_add(1, Ordering::SeqCst) >= 1;
            let in_flight = provider.in_flight.clone();
            async move {
                if refused {
                    return Err(Box::new(Failure::new(Code::CircuitOpen)) as BoxError);
                }
                if shed {
                    in_flight.fetch_sub(1, Ordering::SeqCst);
                    let mut failure = Failure::new(Code::Overloaded);
                    failure.evidence_mut().closed_by = Some(ClosedBy::Us);
                    return Err(Box::new(failure) as BoxError);
                }
                tokio::time::sleep(ANSWER).await;
                in_flight.fetch_sub(1, Ordering::SeqCst);
                Ok(http::Response::new(Full::new(Bytes::from_static(b"ok"))))
            }
        })
    }
}

fn request() -> http::Request<()> {
    http::Request::post("https://api.example.com/v1/chat")
        .body(())
        .unwrap()
}

/// A route set of two members over `provider`, both measured by one
/// answered call each (an unmeasured member idle is the next chosen).
async fn measured_set(
    provider: &Provider,
) -> (
    impl Service<http::Request<()>, Error = BoxError> + Clone,
    RouteSetHandle,
) {
    let layer = RouteSetLayer::new(["a", "b"].map(Member::new))
        .unwrap()
        .seed(5);
    let handle = layer.handle();
    let set = layer.layer(provider.service());
    for _ in 0..2 {
        set.clone().oneshot(request()).await.expect("answered");
    }
    let members = handle.members();
    assert!(
        members.iter().all(|m| m.latency.is_some()),
        "both measured: {members:?}"
    );
    (set, handle)
}

fn latencies(members: &[MemberState]) -> Vec<(RouteId, Option<Duration>)> {
    members
        .iter()
        .map(|m| (m.route.clone(), m.latency))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_call_shed_here_demotes_no_member_and_times_none() {
    let provider = Provider::default();
    let (mut set, handle) = measured_set(&provider).await;
    let before = handle.members();
    // One call holds the one slot; the next is shed.
    let held = set.ready().await.unwrap().call(request());
    let error = set
        .clone()
        .oneshot(request())
        .await
        .err()
        .expect("shed past the local limit");
    let failure = Failure::find(&*error).expect("classified");
    assert_eq!(failure.code(), Code::Overloaded);
    let after = handle.members();
    assert!(
        after.iter().all(|m| m.demoted_for.is_none()),
        "nobody demoted: {after:?}"
    );
    assert_eq!(
        latencies(&after),
        latencies(&before),
        "no latency forgotten"
    );
    // The held call still answers.
    held.await.expect("answered");
}

#[tokio::test(start_paused = true)]
async fn a_refusal_is_no_latency_sample() {
    let provider = Provider::default();
    let (set, handle) = measured_set(&provider).await;
    let before = handle.members();
    provider.refuse.store(true, Ordering::SeqCst);
    let error = set.clone().oneshot(request()).await.err().expect("refused");
    assert_eq!(Failure::find(&*error).unwrap().code(), Code::CircuitOpen);
    let after = handle.members();
    assert!(after.iter().all(|m| m.demoted_for.is_none()), "{after:?}");
    assert_eq!(latencies(&after), latencies(&before), "{after:?}");
}
