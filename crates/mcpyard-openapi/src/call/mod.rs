//! Calling an operation: arguments validated (`validate.rs`), credentials
//! chosen (`auth.rs`), the request built (`request.rs`, file arguments in
//! `files.rs`) and sent, and the answer turned into one envelope
//! (`answer.rs`, streams of events in `events.rs`); WebSocket routes are a
//! bounded exchange (`websocket.rs`). Every failure is an `isError` result
//! whose text holds no credential.

mod answer;
mod auth;
mod caller;
mod encode;
mod error;
mod events;
mod files;
mod request;
mod validate;
mod websocket;

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcpyard_gateway::{CallContext, Sandbox, SandboxKeys};
use serde_json::{json, Map, Value};

use crate::{ApiConfig, ApiDocument, BodyShape, Operation};

pub use auth::credential_report;
pub(crate) use auth::unplaced;
pub(crate) use caller::Caller;
pub(crate) use error::CallError;
use request::{Body, MultipartField};

/// How long the status's reachability probe waits for an answer.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

impl Caller {
    /// Takes the document: a WebSocket operation's input schema gains the
    /// exchange's own arguments.
    pub(crate) fn new(config: Arc<ApiConfig>, mut doc: ApiDocument) -> Self {
        for op in doc.operations.iter_mut().filter(|op| op.websocket) {
            websocket::add_arguments(&mut op.input_schema);
        }
        let doc = Arc::new(doc);
        let client = reqwest::Client::builder()
            .timeout(config.timeout)
            .connect_timeout(Duration::from_secs(10).min(config.timeout))
            // The API's own redirects are followed only on its host: a
            // credential must not travel to another one.
            .redirect(reqwest::redirect::Policy::custom(|attempt| {
                let same = attempt.previous().first().is_some_and(|f| {
                    f.host_str() == attempt.url().host_str() && f.port() == attempt.url().port()
                });
                if same && attempt.previous().len() <= 5 {
                    attempt.follow()
                } else {
                    attempt.stop()
                }
            }))
            .build()
            .unwrap_or_default();
        let sandbox = Sandbox::new(
            config.input_roots.clone(),
            config.output_dir.clone(),
            files::MAX_FILE_BYTES,
        )
        .with_keys(SandboxKeys {
            input_roots: "input_roots".into(),
            output_dir: "output_dir".into(),
            max_input_bytes: "the limit on file arguments".into(),
        });
        let headers: Vec<(String, String)> = config
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let secrets = auth::secret_forms(&config.auth, &headers);
        let checks = doc
            .operations
            .iter()
            .map(|_| validate::InputCheck::default())
            .collect();
        Self {
            config,
            doc,
            client,
            fetcher: files::fetcher(),
            sandbox,
            checks,
            secrets,
        }
    }

    fn api(&self) -> &str {
        &self.config.name
    }

