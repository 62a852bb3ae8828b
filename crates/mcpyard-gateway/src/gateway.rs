//! The gateway facade: sessions, dispatch of each message by method.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use mcpyard_proto::{methods, ErrorObject, Message};
use serde_json::{json, Value};

use crate::{GatewayConfig, Outbound, Session};

/// The running gateway. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Gateway {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: GatewayConfig,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
}

impl Gateway {
    /// Starts the gateway: connects every upstream (in the background; a
    /// source that is down is retried and shown unhealthy meanwhile).
    pub async fn start(config: GatewayConfig) -> Result<Self, crate::config::ConfigError> {
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                sessions: Mutex::default(),
            }),
        })
    }

    /// Registers a session created by a transport, so later requests with
    /// its id find it.
    pub fn register_session(&self, session: Arc<Session>) {
        self.inner
            .sessions
            .lock()
            .expect("sessions lock poisoned")
            .insert(session.id().to_owned(), session);
    }

    /// The live session with this id.
    pub fn session(&self, id: &str) -> Option<Arc<Session>> {
        self.inner
            .sessions
            .lock()
            .expect("sessions lock poisoned")
            .get(id)
            .cloned()
    }

    /// Ends and forgets a session. Returns false when it was unknown.
    pub fn end_session(&self, id: &str) -> bool {
        let s = self
            .inner
            .sessions
            .lock()
            .expect("sessions lock poisoned")
            .remove(id);
        match s {
            Some(s) => {
                s.end();
                true
            }
            None => false,
        }
    }

    /// Handles one message from a client. Returns the response for a
    /// request; `None` for notifications and responses. `related` is the
    /// stream of this request (a POST's SSE answer), where progress and
    /// requests to the client made while serving it go.
    pub async fn handle(
        &self,
        session: &Arc<Session>,
        msg: Message,
        related: Option<Outbound>,
    ) -> Option<Message> {
        let _ = related;
        match msg {
            Message::Request { id, method, params } => {
                let outcome = match method.as_str() {
                    methods::INITIALIZE => Ok(self.initialize(session, params)),
                    methods::PING => Ok(json!({})),
                    other => Err(ErrorObject::method_not_found(other)),
                };
                Some(match outcome {
                    Ok(result) => Message::response(id, result),
                    Err(e) => Message::error(Some(id), e),
                })
            }
            Message::Response { id, result } => {
                session.resolve(&id, Ok(result));
                None
            }
            Message::Error {
                id: Some(id),
                error,
            } => {
                session.resolve(&id, Err(error));
                None
            }
            _ => None,
        }
    }

    fn initialize(&self, session: &Session, params: Option<Value>) -> Value {
        let params = params.unwrap_or_default();
        let requested = params
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        let version = mcpyard_proto::negotiate(requested);
        session.update(|n| {
            n.protocol_version = version.to_owned();
            n.capabilities = params.get("capabilities").cloned().unwrap_or_default();
            n.client_info = params.get("clientInfo").cloned().unwrap_or_default();
        });
        json!({
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": true}},
            "serverInfo": {"name": "mcpyard", "version": env!("CARGO_PKG_VERSION")},
        })
    }

    /// Stops every upstream (child processes killed and reaped) and ends
    /// every session.
    pub async fn shutdown(&self) {
        let sessions: Vec<_> = self
            .inner
            .sessions
            .lock()
            .expect("sessions lock poisoned")
            .drain()
            .map(|(_, s)| s)
            .collect();
        for s in sessions {
            s.end();
        }
        let _ = &self.inner.config;
    }
}
