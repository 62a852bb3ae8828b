//! The search tools: `list_tools` (the hidden tools, a page at a time),
//! `search_tools` (the best few for a goal, a name or a pattern) and
//! `call_tool` (a hidden tool, its arguments checked against its schema
//! before anything is sent, then through the router like a direct call).

use base64::Engine;
use serde_json::{json, Value};

use super::reply::{result, tool_error, PREFIX};
use crate::catalog::{IndexedTool, ToolIndex, View};

pub(crate) const LIST_TOOLS: &str = "list_tools";
pub(crate) const SEARCH_TOOLS: &str = "search_tools";
pub(crate) const CALL_TOOL: &str = "call_tool";
/// The three, unprefixed.
pub(crate) const NAMES: [&str; 3] = [LIST_TOOLS, SEARCH_TOOLS, CALL_TOOL];

/// Hits `search_tools` returns unless asked, and at most.
const DEFAULT_HITS: usize = 5;
const MAX_HITS: usize = 20;

/// The three as `tools/list` items (unprefixed names).
pub(crate) fn tools() -> Vec<Value> {
    vec![
        json!({
            "name": LIST_TOOLS,
            "title": "List hidden tools",
            "description": "Lists the tools that are available but not shown in your tool list: each one's name and what it does, grouped by source. Pass `cursor` from the previous answer for the next page. Use mcpyard__search_tools to get a tool's input schema, then mcpyard__call_tool to call it.",
            "inputSchema": {
                "type": "object",
                "properties": {"cursor": {"type": "string", "description": "`nextCursor` of the previous page."}},
                "additionalProperties": false,
            },
            "annotations": {"readOnlyHint": true, "openWorldHint": false},
        }),
        json!({
            "name": SEARCH_TOOLS,
            "title": "Search hidden tools",
            "description": "Finds tools that are available but not shown in your tool list. `query` is what you want to do in plain words (\"transcribe an audio file\"), an exact tool name, or a name pattern with `*` (\"localai__*image*\"). Returns the best matches with their name, source, description and full input schema; call one with mcpyard__call_tool.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "A goal in plain words, a tool name, or a pattern with `*` and `?`."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_HITS, "description": format!("How many tools to return (default {DEFAULT_HITS}, at most {MAX_HITS}).")},
                },
                "required": ["query"],
                "additionalProperties": false,
            },
            "annotations": {"readOnlyHint": true, "openWorldHint": false},
        }),
        json!({
            "name": CALL_TOOL,
            "title": "Call a hidden tool",
            "description": "Calls a tool found with mcpyard__search_tools or mcpyard__list_tools. `arguments` must match the tool's input schema: they are checked before the call, and each mistake is reported. Tools in your tool list are called directly, not through this.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The tool's full name, as search returned it."},
                    "tool_name": {"type": "string", "description": "Another spelling of `name` (LocalAiMCP's); give one of the two."},
                    "arguments": {"type": "object", "description": "The tool's arguments."},
                },
                "additionalProperties": false,
            },
            "annotations": {"openWorldHint": true},
        }),
    ]
}

/// `list_tools`: the hidden tools, by source, `page_size` at a time (the
/// gateway's page size, as for `tools/list`).
pub(crate) fn list_tools(index: &ToolIndex, page_size: usize, arguments: &Value) -> Value {
    let start = match arguments.get("cursor") {
        None | Some(Value::Null) => 0,
        Some(Value::String(c)) => match decode_cursor(c).filter(|o| *o <= index.len()) {
            Some(offset) => offset,
            None => return tool_error(format!("invalid cursor {c:?}: pass `nextCursor` from the previous answer, or no cursor for the first page")),
        },
        Some(_) => return tool_error("`cursor` must be a string"),
    };
    if index.is_empty() {
        return result(
            "No tool is hidden: every tool is in your tool list.".into(),
            Some(json!({"tools": [], "total": 0})),
        );
    }
    let end = (start + page_size.max(1)).min(index.len());
    let page = &index.tools()[start..end];
    let mut lines = vec![format!(
        "Hidden tools {}-{} of {} (call with mcpyard__call_tool; mcpyard__search_tools gives a tool's input schema):",
        start + 1,
        end,
        index.len()
    )];
    let mut current: Option<&str> = None;
    for tool in page {
        if current != Some(&*tool.source) {
            lines.push(format!("[{}]", tool.source));
            current = Some(&tool.source);
        }
        lines.push(format!("{}: {}", tool.name, one_line(&tool.summary())));
    }
    let mut structured = json!({
        "tools": page.iter().map(|t| json!({"name": &*t.name, "source": &*t.source, "description": one_line(&t.summary())})).collect::<Vec<_>>(),
        "total": index.len(),
    });
    if end < index.len() {
        let next = encode_cursor(end);
        lines.push(format!("More: call again with cursor \"{next}\"."));
        structured["nextCursor"] = json!(next);
    }
    result(lines.join("\n"), Some(structured))
}

