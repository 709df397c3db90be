use std::sync::Arc;
use std::time::Duration;

use http::HeaderName;
use seawall_core::provider::QuotaWall;
use seawall_core::recording::DEFAULT_MAX_REPLAY_BYTES;
use tower_layer::Layer;

use crate::continuation::{AnthropicStyle, GeminiStyle, OpenAiStyle, Styles};
use crate::service::Resume;

/// The settings of one layer, shared by its services.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub(crate) max_resumes: u32,
    pub(crate) max_replay_bytes: usize,
    pub(crate) styles: Styles,
    pub(crate) align_window: usize,
    pub(crate) max_head: usize,
    pub(crate) min_remaining: Duration,
    /// Bytes of delivered text kept ([`ResumeLayer::max_text`]).
    pub(crate) max_text: usize,
    /// The threshold set for a rate limit's hint ([`ResumeLayer::quota_wall`]);
    /// `None` is the default wall.
    pub(crate) quota_wall: Option<QuotaWall>,
    /// The headers that carry the caller's idempotency key
    /// ([`ResumeLayer::idempotency_key`]): never sent on a continuation.
    pub(crate) idempotency_keys: Vec<HeaderName>,
}

impl Config {
    /// Takes the caller's idempotency keys off a continuation's headers.
    /// A key names the original request: a server that honours it would
    /// answer the continuation with the original's stored answer. A
    /// ladder below sets a key of its own if it keeps one.
    pub(crate) fn strip_idempotency_keys(&self, headers: &mut http::HeaderMap) {
        for name in &self.idempotency_keys {
            headers.remove(name);
        }
    }
}

/// Continues an interrupted stream in the same response body. See the
/// [crate docs](crate).
#[derive(Debug, Clone)]
pub struct ResumeLayer {
    config: Arc<Config>,
}

impl Default for ResumeLayer {
    fn default() -> Self {
        ResumeLayer::new()
    }
}

impl ResumeLayer {
    /// At most two continuations per operation, request bodies recorded up
    /// to 1 MiB, Anthropic prefill, OpenAI's trailing assistant message
    /// without a user turn, Gemini's trailing `model` turn, a 64-byte
    /// alignment window; `idempotency-key` never sent on a continuation.
    pub fn new() -> Self {
        ResumeLayer {
            config: Arc::new(Config {
                max_resumes: 2,
                max_replay_bytes: DEFAULT_MAX_REPLAY_BYTES,
                styles: Styles::default(),
                align_window: 64,
                max_head: 64 * 1024,
                min_remaining: Duration::ZERO,
                max_text: seawall_core::DEFAULT_MAX_DELIVERED_TEXT,
                quota_wall: None,
                idempotency_keys: vec![HeaderName::from_static("idempotency-key")],
            }),
        }
    }

    fn with(mut self, change: impl FnOnce(&mut Config)) -> Self {
        change(Arc::make_mut(&mut self.config));
        self
    }

    /// At most `n` continuations per operation (those that fail before
    /// content count too). 0 turns resuming off.
    pub fn max_resumes(self, n: u32) -> Self {
        self.with(|c| c.max_resumes = n)
    }

    /// Request bodies are recorded up to `bytes` to build a continuation;
    /// a longer request cannot be resumed and its interruption surfaces (a
    /// continuation is the request parsed and written anew: the cap bounds
    /// that too, also for a body that comes whole in one frame, which the
    /// retry ladder and the fallback keep past their caps).
    pub fn max_replay_bytes(self, bytes: usize) -> Self {
        self.with(|c| c.max_replay_bytes = bytes)
    }

    /// How Anthropic models are asked to continue.
    pub fn anthropic_style(self, style: AnthropicStyle) -> Self {
        self.with(|c| c.styles.anthropic = style)
    }

    /// How OpenAI chat-completions models are asked to continue
    /// ([`OpenAiStyle::ContinueFinalMessage`] for servers that continue a
    /// final assistant message).
    pub fn openai_style(self, style: OpenAiStyle) -> Self {
        self.with(|c| c.styles.openai = style)
    }

    /// How Gemini models are asked to continue.
    pub fn gemini_style(self, style: GeminiStyle) -> Self {
        self.with(|c| c.styles.gemini = style)
    }

    /// Bytes of a continuation's text held back to line it up with what
    /// was delivered before any of it is shown (longer while all of it
    /// repeats the delivered tail).
    pub fn align_window(self, bytes: usize) -> Self {
        self.with(|c| c.align_window = bytes.max(1))
    }

    /// A continuation is only sent while at least `remaining` is left of
    /// the operation's deadline ([`seawall_core::Deadline`] in the request
    /// extensions). Default: any time before it.
    pub fn min_remaining(self, remaining: Duration) -> Self {
        self.with(|c| c.min_remaining = remaining)
    }

    /// The delivered text is kept up to `bytes` (default 1 MiB, the stream
    /// guard's own record) where no guard of the caller's stream keeps it:
    /// the text of a continuation answered in another format, said anew.
    /// Past it the caller is still shown the text, but the answer is not
    /// continued again, its interruption's
    /// [`Interrupted`](seawall_core::Interrupted) says the text is a prefix
    /// (`text_capped`), and a Responses API caller, whose end events say
    /// the whole text, is given the interruption instead (`gave_up` is
    /// `text_not_kept`). Give it the guard's
    /// `delivered_text` cap when that is not the default.
    pub fn max_text(self, bytes: usize) -> Self {
        self.with(|c| c.max_text = bytes)
    }

    /// A rate-limit hint longer than `threshold` is a quota wall
    /// (`quota_exhausted`, not retried), where this layer judges a
    /// continuation's failure itself: an error status no classifier below
    /// judged, an error inside a continuation answered in another route's
    /// format. Default 60 s, the classifier's default. seawall's
    /// `Stack::resume` gives it the classifier's threshold unless it was
    /// given its own here.
    pub fn quota_wall(self, threshold: Duration) -> Self {
        self.with(|c| c.quota_wall = Some(QuotaWall::new(threshold)))
    }

    /// The same layer with `threshold` as its quota wall unless it was
    /// given one with [`quota_wall`](Self::quota_wall) (how seawall's
    /// `Stack::resume` passes the classifier's on).
    pub fn quota_wall_or(self, threshold: Duration) -> Self {
        self.with(|c| {
            c.quota_wall = c.quota_wall.or(Some(QuotaWall::new(threshold)));
        })
    }

    /// A continuation is sent without header `name` too (it never carries
    /// `idempotency-key`): the caller's idempotency key names the original
    /// request, and a server that honours it would answer the continuation
    /// with the original's stored answer. Give it the name a retry ladder
    /// below keys its attempts with (`RetryPolicy::idempotency_key`), where
    /// that is another header: the ladder then keys each continuation
    /// anew, as it sees no key of the caller's.
    pub fn idempotency_key(self, name: HeaderName) -> Self {
        self.with(|c| {
            if !c.idempotency_keys.contains(&name) {
                c.idempotency_keys.push(name);
            }
        })
    }

    /// The threshold given with [`quota_wall`](Self::quota_wall), if one
    /// was (unlike the classifier's, which always has one).
    pub fn given_quota_wall(&self) -> Option<Duration> {
        self.config.quota_wall.map(QuotaWall::threshold)
    }
}

impl<S> Layer<S> for ResumeLayer {
    type Service = Resume<S>;

    fn layer(&self, inner: S) -> Resume<S> {
        Resume::new(inner, self.config.clone())
    }
}
