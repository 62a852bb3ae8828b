//! The status page: `GET /ui` (and `/`, which redirects there) shows every
//! source with its health, era, last error and restarts, the calls of the
//! last minutes per tool and the audit's recent calls (`calls.rs`), and the
//! catalogue as the viewer may use it, searchable, with each tool's schema.
//! The page is whole as served; a script refreshes its live part (sources,
//! configuration, calls) every [`POLL`] from `GET /ui?live=1`. It asks
//! the gateway what it asks of a client, through the same layers: a key
//! kept from some tools by the policy does not see them here either.
//!
//! Behind the same authentication as `/mcp`. A browser presents its key
//! once, in a form (`POST /ui/login`), never in a URL that could be logged;
//! it gets an opaque cookie (`HttpOnly`, `SameSite=Strict`, for `/ui` only)
//! standing for the identity the key proved, for [`SESSION_TTL`].

use std::fmt::Write as _;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, COOKIE, SET_COOKIE};
use http::{HeaderMap, HeaderValue, StatusCode};
use mcpyard_gateway::{Gateway, Identity, Session};

use mcpyard_proto::{Message, RequestId};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::state::AppState;

mod calls;
mod html;
pub(crate) mod sessions;

use html::escape;

/// Where the page is served.
pub(crate) const PATH: &str = "/ui";
const LOGIN_PATH: &str = "/ui/login";
const LOGOUT_PATH: &str = "/ui/logout";
const COOKIE_NAME: &str = "mcpyard_ui";
/// How long a browser stays signed in.
const SESSION_TTL: Duration = sessions::SESSION_TTL;
/// Tools shown at most; the count says how many there are.
const MAX_TOOLS_SHOWN: usize = 5000;
/// Pages of `tools/list` read at most.
const MAX_PAGES: usize = 200;
/// How often the page's script refreshes its live part.
const POLL: Duration = Duration::from_secs(5);

/// Whether the security guard leaves `path` to this module's own
/// authentication (the login form must be reachable without a key).
pub(crate) fn handles(path: &str) -> bool {
    matches!(path, "/" | PATH | LOGIN_PATH | LOGOUT_PATH)
}

pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(|| async { Redirect::to(PATH) }))
        .route(PATH, get(page))
        .route(LOGIN_PATH, post(login))
        .route(LOGOUT_PATH, post(logout))
}

fn cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE_NAME)
        .map(|(_, value)| value)
}

/// The viewer: a signed-in browser, or a request that authenticates as
/// `/mcp` requests do (a Bearer header, or no authentication configured).
async fn viewer(state: &AppState, headers: &HeaderMap) -> Option<Identity> {
    // A browser signed in with a key a reload took out is signed out.
    if let Some(identity) = cookie(headers)
        .and_then(|t| state.ui_sessions.identity(t))
        .filter(|identity| state.auth.still_admits(identity))
    {
        return Some(identity);
    }
    state.auth.authenticate(headers).await.ok()
}

#[derive(Deserialize)]
struct PageQuery {
    /// Set by the page's script: only the live part, as HTML to put in
    /// `#live`.
    live: Option<String>,
}

async fn page(
    State(state): State<AppState>,
    Query(query): Query<PageQuery>,
    headers: HeaderMap,
) -> Response {
    let live = query.live.is_some();
    match viewer(&state, &headers).await {
        Some(identity) if live => {
            let seen = Seen::ask(&state.gateway, identity, false).await;
            let mut out = String::new();
            live_part(&mut out, &seen);
            html(StatusCode::OK, &out)
        }
        Some(identity) => {
            let seen = Seen::ask(&state.gateway, identity.clone(), true).await;
            html(
                StatusCode::OK,
                &render(&seen, &identity, state.auth.is_required()),
            )
        }
        None if live => html(StatusCode::UNAUTHORIZED, ""),
        None => html(StatusCode::UNAUTHORIZED, &login_page(None)),
    }
}

#[derive(Deserialize)]
struct LoginForm {
    key: String,
}

