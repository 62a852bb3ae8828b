//! The Redis backend: session and task records with a TTL, GCRA buckets
//! and task writes in Lua scripts, pub/sub channels that tell every replica
//! of deleted sessions, forwarded messages and tasks that changed, and a
//! mark of life per process. One connection manager (reconnecting by
//! itself) carries the commands; a second connection listens.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{AsyncCommands, IntoConnectionInfo};
use tokio::sync::{broadcast, OnceCell};
use tokio_util::sync::CancellationToken;

mod channels;
mod replay_log;
mod wire;

use wire::{Addressed, Forwarded};

use super::{SessionAdmission, SessionRecord, StateBackend, StateError, StateEvent, TaskRecord};

/// How to reach Redis.
#[derive(Clone)]
pub struct RedisSettings {
    /// `redis://host:port/db` or `rediss://` (TLS); may carry a password,
    /// so it is never shown.
    pub url: String,
    /// The password, when it is not in the URL (from the environment).
    pub password: Option<String>,
    /// Every key and channel starts with it: replicas of one team share
    /// it, two teams on one Redis do not.
    pub prefix: String,
    /// How long one command may take before it counts as failed.
    pub timeout: Duration,
    /// PEM certificates trusted for `rediss://` besides the system's.
    pub ca_file: Option<PathBuf>,
}

impl std::fmt::Debug for RedisSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisSettings")
            .field("prefix", &self.prefix)
            .field("timeout", &self.timeout)
            .field("ca_file", &self.ca_file)
            .finish_non_exhaustive()
    }
}

/// Events waiting for a slow listener at most.
const EVENT_BACKLOG: usize = 1024;

/// How long a process's mark of life lasts, and how often it renews it: a
/// replica silent for longer is taken for dead, and the tasks it ran fail.
const LIFE: Duration = Duration::from_secs(10);
const BEAT: Duration = Duration::from_secs(3);

/// State shared through one Redis.
pub struct RedisState {
    client: redis::Client,
    /// Made on first use: a replica starts while Redis is still coming up.
    connection: OnceCell<ConnectionManager>,
    prefix: String,
    timeout: Duration,
    gcra: redis::Script,
    save_task: redis::Script,
    unlock: redis::Script,
    admit: redis::Script,
    renew_or_end: redis::Script,
    to_client: redis::Script,
    /// This process among the replicas (a fresh id per start: a replica
    /// that restarts under the same name no longer runs the old tasks).
    instance: String,
    /// Questions this process asked other replicas, by number, awaiting
    /// their replies.
    asked: std::sync::Mutex<std::collections::HashMap<u64, tokio::sync::oneshot::Sender<String>>>,
    next_question: AtomicU64,
    events: broadcast::Sender<StateEvent>,
    /// Commands that failed (unreachable, refused, timed out).
    failures: AtomicU64,
    /// Whether the last command succeeded.
    up: std::sync::atomic::AtomicBool,
    stop: CancellationToken,
    /// Set when the replicas' channels are first asked for.
    listening: std::sync::Once,
    me: std::sync::Weak<RedisState>,
}

