//! The command line of `seawall gateway`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::config::{Config, ConfigError, Preset, parse_duration};

/// The arguments of `seawall gateway`: a config file, or routes on the
/// command line; the flags override the file's values.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct GatewayArgs {
    /// Where to listen [default: 127.0.0.1:8787]. A non-loopback address
    /// needs --token-env.
    #[arg(long)]
    pub listen: Option<SocketAddr>,
    /// A TOML config file (routes, models, keys, policy).
    #[arg(long, conflicts_with = "routes")]
    pub config: Option<PathBuf>,
    /// A route, NAME=WIRE@BASE_URL (WIRE: openai or anthropic; BASE_URL:
    /// what comes before /v1). The first is the primary for every model,
    /// the next its fallback.
    #[arg(long = "route", value_name = "NAME=WIRE@BASE_URL")]
    pub routes: Vec<String>,
    /// Gives a route its own key: NAME=ENV_VAR.
    #[arg(long = "route-key", value_name = "NAME=ENV_VAR")]
    pub route_keys: Vec<String>,
    /// The environment variable holding the token clients must present
    /// (`Authorization: Bearer …`); required when a route has its own key
    /// or the address is not loopback. The token is at least 16
    /// characters, printable ASCII without spaces.
    #[arg(long)]
    pub token_env: Option<String>,
    /// The preset: interactive, batch or reasoning.
    #[arg(long, value_parser = ["interactive", "batch", "reasoning"])]
    pub preset: Option<String>,
    /// The operation's deadline (e.g. 30s, 500ms, 2m).
    #[arg(long, value_parser = parse_duration)]
    pub deadline: Option<Duration>,
    /// The bound on one attempt.
    #[arg(long, value_parser = parse_duration)]
    pub attempt_timeout: Option<Duration>,
    /// The stream guard's bound on the first body byte.
    #[arg(long, value_parser = parse_duration)]
    pub first_byte_timeout: Option<Duration>,
    /// The stream guard's bound on the first content event.
    #[arg(long, value_parser = parse_duration)]
    pub first_content_timeout: Option<Duration>,
    /// The stream guard's bound on a gap between events after content.
    #[arg(long, value_parser = parse_duration)]
    pub idle_timeout: Option<Duration>,
    /// The largest request body accepted, in bytes [default: 8 MiB].
    #[arg(long)]
    pub max_body_bytes: Option<usize>,
    /// How long in-flight answers may run on after SIGINT/SIGTERM
    /// [default: 30s].
    #[arg(long, value_parser = parse_duration)]
    pub shutdown_grace: Option<Duration>,
    /// How long a write to a client may wait for the client to read
    /// before its connection is closed and its call cancelled [default:
    /// 60s].
    #[arg(long, value_parser = parse_duration)]
    pub client_stall: Option<Duration>,
    /// How many client connections may be open at once; past it, new ones
    /// wait in the listener's backlog [default: 512]. Keep it well below
    /// `ulimit -n`: each call also needs an upstream connection.
    #[arg(long)]
    pub max_connections: Option<usize>,
    /// Serve on this many threads, each with its own single-threaded
    /// runtime, listener and upstream connections (Linux only; e.g. the
    /// number of cores). Less CPU and a lower median per relayed stream,
    /// no work stealing. [default: one multi-threaded runtime]
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,
}

impl GatewayArgs {
    /// The configuration these arguments describe (not yet validated).
    pub fn to_config(&self) -> Result<Config, ConfigError> {
        let mut config = match &self.config {
            Some(path) => Config::from_file(path)?,
            None => Config::from_routes(&self.routes)?,
        };
        for spec in &self.route_keys {
            // Not quoted: a value without `=` may be the key itself,
            // pasted where `NAME=ENV_VAR` belongs.
            let (name, env) = spec.split_once('=').ok_or_else(|| {
                ConfigError::Invalid(
                    "--route-key: expected NAME=ENV_VAR, the route's name and the \
                     environment variable holding its key (the value given has no `=`; \
                     not shown, as it may be the key itself)"
                        .to_owned(),
                )
            })?;
            config.set_route_key(name.trim(), env.trim())?;
        }
        if let Some(listen) = self.listen {
            config.listen = listen;
        }
        if let Some(token_env) = &self.token_env {
            config.token_env = Some(token_env.clone());
        }
        if let Some(preset) = &self.preset {
            config.policy.preset = preset.parse::<Preset>()?;
        }
        let policy = &mut config.policy;
        policy.deadline = self.deadline.or(policy.deadline);
        policy.attempt_timeout = self.attempt_timeout.or(policy.attempt_timeout);
        policy.first_byte_timeout = self.first_byte_timeout.or(policy.first_byte_timeout);
        policy.first_content_timeout = self.first_content_timeout.or(policy.first_content_timeout);
        policy.idle_timeout = self.idle_timeout.or(policy.idle_timeout);
        if let Some(max) = self.max_body_bytes {
            config.max_body_bytes = max;
        }
        if let Some(grace) = self.shutdown_grace {
            config.shutdown_grace = grace;
        }
        if let Some(stall) = self.client_stall {
            config.client_stall = stall;
        }
        if let Some(max) = self.max_connections {
            config.max_connections = max;
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: GatewayArgs,
    }

    #[test]
    fn flags_make_a_config() {
        let cli = Cli::try_parse_from([
            "gw",
            "--route",
            "main=anthropic@http://127.0.0.1:1",
            "--route",
            "spare=anthropic@http://127.0.0.1:2",
            "--route-key",
            "spare=SPARE_KEY",
            "--token-env",
            "GW",
            "--preset",
            "batch",
            "--first-byte-timeout",
            "200ms",
        ])
        .unwrap();
        let config = cli.args.to_config().unwrap();
        config.validate().unwrap();
        assert_eq!(config.policy.preset, Preset::Batch);
        assert_eq!(
            config.route("spare").unwrap().key_env.as_deref(),
            Some("SPARE_KEY")
        );
        assert_eq!(config.token_env.as_deref(), Some("GW"));
        assert!(
            Cli::try_parse_from(["gw", "--config", "x.toml", "--route", "a=openai@http://h"])
                .is_err()
        );
    }

    /// `--token-env`'s help states the shortest token the gateway takes.
    #[test]
    fn the_token_help_states_the_shortest_token() {
        use clap::CommandFactory;
        let command = Cli::command();
        let help = command
            .get_arguments()
            .find(|arg| arg.get_id() == "token_env")
            .and_then(|arg| arg.get_long_help().or(arg.get_help()))
            .map(ToString::to_string)
            .unwrap();
        let least = format!("at least {} characters", crate::gateway::MIN_TOKEN_LEN);
        assert!(help.contains(&least), "{help}");
    }

    /// A key pasted where `NAME=ENV_VAR` belongs is refused without being
    /// printed back.
    #[test]
    fn a_route_key_without_a_name_is_not_echoed() {
        let key = "sk-proj-AbCdEf0123456789xyz";
        let cli = Cli::try_parse_from([
            "gw",
            "--route",
            "main=openai@http://127.0.0.1:1",
            "--route-key",
            key,
        ])
        .unwrap();
        let err = cli.args.to_config().unwrap_err();
        assert!(matches!(err, ConfigError::Invalid(_)), "{err}");
        let text = err.to_string();
        assert!(text.contains("--route-key"), "{text}");
        assert!(text.contains("NAME=ENV_VAR"), "{text}");
        assert!(!text.contains("0123456789"), "{text}");
    }
}
