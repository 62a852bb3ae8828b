//! `mcpyard call`: call one tool and print what it returned.

use std::process::ExitCode;

use anyhow::Context as _;
use mcpyard_client::RequestOptions;
use mcpyard_proto::methods;
use serde_json::{json, Map, Value};

use super::{elicit, target};
use crate::cli::CallArgs;

pub(super) async fn run(args: CallArgs) -> anyhow::Result<ExitCode> {
    let arguments = build_arguments(args.json_args.as_deref(), &args.args)?;
    let connected = target::connect(&args.target, Some(elicit::TerminalForm::new())).await?;
    let tool = args.tool.clone();
    let result = connected
        .run(|client, timeout| async move {
            client
                .request(
                    methods::TOOLS_CALL,
                    Some(json!({"name": tool, "arguments": arguments})),
                    RequestOptions::default()
                        .with_timeout(timeout)
                        .with_progress(print_progress),
                )
                .await
                .with_context(|| format!("calling `{tool}` failed"))
        })
        .await?;
    let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
    if args.raw {
        println!("{}", serde_json::to_string_pretty(&result)?);
    } else {
        print!("{}", render(&result));
    }
    if is_error {
        eprintln!("error: the tool `{}` reported a failure", args.tool);
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// One line on stderr per progress report, as it comes (stdout is for the
/// result).
fn print_progress(p: mcpyard_client::Progress) {
    let mut line = match p.total {
        Some(total) => format!("progress {}/{}", p.progress, total),
        None => format!("progress {}", p.progress),
    };
    if let Some(message) = p.message.filter(|m| !m.is_empty()) {
        line.push_str(": ");
        line.push_str(&message);
    }
    eprintln!("{line}");
}

/// The `arguments` object: `--json` first, then each `--arg` on top.
fn build_arguments(json_args: Option<&str>, pairs: &[(String, String)]) -> anyhow::Result<Value> {
    let mut map = match json_args {
        None => Map::new(),
        Some(text) => match serde_json::from_str(text).context("--json: not valid JSON")? {
            Value::Object(m) => m,
            _ => anyhow::bail!("--json: expected a JSON object such as '{{\"message\": \"hi\"}}'"),
        },
    };
    for (key, raw) in pairs {
        // `--arg n=2` means the number 2; `--arg name=bob` the string "bob";
        // `--arg id='"2"'` the string "2".
        let value = serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.clone()));
        map.insert(key.clone(), value);
    }
    Ok(Value::Object(map))
}

/// The content blocks for a human: text as is, other blocks summarised;
/// structured content as JSON when there is no text.
fn render(result: &Value) -> String {
    let mut out = String::new();
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for block in blocks {
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
        let s = |k: &str| block.get(k).and_then(Value::as_str).unwrap_or("");
        let line = match kind {
            "text" => s("text").to_owned(),
            "image" | "audio" => format!(
                "[{kind}: {}, {} bytes]",
                s("mimeType"),
                base64_len(s("data"))
            ),
            "resource" => {
                let r = block.get("resource").cloned().unwrap_or_default();
                let uri = r.get("uri").and_then(Value::as_str).unwrap_or("");
                match r.get("text").and_then(Value::as_str) {
                    Some(text) => format!("[resource: {uri}]\n{text}"),
                    None => format!("[resource: {uri}, binary]"),
                }
            }
            "resource_link" => {
                format!("[link: {} {}", s("uri"), s("name"))
                    .trim_end()
                    .to_owned()
                    + "]"
            }
            other => format!("[{other} block]"),
        };
        out.push_str(&line);
        if !line.ends_with('\n') {
            out.push('\n');
        }
    }
    let has_text = blocks
        .iter()
        .any(|b| b.get("type").and_then(Value::as_str) == Some("text"));
    if let Some(structured) = result.get("structuredContent") {
        if !has_text {
            out += &serde_json::to_string_pretty(structured).unwrap_or_default();
            out.push('\n');
        }
    }
    out
}

/// Decoded size of base64 text, without decoding it.
fn base64_len(data: &str) -> usize {
    let trimmed = data.trim_end_matches('=');
    trimmed.len() * 3 / 4
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_merge_json_and_key_values() {
        let args = build_arguments(
            Some(r#"{"a": 1, "b": "x"}"#),
            &[
                ("b".into(), "2".into()),
                ("c".into(), "hello world".into()),
                ("d".into(), "true".into()),
                ("e".into(), r#""7""#.into()),
                ("f".into(), "[1,2]".into()),
            ],
        )
        .unwrap();
        assert_eq!(
            args,
            json!({"a": 1, "b": 2, "c": "hello world", "d": true, "e": "7", "f": [1, 2]})
        );
        assert_eq!(build_arguments(None, &[]).unwrap(), json!({}));
        assert!(build_arguments(Some("[1]"), &[]).is_err());
        assert!(build_arguments(Some("{"), &[]).is_err());
    }

    #[test]
    fn results_render_for_humans() {
        let result = json!({"content": [
            {"type": "text", "text": "Echo: hi"},
            {"type": "image", "mimeType": "image/png", "data": "AAAA"},
            {"type": "resource", "resource": {"uri": "test://a", "text": "body"}},
            {"type": "resource_link", "uri": "test://b", "name": "b"},
        ]});
        assert_eq!(
            render(&result),
            "Echo: hi\n[image: image/png, 3 bytes]\n[resource: test://a]\nbody\n[link: test://b b]\n"
        );
        let structured = json!({"content": [], "structuredContent": {"sum": 3}});
        assert_eq!(render(&structured), "{\n  \"sum\": 3\n}\n");
    }
}