/// `search_tools`: the best hits among the hidden tools.
pub(crate) fn search_tools(index: &ToolIndex, arguments: &Value) -> Value {
    let Some(query) = arguments.get("query").and_then(Value::as_str) else {
        return tool_error("`query` is required: what you want to do, a tool name, or a pattern");
    };
    let limit = match arguments.get("limit") {
        None | Some(Value::Null) => DEFAULT_HITS,
        Some(v) => match v.as_u64() {
            Some(n @ 1..) => (n as usize).min(MAX_HITS),
            _ => return tool_error(format!("`limit` must be an integer from 1 to {MAX_HITS}")),
        },
    };
    if index.is_empty() {
        return result(
            "No tool is hidden: every tool is in your tool list.".into(),
            Some(json!({"tools": []})),
        );
    }
    let hits: Vec<Value> = index
        .search(query, limit)
        .iter()
        .map(|h| hit(&index.tools()[h.index]))
        .collect();
    if hits.is_empty() {
        return result(
            format!("No hidden tool matches {query:?}. Try other words, or mcpyard__list_tools to see them all."),
            Some(json!({"tools": []})),
        );
    }
    let structured = json!({"tools": hits});
    result(structured.to_string(), Some(structured))
}

fn hit(tool: &IndexedTool) -> Value {
    let item = tool.tool.to_value();
    json!({
        "name": &*tool.name,
        "source": &*tool.source,
        "description": item.get("description").cloned().unwrap_or(Value::Null),
        "inputSchema": item.get("inputSchema").cloned().unwrap_or_else(|| json!({"type": "object"})),
    })
}

/// Why `call_tool` will not send a call, as a result the model can act on.
pub(crate) fn refusal(view: &View, name: &str) -> Value {
    if NAMES.iter().any(|n| name == format!("{}{n}", PREFIX)) {
        return tool_error(format!(
            "`{name}` cannot be called through mcpyard__call_tool; call it directly"
        ));
    }
    if view.tool(name).is_some() {
        return tool_error(format!(
            "`{name}` is in your tool list: call it directly as `{name}`, not through mcpyard__call_tool"
        ));
    }
    if view.unavailable(name).is_some() {
        return tool_error(format!(
            "`{name}` belongs to a source that is down at the moment; mcpyard__status shows which and why"
        ));
    }
    tool_error(format!(
        "No tool named `{name}`. Find the right name with mcpyard__search_tools (a goal in plain words or a pattern)."
    ))
}

/// The wrapper LocalAiMCP puts a tool's body fields in
/// (`{"request": {...}}`, after the Swagger body parameter of LocalAI's
/// document).
pub(crate) const REQUEST_WRAPPER: &str = "request";

/// Arguments a client sent wrapped under `wrapper` (`{"request": {...}}`,
/// as clients made from a Swagger document's body parameter send them),
/// spread into the top level, when the tool's schema has no argument of
/// that name. `None`: not wrapped so, or a wrapped field is also given
/// beside the wrapper.
pub fn spread_wrapped_arguments(arguments: &Value, wrapper: &str, schema: &Value) -> Option<Value> {
    let Value::Object(top) = arguments else {
        return None;
    };
    let Some(Value::Object(inner)) = top.get(wrapper) else {
        return None;
    };
    if schema
        .pointer("/properties")
        .and_then(|p| p.get(wrapper))
        .is_some()
    {
        return None;
    }
    let mut spread = top.clone();
    spread.remove(wrapper);
    for (key, value) in inner {
        if spread.insert(key.clone(), value.clone()).is_some() {
            return None;
        }
    }
    Some(Value::Object(spread))
}

