//! `seawall chat`: one prompt to any real endpoint, through the policies.
//!
//! stdout carries exactly the answer text as it is delivered (incrementally
//! with `--stream`), nothing else: when stdout is not a terminal (a pipe, a
//! file) nothing is added to the answer, not even a final newline; on a
//! terminal one newline follows it, so what comes after starts on its own
//! line ([`run_with`]). stderr carries progress lines and, always the very
//! last line whatever the exit status, one JSON receipt. The exit status
//! says whether the answer is complete:
//!
//! | status | meaning |
//! |---|---|
//! | 0 | a complete answer |
//! | 1 | a failure before any content (the receipt says which) |
//! | 2 | bad arguments (receipt code `usage`) |
//! | 3 | interrupted after content: the receipt carries `delivered_chars` |
//! | 4 | delivered but not complete: cut by `length`/`max_tokens`/`max_output_tokens`, refused or filtered |
//! | 5 | the answer could not be written to stdout (a closed pipe, a full disk) |
//!
//! The receipt's `outcome` is `ok` or `error`; its `code` is a stable
//! seawall failure code (`rate_limited`, `protocol_violation`,
//! `redirected`, …), or one of the CLI's own: `usage` (exit 2),
//! `output_failed` (exit 5) and `unclassified` (an error that carried no
//! seawall failure). A stream whose stdout fails stops there: its body
//! is dropped, which cancels the generation nobody reads. An answer
//! delivered but cut at the token limit (exit 4) is an `error` with code
//! `truncated` and class `permanent` (the same request is cut again), its
//! `finish_reason` (`length`, …) kept; a stream that ended without its
//! finish (exit 3) is `truncated` with no finish reason.
//!
//! A chat its user stops (Ctrl-C, or SIGTERM from `timeout`) ends as any
//! other does: code `cancelled`, exit 3 once content was shown (with its
//! `delivered_chars`), 1 before, the receipt last.
//!
//! Memory is bounded whatever the endpoint sends. A stream is written to
//! stdout as it arrives and only counted; the stream guard caps one
//! event-stream line or event at 8 MiB (`answer_too_large`, or
//! `stream_interrupted` after content). A unary answer is JSON, parsed
//! whole, so it is read up to `--max-answer-bytes` (default 8 MiB, the
//! classifier's own check cap); a longer one is `protocol_violation` with
//! the message `answer_too_large: …`, exit 1.
//!
//! With `--resume`, a stream interrupted after content (a reset, an idle
//! gap, an in-stream overload, a cut without a finish) is continued in the
//! same output instead (`seawall::resume`): stdout shows one answer, every
//! token once, and the receipt lists each resume in `resumes` (route,
//! delivered characters at the cut, attempt) with `resumed`, the number
//! spliced in. A continuation that cannot be lined up, or more than two,
//! end as without it (exit 3). When the primary is unhealthy for the
//! continuation, it moves to a fallback route as a request would, and
//! that route continues *its own* request in *its own* wire format (its
//! model, the delivered text as its provider's prefill or trailing turn,
//! its token budget less what was spent) — never the prompt again, which
//! it would answer from the start. An answer in another format than the
//! primary's is read in that format and its text shown as the rest of
//! the answer; the receipt's resume names the fallback route and the
//! format it answered in (`answered_in`).
//!
//! A 3xx answer is never followed (the API key would travel with it): code
//! `redirected`, exit 1. Userinfo in a base URL (`http://user:secret@host`)
//! is neither sent nor shown: routes, log lines and errors name the host
//! and port only.

use std::io::Write;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Uri};
use http_body::Body;
use http_body_util::Full;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use seawall::classify::ClassifyLayer;
use seawall::core::provider::Provider;
use seawall::core::recording::{ReplayBody, clone_head};
use seawall::core::{BoxError, Class, Code, Failure, FinishKind, Receipt, RequestFacts, RouteId};
use seawall::fallback::{FallbackLayer, FallbackRoute, ServedBy};
use seawall::resume::{AnsweredIn, Continuation, ResumeLayer, Resumed};
use seawall::stack::Stack;
use seawall_internal::millis;
use seawall_internal::redact::{Redactor, Secret};
use serde_json::json;
use tower::{Service, ServiceExt};

use crate::app;
use crate::caller::{self, Delivery, NotAnAnswer, Reading};

/// The arguments of `seawall chat`.
#[derive(Debug, Clone, clap::Args)]
pub struct ChatArgs {
    /// The provider's wire format: openai (chat completions),
    /// openai-responses (the Responses API, `POST /v1/responses`; also
    /// openai_responses), anthropic or gemini.
    #[arg(long, value_parser = parse_provider)]
    pub provider: Provider,
    /// Scheme, host and port (and any path prefix) before `/v1`
    /// (`/v1beta` for Gemini), e.g. `https://api.openai.com`. Userinfo
    /// (`user:secret@`) is neither sent nor shown: the key comes from
    /// --api-key-env.
    #[arg(long, value_parser = parse_base_url)]
    pub base_url: BaseUrl,
    /// The model.
    #[arg(long)]
    pub model: String,
    /// A fallback route's base URL. Repeat for a chain, tried in order
    /// (one attempt each): the n-th --fallback-base-url pairs with the
    /// n-th --fallback-model.
    #[arg(long, value_parser = parse_base_url, requires = "fallback_model")]
    pub fallback_base_url: Vec<BaseUrl>,
    /// A fallback route's model: one per --fallback-base-url, in the same
    /// order.
    #[arg(long, requires = "fallback_base_url")]
    pub fallback_model: Vec<String>,
    /// A fallback route's wire format, as --provider: absent, every
    /// fallback speaks the primary's; given once, every fallback speaks
    /// it; else one per --fallback-base-url, in the same order. Each route
    /// reads its provider's default key variable.
    #[arg(long, value_parser = parse_provider, requires = "fallback_base_url")]
    pub fallback_provider: Vec<Provider>,
    /// Stream the answer: text reaches stdout as it arrives.
    #[arg(long)]
    pub stream: bool,
    /// The operation's deadline (e.g. 30s, 500ms, 2m).
    #[arg(long, value_parser = parse_duration)]
    pub deadline: Option<Duration>,
    /// The bound on one attempt.
    #[arg(long, value_parser = parse_duration)]
    pub attempt_timeout: Option<Duration>,
    /// The preset: interactive, batch or reasoning.
    #[arg(long, default_value = "interactive", value_parser = ["interactive", "batch", "reasoning"])]
    pub preset: String,
    /// The largest unary (not streamed) answer read, in bytes (suffixes
    /// KiB, MiB, GiB): it is JSON and parsed whole. A longer answer is not
    /// read further: code protocol_violation (`answer_too_large`), exit 1.
    /// Streams are not held: their lines are capped at 8 MiB by the guard.
    #[arg(long, value_parser = parse_size, default_value = "8MiB")]
    pub max_answer_bytes: usize,
    /// The environment variable holding the API key (default:
    /// OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY).
    #[arg(long)]
    pub api_key_env: Option<String>,
    /// Continue a stream interrupted after content in the same output,
    /// instead of ending with the interruption (at most two resumes).
    /// Streams only: without --stream it is ignored, and a line says so.
    /// A continuation the primary cannot take moves to a fallback route,
    /// which continues its own request in its own wire format (not the
    /// prompt again); its text is shown as the rest of the answer.
    #[arg(long)]
    pub resume: bool,
    /// The prompt.
    pub prompt: String,
}

