//! One route's breaker: its whole state machine in one atomic word, and the
//! sliding window in one packed atomic per bucket. Every transition is a
//! single compare-and-swap, so concurrent callers never see half a
//! transition (an `Open` word always carries its own probe time, a
//! `HalfOpen` word its own trial count).

use std::any::Any;
use std::fmt;
use std::num::NonZeroU64;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::Duration;

use std::time::SystemTime;

use seawall_core::hint::MAX_RETRY_HINT;
use seawall_core::{Code, Cooldown, Failure, RouteId};
use seawall_internal::millis;
use seawall_internal::random::Random;
use seawall_internal::window::Window;
use tokio::time::Instant;

use crate::error::CircuitOpen;
use crate::models::{Cooled, ModelCooldowns};
use crate::policy::{BreakDuration, TripRule};

/// The state of one route's breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BreakerState {
    /// Calls go through; outcomes are counted.
    Closed,
    /// Calls fail at once with `circuit_open` until the probe time.
    Open,
    /// A limited number of trial calls go through; the rest fail at once.
    HalfOpen,
    /// Forced open through the handle: no call and no probe until a reset.
    Isolated,
}

impl BreakerState {
    /// The stable snake_case name.
    pub const fn as_str(self) -> &'static str {
        match self {
            BreakerState::Closed => "closed",
            BreakerState::Open => "open",
            BreakerState::HalfOpen => "half_open",
            BreakerState::Isolated => "isolated",
        }
    }

    fn from_bits(bits: u64) -> Self {
        match bits & STATE_MASK {
            CLOSED => BreakerState::Closed,
            OPEN => BreakerState::Open,
            HALF_OPEN => BreakerState::HalfOpen,
            _ => BreakerState::Isolated,
        }
    }
}

impl fmt::Display for BreakerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A state change of one route's breaker, given to the transition callback.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Transition<'a> {
    /// The route whose breaker changed state.
    pub route: &'a RouteId,
    /// The state it left.
    pub from: BreakerState,
    /// The state it entered.
    pub to: BreakerState,
}

