//! What every example does once connected, so that the examples differ only
//! in how they reach the server.

use std::error::Error;
use std::time::Duration;

use mcpyard_client::{ConnectOptions, McpClient, RequestOptions, TransportSpec};
use serde_json::{json, Value};

/// A tool to call and its arguments, as given on the command line.
pub(crate) struct ToolCall {
    pub(crate) name: String,
    pub(crate) arguments: Value,
}

impl ToolCall {
    /// Reads `TOOL [JSON]` (no JSON: no arguments).
    pub(crate) fn parse(name: String, arguments: Option<String>) -> Result<Self, Box<dyn Error>> {
        let arguments = match arguments {
            Some(text) => serde_json::from_str(&text)
                .map_err(|e| format!("the tool arguments are not JSON: {e}"))?,
            None => json!({}),
        };
        Ok(Self { name, arguments })
    }
}

/// Connects, prints the server's name and version and its tools, calls
/// `call` if given, prints its result and closes the connection.
pub(crate) async fn run(spec: TransportSpec, call: Option<ToolCall>) -> Result<(), Box<dyn Error>> {
    let options = ConnectOptions {
        client_name: "mcpyard-client-example".into(),
        connect_timeout: Duration::from_secs(30),
        ..ConnectOptions::default()
    };
    let client = McpClient::builder(spec)
        .options(options)
        // Every request waits at most this long unless it says otherwise.
        .request_timeout(Duration::from_secs(60))
        .connect()
        .await?;
    // Shut down on every path, so a stdio child never outlives the example.
    let outcome = talk(&client, call).await;
    client.shutdown().await;
    outcome
}

async fn talk(client: &McpClient, call: Option<ToolCall>) -> Result<(), Box<dyn Error>> {
    let info = &client.initialize_result()["serverInfo"];
    println!(
        "server: {} {} (protocol {})",
        info["name"].as_str().unwrap_or("?"),
        info["version"].as_str().unwrap_or("?"),
        client.protocol_version()
    );

    let tools = client.list_tools().await?;
    println!("{} tools:", tools.len());
    for tool in &tools {
        println!(
            "  {}: {}",
            tool["name"].as_str().unwrap_or("?"),
            tool["description"].as_str().unwrap_or("")
        );
    }

    if let Some(call) = call {
        // Progress the tool reports is printed as it comes.
        let options = RequestOptions::default().with_progress(|p| match p.total {
            Some(total) => eprintln!("progress: {}/{total}", p.progress),
            None => eprintln!("progress: {}", p.progress),
        });
        let result = client
            .call_tool(&call.name, call.arguments, options)
            .await?;
        println!("{} returned:", call.name);
        println!("{}", serde_json::to_string_pretty(&result)?);
    }
    Ok(())
}
