//! The members of a route set and the choice among them: power of two
//! choices on in-flight requests and recent latency, never a member the
//! breaker refuses, a member that just failed only when nothing else is
//! left.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use http::header::{HeaderName, HeaderValue};
use http::uri::{Authority, Scheme};
use seawall_core::hint::MAX_RETRY_HINT;
use seawall_core::{Code, Cooldown, Deadline, Failure, RouteId};
use seawall_internal::random::Random;
use seawall_internal::{headers, millis};
use tokio::time::Instant;

#[cfg(test)]
use crate::DEFAULT_MAX_WAIT;
use crate::route_set::error::RouteSetError;

/// The most members a route set takes: one bit each in the choice's masks.
pub const MAX_MEMBERS: usize = 64;

/// Why a route is refused now and for how long (`None`: until reset), as
/// seawall-breaker's `RouteProbe::blocked` says it; `None` when it is not.
pub type Blocked = Option<(Code, Option<Duration>)>;

/// A member's health, read before each choice.
pub(crate) type Probe = Box<dyn Fn() -> Blocked + Send + Sync>;

/// One member of a route set: a deployment or an API key of the model,
/// with its own [`RouteId`] and what its requests change — the origin
/// (scheme and authority) and headers such as the key.
///
/// Two keys on one host are two members with two route names: the
/// breaker below tracks each by its `RouteId`, which the route set puts in
/// the request's extensions. A member with a key of its own sends no other
/// credentials (see [`Member::header`]).
///
/// ```
/// use http::header::{AUTHORIZATION, HeaderValue};
/// use seawall_fallback::Member;
///
/// let a = Member::new("openai-key-a")
///     .origin("https://api.openai.com")
///     .unwrap()
///     .header(AUTHORIZATION, HeaderValue::from_static("Bearer sk-a"));
/// assert_eq!(a.route().as_str(), "openai-key-a");
/// // A key is never shown.
/// assert!(!format!("{a:?}").contains("sk-a"));
/// ```
#[derive(Clone)]
pub struct Member {
    route: RouteId,
    origin: Option<(Scheme, Authority)>,
    headers: Vec<(HeaderName, HeaderValue)>,
}

impl Member {
    /// A member named `route`, sending the request as it comes.
    pub fn new(route: impl Into<RouteId>) -> Self {
        Member {
            route: route.into(),
            origin: None,
            headers: Vec::new(),
        }
    }

