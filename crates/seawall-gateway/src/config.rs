//! The gateway's configuration: routes, the models they serve, the policy.
//!
//! Two sources give the same [`Config`]: a TOML file (`--config`), or the
//! command line alone (`--route NAME=WIRE@BASE_URL …`, see
//! [`GatewayArgs`](crate::GatewayArgs)). [`Config::validate`] checks it
//! before anything listens: unknown route names, a model whose routes speak
//! different wire formats, a fallback list that would carry one client's key
//! to another provider.
//!
//! ```toml
//! listen = "127.0.0.1:8787"
//! token_env = "SEAWALL_GATEWAY_TOKEN"   # clients send `Authorization: Bearer <it>`
//! preset = "interactive"                # or batch, reasoning
//! deadline = "60s"
//!
//! [[route]]
//! name = "openai"
//! wire = "openai"
//! base_url = "https://api.openai.com"
//! key_env = "OPENAI_API_KEY"
//!
//! [[route]]
//! name = "backup"
//! wire = "openai"
//! base_url = "https://openai-compatible.example.com"
//! key_env = "BACKUP_KEY"
//! model = "gpt-4o-mini-backup"          # the model name this route knows
//! preset = "batch"
//!
//! [models]
//! "gpt-4o-mini" = ["openai", "backup"]  # primary, then fallbacks in order
//! "*" = ["openai"]                      # every other model
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::Duration;

use seawall::core::provider::Provider;
use serde::{Deserialize, Deserializer};

/// The default listen address: loopback only.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8787";
/// The default cap on a request body: 8 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 8 << 20;
/// The default time in-flight answers get to finish after a shutdown signal.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// The default time a write to a client may wait for the client to read.
pub const DEFAULT_CLIENT_STALL: Duration = Duration::from_secs(60);
/// The default cap on client connections open at once: half a common
/// descriptor limit (1024), leaving the other half for the upstream
/// connections their calls need.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;
/// The model key whose routes serve every model not listed by name.
pub const ANY_MODEL: &str = "*";

/// A provider wire format the gateway serves and speaks upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Wire {
    /// OpenAI: `POST /v1/chat/completions` and `POST /v1/responses`.
    #[serde(rename = "openai")]
    OpenAi,
    /// Anthropic messages: `POST /v1/messages`.
    Anthropic,
}

impl Wire {
    /// `openai` or `anthropic`.
    pub fn as_str(self) -> &'static str {
        match self {
            Wire::OpenAi => "openai",
            Wire::Anthropic => "anthropic",
        }
    }

    /// The endpoints this wire format's routes serve.
    pub fn endpoints(self) -> &'static [Endpoint] {
        match self {
            Wire::OpenAi => &[
                Endpoint::ChatCompletions,
                Endpoint::Responses,
                Endpoint::Embeddings,
            ],
            Wire::Anthropic => &[Endpoint::Messages, Endpoint::CountTokens],
        }
    }
}

/// An endpoint the gateway serves, at the same path upstream.
///
/// A route speaks one [`Wire`] (its authentication, its error shapes) and
/// serves every endpoint of it, so one route and one model list answer
/// chat completions, the Responses API and embeddings alike (each with a
/// stack of its own: the answers differ in shape). An app pointing its
/// base URL at the gateway keeps working for the calls beside generation
/// it makes on the same models: embeddings, Anthropic's token count. Those
/// are retried and failed over as any call. Their answers are not checked
/// for content (they are not generations), but must be JSON: a 2xx that
/// is not, or has no body, fails as `protocol_violation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// `POST /v1/chat/completions` (OpenAI wire).
    ChatCompletions,
    /// `POST /v1/responses`: OpenAI's Responses API (OpenAI wire).
    Responses,
    /// `POST /v1/embeddings` (OpenAI wire).
    Embeddings,
    /// `POST /v1/messages` (Anthropic wire).
    Messages,
    /// `POST /v1/messages/count_tokens` (Anthropic wire).
    CountTokens,
}

impl Endpoint {
    /// The wire format whose routes serve it.
    pub fn wire(self) -> Wire {
        match self {
            Endpoint::ChatCompletions | Endpoint::Responses | Endpoint::Embeddings => Wire::OpenAi,
            Endpoint::Messages | Endpoint::CountTokens => Wire::Anthropic,
        }
    }

    /// Whether its event stream has no `[DONE]` marker of its own (the
    /// Responses API's ends with its terminal event, Anthropic's with
    /// `message_stop`): one sent there is relayed to no client.
    pub(crate) fn has_no_done_marker(self) -> bool {
        matches!(self, Endpoint::Responses | Endpoint::Messages)
    }

