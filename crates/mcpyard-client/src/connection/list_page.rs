//! A page of a list result (`tools/list`, `resources/list`, ...), read for
//! its items and the next page's cursor.

use std::borrow::Cow;
use std::collections::HashMap;

use mcpyard_proto::Payload;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::ClientError;

/// One page of a list: its items as JSON text, and the next page's cursor.
pub(super) struct ListPage<'a> {
    pub(super) items: Vec<Cow<'a, RawValue>>,
    pub(super) next: Option<String>,
}

impl<'a> ListPage<'a> {
    /// Reads the items under `key` of a list result. A result kept as text
    /// is read without a `Value` tree: each item is a slice of it, so a
    /// page of 10,000 tools is not parsed into 10,000 trees to be thrown
    /// away. A result that is not an object has no items and no cursor.
    pub(super) fn read(page: &'a Payload, method: &str, key: &str) -> Result<Self, ClientError> {
        let not_an_array =
            || ClientError::Protocol(format!("`{key}` in the {method} result is not an array"));
        match page {
            Payload::Text(text) => {
                let members: HashMap<String, &RawValue> =
                    serde_json::from_str(text.get()).unwrap_or_default();
                let items = match members.get(key).map(|raw| raw.get()) {
                    None | Some("null") => Vec::new(),
                    Some(items) => serde_json::from_str::<Vec<&RawValue>>(items)
                        .map_err(|_| not_an_array())?
                        .into_iter()
                        .map(Cow::Borrowed)
                        .collect(),
                };
                let next = members
                    .get("nextCursor")
                    .and_then(|cursor| serde_json::from_str(cursor.get()).ok());
                Ok(Self { items, next })
            }
            Payload::Value(result) => {
                let items = match result.get(key) {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::Array(items)) => items
                        .iter()
                        .map(|item| {
                            Cow::Owned(
                                serde_json::value::to_raw_value(item)
                                    .expect("a Value always serialises"),
                            )
                        })
                        .collect(),
                    Some(_) => return Err(not_an_array()),
                };
                let next = result
                    .get("nextCursor")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                Ok(Self { items, next })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_page_reads_the_same_from_text_as_from_a_value() {
        let pages = [
            r#"{"tools":[{"name":"a","inputSchema":{"type":"object"}},{"name":"b"}],"nextCursor":"p2"}"#,
            r#"{"tools":[],"nextCursor":7}"#,
            r#"{"tools":null}"#,
            r#"{"nextCursor":"only"}"#,
            r#"["not","an","object"]"#,
            r#"{"tools":{"name":"a"}}"#,
        ];
        for page in pages {
            let text = Payload::Text(RawValue::from_string(page.to_owned()).unwrap());
            let value = Payload::Value(serde_json::from_str(page).unwrap());
            let read = |payload| {
                ListPage::read(payload, "tools/list", "tools").map(|page| {
                    let items: Vec<Value> = page
                        .items
                        .iter()
                        .map(|item| serde_json::from_str(item.get()).unwrap())
                        .collect();
                    (items, page.next)
                })
            };
            match (read(&text), read(&value)) {
                (Ok(from_text), Ok(from_value)) => assert_eq!(from_text, from_value, "{page}"),
                (Err(from_text), Err(from_value)) => {
                    assert_eq!(from_text.to_string(), from_value.to_string(), "{page}")
                }
                (from_text, from_value) => panic!("{page}: {from_text:?} against {from_value:?}"),
            }
        }
        let text = Payload::Text(RawValue::from_string(pages[0].to_owned()).unwrap());
        let page = ListPage::read(&text, "tools/list", "tools").unwrap();
        assert_eq!(page.items.len(), 2);
        assert_eq!(page.next.as_deref(), Some("p2"));
        let refused = Payload::Text(RawValue::from_string(pages[5].to_owned()).unwrap());
        assert!(ListPage::read(&refused, "tools/list", "tools").is_err());
    }
}
