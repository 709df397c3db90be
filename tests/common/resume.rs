//! The resume suites' incident (incident 3): a chat stream reset after 400
//! of its 600 tokens, through the assembled stack with `Stack::resume`
//! over a real chaos server, read to its end as the caller reads it.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use seawall::classify::ClassifyLayer;
use seawall::resume::{ResumeLayer, Resumed};
use seawall::stack::Stack;
use seawall_chaos::ChaosHandle;
use tower::ServiceExt;

/// What the caller of [`reset_stream_resumed`] read, and the server it
/// read from (its journal: what reached the provider).
pub(crate) struct Incident {
    /// The text of the streamed answer's deltas.
    pub(crate) text: String,
    /// The resume layer's record of the answer.
    pub(crate) resumed: Resumed,
    /// The chaos server that answered.
    pub(crate) chaos: ChaosHandle,
}

/// Runs the incident: the first call is reset after 400 of 600 tokens,
/// the next answers all 600.
pub(crate) async fn reset_stream_resumed() -> Incident {
    let chaos = super::chaos_scripted(&["reset_after;tokens=400;total=600", "ok;tokens=600"]).await;
    let service = Stack::interactive()
        .resume(ResumeLayer::new())
        .build(&ClassifyLayer::openai(), super::client());
    let request = http::Request::post(format!("{}/v1/chat/completions", chaos.base_url()))
        .body(Full::new(Bytes::from_static(
            br#"{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"Count."}]}"#,
        )))
        .unwrap();
    let response = service.oneshot(request).await.unwrap();
    let resumed = response.extensions().get::<Resumed>().cloned().unwrap();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let text = String::from_utf8_lossy(&body)
        .split("\n\n")
        .filter_map(|event| event.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str::<serde_json::Value>(data).ok())
        .filter_map(|chunk| {
            chunk["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    Incident {
        text,
        resumed,
        chaos,
    }
}
