//! One upstream server entry, whatever file it came from: expansion of its
//! strings, choice of transport, and the checks that make it an
//! [`UpstreamSpec`] the gateway can start.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use mcpyard_client::TransportSpec;
use mcpyard_gateway::{SamplingPolicy, UpstreamSampling, UpstreamSpec};

use super::context::Context;
use super::error::ConfigError;

use super::oauth::{OAuthSettings, RawOAuth};
use super::values::{parse_duration, OrderedMap, RawDuration};

/// Per-call timeout of a server that sets none.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The longest server name; with the `__` separator its default prefix
/// leaves room for tool names within the spec's 128 characters.
const MAX_NAME_LEN: usize = 64;

/// The spec's limit on tool names.
const MAX_TOOL_NAME_LEN: usize = 128;

/// A server entry as written, before expansion: `[servers.NAME]` in TOML,
/// an entry of `mcpServers` / `servers` in JSON. One struct for every
/// format: where the editors spell a key their own way, both spellings are
/// read and must not contradict each other. Unknown keys are not refused
/// here: the formats decide (an error in TOML, a warning in JSON).
#[derive(Debug, Default, serde::Deserialize)]
pub(crate) struct ServerEntry {
    pub(crate) command: Option<String>,
    pub(crate) args: Option<Vec<String>>,
    #[serde(default, deserialize_with = "ordered_pairs")]
    pub(crate) env: Option<Vec<(String, String)>>,
    pub(crate) inherit_env: Option<Vec<String>>,
    pub(crate) cwd: Option<String>,
    pub(crate) url: Option<String>,
    #[serde(default, deserialize_with = "ordered_pairs")]
    pub(crate) headers: Option<Vec<(String, String)>>,
    /// The transport asked for: `transport` (mcpyard) ...
    pub(crate) transport: Option<String>,
    /// ... or `type` (Claude Desktop, Cursor, VS Code).
    #[serde(rename = "type")]
    pub(crate) kind: Option<String>,
    pub(crate) timeout: Option<RawDuration>,
    /// How long the server may take to list its tools once connected.
    pub(crate) list_timeout: Option<RawDuration>,
    /// Calls it may run at once.
    pub(crate) max_in_flight: Option<u64>,
    pub(crate) prefix: Option<String>,
    /// `enabled` (mcpyard) or VS Code's `disabled`.
    pub(crate) enabled: Option<bool>,
    pub(crate) disabled: Option<bool>,
    pub(crate) sampling: Option<RawSampling>,
    /// Which of its tools `tools/list` shows.
    pub(crate) expose: Option<super::expose::RawExpose>,
    /// OAuth toward an HTTP server: `oauth` (mcpyard, Claude Code, Gemini
    /// CLI) or Cursor's `auth`.
    pub(crate) oauth: Option<RawOAuth>,
    pub(crate) auth: Option<RawOAuth>,
}

impl ServerEntry {
    /// Whether the entry is on: `enabled` and `disabled` must agree.
    pub(crate) fn is_enabled(&self, ctx: &Context<'_>, key: &str) -> Result<bool, ConfigError> {
        match (self.enabled, self.disabled) {
            (Some(e), Some(d)) if e == d => Err(ctx.error(
                key,
                "`enabled` and `disabled` contradict each other: keep one",
            )),
            (Some(e), _) => Ok(e),
            (None, Some(d)) => Ok(!d),
            (None, None) => Ok(true),
        }
    }

    /// The transport asked for, with the key it was written under.
    fn asked_transport(
        &self,
        ctx: &Context<'_>,
        key: &str,
    ) -> Result<Option<(&'static str, &str)>, ConfigError> {
        match (&self.transport, &self.kind) {
            (Some(_), Some(_)) => Err(ctx.error(
                key,
                "`transport` and `type` both name the transport: keep one",
            )),
            (Some(t), None) => Ok(Some(("transport", t))),
            (None, Some(t)) => Ok(Some(("type", t))),
            (None, None) => Ok(None),
        }
    }

