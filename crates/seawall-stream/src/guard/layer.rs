use std::sync::Arc;
use std::time::Duration;

use tower_layer::Layer;

use super::stream::MAX_BOUND;
use super::{Config, StreamGuard};
use seawall_core::provider::{Provider, QuotaWall};

/// Guards streamed responses: holds them back until the first content
/// event, bounds every gap, and turns a stream that ends without its
/// finish marker into a failure. See the [module docs](crate::guard).
///
/// ```
/// use seawall_stream::{Provider, StreamGuardLayer};
/// use std::time::Duration;
///
/// let layer = StreamGuardLayer::interactive()
///     .first_byte_timeout(Duration::from_secs(10))
///     .idle_timeout(Duration::from_secs(20))
///     .provider(Provider::Anthropic);
/// # let _ = layer;
/// ```
#[derive(Debug, Clone)]
pub struct StreamGuardLayer {
    config: Config,
}

impl Default for StreamGuardLayer {
    fn default() -> Self {
        StreamGuardLayer::interactive()
    }
}

impl StreamGuardLayer {
    /// The interactive preset (also the default): first byte within 15 s,
    /// first content within 60 s, at most 30 s between content or progress
    /// events, no bound on the whole stream.
    pub fn interactive() -> Self {
        StreamGuardLayer {
            config: Config {
                first_byte: Duration::from_secs(15),
                first_content: Duration::from_secs(60),
                idle: Duration::from_secs(30),
                max_duration: None,
                max_line: crate::sse::DEFAULT_MAX_LINE,
                max_event: crate::sse::DEFAULT_MAX_LINE,
                // The cap on one event and 4 MiB besides: an image that is
                // the first content (a 4K one is some 10.4 MB of base64) is
                // held whole before it is released.
                max_held: crate::sse::DEFAULT_MAX_LINE + (4 << 20),
                max_text: Some(seawall_core::DEFAULT_MAX_DELIVERED_TEXT),
                provider: None,
                content_type: "text/event-stream",
                deliver_policy: false,
                quota_wall: None,
            },
        }
    }

    /// The reasoning preset: a model that thinks before it writes may take
    /// minutes to its first content. First byte within 60 s, first content
    /// within 10 min, at most 2 min between content or progress events.
    pub fn reasoning() -> Self {
        StreamGuardLayer::interactive()
            .first_byte_timeout(Duration::from_secs(60))
            .first_content_timeout(Duration::from_secs(600))
            .idle_timeout(Duration::from_secs(120))
    }

    /// Nothing read within this long after the call: `first_byte_timeout`,
    /// route-shaped (fail over, do not retry). Keep-alives (comments,
    /// pings, chunks that carry nothing) do not meet it: a route that
    /// sends its head and then only keep-alives is as silent as one that
    /// sends nothing, and its evidence says so (no bytes, no events).
    pub fn first_byte_timeout(mut self, bound: Duration) -> Self {
        self.config.first_byte = bound.min(MAX_BOUND);
        self
    }

    /// No content event within this long after the call (pings do not
    /// count): `timeout`. A model still streaming its thinking when it
    /// passes goes on, bounded by the idle bound between thoughts
    /// (see the module's "Timeouts bound gaps").
    pub fn first_content_timeout(mut self, bound: Duration) -> Self {
        self.config.first_content = bound.min(MAX_BOUND);
        self
    }

    /// After content, the longest gap between content or progress events
    /// (keep-alives do not reset it): `stream_interrupted`.
    pub fn idle_timeout(mut self, bound: Duration) -> Self {
        self.config.idle = bound.min(MAX_BOUND);
        self
    }

    /// A bound on the whole stream, or `None` (the default) for none.
    pub fn max_duration(mut self, bound: Option<Duration>) -> Self {
        self.config.max_duration = bound.map(|b| b.min(MAX_BOUND));
        self
    }

    /// The longest line, and the largest event, the scanner accepts
    /// (default 32 MiB, [`DEFAULT_MAX_LINE`](crate::sse::DEFAULT_MAX_LINE):
    /// a generated 4K image, some 10.4 MB of base64 in one event or
    /// JSON-array element, fits with room to spare);
    /// past it the stream fails as `answer_too_large` (permanent: our cap,
    /// not the provider's fault; `stream_interrupted` after content)
    /// instead of growing. Raise [`max_held_bytes`](Self::max_held_bytes)
    /// with it: an event that is the first content is held whole.
    ///
    /// Memory per stream stays bounded by the caps: the scanner's line and
    /// event buffers (each at most this cap, in capacity up to about twice
    /// it), the held frames before the first content (`max_held_bytes`)
    /// and the delivered text (`delivered_text`). With the defaults, at
    /// most about 32 + 32 MiB of buffers (up to 128 MiB of capacity),
    /// 36 MiB held and 1 MiB of text — reached only by a stream that sends
    /// an event that large; a chat stream of small events holds a few KiB,
    /// and a 10.4 MB image about three times its size while it is read.
    /// Lower the cap where many such streams run at once and no images are
    /// expected.
    pub fn max_event_bytes(mut self, cap: usize) -> Self {
        self.config.max_line = cap;
        self.config.max_event = cap;
        self
    }

