"""Walks the governance paths through the gateway with the official Python
SDK 2.x, as one identity, and prints what it saw as JSON.

    py_governance_check.py MODE http URL KEY     # Authorization: Bearer KEY
    py_governance_check.py MODE stdio CMD ARG... # the gateway as a child

MODE is the SDK's connect mode: `auto` (its default: 2026-07-28 when the
server speaks it) or `legacy` (the initialize handshake). The walk: list
tools, resources and templates; call an allowed and a denied tool; call a
tool whose result and progress carry a secret; read a resource under
several spellings of its URI and one a template describes.
"""
import asyncio
import json
import sys

from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

SECRET = "AKIAIOSFODNN7EXAMPLE"
SPELLINGS = [
    "demo://resource/static/document/architecture.md",
    "DEMO://resource/static/document/architecture.md",
    "demo://resource/static/document/x/../architecture.md",
    "demo://resource/dynamic/text/1",
]


async def attempt(coroutine):
    """The call's outcome as data: its error text when the gateway refused."""
    try:
        return {"ok": True, "value": await coroutine}
    except Exception as error:  # the gateway's JSON-RPC error, as the SDK raises it
        return {"ok": False, "error": str(error)}


def text_of(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def walk(client) -> dict:
    progress = []

    async def on_progress(value, total, message):
        progress.append(message or "")

    tools = sorted(t.name for t in (await client.list_tools()).tools)
    templates = sorted(t.uri_template for t in (await client.list_resource_templates()).resource_templates)
    echo = await attempt(client.call_tool("every__echo", {"message": f"key {SECRET}"}))
    added = await attempt(client.call_tool("every__get-sum", {"a": 2, "b": 3}))
    chatty = await attempt(
        client.call_tool("chatty__chatty", {"said": f"key {SECRET}"}, progress_callback=on_progress)
    )
    reads = {}
    for uri in SPELLINGS:
        read = await attempt(client.read_resource(uri))
        reads[uri] = (
            {"ok": True, "uri": str(read["value"].contents[0].uri)} if read["ok"] else read
        )
    summary = lambda r: (
        {"ok": not r["value"].is_error, "text": text_of(r["value"])} if r["ok"] else r
    )
    return {
        "protocolVersion": client.protocol_version,
        "tools": tools,
        "templates": templates,
        "echo": summary(echo),
        "sum": summary(added),
        "chatty": summary(chatty),
        "progress": progress,
        "reads": reads,
    }


async def main(mode: str, door: str, rest: list) -> None:
    if door == "http":
        url, key = rest
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
        async with http:
            async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
                out = await walk(client)
    else:
        server = StdioServerParameters(command=rest[0], args=rest[1:])
        async with Client(server, mode=mode) as client:
            out = await walk(client)
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