    /// Replaces every configured secret in `text`.
    pub(crate) fn scrub(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for s in &self.secrets {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), "[redacted]");
            }
        }
        out
    }

    pub(crate) fn scrub_value(&self, value: &mut Value) {
        match value {
            Value::String(s) if self.secrets.iter().any(|x| s.contains(x.as_str())) => {
                *s = self.scrub(s);
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.scrub_value(v)),
            Value::Object(map) => map.values_mut().for_each(|v| self.scrub_value(v)),
            _ => {}
        }
    }

    /// Serves one `tools/call` of operation `index`: always a
    /// `CallToolResult`, never an error.
    pub(crate) async fn call(&self, index: usize, arguments: Value, ctx: &CallContext) -> Value {
        let op = &self.doc.operations[index];
        let started = Instant::now();
        let outcome = tokio::select! {
            r = self.call_inner(index, op, arguments, ctx, started) => r,
            _ = ctx.cancel.cancelled() => Err(CallError::Cancelled),
            _ = deadline(ctx) => Err(CallError::TimedOut {
                api: self.api().to_owned(),
                after: started.elapsed(),
            }),
        };
        let mut result = match outcome {
            Ok(result) => result,
            Err(e) => {
                tracing::info!(api = self.api(), operation = %op.name, error = %self.scrub(&e.to_string()), "API call failed");
                json!({"content": [{"type": "text", "text": e.to_string()}], "isError": true})
            }
        };
        self.scrub_value(&mut result);
        result
    }

    async fn call_inner(
        &self,
        index: usize,
        op: &Operation,
        arguments: Value,
        ctx: &CallContext,
        started: Instant,
    ) -> Result<Value, CallError> {
        let arguments = body_parameter_unwrapped(op, arguments);
        let errors = self.checks[index].errors(&op.name, &op.input_schema, &arguments);
        if !errors.is_empty() {
            return Err(CallError::InvalidArguments {
                operation: op.name.clone(),
                errors,
                schema: op.input_schema.to_string(),
            });
        }
        let args: Map<String, Value> = match arguments {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        let credentials = auth::credentials(self.api(), op, &self.doc, &self.config.auth)?;
        let base = self.base_url(op)?;
        let prepared = request::prepare(self, op, &base, &args, &credentials).await?;
        if op.websocket {
            return websocket::exchange(self, op, prepared, &args, started).await;
        }
        let response = self.send(op, prepared).await?;
        answer::read(self, op, response, ctx, started).await
    }

    /// The configured base URL, else the operation's servers, else the
    /// document's; a relative one is resolved against the document's URL.
    fn base_url(&self, op: &Operation) -> Result<String, CallError> {
        self.base_url_from(&op.servers)
    }

    /// The base URL of an operation with these `servers` (none: the API's).
    fn base_url_from(&self, servers: &[String]) -> Result<String, CallError> {
        let chosen = self
            .config
            .base_url
            .clone()
            .or_else(|| servers.first().cloned())
            .or_else(|| self.doc.servers.first().cloned());
        let origin = url::Url::parse(&self.doc.origin)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https"));
        let no_base = |why: String| CallError::NoBaseUrl {
            api: self.api().to_owned(),
            why,
        };
        match (chosen, origin) {
            (Some(s), _) if url::Url::parse(&s).is_ok() => Ok(s),
            (Some(s), Some(origin)) => origin
                .join(&s)
                .map(|u| u.to_string())
                .map_err(|e| no_base(format!("the server `{s}` is not a URL ({e})"))),
            // OpenAPI's default server is `/`: the document's own host.
            (None, Some(origin)) => Ok(origin
                .join("/")
                .map_or_else(|_| origin.to_string(), |u| u.to_string())),
            (Some(s), None) => Err(no_base(format!(
                "the document's server `{s}` is relative and the document was read from a file"
            ))),
            (None, None) => Err(no_base("the document names no server".to_owned())),
        }
    }

    async fn send(
        &self,
        op: &Operation,
        prepared: request::Prepared,
    ) -> Result<reqwest::Response, CallError> {
        let mut builder = self.client.request(op.method.clone(), &prepared.url);
        for (name, value) in &prepared.headers {
            let header = reqwest::header::HeaderName::from_bytes(name.as_bytes());
            let value = reqwest::header::HeaderValue::from_str(value);
            match (header, value) {
                (Ok(h), Ok(v)) => builder = builder.header(h, v),
                _ => {
                    return Err(CallError::CannotSend(format!(
                        "the header `{name}` cannot be sent: its name or value holds characters a header cannot carry"
                    )))
                }
            }
        }
        builder = match prepared.body {
            Body::None => builder,
            Body::Bytes {
                content_type,
                bytes,
            } => builder
                .header(reqwest::header::CONTENT_TYPE, content_type)
                .body(bytes),
            Body::Multipart(fields) => {
                let mut form = reqwest::multipart::Form::new();
                for field in fields {
                    form = match field {
                        MultipartField::Text(name, value) => form.text(name, value),
                        MultipartField::Json(name, value) => form.part(
                            name,
                            reqwest::multipart::Part::text(value)
                                .mime_str("application/json")
                                .expect("application/json is a valid MIME type"),
                        ),
                        MultipartField::File(name, file) => {
                            let part = reqwest::multipart::Part::bytes(file.bytes)
                                .file_name(file.file_name);
                            // A part without a type would leave the API
                            // to guess (many refuse it): the generic one.
                            let mime = file
                                .mime_type
                                .as_deref()
                                .unwrap_or("application/octet-stream");
                            let part = part.mime_str(mime).map_err(|_| {
                                CallError::File(format!("`{name}` has an invalid MIME type"))
                            })?;
                            form.part(name, part)
                        }
                    };
                }
                builder.multipart(form)
            }
        };
        tracing::debug!(api = self.api(), operation = %op.name, method = %op.method, "API request");
        builder.send().await.map_err(|e| self.failure(&e))
    }

    /// Whether the API's base URL answers at all: any HTTP answer, even an
    /// error status, is a service there. No credential goes with it, and
    /// it waits at most [`PROBE_TIMEOUT`]. The error is worded for the
    /// status (no credential in it).
    pub(crate) async fn probe(&self) -> Result<(), String> {
        let mut base = self.base_url_from(&[]).map_err(|e| e.to_string())?;
        // A WebSocket API's server answers the HTTP request it upgrades.
        for (ws, http) in [("ws://", "http://"), ("wss://", "https://")] {
            if let Some(rest) = base.strip_prefix(ws) {
                base = format!("{http}{rest}");
            }
        }
        let timeout = PROBE_TIMEOUT.min(self.config.timeout);
        match self.client.get(&base).timeout(timeout).send().await {
            Ok(_) => Ok(()),
            Err(e) if e.is_timeout() => Err(self.scrub(&format!(
                "API `{}` did not answer at its base URL within {timeout:?} (is the service running? check [apis.{}] base_url)",
                self.api(),
                self.api()
            ))),
            Err(e) => Err(self.failure(&e).to_string()),
        }
    }

    /// A transport failure, named by kind, without the URL (its query may
    /// hold a key).
    pub(crate) fn failure(&self, e: &reqwest::Error) -> CallError {
        let what = if e.is_timeout() {
            format!(
                "the request timed out (the API's timeout is {:?}; raise [apis.{}] timeout if the operation is slow)",
                self.config.timeout,
                self.api()
            )
        } else if e.is_connect() {
            let host = e
                .url()
                .and_then(|u| {
                    u.host_str()
                        .map(|h| format!("{h}:{}", u.port_or_known_default().unwrap_or(0)))
                })
                .unwrap_or_default();
            format!(
                "cannot connect to {host} (is the service running? check [apis.{}] base_url)",
                self.api()
            )
        } else if e.is_redirect() {
            "too many redirects".to_owned()
        } else if e.is_body() || e.is_decode() {
            "the answer broke off while it was read".to_owned()
        } else {
            let mut source: Option<&dyn std::error::Error> = std::error::Error::source(e);
            let mut detail = String::new();
            while let Some(s) = source {
                detail = s.to_string();
                source = s.source();
            }
            format!("the request failed ({detail})")
        };
        CallError::Failed {
            api: self.api().to_owned(),
            what: self.scrub(&what),
        }
    }
}

/// Arguments whose body came wrapped under the Swagger body parameter's
/// name (`{"request": {...}}`), as the tool takes them: the fields spread,
/// or a whole body under its argument. Anything else as it came.
fn body_parameter_unwrapped(op: &Operation, arguments: Value) -> Value {
    let Some(body) = &op.body else {
        return arguments;
    };
    let Some(wrapper) = body.parameter.as_deref() else {
        return arguments;
    };
    match &body.shape {
        BodyShape::Fields(_) => {
            mcpyard_gateway::spread_wrapped_arguments(&arguments, wrapper, &op.input_schema)
                .unwrap_or(arguments)
        }
        BodyShape::Whole(argument) => {
            let mut arguments = arguments;
            let takes_wrapper = op
                .input_schema
                .pointer("/properties")
                .and_then(|p| p.get(wrapper))
                .is_some();
            if let Value::Object(map) = &mut arguments {
                if !takes_wrapper && !map.contains_key(argument) {
                    if let Some(whole) = map.remove(wrapper) {
                        map.insert(argument.clone(), whole);
                    }
                }
            }
            arguments
        }
    }
}

async fn deadline(ctx: &CallContext) {
    match ctx.deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