    /// Sends this member's requests to `base`'s scheme and authority (the
    /// path and query stay the request's; a `Host` header, when the
    /// request has one, follows). A base without a scheme or host, with
    /// userinfo (a key in a URL would end up in logs), with a port that is
    /// not one (`:80800`, `:`, `:0`: `http` reads no port there and the
    /// request would go to 80 or 443), or with a path other than `/` is
    /// refused with [`RouteSetError::Origin`]: a path prefix or a model in
    /// the path is a [`rewrite`](crate::RouteSetLayer::rewrite).
    pub fn origin(mut self, base: &str) -> Result<Self, RouteSetError> {
        let bad = |why: &'static str| RouteSetError::Origin {
            route: self.route.clone(),
            why,
        };
        let uri: http::Uri = base.parse().map_err(|_| bad("not a URI"))?;
        let scheme = uri.scheme().cloned().ok_or_else(|| bad("no scheme"))?;
        let authority = uri.authority().cloned().ok_or_else(|| bad("no host"))?;
        if authority.as_str().contains('@') {
            return Err(bad("userinfo in the URL; send the key in a header"));
        }
        // `http` reads no port in `:80800` (nor `:abc`, `:`), and the
        // connector then goes to 80 or 443: the member's requests, with
        // its key, would reach another server than the one given.
        if let Some(why) = seawall_internal::uri::port_error(&authority) {
            return Err(bad(why));
        }
        if !matches!(uri.path(), "" | "/") || uri.query().is_some() {
            return Err(bad("a path or query; rewrite the path instead"));
        }
        self.origin = Some((scheme, authority));
        Ok(self)
    }

    /// Sets header `name` to `value` on this member's requests, replacing
    /// the request's own. The value is marked sensitive and never shown.
    ///
    /// A credential header — `authorization`, `x-api-key`, `api-key`,
    /// `x-goog-api-key`, `proxy-authorization`, `cookie`,
    /// `x-amz-security-token` or `x-seawall-token` — makes the
    /// member one that brings credentials of its own, and its requests
    /// then carry only its own: every other of those headers the request
    /// came with (the caller's key) is removed, so a 401 on an OpenAI
    /// member never moves the caller's OpenAI key to an Azure member that
    /// sets `api-key`. So are the caller's account headers
    /// (`OpenAI-Organization`, `OpenAI-Project`: with another key OpenAI
    /// refuses them) and a `key` query parameter (a Gemini key). A member
    /// that sets none keeps the caller's: the
    /// caller's key is then meant for every such member.
    pub fn header(mut self, name: HeaderName, mut value: HeaderValue) -> Self {
        value.set_sensitive(true);
        self.headers.retain(|(known, _)| *known != name);
        self.headers.push((name, value));
        self
    }

    /// Whether the member sets credentials of its own: any of the headers
    /// [`Member::header`] names as credentials.
    fn brings_credentials(&self) -> bool {
        self.headers
            .iter()
            .any(|(name, _)| headers::is_credential(name))
    }

    /// The member's route.
    pub fn route(&self) -> &RouteId {
        &self.route
    }

    /// Points `request` at this member.
    pub(crate) fn apply<B>(&self, request: &mut http::Request<B>) {
        if let Some((scheme, authority)) = &self.origin {
            let mut parts = std::mem::take(request.uri_mut()).into_parts();
            parts.scheme = Some(scheme.clone());
            parts.authority = Some(authority.clone());
            if parts.path_and_query.is_none() {
                parts.path_and_query = Some(http::uri::PathAndQuery::from_static("/"));
            }
            // Scheme, authority and a path: always a valid URI.
            if let Ok(uri) = http::Uri::from_parts(parts) {
                *request.uri_mut() = uri;
            }
            headers::host_follows(request.headers_mut(), authority);
        }
        if self.brings_credentials() {
            // The caller's credentials are for whatever the caller meant
            // (async-openai sends its OpenAI key on every request): on a
            // member with a key of its own — an Azure deployment beside
            // OpenAI keys — they would reach a provider they were never
            // for. Its own replace them, all of them, with the account
            // they name and a key in the query (Gemini's `?key=`).
            for name in headers::CREDENTIAL_HEADERS
                .iter()
                .chain(&headers::ACCOUNT_HEADERS)
            {
                request.headers_mut().remove(name);
            }
            headers::remove_key_param(request.uri_mut());
        }
        for (name, value) in &self.headers {
            request.headers_mut().insert(name.clone(), value.clone());
        }
    }
}

impl std::fmt::Debug for Member {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("Member")
            .field("route", &self.route)
            .field(
                "origin",
                &self
                    .origin
                    .as_ref()
                    .map(|(scheme, authority)| format!("{scheme}://{authority}")),
            )
            .field("headers", &headers)
            .finish()
    }
}

/// One member and what the set knows of it, shared by every clone.
pub(crate) struct Slot {
    pub(crate) member: Member,
    probe: Option<Probe>,
    /// Calls and bodies under way.
    in_flight: AtomicU32,
    /// Recent latency, in microseconds (peak-sensitive moving average); 0
    /// until measured.
    latency_us: AtomicU64,
    /// When `latency_us` was last measured, in the set's milliseconds.
    measured_ms: AtomicU64,
    /// Until when a route-scoped failure demotes the member, in the set's
    /// milliseconds; 0 when it does not.
    avoid_until_ms: AtomicU64,
    /// How often the member was chosen.
    chosen: AtomicU64,
}

/// The set: its members, its clock and its randomness.
pub(crate) struct Set {
    pub(crate) slots: Box<[Slot]>,
    epoch: Instant,
    random: Random,
    avoid_ms: u64,
    decay_ms: u64,
    max_wait: Duration,
}

