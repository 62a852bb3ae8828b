//! What the replicas publish to each other, as it goes on the channels.

/// A question or a reply between two replicas, as published.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Addressed {
    pub(super) to: String,
    pub(super) from: String,
    pub(super) id: u64,
    pub(super) body: String,
}

/// A forwarded message as published: the session and the message's JSON.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Forwarded<'a> {
    pub(super) session: std::borrow::Cow<'a, str>,
    pub(super) message: std::borrow::Cow<'a, str>,
}

/// A list change as published: the replica that heard it and the
/// notification's method.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct ListChange<'a> {
    pub(super) from: std::borrow::Cow<'a, str>,
    pub(super) method: std::borrow::Cow<'a, str>,
}
