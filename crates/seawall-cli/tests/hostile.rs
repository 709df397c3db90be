//! `seawall chat` against a hostile endpoint: a raw TCP server that sends
//! what no healthy provider (and not seawall-chaos) sends — a 1 GiB line, a
//! 200 MB answer, an undecodable event, a redirect — and what the binary
//! makes of it: bounded memory, the library's verdict, the receipt last,
//! no secret shown.
//!
//! The memory tests run the debug binary (`CARGO_BIN_EXE_seawall`) as a
//! child and read its peak resident set (`VmHWM` in `/proc/<pid>/status`)
//! while it runs. For the release figures:
//! `cargo test --release -p seawall-cli --test hostile -- --nocapture`.

use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

/// The bound on the child's peak resident set: 160 MiB. The stream
/// guard holds one event of up to 32 MiB (`DEFAULT_MAX_LINE`: a 4K image
/// comes as one event) and, before content, up to 36 MiB; its scanner's
/// buffers grow by doubling. A 1 GiB line or an endless event peaked at
/// 91–92 MiB in a debug build (it was under 64 MiB with an 8 MiB cap):
/// bounded by the caps, never by what the server sends.
const MAX_PEAK_KIB: u64 = 160 * 1024;

/// What the raw server answers every connection with.
#[derive(Clone)]
enum Answer {
    /// These bytes, then close.
    Bytes(Vec<u8>),
    /// `head`, then `prefix`, then `fill` over and over until `total`
    /// bytes or the client goes away.
    Endless {
        head: String,
        prefix: Vec<u8>,
        fill: &'static [u8],
        total: usize,
    },
}

/// One request as received.
#[derive(Debug, Clone)]
struct Captured {
    head: String,
    body: Vec<u8>,
}

struct Raw {
    addr: SocketAddr,
    connections: Arc<AtomicUsize>,
    requests: Arc<Mutex<Vec<Captured>>>,
}

impl Raw {
    async fn start(answer: Answer) -> Raw {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let connections = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (count, log) = (connections.clone(), requests.clone());
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                let (answer, log) = (answer.clone(), log.clone());
                tokio::spawn(async move {
                    let _ = serve(socket, answer, log).await;
                });
            }
        });
        Raw {
            addr,
            connections,
            requests,
        }
    }

    fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn requests(&self) -> Vec<Captured> {
        self.requests.lock().unwrap().clone()
    }
}

async fn serve(
    mut socket: TcpStream,
    answer: Answer,
    log: Arc<Mutex<Vec<Captured>>>,
) -> std::io::Result<()> {
    let Some(request) = seawall_test::raw::read_request(&mut socket).await? else {
        return Ok(());
    };
    log.lock().unwrap().push(Captured {
        head: request.head,
        body: request.body,
    });
    match answer {
        Answer::Bytes(bytes) => socket.write_all(&bytes).await?,
        Answer::Endless {
            head,
            prefix,
            fill,
            total,
        } => {
            socket.write_all(head.as_bytes()).await?;
            socket.write_all(&prefix).await?;
            let chunk = fill.repeat((64 * 1024 / fill.len()).max(1));
            let mut sent = prefix.len();
            while sent < total {
                socket.write_all(&chunk).await?;
                sent += chunk.len();
            }
        }
    }
    socket.shutdown().await
}

fn response(status: &str, headers: &[&str], body: &str) -> Answer {
    let mut text = format!("HTTP/1.1 {status}\r\nconnection: close\r\n");
    for header in headers {
        text.push_str(header);
        text.push_str("\r\n");
    }
    text.push_str(&format!("content-length: {}\r\n\r\n{body}", body.len()));
    Answer::Bytes(text.into_bytes())
}

fn json(body: &str) -> Answer {
    response("200 OK", &["content-type: application/json"], body)
}

fn sse(events: &str) -> Answer {
    response("200 OK", &["content-type: text/event-stream"], events)
}

/// What a finished `seawall chat` child left: status, stdout, stderr, and
/// its peak resident set in KiB as last read while it ran.
struct Finished {
    status: Option<i32>,
    out: String,
    err: String,
    peak_kib: u64,
}

impl Finished {
    fn receipt(&self) -> serde_json::Value {
        let last = self.err.lines().last().expect("a receipt line");
        serde_json::from_str(last).unwrap_or_else(|_| panic!("last line not JSON: {}", self.err))
    }
}

fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// A process's peak resident set, sampled every millisecond on a thread
/// of its own until [`Peak::stop`] or the process is gone.
struct Peak {
    done: Arc<AtomicBool>,
    sampler: std::thread::JoinHandle<u64>,
}

