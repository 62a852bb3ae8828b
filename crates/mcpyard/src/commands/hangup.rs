//! SIGHUP: the configuration is read and checked again, and what changed
//! is logged. The running gateway keeps the configuration it started with:
//! sources are not added, removed or restarted live yet, so the log says a
//! restart applies the change.

use std::path::PathBuf;

use crate::config::{self, Settings};

/// What a reload compares: each server and API as written.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Written {
    servers: Vec<(String, String, bool)>,
    apis: Vec<(String, String, bool)>,
}

impl Written {
    fn of(settings: &Settings) -> Self {
        Self {
            servers: settings
                .servers
                .iter()
                .map(|s| (s.name.clone(), s.target.clone(), s.enabled))
                .collect(),
            apis: settings
                .apis
                .iter()
                .map(|a| (a.name.clone(), a.spec.clone(), a.enabled))
                .collect(),
        }
    }
}

/// Reports on every SIGHUP until the process ends.
pub(super) fn watch(path: Option<PathBuf>, loaded: &Settings) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut hangups = match signal(SignalKind::hangup()) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGHUP");
                return;
            }
        };
        let mut known = Written::of(loaded);
        let source = loaded.source.clone();
        tokio::spawn(async move {
            while hangups.recv().await.is_some() {
                match config::load_or_default(path.as_deref()) {
                    Err(e) => tracing::warn!(
                        "SIGHUP: {source} has an error; the running configuration stays as it is: {e}"
                    ),
                    Ok(fresh) => {
                        let now = Written::of(&fresh);
                        match changes(&known, &now) {
                            None => tracing::info!("SIGHUP: {source} read again: nothing changed"),
                            Some(what) => tracing::warn!(
                                "SIGHUP: {source} read again and valid: {what}; the running gateway keeps its configuration (restart mcpyard to apply it: sources are not reloaded live yet)"
                            ),
                        }
                        known = now;
                    }
                }
            }
        });
    }
    #[cfg(not(unix))]
    let _ = (path, loaded);
}

/// What changed between two readings, in a line; `None` for nothing.
fn changes(before: &Written, after: &Written) -> Option<String> {
    let mut parts = Vec::new();
    for (kind, old, new) in [
        ("servers", &before.servers, &after.servers),
        ("APIs", &before.apis, &after.apis),
    ] {
        let names = |list: &[(String, String, bool)],
                     keep: &dyn Fn(&(String, String, bool)) -> bool| {
            list.iter()
                .filter(|e| keep(e))
                .map(|e| e.0.clone())
                .collect::<Vec<_>>()
        };
        let added = names(new, &|e| !old.iter().any(|o| o.0 == e.0));
        let removed = names(old, &|e| !new.iter().any(|n| n.0 == e.0));
        let changed = names(new, &|e| old.iter().any(|o| o.0 == e.0 && o != e));
        for (verb, list) in [("added", added), ("removed", removed), ("changed", changed)] {
            if !list.is_empty() {
                parts.push(format!("{kind} {verb}: {}", list.join(", ")));
            }
        }
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, target: &str) -> (String, String, bool) {
        (name.into(), target.into(), true)
    }

    #[test]
    fn changes_name_what_was_added_removed_and_changed() {
        let before = Written {
            servers: vec![entry("a", "npx a"), entry("b", "npx b")],
            apis: vec![],
        };
        assert_eq!(changes(&before, &before.clone()), None);
        let after = Written {
            servers: vec![entry("a", "npx a2"), entry("c", "npx c")],
            apis: vec![entry("pets", "pets.yaml")],
        };
        assert_eq!(
            changes(&before, &after).as_deref(),
            Some("servers added: c; servers removed: b; servers changed: a; APIs added: pets")
        );
    }
}
