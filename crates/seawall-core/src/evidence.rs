use std::time::Duration;

/// Who closed the connection or the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClosedBy {
    /// The caller (or a seawall layer on its behalf) stopped reading.
    Us,
    /// The provider or the network ended it.
    Them,
}

impl ClosedBy {
    /// The stable name: `"us"` or `"them"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ClosedBy::Us => "us",
            ClosedBy::Them => "them",
        }
    }
}

/// What the transport actually saw during an attempt.
///
/// Layers fill what they know: the classifier the status, a deadline the
/// elapsed time, the stream guard bytes, events and content. The
/// [`Action`](crate::Action) table reads it: a failure after content reached
/// the caller is surfaced, never replayed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Evidence {
    /// HTTP status of the response, when one arrived.
    pub status: Option<u16>,
    /// Body bytes received. The stream guard counts none for a stream that
    /// sent only keep-alives before its bound passed: it is read as one
    /// that sent nothing (its own report keeps the raw count).
    pub bytes: u64,
    /// Body frames (chunks) received.
    pub chunks: u64,
    /// Protocol events (SSE events) received.
    pub events: u64,
    /// Events that carried content the caller would show or act on.
    pub content_events: u64,
    /// Time from sending the request to the first body byte.
    pub time_to_first_byte: Option<Duration>,
    /// Time from sending the request to the failure.
    pub elapsed: Option<Duration>,
    /// Whether the protocol's finish marker was seen.
    pub finish_seen: bool,
    /// Whether any content reached the caller.
    pub content_seen: bool,
    /// Who ended the exchange, when known.
    pub closed_by: Option<ClosedBy>,
}

impl Evidence {
    /// Evidence of a response status and nothing else.
    pub fn status(status: u16) -> Self {
        Evidence {
            status: Some(status),
            ..Evidence::default()
        }
    }

    /// True when not a single body byte arrived: the shape of a route that
    /// accepts connections and does not generate.
    pub fn nothing_arrived(&self) -> bool {
        self.bytes == 0 && !self.content_seen
    }
}
