"""An MCP server behind OAuth, built on the Python SDK 2.x as people write
one: Streamable HTTP on 127.0.0.1:PORT/mcp, protected resource metadata
(RFC 9728) naming the authorization server, 401 with `WWW-Authenticate:
Bearer resource_metadata=...` without a valid token, and a token verifier
that accepts only RS256 JWTs signed by the authorization server (its JWKS),
issued by it, unexpired and whose audience is this server's own URL (RFC
8707: a token obtained for another server is refused).

Usage: oauth_resource_server.py PORT ISSUER [SCOPE]

Tools: `whoami` answers the token's subject, client, audience and scopes
(never the token); `echo` answers its `message`.
Each verification is logged on stderr as `accepted sub=... aud=...` or
`refused: REASON` (never the token).
"""

import sys
import warnings

import jwt
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer

PORT = int(sys.argv[1])
ISSUER = sys.argv[2].rstrip("/")
SCOPE = sys.argv[3] if len(sys.argv) > 3 else "mcp:tools"
RESOURCE = f"http://127.0.0.1:{PORT}/mcp"

jwks = jwt.PyJWKClient(f"{ISSUER}/jwks", cache_keys=True)


def log(text):
    sys.stderr.write(f"oauth_resource_server[{PORT}]: {text}\n")
    sys.stderr.flush()


class JwtVerifier:
    async def verify_token(self, token):
        try:
            key = jwks.get_signing_key_from_jwt(token)
            claims = jwt.decode(
                token,
                key.key,
                algorithms=["RS256"],
                audience=RESOURCE,
                issuer=ISSUER,
                options={"require": ["exp", "aud", "iss"]},
            )
        except Exception as e:  # any failure is a refusal; the reason is logged
            log(f"refused: {type(e).__name__}: {e}")
            return None
        scopes = (claims.get("scope") or "").split()
        log(f"accepted sub={claims.get('sub')} client={claims.get('client_id')} aud={claims.get('aud')}")
        return AccessToken(
            token=token,
            client_id=claims.get("client_id", ""),
            scopes=scopes,
            expires_at=claims.get("exp"),
            resource=RESOURCE,
            subject=claims.get("sub"),
        )


with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    auth = AuthSettings(
        issuer_url=ISSUER,
        resource_server_url=RESOURCE,
        required_scopes=[SCOPE],
        validate_token_resource=True,
    )

server = MCPServer("oauth-protected", token_verifier=JwtVerifier(), auth=auth)


@server.tool()
def whoami() -> dict:
    """Who the bearer token says the caller is."""
    token = get_access_token()
    claims = jwt.decode(token.token, options={"verify_signature": False})
    return {
        "sub": claims.get("sub"),
        "client_id": claims.get("client_id"),
        "aud": claims.get("aud"),
        "scope": claims.get("scope"),
    }


@server.tool()
def echo(message: str) -> str:
    """Answers its message."""
    return message


if __name__ == "__main__":
    server.run("streamable-http", host="127.0.0.1", port=PORT)