/// The settings a set is built from.
pub(crate) struct Settings {
    pub(crate) avoid: Duration,
    pub(crate) decay: Duration,
    pub(crate) seed: Option<u64>,
    pub(crate) max_wait: Duration,
}

/// What a wait for a member must leave before the deadline for the call
/// itself (the ladder's default `min_attempt_time`).
const MIN_CALL_TIME: Duration = Duration::from_secs(1);

/// Whether a call may still be made before `deadline`: [`MIN_CALL_TIME`]
/// is left. A wait is planned to leave it; a service below that then keeps
/// the call waiting for its readiness may take it.
pub(crate) fn time_for_a_call(deadline: Option<Deadline>) -> bool {
    deadline.is_none_or(|deadline| {
        deadline
            .instant()
            .checked_duration_since(Instant::now())
            .is_some_and(|left| left >= MIN_CALL_TIME)
    })
}

impl Set {
    pub(crate) fn new(
        members: &[Member],
        health: Option<&(dyn Fn(&RouteId) -> Probe + Send + Sync)>,
        settings: &Settings,
    ) -> Self {
        let slots = members
            .iter()
            .map(|member| Slot {
                member: member.clone(),
                probe: health.map(|health| health(&member.route)),
                in_flight: AtomicU32::new(0),
                latency_us: AtomicU64::new(0),
                measured_ms: AtomicU64::new(0),
                avoid_until_ms: AtomicU64::new(0),
                chosen: AtomicU64::new(0),
            })
            .collect();
        Set {
            slots,
            epoch: Instant::now(),
            random: Random::from_seed(settings.seed),
            avoid_ms: millis(settings.avoid),
            decay_ms: millis(settings.decay).max(1),
            max_wait: settings.max_wait,
        }
    }

    fn now_ms(&self) -> u64 {
        millis(Instant::now().saturating_duration_since(self.epoch))
    }

    fn blocked(&self, index: usize) -> Blocked {
        self.slots[index].probe.as_ref().and_then(|probe| probe())
    }

    /// The member for the next call, or — when the breaker refuses every
    /// member — the member that comes back first, for [`Set::refusal`].
    pub(crate) fn choose(&self) -> Result<usize, Earliest> {
        let mut usable = 0u64;
        let mut open = 0u64;
        let mut now = None;
        let mut earliest = Earliest::default();
        for (index, slot) in self.slots.iter().enumerate() {
            if let Some((code, left)) = self.blocked(index) {
                earliest.add(index, code, left);
                continue;
            }
            usable |= 1 << index;
            let avoid = slot.avoid_until_ms.load(Ordering::Relaxed);
            if avoid == 0 || avoid <= *now.get_or_insert_with(|| self.now_ms()) {
                open |= 1 << index;
            }
        }
        if open == 0 {
            if usable == 0 {
                return Err(earliest);
            }
            // Every member left failed a moment ago: the one that failed
            // longest ago.
            let index = ones(usable)
                .min_by_key(|&index| self.slots[index].avoid_until_ms.load(Ordering::Relaxed))
                .unwrap_or(0);
            return Ok(self.chosen(index));
        }
        if open & (open - 1) == 0 {
            return Ok(self.chosen(open.trailing_zeros() as usize));
        }
        // Power of two choices: two distinct members at random, the
        // cheaper one. One draw gives both indices.
        let n = u64::from(open.count_ones());
        let draw = self.random.with(|rng| rng.next_u64());
        let a = ((draw & 0xffff_ffff) * n) >> 32;
        let mut b = ((draw >> 32) * (n - 1)) >> 32;
        if b >= a {
            b += 1;
        }
        let (a, b) = (nth_one(open, a as u32), nth_one(open, b as u32));
        let now = now.unwrap_or_else(|| self.now_ms());
        let index = if self.cost(a, now) <= self.cost(b, now) {
            a
        } else {
            b
        };
        Ok(self.chosen(index))
    }

