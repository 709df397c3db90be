//! Canned inner services and instrumented bodies for the layer tests.
#![allow(dead_code)] // each test binary uses its own part of this module

use std::collections::VecDeque;
use std::convert::Infallible;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body::{Body, Frame, SizeHint};
use seawall_classify::{ClassifiedBody, Classifier, ClassifyLayer};
use seawall_core::{Action, Class, Code, Failure};
use tower::{BoxError, Layer, ServiceExt, service_fn};

/// Sends one request through `layer` to an inner service that answers
/// `response`.
pub(crate) async fn through<C, B>(
    layer: &ClassifyLayer<C>,
    response: Response<B>,
) -> Result<Response<ClassifiedBody<B>>, BoxError>
where
    C: Classifier + Clone,
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    let mut response = Some(response);
    let inner = service_fn(move |_: Request<()>| {
        let response = response.take().expect("one call");
        async move { Ok::<_, Infallible>(response) }
    });
    layer.layer(inner).oneshot(Request::new(())).await
}

/// A response with a status, headers and a body given in chunks.
pub(crate) fn response(status: u16, headers: &[(&str, &str)], body: &str) -> Response<Chunks> {
    let mut builder = Response::builder().status(status);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder.body(Chunks::new([body.to_owned()])).unwrap()
}

/// The failure in an error, or a panic naming the error.
pub(crate) fn found(error: &BoxError) -> &Failure {
    Failure::find(&**error).unwrap_or_else(|| panic!("not a failure: {error}"))
}

/// One expected classification.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Expect {
    pub class: Class,
    pub code: Code,
    pub action: Action,
    pub retry_after: Option<Duration>,
}

pub(crate) const fn expect(class: Class, code: Code, action: Action) -> Expect {
    Expect {
        class,
        code,
        action,
        retry_after: None,
    }
}

impl Expect {
    pub(crate) const fn after(mut self, after: Duration) -> Self {
        self.retry_after = Some(after);
        self
    }

    pub(crate) fn check(&self, name: &str, failure: &Failure) {
        let got = (
            failure.class(),
            failure.code(),
            failure.action(),
            failure.retry_after(),
        );
        let want = (self.class, self.code, self.action, self.retry_after);
        assert_eq!(got, want, "{name}: {failure}");
    }
}

/// A body made of given chunks (or errors), counting what was pulled. After
/// the last chunk it ends, or stays pending forever when `then_pending`.
pub(crate) struct Chunks {
    items: VecDeque<Result<Bytes, io::Error>>,
    then_pending: bool,
    pub pulled: Arc<AtomicU64>,
    pub polls: Arc<AtomicU64>,
}

impl Chunks {
    pub(crate) fn new<I, T>(chunks: I) -> Self
    where
        I: IntoIterator<Item = T>,
        T: Into<Bytes>,
    {
        Chunks {
            items: chunks.into_iter().map(|c| Ok(c.into())).collect(),
            then_pending: false,
            pulled: Arc::default(),
            polls: Arc::default(),
        }
    }

    pub(crate) fn then_error(mut self, kind: io::ErrorKind) -> Self {
        self.items.push_back(Err(io::Error::from(kind)));
        self
    }

    pub(crate) fn then_pending(mut self) -> Self {
        self.then_pending = true;
        self
    }
}

impl Body for Chunks {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        self.polls.fetch_add(1, Ordering::SeqCst);
        match self.items.pop_front() {
            Some(Ok(data)) => {
                self.pulled.fetch_add(data.len() as u64, Ordering::SeqCst);
                Poll::Ready(Some(Ok(Frame::data(data))))
            }
            Some(Err(error)) => Poll::Ready(Some(Err(error))),
            None if self.then_pending => Poll::Pending,
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.items.is_empty() && !self.then_pending
    }

    fn size_hint(&self) -> SizeHint {
        let known: u64 = self
            .items
            .iter()
            .map(|c| c.as_ref().map_or(0, |b| b.len() as u64))
            .sum();
        if self.then_pending {
            let mut hint = SizeHint::new();
            hint.set_lower(known);
            hint
        } else {
            SizeHint::with_exact(known)
        }
    }
}

/// An endless-looking body: `count` copies of one chunk, counting what was
/// pulled. Holds one chunk in memory however long it is.
pub(crate) struct Repeat {
    chunk: Bytes,
    remaining: u64,
    pub pulled: Arc<AtomicU64>,
}

impl Repeat {
    pub(crate) fn new(chunk: Bytes, count: u64) -> Self {
        Repeat {
            chunk,
            remaining: count,
            pulled: Arc::default(),
        }
    }
}

impl Body for Repeat {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.remaining == 0 {
            return Poll::Ready(None);
        }
        self.remaining -= 1;
        self.pulled
            .fetch_add(self.chunk.len() as u64, Ordering::SeqCst);
        Poll::Ready(Some(Ok(Frame::data(self.chunk.clone()))))
    }
}

/// Reads a whole body into bytes.
pub(crate) async fn collect<B>(body: B) -> Bytes
where
    B: Body<Data = Bytes>,
    B::Error: std::fmt::Debug,
{
    use http_body_util::BodyExt;
    body.collect().await.unwrap().to_bytes()
}
