//! Identities end to end: named API keys seen by the official Python SDK,
//! sessions bound to the identity that opened them, OAuth access tokens
//! checked against a real issuer (oauth2-mock-server), the SDK's OAuth
//! client completing a flow from mcpyard's metadata, front doors switched
//! off, and the stdio client's identity.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use mcpyard_client::TransportSpec;
use reqwest::StatusCode;
use serde_json::{json, Value};
use support::*;

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
const PING: &str = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
const STATUS: &str = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"mcpyard__status","arguments":{}}}"#;

/// No local-model discovery: these tests are about the front doors.
const QUIET: &str = "[inference]\nenabled = false\n";

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("http client")
}

/// A POST to `/mcp` with `bearer` and optionally a session.
async fn post(
    gw: &Gateway,
    bearer: Option<&str>,
    session: Option<&str>,
    body: &str,
) -> reqwest::Response {
    let mut req = http()
        .post(gw.url())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_owned());
    if let Some(b) = bearer {
        req = req.header("authorization", format!("Bearer {b}"));
    }
    if let Some(s) = session {
        req = req
            .header("mcp-session-id", s)
            .header("mcp-protocol-version", "2025-06-18");
    }
    req.send().await.expect("POST /mcp")
}

/// Opens a session as `bearer`; returns its id.
async fn open_session(gw: &Gateway, bearer: &str) -> String {
    let r = post(gw, Some(bearer), None, INIT).await;
    assert_eq!(r.status(), StatusCode::OK);
    r.headers()["mcp-session-id"]
        .to_str()
        .expect("session id")
        .to_owned()
}

/// The `caller` the status tool reports in `session`.
async fn caller_in(gw: &Gateway, bearer: &str, session: &str) -> Value {
    let r = post(gw, Some(bearer), Some(session), STATUS).await;
    assert_eq!(r.status(), StatusCode::OK);
    let body: Value = r.json().await.expect("JSON answer");
    body["result"]["structuredContent"]["caller"].clone()
}