/// A base URL without its userinfo: what is sent and what is shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseUrl {
    url: String,
    had_userinfo: bool,
}

impl BaseUrl {
    /// The URL, without userinfo and without a trailing `/`.
    pub fn as_str(&self) -> &str {
        &self.url
    }

    /// True when the URL as given carried userinfo (dropped).
    pub fn had_userinfo(&self) -> bool {
        self.had_userinfo
    }
}

impl std::fmt::Display for BaseUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.url)
    }
}

fn parse_provider(text: &str) -> Result<Provider, String> {
    match Provider::from_name(text) {
        Some(Provider::Http) | None => Err(format!(
            "unknown provider `{text}` (openai, openai-responses, anthropic or gemini)"
        )),
        Some(provider) => Ok(provider),
    }
}

/// An `http://` or `https://` URL with a host; any userinfo is dropped. A
/// query or fragment is refused: the endpoint's path is appended to the
/// base, so a query would end up inside the path
/// (`…?key=…/v1beta/models/…`), and a key in it would be shown in every
/// line that names the URL. So is a port that is not one (`:80800`, `:`,
/// `:0`; see [`seawall_internal::uri::port_error`]): `http` reads no port
/// there, and the request and its key would go to port 80 or 443.
pub fn parse_base_url(text: &str) -> Result<BaseUrl, String> {
    // The parser's message never quotes the URL: it may hold a secret.
    let uri: Uri = text
        .parse()
        .map_err(|_| "not a URL: expected an http:// or https:// URL with a host".to_owned())?;
    if uri.query().is_some() || text.contains('#') {
        return Err(
            "a base URL must not carry a query or a fragment: the endpoint's path \
             is appended to it (give a key with --api-key-env)"
                .to_owned(),
        );
    }
    let (Some(scheme @ ("http" | "https")), Some(authority)) = (uri.scheme_str(), uri.authority())
    else {
        return Err("expected an http:// or https:// URL with a host".to_owned());
    };
    if let Some(why) = seawall_internal::uri::port_error(authority) {
        return Err(why.to_owned());
    }
    let authority = authority.as_str();
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let rest = uri.path_and_query().map_or("", |p| p.as_str());
    let url = format!("{scheme}://{host}{rest}");
    Ok(BaseUrl {
        url: url.trim_end_matches('/').to_owned(),
        had_userinfo: host.len() != authority.len(),
    })
}

/// `text` with every URL in it shown without its userinfo
/// (`scheme://user:secret@`) and query (`?key=`): for messages that quote
/// what the user typed. Core's reader, as every failure message has it.
pub fn redact_userinfo(text: &str) -> String {
    seawall::core::without_url_secrets(text).into_owned()
}

/// A number of bytes, more than zero: bare, or with a suffix `KiB`, `MiB`
/// or `GiB`.
pub fn parse_size(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: usize = number
        .parse()
        .map_err(|_| format!("`{text}` is not a size (e.g. 8MiB, 65536)"))?;
    let scale: usize = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        unit => return Err(format!("`{text}`: unknown unit `{unit}` (KiB, MiB, GiB)")),
    };
    match value.checked_mul(scale) {
        // No answer fits in zero bytes: every run would end in
        // `answer_too_large`, blaming the provider for the flag.
        Some(0) => Err(format!("`{text}`: must be more than zero")),
        Some(bytes) => Ok(bytes),
        None => Err(format!("`{text}` is out of range")),
    }
}

/// `500ms`, `30s`, `2m`, `1h`, or a bare number of seconds; longer than zero.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration (e.g. 30s, 500ms, 2m)"))?;
    let seconds = match unit {
        "ms" => value / 1000.0,
        "" | "s" => value,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        _ => return Err(format!("`{text}`: unknown unit `{unit}` (ms, s, m, h)")),
    };
    match Duration::try_from_secs_f64(seconds) {
        // A zero bound has passed before the first byte: the run would end
        // in a deadline or timeout that blames the provider for the flag.
        Ok(Duration::ZERO) => Err(format!("`{text}`: must be longer than zero")),
        Ok(duration) => Ok(duration),
        Err(_) => Err(format!("`{text}` is out of range")),
    }
}

/// One route: where, in which wire format, with which model and key.
#[derive(Debug, Clone)]
struct Route {
    provider: Provider,
    base_url: BaseUrl,
    model: String,
    api_key: Option<String>,
}

impl Route {
    /// The provider request for `prompt` on this route.
    fn request(&self, prompt: &str, stream: bool) -> Result<http::Request<Full<Bytes>>, BoxError> {
        let path = app::path(self.provider, &self.model, stream);
        let body = app::body(self.provider, &self.model, prompt, stream);
        // A base URL that already ends in the version keeps it once.
        let base_url = self.base_url.as_str();
        let base = base_url
            .strip_suffix("/v1beta")
            .or_else(|| base_url.strip_suffix("/v1"))
            .unwrap_or(base_url);
        let mut builder =
            http::Request::post(format!("{base}{path}")).header("content-type", "application/json");
        if let Some(key) = &self.api_key {
            let (name, value) = match self.provider {
                Provider::Anthropic => ("x-api-key", key.clone()),
                Provider::Gemini => ("x-goog-api-key", key.clone()),
                _ => ("authorization", format!("Bearer {key}")),
            };
            builder = builder.header(
                HeaderName::from_static(name),
                HeaderValue::from_str(&value)?,
            );
        }
        if self.provider == Provider::Anthropic {
            builder = builder.header("anthropic-version", "2023-06-01");
        }
        Ok(builder.body(Full::new(Bytes::from(body.to_string())))?)
    }
}

