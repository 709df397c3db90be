//! The table the rows are printed as.

use super::Row;
use super::incidents::incidents;

/// The table's header line.
pub fn table_header() -> String {
    format!(
        "{:<3} {:<33} {:<8} {:>8}  {:<17} {:>9}  {:<4} {:>6} {:>6}  {:<9} {}",
        "#",
        "incident",
        "stack",
        "attempts",
        "routes",
        "elapsed_s",
        "dup",
        "billed",
        "tokens",
        "outcome",
        "code"
    )
}

/// One row of the table.
pub fn table_line(row: &Row) -> String {
    let title = incidents()
        .into_iter()
        .find(|i| i.key == row.incident)
        .map_or(row.incident.as_str(), |i| i.title);
    format!(
        "{:<3} {:<33} {:<8} {:>8}  {:<17} {:>9.1}  {:<4} {:>6} {:>6}  {:<9} {}",
        row.number,
        title,
        row.stack,
        row.attempts,
        row.routes.join(","),
        row.elapsed_s,
        if row.duplicated { "yes" } else { "no" },
        row.billed,
        row.tokens,
        row.outcome,
        row.code.as_deref().unwrap_or("-"),
    )
}