impl Peak {
    fn sample(pid: u32) -> Peak {
        let done = Arc::new(AtomicBool::new(false));
        let sampler = {
            let done = done.clone();
            std::thread::spawn(move || {
                let mut peak = 0;
                while !done.load(Ordering::SeqCst) {
                    match vm_hwm_kib(pid) {
                        Some(kib) => peak = peak.max(kib),
                        // A zombie has no VmHWM: the run is over.
                        None => break,
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                peak.max(vm_hwm_kib(pid).unwrap_or(0))
            })
        };
        Peak { done, sampler }
    }

    /// The peak in KiB.
    fn stop(self) -> u64 {
        self.done.store(true, Ordering::SeqCst);
        self.sampler.join().unwrap()
    }
}

/// Runs the `seawall` binary with `args` and `env`, sampling its peak
/// resident set every millisecond until it exits.
async fn seawall(args: &[&str], env: &[(&str, &str)]) -> Finished {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_seawall"));
    command
        .args(args)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("GEMINI_API_KEY")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (name, value) in env {
        command.env(name, value);
    }
    let child = command.spawn().expect("the seawall binary runs");
    let pid = child.id().expect("a running child");
    let sampler = Peak::sample(pid);
    let output = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .expect("seawall chat ends within 2 minutes")
        .unwrap();
    let peak_kib = sampler.stop();
    Finished {
        status: output.status.code(),
        out: String::from_utf8_lossy(&output.stdout).into_owned(),
        err: String::from_utf8_lossy(&output.stderr).into_owned(),
        peak_kib,
    }
}

async fn chat(raw: &Raw, provider: &str, extra: &[&str]) -> Finished {
    let base = raw.base_url();
    let mut args = vec![
        "chat",
        "--provider",
        provider,
        "--base-url",
        &base,
        "--model",
        "m",
        "--deadline",
        "60s",
    ];
    args.extend_from_slice(extra);
    args.push("hi");
    seawall(&args, &[]).await
}

const GIB: usize = 1 << 30;

fn endless_line(prefix: &str) -> Answer {
    Answer::Endless {
        head: "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
            .to_owned(),
        prefix: prefix.as_bytes().to_vec(),
        fill: b"x",
        total: GIB,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_gib_stream_line_is_too_large_once_in_bounded_memory() {
    let raw = Raw::start(endless_line("data: ")).await;
    let run = chat(&raw, "openai", &["--stream"]).await;
    eprintln!(
        "peak resident set, 1 GiB SSE line: {} KiB ({} attempts)",
        run.peak_kib,
        raw.connections.load(Ordering::SeqCst)
    );
    assert_eq!(run.status, Some(1), "{}", run.err);
    assert_eq!(run.out, "");
    // Past a cap of seawall's own: asking again would only meet it again.
    assert_eq!(run.receipt()["code"], "answer_too_large", "{}", run.err);
    assert_eq!(raw.connections.load(Ordering::SeqCst), 1, "{}", run.err);
    assert!(run.err.contains("sse_line_too_long"), "{}", run.err);
    assert!(
        run.peak_kib > 0 && run.peak_kib < MAX_PEAK_KIB,
        "{} KiB",
        run.peak_kib
    );
}

/// The guard ends the body after the frame that broke the line; the
/// caller's own scanner breaks on the same frame. The guard's verdict is
/// the one reported, with what was delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_gib_line_after_content_is_the_guards_verdict_in_bounded_memory() {
    let content = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"w1\"},\"finish_reason\":null}]}\n\n";
    let raw = Raw::start(endless_line(&format!("{content}data: "))).await;
    let run = chat(&raw, "openai", &["--stream"]).await;
    eprintln!(
        "peak resident set, 1 GiB SSE line after content: {} KiB",
        run.peak_kib
    );
    assert_eq!(run.status, Some(3), "{}", run.err);
    assert_eq!(run.out, "w1");
    let receipt = run.receipt();
    assert_eq!(receipt["code"], "stream_interrupted", "{}", run.err);
    assert_eq!(receipt["delivered_chars"], 2);
    assert!(run.err.contains("sse_line_too_long"), "{}", run.err);
    assert_eq!(raw.connections.load(Ordering::SeqCst), 1, "never replayed");
    assert!(
        run.peak_kib > 0 && run.peak_kib < MAX_PEAK_KIB,
        "{} KiB",
        run.peak_kib
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_200_mb_unary_answer_is_refused_in_bounded_memory() {
    let raw = Raw::start(Answer::Endless {
        head: "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n"
            .to_owned(),
        prefix: br#"{"choices":[{"index":0,"message":{"role":"assistant","content":""#.to_vec(),
        fill: b"x",
        total: 200_000_000,
    })
    .await;
    let run = chat(&raw, "openai", &[]).await;
    eprintln!(
        "peak resident set, 200 MB unary answer: {} KiB",
        run.peak_kib
    );
    assert_eq!(run.status, Some(1), "{}", run.err);
    assert_eq!(run.out, "");
    let receipt = run.receipt();
    assert_eq!(receipt["code"], "protocol_violation", "{}", run.err);
    assert!(run.err.contains("answer_too_large"), "{}", run.err);
    assert!(
        run.peak_kib > 0 && run.peak_kib < MAX_PEAK_KIB,
        "{} KiB",
        run.peak_kib
    );
}

#[tokio::test]
async fn a_declared_length_over_the_cap_is_refused_before_reading() {
    let answer = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"w1 w2 w3 w4"},"finish_reason":"stop"}]}"#;
    let raw = Raw::start(json(answer)).await;
    let run = chat(&raw, "openai", &["--max-answer-bytes", "64"]).await;
    assert_eq!(run.status, Some(1), "{}", run.err);
    assert_eq!(run.receipt()["code"], "protocol_violation", "{}", run.err);
    assert!(run.err.contains("longer than 64 bytes"), "{}", run.err);
    let run = chat(&raw, "openai", &["--max-answer-bytes", "1KiB"]).await;
    assert_eq!(
        (run.status, run.out.as_str()),
        (Some(0), "w1 w2 w3 w4"),
        "{}",
        run.err
    );
}

/// The events after one that cannot be decoded are not shown: the guard
/// ends the body there, and what it says was delivered is what stdout has.
#[tokio::test]
async fn nothing_after_an_undecodable_event_is_shown() {
    let chunk = |text: &str| {
        format!(
            "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"finish_reason\":null}}]}}\n\n"
        )
    };
    let events = format!(
        "{}data: {{\"choices\":[{{\"index\n\n{}data: [DONE]\n\n",
        chunk("w1"),
        chunk(" w2")
    );
    let raw = Raw::start(sse(&events)).await;
    let run = chat(&raw, "openai", &["--stream"]).await;
    assert_eq!(run.status, Some(3), "{}", run.err);
    assert_eq!(run.out, "w1");
    let receipt = run.receipt();
    assert_eq!(receipt["code"], "stream_interrupted", "{}", run.err);
    assert_eq!(receipt["delivered_chars"], 2);
    assert!(run.err.contains("sse_undecodable_event"), "{}", run.err);
}

#[tokio::test]
async fn a_redirect_is_not_followed() {
    let raw = Raw::start(response(
        "307 Temporary Redirect",
        &["location: http://127.0.0.1:1/elsewhere"],
        "",
    ))
    .await;
    let run = chat(&raw, "openai", &[]).await;
    assert_eq!(run.status, Some(1), "{}", run.err);
    assert_eq!(run.out, "");
    let receipt = run.receipt();
    assert_eq!(receipt["code"], "redirected", "{}", run.err);
    assert_eq!(receipt["attempts"], 1, "{}", run.err);
    assert!(run.err.contains("status 307"), "{}", run.err);
    assert!(run.err.contains("never follows"), "{}", run.err);
    assert_eq!(raw.requests().len(), 1, "one request, to the route only");
}

#[tokio::test]
async fn the_responses_api_request_is_input_and_stream() {
    let answer = r#"{"id":"resp_1","object":"response","status":"completed","output":[{"type":"reasoning","summary":[]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"w1 w2","annotations":[]},{"type":"output_text","text":" w3","annotations":[]}]}]}"#;
    let raw = Raw::start(json(answer)).await;
    let run = chat(&raw, "openai-responses", &[]).await;
    assert_eq!(run.status, Some(0), "{}", run.err);
    assert_eq!(run.out, "w1 w2 w3");
    assert_eq!(run.receipt()["finish_reason"], "completed");
    let requests = raw.requests();
    assert!(
        requests[0]
            .head
            .starts_with("POST /v1/responses HTTP/1.1\r\n"),
        "{}",
        requests[0].head
    );
    let body: serde_json::Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert_eq!(
        body,
        serde_json::json!({"model": "m", "input": "hi", "stream": false})
    );
}

#[tokio::test]
async fn a_stream_request_answered_with_json_shows_the_answer() {
    let answer = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"w1 w2"},"finish_reason":"stop"}]}"#;
    let raw = Raw::start(response(
        "200 OK",
        &["content-type: application/json; charset=utf-8"],
        answer,
    ))
    .await;
    let run = chat(&raw, "openai", &["--stream"]).await;
    assert_eq!(run.status, Some(0), "{}", run.err);
    assert_eq!(run.out, "w1 w2");
    assert_eq!(run.receipt()["finish_reason"], "stop");
}