/// The API key of a route to `base_url`: from the variable `explicit`
/// names, which must hold one (else a usage error), or from the provider's
/// default variable. Without the default, the call goes out without a key
/// (a local server needs none; a real provider answers 401), and `log` is
/// told so, naming the variable it looked in.
fn api_key(
    provider: Provider,
    explicit: Option<&str>,
    base_url: &BaseUrl,
    log: &mut dyn Write,
) -> Result<Option<String>, String> {
    use std::env::VarError;
    let default = match provider {
        Provider::Anthropic => "ANTHROPIC_API_KEY",
        Provider::Gemini => "GEMINI_API_KEY",
        _ => "OPENAI_API_KEY",
    };
    let name = explicit.unwrap_or(default);
    let missing = match std::env::var(name) {
        Ok(key) => return Ok(Some(key)),
        Err(VarError::NotPresent) => "is not set",
        Err(VarError::NotUnicode(_)) => "is not UTF-8",
    };
    if explicit.is_some() {
        return Err(format!("--api-key-env {name}: the variable {missing}"));
    }
    let _ = writeln!(
        log,
        "seawall: {name} {missing}: the request to {base_url} goes out without an API key"
    );
    Ok(None)
}

type Https = HttpsConnector<HttpConnector>;

fn connector() -> Https {
    let builder = hyper_rustls::HttpsConnectorBuilder::new();
    let builder = match builder.with_native_roots() {
        Ok(native) => native,
        Err(_) => hyper_rustls::HttpsConnectorBuilder::new().with_webpki_roots(),
    };
    builder.https_or_http().enable_http1().build()
}

/// The receipt of a `seawall chat` whose arguments were rejected before it
/// started (exit 2): code `usage`. `seawall chat` prints it after the
/// argument parser's message.
pub fn usage_receipt() -> String {
    receipt_json(Instant::now(), Verdict::Usage, None, &Delivery::default())
}

/// Runs `seawall chat`, writing exactly the answer to `out` (nothing added:
/// `out` is not a terminal) and progress and the receipt to `log`. Returns
/// the exit status. Whatever the status, the receipt is the last line
/// written to `log`.
pub async fn run(
    args: ChatArgs,
    out: &mut (impl Write + Send),
    log: &mut (impl Write + Send),
) -> u8 {
    run_with(args, out, log, false).await
}

/// [`run`], told whether `out` is a terminal. On one, a newline follows
/// the answer (once content was shown, or the chat succeeded), before the
/// receipt goes to `log`: the receipt and the shell's prompt each start on
/// their own line where both share the screen. Not on one, `out` gets
/// exactly the answer.
pub async fn run_with(
    args: ChatArgs,
    out: &mut (impl Write + Send),
    log: &mut (impl Write + Send),
    out_is_terminal: bool,
) -> u8 {
    let started = Instant::now();
    let usage = |log: &mut dyn Write, message: &str| {
        let _ = writeln!(log, "seawall chat: {message}");
        let _ = writeln!(
            log,
            "{}",
            receipt_json(started, Verdict::Usage, None, &Delivery::default())
        );
        2
    };
    let explicit = args.api_key_env.as_deref();
    let primary = match api_key(args.provider, explicit, &args.base_url, log) {
        Ok(api_key) => Route {
            provider: args.provider,
            base_url: args.base_url.clone(),
            model: args.model.clone(),
            api_key,
        },
        Err(message) => return usage(log, &message),
    };
    let fallbacks = match fallback_routes(&args, log) {
        Ok(fallbacks) => fallbacks,
        Err(message) => return usage(log, &message),
    };
    // From here on stderr carries what the network and errors said: an
    // upstream's error body may quote the key it was sent (a 401's
    // "Incorrect API key provided: sk-…"), a client error the URL.
    let keys = std::iter::once(&primary)
        .chain(&fallbacks)
        .filter_map(|route| route.api_key.clone());
    let log = &mut Scrubbed::new(log, keys.collect());
    let mut stack = match args.preset.as_str() {
        "batch" => Stack::batch(),
        "reasoning" => Stack::reasoning(),
        _ => Stack::interactive(),
    };
    if let Some(deadline) = args.deadline {
        stack = stack.total_deadline(deadline);
    }
    if let Some(attempt) = args.attempt_timeout {
        stack = stack.attempt_timeout(attempt);
    }
    let connector = connector();
    let request = match primary.request(&args.prompt, args.stream) {
        Ok(request) => request,
        Err(err) => return usage(log, &format!("cannot build the request: {err}")),
    };
    let flagged = std::iter::once(("--base-url", &args.base_url)).chain(
        args.fallback_base_url
            .iter()
            .map(|url| ("--fallback-base-url", url)),
    );
    for (flag, url) in flagged {
        if url.had_userinfo() {
            let _ = writeln!(
                log,
                "seawall: the userinfo in {flag} is neither sent nor shown; \
                 the key comes from --api-key-env"
            );
        }
    }
    // The request's URI was built from the base URL without userinfo.
    let _ = writeln!(
        log,
        "seawall: {} {} ({}{}, {} preset)",
        request.method(),
        request.uri(),
        primary.provider.as_str(),
        if args.stream { ", streaming" } else { "" },
        args.preset
    );
    let classify = classifier(primary.provider);
    let session = Session {
        provider: primary.provider,
        stream: args.stream,
        max_answer_bytes: args.max_answer_bytes,
        started,
        out_is_terminal,
    };
    // Only a stream is resumed: a unary answer arrives whole or not at all,
    // so the layer is not built for one, and the user is told.
    let resume = args.resume && args.stream;
    if resume {
        let _ = writeln!(log, "seawall: an interrupted stream is resumed (--resume)");
    } else if args.resume {
        let _ = writeln!(
            log,
            "seawall: --resume applies to streamed answers (--stream); \
             it is ignored for this unary request"
        );
    }
    if fallbacks.is_empty() {
        return if resume {
            let client = Client::builder(TokioExecutor::new()).build(connector);
            let service = stack.resume(ResumeLayer::new()).build(&classify, client);
            drive(session, &[], service, request, out, log).await
        } else {
            let client = Client::builder(TokioExecutor::new()).build(connector);
            let service = stack.build(&classify, client);
            drive(session, &[], service, request, out, log).await
        };
    }
    // Each fallback speaks its own wire format: its request is built from
    // the prompt, not reshaped from the primary's body — outside its
    // attempt layers, so the guard and the classifier see the request it
    // really receives. The extensions the fallback layer set (the
    // deadline, the route) carry over.
    let mut templates = Vec::with_capacity(fallbacks.len());
    let mut served = Vec::with_capacity(fallbacks.len());
    for (n, fallback) in fallbacks.iter().enumerate() {
        let _ = writeln!(
            log,
            "seawall: fallback route {} ({}, {})",
            fallback.base_url,
            fallback.provider.as_str(),
            fallback.model
        );
        let mut template = match fallback.request(&args.prompt, args.stream) {
            Ok(template) => template,
            Err(err) => {
                return usage(log, &format!("cannot build the fallback request: {err}"));
            }
        };
        // The facts the fallback layer hands on keep what the primary's
        // body said, and a Gemini body says nothing of a stream (its path
        // does): a streamed route of another format says it in its head,
        // or its answer would be checked as a unary one.
        if args.stream && fallback.provider != Provider::Gemini {
            template.headers_mut().insert(
                http::header::ACCEPT,
                HeaderValue::from_static("text/event-stream"),
            );
        }
        templates.push((
            template,
            // The body again, as JSON: a continuation is built from it.
            Arc::new(app::body(
                fallback.provider,
                &fallback.model,
                &args.prompt,
                args.stream,
            )),
            Arc::<str>::from(fallback.model.as_str()),
        ));
        // The first keeps the name a single fallback always had.
        let route = match n {
            0 => RouteId::new(format!("fallback:{}", fallback.base_url)),
            n => RouteId::new(format!("fallback{}:{}", n + 1, fallback.base_url)),
        };
        served.push((route, fallback.provider));
    }
    let attempt = |provider: Provider| {
        stack.attempt(
            &classifier(provider),
            Client::builder(TokioExecutor::new()).build(connector.clone()),
        )
    };
    let client = Client::builder(TokioExecutor::new());
    // The answer is read in the format of the route that served it.
    if resume {
        // A continuation moved to a fallback route is that route's own
        // request continued in its own format, never its question anew;
        // an answer in another format than the primary's says so, and the
        // resume layer says its text in the primary's.
        let chain = templates
            .into_iter()
            .zip(&served)
            .map(|(template, (route, provider))| {
                let service = Continuing::new(
                    attempt(*provider),
                    template,
                    *provider,
                    *provider != primary.provider,
                );
                FallbackRoute::new(service).route(route.clone())
            });
        let layer = FallbackLayer::chain(chain.collect::<Vec<_>>());
        let service = stack.resume(ResumeLayer::new()).build_with_fallback(
            &classify,
            client.build(connector),
            layer,
        );
        drive(session, &served, service, request, out, log).await
    } else {
        let chain =
            templates
                .into_iter()
                .zip(&served)
                .map(|((template, _, model), (route, provider))| {
                    let service = tower::ServiceBuilder::new()
                        .map_request(adopt::<Full<Bytes>>(template, model))
                        .service(attempt(*provider));
                    FallbackRoute::new(service).route(route.clone())
                });
        let layer = FallbackLayer::chain(chain.collect::<Vec<_>>());
        let service = stack.build_with_fallback(&classify, client.build(connector), layer);
        drive(session, &served, service, request, out, log).await
    }
}

