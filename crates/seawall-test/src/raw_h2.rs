//! HTTP/2 written by hand, for the test servers that must send exactly the
//! frames a broken server or proxy sends — a reset with a chosen error
//! code, a body that ends short of its `content-length` or without
//! trailers, a message cut in half — which neither hyper's server nor
//! tonic's lets one write.
//!
//! A few hundred bytes of framing: the client's preface read, SETTINGS and
//! PINGs acked, and for each stream the client opens, the frames a script
//! lists (HEADERS with a literal-only HPACK block, DATA, RST_STREAM,
//! GOAWAY), pauses and a closed connection.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::net::tcp::OwnedReadHalf;
use tokio::sync::mpsc::UnboundedSender;

/// The error code `NO_ERROR` (RFC 9113 §7): a stream or connection ended
/// as if nothing went wrong, which a client may read as a clean end.
pub const NO_ERROR: u32 = 0x0;
/// The error code `INTERNAL_ERROR`.
pub const INTERNAL_ERROR: u32 = 0x2;
/// The error code `REFUSED_STREAM`: the server did no work on the stream.
pub const REFUSED_STREAM: u32 = 0x7;
/// The error code `CANCEL`.
pub const CANCEL: u32 = 0x8;
/// The error code `ENHANCE_YOUR_CALM`.
pub const ENHANCE_YOUR_CALM: u32 = 0xb;

/// One step of what the server does for a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Act {
    /// Bytes onto the connection (one or more frames).
    Send(Vec<u8>),
    /// Nothing for this long: this call's later acts wait, other calls'
    /// acts and the acks to the client do not.
    Sleep(Duration),
    /// Close the connection (both directions).
    Close,
}

/// One HTTP/2 frame: its 9-byte header (length, type, flags, stream) and
/// its payload, which must fit the default maximum frame size (the client
/// is never told of a larger one).
pub fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = u32::try_from(payload.len()).expect("a payload under 4 GiB");
    assert!(len < 1 << 14, "one frame under the default max frame size");
    let mut out = Vec::with_capacity(9 + payload.len());
    out.extend_from_slice(&len.to_be_bytes()[1..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// Appends an HPACK integer (RFC 7541 §5.1) with an `n`-bit prefix,
/// `first` the high bits of its first byte.
fn hpack_int(first: u8, n: u32, value: usize, out: &mut Vec<u8>) {
    let max = (1usize << n) - 1;
    if value < max {
        out.push(first | value as u8);
        return;
    }
    out.push(first | max as u8);
    let mut rest = value - max;
    while rest >= 128 {
        out.push((rest % 128) as u8 | 0x80);
        rest /= 128;
    }
    out.push(rest as u8);
}

/// Appends an HPACK string literal, not Huffman-coded: the bytes go on
/// the wire as the test wrote them, whatever they are.
fn hpack_str(bytes: &[u8], out: &mut Vec<u8>) {
    hpack_int(0, 7, bytes.len(), out);
    out.extend_from_slice(bytes);
}

/// Sends a HEADERS frame (END_HEADERS, and END_STREAM when `end`) holding
/// `fields` in order as literals without indexing, so no field depends on
/// a dynamic table the client may not share; `:status 200` is the static
/// table's entry.
pub fn headers(stream: u32, fields: &[(&str, &[u8])], end: bool) -> Act {
    let mut block = Vec::new();
    for (name, value) in fields {
        match (*name, *value) {
            (":status", b"200") => block.push(0x88),
            // Literal without indexing, the name `:status` from the static
            // table (index 8).
            (":status", value) => {
                hpack_int(0, 4, 8, &mut block);
                hpack_str(value, &mut block);
            }
            (name, value) => {
                block.push(0);
                hpack_str(name.as_bytes(), &mut block);
                hpack_str(value, &mut block);
            }
        }
    }
    Act::Send(frame(0x1, 0x4 | u8::from(end), stream, &block))
}

/// Sends a DATA frame holding `bytes`, ending the stream when `end`.
pub fn data(stream: u32, bytes: &[u8], end: bool) -> Act {
    Act::Send(frame(0x0, u8::from(end), stream, bytes))
}

/// Sends RST_STREAM with `code`.
pub fn reset(stream: u32, code: u32) -> Act {
    Act::Send(frame(0x3, 0, stream, &code.to_be_bytes()))
}

/// Sends GOAWAY: the last stream the server processed (a stream above it
/// was never worked on), and `code`.
pub fn goaway(last_stream: u32, code: u32) -> Act {
    let mut payload = last_stream.to_be_bytes().to_vec();
    payload.extend_from_slice(&code.to_be_bytes());
    Act::Send(frame(0x7, 0, 0, &payload))
}

type Script = Arc<dyn Fn(u32, usize) -> Vec<Act> + Send + Sync>;

/// An h2c server on a free loopback port: `script(stream, n)` is what it
/// does for the `n`th request (counted from 0 over every connection),
/// opened on `stream`. After its acts the stream is left as they left it
/// (a stream they never ended stays open). Returns its address and the
/// count of requests it has seen.
pub async fn scripted_server<F>(script: F) -> (SocketAddr, Arc<AtomicUsize>)
where
    F: Fn(u32, usize) -> Vec<Act> + Send + Sync + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let addr = listener.local_addr().expect("bound");
    let calls = Arc::new(AtomicUsize::new(0));
    let script: Script = Arc::new(script);
    let counter = Arc::clone(&calls);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            tokio::spawn(connection(tcp, Arc::clone(&script), Arc::clone(&counter)));
        }
    });
    (addr, calls)
}

