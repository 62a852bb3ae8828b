//! `[state]`: where what outlives a request is kept. In this process's
//! memory (the default), or in Redis, shared by every replica of a team's
//! gateway behind one load balancer:
//!
//! ```toml
//! [state]
//! backend = "redis"
//! url = "redis://redis.internal:6379/0"   # rediss:// for TLS
//! password_env = "MCPYARD_REDIS_PASSWORD"  # when the URL carries none
//! fail_mode = "closed"                      # rate limits while Redis is unreachable
//! ```

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use mcpyard_gateway::state::{MemoryState, RedisSettings, RedisState, StateBackend};

use super::context::Context;
use super::error::ConfigError;
use super::values::RawDuration;
use crate::shared_tokens::{parse_key, SharedTokenStore};

/// `[state]`, as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawState {
    backend: Option<String>,
    url: Option<String>,
    password_env: Option<String>,
    prefix: Option<String>,
    timeout: Option<RawDuration>,
    ca_file: Option<String>,
    replica: Option<String>,
    fail_mode: Option<String>,
    token_key_env: Option<String>,
}

/// How long one Redis command may take by default.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);

/// What `[state]` makes.
#[derive(Debug, Clone)]
pub(crate) struct StateSettings {
    /// The Redis backend, when `[state]` shares state (else memory).
    pub(crate) redis: Option<Arc<RedisState>>,
    pub(crate) replica: String,
    /// Rate limits let calls through while Redis cannot be asked.
    pub(crate) fail_open: bool,
    /// Upstream OAuth tokens in Redis, sealed under `token_key_env`.
    pub(crate) shared_tokens: Option<Arc<SharedTokenStore>>,
    /// A hash of `[state]` as written: a reload that changes it says that
    /// the change waits for a restart.
    pub(crate) fingerprint: u64,
}

impl StateSettings {
    /// Where the gateway keeps what it shares.
    pub(crate) fn backend(&self) -> Arc<dyn StateBackend> {
        match &self.redis {
            Some(redis) => redis.clone(),
            None => Arc::new(MemoryState),
        }
    }
}

/// `[state]` as written, hashed (the password's variable by name only).
fn fingerprint(raw: &RawState) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    format!("{raw:?}").hash(&mut hasher);
    hasher.finish()
}

/// This replica's name: `[state] replica`, else `$HOSTNAME` (a pod's name
/// under Kubernetes), else a random one.
fn replica_name(ctx: &Context<'_>, raw: Option<&String>) -> Result<String, ConfigError> {
    let named = match raw {
        Some(r) => Some(ctx.expand("state.replica", r)?),
        None => (ctx.lookup)("HOSTNAME"),
    };
    Ok(named.filter(|n| !n.trim().is_empty()).unwrap_or_else(|| {
        format!(
            "mcpyard-{}",
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        )
    }))
}

/// What a reload keeps of the running `[state]`: all of it, with the
/// fingerprint of `raw` as now written, so that a change is reported as
/// waiting for a restart.
pub(crate) fn kept(running: &StateSettings, raw: Option<&RawState>) -> StateSettings {
    StateSettings {
        fingerprint: fingerprint(raw.unwrap_or(&RawState::default())),
        ..running.clone()
    }
}

