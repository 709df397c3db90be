//! The journal: one row per request, what it asked for and what went over the wire.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use seawall_internal::millis;
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

use crate::wire::Provider;

/// How a response ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Still being written.
    InFlight,
    /// The whole response was handed to the connection.
    Completed,
    /// The fault cut it short: a reset, a truncation, an in-stream error, a lone frame.
    CutByFault,
    /// The client went away before the response was complete.
    ClientDisconnected,
    /// An error status was answered (injected by `status`, or the request was refused).
    Rejected(u16),
    /// The server shut down while the response was still open.
    ServerShutdown,
}

impl Outcome {
    /// Whether the response is over, whatever the way.
    pub fn is_final(self) -> bool {
        self != Outcome::InFlight
    }
}

/// Where the applied fault came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultSource {
    /// No header, no script: the healthy default.
    Default,
    /// The `x-chaos-fault` header.
    Header,
    /// A script queued for the route.
    Script,
    /// The fault set for the request's API key.
    Key,
}

/// One request as the server saw and answered it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalEntry {
    /// Arrival order, from 1, unique for the server's life (not reset by `reset`).
    /// Not the order rows enter the journal: a request is numbered when its
    /// head arrives and journaled once its body is read, so a slow body's row
    /// appears after rows of requests that arrived later.
    pub seq: u64,
    /// Journal order, from 1, unique for the server's life (not reset by
    /// `reset`): numbered as the row enters the journal, under the journal's
    /// lock, so a row seen in a page has a higher `cursor` than every row
    /// visible before it. `GET /_chaos/journal?since=N` pages on it: a
    /// client reads on with `since` set to the last `cursor` it got, and
    /// misses no row however slowly its request's body arrived.
    pub cursor: u64,
    /// Arrival, in milliseconds since the Unix epoch.
    pub arrived_unix_ms: u64,
    /// Request path, without the query.
    pub path: String,
    /// The provider API of the route.
    pub provider: Option<Provider>,
    /// The model asked for, when the request named one (at most
    /// [`MAX_MODEL_LEN`](crate::MAX_MODEL_LEN) bytes: a longer one is refused).
    pub model: Option<String>,
    /// Whether the request asked for a stream.
    pub stream: bool,
    /// The `x-chaos-request-id` header, when sent.
    pub request_id: Option<String>,
    /// [`body_hash`] of the request body (absent when the body was refused).
    pub body_hash: Option<String>,
    /// Request body length in bytes.
    pub body_bytes: u64,
    /// The fault applied, in header syntax (`ok` when healthy). For `random`, the fault drawn.
    pub fault: String,
    /// Where the fault came from.
    pub fault_source: FaultSource,
    /// Position of the fault in its route's script (1-based), when scripted.
    pub attempt: Option<u32>,
    /// Status sent; absent when the connection was closed before any response.
    pub status: Option<u16>,
    /// Response body bytes handed to the connection.
    pub bytes_written: u64,
    /// Content tokens handed to the connection.
    pub tokens_written: u32,
    /// How the response ended.
    pub outcome: Outcome,
    /// Milliseconds from arrival to the end of the response, once it ended.
    pub duration_ms: Option<u64>,
}

/// FNV-1a, 64 bits, as 16 lowercase hex digits: the `body_hash` of a request body.
/// Deterministic across runs and machines, so a test can compute it on its side.
pub fn body_hash(body: &[u8]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &byte in body {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}")
}

pub(crate) fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map(millis).unwrap_or(0)
}

/// The end of a response, written into its row.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ending {
    pub outcome: Outcome,
    pub bytes_written: u64,
    pub tokens_written: u32,
    pub elapsed: Duration,
}

/// The most rows the journal keeps: a long-running server forgets its
/// oldest rows rather than growing without bound.
pub const MAX_JOURNAL_ROWS: usize = 100_000;

/// The most rows one `GET /_chaos/journal` returns, and its default
/// `limit`: a page is cloned and serialised whole, so a GET costs at most
/// this many rows of memory however long the journal, and concurrent GETs
/// multiply a page, not the journal. A client reads on with `since` set to
/// the last [`cursor`](JournalEntry::cursor) it got.
pub const MAX_JOURNAL_PAGE: usize = 1_000;

