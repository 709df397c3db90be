//! A hyper connection whose task went away with the request in flight:
//! what a runtime that shut down does to the connection tasks it ran (a
//! client shared across runtimes, a test's runtime ended). hyper calls it
//! a "user" error, "dispatch task is gone"; the request was not refused,
//! its connection was lost.

use bytes::Bytes;
use http_body_util::Empty;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use seawall_classify::transport_failure;
use seawall_core::{Action, Code};
use tokio::io::AsyncReadExt;

#[tokio::test]
async fn a_connection_task_gone_with_the_request_in_flight_is_transport() {
    let (client, mut server) = tokio::io::duplex(4096);
    let (mut sender, connection) = http1::handshake::<_, Empty<Bytes>>(TokioIo::new(client))
        .await
        .unwrap();
    let request = http::Request::get("http://provider.test/v1/chat/completions")
        .body(Empty::new())
        .unwrap();
    let response = sender.send_request(request);
    // The connection task writes the request, then is dropped waiting for
    // the answer, as a runtime shutting down drops its tasks.
    let mut connection = Box::pin(connection);
    let mut head = [0; 1024];
    tokio::select! {
        ended = &mut connection => panic!("the connection ended: {ended:?}"),
        read = server.read(&mut head) => assert!(read.unwrap() > 0, "the request was written"),
    }
    drop(connection);

    let error = response.await.unwrap_err();
    assert!(error.is_user(), "{error:?}");
    assert_eq!(error.to_string(), "dispatch task is gone");

    let failure = transport_failure(&error).unwrap();
    assert_eq!(
        (failure.code(), failure.action()),
        (Code::Transport, Action::Retry),
        "{failure:?}"
    );
}
