//! Finding the authorization server: RFC 9728 protected-resource metadata,
//! then RFC 8414 / OpenID Connect discovery, as the MCP spec orders them,
//! with the 2025-03-26 fallbacks for servers that publish neither.

use serde::Deserialize;
use url::Url;

use super::http::get_json;
use super::OAuthError;

/// RFC 9728 protected-resource metadata (the fields used here).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ResourceMetadata {
    pub(crate) resource: Option<String>,
    #[serde(default)]
    pub(crate) authorization_servers: Vec<String>,
    pub(crate) scopes_supported: Option<Vec<String>>,
}

/// RFC 8414 authorization-server metadata (the fields used here).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ServerMetadata {
    pub(crate) issuer: String,
    pub(crate) authorization_endpoint: Option<String>,
    pub(crate) token_endpoint: Option<String>,
    pub(crate) registration_endpoint: Option<String>,
    pub(crate) code_challenge_methods_supported: Option<Vec<String>>,
    pub(crate) token_endpoint_auth_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) client_id_metadata_document_supported: bool,
    #[serde(default)]
    pub(crate) authorization_response_iss_parameter_supported: bool,
    /// RFC 9449: the server binds tokens to a DPoP key signed with these.
    #[serde(default)]
    pub(crate) dpop_signing_alg_values_supported: Option<Vec<String>>,
}

/// What discovery found.
#[derive(Debug, Clone)]
pub(crate) struct Discovered {
    /// The `resource` to ask tokens for (RFC 8707).
    pub(crate) resource: String,
    /// `scopes_supported` of the protected-resource metadata.
    pub(crate) resource_scopes: Option<Vec<String>>,
    pub(crate) server: ServerMetadata,
    /// Whether `server` came from real metadata (else: the 2025-03-26
    /// default endpoints), and so whether PKCE support was advertised.
    pub(crate) from_metadata: bool,
}

/// The server URL as a resource indicator: no fragment (RFC 8707 section 2).
pub(crate) fn canonical_resource(server: &Url) -> String {
    let mut u = server.clone();
    u.set_fragment(None);
    u.to_string()
}

/// `origin + /.well-known/NAME + path` (path-inserted), then, when the path
/// is not empty, `origin + /.well-known/NAME`.
fn well_known(base: &Url, name: &str, root_too: bool) -> Vec<Url> {
    let path = base.path().trim_end_matches('/');
    let mut out = Vec::new();
    let mut at = |p: String| {
        let mut u = base.clone();
        u.set_path(&p);
        u.set_query(None);
        u.set_fragment(None);
        out.push(u);
    };
    if !path.is_empty() {
        at(format!("/.well-known/{name}{path}"));
        if root_too {
            at(format!("/.well-known/{name}"));
        }
    } else {
        at(format!("/.well-known/{name}"));
    }
    out
}

/// The metadata URLs of an issuer, in the MCP spec's order.
fn server_metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    let mut out = well_known(issuer, "oauth-authorization-server", false);
    out.extend(well_known(issuer, "openid-configuration", false));
    if !path.is_empty() {
        let mut u = issuer.clone();
        u.set_path(&format!("{path}/.well-known/openid-configuration"));
        u.set_query(None);
        out.push(u);
    }
    out
}

/// Whether `resource` (from the metadata) may stand for `server`: same
/// origin, and the server's path at or under the resource's.
fn resource_covers(resource: &Url, server: &Url) -> bool {
    if resource.origin() != server.origin() {
        return false;
    }
    let r = resource.path().trim_end_matches('/');
    let s = server.path().trim_end_matches('/');
    s == r || s.starts_with(&format!("{r}/")) || r.is_empty()
}

fn parse(url: &str, what: &str) -> Result<Url, OAuthError> {
    Url::parse(url).map_err(|e| OAuthError::Discovery(format!("{what} is not a URL: {e}")))
}

