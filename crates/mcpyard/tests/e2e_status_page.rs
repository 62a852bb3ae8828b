//! The status page of `mcpyard serve`, over a real socket in front of
//! server-everything: a browser signs in with its key once (a form, never
//! a URL), gets an opaque cookie, and sees the sources and the catalogue
//! its key may use; a Bearer header works too; signing out ends it. With
//! the audit trail on, the calls made through the gateway show up per tool
//! and among the recent calls, except those of tools a viewer may not use.

mod support;

use std::time::{Duration, Instant};

use reqwest::header::{CONTENT_SECURITY_POLICY, CONTENT_TYPE, COOKIE, LOCATION, SET_COOKIE};
use reqwest::StatusCode;
use serde_json::{json, Value};
use support::{call, everything_stdio, path_str, try_call, wait_for_tools, Gateway};

const VIEWER_KEY: &str = "viewer-key-4567";
const ADMIN_KEY: &str = "admin-key-1234";
const METRICS_TOKEN: &str = "metrics-token-8910";

fn config() -> String {
    format!(
        r#"{}
[inference]
enabled = false

[[auth.keys]]
name = "admin"
groups = ["ops"]
key_env = "UI_ADMIN_KEY"

[[auth.keys]]
name = "viewer"
groups = ["viewers"]
key_env = "UI_VIEWER_KEY"

[policy]
[[policy.rules]]
action = "deny"
groups = ["viewers"]
tools = ["everything__get-sum"]
"#,
        everything_stdio("everything")
    )
}

struct Page {
    status: StatusCode,
    headers: reqwest::header::HeaderMap,
    body: String,
}

async fn send(request: reqwest::RequestBuilder) -> Page {
    let response = request.send().await.expect("the gateway answers");
    Page {
        status: response.status(),
        headers: response.headers().clone(),
        body: response.text().await.expect("a body"),
    }
}

fn login(http: &reqwest::Client, base: &str, key: &str) -> reqwest::RequestBuilder {
    http.post(format!("{base}/ui/login"))
        .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(format!("key={key}"))
}

