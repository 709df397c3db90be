//! Sending a request again: a body that records what it sends, up to a cap,
//! so another attempt (a retry or a fallback) can send the same bytes.
//!
//! Recording is lazy: the first attempt streams the body through as it is
//! read, keeping each chunk (a cheap `Bytes` clone, no copy). A clone made
//! for the next attempt replays the recorded chunks and then continues with
//! whatever the first attempt left unread. Past `max_bytes` recording stops
//! and [`ReplayBody::is_replayable`] turns false: that operation runs once,
//! intact, rather than sending a second attempt a truncated body.
//!
//! A body already in memory (`Full<Bytes>`, `String`) is one chunk: it is
//! "recorded" by a reference-count bump, so replaying it costs nothing —
//! and it is kept whatever its size, past the cap: the cap bounds what a
//! streamed body would make the recording hold, and a whole one is held by
//! its owner anyway.
//!
//! A body that fails while it is sent is never sent again: the bytes after
//! the failure are unknown, and a body polled past its error may well say
//! it ended — a replay would send the prefix as if it were the request.
//! Every handle reaching past the recording then fails with
//! [`RequestBodyFailed`], and [`ReplayBody::replay`] gives none.
//!
//! A body may be read ahead, before any attempt sends it
//! ([`ReplayBody::read_ahead`]): what is at hand goes into the recording,
//! and the first handle to send the body sends it from there. Nothing read
//! ahead is dropped: a frame past the cap and the body's error are kept
//! for the first handle that reaches them, as if it had read them itself.
//!
//! Replay needs `B: Unpin` — true of hyper's `Incoming`, `Full`, boxed
//! bodies and every body seawall knows of — so the recorded state can live
//! behind one shared lock without unsafe pinning. A body that is not (a
//! `StreamBody` over an `async-stream` generator) goes in a box first:
//! `http_body_util::BodyExt::boxed`, one allocation its caller chooses to
//! pay, where pinning every body here would make every request pay it.

use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker, ready};

use bytes::{Buf, Bytes};
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};

use crate::BoxError;
use crate::facts::OperationSlots;

/// The default cap on recorded request bytes: 1 MiB.
pub const DEFAULT_MAX_REPLAY_BYTES: usize = 1024 * 1024;

/// A request body that can be sent again. See the [module docs](self).
pub struct ReplayBody<B> {
    mode: Mode<B>,
}

enum Mode<B> {
    /// Not recorded: no attempt after this one is possible.
    Once(B),
    /// Recorded: this handle's position in the shared recording.
    Replay {
        shared: Arc<Mutex<Shared<B>>>,
        /// Index of the next recorded chunk this handle sends.
        next_chunk: usize,
        /// Bytes this handle has sent.
        sent: u64,
        /// Whether this handle has sent the trailers (or the end).
        trailers_sent: bool,
    },
}

struct Shared<B> {
    /// The original body, read by whichever handle runs past the recording.
    body: B,
    /// The first chunk, kept apart so a one-chunk body needs no `Vec`.
    chunks: Chunks,
    recorded_bytes: usize,
    max_bytes: usize,
    /// True once the recording stopped at the cap: it is only a prefix.
    capped: bool,
    /// Bytes read from the original body so far, by any handle.
    live_bytes: u64,
    /// True once the original body reported its end.
    body_done: bool,
    /// True once the original body failed: what followed is unknown.
    failed: bool,
    trailers: Option<HeaderMap>,
    /// What a read ahead took of the original body and did not record:
    /// the next frame, or the body's error, for the first handle to reach
    /// the end of the recording. Not counted in `live_bytes` until then.
    held: Option<Held>,
    /// The original body's exact length, when it announced one.
    exact_len: Option<u64>,
    /// Filled with the request facts the whole recording gives, when the
    /// body ends within the cap; told too which sending sent it whole
    /// ([`RequestFacts::attempt_sent_whole`](crate::RequestFacts::attempt_sent_whole)).
    facts: Option<Arc<OperationSlots>>,
}

/// What a read ahead kept of the original body without recording it.
enum Held {
    /// A data frame the recording had no room for.
    Data(Bytes),
    /// The original body's own error.
    Failed(BoxError),
}

impl<B> Shared<B> {
    /// Whole, and so sendable again: not cut at the cap, not failed.
    fn replayable(&self) -> bool {
        !self.capped && !self.failed
    }

    /// Whether a chunk read from the original body goes into the
    /// recording. A body that comes whole in one frame (built in memory:
    /// an SDK's JSON, an image in base64) is kept whatever its size:
    /// keeping it is a reference to the caller's own bytes, not a copy.
    fn fits(&self, len: usize) -> bool {
        let whole = self.recorded_bytes == 0 && self.exact_len == Some(len as u64);
        !self.capped && (whole || self.recorded_bytes + len <= self.max_bytes)
    }

    /// A chunk read from the original body, to be sent by the handle that
    /// read it (or by the first, for one read ahead): recorded if it fits,
    /// else the recording stops at its cap. True when it was recorded.
    fn read(&mut self, chunk: &Bytes) -> bool {
        self.live_bytes += chunk.len() as u64;
        let recorded = self.fits(chunk.len());
        if recorded {
            self.recorded_bytes += chunk.len();
            self.chunks.push(chunk.clone());
        } else {
            self.capped = true;
        }
        if self.exact_len == Some(self.live_bytes) {
            self.tell_facts();
        }
        recorded
    }

