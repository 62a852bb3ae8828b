//! The checks every HTTP request passes before any MCP handling: `Host`
//! and `Origin` against DNS rebinding, then the credentials (see [`crate::auth`]).

use std::net::{IpAddr, Ipv6Addr};

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::header::{HOST, ORIGIN};
use http::{HeaderMap, Method, StatusCode, Uri};
use mcpyard_gateway::Identity;

use crate::auth::MetricsToken;
use crate::metrics;
use crate::options::{HttpOptions, METRICS_GROUP};
use crate::reply::rpc_error_response;
use crate::state::AppState;

/// Axum middleware applying [`check`] to every request, then
/// authentication to every route but `GET /health`, the OAuth metadata
/// document and the status page (which authenticates its own way, see
/// `ui`); the identity found is put in the request's extensions.
pub(crate) async fn guard(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    if let Err(denied) = check_request(&state.opts, req.headers(), req.uri()) {
        return denied.into_response();
    }
    // A health probe and a client looking for where to get a token must
    // get through without credentials.
    let open = req.method() == Method::GET
        && (crate::probes::is_probe(req.uri().path())
            || state.metadata_paths.iter().any(|p| p == req.uri().path()));
    // The status page signs its browsers in itself (its login form must be
    // reachable without a key); it shows nothing before that.
    if crate::ui::handles(req.uri().path()) {
        return next.run(req).await;
    }
    let metrics = state.opts.metrics_route && req.uri().path() == metrics::PATH;
    if let (true, Some(token)) = (metrics, &state.metrics_token) {
        // The metrics token stands apart from keys and access tokens: it
        // reads the metrics and nothing else, and nothing else reads them.
        if !token.admits(req.headers()) {
            return MetricsToken::refuse();
        }
        req.extensions_mut().insert(Identity::anonymous());
        return next.run(req).await;
    }
    let identity = if open {
        Identity::anonymous()
    } else {
        match authenticate(&state, req.headers()).await {
            Ok(identity) => identity,
            Err(refused) => return refused,
        }
    };
    // The metrics name every tool and how much it is used: not for a key
    // the policy may keep from some of them.
    if metrics && state.auth.is_required() && !identity.in_group(METRICS_GROUP) {
        return rpc_error_response(
            StatusCode::FORBIDDEN,
            mcpyard_proto::codes::INVALID_REQUEST,
            "Forbidden: /metrics is read with the metrics token, or by an identity in the `metrics` group",
        );
    }
    req.extensions_mut().insert(identity);
    next.run(req).await
}

/// What [`guard`] does for a request to the MCP endpoint, called without
/// the middleware (see `front`): the origin and host rules, then the
/// credentials. The identity, or the answer that turns the request away.
pub(crate) async fn admit(
    state: &AppState,
    headers: &HeaderMap,
    uri: &Uri,
) -> Result<Identity, Response> {
    check_request(&state.opts, headers, uri).map_err(IntoResponse::into_response)?;
    authenticate(state, headers).await
}

async fn authenticate(state: &AppState, headers: &HeaderMap) -> Result<Identity, Response> {
    state
        .auth
        .authenticate(headers)
        .await
        .map_err(|failure| state.auth.refuse(&failure))
}

/// [`check`] on a request, whose host is its `Host` header, else its URI's.
fn check_request(opts: &HttpOptions, headers: &HeaderMap, uri: &Uri) -> Result<(), Denied> {
    let host = headers
        .get(HOST)
        .and_then(|v| v.to_str().ok())
        .or_else(|| uri.authority().map(|a| a.as_str()));
    check(opts, headers, host)
}

/// Why a request was turned away before authentication.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Denied {
    Origin,
    Host,
}

impl IntoResponse for Denied {
    fn into_response(self) -> Response {
        let message = match self {
            Denied::Origin => "Forbidden: Origin not allowed",
            Denied::Host => "Forbidden: Host not allowed",
        };
        rpc_error_response(
            StatusCode::FORBIDDEN,
            mcpyard_proto::codes::INVALID_REQUEST,
            message,
        )
    }
}

/// Applies the origin and host rules against DNS rebinding.
pub(crate) fn check(
    opts: &HttpOptions,
    headers: &HeaderMap,
    host: Option<&str>,
) -> Result<(), Denied> {
    if let Some(origin) = headers.get(ORIGIN) {
        let origin = origin.to_str().map_err(|_| Denied::Origin)?;
        if !origin_allowed(opts, origin) {
            return Err(Denied::Origin);
        }
    }
    if !host_allowed(opts, host) {
        return Err(Denied::Host);
    }
    Ok(())
}

