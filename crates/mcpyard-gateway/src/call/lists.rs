//! The lists a source offers, and the protocol era a client speaks, which
//! decides the lists it sees.

use std::sync::Arc;

use mcpyard_proto::methods;
use serde_json::value::RawValue;
use serde_json::Value;

/// The four kinds of list a source can offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListKind {
    Tools,
    Resources,
    ResourceTemplates,
    Prompts,
}

impl ListKind {
    pub(crate) const ALL: [ListKind; 4] = [
        ListKind::Tools,
        ListKind::Resources,
        ListKind::ResourceTemplates,
        ListKind::Prompts,
    ];

    pub(crate) fn list_method(self) -> &'static str {
        match self {
            ListKind::Tools => methods::TOOLS_LIST,
            ListKind::Resources => methods::RESOURCES_LIST,
            ListKind::ResourceTemplates => methods::RESOURCES_TEMPLATES_LIST,
            ListKind::Prompts => methods::PROMPTS_LIST,
        }
    }

    /// The list `method` asks for (`tools/list`...), if it is one.
    pub(crate) fn listed_by(method: &str) -> Option<ListKind> {
        Self::ALL.into_iter().find(|k| k.list_method() == method)
    }

    /// The key of the items in the list result.
    pub(crate) fn key(self) -> &'static str {
        match self {
            ListKind::Tools => "tools",
            ListKind::Resources => "resources",
            ListKind::ResourceTemplates => "resourceTemplates",
            ListKind::Prompts => "prompts",
        }
    }

    /// The field an item of this list is known by.
    pub(crate) fn item_key(self) -> &'static str {
        match self {
            ListKind::Tools | ListKind::Prompts => "name",
            ListKind::Resources => "uri",
            ListKind::ResourceTemplates => "uriTemplate",
        }
    }

    /// The notification that tells clients this list changed.
    pub(crate) fn changed_notification(self) -> &'static str {
        match self {
            ListKind::Tools => methods::NOTIFICATION_TOOLS_LIST_CHANGED,
            ListKind::Resources | ListKind::ResourceTemplates => {
                methods::NOTIFICATION_RESOURCES_LIST_CHANGED
            }
            ListKind::Prompts => methods::NOTIFICATION_PROMPTS_LIST_CHANGED,
        }
    }

    pub(crate) fn from_notification(method: &str) -> Option<&'static [ListKind]> {
        match method {
            methods::NOTIFICATION_TOOLS_LIST_CHANGED => Some(&[ListKind::Tools]),
            methods::NOTIFICATION_RESOURCES_LIST_CHANGED => {
                Some(&[ListKind::Resources, ListKind::ResourceTemplates])
            }
            methods::NOTIFICATION_PROMPTS_LIST_CHANGED => Some(&[ListKind::Prompts]),
            _ => None,
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// One item of a list (a tool, resource, template or prompt) as the
/// catalogue keeps it: its JSON text, shared by every view that lists it.
/// A `Value` tree of the same item takes ten times the memory; a page is
/// written from the items' text as it is.
#[derive(Debug, Clone)]
pub struct ListItem {
    /// The field it is known by (`name`, `uri`, `uriTemplate`), if a string.
    key: Option<Arc<str>>,
    json: Arc<RawValue>,
}

impl ListItem {
    /// `item`, known by the field `kind`'s items are known by.
    pub fn new(kind: ListKind, item: &Value) -> Self {
        Self {
            key: item
                .get(kind.item_key())
                .and_then(Value::as_str)
                .map(Arc::from),
            json: Arc::from(
                serde_json::value::to_raw_value(item).expect("a Value always serialises"),
            ),
        }
    }

    /// `item` from its JSON text, as a page of a list arrived: written out
    /// again compactly as it is read, without a `Value` tree of it (ten
    /// small allocations a tool). Characters spelt with a `\u` escape are
    /// written as themselves, so a look at the text for a member's name
    /// (`"visibility"`) cannot miss it; members keep their order.
    pub fn from_text(kind: ListKind, item: &RawValue) -> Self {
        #[derive(serde::Deserialize)]
        struct Keys<'a> {
            #[serde(borrow)]
            name: Option<&'a RawValue>,
            #[serde(borrow)]
            uri: Option<&'a RawValue>,
            #[serde(borrow, rename = "uriTemplate")]
            uri_template: Option<&'a RawValue>,
        }
        let mut compact = Vec::with_capacity(item.get().len());
        let written = serde_transcode::transcode(
            &mut serde_json::Deserializer::from_str(item.get()),
            &mut serde_json::Serializer::new(&mut compact),
        );
        let json = written
            .ok()
            .and_then(|()| String::from_utf8(compact).ok())
            .and_then(|text| RawValue::from_string(text).ok());
        // Not an object, or its key given twice: read as a `Value` (the
        // last of two same-named members is the one kept). Other members
        // are kept as the source wrote them.
        let Some((json, key)) = json.and_then(|json| {
            // A derived struct would also take an array, field by field.
            if !json.get().starts_with('{') {
                return None;
            }
            let keys = serde_json::from_str::<Keys>(json.get()).ok()?;
            let key = match kind {
                ListKind::Tools | ListKind::Prompts => keys.name,
                ListKind::Resources => keys.uri,
                ListKind::ResourceTemplates => keys.uri_template,
            };
            let key = key.and_then(|key| serde_json::from_str::<String>(key.get()).ok());
            Some((json, key))
        }) else {
            return Self::new(kind, &serde_json::from_str(item.get()).unwrap_or_default());
        };
        Self {
            key: key.map(Arc::from),
            json: Arc::from(json),
        }
    }

    /// A tool (known by its `name`).
    pub fn tool(item: &Value) -> Self {
        Self::new(ListKind::Tools, item)
    }

    /// The name, URI or URI template the item is known by.
    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// The key, shared rather than copied.
    pub(crate) fn shared_key(&self) -> Option<Arc<str>> {
        self.key.clone()
    }

    /// The item's JSON text.
    pub fn json(&self) -> &str {
        self.json.get()
    }

    /// The item's JSON text, to be written as it is.
    pub fn raw(&self) -> &RawValue {
        &self.json
    }

    /// The item as a `Value`.
    pub fn to_value(&self) -> Value {
        // Written from a `Value` or read as JSON, so it parses.
        serde_json::from_str(self.json()).unwrap_or_default()
    }

    /// One field of the item (e.g. `inputSchema`), parsed.
    pub fn field(&self, name: &str) -> Option<Value> {
        let mut item = self.to_value();
        item.as_object_mut()?.remove(name)
    }
}

