//! `seawall chat` never shows its API key: an upstream that echoes the
//! key it was sent (a 401 body quoting the bearer token, a URL with
//! `?key=`) has it scrubbed from stderr and stdout.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// The key the chat is given, through its provider's default variable.
const KEY: &str = "sk-test-SECRETKEY0123456789";

/// A server that answers every request 401, its body echoing the request's
/// `Authorization` value and a URL carrying the key in its query.
async fn echoing_server() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 1 << 16 {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&head);
                let auth = head
                    .lines()
                    .find_map(|line| {
                        let (name, value) = line.split_once(':')?;
                        name.eq_ignore_ascii_case("authorization")
                            .then(|| value.trim().to_owned())
                    })
                    .unwrap_or_default();
                let key = auth.strip_prefix("Bearer ").unwrap_or(&auth);
                let body = format!(
                    "{{\"error\":{{\"message\":\"Incorrect API key provided: {auth} (key {key}); \
                     see http://[::1]:9/v1?key={key} or http://u:{key}@[::1]/\",\
                     \"type\":\"invalid_request_error\",\"code\":\"invalid_api_key\"}}}}"
                );
                let answer = format!(
                    "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\n\
                     content-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(answer.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    addr
}

#[tokio::test]
async fn a_401_echoing_the_key_never_shows_it() {
    let addr = echoing_server().await;
    let base = format!("http://{addr}");
    for stream in [false, true] {
        let mut args = vec![
            "chat",
            "--provider",
            "openai",
            "--model",
            "m",
            "--base-url",
            base.as_str(),
            "--deadline",
            "10s",
        ];
        if stream {
            args.push("--stream");
        }
        args.push("hi");
        let output = tokio::time::timeout(
            Duration::from_secs(60),
            tokio::process::Command::new(env!("CARGO_BIN_EXE_seawall"))
                .args(&args)
                .env_remove("ANTHROPIC_API_KEY")
                .env_remove("GEMINI_API_KEY")
                .env_remove("RUST_LOG")
                .env("OPENAI_API_KEY", KEY)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true)
                .output(),
        )
        .await
        .expect("seawall chat ends within a minute")
        .unwrap();
        let out = String::from_utf8_lossy(&output.stdout);
        let err = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {err}");
        // The failure is still told, with the provider's words.
        assert!(err.contains("Incorrect API key"), "{args:?}: {err}");
        assert!(!err.contains("SECRETKEY"), "{args:?}: {err}");
        assert!(!out.contains("SECRETKEY"), "{args:?}: {out}");
    }
}