    /// A handle sent the body to its end: the sending it serves sent the
    /// request whole.
    fn sent_whole(&self) {
        if let Some(slot) = &self.facts {
            slot.sent_whole(self.id());
        }
    }

    /// This recording, as the slots know it: its address, fixed while it
    /// lives (inside its `Arc`).
    fn id(&self) -> usize {
        std::ptr::from_ref(self).addr()
    }

    /// A handle has sent `sent` bytes: all of them, when the body
    /// announced that length (a client stops there, never polling for the
    /// end).
    fn sent_up_to(&self, sent: u64) {
        if self.exact_len == Some(sent) {
            self.sent_whole();
        }
    }

    /// The original body ended: the recording, if whole, tells the facts.
    fn end(&mut self) {
        self.body_done = true;
        self.tell_facts();
    }

    /// Fills the facts slot from the whole recording, if there is one. A
    /// client may never poll a body of announced length to its end (hyper
    /// stops once the length is sent), so this runs as soon as the last
    /// announced byte is recorded, too.
    fn tell_facts(&mut self) {
        if self.capped {
            return;
        }
        // Told once: by this recording, or by another reading the same
        // body (a recording above or below it).
        if let Some(slot) = self.facts.as_ref().filter(|slot| !slot.has_body_facts()) {
            match (&self.chunks.first, self.chunks.rest.is_empty()) {
                (None, _) => slot.fill(&Bytes::new()),
                (Some(first), true) => slot.fill(first),
                (Some(first), false) => {
                    let mut joined = Vec::with_capacity(self.recorded_bytes);
                    joined.extend_from_slice(first);
                    for chunk in &self.chunks.rest {
                        joined.extend_from_slice(chunk);
                    }
                    slot.fill(&Bytes::from(joined));
                }
            }
        }
    }
}

#[derive(Default)]
struct Chunks {
    first: Option<Bytes>,
    rest: Vec<Bytes>,
}

impl Chunks {
    fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.rest.len()
    }

    fn get(&self, index: usize) -> Option<&Bytes> {
        match index {
            0 => self.first.as_ref(),
            n => self.rest.get(n - 1),
        }
    }

    fn push(&mut self, chunk: Bytes) {
        if self.first.is_none() && self.rest.is_empty() {
            self.first = Some(chunk);
        } else {
            self.rest.push(chunk);
        }
    }
}

/// A replayed body could not send the same bytes again: the recording
/// stopped at its cap before this attempt needed it.
#[derive(Debug, thiserror::Error)]
#[error("request body exceeded the replay cap and cannot be sent again")]
pub struct ReplayCapExceeded;

/// A replayed body could not send the same bytes again: the original body
/// failed while it was sent, and nothing after the failure is known.
#[derive(Debug, thiserror::Error)]
#[error("request body failed while it was sent and cannot be sent again")]
pub struct RequestBodyFailed;

impl<B> ReplayBody<B> {
    /// A body sent once, not recorded.
    pub fn once(body: B) -> Self {
        ReplayBody {
            mode: Mode::Once(body),
        }
    }

    /// A body recorded as it is sent, up to `max_bytes`.
    pub fn recorded(body: B, max_bytes: usize) -> Self
    where
        B: Body,
    {
        let exact_len = body.size_hint().exact();
        ReplayBody {
            mode: Mode::Replay {
                shared: Arc::new(Mutex::new(Shared {
                    body,
                    chunks: Chunks::default(),
                    recorded_bytes: 0,
                    live_bytes: 0,
                    max_bytes,
                    capped: false,
                    body_done: false,
                    failed: false,
                    trailers: None,
                    held: None,
                    exact_len,
                    facts: None,
                })),
                next_chunk: 0,
                sent: 0,
                trailers_sent: false,
            },
        }
    }

    /// Has the recording fill `slot` with the request's facts when the body
    /// ends within the cap (see [`RequestFacts`](crate::RequestFacts)). A
    /// body sent once records nothing and fills nothing.
    ///
    /// The slot is told too whether the handle of the latest sending sent
    /// the body to its end: a new recording is a new sending, nothing of
    /// it sent yet, and so is each handle [`replay`](Self::replay) hands
    /// out. The recording that last did either speaks for the sendings;
    /// a recording above it (whose handle this one reads, ahead of
    /// sending or once for all its own sendings) says nothing more.
    pub fn fill_facts(self, slot: Arc<OperationSlots>) -> Self {
        if let Mode::Replay { shared, .. } = &self.mode {
            let mut state = lock(shared);
            slot.sending_starts(state.id());
            state.facts = Some(slot);
        }
        self
    }

    /// [`fill_facts`](Self::fill_facts) with the slots `facts` carry, if
    /// any: for a layer that records a body whose facts a layer above
    /// fills (a ladder under a fallback or a resume). Its recording then
    /// speaks for its own sendings; the body's facts, once known, are not
    /// read again.
    pub fn fill_facts_of(self, facts: &crate::RequestFacts) -> Self {
        match facts.slots() {
            Some(slot) => self.fill_facts(Arc::clone(slot)),
            None => self,
        }
    }

