//! `mcpyard check`: validate a configuration file and summarise it, without
//! starting anything.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use mcpyard_gateway::Listing;

use crate::config::{self, format_duration, transport_kind, ApiSummary, Settings};

/// Prints the summary on stdout and warnings on stderr; on an invalid file
/// prints the error on stderr and returns exit code 1.
pub(super) fn run(path: &Path) -> ExitCode {
    match config::load(path) {
        Ok(settings) => {
            let mut out = std::io::stdout().lock();
            // A closed stdout (`| head`) is not an error worth reporting.
            let _ = out.write_all(summary(&settings).as_bytes());
            for w in settings.warnings.iter().chain(&settings.exposure_warning()) {
                eprintln!("warning: {w}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The human summary: settings, then one line per server. Never shows a
/// value that came from the environment (targets are shown as written).
fn summary(s: &Settings) -> String {
    let enabled = s.servers.iter().filter(|x| x.enabled).count();
    let disabled = s.servers.len() - enabled;
    let mut out = format!("{}: OK\n", s.source);
    out += &format!("  listen         {}\n", s.listen);
    out += &format!(
        "  api_key        {}\n",
        match &s.api_key {
            Some(k) => format!("set (by {})", k.source),
            None => "not set (no authentication)".to_owned(),
        }
    );
    out += &format!("  max_body_size  {} bytes\n", s.max_body_bytes);
    out += &format!("  log_level      {}\n", s.log_level);
    out += &format!("  inference      {}\n", s.inference);
    if !s.allowed_hosts.is_empty() {
        out += &format!("  allowed_hosts  {}\n", s.allowed_hosts.join(", "));
    }
    if !s.allowed_origins.is_empty() {
        out += &format!("  allowed_origins {}\n", s.allowed_origins.join(", "));
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
