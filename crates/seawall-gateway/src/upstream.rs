//! The upstream side: one seawall stack per model, built once, over one
//! hyper-util client; breaker and retry budget shared by every model.

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use seawall::breaker::BreakerLayer;
use seawall::classify::ClassifyLayer;
use seawall::core::recording::ReplayBody;
use seawall::core::{BoxError, CallerCredentials, RequestFacts, RouteId};
use seawall::fallback::{FallbackLayer, FallbackRoute};
use seawall::retry::{Budget, RetryPolicy};
use seawall::stack::Stack;
use seawall::stream::StreamGuardLayer;
use seawall_internal::headers::{ACCOUNT_HEADERS, CREDENTIAL_HEADERS};
use thread_local::ThreadLocal;
use tower::ServiceBuilder;
use tower::util::BoxCloneSyncService;

use crate::config::{Endpoint, Preset, RouteConfig, StackPolicy, Wire};
use crate::secret::Secret;

/// The body the gateway hands the client: the provider's bytes as they came.
pub(crate) type UpstreamBody = UnsyncBoxBody<Bytes, BoxError>;

/// One model's whole stack, cloned per request.
pub(crate) type Upstream =
    BoxCloneSyncService<http::Request<Full<Bytes>>, http::Response<UpstreamBody>, BoxError>;

type Https = HttpsConnector<HttpConnector>;
type HttpClient = PerThread<ReplayBody<Full<Bytes>>>;
/// The primary's client under a fallback: the fallback layer records the
/// body, then the ladder records that.
type NestedClient = PerThread<ReplayBody<ReplayBody<Full<Bytes>>>>;

/// hyper-util's client with a connection pool per single-threaded runtime.
///
/// The client drives each upstream connection on a task of the runtime
/// that opened it, and hands a response body over frame by frame from that
/// task. When the gateway serves on a thread per core
/// (`Gateway::serve_per_thread`, a current-thread runtime each), one
/// shared pool would let a request on one thread take a connection another
/// thread opened and cross threads for every frame; so a call from a
/// current-thread runtime uses that thread's own pool. A call from
/// anywhere else (tokio's multi-threaded runtime, where tasks move between
/// workers anyway) uses the one shared pool, as hyper-util intends.
pub(crate) struct PerThread<B: Send + 'static> {
    shared: Client<Https, B>,
    pools: Arc<ThreadLocal<Client<Https, B>>>,
    connector: Https,
}

impl<B> PerThread<B>
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
{
    fn new(connector: Https) -> PerThread<B> {
        PerThread {
            shared: Client::builder(TokioExecutor::new()).build(connector.clone()),
            pools: Arc::new(ThreadLocal::new()),
            connector,
        }
    }
}

impl<B: Send + 'static> Clone for PerThread<B> {
    fn clone(&self) -> Self {
        PerThread {
            shared: self.shared.clone(),
            pools: Arc::clone(&self.pools),
            connector: self.connector.clone(),
        }
    }
}

impl<B> tower::Service<http::Request<B>> for PerThread<B>
where
    B: http_body::Body + Send + Unpin + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    type Response = http::Response<hyper::body::Incoming>;
    type Error = hyper_util::client::legacy::Error;
    type Future = hyper_util::client::legacy::ResponseFuture;

    fn poll_ready(
        &mut self,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        // hyper-util's client is always ready: it waits for a connection
        // inside the call.
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let flavor = tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor());
        if !matches!(flavor, Ok(tokio::runtime::RuntimeFlavor::CurrentThread)) {
            return self.shared.request(request);
        }
        let connector = &self.connector;
        self.pools
            .get_or(|| Client::builder(TokioExecutor::new()).build(connector.clone()))
            .request(request)
    }
}

/// The headers a client may send that the gateway passes upstream. Anything
/// else (cookies, proxies' headers, `accept-encoding`: the bytes go through
/// the stream guard unmodified, so no compression) stays here. No
/// credential header ([`CREDENTIAL_HEADERS`]) is among them: the client's
/// key travels apart, as [`ClientCall::credential`], to keyless routes.
/// `x-chaos-*` lets a test pick a fault on a seawall-chaos upstream.
/// `via` is the list of intermediaries the request came through, kept
/// for the gateway to append itself to ([`VIA`]).
const FORWARDED: &[&str] = &[
    "via",
    "content-type",
    "accept",
    "user-agent",
    "anthropic-version",
    "anthropic-beta",
    "openai-organization",
    "openai-project",
    "openai-beta",
    "idempotency-key",
    "x-chaos-fault",
    "x-chaos-request-id",
];

