"""The official Python SDK 2.x (legacy mode: initialize, then requests) as a
client that never keeps a session id, as Lemonade's and FastMCP's
stateless clients are: a response hook drops `Mcp-Session-Id` from every
answer before the SDK sees it, so each later request goes without one.
Prints a JSON summary: how many answers carried a session id (dropped),
how many requests the SDK sent and how many of them named a session, the
tools listed, the echo and the error of a call the policy refuses.

    py_sessionless_check.py URL KEY
"""
import asyncio
import json
import sys

from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


async def main(url: str, key: str) -> None:
    dropped = []
    sent = []

    async def drop_session_id(response):
        if "mcp-session-id" in response.headers:
            dropped.append(response.headers["mcp-session-id"])
            del response.headers["mcp-session-id"]

    async def note_request(request):
        sent.append("mcp-session-id" in request.headers)

    http = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
    http.event_hooks["response"].append(drop_session_id)
    http.event_hooks["request"].append(note_request)
    async with http:
        async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            tools = await client.list_tools()
            echo = await client.call_tool("every__echo", {"message": "from python"})
            try:
                await client.call_tool("every__get-sum", {"a": 1, "b": 2})
                sum_error = None
            except Exception as error:  # the gateway's JSON-RPC error, as the SDK raises it
                sum_error = str(error)
    print(
        json.dumps(
            {
                "session_ids_dropped": len(dropped),
                "requests": len(sent),
                "requests_naming_a_session": sum(sent),
                "tools": sorted(t.name for t in tools.tools),
                "echo": echo.content[0].text,
                "sum_error": sum_error,
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
