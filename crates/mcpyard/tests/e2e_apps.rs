//! MCP Apps (`io.modelcontextprotocol/ui`) through the gateway: two stdio
//! servers built on `@modelcontextprotocol/ext-apps`' helpers, both offering
//! `weather` with the view `ui://weather/view.html` (and only to a host that
//! declared the extension), behind default prefixes; a host on the
//! TypeScript SDK's client lists, reads the views and calls as a page does.

mod support;

use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};
use support::*;

const UI: &str = "io.modelcontextprotocol/ui";
const NO_MODELS: &str = "[inference]\nenabled = false\n\n";

/// A `[servers.NAME]` table running the apps server labelled `label`.
fn apps_server(name: &str, label: &str, extra: bool) -> String {
    let mut args = vec![
        path_str(&support_file("apps_server.mjs")),
        path_str(&tool("npm/node_modules")),
        toml_str(label),
    ];
    if extra {
        args.push(toml_str("--extra"));
    }
    format!(
        "[servers.{name}]\ncommand = {}\nargs = [{}]\n",
        path_str(&node()),
        args.join(", ")
    )
}

/// Two apps servers, `a` (with the app-only `refresh` and a second view)
/// and `b`, and `extra` configuration.
async fn two_servers(extra: &str) -> (tempfile::TempDir, Gateway) {
    let dir = scratch();
    let config = format!(
        "{NO_MODELS}{}{}{extra}",
        apps_server("a", "A", true),
        apps_server("b", "B", false)
    );
    let gw = Gateway::start(&config, dir.path()).await;
    // Both listed (their tools come after `initialized`, with a list_changed).
    host(&gw, &[], false);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let listed = host(&gw, &[json!({"list": "tools"})], false);
        let names = names(&listed["steps"][0]["ok"]);
        if ["a__weather", "b__weather", "b__where"]
            .iter()
            .all(|n| names.iter().any(|m| m == n))
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the apps servers did not list their tools: {names:?}"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    (dir, gw)
}

/// Runs the host on one new session through `steps`; its summary.
fn host(gw: &Gateway, steps: &[Value], plain: bool) -> Value {
    let mut cmd = Command::new(node());
    cmd.arg(support_file("apps_host.mjs"))
        .arg(tool("npm/node_modules"))
        .arg(gw.url())
        .arg(Value::Array(steps.to_vec()).to_string());
    if plain {
        cmd.arg("--plain");
    }
    let (ok, stdout, stderr) = run(cmd, Duration::from_secs(60));
    assert!(ok, "the host failed:\n{stdout}\n{stderr}");
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

fn names(items: &Value) -> Vec<String> {
    strings(items, "name")
}

fn uris(items: &Value) -> Vec<String> {
    strings(items, "uri")
}

fn strings(items: &Value, key: &str) -> Vec<String> {
    items
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t[key].as_str())
        .map(str::to_owned)
        .collect()
}

fn by_name<'a>(items: &'a Value, name: &str) -> &'a Value {
    items
        .as_array()
        .and_then(|a| a.iter().find(|t| t["name"] == name))
        .unwrap_or_else(|| panic!("{name} not in {items}"))
}

fn ok_text(step: &Value) -> String {
    let ok = &step["ok"];
    let text = ok["content"][0]["text"]
        .as_str()
        .or(ok["contents"][0]["text"].as_str());
    text.unwrap_or_else(|| panic!("no text in {step}"))
        .to_owned()
}

