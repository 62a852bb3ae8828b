//! Logs go to stderr, always: in stdio mode stdout carries the protocol.
//! When `[telemetry]` names an OTLP endpoint, the gateway's request and call
//! spans are exported there as well.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use tracing::Level;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, Registry};

use crate::config::TelemetrySettings;

/// How each log line is written on stderr.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormat {
    /// One line of text per event, for a person.
    #[default]
    Text,
    /// One JSON object per event (time, level, target, fields, spans), for
    /// a log collector.
    Json,
}

/// The exporter of traces, to flush before the process exits.
#[derive(Debug, Default)]
pub(crate) struct Traces {
    provider: Option<SdkTracerProvider>,
}

impl Traces {
    /// Sends the spans still buffered and stops the exporter.
    pub(crate) async fn shutdown(self) {
        let Some(provider) = self.provider else {
            return;
        };
        // Blocks until the export thread has sent what it holds.
        let stopped = tokio::task::spawn_blocking(move || provider.shutdown()).await;
        if let Ok(Err(e)) = stopped {
            tracing::warn!(error = %e, "traces could not all be exported at shutdown");
        }
    }
}

/// Installs the global subscriber. The filter of the logs is, by
/// precedence: `--log-level`, then `RUST_LOG`, then `fallback` (the config's
/// `log_level`, or `warn` for the client commands). `telemetry` exports the
/// gateway's spans over OTLP when it names an endpoint; the log filter does
/// not apply to them.
pub(crate) fn init(
    cli_level: Option<&str>,
    format: LogFormat,
    fallback: &str,
    telemetry: Option<&TelemetrySettings>,
) -> anyhow::Result<Traces> {
    let filter = match cli_level {
        Some(level) => EnvFilter::try_new(level)
            .map_err(|e| anyhow::anyhow!("--log-level: not a log filter: {e}"))?,
        None => match std::env::var("RUST_LOG") {
            Ok(env) if !env.trim().is_empty() => EnvFilter::try_new(&env)
                .map_err(|e| anyhow::anyhow!("RUST_LOG: not a log filter: {e}"))?,
            _ => EnvFilter::try_new(fallback)
                .map_err(|e| anyhow::anyhow!("log_level: not a log filter: {e}"))?,
        },
    };
    let text = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false);
    let logs: Box<dyn Layer<Registry> + Send + Sync> = match format {
        LogFormat::Text => text.with_filter(filter).boxed(),
        LogFormat::Json => text.json().with_filter(filter).boxed(),
    };
    let provider = telemetry.map(exporter).transpose()?.flatten();
    let spans = provider.as_ref().map(|provider| {
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("mcpyard"))
            .with_filter(Targets::new().with_target(mcpyard_gateway::TRACE_TARGET, Level::TRACE))
    });
    tracing_subscriber::registry()
        .with(logs)
        .with(spans)
        .try_init()
        .map_err(|e| anyhow::anyhow!("cannot set up logging: {e}"))?;
    if let (Some(url), Some(_)) = (telemetry.and_then(|t| t.traces_url.as_deref()), &provider) {
        tracing::info!(%url, "exporting traces over OTLP/HTTP");
    }
    Ok(Traces { provider })
}

/// The OTLP/HTTP (protobuf) exporter behind a batching processor, when
/// traces are configured.
fn exporter(telemetry: &TelemetrySettings) -> anyhow::Result<Option<SdkTracerProvider>> {
    let Some(url) = &telemetry.traces_url else {
        return Ok(None);
    };
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(url)
        .build()
        .map_err(|e| anyhow::anyhow!("telemetry.otlp_endpoint: cannot set up the exporter: {e}"))?;
    let resource = Resource::builder()
        .with_service_name(telemetry.service_name.clone())
        .build();
    Ok(Some(
        SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build(),
    ))
}