    /// The recording of `body`, up to `max_bytes`, for the operation of
    /// the request whose head is `parts`, by a layer that may send it
    /// again (a ladder, a fallback). `slots`: the operation's slots to
    /// make, where no layer above made any (`None` where one did). Made
    /// here, they go into the request's facts — a caller's own facts
    /// (`RequestFacts::with_model`, no slots) keep what they say, the
    /// body's are added — and the recording fills them; found above,
    /// the recording only speaks for its own sendings
    /// ([`fill_facts_of`](Self::fill_facts_of)).
    pub fn recorded_for(
        parts: &mut http::request::Parts,
        body: B,
        max_bytes: usize,
        slots: Option<OperationSlots>,
    ) -> Self
    where
        B: Body,
    {
        let body = ReplayBody::recorded(body, max_bytes);
        match slots {
            Some(slots) => {
                let slot = Arc::new(slots);
                let facts = match parts.extensions.remove::<crate::RequestFacts>() {
                    Some(told) => told,
                    None => crate::RequestFacts::from_parts(parts),
                };
                parts.extensions.insert(facts.with_slots(Arc::clone(&slot)));
                body.fill_facts(slot)
            }
            None => match parts.extensions.get::<crate::RequestFacts>() {
                Some(facts) => body.fill_facts_of(facts),
                None => body,
            },
        }
    }

    /// True when another handle can send the whole body again: the body is
    /// recorded, the recording did not stop at its cap and the body did
    /// not fail.
    pub fn is_replayable(&self) -> bool {
        match &self.mode {
            Mode::Once(_) => false,
            Mode::Replay { shared, .. } => lock(shared).replayable(),
        }
    }

    /// The whole recorded body, chunk by chunk, read without polling
    /// anything: `None` unless the body is recorded within its cap and was
    /// already sent to its end (its end seen, or all of its announced
    /// length sent). For a layer that writes a new request from the old
    /// one's body (a resume's continuation): a replay handle read to its
    /// end instead would read on into an upload still going out, taking
    /// its frames, and push the recording past its cap under the sender.
    pub fn recorded_whole(&self) -> Option<Vec<Bytes>> {
        let Mode::Replay { shared, .. } = &self.mode else {
            return None;
        };
        let state = lock(shared);
        let sent =
            state.held.is_none() && (state.body_done || state.exact_len == Some(state.live_bytes));
        if !state.replayable() || !sent {
            return None;
        }
        let mut chunks = Vec::with_capacity(state.chunks.len());
        chunks.extend(state.chunks.first.iter().cloned());
        chunks.extend(state.chunks.rest.iter().cloned());
        Some(chunks)
    }

    /// True when what is left of the original body is said, by its size
    /// hint, to fit in the recording: a handle reading on past the
    /// recording then records all of it, and whoever sends the body meets
    /// every byte again in the recording. Where the rest's size is
    /// unknown, reading on may push the recording past its cap and take
    /// bytes the sender still needs. A hint is the body's word, not a
    /// bound: a body may send more than its hint says, and a reader that
    /// must not lose bytes keeps what does not fit
    /// ([`read_ahead`](Self::read_ahead) does).
    pub fn rest_fits_recording(&self) -> bool
    where
        B: Body,
    {
        let Mode::Replay { shared, .. } = &self.mode else {
            return false;
        };
        let state = lock(shared);
        state.replayable()
            && (state.body.size_hint().upper())
                // A body kept whole past the cap (one frame) has no room.
                .is_some_and(|rest| {
                    rest <= state.max_bytes.saturating_sub(state.recorded_bytes) as u64
                })
    }

    /// Reads into the recording what of the original body is at hand,
    /// without waiting, before any handle sends it: at most `max_frames`
    /// frames, until the body is not ready, ends or fails. A body in
    /// memory is then recorded whole, and fills the facts slot
    /// ([`fill_facts`](Self::fill_facts)) before anything is sent.
    ///
    /// Nothing read is dropped, whatever the body's size hint said: a
    /// frame the recording has no room for, and the body's error, are
    /// kept for the first handle to reach them, which sends that frame
    /// (the recording then stops at its cap, as when a handle reads past
    /// it) or fails with that error (later handles with
    /// [`RequestBodyFailed`]). Reading stops there. A body sent once, cut
    /// at the cap or failed is not read.
    ///
    /// A body not ready is polled with a waker that wakes nothing: the
    /// handle that sends it polls it again with its own.
    pub fn read_ahead(&self, max_frames: usize)
    where
        B: Body + Unpin,
        B::Error: Into<BoxError>,
    {
        let Mode::Replay { shared, .. } = &self.mode else {
            return;
        };
        let mut state = lock(shared);
        let mut cx = Context::from_waker(Waker::noop());
        for _ in 0..max_frames {
            if !state.replayable() || state.body_done || state.held.is_some() {
                return;
            }
            let Poll::Ready(frame) = Pin::new(&mut state.body).poll_frame(&mut cx) else {
                return;
            };
            let frame = match frame {
                None => return state.end(),
                Some(Err(err)) => {
                    state.held = Some(Held::Failed(err.into()));
                    return;
                }
                Some(Ok(frame)) => frame,
            };
            match frame.into_data() {
                Ok(mut data) => {
                    let chunk = data.copy_to_bytes(data.remaining());
                    if state.fits(chunk.len()) {
                        state.read(&chunk);
                    } else {
                        state.held = Some(Held::Data(chunk));
                    }
                }
                Err(frame) => {
                    state.trailers = frame.into_trailers().ok();
                    return state.end();
                }
            }
        }
    }

