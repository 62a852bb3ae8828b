//! `[audit]`, `[guardrails]` and `[sizes]`: what the gateway records of
//! every call, what it refuses or redacts, and how large arguments and
//! results may be. Each table is optional; redaction of well-known secrets
//! is on without one.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mcpyard_gateway::{
    AuditFile, DenyRule, Guard, GuardConfig, GuardError, SourceSpec, ToolSizes, WebhookConfig,
};
use serde::Deserialize;

use super::server::duration;

use super::context::Context;
use super::values::{parse_size, OrderedMap, RawDuration, RawSize};
use super::ConfigError;

/// `[audit]`, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAudit {
    /// Relative to the configuration file's folder.
    file: String,
    max_size: Option<RawSize>,
    keep: Option<u64>,
}

/// `[guardrails]`, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawGuardrails {
    /// The built-in detectors; on by default.
    redact: Option<bool>,
    #[serde(default)]
    patterns: Vec<RawPattern>,
    #[serde(default)]
    deny: Vec<RawDeny>,
    webhook: Option<RawWebhook>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPattern {
    name: String,
    regex: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDeny {
    name: String,
    pattern: String,
    #[serde(default)]
    tools: Vec<String>,
    #[serde(default)]
    arguments: Vec<String>,
    message: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWebhook {
    url: String,
    timeout: Option<RawDuration>,
    /// `open` or `closed` (the default).
    fail: Option<String>,
}

/// `[sizes]`, as written: defaults for every source, then per source and
/// per tool (the source's own tool name).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSizes {
    max_arguments: Option<RawSize>,
    max_result: Option<RawSize>,
    #[serde(default)]
    sources: OrderedMap<RawSourceSizes>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSourceSizes {
    max_arguments: Option<RawSize>,
    max_result: Option<RawSize>,
    #[serde(default)]
    tools: OrderedMap<RawToolSizes>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawToolSizes {
    max_arguments: Option<RawSize>,
    max_result: Option<RawSize>,
}

/// `[audit]`: the trail's file, resolved against the configuration's folder.
pub(crate) fn audit(
    ctx: &Context<'_>,
    raw: Option<&RawAudit>,
) -> Result<Option<AuditFile>, ConfigError> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    let file = ctx.expand("audit.file", &raw.file)?;
    if file.trim().is_empty() {
        return Err(ctx.error("audit.file", "expected a file path"));
    }
    let max_size =
        size(ctx, "audit.max_size", raw.max_size.as_ref())?.unwrap_or(AuditFile::DEFAULT_MAX_SIZE);
    let keep = match raw.keep {
        None => AuditFile::DEFAULT_KEEP,
        Some(n) => usize::try_from(n).map_err(|_| ctx.error("audit.keep", "too large"))?,
    };
    Ok(Some(AuditFile {
        path: resolve(ctx.base_dir, &file),
        max_size,
        keep,
    }))
}

/// `[guardrails]`: the layer, built now so that a bad pattern stops the
/// gateway at start naming its key.
pub(crate) fn guard(
    ctx: &Context<'_>,
    raw: Option<&RawGuardrails>,
) -> Result<Arc<Guard>, ConfigError> {
    let mut config = GuardConfig {
        redact_builtin: raw.and_then(|r| r.redact).unwrap_or(true),
        ..GuardConfig::default()
    };
    if let Some(raw) = raw {
        for (i, p) in raw.patterns.iter().enumerate() {
            let key = format!("guardrails.patterns[{i}]");
            if p.name.trim().is_empty() {
                return Err(ctx.error(&format!("{key}.name"), "must not be empty"));
            }
            config.patterns.push((
                p.name.clone(),
                ctx.expand(&format!("{key}.regex"), &p.regex)?,
            ));
        }
        for (i, d) in raw.deny.iter().enumerate() {
            let key = format!("guardrails.deny[{i}]");
            if d.name.trim().is_empty() {
                return Err(ctx.error(&format!("{key}.name"), "must not be empty"));
            }
            config.deny.push(DenyRule {
                name: d.name.clone(),
                pattern: ctx.expand(&format!("{key}.pattern"), &d.pattern)?,
                tools: d.tools.clone(),
                arguments: d.arguments.clone(),
                message: d.message.clone(),
            });
        }
        if let Some(w) = &raw.webhook {
            let url = ctx.expand("guardrails.webhook.url", &w.url)?;
            match url::Url::parse(&url) {
                Ok(u) if matches!(u.scheme(), "http" | "https") => {}
                _ => {
                    return Err(ctx.error(
                        "guardrails.webhook.url",
                        "expected an http:// or https:// URL",
                    ))
                }
            }
            let timeout = match &w.timeout {
                None => WebhookConfig::DEFAULT_TIMEOUT,
                Some(t) => duration(ctx, "guardrails.webhook.timeout", t)?,
            };
            let fail_open = match w.fail.as_deref().map(str::trim) {
                None | Some("closed") => false,
                Some("open") => true,
                Some(_) => {
                    return Err(ctx.error(
                        "guardrails.webhook.fail",
                        r#"expected "open" (the call passes when the check fails) or "closed" (it is refused)"#,
                    ))
                }
            };
            config.webhook = Some(WebhookConfig {
                url,
                timeout,
                fail_open,
            });
        }
    }
    Guard::new(config).map(Arc::new).map_err(|e| {
        let key = match &e {
            GuardError::Pattern(p) => raw
                .and_then(|r| r.patterns.iter().position(|x| x.name == p.name))
                .map(|i| format!("guardrails.patterns[{i}].regex")),
            GuardError::Deny { name, .. } => raw
                .and_then(|r| r.deny.iter().position(|x| &x.name == name))
                .map(|i| format!("guardrails.deny[{i}].pattern")),
        };
        ctx.error(key.as_deref().unwrap_or("guardrails"), e.to_string())
    })
}

/// `[sizes]`: the defaults fill what a source leaves unset (an API's
/// `max_response_bytes` is its own result limit), a source's table and its
/// tools' tables win over both.
pub(crate) fn apply_sizes(
    ctx: &Context<'_>,
    raw: Option<&RawSizes>,
    sources: &mut [SourceSpec],
) -> Result<(), ConfigError> {
    let Some(raw) = raw else {
        return Ok(());
    };
    let max_arguments = size(ctx, "sizes.max_arguments", raw.max_arguments.as_ref())?;
    let max_result = size(ctx, "sizes.max_result", raw.max_result.as_ref())?;
    for source in sources.iter_mut() {
        let sizes = &mut source.limits.sizes;
        sizes.max_arguments = sizes.max_arguments.or(max_arguments);
        sizes.max_result = sizes.max_result.or(max_result);
    }
    for (name, table) in &raw.sources.0 {
        let key = format!("sizes.sources.{name}");
        // Local models and servers may share a name: the table applies to each.
        let mut matching = sources.iter_mut().filter(|s| s.name() == name).peekable();
        if matching.peek().is_none() {
            return Err(ctx.error(
                &key,
                format!("no server, API or local model source is named `{name}`"),
            ));
        }
        let own_arguments = size(
            ctx,
            &format!("{key}.max_arguments"),
            table.max_arguments.as_ref(),
        )?;
        let own_result = size(ctx, &format!("{key}.max_result"), table.max_result.as_ref())?;
        let mut tools = Vec::new();
        for (tool, t) in &table.tools.0 {
            let tool_key = format!("{key}.tools.{tool}");
            tools.push((
                tool.clone(),
                ToolSizes {
                    max_arguments: size(
                        ctx,
                        &format!("{tool_key}.max_arguments"),
                        t.max_arguments.as_ref(),
                    )?,
                    max_result: size(
                        ctx,
                        &format!("{tool_key}.max_result"),
                        t.max_result.as_ref(),
                    )?,
                },
            ));
        }
        for source in matching {
            let sizes = &mut source.limits.sizes;
            sizes.max_arguments = own_arguments.or(sizes.max_arguments);
            sizes.max_result = own_result.or(sizes.max_result);
            sizes.tools.extend(tools.iter().cloned());
        }
    }
    Ok(())
}

/// A size of at least one byte at `key`.
fn size(ctx: &Context<'_>, key: &str, raw: Option<&RawSize>) -> Result<Option<u64>, ConfigError> {
    let bytes = match raw {
        None => return Ok(None),
        Some(RawSize::Bytes(n)) => *n,
        Some(RawSize::Text(t)) => {
            parse_size(&ctx.expand(key, t)?).map_err(|m| ctx.error(key, m))?
        }
    };
    if bytes == 0 {
        return Err(ctx.error(key, "must be more than zero"));
    }
    Ok(Some(bytes))
}

fn resolve(base_dir: Option<&Path>, path: &str) -> PathBuf {
    if let (Some(rest), Some(home)) = (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        return PathBuf::from(home).join(rest);
    }
    let path = PathBuf::from(path);
    match base_dir {
        Some(dir) if path.is_relative() => dir.join(path),
        _ => path,
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::toml;

    #[test]
    fn audit_is_off_without_its_table_and_read_with_it() {
        assert!(toml("").expect("valid").audit.is_none());
        let s = toml(
            "[audit]\nfile = \"/var/log/mcpyard/audit.jsonl\"\nmax_size = \"1MiB\"\nkeep = 3\n",
        )
        .expect("valid");
        let audit = s.audit.expect("audit on");
        assert_eq!(audit.path.to_str(), Some("/var/log/mcpyard/audit.jsonl"));
        assert_eq!((audit.max_size, audit.keep), (1024 * 1024, 3));
        let e = toml("[audit]\nfile = \"a\"\nmax_size = 0\n")
            .expect_err("zero")
            .to_string();
        assert!(e.contains("audit.max_size"), "{e}");
        let e = toml("[audit]\nmax_size = 10\n")
            .expect_err("no file")
            .to_string();
        assert!(e.contains("file"), "{e}");
    }

    #[test]
    fn redaction_is_on_unless_turned_off_with_nothing_else_to_do() {
        assert!(toml("").expect("valid").gateway.guard.is_some());
        let off = toml("[guardrails]\nredact = false\n").expect("valid");
        assert!(off.gateway.guard.is_none());
        let rule =
            "[guardrails]\nredact = false\n[[guardrails.deny]]\nname = \"x\"\npattern = \"y\"\n";
        assert!(toml(rule).expect("valid").gateway.guard.is_some());
    }

    #[test]
    fn bad_guardrails_name_their_key() {
        let e = toml("[[guardrails.deny]]\nname = \"x\"\npattern = \"(\"\n")
            .expect_err("bad pattern")
            .to_string();
        assert!(
            e.contains("guardrails.deny[0].pattern") && e.contains("`x`"),
            "{e}"
        );
        let e = toml("[guardrails]\npatterns = [{ name = \"id\", regex = \"[\" }]\n")
            .expect_err("bad pattern")
            .to_string();
        assert!(e.contains("guardrails.patterns[0].regex"), "{e}");
        let e = toml("[guardrails.webhook]\nurl = \"http://127.0.0.1:1/\"\nfail = \"maybe\"\n")
            .expect_err("bad fail")
            .to_string();
        assert!(e.contains("guardrails.webhook.fail"), "{e}");
        let e = toml("[guardrails.webhook]\nurl = \"ftp://x/\"\n")
            .expect_err("bad url")
            .to_string();
        assert!(e.contains("guardrails.webhook.url"), "{e}");
        toml("[guardrails]\nredact = false\n[guardrails.webhook]\nurl = \"http://127.0.0.1:1/\"\ntimeout = \"500ms\"\nfail = \"open\"\n")
            .expect("valid");
    }

    #[test]
    fn sizes_apply_per_source_and_tool_over_the_defaults() {
        let s = toml(
            "[servers.a]\ncommand = \"x\"\n[servers.b]\ncommand = \"y\"\n\
             [sizes]\nmax_arguments = \"1KiB\"\nmax_result = 5000\n\
             [sizes.sources.b]\nmax_result = \"2KiB\"\ntools.echo = { max_arguments = 10 }\n",
        )
        .expect("valid");
        let sizes = |name: &str| {
            s.gateway
                .sources
                .iter()
                .find(|x| x.name() == name)
                .unwrap()
                .limits
                .sizes
                .clone()
        };
        assert_eq!(sizes("a").max_arguments, Some(1024));
        assert_eq!(sizes("a").max_result, Some(5000));
        assert_eq!(sizes("b").max_result, Some(2048));
        assert_eq!(sizes("b").for_tool(Some("echo")).max_arguments, Some(10));
        assert_eq!(sizes("b").for_tool(Some("echo")).max_result, Some(2048));
        let e = toml("[sizes.sources.nope]\nmax_result = 1\n")
            .expect_err("unknown source")
            .to_string();
        assert!(e.contains("sizes.sources.nope"), "{e}");
    }
}