    /// The OAuth object and the key it was written under; `None` when there
    /// is none, or when it turns OAuth off (Gemini CLI's `enabled: false`).
    pub(crate) fn oauth(
        &self,
        ctx: &Context<'_>,
        key: &str,
    ) -> Result<Option<(&'static str, &RawOAuth)>, ConfigError> {
        let written = match (&self.oauth, &self.auth) {
            (Some(_), Some(_)) => {
                return Err(ctx.error(key, "`oauth` and `auth` both configure OAuth: keep one"))
            }
            (Some(o), None) => Some(("oauth", o)),
            (None, Some(a)) => Some(("auth", a)),
            (None, None) => None,
        };
        Ok(written.filter(|(_, o)| o.enabled != Some(false)))
    }
}

/// A map of strings in file order, as pairs.
fn ordered_pairs<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Vec<(String, String)>>, D::Error> {
    use serde::Deserialize as _;
    Ok(Option::<OrderedMap<String>>::deserialize(d)?.map(|m| m.0))
}

/// `[servers.NAME.sampling]`: its presence lets a local model answer the
/// server's sampling requests.
#[derive(Debug, Default, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSampling {
    /// `fallback` (default: only when the calling client cannot sample) or
    /// `always`.
    pub(crate) mode: Option<String>,
    pub(crate) models: Option<Vec<String>>,
    pub(crate) max_tokens: Option<u32>,
}

/// Tokens a locally answered sampling request may use unless configured.
const DEFAULT_SAMPLING_MAX_TOKENS: u32 = 1024;

/// Which transport an entry asked for by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Stdio,
    StreamableHttp,
    Sse,
}

fn kind_from_name(name: &str) -> Option<Kind> {
    match name {
        "stdio" => Some(Kind::Stdio),
        "streamable-http" | "streamable_http" | "streamableHttp" | "http" => {
            Some(Kind::StreamableHttp)
        }
        "sse" => Some(Kind::Sse),
        _ => None,
    }
}

/// Checks a server name: `^[a-zA-Z0-9_-]{1,64}$`.
pub(crate) fn check_name(ctx: &Context<'_>, key: &str, name: &str) -> Result<(), ConfigError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(ctx.error(
            key,
            format!(
                "server name must be 1 to {MAX_NAME_LEN} characters of letters, digits, `_` and `-`"
            ),
        ))
    }
}

/// An enabled server entry, checked.
#[derive(Debug)]
pub(crate) struct BuiltServer {
    pub(crate) upstream: UpstreamSpec,
    /// How its tokens are obtained, for an HTTP server behind OAuth.
    pub(crate) oauth: Option<OAuthSettings>,
}

