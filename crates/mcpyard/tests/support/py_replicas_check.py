"""The official Python SDK 2.x as a client of a team's gateway: several
replicas behind a round-robin load balancer. In `legacy` mode (initialize,
then a session), each request of the session may land on another replica;
in `default` mode (2026-07-28, no session) every request stands alone; in
`sse` mode the SDK's HTTP+SSE transport (URL: the `/sse` endpoint) keeps
its stream on one replica while its POSTs go round. Lists the tools, calls echo a few times and sets the log level, then
closes (legacy: DELETE). Prints a JSON summary: the session id the
gateway issued, the tools, the echoes, and the HTTP requests sent.

    py_replicas_check.py URL MODE
"""
import asyncio
import json
import sys

from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


async def main(url: str, mode: str) -> None:
    session_ids = set()
    sent = []

    async def note_session(response):
        if "mcp-session-id" in response.headers:
            session_ids.add(response.headers["mcp-session-id"])

    async def note_request(request):
        sent.append(request.method)

    http = create_mcp_http_client()
    http.event_hooks["response"].append(note_session)
    http.event_hooks["request"].append(note_request)
    echoes = []
    async with http:
        kwargs = {"mode": "legacy"} if mode in ("legacy", "sse") else {}
        if mode == "sse":
            transport = sse_client(url)
        else:
            transport = streamable_http_client(url, http_client=http)
        async with Client(transport, **kwargs) as client:
            tools = await client.list_tools()
            for i in range(6):
                result = await client.call_tool("every__echo", {"message": f"round {i}"})
                echoes.append(result.content[0].text)
            if mode in ("legacy", "sse"):
                await client.set_logging_level("warning")
                again = await client.call_tool("every__echo", {"message": "after setLevel"})
                echoes.append(again.content[0].text)
    print(
        json.dumps(
            {
                "session_ids": sorted(session_ids),
                "tools": sorted(t.name for t in tools.tools),
                "echoes": echoes,
                "requests": sent,
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