pub(crate) type TransitionFn = Arc<dyn Fn(&Transition<'_>) + Send + Sync>;

/// Settings shared by every route of one layer.
pub(crate) struct Policy {
    pub(crate) trip: TripRule,
    pub(crate) trials: u64,
    pub(crate) close_after: u64,
    pub(crate) break_duration: BreakDuration,
    pub(crate) rate_limited_counts: bool,
    /// The zero of the breaker's millisecond clock (tokio's clock, so paused
    /// tests move it).
    pub(crate) epoch: Instant,
    pub(crate) on_transition: Option<TransitionFn>,
    /// Where the break's jitter comes from.
    pub(crate) random: Random,
}

impl Policy {
    pub(crate) fn now_ms(&self) -> u64 {
        let since = Instant::now().saturating_duration_since(self.epoch);
        millis(since)
    }
}

// The state word: | payload (56 bits) | trips (6 bits) | state (2 bits) |
// Closed:   payload = period (40 bits): which closed spell this is.
// Open:     payload = probe time in ms since `Policy::epoch`.
// HalfOpen: payload = period (40 bits) | in flight (8 bits) | successes (8 bits).
// `trips` counts trips since the breaker last closed; it sets the break.
const STATE_MASK: u64 = 0b11;

// The cooldown word: | end (40 bits) | code (8 bits) | resets (16 bits) |
// end: ms since `Policy::epoch` (0: none; `COOL_FOREVER`: until a reset;
// `COOL_PROBING`: over, and one call is out probing the route); code: what
// cooled the route, its index in `Code::ALL` (7 bits), and `COOL_AT_CLAMP`;
// resets: how many resets so far, wrapping. A cooldown whose end has
// passed stays in the word until a call probes the route and its answer
// ends it: until then the first call admitted becomes the probe, and
// while it is out the others are refused.
const COOL_FOREVER: u64 = (1 << 40) - 1;
const COOL_PROBING: u64 = COOL_FOREVER - 1;
/// The end a probe that learnt nothing leaves: past, so the next call
/// probes again.
const COOL_OVER: u64 = 1;
/// In the code's byte: the cooldown was learnt from a hint at the clamp
/// ([`MAX_RETRY_HINT`]), which every longer hint is cut to when parsed (a
/// 30-day quota wall reads as 7 days). It still ends then (the route is
/// probed), but its time left names no return: the refusals meanwhile
/// carry the clamp itself, which the ladder never sleeps on and the
/// fallback never waits for. Told by the time left, 7 days less a second
/// would be waited out, and the route called weeks early.
const COOL_AT_CLAMP: u64 = 0x80;
// Every code's index fits below the marker.
const _: () = assert!(Code::ALL.len() < COOL_AT_CLAMP as usize);
/// How soon a call refused while a cooldown's probe is out may look again:
/// the probe's answer decides, and it usually comes within this.
const PROBE_RECHECK: Duration = Duration::from_millis(100);

/// Whose credentials a route's calls carry is not known yet: its breaker
/// was made before any call named the route (a route set's probe), and
/// the first call that does says.
const CREDENTIALS_UNKNOWN: u8 = 0;
/// The route's calls carry the route's own credentials.
const CREDENTIALS_ROUTES: u8 = 1;
/// The route's calls carry their callers' own credentials.
const CREDENTIALS_CALLERS: u8 = 2;

fn cool_word(end: u64, code: u64, resets: u64) -> u64 {
    (end.min(COOL_FOREVER) << 24) | ((code & 0xFF) << 16) | (resets & 0xFFFF)
}

fn cool_end(word: u64) -> u64 {
    word >> 24
}

fn cool_code(word: u64) -> usize {
    ((word >> 16) & (COOL_AT_CLAMP - 1)) as usize
}

fn cool_at_clamp(word: u64) -> bool {
    (word >> 16) & COOL_AT_CLAMP != 0
}

fn cool_resets(word: u64) -> u64 {
    word & 0xFFFF
}
const CLOSED: u64 = 0;
const OPEN: u64 = 1;
const HALF_OPEN: u64 = 2;
const ISOLATED: u64 = 3;
const TRIPS_SHIFT: u32 = 2;
const TRIPS_MAX: u64 = 0x3f;
const PAYLOAD_SHIFT: u32 = 8;
const PAYLOAD_MAX: u64 = (1 << 56) - 1;
const PERIOD_MASK: u64 = (1 << 40) - 1;
/// The most trials or successes a half-open word can count.
pub(crate) const MAX_TRIALS: u64 = 0xff;

fn pack(state: u64, trips: u64, payload: u64) -> u64 {
    (payload.min(PAYLOAD_MAX) << PAYLOAD_SHIFT) | (trips.min(TRIPS_MAX) << TRIPS_SHIFT) | state
}

fn trips_of(word: u64) -> u64 {
    (word >> TRIPS_SHIFT) & TRIPS_MAX
}

fn payload_of(word: u64) -> u64 {
    word >> PAYLOAD_SHIFT
}

fn half_open(trips: u64, period: u64, in_flight: u64, successes: u64) -> u64 {
    pack(
        HALF_OPEN,
        trips,
        ((period & PERIOD_MASK) << 16) | (in_flight << 8) | successes,
    )
}

/// (period, in flight, successes) of a half-open word.
fn trials_of(word: u64) -> (u64, u64, u64) {
    let payload = payload_of(word);
    (payload >> 16, (payload >> 8) & 0xff, payload & 0xff)
}

// A window bucket's payload: | failures (20 bits) | calls (20 bits) |
const COUNT_BITS: u32 = 20;
const COUNT_MAX: u64 = (1 << COUNT_BITS) - 1;

/// What a call is allowed to do, and what its outcome will be recorded as:
/// admitted while closed (the outcome goes to the window), or a half-open
/// trial of a period (the outcome decides the state).
///
/// One non-zero word, so that a permit (`Arc` and `Option<Ticket>`) is two
/// words and a response future over a provider's response stays small
/// enough to be moved without a `memcpy` call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ticket(NonZeroU64);

impl Ticket {
    /// Closed tickets carry this bit; trial periods are 40-bit and never
    /// reach it.
    const CLOSED_BIT: u64 = 1 << 63;

    /// Admitted during the closed spell `period`.
    fn closed(period: u64) -> Ticket {
        let bits = Ticket::CLOSED_BIT | (period & PERIOD_MASK);
        Ticket(NonZeroU64::new(bits).unwrap_or(NonZeroU64::MAX))
    }

    /// A trial of `period` (40-bit, stored plus one to stay non-zero).
    fn trial(period: u64) -> Ticket {
        Ticket(NonZeroU64::MIN.saturating_add(period & PERIOD_MASK))
    }

    /// Marks a call that is also the probe of its route's ended cooldown;
    /// neither kind of ticket reaches this bit otherwise.
    const PROBE_BIT: u64 = 1 << 62;

    /// Whether this is a half-open trial's ticket.
    pub(crate) fn is_trial(self) -> bool {
        self.0.get() & Ticket::CLOSED_BIT == 0
    }

    /// The same ticket, its call also the probe of the route's ended
    /// cooldown.
    fn probing(self) -> Ticket {
        Ticket(self.0 | Ticket::PROBE_BIT)
    }

    /// Whether the call is the probe of its route's ended cooldown.
    pub(crate) fn is_probe(self) -> bool {
        self.0.get() & Ticket::PROBE_BIT != 0
    }

    /// The same ticket without the probe's part, once the probe is
    /// settled: what is left is the spell's.
    pub(crate) fn without_probe(self) -> Ticket {
        let bits = self.0.get() & !Ticket::PROBE_BIT;
        // Never zero: a closed ticket keeps its bit, a trial's is period
        // plus one.
        Ticket(NonZeroU64::new(bits).unwrap_or(NonZeroU64::MIN))
    }

    /// Whose outcome this is: a closed spell's or a half-open period's.
    fn spell(self) -> Spell {
        let bits = self.0.get() & !Ticket::PROBE_BIT;
        if bits & Ticket::CLOSED_BIT != 0 {
            Spell::Closed(bits & PERIOD_MASK)
        } else {
            Spell::Trial(bits - 1)
        }
    }
}

/// The stretch of a breaker's life a call was admitted in.
enum Spell {
    Closed(u64),
    Trial(u64),
}

/// How a call ended, for the breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Success,
    Failure,
    /// Nothing about the route's health: a cancellation, a permanent failure,
    /// a dropped future or body. A trial's place is given back.
    Neutral,
}

