//! A proxy that answers the tunnel's `CONNECT` with a 407 wants
//! credentials the client does not send: every attempt fails alike, so
//! the classifier reads it as a permanent `transport`, not one to retry.

use bytes::Bytes;
use http_body_util::Full;
use seawall::classify::ClassifyLayer;
use seawall::core::{Action, Class, Code, Failure};
use seawall_reqwest::ReqwestService;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tower::{Layer, ServiceExt};

#[tokio::test]
async fn a_proxy_that_asks_for_credentials_is_not_retried() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut head = Vec::new();
        let mut byte = [0; 1];
        while !head.ends_with(b"\r\n\r\n") && socket.read(&mut byte).await.unwrap() == 1 {
            head.push(byte[0]);
        }
        assert!(head.starts_with(b"CONNECT "), "a tunnel was asked for");
        socket
            .write_all(b"HTTP/1.1 407 Proxy Authentication Required\r\ncontent-length: 0\r\n\r\n")
            .await
            .unwrap();
        std::future::pending::<()>().await;
    });
    let client = seawall_reqwest::client_builder()
        .proxy(reqwest::Proxy::https(format!("http://{proxy}")).unwrap())
        .build()
        .unwrap();
    let service = ClassifyLayer::openai().layer(ReqwestService::new(client));
    let request = http::Request::post("https://api.example.test/v1/chat/completions")
        .body(Full::new(Bytes::from_static(b"{}")))
        .unwrap();
    let error = service.oneshot(request).await.map(drop).unwrap_err();
    let failure = Failure::find(&*error).expect("classified");
    assert_eq!(
        (failure.class(), failure.code(), failure.action()),
        (Class::Permanent, Code::Transport, Action::Surface),
        "{failure:?}"
    );
}
