//! `[metrics]` (Prometheus) and `[telemetry]` (OpenTelemetry traces over
//! OTLP): both off unless asked for.

use std::net::SocketAddr;

use serde::Deserialize;

use super::context::Context;
use super::ConfigError;

/// `[metrics]`, as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMetrics {
    enabled: Option<bool>,
    listen: Option<String>,
    token: Option<String>,
}

/// `[telemetry]`, as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTelemetry {
    otlp_endpoint: Option<String>,
    service_name: Option<String>,
}

/// Where `GET /metrics` is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MetricsSettings {
    Off,
    /// On the MCP listener, behind its checks (API key included).
    WithMcp,
    /// On an address of its own, without authentication.
    Apart(SocketAddr),
}

/// Where traces go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TelemetrySettings {
    /// The OTLP/HTTP traces URL (`.../v1/traces`); `None`: no traces.
    pub(crate) traces_url: Option<String>,
    /// `service.name` of the exported spans.
    pub(crate) service_name: String,
}

const TRACES_PATH: &str = "/v1/traces";
const DEFAULT_SERVICE_NAME: &str = "mcpyard";

pub(crate) fn metrics(
    ctx: &Context<'_>,
    raw: Option<&RawMetrics>,
) -> Result<MetricsSettings, ConfigError> {
    let Some(raw) = raw else {
        return Ok(MetricsSettings::Off);
    };
    let listen = raw
        .listen
        .as_deref()
        .map(|l| {
            let l = ctx.expand("metrics.listen", l)?;
            super::values::parse_listen(&l).ok_or_else(|| {
                ctx.error(
                    "metrics.listen",
                    "expected HOST:PORT with an IP address or `localhost`, e.g. \"127.0.0.1:9464\"",
                )
            })
        })
        .transpose()?;
    // Giving an address is asking for metrics.
    Ok(match (raw.enabled.unwrap_or(listen.is_some()), listen) {
        (false, _) => MetricsSettings::Off,
        (true, None) => MetricsSettings::WithMcp,
        (true, Some(addr)) => MetricsSettings::Apart(addr),
    })
}

/// `metrics.token`, expanded: a credential is expected from the
/// environment (`"${VAR}"`); text in clear gets a warning, as a key does.
pub(crate) fn metrics_token(
    ctx: &Context<'_>,
    raw: Option<&RawMetrics>,
    warnings: &mut Vec<String>,
) -> Result<Option<String>, ConfigError> {
    let Some(text) = raw.and_then(|r| r.token.as_deref()) else {
        return Ok(None);
    };
    if !super::expand::has_reference(text) {
        warnings.push(format!(
            "{}: `metrics.token` is written in clear in the file; give it as \"${{VAR}}\" instead",
            ctx.file
        ));
    }
    let token = ctx.expand("metrics.token", text)?;
    if token.trim().is_empty() {
        return Err(ctx.error("metrics.token", "must not be empty"));
    }
    Ok(Some(token))
}

pub(crate) fn telemetry(
    ctx: &Context<'_>,
    raw: Option<&RawTelemetry>,
) -> Result<TelemetrySettings, ConfigError> {
    let raw = raw.unwrap_or(&RawTelemetry {
        otlp_endpoint: None,
        service_name: None,
    });
    let traces_url = match &raw.otlp_endpoint {
        None => None,
        Some(e) => {
            let e = ctx.expand("telemetry.otlp_endpoint", e)?;
            Some(e)
                .filter(|e| !e.is_empty())
                .map(|e| traces_url(&e).map_err(|m| ctx.error("telemetry.otlp_endpoint", m)))
                .transpose()?
        }
    };
    let service_name = match &raw.service_name {
        None => DEFAULT_SERVICE_NAME.to_owned(),
        Some(n) => {
            let n = ctx.expand("telemetry.service_name", n)?;
            if n.trim().is_empty() {
                return Err(ctx.error("telemetry.service_name", "must not be empty"));
            }
            n
        }
    };
    Ok(TelemetrySettings {
        traces_url,
        service_name,
    })
}

/// The collector's base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT` takes it, to
/// its traces URL; a URL already naming `/v1/traces` is kept.
fn traces_url(endpoint: &str) -> Result<String, String> {
    let url = url::Url::parse(endpoint)
        .map_err(|e| format!("expected an http:// or https:// URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err("expected an http:// or https:// URL (OTLP over HTTP)".into());
    }
    let base = endpoint.trim_end_matches('/');
    Ok(if base.ends_with(TRACES_PATH) {
        base.to_owned()
    } else {
        format!("{base}{TRACES_PATH}")
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::toml;
    use super::*;

    #[test]
    fn both_are_off_without_their_tables() {
        let s = toml("").expect("valid");
        assert_eq!(s.metrics, MetricsSettings::Off);
        assert_eq!(s.telemetry.traces_url, None);
        assert_eq!(s.telemetry.service_name, "mcpyard");
    }

    #[test]
    fn metrics_go_with_mcp_or_to_their_own_address() {
        let s = toml("[metrics]\nenabled = true\n").expect("valid");
        assert_eq!(s.metrics, MetricsSettings::WithMcp);
        assert!(s.http.metrics_route);
        let s = toml("[metrics]\nlisten = \"127.0.0.1:9464\"\n").expect("valid");
        assert_eq!(
            s.metrics,
            MetricsSettings::Apart("127.0.0.1:9464".parse().unwrap())
        );
        let s = toml("[metrics]\nenabled = false\nlisten = \"127.0.0.1:9464\"\n").expect("valid");
        assert_eq!(s.metrics, MetricsSettings::Off);
        assert!(!s.http.metrics_route);
        let e = toml("[metrics]\nlisten = \"nowhere\"\n").expect_err("bad address");
        assert!(e.to_string().contains("metrics.listen"), "{e}");
        let s = toml("[metrics]\nenabled = true\ntoken = \"${TOKEN}\"\n").expect("valid");
        assert_eq!(s.http.metrics_token.as_deref(), Some("tok-123"));
        assert!(
            s.warnings.iter().all(|w| !w.contains("metrics.token")),
            "{:?}",
            s.warnings
        );
        let s = toml("[metrics]\nenabled = true\ntoken = \"in-clear\"\n").expect("valid");
        assert!(
            s.warnings.iter().any(|w| w.contains("metrics.token")),
            "{:?}",
            s.warnings
        );
        let e = toml("[metrics]\ntoken = \"\"\n").expect_err("empty");
        assert!(e.to_string().contains("metrics.token"), "{e}");
        let e = toml("[metrics]\nport = 1\n").expect_err("unknown key");
        assert!(e.to_string().contains("port"), "{e}");
    }

    #[test]
    fn the_otlp_endpoint_is_a_base_url_as_the_otel_variable_takes_it() {
        let s = toml("[telemetry]\notlp_endpoint = \"http://127.0.0.1:4318/\"\n").expect("valid");
        assert_eq!(
            s.telemetry.traces_url.as_deref(),
            Some("http://127.0.0.1:4318/v1/traces")
        );
        let s = toml("[telemetry]\notlp_endpoint = \"https://otel.example/v1/traces\"\nservice_name = \"edge\"\n")
            .expect("valid");
        assert_eq!(
            s.telemetry.traces_url.as_deref(),
            Some("https://otel.example/v1/traces")
        );
        assert_eq!(s.telemetry.service_name, "edge");
        let e = toml("[telemetry]\notlp_endpoint = \"grpc://x:4317\"\n").expect_err("scheme");
        assert!(e.to_string().contains("telemetry.otlp_endpoint"), "{e}");
    }
}
