//! [`ReqwestService`]: `tower::Service<http::Request<B>>` over a
//! `reqwest::Client`.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::Body;
use seawall_core::{BoxError, ShownUri};
use tower_service::Service;

use crate::body::{ResponseBody, SendBody};
use crate::error::Error;

/// A `tower::Service` that sends `http::Request<B>`s with a
/// [`reqwest::Client`] and answers `http::Response<`[`ResponseBody`]`>`.
///
/// The request body is streamed into reqwest as it is read (never
/// collected first); the response body yields frames as reqwest delivers
/// them. Errors are [`Error`]s, shaped for `ClassifyLayer`: put it
/// innermost, as any client in the seawall [stack](https://docs.rs/seawall).
///
/// The client should be one built from [`client_builder`](crate::client_builder)
/// (no redirects, no retries, no timeouts of its own): see the
/// [crate docs](crate#one-deadline-one-ladder) for why. A builder of your
/// own goes through [`ReqwestService::from_builder`], which turns its
/// redirects off; a client that follows them is only partly watched (see
/// [`ReqwestService::new`]).
///
/// ```
/// use bytes::Bytes;
/// use http_body_util::Full;
/// use seawall_reqwest::ReqwestService;
/// use tower::ServiceExt;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
/// let service = ReqwestService::new(seawall_reqwest::client()?);
/// // A URI reqwest cannot send is an error naming it (in its failure,
/// // its source), not a panic.
/// let request = http::Request::post("/v1/chat/completions").body(Full::new(Bytes::new()))?;
/// let error = service.oneshot(request).await.unwrap_err();
/// let failure = seawall_core::Failure::find(&error).expect("bad_request");
/// assert!(failure.to_string().contains("`/v1/chat/completions`"));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct ReqwestService {
    client: reqwest::Client,
}

impl ReqwestService {
    /// A service over `client`.
    ///
    /// If `client` follows redirects (reqwest's default, unless it was
    /// built from [`client_builder`](crate::client_builder)), this service
    /// sees only what reqwest keeps of them: the URL of the final answer
    /// (`reqwest::Response::url`; reqwest 0.13 records no redirect history,
    /// and a built client's policy cannot be read or replaced). So:
    ///
    /// - an answer from **another URL** than the one sent fails as
    ///   [`Error::Redirected`] (`redirected`), as does a redirect the
    ///   client's policy stopped with an error;
    /// - a redirect that **ends at the URL sent** — a `302` or `303` to
    ///   itself, or through a login page and back — **cannot be told
    ///   apart** from a direct answer: a `POST` followed as a `GET`
    ///   without its body, and that `GET`'s answer (a `405`, or a `200`
    ///   that is not the request's) is handed over as the `POST`'s.
    ///
    /// To have every redirect fail as `redirected`, build the client from
    /// [`client_builder`](crate::client_builder), or hand your builder to
    /// [`ReqwestService::from_builder`].
    ///
    /// Installs ring as the process default crypto provider, unless one is
    /// installed ([`install_crypto_provider`](crate::install_crypto_provider)),
    /// so that an async-openai client built after it (`Client::with_config`
    /// builds a `reqwest::Client` of its own) finds one.
    pub fn new(client: reqwest::Client) -> Self {
        crate::install_crypto_provider();
        ReqwestService { client }
    }

    /// A service over the client `builder` builds, with redirects turned
    /// off (`redirect::Policy::none()`, set last, over whatever policy the
    /// builder had): every 3xx reaches the classifier, which fails it as
    /// `redirected`, including one back to the URL sent, which a client
    /// that follows redirects hides ([`ReqwestService::new`]). The rest of
    /// the builder (TLS, proxies, timeouts, retry) is kept as given: see
    /// the [crate docs](crate#one-deadline-one-ladder) for what to leave
    /// off.
    ///
    /// Installs ring as the process default crypto provider first, unless
    /// one is installed ([`install_crypto_provider`](crate::install_crypto_provider)):
    /// a builder using reqwest's own TLS needs one to build.
    ///
    /// # Errors
    ///
    /// What `reqwest::ClientBuilder::build` fails with.
    pub fn from_builder(builder: reqwest::ClientBuilder) -> Result<Self, reqwest::Error> {
        crate::install_crypto_provider();
        let client = builder
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(ReqwestService::new(client))
    }

    /// The client.
    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }
}

impl From<reqwest::Client> for ReqwestService {
    fn from(client: reqwest::Client) -> Self {
        ReqwestService::new(client)
    }
}

impl<B> Service<http::Request<B>> for ReqwestService
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = http::Response<ResponseBody>;
    type Error = Error;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        // reqwest's client has no readiness of its own: its pool waits
        // inside `execute`.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> ResponseFuture {
        let uri = request.uri().clone();
        let mut request = request.map(|body| reqwest::Body::wrap(SendBody::new(body)));
        // A request a server received over HTTP/2 (a proxy relaying it)
        // says nothing of the connection this client makes: the client
        // picks the protocol by ALPN. Kept, an HTTP/2 version on an
        // HTTP/1.1 connection failed every attempt (`UserUnsupportedVersion`)
        // as a transport error; an HTTP/1.0 one sent a body of unknown
        // length as no body at all (hyper: HTTP/1.0 has no chunked body).
        *request.version_mut() = http::Version::HTTP_11;
        match reqwest::Request::try_from(request) {
            Ok(request) => ResponseFuture {
                state: State::Sending {
                    url: request.url().clone(),
                    future: Box::pin(self.client.execute(request)),
                    uri,
                },
            },
            Err(error) => ResponseFuture {
                state: State::Failed {
                    error: Some(Error::from_reqwest(error, &ShownUri(&uri))),
                },
            },
        }
    }
}

type Sending = Pin<Box<dyn Future<Output = Result<reqwest::Response, reqwest::Error>> + Send>>;

pin_project_lite::pin_project! {
    /// The future of [`ReqwestService`]: reqwest's own (boxed: reqwest
    /// does not name its future), mapped.
    pub struct ResponseFuture {
        #[pin]
        state: State,
    }
}

pin_project_lite::pin_project! {
    #[project = StateProj]
    enum State {
        Sending {
            future: Sending,
            uri: http::Uri,
            // What was sent, to tell a redirect a user's own client
            // followed.
            url: reqwest::Url,
        },
        Failed { error: Option<Error> },
    }
}

impl std::fmt::Debug for ResponseFuture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseFuture").finish_non_exhaustive()
    }
}

impl Future for ResponseFuture {
    type Output = Result<http::Response<ResponseBody>, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Sending { future, uri, url } => match future.as_mut().poll(cx) {
                Poll::Pending => Poll::Pending,
                // A client not built by `client_builder` follows
                // redirects: what answered is not what was asked (a 302
                // turns the POST into a GET, its body dropped). Only the
                // final URL is kept by reqwest: a redirect back to the URL
                // sent passes here unseen (`ReqwestService::new` says so).
                Poll::Ready(Ok(response)) if response.url() != url => {
                    Poll::Ready(Err(Error::redirected(response.url())))
                }
                Poll::Ready(Ok(response)) => {
                    let response = http::Response::<reqwest::Body>::from(response);
                    Poll::Ready(Ok(response.map(ResponseBody::new)))
                }
                Poll::Ready(Err(error)) => {
                    Poll::Ready(Err(Error::from_reqwest(error, &ShownUri(uri))))
                }
            },
            StateProj::Failed { error } => Poll::Ready(Err(error
                .take()
                .expect("ResponseFuture polled after completion"))),
        }
    }
}