    /// Its path, here and upstream.
    pub fn path(self) -> &'static str {
        match self {
            Endpoint::ChatCompletions => "/v1/chat/completions",
            Endpoint::Responses => "/v1/responses",
            Endpoint::Embeddings => "/v1/embeddings",
            Endpoint::Messages => "/v1/messages",
            Endpoint::CountTokens => "/v1/messages/count_tokens",
        }
    }

    /// Its path without `/v1`, also served for OpenAI's endpoints: an
    /// OpenAI SDK given the gateway's bare address as its base URL (no
    /// `/v1`, as the gateway prints it) calls `/chat/completions`.
    /// Anthropic's SDKs add `/v1` themselves.
    pub fn unversioned_path(self) -> Option<&'static str> {
        match self.wire() {
            Wire::OpenAi => self.path().strip_prefix("/v1"),
            Wire::Anthropic => None,
        }
    }

    /// The provider whose errors it carries, and whose answers and streams
    /// on the generation endpoints (the stack reads the path for that: an
    /// embedding is never checked as a chat answer).
    pub fn provider(self) -> Provider {
        match self {
            Endpoint::ChatCompletions | Endpoint::Embeddings => Provider::OpenAi,
            Endpoint::Responses => Provider::OpenAiResponses,
            Endpoint::Messages | Endpoint::CountTokens => Provider::Anthropic,
        }
    }
}

impl std::str::FromStr for Wire {
    type Err = ConfigError;

    fn from_str(text: &str) -> Result<Self, ConfigError> {
        match text {
            "openai" => Ok(Wire::OpenAi),
            "anthropic" => Ok(Wire::Anthropic),
            other => Err(ConfigError::Invalid(format!(
                "unknown wire format `{other}` (openai or anthropic)"
            ))),
        }
    }
}

/// The policy preset of [`seawall::stack::Stack`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Preset {
    /// A person is waiting (the default).
    #[default]
    Interactive,
    /// Nobody is waiting.
    Batch,
    /// A model that thinks before it writes.
    Reasoning,
}

impl std::str::FromStr for Preset {
    type Err = ConfigError;

    fn from_str(text: &str) -> Result<Self, ConfigError> {
        match text {
            "interactive" => Ok(Preset::Interactive),
            "batch" => Ok(Preset::Batch),
            "reasoning" => Ok(Preset::Reasoning),
            other => Err(ConfigError::Invalid(format!(
                "unknown preset `{other}` (interactive, batch or reasoning)"
            ))),
        }
    }
}

/// The policy knobs on top of a preset; `None` keeps the preset's value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StackPolicy {
    /// The preset.
    pub preset: Preset,
    /// The operation's deadline.
    pub deadline: Option<Duration>,
    /// The bound on one attempt.
    pub attempt_timeout: Option<Duration>,
    /// The stream guard's first-byte bound.
    pub first_byte_timeout: Option<Duration>,
    /// The stream guard's first-content bound.
    pub first_content_timeout: Option<Duration>,
    /// The stream guard's idle bound after content.
    pub idle_timeout: Option<Duration>,
}

/// One upstream route.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteConfig {
    /// The route's name: in `x-seawall-served-by`, receipts, logs and the
    /// breaker.
    pub name: String,
    /// Its wire format.
    pub wire: Wire,
    /// Scheme, host, port and any path prefix before `/v1`.
    pub base_url: String,
    /// The environment variable holding the route's own key. Without one,
    /// the client's own `Authorization` / `x-api-key` is forwarded — so
    /// the keyless routes of one wire must all share one base URL (scheme,
    /// host, port and path), or a client's key would reach a provider it
    /// was not meant for.
    #[serde(default)]
    pub key_env: Option<String>,
    /// The model name to send this route instead of the client's.
    #[serde(default)]
    pub model: Option<String>,
    /// This route's preset, when not the gateway's (applies to a model this
    /// route is the primary of, and to its own attempts as a fallback).
    #[serde(default)]
    pub preset: Option<Preset>,
}