impl std::fmt::Debug for RedisState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisState")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl RedisState {
    /// Checks the settings and prepares the client; nothing connects until
    /// the first command, or until the replicas' channels are first asked
    /// for.
    pub fn new(settings: &RedisSettings) -> Result<Arc<Self>, StateError> {
        let mut info = settings
            .url
            .as_str()
            .into_connection_info()
            .map_err(|e| StateError(format!("not a Redis URL: {e}")))?;
        if let Some(password) = &settings.password {
            let redis = info.redis_settings().clone().set_password(password);
            info = info.set_redis_settings(redis);
        }
        let client = match &settings.ca_file {
            None => redis::Client::open(info),
            Some(path) => {
                let root_cert = std::fs::read(path)
                    .map_err(|e| StateError(format!("cannot read {}: {e}", path.display())))?;
                redis::Client::build_with_tls(
                    info,
                    redis::TlsCertificates {
                        client_tls: None,
                        root_cert: Some(root_cert),
                    },
                )
            }
        }
        .map_err(|e| StateError(format!("cannot use that Redis: {e}")))?;
        Ok(Arc::new_cyclic(|me| Self {
            client,
            connection: OnceCell::new(),
            prefix: settings.prefix.clone(),
            timeout: settings.timeout,
            gcra: redis::Script::new(include_str!("gcra.lua")),
            save_task: redis::Script::new(include_str!("task.lua")),
            admit: redis::Script::new(include_str!("admit.lua")),
            renew_or_end: redis::Script::new(include_str!("session.lua")),
            to_client: redis::Script::new(include_str!("to_client.lua")),
            unlock: redis::Script::new(
                "if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end",
            ),
            instance: uuid::Uuid::new_v4().simple().to_string(),
            asked: std::sync::Mutex::default(),
            next_question: AtomicU64::new(1),
            events: broadcast::channel(EVENT_BACKLOG).0,
            failures: AtomicU64::new(0),
            up: std::sync::atomic::AtomicBool::new(true),
            stop: CancellationToken::new(),
            listening: std::sync::Once::new(),
            me: me.clone(),
        }))
    }

    fn key(&self, kind: &str, id: &str) -> String {
        format!("{}:{kind}:{id}", self.prefix)
    }

    /// The index of `owner`'s tasks (`None`: the unbound ones).
    fn owner_key(&self, owner: Option<&str>) -> String {
        match owner {
            Some(owner) => self.key("tasks-of", &format!("o:{owner}")),
            None => self.key("tasks-of", "unbound"),
        }
    }

    /// Renews this process's mark of life.
    async fn beat(&self) -> Result<(), StateError> {
        let key = self.key("instance", &self.instance);
        self.run(|mut c| async move { c.pset_ex::<_, _, ()>(key, 1, millis(LIFE)).await })
            .await
    }

    async fn connection(&self) -> Result<ConnectionManager, StateError> {
        let made = self
            .connection
            .get_or_try_init(|| {
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(self.timeout))
                    .set_response_timeout(Some(self.timeout))
                    .set_number_of_retries(1);
                let client = self.client.clone();
                async move { ConnectionManager::new_with_config(client, config).await }
            })
            .await;
        made.cloned().map_err(|e| self.failed(&e))
    }

    fn failed(&self, e: &redis::RedisError) -> StateError {
        self.note_failure();
        // The error's text can name the server but never the password.
        StateError(format!("Redis: {e}"))
    }

    fn note_failure(&self) {
        self.failures.fetch_add(1, Ordering::Relaxed);
        self.up.store(false, Ordering::Relaxed);
    }

    /// Runs one command on the shared connection, within the timeout.
    async fn run<T, F>(&self, command: impl FnOnce(ConnectionManager) -> F) -> Result<T, StateError>
    where
        F: std::future::Future<Output = redis::RedisResult<T>>,
    {
        let connection = self.connection().await?;
        match tokio::time::timeout(self.timeout, command(connection)).await {
            Ok(Ok(value)) => {
                self.up.store(true, Ordering::Relaxed);
                Ok(value)
            }
            Ok(Err(e)) => Err(self.failed(&e)),
            Err(_) => {
                self.note_failure();
                Err(StateError(format!(
                    "Redis did not answer within {:?}",
                    self.timeout
                )))
            }
        }
    }

    /// Takes one call from the GCRA bucket `bucket` (see `gcra.lua`):
    /// `None` when the call may go, else how long until one may.
    pub async fn take(
        &self,
        bucket: &str,
        interval: Duration,
        burst: u32,
    ) -> Result<Option<Duration>, StateError> {
        let key = self.key("rate", bucket);
        let interval_us = u64::try_from(interval.as_micros())
            .unwrap_or(u64::MAX)
            .max(1);
        let wait_us: u64 = self
            .run(|mut c| async move {
                self.gcra
                    .key(key)
                    .arg(interval_us)
                    .arg(burst)
                    .invoke_async(&mut c)
                    .await
            })
            .await?;
        Ok((wait_us > 0).then(|| Duration::from_micros(wait_us)))
    }

    /// Renews session `id` for `ttl_ms`, or ends it (0): its record and
    /// its place among the counted sessions (see `session.lua`).
    async fn renew_or_end(&self, id: &str, ttl_ms: u64) -> Result<(), StateError> {
        let (record, all) = (self.key("session", id), self.key("sessions", "all"));
        let replay = self.key("replay", id);
        let owners = format!("{}:sessions-of:", self.prefix);
        let channel = self.ended_channel();
        self.run(|mut c| async move {
            self.renew_or_end
                .key(record)
                .key(all)
                .key(replay)
                .arg(id)
                .arg(ttl_ms)
                .arg(owners)
                .arg(channel)
                .invoke_async::<i64>(&mut c)
                .await
        })
        .await
        .map(drop)
    }

    /// The bytes kept under `kind`/`id` (for what the binary keeps shared
    /// itself, such as upstream OAuth tokens, encrypted before they come
    /// here).
    pub async fn get_bytes(&self, kind: &str, id: &str) -> Result<Option<Vec<u8>>, StateError> {
        let key = self.key(kind, id);
        self.run(|mut c| async move { c.get(key).await }).await
    }

    /// Keeps `value` under `kind`/`id`, without expiry.
    pub async fn set_bytes(&self, kind: &str, id: &str, value: &[u8]) -> Result<(), StateError> {
        let key = self.key(kind, id);
        self.run(|mut c| async move { c.set::<_, _, ()>(key, value).await })
            .await
    }

    /// Forgets what is kept under `kind`/`id`.
    pub async fn delete_bytes(&self, kind: &str, id: &str) -> Result<(), StateError> {
        let key = self.key(kind, id);
        self.run(|mut c| async move { c.del::<_, ()>(key).await })
            .await
    }

    /// Takes lock `name` for `holder` unless another holds it; it lapses
    /// after `ttl` if never released. Whether it was taken.
    pub async fn try_lock(
        &self,
        name: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<bool, StateError> {
        let key = self.key("lock", name);
        let set: Option<String> = self
            .run(|mut c| async move {
                redis::cmd("SET")
                    .arg(key)
                    .arg(holder)
                    .arg("NX")
                    .arg("PX")
                    .arg(millis(ttl))
                    .query_async(&mut c)
                    .await
            })
            .await?;
        Ok(set.is_some())
    }

    /// Releases lock `name` if `holder` still holds it (it may have lapsed
    /// and been taken by another).
    pub async fn unlock(&self, name: &str, holder: &str) -> Result<(), StateError> {
        let key = self.key("lock", name);
        self.run(|mut c| async move {
            self.unlock
                .key(key)
                .arg(holder)
                .invoke_async::<()>(&mut c)
                .await
        })
        .await
    }
}

