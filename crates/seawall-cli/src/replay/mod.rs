//! `seawall replay`: real failure stories, replayed against a real server
//! through two client stacks side by side.
//!
//! A seawall-chaos server runs in-process on loopback and plays each
//! incident's faults. The **naive** stack is tower's own retry and timeout
//! with a policy that retries every error, and a caller that restarts a
//! failed stream — the configuration behind these incidents. The
//! **seawall** stack is `Stack::interactive()` with the naive stack's
//! 600 s attempt bound, every duration in incident seconds, and no retry
//! budget (its window would run on the real clock, not the scaled one). Every figure in a row comes
//! from running both: upstream attempts, billed generations and routes
//! from the chaos server's journal, duplicated text and tokens from what
//! the caller actually received, elapsed time from the clock.
//!
//! Incidents marked `resume` run the seawall stack with
//! [`Stack::resume`](seawall::stack::Stack::resume): an interruption after content is continued in the
//! same body by `seawall::resume`'s layer, and the row says whether every
//! token reached the caller exactly once. Incident 8b runs both ways: as
//! the plain preset (the interruption surfaces with its prefix) and, as
//! `8b+`, resumed.
//!
//! Time is scaled: one incident second lasts `scale` real milliseconds
//! (default 1), so a 600 s timeout takes 0.6 s. Provider hints on the wire
//! (Retry-After) keep their real meaning.

mod incidents;
mod runners;
mod table;

use std::time::{Duration, Instant};

use seawall::core::Usage;
use seawall_chaos::{ChaosHandle, Fault, JournalEntry, repeats_a_token, token_numbers};
use serde::Serialize;

use crate::caller::Delivery;

pub use incidents::{Incident, incidents};
pub use table::{table_header, table_line};

/// One row of the table: one incident through one stack.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// The incident's key.
    pub incident: String,
    /// The incident's number in the table.
    pub number: String,
    /// `naive` or `seawall`.
    pub stack: &'static str,
    /// Upstream attempts, from the server's journal.
    pub attempts: usize,
    /// Routes that received attempts, in first-use order.
    pub routes: Vec<String>,
    /// Elapsed, in incident seconds.
    pub elapsed_s: f64,
    /// Whether the caller was shown any part of the answer twice.
    pub duplicated: bool,
    /// Generations the provider started (journal rows answered 200).
    pub billed: usize,
    /// Content tokens the caller received.
    pub tokens: usize,
    /// `ok`, `error` or `cancelled`.
    pub outcome: &'static str,
    /// The failure code (seawall's, or the naive stack's own error), or the
    /// finish reason of a delivered answer that is not complete.
    pub code: Option<String>,
    /// Continuations the resume layer spliced into the answer.
    pub resumed: usize,
    /// Input tokens billed, by the provider's own numbers in the seawall
    /// stack's receipt (every attempt that reported usage); `None` for the
    /// naive stack, which keeps no receipt.
    pub billed_input_tokens: Option<u64>,
    /// Output tokens billed, likewise.
    pub billed_output_tokens: Option<u64>,
}

/// Runs every incident through both stacks, in order.
pub async fn run(chaos: &ChaosHandle, scale: f64, mut on_row: impl FnMut(&Row)) -> Vec<Row> {
    let mut rows = Vec::new();
    for incident in incidents() {
        for stack in [StackKind::Naive, StackKind::Seawall] {
            let row = run_incident(chaos, &incident, stack, scale).await;
            on_row(&row);
            rows.push(row);
        }
    }
    rows
}

/// Which client stack a row is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StackKind {
    /// tower retry + timeout, retrying everything, and a restarting caller.
    Naive,
    /// The seawall preset.
    Seawall,
}

impl StackKind {
    /// `naive` or `seawall`.
    pub const fn as_str(self) -> &'static str {
        match self {
            StackKind::Naive => "naive",
            StackKind::Seawall => "seawall",
        }
    }
}

/// Incident seconds to real time.
#[derive(Debug, Clone, Copy)]
struct Clock {
    ms_per_s: f64,
}

impl Clock {
    fn secs(self, incident_seconds: f64) -> Duration {
        Duration::from_secs_f64(incident_seconds * self.ms_per_s / 1000.0)
    }

    fn incident_seconds(self, real: Duration) -> f64 {
        (real.as_secs_f64() * 1000.0 / self.ms_per_s * 10.0).round() / 10.0
    }
}