/// `localhost`, `127.0.0.0/8` and `::1` (a host as [`host_name`] gives it).
fn is_loopback_name(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The host of an authority `host[:port]`, read strictly (RFC 3986 section
/// 3.2.2): a bracketed IPv6 address (returned without its brackets), or a
/// name or IPv4 address of letters, digits, `-`, `.` and `_`; then nothing,
/// or `:` and a port of 1 to 65535. `None` for anything else, so that no
/// text after the part a check reads (`[::1]evil.com`) can pass it.
fn host_name(authority: &str) -> Option<&str> {
    let (host, rest) = match authority.strip_prefix('[') {
        Some(bracketed) => {
            let (v6, rest) = bracketed.split_once(']')?;
            v6.parse::<Ipv6Addr>().ok()?;
            (v6, rest)
        }
        None => {
            let end = authority.find(':').unwrap_or(authority.len());
            let (name, rest) = authority.split_at(end);
            let name_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_');
            if name.is_empty() || !name.chars().all(name_char) {
                return None;
            }
            (name, rest)
        }
    };
    match rest.strip_prefix(':') {
        None if rest.is_empty() => Some(host),
        Some(port)
            if (1..=5).contains(&port.len())
                && port.bytes().all(|b| b.is_ascii_digit())
                && port.parse::<u16>().is_ok_and(|p| p != 0) =>
        {
            Some(host)
        }
        _ => None,
    }
}

fn origin_allowed(opts: &HttpOptions, origin: &str) -> bool {
    let origin = origin.trim().trim_end_matches('/');
    if opts
        .allowed_origins
        .iter()
        .any(|o| o == "*" || o.trim_end_matches('/').eq_ignore_ascii_case(origin))
    {
        return true;
    }
    let Some((scheme, authority)) = origin.split_once("://") else {
        return false;
    };
    (scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https"))
        && host_name(authority).is_some_and(is_loopback_name)
}

fn host_allowed(opts: &HttpOptions, host: Option<&str>) -> bool {
    // A Host that is not a well-formed authority is never one we serve,
    // whatever else is accepted.
    let name = match host.map(host_name) {
        Some(None) => return false,
        Some(Some(name)) => Some(name),
        None => None,
    };
    let bound_loopback = opts.listen.ip().is_loopback();
    if !bound_loopback && opts.allowed_hosts.is_empty() {
        return true;
    }
    let (Some(host), Some(name)) = (host, name) else {
        return false;
    };
    if bound_loopback && is_loopback_name(name) {
        return true;
    }
    opts.allowed_hosts.iter().any(|h| {
        h.eq_ignore_ascii_case(host)
            || h.eq_ignore_ascii_case(name)
            || h.strip_prefix('[')
                .and_then(|h| h.strip_suffix(']'))
                .is_some_and(|h| h.eq_ignore_ascii_case(name))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> HttpOptions {
        HttpOptions::default()
    }

    #[test]
    fn loopback_origins_pass_and_others_do_not() {
        let o = opts();
        for ok in [
            "http://localhost",
            "http://localhost:6274",
            "https://127.0.0.1:8443",
            "http://[::1]:3000",
        ] {
            assert!(origin_allowed(&o, ok), "{ok}");
        }
        for bad in [
            "http://evil.example",
            "http://localhost.evil.example",
            "null",
            "file://localhost",
            "http://user@evil.example",
        ] {
            assert!(!origin_allowed(&o, bad), "{bad}");
        }
    }

    #[test]
    fn configured_origins_pass() {
        let o = HttpOptions {
            allowed_origins: vec!["https://app.example".into()],
            ..opts()
        };
        assert!(origin_allowed(&o, "https://app.example"));
        assert!(!origin_allowed(&o, "https://other.example"));
    }

    #[test]
    fn host_must_be_loopback_when_bound_to_loopback() {
        let o = opts();
        assert!(host_allowed(&o, Some("127.0.0.1:8484")));
        assert!(host_allowed(&o, Some("localhost")));
        assert!(host_allowed(&o, Some("[::1]:8484")));
        assert!(!host_allowed(&o, Some("evil.example:8484")));
        assert!(!host_allowed(&o, None));
        let o = HttpOptions {
            allowed_hosts: vec!["mcp.internal".into(), "[fd00::1]".into()],
            ..opts()
        };
        assert!(host_allowed(&o, Some("mcp.internal:8484")));
        assert!(host_allowed(&o, Some("[fd00::1]:8484")));
        assert!(!host_allowed(&o, Some("mcp.internal:8484x")));
        let o = HttpOptions {
            allowed_hosts: vec!["mcp.internal".into()],
            ..opts()
        };
        assert!(host_allowed(&o, Some("mcp.internal:8484")));
    }

    #[test]
    fn hosts_are_parsed_strictly() {
        for good in [
            ("[::1]", "::1"),
            ("[::1]:8484", "::1"),
            ("127.0.0.1", "127.0.0.1"),
            ("127.0.0.1:65535", "127.0.0.1"),
            ("Localhost:1", "Localhost"),
            ("mcp.internal", "mcp.internal"),
        ] {
            assert_eq!(host_name(good.0), Some(good.1), "{}", good.0);
        }
        for bad in [
            "[::1]evil.com",
            "[::1]:8484evil.com",
            "[::1]:",
            "[::1]]",
            "[::1",
            "[evil.com]",
            "[127.0.0.1]",
            "::1",
            "127.0.0.1:",
            "127.0.0.1:0",
            "127.0.0.1:65536",
            "127.0.0.1:8484:8484",
            "127.0.0.1:+80",
            "localhost@evil.com",
            "localhost:80@evil.com",
            "localhost/x",
            "",
            ":80",
        ] {
            assert_eq!(host_name(bad), None, "{bad}");
            assert!(!host_allowed(&opts(), Some(bad)), "{bad}");
        }
        assert!(!origin_allowed(&opts(), "http://[::1]evil.com"));
    }

    #[test]
    fn any_host_when_bound_to_all_interfaces_without_a_list() {
        let o = HttpOptions {
            listen: "0.0.0.0:8484".parse().expect("test address"),
            ..opts()
        };
        assert!(host_allowed(&o, Some("anything.example")));
    }
}