/// Turns an entry into an upstream. `key` is the entry's path
/// (`servers.everything`). A disabled entry gives `None` and is not
/// expanded (its variables need not be set).
pub(crate) fn build(
    ctx: &Context<'_>,
    key: &str,
    name: &str,
    raw: ServerEntry,
) -> Result<Option<BuiltServer>, ConfigError> {
    check_name(ctx, key, name)?;
    if !raw.is_enabled(ctx, key)? {
        return Ok(None);
    }
    let field = |f: &str| format!("{key}.{f}");
    let oauth_written = raw.oauth(ctx, key)?.map(|(k, o)| (k, o.clone()));

    let asked = match raw.asked_transport(ctx, key)? {
        Some((tkey, value)) => {
            let v = ctx.expand(&field(tkey), value)?;
            Some((
                tkey,
                kind_from_name(v.trim()).ok_or_else(|| {
                    ctx.error(
                        &field(tkey),
                        r#"expected "stdio", "streamable-http" (or "http") or "sse""#,
                    )
                })?,
            ))
        }
        None => None,
    };

    let transport = match (&raw.command, &raw.url) {
        (Some(_), Some(_)) => {
            return Err(ctx.error(
                key,
                "set either `command` (a stdio server) or `url` (an HTTP server), not both",
            ))
        }
        (None, None) => {
            return Err(ctx.error(
                key,
                "missing `command` (a stdio server) or `url` (an HTTP server)",
            ))
        }
        (Some(command), None) => {
            if let Some((tkey, kind)) = asked {
                if kind != Kind::Stdio {
                    return Err(ctx.error(
                        &field(tkey),
                        "an HTTP transport needs `url`, but this server has `command`",
                    ));
                }
            }
            if raw.headers.is_some() {
                return Err(ctx.error(
                    &field("headers"),
                    "`headers` is for HTTP servers (`url`), not for `command`",
                ));
            }
            if let Some((okey, _)) = &oauth_written {
                return Err(ctx.error(
                    &field(okey),
                    "OAuth is for HTTP servers (`url`), not for `command`",
                ));
            }
            build_stdio(
                ctx,
                key,
                command,
                raw.args,
                raw.env,
                raw.inherit_env,
                raw.cwd,
            )?
        }
        (None, Some(url)) => {
            for (f, present) in [
                ("args", raw.args.is_some()),
                ("env", raw.env.is_some()),
                ("inherit_env", raw.inherit_env.is_some()),
                ("cwd", raw.cwd.is_some()),
            ] {
                if present {
                    return Err(ctx.error(
                        &field(f),
                        format!("`{f}` is for stdio servers (`command`), not for `url`"),
                    ));
                }
            }
            if let Some((tkey, Kind::Stdio)) = asked {
                return Err(ctx.error(
                    &field(tkey),
                    "the stdio transport needs `command`, but this server has `url`",
                ));
            }
            if let (Some((okey, _)), Some(headers)) = (&oauth_written, &raw.headers) {
                if let Some((h, _)) = headers
                    .iter()
                    .find(|(h, _)| h.eq_ignore_ascii_case("authorization"))
                {
                    return Err(ctx.error(
                        &field(&format!("headers.{h}")),
                        format!("`{okey}` supplies the Authorization header: remove this one"),
                    ));
                }
            }
            build_http(ctx, key, url, raw.headers, asked.map(|(_, k)| k))?
        }
    };
    let oauth = match oauth_written {
        None => None,
        Some((okey, o)) => Some(super::oauth::build(ctx, &field(okey), o)?),
    };

    let timeout = match raw.timeout {
        None => DEFAULT_TIMEOUT,
        Some(t) => duration(ctx, &field("timeout"), &t)?,
    };
    let list_timeout = match raw.list_timeout {
        None => UpstreamSpec::DEFAULT_LIST_TIMEOUT,
        Some(t) => duration(ctx, &field("list_timeout"), &t)?,
    };
    let max_in_flight = match raw.max_in_flight {
        None => UpstreamSpec::DEFAULT_MAX_IN_FLIGHT,
        Some(0) => return Err(ctx.error(&field("max_in_flight"), "must be at least 1")),
        Some(n) => {
            usize::try_from(n).map_err(|_| ctx.error(&field("max_in_flight"), "too large"))?
        }
    };

    let prefix = match raw.prefix {
        None => None,
        Some(p) => {
            let p = ctx.expand(&field("prefix"), &p)?;
            check_prefix(ctx, &field("prefix"), &p)?;
            Some(p)
        }
    };

    let sampling = match raw.sampling {
        None => None,
        Some(s) => {
            let always = match s.mode.as_deref() {
                None | Some("fallback") => false,
                Some("always") => true,
                Some(_) => {
                    return Err(
                        ctx.error(&field("sampling.mode"), "expected `fallback` or `always`")
                    )
                }
            };
            let max_tokens = s.max_tokens.unwrap_or(DEFAULT_SAMPLING_MAX_TOKENS);
            if max_tokens == 0 {
                return Err(ctx.error(&field("sampling.max_tokens"), "must be at least 1"));
            }
            Some(UpstreamSampling {
                always,
                policy: SamplingPolicy::new(max_tokens).allow_models(s.models.unwrap_or_default()),
            })
        }
    };

    Ok(Some(BuiltServer {
        upstream: UpstreamSpec {
            name: name.to_owned(),
            prefix,
            transport,
            timeout,
            list_timeout,
            max_in_flight,
            sampling,
            // The OAuth client is made by the caller, which knows where
            // tokens are kept.
            http_auth: None,
        },
        oauth,
    }))
}