/// The classifier of a route speaking `provider`. A refusal or filter the
/// provider declares in a whole answer is delivered as that answer, its
/// finish marked, as a stream's is: the chat exits 4 with it (and shows a
/// filtered answer's partial text) streamed or not, where a failure would
/// exit 1 with nothing shown.
fn classifier(provider: Provider) -> ClassifyLayer {
    ClassifyLayer::for_provider(provider).deliver_policy_outcomes(true)
}

/// The fallback routes, paired as `--help` says: the n-th base URL with the
/// n-th model, and no provider (the primary's), one for all, or one each.
fn fallback_routes(args: &ChatArgs, log: &mut dyn Write) -> Result<Vec<Route>, String> {
    let (urls, models, providers) = (
        &args.fallback_base_url,
        &args.fallback_model,
        &args.fallback_provider,
    );
    if urls.len() != models.len() {
        return Err(format!(
            "{} --fallback-base-url but {} --fallback-model: give one model per fallback route",
            urls.len(),
            models.len()
        ));
    }
    if providers.len() > 1 && providers.len() != urls.len() {
        return Err(format!(
            "{} --fallback-provider for {} fallback routes: give none, one for all, or one per route",
            providers.len(),
            urls.len()
        ));
    }
    Ok(urls
        .iter()
        .zip(models)
        .enumerate()
        .map(|(n, (base_url, model))| {
            let provider = match providers.as_slice() {
                [] => args.provider,
                [one] => *one,
                each => each[n],
            };
            Route {
                provider,
                base_url: base_url.clone(),
                model: model.clone(),
                api_key: api_key(provider, None, base_url, log).unwrap_or(None),
            }
        })
        .collect())
}

/// The fallback's request: its own template, with the extensions the
/// fallback layer set on the incoming request (whatever its body).
fn adopt<B>(
    template: http::Request<Full<Bytes>>,
    model: Arc<str>,
) -> impl Fn(http::Request<ReplayBody<B>>) -> http::Request<Full<Bytes>> + Clone {
    move |incoming| adopted(&template, template.body().clone(), &model, incoming)
}

/// `template`'s head with `body`, and the extensions the fallback layer set
/// on `incoming`.
fn adopted<B>(
    template: &http::Request<Full<Bytes>>,
    body: Full<Bytes>,
    model: &Arc<str>,
    incoming: http::Request<B>,
) -> http::Request<Full<Bytes>> {
    let mut request = clone_head(template, body);
    *request.extensions_mut() = incoming.into_parts().0.extensions;
    // The facts the fallback layer put in are the primary's request's:
    // this one may be another provider's, for its own model.
    if let Some(facts) = request.extensions().get::<RequestFacts>() {
        let moved = facts.moved_to(&request).with_model(model.clone());
        request.extensions_mut().insert(moved);
    }
    request
}

/// A fallback route's request, its body as JSON, and its model.
type Template = (http::Request<Full<Bytes>>, Arc<serde_json::Value>, Arc<str>);

/// A fallback route's service under `--resume`: the route's own request
/// ([`adopt`]), or, for a continuation the resume layer sends (marked
/// [`Continuation`]), the continuation of the route's own request in the
/// route's own wire format — the delivered text as its provider's prefill
/// or trailing turn, its model, its token budget less what was spent —
/// never the original question again, which its provider would answer
/// from the start (billed whole, and spliced in nowhere). The answer of a
/// route in another format than the primary's is marked [`AnsweredIn`]:
/// the resume layer reads it in that format and says its text in the
/// primary's, which the chat reads.
#[derive(Clone)]
struct Continuing<S> {
    inner: S,
    template: http::Request<Full<Bytes>>,
    /// The template's body, parsed once.
    json: Arc<serde_json::Value>,
    model: Arc<str>,
    provider: Provider,
    /// The route's wire format is not the primary's.
    other_format: bool,
}

impl<S> Continuing<S> {
    fn new(
        inner: S,
        (template, json, model): Template,
        provider: Provider,
        other_format: bool,
    ) -> Self {
        Continuing {
            inner,
            template,
            json,
            model,
            provider,
            other_format,
        }
    }
}

