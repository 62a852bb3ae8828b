//! Session housekeeping: sessions whose clients went away without ending
//! them are ended after the idle timeout, and the session limit makes room
//! by ending the least recently used idle session, or refuses a new one
//! when every session is in use.

use std::time::Duration;

use mcpyard_gateway::{Gateway, GatewayConfig, Session};
use mcpyard_proto::{Message, RequestId};
use serde_json::json;
use tokio::sync::mpsc;

async fn gateway(idle: Duration, max_sessions: usize) -> Gateway {
    Gateway::start(GatewayConfig {
        session_idle_timeout: idle,
        max_sessions,
        ..GatewayConfig::default()
    })
    .await
    .expect("gateway")
}

#[tokio::test]
async fn a_session_left_idle_is_ended_and_one_in_use_is_kept() {
    let gw = gateway(Duration::from_secs(1), 100).await;
    let forgotten = Session::new(None);
    let (stream, _open) = mpsc::channel(8);
    let listening = Session::new(Some(stream));
    assert!(gw.register_session(forgotten.clone()));
    assert!(gw.register_session(listening.clone()));

    tokio::time::timeout(Duration::from_secs(5), forgotten.ended())
        .await
        .expect("the idle session was ended");
    assert!(
        gw.session(forgotten.id()).is_none(),
        "its id is unknown now"
    );
    assert!(
        gw.session(listening.id()).is_some(),
        "a session with an open stream is in use"
    );
    gw.shutdown().await;
}

#[tokio::test]
async fn a_session_that_owns_tasks_outlives_the_idle_timeout() {
    let gw = gateway(Duration::from_secs(1), 100).await;
    let owner = Session::new(None);
    assert!(gw.register_session(owner.clone()));
    let params = json!({"name": "mcpyard__docs", "arguments": {}, "task": {"ttl": 60000}});
    let created = gw
        .request(
            &owner,
            RequestId::Number(1),
            "tools/call",
            Some(params),
            None,
        )
        .await
        .into_reply()
        .expect("an answer");
    let Message::Response { result, .. } = created else {
        panic!("not a result: {created:?}")
    };
    let result = result.into_value();
    assert!(result["task"]["taskId"].is_string(), "{result}");
    // A session idle since after the owner's last request: once it is
    // ended, the owner has been idle past the timeout too.
    let idle = Session::new(None);
    assert!(gw.register_session(idle.clone()));
    tokio::time::timeout(Duration::from_secs(5), idle.ended())
        .await
        .expect("the idle session was ended");
    assert!(
        !owner.is_ended(),
        "its task can still be fetched until its ttl ends"
    );
    assert!(gw.session(owner.id()).is_some());
    gw.shutdown().await;
}

#[tokio::test]
async fn the_session_limit_ends_the_least_recently_used_idle_session() {
    let gw = gateway(Duration::from_secs(3600), 2).await;
    let older = Session::new(None);
    let newer = Session::new(None);
    assert!(gw.register_session(older.clone()));
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(gw.register_session(newer.clone()));

    let third = Session::new(None);
    assert!(gw.register_session(third.clone()), "room was made");
    assert!(older.is_ended(), "the least recently used one made room");
    assert!(gw.session(newer.id()).is_some());
    assert!(gw.session(third.id()).is_some());
    gw.shutdown().await;
}

#[tokio::test]
async fn a_new_session_is_refused_when_every_session_is_in_use() {
    let gw = gateway(Duration::from_secs(3600), 1).await;
    let (stream, _open) = mpsc::channel(8);
    let busy = Session::new(Some(stream));
    assert!(gw.register_session(busy.clone()));
    assert!(!gw.register_session(Session::new(None)), "refused");
    assert!(!busy.is_ended(), "a session in use is never ended for room");
    gw.shutdown().await;
}
