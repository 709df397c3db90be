//! The policy tables as callers read them: stable names, every row of
//! `Action::decide`, and the receipts' bookkeeping.

use std::time::Duration;

use seawall_core::{
    Action, Attempt, Attempts, Class, Code, Evidence, Failure, FinishKind, Receipt, RouteId,
    StopReason, Usage,
};

/// Stored receipts, logs and dashboards read these names: they never change.
#[test]
fn action_names_are_stable() {
    let names = [
        (Action::Retry, "retry"),
        (Action::Failover, "failover"),
        (Action::Surface, "surface"),
        (Action::Escalate, "escalate"),
        (Action::ReturnToModel, "return_to_model"),
    ];
    for (action, name) in names {
        assert_eq!(action.as_str(), name);
        assert_eq!(action.to_string(), name);
    }
}

#[test]
fn stop_reason_names_are_stable() {
    let names = [
        (StopReason::Succeeded, "succeeded"),
        (StopReason::Deadline, "deadline"),
        (StopReason::Budget, "budget"),
        (StopReason::Attempts, "attempts"),
        (StopReason::NotRetryable, "not_retryable"),
        (StopReason::HintTooLong, "hint_too_long"),
        (StopReason::NotReplayable, "not_replayable"),
        (StopReason::Failover, "failover"),
        (StopReason::OuterLadder, "outer_ladder"),
    ];
    for (reason, name) in names {
        assert_eq!(reason.as_str(), name);
    }
}

#[test]
fn finish_kind_names_are_stable() {
    let names = [
        (FinishKind::Complete, "complete"),
        (FinishKind::Truncated, "truncated"),
        (FinishKind::Refused, "refused"),
        (FinishKind::Filtered, "filtered"),
        (FinishKind::Malformed, "malformed"),
        (FinishKind::Rejected, "rejected"),
        (FinishKind::Aborted, "aborted"),
        (FinishKind::Other, "other"),
    ];
    for (kind, name) in names {
        assert_eq!(kind.as_str(), name);
        assert_eq!(kind.to_string(), name);
    }
}

#[test]
fn code_names_display_as_their_stable_name() {
    for code in Code::ALL {
        assert_eq!(code.to_string(), code.as_str());
    }
    assert_eq!(Code::RateLimited.to_string(), "rate_limited");
    assert_eq!(Code::DeadlineExceeded.to_string(), "deadline_exceeded");
}

#[test]
fn only_the_time_bounds_are_timeouts() {
    for code in Code::ALL {
        let expected = matches!(
            code,
            Code::Timeout | Code::FirstByteTimeout | Code::IdleTimeout
        );
        assert_eq!(code.is_timeout(), expected, "{code}");
    }
}

/// Row 3: a cancellation or the operation's deadline is surfaced whatever
/// class a classifier gave it — never retried, never failed over.
#[test]
fn cancelled_and_deadline_exceeded_surface_in_any_class() {
    for code in [Code::Cancelled, Code::DeadlineExceeded] {
        for class in [Class::Transient, Class::Permanent] {
            assert_eq!(
                Action::decide(class, code, &Evidence::default()),
                Action::Surface,
                "{class:?} {code}"
            );
        }
        // Policy and model-fixable come first.
        assert_eq!(
            Action::decide(Class::Policy, code, &Evidence::default()),
            Action::Escalate
        );
        assert_eq!(
            Action::decide(Class::ModelFixable, code, &Evidence::default()),
            Action::ReturnToModel
        );
    }
}

/// Every transient code without content seen goes through rows 6 to 8;
/// with content seen, row 4 surfaces it.
#[test]
fn every_transient_code_has_its_row() {
    let failover = [
        Code::CircuitOpen,
        Code::RouteCoolingDown,
        Code::FirstByteTimeout,
    ];
    let surface = [
        Code::StreamInterrupted,
        Code::Truncated,
        Code::Cancelled,
        Code::DeadlineExceeded,
    ];
    let mut seen = Evidence::default();
    seen.content_seen = true;
    for code in Code::ALL {
        let expected = if failover.contains(code) {
            Action::Failover
        } else if surface.contains(code) {
            Action::Surface
        } else {
            Action::Retry
        };
        let fresh = Action::decide(Class::Transient, *code, &Evidence::default());
        assert_eq!(fresh, expected, "{code}");
        assert_eq!(
            Action::decide(Class::Transient, *code, &seen),
            Action::Surface,
            "{code} after content"
        );
        assert_eq!(
            Action::decide(Class::Permanent, *code, &Evidence::default()),
            Action::Surface,
            "{code} permanent"
        );
    }
}

