//! async-openai's documented setup in a process where no rustls crypto
//! provider is installed yet.
//!
//! The workspace builds reqwest with `rustls-no-provider`, and
//! async-openai's `Client::with_config` builds a `reqwest::Client` with
//! reqwest's own TLS, which panics without a process default provider.
//! Each test runs its body in a fresh process of its own (this binary run
//! again for that one test), since the first install in a process would
//! hide the rest: the body first checks that no provider is installed,
//! then builds in the order under test and makes a call to a seawall-chaos
//! server on loopback.

use std::process::Command;

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::types::chat::{
    ChatCompletionRequestUserMessage, CreateChatCompletionRequestArgs,
};
use rustls::crypto::CryptoProvider;
use seawall::classify::ClassifyLayer;
use seawall::stack::Stack;
use seawall_chaos::{ChaosHandle, ChaosServer};
use seawall_reqwest::{OpenAiService, ReqwestService};

/// Set in the child process that runs a test's body.
const CHILD: &str = "SEAWALL_REQWEST_FRESH_PROCESS_CHILD";

/// Runs `body` in a fresh process: this test binary, run again for the
/// test `name` alone.
fn in_fresh_process(name: &str, body: impl AsyncFnOnce()) {
    if std::env::var_os(CHILD).is_some() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async {
            assert!(
                CryptoProvider::get_default().is_none(),
                "the process starts with no default crypto provider"
            );
            body().await;
        });
        return;
    }
    let output = Command::new(std::env::current_exe().expect("this test binary"))
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .output()
        .expect("the test binary runs again");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "`{name}` in a fresh process: {}\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        output.status
    );
}

async fn chaos() -> ChaosHandle {
    ChaosServer::builder()
        .start()
        .await
        .expect("chaos starts on loopback")
}

fn config(chaos: &ChaosHandle) -> OpenAIConfig {
    OpenAIConfig::new()
        .with_api_base(format!("{}/v1", chaos.base_url()))
        .with_api_key("test-key")
}

/// One chat completion through `client`: its text.
async fn answer(client: &Client<OpenAIConfig>) -> String {
    let request = CreateChatCompletionRequestArgs::default()
        .model("gpt-x")
        .messages([ChatCompletionRequestUserMessage::from("Say eight words.").into()])
        .build()
        .expect("a request");
    let (result, outcome) = seawall_reqwest::scope(client.chat().create(request)).await;
    let answer = result.expect("the call succeeds");
    assert!(outcome.is_ok(), "{outcome:?}");
    answer.choices[0]
        .message
        .content
        .clone()
        .expect("an answer")
}

/// The chaos server's answer: `w1 … w8`.
fn eight_words() -> String {
    (1..=8)
        .map(|i| format!("w{i}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A service over a `reqwest::Client` that sends async-openai's requests
/// with no seawall constructor involved (its TLS preconfigured over ring,
/// so it needs no default provider itself).
fn plain_service() -> impl tower::Service<
    http::Request<reqwest::Body>,
    Response = http::Response<reqwest::Body>,
    Error = reqwest::Error,
    Future = impl Send + 'static,
> + Clone
+ Send
+ Sync
+ 'static {
    let http = reqwest::Client::builder()
        .no_proxy()
        .tls_backend_preconfigured(seawall_reqwest::tls_config().expect("a TLS config"))
        .build()
        .expect("a reqwest client");
    tower::service_fn(move |request: http::Request<reqwest::Body>| {
        let http = http.clone();
        async move {
            let request = reqwest::Request::try_from(request)?;
            Ok(http::Response::from(http.execute(request).await?))
        }
    })
}

/// The crate docs' order: the stack over `ReqwestService::new(client)`
/// first, then `Client::with_config(..).with_http_service(..)` — whose
/// receiver `with_config` runs before the argument `OpenAiService::new`.
#[test]
fn the_stack_first_then_with_config() {
    in_fresh_process("the_stack_first_then_with_config", async || {
        let chaos = chaos().await;
        let http = seawall_reqwest::client_builder()
            .no_proxy()
            .build()
            .expect("a reqwest client");
        let stack = Stack::interactive().build(&ClassifyLayer::openai(), ReqwestService::new(http));
        let client =
            Client::with_config(config(&chaos)).with_http_service(OpenAiService::new(stack));
        assert_eq!(answer(&client).await, eight_words());
    });
}

/// The adapter built first, over a stack of no seawall constructor, then
/// `Client::with_config`.
#[test]
fn the_adapter_first_then_with_config() {
    in_fresh_process("the_adapter_first_then_with_config", async || {
        let chaos = chaos().await;
        let service = OpenAiService::new(plain_service());
        let client = Client::with_config(config(&chaos)).with_http_service(service);
        assert_eq!(answer(&client).await, eight_words());
    });
}

/// `openai_client` over a stack of no seawall constructor.
#[test]
fn openai_client_needs_nothing_installed() {
    in_fresh_process("openai_client_needs_nothing_installed", async || {
        let chaos = chaos().await;
        let client = seawall_reqwest::openai_client(config(&chaos), plain_service());
        assert_eq!(answer(&client).await, eight_words());
    });
}