/// The gateway's entry in an upstream request's `Via`: an HTTP-to-HTTP
/// gateway names itself in each request it forwards (RFC 9110, 7.6.3),
/// after the client's own list. A pseudonym, not a host name; two chained
/// gateways both write it, so it cannot tell a loop and refuses none.
const VIA: HeaderValue = HeaderValue::from_static("1.1 seawall");

/// What the client sent, kept so each route builds its own request from it.
#[derive(Debug)]
pub(crate) struct ClientCall {
    /// The endpoint it called: each route is called at the same one.
    pub endpoint: Endpoint,
    /// The request body, as received.
    pub body: Bytes,
    /// Where the model's name stands in `body`, quotes right around it
    /// (escaped or not; `None` when it cannot be found for sure), for a
    /// route that renames it.
    pub model_span: Option<std::ops::Range<usize>>,
    /// Whether the body names a model at all: a route renames only a
    /// model the client named. A Responses call may name none and leave
    /// it to its stored prompt (`prompt.id`), served through `*` as sent.
    pub names_model: bool,
    /// The model the client named, as the gateway read it.
    pub model: Option<Arc<str>>,
    /// The query the client's URL carried (anthropic-python's beta
    /// client posts to `/v1/messages?beta=true`), passed on as sent.
    pub query: Option<String>,
    /// The forwardable headers.
    pub headers: HeaderMap,
    /// The client's own credential header, for routes without a key.
    pub credential: Option<(HeaderName, HeaderValue)>,
}

impl ClientCall {
    /// The client's body with `model` in place of the model it named:
    /// the name's string replaced, every other byte as sent. A body whose
    /// name has no place is refused, never read into values to set one:
    /// a `serde_json::Value` tree costs 16 to 32 times the body's bytes
    /// (an array of `0,` padded to the cap: each a 32-byte value), per
    /// route tried. (The gateway finds the place of every top-level string
    /// name, its key escaped or not: `RequestMembers::model_token`.)
    fn body_naming(&self, model: &str) -> Result<Bytes, BoxError> {
        let name = serde_json::to_string(model)?;
        let Some(span) = &self.model_span else {
            return Err("the request body's model name could not be found to rename it".into());
        };
        let (before, after) = (&self.body[..span.start - 1], &self.body[span.end + 1..]);
        let mut body = Vec::with_capacity(before.len() + name.len() + after.len());
        body.extend_from_slice(before);
        body.extend_from_slice(name.as_bytes());
        body.extend_from_slice(after);
        Ok(Bytes::from(body))
    }

    /// Picks the forwardable headers out of the client's: never one its
    /// `Connection` names, which is for this hop alone (RFC 9110, 7.6.1).
    pub(crate) fn forwarded_headers(from: &HeaderMap) -> HeaderMap {
        let mut headers = HeaderMap::new();
        let hop = connection_options(from);
        for name in FORWARDED {
            if hop.iter().any(|option| option == name) {
                continue;
            }
            for value in from.get_all(*name) {
                headers.append(HeaderName::from_static(name), value.clone());
            }
        }
        headers
    }
}

/// The headers `headers`' `Connection` names: options for this hop alone,
/// which an intermediary removes (RFC 9110, 7.6.1).
pub(crate) fn connection_options(headers: &HeaderMap) -> Vec<HeaderName> {
    headers
        .get_all(http::header::CONNECTION)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .filter_map(|option| HeaderName::try_from(option.trim()).ok())
        .collect()
}

/// One upstream route, resolved: its key read, its base normalised.
#[derive(Debug)]
pub(crate) struct Target {
    pub name: String,
    pub wire: Wire,
    /// The route's [`RouteConfig::base`]: its base URL without a trailing
    /// `/` or `/v1`.
    pub base: String,
    pub key: Option<Secret>,
    pub rename: Option<String>,
    pub preset: Option<Preset>,
}