#[tokio::test]
async fn userinfo_in_a_base_url_is_never_shown_nor_sent() {
    let answer = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"w1"},"finish_reason":"stop"}]}"#;
    let raw = Raw::start(json(answer)).await;
    let keyed = format!("http://user:secret@{}", raw.addr);
    let unreachable = "http://user:secret@127.0.0.1:1".to_owned();
    // An IPv6 host: its brackets once ended the URL in a message, before
    // the userinfo or query that followed was taken out.
    let unreachable_v6 = "http://user:secret@[::1]:1".to_owned();
    let runs = [
        // A healthy answer, every layer logging.
        (vec!["--base-url", keyed.as_str()], Some(0)),
        // A transport failure, and a fallback route with userinfo.
        (
            vec![
                "--base-url",
                unreachable.as_str(),
                "--fallback-base-url",
                keyed.as_str(),
                "--fallback-model",
                "m",
            ],
            Some(0),
        ),
        (vec!["--base-url", unreachable.as_str()], Some(1)),
        (vec!["--base-url", unreachable_v6.as_str()], Some(1)),
        (vec!["--base-url", "http://[::1]:1/v1?key=secret"], Some(2)),
        // URLs the parser rejects: a key in the query would be appended
        // to and shown with every request's URL.
        (vec!["--base-url", "ftp://user:secret@example.com"], Some(2)),
        (
            vec!["--base-url", "https://example.com?key=secret"],
            Some(2),
        ),
    ];
    for (flags, exit) in runs {
        let mut args = vec!["chat", "--provider", "openai", "--model", "m"];
        args.extend(flags.iter().copied());
        args.extend(["--deadline", "10s", "hi"]);
        let run = seawall(&args, &[("RUST_LOG", "trace")]).await;
        assert_eq!(run.status, exit, "{args:?}: {}", run.err);
        assert!(!run.out.contains("secret"), "{args:?}: {}", run.out);
        assert!(!run.err.contains("secret"), "{args:?}: {}", run.err);
        run.receipt();
    }
    for request in raw.requests() {
        assert!(!request.head.contains("secret"), "{}", request.head);
        // Basic auth would carry base64("user:secret").
        assert!(
            !request.head.contains("dXNlcjpzZWNyZXQ"),
            "{}",
            request.head
        );
    }
}

