//! `mcpyard list`: the tools of a running gateway or of one configured
//! server.

use std::process::ExitCode;

use anyhow::Context as _;
use mcpyard_proto::methods;
use serde_json::Value;

use super::target;
use crate::cli::ListArgs;

pub(super) async fn run(args: ListArgs) -> anyhow::Result<ExitCode> {
    let connected = target::connect(&args.target, None).await?;
    let tools = connected
        .run(|client, timeout| async move {
            tokio::time::timeout(timeout, client.list_all(methods::TOOLS_LIST, "tools"))
                .await
                .map_err(|_| anyhow::anyhow!("tools/list: no answer within {timeout:?}"))?
                .context("tools/list failed")
        })
        .await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&Value::Array(tools))?);
    } else {
        print!("{}", render(&tools));
    }
    Ok(ExitCode::SUCCESS)
}

/// One entry per tool: its signature (`name(arg: type, opt?: type)`), then
/// the first line of its description, indented.
pub(super) fn render(tools: &[Value]) -> String {
    if tools.is_empty() {
        return "no tools\n".to_owned();
    }
    let mut out = String::new();
    for tool in tools {
        let name = tool
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("<unnamed>");
        out += &format!("{name}({})\n", signature(tool.get("inputSchema")));
        let description = tool
            .get("description")
            .and_then(Value::as_str)
            .and_then(|d| d.lines().map(str::trim).find(|l| !l.is_empty()));
        if let Some(d) = description {
            out += &format!("    {d}\n");
        }
    }
    out
}

/// `a: number, b?: string` from a JSON Schema's properties and required.
fn signature(schema: Option<&Value>) -> String {
    let Some(props) = schema
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
    else {
        return String::new();
    };
    let required: Vec<&str> = schema
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    props
        .iter()
        .map(|(name, p)| {
            let optional = if required.contains(&name.as_str()) {
                ""
            } else {
                "?"
            };
            let ty = match p.get("type") {
                Some(Value::String(t)) => t.clone(),
                Some(Value::Array(ts)) => ts
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join("|"),
                _ => "any".to_owned(),
            };
            format!("{name}{optional}: {ty}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tools_render_as_signatures_with_descriptions() {
        let tools = [
            json!({"name": "get-sum", "description": "Returns the sum.\nMore.",
                   "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                                   "required": ["a", "b"]}}),
            json!({"name": "echo", "inputSchema": {"type": "object", "properties": {"message": {"type": ["string", "null"]}, "x": {}}}}),
            json!({"name": "noargs", "inputSchema": {"type": "object"}}),
        ];
        assert_eq!(
            render(&tools),
            "get-sum(a: number, b: number)\n    Returns the sum.\necho(message?: string|null, x?: any)\nnoargs()\n"
        );
        assert_eq!(render(&[]), "no tools\n");
    }
}
