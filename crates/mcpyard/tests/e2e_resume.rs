//! A session's GET stream resumed with `Last-Event-ID` on one gateway
//! (state in memory): what the stream wrote after the client's last event
//! is sent again, before the live messages, and nothing it had already
//! read; an id the gateway does not know (garbage, a POST stream's) opens
//! the stream without replaying anything. What came while the stream was
//! broken is sent on its return too.

#[path = "support/resume.rs"]
mod resume;
mod support;

use std::collections::HashSet;

use resume::{open_session, subscribe, touch, Stream};
use support::*;

const UPDATED: &str = "notifications/resources/updated";

/// A gateway in front of the misbehaving server in `watching` mode, whose
/// `touch` sends an update for each subscribed resource.
async fn watching_gateway(dir: &std::path::Path) -> Gateway {
    let config = format!(
        "[inference]\nenabled = false\n\n[servers.watch]\n{}",
        misbehaving("watching", &dir.join("watch.log"))
    );
    Gateway::start(&config, dir).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnected_get_stream_gets_what_followed_its_last_event() {
    let dir = scratch();
    let gw = watching_gateway(dir.path()).await;
    let url = gw.url();
    let session = open_session(&url).await;
    // Subscribed once the upstream is up, so that its first list changes
    // are over before the stream opens.
    subscribe(&url, &session, "mem://a").await;
    let mut stream = Stream::open(&url, &session, None).await;

    // Two updates written on the stream; the client is taken to have read
    // only the first when the connection broke.
    touch(&url, &session, 2).await;
    let (first, update) = stream.next().await;
    assert_eq!(update["method"], UPDATED, "{update}");
    touch(&url, &session, 3).await;
    let (second, update) = stream.next().await;
    assert_eq!(update["method"], UPDATED, "{update}");
    assert!(
        first.starts_with('g') && second.starts_with('g'),
        "{first} {second}"
    );
    assert_ne!(first, second);
    drop(stream);

    let mut stream = Stream::open(&url, &session, Some(&first)).await;
    let (id, replayed) = stream.next().await;
    assert_eq!(
        id, second,
        "the message after the last event read comes again, alone"
    );
    assert_eq!(replayed["params"]["uri"], "mem://a", "{replayed}");
    // Then the live messages, with ids never given before.
    touch(&url, &session, 4).await;
    let (third, live) = stream.next().await;
    assert_eq!(live["method"], UPDATED, "{live}");
    assert!(![&first, &second].contains(&&third), "{third} is new");
    drop(stream);

    // Ids the gateway never gave this stream replay nothing: the first
    // event is the next live one.
    let mut seen: HashSet<String> = [first.clone(), second.clone(), third.clone()].into();
    for (n, unknown) in ["1", "not an id", "g999999", "gx"].into_iter().enumerate() {
        let mut stream = Stream::open(&url, &session, Some(unknown)).await;
        touch(&url, &session, 10 + n as u64).await;
        let (id, live) = stream.next().await;
        assert_eq!(live["method"], UPDATED, "{live}");
        assert!(
            seen.insert(id.clone()),
            "{id} after Last-Event-ID {unknown:?} is new"
        );
    }

    // The stream that was already open is still refused a second one.
    let _open = Stream::open(&url, &session, Some(&third)).await;
    let again = reqwest::Client::new()
        .get(&url)
        .header("Accept", "text/event-stream")
        .header("Mcp-Session-Id", &session)
        .header("MCP-Protocol-Version", "2025-11-25")
        .header("Last-Event-ID", &first)
        .timeout(std::time::Duration::from_secs(10))
        .send()
        .await
        .expect("an answer");
    assert_eq!(again.status(), 409);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_came_while_the_stream_was_broken_is_sent_on_its_return() {
    let dir = scratch();
    let gw = watching_gateway(dir.path()).await;
    let url = gw.url();
    let session = open_session(&url).await;
    subscribe(&url, &session, "mem://a").await;
    let mut stream = Stream::open(&url, &session, None).await;
    touch(&url, &session, 2).await;
    let (first, _) = stream.next().await;
    drop(stream);
    // The gateway sees the connection closed, then an update comes.
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    touch(&url, &session, 3).await;

    let mut stream = Stream::open(&url, &session, Some(&first)).await;
    let (id, missed) = stream.next().await;
    assert_eq!(missed["method"], UPDATED, "{missed}");
    assert_ne!(id, first);
    touch(&url, &session, 4).await;
    let (live_id, live) = stream.next().await;
    assert_eq!(live["method"], UPDATED, "{live}");
    assert!(![&first, &id].contains(&&live_id), "{live_id} is new");
}
