//! The client side of the official MCP conformance suite
//! (`conformance client --command ...`), built on this crate.
//!
//! The suite starts a scenario's servers (a mock authorization server among
//! them), then runs this program with the server URL as its last argument,
//! the scenario's name in `MCP_CONFORMANCE_SCENARIO` and, where it needs
//! credentials, JSON in `MCP_CONFORMANCE_CONTEXT`. The program connects,
//! lists the tools and calls each one the scenario offers, authorizing as
//! the server asks; the suite judges what it saw.
//!
//! ```text
//! conformance client --scenario auth/metadata-default \
//!   --command "target/debug/examples/conformance_client"
//! ```
//!
//! Exits 0 when every call succeeded or was answered with a JSON-RPC error,
//! 1 (with the error on stderr) otherwise. `CONFORMANCE_ERA=auto` connects
//! with [`EraPolicy::Auto`] (server/discover first) instead of the library's
//! default policy (the handshake first).
//! `RUST_LOG` sets what is logged to stderr (the suite keeps it).

use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcpyard_client::oauth::{
    Authorizer, ClientAuthMethod, Grant, MemoryTokenStore, OAuthClient, OAuthConfig, OAuthError,
    PrivateKeyJwt, Secret, TokenKey,
};
use mcpyard_client::{
    ClientError, ClientHandler, ConnectOptions, EraPolicy, McpClient, RequestOptions, TransportSpec,
};
use mcpyard_proto::{methods, ErrorObject, RequestId};
use serde_json::{json, Map, Value};

/// The client ID metadata document URL the suite's CIMD scenario expects.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";
/// Never listened on: the authorizer below reads the redirect itself.
const REDIRECT_URI: &str = "http://127.0.0.1:3333/callback";
const CALL_TIMEOUT: Duration = Duration::from_secs(20);

