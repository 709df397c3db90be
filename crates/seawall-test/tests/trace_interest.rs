//! A recorder sees a span whose callsite another thread, with no
//! subscriber of its own, met first.
//!
//! tracing caches each callsite's interest. While exactly one scoped
//! subscriber is alive, tracing computes a new callsite's interest from
//! the registering thread's subscriber alone: a test thread with none
//! caches "never", and the recorder's thread then misses the span for the
//! rest of the binary. Tests of one binary run on many threads, so which
//! thread meets a callsite first is chance.

use seawall_test::trace::Recorder;

fn fresh_span() {
    let _span = tracing::info_span!("fresh_span_met_elsewhere").entered();
}

#[test]
fn a_callsite_met_first_on_another_thread_is_recorded() {
    let recorder = Recorder::new();
    let _guard = recorder.install();

    // Another test's thread, with no subscriber, meets the callsite first.
    std::thread::spawn(fresh_span).join().unwrap();

    fresh_span();
    let span = recorder.span("fresh_span_met_elsewhere");
    assert!(span.closed, "{span:?}");
}