impl Target {
    pub(crate) fn new(route: &RouteConfig, key: Option<Secret>) -> Target {
        Target {
            name: route.name.clone(),
            wire: route.wire,
            // The trimmed base as configured, not the normalised one
            // `validate` compares keyless routes by (scheme and host
            // lowercased, a default port dropped): that one says where a
            // key goes; the URL sent keeps the bytes the operator wrote.
            base: route.base().to_owned(),
            key,
            rename: route.model.clone(),
            preset: route.preset,
        }
    }

    /// The model this route's request names: the route's own name for it
    /// where it renames the client's, else the client's.
    pub(crate) fn upstream_model(&self, call: &ClientCall) -> Option<Arc<str>> {
        match &self.rename {
            Some(model) if call.names_model => Some(Arc::from(model.as_str())),
            _ => call.model.clone(),
        }
    }

    /// The request's facts, naming the model this route is asked for
    /// before its body is sent: the breaker then holds back a call for a
    /// model cooling on its own (a limit the provider keeps per model) on
    /// its first attempt too, and its refusal names the model. Read from
    /// the body only once sent, a first attempt would be admitted and
    /// meet the model's limit again upstream.
    pub(crate) fn told_model(&self, call: &ClientCall, facts: RequestFacts) -> RequestFacts {
        match self.upstream_model(call) {
            Some(model) => facts.with_model(model),
            None => facts,
        }
    }

    /// This route's request for the client's call.
    pub(crate) fn request(
        &self,
        call: &ClientCall,
    ) -> Result<http::Request<Full<Bytes>>, BoxError> {
        let body = match &self.rename {
            Some(model) if call.names_model => call.body_naming(model)?,
            _ => call.body.clone(),
        };
        let path = call.endpoint.path();
        let uri = match &call.query {
            Some(query) => format!("{}{path}?{query}", self.base),
            None => format!("{}{path}", self.base),
        };
        let mut request = http::Request::post(uri).body(Full::new(body))?;
        let headers = request.headers_mut();
        headers.extend(call.headers.clone());
        // A field line of its own after the client's: the same list.
        headers.append(http::header::VIA, VIA);
        if self.key.is_some() {
            // They name the account behind the client's own key, not the
            // route's.
            for name in &ACCOUNT_HEADERS {
                headers.remove(name);
            }
        }
        if !headers.contains_key(http::header::CONTENT_TYPE) {
            headers.insert(
                http::header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
        }
        if self.wire == Wire::Anthropic && !headers.contains_key("anthropic-version") {
            headers.insert("anthropic-version", HeaderValue::from_static("2023-06-01"));
        }
        match (&self.key, &call.credential) {
            (Some(key), _) => {
                // The one header this wire's provider reads its key from,
                // not the list of headers that may carry a credential: no
                // client credential is among `call.headers` to remove.
                let (name, value) = match self.wire {
                    Wire::OpenAi => (
                        http::header::AUTHORIZATION,
                        format!("Bearer {}", key.expose()),
                    ),
                    Wire::Anthropic => (
                        HeaderName::from_static("x-api-key"),
                        key.expose().to_owned(),
                    ),
                };
                let mut value = HeaderValue::from_str(&value)
                    .map_err(|_| format!("route `{}`: the key is not a valid header", self.name))?;
                value.set_sensitive(true);
                headers.insert(name, value);
            }
            (None, Some((name, value))) => {
                headers.insert(name.clone(), value.clone());
            }
            (None, None) => {}
        }
        if self.key.is_none() {
            // Each client spends its own account here (or sends none): its
            // rejected key or spent quota must not cool the route for
            // others. Every call says so: the breaker reads it from the
            // first call to the route.
            request.extensions_mut().insert(CallerCredentials);
        }
        request
            .extensions_mut()
            .insert(RouteId::new(self.name.as_str()));
        Ok(request)
    }
}

/// The HTTPS (rustls, ring) or plain HTTP connector.
fn connector() -> Https {
    let builder = hyper_rustls::HttpsConnectorBuilder::new();
    let builder = match builder.with_native_roots() {
        Ok(native) => native,
        Err(_) => hyper_rustls::HttpsConnectorBuilder::new().with_webpki_roots(),
    };
    builder.https_or_http().enable_http1().build()
}

/// The policy state every model shares.
#[derive(Clone)]
pub(crate) struct Shared {
    client: HttpClient,
    nested: NestedClient,
    pub breaker: BreakerLayer,
    pub budget: Budget,
    pub policy: StackPolicy,
    pub max_body_bytes: usize,
}

impl Shared {
    /// The clients (one connection pool per body type) and the shared
    /// breaker and budget.
    pub(crate) fn new(policy: StackPolicy, max_body_bytes: usize) -> Shared {
        let connector = connector();
        Shared {
            client: PerThread::new(connector.clone()),
            nested: PerThread::new(connector),
            breaker: BreakerLayer::new(),
            // The interactive preset's budget: retries up to 20 % of calls,
            // at least 10 a second, for the whole gateway.
            budget: Budget::ratio(0.2, 10, std::time::Duration::from_secs(10)),
            policy,
            max_body_bytes,
        }
    }