#[tokio::main]
async fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    if let Err(e) = run().await {
        eprintln!("conformance client: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), Box<dyn Error>> {
    let url = std::env::args()
        .next_back()
        .filter(|a| a.starts_with("http"))
        .ok_or("usage: conformance_client URL (the suite passes the server URL last)")?;
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context: Value = match std::env::var("MCP_CONFORMANCE_CONTEXT") {
        Ok(text) => serde_json::from_str(&text)?,
        Err(_) => json!({}),
    };
    let mut options = ConnectOptions {
        client_name: "mcpyard-conformance-client".into(),
        capabilities: json!({"elicitation": {}}),
        connect_timeout: CALL_TIMEOUT,
        ..ConnectOptions::default()
    };
    // The library's default era policy unless told otherwise (`auto`:
    // server/discover first).
    if std::env::var("CONFORMANCE_ERA").as_deref() == Ok("auto") {
        options.era = EraPolicy::Auto;
    }
    if scenario.starts_with("auth/") {
        let oauth = OAuthClient::new(
            &url,
            TokenKey::upstream("conformance"),
            oauth_config(&scenario, &context)?,
            Arc::new(MemoryTokenStore::new()),
        )?
        .with_authorizer(Arc::new(FollowRedirect::new()?));
        options.http_auth = Some(Arc::new(oauth));
    }
    let spec = TransportSpec::StreamableHttp {
        url,
        headers: vec![],
    };
    let client = McpClient::connect(spec, Arc::new(Defaults), options).await?;
    let outcome = exercise(&client, &context).await;
    client.shutdown().await;
    outcome
}

/// Lists the tools and calls each: with the arguments the scenario's
/// context gives (`toolCalls`), else with arguments made from the tool's
/// input schema. A call the server answers with a JSON-RPC error is
/// reported and the next one made; any other failure ends the run.
async fn exercise(client: &McpClient, context: &Value) -> Result<(), Box<dyn Error>> {
    let tools = client.list_all(methods::TOOLS_LIST, "tools").await?;
    let given: Vec<(String, Value)> = context["toolCalls"]
        .as_array()
        .map(|calls| {
            calls
                .iter()
                .filter_map(|c| Some((c["name"].as_str()?.to_owned(), c["arguments"].clone())))
                .collect()
        })
        .unwrap_or_default();
    for tool in &tools {
        let name = tool["name"].as_str().unwrap_or_default().to_owned();
        let arguments = match given.iter().find(|(n, _)| *n == name) {
            Some((_, arguments)) => arguments.clone(),
            None if name == ECHO_TOOL => {
                // The schema-preservation scenario's echo tool wants its
                // focal tool's input schema back, exactly as it came (a
                // gateway in between may list tools of its own too).
                let other = tools
                    .iter()
                    .find(|t| t["name"] == FOCAL_TOOL)
                    .or_else(|| tools.iter().find(|t| t["name"] != ECHO_TOOL));
                json!({"schema": other.map_or(json!({}), |t| t["inputSchema"].clone())})
            }
            None => arguments_for(&tool["inputSchema"]),
        };
        let options = RequestOptions {
            timeout: Some(CALL_TIMEOUT),
            ..RequestOptions::default()
        };
        let called = client
            .request(
                methods::TOOLS_CALL,
                Some(json!({"name": name, "arguments": arguments})),
                options,
            )
            .await;
        match called {
            Ok(result) => println!("{name}: {result}"),
            Err(ClientError::Rpc(e)) => println!("{name}: the server refused the call: {e}"),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// The tool of the suite's schema-preservation scenario that echoes a schema,
/// and the tool whose schema it wants.
const ECHO_TOOL: &str = "json_schema_echo";
const FOCAL_TOOL: &str = "json_schema_2020_12_tool";

/// Arguments for a tool from its input schema: each required property gets
/// its `default`, its first `enum` value, or a value of its type. A `$ref`
/// is followed only within the schema (`#/...`), never fetched.
fn arguments_for(schema: &Value) -> Value {
    let mut arguments = Map::new();
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(props) = schema["properties"].as_object() {
        for (name, prop) in props {
            if required.contains(&name.as_str()) {
                arguments.insert(name.clone(), value_for(schema, prop, 0));
            }
        }
    }
    Value::Object(arguments)
}

fn value_for(root: &Value, schema: &Value, depth: usize) -> Value {
    if depth > 8 {
        return Value::Null;
    }
    if let Some(target) = schema["$ref"].as_str() {
        return match target.strip_prefix('#') {
            Some(pointer) => root
                .pointer(pointer)
                .map_or(Value::Null, |s| value_for(root, s, depth + 1)),
            None => json!({}),
        };
    }
    if let Some(default) = schema.get("default") {
        return default.clone();
    }
    if let Some(first) = schema["enum"].as_array().and_then(|e| e.first()) {
        return first.clone();
    }
    let kind = match &schema["type"] {
        Value::Array(kinds) => kinds.iter().find(|k| *k != "null").cloned(),
        other => Some(other.clone()),
    };
    match kind.as_ref().and_then(Value::as_str) {
        Some("string") => json!("test"),
        Some("integer" | "number") => json!(1),
        Some("boolean") => json!(true),
        Some("array") => json!([]),
        Some("object") => arguments_for(schema),
        _ => Value::Null,
    }
}

/// The OAuth settings a scenario calls for, from its context.
fn oauth_config(scenario: &str, context: &Value) -> Result<OAuthConfig, Box<dyn Error>> {
    let text = |key: &str| context.get(key).and_then(Value::as_str).map(str::to_owned);
    let mut config = OAuthConfig {
        grant: Grant::AuthorizationCode {
            redirect_uri: REDIRECT_URI.into(),
        },
        client_id: text("client_id"),
        client_secret: text("client_secret").map(Secret::from),
        client_metadata_url: Some(CLIENT_METADATA_URL.into()),
        client_name: "mcpyard-conformance-client".into(),
        ..OAuthConfig::default()
    };
    if let Some(pem) = text("private_key_pem") {
        config.grant = Grant::ClientCredentials;
        config.auth_method = Some(ClientAuthMethod::PrivateKeyJwt);
        config.private_key = Some(PrivateKeyJwt {
            pem: Secret::new(pem),
            algorithm: text("signing_algorithm").unwrap_or_else(|| "ES256".into()),
            key_id: None,
        });
    } else if let Some(id_token) = text("idp_id_token") {
        config.grant = Grant::IdentityAssertion {
            idp_token_endpoint: text("idp_token_endpoint").ok_or("no idp_token_endpoint")?,
            idp_client_id: text("idp_client_id").ok_or("no idp_client_id")?,
            idp_client_secret: None,
            id_token: Secret::new(id_token),
        };
    } else if let Some(jwt) = text("valid_jwt") {
        // Workload identity: the platform's JWT is the grant.
        config.grant = Grant::JwtBearer {
            assertion: Secret::new(jwt),
        };
    } else if scenario.contains("client-credentials") {
        config.grant = Grant::ClientCredentials;
    }
    Ok(config)
}

/// Stands in for the person at the browser: the suite's authorization
/// server redirects at once, so the redirect is read, not followed.
#[derive(Debug)]
struct FollowRedirect {
    http: reqwest::Client,
}

impl FollowRedirect {
    fn new() -> Result<Self, Box<dyn Error>> {
        Ok(Self {
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .timeout(CALL_TIMEOUT)
                .build()?,
        })
    }
}

#[async_trait]
impl Authorizer for FollowRedirect {
    async fn authorize(&self, authorization_url: &str) -> Result<String, OAuthError> {
        let resp = self
            .http
            .get(authorization_url)
            .send()
            .await
            .map_err(|e| OAuthError::Http(e.without_url().to_string()))?;
        resp.headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .ok_or_else(|| {
                OAuthError::Redirect(format!(
                    "the authorization endpoint answered {} without a redirect",
                    resp.status()
                ))
            })
    }
}

/// Accepts every elicitation with the defaults of its schema (SEP-1034).
#[derive(Debug)]
struct Defaults;

#[async_trait]
impl ClientHandler for Defaults {
    async fn on_request(
        &self,
        method: &str,
        params: Option<Value>,
        _related: Option<RequestId>,
    ) -> Result<Value, ErrorObject> {
        match method {
            methods::PING => Ok(json!({})),
            "elicitation/create" => {
                let params = params.unwrap_or_default();
                let mut content = Map::new();
                if let Some(props) = params["requestedSchema"]["properties"].as_object() {
                    for (name, schema) in props {
                        if let Some(default) = schema.get("default") {
                            content.insert(name.clone(), default.clone());
                        }
                    }
                }
                Ok(json!({"action": "accept", "content": content}))
            }
            other => Err(ErrorObject::method_not_found(other)),
        }
    }

    async fn on_notification(&self, _: &str, _: Option<Value>, _: Option<RequestId>) {}
}
