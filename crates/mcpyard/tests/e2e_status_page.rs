//! The status page of `mcpyard serve`, over a real socket in front of
//! server-everything: a browser signs in with its key once (a form, never
//! a URL), gets an opaque cookie, and sees the sources and the catalogue
//! its key may use; a Bearer header works too; signing out ends it.

mod support;

use std::time::{Duration, Instant};

use reqwest::header::{CONTENT_SECURITY_POLICY, CONTENT_TYPE, COOKIE, LOCATION, SET_COOKIE};
use reqwest::StatusCode;
use support::{everything_stdio, Gateway};

const VIEWER_KEY: &str = "viewer-key-4567";
const ADMIN_KEY: &str = "admin-key-1234";

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
    assert!(page.body.contains("Seen as <b>viewer</b>"), "{}", page.body);
    assert!(page.body.contains("everything__echo"), "{}", page.body);
    assert!(
        page.body.contains("&quot;message&quot;"),
        "the echo schema: {}",
        page.body
    );
    assert!(!page.body.contains("everything__get-sum"), "{}", page.body);
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