    fn chosen(&self, index: usize) -> usize {
        self.slots[index].chosen.fetch_add(1, Ordering::Relaxed);
        index
    }

    /// In-flight calls (plus one) times recent latency, the latency decayed
    /// with its age so a member measured slow long ago is tried again. An
    /// unmeasured member (new, or back from a failure) costs nothing while
    /// idle, so the next call probes it — and more than any measured one
    /// while calls are in flight on it, so a burst does not pile onto a
    /// member nobody has seen answer (among unmeasured members, the one
    /// with fewer in flight).
    fn cost(&self, index: usize, now: u64) -> u64 {
        let slot = &self.slots[index];
        let latency = self.latency(slot, now);
        let in_flight = u64::from(slot.in_flight.load(Ordering::Relaxed));
        if latency == 0 {
            return in_flight.saturating_mul(UNMEASURED_IN_FLIGHT);
        }
        latency.saturating_mul(in_flight + 1)
    }

    fn latency(&self, slot: &Slot, now: u64) -> u64 {
        let latency = slot.latency_us.load(Ordering::Relaxed);
        if latency == 0 {
            return 0;
        }
        let age = now.saturating_sub(slot.measured_ms.load(Ordering::Relaxed));
        let decayed = u128::from(latency) * u128::from(self.decay_ms)
            / (u128::from(self.decay_ms) + u128::from(age));
        u64::try_from(decayed).unwrap_or(u64::MAX)
    }

    /// How long a call that found every member refused waits for the first
    /// back, or `None` to refuse it now: the member cooling down after a
    /// rate limit ([`Cooldown::worth_waiting`]: not after a quota wall or
    /// rejected credentials, nor one whose breaker is open) that comes back
    /// first, when that is within `max_wait` and leaves [`MIN_CALL_TIME`]
    /// before `deadline`. A draw of up to a quarter of the wait (at most
    /// [`MAX_SPREAD`](seawall_internal::random::MAX_SPREAD), within those
    /// bounds: [`Random::spread`], as the ladder spreads the operations one
    /// `Retry-After` told) is added, so the calls refused through one
    /// cooldown come back spread.
    pub(crate) fn wait_for(
        &self,
        earliest: &Earliest,
        deadline: Option<Deadline>,
    ) -> Option<Duration> {
        let (index, left) = earliest.worth?;
        let room = match deadline {
            Some(deadline) => deadline
                .instant()
                .checked_duration_since(Instant::now())?
                .checked_sub(MIN_CALL_TIME)?,
            None => Duration::MAX,
        }
        .min(self.max_wait);
        let spare = room.checked_sub(left)?;
        let wait = self.random.spread(left, spare);
        tracing::debug!(
            target: "seawall::route_set",
            route = self.slots[index].member.route.as_str(),
            wait_ms = millis(wait),
            "every member refused; waiting for the first back"
        );
        Some(wait)
    }

    /// The failure for a call refused because no member can take it: a
    /// local refusal of the member that comes back first, as its breaker
    /// would refuse it — `circuit_open` for an open breaker, else
    /// `route_cooling_down` naming what cooled it
    /// ([`cooled_by`](Failure::cooled_by)) and permanent when that is not
    /// worth waiting for — with the time left. A refusal, not the cause's
    /// own code: no call was made, so the ladder above records no upstream
    /// attempt and the retry budget gives no token for it.
    pub(crate) fn refusal(&self, earliest: Earliest) -> Failure {
        let (index, code, left) = earliest.first.unwrap_or((0, Code::RouteCoolingDown, None));
        let route = self.slots[index].member.route.clone();
        tracing::debug!(
            target: "seawall::route_set",
            route = route.as_str(),
            code = code.as_str(),
            retry_after_ms = left.map(millis),
            "every member refused; the earliest back answers for the set"
        );
        let failure = Failure::route_refusal(Some(code))
            .with_route(route)
            .with_message("no member of the route set can take the call now");
        match left {
            Some(left) => failure.with_retry_after(left),
            None => failure,
        }
    }