    /// The stack for one route's preset and the gateway's overrides.
    fn stack(&self, preset: Option<Preset>) -> Stack {
        let preset = preset.unwrap_or(self.policy.preset);
        let (stack, retry, guard) = match preset {
            Preset::Interactive => (
                Stack::interactive(),
                RetryPolicy::interactive(),
                StreamGuardLayer::interactive(),
            ),
            Preset::Batch => (
                Stack::batch(),
                RetryPolicy::batch(),
                StreamGuardLayer::interactive(),
            ),
            Preset::Reasoning => (
                Stack::reasoning(),
                RetryPolicy::interactive().max_attempts(2),
                StreamGuardLayer::reasoning(),
            ),
        };
        let mut stack = stack;
        // The client's SDK reads the provider's own refusal as an answer
        // (OpenAI's `message.refusal`, Anthropic's `stop_reason`): it
        // passes as sent, never retried.
        let mut guard = guard.deliver_policy_outcomes(true);
        let policy = &self.policy;
        if let Some(deadline) = policy.deadline {
            stack = stack.total_deadline(deadline);
        }
        if let Some(attempt) = policy.attempt_timeout {
            stack = stack.attempt_timeout(attempt);
        }
        if let Some(bound) = policy.first_byte_timeout {
            guard = guard.first_byte_timeout(bound);
        }
        if let Some(bound) = policy.first_content_timeout {
            guard = guard.first_content_timeout(bound);
        }
        if let Some(bound) = policy.idle_timeout {
            guard = guard.idle_timeout(bound);
        }
        stack
            .retry_policy(retry.max_replay_bytes(self.max_body_bytes))
            .stream_guard(guard)
            .breaker(self.breaker.clone())
            .budget(self.budget.clone())
    }