/// What a stack run produced, before the journal is read.
struct Run {
    delivery: Delivery,
    outcome: &'static str,
    code: Option<String>,
    resumed: usize,
    /// The provider's token counts from the receipt, when there is one.
    usage: Option<Usage>,
}

/// Runs one incident through one stack and reads the journal for it.
pub async fn run_incident(
    chaos: &ChaosHandle,
    incident: &Incident,
    stack: StackKind,
    scale: f64,
) -> Row {
    let clock = Clock { ms_per_s: scale };
    let route = incident.provider.as_str();
    let faults = incident
        .script
        .iter()
        .map(|f| f.parse::<Fault>().expect("incident faults are valid"))
        .collect();
    chaos.script(route, faults).expect("a provider route");
    let id = format!("{}/{}", incident.key, stack.as_str());
    let started = Instant::now();
    let run = match stack {
        StackKind::Naive => runners::run_naive(chaos, incident, &id, clock).await,
        StackKind::Seawall => runners::run_seawall(chaos, incident, &id, clock).await,
    };
    let elapsed = started.elapsed();
    chaos.script(route, Vec::new()).expect("a provider route");
    // Every attempt of the operation (the fallback's id is `{id}:fallback`),
    // once the server has seen each end.
    let journal = chaos
        .settled_journal(Duration::from_secs(2), |row| {
            row.request_id
                .as_deref()
                .is_some_and(|r| r.split(':').next() == Some(id.as_str()))
        })
        .await;
    let mut routes = Vec::new();
    for entry in &journal {
        let name = route_of(entry);
        if !routes.iter().any(|r| r == name) {
            routes.push(name.to_owned());
        }
    }
    Row {
        incident: incident.key.to_owned(),
        number: incident.number.to_owned(),
        stack: stack.as_str(),
        attempts: journal.len(),
        routes,
        elapsed_s: clock.incident_seconds(elapsed),
        duplicated: repeats_a_token(&run.delivery.text),
        billed: journal.iter().filter(|e| e.status == Some(200)).count(),
        tokens: token_numbers(&run.delivery.text).count(),
        outcome: run.outcome,
        code: run.code,
        resumed: run.resumed,
        billed_input_tokens: run.usage.map(|u| u.input_tokens),
        billed_output_tokens: run.usage.map(|u| u.output_tokens),
    }
}

fn route_of(entry: &JournalEntry) -> &'static str {
    match entry.request_id.as_deref() {
        Some(id) if id.ends_with(":fallback") => "fallback",
        _ => "primary",
    }
}

#[cfg(test)]
mod tests {
    use seawall_chaos::ChaosServer;

    use super::*;

    async fn row(key: &str) -> Row {
        let chaos = ChaosServer::builder().start().await.unwrap();
        let incident = incidents().into_iter().find(|i| i.key == key).unwrap();
        run_incident(&chaos, &incident, StackKind::Seawall, 5.0).await
    }

    /// Incidents 3 and 8b with the resume layer: one answer, every token
    /// once, one continuation.
    #[tokio::test]
    async fn resumed_incidents_deliver_every_token_once() {
        for (key, tokens) in [
            ("reset_after_400", 600),
            ("overloaded_after_content_resumed", 200),
        ] {
            let row = row(key).await;
            assert!(!row.duplicated, "{key}");
            assert_eq!(
                (row.outcome, row.tokens, row.attempts, row.resumed),
                ("ok", tokens, 2, 1),
                "{key}"
            );
            assert_eq!(row.billed, 2, "{key}");
        }
        // Without the layer 8b surfaces with its prefix.
        let row = row("overloaded_after_content").await;
        assert_eq!((row.outcome, row.tokens, row.resumed), ("error", 50, 0));
    }

    /// The seawall row's billed tokens are the provider's own numbers,
    /// from the receipt; the naive stack keeps none.
    #[tokio::test]
    async fn billed_tokens_come_from_the_receipt() {
        let row = row("brief_503").await;
        assert_eq!((row.outcome, row.billed), ("ok", 1));
        assert_eq!(row.billed_output_tokens, Some(row.tokens as u64));
        assert!(row.billed_input_tokens.is_some_and(|n| n > 0));
        let json = serde_json::to_value(&row).unwrap();
        assert_eq!(json["billed_output_tokens"], row.tokens);
        let chaos = ChaosServer::builder().start().await.unwrap();
        let incident = incidents()
            .into_iter()
            .find(|i| i.key == "brief_503")
            .unwrap();
        let naive = run_incident(&chaos, &incident, StackKind::Naive, 5.0).await;
        assert_eq!(naive.billed_output_tokens, None);
    }
}
