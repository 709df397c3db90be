use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http::Response;
use http_body::Body;
use pin_project_lite::pin_project;
use seawall_core::{BoxError, ClosedBy, Code, Evidence, Failure, Progress};
use tokio::time::{Instant, Sleep, sleep_until};

use super::GuardBody;
use super::stream::{Setup, Stream};
use crate::report::StreamReportHandle;

pin_project! {
    /// The response future of [`StreamGuard`](super::StreamGuard).
    ///
    /// For a guarded stream it resolves only when the first content event
    /// arrives, or fails with a complete-evidence
    /// [`Failure`](seawall_core::Failure) before that, while nothing has
    /// reached the caller and outer layers may still retry or fail over.
    pub struct ResponseFuture<F, B> {
        #[pin]
        state: State<F, B>,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F, B> {
        Calling {
            #[pin]
            future: F,
            setup: Option<Setup>,
            // The first-byte bound while the layers below keep the call
            // waiting: a classifier below reads a body's opening before it
            // hands the response on (Gemini's JSON array; a stream request
            // answered as JSON or without a content type), so a head and
            // then nothing would wait out the attempt's whole bound.
            #[pin]
            first_byte: FirstByte,
        },
        Holding {
            parts: Option<http::response::Parts>,
            stream: Option<Pin<Box<Stream<B>>>>,
        },
        Finished,
    }
}

pin_project! {
    /// The first-byte bound of a call still waiting on the layers below.
    #[project = FirstByteProj]
    enum FirstByte {
        /// Armed when the call first waits (a ready answer never pays for
        /// a timer), where one may be needed: a generation, or Gemini's
        /// JSON array.
        Unarmed,
        /// Boxed: inline, the timer made the future (which every layer
        /// above moves as it calls and polls) some 110 bytes larger for
        /// every call, armed or not.
        Armed {
            sleep: Pin<Box<Sleep>>,
        },
        /// Not needed (no generation, no stream asked for, no attempt
        /// progress to tell silence by), or passed without silence.
        Off,
    }
}

impl<F, B> ResponseFuture<F, B> {
    pub(crate) fn new(future: F, setup: Setup) -> Self {
        let may_stream = setup.facts.is_generation()
            && setup.facts.stream_requested() != Some(false)
            && setup.progress.is_some();
        let first_byte = if setup.json_array || may_stream {
            FirstByte::Unarmed
        } else {
            FirstByte::Off
        };
        ResponseFuture {
            state: State::Calling {
                future,
                setup: Some(setup),
                first_byte,
            },
        }
    }
}

/// Whether the first-byte bound of a call still waiting has run out with
/// nothing come: for Gemini's JSON array, as for any stream; for another
/// generation, only where the request asked for a stream (its body sent
/// whole), a 2xx head came, and the attempt's progress counted no byte of
/// its body — a head and then nothing. Not a call with no head yet (a
/// server that ignores `"stream": true` sends its head with its whole
/// answer), an error status (its body is read for what it says), nor one
/// whose bytes are coming (slow, not silent). Disarmed where it does not
/// fire.
fn first_byte_passed(
    mut first_byte: Pin<&mut FirstByte>,
    setup: &Setup,
    cx: &mut Context<'_>,
) -> bool {
    if let FirstByteProj::Unarmed = first_byte.as_mut().project() {
        let config = &setup.config;
        let at = setup.started + config.first_byte.min(config.first_content);
        first_byte.set(FirstByte::Armed {
            sleep: Box::pin(sleep_until(at)),
        });
    }
    let FirstByteProj::Armed { sleep } = first_byte.as_mut().project() else {
        return false;
    };
    if sleep.as_mut().poll(cx).is_pending() {
        return false;
    }
    let head_then_nothing = setup.progress.as_ref().is_some_and(|progress| {
        progress
            .status()
            .is_some_and(|status| (200..300).contains(&status))
            && progress.bytes() == 0
    });
    let silent = setup.json_array
        || (setup.facts.stream_requested() == Some(true)
            && setup.facts.body_sent() != Some(false)
            && head_then_nothing);
    if !silent {
        first_byte.set(FirstByte::Off);
    }
    silent
}

impl<F, B> std::fmt::Debug for ResponseFuture<F, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match &self.state {
            State::Calling { .. } => "calling",
            State::Holding { .. } => "holding",
            State::Finished => "finished",
        };
        f.debug_struct("ResponseFuture")
            .field("state", &state)
            .finish_non_exhaustive()
    }
}

