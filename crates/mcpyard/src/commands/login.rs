//! `mcpyard login SERVER`: a person logs in to an upstream behind OAuth
//! (authorization code + PKCE) and its tokens are saved for the gateway.
//!
//! The authorization URL is opened in a browser ($BROWSER, else the
//! desktop's opener) and printed; the authorization server sends the
//! browser back to a loopback port this command listens on. With
//! `--no-browser` (a machine without one), the person opens the URL
//! elsewhere and pastes the address they were sent back to (or its code).

use std::time::Duration;

use anyhow::{bail, Context as _};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

use crate::cli::LoginArgs;
use crate::config::{self, http_url, GrantKind, OAuthSettings, REDIRECT_PATH};
use crate::upstream_auth::oauth_client;

/// The most a browser's request head may take (the redirect's query holds
/// a code, a state and an issuer: far less).
const MAX_REQUEST_HEAD: usize = 16 * 1024;

/// How long one browser connection may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

pub(super) async fn run(args: LoginArgs) -> anyhow::Result<()> {
    let settings = config::load(&args.config)?;
    for w in &settings.warnings {
        tracing::warn!("{w}");
    }
    let name = args.server.as_str();
    let Some(upstream) = settings.upstream(name) else {
        if settings.servers.iter().any(|s| s.name == name) {
            bail!("server `{name}` is disabled in {}", settings.source);
        }
        let known: Vec<_> = settings.servers.iter().map(|s| s.name.as_str()).collect();
        bail!(
            "no server `{name}` in {} (servers: {})",
            settings.source,
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            }
        );
    };
    let Some(oauth) = settings.oauth(name) else {
        bail!(
            "server `{name}` has no OAuth settings in {}: add a `[servers.{name}.oauth]` table",
            settings.source
        );
    };
    if oauth.grant != GrantKind::AuthorizationCode {
        bail!(
            "server `{name}` uses the {} grant: the gateway obtains its tokens itself, no login is needed",
            oauth.grant.as_str()
        );
    }
    let tokens = settings
        .tokens
        .clone()
        .context("no folder for the tokens: set XDG_STATE_HOME or HOME")?;
    let url = http_url(&upstream.transport).context("OAuth is for HTTP servers")?;

    // Listening before the URL is shown: the redirect may come at once.
    let listener = TcpListener::bind(("127.0.0.1", oauth.redirect_port))
        .await
        .with_context(|| {
            format!(
                "cannot listen on 127.0.0.1:{} for the redirect (another login running? `redirect_port` picks another port, 0 any free one)",
                oauth.redirect_port
            )
        })?;
    let port = listener.local_addr().context("the redirect port")?.port();
    let redirect_uri = OAuthSettings::redirect_uri(port);
    let client = oauth_client(name, url, oauth, &tokens, redirect_uri)?;
    let pending = client
        .begin_login()
        .await
        .with_context(|| format!("cannot start the login to `{name}`"))?;

    eprintln!(
        "Log in to `{name}` at:\n\n  {}\n",
        pending.authorization_url
    );
    let mut browser = None;
    if args.no_browser {
        eprintln!("Then paste here the address your browser was sent back to (or its `code`), and press Enter:");
    } else {
        match open_browser(&pending.authorization_url) {
            Ok(child) => {
                eprintln!("(opened in your browser; waiting for it to come back to {REDIRECT_PATH} on port {port})");
                browser = Some(child);
            }
            Err(why) => eprintln!(
                "(could not open a browser: {why}; open the address above yourself, or run with --no-browser)"
            ),
        }
    }

    let received =
        tokio::time::timeout(args.timeout, receive(&listener, port, args.no_browser)).await;
    let (redirect, mut answer_to) = match received {
        Ok(r) => r?,
        Err(_) => bail!(
            "no redirect within {}: run `mcpyard login {name}` again",
            humantime::format_duration(args.timeout)
        ),
    };
    let finished = client.finish_login(pending, &redirect).await;
    if let Some(stream) = answer_to.as_mut() {
        let page = match &finished {
            Ok(()) => format!("Logged in to {name}. You can close this tab."),
            Err(_) => format!("The login to {name} failed: see the terminal."),
        };
        respond(stream, "200 OK", &page).await;
    }
    if let Some(mut child) = browser {
        // The opener usually exits at once; a browser that stays is its own.
        let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
    }
    finished.with_context(|| format!("the login to `{name}` failed"))?;
    eprintln!(
        "Logged in to `{name}`; tokens saved {tokens}. A running gateway uses them at its next attempt."
    );
    Ok(())
}