pub(crate) struct RouteBreaker {
    pub(crate) route: RouteId,
    pub(crate) policy: Arc<Policy>,
    word: AtomicU64,
    /// Hands out half-open period numbers, so a trial of an earlier period
    /// finishing late cannot count in the current one.
    periods: AtomicU64,
    /// The consecutive failures of a closed spell: | spell (32 bits) |
    /// count (32 bits) |, the spell its period's low bits. A count of an
    /// earlier spell reads as none, so a spell starts from zero the moment
    /// its word is published, with no clearing to race its first outcome
    /// (see `consecutive_failures`).
    consecutive: AtomicU64,
    /// The window's ring of buckets (at least the configured count; none
    /// for a consecutive-failures rule); buckets older than the window are
    /// ignored by age.
    buckets: Window,
    /// The route's cooldown: its end, what cooled it and the count of
    /// resets, in one word (see `cool_word`) so that no reader sees one
    /// cooldown's end with another's cause, and no call admitted before a
    /// reset cools the route after it. Read once per admission.
    cooldown: AtomicU64,
    /// Whether the route's calls carry their callers' own credentials
    /// ([`CallerCredentials`](seawall_core::CallerCredentials) on the first
    /// call that named it; see [`CREDENTIALS_UNKNOWN`]): what a provider
    /// says of an account is not the route's.
    callers_credentials: AtomicU8,
    /// The models cooling on their own on this route ([`learn_model`](Self::learn_model)).
    models: ModelCooldowns,
}

impl fmt::Debug for RouteBreaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RouteBreaker")
            .field("route", &self.route)
            .field("state", &self.state())
            .finish()
    }
}

/// One model's cooldown on a route: the model as kept, what cooled it,
/// and the time left (`None`: until a reset).
pub(crate) type ModelCooling = (Arc<str>, Code, Option<Duration>);

/// The time left at `now` of a model's cooldown ending at `until`.
fn model_left(until: u64, at_clamp: bool, now: u64) -> Option<Duration> {
    match until {
        COOL_FOREVER => None,
        _ if at_clamp => Some(MAX_RETRY_HINT),
        _ => Some(Duration::from_millis(until - now)),
    }
}

impl RouteBreaker {
    pub(crate) fn new(
        route: RouteId,
        policy: Arc<Policy>,
        callers_credentials: Option<bool>,
    ) -> Self {
        let buckets = match policy.trip {
            TripRule::Ratio { buckets, .. } => buckets,
            TripRule::Consecutive { .. } => 0,
        };
        RouteBreaker {
            route,
            policy,
            word: AtomicU64::new(pack(CLOSED, 0, 0)),
            periods: AtomicU64::new(0),
            consecutive: AtomicU64::new(0),
            buckets: Window::with_slices(buckets),
            cooldown: AtomicU64::new(0),
            callers_credentials: AtomicU8::new(match callers_credentials {
                None => CREDENTIALS_UNKNOWN,
                Some(false) => CREDENTIALS_ROUTES,
                Some(true) => CREDENTIALS_CALLERS,
            }),
            models: ModelCooldowns::default(),
        }
    }

    /// Whether the route's calls carry their callers' own credentials.
    pub(crate) fn callers_credentials(&self) -> bool {
        self.callers_credentials.load(Ordering::Relaxed) == CREDENTIALS_CALLERS
    }

