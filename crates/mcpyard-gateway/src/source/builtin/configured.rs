//! Which configuration the gateway serves and how its reloads went: kept
//! for the status tool (and so the status page), set by whoever loads the
//! configuration (the binary), since the gateway itself reads no file.

use std::sync::Mutex;
use std::time::SystemTime;

use serde_json::{json, Value};

#[derive(Debug, Default)]
pub(crate) struct Configured {
    record: Mutex<Record>,
}

#[derive(Debug, Default)]
struct Record {
    file: Option<String>,
    loaded_at: Option<String>,
    applied: u64,
    refused: u64,
    /// The last reload: when, its outcome, and what it did or why not.
    last: Option<(String, &'static str, String)>,
}

fn now() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

impl Configured {
    /// The gateway serves the configuration read from `file` (as the user
    /// named it), from now.
    pub(crate) fn loaded(&self, file: &str) {
        let mut record = self.record.lock().expect("config record poisoned");
        record.file = Some(file.to_owned());
        record.loaded_at = Some(now());
    }

    /// A reload: `Ok(what it did)` or `Err(why it was refused)`.
    pub(crate) fn reloaded(&self, outcome: Result<&str, &str>) {
        let mut record = self.record.lock().expect("config record poisoned");
        let (outcome, text) = match outcome {
            Ok(done) => {
                record.applied += 1;
                record.loaded_at = Some(now());
                ("applied", done)
            }
            Err(why) => {
                record.refused += 1;
                ("refused", why)
            }
        };
        record.last = Some((now(), outcome, text.to_owned()));
    }

    /// For the status: `None` when no file was named.
    pub(crate) fn status(&self) -> Option<Value> {
        let record = self.record.lock().expect("config record poisoned");
        let file = record.file.as_ref()?;
        let mut status = json!({
            "file": file,
            "loadedAt": record.loaded_at,
            "reloads": {"applied": record.applied, "refused": record.refused},
        });
        if let Some((at, outcome, text)) = &record.last {
            status["lastReload"] = json!({"at": at, "outcome": outcome, "detail": text});
        }
        Some(status)
    }
}

/// The status's line on the configuration.
pub(crate) fn line(config: &Value) -> String {
    let text = |v: &Value| v.as_str().unwrap_or("?").to_owned();
    let mut line = format!(
        "config: {} (loaded {})",
        text(&config["file"]),
        text(&config["loadedAt"])
    );
    if let Some(last) = config.get("lastReload") {
        line.push_str(&format!(
            "; last reload {} {}: {}",
            text(&last["at"]),
            text(&last["outcome"]),
            text(&last["detail"])
        ));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reloads_are_counted_and_the_last_one_kept() {
        let configured = Configured::default();
        assert!(configured.status().is_none());
        configured.loaded("mcpyard.toml");
        configured.reloaded(Ok("sources added: a"));
        configured.reloaded(Err("`lisen`: unknown key"));
        let status = configured.status().expect("a file");
        assert_eq!(status["file"], "mcpyard.toml");
        assert_eq!(status["reloads"], json!({"applied": 1, "refused": 1}));
        assert_eq!(status["lastReload"]["outcome"], "refused");
        assert_eq!(status["lastReload"]["detail"], "`lisen`: unknown key");
        let line = line(&status);
        assert!(line.starts_with("config: mcpyard.toml (loaded "), "{line}");
        assert!(line.ends_with(" refused: `lisen`: unknown key"), "{line}");
    }
}
