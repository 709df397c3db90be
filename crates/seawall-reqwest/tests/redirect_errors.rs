//! A user's own `reqwest::Client` follows redirects, and its policy may
//! stop one: too many, or a `Location` with a scheme it does not follow.
//! The route answered with a redirect either way: `redirected`
//! (permanent, the route's), as a redirect followed or not followed is,
//! not `unknown` and not a `bad_request` blaming the request.

use bytes::Bytes;
use http_body_util::Empty;
use seawall::classify::ClassifyLayer;
use seawall::core::{Class, Code, Failure};
use seawall_reqwest::ReqwestService;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower::{Layer, ServiceExt};

/// A server that answers every request with `answer` on a connection of
/// its own.
async fn server(answer: &'static str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buffer = vec![0; 64 * 1024];
                let _ = socket.read(&mut buffer).await;
                let _ = socket.write_all(answer.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    base
}

/// How a `GET` of `url` through a client following up to 3 redirects,
/// under the classifier, fails.
async fn failure(url: String) -> (Failure, String) {
    let client = seawall_reqwest::client_builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::limited(3))
        .build()
        .unwrap();
    let service = ClassifyLayer::openai().layer(ReqwestService::new(client));
    let request = http::Request::get(url).body(Empty::<Bytes>::new()).unwrap();
    let error = service.oneshot(request).await.map(drop).unwrap_err();
    let failure = Failure::find(&*error).expect("classified").clone();
    // The failure's text, the error's source: the error's own names only
    // what failed.
    let said = failure.to_string();
    (failure, said)
}

/// What the client said of a `GET` answered `answer` every time: checked
/// to be `redirected`, permanent, and to point at the seawall builder.
async fn redirected(answer: &'static str) -> String {
    let base = server(answer).await;
    let (failure, said) = failure(format!("{base}/v1/models")).await;
    assert_eq!(
        (failure.class(), failure.code()),
        (Class::Permanent, Code::Redirected),
        "{failure:?}"
    );
    assert!(said.contains("client_builder"), "{said}");
    said
}

#[tokio::test]
async fn too_many_redirects_are_redirected() {
    let said = redirected(
        "HTTP/1.1 302 Found\r\nlocation: /again?key=secret\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
    )
    .await;
    assert!(said.contains("too many redirects"), "{said}");
    assert!(!said.contains("secret"), "{said}");
}

#[tokio::test]
async fn a_location_of_another_scheme_is_redirected_not_the_requests_fault() {
    let said = redirected(
        "HTTP/1.1 302 Found\r\nlocation: ftp://files.example/v1/models\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
    )
    .await;
    assert!(said.contains("ftp://files.example/v1/models"), "{said}");
}

/// A request of a scheme reqwest does not send is still the request's.
#[tokio::test]
async fn a_request_of_another_scheme_is_still_a_bad_request() {
    let (failure, _) = failure("ftp://files.example/v1/models".to_owned()).await;
    assert_eq!(failure.code(), Code::BadRequest, "{failure:?}");
}

/// A `Location` reqwest cannot parse as a URL (a port out of range or
/// not a number, a host no URL can have) is not followed: tower-http's
/// redirect layer under reqwest resolves it with `url::Url::join` and,
/// failing, hands the 3xx back unfollowed, which the classifier fails as
/// `redirected`, not as the request's fault.
#[tokio::test]
async fn a_location_reqwest_cannot_parse_is_redirected_not_the_requests_fault() {
    for answer in [
        "HTTP/1.1 302 Found\r\nlocation: http://127.0.0.1:99999/v1/models\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
        "HTTP/1.1 302 Found\r\nlocation: http://127.0.0.1:abc/v1/models\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
        "HTTP/1.1 302 Found\r\nlocation: http://256.256.256.256/v1/models\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
    ] {
        let base = server(answer).await;
        let (failure, said) = failure(format!("{base}/v1/models")).await;
        assert_eq!(
            (failure.class(), failure.code(), failure.evidence().status),
            (Class::Permanent, Code::Redirected, Some(302)),
            "{answer}: {failure:?} {said}"
        );
    }
}

/// A server that answers its first connection with `first` and every
/// later one with `then`, counting the connections.
async fn server_then(
    first: &'static str,
    then: &'static str,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let connections = std::sync::Arc::new(AtomicUsize::new(0));
    let counted = connections.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let answer = match counted.fetch_add(1, Ordering::SeqCst) {
                0 => first,
                _ => then,
            };
            tokio::spawn(async move {
                let mut buffer = vec![0; 64 * 1024];
                let _ = socket.read(&mut buffer).await;
                let _ = socket.write_all(answer.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    (base, connections)
}

/// A `POST` redirected back to its own URL: a client that follows
/// redirects sends a `GET` without the body to the URL it sent, so the
/// answer's URL says nothing, and over `ReqwestService::new` that `GET`'s
/// 405 reached the caller as the `POST`'s `bad_request` (undetectable
/// there, as its docs say). A builder handed to `from_builder` has its
/// redirects turned off: the 302 itself is the answer, `redirected`.
#[tokio::test]
async fn a_post_redirected_to_its_own_url_is_redirected() {
    let (base, connections) = server_then(
        "HTTP/1.1 302 Found\r\nlocation: /v1/chat/completions\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
        "HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
    )
    .await;
    let builder = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::limited(3));
    let service = ClassifyLayer::openai().layer(ReqwestService::from_builder(builder).unwrap());
    let request = http::Request::post(format!("{base}/v1/chat/completions"))
        .header("content-type", "application/json")
        .body(http_body_util::Full::new(Bytes::from_static(
            br#"{"model":"gpt-x"}"#,
        )))
        .unwrap();
    let error = service.oneshot(request).await.map(drop).unwrap_err();
    let failure = Failure::find(&*error).expect("classified");
    assert_eq!(
        (failure.class(), failure.code()),
        (Class::Permanent, Code::Redirected),
        "{failure:?}"
    );
    assert_eq!(
        connections.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "the redirect was followed"
    );
}
