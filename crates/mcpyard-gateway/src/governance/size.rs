//! Size limits on a call's arguments and on its result, per source with
//! per-tool overrides. Arguments over the limit are refused before the
//! source sees them; a result over it is cut to fit, with a note saying
//! so: one way for every kind of source (an API's `max_response_bytes` is
//! its source's result limit here).

use mcpyard_proto::methods;
use serde_json::{json, Value};

use crate::call::{json_len, result_len};
use crate::error::refusal;
use crate::router::{Layer, Next, RouteFuture, RoutedCall};

/// The router's size layer: it reads each call's limits from its source's
/// [`CallLimits`](crate::CallLimits).
#[derive(Debug)]
pub(crate) struct SizeLayer;

impl Layer for SizeLayer {
    fn call<'a>(&'a self, call: RoutedCall, next: Next<'a>) -> RouteFuture<'a> {
        let sizes = &call.limits().sizes;
        let method = call.request.method;
        let sized = matches!(method, methods::TOOLS_CALL | methods::PROMPTS_GET);
        if sizes.is_unlimited() || !sized {
            return next.run(call);
        }
        let limits = sizes.for_tool(call.request.name());
        if let Some(max) = limits.max_arguments {
            let sent = call.request.params.get("arguments").map_or(0, json_len);
            if sent > max {
                crate::governance::audit::note_refusal("max_arguments");
                let message = format!(
                    "The arguments of `{}` are {sent} bytes, over its limit of {max} bytes (max_arguments). Send less: shorten the text, or pass a file or URL instead of its content.",
                    call.target
                );
                return Box::pin(async move { refusal(method, message) });
            }
        }
        let Some(max) = limits.max_result.filter(|_| method == methods::TOOLS_CALL) else {
            return next.run(call);
        };
        let tool = call.target.clone();
        Box::pin(async move {
            let mut result = next.run(call).await?;
            if result_len(&result) > max {
                cut_result(result.value_mut(), max, &tool);
            }
            Ok(result)
        })
    }
}

/// What a cut string ends with.
const CUT_MARK: &str = "…[cut]";
/// Strings and arrays smaller than this are left whole while bigger ones remain.
const SMALL: u64 = 64;

/// Cuts a `CallToolResult` to at most `max` bytes of JSON: binary blocks
/// (images, audio, blobs) are dropped first, largest first, since half an
/// image is no image; then the longest strings are shortened and the
/// longest arrays lose their tail, until it fits. A text block at the end
/// says what happened and how to ask for less. Structure is kept, so
/// `structuredContent` keeps its shape.
pub(crate) fn cut_result(result: &mut Value, max: u64, tool: &str) {
    let size = json_len(result);
    if size <= max {
        return;
    }
    let note = format!(
        "[The result of `{tool}` was {size} bytes and was cut to fit its limit of {max} bytes (`max_result`; for an API, `max_response_bytes`). Ask for less: use the tool's filter, paging or limit arguments if it has them.]"
    );
    let note_block = json!({"type": "text", "text": note});
    // Room for the note block and the comma before it.
    let budget = max.saturating_sub(json_len(&note_block) + 1);
    drop_binary_blocks(result, budget);
    // Each round removes at least the overshoot from the largest piece or
    // empties it; the bound only guards against a pathological shape.
    for _ in 0..10_000 {
        let size = json_len(result);
        if size <= budget {
            break;
        }
        if !shrink_largest(result, size - budget) {
            break;
        }
    }
    match result.get_mut("content").and_then(Value::as_array_mut) {
        Some(content) => content.push(note_block),
        None => {
            if let Some(object) = result.as_object_mut() {
                object.insert("content".into(), json!([note_block]));
            }
        }
    }
}

/// Replaces image, audio and blob blocks of `content` by a short text
/// saying what was there, largest first, while the result is over `budget`.
fn drop_binary_blocks(result: &mut Value, budget: u64) {
    loop {
        if json_len(result) <= budget {
            return;
        }
        let Some(content) = result.get_mut("content").and_then(Value::as_array_mut) else {
            return;
        };
        let largest = content
            .iter()
            .enumerate()
            .filter(|(_, b)| is_binary_block(b))
            .max_by_key(|(_, b)| json_len(b))
            .map(|(i, _)| i);
        let Some(i) = largest else { return };
        let block = &content[i];
        let mime = block
            .get("mimeType")
            .or_else(|| block.pointer("/resource/mimeType"))
            .and_then(Value::as_str)
            .unwrap_or("binary data");
        let text = format!(
            "[{mime} of {} bytes removed: over the size limit]",
            json_len(block)
        );
        content[i] = json!({"type": "text", "text": text});
    }
}

fn is_binary_block(block: &Value) -> bool {
    match block.get("type").and_then(Value::as_str) {
        Some("image" | "audio") => true,
        Some("resource") => block.pointer("/resource/blob").is_some(),
        _ => false,
    }
}

/// Where the largest piece is: a string, or an array whose tail can go.
enum Piece {
    String(u64),
    Array(u64),
}

/// Shrinks the largest string or array by about `excess` bytes. False when
/// nothing is left to shrink.
fn shrink_largest(value: &mut Value, excess: u64) -> bool {
    let mut best: Option<(u64, Vec<PathStep>, Piece)> = None;
    let mut path = Vec::new();
    find_largest(value, &mut path, &mut best);
    let Some((_, path, piece)) = best else {
        return false;
    };
    let Some(target) = follow(value, &path) else {
        return false;
    };
    match (piece, target) {
        (Piece::String(len), Value::String(s)) => {
            let keep = len.saturating_sub(excess + CUT_MARK.len() as u64) as usize;
            let mut end = keep.min(s.len());
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            s.truncate(end);
            s.push_str(CUT_MARK);
            // A string already cut to its mark cannot shrink further.
            len > CUT_MARK.len() as u64 + 2
        }
        (Piece::Array(_), Value::Array(items)) => {
            let mut freed = 0;
            while freed < excess {
                match items.pop() {
                    Some(item) => freed += json_len(&item) + 1,
                    None => break,
                }
            }
            true
        }
        _ => false,
    }
}

