//! The checks every HTTP request passes before any MCP handling: `Host`
//! and `Origin` against DNS rebinding, and the bearer API key.

use std::net::IpAddr;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::header::{AUTHORIZATION, HOST, ORIGIN, WWW_AUTHENTICATE};
use http::{HeaderMap, Method, StatusCode};
use subtle::ConstantTimeEq;

use crate::options::HttpOptions;
use crate::reply::rpc_error_response;
use crate::router::AppState;

/// Axum middleware applying [`check`] to every request.
pub(crate) async fn guard(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let health = req.method() == Method::GET && req.uri().path() == "/health";
    let host = req
        .headers()
        .get(HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| req.uri().authority().map(|a| a.as_str().to_owned()));
    match check(&state.opts, req.headers(), host.as_deref(), health) {
        Ok(()) => next.run(req).await,
        Err(denied) => denied.into_response(),
    }
}

/// Why a request was turned away.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Denied {
    Origin,
    Host,
    Unauthorized,
}

impl IntoResponse for Denied {
    fn into_response(self) -> Response {
        match self {
            Denied::Origin => rpc_error_response(
                StatusCode::FORBIDDEN,
                mcpyard_proto::codes::INVALID_REQUEST,
                "Forbidden: Origin not allowed",
            ),
            Denied::Host => rpc_error_response(
                StatusCode::FORBIDDEN,
                mcpyard_proto::codes::INVALID_REQUEST,
                "Forbidden: Host not allowed",
            ),
            Denied::Unauthorized => {
                let mut r = rpc_error_response(
                    StatusCode::UNAUTHORIZED,
                    mcpyard_proto::codes::INVALID_REQUEST,
                    "Unauthorized: send Authorization: Bearer <api key>",
                );
                r.headers_mut().insert(
                    WWW_AUTHENTICATE,
                    http::HeaderValue::from_static("Bearer realm=\"mcpyard\""),
                );
                r
            }
        }
    }
}

/// Applies the origin, host and API key rules. `health` requests skip the
/// API key only: a health probe must work without the secret.
pub(crate) fn check(
    opts: &HttpOptions,
    headers: &HeaderMap,
    host: Option<&str>,
    health: bool,
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
    if let (Some(key), false) = (&opts.api_key, health) {
        if !bearer_matches(headers, key) {
            return Err(Denied::Unauthorized);
        }
    }
    Ok(())
}

fn bearer_matches(headers: &HeaderMap, key: &str) -> bool {
    let Some(value) = headers.get(AUTHORIZATION) else {
        return false;
    };
    let value = value.as_bytes();
    let Some(token) = value
        .get(..7)
        .filter(|p| p.eq_ignore_ascii_case(b"bearer "))
        .and(value.get(7..))
    else {
        return false;
    };
    // Constant time so the key cannot be guessed byte by byte from timings.
    token.ct_eq(key.as_bytes()).into()
}

/// `localhost`, `127.0.0.0/8` and `::1`, with or without brackets.
fn is_loopback_name(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Splits `name[:port]` / `[v6][:port]` into the host name part.
fn host_name(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match authority.rsplit_once(':') {
        // A bare IPv6 address without brackets has several colons.
        Some((name, port)) if !name.contains(':') && port.chars().all(|c| c.is_ascii_digit()) => {
            name
        }
        _ => authority,
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
        && !authority.contains('/')
        && !authority.contains('@')
        && is_loopback_name(host_name(authority))
}

fn host_allowed(opts: &HttpOptions, host: Option<&str>) -> bool {
    let bound_loopback = opts.listen.ip().is_loopback();
    if !bound_loopback && opts.allowed_hosts.is_empty() {
        return true;
    }
    let Some(host) = host else {
        return false;
    };
    let name = host_name(host);
    if bound_loopback && is_loopback_name(name) {
        return true;
    }
    opts.allowed_hosts
        .iter()
        .any(|h| h.eq_ignore_ascii_case(host) || h.eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn opts() -> HttpOptions {
        HttpOptions::default()
    }

    fn with(name: http::HeaderName, value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(name, HeaderValue::from_str(value).expect("test header"));
        h
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
            allowed_hosts: vec!["mcp.internal".into()],
            ..opts()
        };
        assert!(host_allowed(&o, Some("mcp.internal:8484")));
    }

    #[test]
    fn any_host_when_bound_to_all_interfaces_without_a_list() {
        let o = HttpOptions {
            listen: "0.0.0.0:8484".parse().expect("test address"),
            ..opts()
        };
        assert!(host_allowed(&o, Some("anything.example")));
    }

    #[test]
    fn api_key_needs_exact_bearer_except_for_health() {
        let o = HttpOptions {
            api_key: Some("k3y".into()),
            ..opts()
        };
        let good = with(AUTHORIZATION, "Bearer k3y");
        assert_eq!(check(&o, &good, Some("localhost"), false), Ok(()));
        let lower = with(AUTHORIZATION, "bearer k3y");
        assert_eq!(check(&o, &lower, Some("localhost"), false), Ok(()));
        for bad in ["Bearer k3", "Bearer k3yy", "Basic k3y", "k3y", "Bearer "] {
            let h = with(AUTHORIZATION, bad);
            assert_eq!(
                check(&o, &h, Some("localhost"), false),
                Err(Denied::Unauthorized),
                "{bad}"
            );
        }
        assert_eq!(
            check(&o, &HeaderMap::new(), Some("localhost"), true),
            Ok(())
        );
    }
}