    pub(crate) fn enter(&self, index: usize) {
        self.slots[index].in_flight.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn leave(&self, index: usize) {
        self.slots[index].in_flight.fetch_sub(1, Ordering::Relaxed);
    }

    /// A call to `index` answered (or failed, or was given up on) after
    /// `took`.
    pub(crate) fn measured(&self, index: usize, took: Duration) {
        let slot = &self.slots[index];
        let now = self.now_ms();
        let sample = u64::try_from(took.as_micros()).unwrap_or(u64::MAX).max(1);
        let current = self.latency(slot, now);
        // Peak-sensitive: a slower answer counts at once, a faster one
        // brings the estimate down a quarter of the way. Concurrent
        // answers may overwrite each other: it is an estimate.
        let next = if sample >= current {
            sample
        } else {
            current - (current - sample) / 4
        };
        slot.latency_us.store(next.max(1), Ordering::Relaxed);
        slot.measured_ms.store(now, Ordering::Relaxed);
    }

    /// A route-scoped `failure` on `index`: demoted for a while, but for a
    /// call refused here. True when another member can take the next
    /// attempt (one the breaker does not refuse).
    pub(crate) fn failed_with(&self, index: usize, failure: &Failure) -> bool {
        // Refused on this side, the member never reached
        // (`Failure::is_refused_here`), so nothing is learnt of it. The
        // breaker's refusal (open, or the route cooling down) is read
        // before every choice and reaches here only from a race (calls
        // that chose the member before its half-open trials filled):
        // demoted, the member whose trial is about to close its breaker
        // would be shunned for `avoid`. A local `LoadShed` sheds calls to
        // every member alike (they share the client under it): demoted,
        // one burst past the limit would shun every healthy member and
        // forget every latency.
        if failure.is_refused_here() {
            return self.another_than(index);
        }
        self.failed(index)
    }

    /// Whether a member other than `index` can take the next attempt.
    fn another_than(&self, index: usize) -> bool {
        (0..self.slots.len()).any(|other| other != index && self.blocked(other).is_none())
    }

    /// A route-scoped failure on `index`: demoted for a while. True when
    /// another member can take the next attempt (one the breaker does not
    /// refuse).
    pub(crate) fn failed(&self, index: usize) -> bool {
        let until = self.now_ms().saturating_add(self.avoid_ms).max(1);
        let slot = &self.slots[index];
        slot.avoid_until_ms.store(until, Ordering::Relaxed);
        // How fast a member refuses (a 401, a quota wall) says nothing of
        // how fast it answers: forgotten, so once the member may be tried
        // again (its cooldown over, or reset by the handle) it is unmeasured
        // and the next choice probes it, instead of a busy healthy member
        // starving it for good.
        slot.latency_us.store(0, Ordering::Relaxed);
        self.another_than(index)
    }

    /// What the set knows of its members, for the handle.
    pub(crate) fn snapshot(&self) -> Vec<MemberState> {
        let now = self.now_ms();
        self.slots
            .iter()
            .enumerate()
            .map(|(index, slot)| {
                let latency = self.latency(slot, now);
                let avoid = slot.avoid_until_ms.load(Ordering::Relaxed);
                MemberState {
                    route: slot.member.route.clone(),
                    in_flight: slot.in_flight.load(Ordering::Relaxed),
                    latency: (latency != 0).then(|| Duration::from_micros(latency)),
                    chosen: slot.chosen.load(Ordering::Relaxed),
                    demoted_for: (avoid > now).then(|| Duration::from_millis(avoid - now)),
                    blocked: self.blocked(index),
                }
            })
            .collect()
    }
}

/// Every member is refused: the one that comes back first, why, and when;
/// and the first back of those worth waiting for.
#[derive(Debug, Default)]
pub(crate) struct Earliest {
    first: Option<(usize, Code, Option<Duration>)>,
    worth: Option<(usize, Duration)>,
}

impl Earliest {
    /// Member `index` is refused after `code`, for `left` (`None`: until
    /// reset).
    fn add(&mut self, index: usize, code: Code, left: Option<Duration>) {
        let sooner = match self.first {
            None => true,
            Some((_, _, known)) => match (left, known) {
                (Some(left), Some(known)) => left < known,
                (Some(_), None) => true,
                (None, _) => false,
            },
        };
        if sooner {
            self.first = Some((index, code, left));
        }
        // A cooldown after a rate limit ends when the provider said it
        // would answer again; a wall, rejected keys or an open breaker is
        // no return to wait for (a single route's ladder waits for none of
        // them either); nor is a cooldown learnt from a hint at the clamp,
        // which reports `MAX_RETRY_HINT` left: a week or more, no known
        // return (the ladder stops on it, the fallback does not wait).
        if let Some(left) = left
            && code != Code::CircuitOpen
            && Cooldown::worth_waiting(code)
            && left < MAX_RETRY_HINT
            && self.worth.is_none_or(|(_, known)| left < known)
        {
            self.worth = Some((index, left));
        }
    }
}

/// One member's state, as [`RouteSetHandle::members`](crate::RouteSetHandle::members)
/// lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MemberState {
    /// The member's route.
    pub route: RouteId,
    /// Calls and response bodies under way.
    pub in_flight: u32,
    /// Recent latency (to the response, i.e. the first content of a
    /// guarded stream), decayed with its age; `None` until measured.
    pub latency: Option<Duration>,
    /// How often the member was chosen.
    pub chosen: u64,
    /// How much longer a recent route-scoped failure demotes it.
    pub demoted_for: Option<Duration>,
    /// Why the breaker refuses it now, and for how long, if it does.
    pub blocked: Blocked,
}