impl<S, B, RB> Service<http::Request<ReplayBody<B>>> for Continuing<S>
where
    S: Service<http::Request<Full<Bytes>>, Response = http::Response<RB>>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
    RB: Send + 'static,
{
    type Response = http::Response<RB>;
    type Error = BoxError;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<http::Response<RB>, BoxError>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, incoming: http::Request<ReplayBody<B>>) -> Self::Future {
        let continuation = incoming.extensions().get::<Continuation>().cloned();
        // Not sent: a verdict on this request, so no route takes it.
        let refused = |why: String| -> Self::Future {
            let failure = Failure::new(Code::BadRequest).with_message(&why);
            Box::pin(std::future::ready(Err(failure.into())))
        };
        let body = match continuation {
            None => self.template.body().clone(),
            // An answer in this route's format the primary's cannot say
            // would be billed and never shown.
            Some(continuation) if !continuation.readable_in(self.provider) => {
                return refused(format!(
                    "a {} answer cannot be continued in the {} wire format",
                    continuation.caller().as_str(),
                    self.provider.as_str()
                ));
            }
            Some(continuation) => match continuation.body(self.provider, &self.json) {
                Ok(next) => Full::new(Bytes::from(next.to_string())),
                // The route's provider would answer from the start, or its
                // request is one never continued, or its budget is spent.
                Err(err) => {
                    return refused(format!(
                        "the continuation cannot be built for this route: {err}"
                    ));
                }
            },
        };
        let request = adopted(&self.template, body, &self.model, incoming);
        let answered = self.other_format.then_some(AnsweredIn(self.provider));
        let call = self.inner.call(request);
        Box::pin(async move {
            let mut response = call.await.map_err(Into::into)?;
            if let Some(answered) = answered {
                response.extensions_mut().insert(answered);
            }
            Ok(response)
        })
    }
}

/// One chat operation's constants.
#[derive(Debug, Clone, Copy)]
struct Session {
    provider: Provider,
    stream: bool,
    max_answer_bytes: usize,
    started: Instant,
    /// The answer goes to a terminal: a newline ends it.
    out_is_terminal: bool,
}

/// The longest line held back before it is scrubbed and written without
/// its end: memory stays bounded whatever a message holds.
const MAX_HELD_LINE: usize = 1 << 20;

/// A writer for stderr that shows no key: each line is written with the
/// URLs in it stripped of userinfo and query
/// ([`without_url_secrets`](seawall::core::without_url_secrets)) and the
/// chat's keys scrubbed as the gateway scrubs its own
/// ([`Redactor`]): every copy, and a key's start that ends the line. Lines
/// are held until their end, so a key is never split across two writes
/// unseen; one too long to hold is cut, and a key's start ending the piece
/// written is scrubbed however short.
struct Scrubbed<'a, W: Write> {
    inner: &'a mut W,
    redactor: Redactor,
    line: Vec<u8>,
}

impl<'a, W: Write> Scrubbed<'a, W> {
    fn new(inner: &'a mut W, keys: Vec<String>) -> Self {
        // The redactor leaves out keys too short to tell from a word, holds
        // each once, and replaces one that contains another whole.
        let mut redactor = Redactor::default();
        for key in keys {
            redactor.push(&Secret::new(key));
        }
        Scrubbed {
            inner,
            redactor,
            line: Vec::new(),
        }
    }

    /// Writes the held bytes up to `end`: a whole line (ending in `\n`), or
    /// when `cut`, a piece of one whose end is still to come.
    fn emit(&mut self, end: usize, cut: bool) -> std::io::Result<()> {
        let text = String::from_utf8_lossy(&self.line[..end]);
        // The start rule looks at the text's end: the line's, before its
        // line break, which is put back after.
        let (text, line_break) = match text.strip_suffix('\n') {
            Some(text) => match text.strip_suffix('\r') {
                Some(text) => (text, "\r\n"),
                None => (text, "\n"),
            },
            None => (&*text, ""),
        };
        let text = seawall::core::without_url_secrets(text);
        let mut text = self.redactor.scrub(&text, cut);
        text.push_str(line_break);
        self.line.drain(..end);
        self.inner.write_all(text.as_bytes())
    }
}

impl<W: Write> Scrubbed<'_, W> {
    /// Where a piece of a held line too long to hold whole ends: before
    /// any copy of a key the line's bytes so far may hold or begin, so a
    /// key is never split across two pieces (its rest shown at the start
    /// of the next), and on a character boundary. The tail kept back is
    /// shorter than the longest key; a key longer than half the hold is
    /// not waited for. `None` when no such end is found: the piece then
    /// ends where the line does, its end scrubbed as a cut.
    fn piece_end(&self) -> Option<usize> {
        let line = &self.line;
        let keys = self
            .redactor
            .secrets()
            .iter()
            .map(|secret| secret.expose().as_bytes())
            .filter(|key| key.len() <= MAX_HELD_LINE / 2);
        // No key to keep whole: the piece is all the line holds.
        let longest = keys.clone().map(<[u8]>::len).max()?;
        let mut end = line.len() + 1 - longest;
        loop {
            while end > 0 && line[end] & 0xC0 == 0x80 {
                end -= 1;
            }
            // A whole copy across the end moves the end before it (which
            // may put another's across it: again until none is).
            let across = keys.clone().find_map(|key| {
                let from = end.saturating_sub(key.len() - 1);
                line[from..]
                    .windows(key.len())
                    .position(|window| window == key)
                    .map(|at| from + at)
                    .filter(|&at| at < end)
            });
            match across {
                Some(start) => end = start,
                None => break,
            }
        }
        (end > 0).then_some(end)
    }
}

impl<W: Write> Write for Scrubbed<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.line.extend_from_slice(buf);
        while let Some(at) = self.line.iter().position(|&b| b == b'\n') {
            self.emit(at + 1, false)?;
        }
        if self.line.len() > MAX_HELD_LINE {
            // Cut only when no end kept every key whole.
            match self.piece_end() {
                Some(end) => self.emit(end, false)?,
                None => self.emit(self.line.len(), true)?,
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if !self.line.is_empty() {
            self.emit(self.line.len(), false)?;
        }
        self.inner.flush()
    }
}

impl<W: Write> Drop for Scrubbed<'_, W> {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// What to tell the user about a failure besides its own line, if anything.
fn advice(failure: &Failure) -> Option<&'static str> {
    match failure.code() {
        Code::Redirected => Some(
            "the route answered with a redirect, which seawall never follows \
             (the API key would travel with it): check --base-url",
        ),
        _ => None,
    }
}

