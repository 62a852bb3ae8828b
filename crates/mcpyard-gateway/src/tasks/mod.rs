//! Tasks the gateway runs itself (MCP 2025-11-25, `tasks`).
//!
//! A `tools/call` whose params carry `task: {ttl}` is answered at once with a
//! `CreateTaskResult`; the call runs in the background behind a
//! [`TaskHandle`], and the client follows it with `tasks/get`, waits for it
//! with `tasks/result`, lists it with `tasks/list` and stops it with
//! `tasks/cancel`. Tasks that an upstream creates itself are the upstream's:
//! the gateway only routes those by id and never stores them here.
//!
//! Binding: a task belongs to the session that created it. For any other
//! session it does not exist (`tasks/get`, `tasks/result`, `tasks/cancel`
//! answer "not found", `tasks/list` leaves it out). Requests of the stateless
//! era have no session: an authenticated client's tasks belong to its
//! identity; an anonymous client's are *unbound* (owner `None`) and reachable
//! by every unbound request, never by a session. That is the spec's "no
//! context binding" case, so task ids are random v4 UUIDs (122 bits from the
//! operating system's generator) that cannot be guessed.
//!
//! Limits (see [`TaskLimits`]): at most 1000 tasks stored at once across the
//! gateway and 100 unfinished ones per owner; `ttl` defaults to one hour and
//! is clamped to 1 s ..= 24 h (never unlimited); `pollInterval` is 500 ms;
//! `tasks/list` pages hold 50 tasks.
//!
//! Expiry: a task and its result are deleted once `ttl` has passed since it
//! was created, whatever its status; a call still running then is cancelled.
//! Deletion is lazy (every store operation first drops what has expired) and
//! prompt where it matters: a running task's [`TaskHandle::run`] and every
//! `tasks/result` waiter wake at the deadline themselves.
//!
//! Input: when the call behind a task needs the requestor (an upstream asks
//! for elicitation or sampling), the task shows `input_required` and the
//! request, tagged with the task, travels on the stream of the requestor's
//! `tasks/result`, which the spec tells it to call on seeing that status.
//!
//! Replicas (see [`SharedTasks`]): with a shared state backend, every
//! replica answers for every task from its record; the call runs where it
//! started.

mod shared;
mod status;
mod store;
mod wire;

pub(crate) use shared::{list_own, SharedTasks};
pub(crate) use status::{TaskError, TaskEvent, TaskLimits};
pub(crate) use store::{TaskSignal, TaskStore};
pub(crate) use wire::{advertise, capability, with_related_task, TaskRequest, EXTENSION};
