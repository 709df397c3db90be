//! The incidents: real failure stories, each as the faults a server plays
//! and what the caller does.

use seawall::core::provider::Provider;

/// One incident: what the server does, and what the caller does.
#[derive(Debug, Clone)]
pub struct Incident {
    /// Its number in the table.
    pub number: &'static str,
    /// A stable key (journal ids, JSON rows).
    pub key: &'static str,
    /// What happened, in a few words.
    pub title: &'static str,
    /// Whose wire format.
    pub provider: Provider,
    /// A streamed request?
    pub stream: bool,
    /// Faults for the first attempts on the provider's route, in order.
    pub script: &'static [&'static str],
    /// The fault of every attempt after the script (none: healthy).
    pub every_attempt: Option<&'static str>,
    /// seawall gets a fallback route.
    pub fallback: bool,
    /// The caller stops reading after this many content events.
    pub caller_stops_after: Option<u64>,
    /// seawall resumes an interruption after content (`Stack::resume`).
    pub resume: bool,
}

/// The incidents, in the order of the table.
pub fn incidents() -> Vec<Incident> {
    let base = Incident {
        number: "",
        key: "",
        title: "",
        provider: Provider::OpenAi,
        stream: true,
        script: &[],
        every_attempt: None,
        fallback: false,
        caller_stops_after: None,
        resume: false,
    };
    vec![
        Incident {
            number: "1",
            key: "quota_wall",
            title: "429, Retry-After: 48489",
            stream: false,
            every_attempt: Some("status;code=429;retry_after=48489"),
            ..base.clone()
        },
        Incident {
            number: "2",
            key: "silent_stream",
            title: "headers, then zero bytes",
            every_attempt: Some("hang_after_headers"),
            fallback: true,
            ..base.clone()
        },
        Incident {
            number: "3",
            key: "reset_after_400",
            title: "stream reset after 400 tokens",
            script: &["reset_after;tokens=400;total=600"],
            every_attempt: Some("ok;tokens=600"),
            resume: true,
            ..base.clone()
        },
        Incident {
            number: "4",
            key: "empty_200",
            title: "HTTP 200, no content",
            stream: false,
            script: &["empty"],
            ..base.clone()
        },
        Incident {
            number: "5",
            key: "frame_then_eof",
            title: "one frame, then EOF",
            provider: Provider::Anthropic,
            script: &["frame_then_eof"],
            ..base.clone()
        },
        Incident {
            number: "6",
            key: "context_length",
            title: "400 context_length_exceeded",
            stream: false,
            every_attempt: Some("status;code=400;kind=context_length"),
            ..base.clone()
        },
        Incident {
            number: "7",
            key: "refusal",
            title: "a refusal",
            provider: Provider::Anthropic,
            every_attempt: Some("refusal"),
            ..base.clone()
        },
        Incident {
            number: "8a",
            key: "overloaded_before_content",
            title: "overloaded_error before content",
            provider: Provider::Anthropic,
            script: &["stream_error_after;tokens=0"],
            ..base.clone()
        },
        Incident {
            number: "8b",
            key: "overloaded_after_content",
            title: "overloaded_error after 50 tokens",
            provider: Provider::Anthropic,
            script: &["stream_error_after;tokens=50;total=200"],
            every_attempt: Some("ok;tokens=200"),
            ..base.clone()
        },
        Incident {
            number: "8b+",
            key: "overloaded_after_content_resumed",
            title: "overloaded after 50, resumed",
            provider: Provider::Anthropic,
            script: &["stream_error_after;tokens=50;total=200"],
            every_attempt: Some("ok;tokens=200"),
            resume: true,
            ..base.clone()
        },
        Incident {
            number: "9",
            key: "brief_503",
            title: "a brief 503, then success",
            provider: Provider::Gemini,
            script: &["status;code=503"],
            ..base.clone()
        },
        Incident {
            number: "10",
            key: "caller_cancels",
            title: "the caller cancels mid-stream",
            every_attempt: Some("ok;tokens=400;delay_ms=1"),
            caller_stops_after: Some(20),
            ..base.clone()
        },
        Incident {
            number: "11",
            key: "quota_wall_with_backup",
            title: "429 quota wall, healthy backup",
            stream: false,
            every_attempt: Some("status;code=429;retry_after=48489"),
            fallback: true,
            ..base.clone()
        },
        Incident {
            number: "12",
            key: "auth_with_second_key",
            title: "401 on primary, healthy backup",
            stream: false,
            every_attempt: Some("status;code=401"),
            fallback: true,
            ..base.clone()
        },
        Incident {
            number: "13",
            key: "brief_503_with_fallback",
            title: "a brief 503, fallback configured",
            provider: Provider::Gemini,
            script: &["status;code=503"],
            fallback: true,
            ..base
        },
    ]
}