    /// A call names the route: a breaker made before any call (a route
    /// set's probe) learns from it whose credentials the route's calls
    /// carry. Asked only while nobody said (`None`: still nobody, as
    /// another probe); the first answer stays.
    pub(crate) fn named_by_call(&self, callers_credentials: impl FnOnce() -> Option<bool>) {
        if self.callers_credentials.load(Ordering::Relaxed) == CREDENTIALS_UNKNOWN {
            let said = match callers_credentials() {
                Some(true) => CREDENTIALS_CALLERS,
                Some(false) => CREDENTIALS_ROUTES,
                None => return,
            };
            let _ = self.callers_credentials.compare_exchange(
                CREDENTIALS_UNKNOWN,
                said,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
    }

    /// The count of resets so far (wrapping), for a call being admitted:
    /// what it learns counts only while no reset came after it.
    pub(crate) fn resets(&self) -> u64 {
        cool_resets(self.cooldown.load(Ordering::Relaxed))
    }

    /// When `failure` says its route (or model) should cool until, on the
    /// breaker's clock, and its code's byte (its index in `Code::ALL`,
    /// with `COOL_AT_CLAMP`): `None` when it says nothing of the kind.
    fn cools_until(&self, failure: &Failure) -> Option<(u64, u64)> {
        let mut at_clamp = 0;
        let until = match failure.cooldown(SystemTime::now())? {
            Cooldown::UntilReset => COOL_FOREVER,
            Cooldown::For(after) => {
                // The failure's own hint (a reset time it names is a
                // known return, whatever its length).
                if after >= MAX_RETRY_HINT && failure.retry_after() == Some(after) {
                    at_clamp = COOL_AT_CLAMP;
                }
                let after = millis(after);
                self.policy
                    .now_ms()
                    .saturating_add(after.max(1))
                    .min(COOL_PROBING - 1)
            }
        };
        let code = Code::ALL
            .iter()
            .position(|c| *c == failure.code())
            .unwrap_or(0) as u64;
        Some((until, code | at_clamp))
    }

    /// Cools the route down as `failure` says (see
    /// [`Failure::cooldown`]): no call goes to it until then. A longer
    /// cooldown already running is kept. A call admitted before the last
    /// reset (`resets` is [`resets`](Self::resets) at its admission)
    /// learns nothing: its 401 was for the key the reset was made for.
    /// While a cooldown's probe is out, only the probe (`probe`) cools the
    /// route again: what an older call says now is older than its answer.
    pub(crate) fn learn(&self, failure: &Failure, resets: u64, probe: bool) {
        let Some((until, code)) = self.cools_until(failure) else {
            return;
        };
        self.cool_route(failure, until, code, resets, probe);
    }

    /// [`learn`](Self::learn) for the whole route, its end and code read.
    fn cool_route(&self, failure: &Failure, until: u64, code: u64, resets: u64, probe: bool) {
        let longer = self
            .cooldown
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |word| {
                let end = cool_end(word);
                let replaces = if end == COOL_PROBING {
                    probe
                } else {
                    end < until
                };
                (cool_resets(word) == resets && replaces).then(|| cool_word(until, code, resets))
            })
            .is_ok();
        if longer {
            self.said_cooling(failure, until, None);
        }
    }

    /// Cools `model` alone on the route as `failure` (a limit the
    /// provider keeps per model: [`Failure::cools`]) says: calls for other
    /// models still go. As [`learn`](Self::learn) otherwise; past
    /// [`MAX_MODELS_COOLING`] models cooling at once, or for a name too
    /// long to keep, it cools the whole route.
    ///
    /// [`MAX_MODELS_COOLING`]: crate::MAX_MODELS_COOLING
    pub(crate) fn learn_model(&self, model: &str, failure: &Failure, resets: u64, probe: bool) {
        let Some((until, code)) = self.cools_until(failure) else {
            return;
        };
        if model.len() > seawall_core::MAX_KEPT_NAME {
            return self.cool_route(failure, until, code, resets, probe);
        }
        let cooled = self.models.cool(
            model,
            until,
            failure.code(),
            code & COOL_AT_CLAMP != 0,
            self.policy.now_ms(),
            // Under the models' lock, which a reset takes after it counts
            // itself: a call admitted before a reset learns nothing.
            || self.resets() == resets,
        );
        match cooled {
            Cooled::Longer => self.said_cooling(failure, until, Some(model)),
            Cooled::Kept => {}
            Cooled::Full => self.cool_route(failure, until, code, resets, probe),
        }
    }

    fn said_cooling(&self, failure: &Failure, until: u64, model: Option<&str>) {
        tracing::warn!(
            target: "seawall::breaker",
            route = %self.route,
            model,
            code = failure.code().as_str(),
            cooldown_ms = (until != COOL_FOREVER).then(|| until.saturating_sub(self.policy.now_ms())),
            "route cooling down"
        );
    }

    /// The code that cooled `model` on this route and the time left
    /// (`None`: until a reset), while it cools on its own
    /// ([`learn_model`](Self::learn_model)). One relaxed load while no
    /// model cools. A model's cooldown ends for every call at its end (no
    /// probe: the wall is one model's, and the route's other calls show
    /// the route is there).
    pub(crate) fn model_cooling(&self, model: &str) -> Option<ModelCooling> {
        if !self.models.any() {
            return None;
        }
        let now = self.policy.now_ms();
        let (model, code, until, at_clamp) = self.models.cooling(model, now)?;
        Some((model, code, model_left(until, at_clamp, now)))
    }

    /// Every model cooling on its own on this route, as
    /// [`model_cooling`](Self::model_cooling) gives one.
    pub(crate) fn models_cooling_now(&self) -> Vec<ModelCooling> {
        if !self.models.any() {
            return Vec::new();
        }
        let now = self.policy.now_ms();
        self.models
            .all(now)
            .into_iter()
            .map(|(model, code, until, at_clamp)| (model, code, model_left(until, at_clamp, now)))
            .collect()
    }

    /// Whether some model may be cooling on its own on this route.
    pub(crate) fn models_cooling(&self) -> bool {
        self.models.any()
    }

    /// The code that cooled the route and the time left (`None`: until a
    /// reset), while it is cooling down. A cooldown whose end has passed
    /// is over for this look (the next call probes the route); while its
    /// probe is out, a short time to look again is left. A cooldown learnt
    /// from a hint at the clamp ([`MAX_RETRY_HINT`]) has the clamp left
    /// until its end: "a week or more", no known return.
    pub(crate) fn cooling(&self) -> Option<(Code, Option<Duration>)> {
        self.cooling_in(self.cooldown.load(Ordering::Acquire))
    }

    /// [`cooling`](Self::cooling) of the cooldown word `word`.
    fn cooling_in(&self, word: u64) -> Option<(Code, Option<Duration>)> {
        let until = cool_end(word);
        if until == 0 {
            return None;
        }
        let code = Code::ALL
            .get(cool_code(word))
            .copied()
            .unwrap_or(Code::RouteCoolingDown);
        if until == COOL_PROBING {
            return Some((code, Some(PROBE_RECHECK)));
        }
        let now = self.policy.now_ms();
        if now >= until {
            return None;
        }
        let left = match until {
            COOL_FOREVER => None,
            _ if cool_at_clamp(word) => Some(MAX_RETRY_HINT),
            _ => Some(Duration::from_millis(until - now)),
        };
        Some((code, left))
    }

    /// The cooldown as an admission meets it: `Ok(None)` when there is none
    /// (any more), `Ok(Some(probing))` when its end has passed and this
    /// call has become its probe (`probing` is the word it set), or the
    /// refusal while it runs or another call is out probing.
    fn claim_probe(&self) -> Result<Option<u64>, CircuitOpen> {
        let mut word = self.cooldown.load(Ordering::Acquire);
        loop {
            if cool_end(word) == 0 {
                return Ok(None);
            }
            if let Some((code, left)) = self.cooling_in(word) {
                return Err(CircuitOpen::cooling(self.route.clone(), code, left));
            }
            // Over. After a quota wall or rejected keys, this call probes
            // the route, once: the wall may stand, and every caller would
            // meet it again. After a rate limit every caller goes: each
            // waited it out as the provider asked, and holding them for a
            // probe's answer (a whole generation) would spend their
            // attempts on refusals while the route is healthy.
            let walled = Code::ALL
                .get(cool_code(word))
                .is_some_and(|&code| !Cooldown::worth_waiting(code));
            let next = if walled {
                cool_word(COOL_PROBING, cool_code(word) as u64, cool_resets(word))
            } else {
                cool_word(0, 0, cool_resets(word))
            };
            match self.cooldown.compare_exchange_weak(
                word,
                next,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) if walled => return Ok(Some(next)),
                Ok(_) => return Ok(None),
                Err(current) => word = current,
            }
        }
    }

