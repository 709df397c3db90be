//! `seawall chat --stream --resume` with a fallback route: a stream cut
//! after content, its primary unhealthy for the continuation, continues on
//! the fallback — in the fallback's own wire format, as a continuation of
//! the fallback's own request — and stdout reads every token once.

use clap::Parser;
use seawall_chaos::{ChaosHandle, ChaosServer, Fault, answer_text, repeats_a_token};
use seawall_cli::chat::{ChatArgs, run};

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: ChatArgs,
}

fn model(provider: &str) -> &'static str {
    match provider {
        "anthropic" => "claude-fallback",
        "gemini" => "gemini-fallback",
        "openai-responses" => "gpt-responses-fallback",
        _ => "gpt-fallback",
    }
}

/// `seawall chat --stream --resume` on `primary` at the chaos server, with
/// one fallback route of `fallback`'s format at the same server under
/// another name (`localhost`).
async fn chat(chaos: &ChaosHandle, primary: &str, fallback: &str) -> (u8, String, String) {
    let base = chaos.base_url();
    let other = base.replace("127.0.0.1", "localhost");
    let args = [
        "chat",
        "--provider",
        primary,
        "--base-url",
        &base,
        "--model",
        "primary-model",
        "--stream",
        "--resume",
        "--deadline",
        "20s",
        "--fallback-base-url",
        &other,
        "--fallback-model",
        model(fallback),
        "--fallback-provider",
        fallback,
        "Count.",
    ];
    let cli = Cli::try_parse_from(args).expect("valid flags");
    let (mut out, mut log) = (Vec::new(), Vec::new());
    let status = run(cli.args, &mut out, &mut log).await;
    (
        status,
        String::from_utf8(out).unwrap(),
        String::from_utf8(log).unwrap(),
    )
}

/// The chaos server's route for a provider flag (`openai_responses`).
fn route(provider: &str) -> String {
    provider.replace('-', "_")
}

fn faults(script: &[&str]) -> Vec<Fault> {
    script.iter().map(|f| f.parse::<Fault>().unwrap()).collect()
}

fn receipt(log: &str) -> serde_json::Value {
    serde_json::from_str(log.lines().last().expect("a receipt line"))
        .expect("the last line is JSON")
}

/// The primary is cut after 400 of 600 tokens, then refuses the
/// continuation for good (a rejected key: the route, not the request),
/// so the continuation moves to the fallback route.
async fn cut_then_moved(primary: &str, fallback: &str) {
    let pair = format!("{primary} → {fallback}");
    let chaos = ChaosServer::builder().start().await.unwrap();
    let cut = ["reset_after;tokens=400;total=600", "status;code=401"];
    if primary == fallback {
        let mut script = cut.to_vec();
        script.push("ok;tokens=600");
        chaos.script(&route(primary), faults(&script)).unwrap();
    } else {
        chaos.script(&route(primary), faults(&cut)).unwrap();
        chaos
            .script(&route(fallback), faults(&["ok;tokens=600"]))
            .unwrap();
    }
    let (status, out, log) = chat(&chaos, primary, fallback).await;
    assert_eq!(status, 0, "{pair}: {log}");
    assert!(!repeats_a_token(&out), "{pair}: a token shown twice");
    assert_eq!(out, answer_text(600), "{pair}: {log}");
    let receipt = receipt(&log);
    assert_eq!(receipt["outcome"], "ok", "{pair}: {receipt}");
    assert_eq!(receipt["resumed"], 1, "{pair}: {receipt}");
    let resume = &receipt["resumes"][0];
    assert!(
        resume["route"]
            .as_str()
            .is_some_and(|r| r.starts_with("fallback:")),
        "{pair}: {receipt}"
    );
    assert_eq!(resume["spliced"], true, "{pair}: {receipt}");
    // Named as seawall names providers (`openai_responses`).
    let answered_in = (primary != fallback).then(|| fallback.replace('-', "_"));
    assert_eq!(
        resume["answered_in"].as_str(),
        answered_in.as_deref(),
        "{pair}: {receipt}"
    );
    assert_eq!(
        resume["delivered_chars"],
        answer_text(400).len(),
        "{pair}: {receipt}"
    );
    // The original, the continuation refused by the primary, the
    // continuation on the fallback: its own request (its model, its
    // format), asking only for the rest — the server wrote 200 tokens,
    // not the whole answer again.
    let journal = chaos.journal();
    assert_eq!(journal.len(), 3, "{pair}: {journal:?}");
    let moved = &journal[2];
    assert_eq!(moved.model.as_deref(), Some(model(fallback)), "{pair}");
    let path = match fallback {
        "anthropic" => "/v1/messages",
        "openai-responses" => "/v1/responses",
        "gemini" => "/v1beta/models/gemini-fallback:streamGenerateContent",
        _ => "/v1/chat/completions",
    };
    assert_eq!(moved.path, path, "{pair}");
    assert_eq!(moved.tokens_written, 200, "{pair}: a continuation");
    assert!(
        moved.body_bytes > journal[0].body_bytes,
        "{pair}: the delivered text went with it"
    );
}