    /// One model's service at `endpoint`: the primary's ladder, then its
    /// fallbacks in order, one attempt each.
    pub(crate) fn model(
        &self,
        endpoint: Endpoint,
        primary: &Arc<Target>,
        fallbacks: &[Arc<Target>],
    ) -> Upstream {
        let classify =
            ClassifyLayer::for_provider(endpoint.provider()).deliver_policy_outcomes(true);
        let stack = self.stack(primary.preset);
        if fallbacks.is_empty() {
            return boxed(stack.build(&classify, self.client.clone()));
        }
        let chain = fallbacks.iter().map(|fallback| {
            let attempt = self
                .stack(fallback.preset)
                .attempt(&classify, self.client.clone());
            FallbackRoute::new(
                ServiceBuilder::new()
                    .map_request(rebuild(fallback))
                    .service(attempt),
            )
            .route(RouteId::new(fallback.name.as_str()))
        });
        let layer =
            FallbackLayer::chain(chain.collect::<Vec<_>>()).max_replay_bytes(self.max_body_bytes);
        boxed(stack.build_with_fallback(&classify, self.nested.clone(), layer))
    }
}

/// A fallback's request: it speaks to its own route with its own key and
/// model name, so it is rebuilt from the client's call, keeping the
/// extensions the layers above set (the deadline, the fallback's route)
/// under the route's own: whose account it spends (`CallerCredentials`)
/// is this route's to say, not the primary's.
fn rebuild(
    target: &Arc<Target>,
) -> impl Fn(http::Request<ReplayBody<Full<Bytes>>>) -> http::Request<ReplayBody<Full<Bytes>>>
+ Clone
+ Send
+ Sync
+ 'static {
    let target = Arc::clone(target);
    move |incoming: http::Request<ReplayBody<Full<Bytes>>>| {
        let (mut parts, body) = incoming.into_parts();
        let rebuilt = parts
            .extensions
            .get::<Arc<ClientCall>>()
            .map(|call| target.request(call));
        match rebuilt {
            Some(Ok(mut request)) => {
                let own = std::mem::replace(request.extensions_mut(), parts.extensions);
                let extensions = request.extensions_mut();
                extensions.remove::<CallerCredentials>();
                extensions.extend(own);
                // The model named for the primary is not this route's
                // where either renames it: its limits are this model's.
                if let Some(call) = extensions.get::<Arc<ClientCall>>().cloned()
                    && let Some(facts) = extensions.get_mut::<RequestFacts>()
                {
                    *facts = target.told_model(&call, facts.clone());
                }
                // Recorded (the one frame kept, shared, whatever its size:
                // no copy) only so that it says when this route's call sent
                // it whole: the receipt's "may be billed" reads it. It is
                // never sent again.
                let facts = request.extensions().get::<RequestFacts>().cloned();
                request.map(|body| {
                    let body = ReplayBody::recorded(body, 0);
                    match &facts {
                        Some(facts) => body.fill_facts_of(facts),
                        None => body,
                    }
                })
            }
            // No call attached (the gateway always attaches one), or this
            // route's request could not be built from it: send the
            // primary's body to this route, at the same endpoint, without
            // any credential the primary's request carried — the primary
            // route's key or the client's, meant for another provider.
            _ => {
                let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
                parts.uri = format!("{}{path}", target.base)
                    .parse()
                    .unwrap_or(parts.uri);
                for name in &CREDENTIAL_HEADERS {
                    parts.headers.remove(name);
                }
                http::Request::from_parts(parts, body)
            }
        }
    }
}

