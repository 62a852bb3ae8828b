//! A page of a merged list, written as JSON text from the items' own text:
//! a page of 200 tools parsed into values only to be written back out cost
//! more than the rest of the request.

use base64::Engine;
use mcpyard_proto::Payload;
use serde_json::Value;

use crate::call::{ListItem, ListKind};
use crate::RouteError;

/// The page of `all` that `cursor` points at (the first without one),
/// `page_size` items at most, those of them `listed` keeps, as `{key:
/// [...], "nextCursor"?: ..., members...}`.
pub(super) fn write(
    all: &[ListItem],
    kind: ListKind,
    cursor: Option<&str>,
    page_size: usize,
    listed: &dyn Fn(&ListItem) -> bool,
    members: &[(&str, Value)],
) -> Result<Payload, RouteError> {
    let start = match cursor {
        None => 0,
        Some(c) => decode_cursor(c, kind)
            .filter(|o| *o <= all.len())
            .ok_or_else(|| RouteError::invalid_params(format!("invalid cursor: {c:?}")))?,
    };
    let end = (start + page_size).min(all.len());
    let items = &all[start..end];
    let mut text =
        String::with_capacity(items.iter().map(|i| i.json().len() + 1).sum::<usize>() + 256);
    text.push('{');
    push_key(&mut text, kind.key());
    text.push('[');
    for (n, item) in items.iter().filter(|i| listed(i)).enumerate() {
        if n > 0 {
            text.push(',');
        }
        text.push_str(item.json());
    }
    text.push(']');
    let next = (end < all.len()).then(|| Value::String(encode_cursor(end, kind)));
    let following = next.iter().map(|c| ("nextCursor", c));
    for (key, value) in following.chain(members.iter().map(|(k, v)| (*k, v))) {
        text.push(',');
        push_key(&mut text, key);
        text.push_str(&value.to_string());
    }
    text.push('}');
    // Each item's text was written from a value, so this holds; checked
    // anyway, as a page is what a client parses.
    Payload::text(text).map_err(|e| RouteError::Internal(format!("a list page is not JSON: {e}")))
}

/// `"key":`
fn push_key(text: &mut String, key: &str) {
    text.push_str(&Value::from(key).to_string());
    text.push(':');
}

pub(super) fn encode_cursor(offset: usize, kind: ListKind) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{}:{offset}", kind.key()))
}

fn decode_cursor(cursor: &str, kind: ListKind) -> Option<usize> {
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(cursor)
        .ok()?;
    let text = String::from_utf8(raw).ok()?;
    let (k, offset) = text.split_once(':')?;
    (k == kind.key()).then_some(())?;
    offset.parse().ok()
}
