//! Shared harness: a gateway over loopback in front of seawall-chaos
//! servers, and a hyper-util client.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use seawall_chaos::ChaosHandle;
use seawall_gateway::{Config, Gateway, RouteConfig, Wire};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;
pub(crate) type ClientBody = BoxBody<Bytes, BoxError>;
pub(crate) type HttpClient = Client<HttpConnector, ClientBody>;

/// The gateway token every test client presents.
pub(crate) const TOKEN: &str = "test-gateway-token-0123456789";

#[allow(unused_imports)] // each test binary uses its own part
pub(crate) use seawall_test::canned::{
    ANTHROPIC_UNARY_REQUEST as ANTHROPIC_UNARY, OPENAI_STREAM_REQUEST as OPENAI_STREAM,
    OPENAI_UNARY_REQUEST as OPENAI_UNARY,
};
pub(crate) const ANTHROPIC_STREAM: &str = r#"{"model":"claude-x","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}"#;

pub(crate) fn client() -> HttpClient {
    Client::builder(TokioExecutor::new()).build_http()
}

pub(crate) fn full(body: impl Into<Bytes>) -> ClientBody {
    Full::new(body.into()).map_err(|e| match e {}).boxed()
}

/// A config whose routes (in order: primary, fallbacks) each carry a key
/// (`KEY_<NAME>`), so the gateway needs [`TOKEN`]; short stream-guard
/// bounds so a silent route fails over in a fraction of a second.
pub(crate) fn config(wire: Wire, routes: &[(&str, &ChaosHandle)]) -> Config {
    let routes: Vec<_> = routes
        .iter()
        .map(|(name, chaos)| (*name, chaos.base_url()))
        .collect();
    config_at(wire, &routes)
}

/// A config like [`config`] over base URLs.
pub(crate) fn config_at(wire: Wire, routes: &[(&str, String)]) -> Config {
    let mut config = Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        token_env: Some("GATEWAY_TOKEN".into()),
        ..Config::default()
    };
    config.policy.first_byte_timeout = Some(Duration::from_millis(300));
    config.policy.first_content_timeout = Some(Duration::from_secs(2));
    config.policy.deadline = Some(Duration::from_secs(10));
    for (name, base_url) in routes {
        config.routes.push(RouteConfig {
            name: (*name).into(),
            wire,
            base_url: base_url.clone(),
            key_env: Some(format!("KEY_{}", name.to_uppercase())),
            model: None,
            preset: None,
        });
    }
    config.models.insert(
        "*".into(),
        routes.iter().map(|(name, _)| (*name).to_owned()).collect(),
    );
    config
}

pub(crate) fn env(name: &str) -> Option<String> {
    match name {
        "GATEWAY_TOKEN" => Some(TOKEN.into()),
        other => other
            .strip_prefix("KEY_")
            .map(|route| format!("sk-route-{}-secret", route.to_lowercase())),
    }
}

/// A gateway serving on an ephemeral loopback port.
pub(crate) struct Running {
    pub gateway: Gateway,
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    pub task: Option<JoinHandle<std::io::Result<()>>>,
}