async fn login(State(state): State<AppState>, Form(form): Form<LoginForm>) -> Response {
    let mut headers = HeaderMap::new();
    let presented = HeaderValue::from_str(&format!("Bearer {}", form.key.trim()));
    if let Ok(value) = presented {
        headers.insert(http::header::AUTHORIZATION, value);
    }
    let identity = match state.auth.authenticate(&headers).await {
        Ok(identity) if state.auth.is_required() => identity,
        Ok(_) => return Redirect::to(PATH).into_response(),
        Err(_) => {
            return html(
                StatusCode::UNAUTHORIZED,
                &login_page(Some("That key was not accepted.")),
            )
        }
    };
    tracing::info!(identity = %identity.name, "signed in to the status page");
    let token = state.ui_sessions.open(identity);
    let mut response = Redirect::to(PATH).into_response();
    let cookie = format!(
        "{COOKIE_NAME}={token}; Path={PATH}; HttpOnly; SameSite=Strict; Max-Age={}",
        SESSION_TTL.as_secs()
    );
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(SET_COOKIE, value);
    }
    response
}

async fn logout(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(token) = cookie(&headers) {
        state.ui_sessions.close(token);
    }
    let mut response = Redirect::to(PATH).into_response();
    response.headers_mut().insert(
        SET_COOKIE,
        HeaderValue::from_static("mcpyard_ui=; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=0"),
    );
    response
}

/// What the viewer gets from the gateway, asked as a client would.
struct Seen {
    status: Option<Value>,
    tools: Vec<Value>,
    /// Why something could not be read.
    problems: Vec<String>,
}

impl Seen {
    /// The status, and with `catalogue` the tools listed.
    async fn ask(gateway: &Gateway, identity: Identity, catalogue: bool) -> Self {
        let session = Session::observer_as(identity);
        gateway.register_session(session.clone());
        let mut seen = Seen {
            status: None,
            tools: Vec::new(),
            problems: Vec::new(),
        };
        let mut next_id = 0;
        let mut ask = |method: &'static str, params: Value| {
            next_id += 1;
            let id = next_id;
            let (gateway, session) = (gateway.clone(), session.clone());
            async move {
                let answer = gateway
                    .request(&session, RequestId::Number(id), method, Some(params), None)
                    .await
                    .into_message();
                match answer {
                    Message::Response { result, .. } => Ok(result.into_value()),
                    Message::Error { error, .. } => Err(format!("{method}: {}", error.message)),
                    _ => Err(format!("{method}: no answer")),
                }
            }
        };
        let initialize = json!({
            "protocolVersion": mcpyard_proto::LATEST_STATEFUL,
            "capabilities": {},
            "clientInfo": {"name": "mcpyard status page", "version": env!("CARGO_PKG_VERSION")},
        });
        if let Err(e) = ask("initialize", initialize).await {
            seen.problems.push(e);
        }
        match ask(
            "tools/call",
            json!({"name": "mcpyard__status", "arguments": {}}),
        )
        .await
        {
            Ok(result) => seen.status = result.get("structuredContent").cloned(),
            Err(e) => seen.problems.push(e),
        }
        let mut cursor: Option<String> = None;
        let pages = if catalogue { MAX_PAGES } else { 0 };
        for _ in 0..pages {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            match ask("tools/list", params).await {
                Ok(page) => {
                    if let Some(tools) = page.get("tools").and_then(Value::as_array) {
                        seen.tools.extend(tools.iter().cloned());
                    }
                    cursor = page
                        .get("nextCursor")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                    if cursor.is_none() {
                        break;
                    }
                }
                Err(e) => {
                    seen.problems.push(e);
                    break;
                }
            }
        }
        gateway.end_session(session.id());
        seen
    }
}

