"""Connects to the gateway with the official Python SDK 2.x, calls the
gateway's `status` tool, and prints a JSON summary: who the gateway took
the client for, and the tools it listed.

    py_auth_check.py URL key KEY [TOOL]   # Authorization: Bearer KEY; also call TOOL
    py_auth_check.py URL oauth            # the SDK's OAuth client, from the 401 on

In `oauth` mode the SDK does everything a real client does: reads
`resource_metadata` from the 401, fetches the protected-resource metadata,
then the authorization server's, registers itself, runs the authorization
code flow with PKCE (the "browser" here follows the issuer's redirect
without a person), exchanges the code for a token and retries. The summary
then also says which metadata documents it fetched.
"""
import asyncio
import json
import sys
from urllib.parse import parse_qs, urlparse

import httpx2
from mcp import Client
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

REDIRECT_URI = "http://127.0.0.1:9/callback"


class MemoryStorage(TokenStorage):
    def __init__(self):
        self.tokens = None
        self.client_info = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info


def oauth_provider(url: str, fetched: list) -> OAuthClientProvider:
    redirect = {}

    async def redirect_handler(authorization_url: str) -> None:
        # The user agent: the issuer answers /authorize with a redirect to
        # the callback, which carries the code.
        async with httpx2.AsyncClient() as http:
            answer = await http.get(authorization_url, follow_redirects=False)
        location = answer.headers["location"]
        redirect.update({k: v[0] for k, v in parse_qs(urlparse(location).query).items()})
        fetched.append("authorize")

    async def callback_handler() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=redirect["code"], state=redirect.get("state"))

    metadata = OAuthClientMetadata(
        client_name="mcpyard e2e",
        redirect_uris=[REDIRECT_URI],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    return OAuthClientProvider(
        server_url=url,
        client_metadata=metadata,
        storage=MemoryStorage(),
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )


async def try_call(client, name: str) -> dict:
    try:
        result = await client.call_tool(name, {})
    except Exception as error:  # the gateway's JSON-RPC error, as the SDK raises it
        return {"ok": False, "error": str(error)}
    return {"ok": not result.is_error, "error": None}


async def main(url: str, mode: str, key: str | None, extra: str | None) -> None:
    fetched = []

    async def log_request(request):
        if "/.well-known/" in request.url.path or request.url.path in ("/register", "/token"):
            fetched.append(request.url.path)

    if mode == "key":
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
    else:
        http = create_mcp_http_client(auth=oauth_provider(url, fetched))
    http.event_hooks["request"].append(log_request)
    async with http:
        async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            tools = await client.list_tools()
            status = await client.call_tool("mcpyard__status", {})
            tried = await try_call(client, extra) if extra else None
    structured = status.structured_content or {}
    print(
        json.dumps(
            {
                "caller": structured.get("caller"),
                "tools": sorted(t.name for t in tools.tools),
                "fetched": fetched,
                "tried": tried,
            }
        )
    )


if __name__ == "__main__":
    args = sys.argv[1:] + [None, None]
    asyncio.run(main(args[0], args[1], args[2], args[3]))