/// The rows in `cursor` order, which is the order they were pushed.
#[derive(Debug, Default)]
struct Rows {
    rows: VecDeque<JournalEntry>,
    /// The `cursor` of the last row pushed; kept across `clear`, so cursors
    /// stay unique and a client paging across a reset misses nothing.
    last_cursor: u64,
}

/// Rows in journal order, and a signal for those waiting on a row to end.
#[derive(Debug, Default)]
pub(crate) struct Journal {
    rows: Mutex<Rows>,
    ended: Notify,
}

impl Journal {
    /// Adds `entry`, numbering its `cursor` (any value it had is replaced).
    pub(crate) fn push(&self, mut entry: JournalEntry) {
        let ended = entry.outcome.is_final();
        {
            let mut rows = lock(&self.rows);
            // Numbered under the lock that makes the row visible: cursors
            // rise in the order rows appear, which `page` relies on.
            rows.last_cursor += 1;
            entry.cursor = rows.last_cursor;
            if rows.rows.len() == MAX_JOURNAL_ROWS {
                rows.rows.pop_front();
            }
            rows.rows.push_back(entry);
        }
        if ended {
            self.ended.notify_waiters();
        }
    }

    pub(crate) fn end(&self, seq: u64, ending: Ending) {
        {
            let mut rows = lock(&self.rows);
            // Concurrent requests push rows slightly out of `seq` order, and open
            // rows are the recent ones: search from the end. A row missing here
            // was cleared by `reset`.
            if let Some(row) = rows.rows.iter_mut().rev().find(|r| r.seq == seq) {
                row.outcome = ending.outcome;
                row.bytes_written = ending.bytes_written;
                row.tokens_written = ending.tokens_written;
                row.duration_ms = Some(millis(ending.elapsed));
            }
        }
        self.ended.notify_waiters();
    }

    /// The rows in `seq` (arrival) order.
    pub(crate) fn snapshot(&self) -> Vec<JournalEntry> {
        let mut rows: Vec<JournalEntry> = lock(&self.rows).rows.iter().cloned().collect();
        rows.sort_by_key(|r| r.seq);
        rows
    }

    /// At most `limit` rows with a `cursor` above `since`, in `cursor`
    /// order: only those are cloned. Not `seq`: a row with a lower `seq`
    /// than one already paged past can still be pushed (its body was slow),
    /// and paging on `seq` would never show it.
    pub(crate) fn page(&self, since: u64, limit: usize) -> Vec<JournalEntry> {
        let rows = &lock(&self.rows).rows;
        // Pushed in `cursor` order, so the rows after `since` are a tail.
        let start = rows.partition_point(|r| r.cursor <= since);
        rows.range(start..).take(limit).cloned().collect()
    }

    /// Forgets every row; cursors go on from where they were.
    pub(crate) fn clear(&self) {
        lock(&self.rows).rows.clear();
    }

    /// Waits until a row matching `pred` has ended, and returns it.
    pub(crate) async fn wait_ended(&self, pred: impl Fn(&JournalEntry) -> bool) -> JournalEntry {
        self.wait_for(|rows| {
            rows.iter()
                .find(|r| r.outcome.is_final() && pred(r))
                .cloned()
        })
        .await
    }

    /// Waits until no row matching `pred` is in flight, and returns those
    /// rows in `seq` order.
    pub(crate) async fn wait_settled(
        &self,
        pred: impl Fn(&JournalEntry) -> bool,
    ) -> Vec<JournalEntry> {
        let mut rows = self
            .wait_for(|rows| {
                let mine: Vec<JournalEntry> = rows.iter().filter(|r| pred(r)).cloned().collect();
                mine.iter().all(|r| r.outcome.is_final()).then_some(mine)
            })
            .await;
        rows.sort_by_key(|r| r.seq);
        rows
    }

    /// Looks at the rows each time one ends, until `look` finds something.
    async fn wait_for<T>(&self, look: impl Fn(&VecDeque<JournalEntry>) -> Option<T>) -> T {
        loop {
            let notified = self.ended.notified();
            tokio::pin!(notified);
            // Register before looking, so an end between the look and the wait is not missed.
            notified.as_mut().enable();
            if let Some(found) = look(&lock(&self.rows).rows) {
                return found;
            }
            notified.await;
        }
    }
}