#[derive(Clone)]
enum PathStep {
    Key(String),
    Index(usize),
}

fn follow<'v>(value: &'v mut Value, path: &[PathStep]) -> Option<&'v mut Value> {
    let mut at = value;
    for step in path {
        at = match step {
            PathStep::Key(k) => at.get_mut(k.as_str())?,
            PathStep::Index(i) => at.get_mut(*i)?,
        };
    }
    Some(at)
}

/// Strings are preferred over arrays of the same size: cutting text loses
/// less than dropping items.
fn find_largest(
    value: &Value,
    path: &mut Vec<PathStep>,
    best: &mut Option<(u64, Vec<PathStep>, Piece)>,
) {
    match value {
        Value::String(s) if !s.ends_with(CUT_MARK) || s.len() > 2 * CUT_MARK.len() => {
            consider(best, Piece::String(s.len() as u64), path);
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push(PathStep::Index(i));
                find_largest(item, path, best);
                path.pop();
            }
            // An array is cut only when no single string is as large.
            if items.len() > 1 {
                let size = json_len(value);
                if best.as_ref().is_none_or(|(b, _, _)| size > 2 * *b) {
                    consider(best, Piece::Array(size), path);
                }
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                // The note and the type of a block stay as they are.
                if k == "type" {
                    continue;
                }
                path.push(PathStep::Key(k.clone()));
                find_largest(v, path, best);
                path.pop();
            }
        }
        _ => {}
    }
}

fn consider(best: &mut Option<(u64, Vec<PathStep>, Piece)>, piece: Piece, path: &[PathStep]) {
    let size = match piece {
        Piece::String(n) | Piece::Array(n) => n,
    };
    if size > SMALL && best.as_ref().is_none_or(|(b, _, _)| size > *b) {
        *best = Some((size, path.to_vec(), piece));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::{SizeLimits, ToolSizes};

    #[test]
    fn a_result_within_the_limit_is_untouched() {
        let mut r = json!({"content": [{"type": "text", "text": "short"}]});
        let before = r.clone();
        cut_result(&mut r, 1000, "t");
        assert_eq!(r, before);
    }

    #[test]
    fn a_long_text_is_cut_to_fit_with_a_note() {
        let mut r = json!({"content": [{"type": "text", "text": "x".repeat(10_000)}]});
        cut_result(&mut r, 1000, "api__get");
        assert!(json_len(&r) <= 1000, "{}", json_len(&r));
        let text = mcpyard_testkit::text(&r);
        assert!(text.contains(CUT_MARK), "{text}");
        assert!(
            text.contains("api__get") && text.contains("max_result"),
            "{text}"
        );
        assert!(text.contains("10039 bytes"), "{text}");
    }

    #[test]
    fn structured_content_keeps_its_shape_and_both_copies_are_cut() {
        let big = "y".repeat(5000);
        let mut r = json!({
            "content": [{"type": "text", "text": big}],
            "structuredContent": {"ok": true, "status_code": 200, "text": big, "items": (0..500).collect::<Vec<_>>()},
        });
        cut_result(&mut r, 2000, "t");
        assert!(json_len(&r) <= 2000, "{}", json_len(&r));
        assert_eq!(r["structuredContent"]["ok"], json!(true));
        assert_eq!(r["structuredContent"]["status_code"], json!(200));
        assert!(r["structuredContent"]["text"].is_string());
        assert!(r["structuredContent"]["items"].is_array());
    }

    #[test]
    fn images_are_dropped_whole_before_any_text_is_cut() {
        let mut r = json!({"content": [
            {"type": "text", "text": "caption"},
            {"type": "image", "data": "A".repeat(5000), "mimeType": "image/png"},
        ]});
        cut_result(&mut r, 800, "t");
        assert!(json_len(&r) <= 800);
        let text = mcpyard_testkit::text(&r);
        assert!(text.contains("caption"), "{text}");
        assert!(text.contains("image/png of"), "{text}");
        assert!(!r.to_string().contains("AAAA"), "{r}");
    }

    #[test]
    fn many_small_items_lose_their_tail() {
        let items: Vec<Value> = (0..2000).map(|i| json!({"n": i})).collect();
        let mut r = json!({"content": [], "structuredContent": {"events": items}});
        cut_result(&mut r, 1500, "t");
        assert!(json_len(&r) <= 1500, "{}", json_len(&r));
        let kept = r["structuredContent"]["events"].as_array().unwrap();
        assert!(!kept.is_empty() && kept[0] == json!({"n": 0}));
    }

    #[test]
    fn multibyte_text_is_cut_on_a_character_boundary() {
        let mut r = json!({"content": [{"type": "text", "text": "é".repeat(3000)}]});
        cut_result(&mut r, 700, "t");
        assert!(json_len(&r) <= 700);
    }

    #[test]
    fn a_tool_limit_replaces_its_sources() {
        let sizes = SizeLimits {
            max_arguments: Some(10),
            max_result: Some(100),
            tools: [(
                "echo".to_owned(),
                ToolSizes {
                    max_arguments: Some(5),
                    max_result: None,
                },
            )]
            .into(),
        };
        assert_eq!(
            sizes.for_tool(Some("echo")),
            ToolSizes {
                max_arguments: Some(5),
                max_result: Some(100)
            }
        );
        assert_eq!(sizes.for_tool(Some("other")).max_arguments, Some(10));
    }
}