async fn drive<S, B>(
    session: Session,
    fallbacks: &[(RouteId, Provider)],
    service: S,
    request: http::Request<Full<Bytes>>,
    out: &mut (impl Write + Send),
    log: &mut (impl Write + Send),
) -> u8
where
    S: Service<http::Request<Full<Bytes>>, Response = http::Response<B>, Error = BoxError>,
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    // A user's Ctrl-C (or `timeout`'s SIGTERM) ends the chat as any other
    // end does: with what was shown counted and the receipt last.
    let mut stop: Stop = Box::pin(seawall_chaos::cli::stopped());
    let called = tokio::select! {
        called = service.oneshot(request) => called,
        () = &mut stop => Err(stopped_failure().into()),
    };
    let response = match called {
        Ok(response) => response,
        Err(err) => {
            let failure = Failure::find(&*err);
            // The whole chain, bounded: a wrapper's own text names only
            // its part, the cause is its source's.
            let said = seawall_internal::error::chain_text(&*err, 4096);
            let _ = writeln!(log, "seawall chat: {said}");
            if let Some(advice) = failure.and_then(advice) {
                let _ = writeln!(log, "seawall chat: {advice}");
            }
            let receipt = failure.and_then(Failure::receipt);
            let line = receipt_json(
                session.started,
                Verdict::Failed(failure),
                receipt,
                &Delivery::default(),
            );
            let _ = writeln!(log, "{line}");
            return 1;
        }
    };
    let served = response.extensions().get::<ServedBy>().cloned();
    let receipt = response.extensions().get::<Receipt>().cloned();
    let resumed = response.extensions().get::<Resumed>().cloned();
    let fallback = served
        .filter(|s| s.fallback)
        .and_then(|s| fallbacks.iter().find(|(route, _)| *route == s.route));
    let provider = fallback.map_or(session.provider, |(_, provider)| *provider);
    if let Some((route, _)) = fallback {
        let _ = writeln!(
            log,
            "seawall: the fallback route {route} served this answer"
        );
    }
    // A stream request may be answered with one JSON answer (the classifier
    // checked it as one): it is read as the unary answer it is.
    let json = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .map(str::trim)
        .is_some_and(|media| {
            media.eq_ignore_ascii_case("application/json")
                || media.to_ascii_lowercase().ends_with("+json")
        });
    // The first write to stdout that failed (a reader gone, a full disk):
    // the answer did not reach its user, whatever the provider sent.
    let mut unwritten: Option<std::io::Error> = None;
    let delivery = if session.stream && !json {
        // Text goes out as it arrives and is only counted, never kept.
        let reading = Reading {
            stop_after: None,
            keep_text: false,
        };
        let body = UntilStopped {
            body: response.into_body(),
            stop: Some(stop),
        };
        // Nobody reads the rest: the stream stops there, and dropping its
        // body cancels the generation rather than paying for all of it.
        caller::read_stream_with(None, body, provider, reading, |text| {
            match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
                Ok(()) => ControlFlow::Continue(()),
                Err(err) => {
                    unwritten = Some(err);
                    ControlFlow::Break(())
                }
            }
        })
        .await
    } else {
        // The library's verdict on the answer's finish, where it checked
        // one: it reads every choice (a second choice cut at its limit
        // behind a first one's stop), where the text shown is the first's.
        let checked = response
            .extensions()
            .get::<seawall::core::Finish>()
            .cloned();
        let body = UntilStopped {
            body: response.into_body(),
            stop: Some(stop),
        };
        let mut delivery =
            caller::read_unary_capped(body, provider, session.max_answer_bytes).await;
        if let Some(finish) = checked {
            delivery.finish_kind = Some(finish.kind);
            delivery.finish = Some(finish.reason.into_owned());
        }
        unwritten = out.write_all(delivery.text.as_bytes()).err();
        delivery
    };
    // The body has ended: what its continuations cost joins the receipt.
    let receipt = caller::whole_receipt(receipt, resumed.as_ref());
    let shown = delivery.content_events > 0;
    if unwritten.is_none() {
        // Only a terminal gets the newline: a pipe or a file gets exactly
        // the answer.
        let newline = session.out_is_terminal && (shown || delivery.error.is_none());
        let ended = if newline { writeln!(out) } else { Ok(()) };
        unwritten = ended.and_then(|()| out.flush()).err();
    }
    if let Some(err) = unwritten {
        // Whatever the answer was, its user does not have it.
        let _ = writeln!(
            log,
            "seawall chat: the answer could not be written to stdout: {err}"
        );
        let line = receipt_json(
            session.started,
            Verdict::Unwritten,
            receipt.as_ref(),
            &delivery,
        );
        let _ = writeln!(log, "{}", with_resumes(line, resumed.as_ref()));
        return 5;
    }
    if let Some(err) = &delivery.error {
        // The library's verdict decides: the failure the body's error
        // carries. A unary body that is not the provider's JSON is the
        // caller's own finding, in the same vocabulary.
        let not_json;
        let failure = match Failure::find(&**err) {
            Some(failure) => Some(failure),
            None if err.is::<NotAnAnswer>() => {
                not_json = Failure::new(Code::ProtocolViolation).with_message(&err.to_string());
                Some(&not_json)
            }
            None => None,
        };
        // A refusal or filter that ends a delivered answer is a verdict on
        // the answer, not a broken stream.
        let verdict =
            failure.is_some_and(|f| matches!(f.class(), Class::Policy | Class::ModelFixable));
        let (what, status, outcome) = match (shown, verdict) {
            (_, true) => (
                "the answer ended with a verdict",
                4,
                Verdict::Interrupted(failure),
            ),
            (true, false) => (
                "interrupted after content",
                3,
                Verdict::Interrupted(failure),
            ),
            (false, false) => ("no answer", 1, Verdict::Failed(failure)),
        };
        let shown_err: &dyn std::fmt::Display = match failure {
            Some(failure) => failure,
            None => err,
        };
        let _ = writeln!(log, "seawall chat: {what}: {shown_err}");
        let line = receipt_json(session.started, outcome, receipt.as_ref(), &delivery);
        let _ = writeln!(log, "{}", with_resumes(line, resumed.as_ref()));
        return status;
    }
    let complete = delivery.finish_kind.is_none_or(FinishKind::completes_task);
    if !complete {
        let _ = writeln!(
            log,
            "seawall chat: the answer is not complete (finish reason {:?})",
            delivery.finish.as_deref().unwrap_or_default()
        );
    }
    let line = receipt_json(
        session.started,
        Verdict::Delivered,
        receipt.as_ref(),
        &delivery,
    );
    let _ = writeln!(log, "{}", with_resumes(line, resumed.as_ref()));
    if complete { 0 } else { 4 }
}

type Stop = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// The chat was stopped by its user: `cancelled`.
fn stopped_failure() -> Failure {
    Failure::new(Code::Cancelled).with_message("stopped by the user (SIGINT or SIGTERM)")
}

pin_project_lite::pin_project! {
    /// The answer's body until the user stops the chat: then it ends with
    /// [`stopped_failure`], as a body that broke does, so what was shown
    /// is counted and the receipt says so.
    struct UntilStopped<B> {
        #[pin]
        body: B,
        stop: Option<Stop>,
    }
}

