//! What the fleet suites share.

use std::time::Duration;

use seawall_fleet::{FleetConfig, StackKind};

/// One client, one stack, a 20 s run with a 5 s outage at 5 s: the
/// smallest fleet a check can refuse a value of, varied one field at a
/// time.
pub(crate) fn small_fleet() -> FleetConfig {
    FleetConfig {
        clients: 1,
        duration: Duration::from_secs(20),
        outage_start: Duration::from_secs(5),
        outage_len: Duration::from_secs(5),
        stacks: vec![StackKind::Naive],
        ..FleetConfig::default()
    }
}