impl Running {
    pub(crate) async fn start(config: Config) -> Running {
        let gateway = Gateway::with_env(config, env).expect("a valid gateway");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(gateway.clone().serve(listener, async move {
            let _ = stopped.await;
        }));
        Running {
            gateway,
            addr,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// Waits up to `limit` for the gateway to have counted `n` cancelled
    /// requests (a client's going away is seen by the connection's task,
    /// a moment after the client's side of the test is done).
    pub(crate) async fn until_cancelled(&self, n: u64, limit: Duration) {
        let started = tokio::time::Instant::now();
        while self.gateway.stats().cancelled < n && started.elapsed() < limit {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Signals shutdown; the serve task is in `task`.
    pub(crate) fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// A POST with the gateway token and the given extra headers.
pub(crate) fn post(
    url: &str,
    body: &'static str,
    headers: &[(&str, &str)],
) -> http::Request<ClientBody> {
    let mut builder = http::Request::post(url)
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {TOKEN}"));
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder.body(full(body)).unwrap()
}

/// A direct POST to the chaos server (no token).
pub(crate) fn direct(
    url: &str,
    body: &'static str,
    headers: &[(&str, &str)],
) -> http::Request<ClientBody> {
    let mut builder = http::Request::post(url).header("content-type", "application/json");
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder.body(full(body)).unwrap()
}

/// Status, headers and the whole body.
pub(crate) async fn send(
    client: &HttpClient,
    request: http::Request<ClientBody>,
) -> (http::StatusCode, http::HeaderMap, Bytes) {
    let response = tokio::time::timeout(Duration::from_secs(20), client.request(request))
        .await
        .expect("an answer in time")
        .expect("a response");
    let (parts, body) = response.into_parts();
    let body = tokio::time::timeout(Duration::from_secs(20), body.collect())
        .await
        .expect("the body in time")
        .expect("a whole body")
        .to_bytes();
    (parts.status, parts.headers, body)
}

pub(crate) fn header<'a>(headers: &'a http::HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .map(|v| v.to_str().unwrap())
        .unwrap_or_else(|| panic!("no {name} header in {headers:?}"))
}

/// The `data:` payloads of an SSE body, in order, as a client dispatches
/// them: each event's data lines joined, any line end (CRLF, LF or CR),
/// the space after the colon optional.
pub(crate) fn data_lines(body: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(body)
        .replace("\r\n", "\n")
        .replace('\r', "\n");
    text.split("\n\n")
        .map(|event| {
            event
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(|data| data.strip_prefix(' ').unwrap_or(data))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .filter(|data| !data.is_empty())
        .collect()
}

/// The path of `wire`'s first endpoint (chat completions, messages).
pub(crate) fn path(wire: Wire) -> &'static str {
    wire.endpoints()[0].path()
}

pub(crate) fn chaos_url(chaos: &ChaosHandle, wire: Wire) -> String {
    format!("{}{}", chaos.base_url(), path(wire))
}

/// One step of a [`raw_upstream`]'s answer.
pub(crate) enum Step {
    /// These bytes, in one write.
    Write(Vec<u8>),
    /// A pause, in milliseconds.
    Pause(u64),
}

/// An upstream that answers every request (one per connection) with
/// `steps`, then resets the connection: for answers no correct server
/// sends. Returns its base URL.
pub(crate) async fn raw_upstream(steps: Vec<Step>) -> String {
    use tokio::io::AsyncWriteExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let steps = std::sync::Arc::new(steps);
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let steps = std::sync::Arc::clone(&steps);
            tokio::spawn(async move {
                let Ok(Some(_)) = seawall_test::raw::read_request(&mut stream).await else {
                    return;
                };
                for step in steps.iter() {
                    match step {
                        Step::Write(bytes) => {
                            if stream.write_all(bytes).await.is_err() {
                                return;
                            }
                        }
                        Step::Pause(ms) => tokio::time::sleep(Duration::from_millis(*ms)).await,
                    }
                }
                // A reset, not a clean close.
                let _ = stream.set_zero_linger();
            });
        }
    });
    format!("http://{addr}")
}

/// One chunk of a chunked body.
pub(crate) fn chunk(text: &str) -> Step {
    Step::Write(format!("{:x}\r\n{text}\r\n", text.len()).into_bytes())
}

/// A config with one route, `main`, at `base_url`.
pub(crate) fn config_over(wire: Wire, base_url: &str) -> Config {
    config_at(wire, &[("main", base_url.to_owned())])
}

/// What a `tracing_subscriber::fmt` writer wrote: the log lines, for the
/// tests of the gateway's log line.
#[derive(Clone, Default)]
pub(crate) struct Captured(pub(crate) std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl Captured {
    /// A capture, behind the process's global `fmt` subscriber at `INFO`,
    /// as the `seawall` binary writes its log: once per test binary.
    pub(crate) fn install() -> Captured {
        let log = Captured::default();
        let writer = log.clone();
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::INFO)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .init();
        log
    }
}

impl std::io::Write for Captured {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
