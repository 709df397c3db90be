//! Reading an event costs about what the event weighs: a chunk whose
//! `content` is a list of a million parts is read one part at a time, not
//! copied into values first (serde's untagged enum made some 300 MiB of
//! an 8 MiB event, and every such event of a stream did it again).

mod common;

use std::alloc::System;

use bytes::Bytes;
use common::*;
use http_body_util::BodyExt;
use seawall_stream::StreamGuardLayer;
use seawall_test::body::Repeat;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

// One test: the counts are the process's, and tests run in parallel.
#[tokio::test(start_paused = true)]
async fn a_chunk_of_a_million_parts_is_read_in_about_its_own_size() {
    let mut event = String::from(
        r#"data: {"choices":[{"index":0,"delta":{"content":[{"type":"text","text":"w1"}"#,
    );
    for _ in 0..(1 << 20) {
        event.push_str(",{}");
    }
    event.push_str("]},\"finish_reason\":null}]}\n\n");
    let stream = format!(
        "{OPENAI_ROLE}{event}{}{OPENAI_STOP}{DONE}",
        openai_delta(" w2")
    );
    let size = stream.len();
    let body = Repeat::new(Bytes::from(stream), 1);
    let region = Region::new(GLOBAL);
    let response = call(StreamGuardLayer::interactive(), CHAT, body)
        .await
        .unwrap();
    let handle = report_handle(&response);
    let mut body = response.into_body();
    let mut delivered = 0;
    while let Some(frame) = body.frame().await {
        delivered += frame.unwrap().into_data().map_or(0, |data| data.len());
    }
    let stats = region.change();
    let allocated = stats.bytes_allocated + usize::try_from(stats.bytes_reallocated).unwrap_or(0);
    assert_eq!(delivered, size, "the whole stream is handed on");
    let report = handle.get().unwrap();
    assert!(report.completed_task(), "{report:?}");
    // The scanner keeps the event's data while it is incomplete, the
    // frames handed on are the input's: a few times the stream at most.
    assert!(
        allocated < 4 * size,
        "{allocated} bytes allocated to read a stream of {size}"
    );
}