/// A positive duration at `key`.
pub(crate) fn duration(
    ctx: &Context<'_>,
    key: &str,
    raw: &RawDuration,
) -> Result<Duration, ConfigError> {
    let d = match raw {
        RawDuration::Seconds(s) => Duration::from_secs(*s),
        RawDuration::Text(t) => {
            let t = ctx.expand(key, t)?;
            parse_duration(&t).map_err(|m| ctx.error(key, m))?
        }
    };
    if d.is_zero() {
        return Err(ctx.error(key, "must be more than zero"));
    }
    Ok(d)
}

/// A prefix must keep tool names within the spec's rule: 1 to 128
/// characters of `[A-Za-z0-9_.-]`.
pub(crate) fn check_prefix(ctx: &Context<'_>, key: &str, prefix: &str) -> Result<(), ConfigError> {
    if let Some(bad) = prefix
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
    {
        return Err(ctx.error(
            key,
            format!(
                "`{}` is not allowed: tool names may only hold letters, digits, `_`, `.` and `-`",
                bad.escape_default()
            ),
        ));
    }
    if prefix.len() >= MAX_TOOL_NAME_LEN {
        return Err(ctx.error(
            key,
            format!(
                "too long: tool names are at most {MAX_TOOL_NAME_LEN} characters, prefix included"
            ),
        ));
    }
    Ok(())
}