    /// A handle that sends the body again from its start, or `None` when
    /// that is not possible (sent once, over the cap, or the body failed:
    /// its recording is a prefix, never the whole request).
    pub fn replay(&self) -> Option<Self> {
        let Mode::Replay { shared, .. } = &self.mode else {
            return None;
        };
        let state = lock(shared);
        if !state.replayable() {
            return None;
        }
        if let Some(slot) = &state.facts {
            slot.sending_starts(state.id());
        }
        drop(state);
        Some(ReplayBody {
            mode: Mode::Replay {
                shared: Arc::clone(shared),
                next_chunk: 0,
                sent: 0,
                trailers_sent: false,
            },
        })
    }
}

/// A poisoned lock only means another handle panicked mid-poll; the
/// recording itself is still consistent (every write is a single push).
fn lock<B>(shared: &Mutex<Shared<B>>) -> MutexGuard<'_, Shared<B>> {
    shared
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl<B> Body for ReplayBody<B>
where
    B: Body + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match &mut self.get_mut().mode {
            Mode::Once(body) => {
                let frame = ready!(Pin::new(body).poll_frame(cx));
                Poll::Ready(frame.map(|res| {
                    res.map(|frame| frame.map_data(|mut data| data.copy_to_bytes(data.remaining())))
                        .map_err(Into::into)
                }))
            }
            Mode::Replay {
                shared,
                next_chunk,
                sent,
                trailers_sent,
            } => {
                let mut state = lock(shared);
                if let Some(chunk) = state.chunks.get(*next_chunk) {
                    let chunk = chunk.clone();
                    *next_chunk += 1;
                    *sent += chunk.len() as u64;
                    state.sent_up_to(*sent);
                    return Poll::Ready(Some(Ok(Frame::data(chunk))));
                }
                // This handle has sent the whole recording. If another handle
                // read past it after the cap, the bytes in between are gone.
                if *sent < state.live_bytes {
                    return Poll::Ready(Some(Err(ReplayCapExceeded.into())));
                }
                if state.body_done {
                    state.sent_whole();
                    if !*trailers_sent {
                        *trailers_sent = true;
                        if let Some(trailers) = state.trailers.clone() {
                            return Poll::Ready(Some(Ok(Frame::trailers(trailers))));
                        }
                    }
                    return Poll::Ready(None);
                }
                // Polled again, a failed body may say it ended: this handle
                // would then send a prefix as the whole request.
                if state.failed {
                    return Poll::Ready(Some(Err(RequestBodyFailed.into())));
                }
                // What a read ahead kept is the next frame of the body.
                if let Some(held) = state.held.take() {
                    return Poll::Ready(Some(match held {
                        Held::Data(chunk) => {
                            *sent += chunk.len() as u64;
                            if state.read(&chunk) {
                                *next_chunk = state.chunks.len();
                            }
                            state.sent_up_to(*sent);
                            Ok(Frame::data(chunk))
                        }
                        Held::Failed(err) => {
                            state.failed = true;
                            Err(err)
                        }
                    }));
                }
                let frame = ready!(Pin::new(&mut state.body).poll_frame(cx));
                let frame = match frame {
                    None => {
                        state.end();
                        state.sent_whole();
                        *trailers_sent = true;
                        return Poll::Ready(None);
                    }
                    Some(Err(err)) => {
                        state.failed = true;
                        return Poll::Ready(Some(Err(err.into())));
                    }
                    Some(Ok(frame)) => frame,
                };
                match frame.into_data() {
                    Ok(mut data) => {
                        let chunk = data.copy_to_bytes(data.remaining());
                        *sent += chunk.len() as u64;
                        if state.read(&chunk) {
                            *next_chunk = state.chunks.len();
                        }
                        state.sent_up_to(*sent);
                        Poll::Ready(Some(Ok(Frame::data(chunk))))
                    }
                    Err(frame) => {
                        let trailers = frame.into_trailers().ok();
                        state.trailers = trailers.clone();
                        state.end();
                        state.sent_whole();
                        *trailers_sent = true;
                        Poll::Ready(trailers.map(|t| Ok(Frame::trailers(t))))
                    }
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.mode {
            Mode::Once(body) => body.is_end_stream(),
            Mode::Replay {
                shared,
                next_chunk,
                sent,
                trailers_sent,
            } => {
                let state = lock(shared);
                let fresh_and_empty = state.live_bytes == 0
                    && !state.body_done
                    && state.held.is_none()
                    && state.body.is_end_stream();
                let all_sent = *next_chunk == state.chunks.len()
                    && *sent == state.live_bytes
                    && state.body_done
                    && (*trailers_sent || state.trailers.is_none());
                fresh_and_empty || all_sent
            }
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.mode {
            Mode::Once(body) => body.size_hint(),
            Mode::Replay { shared, sent, .. } => {
                let state = lock(shared);
                match state.exact_len {
                    Some(len) => SizeHint::with_exact(len.saturating_sub(*sent)),
                    None => SizeHint::default(),
                }
            }
        }
    }
}

impl<B> fmt::Debug for ReplayBody<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.mode {
            Mode::Once(_) => f.write_str("ReplayBody::Once"),
            Mode::Replay { sent, .. } => f
                .debug_struct("ReplayBody::Replay")
                .field("sent", sent)
                .finish(),
        }
    }
}

/// A copy of a request's head (method, URI, version, headers, extensions)
/// with another body: what every attempt after the first is built from.
pub fn clone_head<B>(request: &http::Request<B>, body: B) -> http::Request<B> {
    let mut copy = http::Request::new(body);
    *copy.method_mut() = request.method().clone();
    *copy.uri_mut() = request.uri().clone();
    *copy.version_mut() = request.version();
    *copy.headers_mut() = request.headers().clone();
    *copy.extensions_mut() = request.extensions().clone();
    copy
}

