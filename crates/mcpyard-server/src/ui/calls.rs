//! The status page's "Calls" table (per tool over the last minutes, with a
//! sparkline of calls per bucket drawn as inline SVG: no asset to fetch,
//! nothing the page's Content-Security-Policy forbids) and its "Recent
//! calls" table (the audit's last calls, while the audit trail is on), both
//! from the `calls` section of the status tool's structured content, which
//! holds only the tools the viewer may call.

use std::fmt::Write as _;

use serde_json::Value;

use super::html::escape;

/// The sparkline's size, in pixels.
const SPARK_WIDTH: f64 = 120.0;
const SPARK_HEIGHT: f64 = 24.0;

pub(super) fn tables(out: &mut String, status: Option<&Value>) {
    let Some(calls) = status.and_then(|s| s.get("calls")) else {
        return;
    };
    per_tool(out, calls);
    recent(out, calls);
}

fn per_tool(out: &mut String, calls: &Value) {
    let minutes = calls["windowSeconds"].as_u64().unwrap_or(0) / 60;
    let bucket = calls["bucketSeconds"].as_u64().unwrap_or(0);
    let _ = write!(
        out,
        "<h2>Calls, last {minutes} minutes</h2><table id=\"calls\"><thead><tr><th>tool</th>\
<th>calls</th><th>errors</th><th>p50</th><th>p95</th><th>calls per {bucket} s</th></tr></thead><tbody>"
    );
    let tools = calls["tools"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    if tools.is_empty() {
        out.push_str("<tr><td colspan=\"6\" class=\"muted\">No calls yet.</td></tr>");
    }
    for t in tools {
        let tool = escape(t["tool"].as_str().unwrap_or("?"));
        let n = t["calls"].as_u64().unwrap_or(0);
        let errors = t["errors"].as_u64().unwrap_or(0);
        let share = if n == 0 {
            0.0
        } else {
            errors as f64 * 100.0 / n as f64
        };
        let _ = write!(
            out,
            "<tr data-tool=\"{tool}\" data-calls=\"{n}\" data-errors=\"{errors}\"><td><code>{tool}</code></td>\
<td>{n}</td><td class=\"{}\">{errors} ({share:.0}%)</td><td>{}</td><td>{}</td><td>",
            if errors > 0 { "down" } else { "muted" },
            latency(&t["p50Ms"]),
            latency(&t["p95Ms"]),
        );
        sparkline(out, &t["series"], minutes, n);
        out.push_str("</td></tr>");
    }
    out.push_str("</tbody></table>");
}

fn recent(out: &mut String, calls: &Value) {
    out.push_str("<h2>Recent calls</h2>");
    let Some(recent) = calls["recent"].as_array() else {
        out.push_str(
            "<p id=\"recent-calls\" class=\"muted\">The audit is off: recent calls are kept while \
the audit trail is on (<code>[audit] file</code> in the configuration).</p>",
        );
        return;
    };
    out.push_str(
        "<table id=\"recent-calls\"><thead><tr><th>time</th><th>identity</th><th>tool</th>\
<th>outcome</th><th>duration</th></tr></thead><tbody>",
    );
    if recent.is_empty() {
        out.push_str("<tr><td colspan=\"5\" class=\"muted\">No calls yet.</td></tr>");
    }
    for c in recent {
        let text = |key: &str| c[key].as_str().map(escape).unwrap_or_default();
        let outcome = text("outcome");
        let _ = write!(
            out,
            "<tr data-tool=\"{}\" data-identity=\"{}\" data-outcome=\"{outcome}\"><td>{}</td><td>{}</td>\
<td><code>{}</code></td><td class=\"{}\">{outcome}</td><td>{}</td></tr>",
            text("tool"),
            text("identity"),
            text("time"),
            text("identity"),
            text("tool"),
            if outcome == "ok" { "up" } else { "down" },
            latency(&c["durationMs"]),
        );
    }
    out.push_str("</tbody></table>");
}

/// Milliseconds as a person reads them.
fn latency(ms: &Value) -> String {
    match ms.as_f64() {
        None => "-".to_owned(),
        Some(ms) if ms < 10.0 => format!("{ms:.2} ms"),
        Some(ms) if ms < 1000.0 => format!("{ms:.0} ms"),
        Some(ms) => format!("{:.1} s", ms / 1000.0),
    }
}

/// Calls per bucket as bars, the errors among them in red.
fn sparkline(out: &mut String, series: &Value, minutes: u64, total: u64) {
    let read = |key: &str| -> Vec<u64> {
        series[key]
            .as_array()
            .map(|a| a.iter().map(|v| v.as_u64().unwrap_or(0)).collect())
            .unwrap_or_default()
    };
    let (calls, errors) = (read("calls"), read("errors"));
    let max = calls.iter().copied().max().unwrap_or(0).max(1) as f64;
    let width = SPARK_WIDTH / calls.len().max(1) as f64;
    let _ = write!(
        out,
        "<svg class=\"spark\" width=\"{SPARK_WIDTH}\" height=\"{SPARK_HEIGHT}\" \
viewBox=\"0 0 {SPARK_WIDTH} {SPARK_HEIGHT}\" role=\"img\" aria-label=\"{total} calls in {minutes} minutes\">\
<title>{total} calls in {minutes} minutes</title>"
    );
    for (i, &n) in calls.iter().enumerate() {
        if n == 0 {
            continue;
        }
        let x = i as f64 * width;
        let bar = |count: u64, colour: &str, out: &mut String| {
            let h = (count as f64 / max * SPARK_HEIGHT).max(1.0);
            let _ = write!(
                out,
                "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{h:.1}\" fill=\"{colour}\"/>",
                SPARK_HEIGHT - h,
                (width - 1.0).max(1.0),
            );
        };
        bar(n, "#5b7fa6", out);
        let e = errors.get(i).copied().unwrap_or(0).min(n);
        if e > 0 {
            bar(e, "#a3211b", out);
        }
    }
    out.push_str("</svg>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn section(recent: Option<Value>) -> Value {
        let mut calls = json!({
            "windowSeconds": 900,
            "bucketSeconds": 30,
            "audit": recent.is_some(),
            "tools": [{
                "tool": "a__<b>", "calls": 4, "errors": 1, "p50Ms": 1.234, "p95Ms": 1500.0,
                "series": {"calls": [0, 3, 1], "errors": [0, 1, 0]},
            }],
        });
        if let Some(recent) = recent {
            calls["recent"] = recent;
        }
        json!({"calls": calls})
    }

    #[test]
    fn tools_get_a_row_each_with_figures_and_a_sparkline() {
        let mut out = String::new();
        tables(&mut out, Some(&section(None)));
        assert!(out.contains("<table id=\"calls\">"), "{out}");
        assert!(
            out.contains("<tr data-tool=\"a__&lt;b&gt;\" data-calls=\"4\" data-errors=\"1\">"),
            "{out}"
        );
        assert!(out.contains("1 (25%)") && out.contains("1.23 ms") && out.contains("1.5 s"));
        // Two buckets with calls, one with an error: three bars.
        assert_eq!(out.matches("<rect ").count(), 3, "{out}");
        assert!(out.contains("The audit is off"), "{out}");
        assert!(!out.contains("<script") && !out.contains("href="));
    }

    #[test]
    fn recent_calls_show_who_called_what_and_how_it_went() {
        let recent = json!([{
            "time": "2026-01-01T00:00:00.000Z", "identity": "alice", "tool": "a__echo",
            "outcome": "isError", "durationMs": 12.4,
        }]);
        let mut out = String::new();
        tables(&mut out, Some(&section(Some(recent))));
        assert!(
            out.contains(
                "<tr data-tool=\"a__echo\" data-identity=\"alice\" data-outcome=\"isError\">"
            ),
            "{out}"
        );
        assert!(
            out.contains("<td class=\"down\">isError</td><td>12 ms</td>"),
            "{out}"
        );
        assert!(!out.contains("audit is off"));
        let mut none = String::new();
        tables(&mut none, Some(&json!({})));
        assert!(none.is_empty(), "no section, no tables");
    }
}