/// Opens `url` with $BROWSER (a `:`-separated list of commands, `%s` for
/// the URL, else it is appended), else the desktop's opener.
fn open_browser(url: &str) -> Result<tokio::process::Child, String> {
    let commands: Vec<String> = match std::env::var("BROWSER") {
        Ok(list) if !list.trim().is_empty() => list.split(':').map(str::to_owned).collect(),
        _ if cfg!(target_os = "macos") => vec!["open".into()],
        _ => vec!["xdg-open".into()],
    };
    let mut last = String::from("no browser command");
    for command in commands {
        let mut words = command.split_whitespace();
        let Some(program) = words.next() else {
            continue;
        };
        let mut args: Vec<String> = words.map(|w| w.replace("%s", url)).collect();
        if !command.contains("%s") {
            args.push(url.to_owned());
        }
        match tokio::process::Command::new(program)
            .args(&args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
        {
            Ok(child) => return Ok(child),
            Err(e) => last = format!("`{program}`: {e}"),
        }
    }
    Err(last)
}

/// Waits for the redirect on the loopback port, or with `paste`, for an
/// address or code pasted on stdin, whichever comes first. Returns it, and
/// the browser's connection when it came that way (to show the outcome).
async fn receive(
    listener: &TcpListener,
    port: u16,
    paste: bool,
) -> anyhow::Result<(String, Option<TcpStream>)> {
    let mut stdin = paste.then(|| BufReader::new(tokio::io::stdin()).lines());
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                if let Some((target, stream)) = redirect_request(stream).await {
                    return Ok((format!("http://127.0.0.1:{port}{target}"), Some(stream)));
                }
            }
            line = async { stdin.as_mut().expect("guarded by the branch condition").next_line().await }, if stdin.is_some() => {
                match line {
                    Ok(Some(line)) if !line.trim().is_empty() => return Ok((line.trim().to_owned(), None)),
                    Ok(Some(_)) => {}
                    // Nothing more will be pasted: only the browser can still answer.
                    Ok(None) | Err(_) => stdin = None,
                }
            }
        }
    }
}

/// Reads one request; when it is the redirect (our path, with a `code` or
/// an `error`), returns its target and the connection. Anything else
/// (a favicon, a probe) is answered and dropped.
async fn redirect_request(mut stream: TcpStream) -> Option<(String, TcpStream)> {
    let head = tokio::time::timeout(READ_TIMEOUT, read_head(&mut stream))
        .await
        .ok()??;
    let mut parts = head.lines().next()?.split(' ');
    let (method, target) = (parts.next()?, parts.next()?);
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let is_redirect = method == "GET"
        && path == REDIRECT_PATH
        && query
            .split('&')
            .any(|p| p.starts_with("code=") || p.starts_with("error="));
    if is_redirect {
        Some((target.to_owned(), stream))
    } else {
        respond(&mut stream, "404 Not Found", "Not the login redirect.").await;
        None
    }
}

async fn read_head(stream: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 || buf.len() + n > MAX_REQUEST_HEAD {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8(buf).ok()
}

async fn respond(stream: &mut TcpStream, status: &str, text: &str) {
    let body = format!(
        "<!doctype html><meta charset=utf-8><title>mcpyard login</title><p>{}</p>\n",
        text.replace('&', "&amp;").replace('<', "&lt;")
    );
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}