/// The mark a retry ladder puts on each request it sends: a ladder below
/// runs nested (see the retry crate's `allow_nested`), and a fallback
/// below leaves a call its caller dropped to the ladder above, which
/// counts the attempt it was waiting for (counted by both, one dropped
/// call was two cancelled attempts).
#[derive(Debug, Clone, Copy)]
pub struct OuterLadder;

/// A copy of a request's head, taken before the request is sent, to make
/// the requests of later attempts from (a retry ladder's, a fallback
/// route's), with the body handle they replay.
///
/// Copying an extension map costs an allocation per value and two for the
/// map, on every call, whether or not a later attempt is ever made. When
/// the map holds nothing but what seawall's layers put there — the
/// operation's [`Deadline`](crate::Deadline), a [`RouteId`](crate::RouteId),
/// the [`RequestFacts`](crate::RequestFacts), the
/// [`OtherRoutes`](crate::OtherRoutes) mark, and a marker of the copier's
/// own it puts on every copy itself ([`HeadCopy::of_unmarked`]) — those are
/// kept as values (each `Copy` or an `Arc` clone), and a map is built only
/// for a copy actually made. Any other extension, and the whole map is
/// copied as [`clone_head`] copies it.
///
/// The header fields are kept the same way: as a list of names and values
/// (each a reference-count bump or a copy of a known name), one
/// allocation where a `HeaderMap` clone makes two (its index and its
/// entries) and a drop frees both; the map is built for a request
/// actually made.
pub struct HeadCopy<B> {
    method: http::Method,
    uri: http::Uri,
    version: http::Version,
    /// Every header field, one value each, in the map's order.
    headers: Vec<(http::HeaderName, http::HeaderValue)>,
    body: B,
    /// The extensions, kept as values; `None` when `extensions` holds a
    /// copy of the whole map.
    known: Option<KnownExtensions>,
    /// The copy of the whole map, when `known` is `None`; else empty (no
    /// allocation).
    extensions: http::Extensions,
}

/// The extensions a [`HeadCopy`] keeps as values.
struct KnownExtensions {
    deadline: Option<crate::Deadline>,
    route: Option<crate::RouteId>,
    facts: Option<crate::RequestFacts>,
    other_routes: bool,
}

impl<B> HeadCopy<B> {
    /// The copy of `request`'s head, with `body`.
    pub fn of(request: &mut http::Request<B>, body: B) -> Self {
        HeadCopy::taken(request, body, false)
    }

    /// [`of`](Self::of), leaving out the copier's own marker `M`, which it
    /// puts on each request it makes from the copy.
    pub fn of_unmarked<M: Send + Sync + 'static>(request: &mut http::Request<B>, body: B) -> Self {
        let marked = request.extensions().get::<M>().is_some();
        HeadCopy::taken(request, body, marked)
    }

    fn taken(request: &mut http::Request<B>, body: B, marked: bool) -> Self {
        let extensions = request.extensions();
        let deadline = extensions.get::<crate::Deadline>();
        let route = extensions.get::<crate::RouteId>();
        let facts = extensions.get::<crate::RequestFacts>();
        let other_routes = extensions.get::<crate::OtherRoutes>().is_some();
        let count = usize::from(deadline.is_some())
            + usize::from(route.is_some())
            + usize::from(facts.is_some())
            + usize::from(other_routes)
            + usize::from(marked);
        let (known, extensions) = if extensions.len() == count {
            let known = KnownExtensions {
                deadline: deadline.copied(),
                route: route.cloned(),
                facts: facts.cloned(),
                other_routes,
            };
            (Some(known), http::Extensions::new())
        } else {
            (None, extensions.clone())
        };
        // Sized first: the iterator does not tell its length, and a list
        // grown as it is filled would allocate more than once.
        let mut headers = Vec::with_capacity(request.headers().len());
        headers.extend(
            request
                .headers()
                .iter()
                .map(|(name, value)| (name.clone(), value.clone())),
        );
        HeadCopy {
            method: request.method().clone(),
            uri: request.uri().clone(),
            version: request.version(),
            headers,
            body,
            known,
            extensions,
        }
    }

    /// The request's facts, as the request carried them: read on a
    /// failure (is its body sent whole?) without building a request.
    pub fn facts(&self) -> Option<&crate::RequestFacts> {
        match &self.known {
            Some(known) => known.facts.as_ref(),
            None => self.extensions.get::<crate::RequestFacts>(),
        }
    }

    /// The body handle kept with the head.
    pub fn body(&self) -> &B {
        &self.body
    }

    /// The operation's deadline, as the request carried it.
    pub fn deadline(&self) -> Option<crate::Deadline> {
        match &self.known {
            Some(known) => known.deadline,
            None => self.extensions.get::<crate::Deadline>().copied(),
        }
    }

    /// A request with the copied head and `body`.
    pub fn request(&self, body: B) -> http::Request<B> {
        let mut request = http::Request::new(body);
        *request.method_mut() = self.method.clone();
        *request.uri_mut() = self.uri.clone();
        *request.version_mut() = self.version;
        let headers = request.headers_mut();
        headers.reserve(self.headers.len());
        for (name, value) in &self.headers {
            // `append`: a name with several values keeps them all, in order.
            headers.append(name.clone(), value.clone());
        }
        let extensions = request.extensions_mut();
        match &self.known {
            Some(known) => {
                if let Some(deadline) = known.deadline {
                    extensions.insert(deadline);
                }
                if let Some(route) = &known.route {
                    extensions.insert(route.clone());
                }
                if let Some(facts) = &known.facts {
                    extensions.insert(facts.clone());
                }
                if known.other_routes {
                    extensions.insert(crate::OtherRoutes);
                }
            }
            None => *extensions = self.extensions.clone(),
        }
        request
    }
}