#[test]
fn a_receipt_appends_a_fallback_and_keeps_its_own_stop_without_one() {
    let a = RouteId::new("a");
    let b = RouteId::new("b");
    let mut primary = Receipt::default();
    primary.push(Attempt::new(
        a.clone(),
        Some(Code::Overloaded),
        Duration::ZERO,
    ));
    primary.stop = Some(StopReason::Attempts);
    // A receipt with no stop of its own does not erase ours.
    let mut silent = Receipt::default();
    silent.push(Attempt::new(b.clone(), None, Duration::ZERO));
    primary.append(silent);
    assert_eq!(primary.stop, Some(StopReason::Attempts));
    assert!(!primary.fallback);
    // A fallback's stop replaces ours, and `fallback` sticks.
    let mut fallback = Receipt::default();
    fallback.fallback = true;
    fallback.stop = Some(StopReason::Succeeded);
    primary.append(fallback);
    assert_eq!(primary.stop, Some(StopReason::Succeeded));
    assert!(primary.fallback);
    let mut later = Receipt::default();
    later.stop = Some(StopReason::Budget);
    primary.append(later);
    assert!(primary.fallback, "not cleared by a later receipt");
    assert_eq!(primary.stop, Some(StopReason::Budget));
    assert_eq!(primary.routes(), vec![&a, &b]);
}

#[test]
fn attempts_read_as_a_slice_in_order_however_many() {
    let attempt = |n: u64| Attempt::new(RouteId::new("a"), None, Duration::from_millis(n));
    let mut attempts = Attempts::default();
    assert!(attempts.as_slice().is_empty());
    assert_eq!(format!("{attempts:?}"), "[]");
    for n in 0..4 {
        attempts.push(attempt(n));
        let delays: Vec<u64> = attempts
            .iter()
            .map(|a| a.delay.as_millis() as u64)
            .collect();
        assert_eq!(delays, (0..=n).collect::<Vec<_>>());
    }
    let by_ref: Vec<_> = (&attempts).into_iter().map(|a| a.delay).collect();
    let owned: Vec<_> = attempts.clone().into_iter().map(|a| a.delay).collect();
    assert_eq!(by_ref, owned);
    assert_eq!(owned.len(), 4);
    let one: Attempts = std::iter::once(attempt(9)).collect();
    assert_eq!(
        one.into_iter().map(|a| a.delay).collect::<Vec<_>>(),
        [Duration::from_millis(9)]
    );
    assert_eq!(Attempts::default().into_iter().count(), 0);
    let debug = format!("{:?}", std::iter::once(attempt(1)).collect::<Attempts>());
    assert!(debug.starts_with("[Attempt {"), "{debug}");
}

#[test]
fn an_attempt_is_billed_only_for_a_2xx_answer() {
    let route = RouteId::new("a");
    for (status, billed) in [
        (199, false),
        (200, true),
        (299, true),
        (300, false),
        (429, false),
    ] {
        let failure = Failure::new(Code::EmptyResponse).with_status(status);
        assert_eq!(
            Attempt::failed(route.clone(), Duration::ZERO, &failure).billed,
            billed,
            "{status}"
        );
        let response = http::Response::builder().status(status).body(()).unwrap();
        let answered = Attempt::answered(route.clone(), Duration::ZERO, &response);
        assert_eq!(answered.billed, billed, "{status}");
        assert_eq!(answered.code, None);
    }
    let unanswered = Failure::new(Code::Transport);
    assert!(!Attempt::failed(route, Duration::ZERO, &unanswered).billed);
}