impl PartialEq for ListItem {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.json, &other.json) || self.json() == other.json()
    }
}

/// What one source offers, as it listed it (names unprefixed).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SourceLists {
    pub(crate) items: [Vec<ListItem>; 4],
    /// The source runs task-augmented `tools/call` itself; otherwise the
    /// gateway runs them, and says so on each tool.
    pub(crate) runs_tasks: bool,
    /// The tools this source would list under `expose = "default"` (own
    /// names or patterns); `None`: all of them.
    pub(crate) default_listing: Option<Vec<String>>,
    /// Tools (own names) listed only while some other tool is hidden: the
    /// gateway's search tools.
    pub(crate) listed_when_hiding: Vec<String>,
}

impl SourceLists {
    /// Lists holding only these tools (`tools/list` items, own names).
    pub fn tools(tools: Vec<Value>) -> Self {
        let mut lists = Self::default();
        lists.set(ListKind::Tools, tools);
        lists
    }

    pub fn get(&self, kind: ListKind) -> &[ListItem] {
        &self.items[kind.index()]
    }

    pub fn set(&mut self, kind: ListKind, items: Vec<Value>) {
        self.set_items(kind, items.iter().map(|i| ListItem::new(kind, i)).collect());
    }

    pub(crate) fn set_items(&mut self, kind: ListKind, items: Vec<ListItem>) {
        self.items[kind.index()] = items;
    }

    /// The source runs task-augmented `tools/call` itself (it offers
    /// `/tasks/requests/tools/call`, see [`Source::offers`](crate::Source::offers)):
    /// its tools keep their own `execution.taskSupport`.
    pub fn set_runs_tasks(&mut self, runs: bool) {
        self.runs_tasks = runs;
    }

    /// What `expose = "default"` lists for this source: these names or
    /// patterns only (a large API's curated set, or none), instead of all.
    pub fn set_default_listing(&mut self, names: Option<Vec<String>>) {
        self.default_listing = names;
    }
}

/// The protocol era a client speaks, which decides the catalogue it sees:
/// a server of both eras may offer each something else, and the gateway
/// keeps a connection in each era such a server's clients use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub(crate) enum Era {
    /// `initialize` and a session (2024-11-05 to 2025-11-25).
    #[default]
    Handshake,
    /// The 2026-07-28 era: an envelope on every request, no session.
    Modern,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    #[test]
    fn an_item_read_from_its_text_is_the_item_read_from_its_value() {
        let items = [
            (
                ListKind::Tools,
                r#"{"name":"add","description":"Adds.","inputSchema":{"type":"object","properties":{"name":{"type":"string"}}}}"#,
            ),
            (
                ListKind::Tools,
                r#"{ "inputSchema" : {"type":"object"} , "name" : "spaced" }"#,
            ),
            (ListKind::Resources, r#"{"uri":"file:///a","name":"a"}"#),
            (
                ListKind::ResourceTemplates,
                r#"{"uriTemplate":"file:///{p}","name":"t"}"#,
            ),
            (ListKind::Prompts, r#"{"name":"greet\"ing","arguments":[]}"#),
            (ListKind::Tools, r#"{"name":7}"#),
            (ListKind::Tools, r#"{"name":null}"#),
            (ListKind::Tools, r#"["not","an","object"]"#),
        ];
        for (kind, text) in items {
            let value: Value = serde_json::from_str(text).unwrap();
            let read = ListItem::from_text(kind, &raw(text));
            assert_eq!(read.key(), ListItem::new(kind, &value).key(), "{text}");
            assert_eq!(read.to_value(), value, "{text}");
        }
        // Written compactly, in the order it came.
        let spaced = r#"{ "name" : "spaced", "inputSchema" : {"type": "object"} }"#;
        assert_eq!(
            ListItem::from_text(ListKind::Tools, &raw(spaced)).json(),
            r#"{"name":"spaced","inputSchema":{"type":"object"}}"#
        );
    }

    #[test]
    fn an_item_spelt_with_escapes_or_twice_named_is_written_anew() {
        // `"visibility"` spelt with an escape is found by a look at the text.
        let escaped = r#"{"name":"app","_meta":{"ui":{"visibilit\u0079":["app"]}}}"#;
        let item = ListItem::from_text(ListKind::Tools, &raw(escaped));
        assert!(item.json().contains("\"visibility\""), "{}", item.json());
        assert_eq!(item.key(), Some("app"));
        // The last of two names is the item's, as in its `Value`.
        let twice = r#"{"name":"first","name":"second"}"#;
        let item = ListItem::from_text(ListKind::Tools, &raw(twice));
        assert_eq!(item.key(), Some("second"));
        assert_eq!(item.json(), r#"{"name":"second"}"#);
    }
}
