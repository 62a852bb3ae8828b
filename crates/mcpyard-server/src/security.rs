//! The checks every HTTP request passes before any MCP handling: `Host`
//! and `Origin` against DNS rebinding, then the credentials (see [`crate::auth`]).

use std::net::IpAddr;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::header::{HOST, ORIGIN};
use http::{HeaderMap, Method, StatusCode};
use mcpyard_gateway::Identity;

use crate::options::HttpOptions;
use crate::reply::rpc_error_response;
use crate::router::AppState;

/// Axum middleware applying [`check`] to every request, then
/// authentication to every route but `GET /health` and the OAuth metadata
/// document; the identity found is put in the request's extensions.
pub(crate) async fn guard(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let host = req
        .headers()
        .get(HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| req.uri().authority().map(|a| a.as_str().to_owned()));
    if let Err(denied) = check(&state.opts, req.headers(), host.as_deref()) {
        return denied.into_response();
    }
    // A health probe and a client looking for where to get a token must
    // get through without credentials.
    let open = req.method() == Method::GET
        && (req.uri().path() == "/health"
            || state.metadata_paths.iter().any(|p| p == req.uri().path()));
    let identity = if open {
        Identity::anonymous()
    } else {
        match state.auth.authenticate(req.headers()).await {
            Ok(identity) => identity,
            Err(failure) => return state.auth.refuse(&failure),
        }
    };
    req.extensions_mut().insert(identity);
    next.run(req).await
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
}