#[test]
fn usage_adds_up_over_the_billed_attempts_that_reported_it() {
    let route = RouteId::new("a");
    let mut receipt = Receipt::default();
    assert_eq!(receipt.usage(), Usage::default());
    let billed = |usage| {
        Attempt::new(route.clone(), None, Duration::ZERO)
            .with_billed(true)
            .with_usage(usage)
    };
    receipt.push(billed(Usage::new(1, 2)));
    receipt.push(Attempt::new(
        route.clone(),
        Some(Code::Timeout),
        Duration::ZERO,
    ));
    // A retrieval of a stored answer, a token count: they report usage
    // the provider does not charge for.
    receipt.push(Attempt::new(route.clone(), None, Duration::ZERO).with_usage(Usage::new(5, 7)));
    receipt.push(billed(Usage::new(10, 20)));
    assert_eq!(receipt.usage(), Usage::new(11, 22));
    assert_eq!(receipt.attempts[0].usage(), Some(Usage::new(1, 2)));
    assert_eq!(receipt.attempts[1].usage(), None);
    assert_eq!(receipt.attempts[2].usage(), Some(Usage::new(5, 7)));
    assert_eq!(receipt.attempts[2].billed_usage(), None);
}

/// A billed stream that failed before its finish counted part of what it
/// cost (Anthropic's `message_start`: the input and its cache reads): the
/// receipt adds the part as a floor and still counts the attempt as
/// billed without its whole usage; a failure's whole count is whole.
#[test]
fn a_failed_streams_partial_usage_is_a_floor_not_the_whole() {
    let route = RouteId::new("a");
    let cut = Failure::new(Code::Transport)
        .with_status(200)
        .with_partial_usage(Usage::new(25_000, 1));
    assert_eq!(cut.usage(), None);
    assert_eq!(cut.partial_usage(), Some(Usage::new(25_000, 1)));
    let filtered = Failure::new(Code::EmptyResponse)
        .with_status(200)
        .with_usage(Usage::new(30, 0));
    assert_eq!(filtered.partial_usage(), None);
    let mut receipt = Receipt::default();
    receipt.push(Attempt::failed(route.clone(), Duration::ZERO, &cut));
    receipt.push(Attempt::failed(route, Duration::ZERO, &filtered));
    assert_eq!(receipt.usage(), Usage::new(25_030, 1));
    assert_eq!(receipt.attempts[0].usage(), Some(Usage::new(25_000, 1)));
    assert!(!receipt.attempts[0].usage_is_whole());
    assert!(receipt.attempts[1].usage_is_whole());
    assert_eq!(receipt.billed_without_usage(), 1);
}

#[test]
fn an_attempt_takes_the_usage_another_read_for_it() {
    let route = RouteId::new("a");
    let mut cut = Attempt::new(route.clone(), None, Duration::ZERO).with_billed(true);
    let mut read = Attempt::new(route.clone(), None, Duration::ZERO).with_usage(Usage::new(5, 12));
    assert!(cut.take_usage_of(&mut read));
    assert_eq!(cut.usage(), Some(Usage::new(5, 12)));
    assert!(cut.usage_is_whole());
    assert_eq!(read.usage(), None);
    // Nothing to take: the usage it had stays.
    assert!(!cut.take_usage_of(&mut read));
    assert_eq!(cut.billed_usage(), Some(Usage::new(5, 12)));
}

#[test]
fn only_complete_and_unknown_finishes_complete_the_task() {
    let kinds = [
        (FinishKind::Complete, true),
        (FinishKind::Other, true),
        (FinishKind::Truncated, false),
        (FinishKind::Refused, false),
        (FinishKind::Filtered, false),
        (FinishKind::Malformed, false),
        (FinishKind::Rejected, false),
        (FinishKind::Aborted, false),
    ];
    for (kind, completes) in kinds {
        assert_eq!(kind.completes_task(), completes, "{kind}");
    }
}