impl<F, E, B> Future for ResponseFuture<F, B>
where
    F: Future<Output = Result<Response<B>, E>>,
    E: Into<BoxError>,
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    type Output = Result<Response<GuardBody<B>>, BoxError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            let next = match self.as_mut().project().state.project() {
                StateProj::Calling {
                    future,
                    setup,
                    first_byte,
                } => {
                    // Matched in one step: the response is moved once.
                    let response = match future.poll(cx) {
                        Poll::Pending => {
                            let waiting = setup.as_ref().expect("setup present while calling");
                            if !first_byte_passed(first_byte, waiting, cx) {
                                return Poll::Pending;
                            }
                            let setup = setup.take().expect("setup present while calling");
                            self.as_mut().project().state.set(State::Finished);
                            return Poll::Ready(Err(no_first_byte(&setup).into()));
                        }
                        Poll::Ready(Ok(response)) => response,
                        Poll::Ready(Err(error)) => {
                            self.as_mut().project().state.set(State::Finished);
                            return Poll::Ready(Err(error.into()));
                        }
                    };
                    let mut setup = setup.take().expect("setup present while calling");
                    setup.recognised = if setup.head_request {
                        None
                    } else {
                        setup
                            .config
                            .guards(&response, &setup.facts, setup.json_array)
                    };
                    if setup.recognised.is_none() {
                        let response = response.map(GuardBody::passthrough);
                        self.as_mut().project().state.set(State::Finished);
                        return Poll::Ready(Ok(response));
                    }
                    let (mut parts, body) = response.into_parts();
                    // The guard may end the body before the server did (at
                    // a withheld error event, before or after an end
                    // marker): the server's length would no longer be the
                    // body's, and a server relaying it would abort.
                    parts.headers.remove(http::header::CONTENT_LENGTH);
                    let handle = StreamReportHandle::default();
                    parts.extensions.insert(handle.usage_slot());
                    parts.extensions.insert(handle.clone());
                    let status = parts.status.as_u16();
                    State::Holding {
                        parts: Some(parts),
                        stream: Some(Stream::new(body, setup, status, handle)),
                    }
                }
                StateProj::Holding { parts, stream } => {
                    let held = stream.as_mut().expect("stream present while holding");
                    let outcome = ready!(held.as_mut().poll_hold(cx));
                    let result = match outcome {
                        Ok(()) => {
                            let parts = parts.take().expect("parts present while holding");
                            let stream = stream.take().expect("stream present while holding");
                            Ok(Response::from_parts(parts, GuardBody::guarded(stream)))
                        }
                        Err(failure) => {
                            // A failure before content is answered in place of
                            // the response: the provider's id of the request
                            // (what its support asks for) is in the head held.
                            let head = parts.as_ref().map(|parts| &parts.headers);
                            Err(with_request_id(failure, head).into())
                        }
                    };
                    self.as_mut().project().state.set(State::Finished);
                    return Poll::Ready(result);
                }
                StateProj::Finished => panic!("ResponseFuture polled after completion"),
            };
            self.as_mut().project().state.set(next);
        }
    }
}

/// The failure with the provider's id of the request from the response
/// head, unless it names one already.
#[cold]
fn with_request_id(failure: Failure, head: Option<&http::HeaderMap>) -> Failure {
    match head.and_then(seawall_core::request_id_of) {
        Some(id) if failure.request_id().is_none() => failure.with_request_id(id),
        _ => failure,
    }
}

/// No body byte of a stream within the first-byte bound, and no response
/// yet from the layers below: route-shaped, as for any stream. The head's
/// status, where one came, is in the evidence, as when the guard holds it.
fn no_first_byte(setup: &Setup) -> Failure {
    let bound = setup.config.first_byte.min(setup.config.first_content);
    let mut evidence = Evidence::default();
    evidence.status = setup.progress.as_ref().and_then(Progress::status);
    evidence.elapsed = Some(Instant::now() - setup.started);
    evidence.closed_by = Some(ClosedBy::Us);
    Failure::new(Code::FirstByteTimeout)
        .with_message(&format!("first_byte bound of {bound:?} passed"))
        .with_evidence(evidence)
}
