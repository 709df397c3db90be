//! `ResumeLayer`: an interrupted stream continues where it stopped, in the
//! same body, without repeating a token.
//!
//! # The story
//!
//! A stream dropped after 400 tokens used to leave two bad choices: fail
//! (the user sees half an answer and an error) or restart (the user sees
//! the first 400 tokens twice, and the provider bills them twice). seawall's
//! rule is that nothing is *replayed* after content reached the caller. A
//! continuation is not a replay: it asks for what is missing and shows
//! nothing twice.
//!
//! The layer sits outside the stream guard and the retry ladder — it owns
//! what the caller sees, so it knows what the caller has read:
//!
//! ```text
//! Deadline(total) → Resume → [Fallback →] RetryBudget → Breaker → Deadline(attempt) → StreamGuard → Classify → client
//! ```
//!
//! When a streamed body fails after content with an interruption a
//! continuation can fix — a reset, an idle gap, an in-stream `overloaded`
//! or 5xx-type error (`stream_interrupted` with a transient cause), or a
//! cut without a finish (`truncated`) — it builds the continuation from the
//! original request (recorded with the shared
//! [`ReplayBody`](seawall_core::recording::ReplayBody), up to a cap: a longer
//! request cannot be resumed and its interruption surfaces as before) and
//! the delivered text (the [`Interrupted`](seawall_core::Interrupted)
//! record the guard puts in the failure) — its output budget
//! (`max_tokens`, `max_completion_tokens`, `max_output_tokens`,
//! `maxOutputTokens`) lowered by the content events already delivered,
//! each at least one token of it, since the budget bounds the whole
//! answer — sends it through the same inner
//! service (so the same route first, with the ladder and the fallback
//! behind it), and keeps feeding the **same** response body. The inner
//! guard holds the continuation back until its first content, so a
//! continuation that fails before content is just another try — unless
//! it failed for good (a class other than transient: too long for the
//! context, refused, malformed), which the same request would meet again;
//! the layer makes at most [`max_resumes`](ResumeLayer::max_resumes) of them (2),
//! each only while the operation's [`Deadline`](seawall_core::Deadline)
//! has time left (not a caller's [`AnswerBy`](seawall_core::AnswerBy): its
//! wait for the answer to begin is over, and a continuation carries none),
//! and each paid for by the retry ladder's budget below as a retry is
//! (the continuation's request says it continues, and the ladder charges
//! it): with no token left it is not sent, and the body
//! ends with the interruption (`gave_up` is `budget`).
//!
//! Splicing happens in the caller's wire format, event by event: the
//! layer passes only complete events (an event cut by a frame boundary is
//! held until its end, so a cut in the middle of an event shows nothing of
//! it; the provider's own error event never comes: the guard hands none
//! on), drops the
//! continuation's preamble (OpenAI's role chunk, Anthropic's
//! `message_start`, `content_block_start` and `ping`, the Responses API's
//! `response.created` … `content_part.added`, anything before the first
//! content) — unless the continuation finishes without more text (a cut
//! just before the finish: the model, given the whole answer, ends at
//! once), when its finish and what follows end the original answer; the
//! continuation is marked ([`RequestFacts::continuing`](seawall_core::RequestFacts::continuing))
//! so the guard below delivers such a finish instead of retrying it as an
//! empty answer — and passes content events as the provider sent them, except
//! what must read as the rest of the original stream: an OpenAI chat
//! continuation's chunks take the original's envelope (`id`, `object`,
//! `created`, `model`, `system_fingerprint`, `service_tier`) and a Gemini
//! continuation's the original's `modelVersion` and `responseId`, so one
//! answer has one id whichever route answered (openai-node's
//! `ChatCompletionStream` takes the last chunk's id for the answer's); an
//! Anthropic continuation's content block index becomes the original text
//! block's,
//! and a Responses API continuation takes the original's `item_id`,
//! `output_index`, `content_index` and the next `sequence_number`s; a
//! block or item the continuation adds after its text (a tool call) keeps
//! its own id and follows the original's in the same order, also when it
//! opens the continuation (the text was whole at the cut). An Anthropic
//! text block the caller saw opened is closed (`content_block_stop`)
//! before the finish or the next block when the continuation adds no text
//! to it; text a continuation writes after the caller saw the block
//! closed (a cut between its stop and the finish) is a text block of its
//! own, the next index. The
//! OpenAI choice index needs nothing: only one choice is ever resumed.
//! Models often repeat the tail of what they were given: the layer holds
//! the continuation's first bytes (64 by default, longer while they are
//! still a copy of the delivered text's last KiB) and trims the longest
//! prefix that repeats the end of the delivered text, starting a word
//! (or a line; never inside a word or an indentation; a repeat of two
//! words or more spaced anew counts too), rewriting the one
//! event the cut falls in (not for a server that
//! continues the final message in place: it is sent the message
//! right-stripped, as chat templates commonly trim it, and only the
//! whitespace it writes anew is trimmed; what looks like a repeat there is
//! new text). Claude continuing a prefill writes
//! what follows it too, and so does Gemini continuing the `model` turn a
//! request ends with (its default style; asked to continue in a user turn
//! after it, it writes a new reply): there only a verbatim restatement of
//! at least two words and 12 bytes is trimmed (a `0` after `[0 1 0`, a
//! word said twice, a brace after a brace, a code line printed again are
//! new text), or else the trailing whitespace it writes anew (a prefill
//! had to go without it). A continuation that repeats
//! delivered text but not as its tail cannot be lined up: the body ends
//! with the interruption, as without the layer, rather than guess. So
//! does one that opens with the answer's own first two words and then
//! goes another way (not under a prefill or a `model` turn): the answer
//! begun again in other words, which a model asked to continue (OpenAI's
//! default style) may write, and which spliced in would show the caller
//! two answers. Nor
//! can a repeat of a tail that was itself repeating (a row after the
//! same row, `ha ha`, a repeat that is two copies of one piece): the
//! answer's own next words may be the same again, so trimming could lose
//! them and keeping could show them twice. What no text can tell apart is
//! guessed: a sentence said once before the cut and once in the
//! continuation is taken for the model's repeat.
//!
//! A [`Resumed`] handle in the response extensions reports each resume
//! (route, characters delivered at the cut, attempt, what was trimmed, the
//! continuation's own [`Receipt`](seawall_core::Receipt)) and the answer's
//! final finish. The response's `Receipt` was handed over before any
//! continuation was sent, so it tells only what the first answer cost; a
//! continuation is a request the provider bills like any other, and
//! [`ResumeReport::receipt`] gives the whole operation's: the first
//! answer's attempts followed by every continuation's, with their usage
//! (a streamed one's once its body ended; an answer cut before its usage
//! event reported none, which
//! [`Receipt::billed_without_usage`](seawall_core::Receipt::billed_without_usage)
//! counts).
//!
//! The usage *in the stream* is the provider's, per request, spliced as it
//! came: OpenAI chat's `include_usage` chunk and the Responses API's
//! terminal event are the continuation's own (its input includes the
//! delivered text sent back; its output only what it added); Anthropic's
//! `message_start` (input) is the first answer's and the closing
//! `message_delta` (output) the continuation's; Gemini's last
//! `usageMetadata` is the continuation's. The receipt is the account of
//! the whole.
//!
//! # Never resumed
//!
//! (By a generated continuation. A background response whose connection
//! was cut has its stored stream retrieved past a tool call in flight and
//! structured output: see below.)
//!
//! - A refusal, a filter, a `length` cut or a `stop`: the model finished;
//!   these are verdicts, not interruptions.
//! - Any interruption after the caller already received the answer's
//!   finish (a server's `abort` finish, judged at the end marker that
//!   follows it, which the guard then holds back; an error after the
//!   finish): a continuation would show a second finish, and be billed.
//! - A caller who drops the body (cancellation): nothing is read further.
//! - The operation's deadline, or an interruption with no time left.
//! - A tool or function-call delta delivered before the cut: the
//!   continuation can only carry text.
//! - Several choices (`n > 1`, Gemini `candidateCount > 1`).
//! - A Responses API request made in a stored `conversation`: the
//!   conversation takes in every item of every response made in it, so a
//!   continuation would write the question and the cut answer into it a
//!   second time, for good.
//! - Anthropic extended thinking (`thinking` enabled): a prefill cannot
//!   carry the signed thinking blocks the API requires first.
//! - Structured output (a JSON schema or JSON mode: OpenAI's
//!   `response_format`, the Responses API's `text.format`, Anthropic's
//!   `output_config.format`, Gemini's `responseSchema` or JSON
//!   `responseMimeType`): constrained decoding starts each answer at the
//!   schema's start, so a continuation is a second object, not the rest.
//! - A protocol violation or the stream's own `max_duration`.
//!
//! The OpenAI Responses
//! API is continued with a trailing assistant item; the events that say
//! the text whole and end the spliced stream (`output_text.done`,
//! `content_part.done`, `output_item.done`, the terminal response) say
//! the caller's whole text, under the original item's id (an SDK's final
//! response is the terminal event's: openai-python's
//! `get_final_response().output_text`); where the continuation wrote no
//! text (a cut just before the finish), the terminal response's output
//! holds the original message item with that text (the item's own
//! `*.done` events, which the cut fell before, are not made up). The
//! text said is all the caller holds: a response with two message items
//! cut in the second says the first's text in it too. The
//! terminal response's `usage`
//! stays the continuation's own: what the continuations cost together is
//! in the [`ResumeReport`]'s receipt.
//!
//! Which response id to chain the next turn from (`previous_response_id`):
//! the terminal response's. A request that stores its responses (`store`
//! not `false`, the API's default) ends with the last continuation's own
//! id there, while `response.created` and the other opening events name
//! the original's: the original was cut (a client that closes a stream
//! ends its generation, and retrieving it may find nothing), and the
//! continuation's stored response is the one that holds the whole answer
//! — the question, the delivered text as an assistant item, the rest.
//! openai-python's `ResponseStreamState` and openai-node's
//! `ResponseStream` take the terminal event's response as the final one
//! without comparing its id with the opening one, so
//! `get_final_response().id` / `finalResponse().id` is that id. Its
//! output item keeps the original's item id, as every event of the
//! answer does; the stored item has its own. A request with
//! `"store": false` has nothing to chain from and keeps the original's
//! id throughout. So does an answer a fallback route of another wire
//! format finished ([`ResumeRecord::answered_in`]): no stored response
//! holds it, and the original's holds only its start — chain such a turn
//! with the whole conversation as `input` instead.
//!
//! # On a fallback route, in another wire format
//!
//! A continuation goes through the inner service as the original did, so
//! when the route is now unhealthy a fallback route below may take it. A
//! route that sends the operation elsewhere with a request of its own
//! (another model, another provider's wire format) must not send that
//! request's *question* again: its provider would answer from the start,
//! billed whole, and the layer could only end with the interruption (the
//! answer begun again never lines up). So every generated continuation
//! carries a [`Continuation`] in its request extensions — the caller's
//! format, the delivered text (one shared `Arc<str>` per resume), the
//! resume's number, the content events spent and the layer's styles —
//! and such a route builds its own request's continuation with
//! [`Continuation::body`]: the same builder, in the route's format
//! (Anthropic prefill, OpenAI's trailing assistant message, Gemini's
//! `model` turn, the Responses API's assistant item), its output budget
//! lowered as the layer lowers the caller's. `seawall chat --resume` does
//! this for every fallback route. A prefill or a Gemini `model` turn last
//! built so that the route's model refuses with a 400 (Claude 4.6 and
//! later, newer Gemini models) switches the answer's continuations to the
//! user turn, as for a caller of that format. The route's
//! own request is checked as the caller's is: one the layer never
//! continues (several choices, extended thinking, structured output) is
//! [`ResumeError::NeverResumed`], one whose budget the delivered text
//! spent [`ResumeError::BudgetSpent`]; the route sends nothing, and the
//! layer gives the answer up for that reason (`gave_up` is the reason —
//! `extended_thinking`, `max_tokens`, … — not `continuation_failed`).
//!
//! A route whose answer is in another wire format than the caller's marks
//! its response [`AnsweredIn`]`(provider)` (the route knows; nothing
//! below the layer says it before the stream ends: the guard's report
//! names the format read only at the end). The layer then reads that
//! continuation with the answering format's decoder — the guard below
//! read it so too — and lines it up as it would in that format (prefill or
//! ask-to-continue, with the same repeat trimming and the same refusal to
//! guess), and hands the caller only its text, said anew as the caller's
//! format's text deltas: OpenAI chunks under the original's id, creation
//! time and model (from its first event, kept once per response),
//! Anthropic `content_block_delta`s under the open text block's index (a
//! block of its own after one the caller saw closed), Gemini responses
//! under the original's `modelVersion` and `responseId`, Responses API
//! `output_text.delta`s of the item the caller was reading, numbered on
//! from its last event. Its finish, once its stream ended well, becomes
//! the caller's: `stop` / `end_turn` / `STOP` / `completed` for a
//! complete one, `length` / `max_tokens` / `MAX_TOKENS` /
//! `max_output_tokens` for a cut one, `content_filter` / `refusal` /
//! `SAFETY` / `content_filter` for a filter (and, but for the Responses
//! API, where a refusal is a content part of its own, for a refusal), with
//! the caller's end events (OpenAI's `[DONE]` and, when asked, its usage
//! chunk; Anthropic's block stop, `message_delta` with the continuation's
//! output tokens, `message_stop`; Gemini's `usageMetadata`; the Responses
//! API's `output_text.done`, `content_part.done` and `output_item.done`
//! saying the caller's whole text, and the terminal response — the one the
//! stream was created with, its output that message item, its usage the
//! continuation's). So the caller's SDK reads one well-formed answer.
//! The text said so is kept, for those end events and the interruption's
//! record, up to [`ResumeLayer::max_text`] (the guard's own record, 1 MiB
//! by default), as no guard of the caller's stream reads it: past it the
//! caller is still shown the text, but the answer is not continued from a
//! prefix, a cut's [`Interrupted`](seawall_core::Interrupted) says its
//! text is one (`text_capped`), and a Responses API caller, whose end
//! events would say a prefix as the whole text, ends with the
//! interruption (`gave_up` is `text_not_kept`, as for a text too long to
//! keep in its own format).
//! What cannot be said that way ends with the interruption, everything
//! said so far delivered (`gave_up` is `another_format`): content that is
//! not text (a tool call), a finish no other format has a word for (a
//! malformed call, a rejection), an answer in no provider's format
//! ([`Continuation::readable_in`] tells a route beforehand). An answer in
//! another format *without* the marker is read in the caller's, finds no
//! content, and ends so too: never a guess. An answer that *began* on a
//! route of another format (its first response marked: the primary was
//! down from the start) is one the caller reads in that format, not the
//! request's: it is not resumed — its stream passes as it came, a cut
//! reported as the interruption with the text shown (`gave_up` is
//! `another_format`) — rather than continued in the request's format
//! inside it. A continuation answered by a
//! route of the caller's own format (the same route, or a fallback of the
//! same provider) is spliced as before, and a healthy stream pays nothing
//! for any of this but one check per frame that it has kept the first.
//!
//! # Background responses: the stored stream, retrieved
//!
//! A Responses API request with `"background": true` and `"stream": true`
//! is generated whatever the connection does, and its events are kept:
//! the API resumes such a stream from a cursor, `GET
//! /v1/responses/{id}?stream=true&starting_after=N`. The layer reads the
//! id from the stream's first events and continues a cut of the
//! *connection* — a reset, a clean end short of the finish, an idle gap,
//! the connection's own read timeout — by that GET,
//! after the last whole event the caller read (the original's query, an
//! Azure `api-version`, kept): the events that follow are the original's
//! own, numbered and named as they were, and pass as they come — nothing
//! is generated again, nothing trimmed, nothing billed again (the
//! continuation's receipt marks its attempts unbilled;
//! [`ResumeRecord::retrieved`] says so). So neither a tool call in
//! flight, nor structured output, nor a text too long to keep, nor a cut
//! before any text (a reasoning model thinking) stops it. A provider that
//! will not retrieve it (the response was not stored, has expired, or a
//! compatible server has no such endpoint: a failure that is not
//! transient, or a 4xx other than 408 and 429 with no classifier below)
//! is asked for a generated continuation instead. The refused retrieval,
//! like a prefill the model refuses, was a way of asking, not a
//! continuation: it gives its resume back.
//!
//! A stream the provider itself ended with an error (`response.failed`,
//! an `error` event: a `server_error`, `overloaded`, a
//! `vector_store_timeout`) is not retrieved: the stored response failed
//! too, and its events after the cursor are that failure again. It is
//! continued as a response not in the background is — by a generated
//! continuation, within that one's limits (a tool call in flight,
//! structured output, a cut before any text, … end it with the
//! interruption, `gave_up` saying why), and so is every later cut of the
//! answer: past a generated continuation the stream the caller reads is
//! no longer the original's stored one.
//!
//! # Per provider
//!
//! [`continuation_with`] builds the request: an Anthropic assistant
//! prefill (or a user turn asking to continue, also after a model refused
//! the prefill with a 400, as Claude 4.6 and later do), OpenAI's trailing
//! assistant message (plus, configurably, a user turn asking to continue;
//! or `continue_final_message` for OpenAI-compatible servers that continue
//! in place), Gemini's trailing `model` turn (or that turn and a user turn
//! asking to continue, also after a model refused a request ending with a
//! model turn with a 400, as newer Gemini models do), the Responses API's
//! trailing assistant item. A refusal, once the user turn that replaced
//! it is answered, is remembered by the service (and its clones) for the
//! model the request names on the request's route:
//! the service's later answers for it ask in the user turn from their
//! first continuation. A fallback route's refusal is its own model's, and
//! is not remembered.
//!
//! # Differences from `tower::retry`
//!
//! `tower::retry::Retry` sends the whole request again and hands the
//! caller a new response: once content has reached the caller, that shows
//! it a second time (and the provider bills it twice), or leaves the
//! caller to throw away what it has shown. This layer never sends the
//! original request again after content: it asks for the *rest* of the
//! answer and splices only new events into the body the caller is already
//! reading. Failures before content are not its business; the retry
//! ladder below it handles them, and each continuation goes through that
//! ladder too.
//!
//! # Cost
//!
//! On a healthy stream the layer passes each frame on as it came (a
//! reference-count move, no copy, no allocation per frame), after one
//! check that it ends an event. Per response it boxes its state once and
//! keeps the request's recording (`Bytes` handles) and, for OpenAI chat
//! and Gemini, a handle on the first frame (the envelope a continuation's
//! events are said under). Only events after a seam are read and
//! rewritten.
//!
//! tracing: debug events on target `seawall::resume` (a warning for an
//! answer lost, below), and one span per
//! resume (`resume`, target `seawall::resume`, level info), a child of the
//! span current when the answer reached the caller and the parent of the
//! continuation's own operation span. It has the attempt spans' field
//! names — `otel.name` (`"chat gpt-4o"`), `otel.kind`,
//! `gen_ai.operation.name`, `gen_ai.provider.name`,
//! `gen_ai.request.model`, `server.address` and `server.port` (the route
//! that answered),
//! `gen_ai.response.finish_reasons`, `gen_ai.usage.input_tokens`,
//! `gen_ai.usage.output_tokens`, `error.type` and `otel.status_code` (how
//! the continuation ended) — and `seawall.resume` (1, 2, …),
//! `seawall.cause`, `seawall.delivered_chars`, `seawall.trimmed_chars`,
//! `seawall.gave_up`. Without a subscriber recording them none is made.
//!
//! Why an interruption was not resumed (the report's `gave_up`) is said by
//! one event on target `seawall::resume`, with the fields `reason` (the
//! `gave_up` value) and `route` (the route that answered last, where the
//! answer was being resumed). It is in the last resume's span, or, when the first
//! cut was refused and no resume opened one, in the span the answer is
//! read in: a field can be recorded only on the span that declares it, so
//! there the event stands for `seawall.gave_up`. It is a **warning** when
//! the answer was lost to something other than its own nature — a limit
//! (`max_resumes`, `deadline`, `budget`, `text_not_kept`, `replay_cap`,
//! `request_unsent`; the last three only for an interruption a
//! continuation would have fixed) or a continuation the layer sent (`misaligned`,
//! `continuation_failed`, and `another_format` or `no_content` for a
//! continuation's answer). It stays at **debug** where the interruption
//! was never one to continue: not an interruption a continuation fixes
//! (`not_resumable`), after the finish (`finished`), a first answer cut
//! before content or served in another format, and the request's or the
//! stream's shape (`tool_call`, `not_json`, `max_tokens`, `n_choices`,
//! `extended_thinking`, `conversation`, `structured_output`); a caller who
//! drops the body (`cancelled`) is said at debug too.
//!
//! ```
//! use bytes::Bytes;
//! use http_body_util::{BodyExt, Full};
//! use seawall_resume::{ResumeLayer, ResumeRequestBody, Resumed};
//! use tower::{ServiceBuilder, ServiceExt, service_fn};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), seawall_core::BoxError> {
//! let provider = service_fn(|_req: http::Request<ResumeRequestBody<Full<Bytes>>>| async {
//!     let stream = concat!(
//!         "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"},\"finish_reason\":\"stop\"}]}\n\n",
//!         "data: [DONE]\n\n",
//!     );
//!     let response = http::Response::builder()
//!         .header("content-type", "text/event-stream")
//!         .body(Full::new(Bytes::from_static(stream.as_bytes())))?;
//!     Ok::<_, seawall_core::BoxError>(response)
//! });
//! let service = ServiceBuilder::new().layer(ResumeLayer::new()).service(provider);
//! let request = http::Request::post("https://api.example/v1/chat/completions")
//!     .body(Full::new(Bytes::from_static(br#"{"model":"m","stream":true,"messages":[]}"#)))?;
//! let response = service.oneshot(request).await?;
//! let resumed = response.extensions().get::<Resumed>().cloned().unwrap();
//! let body = response.into_body().collect().await?.to_bytes();
//! assert!(body.ends_with(b"data: [DONE]\n\n"));
//! assert_eq!(resumed.count(), 0);
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]

mod body;
pub mod continuation;
mod future;
mod handoff;
mod layer;
mod learned;
mod report;
mod service;
mod splice;
mod translate;

pub use body::ResumeBody;
pub use continuation::{
    AnthropicStyle, Decision, GeminiStyle, OpenAiStyle, ResumeError, Styles, continuation,
    continuation_with, never_resume, plan,
};
pub use future::ResponseFuture;
pub use handoff::{AnsweredIn, Continuation};
pub use layer::ResumeLayer;
pub use report::{ResumeRecord, ResumeReport, Resumed};
pub use service::{Resume, ResumeRequestBody};