/// A TTL in whole milliseconds, at least one.
fn millis(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1)
}

/// How long the index of an owner's upstream tasks lasts after its last
/// note: as long as the longest task (its entries expire one by one).
const UPSTREAM_TASKS_KEPT: Duration = Duration::from_secs(24 * 60 * 60);

/// Milliseconds since the epoch, by this replica's clock.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[async_trait]
impl StateBackend for RedisState {
    fn kind(&self) -> &'static str {
        "redis"
    }

    fn shared(&self) -> bool {
        true
    }

    fn healthy(&self) -> bool {
        self.up.load(Ordering::Relaxed)
    }

    fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    async fn ping(&self) -> Result<(), StateError> {
        self.run(|mut c| async move { redis::cmd("PING").query_async::<String>(&mut c).await })
            .await
            .map(drop)
    }

    async fn save_session(
        &self,
        id: &str,
        record: &SessionRecord,
        ttl: Duration,
    ) -> Result<(), StateError> {
        let key = self.key("session", id);
        let value = serde_json::to_string(record)
            .map_err(|e| StateError(format!("session record: {e}")))?;
        self.run(|mut c| async move { c.pset_ex::<_, _, ()>(key, value, millis(ttl)).await })
            .await
    }

    async fn update_session(
        &self,
        id: &str,
        record: &SessionRecord,
        ttl: Duration,
    ) -> Result<(), StateError> {
        let (key, channel) = (self.key("session", id), self.changed_channel());
        let value = serde_json::to_string(record)
            .map_err(|e| StateError(format!("session record: {e}")))?;
        let payload = serde_json::to_string(&Forwarded {
            session: id.into(),
            message: value.as_str().into(),
        })
        .map_err(|e| StateError(format!("session record: {e}")))?;
        self.run(|mut c| async move {
            redis::pipe()
                .pset_ex(key, value, millis(ttl))
                .ignore()
                .publish(channel, payload)
                .ignore()
                .query_async::<()>(&mut c)
                .await
        })
        .await
    }

    async fn load_session(&self, id: &str) -> Result<Option<SessionRecord>, StateError> {
        let key = self.key("session", id);
        let text: Option<String> = self.run(|mut c| async move { c.get(key).await }).await?;
        // A record this version cannot read is no session of it.
        Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
    }

    async fn admit_session(
        &self,
        id: &str,
        owner: &str,
        (total, per_owner): (usize, usize),
        ttl: Duration,
    ) -> Result<SessionAdmission, StateError> {
        let (all, mine) = (self.key("sessions", "all"), self.key("sessions-of", owner));
        let admitted: i64 = self
            .run(|mut c| async move {
                self.admit
                    .key(all)
                    .key(mine)
                    .arg(id)
                    .arg(millis(ttl))
                    .arg(total)
                    .arg(per_owner)
                    .invoke_async(&mut c)
                    .await
            })
            .await?;
        Ok(match admitted {
            0 => SessionAdmission::Admitted,
            2 => SessionAdmission::FullForOwner,
            _ => SessionAdmission::Full,
        })
    }

    async fn refresh_session(&self, id: &str, ttl: Duration) -> Result<(), StateError> {
        self.renew_or_end(id, millis(ttl)).await
    }

    async fn delete_session(&self, id: &str) -> Result<(), StateError> {
        self.renew_or_end(id, 0).await
    }

    async fn forward(&self, session: &str, message: &str) -> Result<(), StateError> {
        let channel = self.forward_channel();
        let payload = serde_json::to_string(&Forwarded {
            session: session.into(),
            message: message.into(),
        })
        .map_err(|e| StateError(format!("forwarded message: {e}")))?;
        self.run(|mut c| async move { c.publish::<_, _, ()>(channel, payload).await })
            .await
    }

    async fn epoch(&self) -> Result<Option<String>, StateError> {
        let key = self.key("epoch", "current");
        let fresh = uuid::Uuid::new_v4().simple().to_string();
        let (epoch,): (String,) = self
            .run(|mut c| async move {
                redis::pipe()
                    .cmd("SET")
                    .arg(&key)
                    .arg(fresh)
                    .arg("NX")
                    .ignore()
                    .get(&key)
                    .query_async(&mut c)
                    .await
            })
            .await?;
        Ok(Some(epoch))
    }

    fn instance(&self) -> &str {
        &self.instance
    }

    async fn instance_alive(&self, instance: &str) -> Result<bool, StateError> {
        let key = self.key("instance", instance);
        self.run(|mut c| async move { c.exists(key).await }).await
    }

    async fn save_task(
        &self,
        id: &str,
        record: &TaskRecord,
        ttl: Option<Duration>,
    ) -> Result<bool, StateError> {
        let value =
            serde_json::to_string(record).map_err(|e| StateError(format!("task record: {e}")))?;
        if ttl.is_some() {
            // The task's replica is alive from its first task on, whatever
            // the timing of its first beat.
            self.beat().await?;
        }
        let (task_key, owner_key) = (
            self.key("task", id),
            self.owner_key(record.owner.as_deref()),
        );
        let ttl_ms = ttl.map_or(0, millis);
        let channel = self.task_changed_channel();
        let written: i64 = self
            .run(|mut c| async move {
                self.save_task
                    .key(task_key)
                    .key(owner_key)
                    .arg(record.status())
                    .arg(value)
                    .arg(ttl_ms)
                    .arg(record.created_ms)
                    .arg(id)
                    .arg(channel)
                    .invoke_async(&mut c)
                    .await
            })
            .await?;
        Ok(written == 1)
    }

    async fn load_task(&self, id: &str) -> Result<Option<TaskRecord>, StateError> {
        let key = self.key("task", id);
        let text: Option<String> = self
            .run(|mut c| async move { c.hget(key, "record").await })
            .await?;
        Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
    }

    async fn owner_tasks(
        &self,
        owner: Option<&str>,
    ) -> Result<Vec<(String, TaskRecord)>, StateError> {
        let index = self.owner_key(owner);
        let ids: Vec<String> = {
            let index = index.clone();
            self.run(|mut c| async move { c.zrange(index, 0, -1).await })
                .await?
        };
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut read = redis::pipe();
        for id in &ids {
            read.hget(self.key("task", id), "record");
        }
        let texts: Vec<Option<String>> = self
            .run(|mut c| async move { read.query_async(&mut c).await })
            .await?;
        let (mut live, mut gone) = (Vec::new(), Vec::new());
        for (id, text) in ids.into_iter().zip(texts) {
            match text.and_then(|t| serde_json::from_str::<TaskRecord>(&t).ok()) {
                Some(record) => live.push((id, record)),
                None => gone.push(id),
            }
        }
        if !gone.is_empty() {
            // Expired tasks leave the index as they are found.
            let _ = self
                .run(|mut c| async move { c.zrem::<_, _, ()>(index, gone).await })
                .await;
        }
        Ok(live)
    }

    async fn task_result_waiting(&self, id: &str) -> Result<(), StateError> {
        let (channel, id) = (self.task_result_waiting_channel(), id.to_owned());
        self.run(|mut c| async move { c.publish::<_, _, ()>(channel, id).await })
            .await
    }

    async fn to_client(&self, session: &str, message: &str, keep: usize) -> Result<(), StateError> {
        self.publish_to_client(session, message, keep).await
    }

    async fn release_held(&self, key: &str) -> Result<(), StateError> {
        let key = self.key("held", key);
        self.run(|mut c| async move {
            self.unlock
                .key(key)
                .arg(&self.instance)
                .invoke_async::<()>(&mut c)
                .await
        })
        .await
    }

    async fn list_changed(&self, method: &str) -> Result<(), StateError> {
        self.publish_list_change(method).await
    }

    async fn append_stream(
        &self,
        session: &str,
        message: &str,
        keep: usize,
        ttl: Duration,
    ) -> Result<Option<String>, StateError> {
        self.append_to_log(session, message, keep, ttl)
            .await
            .map(Some)
    }

    async fn stream_after(
        &self,
        session: &str,
        after: &str,
    ) -> Result<Option<Vec<(String, String)>>, StateError> {
        self.log_after(session, after).await
    }

    async fn note_held(&self, key: &str, ttl: Duration) -> Result<(), StateError> {
        let (key, instance) = (self.key("held", key), self.instance.clone());
        self.run(|mut c| async move { c.pset_ex::<_, _, ()>(key, instance, millis(ttl)).await })
            .await
    }

    async fn note_upstream_task(
        &self,
        owner: &str,
        id: &str,
        ttl: Duration,
    ) -> Result<(), StateError> {
        let key = self.key("upstream-tasks-of", owner);
        let until = now_ms().saturating_add(millis(ttl));
        self.run(|mut c| async move {
            redis::pipe()
                .zadd(&key, id, until)
                .ignore()
                .pexpire(&key, millis(UPSTREAM_TASKS_KEPT) as i64)
                .ignore()
                .query_async::<()>(&mut c)
                .await
        })
        .await
    }

    async fn upstream_tasks(&self, owner: &str) -> Result<Vec<String>, StateError> {
        let key = self.key("upstream-tasks-of", owner);
        let (ids,): (Vec<String>,) = self
            .run(|mut c| async move {
                redis::pipe()
                    .zrembyscore(&key, "-inf", now_ms())
                    .ignore()
                    .zrange(&key, 0, -1)
                    .query_async(&mut c)
                    .await
            })
            .await?;
        Ok(ids)
    }

    async fn holder(&self, key: &str) -> Result<Option<String>, StateError> {
        let key = self.key("held", key);
        self.run(|mut c| async move { c.get(key).await }).await
    }

    async fn ask(
        &self,
        instance: &str,
        question: &str,
        timeout: Duration,
    ) -> Result<String, StateError> {
        let id = self.next_question.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.asked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, tx);
        let forget = || {
            self.asked
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&id);
        };
        let payload = serde_json::to_string(&Addressed {
            to: instance.to_owned(),
            from: self.instance.clone(),
            id,
            body: question.to_owned(),
        })
        .map_err(|e| StateError(format!("question: {e}")))?;
        let channel = self.ask_channel();
        if let Err(e) = self
            .run(|mut c| async move { c.publish::<_, _, ()>(channel, payload).await })
            .await
        {
            forget();
            return Err(e);
        }
        // The replica asked may die meanwhile: its mark of life is
        // checked while the reply is awaited.
        let deadline = tokio::time::Instant::now() + timeout;
        let mut rx = rx;
        loop {
            let check = (deadline - tokio::time::Instant::now()).min(BEAT);
            match tokio::time::timeout(check, &mut rx).await {
                Ok(Ok(reply)) => return Ok(reply),
                Ok(Err(_)) => break,
                Err(_) if tokio::time::Instant::now() >= deadline => break,
                Err(_) => {
                    if matches!(self.instance_alive(instance).await, Ok(false)) {
                        forget();
                        return Err(StateError("the replica that holds it stopped".into()));
                    }
                }
            }
        }
        forget();
        Err(StateError(format!(
            "the replica that holds it did not answer within {timeout:?}"
        )))
    }

    async fn reply(&self, to: &str, id: u64, answer: &str) -> Result<(), StateError> {
        let payload = serde_json::to_string(&Addressed {
            to: to.to_owned(),
            from: self.instance.clone(),
            id,
            body: answer.to_owned(),
        })
        .map_err(|e| StateError(format!("reply: {e}")))?;
        let channel = self.reply_channel();
        self.run(|mut c| async move { c.publish::<_, _, ()>(channel, payload).await })
            .await
    }

    async fn cancel_task(&self, id: &str) -> Result<(), StateError> {
        let channel = self.task_cancel_channel();
        self.run(|mut c| async move { c.publish::<_, _, ()>(channel, id).await })
            .await
    }

    fn events(&self) -> Option<broadcast::Receiver<StateEvent>> {
        let receiver = self.events.subscribe();
        self.listening.call_once(|| {
            self.listen();
            self.keep_alive();
        });
        Some(receiver)
    }

    fn close(&self) {
        self.stop.cancel();
    }
}