/// Serves one connection: a writer task plays the acts in the order they
/// come, so the acks and every call's frames share the one socket.
async fn connection(tcp: tokio::net::TcpStream, script: Script, calls: Arc<AtomicUsize>) {
    let _ = tcp.set_nodelay(true);
    let (mut read, mut write) = tcp.into_split();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Act>();
    let closed = Arc::new(tokio::sync::Notify::new());
    let writer_closed = Arc::clone(&closed);
    tokio::spawn(async move {
        // The server's preface: its SETTINGS, defaults all.
        let _ = write.write_all(&frame(0x4, 0, 0, &[])).await;
        while let Some(act) = rx.recv().await {
            match act {
                Act::Send(bytes) => {
                    if write.write_all(&bytes).await.is_err() {
                        break;
                    }
                }
                Act::Close => break,
                Act::Sleep(_) => {}
            }
        }
        let _ = write.shutdown().await;
        writer_closed.notify_one();
    });
    tokio::select! {
        () = read_frames(&mut read, tx, script, calls) => {}
        () = closed.notified() => {}
    }
}

/// Reads the client's frames: acks its SETTINGS and PINGs (a client that
/// waits for the acks would otherwise stall), and starts the script for
/// every new stream it opens.
async fn read_frames(
    read: &mut OwnedReadHalf,
    tx: UnboundedSender<Act>,
    script: Script,
    calls: Arc<AtomicUsize>,
) {
    let mut preface = [0u8; 24];
    if read.read_exact(&mut preface).await.is_err() {
        return;
    }
    assert_eq!(&preface, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    let mut last_stream = 0;
    loop {
        let mut head = [0u8; 9];
        if read.read_exact(&mut head).await.is_err() {
            return;
        }
        let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let (kind, flags) = (head[3], head[4]);
        let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
        let mut payload = vec![0; len];
        if read.read_exact(&mut payload).await.is_err() {
            return;
        }
        match kind {
            // SETTINGS, not an ack: ack it.
            0x4 if flags & 1 == 0 => {
                let _ = tx.send(Act::Send(frame(0x4, 1, 0, &[])));
            }
            // PING, not an ack: ack it.
            0x6 if flags & 1 == 0 => {
                let _ = tx.send(Act::Send(frame(0x6, 1, 0, &payload)));
            }
            // HEADERS opening a new stream: a call.
            0x1 if stream > last_stream => {
                last_stream = stream;
                let n = calls.fetch_add(1, Ordering::SeqCst);
                let acts = script(stream, n);
                let tx = tx.clone();
                tokio::spawn(async move {
                    for act in acts {
                        match act {
                            Act::Sleep(pause) => tokio::time::sleep(pause).await,
                            act => {
                                if tx.send(act).is_err() {
                                    return;
                                }
                            }
                        }
                    }
                });
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_is_its_nine_byte_header_then_its_payload() {
        assert_eq!(
            frame(0x3, 0x1, 5, &[0xaa, 0xbb]),
            [0, 0, 2, 0x3, 0x1, 0, 0, 0, 5, 0xaa, 0xbb]
        );
    }

    #[test]
    fn header_fields_are_literals_and_long_ones_take_a_multi_byte_length() {
        let long = vec![b'v'; 200];
        let Act::Send(bytes) = headers(
            1,
            &[(":status", b"200"), (":status", b"503"), ("k", &long)],
            true,
        ) else {
            panic!("headers are sent");
        };
        // END_HEADERS | END_STREAM on stream 1.
        assert_eq!(bytes[3..9], [0x1, 0x5, 0, 0, 0, 1]);
        let mut block = vec![0x88, 0x08, 3];
        block.extend(b"503");
        // 200 = 127 + 73: the 7-bit prefix full, then 73.
        block.extend([0x00, 1, b'k', 0x7f, 73]);
        block.extend(&long);
        assert_eq!(bytes[9..], block[..]);
    }
}