fn www_authenticate(r: &reqwest::Response) -> String {
    r.headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

fn python_check(url: &str, args: &[&str]) -> Value {
    let mut all = vec![
        support_file("py_auth_check.py").display().to_string(),
        url.to_owned(),
    ];
    all.extend(args.iter().map(|a| (*a).to_owned()));
    run_python(&tool("venv/bin/python"), &all, Duration::from_secs(90))
}

const ALICE_KEY: &str = "alice-key-5f0c2b7e9d";
const BOB_KEY: &str = "bob-key-81aa63c40e";
const SHORTHAND_KEY: &str = "shorthand-key-0d9e";

async fn gateway_with_two_keys(dir: &std::path::Path) -> Gateway {
    let config = format!(
        "{QUIET}
[[auth.keys]]
name = \"alice\"
groups = [\"readers\"]
key_env = \"ALICE_KEY\"

[[auth.keys]]
name = \"bob\"
groups = [\"writers\", \"ops\"]
key_sha256 = \"{}\"

# readers get the status tool only; writers (and the shorthand key, in
# every group) get everything.
[policy]
default = \"deny\"

[[policy.rules]]
action = \"allow\"
groups = [\"writers\"]

[[policy.rules]]
action = \"allow\"
groups = [\"readers\"]
tools = [\"mcpyard__status\"]
",
        sha256_hex(BOB_KEY)
    );
    Gateway::start_with_env(
        &config,
        dir,
        &[("ALICE_KEY", ALICE_KEY), ("MCPYARD_API_KEY", SHORTHAND_KEY)],
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_api_keys_with_different_groups_reach_the_gateway_as_two_identities() {
    let dir = scratch();
    let gw = gateway_with_two_keys(dir.path()).await;

    let alice = python_check(&gw.url(), &["key", ALICE_KEY, "mcpyard__docs"]);
    assert_eq!(
        alice["caller"],
        json!({"name": "alice", "kind": "api_key", "groups": ["readers"], "scopes": []}),
        "{alice}"
    );
    let bob = python_check(&gw.url(), &["key", BOB_KEY, "mcpyard__docs"]);
    assert_eq!(
        bob["caller"],
        json!({"name": "bob", "kind": "api_key", "groups": ["writers", "ops"], "scopes": []}),
        "{bob}"
    );
    // The policy: alice (readers) lists and reaches the status tool only,
    // and `mcpyard__docs` is unknown to her; bob (writers) has both.
    assert_eq!(alice["tools"], json!(["mcpyard__status"]), "{alice}");
    assert_eq!(alice["tried"]["ok"], json!(false), "{alice}");
    assert!(
        alice["tried"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("Unknown tool")),
        "{alice}"
    );
    for tool in ["mcpyard__status", "mcpyard__docs"] {
        assert!(
            bob["tools"]
                .as_array()
                .is_some_and(|t| t.contains(&json!(tool))),
            "{bob}"
        );
    }
    assert_eq!(bob["tried"], json!({"ok": true, "error": null}), "{bob}");
    // MCPYARD_API_KEY stays the one-key shorthand: `default`, every group.
    let shorthand = python_check(&gw.url(), &["key", SHORTHAND_KEY]);
    assert_eq!(shorthand["caller"]["name"], json!("default"));
    assert_eq!(shorthand["caller"]["groups"], json!(["*"]));

    for bad in [
        None,
        Some("alice-key"),
        Some("bob-key-81aa63c40f"),
        Some(&sha256_hex(BOB_KEY)[..]),
    ] {
        let r = post(&gw, bad, None, INIT).await;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{bad:?}");
        assert!(www_authenticate(&r).starts_with("Bearer"), "{bad:?}");
    }
    let health = http()
        .get(format!("http://127.0.0.1:{}/health", gw.port))
        .send()
        .await
        .expect("GET /health");
    assert_eq!(health.status(), StatusCode::OK);
    let log = gw.proc.log_text();
    for secret in [ALICE_KEY, BOB_KEY, SHORTHAND_KEY] {
        assert!(!log.contains(secret), "a key reached the log");
    }
    assert!(
        log.contains("alice, bob") || log.contains("default, alice, bob"),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_answers_only_the_identity_that_opened_it() {
    let dir = scratch();
    let gw = gateway_with_two_keys(dir.path()).await;

    let session = open_session(&gw, ALICE_KEY).await;
    assert_eq!(
        caller_in(&gw, ALICE_KEY, &session).await["name"],
        json!("alice")
    );
    // Bob holding Alice's session id gets what an unknown session gets.
    let stolen = post(&gw, Some(BOB_KEY), Some(&session), PING).await;
    assert_eq!(stolen.status(), StatusCode::NOT_FOUND);
    let stream = http()
        .get(gw.url())
        .header("authorization", format!("Bearer {BOB_KEY}"))
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .send()
        .await
        .expect("GET /mcp");
    assert_eq!(stream.status(), StatusCode::NOT_FOUND);
    let ended = http()
        .delete(gw.url())
        .header("authorization", format!("Bearer {BOB_KEY}"))
        .header("mcp-session-id", &session)
        .send()
        .await
        .expect("DELETE /mcp");
    assert_eq!(ended.status(), StatusCode::NOT_FOUND);
    // Still Alice's, still alive.
    assert_eq!(
        post(&gw, Some(ALICE_KEY), Some(&session), PING)
            .await
            .status(),
        StatusCode::OK
    );

    // The legacy SSE door: authenticated like /mcp, sessions bound the same way.
    let base = format!("http://127.0.0.1:{}", gw.port);
    let refused = http()
        .get(format!("{base}/sse"))
        .send()
        .await
        .expect("GET /sse");
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    let mut sse = http()
        .get(format!("{base}/sse"))
        .header("authorization", format!("Bearer {ALICE_KEY}"))
        .send()
        .await
        .expect("GET /sse");
    assert_eq!(sse.status(), StatusCode::OK);
    let mut seen = String::new();
    let endpoint = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let chunk = sse.chunk().await.expect("SSE chunk").expect("SSE open");
            seen.push_str(&String::from_utf8_lossy(&chunk));
            if let Some(line) = seen.lines().find(|l| l.starts_with("data: /messages")) {
                return line.trim_start_matches("data: ").to_owned();
            }
        }
    })
    .await
    .expect("the endpoint event");
    let to_messages = |key: &str| {
        http()
            .post(format!("{base}{endpoint}"))
            .header("authorization", format!("Bearer {key}"))
            .header("content-type", "application/json")
            .body(PING)
            .send()
    };
    assert_eq!(
        to_messages(BOB_KEY).await.expect("POST").status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        to_messages(ALICE_KEY).await.expect("POST").status(),
        StatusCode::ACCEPTED
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_switched_off_front_door_answers_403() {
    let dir = scratch();
    let only_sse =
        Gateway::start(&format!("{QUIET}[http]\nstreamable = false\n"), dir.path()).await;
    let base = format!("http://127.0.0.1:{}", only_sse.port);
    let r = post(&only_sse, None, None, INIT).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let body: Value = r.json().await.expect("JSON");
    assert!(body["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("switched off")));
    let open = http()
        .get(format!("{base}/sse"))
        .send()
        .await
        .expect("GET /sse");
    assert_eq!(open.status(), StatusCode::OK, "the other door stays open");
    drop(open);

    let dir2 = scratch();
    let only_mcp =
        Gateway::start(&format!("{QUIET}[http]\nlegacy_sse = false\n"), dir2.path()).await;
    let base = format!("http://127.0.0.1:{}", only_mcp.port);
    let sse = http()
        .get(format!("{base}/sse"))
        .send()
        .await
        .expect("GET /sse");
    assert_eq!(sse.status(), StatusCode::FORBIDDEN);
    let messages = http()
        .post(format!("{base}/messages?sessionId=x"))
        .header("content-type", "application/json")
        .body(PING)
        .send()
        .await
        .expect("POST /messages");
    assert_eq!(messages.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        post(&only_mcp, None, None, INIT).await.status(),
        StatusCode::OK
    );
}

async fn stdio_caller(dir: &std::path::Path, config: &str, user: &str) -> Value {
    let cfg = dir.join("stdio.toml");
    std::fs::write(&cfg, config).expect("write config");
    let client = connect(
        TransportSpec::Stdio {
            command: env!("CARGO_BIN_EXE_mcpyard").into(),
            args: vec!["stdio".into(), "--config".into(), cfg.display().to_string()],
            env: BTreeMap::from([("USER".to_owned(), user.to_owned())]),
            inherit_env: vec![],
            cwd: None,
        },
        Arc::new(Recorder::default()),
        json!({}),
    )
    .await;
    let status = call(&client, "mcpyard__status", json!({})).await;
    client.shutdown().await;
    status["structuredContent"]["caller"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stdio_client_is_the_local_user_or_the_configured_identity() {
    let dir = scratch();
    let local = stdio_caller(dir.path(), QUIET, "ada").await;
    assert_eq!(
        local,
        json!({"name": "ada", "kind": "local", "groups": ["*"], "scopes": []})
    );
    let configured = stdio_caller(
        dir.path(),
        &format!("{QUIET}[auth.stdio]\nname = \"desk\"\ngroups = [\"dev\"]\n"),
        "ada",
    )
    .await;
    assert_eq!(
        configured,
        json!({"name": "desk", "kind": "local", "groups": ["dev"], "scopes": []})
    );
}

// ---- OAuth 2.1: mcpyard as a resource server

/// oauth2-mock-server with the fixture's additions (support/oauth_issuer.mjs).
struct Issuer {
    _proc: Proc,
    url: String,
}

impl Issuer {
    async fn start(dir: &std::path::Path) -> Issuer {
        let port = free_port();
        let mut cmd = std::process::Command::new(node());
        cmd.arg(support_file("oauth_issuer.mjs"))
            .arg(tool(
                "npm-issuer/node_modules/oauth2-mock-server/dist/index.mjs",
            ))
            .arg(port.to_string());
        let proc = Proc::spawn("oauth issuer", cmd, &dir.join("issuer.log"));
        wait_port(port, Duration::from_secs(30)).await;
        Issuer {
            _proc: proc,
            url: format!("http://127.0.0.1:{port}"),
        }
    }

    async fn control(&self, path: &str, body: Value) -> Value {
        let r = http()
            .post(format!("{}{path}", self.url))
            .json(&body)
            .send()
            .await
            .expect("issuer control");
        assert!(r.status().is_success(), "{path}: {}", r.status());
        r.json().await.expect("issuer JSON")
    }

    /// A token signed by the issuer, with `claims` over its defaults.
    async fn token(&self, claims: Value) -> String {
        self.token_with(json!({ "claims": claims })).await
    }

    async fn token_with(&self, request: Value) -> String {
        self.control("/test/token", request).await["token"]
            .as_str()
            .expect("token")
            .to_owned()
    }
}

const SCOPE: &str = "mcp:tools";

async fn oauth_gateway(dir: &std::path::Path, issuer: &Issuer) -> Gateway {
    let config = format!(
        "{QUIET}
[auth.oauth]
issuer = \"{}\"
required_scopes = [\"{SCOPE}\"]
leeway = \"5s\"
jwks_min_refresh = \"1s\"
",
        issuer.url
    );
    Gateway::start(&config, dir).await
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn unb64(text: &str) -> Vec<u8> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text)
        .expect("base64url")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn access_tokens_are_checked_against_the_issuer() {
    let dir = scratch();
    let issuer = Issuer::start(dir.path()).await;
    let gw = oauth_gateway(dir.path(), &issuer).await;
    let resource = gw.url();
    let metadata_url = format!(
        "http://127.0.0.1:{}/.well-known/oauth-protected-resource/mcp",
        gw.port
    );

    // Without a token: where to get one.
    let r = post(&gw, None, None, INIT).await;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        www_authenticate(&r),
        format!("Bearer resource_metadata=\"{metadata_url}\", scope=\"{SCOPE}\"")
    );
    let metadata: Value = http()
        .get(&metadata_url)
        .send()
        .await
        .expect("metadata")
        .json()
        .await
        .expect("metadata JSON");
    assert_eq!(metadata["resource"], json!(resource));
    assert_eq!(metadata["authorization_servers"], json!([issuer.url]));
    assert_eq!(metadata["scopes_supported"], json!([SCOPE]));

    let good = json!({"sub": "alice", "aud": resource, "scope": format!("{SCOPE} extra"), "groups": ["readers"]});
    let token = issuer.token(good.clone()).await;
    let session = open_session(&gw, &token).await;
    assert_eq!(
        caller_in(&gw, &token, &session).await,
        json!({"name": "alice", "kind": "token", "groups": ["readers"], "scopes": [SCOPE, "extra"]})
    );

    // Each bad token: 401, `invalid_token`, and the metadata to start over.
    let with = |patch: Value| {
        let mut claims = good.clone();
        for (k, v) in patch.as_object().expect("object") {
            claims[k] = v.clone();
        }
        claims
    };
    let wrong_audience = issuer
        .token(with(json!({"aud": "http://127.0.0.1:1/mcp"})))
        .await;
    let wrong_issuer = issuer
        .token(with(json!({"iss": "http://127.0.0.1:2"})))
        .await;
    let expired = issuer
        .token_with(json!({"claims": good, "expiresIn": -600}))
        .await;
    let not_yet = issuer.token(with(json!({"nbf": 4_000_000_000u64}))).await;
    let unknown_kid = issuer
        .control("/test/foreign-token", json!({"claims": good}))
        .await["token"]
        .as_str()
        .expect("token")
        .to_owned();
    let parts: Vec<&str> = token.split('.').collect();
    let alg_none = format!(
        "{}.{}.",
        b64(br#"{"alg":"none","typ":"JWT","kid":"k1"}"#),
        parts[1]
    );
    let mut payload: Value = serde_json::from_slice(&unb64(parts[1])).expect("payload");
    payload["sub"] = json!("mallory");
    let tampered_payload = format!(
        "{}.{}.{}",
        parts[0],
        b64(payload.to_string().as_bytes()),
        parts[2]
    );
    let mut signature = unb64(parts[2]);
    signature[10] ^= 0x01;
    let tampered_signature = format!("{}.{}.{}", parts[0], parts[1], b64(&signature));
    for (what, bad) in [
        ("wrong audience", &wrong_audience),
        ("wrong issuer", &wrong_issuer),
        ("expired", &expired),
        ("not yet valid", &not_yet),
        ("unknown kid", &unknown_kid),
        ("alg none", &alg_none),
        ("tampered payload", &tampered_payload),
        ("tampered signature", &tampered_signature),
        ("not a JWT", &"opaque-token".to_owned()),
    ] {
        let r = post(&gw, Some(bad), None, INIT).await;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{what}");
        let challenge = www_authenticate(&r);
        assert!(
            challenge.starts_with(&format!(
                "Bearer resource_metadata=\"{metadata_url}\", error=\"invalid_token\""
            )),
            "{what}: {challenge}"
        );
        // The session opened with the good token refuses it too.
        let r = post(&gw, Some(bad), Some(&session), PING).await;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{what} in a session");
    }

    // Valid, but without the scope the endpoint needs: 403 naming it.
    let narrow = issuer.token(with(json!({"scope": "other"}))).await;
    let r = post(&gw, Some(&narrow), None, INIT).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        www_authenticate(&r),
        format!("Bearer resource_metadata=\"{metadata_url}\", error=\"insufficient_scope\", scope=\"{SCOPE}\"")
    );

    // Another subject with a valid token cannot use Alice's session.
    let bob = issuer.token(with(json!({"sub": "bob"}))).await;
    assert_eq!(
        post(&gw, Some(&bob), Some(&session), PING).await.status(),
        StatusCode::NOT_FOUND
    );

    // Key rotation: a token signed with a key the issuer publishes later
    // is accepted once the gateway refetches the JWKS for the unknown kid.
    issuer.control("/test/rotate", json!({"kid": "k2"})).await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let rotated = issuer
        .token_with(json!({"kid": "k2", "claims": good}))
        .await;
    assert!(rotated.starts_with(&b64(br#"{"typ":"JWT","kid":"k2""#)[..20]));
    assert_eq!(
        post(&gw, Some(&rotated), None, INIT).await.status(),
        StatusCode::OK,
        "the rotated key was not picked up"
    );
    let log = gw.proc.log_text();
    assert!(!log.contains(&token), "a token reached the log");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clients_token_never_reaches_an_upstream() {
    let dir = scratch();
    let issuer = Issuer::start(dir.path()).await;
    let port = free_port();
    let mut cmd = std::process::Command::new(tool("venv1/bin/python"));
    cmd.arg(support_file("py_header_upstream.py"))
        .arg(port.to_string());
    let _upstream = Proc::spawn("header upstream", cmd, &dir.path().join("upstream.log"));
    wait_port(port, Duration::from_secs(30)).await;
    // The upstream reports the header it got; the guardrails would redact
    // it as a bearer token, which is their job, not what is looked at here.
    let config = format!(
        "{QUIET}
[guardrails]
redact = false

[servers.up]
url = \"http://127.0.0.1:{port}/mcp\"
headers = {{ Authorization = \"Bearer ${{UPSTREAM_TOKEN}}\" }}

[auth.oauth]
issuer = \"{}\"
",
        issuer.url
    );
    let gw = Gateway::start_with_env(
        &config,
        dir.path(),
        &[("UPSTREAM_TOKEN", "upstream-own-credential")],
    )
    .await;
    let token = issuer.token(json!({"sub": "alice", "aud": gw.url()})).await;
    let client = connect(
        TransportSpec::StreamableHttp {
            url: gw.url(),
            headers: vec![("Authorization".into(), format!("Bearer {token}"))],
        },
        Arc::new(Recorder::default()),
        json!({}),
    )
    .await;
    wait_for_tools(&client, &["up__authorization"], Duration::from_secs(30)).await;
    let seen = first_text(&call(&client, "up__authorization", json!({})).await).to_owned();
    client.shutdown().await;
    // The upstream sees the credential configured for it, never the client's.
    assert_eq!(seen, "Bearer upstream-own-credential");
    assert!(!seen.contains(&token));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_oauth_client_discovers_the_metadata_and_completes_a_flow() {
    let dir = scratch();
    let issuer = Issuer::start(dir.path()).await;
    let gw = oauth_gateway(dir.path(), &issuer).await;
    let summary = python_check(&gw.url(), &["oauth"]);
    let fetched: Vec<&str> = summary["fetched"]
        .as_array()
        .expect("fetched")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for step in [
        "/.well-known/oauth-protected-resource/mcp",
        "/register",
        "authorize",
        "/token",
    ] {
        assert!(fetched.contains(&step), "{step} missing from {fetched:?}");
    }
    assert_eq!(summary["caller"]["kind"], json!("token"), "{summary}");
    assert_eq!(summary["caller"]["name"], json!("johndoe"));
    assert_eq!(summary["caller"]["groups"], json!(["oauth-users"]));
    assert!(summary["caller"]["scopes"]
        .as_array()
        .is_some_and(|s| s.contains(&json!(SCOPE))));
}

/// A tools/call of `name` as `bearer` in a new session: the JSON-RPC answer.
async fn call_as(gw: &Gateway, bearer: &str, name: &str) -> Value {
    let session = open_session(gw, bearer).await;
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": name, "arguments": {}}});
    let r = post(gw, Some(bearer), Some(&session), &body.to_string()).await;
    assert_eq!(r.status(), StatusCode::OK);
    r.json().await.expect("JSON answer")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tokens_claims_never_borrow_what_a_key_was_given() {
    let dir = scratch();
    let issuer = Issuer::start(dir.path()).await;
    let config = format!(
        "{QUIET}
[[auth.keys]]
name = \"bob\"
groups = [\"ops\"]
key_sha256 = \"{}\"

[auth.oauth]
issuer = \"{}\"
required_scopes = [\"{SCOPE}\"]

[policy]
default = \"deny\"

[[policy.rules]]                  # the key named bob: everything
action = \"allow\"
identities = [\"bob\"]

[[policy.rules]]                  # a token whose subject is bob: the status only
action = \"allow\"
identities = [\"token:bob\"]
tools = [\"mcpyard__status\"]

[[policy.rules]]                  # the ops group: the docs
action = \"allow\"
groups = [\"ops\"]
tools = [\"mcpyard__docs\"]

[[limits.rate]]
name = \"per-identity\"
rate = \"2/min\"
",
        sha256_hex(BOB_KEY),
        issuer.url
    );
    let gw = Gateway::start(&config, dir.path()).await;
    let resource = gw.url();
    let token = |sub: &str, groups: Value| json!({"sub": sub, "aud": resource, "scope": SCOPE, "groups": groups});
    let token_bob = issuer.token(token("bob", json!([]))).await;
    let everyone = issuer.token(token("eve", json!(["*"]))).await;
    let ops = issuer.token(token("olga", json!(["ops"]))).await;

    let refused = |answer: &Value| answer["error"]["code"] == json!(-32602);
    // The key's grants are the key's: a token named like it has its own.
    assert!(!refused(&call_as(&gw, BOB_KEY, "mcpyard__docs").await));
    let docs = call_as(&gw, &token_bob, "mcpyard__docs").await;
    assert!(refused(&docs), "a token borrowed the key's grant: {docs}");
    // `*` in a token's groups is a group of that name, not every group.
    let docs = call_as(&gw, &everyone, "mcpyard__docs").await;
    assert!(refused(&docs), "a token's `*` joined every group: {docs}");
    assert!(!refused(&call_as(&gw, &ops, "mcpyard__docs").await));

    // Each has its own rate bucket: the token's calls leave the key's.
    for _ in 0..2 {
        let status = call_as(&gw, &token_bob, "mcpyard__status").await;
        assert!(status["result"].is_object(), "{status}");
    }
    let status = call_as(&gw, BOB_KEY, "mcpyard__status").await;
    assert!(
        status["result"].is_object(),
        "the key's bucket was used up by the token: {status}"
    );
    let limited = call_as(&gw, &token_bob, "mcpyard__status").await;
    assert_eq!(limited["error"]["code"], json!(-32029), "{limited}");
}
