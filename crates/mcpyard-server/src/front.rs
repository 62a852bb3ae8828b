//! What a connection hands its requests to. A POST to the MCP endpoint,
//! nearly every request a client sends, goes straight to its handler after
//! the checks the router's middleware would make (the flood guard, then
//! origin, host and credentials): through the router, its middleware,
//! routing and boxed services cost more than the handler's own work.
//! Every other request goes through the router.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::response::Response;
use axum::Router;
use http::{Method, Request};
use tower::ServiceExt;

use crate::flood::{self, Flood};
use crate::router::{self, MCP_PATHS};
use crate::state::AppState;
use crate::{security, streamable};

#[derive(Debug, Clone)]
pub(crate) struct Front {
    router: Router,
    /// Set when Streamable HTTP is on: the state its POSTs are served with.
    mcp_posts: Option<McpPosts>,
}

#[derive(Debug, Clone)]
struct McpPosts {
    state: AppState,
    flood: Option<Arc<Flood>>,
}

impl Front {
    pub(crate) fn new(state: AppState, flood: Option<Arc<Flood>>) -> Self {
        let mcp_posts = state.opts.streamable.then(|| McpPosts {
            state: state.clone(),
            flood: flood.clone(),
        });
        Self {
            router: flood::outermost(router::routes(state), flood),
            mcp_posts,
        }
    }

    /// Serves `req`, which came from `peer` (`None` without a socket).
    pub(crate) async fn serve(&self, mut req: Request<Body>, peer: Option<SocketAddr>) -> Response {
        match &self.mcp_posts {
            Some(posts)
                if req.method() == Method::POST && MCP_PATHS.contains(&req.uri().path()) =>
            {
                posts.serve(req, peer).await
            }
            _ => {
                // For the router's flood guard, which reads it there.
                if let Some(peer) = peer {
                    req.extensions_mut().insert(ConnectInfo(peer));
                }
                match self.router.clone().oneshot(req).await {
                    Ok(response) => response,
                    Err(never) => match never {},
                }
            }
        }
    }
}

impl McpPosts {
    async fn serve(&self, req: Request<Body>, peer: Option<SocketAddr>) -> Response {
        let refused = match (&self.flood, peer) {
            (Some(flood), Some(peer)) => flood.refusal_from(peer.ip(), req.uri().path()),
            _ => None,
        };
        if let Some(refused) = refused {
            return refused;
        }
        let (parts, body) = req.into_parts();
        let identity = match security::admit(&self.state, &parts.headers, &parts.uri).await {
            Ok(identity) => identity,
            Err(refused) => return refused,
        };
        streamable::post_as(&self.state, identity, &parts.headers, body).await
    }
}