fn html(status: StatusCode, body: &str) -> Response {
    let mut response = (status, body.to_owned()).into_response();
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    // The page's own inline style and script, nothing from elsewhere but
    // its own live part, and no framing by another site.
    headers.insert(
        CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; \
             connect-src 'self'; form-action 'self'; frame-ancestors 'none'",
        ),
    );
    response
}

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:2rem;color:#1d232a}\
h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:2rem}table{border-collapse:collapse}\
td,th{border-bottom:1px solid #dde;padding:.3rem .6rem;text-align:left;vertical-align:top}\
.up{color:#176d2a}.down{color:#a3211b}.muted{color:#667}pre{background:#f5f6f8;padding:.5rem;\
overflow:auto;max-height:20rem}details{margin:.2rem 0}input[type=search]{width:24rem;padding:.3rem}\
form.inline{display:inline}svg.spark{vertical-align:middle;background:#f5f6f8}";

fn login_page(problem: Option<&str>) -> String {
    let problem = problem
        .map(|p| format!("<p class=\"down\">{}</p>", escape(p)))
        .unwrap_or_default();
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>mcpyard</title>\
<style>{STYLE}</style></head><body><h1>mcpyard</h1>\
<p>This gateway asks for a key (or an access token), the same as for <code>/mcp</code>.</p>{problem}\
<form method=\"post\" action=\"{LOGIN_PATH}\"><label>Key <input type=\"password\" name=\"key\" \
autocomplete=\"current-password\" autofocus required></label> <button>Sign in</button></form>\
</body></html>"
    )
}

fn render(seen: &Seen, identity: &Identity, signed_in: bool) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>mcpyard</title>\
<style>{STYLE}</style></head><body><h1>mcpyard {}</h1><p class=\"muted\">Seen as <b>{}</b>",
        escape(env!("CARGO_PKG_VERSION")),
        escape(&identity.name)
    );
    if signed_in {
        let _ = write!(
            out,
            " &middot; <form class=\"inline\" method=\"post\" action=\"{LOGOUT_PATH}\"><button>Sign out</button></form>"
        );
    }
    out.push_str("</p><div id=\"live\">");
    live_part(&mut out, seen);
    out.push_str("</div>");
    catalogue(&mut out, &seen.tools);
    out.push_str(FILTER_SCRIPT);
    let _ = write!(
        out,
        "<script>{}</script>",
        POLL_SCRIPT.replace("POLL_MS", &POLL.as_millis().to_string())
    );
    out.push_str("</body></html>");
    out
}

/// What the page's script refreshes: problems, sources, configuration,
/// calls.
fn live_part(out: &mut String, seen: &Seen) {
    for problem in &seen.problems {
        let _ = write!(out, "<p class=\"down\">{}</p>", escape(problem));
    }
    sources_table(out, seen.status.as_ref());
    configuration(out, seen.status.as_ref());
    calls::tables(out, seen.status.as_ref());
}