    /// The most bytes held back before the first content event (default
    /// 36 MiB: the event cap and 4 MiB besides). Past it, a stream that has
    /// shown the model thinking (thinking or reasoning deltas) is handed on
    /// as it stands and goes on live, never replayed from there — a model
    /// that thinks at length would fill the hold again on every retry, and
    /// bill it; one that sent only keep-alives, events nobody reads, or
    /// progress that shows no work (a role delta, `message_start`) fails
    /// as `protocol_violation`.
    pub fn max_held_bytes(mut self, cap: usize) -> Self {
        self.config.max_held = cap;
        self
    }

    /// Reconstruct the delivered text up to `cap` bytes (default 1 MiB), for
    /// the [`Interrupted`](seawall_core::Interrupted) record; `None` turns
    /// reconstruction off.
    pub fn delivered_text(mut self, cap: Option<usize>) -> Self {
        self.config.max_text = cap;
        self
    }

    /// A refusal or content filter the provider declared as the stream's
    /// finish (Anthropic's `stop_reason: "refusal"`, OpenAI's refusal
    /// deltas or `content_filter`, Gemini's `SAFETY`) is the answer: a
    /// stream that refuses before any content is released whole, and one
    /// that refuses after content ends cleanly, its report's finish marked
    /// `Refused` or `Filtered` — instead of failing (before content) or
    /// ending with a `refused` / `content_filtered` error (after). For a
    /// proxy whose clients read the provider's own refusal. An error event
    /// the provider sends stays a failure. Off by default; either way it
    /// is never retried.
    pub fn deliver_policy_outcomes(mut self, deliver: bool) -> Self {
        self.config.deliver_policy = deliver;
        self
    }

    /// A rate-limit hint in an error the provider sends inside the stream
    /// (Gemini's `retryDelay`, OpenAI's "try again in 20s"), when longer
    /// than `threshold`, is a quota wall: `quota_exhausted` with
    /// `reset_at`, not retried. A shorter one is `rate_limited`. The
    /// default is 60 s, as the classifier's default `quota_wall`. Give both
    /// layers the same threshold, so a hint means the same in a stream as
    /// in a unary answer: seawall's `Stack` does, giving the guard the
    /// classifier's threshold unless the guard was given its own.
    pub fn quota_wall(mut self, threshold: Duration) -> Self {
        self.config.quota_wall = Some(QuotaWall::new(threshold));
        self
    }

    /// The same layer with `threshold` as its quota wall unless it was
    /// given one with [`quota_wall`](Self::quota_wall) (how seawall's
    /// `Stack` passes the classifier's on).
    pub fn quota_wall_or(mut self, threshold: Duration) -> Self {
        self.config.quota_wall = self.config.quota_wall.or(Some(QuotaWall::new(threshold)));
        self
    }

    /// The threshold given with [`quota_wall`](Self::quota_wall), if one
    /// was (unlike the classifier's, which always has one).
    pub fn given_quota_wall(&self) -> Option<Duration> {
        self.config.quota_wall.map(QuotaWall::threshold)
    }

    /// Reads every stream in `provider`'s wire format instead of choosing
    /// by request path.
    pub fn provider(mut self, provider: Provider) -> Self {
        self.config.provider = Some(provider);
        self
    }

    /// Chooses the provider from the request at call time (the default):
    /// the one its [`RequestFacts`](seawall_core::RequestFacts) name for a
    /// generation, else its path's ([`Provider::for_path`]: a stored
    /// response read again); a path it does not know is read as
    /// [`Provider::Http`], any event stream.
    pub fn auto_provider(mut self) -> Self {
        self.config.provider = None;
        self
    }

    /// The media type of responses to guard (default `text/event-stream`);
    /// other responses pass through.
    pub fn content_type(mut self, media_type: &'static str) -> Self {
        self.config.content_type = media_type;
        self
    }
}

impl<S> Layer<S> for StreamGuardLayer {
    type Service = StreamGuard<S>;

    fn layer(&self, inner: S) -> Self::Service {
        StreamGuard::new(inner, Arc::new(self.config.clone()))
    }
}
