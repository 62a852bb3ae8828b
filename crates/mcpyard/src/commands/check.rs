//! `mcpyard check`: validate a configuration file and summarise it, without
//! starting anything; with `--connect`, start the gateway to verify its
//! sources too.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use mcpyard_gateway::{Gateway, Listing, Session};
use mcpyard_proto::Message;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::shutdown;
use crate::compose::{self, Purpose};
use crate::config::{self, format_duration, transport_kind, ApiSummary, Settings};

/// Prints the summary on stdout and warnings on stderr; on an invalid file
/// prints the error on stderr and returns exit code 1.
pub(super) fn run(path: Option<&Path>) -> ExitCode {
    match config::load_or_default(path) {
        Ok(settings) => {
            print_summary(&settings);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn print_summary(settings: &Settings) {
    let mut out = std::io::stdout().lock();
    // A closed stdout (`| head`) is not an error worth reporting.
    let _ = out.write_all(summary(settings).as_bytes());
    for w in settings.warnings.iter().chain(&settings.exposure_warning()) {
        eprintln!("warning: {w}");
    }
}

/// `check --connect`: the summary, then the gateway started as `serve`
/// starts it (without listening) until every source has made its first
/// report, and one line per source from the gateway's own status. Exit
/// code 1 when a source is down or an `expose` name matches no tool; local
/// models that discovery did not find are optional, not down.
pub(super) async fn run_connected(path: Option<&Path>) -> ExitCode {
    let settings = match config::load_or_default(path) {
        Ok(settings) => settings,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    print_summary(&settings);
    let mut settings = settings;
    let started = match compose::gateway(&mut settings, Purpose::Check) {
        Ok(config) => Gateway::start(config).await.map_err(anyhow::Error::from),
        Err(e) => Err(e),
    };
    let gateway = match started {
        Ok(gateway) => gateway,
        Err(e) => {
            eprintln!("error: cannot start the gateway: {e}");
            return ExitCode::FAILURE;
        }
    };
    let interrupted = CancellationToken::new();
    shutdown::cancel_on_signal(interrupted.clone());
    // Bounded by the gateway's own start-up hold.
    gateway.wait_for_startup(&interrupted).await;
    let status = gateway_status(&gateway).await;
    shutdown::stop_gateway(&gateway).await;
    if interrupted.is_cancelled() {
        eprintln!("error: interrupted before every source had reported");
        return ExitCode::FAILURE;
    }
    let (report, healthy) = match status {
        Ok(status) => connected_report(&status),
        Err(e) => (
            format!("error: cannot read the gateway status: {e}\n"),
            false,
        ),
    };
    let _ = std::io::stdout().lock().write_all(report.as_bytes());
    if healthy {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The structured result of the gateway's `mcpyard__status` tool, asked as
/// a client would, so that `check` shows exactly what the gateway computed.
async fn gateway_status(gateway: &Gateway) -> Result<Value, String> {
    let session = Session::new(None);
    gateway.register_session(session.clone());
    let initialize = json!({
        "protocolVersion": mcpyard_proto::LATEST_STATEFUL,
        "capabilities": {},
        "clientInfo": {"name": "mcpyard check", "version": env!("CARGO_PKG_VERSION")},
    });
    let asked = async {
        request(gateway, &session, 1, "initialize", initialize).await?;
        request(
            gateway,
            &session,
            2,
            "tools/call",
            json!({"name": STATUS_TOOL}),
        )
        .await
    }
    .await;
    gateway.end_session(session.id());
    let result = asked?;
    result
        .get("structuredContent")
        .cloned()
        .ok_or_else(|| format!("the status tool answered without structured content: {result}"))
}

const STATUS_TOOL: &str = "mcpyard__status";

async fn request(
    gateway: &Gateway,
    session: &std::sync::Arc<Session>,
    id: i64,
    method: &str,
    params: Value,
) -> Result<Value, String> {
    match gateway
        .request(session, id.into(), method, Some(params), None)
        .await
        .into_message()
    {
        Message::Response { result, .. } => Ok(result.into_value()),
        Message::Error { error, .. } => Err(format!("{method}: {error}")),
        other => Err(format!("{method}: unexpected answer {other:?}")),
    }
}

/// One line per source: up or down (with its error), tools listed and
/// hidden, and the `expose` names that match no tool. The flag is false
/// when any source is down or has such a name.
fn connected_report(status: &Value) -> (String, bool) {
    let sources = status["sources"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let width = sources
        .iter()
        .filter_map(|s| s["name"].as_str())
        .map(str::len)
        .max()
        .unwrap_or(0);
    let mut healthy = true;
    let mut out = format!("connected: {} source(s)\n", sources.len());
    for s in sources {
        // Local models found by discovery alone are optional: none running
        // is not a fault of the configuration.
        let nothing_found =
            s["kind"] == "inference" && s["backends"].as_array().is_some_and(Vec::is_empty);
        let up = s["healthy"].as_bool().unwrap_or(false) || nothing_found;
        let state = match (nothing_found, up) {
            (true, _) => "none",
            (false, true) => "up",
            (false, false) => "down",
        };
        let mut line = format!(
            "  {:width$}  {:4}  tools: {} listed, {} hidden",
            s["name"].as_str().unwrap_or("?"),
            state,
            s["tools_listed"].as_u64().unwrap_or(0),
            s["tools_hidden"].as_u64().unwrap_or(0),
        );
        if let Some(e) = s["error"].as_str() {
            line += &format!("  (error: {e})");
        }
        if nothing_found {
            line +=
                "  (no local model server found: optional, the local__ tools say how to start one)";
        }
        let unmatched: Vec<&str> = s["expose_unmatched"]
            .as_array()
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if !unmatched.is_empty() {
            line += &format!("  expose names matching no tool: {}", unmatched.join(", "));
        }
        healthy &= up && unmatched.is_empty();
        out += &line;
        out.push('\n');
    }
    (out, healthy)
}

/// The human summary: settings, then one line per server. Never shows a
/// value that came from the environment (targets are shown as written).
/// The named keys (names and groups, never a key or its digest), the token
/// issuer, the stdio identity and the HTTP doors that are off.
fn auth_summary(s: &Settings) -> String {
    let mut parts = Vec::new();
    if !s.http.auth.keys.is_empty() {
        let keys: Vec<String> = s
            .http
            .auth
            .keys
            .iter()
            .map(|k| format!("{} [{}]", k.name, k.groups.join(", ")))
            .collect();
        parts.push(format!("keys {}", keys.join("; ")));
    }
    if let Some(oauth) = &s.http.auth.oauth {
        parts.push(format!("access tokens from {}", oauth.issuer));
    }
    parts.push(format!("stdio as {}", s.stdio.identity.name));
    if !s.http.streamable {
        parts.push("/mcp off".to_owned());
    }
    if !s.http.legacy_sse {
        parts.push("/sse off".to_owned());
    }
    parts.join(", ")
}

fn summary(s: &Settings) -> String {
    let enabled = s.servers.iter().filter(|x| x.enabled).count();
    let disabled = s.servers.len() - enabled;
    let mut out = format!("{}: OK\n", s.source);
    out += &format!("  listen         {}\n", s.http.listen);
    out += &format!(
        "  api_key        {}\n",
        match &s.api_key {
            Some(k) => format!("set (by {})", k.source),
            None if s.http.auth.keys.is_empty() && s.http.auth.oauth.is_none() => {
                "not set (no authentication)".to_owned()
            }
            None => "not set (see auth)".to_owned(),
        }
    );
    out += &format!("  auth           {}\n", auth_summary(s));
    out += &format!("  max_body_size  {} bytes\n", s.http.max_body_bytes);
    out += &format!("  log_level      {}\n", s.log_level);
    out += &format!("  inference      {}\n", s.inference);
    out += &format!("  governance     {}\n", s.governance);
    if !s.http.allowed_hosts.is_empty() {
        out += &format!("  allowed_hosts  {}\n", s.http.allowed_hosts.join(", "));
    }
    if !s.http.allowed_origins.is_empty() {
        out += &format!("  allowed_origins {}\n", s.http.allowed_origins.join(", "));
    }
    out += &format!(
        "servers: {enabled} enabled{}\n",
        if disabled > 0 {
            format!(", {disabled} disabled")
        } else {
            String::new()
        }
    );
    let width = s.servers.iter().map(|x| x.name.len()).max().unwrap_or(0);
    for server in &s.servers {
        match s.upstream(&server.name) {
            Some(up) => {
                out += &format!(
                    "  {:width$}  {:15}  {}  (tools as `{}<tool>`, timeout {}{})\n",
                    server.name,
                    transport_kind(&up.transport),
                    server.target,
                    up.effective_prefix(),
                    format_duration(up.timeout),
                    expose(s, &server.name),
                );
                if let Some(oauth) = s.oauth(&server.name) {
                    out += &format!("  {:width$}  {}\n", "", oauth.describe());
                }
            }
            None => {
                out += &format!(
                    "  {:width$}  {:15}  {}\n",
                    server.name, "disabled", server.target
                );
            }
        }
    }
    if !s.apis.is_empty() {
        out += &apis_summary(&s.apis);
    }
    out
}

/// How many names of a long list `check` prints before "and N more".
const LISTED_NAMES: usize = 8;

/// One line per API, then what its document leaves undescribed: a model
/// picks and fills tools by their descriptions, so thin ones are worth
/// fixing (or overriding) before they cost wrong calls.
fn apis_summary(apis: &[ApiSummary]) -> String {
    let enabled = apis.iter().filter(|a| a.enabled).count();
    let mut out = format!("apis: {enabled} enabled");
    if enabled < apis.len() {
        out += &format!(", {} disabled", apis.len() - enabled);
    }
    out += "\n";
    let width = apis.iter().map(|a| a.name.len()).max().unwrap_or(0);
    for api in apis {
        if !api.enabled {
            out += &format!("  {:width$}  disabled  {}\n", api.name, api.spec);
            continue;
        }
        let Some(doc) = &api.document else {
            out += &format!(
                "  {:width$}  {}  (tools as `{}<tool>`; fetched at start)\n",
                api.name, api.spec, api.prefix
            );
            continue;
        };
        out += &format!(
            "  {:width$}  {}  (tools as `{}<tool>`): \"{}\", {} operations, {} listed, {} by search\n",
            api.name,
            api.spec,
            api.prefix,
            doc.title,
            doc.operations,
            doc.exposed,
            doc.operations - doc.exposed,
        );
        for (what, names) in [
            (
                "operations without a description",
                &doc.undescribed_operations,
            ),
            ("inputs without a description", &doc.undescribed_fields),
        ] {
            if names.is_empty() {
                continue;
            }
            let shown = names.iter().take(LISTED_NAMES).cloned().collect::<Vec<_>>();
            let more = names.len().saturating_sub(LISTED_NAMES);
            out += &format!(
                "    {} {what}: {}{}\n",
                names.len(),
                shown.join(", "),
                if more > 0 {
                    format!(", and {more} more")
                } else {
                    String::new()
                }
            );
        }
        for line in &doc.credentials {
            out += &format!("    credentials: {line}\n");
        }
    }
    out
}

/// A server's `expose`, when it lists less than every tool. Its names are
/// checked against the tools once the server is connected (`serve` logs
/// those that match nothing and `mcpyard__status` shows them): `check`
/// starts nothing.
fn expose(s: &Settings, server: &str) -> String {
    let listing = s
        .gateway
        .sources
        .iter()
        .find(|spec| spec.upstream().is_some_and(|u| u.name == server))
        .map(|spec| &spec.exposure.listing);
    match listing {
        None | Some(Listing::Default | Listing::All) => String::new(),
        Some(Listing::None) => ", lists no tool: the rest through mcpyard__search_tools".to_owned(),
        Some(Listing::Only(names)) => format!(
            ", lists only {}: checked against its tools once connected",
            names.join(", ")
        ),
    }
}