/// The whole configuration. Build it from a file ([`Config::from_toml`]) or
/// from the command line ([`GatewayArgs`](crate::GatewayArgs)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Where to listen (default `127.0.0.1:8787`).
    pub listen: SocketAddr,
    /// The environment variable holding the gateway's own client token.
    pub token_env: Option<String>,
    /// The largest request body accepted (default 8 MiB). A body is
    /// refused with a 408 when nothing of it comes for 60 s, or when it is
    /// not whole within a minute plus this cap's worth at 8 KiB/s (18 min
    /// for 8 MiB): a larger cap gives a slow upload more time.
    pub max_body_bytes: usize,
    /// How long in-flight answers may run on after a shutdown signal.
    pub shutdown_grace: Duration,
    /// How long a write to a client may wait for room (default 60 s): a
    /// client that stopped reading, or vanished without closing, holds its
    /// answer, its upstream call and its retries no longer than that once
    /// the kernel's buffers toward it are full (the connection is closed,
    /// the call counted `cancelled`).
    pub client_stall: Duration,
    /// How many client connections may be open at once (default 512); past
    /// it, new ones wait in the listener's backlog until one closes (each
    /// serving thread holds at most one accepted connection waiting for
    /// its slot). A new connection that sends no request within 5 s is
    /// dropped, so connections left idle cannot hold every slot for long.
    /// Unbounded, a client holding idle connections could take every
    /// descriptor, and the upstream connections that then failed to open
    /// were counted against healthy routes. Keep it well below the
    /// process's descriptor limit (`ulimit -n`): each call also opens or
    /// reuses an upstream connection.
    pub max_connections: usize,
    /// The policy for every route without its own preset.
    pub policy: StackPolicy,
    /// The routes, by name.
    pub routes: Vec<RouteConfig>,
    /// Model name (or [`ANY_MODEL`]) → its routes, primary first.
    pub models: BTreeMap<String, Vec<String>>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: DEFAULT_LISTEN.parse().expect("a valid literal address"),
            token_env: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
            client_stall: DEFAULT_CLIENT_STALL,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            policy: StackPolicy::default(),
            routes: Vec::new(),
            models: BTreeMap::new(),
        }
    }
}

/// A configuration the gateway cannot run with. The message names the
/// field and never a key's value. More reasons may come: a match on it
/// needs a wildcard arm.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not UTF-8 text, not valid TOML, or has unknown fields.
    #[error("{0}")]
    Parse(String),
    /// The configuration is inconsistent.
    #[error("{0}")]
    Invalid(String),
}

/// The file form: every field optional, so flags can fill or override.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    listen: Option<SocketAddr>,
    token_env: Option<String>,
    max_body_bytes: Option<usize>,
    #[serde(default, deserialize_with = "opt_duration")]
    shutdown_grace: Option<Duration>,
    #[serde(default, deserialize_with = "opt_duration")]
    client_stall: Option<Duration>,
    max_connections: Option<usize>,
    preset: Option<Preset>,
    #[serde(default, deserialize_with = "opt_duration")]
    deadline: Option<Duration>,
    #[serde(default, deserialize_with = "opt_duration")]
    attempt_timeout: Option<Duration>,
    #[serde(default, deserialize_with = "opt_duration")]
    first_byte_timeout: Option<Duration>,
    #[serde(default, deserialize_with = "opt_duration")]
    first_content_timeout: Option<Duration>,
    #[serde(default, deserialize_with = "opt_duration")]
    idle_timeout: Option<Duration>,
    #[serde(default)]
    route: Vec<RouteConfig>,
    #[serde(default)]
    models: BTreeMap<String, Vec<String>>,
}

/// A duration in the file: a string as [`parse_duration`] reads it
/// (`"30s"`, `"500ms"`, `"2m"`), or a number of seconds (`30`, `1.5`).
fn opt_duration<'de, D: Deserializer<'de>>(de: D) -> Result<Option<Duration>, D::Error> {
    struct Seconds;

    impl serde::de::Visitor<'_> for Seconds {
        type Value = Duration;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a duration: a string such as \"30s\" or \"500ms\", or a number of seconds")
        }

        fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Duration, E> {
            parse_duration(text).map_err(E::custom)
        }

        fn visit_u64<E: serde::de::Error>(self, seconds: u64) -> Result<Duration, E> {
            Ok(Duration::from_secs(seconds))
        }

        fn visit_i64<E: serde::de::Error>(self, seconds: i64) -> Result<Duration, E> {
            u64::try_from(seconds)
                .map(Duration::from_secs)
                .map_err(|_| E::custom(format!("{seconds} is not a duration: it is below zero")))
        }

        fn visit_f64<E: serde::de::Error>(self, seconds: f64) -> Result<Duration, E> {
            if seconds.is_nan() || seconds.is_infinite() {
                return Err(E::custom(format!(
                    "{seconds} is not a duration: give a number of seconds or a string such as \"30s\""
                )));
            }
            if seconds < 0.0 {
                return Err(E::custom(format!(
                    "{seconds} is not a duration: it is below zero"
                )));
            }
            Duration::try_from_secs_f64(seconds)
                .map_err(|_| E::custom(format!("{seconds} seconds is out of range")))
        }
    }

    de.deserialize_any(Seconds).map(Some)
}

