//! Reloading the configuration while serving: on SIGHUP, and when the file
//! changes (watched with `notify`). The file is read and checked again; one
//! that does not validate is refused with a log line naming the error and
//! the running configuration stays. A valid one is applied to the running
//! gateway (`Gateway::reconfigure`): servers and APIs added, removed or
//! restarted when their settings changed, exposure, the policy, the rate
//! limits and the guardrails replaced; sessions stay. The HTTP door's API
//! keys are replaced too: a key taken out is refused from then on. What
//! only a restart applies (the listen address, OAuth, the front doors'
//! limits, turning authentication on or off, the audit, metrics and
//! traces) is said in the log.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use mcpyard_gateway::{settings_hash as hash, Gateway, Governance, Reconfiguration, Reloaded};
use mcpyard_server::{ApiKeySpec, AuthOptions, LiveKeys};
use tokio::sync::mpsc;

use crate::config::{self, Settings};

/// A file written in several steps (an editor's save) is read once the
/// writes have stopped for this long.
const SETTLE: Duration = Duration::from_millis(300);

/// What a reload compares besides the sources (which carry their own
/// fingerprints): hashes of each part's settings as loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Known {
    governance: u64,
    /// The local models' source, which also answers upstreams' sampling.
    local_models: Option<u64>,
    /// (what it is, in the log's words; its hash)
    restart_only: Vec<(&'static str, u64)>,
}

impl Known {
    /// Read from settings as loaded, before anything ran with them (a rate
    /// limiter's debug form would show its counts later).
    fn of(settings: &Settings) -> Self {
        let g = &settings.gateway;
        let local_models = g
            .sources
            .iter()
            .find(|s| s.name() == mcpyard_inference::SOURCE_NAME)
            .and_then(|s| s.fingerprint());
        Self {
            governance: hash(&(&g.policy, &g.rate_limiter, &g.guard)),
            local_models,
            restart_only: vec![
                ("`listen`", hash(&settings.http.listen)),
                (
                    "the front doors' settings ([auth.oauth], [auth.stdio], [http], [limits], api_key, hosts and origins)",
                    hash(&(&without_keys(&settings.http), &settings.api_key, &settings.stdio)),
                ),
                ("`log_level`", hash(&settings.log_level)),
                ("[audit]", hash(&settings.audit)),
                ("[metrics]", hash(&settings.metrics)),
                ("[telemetry]", hash(&settings.telemetry)),
                ("[state]", settings.state_fingerprint),
                (
                    "the sessions' and lists' settings (page_size, session_idle_timeout, max_sessions, search_tools, apps, client_request_timeout)",
                    hash(&(
                        g.page_size,
                        g.session_idle_timeout,
                        g.max_sessions,
                        g.max_sessions_per_identity,
                        g.search_tools,
                        &g.apps,
                        g.client_request_timeout,
                    )),
                ),
            ],
        }
    }
}

/// The HTTP door's settings but its API keys, which a reload replaces.
fn without_keys(http: &mcpyard_server::HttpOptions) -> mcpyard_server::HttpOptions {
    let mut door = http.clone();
    door.auth.keys.clear();
    door
}

/// The API keys of a serving HTTP door, as a reload replaces them.
pub(super) struct DoorKeys {
    live: LiveKeys,
    /// The one-key shorthand's key, as the process started with it (the
    /// `--api-key` flag or the environment may have set it).
    shorthand: Vec<ApiKeySpec>,
    /// Whether the door asks for credentials: fixed while it serves.
    required: bool,
}

impl DoorKeys {
    /// The door's keys as it starts serving with `auth` (the shorthand's key
    /// first, as `compose::http_options` puts it).
    pub(super) fn of(auth: &AuthOptions, shorthand: Option<&crate::config::ApiKey>) -> Self {
        Self {
            live: auth.live_keys.clone(),
            shorthand: shorthand
                .map(|k| AuthOptions::single_key(k.value.clone()).keys)
                .unwrap_or_default(),
            required: auth.is_required(),
        }
    }

    /// Puts the keys of `auth` in place; whether any changed. `Err` when
    /// they would turn authentication on or off, which waits for a restart.
    fn apply(&self, auth: &AuthOptions) -> Result<bool, ()> {
        let required = !self.shorthand.is_empty() || auth.is_required();
        if required != self.required {
            return Err(());
        }
        let keys: Vec<ApiKeySpec> = self.shorthand.iter().chain(&auth.keys).cloned().collect();
        Ok(self.live.replace(&keys))
    }
}

/// The reloads of one serving process.
pub(super) struct Reload {
    path: Option<PathBuf>,
    source: String,
    known: Known,
    keys: Option<DoorKeys>,
    /// What `[state]` made at start, which every reload keeps.
    state: config::StateSettings,
}