impl<B> Body for UntilStopped<B>
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, BoxError>>> {
        let this = self.project();
        let Some(stop) = this.stop.as_mut() else {
            return std::task::Poll::Ready(None);
        };
        if stop.as_mut().poll(cx).is_ready() {
            *this.stop = None;
            return std::task::Poll::Ready(Some(Err(stopped_failure().into())));
        }
        this.body.poll_frame(cx).map_err(Into::into)
    }
}

/// The receipt line with what the resume layer did, when it was on:
/// `resumed` (continuations spliced in) and `resumes` (each one's route,
/// delivered characters at the cut, attempt and failure before content).
fn with_resumes(line: String, resumed: Option<&Resumed>) -> String {
    let Some(resumed) = resumed else { return line };
    let Ok(mut value) = serde_json::from_str::<serde_json::Value>(&line) else {
        return line;
    };
    let report = resumed.report();
    value["resumed"] = json!(report.resumed());
    value["resumes"] = report
        .resumes
        .iter()
        .map(|r| {
            json!({
                "attempt": r.attempt,
                "route": r.route.as_ref().map(ToString::to_string),
                "delivered_chars": r.delivered_chars,
                "cause": r.cause.as_str(),
                "failed": r.failed.map(|c| c.as_str()),
                "spliced": r.spliced,
                "retrieved": r.retrieved,
                "trimmed_chars": r.trimmed_chars,
                // A fallback of another wire format answered; its text
                // was shown as the rest of this answer.
                "answered_in": r.answered_in.map(Provider::as_str),
            })
        })
        .collect();
    if let Some(reason) = report.gave_up {
        value["resume_gave_up"] = json!(reason);
    }
    value.to_string()
}

