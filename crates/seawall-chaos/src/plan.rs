//! From a fault and a request to what goes over the wire: a list of steps the
//! response body plays, or an error response, or a close before any response.

use std::collections::VecDeque;
use std::time::Duration;

use bytes::Bytes;

use crate::fault::{Answer, Fault, StatusFault};
use crate::journal::Outcome;
use crate::wire::{self, Ctx, Finish, token_text};

/// One step of a response body.
#[derive(Debug)]
pub(crate) enum Step {
    /// Bytes carrying this many content tokens.
    Bytes(Bytes, u32),
    /// Stream tokens `next..=last`, waiting `delay` before each token after the first
    /// of the answer; `finish_on_last` when the finish marker rides on the last one.
    Tokens {
        next: u32,
        last: u32,
        delay: Duration,
        finish_on_last: Option<Finish>,
    },
    /// The stream's finish frames.
    Finish(Finish),
    /// Silence.
    Sleep(Duration),
    /// Silence, with a keep-alive every `ping_every` if set.
    Stall {
        length: Duration,
        ping_every: Option<Duration>,
    },
    /// Abrupt TCP close once the bytes before it are on the wire.
    Reset,
    /// Nothing, until the client goes away or the server shuts down.
    Hang,
}

/// What to answer.
#[derive(Debug)]
pub(crate) enum Plan {
    /// 200 with a body played step by step.
    Body {
        steps: VecDeque<Step>,
        /// The outcome if every step is played.
        end: Outcome,
        /// `content-length`, for complete unary bodies.
        exact_len: Option<u64>,
    },
    /// An error response.
    Error(StatusFault),
    /// Close the connection without answering.
    CloseBeforeHeaders,
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Tokens `from..=to` and the finish marker, merged when the provider does so.
fn stream_tail(
    ctx: &Ctx,
    from: u32,
    to: u32,
    delay: Duration,
    finish: Finish,
    steps: &mut VecDeque<Step>,
) {
    let merge = from <= to && wire::finish_merges_into_last_token(ctx, finish, to);
    if from <= to {
        steps.push_back(Step::Tokens {
            next: from,
            last: to,
            delay,
            finish_on_last: merge.then_some(finish),
        });
    }
    if !merge {
        steps.push_back(Step::Finish(finish));
    }
}

fn stream_tokens(from: u32, to: u32, delay: Duration, steps: &mut VecDeque<Step>) {
    if from <= to {
        steps.push_back(Step::Tokens {
            next: from,
            last: to,
            delay,
            finish_on_last: None,
        });
    }
}

fn text(from: u32, to: u32) -> String {
    (from..=to).map(token_text).collect()
}

/// The silence a unary answer of tokens `from..=to` spends before it is sent.
fn unary_delay(answer: &Answer, from: u32, to: u32) -> Duration {
    let gaps = (from.max(2)..=to).count() as u64;
    ms(answer.delay_ms.saturating_mul(gaps))
}

/// Tokens a stream cut after token `tokens` has sent: a continuation
/// (after a prefill ending in `wK`) starts at `w{K+1}`, so cut faults cut
/// a resumed answer again, at the same absolute token.
fn sent(ctx: &Ctx, tokens: u32) -> u32 {
    tokens.saturating_sub(ctx.first_token - 1)
}

/// The first token of a `repeat_tail` answer: a continuation after `wK`
/// starts `words` tokens early (never before `w1`); a fresh answer at `w1`.
fn repeat_from(ctx: &Ctx, words: u32) -> u32 {
    if ctx.first_token > 1 {
        ctx.first_token.saturating_sub(words).max(1)
    } else {
        1
    }
}

/// Plans the answer to `fault` (never `random`: it is drawn before planning).
pub(crate) fn plan(fault: &Fault, ctx: &Ctx, stream: bool) -> Plan {
    if stream {
        plan_stream(fault, ctx)
    } else {
        plan_unary(fault, ctx)
    }
}

fn plan_stream(fault: &Fault, ctx: &Ctx) -> Plan {
    let mut steps = VecDeque::new();
    let mut end = Outcome::CutByFault;
    let preamble = |steps: &mut VecDeque<Step>| {
        if let Some(frame) = wire::preamble(ctx) {
            steps.push_back(Step::Bytes(frame, 0));
        }
    };
    match fault {
        Fault::Status(s) => return Plan::Error(*s),
        Fault::ResetBeforeHeaders => return Plan::CloseBeforeHeaders,
        Fault::Ok(a) | Fault::SlowFirstByte { answer: a, .. } => {
            if let Fault::SlowFirstByte { ms: wait, .. } = fault {
                steps.push_back(Step::Sleep(ms(*wait)));
            }
            preamble(&mut steps);
            stream_tail(
                ctx,
                ctx.first_token,
                a.tokens,
                ms(a.delay_ms),
                Finish::Stop,
                &mut steps,
            );
            end = Outcome::Completed;
        }
        Fault::RepeatTail { words, answer: a } => {
            preamble(&mut steps);
            stream_tail(
                ctx,
                repeat_from(ctx, *words),
                a.tokens,
                ms(a.delay_ms),
                Finish::Stop,
                &mut steps,
            );
            end = Outcome::Completed;
        }
        Fault::ToolCallResetAfter { tokens, answer } => {
            preamble(&mut steps);
            stream_tokens(ctx.first_token, *tokens, ms(answer.delay_ms), &mut steps);
            let sent = wire::Sent {
                count: sent(ctx, *tokens),
                last: *tokens,
            };
            steps.push_back(Step::Bytes(wire::tool_call_delta(ctx, sent), 0));
            steps.push_back(Step::Reset);
        }
        Fault::ResetMidEvent { tokens, answer } => {
            preamble(&mut steps);
            stream_tokens(ctx.first_token, *tokens, ms(answer.delay_ms), &mut steps);
            let sent = wire::Sent {
                count: sent(ctx, *tokens),
                last: *tokens,
            };
            let next = wire::token(ctx, tokens + 1, None, sent);
            // Cut inside the event: its first half, never its blank line.
            steps.push_back(Step::Bytes(next.slice(..next.len() / 2), 0));
            steps.push_back(Step::Reset);
        }
        Fault::Empty | Fault::Refusal(_) | Fault::Length(_) => {
            let (a, finish) = match fault {
                Fault::Refusal(a) => (*a, Finish::Refusal),
                Fault::Length(a) => (*a, Finish::Length),
                _ => (
                    Answer {
                        tokens: 0,
                        delay_ms: 0,
                    },
                    Finish::Stop,
                ),
            };
            preamble(&mut steps);
            stream_tail(ctx, 1, a.tokens, ms(a.delay_ms), finish, &mut steps);
            end = Outcome::Completed;
        }
        Fault::HangAfterHeaders => steps.push_back(Step::Hang),
        Fault::FrameThenEof => steps.push_back(Step::Bytes(wire::first_frame(ctx), 0)),
        Fault::ResetAfter { tokens, answer }
        | Fault::StreamErrorAfter { tokens, answer }
        | Fault::TruncateAfter { tokens, answer } => {
            preamble(&mut steps);
            stream_tokens(ctx.first_token, *tokens, ms(answer.delay_ms), &mut steps);
            match fault {
                Fault::ResetAfter { .. } => steps.push_back(Step::Reset),
                Fault::StreamErrorAfter { .. } => {
                    steps.push_back(Step::Bytes(wire::stream_error(ctx, sent(ctx, *tokens)), 0))
                }
                _ => {}
            }
        }
        Fault::StallAfter {
            tokens,
            ms: stall,
            pings,
            ping_ms,
            answer,
        } => {
            let delay = ms(answer.delay_ms);
            preamble(&mut steps);
            stream_tokens(ctx.first_token, *tokens, delay, &mut steps);
            steps.push_back(Step::Stall {
                length: ms(*stall),
                ping_every: pings.then(|| ms(*ping_ms)),
            });
            // A continuation after `wK` already has every token up to it:
            // the tail never repeats one.
            stream_tail(
                ctx,
                (tokens + 1).max(ctx.first_token),
                answer.tokens.max(*tokens),
                delay,
                Finish::Stop,
                &mut steps,
            );
            end = Outcome::Completed;
        }
        // `random` is drawn before planning; should one slip through, failing loudly
        // beats answering healthy.
        Fault::Random { .. } => return Plan::CloseBeforeHeaders,
    }
    Plan::Body {
        steps,
        end,
        exact_len: None,
    }
}

fn plan_unary(fault: &Fault, ctx: &Ctx) -> Plan {
    let mut steps = VecDeque::new();
    // The usage counts the tokens this answer generated: a continuation's
    // start after 1.
    let full = |finish: Finish, a: &Answer, from: u32| {
        let generated = (a.tokens + 1).saturating_sub(from.max(1));
        let (prefix, suffix) = wire::unary_parts(ctx, finish, generated);
        Bytes::from(format!("{prefix}{}{suffix}", text(from, a.tokens)))
    };
    let complete = |steps: VecDeque<Step>, body: Bytes, tokens: u32| {
        let len = body.len() as u64;
        let mut steps = steps;
        steps.push_back(Step::Bytes(body, tokens));
        Plan::Body {
            steps,
            end: Outcome::Completed,
            exact_len: Some(len),
        }
    };
    match fault {
        Fault::Status(s) => Plan::Error(*s),
        Fault::ResetBeforeHeaders => Plan::CloseBeforeHeaders,
        Fault::StreamErrorAfter { .. } => Plan::Error(wire::unary_stream_error(ctx.provider)),
        Fault::RepeatTail { words, answer: a } => {
            let from = repeat_from(ctx, *words);
            let wait = unary_delay(a, from, a.tokens);
            if !wait.is_zero() {
                steps.push_back(Step::Sleep(wait));
            }
            let tokens = a.tokens.saturating_sub(from - 1);
            complete(steps, full(Finish::Stop, a, from), tokens)
        }
        Fault::Ok(a)
        | Fault::SlowFirstByte { answer: a, .. }
        | Fault::Refusal(a)
        | Fault::Length(a) => {
            let finish = match fault {
                Fault::Refusal(_) => Finish::Refusal,
                Fault::Length(_) => Finish::Length,
                _ => Finish::Stop,
            };
            let mut wait = unary_delay(a, 1, a.tokens);
            if let Fault::SlowFirstByte { ms: first, .. } = fault {
                wait += ms(*first);
            }
            if !wait.is_zero() {
                steps.push_back(Step::Sleep(wait));
            }
            // Only a healthy answer continues a resumed one; refusals and
            // truncations keep their own shape.
            let from = if finish == Finish::Stop {
                ctx.first_token
            } else {
                1
            };
            let tokens = a.tokens.saturating_sub(from - 1);
            complete(steps, full(finish, a, from), tokens)
        }
        Fault::Empty => {
            let a = Answer {
                tokens: 0,
                delay_ms: 0,
            };
            complete(steps, full(Finish::Stop, &a, 1), 0)
        }
        Fault::HangAfterHeaders => {
            steps.push_back(Step::Hang);
            Plan::Body {
                steps,
                end: Outcome::CutByFault,
                exact_len: None,
            }
        }
        Fault::FrameThenEof => {
            let (prefix, _) = wire::unary_parts(ctx, Finish::Stop, 0);
            steps.push_back(Step::Bytes(prefix.into(), 0));
            Plan::Body {
                steps,
                end: Outcome::CutByFault,
                exact_len: None,
            }
        }
        Fault::ResetAfter { tokens, answer }
        | Fault::ToolCallResetAfter { tokens, answer }
        | Fault::ResetMidEvent { tokens, answer }
        | Fault::TruncateAfter { tokens, answer }
        | Fault::StallAfter { tokens, answer, .. } => {
            let total = answer.tokens.max(*tokens);
            let (prefix, suffix) = wire::unary_parts(ctx, Finish::Stop, total);
            let wait = unary_delay(answer, 1, *tokens);
            if !wait.is_zero() {
                steps.push_back(Step::Sleep(wait));
            }
            steps.push_back(Step::Bytes(
                format!("{prefix}{}", text(1, *tokens)).into(),
                *tokens,
            ));
            let mut end = Outcome::CutByFault;
            match fault {
                Fault::ResetAfter { .. }
                | Fault::ToolCallResetAfter { .. }
                | Fault::ResetMidEvent { .. } => steps.push_back(Step::Reset),
                Fault::StallAfter { ms: stall, .. } => {
                    // A JSON body has no room for keep-alives: the stall is plain silence.
                    steps.push_back(Step::Stall {
                        length: ms(*stall) + unary_delay(answer, tokens + 1, total),
                        ping_every: None,
                    });
                    steps.push_back(Step::Bytes(
                        format!("{}{suffix}", text(tokens + 1, total)).into(),
                        total - tokens,
                    ));
                    end = Outcome::Completed;
                }
                _ => {}
            }
            Plan::Body {
                steps,
                end,
                exact_len: None,
            }
        }
        Fault::Random { .. } => Plan::CloseBeforeHeaders,
    }
}