impl Reload {
    /// For the configuration `loaded` from `path` (`None`: the embedded
    /// default, which SIGHUP reads again and nothing watches).
    pub(super) fn new(path: Option<PathBuf>, loaded: &Settings) -> Self {
        Self {
            path,
            source: loaded.source.clone(),
            known: Known::of(loaded),
            keys: None,
            state: loaded.state.clone(),
        }
    }

    /// Reloads on every SIGHUP and change of the file, until the process
    /// ends. `keys`: the HTTP door's, replaced by each reload (the stdio
    /// door has none).
    pub(super) fn start(mut self, gateway: &Gateway, keys: Option<DoorKeys>) {
        self.keys = keys;
        let gateway = gateway.clone();
        gateway.serving_config(&self.source);
        let (changed, mut changes) = mpsc::channel::<()>(1);
        let watcher = self.path.as_deref().and_then(|p| watch_file(p, changed));
        #[cfg(unix)]
        let mut hangups =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
                Ok(s) => Some(s),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot listen for SIGHUP");
                    None
                }
            };
        tokio::spawn(async move {
            // Dropped with the task: the file is watched while it runs.
            let _watcher = watcher;
            loop {
                #[cfg(unix)]
                let hangup = async {
                    match &mut hangups {
                        Some(h) => h.recv().await,
                        None => std::future::pending().await,
                    }
                };
                #[cfg(not(unix))]
                let hangup = std::future::pending::<Option<()>>();
                let why = tokio::select! {
                    Some(()) = hangup => "SIGHUP",
                    Some(()) = changes.recv() => {
                        // Let a save in several writes finish.
                        tokio::time::sleep(SETTLE).await;
                        while changes.try_recv().is_ok() {}
                        "the file changed"
                    }
                    else => break,
                };
                self.once(&gateway, why).await;
            }
        });
    }

    /// One reload.
    async fn once(&mut self, gateway: &Gateway, why: &str) {
        let source = &self.source;
        let mut fresh = match config::reload(self.path.as_deref(), &self.state) {
            Ok(fresh) => fresh,
            Err(e) => return refuse(gateway, why, &format!("{source} has an error"), &e),
        };
        let now = Known::of(&fresh);
        let governance = (now.governance != self.known.governance).then(|| Governance {
            policy: fresh.gateway.policy.take(),
            rate_limiter: fresh.gateway.rate_limiter.take(),
            guard: fresh.gateway.guard.take(),
        });
        let sources = std::mem::take(&mut fresh.gateway.sources);
        let models_changed = now.local_models != self.known.local_models;
        let sampler = models_changed
            .then(|| fresh.local_models.clone())
            .flatten()
            .map(|m| Arc::new(m) as Arc<dyn mcpyard_gateway::Sampler>);
        let asked_sampler = sampler.is_some();
        let report = match gateway
            .reconfigure(Reconfiguration {
                sources,
                governance,
                sampler,
            })
            .await
        {
            Ok(report) => report,
            Err(e) => return refuse(gateway, why, &format!("{source} was refused"), &e),
        };
        for w in &fresh.warnings {
            tracing::warn!("{w}");
        }
        let keys_replaced = match self.keys.as_ref().map(|k| k.apply(&fresh.http.auth)) {
            Some(Ok(changed)) => changed,
            Some(Err(())) => {
                tracing::warn!("{why}: {source} turns authentication on or off ([auth.keys], api_key, [auth.oauth]): that takes effect when mcpyard is restarted; the running keys stay");
                false
            }
            None => false,
        };
        if models_changed && !(asked_sampler && report.sampler) {
            tracing::warn!("{why}: local models turned on or off in {source}: upstreams' sampling follows when mcpyard is restarted");
        }
        let done = summary(&report, keys_replaced);
        gateway.record_reload(Ok(&done));
        tracing::info!("{why}: {source} reloaded: {done}");
        for ((what, before), (_, after)) in self.known.restart_only.iter().zip(&now.restart_only) {
            if before != after {
                tracing::warn!("{why}: {what} changed in {source}: that takes effect when mcpyard is restarted");
            }
        }
        self.known = now;
    }
}

/// A reload that did not happen: logged and recorded, the running
/// configuration kept.
fn refuse(gateway: &Gateway, why: &str, what: &str, error: &dyn std::fmt::Display) {
    tracing::error!("{why}: {what}; the running configuration stays as it is: {error}");
    gateway.record_reload(Err(&error.to_string()));
}

/// What a reload did, in a line.
fn summary(report: &Reloaded, keys_replaced: bool) -> String {
    let mut parts = Vec::new();
    for (verb, names) in [
        ("added", &report.added),
        ("removed", &report.removed),
        ("restarted", &report.restarted),
        ("exposed anew", &report.exposed_anew),
    ] {
        if !names.is_empty() {
            parts.push(format!("sources {verb}: {}", names.join(", ")));
        }
    }
    if report.governance {
        parts.push("policy, rate limits and guardrails replaced".to_owned());
    }
    if report.sampler {
        parts.push("the local models answering upstreams' sampling replaced".to_owned());
    }
    if keys_replaced {
        parts.push("API keys replaced".to_owned());
    }
    if parts.is_empty() {
        "nothing the gateway serves changed".to_owned()
    } else {
        parts.join("; ")
    }
}

