//! Connects to an OAuth-protected MCP server over Streamable HTTP, lists its
//! tools and calls one. Discovery, registration and the grant follow the
//! MCP authorization spec; nothing but the server URL is required.
//!
//! ```text
//! cargo run -p mcpyard-client --features oauth --example oauth -- [--client-credentials] [--open CMD] [TOOL [JSON]] URL
//! ```
//!
//! (The URL is the argument that starts with `http`, wherever it is.)
//!
//! Without `--client-credentials` a person logs in (authorization code +
//! PKCE): the login URL is printed (and opened with `--open CMD`, e.g.
//! `--open xdg-open`), and the browser comes back to a loopback port this
//! program listens on. With it, the client's own credentials are used.
//! `OAUTH_CLIENT_ID` / `OAUTH_CLIENT_SECRET` give a pre-registered client
//! (else the server must offer dynamic registration), `OAUTH_SCOPES`
//! overrides the scopes.

use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcpyard_client::oauth::{
    Authorizer, Grant, MemoryTokenStore, OAuthClient, OAuthConfig, OAuthError, Secret, TokenKey,
};
use mcpyard_client::{ConnectOptions, McpClient, NoopHandler, RequestOptions, TransportSpec};
use mcpyard_proto::methods;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const LOGIN_TIMEOUT: Duration = Duration::from_secs(300);

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let mut url = None;
    let mut client_credentials = false;
    let mut open = None;
    let mut rest = Vec::new();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--client-credentials" => client_credentials = true,
            "--open" => open = Some(args.next().ok_or("--open needs a command")?),
            _ if url.is_none() && arg.starts_with("http") => url = Some(arg),
            _ => rest.push(arg),
        }
    }
    let url = url.ok_or("usage: oauth [--client-credentials] [--open CMD] [TOOL [JSON]] URL")?;
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());

    let mut config = OAuthConfig {
        client_id: env("OAUTH_CLIENT_ID"),
        client_secret: env("OAUTH_CLIENT_SECRET").map(Secret::new),
        scopes: env("OAUTH_SCOPES").map(|s| s.split_whitespace().map(str::to_owned).collect()),
        client_name: "mcpyard-client oauth example".into(),
        ..OAuthConfig::default()
    };
    let store = Arc::new(MemoryTokenStore::new());
    let key = TokenKey::upstream("example");
    let oauth = if client_credentials {
        config.grant = Grant::ClientCredentials;
        OAuthClient::new(&url, key, config, store)?
    } else {
        // Any free loopback port: the redirect URI names it.
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        config.grant = Grant::AuthorizationCode {
            redirect_uri: format!("http://127.0.0.1:{port}/callback"),
        };
        let login = LoopbackLogin {
            listener,
            port,
            open,
        };
        OAuthClient::new(&url, key, config, store)?.with_authorizer(Arc::new(login))
    };

    let options = ConnectOptions {
        client_name: "mcpyard-client-example".into(),
        http_auth: Some(Arc::new(oauth)),
        ..ConnectOptions::default()
    };
    let spec = TransportSpec::StreamableHttp {
        url,
        headers: vec![],
    };
    let client = McpClient::connect(spec, Arc::new(NoopHandler), options).await?;
    let outcome = talk(&client, rest).await;
    client.shutdown().await;
    outcome
}

async fn talk(client: &McpClient, rest: Vec<String>) -> Result<(), Box<dyn Error>> {
    let info = &client.initialize_result()["serverInfo"];
    println!("server: {}", info["name"].as_str().unwrap_or("?"));
    let tools = client.list_all(methods::TOOLS_LIST, "tools").await?;
    println!("{} tools", tools.len());
    for tool in &tools {
        println!("  {}", tool["name"].as_str().unwrap_or("?"));
    }
    let mut rest = rest.into_iter();
    if let Some(name) = rest.next() {
        let arguments: Value = match rest.next() {
            Some(text) => serde_json::from_str(&text)?,
            None => json!({}),
        };
        let result = client
            .request(
                methods::TOOLS_CALL,
                Some(json!({"name": name, "arguments": arguments})),
                RequestOptions::default(),
            )
            .await?;
        println!("{name}: {result}");
    }
    Ok(())
}

/// Prints (and opens) the login URL, then waits for the browser's redirect
/// to the loopback port and hands it back to the library, which checks its
/// `state` and `iss` and exchanges the code.
#[derive(Debug)]
struct LoopbackLogin {
    listener: TcpListener,
    port: u16,
    open: Option<String>,
}

#[async_trait]
impl Authorizer for LoopbackLogin {
    async fn authorize(&self, authorization_url: &str) -> Result<String, OAuthError> {
        eprintln!("log in at: {authorization_url}");
        let mut opener = None;
        if let Some(cmd) = &self.open {
            let mut words = cmd.split_whitespace();
            let program = words.next().unwrap_or_default();
            opener = tokio::process::Command::new(program)
                .args(words)
                .arg(authorization_url)
                .kill_on_drop(true)
                .spawn()
                .map_err(|e| eprintln!("cannot run {program}: {e}"))
                .ok();
        }
        let target = tokio::time::timeout(LOGIN_TIMEOUT, self.receive())
            .await
            .map_err(|_| OAuthError::Redirect("no redirect within 5 minutes".into()))??;
        if let Some(mut child) = opener {
            let _ = child.wait().await;
        }
        Ok(format!("http://127.0.0.1:{}{target}", self.port))
    }
}

impl LoopbackLogin {
    /// The path and query of the first `GET /callback?...` that arrives.
    async fn receive(&self) -> Result<String, OAuthError> {
        loop {
            let (mut stream, _) = self
                .listener
                .accept()
                .await
                .map_err(|e| OAuthError::Redirect(format!("loopback listener: {e}")))?;
            let mut head = vec![0u8; 8192];
            let n = stream.read(&mut head).await.unwrap_or(0);
            let head = String::from_utf8_lossy(&head[..n]).into_owned();
            let target = head
                .strip_prefix("GET ")
                .and_then(|r| r.split(' ').next())
                .filter(|t| t.starts_with("/callback?"))
                .map(str::to_owned);
            let (status, text) = match &target {
                Some(_) => ("200 OK", "Logged in; you can close this window."),
                None => ("404 Not Found", "Not the login redirect."),
            };
            let reply = format!(
                "HTTP/1.1 {status}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
            let _ = stream.write_all(reply.as_bytes()).await;
            if let Some(target) = target {
                return Ok(target);
            }
        }
    }
}