/// The gateway hands on whole events only, so it holds an event until its
/// blank line. An upstream that sends content, then lines that are no
/// data (comments, `id:`, unknown fields) and never a blank line, held
/// every byte of them: 600 MB sent, 629 MB resident. The guard's scanner
/// bounds an event's lines, whatever their field, at twice its data cap;
/// the client gets what came before and the final error event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_holds_an_endless_event_in_bounded_memory() {
    let content = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"w1\"},\"finish_reason\":null}]}\n\n";
    let raw = Raw::start(Answer::Endless {
        head: "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
            .to_owned(),
        prefix: content.as_bytes().to_vec(),
        fill: b": keep-alive\n",
        total: 256 << 20,
    })
    .await;
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let addr = format!("127.0.0.1:{port}");
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_seawall"))
        .args([
            "gateway",
            "--listen",
            &addr,
            "--route",
            &format!("main=openai@{}", raw.base_url()),
        ])
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the binary starts");
    let pid = child.id().expect("a running child");
    let mut up = false;
    for _ in 0..200 {
        if TcpStream::connect(&addr).await.is_ok() {
            up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(up, "the gateway listens on {addr}");
    let sampler = Peak::sample(pid);
    let body = r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut client = TcpStream::connect(&addr).await.unwrap();
    client.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(
        Duration::from_secs(60),
        tokio::io::AsyncReadExt::read_to_end(&mut client, &mut answer),
    )
    .await
    .expect("the answer ends")
    .unwrap();
    let peak_kib = sampler.stop();
    drop(child);
    let answer = String::from_utf8_lossy(&answer);
    eprintln!("gateway peak resident set, endless event of comments: {peak_kib} KiB");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer:.300}");
    assert!(answer.contains("w1"), "{answer:.600}");
    assert!(answer.contains("sse_event_too_large"), "{answer:.2000}");
    assert!(answer.len() < 1 << 20, "the unended event is never sent");
    assert!(peak_kib > 0 && peak_kib < MAX_PEAK_KIB, "{peak_kib} KiB");
}

/// A unary answer with several choices: the text shown is the first's,
/// the verdict the library's, which reads every choice — a second choice
/// cut at its limit behind the first one's `stop` is no complete answer
/// (the chat command read the first choice's finish alone: exit 0).
#[tokio::test]
async fn a_unary_answer_with_a_cut_choice_is_not_complete() {
    let body = r#"{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"A"},"finish_reason":"stop"},{"index":1,"message":{"role":"assistant","content":"B"},"finish_reason":"length"}],"usage":{"prompt_tokens":9,"completion_tokens":12}}"#;
    let raw = Raw::start(json(body)).await;
    let run = chat(&raw, "openai", &[]).await;
    assert_eq!(run.out, "A");
    assert_eq!(run.status, Some(4), "{}", run.err);
    assert_eq!(run.receipt()["finish_reason"], "length", "{}", run.err);
}
