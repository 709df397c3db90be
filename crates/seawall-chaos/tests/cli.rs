//! The `seawall-chaos` binary as a process.

use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A closed stdout (a pipe nobody reads) costs the start-up line, not the
/// server: it keeps serving instead of panicking on the write.
#[test]
fn a_closed_stdout_does_not_stop_the_server() {
    let port = {
        let probe = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        probe.local_addr().unwrap().port()
    };
    let (reader, writer) = std::io::pipe().unwrap();
    // Closed before the server starts: its first write finds no reader.
    drop(reader);
    let mut child = Command::new(env!("CARGO_BIN_EXE_seawall-chaos"))
        .args(["--addr", &format!("127.0.0.1:{port}")])
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    // Listening means the start-up line was written (or tried) right after.
    while TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_err() {
        let exited = child.try_wait().unwrap();
        if exited.is_some() || started.elapsed() > Duration::from_secs(20) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    let exited = child.try_wait().unwrap();
    let _ = child.kill();
    let output = child.wait_with_output().unwrap();
    assert_eq!(
        exited,
        None,
        "the server ended: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// SIGTERM (docker, systemd, a harness's terminate) stops the server as
/// Ctrl-C does: a clean shutdown, its line, exit 0 — not a kill.
#[cfg(unix)]
#[test]
fn sigterm_and_sigint_shut_the_server_down_cleanly() {
    use std::io::{BufRead, BufReader, Read};
    for signal in ["-TERM", "-INT"] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_seawall-chaos"))
            .args(["--addr", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut listening = String::new();
        stdout.read_line(&mut listening).unwrap();
        assert!(
            listening.starts_with("seawall-chaos listening on "),
            "{listening:?}"
        );
        let killed = Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if started.elapsed() > Duration::from_secs(20) {
                let _ = child.kill();
                panic!("{signal}: the server did not stop");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut rest = String::new();
        stdout.read_to_string(&mut rest).unwrap();
        let mut log = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut log)
            .unwrap();
        assert_eq!(status.code(), Some(0), "{signal}: {status} {log}");
        assert_eq!(rest, "seawall-chaos stopped\n", "{signal}: {log}");
    }
}