#[tokio::test]
async fn a_cut_stream_continues_on_a_fallback_of_the_same_format() {
    cut_then_moved("openai", "openai").await;
    cut_then_moved("anthropic", "anthropic").await;
}

#[tokio::test]
async fn a_cut_openai_stream_continues_on_an_anthropic_fallback() {
    cut_then_moved("openai", "anthropic").await;
}

#[tokio::test]
async fn a_cut_anthropic_stream_continues_on_an_openai_fallback() {
    cut_then_moved("anthropic", "openai").await;
}

#[tokio::test]
async fn a_cut_openai_stream_continues_on_a_gemini_fallback() {
    cut_then_moved("openai", "gemini").await;
}

/// The Responses API answers: read with its decoder, said as chat chunks.
#[tokio::test]
async fn a_cut_anthropic_stream_continues_on_a_responses_fallback() {
    cut_then_moved("anthropic", "openai-responses").await;
}

/// A Gemini body says nothing of a stream (its path does): the fallback's
/// continuation must still be read as the stream it asks for.
#[tokio::test]
async fn a_cut_gemini_stream_continues_on_an_anthropic_fallback() {
    cut_then_moved("gemini", "anthropic").await;
}

/// The fallback's continuation cut in turn, then answered: two resumes,
/// both on the fallback in its own format, every token once.
#[tokio::test]
async fn a_continuation_cut_on_the_fallback_is_resumed_there_again() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    chaos
        .script(
            "openai",
            faults(&["reset_after;tokens=100;total=300", "status;code=401"]),
        )
        .unwrap();
    chaos
        .script(
            "anthropic",
            faults(&["reset_after;tokens=200;total=300", "ok;tokens=300"]),
        )
        .unwrap();
    let (status, out, log) = chat(&chaos, "openai", "anthropic").await;
    assert_eq!(status, 0, "{log}");
    assert_eq!(out, answer_text(300), "{log}");
    let receipt = receipt(&log);
    assert_eq!(receipt["resumed"], 2, "{receipt}");
    let written: Vec<u32> = chaos
        .journal()
        .iter()
        .filter(|row| row.path == "/v1/messages")
        .map(|row| row.tokens_written)
        .collect();
    assert_eq!(written, [100, 100]);
}

/// A Responses API answer continued on an Anthropic fallback: the
/// continuation's text reaches the chat as the Responses stream's own.
#[tokio::test]
async fn a_cut_responses_stream_continues_on_an_anthropic_fallback() {
    cut_then_moved("openai-responses", "anthropic").await;
}

/// An answer that began on a fallback of another format (the primary
/// down from the start) is read in the fallback's format: cut, with the
/// primary still down, its continuation must not be said in the
/// primary's format inside it. It is not resumed: the cut is reported
/// with the text shown, and the receipt says why.
#[tokio::test]
async fn an_answer_begun_on_a_fallback_of_another_format_is_not_resumed_in_the_primarys() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    chaos
        .script("openai", faults(&["status;code=503"; 12]))
        .unwrap();
    chaos
        .script(
            "anthropic",
            faults(&["reset_after;tokens=40;total=60", "ok;tokens=60"]),
        )
        .unwrap();
    let (status, out, log) = chat(&chaos, "openai", "anthropic").await;
    assert_eq!(status, 3, "interrupted after content: {log}");
    assert_eq!(out, answer_text(40), "{log}");
    for foreign in ["[DONE]", "chat.completion", "data:", "{"] {
        assert!(!out.contains(foreign), "{foreign} in {out:?}");
    }
    let receipt = receipt(&log);
    assert_eq!(receipt["outcome"], "error", "{receipt}");
    assert_eq!(receipt["code"], "stream_interrupted", "{receipt}");
    assert_eq!(
        receipt["finish_reason"],
        serde_json::Value::Null,
        "{receipt}"
    );
    assert_eq!(
        receipt["delivered_chars"],
        answer_text(40).len(),
        "{receipt}"
    );
    assert_eq!(receipt["resume_gave_up"], "another_format", "{receipt}");
    assert_eq!(receipt["resumed"], 0, "{receipt}");
    // Nothing was asked of the fallback a second time: no continuation
    // billed and never shown.
    let asked = chaos
        .journal()
        .iter()
        .filter(|row| row.path == "/v1/messages")
        .count();
    assert_eq!(asked, 1, "{:?}", chaos.journal());
}