fn boxed<S, B>(service: S) -> Upstream
where
    S: tower::Service<http::Request<Full<Bytes>>, Response = http::Response<B>, Error = BoxError>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let service = ServiceBuilder::new()
        .map_response(|response: http::Response<B>| {
            response.map(|body| body.map_err(Into::into).boxed_unsync())
        })
        .service(service);
    BoxCloneSyncService::new(service)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(credential: Option<(&'static str, &'static str)>) -> ClientCall {
        let mut client_headers = HeaderMap::new();
        client_headers.insert("x-chaos-fault", HeaderValue::from_static("ok"));
        client_headers.insert("cookie", HeaderValue::from_static("session=1"));
        client_headers.insert(
            "openai-organization",
            HeaderValue::from_static("org-client"),
        );
        client_headers.insert("openai-project", HeaderValue::from_static("proj_client"));
        client_headers.insert(
            "authorization",
            HeaderValue::from_static("Bearer sk-client"),
        );
        let body = Bytes::from_static(br#"{"model":"m","stream":true}"#);
        ClientCall {
            endpoint: Endpoint::ChatCompletions,
            model_span: span_of(&body),
            names_model: true,
            model: Some(Arc::from("m")),
            body,
            query: None,
            headers: ClientCall::forwarded_headers(&client_headers),
            credential: credential.map(|(name, value)| {
                (
                    HeaderName::from_static(name),
                    HeaderValue::from_static(value),
                )
            }),
        }
    }

    fn span_of(body: &[u8]) -> Option<std::ops::Range<usize>> {
        let text = std::str::from_utf8(body).unwrap();
        seawall_internal::json::RequestMembers::read(text)
            .unwrap()
            .model_token(text)
    }

    /// A route's model replaces the client's name and nothing else: key
    /// order, spacing and numbers no `f64` holds stay as the client wrote
    /// them, also when the client escaped the name (PHP writes `\/`).
    #[test]
    fn a_renamed_body_keeps_every_other_byte() {
        let renamed = |body: &'static str, model: &str| {
            let call = ClientCall {
                endpoint: Endpoint::ChatCompletions,
                body: Bytes::from_static(body.as_bytes()),
                model_span: span_of(body.as_bytes()),
                names_model: true,
                model: Some(Arc::from("m")),
                query: None,
                headers: HeaderMap::new(),
                credential: None,
            };
            String::from_utf8(call.body_naming(model).unwrap().to_vec()).unwrap()
        };
        assert_eq!(
            renamed(
                r#"{ "stream" : true, "seed": 123456789012345678901234, "model" : "gpt-x" }"#,
                "gpt-x-main"
            ),
            r#"{ "stream" : true, "seed": 123456789012345678901234, "model" : "gpt-x-main" }"#
        );
        assert_eq!(
            renamed(r#"{"model":"m","n":1}"#, "say \"hi\"\n"),
            r#"{"model":"say \"hi\"\n","n":1}"#
        );
        assert_eq!(
            renamed(
                r#"{"model":"meta\/llama","seed":123456789012345678901234,"a":1}"#,
                "main"
            ),
            r#"{"model":"main","seed":123456789012345678901234,"a":1}"#
        );
        // A lone surrogate elsewhere, which serde's values refuse: the
        // escaped name is still found and replaced alone.
        assert_eq!(
            renamed(r#"{"note":"\ud83d","model":"meta\/llama"}"#, "main"),
            r#"{"note":"\ud83d","model":"main"}"#
        );
        // The key escaped too: its name is found and replaced alone.
        assert_eq!(
            renamed(r#"{"mod\u0065l":"gpt\u002dx", "n":1}"#, "main"),
            r#"{"mod\u0065l":"main", "n":1}"#
        );
        // No place found: refused, not read into values.
        let call = ClientCall {
            model_span: None,
            ..call(None)
        };
        assert!(call.body_naming("main").is_err());
    }

    /// The headers passed on go to every route, keyed or not: the
    /// client's key must reach keyless routes only, as `credential`.
    #[test]
    fn no_credential_is_forwarded_with_the_clients_headers() {
        for name in FORWARDED {
            let name = HeaderName::from_static(name);
            assert!(
                !seawall_internal::headers::is_credential(&name),
                "{name} carries a credential"
            );
        }
    }

    /// When a fallback's own request cannot be built, the primary's goes
    /// to the fallback's base with none of the credentials it carried.
    #[test]
    fn a_fallback_without_the_call_sends_no_credential() {
        let target = Arc::new(Target::new(&route(Wire::OpenAi, None, None), None));
        let mut primary = http::Request::post("https://primary.example.com/v1/chat/completions")
            .body(ReplayBody::once(Full::new(Bytes::new())))
            .unwrap();
        for name in &CREDENTIAL_HEADERS {
            primary
                .headers_mut()
                .insert(name, HeaderValue::from_static("secret"));
        }
        primary
            .headers_mut()
            .insert("x-chaos-fault", HeaderValue::from_static("ok"));
        let request = rebuild(&target)(primary);
        assert_eq!(request.uri(), "https://api.example.com/v1/chat/completions");
        let headers = request.headers();
        for name in &CREDENTIAL_HEADERS {
            assert!(!headers.contains_key(name), "{name} was sent");
        }
        // Once only `authorization` and `x-api-key` were removed.
        assert!(!headers.contains_key("cookie"));
        assert_eq!(headers["x-chaos-fault"], "ok");
    }

    /// The request's facts name the model each route is asked for: the
    /// primary's (here the client's own) on the primary's request, the
    /// fallback's own name on the fallback's, so a limit the provider
    /// keeps per model cools the model that route was asked for, and a
    /// call for it is held back there.
    #[test]
    fn each_routes_facts_name_the_model_it_is_asked_for() {
        let call = Arc::new(call(None));
        let primary_target = Target::new(&route(Wire::OpenAi, None, None), None);
        let mut primary = primary_target.request(&call).unwrap();
        let facts = primary_target.told_model(&call, RequestFacts::from_head(&primary));
        assert_eq!(facts.model(), Some("m"));
        primary.extensions_mut().insert(facts);
        primary.extensions_mut().insert(Arc::clone(&call));
        let fallback = Arc::new(Target::new(
            &route(Wire::OpenAi, None, Some("m-backup")),
            None,
        ));
        let request = rebuild(&fallback)(primary.map(ReplayBody::once));
        let facts = request.extensions().get::<RequestFacts>().unwrap();
        assert_eq!(facts.model(), Some("m-backup"));
    }

    /// A header the client's `Connection` names is for that hop alone
    /// (RFC 9110, 7.6.1): not passed on, though the gateway knows it.
    #[test]
    fn a_header_the_connection_names_stays_here() {
        let mut client = HeaderMap::new();
        client.insert("anthropic-beta", HeaderValue::from_static("x"));
        client.insert("anthropic-version", HeaderValue::from_static("2023-06-01"));
        assert_eq!(ClientCall::forwarded_headers(&client).len(), 2);
        client.insert(
            http::header::CONNECTION,
            HeaderValue::from_static("keep-alive, Anthropic-Beta"),
        );
        let forwarded = ClientCall::forwarded_headers(&client);
        assert_eq!(forwarded.len(), 1);
        assert!(forwarded.contains_key("anthropic-version"));
    }

    fn route(wire: Wire, key_env: Option<&str>, model: Option<&str>) -> RouteConfig {
        RouteConfig {
            name: "r".into(),
            wire,
            base_url: "https://api.example.com/v1/".into(),
            key_env: key_env.map(str::to_owned),
            model: model.map(str::to_owned),
            preset: None,
        }
    }

    #[test]
    fn each_single_threaded_runtime_gets_a_pool_of_its_own() {
        let client: PerThread<Full<Bytes>> = PerThread::new(connector());
        let call_on = |mut client: PerThread<Full<Bytes>>, multi: bool| {
            let runtime = if multi {
                tokio::runtime::Builder::new_multi_thread()
            } else {
                tokio::runtime::Builder::new_current_thread()
            }
            .enable_all()
            .build()
            .unwrap();
            // Nothing listens there: the call fails, the pool stays.
            let request = http::Request::get("http://127.0.0.1:1/")
                .body(Full::new(Bytes::new()))
                .unwrap();
            let _ = runtime.block_on(async move {
                let call = tower::Service::call(&mut client, request);
                // On a multi-threaded runtime, from one of its workers.
                tokio::spawn(call).await.unwrap()
            });
        };
        let call = move |client| call_on(client, false);
        call(client.clone());
        call(client.clone());
        assert_eq!(client.pools.iter().count(), 1);
        let other = client.clone();
        std::thread::spawn(move || call(other)).join().unwrap();
        assert_eq!(client.pools.iter().count(), 2);
        // tokio's multi-threaded runtime: the shared pool.
        call_on(client.clone(), true);
        assert_eq!(client.pools.iter().count(), 2);
    }

    #[test]
    fn a_keyed_route_sends_its_key_never_the_clients() {
        let target = Target::new(
            &route(Wire::Anthropic, Some("K"), None),
            Some(Secret::new("sk-route-key".into())),
        );
        let call = ClientCall {
            endpoint: Endpoint::Messages,
            ..call(Some(("x-api-key", "sk-client")))
        };
        let request = target.request(&call).unwrap();
        assert_eq!(request.uri(), "https://api.example.com/v1/messages");
        let headers = request.headers();
        assert_eq!(headers["x-api-key"], "sk-route-key");
        assert!(headers["x-api-key"].is_sensitive());
        assert!(!headers.contains_key("authorization"));
        assert!(!headers.contains_key("cookie"));
        // The client's account is not the route key's.
        assert!(!headers.contains_key("openai-organization"));
        assert!(!headers.contains_key("openai-project"));
        assert_eq!(headers["x-chaos-fault"], "ok");
        assert_eq!(headers["anthropic-version"], "2023-06-01");
        assert_eq!(
            request.extensions().get::<RouteId>(),
            Some(&RouteId::new("r"))
        );
    }

    #[test]
    fn a_keyless_route_gets_the_clients_own_key_only() {
        let target = Target::new(&route(Wire::OpenAi, None, Some("renamed")), None);
        let request = target
            .request(&call(Some(("authorization", "Bearer sk-client"))))
            .unwrap();
        assert_eq!(request.headers()["authorization"], "Bearer sk-client");
        assert_eq!(request.headers()["openai-organization"], "org-client");
        assert_eq!(request.headers()["openai-project"], "proj_client");
        let request = target.request(&call(None)).unwrap();
        // The client's Authorization was the gateway's token: not forwarded.
        assert!(!request.headers().contains_key("authorization"));
        let body = futures_util::FutureExt::now_or_never(request.into_body().collect())
            .expect("a full body is ready")
            .unwrap()
            .to_bytes();
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["model"], "renamed");
        assert_eq!(body["stream"], true);
    }
}
