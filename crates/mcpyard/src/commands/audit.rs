//! `mcpyard audit`: the audit trail read back, oldest first across its
//! rotated files, filtered by identity, tool, source, outcome and time,
//! as a table or as JSON lines.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::Context as _;
use mcpyard_gateway::{glob_match, AuditFile};
use serde_json::Value;

use crate::cli::AuditArgs;
use crate::config;

/// Rotated files looked for at most (`audit.jsonl.1` … `.N`).
const MAX_ROTATED: usize = 10_000;

pub(super) fn run(args: AuditArgs) -> anyhow::Result<ExitCode> {
    let path = match (&args.file, &args.config) {
        (Some(file), _) => file.clone(),
        (None, Some(config)) => {
            let settings = config::load(config)?;
            settings
                .audit
                .map(|a| a.path)
                .with_context(|| format!("{}: no [audit] file is configured", config.display()))?
        }
        (None, None) => anyhow::bail!("give --config or --file"),
    };
    let since = args.since.as_deref().map(parse_since).transpose()?;
    let files = trail_files(&path);
    if files.is_empty() {
        anyhow::bail!("no audit file at {}", path.display());
    }
    let mut matched = Vec::new();
    let mut unreadable = 0;
    for file in &files {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("cannot read {}", file.display()))?;
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let Ok(record) = serde_json::from_str::<Value>(line) else {
                unreadable += 1;
                continue;
            };
            if keeps(&args, since, &record) {
                matched.push((line.to_owned(), record));
            }
        }
    }
    if unreadable > 0 {
        eprintln!("{unreadable} line(s) are not JSON records and were skipped");
    }
    if args.json {
        for (line, _) in &matched {
            println!("{line}");
        }
    } else {
        print!(
            "{}",
            render(&matched.iter().map(|(_, r)| r).collect::<Vec<_>>())
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The rotated files, oldest first, then the current one.
fn trail_files(path: &Path) -> Vec<PathBuf> {
    let rotated = AuditFile {
        path: path.to_owned(),
        max_size: 0,
        keep: 0,
    };
    let mut files: Vec<PathBuf> = (1..=MAX_ROTATED)
        .map(|n| rotated.rotated(n))
        .take_while(|p| p.exists())
        .collect();
    files.reverse();
    if path.exists() {
        files.push(path.to_owned());
    }
    files
}

/// `2026-01-31T12:00:00Z`, or a duration back from now (`2h`).
fn parse_since(text: &str) -> anyhow::Result<SystemTime> {
    if let Ok(time) = humantime::parse_rfc3339_weak(text) {
        return Ok(time);
    }
    let back = humantime::parse_duration(text).map_err(|_| {
        anyhow::anyhow!(
            "--since: expected an RFC 3339 time (2026-01-31T12:00:00Z) or a duration (30m, 2h, 7d)"
        )
    })?;
    Ok(SystemTime::now()
        .checked_sub(back)
        .unwrap_or(SystemTime::UNIX_EPOCH))
}

fn keeps(args: &AuditArgs, since: Option<SystemTime>, record: &Value) -> bool {
    let field = |key: &str| record.get(key).and_then(Value::as_str).unwrap_or("");
    let equal =
        |wanted: &Option<String>, key: &str| wanted.as_deref().is_none_or(|w| field(key) == w);
    if !(equal(&args.identity, "identity")
        && equal(&args.source, "source")
        && equal(&args.outcome, "outcome"))
    {
        return false;
    }
    if let Some(pattern) = &args.tool {
        if !glob_match(pattern, field("tool")) {
            return false;
        }
    }
    match since {
        None => true,
        Some(since) => humantime::parse_rfc3339_weak(field("time")).is_ok_and(|t| t >= since),
    }
}

fn render(records: &[&Value]) -> String {
    if records.is_empty() {
        return "no matching records\n".to_owned();
    }
    let header = [
        "TIME", "IDENTITY", "SOURCE", "TOOL", "OUTCOME", "MS", "REASON",
    ];
    let rows: Vec<[String; 7]> = records
        .iter()
        .map(|r| {
            let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("-").to_owned();
            let ms = r
                .get("duration_ms")
                .and_then(Value::as_f64)
                .map_or("-".into(), |d| format!("{d:.1}"));
            [
                s("time"),
                s("identity"),
                s("source"),
                s("tool"),
                s("outcome"),
                ms,
                s("reason"),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        padded.join("  ").trim_end().to_owned() + "\n"
    };
    let mut out = line(&header.map(str::to_owned));
    for row in &rows {
        out += &line(row);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn since_takes_a_time_or_a_duration() {
        let t = parse_since("2026-01-31T12:00:00Z").unwrap();
        assert_eq!(
            humantime::format_rfc3339(t).to_string(),
            "2026-01-31T12:00:00Z"
        );
        let hour_ago = parse_since("1h").unwrap();
        let elapsed = SystemTime::now().duration_since(hour_ago).unwrap();
        assert!(elapsed >= Duration::from_secs(3600) && elapsed < Duration::from_secs(3700));
        assert!(parse_since("yesterday").is_err());
    }
}
