//! What the supervisor asks of a connected server: whether it is alive,
//! and its lists.

use std::time::Duration;

use mcpyard_client::{ClientError, McpClient, RequestOptions};
use serde_json::value::RawValue;

use crate::call::{ListItem, ListKind, SourceLists};

/// How long a health check's ping may take.
const HEALTH_CHECK_TIMEOUT: Duration = Duration::from_secs(20);

/// A ping (`server/discover` in the 2026-07-28 era); an error answer still
/// proves the server alive.
pub(super) async fn ping(client: &McpClient) -> Result<(), ClientError> {
    let options = RequestOptions {
        timeout: Some(HEALTH_CHECK_TIMEOUT),
        cancel: None,
        ..RequestOptions::default()
    };
    match client.check_alive(options).await {
        Ok(()) | Err(ClientError::Rpc(_)) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Fetches the given lists, keeping the others from `lists`. A list the
/// upstream does not offer (no capability, or an error answer) is empty; one
/// that could not be fetched (the connection failed) stays as it was, so a
/// server restarting in place does not lose its tools meanwhile.
pub(super) async fn fetch_lists(
    client: &McpClient,
    kinds: &[ListKind],
    mut lists: SourceLists,
) -> SourceLists {
    let caps = client
        .initialize_result()
        .get("capabilities")
        .cloned()
        .unwrap_or_default();
    for &kind in kinds {
        let capability = match kind {
            ListKind::Tools => "tools",
            ListKind::Resources | ListKind::ResourceTemplates => "resources",
            ListKind::Prompts => "prompts",
        };
        let items = if caps.get(capability).is_some() {
            let item = |text: &RawValue| ListItem::from_text(kind, text);
            match client
                .list_all_as(kind.list_method(), kind.key(), item)
                .await
            {
                Ok(items) => items,
                Err(e @ ClientError::Rpc(_)) => {
                    tracing::warn!(method = kind.list_method(), error = %e, "listing refused");
                    Vec::new()
                }
                Err(e) => {
                    tracing::warn!(method = kind.list_method(), error = %e, "listing failed; keeping the last one");
                    continue;
                }
            }
        } else {
            Vec::new()
        };
        lists.set_items(kind, items);
    }
    // Otherwise the gateway runs task-augmented calls itself for this server.
    lists.runs_tasks = caps.pointer("/tasks/requests/tools/call").is_some();
    lists
}