fn build_stdio(
    ctx: &Context<'_>,
    key: &str,
    command: &str,
    args: Option<Vec<String>>,
    env: Option<Vec<(String, String)>>,
    inherit_env: Option<Vec<String>>,
    cwd: Option<String>,
) -> Result<TransportSpec, ConfigError> {
    let command = ctx.expand(&format!("{key}.command"), command)?;
    if command.trim().is_empty() {
        return Err(ctx.error(&format!("{key}.command"), "must not be empty"));
    }
    let args = args
        .unwrap_or_default()
        .iter()
        .enumerate()
        .map(|(i, a)| ctx.expand(&format!("{key}.args[{i}]"), a))
        .collect::<Result<Vec<_>, _>>()?;
    let mut env_out = BTreeMap::new();
    for (name, value) in env.unwrap_or_default() {
        let k = format!("{key}.env.{name}");
        if name.is_empty() || name.contains('=') || name.contains('\0') {
            return Err(ctx.error(
                &k,
                "not a valid environment variable name (empty, or holds `=` or NUL)",
            ));
        }
        env_out.insert(name, ctx.expand(&k, &value)?);
    }
    let inherit_env = inherit_env
        .unwrap_or_default()
        .iter()
        .enumerate()
        .map(|(i, pattern)| {
            let k = format!("{key}.inherit_env[{i}]");
            let pattern = ctx.expand(&k, pattern)?;
            let name = pattern.strip_suffix('*').unwrap_or(&pattern);
            if pattern.is_empty() || name.contains(['=', '\0', '*']) {
                return Err(ctx.error(
                    &k,
                    "expected a variable name, `PREFIX*` or `*` (`*` only at the end)",
                ));
            }
            Ok(pattern)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let cwd = match cwd {
        None => None,
        Some(c) => {
            let k = format!("{key}.cwd");
            let c = ctx.expand(&k, &c)?;
            if c.is_empty() {
                return Err(ctx.error(
                    &k,
                    "must not be empty (leave it out to use the current directory)",
                ));
            }
            let p = PathBuf::from(c);
            // A relative directory means relative to the config file, not
            // to wherever the gateway happens to be started from.
            Some(match ctx.base_dir {
                Some(base) if p.is_relative() => base.join(p),
                _ => p,
            })
        }
    };
    Ok(TransportSpec::Stdio {
        command,
        args,
        env: env_out,
        inherit_env,
        cwd,
    })
}

fn build_http(
    ctx: &Context<'_>,
    key: &str,
    url: &str,
    headers: Option<Vec<(String, String)>>,
    asked: Option<Kind>,
) -> Result<TransportSpec, ConfigError> {
    let ukey = format!("{key}.url");
    let url = ctx.expand(&ukey, url)?;
    let parsed = url::Url::parse(url.trim())
        .map_err(|e| ctx.error(&ukey, format!("expected an http:// or https:// URL ({e})")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(ctx.error(&ukey, "expected an http:// or https:// URL"));
    }
    let mut headers_out = Vec::new();
    for (name, value) in headers.unwrap_or_default() {
        let k = format!("{key}.headers.{name}");
        if !is_header_name(&name) {
            return Err(ctx.error(&k, "not a valid HTTP header name"));
        }
        let value = ctx.expand(&k, &value)?;
        if value.chars().any(|c| c.is_control() && c != '\t') {
            return Err(ctx.error(&k, "header value holds a control character (a line break?)"));
        }
        // The HTTP client would turn the URL's user info into an
        // Authorization header of its own: which one wins is nobody's guess.
        if name.eq_ignore_ascii_case("authorization")
            && (!parsed.username().is_empty() || parsed.password().is_some())
        {
            return Err(ctx.error(
                &k,
                "the `url` carries user info (`user:password@`) and this header would \
                 compete with it: keep one (remove the credentials from the URL, or this header)",
            ));
        }
        headers_out.push((name, value));
    }
    let kind = asked.unwrap_or_else(|| {
        // The legacy transport's endpoint is conventionally `/sse`.
        if parsed.path().trim_end_matches('/').ends_with("/sse") {
            Kind::Sse
        } else {
            Kind::StreamableHttp
        }
    });
    let url = parsed.to_string();
    Ok(match kind {
        Kind::Sse => TransportSpec::Sse {
            url,
            headers: headers_out,
        },
        _ => TransportSpec::StreamableHttp {
            url,
            headers: headers_out,
        },
    })
}

/// RFC 9110 token characters.
fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(name: &str) -> Option<String> {
        (name == "TOKEN").then(|| "s3cret".to_owned())
    }

    fn ctx() -> Context<'static> {
        Context {
            file: "test.toml",
            base_dir: Some(std::path::Path::new("/etc/mcpyard")),
            lookup: &lookup,
        }
    }

    fn stdio(command: &str) -> ServerEntry {
        ServerEntry {
            command: Some(command.into()),
            ..Default::default()
        }
    }

    fn http(url: &str) -> ServerEntry {
        ServerEntry {
            url: Some(url.into()),
            ..Default::default()
        }
    }

    fn err(raw: ServerEntry) -> String {
        build(&ctx(), "servers.s", "s", raw)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_stdio_entry_becomes_a_stdio_transport() {
        let raw = ServerEntry {
            args: Some(vec!["-y".into(), "${TOKEN}".into()]),
            env: Some(vec![("K".into(), "v-${TOKEN}".into())]),
            inherit_env: Some(vec!["SSL_CERT_*".into(), "NODE_OPTIONS".into()]),
            cwd: Some("data".into()),
            prefix: Some("e_".into()),
            timeout: Some(RawDuration::Text("2m".into())),
            ..stdio("npx")
        };
        let up = build(&ctx(), "servers.s", "s", raw)
            .unwrap()
            .unwrap()
            .upstream;
        assert_eq!(up.name, "s");
        assert_eq!(up.prefix.as_deref(), Some("e_"));
        assert_eq!(up.timeout, Duration::from_secs(120));
        assert_eq!(
            up.transport,
            TransportSpec::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "s3cret".into()],
                env: BTreeMap::from([("K".into(), "v-s3cret".into())]),
                inherit_env: vec!["SSL_CERT_*".into(), "NODE_OPTIONS".into()],
                cwd: Some(PathBuf::from("/etc/mcpyard/data")),
            }
        );
    }

    #[test]
    fn defaults_are_sixty_seconds_and_the_name_prefix() {
        let up = build(&ctx(), "servers.s", "s", stdio("x"))
            .unwrap()
            .unwrap()
            .upstream;
        assert_eq!(up.timeout, DEFAULT_TIMEOUT);
        assert_eq!(up.prefix, None);
        assert_eq!(up.effective_prefix(), "s__");
    }

    #[test]
    fn absolute_cwd_is_kept() {
        let raw = ServerEntry {
            cwd: Some("/srv".into()),
            ..stdio("x")
        };
        let up = build(&ctx(), "servers.s", "s", raw)
            .unwrap()
            .unwrap()
            .upstream;
        let TransportSpec::Stdio { cwd, .. } = up.transport else {
            panic!("expected stdio");
        };
        assert_eq!(cwd, Some(PathBuf::from("/srv")));
    }

    #[test]
    fn urls_choose_streamable_http_or_sse() {
        let up = build(&ctx(), "servers.s", "s", http("http://127.0.0.1:3001/mcp"))
            .unwrap()
            .unwrap()
            .upstream;
        assert!(matches!(up.transport, TransportSpec::StreamableHttp { .. }));
        let up = build(&ctx(), "servers.s", "s", http("http://127.0.0.1:3001/sse"))
            .unwrap()
            .unwrap()
            .upstream;
        assert!(matches!(up.transport, TransportSpec::Sse { .. }));
        let raw = ServerEntry {
            transport: Some("sse".into()),
            headers: Some(vec![("Authorization".into(), "Bearer ${TOKEN}".into())]),
            ..http("http://127.0.0.1:3001/events")
        };
        let up = build(&ctx(), "servers.s", "s", raw)
            .unwrap()
            .unwrap()
            .upstream;
        assert_eq!(
            up.transport,
            TransportSpec::Sse {
                url: "http://127.0.0.1:3001/events".into(),
                headers: vec![("Authorization".into(), "Bearer s3cret".into())],
            }
        );
        let raw = ServerEntry {
            kind: Some("http".into()),
            ..http("http://127.0.0.1:3001/sse")
        };
        let up = build(&ctx(), "servers.s", "s", raw)
            .unwrap()
            .unwrap()
            .upstream;
        assert!(matches!(up.transport, TransportSpec::StreamableHttp { .. }));
    }

    #[test]
    fn disabled_entries_are_skipped_without_expanding() {
        let raw = ServerEntry {
            enabled: Some(false),
            args: Some(vec!["${NOT_SET_ANYWHERE}".into()]),
            ..stdio("x")
        };
        assert!(build(&ctx(), "servers.s", "s", raw).unwrap().is_none());
    }

    #[test]
    fn bad_names_are_rejected() {
        for name in ["", "has space", "dot.ted", &"x".repeat(65)] {
            let e = build(&ctx(), "servers.bad", name, stdio("x")).unwrap_err();
            assert_eq!(e.key.as_deref(), Some("servers.bad"));
            assert!(e.message.contains("server name"), "{e}");
        }
        assert!(build(&ctx(), "servers.ok", &"x".repeat(64), stdio("x")).is_ok());
    }

    #[test]
    fn each_error_names_its_key() {
        let cases: Vec<(ServerEntry, &str, &str)> = vec![
            (
                ServerEntry {
                    ..Default::default()
                },
                "`servers.s`",
                "missing `command`",
            ),
            (
                ServerEntry {
                    url: Some("http://x/".into()),
                    ..stdio("x")
                },
                "`servers.s`",
                "not both",
            ),
            (stdio("${NOPE}"), "`servers.s.command`", "`NOPE` is not set"),
            (stdio(" "), "`servers.s.command`", "must not be empty"),
            (
                ServerEntry {
                    args: Some(vec!["a".into(), "${NOPE}".into()]),
                    ..stdio("x")
                },
                "`servers.s.args[1]`",
                "NOPE",
            ),
            (
                ServerEntry {
                    env: Some(vec![("A".into(), "${NOPE}".into())]),
                    ..stdio("x")
                },
                "`servers.s.env.A`",
                "NOPE",
            ),
            (
                ServerEntry {
                    env: Some(vec![("A=B".into(), "v".into())]),
                    ..stdio("x")
                },
                "`servers.s.env.A=B`",
                "environment variable name",
            ),
            (
                ServerEntry {
                    inherit_env: Some(vec!["OK".into(), "A*B".into()]),
                    ..stdio("x")
                },
                "`servers.s.inherit_env[1]`",
                "`*` only at the end",
            ),
            (
                ServerEntry {
                    inherit_env: Some(vec![String::new()]),
                    ..stdio("x")
                },
                "`servers.s.inherit_env[0]`",
                "expected a variable name",
            ),
            (
                ServerEntry {
                    inherit_env: Some(vec!["A=B".into()]),
                    ..stdio("x")
                },
                "`servers.s.inherit_env[0]`",
                "expected a variable name",
            ),
            (
                ServerEntry {
                    inherit_env: Some(vec![]),
                    ..http("http://x/")
                },
                "`servers.s.inherit_env`",
                "for stdio servers",
            ),
            (
                ServerEntry {
                    cwd: Some(String::new()),
                    ..stdio("x")
                },
                "`servers.s.cwd`",
                "must not be empty",
            ),
            (
                ServerEntry {
                    headers: Some(vec![]),
                    ..stdio("x")
                },
                "`servers.s.headers`",
                "for HTTP servers",
            ),
            (
                ServerEntry {
                    args: Some(vec![]),
                    ..http("http://x/")
                },
                "`servers.s.args`",
                "for stdio servers",
            ),
            (
                ServerEntry {
                    cwd: Some("/".into()),
                    ..http("http://x/")
                },
                "`servers.s.cwd`",
                "for stdio servers",
            ),
            (
                ServerEntry {
                    headers: Some(vec![("AUTHORIZATION".into(), "Bearer ${TOKEN}".into())]),
                    ..http("http://u:p@x/")
                },
                "`servers.s.headers.AUTHORIZATION`",
                "user info",
            ),
            (http("ftp://x/"), "`servers.s.url`", "http:// or https://"),
            (http("not a url"), "`servers.s.url`", "http:// or https://"),
            (
                ServerEntry {
                    headers: Some(vec![("Bad Name".into(), "v".into())]),
                    ..http("http://x/")
                },
                "`servers.s.headers.Bad Name`",
                "header name",
            ),
            (
                ServerEntry {
                    headers: Some(vec![("X".into(), "a\nb".into())]),
                    ..http("http://x/")
                },
                "`servers.s.headers.X`",
                "control character",
            ),
            (
                ServerEntry {
                    transport: Some("websocket".into()),
                    ..http("http://x/")
                },
                "`servers.s.transport`",
                "expected \"stdio\"",
            ),
            (
                ServerEntry {
                    kind: Some("sse".into()),
                    ..stdio("x")
                },
                "`servers.s.type`",
                "needs `url`",
            ),
            (
                ServerEntry {
                    kind: Some("stdio".into()),
                    ..http("http://x/")
                },
                "`servers.s.type`",
                "needs `command`",
            ),
            (
                ServerEntry {
                    timeout: Some(RawDuration::Text("soon".into())),
                    ..stdio("x")
                },
                "`servers.s.timeout`",
                "expected a duration",
            ),
            (
                ServerEntry {
                    timeout: Some(RawDuration::Seconds(0)),
                    ..stdio("x")
                },
                "`servers.s.timeout`",
                "more than zero",
            ),
            (
                ServerEntry {
                    prefix: Some("a/b".into()),
                    ..stdio("x")
                },
                "`servers.s.prefix`",
                "`/` is not allowed",
            ),
            (
                ServerEntry {
                    prefix: Some("p".repeat(128)),
                    ..stdio("x")
                },
                "`servers.s.prefix`",
                "too long",
            ),
        ];
        for (raw, key, msg) in cases {
            let e = err(raw);
            assert!(e.starts_with("test.toml: "), "{e}");
            assert!(e.contains(key), "expected key {key} in: {e}");
            assert!(e.contains(msg), "expected {msg:?} in: {e}");
        }
    }

    #[test]
    fn errors_do_not_echo_expanded_secrets() {
        let raw = ServerEntry {
            headers: Some(vec![("X".into(), "${TOKEN}\n".into())]),
            ..http("http://x/")
        };
        let e = err(raw);
        assert!(!e.contains("s3cret"), "{e}");
        let e = err(http("${TOKEN}"));
        assert!(!e.contains("s3cret"), "{e}");
    }
}