/// The longest hint is one week exactly: a hint one second longer is
/// clamped to it, one second shorter is kept.
#[test]
fn the_longest_hint_is_one_week() {
    use seawall_core::hint::{MAX_RETRY_HINT, parse_retry_after};
    assert_eq!(MAX_RETRY_HINT, Duration::from_secs(604_800));
    let now = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1 << 32);
    let value = |s: &str| http::HeaderValue::from_str(s).unwrap();
    assert_eq!(
        parse_retry_after(&value("604799"), now),
        Some(Duration::from_secs(604_799))
    );
    assert_eq!(
        parse_retry_after(&value("604801"), now),
        Some(Duration::from_secs(604_800))
    );
}

#[test]
fn provider_names_are_stable_and_read_back() {
    use seawall_core::provider::Provider;
    let names = [
        (Provider::OpenAi, "openai"),
        (Provider::OpenAiResponses, "openai_responses"),
        (Provider::Anthropic, "anthropic"),
        (Provider::Gemini, "gemini"),
        (Provider::Http, "http"),
    ];
    for (provider, name) in names {
        assert_eq!(provider.as_str(), name);
        assert_eq!(Provider::from_name(name), Some(provider));
        assert_eq!(provider.eof_finishes(), provider == Provider::Http);
    }
    for alias in ["openai-responses", "responses"] {
        assert_eq!(Provider::from_name(alias), Some(Provider::OpenAiResponses));
    }
    for unknown in ["", "OpenAI", "open_ai", "azure", "http "] {
        assert_eq!(Provider::from_name(unknown), None, "{unknown:?}");
    }
}

/// A hint exactly at the threshold is still a rate limit to wait out; one
/// past it is a quota wall, with its reset.
#[test]
fn the_quota_wall_starts_just_past_its_threshold() {
    use seawall_core::provider::QuotaWall;
    let now = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1 << 32);
    let wall = QuotaWall::new(Duration::from_secs(60));
    assert_eq!(wall.threshold(), Duration::from_secs(60));
    assert_eq!(
        QuotaWall::default(),
        QuotaWall::new(QuotaWall::DEFAULT_THRESHOLD)
    );
    let at = wall.judge(Some(Duration::from_secs(60)), now);
    assert_eq!(
        (at.code(), at.retry_after(), at.reset_at()),
        (Code::RateLimited, Some(Duration::from_secs(60)), None)
    );
    let past = wall.judge(Some(Duration::from_secs(61)), now);
    assert_eq!(
        (past.code(), past.retry_after(), past.reset_at()),
        (
            Code::QuotaExhausted,
            Some(Duration::from_secs(61)),
            Some(now + Duration::from_secs(61))
        )
    );
    let none = wall.judge(None, now);
    assert_eq!((none.code(), none.retry_after()), (Code::RateLimited, None));
}

/// What the provider declared travels with the failure, and a hint in the
/// message is read only for a rate limit.
#[test]
fn a_declared_error_keeps_its_fields_and_reads_hints_only_for_rate_limits() {
    use seawall_core::provider::{ErrorContext, Provider, classify_declared};
    let now = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1 << 32);
    let limited = classify_declared(
        Provider::OpenAiResponses,
        Some("requests"),
        Some("rate_limit_exceeded"),
        Some("Slow down. Please try again in 20s."),
        ErrorContext::in_stream(now),
    );
    assert_eq!(limited.code(), Code::RateLimited);
    assert_eq!(limited.retry_after(), Some(Duration::from_secs(20)));
    assert_eq!(limited.provider_type(), Some("requests"));
    assert_eq!(limited.provider_code(), Some("rate_limit_exceeded"));
    assert_eq!(
        limited.message(),
        Some("Slow down. Please try again in 20s.")
    );
    let server = classify_declared(
        Provider::OpenAiResponses,
        None,
        Some("server_error"),
        Some("Something broke; try again in 20s."),
        ErrorContext::in_stream(now),
    );
    assert_eq!(server.code(), Code::ProviderUnavailable);
    assert_eq!(server.retry_after(), None, "not a rate limit: no text hint");
    assert_eq!(server.provider_type(), None);
}