impl<B> fmt::Debug for HeadCopy<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HeadCopy")
            .field("method", &self.method)
            .field("uri", &self.uri)
            .field("extensions_as_values", &self.known.is_some())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::{BodyExt, Full};

    async fn collect<B>(body: B) -> Result<Bytes, BoxError>
    where
        B: Body<Data = Bytes, Error = BoxError>,
    {
        Ok(body.collect().await?.to_bytes())
    }

    fn chunked(parts: &[&'static str]) -> frames::Iter {
        frames::Iter(
            parts
                .iter()
                .map(|p| Ok(Frame::data(Bytes::from_static(p.as_bytes()))))
                .collect(),
        )
    }

    #[tokio::test]
    async fn the_recording_tells_the_facts_once_the_announced_length_is_sent() {
        use std::future::poll_fn;
        let slot = Arc::new(OperationSlots::default());
        let facts = crate::RequestFacts::default().with_slots(slot.clone());
        let body = Full::new(Bytes::from_static(br#"{"model":"m","stream":true}"#));
        let mut body = ReplayBody::recorded(body, 1024).fill_facts(slot);
        assert_eq!(facts.stream_requested(), None);
        assert_eq!(facts.body_sent(), Some(false));
        // One data frame, as a client that stops at the announced length
        // reads it: never polled to its end.
        let frame = poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await;
        assert!(frame.is_some());
        assert_eq!(facts.stream_requested(), Some(true));
        assert_eq!(facts.model(), Some("m"));
        assert_eq!(facts.body_sent(), Some(true));
        assert_eq!(crate::RequestFacts::default().body_sent(), None);
    }

    #[tokio::test]
    async fn each_sending_says_whether_it_sent_the_body_whole() {
        use std::future::poll_fn;
        let slot = Arc::new(OperationSlots::default());
        let facts = crate::RequestFacts::default().with_slots(slot.clone());
        let body = Full::new(Bytes::from_static(br#"{"model":"m"}"#));
        let mut first = ReplayBody::recorded(body, 1024).fill_facts(slot);
        let template = first.replay().unwrap();
        assert!(!facts.attempt_sent_whole(), "nothing sent yet");
        // Its announced length sent, as a client reads it: never polled to
        // its end.
        poll_fn(|cx| Pin::new(&mut first).poll_frame(cx))
            .await
            .unwrap()
            .unwrap();
        assert!(facts.attempt_sent_whole());
        // The next sending's handle: nothing of it sent, though the body
        // was, once.
        let mut again = template.replay().unwrap();
        assert!(!facts.attempt_sent_whole());
        assert_eq!(facts.body_sent(), Some(true), "the operation's fact stays");
        poll_fn(|cx| Pin::new(&mut again).poll_frame(cx))
            .await
            .unwrap()
            .unwrap();
        assert!(facts.attempt_sent_whole());

        // A body in chunks, of no announced length: at its end.
        let slot = Arc::new(OperationSlots::default());
        let facts = crate::RequestFacts::default().with_slots(slot.clone());
        let mut body = ReplayBody::recorded(chunked(&["ab", "cd"]), 1024).fill_facts(slot);
        poll_fn(|cx| Pin::new(&mut body).poll_frame(cx))
            .await
            .unwrap()
            .unwrap();
        poll_fn(|cx| Pin::new(&mut body).poll_frame(cx))
            .await
            .unwrap()
            .unwrap();
        assert!(!facts.attempt_sent_whole(), "its end not seen yet");
        assert!(
            poll_fn(|cx| Pin::new(&mut body).poll_frame(cx))
                .await
                .is_none()
        );
        assert!(facts.attempt_sent_whole());
        assert!(!crate::RequestFacts::default().attempt_sent_whole());
    }

    #[tokio::test]
    async fn a_recording_in_chunks_tells_the_facts_at_its_end() {
        let slot = Arc::new(OperationSlots::default());
        let facts = crate::RequestFacts::default().with_slots(slot.clone());
        let body = chunked(&[r#"{"model":"#, r#""m2","str"#, r#"eam":false}"#]);
        let body = ReplayBody::recorded(body, 1024).fill_facts(slot);
        collect(body).await.unwrap();
        assert_eq!(facts.stream_requested(), Some(false));
        assert_eq!(facts.model(), Some("m2"));
    }

    #[tokio::test]
    async fn a_recording_over_its_cap_tells_no_facts() {
        let slot = Arc::new(OperationSlots::default());
        let facts = crate::RequestFacts::default().with_slots(slot.clone());
        let body = chunked(&[r#"{"model":"#, r#""m2","str"#, r#"eam":true}"#]);
        let body = ReplayBody::recorded(body, 12).fill_facts(slot);
        collect(body).await.unwrap();
        assert_eq!(facts.stream_requested(), None);
        assert_eq!(facts.body_sent(), Some(false), "it cannot be sent again");
    }

    /// A body of queued frames with no exact size, like a streamed upload.
    mod frames {
        use super::*;
        use std::collections::VecDeque;

        pub(super) struct Iter(pub(super) VecDeque<Result<Frame<Bytes>, std::io::Error>>);

        impl http_body::Body for Iter {
            type Data = Bytes;
            type Error = std::io::Error;
            fn poll_frame(
                mut self: Pin<&mut Self>,
                _: &mut Context<'_>,
            ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
                Poll::Ready(self.0.pop_front())
            }
        }
    }

    #[tokio::test]
    async fn in_memory_body_replays_identically() {
        let first = ReplayBody::recorded(Full::new(Bytes::from_static(b"{\"model\":\"m\"}")), 1024);
        assert_eq!(first.size_hint().exact(), Some(13));
        let second = first.replay().unwrap();
        assert_eq!(collect(first).await.unwrap(), &b"{\"model\":\"m\"}"[..]);
        assert_eq!(second.size_hint().exact(), Some(13));
        assert_eq!(collect(second).await.unwrap(), &b"{\"model\":\"m\"}"[..]);
    }

    #[tokio::test]
    async fn streaming_body_below_the_cap_replays_byte_for_byte() {
        let first = ReplayBody::recorded(chunked(&["ab", "cd", "ef"]), 16);
        let keep = first.replay().unwrap();
        assert_eq!(collect(first).await.unwrap(), &b"abcdef"[..]);
        assert!(keep.is_replayable());
        let third = keep.replay().unwrap();
        assert_eq!(collect(keep).await.unwrap(), &b"abcdef"[..]);
        assert_eq!(collect(third).await.unwrap(), &b"abcdef"[..]);
    }

    #[tokio::test]
    async fn a_partly_read_body_continues_from_the_original() {
        let mut first = ReplayBody::recorded(chunked(&["ab", "cd", "ef"]), 16);
        let frame = first.frame().await.unwrap().unwrap();
        assert_eq!(frame.into_data().unwrap(), &b"ab"[..]);
        let second = first.replay().unwrap();
        drop(first);
        assert_eq!(collect(second).await.unwrap(), &b"abcdef"[..]);
    }

    #[tokio::test]
    async fn over_the_cap_the_body_is_sent_once_intact_and_not_replayable() {
        let first = ReplayBody::recorded(chunked(&["abcd", "efgh", "ijkl"]), 6);
        let stale = first.replay().unwrap();
        assert_eq!(collect(first).await.unwrap(), &b"abcdefghijkl"[..]);
        assert!(!stale.is_replayable());
        assert!(stale.replay().is_none());
        // A handle made before the cap was hit cannot invent the lost bytes.
        let err = collect(stale).await.unwrap_err();
        assert!(err.is::<ReplayCapExceeded>());
    }

    /// A body that comes whole in one frame is kept past the cap: keeping
    /// it is a reference to the caller's bytes, not a copy. A request of an
    /// SDK (one JSON buffer) over 1 MiB — an image, a long context — is
    /// then retried and failed over like any other.
    #[tokio::test]
    async fn a_body_whole_in_one_frame_is_kept_past_the_cap() {
        let bytes = Bytes::from(vec![b'x'; 4096]);
        let first = ReplayBody::recorded(Full::new(bytes.clone()), 1024);
        let again = first.replay().unwrap();
        assert_eq!(collect(first).await.unwrap(), bytes);
        assert!(again.is_replayable());
        let sent = collect(again).await.unwrap();
        assert_eq!(sent, bytes);
        assert_eq!(sent.as_ptr(), bytes.as_ptr(), "the same bytes, not a copy");
    }

    /// A body that fails mid-upload is never sent again, not even by a
    /// handle made before the failure: the body (like this one) may say it
    /// ended when polled past its error, and the prefix would go out as
    /// the whole request.
    #[tokio::test]
    async fn a_body_that_failed_is_never_sent_again() {
        let mut body = chunked(&[r#"{"model":"#]);
        body.0
            .push_back(Err(std::io::Error::other("the caller's upload failed")));
        let first = ReplayBody::recorded(body, 1024);
        let early = first.replay().unwrap();
        let err = collect(first).await.unwrap_err();
        assert!(err.to_string().contains("upload failed"), "{err}");
        assert!(!early.is_replayable());
        assert!(early.replay().is_none());
        assert!(early.recorded_whole().is_none());
        let err = collect(early).await.unwrap_err();
        assert!(err.is::<RequestBodyFailed>(), "{err}");
    }

    /// A body read ahead that sends more than its size hint said: what
    /// fits is recorded, the frame past the cap is kept and sent by the
    /// first handle, which then reads on; the recording is cut at the cap.
    #[tokio::test]
    async fn a_read_ahead_past_the_cap_keeps_the_frame_for_the_first_handle() {
        let first = ReplayBody::recorded(chunked(&["abcd", "efgh", "ijkl"]), 6);
        let stale = first.replay().unwrap();
        first.read_ahead(8);
        assert!(first.is_replayable(), "nothing was sent past the cap yet");
        assert_eq!(collect(first).await.unwrap(), &b"abcdefghijkl"[..]);
        assert!(!stale.is_replayable());
        let err = collect(stale).await.unwrap_err();
        assert!(err.is::<ReplayCapExceeded>(), "{err}");
    }

    /// A body read ahead whole within the cap is sent from the recording,
    /// and replays.
    #[tokio::test]
    async fn a_read_ahead_within_the_cap_records_the_body() {
        let slot = Arc::new(OperationSlots::default());
        let facts = crate::RequestFacts::default().with_slots(slot.clone());
        let body = chunked(&[r#"{"model":"#, r#""m2"}"#]);
        let first = ReplayBody::recorded(body, 1024).fill_facts(slot);
        first.read_ahead(8);
        assert_eq!(facts.model(), Some("m2"), "known before anything is sent");
        let again = first.replay().unwrap();
        assert_eq!(collect(first).await.unwrap(), &br#"{"model":"m2"}"#[..]);
        assert_eq!(collect(again).await.unwrap(), &br#"{"model":"m2"}"#[..]);
    }

    /// A body that fails as it is read ahead: the first handle to reach
    /// the failure gets the body's own error, later ones
    /// `RequestBodyFailed`, as when the first handle read it itself.
    #[tokio::test]
    async fn a_read_ahead_keeps_the_bodys_error_for_the_first_handle() {
        let mut body = chunked(&[r#"{"model":"#]);
        body.0
            .push_back(Err(std::io::Error::other("the caller's upload failed")));
        let first = ReplayBody::recorded(body, 1024);
        let early = first.replay().unwrap();
        first.read_ahead(8);
        let err = collect(first).await.unwrap_err();
        assert!(err.to_string().contains("upload failed"), "{err}");
        assert!(err.is::<std::io::Error>(), "{err}");
        assert!(!early.is_replayable());
        let err = collect(early).await.unwrap_err();
        assert!(err.is::<RequestBodyFailed>(), "{err}");
    }

    #[tokio::test]
    async fn once_is_never_replayable() {
        let body = ReplayBody::once(Full::new(Bytes::from_static(b"x")));
        assert!(!body.is_replayable());
        assert!(body.replay().is_none());
        assert_eq!(collect(body).await.unwrap(), &b"x"[..]);
    }

    /// A head copy makes requests as `clone_head` does, whether it keeps
    /// the extensions as values or copies the map, and leaves the
    /// original request whole.
    #[test]
    fn a_head_copy_makes_the_requests_clone_head_makes() {
        #[derive(Clone)]
        struct Mark;
        #[derive(Clone, Debug, PartialEq)]
        struct Foreign(u8);
        let deadline = crate::Deadline::after(std::time::Duration::from_secs(5));
        let facts = crate::RequestFacts::default().with_model("m");
        for (foreign, marked) in [(false, false), (false, true), (true, false), (true, true)] {
            let mut request = http::Request::post("http://h/v1/chat/completions")
                .header("x-a", "1")
                .body(0)
                .unwrap();
            let extensions = request.extensions_mut();
            extensions.insert(deadline);
            extensions.insert(crate::RouteId::new("r"));
            extensions.insert(facts.clone());
            extensions.insert(crate::OtherRoutes);
            if foreign {
                extensions.insert(Foreign(7));
            }
            if marked {
                extensions.insert(Mark);
            }
            let copy = HeadCopy::of_unmarked::<Mark>(&mut request, 1);
            assert_eq!(copy.known.is_some(), !foreign, "values kept unless foreign");
            assert_eq!(
                request.extensions().len(),
                4 + usize::from(foreign) + usize::from(marked)
            );
            assert_eq!(*copy.body(), 1);
            assert_eq!(copy.deadline(), Some(deadline));
            let made = copy.request(2);
            assert_eq!(*made.body(), 2);
            assert_eq!(made.uri(), request.uri());
            assert_eq!(made.method(), http::Method::POST);
            assert_eq!(made.headers()["x-a"], "1");
            let got = made.extensions();
            assert_eq!(crate::Deadline::of(&made), Some(deadline));
            assert_eq!(got.get::<crate::RouteId>().unwrap().as_str(), "r");
            assert_eq!(got.get::<crate::RequestFacts>().unwrap().model(), Some("m"));
            assert!(got.get::<crate::OtherRoutes>().is_some());
            assert_eq!(got.get::<Foreign>().cloned(), foreign.then_some(Foreign(7)));
            // The marker is the copier's to put on, unless the whole map
            // was copied.
            assert_eq!(got.get::<Mark>().is_some(), marked && foreign);
        }
    }

    /// A head copy keeps every value of a header named more than once, in
    /// order, and the request's version.
    #[test]
    fn a_head_copy_keeps_repeated_headers_in_order() {
        let mut request = http::Request::post("http://h/v1")
            .version(http::Version::HTTP_2)
            .header("x-m", "1")
            .header("x-a", "a")
            .header("x-m", "2")
            .body(0)
            .unwrap();
        let made = HeadCopy::of(&mut request, 1).request(2);
        assert_eq!(made.version(), http::Version::HTTP_2);
        assert_eq!(made.headers(), request.headers());
        let values: Vec<_> = made.headers().get_all("x-m").iter().collect();
        assert_eq!(values, ["1", "2"]);
        assert_eq!(made.headers().len(), 3);
    }

    #[test]
    fn clone_head_copies_everything_but_the_body() {
        let mut request = http::Request::post("http://h/v1")
            .header("x-a", "1")
            .body(1)
            .unwrap();
        request.extensions_mut().insert(crate::RouteId::new("r"));
        let copy = clone_head(&request, 2);
        assert_eq!(copy.uri(), request.uri());
        assert_eq!(copy.method(), http::Method::POST);
        assert_eq!(copy.headers()["x-a"], "1");
        assert_eq!(
            copy.extensions().get::<crate::RouteId>().unwrap().as_str(),
            "r"
        );
        assert_eq!(*copy.body(), 2);
    }
}