/// Checks arguments against a tool's input schema: `None` when they fit,
/// else an `isError` result listing each error and the schema.
pub(crate) fn invalid_arguments(tool: &IndexedTool, arguments: &Value) -> Option<Value> {
    let schema = tool
        .tool
        .field("inputSchema")
        .unwrap_or_else(|| json!({"type": "object"}));
    let validator = match jsonschema::validator_for(&schema) {
        Ok(v) => v,
        Err(e) => {
            // A schema the validator cannot read (a remote `$ref`...) is
            // left to the tool's own checks rather than refusing every call.
            tracing::debug!(tool = %tool.name, error = %e, "input schema not checked");
            return None;
        }
    };
    let errors: Vec<String> = validator
        .iter_errors(arguments)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                format!("- {e}")
            } else {
                format!("- at {at}: {e}")
            }
        })
        .collect();
    if errors.is_empty() {
        return None;
    }
    Some(json!({
        "content": [{"type": "text", "text": format!(
            "The arguments for `{}` do not match its input schema; nothing was sent.\n{}\nExpected schema: {}",
            tool.name,
            errors.join("\n"),
            schema
        )}],
        "structuredContent": {"errors": errors, "inputSchema": schema},
        "isError": true,
    }))
}

fn one_line(text: &str) -> String {
    const MAX: usize = 160;
    if text.chars().count() <= MAX {
        return text.to_owned();
    }
    let cut: String = text.chars().take(MAX - 1).collect();
    format!("{cut}…")
}

fn encode_cursor(offset: usize) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("hidden:{offset}"))
}

fn decode_cursor(cursor: &str) -> Option<usize> {
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(cursor)
        .ok()?;
    String::from_utf8(raw)
        .ok()?
        .strip_prefix("hidden:")?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::ListItem;

    fn index(n: usize) -> ToolIndex {
        ToolIndex::new((0..n).map(|i| {
            (
                format!("s{}", i / 60),
                ListItem::tool(&json!({"name": format!("s__tool_{i}"), "description": format!("Does thing {i}.\nMore."),
                       "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}})),
            )
        }))
    }

    #[test]
    fn wrapped_arguments_are_spread_only_where_the_tool_has_no_such_argument() {
        let schema =
            json!({"type": "object", "properties": {"model": {}, "tokens": {}, "name": {}}});
        let wrapped = json!({"name": "n", "request": {"model": "m", "tokens": [1]}});
        assert_eq!(
            spread_wrapped_arguments(&wrapped, REQUEST_WRAPPER, &schema),
            Some(json!({"name": "n", "model": "m", "tokens": [1]}))
        );
        // A field given twice, a tool whose own argument is `request`, or
        // no wrapper at all: left as they came.
        let twice = json!({"model": "a", "request": {"model": "b"}});
        assert_eq!(
            spread_wrapped_arguments(&twice, REQUEST_WRAPPER, &schema),
            None
        );
        let own = json!({"properties": {"request": {"type": "object"}}});
        assert_eq!(
            spread_wrapped_arguments(&wrapped, REQUEST_WRAPPER, &own),
            None
        );
        let plain = json!({"model": "m"});
        assert_eq!(
            spread_wrapped_arguments(&plain, REQUEST_WRAPPER, &schema),
            None
        );
    }

    #[test]
    fn list_tools_pages_through_every_hidden_tool_once() {
        let index = index(250);
        let mut seen = 0;
        let mut args = json!({});
        loop {
            let r = list_tools(&index, 100, &args);
            assert_eq!(r["isError"], json!(false), "{r}");
            seen += r["structuredContent"]["tools"].as_array().unwrap().len();
            assert!(!r["content"][0]["text"].as_str().unwrap().contains("More."));
            match r["structuredContent"].get("nextCursor") {
                Some(c) => args = json!({"cursor": c}),
                None => break,
            }
        }
        assert_eq!(seen, 250);
        let bad = list_tools(&index, 100, &json!({"cursor": "nope"}));
        assert_eq!(bad["isError"], json!(true));
    }

    #[test]
    fn search_limits_and_validation_lists_each_error() {
        let index = index(30);
        let r = search_tools(&index, &json!({"query": "s__tool_*", "limit": 3}));
        assert_eq!(r["structuredContent"]["tools"].as_array().unwrap().len(), 3);
        assert!(r["structuredContent"]["tools"][0]["inputSchema"].is_object());
        assert_eq!(
            search_tools(&index, &json!({"query": "x", "limit": 0}))["isError"],
            json!(true)
        );
        let tool = index.get("s__tool_1").unwrap();
        assert!(invalid_arguments(tool, &json!({"n": 3})).is_none());
        let r = invalid_arguments(tool, &json!({"n": "three", "x": 1})).unwrap();
        assert_eq!(r["isError"], json!(true));
        let text = r["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("/n"), "{text}");
        assert!(text.contains("Expected schema"), "{text}");
        let r = invalid_arguments(tool, &json!({})).unwrap();
        assert!(r["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("\"n\" is a required property"));
    }
}