/// The indices of the set bits of `mask`, lowest first.
fn ones(mut mask: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (mask != 0).then(|| {
            let index = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            index
        })
    })
}

/// The index of the `n`th set bit of `mask` (from 0).
fn nth_one(mut mask: u64, n: u32) -> usize {
    for _ in 0..n {
        mask &= mask - 1;
    }
    mask.trailing_zeros() as usize
}

/// What each call in flight on an unmeasured member costs: more than any
/// measured member's cost (an hour of latency times a hundred calls).
const UNMEASURED_IN_FLIGHT: u64 = 3_600_000_000 * 100;

#[cfg(test)]
mod tests {
    use seawall_core::Class;

    use super::*;

    /// A cooldown learnt from a hint at the clamp reports `MAX_RETRY_HINT`
    /// left: a week or more, no known return, never a wait worth making
    /// (the ladder stops on it, the fallback does not wait); a minute's is.
    #[test]
    fn a_cooldown_at_the_clamp_is_not_worth_waiting_for() {
        let mut earliest = Earliest::default();
        earliest.add(0, Code::RateLimited, Some(MAX_RETRY_HINT));
        assert_eq!(earliest.worth, None);
        earliest.add(1, Code::RateLimited, Some(Duration::from_secs(60)));
        assert_eq!(earliest.worth, Some((1, Duration::from_secs(60))));
    }

    fn set(n: usize, seed: u64) -> Set {
        let members: Vec<_> = (0..n)
            .map(|i| Member::new(format!("m{i}").as_str()))
            .collect();
        Set::new(
            &members,
            None,
            &Settings {
                avoid: Duration::from_secs(1),
                decay: Duration::from_secs(10),
                seed: Some(seed),
                max_wait: DEFAULT_MAX_WAIT,
            },
        )
    }

    /// A set whose members the breaker refuses as `blocked` says, one
    /// entry per member.
    fn blocked_set(blocked: &[Blocked], seed: u64) -> Set {
        let members: Vec<_> = (0..blocked.len())
            .map(|i| Member::new(format!("m{i}").as_str()))
            .collect();
        let blocked: Vec<Blocked> = blocked.to_vec();
        let health = move |route: &RouteId| -> Probe {
            let index: usize = route.as_str()[1..].parse().unwrap();
            let blocked = blocked[index];
            Box::new(move || blocked)
        };
        Set::new(
            &members,
            Some(&health),
            &Settings {
                avoid: Duration::from_secs(1),
                decay: Duration::from_secs(10),
                seed: Some(seed),
                max_wait: DEFAULT_MAX_WAIT,
            },
        )
    }