fn error(step: &Value) -> String {
    step["error"]
        .as_str()
        .unwrap_or_else(|| panic!("expected an error: {step}"))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_extension_is_negotiated_and_each_servers_view_is_its_own() {
    let (_dir, gw) = two_servers("").await;
    let summary = host(
        &gw,
        &[json!({"list": "tools"}), json!({"list": "resources"})],
        false,
    );
    // Advertised to the client, with the MIME type it relays.
    assert_eq!(
        summary["capabilities"]["extensions"][UI]["mimeTypes"],
        json!(["text/html;profile=mcp-app"]),
        "{summary}"
    );
    let tools = &summary["steps"][0]["ok"];
    // The servers offer the view only to a host that supports it: the
    // gateway declared the extension to them.
    for (tool, uri) in [
        ("a__weather", "ui://a/weather/view.html"),
        ("b__weather", "ui://b/weather/view.html"),
    ] {
        let meta = &by_name(tools, tool)["_meta"];
        assert_eq!(meta["ui"]["resourceUri"], uri, "{tool}: {meta}");
        assert_eq!(meta["ui/resourceUri"], uri, "{tool}: {meta}");
    }
    assert_eq!(
        by_name(tools, "a__refresh")["_meta"]["ui"]["visibility"],
        json!(["app"])
    );
    let resources = uris(&summary["steps"][1]["ok"]);
    for uri in [
        "ui://a/weather/view.html",
        "ui://b/weather/view.html",
        "ui://a/panel/extra.html",
    ] {
        assert!(resources.iter().any(|r| r == uri), "{uri}: {resources:?}");
    }
    assert!(
        !resources.iter().any(|r| r == "ui://weather/view.html"),
        "{resources:?}"
    );

    // A host without the extension: the app-only tool is not listed to
    // it; the rest is as for any client.
    let plain = host(&gw, &[json!({"list": "tools"})], true);
    let plain_tools = names(&plain["steps"][0]["ok"]);
    assert!(plain_tools.iter().any(|n| n == "a__weather"), "{plain}");
    assert!(!plain_tools.iter().any(|n| n == "a__refresh"), "{plain}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_reads_its_view_and_calls_its_servers_tools_by_their_own_names() {
    let (_dir, gw) = two_servers("").await;
    let summary = host(
        &gw,
        &[
            // Before any view: two servers have `weather`.
            json!({"call": "weather"}),
            json!({"read": "ui://a/weather/view.html"}),
            // The page A served calls `weather`: A's.
            json!({"call": "weather"}),
            // One server only has `refresh`.
            json!({"call": "refresh"}),
            // A server's own URI reads when the session's app server has it,
            json!({"read": "ui://weather/view.html"}),
            // or when only one server has it.
            json!({"read": "ui://panel/extra.html"}),
            json!({"read": "ui://b/weather/view.html"}),
            // Both served a view now: ambiguous again, refused.
            json!({"call": "weather"}),
            json!({"call": "b__weather"}),
            json!({"call": "nowhere"}),
        ],
        false,
    );
    let steps = &summary["steps"];
    let ambiguous = error(&steps[0]);
    assert!(
        ambiguous.contains("more than one server")
            && ambiguous.contains("a__weather")
            && ambiguous.contains("b__weather"),
        "{ambiguous}"
    );
    assert_eq!(
        steps[1]["ok"]["contents"][0]["uri"],
        "ui://a/weather/view.html"
    );
    assert!(ok_text(&steps[1]).contains("weather view of A"), "{steps}");
    assert_eq!(ok_text(&steps[2]), "sunny, from A");
    assert_eq!(ok_text(&steps[3]), "refreshed by A");
    assert!(ok_text(&steps[4]).contains("weather view of A"), "{steps}");
    assert_eq!(
        steps[5]["ok"]["contents"][0]["uri"],
        "ui://a/panel/extra.html"
    );
    assert!(ok_text(&steps[5]).contains("extra panel of A"), "{steps}");
    assert!(ok_text(&steps[6]).contains("weather view of B"), "{steps}");
    assert!(error(&steps[7]).contains("more than one server"), "{steps}");
    assert_eq!(ok_text(&steps[8]), "sunny, from B");
    assert!(
        error(&steps[9]).contains("Unknown tool: nowhere"),
        "{steps}"
    );

    // Another session, no view read: the server's own URI two servers
    // have is refused as ambiguous.
    let other = host(&gw, &[json!({"read": "ui://weather/view.html"})], false);
    let refused = error(&other["steps"][0]);
    assert!(
        refused.contains("more than one server")
            && refused.contains("ui://a/weather/view.html")
            && refused.contains("ui://b/weather/view.html"),
        "{refused}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_by_a_servers_own_name_meets_the_policy_of_its_listed_name() {
    let (dir, gw) = two_servers(
        "[audit]\nfile = \"audit.jsonl\"\n\n[[policy.rules]]\naction = \"deny\"\ntools = [\"a__refresh\"]\nresources = [\"ui://a/panel/*\"]\n",
    )
    .await;
    let summary = host(
        &gw,
        &[
            json!({"call": "refresh"}),
            json!({"call": "a__refresh"}),
            json!({"read": "ui://panel/extra.html"}),
            json!({"read": "ui://a/panel/extra.html"}),
            json!({"call": "where"}),
        ],
        false,
    );
    let steps = &summary["steps"];
    // Refused as an unknown name, naming what was asked.
    assert!(
        error(&steps[0]).contains("Unknown tool: refresh"),
        "{steps}"
    );
    assert!(
        error(&steps[1]).contains("Unknown tool: a__refresh"),
        "{steps}"
    );
    assert!(
        error(&steps[2]).contains("ui://panel/extra.html") && !error(&steps[2]).contains("ui://a/"),
        "{steps}"
    );
    assert!(
        error(&steps[3]).contains("ui://a/panel/extra.html"),
        "{steps}"
    );
    // Two servers have `where`: ambiguous, whatever the policy.
    assert!(error(&steps[4]).contains("more than one server"), "{steps}");
    // The audit has each refusal under the listed name, both spellings.
    // The four refusals' lines, once written.
    let records = audit_lines(&dir.path().join("audit.jsonl"), 4, |r| {
        r["tool"] == "a__refresh" || r["tool"] == "ui://a/panel/extra.html"
    })
    .await;
    let audit = serde_json::to_string(&records).unwrap_or_default();
    let refused = |target: &str| {
        records
            .iter()
            .filter(|r| r["tool"] == target && r["outcome"] == "refused")
            .count()
    };
    assert_eq!(refused("a__refresh"), 2, "{audit}");
    assert_eq!(refused("ui://a/panel/extra.html"), 2, "{audit}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_apps_off_nothing_is_declared_or_rewritten() {
    let (_dir, gw) = {
        let dir = scratch();
        let config = format!(
            "{NO_MODELS}[apps]\nenabled = false\n\n{}",
            apps_server("a", "A", false)
        );
        let gw = Gateway::start(&config, dir.path()).await;
        (dir, gw)
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let summary = loop {
        let summary = host(
            &gw,
            &[json!({"list": "tools"}), json!({"list": "resources"})],
            false,
        );
        if names(&summary["steps"][0]["ok"]).contains(&"a__weather".to_owned()) {
            break summary;
        }
        assert!(std::time::Instant::now() < deadline, "{summary}");
        std::thread::sleep(Duration::from_millis(300));
    };
    assert!(
        summary["capabilities"].get("extensions").is_none(),
        "{summary}"
    );
    // The server saw no UI support: its text-only variant.
    let weather = by_name(&summary["steps"][0]["ok"], "a__weather");
    assert!(weather.get("_meta").is_none(), "{weather}");
    assert!(
        uris(&summary["steps"][1]["ok"]).contains(&"ui://weather/view.html".to_owned()),
        "{summary}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_sdk_client_of_the_stateless_era_reads_views_and_calls_by_own_names() {
    let (_dir, gw) = two_servers("").await;
    let summary = run_python(
        &tool("venv/bin/python"),
        &[
            support_file("py_apps_check.py").display().to_string(),
            gw.url(),
        ],
        Duration::from_secs(90),
    );
    assert_eq!(summary["protocolVersion"], "2026-07-28", "{summary}");
    // It declares no UI extension: the app-only tool is not listed to it,
    // the others carry their exposed views.
    let tools = summary["tools"].as_object().expect("tools");
    assert!(!tools.contains_key("a__refresh"), "{summary}");
    assert_eq!(
        tools["b__weather"]["ui"]["resourceUri"], "ui://b/weather/view.html",
        "{summary}"
    );
    assert!(
        summary["resources"]
            .as_array()
            .is_some_and(|r| r.contains(&json!("ui://a/weather/view.html"))),
        "{summary}"
    );
    let read = &summary["read"]["ok"][0];
    assert_eq!(read["uri"], "ui://b/weather/view.html", "{summary}");
    assert!(
        read["text"]
            .as_str()
            .is_some_and(|t| t.contains("weather view of B")),
        "{summary}"
    );
    // One server has `refresh`; two have `weather`, and a stateless
    // request has no session that was served a view.
    assert_eq!(summary["refresh"]["ok"], "refreshed by A", "{summary}");
    assert!(
        summary["weather"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("more than one server")),
        "{summary}"
    );
}