pub(crate) fn build(
    ctx: &Context<'_>,
    raw: Option<&RawState>,
) -> Result<StateSettings, ConfigError> {
    let empty = RawState::default();
    let raw = raw.unwrap_or(&empty);
    let replica = replica_name(ctx, raw.replica.as_ref())?;
    let fail_open = match raw.fail_mode.as_deref() {
        None | Some("closed") => false,
        Some("open") => true,
        Some(_) => return Err(ctx.error("state.fail_mode", r#"expected "closed" or "open""#)),
    };
    let backend = match raw.backend.as_deref() {
        None | Some("memory") => None,
        Some("redis") => Some(()),
        Some(_) => return Err(ctx.error("state.backend", r#"expected "memory" or "redis""#)),
    };
    if backend.is_none() {
        if let Some(key) = [
            ("url", raw.url.is_some()),
            ("password_env", raw.password_env.is_some()),
            ("ca_file", raw.ca_file.is_some()),
            ("token_key_env", raw.token_key_env.is_some()),
        ]
        .iter()
        .find_map(|(k, set)| set.then_some(*k))
        {
            return Err(ctx.error(
                &format!("state.{key}"),
                r#"belongs to backend = "redis"; the memory backend keeps state in this process"#,
            ));
        }
        return Ok(StateSettings {
            redis: None,
            replica,
            fail_open,
            shared_tokens: None,
            fingerprint: fingerprint(raw),
        });
    }
    let url = match &raw.url {
        Some(u) => ctx.expand("state.url", u)?,
        None => {
            return Err(ctx.error(
                "state.url",
                r#"backend = "redis" needs the server's URL (redis://host:6379)"#,
            ))
        }
    };
    if !(url.starts_with("redis://") || url.starts_with("rediss://")) {
        return Err(ctx.error("state.url", "must start with redis:// or rediss:// (TLS)"));
    }
    let password = match &raw.password_env {
        None => None,
        Some(var) => Some((ctx.lookup)(var).filter(|p| !p.is_empty()).ok_or_else(|| {
            ctx.error(
                "state.password_env",
                format!("the variable {var} is not set"),
            )
        })?),
    };
    let prefix = match &raw.prefix {
        Some(p) if p.is_empty() => return Err(ctx.error("state.prefix", "must not be empty")),
        Some(p) => ctx.expand("state.prefix", p)?,
        None => "mcpyard".to_owned(),
    };
    let timeout = raw
        .timeout
        .as_ref()
        .map(|t| super::server::duration(ctx, "state.timeout", t))
        .transpose()?
        .unwrap_or(DEFAULT_TIMEOUT);
    let ca_file = match &raw.ca_file {
        None => None,
        Some(f) => {
            let f = ctx.expand("state.ca_file", f)?;
            let path = std::path::Path::new(&f);
            let path = match ctx.base_dir {
                Some(base) if path.is_relative() => base.join(path),
                _ => path.to_path_buf(),
            };
            if let Err(e) = std::fs::metadata(&path) {
                return Err(ctx.error(
                    "state.ca_file",
                    format!("cannot read {}: {e}", path.display()),
                ));
            }
            Some(path)
        }
    };
    let settings = RedisSettings {
        url,
        password,
        prefix,
        timeout,
        ca_file,
    };
    let redis = RedisState::new(&settings).map_err(|e| ctx.error("state.url", e.0))?;
    let shared_tokens = match &raw.token_key_env {
        None => None,
        Some(var) => {
            let text = (ctx.lookup)(var).filter(|k| !k.is_empty()).ok_or_else(|| {
                ctx.error(
                    "state.token_key_env",
                    format!("the variable {var} is not set"),
                )
            })?;
            // The error says what is wrong with the key, never the key.
            let key = parse_key(&text).map_err(|why| {
                ctx.error(
                    "state.token_key_env",
                    format!("{var} must hold a 32-byte key: {why}"),
                )
            })?;
            Some(Arc::new(SharedTokenStore::new(redis.clone(), &key)))
        }
    };
    Ok(StateSettings {
        redis: Some(redis),
        replica,
        fail_open,
        shared_tokens,
        fingerprint: fingerprint(raw),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, env: &[(&str, &str)]) -> Result<StateSettings, ConfigError> {
        let raw: RawState = toml::from_str(text).expect("valid TOML");
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let lookup = move |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        let ctx = Context {
            file: "mcpyard.toml",
            base_dir: None,
            lookup: &lookup,
        };
        build(&ctx, Some(&raw))
    }

    #[test]
    fn memory_is_the_default_and_takes_no_redis_keys() {
        let s = parse("", &[("HOSTNAME", "pod-7")]).unwrap();
        assert_eq!(s.backend().kind(), "memory");
        assert_eq!(s.replica, "pod-7");
        let e = parse(r#"url = "redis://127.0.0.1""#, &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("state.url"), "{e}");
    }

    #[test]
    fn redis_needs_a_url_and_its_password_variable() {
        let s = parse(
            "backend = \"redis\"\nurl = \"redis://127.0.0.1:6379\"\nreplica = \"a\"",
            &[],
        )
        .unwrap();
        assert_eq!(s.backend().kind(), "redis");
        assert_eq!(s.replica, "a");
        for (text, key) in [
            ("backend = \"redis\"", "state.url"),
            ("backend = \"redis\"\nurl = \"http://x\"", "state.url"),
            (
                "backend = \"redis\"\nurl = \"redis://x\"\npassword_env = \"NOPE\"",
                "state.password_env",
            ),
            ("backend = \"disk\"", "state.backend"),
            ("fail_mode = \"maybe\"", "state.fail_mode"),
        ] {
            let e = parse(text, &[]).unwrap_err().to_string();
            assert!(e.contains(key), "{text}: {e}");
        }
    }

    #[test]
    fn the_password_is_never_in_an_error() {
        let e = parse(
            "backend = \"redis\"\nurl = \"redis://:s3cr3t-pw@[::1\"",
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(!e.contains("s3cr3t-pw"), "{e}");
    }
}