    fn limited(secs: u64) -> Blocked {
        Some((Code::RateLimited, Some(Duration::from_secs(secs))))
    }

    /// How long a call waits when the members are refused as `blocked`,
    /// under a deadline `deadline` from now.
    fn wait(blocked: &[Blocked], deadline: Option<Duration>) -> Option<Duration> {
        let set = blocked_set(blocked, 1);
        let earliest = set.choose().expect_err("every member refused");
        set.wait_for(&earliest, deadline.map(Deadline::after))
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_waits_only_for_a_rate_limit_that_ends_in_time() {
        let secs = Duration::from_secs;
        // The first back, and at most a quarter of its wait more.
        let waited = wait(&[limited(3), limited(2)], None).unwrap();
        assert!(
            waited >= secs(2) && waited <= secs(2) + secs(2) / 4,
            "{waited:?}"
        );
        // Within the deadline, with a second left for the call.
        assert!(wait(&[limited(2), limited(2)], Some(secs(10))).is_some());
        assert_eq!(
            wait(
                &[limited(2), limited(2)],
                Some(secs(3) - Duration::from_millis(1))
            ),
            None
        );
        // Past `max_wait`.
        assert_eq!(wait(&[limited(61)], None), None);
        // A wall, rejected keys, an open breaker, a cooldown until reset:
        // nothing to wait for...
        let wall = Some((Code::QuotaExhausted, Some(secs(1))));
        let auth = Some((Code::Auth, Some(secs(30))));
        let open = Some((Code::CircuitOpen, Some(secs(1))));
        let until_reset = Some((Code::RateLimited, None));
        assert_eq!(wait(&[wall, auth, open, until_reset], None), None);
        // ...but a rate limit beside them is, though it ends later.
        let waited = wait(&[wall, limited(3), open], None).unwrap();
        assert!(waited >= secs(3), "{waited:?}");
        // The refusal still names the first back, whatever cooled it.
        let set = blocked_set(&[limited(3), wall], 1);
        // A refusal, as the breaker's: no upstream failure's code.
        let refusal = set.refusal(set.choose().unwrap_err());
        assert_eq!(refusal.code(), Code::RouteCoolingDown);
        assert_eq!(refusal.cooled_by(), Some(Code::QuotaExhausted));
        assert_eq!(
            refusal.class(),
            Class::Permanent,
            "a wall is not waited out"
        );
        assert_eq!(refusal.retry_after(), Some(secs(1)));
    }

    #[tokio::test(start_paused = true)]
    async fn calls_waiting_through_one_cooldown_come_back_spread() {
        let set = blocked_set(&[limited(2), limited(2)], 7);
        let earliest = set.choose().unwrap_err();
        let mut waits: Vec<_> = (0..100)
            .map(|_| set.wait_for(&earliest, None).unwrap())
            .collect();
        waits.sort();
        assert!(waits[0] >= Duration::from_secs(2));
        assert!(waits[99] <= Duration::from_millis(2500), "{:?}", waits[99]);
        waits.dedup();
        assert!(waits.len() > 90, "spread: {} distinct", waits.len());
        // The spread never takes a wait past what the deadline leaves.
        let deadline = Some(Deadline::after(Duration::from_millis(3200)));
        for _ in 0..100 {
            let wait = set.wait_for(&earliest, deadline).unwrap();
            assert!(wait <= Duration::from_millis(2200), "{wait:?}");
        }
    }

    #[test]
    fn bits() {
        assert_eq!(ones(0b1011).collect::<Vec<_>>(), [0, 1, 3]);
        assert_eq!(nth_one(0b1011, 0), 0);
        assert_eq!(nth_one(0b1011, 2), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn the_cheaper_of_two_wins_and_unmeasured_members_are_tried() {
        let set = set(2, 7);
        set.measured(0, Duration::from_millis(100));
        for _ in 0..50 {
            assert_eq!(set.choose().unwrap(), 1, "unmeasured: cost 0");
        }
        set.measured(1, Duration::from_millis(10));
        for _ in 0..50 {
            assert_eq!(set.choose().unwrap(), 1);
        }
        // Ten in flight on the fast one: the slow one is cheaper.
        for _ in 0..10 {
            set.enter(1);
        }
        assert_eq!(set.choose().unwrap(), 0);
    }

    /// The breaker's refusal of a call that chose its member before the
    /// half-open trials filled demotes nobody: the member keeps its place
    /// (its trial may be closing the breaker) and its measured latency.
    #[tokio::test(start_paused = true)]
    async fn a_breakers_refusal_demotes_no_member() {
        let set = set(2, 3);
        set.measured(0, Duration::from_millis(5));
        set.measured(1, Duration::from_millis(50));
        assert!(
            set.failed_with(0, &Failure::new(Code::CircuitOpen)),
            "B can take it"
        );
        let members = set.snapshot();
        assert_eq!(members[0].demoted_for, None);
        for _ in 0..20 {
            assert_eq!(set.choose().unwrap(), 0, "A is still the faster");
        }
        // Any other route-scoped failure demotes, as before.
        assert!(set.failed_with(0, &Failure::new(Code::Auth)));
        assert!(set.snapshot()[0].demoted_for.is_some());
        assert_eq!(set.choose().unwrap(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_member_back_from_a_route_failure_is_probed_first() {
        let set = set(2, 3);
        // A refused quickly, then failed for its route; B answers steadily.
        set.measured(0, Duration::from_millis(50));
        assert!(set.failed(0));
        set.measured(1, Duration::from_millis(5));
        for _ in 0..20 {
            assert_eq!(set.choose().unwrap(), 1, "A is demoted");
        }
        tokio::time::advance(Duration::from_millis(1001)).await;
        // Its refusal's timing is forgotten: unmeasured, it is the one tried.
        assert_eq!(set.choose().unwrap(), 0);
        // Once, not by a whole burst: while that probe is in flight, the
        // calls that follow go to the member seen answering.
        set.enter(0);
        for _ in 0..20 {
            assert_eq!(set.choose().unwrap(), 1, "A's probe is in flight");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_burst_on_unmeasured_members_is_spread() {
        let set = set(2, 5);
        let mut seen = [0; 2];
        for _ in 0..10 {
            let index = set.choose().unwrap();
            set.enter(index);
            seen[index] += 1;
        }
        assert_eq!(seen, [5, 5], "fewer in flight wins among the unmeasured");
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_member_is_left_while_another_remains() {
        let set = set(3, 1);
        assert!(set.failed(0));
        for _ in 0..100 {
            assert_ne!(set.choose().unwrap(), 0);
        }
        assert!(set.failed(1));
        assert!(set.failed(2));
        // All demoted: the one that failed longest ago... all at once here,
        // so the first; never a refusal.
        assert!(set.choose().is_ok());
        tokio::time::advance(Duration::from_millis(1001)).await;
        let mut seen = [0; 3];
        for _ in 0..300 {
            seen[set.choose().unwrap()] += 1;
        }
        assert!(seen.iter().all(|&n| n > 50), "{seen:?}");
    }

    /// A port `http` parses but reads as none would send the member's
    /// requests, with its key, to the scheme's default port: refused.
    #[test]
    fn an_origin_with_a_port_no_connection_goes_to_is_refused() {
        for base in [
            "http://127.0.0.1:80800",
            "https://api.example.com:65536",
            "http://127.0.0.1:",
            "http://127.0.0.1:0",
        ] {
            let Err(err) = Member::new("a").origin(base) else {
                panic!("{base} passed");
            };
            assert_eq!(err.code(), "route_set_bad_origin", "{base}");
            assert!(err.to_string().contains("port"), "{base}: {err}");
        }
        assert!(Member::new("a").origin("http://127.0.0.1:65535").is_ok());
    }
}