fn sources_table(out: &mut String, status: Option<&Value>) {
    out.push_str("<h2>Sources</h2>");
    let Some(status) = status else {
        out.push_str("<p class=\"muted\">The status is not available to this identity.</p>");
        return;
    };
    let _ = write!(
        out,
        "<p class=\"muted\">{} client session(s)</p><table id=\"sources\"><tr><th>source</th><th>kind</th><th>state</th>\
<th>era</th><th>tools listed / hidden / denied to you</th><th>restarts</th><th>last error</th></tr>",
        status["sessions"].as_u64().unwrap_or(0)
    );
    let sources = status["sources"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    for s in sources {
        let text = |key: &str| s[key].as_str().map(escape).unwrap_or_default();
        let healthy = s["healthy"].as_bool().unwrap_or(false);
        let state = match s["state"].as_str() {
            Some(state) => escape(state),
            None if healthy => "up".into(),
            None => "down".into(),
        };
        let count = |key: &str| {
            s[key]
                .as_u64()
                .map_or_else(|| "-".to_owned(), |n| n.to_string())
        };
        let _ = write!(
            out,
            "<tr><td><b>{}</b><br><span class=\"muted\">{}</span></td><td>{}</td>\
<td class=\"{}\">{state}</td><td>{}</td><td>{} / {} / {}</td><td>{}</td><td>{}</td></tr>",
            text("name"),
            text("transport"),
            text("kind"),
            if healthy { "up" } else { "down" },
            text("protocolVersion"),
            count("tools_listed"),
            count("tools_hidden"),
            s["tools_denied"].as_u64().unwrap_or(0),
            s["restarts"].as_u64().unwrap_or(0),
            text("error"),
        );
    }
    out.push_str("</table>");
}

/// Which configuration file is served, since when, and the last reload.
fn configuration(out: &mut String, status: Option<&Value>) {
    let Some(config) = status.and_then(|s| s.get("config")) else {
        return;
    };
    let text = |v: &Value| v.as_str().map(escape).unwrap_or_default();
    let _ = write!(
        out,
        "<h2>Configuration</h2><p id=\"config\"><code>{}</code>, loaded {}; reloads: {} applied, {} refused</p>",
        text(&config["file"]),
        text(&config["loadedAt"]),
        config["reloads"]["applied"].as_u64().unwrap_or(0),
        config["reloads"]["refused"].as_u64().unwrap_or(0),
    );
    if let Some(last) = config.get("lastReload") {
        let refused = last["outcome"] == "refused";
        let _ = write!(
            out,
            "<p id=\"last-reload\" class=\"{}\">Last reload, {}: {}: {}</p>",
            if refused { "down" } else { "up" },
            text(&last["at"]),
            text(&last["outcome"]),
            text(&last["detail"]),
        );
    }
}

fn catalogue(out: &mut String, tools: &[Value]) {
    let _ = write!(
        out,
        "<h2>Catalogue: {} tool(s) listed</h2><p><input type=\"search\" id=\"filter\" \
placeholder=\"Search names and descriptions\" aria-label=\"Search the tools\"></p><div id=\"tools\">",
        tools.len()
    );
    for tool in tools.iter().take(MAX_TOOLS_SHOWN) {
        let name = tool["name"].as_str().unwrap_or("?");
        let description = tool["description"].as_str().unwrap_or("");
        let schema = serde_json::to_string_pretty(&tool["inputSchema"]).unwrap_or_default();
        let haystack = format!("{name} {description}").to_lowercase();
        let _ = write!(
            out,
            "<details data-text=\"{}\"><summary><code>{}</code> <span class=\"muted\">{}</span></summary>\
<pre>{}</pre></details>",
            escape(&haystack),
            escape(name),
            escape(description.lines().next().unwrap_or("")),
            escape(&schema)
        );
    }
    if tools.len() > MAX_TOOLS_SHOWN {
        let _ = write!(
            out,
            "<p class=\"muted\">The first {MAX_TOOLS_SHOWN} are shown.</p>"
        );
    }
    out.push_str("</div>");
}

/// Filters the catalogue as the viewer types; the page works without it.
const FILTER_SCRIPT: &str = "<script>document.getElementById('filter').addEventListener('input',\
function(e){var q=e.target.value.toLowerCase();document.querySelectorAll('#tools details').forEach(\
function(d){d.hidden=q!==''&&d.dataset.text.indexOf(q)<0;});});</script>";

/// Refreshes `#live` from `?live=1` every POLL_MS; stops once signed out
/// (a Bearer header is not sent again by a script). Counts its refreshes in
/// `data-polls`.
const POLL_SCRIPT: &str = "(function(){var live=document.getElementById('live');\
if(!live||!window.fetch){return;}var polls=0;function poll(){fetch('/ui?live=1',\
{credentials:'same-origin',cache:'no-store'}).then(function(r){if(r.status===401){\
live.insertAdjacentHTML('afterbegin','<p class=\"muted\">Signed out: reload the page to sign in.</p>');\
return false;}if(r.ok){return r.text().then(function(t){live.innerHTML=t;polls+=1;\
live.dataset.polls=polls;return true;});}return true;},function(){return true;}).then(\
function(again){if(again){setTimeout(poll,POLL_MS);}});}setTimeout(poll,POLL_MS);})();";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_for_elements_and_attributes() {
        assert_eq!(
            escape("<script>\"x\" & 'y'</script>"),
            "&lt;script&gt;&quot;x&quot; &amp; &#39;y&#39;&lt;/script&gt;"
        );
    }

    #[test]
    fn the_cookie_is_found_among_others() {
        let mut headers = HeaderMap::new();
        headers.insert(COOKIE, HeaderValue::from_static("a=1; mcpyard_ui=tok; b=2"));
        assert_eq!(cookie(&headers), Some("tok"));
        headers.insert(COOKIE, HeaderValue::from_static("mcpyard_uix=no"));
        assert_eq!(cookie(&headers), None);
    }
}
