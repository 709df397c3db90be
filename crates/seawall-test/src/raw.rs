//! Reading a request off a raw socket, for the test servers that answer
//! with bytes no correct HTTP server sends (hostile servers): they must
//! read the request as a client sends it before playing their reply.

use tokio::io::{AsyncRead, AsyncReadExt};

/// One HTTP/1.1 request, as a raw server reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawRequest {
    /// The request line and the headers, the blank line included, as sent
    /// (bytes that are not UTF-8 replaced).
    pub head: String,
    /// The body: what arrived after the head until `content-length` bytes
    /// had (fewer when the client closed first; without the header, what
    /// came in the head's last read). A client awaiting its answer sends
    /// nothing more, so this is the body it sent.
    pub body: Vec<u8>,
}

impl RawRequest {
    /// The value of header `name` (any case), trimmed; the first one when
    /// the header came twice.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim().eq_ignore_ascii_case(name).then(|| value.trim())
        })
    }
}

/// Reads one request from `stream`: the head up to its blank line, then
/// `content-length` bytes of body. `None` when the client closes before a
/// whole head arrived.
pub async fn read_request<R>(stream: &mut R) -> std::io::Result<Option<RawRequest>>
where
    R: AsyncRead + Unpin,
{
    let mut seen = Vec::new();
    let mut buf = [0u8; 8192];
    let head_end = loop {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Ok(None);
        }
        seen.extend_from_slice(&buf[..n]);
        if let Some(at) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&seen[..head_end]).into_owned();
    let mut request = RawRequest {
        head,
        body: Vec::new(),
    };
    let length = request
        .header("content-length")
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(0);
    while seen.len() < head_end + length {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        seen.extend_from_slice(&buf[..n]);
    }
    seen.drain(..head_end);
    request.body = seen;
    Ok(Some(request))
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use tokio::io::ReadBuf;

    use super::*;

    /// Hands out one piece a read, as a socket does when the client writes
    /// in pieces.
    struct Pieces(VecDeque<&'static [u8]>);

    impl AsyncRead for Pieces {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            if let Some(piece) = self.0.pop_front() {
                buf.put_slice(piece);
            }
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn a_request_in_pieces_is_read_to_its_declared_length_and_no_further() {
        let mut pieces = Pieces(VecDeque::from([
            &b"POST / HTTP/1.1\r\ncontent-"[..],
            b"length: 6\r\n\r\nab",
            b"cd",
            b"ef",
            b"NEXT",
        ]));
        let request = read_request(&mut pieces)
            .await
            .expect("reading pieces")
            .expect("a request");
        assert_eq!(request.header("Content-Length"), Some("6"));
        assert_eq!(request.body, b"abcdef");
        // The piece after the body is left for whoever reads next.
        assert_eq!(pieces.0, [&b"NEXT"[..]]);
    }

    async fn read(bytes: &[u8]) -> Option<RawRequest> {
        read_request(&mut &bytes[..])
            .await
            .expect("reading a slice")
    }

    #[tokio::test]
    async fn a_request_is_its_head_and_its_declared_body() {
        let request = read(b"POST /v1 HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\nbodyEXTRA")
            .await
            .expect("a request");
        assert_eq!(
            request.head,
            "POST /v1 HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\n"
        );
        assert_eq!(request.header("host"), Some("a"));
        assert_eq!(request.header("content-length"), Some("4"));
        // Bytes after the declared body in the same read are kept: the
        // servers answer one request a connection and log what came.
        assert_eq!(request.body, b"bodyEXTRA");
    }

    #[tokio::test]
    async fn no_length_no_body_and_a_short_body_is_what_came() {
        let request = read(b"GET / HTTP/1.1\r\n\r\n").await.expect("a request");
        assert!(request.body.is_empty());
        let short = read(b"POST / HTTP/1.1\r\ncontent-length: 10\r\n\r\nabc")
            .await
            .expect("a request");
        assert_eq!(short.body, b"abc");
    }

    #[tokio::test]
    async fn a_client_gone_before_a_whole_head_is_none() {
        assert_eq!(read(b"POST / HTTP/1.1\r\nHost: a\r\n").await, None);
        assert_eq!(read(b"").await, None);
    }
}
