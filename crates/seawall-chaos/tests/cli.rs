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