    /// Settles the probe of the cooldown of `resets`: an answer ends the
    /// cooldown for every call; anything else (a failure that learnt no
    /// new cooldown, a dropped call) gives the probe back, so the next
    /// call probes. A probe whose cooldown was reset, or cooled again by
    /// its own failure, settles nothing.
    pub(crate) fn settle_probe(&self, resets: u64, answered: bool) {
        let settled = self
            .cooldown
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |word| {
                (cool_end(word) == COOL_PROBING && cool_resets(word) == resets).then(|| {
                    if answered {
                        cool_word(0, 0, resets)
                    } else {
                        cool_word(COOL_OVER, cool_code(word) as u64, resets)
                    }
                })
            })
            .is_ok();
        if settled && answered {
            tracing::info!(
                target: "seawall::breaker",
                route = %self.route,
                "route cooldown over: its probe was answered"
            );
        }
    }

    /// Half-open with every trial slot taken: a call now would be refused.
    pub(crate) fn trials_full(&self) -> bool {
        let word = self.word.load(Ordering::Acquire);
        word & STATE_MASK == HALF_OPEN && trials_of(word).1 >= self.policy.trials
    }

    pub(crate) fn state(&self) -> BreakerState {
        BreakerState::from_bits(self.word.load(Ordering::Acquire))
    }

    /// Time until the probe while open; `None` in any other state.
    pub(crate) fn open_for(&self) -> Option<Duration> {
        let word = self.word.load(Ordering::Acquire);
        (word & STATE_MASK == OPEN)
            .then(|| Duration::from_millis(payload_of(word).saturating_sub(self.policy.now_ms())))
    }

    /// Decides whether a call may go to the route: a ticket, or the
    /// refusal naming the route and the time to the next probe. The closed
    /// path is one atomic load (and one of the cooldown word).
    ///
    /// After a cooldown's end, the first call admitted is its probe (its
    /// ticket says so); the others are refused until the probe's answer
    /// ends the cooldown or its failure cools the route again.
    pub(crate) fn admit(&self) -> Result<Ticket, CircuitOpen> {
        if cool_end(self.cooldown.load(Ordering::Relaxed)) == 0 {
            return self.admit_state();
        }
        let Some(probing) = self.claim_probe()? else {
            return self.admit_state();
        };
        match self.admit_state() {
            Ok(ticket) => Ok(ticket.probing()),
            Err(refusal) => {
                // Refused by the circuit itself: no probe went out, so the
                // next call may probe.
                let over = cool_word(COOL_OVER, cool_code(probing) as u64, cool_resets(probing));
                let _ = self.cooldown.compare_exchange(
                    probing,
                    over,
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                );
                Err(refusal)
            }
        }
    }

    /// [`admit`](Self::admit) by the state machine alone.
    fn admit_state(&self) -> Result<Ticket, CircuitOpen> {
        #[cfg(test)]
        tests::between(self, tests::Gap::Admitting);
        let mut word = self.word.load(Ordering::Acquire);
        loop {
            let next = match word & STATE_MASK {
                CLOSED => return Ok(Ticket::closed(payload_of(word))),
                ISOLATED => return Err(CircuitOpen::new(self.route.clone(), None)),
                OPEN => {
                    let now = self.policy.now_ms();
                    let probe_at = payload_of(word);
                    if now < probe_at {
                        let retry_after = Duration::from_millis(probe_at - now);
                        return Err(CircuitOpen::new(self.route.clone(), Some(retry_after)));
                    }
                    // Probe time: this call becomes the first trial.
                    let period = self.periods.fetch_add(1, Ordering::Relaxed) + 1;
                    half_open(trips_of(word), period, 1, 0)
                }
                _ => {
                    let (period, in_flight, successes) = trials_of(word);
                    if in_flight >= self.policy.trials {
                        return Err(CircuitOpen::new(self.route.clone(), None));
                    }
                    half_open(trips_of(word), period, in_flight + 1, successes)
                }
            };
            match self
                .word
                .compare_exchange_weak(word, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    if word & STATE_MASK == OPEN {
                        self.announce(BreakerState::Open, BreakerState::HalfOpen);
                    }
                    return Ok(Ticket::trial(trials_of(next).0));
                }
                Err(current) => word = current,
            }
        }
    }

    pub(crate) fn record(&self, ticket: Ticket, outcome: Outcome) {
        match ticket.spell() {
            Spell::Closed(period) => self.record_closed(period, outcome),
            Spell::Trial(period) => self.record_trial(period, outcome),
        }
    }

    fn record_closed(&self, period: u64, outcome: Outcome) {
        let failed = match outcome {
            Outcome::Neutral => return,
            Outcome::Success => false,
            Outcome::Failure => true,
        };
        let closed = pack(CLOSED, 0, period);
        if self.word.load(Ordering::Acquire) != closed {
            // Admitted in an earlier closed spell (a long stream that ends
            // after a trip and a recovery): it says nothing about this one.
            return;
        }
        let trips = match self.policy.trip {
            TripRule::Ratio {
                ratio,
                bucket_ms,
                buckets,
                min_calls,
            } => {
                let slice = self.policy.now_ms() / bucket_ms;
                self.count(slice, failed);
                failed && {
                    let (calls, failures) = self.window(slice, buckets as u64);
                    // The share itself against the ratio: `ratio * calls` rounds
                    // up past an exact match (0.55 * 100 is 55.000…01), and
                    // a ratio met exactly trips ("equal or greater").
                    calls >= min_calls && failures as f64 / calls as f64 >= ratio
                }
            }
            TripRule::Consecutive { failures } => {
                self.consecutive_failures(period, failed) >= failures
            }
        };
        if trips {
            let open = self.open_word(1);
            if self
                .word
                .compare_exchange(closed, open, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                self.announce(BreakerState::Closed, BreakerState::Open);
            }
        }
    }

    /// Counts a closed-spell outcome into the consecutive failures of the
    /// spell `period`, and returns them: zero after a success, and for an
    /// outcome of a spell already over, which counts nowhere (its call read
    /// its spell's word just before the next spell's, and must not reset
    /// the next spell's count).
    fn consecutive_failures(&self, period: u64, failed: bool) -> u32 {
        let spell = period as u32;
        let mut word = self.consecutive.load(Ordering::Relaxed);
        loop {
            let (held, count) = ((word >> 32) as u32, word as u32);
            let count = match spell.wrapping_sub(held) as i32 {
                0 => count,
                newer if newer > 0 => 0,
                _ => return 0,
            };
            let count = if failed { count.saturating_add(1) } else { 0 };
            let next = (u64::from(spell) << 32) | u64::from(count);
            // A healthy route's success finds its word as it would leave
            // it, and never writes this cache line.
            if next == word {
                return count;
            }
            match self.consecutive.compare_exchange_weak(
                word,
                next,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return count,
                Err(current) => word = current,
            }
        }
    }

    fn record_trial(&self, period: u64, outcome: Outcome) {
        let mut word = self.word.load(Ordering::Acquire);
        loop {
            if word & STATE_MASK != HALF_OPEN || trials_of(word).0 != period & PERIOD_MASK {
                // The trial's period is over (re-opened, closed, reset).
                return;
            }
            let (_, in_flight, successes) = trials_of(word);
            let trips = trips_of(word);
            let in_flight = in_flight.saturating_sub(1);
            let next = match outcome {
                Outcome::Neutral => half_open(trips, period, in_flight, successes),
                Outcome::Success if successes + 1 >= self.policy.close_after => {
                    // Cleared before the close is published: the new
                    // spell's first outcome must not meet the outage's
                    // counts (it tripped the breaker again at once).
                    // Nothing counts into the window while half-open; a
                    // close that loses its swap to another trial's may
                    // clear the winner's first counts, the safe way.
                    self.buckets.clear();
                    self.closed_word()
                }
                Outcome::Success => half_open(trips, period, in_flight, successes + 1),
                Outcome::Failure => self.open_word(trips + 1),
            };
            match self
                .word
                .compare_exchange_weak(word, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    #[cfg(test)]
                    tests::between(self, tests::Gap::Swapped);
                    match next & STATE_MASK {
                        CLOSED => self.announce(BreakerState::HalfOpen, BreakerState::Closed),
                        OPEN => self.announce(BreakerState::HalfOpen, BreakerState::Open),
                        _ => {}
                    }
                    return;
                }
                Err(current) => word = current,
            }
        }
    }

    /// An open word for the `trips`-th trip since the last close.
    fn open_word(&self, trips: u64) -> u64 {
        let trips = trips.min(TRIPS_MAX);
        let pause = self
            .policy
            .break_duration
            .after_trips(trips as u32, &self.policy.random);
        let pause_ms = millis(pause);
        pack(OPEN, trips, self.policy.now_ms().saturating_add(pause_ms))
    }

    /// Forces the breaker open until [`RouteBreaker::reset`].
    pub(crate) fn isolate(&self) {
        let before = self.word.swap(pack(ISOLATED, 0, 0), Ordering::AcqRel);
        self.announce(BreakerState::from_bits(before), BreakerState::Isolated);
    }

    /// A closed word for a new closed spell.
    fn closed_word(&self) -> u64 {
        let period = self.periods.fetch_add(1, Ordering::Relaxed) + 1;
        pack(CLOSED, 0, period & PERIOD_MASK)
    }

    /// Forces the breaker closed with a clean window.
    /// A call admitted before it learns nothing after it (`learn`).
    pub(crate) fn reset(&self) {
        let _ = self
            .cooldown
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |word| {
                Some(cool_word(0, 0, cool_resets(word).wrapping_add(1)))
            });
        // After the count: a model's cooldown learnt by a call admitted
        // before it is refused under the same lock.
        self.models.clear();
        // The consecutive failures are the spell's own. The window is
        // cleared before the new spell is published, so that its first
        // outcome never meets the old spell's counts (a reset of an open
        // breaker tripped it again on one failure); and again after, to
        // drop what the old spell's last outcomes (their calls read the old
        // word just before the swap) counted in between.
        self.buckets.clear();
        let before = self.word.swap(self.closed_word(), Ordering::AcqRel);
        #[cfg(test)]
        tests::between(self, tests::Gap::Swapped);
        self.buckets.clear();
        self.announce(BreakerState::from_bits(before), BreakerState::Closed);
    }

    /// Adds one call (and maybe one failure) to the bucket of `slice`,
    /// starting the bucket afresh when it still holds an older slice.
    ///
    /// A full bucket halves both its counts before it adds the call: its
    /// failure share stays what it was, and the calls after it still move
    /// it. Stopping at the maximum instead froze the share, so a bucket
    /// filled by successes never counted the outage that followed (the
    /// halved bucket weighs less beside its neighbours, and its own latest
    /// calls weigh more: both err towards what is happening now).
    /// Failures never exceed calls, so neither count spills into the other
    /// or into the slice number.
    fn count(&self, slice: u64, failed: bool) {
        self.buckets.update(slice, |payload| {
            let (mut calls, mut failures) = (payload & COUNT_MAX, payload >> COUNT_BITS);
            if calls == COUNT_MAX {
                calls /= 2;
                failures /= 2;
            }
            Some(((failures + u64::from(failed)) << COUNT_BITS) | (calls + 1))
        });
    }

    /// (calls, failures) over the `span` buckets of the window ending at
    /// `slice`.
    fn window(&self, slice: u64, span: u64) -> (u64, u64) {
        self.buckets
            .fold(slice, span, (0, 0), |(calls, failures), payload| {
                (
                    calls + (payload & COUNT_MAX),
                    failures + (payload >> COUNT_BITS),
                )
            })
    }

    fn announce(&self, from: BreakerState, to: BreakerState) {
        if from == to {
            return;
        }
        tracing::info!(
            target: "seawall::breaker",
            route = %self.route,
            from = from.as_str(),
            to = to.as_str(),
            "circuit breaker state changed"
        );
        #[cfg(feature = "metrics")]
        {
            use seawall_core::metric_names::{BREAKER_TRANSITIONS_TOTAL, BREAKERS_OPEN};
            metrics::counter!(BREAKER_TRANSITIONS_TOTAL, "route" => self.route.to_shared(), "to" => to.as_str())
                .increment(1);
            match (counted_open(from), counted_open(to)) {
                (false, true) => metrics::gauge!(BREAKERS_OPEN).increment(1.0),
                (true, false) => metrics::gauge!(BREAKERS_OPEN).decrement(1.0),
                _ => {}
            }
        }
        if let Some(callback) = &self.policy.on_transition {
            let transition = Transition {
                route: &self.route,
                from,
                to,
            };
            // The change is published before it is announced: a trial slot
            // taken, a cooldown's probe claimed, a trip made while a body
            // is polled. A panic unwinding from here would leave the call
            // without the ticket that gives them back (one trial taken for
            // ever refuses the route until a reset) and reach a caller that
            // only read a body. The state stands; the callback's failure
            // is said.
            if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| callback(&transition))) {
                tracing::warn!(
                    target: "seawall::breaker",
                    route = %self.route,
                    from = from.as_str(),
                    to = to.as_str(),
                    panic = panic_message(&*payload),
                    "circuit breaker transition callback panicked; the state change stands"
                );
            }
        }
    }
}

/// The route goes with its last owner (the layer, its services and
/// handles, the permits of calls in flight: they share it through one
/// `Arc`, so this runs once): an open or isolated route leaves the
/// process-wide count of open routes. Without this a client rebuilt on a
/// configuration reload, its route open, left the gauge up for ever.
#[cfg(feature = "metrics")]
impl Drop for RouteBreaker {
    fn drop(&mut self) {
        if counted_open(BreakerState::from_bits(*self.word.get_mut())) {
            metrics::gauge!(seawall_core::metric_names::BREAKERS_OPEN).decrement(1.0);
        }
    }
}

/// Whether `seawall_breakers_open` counts a route in `state`.
#[cfg(feature = "metrics")]
fn counted_open(state: BreakerState) -> bool {
    matches!(state, BreakerState::Open | BreakerState::Isolated)
}

/// What a caught panic said, when it said it in words.
fn panic_message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&'static str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(not a string)")
}

#[cfg(test)]
mod tests;