/// Runs discovery for the MCP endpoint `server`, starting from the
/// `resource_metadata` URL of a challenge when there was one.
pub(crate) async fn discover(
    http: &reqwest::Client,
    server: &Url,
    resource_metadata: Option<&str>,
) -> Result<Discovered, OAuthError> {
    let mut candidates = Vec::new();
    if let Some(u) = resource_metadata {
        candidates.push(parse(u, "resource_metadata")?);
    }
    candidates.extend(well_known(server, "oauth-protected-resource", true));
    let mut prm: Option<(Url, ResourceMetadata)> = None;
    for url in candidates {
        if let Some(found) = get_json::<ResourceMetadata>(http, &url).await? {
            prm = Some((url, found));
            break;
        }
    }
    let Some((prm_url, prm)) = prm else {
        return legacy(http, server).await;
    };
    let resource = match &prm.resource {
        Some(r) => {
            let r_url = parse(r, "the protected resource's `resource`")?;
            if !resource_covers(&r_url, server) {
                return Err(OAuthError::Discovery(format!(
                    "the protected-resource metadata at {prm_url} names the resource {r}, which is not {server}: refusing to ask tokens for it"
                )));
            }
            r.clone()
        }
        None => canonical_resource(server),
    };
    let issuer = prm.authorization_servers.first().ok_or_else(|| {
        OAuthError::Discovery(format!(
            "the protected-resource metadata at {prm_url} names no authorization server"
        ))
    })?;
    let issuer_url = parse(issuer, "the authorization server")?;
    for url in server_metadata_urls(&issuer_url) {
        if let Some(meta) = get_json::<ServerMetadata>(http, &url).await? {
            // RFC 8414 section 3.3: the issuer must be the one asked for.
            if meta.issuer != *issuer {
                return Err(OAuthError::Discovery(format!(
                    "the metadata at {url} is for issuer {}, not {issuer}",
                    meta.issuer
                )));
            }
            tracing::debug!(target: "mcpyard::oauth", issuer = %meta.issuer, "authorization server discovered");
            return Ok(Discovered {
                resource,
                resource_scopes: prm.scopes_supported,
                server: meta,
                from_metadata: true,
            });
        }
    }
    Err(OAuthError::Discovery(format!(
        "no authorization-server metadata found for {issuer}"
    )))
}

/// 2025-03-26: no protected-resource metadata; the authorization server is
/// the MCP server's origin, with metadata at its root or, failing that,
/// `/authorize`, `/token` and `/register` there.
async fn legacy(http: &reqwest::Client, server: &Url) -> Result<Discovered, OAuthError> {
    let mut origin = server.clone();
    origin.set_path("/");
    origin.set_query(None);
    origin.set_fragment(None);
    let resource = canonical_resource(server);
    let mut meta_url = origin.clone();
    meta_url.set_path("/.well-known/oauth-authorization-server");
    if let Some(meta) = get_json::<ServerMetadata>(http, &meta_url).await? {
        // The 2025-03-26 servers' metadata sits at the root whatever its
        // issuer says, so there is no issuer to compare with here.
        tracing::debug!(target: "mcpyard::oauth", issuer = %meta.issuer, "authorization server found at the server's root (2025-03-26)");
        return Ok(Discovered {
            resource,
            resource_scopes: None,
            server: meta,
            from_metadata: true,
        });
    }
    let at = |p: &str| origin.join(p).map(|u| u.to_string()).ok();
    tracing::debug!(target: "mcpyard::oauth", "no OAuth metadata; using the default endpoints at the server's root (2025-03-26)");
    Ok(Discovered {
        resource,
        resource_scopes: None,
        server: ServerMetadata {
            issuer: origin.as_str().trim_end_matches('/').to_owned(),
            authorization_endpoint: at("/authorize"),
            token_endpoint: at("/token"),
            registration_endpoint: at("/register"),
            code_challenge_methods_supported: None,
            token_endpoint_auth_methods_supported: None,
            client_id_metadata_document_supported: false,
            authorization_response_iss_parameter_supported: false,
            dpop_signing_alg_values_supported: None,
        },
        from_metadata: false,
    })
}

#[cfg(test)]
mod tests {
    use super::{resource_covers, server_metadata_urls, well_known};
    use url::Url;

    fn strings(urls: Vec<Url>) -> Vec<String> {
        urls.into_iter().map(|u| u.to_string()).collect()
    }

    #[test]
    fn protected_resource_metadata_is_path_inserted_then_root() {
        let server = Url::parse("https://h.example/api/mcp?x=1").unwrap();
        assert_eq!(
            strings(well_known(&server, "oauth-protected-resource", true)),
            [
                "https://h.example/.well-known/oauth-protected-resource/api/mcp",
                "https://h.example/.well-known/oauth-protected-resource"
            ]
        );
    }

    #[test]
    fn server_metadata_follows_the_spec_order() {
        let issuer = Url::parse("https://auth.example/tenant1").unwrap();
        assert_eq!(
            strings(server_metadata_urls(&issuer)),
            [
                "https://auth.example/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example/.well-known/openid-configuration/tenant1",
                "https://auth.example/tenant1/.well-known/openid-configuration"
            ]
        );
        let root = Url::parse("https://auth.example").unwrap();
        assert_eq!(
            strings(server_metadata_urls(&root)),
            [
                "https://auth.example/.well-known/oauth-authorization-server",
                "https://auth.example/.well-known/openid-configuration"
            ]
        );
    }

    #[test]
    fn a_resource_covers_its_own_path_only() {
        let server = Url::parse("https://h.example/mcp").unwrap();
        for ok in [
            "https://h.example/mcp",
            "https://h.example/",
            "https://h.example/mcp/",
        ] {
            assert!(resource_covers(&Url::parse(ok).unwrap(), &server), "{ok}");
        }
        for bad in [
            "https://evil.example/mcp",
            "https://h.example/other",
            "http://h.example/mcp",
        ] {
            assert!(
                !resource_covers(&Url::parse(bad).unwrap(), &server),
                "{bad}"
            );
        }
    }
}