/// How a chat ended, for its receipt.
enum Verdict<'a> {
    Delivered,
    Failed(Option<&'a Failure>),
    Interrupted(Option<&'a Failure>),
    /// The answer could not be written to stdout (exit 5).
    Unwritten,
    Usage,
}

fn receipt_json(
    started: Instant,
    verdict: Verdict<'_>,
    receipt: Option<&Receipt>,
    delivery: &Delivery,
) -> String {
    let failure = match verdict {
        Verdict::Delivered | Verdict::Unwritten | Verdict::Usage => None,
        Verdict::Failed(failure) | Verdict::Interrupted(failure) => failure,
    };
    // The response's receipt, with its continuations, is the whole story;
    // a failure without a response carries its own.
    let receipt = receipt.or(failure.and_then(Failure::receipt));
    // A delivered answer that did not complete its task (cut at the token
    // limit, exit 4) is no "ok" to a script that reads only this: an
    // error, `truncated` (or the failure its finish amounts to), its
    // `finish_reason` kept — which tells it from a stream that ended
    // without its finish (exit 3, `truncated`, no finish reason).
    // Permanent: the same request is cut at the same limit again.
    let unfinished = match verdict {
        Verdict::Delivered => delivery
            .finish_kind
            .filter(|kind| !kind.completes_task())
            .map(|kind| match kind.failure() {
                Some(failure) => (failure.class(), failure.code()),
                None => (Class::Permanent, Code::Truncated),
            }),
        _ => None,
    };
    let class = match unfinished {
        Some((class, _)) => Some(class),
        None => failure.map(Failure::class),
    };
    let code = match verdict {
        Verdict::Delivered => unfinished.map(|(_, code)| code.as_str()),
        Verdict::Usage => Some("usage"),
        Verdict::Unwritten => Some("output_failed"),
        Verdict::Failed(_) | Verdict::Interrupted(_) => {
            Some(failure.map_or("unclassified", |f| f.code().as_str()))
        }
    };
    // Unknown without a receipt (stopped before any came back): `null`,
    // not a guess. The upstream calls (`Receipt::calls`), as the gateway
    // counts them: a breaker's refusal called no one.
    let attempts = match verdict {
        Verdict::Usage => Some(0),
        _ => receipt.map(Receipt::calls),
    };
    let outcome = match verdict {
        Verdict::Delivered if unfinished.is_none() => "ok",
        _ => "error",
    };
    let mut line = json!({
        "outcome": outcome,
        "class": class.map(Class::as_str),
        "code": code,
        "attempts": attempts,
        "routes": receipt.map(|r| r.routes().iter().map(|route| route.to_string()).collect::<Vec<_>>()).unwrap_or_default(),
        "fallback": receipt.is_some_and(|r| r.fallback),
        "finish_reason": delivery.finish,
        "content_events": delivery.content_events,
        // The provider's own counts: billed attempts (answered 2xx) and the
        // tokens they reported (a stream's once its body ended); beside
        // them the attempts cut after their request went out whole, before
        // any answer, which the provider may have run and billed (the
        // worst case is the sum).
        "billed": receipt.map_or(0, Receipt::billed_attempts),
        "may_be_billed": receipt.map_or(0, Receipt::may_be_billed_attempts),
        "input_tokens": receipt.map(|r| r.usage().input_tokens),
        "output_tokens": receipt.map(|r| r.usage().output_tokens),
        "elapsed_ms": millis(started.elapsed()),
    });
    if let Verdict::Interrupted(_) = verdict {
        line["delivered_chars"] = json!(delivery.chars);
    }
    line.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_lose_their_userinfo() {
        for (given, kept, had) in [
            (
                "http://user:secret@127.0.0.1:8080",
                "http://127.0.0.1:8080",
                true,
            ),
            ("https://k@api.example/v1/", "https://api.example/v1", true),
            ("https://a:b@c@api.example", "https://api.example", true),
            ("http://127.0.0.1:8080/", "http://127.0.0.1:8080", false),
        ] {
            let url = parse_base_url(given).unwrap();
            assert_eq!((url.as_str(), url.had_userinfo()), (kept, had), "{given}");
        }
        for refused in [
            "ftp://user:secret@host",
            "https://generativelanguage.googleapis.com?key=secret",
            "https://api.example/v1?key=secret",
            "https://api.example/v1#secret",
        ] {
            let err = parse_base_url(refused).unwrap_err();
            assert!(!err.contains("secret"), "{err}");
        }
    }

    /// `http` parses a port past 65535 and reads it as none, and the
    /// connector then goes to port 80 or 443 with the key: refused here,
    /// the URL not quoted.
    #[test]
    fn base_urls_with_a_port_no_connection_goes_to_are_refused() {
        for refused in [
            "http://127.0.0.1:80800",
            "http://user:secret@127.0.0.1:80800/v1",
            "https://api.example:65536",
            "http://127.0.0.1:abc",
            "http://127.0.0.1:",
            "http://127.0.0.1:0",
        ] {
            let err = parse_base_url(refused).unwrap_err();
            assert!(err.contains("port"), "{refused}: {err}");
            assert!(
                !err.contains("secret") && !err.contains("127.0.0.1"),
                "{err}"
            );
        }
        let url = parse_base_url("http://127.0.0.1:65535/v1").unwrap();
        assert_eq!(url.as_str(), "http://127.0.0.1:65535/v1");
    }

    #[test]
    fn messages_lose_the_userinfo_of_their_urls() {
        assert_eq!(
            redact_userinfo(
                "invalid value 'ftp://user:secret@host/x' and http://h:1 and https://k@h"
            ),
            "invalid value 'ftp://host/x' and http://h:1 and https://h"
        );
    }

    /// A key written in pieces, or on a line never ended, is scrubbed
    /// all the same; a key too short to tell from a word is left alone.
    #[test]
    fn stderr_lines_lose_the_keys_however_written() {
        let mut log = Vec::new();
        {
            let keys = vec!["sk-SECRET-0123".to_owned(), "short".to_owned()];
            let mut scrubbed = Scrubbed::new(&mut log, keys);
            scrubbed.write_all(b"401: Bearer sk-SEC").unwrap();
            scrubbed.write_all(b"RET-0123 is wrong, short\n").unwrap();
            write!(scrubbed, "url http://[::1]:1/v1?key=sk-SECRET-0123").unwrap();
        }
        assert_eq!(
            String::from_utf8(log).unwrap(),
            "401: Bearer [redacted] is wrong, short\nurl http://[::1]:1/v1"
        );
    }

    /// A line too long to hold is written in pieces, each ending before
    /// any key it may begin or hold across its end: a key is seen whole,
    /// never split with its rest shown at the next piece's start. A line
    /// that ends is not cut there: only a start of four bytes or more
    /// ending it is scrubbed.
    #[test]
    fn a_long_line_with_no_key_to_hide_goes_on_whole() {
        let line = "x".repeat(MAX_HELD_LINE + 1);
        for keys in [vec![], vec!["short".to_owned()]] {
            let mut log = Vec::new();
            {
                let mut scrubbed = Scrubbed::new(&mut log, keys);
                scrubbed.write_all(line.as_bytes()).unwrap();
            }
            assert_eq!(log, line.as_bytes());
        }
    }

    #[test]
    fn a_key_across_a_long_lines_piece_is_never_split() {
        const KEY: &str = "sk-SECRET-0123456789";
        let filler = "x".repeat(MAX_HELD_LINE);
        let mut log = Vec::new();
        {
            let mut scrubbed = Scrubbed::new(&mut log, vec![KEY.to_owned()]);
            // One write each: `write!` would hand the filler over alone.
            for piece in [
                format!("{filler} {}", &KEY[..10]),
                format!("{} was echoed\n", &KEY[10..]),
                format!("{filler} {}", &KEY[..2]),
                format!("{}\nkey sk-\nkey sk-S\n", &KEY[2..]),
                // Whole, but across where the piece would end.
                format!("{filler} {KEY} tail"),
                "\n".to_owned(),
            ] {
                scrubbed.write_all(piece.as_bytes()).unwrap();
            }
        }
        let log = String::from_utf8(log).unwrap();
        let shown = log.replace(&filler, "…");
        assert!(!shown.contains(&KEY[..10]), "{shown}");
        assert_eq!(
            shown,
            "… [redacted] was echoed\n\
             … [redacted]\n\
             key sk-\n\
             key [redacted]\n\
             … [redacted] tail\n"
        );
    }

    #[test]
    fn sizes_and_the_default_cap() {
        assert_eq!(parse_size("8MiB"), Ok(caller::DEFAULT_MAX_ANSWER_BYTES));
        assert_eq!(parse_size("65536"), Ok(65536));
        assert_eq!(parse_size("2 KiB"), Ok(2048));
        assert!(parse_size("2MB").is_err());
        assert!(parse_size("99999999999999999999GiB").is_err());
    }

    #[test]
    fn providers_by_name() {
        for (name, provider) in [
            ("openai", Provider::OpenAi),
            ("openai-responses", Provider::OpenAiResponses),
            ("openai_responses", Provider::OpenAiResponses),
            ("anthropic", Provider::Anthropic),
            ("gemini", Provider::Gemini),
        ] {
            assert_eq!(parse_provider(name), Ok(provider));
        }
        assert!(parse_provider("http").is_err());
    }
}

#[cfg(test)]
mod resume_tests {
    use clap::Parser;
    use seawall_chaos::{ChaosServer, Fault, answer_text};

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        chat: ChatArgs,
    }

    async fn chat(flags: &[&str], script: &[&str], provider: &str) -> (u8, String, String, usize) {
        let chaos = ChaosServer::builder().start().await.unwrap();
        let faults = script.iter().map(|f| f.parse::<Fault>().unwrap()).collect();
        chaos.script(provider, faults).unwrap();
        let base = chaos.base_url();
        let model = app::model(parse_provider(provider).unwrap());
        let mut argv = vec![
            "chat",
            "--provider",
            provider,
            "--base-url",
            &base,
            "--model",
            model,
            "--stream",
        ];
        argv.extend_from_slice(flags);
        argv.push("Count.");
        let args = Cli::try_parse_from(argv).unwrap().chat;
        let (mut out, mut log) = (Vec::new(), Vec::new());
        let status = run(args, &mut out, &mut log).await;
        (
            status,
            String::from_utf8(out).unwrap(),
            String::from_utf8(log).unwrap(),
            chaos.journal().len(),
        )
    }

    fn receipt(log: &str) -> serde_json::Value {
        serde_json::from_str(log.lines().last().unwrap()).unwrap()
    }

    #[tokio::test]
    async fn with_resume_a_reset_stream_is_one_answer() {
        let script = ["reset_after;tokens=400;total=600", "ok;tokens=600"];
        for provider in ["openai", "anthropic", "gemini"] {
            let (status, out, log, upstream) = chat(&["--resume"], &script, provider).await;
            assert_eq!(status, 0, "{provider}: {log}");
            assert_eq!(out, answer_text(600), "{provider}");
            assert_eq!(upstream, 2);
            let receipt = receipt(&log);
            assert_eq!(receipt["resumed"], 1, "{receipt}");
            assert_eq!(
                receipt["resumes"][0]["delivered_chars"],
                answer_text(400).len()
            );
        }
        // Without it: the interruption, as before.
        let (status, out, log, upstream) = chat(&[], &script, "openai").await;
        assert_eq!(status, 3);
        assert_eq!(out, answer_text(400));
        assert_eq!(upstream, 1);
        assert!(receipt(&log).get("resumes").is_none());
    }
}