#[tokio::test]
async fn the_status_page_signs_a_browser_in_and_shows_what_its_key_may_use() {
    let dir = tempfile::tempdir().unwrap();
    let gateway = Gateway::start_with_env(
        &config(),
        dir.path(),
        &[("UI_ADMIN_KEY", ADMIN_KEY), ("UI_VIEWER_KEY", VIEWER_KEY)],
    )
    .await;
    let base = format!("http://127.0.0.1:{}", gateway.port);
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();

    // `/` leads to the page; without a key the page is a sign-in form only.
    let root = send(http.get(format!("{base}/"))).await;
    assert!(root.status.is_redirection(), "{}", root.status);
    assert_eq!(root.headers[LOCATION], "/ui");
    let anonymous = send(http.get(format!("{base}/ui"))).await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
    assert!(
        anonymous.body.contains("action=\"/ui/login\""),
        "{}",
        anonymous.body
    );
    assert!(!anonymous.body.contains("everything"), "{}", anonymous.body);

    // A wrong key is refused; a form posted from another site is too.
    let wrong = send(login(&http, &base, "not-a-key")).await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    assert!(wrong.body.contains("not accepted"), "{}", wrong.body);
    let cross_site =
        send(login(&http, &base, VIEWER_KEY).header("origin", "http://evil.example")).await;
    assert_eq!(cross_site.status, StatusCode::FORBIDDEN);

    // The viewer signs in once and gets an opaque cookie for /ui.
    let signed_in = send(login(&http, &base, VIEWER_KEY)).await;
    assert!(signed_in.status.is_redirection(), "{}", signed_in.status);
    let set_cookie = signed_in.headers[SET_COOKIE].to_str().unwrap().to_owned();
    for part in ["mcpyard_ui=", "HttpOnly", "SameSite=Strict", "Path=/ui"] {
        assert!(set_cookie.contains(part), "{set_cookie}");
    }
    assert!(!set_cookie.contains(VIEWER_KEY), "{set_cookie}");
    let cookie = set_cookie.split(';').next().unwrap().to_owned();

    // The page as the viewer: the source up, its tools but the one the
    // policy keeps from viewers, each with its schema (once the upstream
    // has connected).
    let deadline = Instant::now() + Duration::from_secs(60);
    let page = loop {
        let page = send(http.get(format!("{base}/ui")).header(COOKIE, &cookie)).await;
        let ready =
            page.body.contains("everything__echo") && page.body.contains("<td class=\"up\">");
        if ready || Instant::now() > deadline {
            break page;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(page.headers[CONTENT_TYPE]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    assert!(page.headers[CONTENT_SECURITY_POLICY]
        .to_str()
        .unwrap()
        .contains("frame-ancestors 'none'"));
    // The live part is fetched from the page itself, nothing else.
    assert!(page.headers[CONTENT_SECURITY_POLICY]
        .to_str()
        .unwrap()
        .contains("connect-src 'self'"));
    assert!(page.body.contains("<div id=\"live\">"), "{}", page.body);
    assert!(page.body.contains("<table id=\"calls\">"), "{}", page.body);
    assert!(
        page.body
            .contains("<p id=\"recent-calls\" class=\"muted\">The audit is off"),
        "{}",
        page.body
    );
    assert!(page.body.contains("Seen as <b>viewer</b>"), "{}", page.body);
    assert!(page.body.contains("everything__echo"), "{}", page.body);
    assert!(
        page.body.contains("&quot;message&quot;"),
        "the echo schema: {}",
        page.body
    );
    assert!(!page.body.contains("everything__get-sum"), "{}", page.body);
    // The tool the policy keeps from viewers is counted as denied to them.
    assert!(page.body.contains(" / 0 / 1</td>"), "{}", page.body);
    assert!(page.body.contains("<td class=\"up\">"), "{}", page.body);
    assert!(!page.body.contains(VIEWER_KEY));

    // A Bearer header is enough for a script; the admin sees every tool.
    let admin = send(
        http.get(format!("{base}/ui"))
            .header("authorization", format!("Bearer {ADMIN_KEY}")),
    )
    .await;
    assert_eq!(admin.status, StatusCode::OK);
    assert!(admin.body.contains("everything__get-sum"), "{}", admin.body);
    assert!(admin.body.contains(" / 0 / 0</td>"), "{}", admin.body);

    // With the audit off, calls are still counted per tool (by a layer of
    // their own, metrics being off too), and no recent calls are kept.
    let client = gateway.client_with_key(VIEWER_KEY).await;
    call(&client, "everything__echo", json!({"message": "counted"})).await;
    let counted = send(http.get(format!("{base}/ui")).header(COOKIE, &cookie)).await;
    assert!(
        counted.body.contains(&calls_row("everything__echo", 1, 0)),
        "{}",
        counted.body
    );
    assert!(
        counted.body.contains("The audit is off"),
        "{}",
        counted.body
    );
    assert!(!counted.body.contains("data-identity="), "{}", counted.body);

    // Signing out ends the cookie's session.
    let out = send(
        http.post(format!("{base}/ui/logout"))
            .header(COOKIE, &cookie),
    )
    .await;
    assert!(out.status.is_redirection());
    let after = send(http.get(format!("{base}/ui")).header(COOKIE, &cookie)).await;
    assert_eq!(after.status, StatusCode::UNAUTHORIZED);
}

/// The `data-` attributes a row of the calls table has for `tool`.
fn calls_row(tool: &str, calls: u64, errors: u64) -> String {
    format!("<tr data-tool=\"{tool}\" data-calls=\"{calls}\" data-errors=\"{errors}\">")
}

fn recent_row(tool: &str, identity: &str, outcome: &str) -> String {
    format!("<tr data-tool=\"{tool}\" data-identity=\"{identity}\" data-outcome=\"{outcome}\">")
}

#[tokio::test]
async fn calls_through_the_gateway_show_per_tool_and_among_the_recent_calls_as_the_viewer_may_see_them(
) {
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl");
    // Metrics on: the metrics layer counts the calls for the page then.
    let config = format!(
        "{}\n[audit]\nfile = {}\n\n[metrics]\nenabled = true\ntoken = \"${{UI_METRICS_TOKEN}}\"\n",
        config(),
        path_str(&audit)
    );
    let gateway = Gateway::start_with_env(
        &config,
        dir.path(),
        &[
            ("UI_ADMIN_KEY", ADMIN_KEY),
            ("UI_VIEWER_KEY", VIEWER_KEY),
            ("UI_METRICS_TOKEN", METRICS_TOKEN),
        ],
    )
    .await;
    let base = format!("http://127.0.0.1:{}", gateway.port);
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let bearer = |key: &str| format!("Bearer {key}");

    // Before any call: the tables are there, empty.
    let empty = send(
        http.get(format!("{base}/ui"))
            .header("authorization", bearer(ADMIN_KEY)),
    )
    .await;
    assert_eq!(empty.status, StatusCode::OK, "{}", empty.body);
    assert!(
        empty.body.contains("<table id=\"recent-calls\">"),
        "{}",
        empty.body
    );
    assert!(!empty.body.contains("audit is off"), "{}", empty.body);

    let admin = gateway.client_with_key(ADMIN_KEY).await;
    wait_for_tools(
        &admin,
        &["everything__echo", "everything__get-sum"],
        Duration::from_secs(60),
    )
    .await;
    for n in 0..2 {
        let echoed = call(
            &admin,
            "everything__echo",
            json!({"message": format!("hi {n}")}),
        )
        .await;
        assert_ne!(echoed["isError"], json!(true), "{echoed}");
    }
    let sum = call(&admin, "everything__get-sum", json!({"a": 2, "b": 3})).await;
    assert_ne!(sum["isError"], json!(true), "{sum}");
    // Without its required argument echo fails: a JSON-RPC error or an
    // `isError` result, whichever the server answers with.
    let failed = try_call(&admin, "everything__echo", json!({})).await;
    let failed_outcome = match &failed {
        Err(_) => "error",
        Ok(result) if result["isError"] == json!(true) => "isError",
        Ok(result) => panic!("echo without a message succeeded: {result}"),
    };

    let viewer = gateway.client_with_key(VIEWER_KEY).await;
    call(
        &viewer,
        "everything__echo",
        json!({"message": "from the viewer"}),
    )
    .await;
    let refused = try_call(&viewer, "everything__get-sum", json!({"a": 1, "b": 1})).await;
    assert!(
        refused.is_err() || refused.as_ref().unwrap()["isError"] == json!(true),
        "{refused:?}"
    );

    // The metrics layer saw the calls (and so counted them for the page).
    let metrics = send(
        http.get(format!("{base}/metrics"))
            .header("authorization", bearer(METRICS_TOKEN)),
    )
    .await;
    assert!(
        metrics.body.contains("tool=\"everything__echo\""),
        "{}: {}",
        metrics.status,
        metrics.body
    );

    // The admin sees every tool's figures and every recent call.
    let page = send(
        http.get(format!("{base}/ui"))
            .header("authorization", bearer(ADMIN_KEY)),
    )
    .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    for row in [
        calls_row("everything__echo", 4, 1),
        calls_row("everything__get-sum", 2, 1),
        recent_row("everything__echo", "admin", "ok"),
        recent_row("everything__echo", "admin", failed_outcome),
        recent_row("everything__get-sum", "admin", "ok"),
        recent_row("everything__echo", "viewer", "ok"),
        recent_row("everything__get-sum", "viewer", "refused"),
    ] {
        assert!(page.body.contains(&row), "{row} in {}", page.body);
    }
    assert!(page.body.contains("<svg class=\"spark\""), "{}", page.body);
    // The page asking the status is not a call it shows.
    assert!(
        !page.body.contains("data-tool=\"mcpyard__status\""),
        "{}",
        page.body
    );
    // Newest first: the viewer's refused call heads the recent calls.
    let recent = &page.body[page.body.find("<table id=\"recent-calls\">").unwrap()..];
    assert!(
        recent
            .find(&recent_row("everything__get-sum", "viewer", "refused"))
            .unwrap()
            < recent
                .find(&recent_row("everything__echo", "viewer", "ok"))
                .unwrap(),
        "{recent}"
    );

    // The viewer sees echo's figures and calls, nothing of get-sum: on the
    // page, in its live part, and in the status tool itself.
    let viewer_page = send(
        http.get(format!("{base}/ui"))
            .header("authorization", bearer(VIEWER_KEY)),
    )
    .await;
    let live = send(
        http.get(format!("{base}/ui?live=1"))
            .header("authorization", bearer(VIEWER_KEY)),
    )
    .await;
    assert_eq!(live.status, StatusCode::OK, "{}", live.body);
    assert!(!live.body.contains("<html"), "a fragment: {}", live.body);
    for body in [&viewer_page.body, &live.body] {
        assert!(
            body.contains(&calls_row("everything__echo", 4, 1)),
            "{body}"
        );
        assert!(
            body.contains(&recent_row("everything__echo", "viewer", "ok")),
            "{body}"
        );
        assert!(
            body.contains(&recent_row("everything__echo", "admin", "ok")),
            "{body}"
        );
        assert!(!body.contains("everything__get-sum"), "{body}");
    }
    let status = call(&viewer, "mcpyard__status", json!({})).await;
    let calls = &status["structuredContent"]["calls"];
    assert_eq!(calls["audit"], json!(true), "{calls}");
    let tools: Vec<&str> = calls["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["tool"].as_str())
        .collect();
    assert_eq!(tools, ["everything__echo"], "{calls}");
    let echo = &calls["tools"][0];
    assert_eq!(
        (&echo["calls"], &echo["errors"]),
        (&json!(4), &json!(1)),
        "{echo}"
    );
    assert!(echo["p50Ms"].as_f64().unwrap() > 0.0, "{echo}");
    assert!(
        echo["p95Ms"].as_f64().unwrap() >= echo["p50Ms"].as_f64().unwrap(),
        "{echo}"
    );
    let series: u64 = echo["series"]["calls"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_u64)
        .sum();
    assert_eq!(series, 4, "{echo}");
    let recent = calls["recent"].as_array().unwrap();
    assert_eq!(recent.len(), 4, "echo's four calls: {calls}");
    assert!(
        recent.iter().all(|c| c["tool"] == "everything__echo"),
        "{calls}"
    );
    assert_eq!(recent[0]["identity"], "viewer", "newest first: {calls}");
    assert_eq!(recent[0]["outcome"], "ok", "{calls}");
    assert!(recent[0]["durationMs"].as_f64().is_some(), "{calls}");

    // In the trail: the viewer's own call of the status tool, and none of
    // the page's looks (it was loaded five times above).
    let deadline = Instant::now() + Duration::from_secs(10);
    let status_records = loop {
        let records: Vec<Value> = std::fs::read_to_string(&audit)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|r| r["tool"] == "mcpyard__status")
            .collect();
        if !records.is_empty() || Instant::now() > deadline {
            break records;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(status_records.len(), 1, "{status_records:?}");
    assert_eq!(
        status_records[0]["identity"], "viewer",
        "{status_records:?}"
    );
}

/// In a real browser (headless Chromium), signed in through the form: a
/// call made while the page is open shows up in its recent calls at the
/// next poll, without a reload. Skipped, saying so, only when chromedriver
/// is not installed and this is not CI.
#[tokio::test]
async fn in_a_browser_a_new_call_shows_up_at_the_next_poll() {
    use fantoccini::{ClientBuilder, Locator};
    let Some(driver) = support::chromedriver() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "chromedriver is not installed: CI must install chromium and chromium-driver"
        );
        eprintln!(
            "skipped: chromedriver is not installed (apt-get install chromium chromium-driver)"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl");
    // A second server, started through a script the test rewrites to make
    // it go down for good.
    let script = dir.path().join("flaky.sh");
    let pid_file = dir.path().join("flaky.pid");
    std::fs::write(
        &script,
        format!(
            "echo $$ > '{}'\nexec '{}' '{}'\n",
            pid_file.display(),
            support::node().display(),
            support::everything_js().display()
        ),
    )
    .unwrap();
    let config = format!(
        "{}\n[audit]\nfile = {}\n\n[servers.flaky]\ncommand = \"sh\"\nargs = [{}]\n",
        config(),
        path_str(&audit),
        path_str(&script)
    );
    let gateway = Gateway::start_with_env(
        &config,
        dir.path(),
        &[("UI_ADMIN_KEY", ADMIN_KEY), ("UI_VIEWER_KEY", VIEWER_KEY)],
    )
    .await;
    let base = format!("http://127.0.0.1:{}", gateway.port);
    let admin = gateway.client_with_key(ADMIN_KEY).await;
    wait_for_tools(
        &admin,
        &["everything__echo", "flaky__echo"],
        Duration::from_secs(60),
    )
    .await;

    let (_driver, port) = support::start_chromedriver(&driver, dir.path()).await;
    let browser = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(support::headless_chromium(dir.path()))
        .connect(&format!("http://127.0.0.1:{port}"))
        .await
        .expect("chromedriver starts a headless Chromium");

    // Signed in through the form, as a person would.
    browser.goto(&format!("{base}/ui")).await.unwrap();
    browser
        .find(Locator::Css("input[name=key]"))
        .await
        .unwrap()
        .send_keys(ADMIN_KEY)
        .await
        .unwrap();
    browser
        .find(Locator::Css("form button"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    browser
        .wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::Css("#live #calls"))
        .await
        .expect("the signed-in page with its calls table");
    let loaded_at = browser.current_url().await.unwrap();

    call(
        &admin,
        "everything__echo",
        json!({"message": "seen by the browser"}),
    )
    .await;
    let row = "#recent-calls tr[data-tool=\"everything__echo\"][data-identity=\"admin\"][data-outcome=\"ok\"]";
    browser
        .wait()
        .at_most(Duration::from_secs(30))
        .for_element(Locator::Css(row))
        .await
        .expect("the call among the recent calls after a poll");
    assert_eq!(browser.current_url().await.unwrap(), loaded_at, "no reload");
    let live = browser.find(Locator::Css("#live")).await.unwrap();
    let polls: u32 = live
        .attr("data-polls")
        .await
        .unwrap()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(polls >= 1, "the script refreshed the live part");
    let figures = browser
        .find(Locator::Css("#calls tr[data-tool=\"everything__echo\"]"))
        .await
        .expect("echo's row in the calls table");
    assert_eq!(
        figures.attr("data-calls").await.unwrap().as_deref(),
        Some("1")
    );
    let bars = browser
        .find_all(Locator::Css(
            "#calls tr[data-tool=\"everything__echo\"] svg rect",
        ))
        .await
        .unwrap();
    assert_eq!(bars.len(), 1, "one bucket with a call");

    // The second server dies and cannot start again: the page shows it
    // down within a poll or two, without a reload.
    std::fs::write(&script, "echo 'flaky is gone for good' >&2\nexit 3\n").unwrap();
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: kill has no memory-safety preconditions.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
    browser
        .wait()
        .at_most(Duration::from_secs(30))
        .for_element(Locator::XPath(
            "//tr[td/b[text()='flaky']]/td[@class='down']",
        ))
        .await
        .expect("the dead server shown down after a poll");
    assert_eq!(browser.current_url().await.unwrap(), loaded_at, "no reload");

    let shot = browser.screenshot().await.unwrap();
    let file = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("status-page.png");
    std::fs::write(&file, shot).unwrap();
    eprintln!("screenshot: {}", file.display());
    browser.close().await.unwrap();
}
