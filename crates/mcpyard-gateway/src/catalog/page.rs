//! A page of a merged list, written from the items' own JSON text: a page
//! of 200 tools parsed into values only to be written back out cost more
//! than the rest of the request.

use base64::Engine;
use mcpyard_proto::Payload;
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::value::RawValue;
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
    let page = Page {
        key: kind.key(),
        items: all[start..end]
            .iter()
            .filter(|i| listed(i))
            .map(ListItem::raw)
            .collect(),
        next_cursor: (end < all.len()).then(|| encode_cursor(end, kind)),
        members,
    };
    serde_json::value::to_raw_value(&page)
        .map(Payload::Text)
        .map_err(|e| RouteError::Internal(format!("a list page: {e}")))
}

struct Page<'a> {
    key: &'static str,
    /// Written as they are.
    items: Vec<&'a RawValue>,
    next_cursor: Option<String>,
    members: &'a [(&'a str, Value)],
}

impl Serialize for Page<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry(self.key, &self.items)?;
        if let Some(next) = &self.next_cursor {
            map.serialize_entry("nextCursor", next)?;
        }
        for (key, value) in self.members {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
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