impl Config {
    /// Reads a TOML file (see the [module docs](self) for its shape).
    pub fn from_file(path: &std::path::Path) -> Result<Config, ConfigError> {
        let bytes = std::fs::read(path).map_err(|source| ConfigError::Read {
            path: path.display().to_string(),
            source,
        })?;
        // Read, but no TOML: its content is wrong, as for any other parse
        // error (not the machine's failure to read it).
        let text = String::from_utf8(bytes).map_err(|err| {
            let valid = &err.as_bytes()[..err.utf8_error().valid_up_to()];
            let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
            ConfigError::Parse(format!(
                "{}: line {line}: not UTF-8 text (a TOML file is UTF-8; was it saved in \
                 another encoding?)",
                path.display()
            ))
        })?;
        Config::from_toml(&text)
    }

    /// Parses TOML text (see the [module docs](self) for its shape).
    pub fn from_toml(text: &str) -> Result<Config, ConfigError> {
        let file: File = toml::from_str(text).map_err(|e| parse_error(text, &e))?;
        let defaults = Config::default();
        Ok(Config {
            listen: file.listen.unwrap_or(defaults.listen),
            token_env: file.token_env,
            max_body_bytes: file.max_body_bytes.unwrap_or(defaults.max_body_bytes),
            shutdown_grace: file.shutdown_grace.unwrap_or(defaults.shutdown_grace),
            client_stall: file.client_stall.unwrap_or(defaults.client_stall),
            max_connections: file.max_connections.unwrap_or(defaults.max_connections),
            policy: StackPolicy {
                preset: file.preset.unwrap_or_default(),
                deadline: file.deadline,
                attempt_timeout: file.attempt_timeout,
                first_byte_timeout: file.first_byte_timeout,
                first_content_timeout: file.first_content_timeout,
                idle_timeout: file.idle_timeout,
            },
            routes: file.route,
            models: file.models,
        })
    }

    /// A configuration from `--route NAME=WIRE@BASE_URL` values: the first
    /// route is the primary for every model, the others its fallbacks in
    /// order.
    pub fn from_routes<S: AsRef<str>>(routes: &[S]) -> Result<Config, ConfigError> {
        let mut config = Config::default();
        for spec in routes {
            config.routes.push(parse_route(spec.as_ref())?);
        }
        let names = config.routes.iter().map(|r| r.name.clone()).collect();
        config.models.insert(ANY_MODEL.to_owned(), names);
        Ok(config)
    }

    /// Gives route `name` the key in environment variable `env`
    /// (`--route-key NAME=ENV_VAR`).
    pub fn set_route_key(&mut self, name: &str, env: &str) -> Result<(), ConfigError> {
        match self.routes.iter_mut().find(|r| r.name == name) {
            Some(route) => {
                route.key_env = Some(env.to_owned());
                Ok(())
            }
            None => Err(ConfigError::Invalid(format!(
                "--route-key {name}=…: no route named `{name}`"
            ))),
        }
    }

    /// The route named `name`.
    pub fn route(&self, name: &str) -> Option<&RouteConfig> {
        self.routes.iter().find(|r| r.name == name)
    }

