//! `subscriptions/listen` (2026-07-28): with no session and no GET stream,
//! a client asks for change notifications with a request whose answer is
//! the stream. The stream is acknowledged first with what it will carry,
//! then carries the list changes and resource updates asked for, each
//! tagged with the request's id, until the client goes away. Meanwhile the
//! upstreams are subscribed to the URIs asked for, shared with every other
//! subscriber (see `subscriptions`).

use mcpyard_proto::{methods, Message, RequestId};
use serde_json::{json, Map, Value};

use crate::Outbound;

/// The `_meta` key that ties each frame of a stream to its request.
pub(crate) const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// What a listen stream asked for (the wire's `SubscriptionFilter`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ListenFilter {
    pub(crate) tools: bool,
    pub(crate) prompts: bool,
    pub(crate) resources: bool,
    pub(crate) resource_uris: Vec<String>,
}

impl ListenFilter {
    /// Reads `params.notifications`; `None` when it is not an object.
    pub(crate) fn from_params(params: &Value) -> Option<Self> {
        let n = params.get("notifications")?.as_object()?;
        let flag = |key: &str| n.get(key).and_then(Value::as_bool).unwrap_or(false);
        let resource_uris = n
            .get("resourceSubscriptions")
            .and_then(Value::as_array)
            .map(|uris| {
                uris.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        Some(Self {
            tools: flag("toolsListChanged"),
            prompts: flag("promptsListChanged"),
            resources: flag("resourcesListChanged"),
            resource_uris,
        })
    }

    /// The honored filter, as the acknowledgment states it: every kind asked
    /// for, with false flags and an empty URI list left out.
    pub(crate) fn to_wire(&self) -> Value {
        let mut n = Map::new();
        for (key, on) in [
            ("toolsListChanged", self.tools),
            ("promptsListChanged", self.prompts),
            ("resourcesListChanged", self.resources),
        ] {
            if on {
                n.insert(key.into(), Value::Bool(true));
            }
        }
        if !self.resource_uris.is_empty() {
            n.insert("resourceSubscriptions".into(), json!(self.resource_uris));
        }
        Value::Object(n)
    }

    /// Whether a list-change notification is one this stream asked for.
    pub(crate) fn wants_list_change(&self, method: &str) -> bool {
        match method {
            methods::NOTIFICATION_TOOLS_LIST_CHANGED => self.tools,
            methods::NOTIFICATION_PROMPTS_LIST_CHANGED => self.prompts,
            methods::NOTIFICATION_RESOURCES_LIST_CHANGED => self.resources,
            _ => false,
        }
    }
}

/// One open listen stream.
#[derive(Debug)]
pub(crate) struct Listener {
    pub(crate) filter: ListenFilter,
    pub(crate) stream: Outbound,
    /// The listen request's id, stamped on every frame.
    pub(crate) subscription_id: RequestId,
}

impl Listener {
    /// Queues `msg` stamped with the subscription id, without waiting: a
    /// client too slow to read its stream misses the event (level
    /// triggers: the next one says the same).
    pub(crate) fn deliver(&self, msg: &Message) {
        if let Message::Notification { method, params } = msg {
            let stamped = stamp(params.clone(), &self.subscription_id);
            let _ = self
                .stream
                .try_send(Message::notification(method, Some(stamped)));
        }
    }

    pub(crate) fn acknowledgment(&self) -> Message {
        let params = json!({ "notifications": self.filter.to_wire() });
        Message::notification(
            methods::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED,
            Some(stamp(Some(params), &self.subscription_id)),
        )
    }
}

/// `params` with `_meta[subscriptionId]` set.
pub(crate) fn stamp(params: Option<Value>, id: &RequestId) -> Value {
    let mut params = match params {
        Some(Value::Object(o)) => o,
        _ => Map::new(),
    };
    let meta = params.entry("_meta").or_insert_with(|| json!({}));
    if !meta.is_object() {
        *meta = json!({});
    }
    if let Some(meta) = meta.as_object_mut() {
        meta.insert(SUBSCRIPTION_ID.into(), json!(id));
    }
    Value::Object(params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_is_read_and_acknowledged_as_asked() {
        let f = ListenFilter::from_params(&json!({"notifications": {
            "toolsListChanged": true, "promptsListChanged": false,
            "resourceSubscriptions": ["mem://a", 7]
        }}))
        .expect("a filter");
        assert!(f.tools && !f.prompts && !f.resources);
        assert_eq!(f.resource_uris, ["mem://a"]);
        assert_eq!(
            f.to_wire(),
            json!({"toolsListChanged": true, "resourceSubscriptions": ["mem://a"]})
        );
        assert!(f.wants_list_change(methods::NOTIFICATION_TOOLS_LIST_CHANGED));
        assert!(!f.wants_list_change(methods::NOTIFICATION_PROMPTS_LIST_CHANGED));
        assert!(ListenFilter::from_params(&json!({})).is_none());
    }

    #[test]
    fn frames_carry_the_subscription_id() {
        let id = RequestId::String("listen-1".into());
        assert_eq!(
            stamp(Some(json!({"uri": "mem://a"})), &id),
            json!({"uri": "mem://a", "_meta": {SUBSCRIPTION_ID: "listen-1"}})
        );
        assert_eq!(
            stamp(None, &id),
            json!({"_meta": {SUBSCRIPTION_ID: "listen-1"}})
        );
    }
}
