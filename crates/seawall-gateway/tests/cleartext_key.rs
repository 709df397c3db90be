//! A route's key sent over plain `http://` beyond this machine is served
//! with a warning at start. A test binary of its own: tracing caches
//! whether a callsite is wanted process-wide, and another test reaching
//! the same warning on a thread without a subscriber could hide it from
//! this one's.

use seawall_gateway::{Config, Gateway};
use seawall_test::trace::Recorder;

const TOKEN: &str = "test-gateway-token-0123456789";

fn env(name: &str) -> Option<String> {
    match name {
        "GATEWAY_TOKEN" => Some(TOKEN.into()),
        "KEY_MAIN" => Some("sk-route-main-secret-0123".into()),
        _ => None,
    }
}

/// The warnings a keyed route at `base_url` gets at start.
fn warnings_for(base_url: &str) -> Vec<seawall_test::trace::Fields> {
    let recorder = Recorder::new();
    let _guard = recorder.install();
    let mut config = Config::from_routes(&[format!("main=openai@{base_url}")]).unwrap();
    config.set_route_key("main", "KEY_MAIN").unwrap();
    config.token_env = Some("GATEWAY_TOKEN".into());
    Gateway::with_env(config, env).unwrap();
    recorder
        .warnings_of("seawall::gateway")
        .into_iter()
        .filter(|w| w.has("route"))
        .collect()
}

#[test]
fn a_key_over_plain_http_beyond_this_machine_is_warned_of() {
    for base_url in [
        "http://10.0.0.5:8080",
        "http://llm.internal/v1",
        "HTTP://Api.Example.com",
        "http://[2001:db8::1]:4000",
    ] {
        let warnings = warnings_for(base_url);
        assert_eq!(warnings.len(), 1, "{base_url}: {warnings:?}");
        let warning = &warnings[0];
        assert_eq!(warning.value("route"), "main");
        assert!(warning.value("message").contains("http://"), "{warning:?}");
        assert!(
            base_url
                .to_ascii_lowercase()
                .contains(&warning.value("host").to_ascii_lowercase()),
            "{base_url}: {warning:?}"
        );
        assert!(!format!("{warning:?}").contains("sk-route"), "{warning:?}");
    }
    for base_url in [
        "https://api.openai.com",
        "http://127.0.0.1:9",
        "http://127.1.2.3:9",
        "http://localhost:8080",
        "http://[::1]:9",
    ] {
        let warnings = warnings_for(base_url);
        assert!(warnings.is_empty(), "{base_url}: {warnings:?}");
    }
}