    /// Checks the configuration as a whole; [`Gateway`](crate::Gateway)
    /// calls it before building anything.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |message: String| Err(ConfigError::Invalid(message));
        if self.routes.is_empty() {
            return invalid("no routes: give --route NAME=WIRE@BASE_URL or a config file".into());
        }
        if self.client_stall.is_zero() {
            return invalid("client_stall must be longer than zero".into());
        }
        if self.max_connections == 0 {
            return invalid("max_connections must be at least 1".into());
        }
        // A zero bound is no bound the stack can keep: every request would
        // fail at once, after the gateway had started and said nothing.
        let policy = &self.policy;
        for (key, bound) in [
            ("deadline", policy.deadline),
            ("attempt_timeout", policy.attempt_timeout),
            ("first_byte_timeout", policy.first_byte_timeout),
            ("first_content_timeout", policy.first_content_timeout),
            ("idle_timeout", policy.idle_timeout),
        ] {
            if bound.is_some_and(|bound| bound.is_zero()) {
                return invalid(format!(
                    "{key} must be longer than zero (0 would fail every request at once); \
                     leave it out for the preset's"
                ));
            }
        }
        let mut seen = BTreeSet::new();
        for route in &self.routes {
            if route.name.is_empty()
                || !route
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            {
                return invalid(format!(
                    "route name `{}`: use letters, digits, `-`, `_` or `.`",
                    route.name
                ));
            }
            if !seen.insert(route.name.as_str()) {
                return invalid(format!("route `{}` is defined twice", route.name));
            }
            check_base_url(&route.base_url)
                .map_err(|e| ConfigError::Invalid(format!("route `{}`: {e}", route.name)))?;
        }
        if self.models.is_empty() {
            return invalid("no models: map at least one model (or \"*\") to its routes".into());
        }
        if self.max_body_bytes == 0 {
            return invalid("max_body_bytes must be at least 1".into());
        }
        // The bases of the keyless routes each wire's clients reach, over
        // every model: a client's key goes to whichever its model names.
        // The whole base, not its host: one host may front several
        // providers under their own paths (an AI gateway's `/openai` and
        // `/groq`), and `http://` would carry the key in cleartext.
        let mut keyless_bases: Vec<(Wire, BTreeSet<String>)> = Vec::new();
        for (model, names) in &self.models {
            let Some(first) = names.first() else {
                return invalid(format!("model `{model}` has no routes"));
            };
            let mut wires = Vec::new();
            let mut listed = BTreeSet::new();
            for name in names {
                let Some(route) = self.route(name) else {
                    return invalid(format!("model `{model}`: no route named `{name}`"));
                };
                if !listed.insert(name.as_str()) {
                    return invalid(format!("model `{model}` lists route `{name}` twice"));
                }
                wires.push((name.as_str(), route.wire));
                if route.key_env.is_none() {
                    let base = keyless_base(route.base());
                    match keyless_bases
                        .iter_mut()
                        .find(|(wire, _)| *wire == route.wire)
                    {
                        Some((_, bases)) => {
                            bases.insert(base);
                        }
                        None => keyless_bases.push((route.wire, BTreeSet::from([base]))),
                    }
                }
            }
            let primary_wire = wires[0].1;
            if let Some((other, wire)) = wires.iter().find(|(_, w)| *w != primary_wire) {
                return invalid(format!(
                    "model `{model}`: route `{first}` speaks {} but route `{other}` speaks {}; \
                     the routes of one model must share one wire format (the gateway passes \
                     the provider's bytes through, it does not translate)",
                    primary_wire.as_str(),
                    wire.as_str()
                ));
            }
        }
        if let Some((wire, bases)) = keyless_bases.iter().find(|(_, bases)| bases.len() > 1) {
            return invalid(format!(
                "{} routes without their own key on different base URLs ({}), for one model \
                 or several: a client's key would be sent to a provider it was not meant for \
                 (or in cleartext) — give all but one base's routes a key (--route-key / \
                 key_env)",
                wire.as_str(),
                bases.iter().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
        Ok(())
    }
}

/// toml's own message and where it is, never the line it is on: toml's
/// `Display` quotes the line, and a key written into the file by mistake
/// (`api_key = "sk-…"`, an unknown field) would be printed back.
fn parse_error(text: &str, error: &toml::de::Error) -> ConfigError {
    let Some(at) = error.span().map(|span| span.start.min(text.len())) else {
        return ConfigError::Parse(error.message().trim_end().to_owned());
    };
    let before = text.get(..at).unwrap_or("");
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    ConfigError::Parse(format!(
        "line {line}, column {column}: {}",
        error.message().trim_end()
    ))
}

impl RouteConfig {
    /// The base every request to this route starts with: `base_url`
    /// without a trailing `/` or `/v1` (the endpoint's path brings its
    /// own `/v1`).
    pub(crate) fn base(&self) -> &str {
        let trimmed = self.base_url.trim_end_matches('/');
        trimmed.strip_suffix("/v1").unwrap_or(trimmed)
    }
}

/// `base` (a checked [`RouteConfig::base`]) as the place a key goes to:
/// scheme, host and port, and the path, compared as the network does —
/// the scheme and host in lowercase, the scheme's default port left out.
/// Two spellings of one base are one place; anything else is another.
fn keyless_base(base: &str) -> String {
    let Ok(uri) = base.parse::<http::Uri>() else {
        return base.to_owned();
    };
    let scheme = uri.scheme_str().unwrap_or_default().to_ascii_lowercase();
    let host = uri.host().unwrap_or_default().to_ascii_lowercase();
    let port = match (scheme.as_str(), uri.port_u16()) {
        ("http", Some(80)) | ("https", Some(443)) | (_, None) => String::new(),
        (_, Some(port)) => format!(":{port}"),
    };
    let path = uri.path().trim_end_matches('/');
    format!("{scheme}://{host}{port}{path}")
}

/// `NAME=WIRE@BASE_URL`.
pub(crate) fn parse_route(spec: &str) -> Result<RouteConfig, ConfigError> {
    // Quoted without secrets: a URL in the wrong place may carry a key.
    let bad = || {
        ConfigError::Invalid(format!(
            "--route `{}`: expected NAME=WIRE@BASE_URL, e.g. main=openai@https://api.openai.com",
            seawall::core::without_url_secrets(spec)
        ))
    };
    let (name, rest) = spec.split_once('=').ok_or_else(bad)?;
    let (wire, base_url) = rest.split_once('@').ok_or_else(bad)?;
    // The wire's own error would quote what it read (`https://user:key`).
    let wire = wire.trim().parse().map_err(|_| {
        ConfigError::Invalid(format!(
            "--route `{}`: the wire format is openai or anthropic (NAME=WIRE@BASE_URL)",
            seawall::core::without_url_secrets(spec)
        ))
    })?;
    Ok(RouteConfig {
        name: name.trim().to_owned(),
        wire,
        base_url: base_url.trim().to_owned(),
        key_env: None,
        model: None,
        preset: None,
    })
}

fn check_base_url(text: &str) -> Result<(), String> {
    let uri: http::Uri = text
        .parse()
        .map_err(|e| format!("base_url is not a URL: {e}"))?;
    // The endpoint's path is appended to the base: a query there would end
    // up in the middle of the URL (`…?api-version=x/v1/chat/completions`).
    if uri.query().is_some() || text.contains('#') {
        return Err(
            "base_url must not carry a query or a fragment: the endpoint's path is appended to it"
                .to_owned(),
        );
    }
    let authority = match (uri.scheme_str(), uri.authority()) {
        (Some("http" | "https"), Some(authority)) if !authority.as_str().contains('@') => authority,
        (Some("http" | "https"), Some(_)) => {
            return Err("base_url must not carry credentials; use key_env".to_owned());
        }
        _ => return Err("base_url must be an http:// or https:// URL with a host".to_owned()),
    };
    // `http` reads no port in `:80800` (nor `:abc`, `:`), and the
    // connector then goes to 80 or 443: the route's requests, with their
    // key, would reach another server than the one configured.
    match seawall_internal::uri::port_error(authority) {
        Some(why) => Err(format!("base_url: {why}")),
        None => Ok(()),
    }
}

/// `500ms`, `30s`, `2m`, `1h`, or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, scale) = if let Some(n) = text.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = text.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (text, 1.0)
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a duration (e.g. 30s, 500ms, 2m)"))?;
    if !(value.is_finite() && value >= 0.0) {
        return Err(format!("`{text}` is not a duration"));
    }
    Duration::try_from_secs_f64(value * scale).map_err(|_| format!("`{text}` is out of range"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A duration in the file may be a number of seconds, as
    /// [`parse_duration`] reads a bare number; one below zero, NaN or
    /// infinite is refused, where it is.
    #[test]
    fn durations_in_the_file_may_be_numbers_of_seconds() {
        let config = Config::from_toml(
            "deadline = 30\nattempt_timeout = 1.5\nidle_timeout = \"2m\"\nshutdown_grace = 0\n",
        )
        .unwrap();
        assert_eq!(config.policy.deadline, Some(Duration::from_secs(30)));
        assert_eq!(
            config.policy.attempt_timeout,
            Some(Duration::from_millis(1500))
        );
        assert_eq!(config.policy.idle_timeout, Some(Duration::from_secs(120)));
        assert_eq!(config.shutdown_grace, Duration::ZERO);
        for (bad, says) in [
            ("-5", "below zero"),
            ("-0.5", "below zero"),
            ("nan", "not a duration"),
            ("inf", "not a duration"),
            ("-inf", "not a duration"),
            ("1e300", "out of range"),
            ("true", "a number of seconds"),
        ] {
            let err = Config::from_toml(&format!("listen = \"127.0.0.1:1\"\ndeadline = {bad}\n"))
                .unwrap_err();
            assert!(matches!(err, ConfigError::Parse(_)), "{bad}: {err}");
            let text = err.to_string();
            assert!(text.contains(says), "{bad}: {text}");
            assert!(text.starts_with("line 2,"), "{bad}: {text}");
        }
    }

    /// A file read but not UTF-8 is bad content (a parse error, exit 2),
    /// not a file that could not be read (exit 1).
    #[test]
    fn a_file_that_is_not_utf8_is_a_parse_error() {
        let path = std::env::temp_dir().join(format!(
            "seawall-gateway-not-utf8-{}.toml",
            std::process::id()
        ));
        std::fs::write(&path, b"listen = \"127.0.0.1:1\"\ndeadline = \"30\xffs\"\n").unwrap();
        let err = Config::from_file(&path).unwrap_err();
        let _ = std::fs::remove_file(&path);
        assert!(matches!(err, ConfigError::Parse(_)), "{err:?}");
        let text = err.to_string();
        assert!(text.contains("line 2"), "{text}");
        assert!(text.contains("not UTF-8"), "{text}");
        // A file that is not there is still the machine's failure; the
        // error names the file and its source says why, once.
        let err = Config::from_file(&path).unwrap_err();
        assert!(matches!(err, ConfigError::Read { .. }), "{err:?}");
        let why = std::error::Error::source(&err)
            .expect("the io error")
            .to_string();
        assert!(!err.to_string().contains(&why), "{err}");
        let chain = seawall_internal::error::chain_text(&err, 4096);
        assert_eq!(chain.matches(&why).count(), 1, "{chain}");
        let err = crate::GatewayError::from(err);
        assert!(err.to_string().starts_with("cannot read"), "{err}");
        let chain = seawall_internal::error::chain_text(&err, 4096);
        assert!(chain.contains("cannot read"), "{chain}");
        assert_eq!(chain.matches(&why).count(), 1, "{chain}");
    }

    #[test]
    fn routes_from_flags_serve_every_model() {
        let config = Config::from_routes(&[
            "main=openai@http://127.0.0.1:1",
            "backup=openai@http://127.0.0.1:2/",
        ])
        .unwrap();
        assert_eq!(config.models[ANY_MODEL], vec!["main", "backup"]);
        assert_eq!(config.routes[0].wire, Wire::OpenAi);
        // Two keyless routes on different hosts: one client key, two providers.
        let err = config.validate().unwrap_err().to_string();
        assert!(err.contains("without their own key"), "{err}");
    }

    /// A client's key goes to whichever keyless route its model names:
    /// two models whose keyless routes are on two hosts send one client's
    /// key to both, as two routes of one model would.
    #[test]
    fn keyless_routes_of_one_wire_share_a_host_across_models() {
        let toml = |second: &str| {
            format!(
                r#"
                [[route]]
                name = "openai"
                wire = "openai"
                base_url = "https://api.openai.com"

                [[route]]
                name = "other"
                wire = "openai"
                base_url = "{second}"

                [models]
                "gpt-4o" = ["openai"]
                "*" = ["other"]
                "#
            )
        };
        let config = Config::from_toml(&toml("https://api.groq.com/openai")).unwrap();
        let err = config.validate().unwrap_err().to_string();
        assert!(err.contains("without their own key"), "{err}");
        assert!(err.contains("api.groq.com"), "{err}");
        // The same host for both: one provider, one key.
        let config = Config::from_toml(&toml("https://api.openai.com/v1")).unwrap();
        config.validate().unwrap();
    }

    /// One host may front several providers, each under its own path (an
    /// AI gateway's `/openai`, `/groq`), and `http://` sends the key in
    /// cleartext: keyless routes share a client's key only when the base
    /// the gateway sends to is the same — scheme, host and path.
    #[test]
    fn keyless_routes_of_one_wire_share_scheme_host_and_path() {
        let validate = |a: &str, b: &str| {
            Config::from_routes(&[format!("oa=openai@{a}"), format!("groq=openai@{b}")])
                .unwrap()
                .validate()
        };
        let err = validate("https://ai-gw.corp/openai", "https://ai-gw.corp/groq")
            .unwrap_err()
            .to_string();
        assert!(err.contains("without their own key"), "{err}");
        assert!(err.contains("https://ai-gw.corp/groq"), "{err}");
        let err = validate("https://ai-gw.corp", "http://ai-gw.corp")
            .unwrap_err()
            .to_string();
        assert!(err.contains("without their own key"), "{err}");
        // One base however it is spelt: the requests go to the same URLs.
        validate(
            "https://AI-GW.corp:443/openai/v1/",
            "https://ai-gw.corp/openai",
        )
        .unwrap();
        validate("http://127.0.0.1:80", "http://127.0.0.1/").unwrap();
        // A key of its own: the client's key goes to one base only.
        let mut config = Config::from_routes(&[
            "oa=openai@https://ai-gw.corp/openai",
            "groq=openai@https://ai-gw.corp/groq",
        ])
        .unwrap();
        config.set_route_key("groq", "GROQ_KEY").unwrap();
        config.validate().unwrap();
    }

    #[test]
    fn cross_format_is_rejected_at_load() {
        let mut config = Config::from_routes(&[
            "a=openai@http://127.0.0.1:1",
            "b=anthropic@http://127.0.0.1:2",
        ])
        .unwrap();
        config.set_route_key("b", "B_KEY").unwrap();
        let err = config.validate().unwrap_err().to_string();
        assert!(err.contains("must share one wire format"), "{err}");
        assert!(err.contains("`a` speaks openai"), "{err}");
    }

    #[test]
    fn file_form() {
        let config = Config::from_toml(
            r#"
            listen = "127.0.0.1:9000"
            token_env = "GW_TOKEN"
            deadline = "30s"
            first_byte_timeout = "250ms"
            [[route]]
            name = "a"
            wire = "anthropic"
            base_url = "https://api.anthropic.com"
            key_env = "ANTHROPIC_API_KEY"
            [[route]]
            name = "b"
            wire = "anthropic"
            base_url = "https://other.example.com"
            key_env = "OTHER"
            model = "claude-x"
            preset = "batch"
            [models]
            "claude-3" = ["a", "b"]
            "#,
        )
        .unwrap();
        config.validate().unwrap();
        assert_eq!(config.policy.deadline, Some(Duration::from_secs(30)));
        assert_eq!(
            config.policy.first_byte_timeout,
            Some(Duration::from_millis(250))
        );
        assert_eq!(config.route("b").unwrap().preset, Some(Preset::Batch));
        assert!(Config::from_toml("nonsense = 1").is_err());
    }

    /// A zero bound fails every request at once: refused at load, naming
    /// the key, whether it came from the file or a flag.
    #[test]
    fn zero_policy_bounds_are_rejected_by_name() {
        for key in [
            "deadline",
            "attempt_timeout",
            "first_byte_timeout",
            "first_content_timeout",
            "idle_timeout",
        ] {
            let config = Config::from_toml(&format!(
                "{key} = \"0s\"\n[[route]]\nname = \"a\"\nwire = \"openai\"\n\
                 base_url = \"https://api.example.com\"\n[models]\n\"*\" = [\"a\"]\n"
            ))
            .unwrap();
            let err = config.validate().unwrap_err().to_string();
            assert!(
                err.starts_with(&format!("{key} must be longer than zero")),
                "{err}"
            );
            // A bound above zero is kept.
            let config = Config::from_toml(&format!(
                "{key} = \"1ms\"\n[[route]]\nname = \"a\"\nwire = \"openai\"\n\
                 base_url = \"https://api.example.com\"\n[models]\n\"*\" = [\"a\"]\n"
            ))
            .unwrap();
            config.validate().unwrap();
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn base_urls_never_carry_credentials() {
        let config =
            Config::from_routes(&["a=openai@https://user:sk-secret@api.example.com"]).unwrap();
        let err = config.validate().unwrap_err().to_string();
        assert!(!err.contains("sk-secret"), "{err}");
    }

    /// An error about the file or a `--route` never prints a key written
    /// where it does not belong.
    #[test]
    fn configuration_errors_never_quote_a_key() {
        let toml = "listen = \"127.0.0.1:8787\"\n[[route]]\nname = \"a\"\nwire = \"openai\"\nbase_url = \"https://api.example.com\"\napi_key = \"sk-secret\"\n";
        let err = Config::from_toml(toml).unwrap_err().to_string();
        assert!(!err.contains("sk-secret"), "{err}");
        assert!(err.contains("line 6") && err.contains("api_key"), "{err}");
        for spec in [
            "main=https://user:sk-secret@api.example.com",
            "main:openai@https://u:sk-secret@api.example.com",
            "main=openai",
            "main:openai@https://api.example.com?key=sk-secret",
            // An IPv6 host's brackets do not end the quoted URL early.
            "main:openai@http://[::1]:8080/v1?key=sk-secret",
            "main:openai@http://u:sk-secret@[::1]:8080/v1",
        ] {
            let err = Config::from_routes(&[spec]).unwrap_err().to_string();
            assert!(!err.contains("sk-secret"), "{err}");
            assert!(err.contains("--route"), "{err}");
        }
    }

    /// A port `http` parses but reads as none (past 65535, not digits)
    /// would send the route's requests, and their keys, to the scheme's
    /// default port: the configuration is refused, the URL not quoted.
    #[test]
    fn base_urls_with_a_port_no_connection_goes_to_are_refused() {
        for url in [
            "http://llm.internal:80800",
            "https://llm.internal:65536/v1",
            "http://llm.internal:abc",
            "http://llm.internal:",
            "http://llm.internal:0",
            "http://[::1]:99999",
        ] {
            let config = Config::from_routes(&[format!("main=openai@{url}").as_str()]).unwrap();
            let err = config.validate().unwrap_err().to_string();
            assert!(
                err.contains("route `main`") && err.contains("port"),
                "{url}: {err}"
            );
            assert!(!err.contains("llm.internal"), "{err}");
        }
        for url in ["http://llm.internal:65535", "http://[::1]:8080/v1"] {
            let config = Config::from_routes(&[format!("main=openai@{url}").as_str()]).unwrap();
            config.validate().unwrap();
        }
    }

    #[test]
    fn base_urls_carry_no_query() {
        for url in [
            "https://example.openai.azure.com/openai?api-version=2024-10-21",
            "https://api.example.com/#v1",
        ] {
            let config = Config::from_routes(&[format!("a=openai@{url}").as_str()]).unwrap();
            let err = config.validate().unwrap_err().to_string();
            assert!(err.contains("query"), "{err}");
        }
    }
}