/// Locks a mutex, recovering the data if a panicking holder poisoned it: every
/// critical section here leaves the rows consistent.
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_hash_is_fnv1a_64() {
        // Reference values of FNV-1a 64.
        assert_eq!(body_hash(b""), "cbf29ce484222325");
        assert_eq!(body_hash(b"a"), "af63dc4c8601ec8c");
    }

    #[test]
    fn outcome_serializes_as_snake_case() {
        assert_eq!(
            serde_json::to_string(&Outcome::CutByFault).unwrap(),
            "\"cut_by_fault\""
        );
        assert_eq!(
            serde_json::to_string(&Outcome::Rejected(429)).unwrap(),
            "{\"rejected\":429}"
        );
    }
}

#[cfg(test)]
mod bound {
    use super::*;

    fn row(seq: u64) -> JournalEntry {
        JournalEntry {
            seq,
            cursor: 0,
            arrived_unix_ms: 0,
            path: "/v1/chat/completions".to_owned(),
            provider: None,
            model: None,
            stream: false,
            request_id: None,
            body_hash: None,
            body_bytes: 0,
            fault: "ok".to_owned(),
            fault_source: FaultSource::Default,
            attempt: None,
            status: Some(200),
            bytes_written: 0,
            tokens_written: 0,
            outcome: Outcome::Completed,
            duration_ms: None,
        }
    }

    /// One page's body stays under a fixed size however many rows the
    /// journal holds, each as long as a row can be; paging on from the last
    /// `cursor` reads every row once, whatever the `seq` order of pushes.
    #[test]
    fn a_page_is_bounded_and_pages_on() {
        let journal = Journal::default();
        let long = "x".repeat(crate::MAX_FAULT_LEN);
        let rows = 3 * MAX_JOURNAL_PAGE as u64;
        // Pushed out of `seq` order, as concurrent requests and slow bodies do.
        let pushed: Vec<u64> = (1..=rows)
            .map(|s| if s % 2 == 0 { s - 1 } else { s + 1 })
            .collect();
        for &seq in &pushed {
            let mut row = row(seq);
            row.fault = long.clone();
            journal.push(row);
        }
        let page = journal.page(0, MAX_JOURNAL_PAGE);
        let body = serde_json::to_string(&page).unwrap();
        assert!(body.len() < MAX_JOURNAL_PAGE * 2048, "{}", body.len());
        let cursors: Vec<u64> = page.iter().map(|r| r.cursor).collect();
        assert_eq!(cursors, (1..=MAX_JOURNAL_PAGE as u64).collect::<Vec<_>>());
        let next = journal.page(MAX_JOURNAL_PAGE as u64, 2);
        assert_eq!(
            next.iter().map(|r| r.cursor).collect::<Vec<_>>(),
            [MAX_JOURNAL_PAGE as u64 + 1, MAX_JOURNAL_PAGE as u64 + 2]
        );
        // Page by page, every row once, in the order pushed.
        let (mut seen, mut since) = (Vec::new(), 0);
        loop {
            let page = journal.page(since, 7);
            let Some(last) = page.last() else { break };
            since = last.cursor;
            seen.extend(page.iter().map(|r| r.seq));
        }
        assert_eq!(seen, pushed);
        assert!(journal.page(rows, MAX_JOURNAL_PAGE).is_empty());
    }

    /// A reset empties the journal, and cursors go on: a client paging
    /// across it misses none of the rows after it.
    #[test]
    fn cursors_go_on_across_a_clear() {
        let journal = Journal::default();
        journal.push(row(1));
        journal.push(row(2));
        journal.clear();
        journal.push(row(3));
        let page = journal.page(2, MAX_JOURNAL_PAGE);
        assert_eq!(page.iter().map(|r| r.cursor).collect::<Vec<_>>(), [3]);
    }

    #[test]
    fn the_journal_forgets_its_oldest_rows_past_the_bound() {
        let journal = Journal::default();
        for seq in 1..=(MAX_JOURNAL_ROWS as u64 + 5) {
            journal.push(row(seq));
        }
        let rows = journal.snapshot();
        assert_eq!(rows.len(), MAX_JOURNAL_ROWS);
        assert_eq!(rows.first().map(|r| r.seq), Some(6));
        assert_eq!(
            rows.last().map(|r| r.seq),
            Some(MAX_JOURNAL_ROWS as u64 + 5)
        );
    }
}