/// The watch of the config file: it ends when dropped.
struct FileWatch {
    #[cfg(target_os = "linux")]
    task: tokio::task::JoinHandle<()>,
    #[cfg(not(target_os = "linux"))]
    _watcher: notify::RecommendedWatcher,
}

#[cfg(target_os = "linux")]
impl Drop for FileWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Watches the file's folder (an editor often saves by renaming a new file
/// over the old one) and sends on `changed` when an event names the file.
/// `None`, logged, when the platform will not watch it.
fn watch_file(path: &Path, changed: mpsc::Sender<()>) -> Option<FileWatch> {
    let absolute = std::path::absolute(path).ok()?;
    let name = absolute.file_name()?.to_owned();
    let folder = absolute.parent()?.to_owned();
    let watched = watch_folder(&folder, move |file: &std::ffi::OsStr| {
        if file == name {
            // Full: a reload is pending already.
            let _ = changed.try_send(());
        }
    });
    if let Err(e) = &watched {
        tracing::warn!(error = %e, file = %absolute.display(), "cannot watch the configuration file; SIGHUP still reloads it");
    }
    watched.ok()
}

/// Calls `named` with the name of each file of `folder` written and
/// closed, created or renamed into it. Not at each write: an audit trail
/// kept in the same folder would wake the watcher at every call.
#[cfg(target_os = "linux")]
fn watch_folder(
    folder: &Path,
    named: impl Fn(&std::ffi::OsStr) + Send + 'static,
) -> std::io::Result<FileWatch> {
    use futures::StreamExt as _;
    use inotify::{Inotify, WatchMask};
    let inotify = Inotify::init()?;
    inotify.watches().add(
        folder,
        WatchMask::CLOSE_WRITE | WatchMask::MOVED_TO | WatchMask::CREATE,
    )?;
    let mut events = inotify.into_event_stream(vec![0u8; 4096])?;
    let task = tokio::spawn(async move {
        while let Some(event) = events.next().await {
            match event {
                Ok(event) => {
                    if let Some(file) = &event.name {
                        named(file);
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "the configuration file is no longer watched; SIGHUP still reloads it");
                    return;
                }
            }
        }
    });
    Ok(FileWatch { task })
}

#[cfg(not(target_os = "linux"))]
fn watch_folder(
    folder: &Path,
    named: impl Fn(&std::ffi::OsStr) + Send + 'static,
) -> std::io::Result<FileWatch> {
    use notify::Watcher as _;
    let handler = move |event: notify::Result<notify::Event>| {
        let Ok(event) = event else { return };
        if event.kind.is_access() {
            return;
        }
        for file in event.paths.iter().filter_map(|p| p.file_name()) {
            named(file);
        }
    };
    let mut watcher = notify::recommended_watcher(handler).map_err(std::io::Error::other)?;
    watcher
        .watch(folder, notify::RecursiveMode::NonRecursive)
        .map_err(std::io::Error::other)?;
    Ok(FileWatch { _watcher: watcher })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_names_what_was_added_removed_restarted_and_exposed_anew() {
        assert_eq!(
            summary(&Reloaded::default(), false),
            "nothing the gateway serves changed"
        );
        let report = Reloaded {
            added: vec!["c".into()],
            removed: vec!["b".into()],
            restarted: vec!["a".into()],
            exposed_anew: vec!["d".into()],
            governance: true,
            sampler: true,
        };
        assert_eq!(
            summary(&report, true),
            "sources added: c; sources removed: b; sources restarted: a; sources exposed anew: d; policy, rate limits and guardrails replaced; the local models answering upstreams' sampling replaced; API keys replaced"
        );
    }

    #[test]
    fn what_only_a_restart_applies_is_told_apart() {
        let a = crate::config::tests::toml("listen = \"127.0.0.1:7001\"\n").expect("valid");
        let b = crate::config::tests::toml("listen = \"127.0.0.1:7002\"\n").expect("valid");
        let (ka, kb) = (Known::of(&a), Known::of(&b));
        assert_eq!(ka.governance, kb.governance);
        let differing: Vec<&str> = ka
            .restart_only
            .iter()
            .zip(&kb.restart_only)
            .filter(|(x, y)| x.1 != y.1)
            .map(|(x, _)| x.0)
            .collect();
        assert!(differing.contains(&"`listen`"), "{differing:?}");
        assert_eq!(
            Known::of(&a),
            Known::of(&crate::config::tests::toml("listen = \"127.0.0.1:7001\"\n").expect("valid"))
        );
    }
}
